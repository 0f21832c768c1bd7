// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: recovery. A watchdog looks at the device every hang_timeout_ms / 4:
 * - an engine with work to do that took no step (its queue's HEAD and STEPS stood still) for
 *   hang_timeout_ms is hung: its queue is reset, that is disabled, which makes the device drop
 *   what was in it, and enabled again;
 * - a SCRATCH register without the driver's cookie means the device was reset, under the
 *   driver or by it (gmem_device_reset()): contexts, the fault queue, the access counters and
 *   every ring are programmed again;
 * - a fault group waiting for room in the fault queue (FQ_STATUS OVERFLOW) whose error
 *   interrupt was missed gets the fault worker going;
 * - a fence left armed after its batch passed is signaled (gmem_fences_check()).
 * Either way each batch that was in a reset ring fails with ECANCELED and its fence passes,
 * so no one waits for ever; the other queues' work goes on. HBM keeps its data.
 */
#include <linux/moduleparam.h>
#include <linux/workqueue.h>

#include "gmem_accel.h"
#include "gmem_accel_queue.h"
#include "gmem_accel_fault.h"
#include "gmem_accel_counters.h"
#include "gmem_accel_trace.h"

static unsigned int hang_timeout_ms = 5000;
module_param(hang_timeout_ms, uint, 0644);
MODULE_PARM_DESC(hang_timeout_ms,
		 "an engine that takes no step for this long with work to do is reset; 0: never (default 5000)");

static unsigned long gmem_watchdog_period(void)
{
	/* Resets under the driver are looked for every second even with no hang timeout. */
	return msecs_to_jiffies(clamp((READ_ONCE(hang_timeout_ms) ?: 4000) / 4, 50u, 1000u));
}

/*
 * Fail every command still in @q's ring with ECANCELED (or the status the device did write
 * for it) and pass its fences: the device dropped them. Called with q->lock held, the queue
 * disabled.
 */
static void gmem_queue_cancel(struct gmem_accel *g, struct gmem_queue *q)
{
	u32 mask = (1u << GMEM_CQ_LOG2) - 1;
	unsigned int n = 0;

	lockdep_assert_held(&q->lock);
	dma_rmb();
	for (u32 slot = q->reaped; slot != q->tail; slot = (slot + 1) & mask) {
		struct gmem_ctx *ctx = q->slot_ctx[slot];
		u32 st = le32_to_cpu(q->ring[slot].status);
		int err = st == GMEM_CMD_ST_PENDING ? -ECANCELED : gmem_status_errno(q, slot, st);

		if (err && ctx &&
		    xa_insert(&ctx->errors, q->slot_fence[slot], xa_mk_value(-err),
			      GFP_KERNEL) == -ENOMEM)
			dev_warn_ratelimited(&g->dev, "lost the error of batch %llu\n",
					     q->slot_fence[slot]);
		q->slot_ctx[slot] = NULL;
		WRITE_ONCE(q->slot_err[slot], 0);
		WRITE_ONCE(q->slot_stalls[slot], 0);
		n++;
	}
	q->reaped = 0;
	q->tail = 0;
	/* The FENCEs dropped with their batches would have written these. */
	WRITE_ONCE(*q->fence, q->next_seq - 1);
	trace_gmem_accel_queue_reset(q->id, n);
}

/* Reset queue @q (a hung engine, or a device reset): see the top of this file. */
static void gmem_queue_reset(struct gmem_accel *g, struct gmem_queue *q)
{
	mutex_lock(&q->lock);
	gmem_queue_reap(g, q);		/* what completed keeps its status */
	gmem_write(g, GMEM_REG_QUEUE(q->id, GMEM_CQ_CTRL), 0);
	gmem_queue_cancel(g, q);
	gmem_queue_program(g, q);
	q->wd_head = 0;
	q->wd_steps = 0;
	q->wd_since = jiffies;
	mutex_unlock(&q->lock);
	wake_up_all(&q->wq);
	gmem_fences_signal(q, 0);
}

/*
 * Drop what @ctx still has on its queue (close, after the drain's time ran out): the device
 * forgets the commands and their fault group at once, their batches fail with ECANCELED and
 * their fences pass. Its fault records still in the fault queue are answered by nobody
 * (gmem_fault_answer()).
 */
void gmem_queue_stop(struct gmem_ctx *ctx)
{
	WRITE_ONCE(ctx->stopped, true);
	gmem_queue_reset(ctx->g, &ctx->g->queue[gmem_ctx_queue(ctx)]);
}

/* Does @q have batches whose fence has not passed? */
static bool gmem_queue_pending(struct gmem_queue *q)
{
	return READ_ONCE(*q->fence) + 1 < READ_ONCE(q->next_seq);
}

/* Has @q's engine taken no step for hang_timeout_ms with work to do? */
static bool gmem_queue_hung(struct gmem_accel *g, struct gmem_queue *q)
{
	u32 state, head, steps;

	/* Most of the 64 queues have no work: no register read for them. */
	if (!gmem_queue_pending(q)) {
		q->wd_since = jiffies;
		return false;
	}
	state = gmem_read(g, GMEM_REG_QUEUE(q->id, GMEM_CQ_STATE));
	head = gmem_read(g, GMEM_REG_QUEUE(q->id, GMEM_CQ_HEAD));
	steps = gmem_read(g, GMEM_REG_QUEUE(q->id, GMEM_CQ_STEPS));
	if (state == GMEM_CQ_STATE_BROKEN)
		return true;	/* its ring could not be read: only a reset helps */
	/* A stalled engine waits for the driver's fault answer, not for itself. */
	if (state != GMEM_CQ_STATE_RUNNING || head != q->wd_head || steps != q->wd_steps) {
		q->wd_head = head;
		q->wd_steps = steps;
		q->wd_since = jiffies;
		return false;
	}
	return time_after(jiffies, q->wd_since + msecs_to_jiffies(hang_timeout_ms));
}

/*
 * Reset the device now (the watchdog sets it up again at once): for a state only a reset
 * clears, such as TLB entries the device would not drop. Any context; takes no lock.
 */
void gmem_device_reset(struct gmem_accel *g, const char *why)
{
	dev_err(&g->pdev->dev, "%s: resetting the device; work in flight fails with ECANCELED\n",
		why);
	WRITE_ONCE(g->reset_requested, true);
	gmem_write(g, GMEM_REG_RESET, GMEM_RESET_MAGIC);
	mod_delayed_work(system_unbound_wq, &g->watchdog, 0);
}

/* The device was reset: set it up again as gmem_hw_init() did. */
static void gmem_device_recover(struct gmem_accel *g)
{
	if (!xchg(&g->reset_requested, false))
		dev_warn(&g->pdev->dev,
			 "the device was reset under the driver: setting it up again; work in flight fails with ECANCELED\n");
	/* Queue 0 first: a fault server may be waiting on it (a PREFER_DEVICE migration). */
	gmem_queue_reset(g, &g->queue[0]);
	mutex_lock(&g->ctx_lock);
	for (unsigned int id = 1; id < GMEM_NUM_CONTEXTS; id++) {
		struct gmem_ctx *ctx = g->ctx[id];

		if (!ctx)
			continue;
		gmem_write64(g, GMEM_REG_CTX(id, GMEM_CTX_ROOT_LO), ctx->root.dma);
		gmem_write(g, GMEM_REG_CTX(id, GMEM_CTX_CTRL), GMEM_CTX_CTRL_ENABLE);
	}
	mutex_unlock(&g->ctx_lock);
	mutex_lock(&g->fault_lock);
	gmem_fq_program(g);
	mutex_unlock(&g->fault_lock);
	gmem_ac_recover(g);
	for (unsigned int i = 1; i < GMEM_NUM_QUEUES; i++)
		gmem_queue_reset(g, &g->queue[i]);
	gmem_write(g, GMEM_REG_SCRATCH, GMEM_DRIVER_COOKIE);
	gmem_dev_count(g, GMEM_DEV_DEVICE_RESETS, 1);	/* counted once it works again */
}

void gmem_watchdog(struct work_struct *work)
{
	struct gmem_accel *g = container_of(to_delayed_work(work), struct gmem_accel, watchdog);

	/* Unbind stops the device under its own rules (and cancels this again at the end). */
	if (READ_ONCE(g->unbinding))
		return;
	if (gmem_read(g, GMEM_REG_SCRATCH) != GMEM_DRIVER_COOKIE) {
		gmem_device_recover(g);
		goto again;
	}
	/* In case the FAULT_OVERFLOW error was overwritten by another before it was read. */
	if (gmem_read(g, GMEM_REG_FQ_STATUS) & GMEM_FQ_STATUS_OVERFLOW)
		gmem_fault_overflow(g);
	for (unsigned int i = 0; i < GMEM_NUM_QUEUES; i++)
		gmem_fences_check(&g->queue[i]);
	for (unsigned int i = 0; i < GMEM_NUM_QUEUES && READ_ONCE(hang_timeout_ms); i++) {
		struct gmem_queue *q = &g->queue[i];

		if (!gmem_queue_hung(g, q))
			continue;
		dev_err(&g->pdev->dev,
			"queue %u: the engine took no step for %u ms: resetting it; its batches fail with ECANCELED\n",
			q->id, hang_timeout_ms);
		gmem_queue_reset(g, q);
		gmem_dev_count(g, GMEM_DEV_ENGINE_RESETS, 1);
	}
again:
	queue_delayed_work(system_dfl_wq, &g->watchdog, gmem_watchdog_period());
}

/* Start watching a bound device (stopped by gmem_hw_fini()). */
void gmem_watchdog_start(struct gmem_accel *g)
{
	queue_delayed_work(system_dfl_wq, &g->watchdog, gmem_watchdog_period());
}
