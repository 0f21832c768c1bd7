// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the MMU notifiers that keep a context's device page table coherent with
 * its process's (Documentation/mm/hmm.rst). One mmu_interval_notifier per 2 MiB window (the
 * unit every fault, mirror and migration works in), inserted before the window is first
 * reached, with no mmap lock held (as drm_gpusvm inserts its notifiers). An invalidation
 * then restarts only the work of the windows it touches. One notifier over the whole address
 * space would restart every window in flight at every invalidation anywhere in the mm: under
 * reclaim of the process's own pages (oversubscription), a window's hmm_range_fault() would
 * retry until HMM's one-second timeout and the command fail with EBUSY.
 *
 * A window whose memory is unmapped gives its notifier and its table of 4 KiB entries back
 * (gmem_notifier_gc(), as drm_gpusvm's garbage collector does), so that a long-running process
 * that maps and unmaps memory all over its address space does not grow them without bound.
 * Code that looks a notifier up holds gmem_notifiers_enter() until it is done with it.
 */
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/srcu.h>

#include "gmem_accel_ctx.h"
#include "gmem_accel_pt.h"
#include "gmem_accel_thrashing.h"
#include "gmem_accel_trace.h"

struct gmem_notifier {
	struct mmu_interval_notifier mni;
	struct gmem_ctx *ctx;
	u64 start;		/* the window's */
	struct list_head gone;	/* taken out of ctx->notifiers, on its way out */
	unsigned long own_moves;	/* gmem_own_moved(); under ctx->lock */
};

/* Marks in ctx->notifiers: the window saw an unmap (gmem_notifier_gc() looks at it). */
#define GMEM_NOTIFIER_UNMAPPED	XA_MARK_1

/*
 * Readers: whoever holds a notifier looked up in ctx->notifiers. A window's notifier is
 * removed and freed only after those who may have looked it up are gone.
 */
DEFINE_STATIC_SRCU(gmem_notifier_srcu);

int gmem_notifiers_enter(void)
{
	return srcu_read_lock(&gmem_notifier_srcu);
}

void gmem_notifiers_exit(int idx)
{
	srcu_read_unlock(&gmem_notifier_srcu, idx);
}

static bool gmem_invalidate(struct mmu_interval_notifier *mni,
			    const struct mmu_notifier_range *range, unsigned long cur_seq)
{
	struct gmem_notifier *n = container_of(mni, struct gmem_notifier, mni);
	struct gmem_ctx *ctx = n->ctx;
	u64 start = max_t(u64, range->start, n->start);
	u64 end = min_t(u64, range->end, n->start + GMEM_HUGE_SIZE);
	unsigned long zapped;

	/*
	 * A migration this context started (gmem_window_to_device), or pages it takes exclusively
	 * (gmem_accel_dmirror.c): it updates its device mapping itself. Others' — CPU faults,
	 * evictions, other contexts — zap it here.
	 */
	if ((range->event == MMU_NOTIFY_MIGRATE || range->event == MMU_NOTIFY_EXCLUSIVE) &&
	    range->owner == ctx) {
		trace_gmem_accel_invalidate(ctx->id, start, end, range->event, true, 0);
		return true;
	}
	if (mmu_notifier_range_blockable(range))
		mutex_lock(&ctx->lock);
	else if (!mutex_trylock(&ctx->lock))
		return false;
	mmu_interval_set_seq(mni, cur_seq);
	zapped = gmem_pt_zap(ctx, start, end);
	mutex_unlock(&ctx->lock);
	if (range->event == MMU_NOTIFY_UNMAP) {
		xa_set_mark(&ctx->notifiers, n->start >> GMEM_HUGE_SHIFT, GMEM_NOTIFIER_UNMAPPED);
		queue_work(system_unbound_wq, &ctx->notifier_gc);
	}
	gmem_ctx_count(ctx, GMEM_CTX_INVALIDATIONS, 1);
	gmem_dev_count(ctx->g, GMEM_DEV_INVALIDATIONS, 1);
	trace_gmem_accel_invalidate(ctx->id, start, end, range->event, false, zapped);
	return true;
}

/*
 * The notifier skips this context's own migrations, so they leave the interval sequence as it
 * was: a section that found a window's system pages before such a migration took them would
 * pass read_retry() and map pages the migration then frees. The migration counts itself here
 * (ctx->lock held) when it takes the context's entries off the pages; a section samples the
 * count with gmem_own_moves() before its hmm_range_fault() and checks it with gmem_read_retry().
 */
void gmem_own_moved(struct mmu_interval_notifier *mni)
{
	struct gmem_notifier *n = container_of(mni, struct gmem_notifier, mni);

	lockdep_assert_held(&n->ctx->lock);
	WRITE_ONCE(n->own_moves, n->own_moves + 1);
}

unsigned long gmem_own_moves(struct mmu_interval_notifier *mni)
{
	struct gmem_notifier *n = container_of(mni, struct gmem_notifier, mni);

	/* (before the page-table walk that follows: the pages it finds are newer) */
	return smp_load_acquire(&n->own_moves);
}

/* mmu_interval_read_retry() that also sees this context's own migrations; ctx->lock held. */
bool gmem_read_retry(struct mmu_interval_notifier *mni, unsigned long seq, unsigned long own)
{
	struct gmem_notifier *n = container_of(mni, struct gmem_notifier, mni);

	lockdep_assert_held(&n->ctx->lock);
	return mmu_interval_read_retry(mni, seq) || READ_ONCE(n->own_moves) != own;
}

static const struct mmu_interval_notifier_ops gmem_notifier_ops = {
	.invalidate = gmem_invalidate,
};

/*
 * The notifier of the window holding @va, for mmu_interval_read_begin()/read_retry() and
 * hmm_range_fault(); NULL until gmem_notifier_get() inserted it.
 */
struct mmu_interval_notifier *gmem_notifier(struct gmem_ctx *ctx, u64 va)
{
	struct gmem_notifier *n;

	/* Without gmem_notifiers_enter() the notifier may be freed under its user. */
	WARN_ON_ONCE(!srcu_read_lock_held(&gmem_notifier_srcu));
	n = xa_load(&ctx->notifiers, va >> GMEM_HUGE_SHIFT);

	return n ? &n->mni : NULL;
}

/*
 * Insert window @w's notifier; ctx->notifier_mutex held. Only for a window a VMA meets: a
 * program pointing the device at addresses it never mapped gets its errors and no notifiers.
 * Charged to the process's memory cgroup, as its page tables are.
 */
static int gmem_notifier_insert(struct gmem_ctx *ctx, u64 w)
{
	struct gmem_notifier *n;
	bool mapped;
	int ret;

	lockdep_assert_held(&ctx->notifier_mutex);
	mmap_read_lock(ctx->mm);
	mapped = find_vma_intersection(ctx->mm, w, w + GMEM_HUGE_SIZE);
	mmap_read_unlock(ctx->mm);
	if (!mapped)
		return -EFAULT;
	n = kzalloc(sizeof(*n), GFP_KERNEL_ACCOUNT);
	if (!n)
		return -ENOMEM;
	n->ctx = ctx;
	n->start = w;
	ret = mmu_interval_notifier_insert(&n->mni, ctx->mm, w, GMEM_HUGE_SIZE,
					   &gmem_notifier_ops);
	if (ret) {
		kfree(n);
		return ret;
	}
	ret = xa_err(xa_store(&ctx->notifiers, w >> GMEM_HUGE_SHIFT, n, GFP_KERNEL_ACCOUNT));
	if (ret) {
		mmu_interval_notifier_remove(&n->mni);
		kfree(n);
		return ret;
	}
	gmem_dev_count(ctx->g, GMEM_DEV_NOTIFIERS_NOW, 1);
	return 0;
}

/*
 * The notifier of the window holding @va, inserted first if it has none: before anything of
 * the window is mapped. May sleep; the mmap lock must not be held (mmu_interval_notifier_insert()
 * may take it). ERR_PTR(-EFAULT) for a window no VMA meets, -ENODEV once the context is shut
 * down, -ESRCH once the process is gone.
 */
struct mmu_interval_notifier *gmem_notifier_get(struct gmem_ctx *ctx, u64 va)
{
	struct mmu_interval_notifier *mni = gmem_notifier(ctx, va);
	int ret = 0;

	if (mni)
		return mni;
	/* The first notifier of an mm registers it, which wants it alive. */
	if (!mmget_not_zero(ctx->mm))
		return ERR_PTR(-ESRCH);
	mutex_lock(&ctx->notifier_mutex);
	if (ctx->shut_down)
		ret = -ENODEV;
	else if (!gmem_notifier(ctx, va))
		ret = gmem_notifier_insert(ctx, ALIGN_DOWN(va, GMEM_HUGE_SIZE));
	mutex_unlock(&ctx->notifier_mutex);
	mmput(ctx->mm);
	if (ret)
		return ERR_PTR(ret);
	/* Taken out again meanwhile by gmem_notifier_gc(): the window was unmapped. */
	mni = gmem_notifier(ctx, va);
	return mni ?: ERR_PTR(-EFAULT);
}

/*
 * gmem_notifier_get() for @va's window, and the rest of [va, end)'s a VMA meets: a migration
 * inserts its next windows' at once, and retakes the mmap lock once for them, not once a
 * window (its lock taken with no munmap() in flight, gmem_mmap_read_lock_no_munmap(), waits
 * for every reader, such as the eviction worker).
 * The error is @va's window's; another's comes again when the migration reaches it.
 */
int gmem_notifiers_get(struct gmem_ctx *ctx, u64 va, u64 end)
{
	int ret = PTR_ERR_OR_ZERO(gmem_notifier_get(ctx, va));

	for (u64 w = ALIGN_DOWN(va, GMEM_HUGE_SIZE) + GMEM_HUGE_SIZE; !ret && w < end;
	     w += GMEM_HUGE_SIZE)
		gmem_notifier_get(ctx, w);
	return ret;
}

/*
 * The notifiers of windows that saw an unmap and that no VMA meets any more, taken out of
 * ctx->notifiers and then off the mm, with the device's mappings and table of the window.
 * Checked and taken out under one hold of the mmap lock: code that looks a notifier up under
 * it for a window a VMA meets finds it, or inserts a new one (gmem_migrate()). Work item.
 */
void gmem_notifier_gc(struct work_struct *work)
{
	struct gmem_ctx *ctx = container_of(work, struct gmem_ctx, notifier_gc);
	struct gmem_notifier *n, *next;
	LIST_HEAD(gone);
	unsigned long i;

	if (!mmget_not_zero(ctx->mm))
		return;		/* the process is exiting: its context goes with it */
	mutex_lock(&ctx->notifier_mutex);
	if (!ctx->shut_down) {
		mmap_read_lock(ctx->mm);
		xa_for_each_marked(&ctx->notifiers, i, n, GMEM_NOTIFIER_UNMAPPED) {
			xa_clear_mark(&ctx->notifiers, i, GMEM_NOTIFIER_UNMAPPED);
			if (find_vma_intersection(ctx->mm, n->start, n->start + GMEM_HUGE_SIZE))
				continue;
			xa_erase(&ctx->notifiers, i);
			list_add_tail(&n->gone, &gone);
		}
		mmap_read_unlock(ctx->mm);
	}
	mutex_unlock(&ctx->notifier_mutex);
	if (!list_empty(&gone))
		synchronize_srcu(&gmem_notifier_srcu);
	list_for_each_entry_safe(n, next, &gone, gone) {
		/*
		 * Whoever mapped pages by it has finished, and it still zapped them on a change
		 * until now. A window mapped again meanwhile may have a new notifier, which hears
		 * every change from its insertion on: what the device maps there stays (dropped,
		 * the process's next device access faulted again). Without one, nothing would
		 * hear a change to what is mapped there: the mappings and the table go.
		 */
		mutex_lock(&ctx->notifier_mutex);
		if (!xa_load(&ctx->notifiers, n->start >> GMEM_HUGE_SHIFT)) {
			gmem_pt_drop_window(ctx, n->start);
			gmem_thrashing_forget(ctx, n->start);
		}
		mutex_unlock(&ctx->notifier_mutex);
		mmu_interval_notifier_remove(&n->mni);
		gmem_dev_count(ctx->g, GMEM_DEV_NOTIFIERS_NOW, -1);
		gmem_dev_count(ctx->g, GMEM_DEV_NOTIFIERS_FREED, 1);
		trace_gmem_accel_notifier_gc(ctx->id, n->start);
		kfree(n);
	}
	mmput(ctx->mm);
}

/*
 * Take the context's notifiers off its mm (shutdown; no more are inserted after). They are
 * freed with the context, as a call still running may look at one.
 */
void gmem_notifiers_remove(struct gmem_ctx *ctx)
{
	struct gmem_notifier *n;
	unsigned long i;

	mutex_lock(&ctx->notifier_mutex);
	xa_for_each(&ctx->notifiers, i, n) {
		mmu_interval_notifier_remove(&n->mni);
		gmem_dev_count(ctx->g, GMEM_DEV_NOTIFIERS_NOW, -1);
	}
	mutex_unlock(&ctx->notifier_mutex);
	/* No invalidation queues it again now; one running frees those it took out. */
	cancel_work_sync(&ctx->notifier_gc);
}

void gmem_notifiers_free(struct gmem_ctx *ctx)
{
	struct gmem_notifier *n;
	unsigned long i;

	xa_for_each(&ctx->notifiers, i, n)
		kfree(n);
	xa_destroy(&ctx->notifiers);
}
