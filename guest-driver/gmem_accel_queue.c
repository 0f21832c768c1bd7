// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: command submission. Queue 0 is the driver's own (HBM migration copies:
 * it never waits on a page fault, so the fault worker may wait on it); a process context's
 * batches go to queues 1-3. Each batch is followed by a FENCE that writes its sequence number
 * and interrupts; waiters sleep until the fence value reaches theirs, then collect the
 * batch's status words.
 */
#include <linux/dma-mapping.h>
#include <linux/moduleparam.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "gmem_accel.h"
#include "gmem_accel_trace.h"

static unsigned int drain_timeout_ms = 10000;
module_param(drain_timeout_ms, uint, 0644);
MODULE_PARM_DESC(drain_timeout_ms,
		 "how long close() waits for the context's commands before leaving them to fail (default 10000)");

static u32 gmem_ring_mask(void)
{
	return (1u << GMEM_CQ_LOG2) - 1;
}

static void *gmem_slot(struct gmem_queue *q, u32 slot)
{
	return q->ring + slot * GMEM_CMD_SIZE;
}

#define GMEM_KERNEL_BATCH	128
#define GMEM_KERNEL_TIMEOUT	(10 * HZ)

static unsigned int gmem_ctx_queue(const struct gmem_ctx *ctx)
{
	return ctx->id ? 1 + (ctx->id - 1) % (GMEM_NUM_QUEUES - 1) : 0;
}

void gmem_put_desc(void *d, u8 op, u8 flags, u16 ctx, u64 dst, u64 src, u64 size,
		   u64 value, u64 value2, u32 dst_stride, u32 src_stride)
{
	memset(d, 0, GMEM_CMD_SIZE);
	*(u8 *)(d + GMEM_CMD_OFF_OPCODE) = op;
	*(u8 *)(d + GMEM_CMD_OFF_FLAGS) = flags;
	*(__le16 *)(d + GMEM_CMD_OFF_CTX) = cpu_to_le16(ctx);
	*(__le64 *)(d + GMEM_CMD_OFF_DST) = cpu_to_le64(dst);
	*(__le64 *)(d + GMEM_CMD_OFF_SRC) = cpu_to_le64(src);
	*(__le64 *)(d + GMEM_CMD_OFF_SIZE) = cpu_to_le64(size);
	*(__le64 *)(d + GMEM_CMD_OFF_VALUE) = cpu_to_le64(value);
	*(__le64 *)(d + GMEM_CMD_OFF_VALUE2) = cpu_to_le64(value2);
	*(__le32 *)(d + GMEM_CMD_OFF_DST_STRIDE) = cpu_to_le32(dst_stride);
	*(__le32 *)(d + GMEM_CMD_OFF_SRC_STRIDE) = cpu_to_le32(src_stride);
}

/* Is [addr, addr + len) a user address range? -EINVAL if it wraps, -EFAULT if not user. */
static int gmem_check_user_range(u64 addr, u64 len)
{
	if (addr + len < addr)
		return -EINVAL;
	if (addr + len > TASK_SIZE_MAX || addr + len > (1ull << GMEM_VA_BITS))
		return -EFAULT;
	return 0;
}

static u64 gmem_extent(u64 count, u32 stride, u32 elem)
{
	return (count - 1) * stride + elem;
}

/* Check one user command and turn it into a device descriptor for context @ctx. */
static int gmem_encode(const struct gmem_accel_cmd *c, u16 ctx, void *desc)
{
	u32 elem = c->flags & GMEM_ACCEL_CMD_WIDE ? 8 : 4;
	u8 flags = GMEM_CMD_F_DST(GMEM_ADDR_VA) | GMEM_CMD_F_SRC(GMEM_ADDR_VA);
	int ret;

	if (c->flags & ~GMEM_ACCEL_CMD_WIDE || !c->size)
		return -EINVAL;
	switch (c->op) {
	case GMEM_ACCEL_OP_COPY:
	case GMEM_ACCEL_OP_FILL:
		if (c->flags || c->size > GMEM_CMD_MAX_BYTES || c->value2 || c->dst_stride ||
		    c->src_stride)
			return -EINVAL;
		if (c->op == GMEM_ACCEL_OP_FILL && (c->src))
			return -EINVAL;
		if (c->op == GMEM_ACCEL_OP_COPY && c->value)
			return -EINVAL;
		ret = gmem_check_user_range(c->dst, c->size);
		if (!ret && c->op == GMEM_ACCEL_OP_COPY)
			ret = gmem_check_user_range(c->src, c->size);
		if (ret)
			return ret;
		gmem_put_desc(desc, c->op == GMEM_ACCEL_OP_COPY ? GMEM_OP_COPY : GMEM_OP_FILL,
			      flags, ctx, c->dst, c->src, c->size, c->value, 0, 0, 0);
		return 0;
	case GMEM_ACCEL_OP_ATOMIC_ADD:
	case GMEM_ACCEL_OP_SCALE_ADD:
		if (c->size > GMEM_CMD_MAX_ELEMENTS || c->dst_stride > GMEM_CMD_MAX_STRIDE ||
		    c->src_stride > GMEM_CMD_MAX_STRIDE || c->dst % elem || c->dst_stride % elem)
			return -EINVAL;
		if (c->op == GMEM_ACCEL_OP_ATOMIC_ADD && (c->src || c->src_stride || c->value2))
			return -EINVAL;
		if (c->op == GMEM_ACCEL_OP_SCALE_ADD && (c->src % elem || c->src_stride % elem))
			return -EINVAL;
		ret = gmem_check_user_range(c->dst, gmem_extent(c->size, c->dst_stride, elem));
		if (!ret && c->op == GMEM_ACCEL_OP_SCALE_ADD)
			ret = gmem_check_user_range(c->src,
						    gmem_extent(c->size, c->src_stride, elem));
		if (ret)
			return ret;
		if (c->flags & GMEM_ACCEL_CMD_WIDE)
			flags |= GMEM_CMD_F_WIDE;
		gmem_put_desc(desc, c->op == GMEM_ACCEL_OP_ATOMIC_ADD ? GMEM_OP_ATOMIC_ADD
								      : GMEM_OP_SCALE_ADD,
			      flags, ctx, c->dst, c->src, c->size, c->value, c->value2,
			      c->dst_stride, c->src_stride);
		return 0;
	default:
		return -EINVAL;
	}
}

/* The errno of the command in @slot that finished with status @st (0: it succeeded). */
static int gmem_status_errno(struct gmem_queue *q, u32 slot, u32 st)
{
	switch (st) {
	case GMEM_CMD_ST_OK:
		return 0;
	case GMEM_CMD_ST_FAULT:
		return READ_ONCE(q->slot_err[slot]) ?: -EFAULT;
	default:
		return -EIO;
	}
}

/*
 * Collect the status of every command the device has finished (up to HEAD) and record the
 * first failure of each batch in its context. Called with q->lock held.
 */
void gmem_queue_reap(struct gmem_accel *g, struct gmem_queue *q)
{
	u32 head;

	lockdep_assert_held(&q->lock);
	if (!g->regs)
		return;
	head = gmem_read(g, GMEM_REG_QUEUE(q->id, GMEM_CQ_HEAD));
	if (head > gmem_ring_mask())
		return;		/* a device that says so is broken; leave the slots alone */
	dma_rmb();
	while (q->reaped != head) {
		u32 slot = q->reaped;
		struct gmem_ctx *ctx = q->slot_ctx[slot];
		u32 st = le32_to_cpu(*(__le32 *)(gmem_slot(q, slot) + GMEM_CMD_OFF_STATUS));
		int err = gmem_status_errno(q, slot, st);

		if (err && ctx) {
			u64 fence = q->slot_fence[slot];

			/* The batch's first failure is the one reported (-EBUSY: not first). */
			if (xa_insert(&ctx->errors, fence, xa_mk_value(-err), GFP_KERNEL) == -ENOMEM)
				dev_warn_ratelimited(&g->dev, "lost the error of batch %llu\n", fence);
		}
		q->slot_ctx[slot] = NULL;
		WRITE_ONCE(q->slot_err[slot], 0);
		WRITE_ONCE(q->slot_stalls[slot], 0);
		q->reaped = (slot + 1) & gmem_ring_mask();
	}
}

static u32 gmem_ring_used(struct gmem_queue *q)
{
	return (q->tail - q->reaped) & gmem_ring_mask();
}

static bool gmem_fence_done(struct gmem_queue *q, u64 seq)
{
	return READ_ONCE(*q->fence) >= seq;
}

bool gmem_fence_passed(struct gmem_accel *g, unsigned int qid, u64 seq)
{
	return gmem_fence_done(&g->queue[qid], seq);
}

/* Has the device consumed commands the driver has not reaped yet? */
static bool gmem_ring_moved(struct gmem_accel *g, struct gmem_queue *q)
{
	return READ_ONCE(q->reaped) != gmem_read(g, GMEM_REG_QUEUE(q->id, GMEM_CQ_HEAD));
}

/* Queue @count descriptors and their fence on @ctx's ring; the kernel's sleep uninterruptibly. */
static int gmem_submit_desc(struct gmem_ctx *ctx, u8 (*desc)[GMEM_CMD_SIZE], u32 count,
			    u64 *fence)
{
	struct gmem_accel *g = ctx->g;
	struct gmem_queue *q = &g->queue[gmem_ctx_queue(ctx)];
	unsigned long deadline = jiffies + GMEM_KERNEL_TIMEOUT;
	u64 seq;
	long ret;

	mutex_lock(&q->lock);
	for (;;) {
		gmem_queue_reap(g, q);
		if (gmem_ring_used(q) + count + 1 < (1u << GMEM_CQ_LOG2))
			break;
		mutex_unlock(&q->lock);
		if (ctx->id && READ_ONCE(g->unbinding))
			return -ENODEV;
		if (ctx->id)
			ret = wait_event_interruptible_timeout(q->wq, gmem_ring_moved(g, q) ||
							       READ_ONCE(g->unbinding), HZ);
		else
			ret = wait_event_timeout(q->wq, gmem_ring_moved(g, q), HZ);
		if (ret < 0)
			return ret;
		/* The kernel's own copies never fault: a ring that does not move is a hung device. */
		if (!ret && !ctx->id && time_after(jiffies, deadline))
			return -ETIMEDOUT;
		mutex_lock(&q->lock);
	}
	seq = q->next_seq++;
	*fence = ++ctx->fences;
	ctx->fence_seq[*fence % GMEM_CTX_FENCES] = seq;
	for (u32 i = 0; i <= count; i++) {
		u32 slot = q->tail;

		if (i < count)
			memcpy(gmem_slot(q, slot), desc[i], GMEM_CMD_SIZE);
		else
			gmem_put_desc(gmem_slot(q, slot), GMEM_OP_FENCE,
				      GMEM_CMD_F_DST(GMEM_ADDR_SYS) | GMEM_CMD_F_NOTIFY, 0,
				      q->fence_dma, 0, 0, seq, 0, 0, 0);
		q->slot_ctx[slot] = ctx;
		q->slot_fence[slot] = *fence;
		q->tail = (slot + 1) & gmem_ring_mask();
	}
	dma_wmb();
	gmem_write(g, GMEM_REG_QUEUE(q->id, GMEM_CQ_TAIL), q->tail);
	ctx->last_fence[q->id] = seq;
	mutex_unlock(&q->lock);
	gmem_ctx_count(ctx, GMEM_CTX_COMMANDS, count);
	gmem_dev_count(g, GMEM_DEV_COMMANDS, count);
	gmem_dev_count(g, GMEM_DEV_BATCHES, 1);
	trace_gmem_accel_submit(ctx->id, q->id, seq, count);
	return 0;
}

int gmem_submit(struct gmem_ctx *ctx, const struct gmem_accel_cmd *cmds, u32 count, u64 *fence)
{
	u8 (*desc)[GMEM_CMD_SIZE];
	int ret = 0;

	desc = kmalloc_array(count, GMEM_CMD_SIZE, GFP_KERNEL);
	if (!desc)
		return -ENOMEM;
	for (u32 i = 0; i < count && !ret; i++)
		ret = gmem_encode(&cmds[i], ctx->id, desc[i]);
	if (!ret)
		ret = gmem_submit_desc(ctx, desc, count, fence);
	kfree(desc);
	return ret;
}

/*
 * The ring sequence number of @ctx's batch @fence: 0 if it completed long ago, -EINVAL if
 * the context never had that fence.
 */
static s64 gmem_fence_seq(struct gmem_ctx *ctx, struct gmem_queue *q, u64 fence)
{
	s64 seq;

	mutex_lock(&q->lock);
	if (!fence || fence > ctx->fences)
		seq = -EINVAL;
	else if (ctx->fences - fence >= GMEM_CTX_FENCES)
		seq = 0;
	else
		seq = ctx->fence_seq[fence % GMEM_CTX_FENCES];
	mutex_unlock(&q->lock);
	return seq;
}

/* The errno batch @fence of @ctx failed with (0: it did not), once it has completed. */
static int gmem_fence_errno(struct gmem_ctx *ctx, u64 fence)
{
	struct gmem_queue *q = &ctx->g->queue[gmem_ctx_queue(ctx)];
	void *err;

	mutex_lock(&q->lock);
	gmem_queue_reap(ctx->g, q);
	mutex_unlock(&q->lock);
	err = xa_erase(&ctx->errors, fence);
	return err ? -(int)xa_to_value(err) : 0;
}

/*
 * Run the driver's own descriptors (HBM and system addresses only, so they never fault) on
 * queue 0 and wait for them; 0 or the first batch's errno (-ETIMEDOUT: the device hung).
 */
int gmem_kernel_run(struct gmem_accel *g, void *descs, unsigned int count)
{
	u8 (*desc)[GMEM_CMD_SIZE] = descs;
	u64 fences[DIV_ROUND_UP(GMEM_WINDOW_PAGES, GMEM_KERNEL_BATCH)];
	struct gmem_ctx *kctx = g->kctx;
	struct gmem_queue *q = &g->queue[0];
	unsigned int nb = 0;
	int ret = 0, err;
	s64 last;

	if (WARN_ON(count > GMEM_WINDOW_PAGES))
		return -EINVAL;
	for (unsigned int i = 0; i < count && !ret; i += GMEM_KERNEL_BATCH)
		ret = gmem_submit_desc(kctx, desc + i, min(count - i, GMEM_KERNEL_BATCH),
				       &fences[nb++]);
	if (ret)
		nb--;
	last = nb ? gmem_fence_seq(kctx, q, fences[nb - 1]) : 0;
	if (nb && !wait_event_timeout(q->wq, gmem_fence_done(q, last), GMEM_KERNEL_TIMEOUT))
		return -ETIMEDOUT;
	for (unsigned int b = 0; b < nb; b++) {
		err = gmem_fence_errno(kctx, fences[b]);
		ret = ret ?: err;
	}
	return ret;
}

/*
 * Serve faults on this thread (see gmem_fault_serve_begin) while batch @seq of @q runs; a
 * fatal signal leaves the rest to the fault worker.
 */
static void gmem_wait_serving(struct gmem_accel *g, struct gmem_queue *q, u64 seq)
{
	while (!gmem_fence_done(q, seq) && !fatal_signal_pending(current) &&
	       !READ_ONCE(g->unbinding) && gmem_fault_serve(g))
		cond_resched();
}

/* gmem_submit() and gmem_wait() for it, serving its faults on this thread. */
int gmem_submit_wait(struct gmem_ctx *ctx, const struct gmem_accel_cmd *cmds, u32 count,
		     u32 timeout_ms)
{
	struct gmem_accel *g = ctx->g;
	struct gmem_queue *q = &g->queue[gmem_ctx_queue(ctx)];
	u64 fence;
	int ret;

	gmem_fault_serve_begin(g);
	ret = gmem_submit(ctx, cmds, count, &fence);
	if (!ret)
		gmem_wait_serving(g, q, gmem_fence_seq(ctx, q, fence));
	gmem_fault_serve_end(g);
	return ret ?: gmem_wait(ctx, fence, timeout_ms);
}

/* Wait for @ctx's batch @fence; -EINVAL if this context was never given it. */
int gmem_wait(struct gmem_ctx *ctx, u64 fence, u32 timeout_ms)
{
	struct gmem_queue *q = &ctx->g->queue[gmem_ctx_queue(ctx)];
	s64 seq = gmem_fence_seq(ctx, q, fence);
	long left;

	if (seq < 0)
		return seq;
	gmem_wait_serving(ctx->g, q, seq);
	left = wait_event_interruptible_timeout(q->wq, gmem_fence_done(q, seq) ||
						READ_ONCE(ctx->g->unbinding),
						msecs_to_jiffies(timeout_ms));
	if (left < 0)
		return left;
	if (!gmem_fence_done(q, seq))
		return READ_ONCE(ctx->g->unbinding) ? -ENODEV : -ETIME;
	return gmem_fence_errno(ctx, fence);
}

/*
 * Wait (boundedly) for the context's batches to finish and forget its slots, so nothing of
 * it is left in a ring when it goes away. Faults of a closing context are cancelled by the
 * fault worker once its mm is gone, so this does not wait on the process.
 */
int gmem_ctx_drain(struct gmem_ctx *ctx)
{
	int ret = 0;

	for (u32 qid = 0; qid < GMEM_NUM_QUEUES; qid++) {
		struct gmem_queue *q = &ctx->g->queue[qid];
		u64 seq = ctx->last_fence[qid];

		if (!seq)
			continue;
		if (!wait_event_timeout(q->wq, gmem_fence_done(q, seq),
					msecs_to_jiffies(READ_ONCE(drain_timeout_ms))))
			ret = -ETIMEDOUT;
		mutex_lock(&q->lock);
		gmem_queue_reap(ctx->g, q);
		for (u32 s = 0; s <= gmem_ring_mask(); s++)
			if (q->slot_ctx[s] == ctx)
				q->slot_ctx[s] = NULL;
		mutex_unlock(&q->lock);
	}
	return ret;
}
