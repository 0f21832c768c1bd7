// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: oversubscription, as adaptive migration under oversubscription has it
 * (Ganguly et al., IPDPS 2020). Once HBM is oversubscribed, migrating a window at each device
 * fault only evicts another that is still in use: a streamed working set larger than HBM
 * moves every window in and out again. So, per device: HBM is used in bursts, a burst ending
 * after gmem_perf_oversub_epoch_msec without a chunk filled, used by a device fault or
 * evicted; an eviction (for room) of a chunk filled or used in the current burst means that
 * the burst's working set does not fit: HBM is oversubscribed. From then on a device fault
 * in a PREFER_DEVICE window that finds no free chunk maps the pages where they are (system
 * memory, which the device reads over PCIe) instead of migrating them, as a thrashing pin
 * does. Each such fault renews the state (the demand that does not fit goes on); an epoch
 * without one or an eviction of the burst's ends it, and faults migrate again. A fault
 * that finds a free chunk migrates whatever the state: that evicts nothing. What stays in
 * system memory comes to HBM by access-counter migration when that is on (the hot regions)
 * or by an explicit MIGRATE. UVM has no such policy: its closest,
 * uvm_perf_map_remote_on_eviction, maps evicted pages remotely, only with access-counter
 * migration on, and leaves device faults to migrate. The DRM front end's HBM (its
 * drm_pagemap allocations, gmem_accel_drm_pagemap.c) follows the same rule.
 */
#include <linux/moduleparam.h>

#include "gmem_accel.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_hbm.h"
#include "gmem_accel_oversub.h"
#include "gmem_accel_trace.h"

GMEM_PARAM_RANGE(gmem_perf_oversub_enable, 1, 0, 1, NULL,
		 "Map in system memory, not migrate, while HBM is oversubscribed (0/1)");
GMEM_PARAM_RANGE(gmem_perf_oversub_epoch_msec, 1000, 1, 3600000, NULL,
		 "Time (ms) without HBM use that ends a burst, without pressure oversubscription");

static u64 gmem_oversub_epoch_ns(void)
{
	return (u64)READ_ONCE(gmem_perf_oversub_epoch_msec) * NSEC_PER_MSEC;
}

/*
 * Device @g's oversubscription renewed at @now: true if this starts an episode (none, or one
 * whose epoch ran out without a fault noticing).
 */
static bool gmem_oversub_renew(struct gmem_accel *g, u64 now)
{
	s64 old = atomic64_read(&g->oversub_ns);

	do {
		if ((u64)old >= now)
			return false;	/* renewed since we looked at the clock */
	} while (!atomic64_try_cmpxchg(&g->oversub_ns, &old, now));
	return !old || now - old > gmem_oversub_epoch_ns();
}

/*
 * HBM of @hbm is filled or used now (under hbm->lock): the current burst of use goes on, or a
 * new one begins after an epoch without use. Returns the time, the chunk's new used_ns.
 */
u64 gmem_oversub_busy(struct gmem_hbm *hbm)
{
	lockdep_assert_held(&hbm->lock);
	return gmem_oversub_use(&hbm->burst_ns, &hbm->busy_ns);
}

/*
 * The same for HBM of another allocator (the DRM front end's drm_pagemap), whose burst is
 * *@burst_ns to *@busy_ns, under that allocator's lock.
 */
u64 gmem_oversub_use(u64 *burst_ns, u64 *busy_ns)
{
	u64 now = ktime_get_ns();

	if (!*busy_ns || now - *busy_ns > gmem_oversub_epoch_ns())
		*burst_ns = now;
	*busy_ns = now;
	return now;
}

/*
 * The eviction of HBM chunk from @pfn (for room: a migration's, an object's, the eviction
 * worker's) is about to begin; @in_burst: the chunk was filled or used in the current burst
 * of HBM use, so the working set of that burst does not fit in HBM.
 */
void gmem_oversub_evicting(struct gmem_accel *g, unsigned long pfn, bool in_burst)
{
	if (in_burst)
		gmem_oversub_evicting_va(g, gmem_hbm_va(&g->hbm, pfn), in_burst);
}

/* The same for HBM whose data had address @va (the DRM front end's allocations). */
void gmem_oversub_evicting_va(struct gmem_accel *g, u64 va, bool in_burst)
{
	if (!READ_ONCE(gmem_perf_oversub_enable) || !in_burst)
		return;
	if (gmem_oversub_renew(g, ktime_get_ns())) {
		gmem_dev_count(g, GMEM_DEV_OVERSUB_EPISODES, 1);
		trace_gmem_accel_oversub_enter(0, va);
	}
}

/*
 * Is device @g's HBM oversubscribed, as a device fault of context @ctx_id at @va asks before
 * it would migrate? An epoch without pressure ends the episode here. The caller then maps
 * the fault's pages where they are if HBM has no room either (gmem_oversub_mapped_remote()).
 */
bool gmem_oversub_active(struct gmem_accel *g, u16 ctx_id, u64 va)
{
	s64 since = atomic64_read(&g->oversub_ns);
	u64 now = ktime_get_ns();

	if (!READ_ONCE(gmem_perf_oversub_enable) || !since)
		return false;
	if (now > since && now - since > gmem_oversub_epoch_ns()) {
		/* An epoch without pressure: migration on fault resumes. */
		if (atomic64_try_cmpxchg(&g->oversub_ns, &since, 0))
			trace_gmem_accel_oversub_leave(ctx_id, va);
		return false;
	}
	return true;
}

/* A fault at @va is mapped where its pages are, not migrated: the demand goes on. */
void gmem_oversub_mapped_remote(struct gmem_accel *g, u16 ctx_id, u64 va)
{
	gmem_oversub_renew(g, ktime_get_ns());
	gmem_dev_count(g, GMEM_DEV_OVERSUB_REMOTE_MAPS, 1);
	trace_gmem_accel_oversub_remote(ctx_id, va);
}

/*
 * A device fault of @ctx at @va, in a PREFER_DEVICE window that would migrate: true if the
 * window is to be mapped where its pages are instead (HBM oversubscribed and full). Called by
 * the fault server (ctx->fault_mutex held).
 */
bool gmem_oversub_remote(struct gmem_ctx *ctx, u64 va)
{
	struct gmem_accel *g = ctx->g;

	if (!gmem_oversub_active(g, ctx->id, va) || gmem_hbm_has_free_chunk(g))
		return false;
	gmem_oversub_mapped_remote(g, ctx->id, va);
	return true;
}
