// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: waiting for a context's batch (WAIT, SUBMIT with WAIT, the driver's own
 * waits) while serving the faults it raises on the waiting thread, so that a fault's round
 * trip needs no wake-up of another CPU; the fault workers take what the waiter leaves.
 */
#include <linux/sched/signal.h>

#include "gmem_accel_queue.h"
#include "gmem_accel_fault.h"

/*
 * Has @ctx's batch of ring sequence number @seq passed (0: long ago)? By the number, not the
 * fence: looking a fence up takes the queue's lock, and a wait asks several times.
 */
static bool gmem_batch_done(struct gmem_ctx *ctx, s64 seq)
{
	return seq <= 0 || gmem_fence_passed(ctx->g, gmem_ctx_queue(ctx), seq);
}

/*
 * Serve faults on this thread (see gmem_fault_serve_begin) while @ctx's batch of ring sequence
 * number @seq runs, in the context's waiter group buffer; a fatal signal, or another thread of
 * the context serving already, leaves the rest to the fault workers. The buffer is the
 * context's own, allocated at open: an allocation per wait would sit on every fault's round
 * trip, and a pool shared by the device would leave the processes beyond its size asleep
 * until a worker served them. Called as a server, returns as none: a group answered that
 * completed the batch ends it there, not serving again only to find the queue empty (four
 * register accesses and the fault lock).
 */
static void gmem_wait_serving(struct gmem_ctx *ctx, s64 seq)
{
	struct gmem_accel *g = ctx->g;

	if (test_and_set_bit_lock(GMEM_WAITER_SERVING, &ctx->waiter_busy)) {
		/* Ours go to the serving thread, or to a worker once it is done (OTHERS). */
		set_bit(GMEM_WAITER_OTHERS, &ctx->waiter_busy);
		gmem_fault_serve_end(g);
		return;
	}
	set_bit(ctx->id, g->ctx_serving);
	/* A signal ends the serving: the wait ends (restartable), the faults go to workers. */
	while (!gmem_batch_done(ctx, seq) && !signal_pending(current) &&
	       !READ_ONCE(g->unbinding) && gmem_fault_serve(ctx, ctx->waiter_group)) {
		if (gmem_batch_done(ctx, seq))
			goto out;
		cond_resched();
		gmem_fault_serve_begin(g);
	}
	/*
	 * Not serving from here: another server seeing our group kicks a worker, or the last
	 * look at the queue does (ordered after the clear by serve_end's atomic decrement).
	 */
	clear_bit(ctx->id, g->ctx_serving);
	clear_bit(GMEM_WAITER_OTHERS, &ctx->waiter_busy);
	gmem_fault_serve_end(g);
	clear_bit_unlock(GMEM_WAITER_SERVING, &ctx->waiter_busy);
	return;
out:
	clear_bit(ctx->id, g->ctx_serving);
	clear_bit_unlock(GMEM_WAITER_SERVING, &ctx->waiter_busy);
	/* Another thread of the context waits: its groups are no one's now (fully ordered). */
	if (test_and_clear_bit(GMEM_WAITER_OTHERS, &ctx->waiter_busy) &&
	    gmem_fault_left_unserved(g))
		gmem_fault_kick(g);
}

/* Wait for @ctx's batch @fence, serving faults meanwhile; -EINVAL if it was never given. */
int gmem_wait(struct gmem_ctx *ctx, u64 fence, u32 timeout_ms)
{
	s64 seq = gmem_ctx_fence_seq(ctx, fence);

	int ret;

	if (seq < 0)
		return seq;
	gmem_fault_serve_begin(ctx->g);
	gmem_wait_serving(ctx, seq);
	/* The batch may be a quiet one another thread serves: its interrupt, if it sleeps. */
	if (!gmem_batch_done(ctx, seq)) {
		ret = gmem_queue_notify_after(ctx, seq);
		if (ret)
			return ret;
	}
	return gmem_wait_seq(ctx, fence, seq, timeout_ms);
}

/*
 * gmem_submit() and gmem_wait() for it, serving its faults on this thread. The batch is quiet
 * (its fence raises no interrupt): a short command has completed, or posted its fault, when
 * the doorbell's write returns, and an interrupt nobody sleeps for would only be taken on
 * another CPU, on the critical path of every access. Only a waiter that has to sleep asks for
 * one: a fence of its own after the batch (gmem_fence_wake()).
 */
static int gmem_submit_serve(struct gmem_ctx *ctx, const struct gmem_accel_cmd *cmds, u32 count,
			     u32 timeout_ms, u64 *fence)
{
	u64 seq;
	int ret;

	gmem_fault_serve_begin(ctx->g);
	ret = gmem_submit(ctx, cmds, count, true, fence, &seq);
	if (ret) {
		gmem_fault_serve_end(ctx->g);
		return ret;
	}
	gmem_wait_serving(ctx, seq);
	if (gmem_batch_done(ctx, seq))
		gmem_queue_wake(ctx);
	else
		gmem_queue_notify_after(ctx, seq);	/* fails only on a fatal signal or unbind */
	return gmem_wait_seq(ctx, *fence, seq, timeout_ms);
}

int gmem_submit_wait(struct gmem_ctx *ctx, const struct gmem_accel_cmd *cmds, u32 count,
		     u32 timeout_ms)
{
	u64 fence;

	return gmem_submit_serve(ctx, cmds, count, timeout_ms, &fence);
}

/*
 * SUBMIT with GMEM_ACCEL_SUBMIT_WAIT: gmem_submit_wait() with no timeout, the batch's fence to
 * *@fence once it is queued (0 if it was not), however the wait ends. A signal ends it with
 * -EINTR, not a restart, which would queue the batch again.
 */
int gmem_submit_wait_fence(struct gmem_ctx *ctx, const struct gmem_accel_cmd *cmds, u32 count,
			   u64 *fence)
{
	int ret;

	*fence = 0;
	ret = gmem_submit_serve(ctx, cmds, count, U32_MAX, fence);
	return ret == -ERESTARTSYS ? -EINTR : ret;
}

/* The same, the fence to user memory at @ufence. */
int gmem_submit_wait_user(struct gmem_ctx *ctx, const struct gmem_accel_cmd *cmds, u32 count,
			  u64 __user *ufence)
{
	u64 fence;
	int ret = gmem_submit_wait_fence(ctx, cmds, count, &fence);

	if (fence && put_user(fence, ufence))
		ret = ret ?: -EFAULT;
	return ret;
}
