/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: device faults: the fault queue and its servers (gmem_accel_fault.c),
 * faulting pages in and mapping them (gmem_accel_hmm.c), and the fault server's migration
 * policy (gmem_accel_fault_migrate.c).
 */
#ifndef GMEM_ACCEL_FAULT_H
#define GMEM_ACCEL_FAULT_H

#include "gmem_accel_types.h"

struct hmm_range;

/*
 * Groups one call answers at most: a device that keeps faulting (a hostile or broken command
 * stream) must not keep one thread here for ever; the worker queues itself again.
 */
#define GMEM_FAULT_BUDGET	256

/* A group serviced, its answer decided but not yet sent (gmem_fault_service()). */
struct gmem_answer {
	struct gmem_ctx *ctx;		/* held until the answer is sent, or NULL */
	struct gmem_fault first;	/* its first record, after servicing sorted them */
	unsigned int n;			/* its faults */
	unsigned int nap_ms;		/* contention: nap before answering */
	unsigned int thrash_nap_us;	/* thrashing: the throttle's nap before answering */
	int err;			/* 0: REPLAY, else CANCEL with this errno */
};

/* gmem_accel_fault.c: the fault queue and its servers */
void gmem_fault_work(struct work_struct *work);
bool gmem_fault_pending(struct gmem_accel *g);
void gmem_fault_kick(struct gmem_accel *g);
void gmem_fault_overflow(struct gmem_accel *g);
void gmem_fault_serve_begin(struct gmem_accel *g);
void gmem_fault_serve_end(struct gmem_accel *g);
bool gmem_fault_writes(const struct gmem_fault *f);
u64 gmem_fault_perm(const struct gmem_fault *f);
bool gmem_owner_dying(struct gmem_ctx *ctx);
bool gmem_fault_serve(struct gmem_ctx *ctx, struct gmem_fault *group);
bool gmem_fault_left_unserved(struct gmem_accel *g);
unsigned int gmem_fault_take(struct gmem_accel *g, struct gmem_fault *group, int want,
			     bool *more);
unsigned int gmem_fault_ready(struct gmem_accel *g, unsigned int max_faults);
void gmem_fault_service(struct gmem_accel *g, struct gmem_fault *f, unsigned int n,
			struct gmem_answer *a);
void gmem_fault_respond(struct gmem_accel *g, struct gmem_answer *a);

/* gmem_accel_hmm.c: faulting a window in with hmm_range_fault() and mapping it */
int gmem_hmm_range_fault_lock(struct gmem_ctx *ctx, struct hmm_range *range,
			      const unsigned long *req, unsigned long npages)
	__acquires(&ctx->lock);
int gmem_fault_window(struct gmem_ctx *ctx, u64 va, u64 *start, u64 *end);
int gmem_fault_range(struct gmem_ctx *ctx, u64 start, u64 end, unsigned long first,
		     unsigned long last, unsigned long *req, unsigned long *pfns);
int gmem_map_window(struct gmem_ctx *ctx, u64 start, u64 end, unsigned long *req,
		    unsigned long *pfns);
int gmem_fault_pages(struct gmem_ctx *ctx, u64 start, u64 end, unsigned long *req,
		     unsigned long *pfns);

/* gmem_accel_fault_migrate.c: the fault server's migration policy */
void gmem_fault_migrate(struct gmem_ctx *ctx, u64 start, u64 end);
void gmem_fault_return(struct gmem_ctx *ctx, u64 start, u64 end);
void gmem_fault_unshare(struct gmem_ctx *ctx, u64 start, u64 end);

#endif /* GMEM_ACCEL_FAULT_H */
