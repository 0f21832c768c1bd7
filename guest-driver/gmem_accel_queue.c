// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: command submission. Queue 0 is the driver's own (HBM migration copies:
 * it never waits on a page fault, so the fault worker may wait on it); a process context's
 * batches go to its own queue, the one of its id. Each batch is followed by a FENCE that
 * writes its sequence number and interrupts; waiters sleep until the fence value reaches
 * theirs, then collect the batch's status words.
 */
#include <linux/dma-mapping.h>
#include <linux/moduleparam.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "gmem_accel_queue.h"
#include "gmem_accel_trace.h"

static unsigned int drain_timeout_ms = 10000;
module_param(drain_timeout_ms, uint, 0644);
MODULE_PARM_DESC(drain_timeout_ms,
		 "how long close() waits for the context's commands before leaving them to fail (default 10000)");

static u32 gmem_ring_mask(void)
{
	return (1u << GMEM_CQ_LOG2) - 1;
}

static struct gmem_cmd_desc *gmem_slot(struct gmem_queue *q, u32 slot)
{
	return &q->ring[slot];
}

#define GMEM_KERNEL_TIMEOUT	(10 * HZ)

/* Is [addr, addr + len) a user address range? -EINVAL if it wraps, -EFAULT if not user. */
static int gmem_check_user_range(u64 addr, u64 len)
{
	if (addr + len < addr)
		return -EINVAL;
	if (addr + len > TASK_SIZE_MAX || addr + len > (1ull << GMEM_VA_BITS))
		return -EFAULT;
	return 0;
}

/* Bytes a user operand spans: the command's size, or its elements' extent. */
static u64 gmem_operand_len(const struct gmem_accel_cmd *c, unsigned int use, u8 flags,
			    u32 stride)
{
	if (use & GMEM_USE_ELEMENTS)
		return GMEM_EXTENT(c->size, (u64)stride, GMEM_CMD_F_ELEM_SIZE(flags));
	return c->size;
}

/*
 * Check user command @c, to become device opcode @op with @flags, against the device's rules
 * (GMEM_OP_USES: what the device would fail with BAD_FIELD is -EINVAL here) and the user
 * address space.
 */
static int gmem_check_cmd(const struct gmem_accel_cmd *c, u8 op, u8 flags)
{
	unsigned int use = GMEM_OP_USES(op);
	u32 elem = GMEM_CMD_F_ELEM_SIZE(flags);
	bool strides = use & GMEM_USE_STRIDES;
	int ret;

	if (!c->size || (!(use & GMEM_USE_SRC) && c->src) ||
	    (!(use & GMEM_USE_VALUE) && c->value) || (!(use & GMEM_USE_VALUE2) && c->value2) ||
	    (!strides && c->dst_stride) || (!(strides && use & GMEM_USE_SRC) && c->src_stride) ||
	    (!(use & GMEM_USE_WIDE) && (flags & GMEM_CMD_F_WIDE)))
		return -EINVAL;
	if ((use & GMEM_USE_BYTES) && c->size > GMEM_CMD_MAX_BYTES)
		return -EINVAL;
	if ((use & GMEM_USE_ELEMENTS) &&
	    (c->size > GMEM_CMD_MAX_ELEMENTS || c->dst_stride > GMEM_CMD_MAX_STRIDE ||
	     c->src_stride > GMEM_CMD_MAX_STRIDE || c->dst % elem || c->dst_stride % elem ||
	     c->src % elem || c->src_stride % elem))
		return -EINVAL;
	ret = gmem_check_user_range(c->dst, gmem_operand_len(c, use, flags, c->dst_stride));
	if (!ret && (use & GMEM_USE_SRC))
		ret = gmem_check_user_range(c->src, gmem_operand_len(c, use, flags, c->src_stride));
	return ret;
}

/* Check one user command and turn it into a device descriptor for context @ctx. */
static int gmem_encode(const struct gmem_accel_cmd *c, u16 ctx, struct gmem_cmd_desc *d)
{
	static const u8 ops[] = {
		[GMEM_ACCEL_OP_COPY] = GMEM_OP_COPY,
		[GMEM_ACCEL_OP_FILL] = GMEM_OP_FILL,
		[GMEM_ACCEL_OP_ATOMIC_ADD] = GMEM_OP_ATOMIC_ADD,
		[GMEM_ACCEL_OP_SCALE_ADD] = GMEM_OP_SCALE_ADD,
		[GMEM_ACCEL_OP_AXPY] = GMEM_OP_AXPY,
	};
	u8 flags = GMEM_CMD_F_DST(GMEM_ADDR_VA) | GMEM_CMD_F_SRC(GMEM_ADDR_VA);
	int ret;

	if (c->op >= ARRAY_SIZE(ops) || !ops[c->op] || c->flags & ~GMEM_ACCEL_CMD_WIDE)
		return -EINVAL;
	if (c->flags & GMEM_ACCEL_CMD_WIDE)
		flags |= GMEM_CMD_F_WIDE;
	ret = gmem_check_cmd(c, ops[c->op], flags);
	if (ret)
		return ret;
	*d = (struct gmem_cmd_desc) {
		.opcode = ops[c->op],
		.flags = flags,
		.ctx = cpu_to_le16(ctx),
		.dst = cpu_to_le64(c->dst),
		.src = cpu_to_le64(c->src),
		.size = cpu_to_le64(c->size),
		.value = cpu_to_le64(c->value),
		.value2 = cpu_to_le64(c->value2),
		.dst_stride = cpu_to_le32(c->dst_stride),
		.src_stride = cpu_to_le32(c->src_stride),
	};
	return 0;
}

static u32 gmem_ring_used(struct gmem_queue *q)
{
	return (q->tail - q->reaped) & gmem_ring_mask();
}

/* The errno of the command in @slot that finished with status @st (0: it succeeded). */
int gmem_status_errno(struct gmem_queue *q, u32 slot, u32 st)
{
	switch (st) {
	case GMEM_CMD_ST_OK:
		return 0;
	case GMEM_CMD_ST_FAULT:
		return READ_ONCE(q->slot_err[slot]) ?: -EFAULT;
	case GMEM_CMD_ST_POISON:
		return -EHWPOISON;
	default:
		return -EIO;
	}
}

/*
 * Collect the status of every command the device has finished and record the first failure
 * of each batch in its context. The device writes a command's status before it moves past it
 * (and before a later FENCE's value), so the statuses in the ring say how far it got, with no
 * MMIO read of CQ_HEAD (an exit to the hypervisor each time). A slot still PENDING ends the
 * walk: not done yet, or dropped by a device reset under the driver (the watchdog's, then:
 * gmem_accel_reset.c). Called with q->lock held.
 */
void gmem_queue_reap(struct gmem_accel *g, struct gmem_queue *q)
{
	lockdep_assert_held(&q->lock);
	dma_rmb();	/* after whatever said the device moved: a fence's value */
	while (q->reaped != q->tail) {
		u32 slot = q->reaped;
		struct gmem_ctx *ctx = q->slot_ctx[slot];
		u32 st = le32_to_cpu(READ_ONCE(gmem_slot(q, slot)->status));
		int err;

		if (st == GMEM_CMD_ST_PENDING)
			return;
		err = gmem_status_errno(q, slot, st);
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

/*
 * Queue @count descriptors and their fence on @ctx's ring; the kernel's sleep uninterruptibly.
 * @quiet: the caller serves the batch on its own thread (gmem_submit_wait()): its fence raises
 * no interrupt, and the doorbell holds the fault interrupt for the queue's groups meanwhile
 * (CQ_TAIL_FAULT_HOLD). Any other doorbell of the queue releases the hold.
 */
static int gmem_submit_desc(struct gmem_ctx *ctx, const struct gmem_cmd_desc *desc, u32 count,
			    bool quiet, u64 *fence, u64 *seqp)
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
		/*
		 * A wake fence (no commands) waits through non-fatal signals: the batch it
		 * follows must raise its interrupt, or its fences and waiters never hear of it.
		 */
		if (ctx->id && count)
			ret = wait_event_interruptible_timeout(q->wq, gmem_ring_moved(g, q) ||
							       READ_ONCE(g->unbinding), HZ);
		else if (ctx->id)
			ret = wait_event_killable_timeout(q->wq, gmem_ring_moved(g, q) ||
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

		if (i < count) {
			*gmem_slot(q, slot) = desc[i];
			gmem_slot(q, slot)->status = cpu_to_le32(GMEM_CMD_ST_PENDING);
		} else {
			*gmem_slot(q, slot) = (struct gmem_cmd_desc) {
				.opcode = GMEM_OP_FENCE,
				.flags = GMEM_CMD_F_DST(GMEM_ADDR_SYS) |
					 (quiet ? 0 : GMEM_CMD_F_NOTIFY),
				.dst = cpu_to_le64(q->fence_dma),
				.value = cpu_to_le64(seq),
			};
		}
		q->slot_ctx[slot] = ctx;
		q->slot_fence[slot] = *fence;
		q->tail = (slot + 1) & gmem_ring_mask();
	}
	dma_wmb();
	gmem_write(g, GMEM_REG_QUEUE(q->id, GMEM_CQ_TAIL),
		   q->tail | (quiet ? GMEM_CQ_TAIL_FAULT_HOLD : 0));
	if (!quiet)
		WRITE_ONCE(q->notify_seq, seq);
	ctx->last_fence = seq;
	mutex_unlock(&q->lock);
	if (seqp)
		*seqp = seq;
	gmem_ctx_count(ctx, GMEM_CTX_COMMANDS, count);
	gmem_dev_count(g, GMEM_DEV_COMMANDS, count);
	gmem_dev_count(g, count ? GMEM_DEV_BATCHES : GMEM_DEV_WAKE_FENCES, 1);
	trace_gmem_accel_submit(ctx->id, q->id, seq, count);
	return 0;
}

/* Batches this short are encoded on the stack: a page's access allocates nothing. */
#define GMEM_SUBMIT_ON_STACK	2

/*
 * Check user commands @cmds and queue them as a batch of @ctx (gmem_submit_desc()); its ring
 * sequence number to *@seq if set (gmem_wait_seq() waits by it).
 */
int gmem_submit(struct gmem_ctx *ctx, const struct gmem_accel_cmd *cmds, u32 count, bool quiet,
		u64 *fence, u64 *seq)
{
	struct gmem_cmd_desc few[GMEM_SUBMIT_ON_STACK], *desc = few;
	int ret = 0;

	if (count > ARRAY_SIZE(few))
		desc = kmalloc_array(count, sizeof(*desc), GFP_KERNEL);
	if (!desc)
		return -ENOMEM;
	for (u32 i = 0; i < count && !ret; i++)
		ret = gmem_encode(&cmds[i], ctx->id, &desc[i]);
	if (!ret)
		ret = gmem_submit_desc(ctx, desc, count, quiet, fence, seq);
	if (desc != few)
		kfree(desc);
	return ret;
}

/*
 * Have the queue's interrupt raised once @ctx's batches so far have passed: a fence of its
 * own after them (a queue runs in order). For the waiter of a quiet batch that has to sleep:
 * the doorbell also releases the batch's fault hold, as a CQ_FAULT_HOLD write does if the
 * fence cannot be queued (a signal, an unbind).
 */
int gmem_fence_wake(struct gmem_ctx *ctx)
{
	struct gmem_accel *g = ctx->g;
	u64 fence;
	int ret;

	ret = gmem_submit_desc(ctx, NULL, 0, false, &fence, NULL);
	if (ret && g->regs)
		gmem_write(g, GMEM_REG_QUEUE(gmem_ctx_queue(ctx), GMEM_CQ_FAULT_HOLD), 0);
	return ret;
}

/*
 * Make sure the queue's interrupt is raised once @ctx's batch of ring sequence number @seq has
 * passed: a wake fence after it, unless a batch that raises it is queued after it already.
 * For whoever sleeps on, or hands out, the fence of a batch that may be quiet.
 */
int gmem_queue_notify_after(struct gmem_ctx *ctx, u64 seq)
{
	struct gmem_queue *q = &ctx->g->queue[gmem_ctx_queue(ctx)];

	if (READ_ONCE(q->notify_seq) >= seq)
		return 0;
	return gmem_fence_wake(ctx);
}

/*
 * A quiet batch passed without an interrupt: do what the interrupt does, wake whoever waits
 * for the ring to move and signal the fences handed out meanwhile.
 */
void gmem_queue_wake(struct gmem_ctx *ctx)
{
	struct gmem_queue *q = &ctx->g->queue[gmem_ctx_queue(ctx)];

	if (wq_has_sleeper(&q->wq))
		wake_up_all(&q->wq);
	gmem_fences_signal(q, 0);
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
	if (xa_empty(&ctx->errors))
		return 0;	/* (the common case, without the xarray's lock) */
	err = xa_erase(&ctx->errors, fence);
	return err ? -(int)xa_to_value(err) : 0;
}

/*
 * Queue the driver's own descriptors (HBM and system addresses only, so they never fault) on
 * queue 0 without waiting: @job keeps their batches for gmem_kernel_wait(), and the errno of
 * the first batch that could not be queued (those before it run, and are waited for).
 */
void gmem_kernel_submit(struct gmem_accel *g, const struct gmem_cmd_desc *desc,
			unsigned int count, struct gmem_kernel_job *job)
{
	struct gmem_ctx *kctx = g->kctx;
	int ret = 0;

	job->nb = 0;
	job->err = 0;
	if (WARN_ON(count > GMEM_WINDOW_PAGES)) {
		job->err = -EINVAL;
		return;
	}
	for (unsigned int i = 0; i < count && !ret; i += GMEM_KERNEL_BATCH) {
		ret = gmem_submit_desc(kctx, desc + i, min(count - i, GMEM_KERNEL_BATCH), false,
				       &job->fences[job->nb], NULL);
		if (!ret)
			job->nb++;
	}
	/* Its ring sequence now: later batches may push the fence out of the context's record. */
	job->last = job->nb ? gmem_fence_seq(kctx, &g->queue[0], job->fences[job->nb - 1]) : 0;
	job->err = ret;
}

/* Wait for @job's batches; 0 or the first errno (-ETIMEDOUT: the device hung). */
int gmem_kernel_wait(struct gmem_accel *g, struct gmem_kernel_job *job)
{
	struct gmem_queue *q = &g->queue[0];
	int ret = job->err, err;

	if (job->nb && !wait_event_timeout(q->wq, gmem_fence_done(q, job->last),
					   GMEM_KERNEL_TIMEOUT))
		return -ETIMEDOUT;
	for (unsigned int b = 0; b < job->nb; b++) {
		err = gmem_fence_errno(g->kctx, job->fences[b]);
		ret = ret ?: err;
	}
	job->nb = 0;
	return ret;
}

/* Run the driver's own descriptors (gmem_kernel_submit()) and wait for them. */
int gmem_kernel_run(struct gmem_accel *g, const struct gmem_cmd_desc *desc, unsigned int count)
{
	struct gmem_kernel_job job;

	gmem_kernel_submit(g, desc, count, &job);
	return gmem_kernel_wait(g, &job);
}

/*
 * Wait for @ctx's batch @fence, ring sequence number @seq (gmem_fence_seq(), or gmem_submit()'s:
 * no lookup under the queue's lock).
 */
int gmem_wait_seq(struct gmem_ctx *ctx, u64 fence, s64 seq, u32 timeout_ms)
{
	struct gmem_queue *q = &ctx->g->queue[gmem_ctx_queue(ctx)];
	long left;

	left = wait_event_interruptible_timeout(q->wq, gmem_fence_done(q, seq) ||
						READ_ONCE(ctx->g->unbinding),
						msecs_to_jiffies(timeout_ms));
	if (left < 0)
		return left;
	if (!gmem_fence_done(q, seq))
		return READ_ONCE(ctx->g->unbinding) ? -ENODEV : -ETIME;
	return gmem_fence_errno(ctx, fence);
}

/* Wait for @ctx's batch @fence; -EINVAL if this context was never given it. */
int gmem_wait_fence(struct gmem_ctx *ctx, u64 fence, u32 timeout_ms)
{
	s64 seq = gmem_ctx_fence_seq(ctx, fence);

	return seq < 0 ? seq : gmem_wait_seq(ctx, fence, seq, timeout_ms);
}

/* The ring sequence number of @ctx's batch @fence on its queue (see gmem_fence_seq()). */
s64 gmem_ctx_fence_seq(struct gmem_ctx *ctx, u64 fence)
{
	return gmem_fence_seq(ctx, &ctx->g->queue[gmem_ctx_queue(ctx)], fence);
}

/* How often a wait looks at its fence without being woken (gmem_wait_passed()). */
#define GMEM_WAIT_POLL_MS	10

/*
 * Wait up to @timeout for @q to pass @seq, looking every GMEM_WAIT_POLL_MS as well: a quiet
 * batch whose waiter could not add a wake fence (a signal while the ring was full) raises no
 * interrupt.
 */
static bool gmem_wait_passed(struct gmem_queue *q, u64 seq, unsigned long timeout)
{
	unsigned long end = jiffies + timeout;

	while (!wait_event_timeout(q->wq, gmem_fence_done(q, seq),
				   msecs_to_jiffies(GMEM_WAIT_POLL_MS)))
		if (time_after(jiffies, end))
			return false;
	return true;
}

/*
 * Wait (boundedly) for the context's batches to finish and forget its slots, so nothing of
 * it is left in a ring when it goes away. Faults of a closing context are cancelled by the
 * fault worker once its mm is gone, so this does not wait on the process.
 */
int gmem_ctx_drain(struct gmem_ctx *ctx)
{
	struct gmem_queue *q = &ctx->g->queue[gmem_ctx_queue(ctx)];
	int ret = 0;

	if (!ctx->last_fence)
		return 0;
	if (!gmem_wait_passed(q, ctx->last_fence, msecs_to_jiffies(READ_ONCE(drain_timeout_ms))))
		ret = -ETIMEDOUT;
	gmem_fences_signal(q, 0);	/* its last batches may have been quiet */
	mutex_lock(&q->lock);
	gmem_queue_reap(ctx->g, q);
	for (u32 s = 0; s <= gmem_ring_mask(); s++)
		if (q->slot_ctx[s] == ctx)
			q->slot_ctx[s] = NULL;
	mutex_unlock(&q->lock);
	return ret;
}
