/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: command queues. Submission, fences and their waits
 * (gmem_accel_queue.c), batches as dma-fences (gmem_accel_fence.c), waits that serve the
 * batch's faults meanwhile (gmem_accel_wait.c), and the driver's own commands on queue 0.
 */
#ifndef GMEM_ACCEL_QUEUE_H
#define GMEM_ACCEL_QUEUE_H

#include "gmem_accel_types.h"

/* The driver's own descriptors, queued by gmem_kernel_submit() for gmem_kernel_wait(). */
#define GMEM_KERNEL_BATCH	128	/* descriptors a batch, with a fence each */
struct sync_file;

struct gmem_kernel_job {
	u64 fences[DIV_ROUND_UP(GMEM_WINDOW_PAGES, GMEM_KERNEL_BATCH)];
	unsigned int nb;		/* batches queued */
	s64 last;			/* the last one's ring sequence number */
	int err;			/* why the rest could not be queued */
};

/* gmem_accel_queue.c: command submission and fences */
int gmem_submit(struct gmem_ctx *ctx, const struct gmem_accel_cmd *cmds, u32 count,
		bool quiet, u64 *fence, u64 *seq);
int gmem_fence_wake(struct gmem_ctx *ctx);
int gmem_queue_notify_after(struct gmem_ctx *ctx, u64 seq);
void gmem_queue_wake(struct gmem_ctx *ctx);

/*
 * A context's batches run on the queue of its id (the device has one for each): a queue
 * stalled on one process's faults holds up no other. Queue 0 is the driver's own.
 */
static inline unsigned int gmem_ctx_queue(const struct gmem_ctx *ctx)
{
	return ctx->id;
}
int gmem_wait_fence(struct gmem_ctx *ctx, u64 fence, u32 timeout_ms);
int gmem_wait_seq(struct gmem_ctx *ctx, u64 fence, s64 seq, u32 timeout_ms);
void gmem_queue_reap(struct gmem_accel *g, struct gmem_queue *q);
int gmem_status_errno(struct gmem_queue *q, u32 slot, u32 st);
int gmem_ctx_drain(struct gmem_ctx *ctx);
int gmem_kernel_run(struct gmem_accel *g, const struct gmem_cmd_desc *desc, unsigned int count);
void gmem_kernel_submit(struct gmem_accel *g, const struct gmem_cmd_desc *desc,
			unsigned int count, struct gmem_kernel_job *job);
int gmem_kernel_wait(struct gmem_accel *g, struct gmem_kernel_job *job);
bool gmem_fence_passed(struct gmem_accel *g, unsigned int qid, u64 seq);
s64 gmem_ctx_fence_seq(struct gmem_ctx *ctx, u64 fence);

/* gmem_accel_fence.c: batches as dma-fences, exported as sync_files */
void gmem_fences_init(struct gmem_queue *q);
void gmem_fences_signal(struct gmem_queue *q, int err);
void gmem_fences_check(struct gmem_queue *q);
void gmem_queue_stop(struct gmem_ctx *ctx);
long gmem_fence_export(struct gmem_ctx *ctx, void __user *uarg);
struct sync_file *gmem_fence_sync_file(struct gmem_ctx *ctx, u64 seqno);
int gmem_fence_wait_fd(struct gmem_accel *g, int fd);

/* gmem_accel_wait.c: waits for a batch that serve its faults meanwhile */
int gmem_wait(struct gmem_ctx *ctx, u64 fence, u32 timeout_ms);
int gmem_submit_wait(struct gmem_ctx *ctx, const struct gmem_accel_cmd *cmds, u32 count,
		     u32 timeout_ms);
int gmem_submit_wait_fence(struct gmem_ctx *ctx, const struct gmem_accel_cmd *cmds, u32 count,
			   u64 *fence);
int gmem_submit_wait_user(struct gmem_ctx *ctx, const struct gmem_accel_cmd *cmds, u32 count,
			  u64 __user *ufence);

#endif /* GMEM_ACCEL_QUEUE_H */
