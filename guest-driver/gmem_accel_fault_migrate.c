// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the fault server's migration policy. A device fault in a PREFER_DEVICE
 * range moves its window into HBM before it is mapped; a device write to HBM pages the CPU
 * maps read-only brings them home first, and back to HBM afterwards if there is free room.
 * The migrations themselves are gmem_accel_migrate.c's.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "gmem_accel_ctx.h"
#include "gmem_accel_migrate.h"
#include "gmem_accel_fault.h"
#include "gmem_accel_thrashing.h"

/*
 * The context's fault server's migration (allocated at its first use; NULL if it cannot be).
 * Called with ctx->fault_mutex held.
 */
static struct gmem_migration *gmem_fault_migration(struct gmem_ctx *ctx)
{
	struct gmem_migration *m = ctx->fault_migration;

	lockdep_assert_held(&ctx->fault_mutex);
	if (!m) {
		m = kvzalloc(sizeof(*m), GFP_KERNEL);
		if (!m)
			return NULL;
		m->g = ctx->g;
		ctx->fault_migration = m;
	}
	m->ctx = ctx;
	return m;
}

/* Move [start, end) (in one window) to HBM for the fault server; failures leave it home. */
static void gmem_fault_to_device(struct gmem_ctx *ctx, u64 start, u64 end, bool evict)
{
	struct gmem_migration *m = gmem_fault_migration(ctx);
	struct vm_area_struct *vma;
	unsigned long n = 0;

	if (!m || IS_ERR(gmem_notifier_get(ctx, start)))
		return;
	m->no_evict = !evict;
	gmem_migrate_lock(ctx, evict);
	vma = vma_lookup(ctx->mm, start);
	/* Only memory the process may read: the fault's own check comes after this. */
	if (vma && end <= vma->vm_end && (vma->vm_flags & VM_READ) &&
	    !gmem_window_to_device(ctx, m, vma, start, end, &n)) {
		/* A fault's move (not a return after a write) is what thrashing counts. */
		if (n && evict)
			gmem_thrashing_moved(ctx, m, true);
		if (n < (end - start) >> PAGE_SHIFT)
			gmem_window_from_peers(ctx, m, vma, start, end, &n);
	}
	mmap_read_unlock(ctx->mm);
}

/*
 * A device fault in a PREFER_DEVICE range: move its window [start, end) to HBM first, so
 * that the fault maps HBM. Failures leave the pages in system memory, mapped from there.
 * Called by the fault server (ctx->fault_mutex held).
 */
void gmem_fault_migrate(struct gmem_ctx *ctx, u64 start, u64 end)
{
	gmem_fault_to_device(ctx, start, end, true);
}

/*
 * Pages of [start, end) that a device write took home (gmem_fault_unshare()) go back to HBM,
 * but only into free pages: under oversubscription, evicting a 2 MiB chunk to take back a few
 * pages would cost more than it saves. Called by the fault server (ctx->fault_mutex held).
 */
void gmem_fault_return(struct gmem_ctx *ctx, u64 start, u64 end)
{
	gmem_fault_to_device(ctx, start, end, false);
}

/*
 * A device write to pages of [start, end) (in one window: the span of the written ones) that
 * sit in HBM while the CPU maps them read-only (COW after fork, swapped in without write
 * access, mprotect, a NUMA balancing scan): bring them home, as a CPU write would
 * (migrate_to_ram), so that the fault's next hmm_range_fault breaks COW or fails the write
 * (-EPERM); gmem_hmm_pass() then takes them back to HBM (gmem_fault_return()).
 * hmm_range_fault reports the driver's own device-private pages as they are and faults
 * nothing for them, so without this the device's write faults forever.
 * Called by the fault server (ctx->fault_mutex held).
 */
void gmem_fault_unshare(struct gmem_ctx *ctx, u64 start, u64 end)
{
	struct gmem_migration *m = gmem_fault_migration(ctx);
	struct vm_area_struct *vma;
	unsigned long n = 0;

	if (!m)
		return;
	mmap_read_lock(ctx->mm);
	vma = vma_lookup(ctx->mm, start);
	if (vma && end <= vma->vm_end)
		gmem_window_to_ram(ctx->g, m, vma, start, end, NULL, &n);
	mmap_read_unlock(ctx->mm);
	gmem_ctx_count(ctx, GMEM_CTX_MIGRATED_TO_SYSTEM, n);
}
