// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the process's advice (GMEM_ACCEL_IOC_ADVISE), kept by page in
 * ctx->advice: where a range should live (GMEM_ACCEL_PREFER_*), read by the fault server's
 * migration policy, and accessed-by: the device keeps the range's pages mapped wherever they
 * are, so that whenever the driver moves them it maps their new place before it is done.
 * Read-mostly belongs to managed objects' pages (gmem_accel_managed.c).
 */
#include <linux/hmm.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "gmem_accel.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_pt.h"
#include "gmem_accel_fault.h"
#include "gmem_accel_migrate.h"
#include "gmem_accel_advice.h"
#include "gmem_accel_obj.h"

/* A page's advice in ctx->advice: GMEM_ACCEL_PREFER_* in the low bits, and accessed-by. */
#define GMEM_ADVICE_LOCATION	0x3ul
#define GMEM_ADVICE_ACCESSED_BY	0x4ul

static unsigned long gmem_advice_of(struct gmem_ctx *ctx, u64 va)
{
	void *advice = mtree_load(&ctx->advice, va >> PAGE_SHIFT);

	return advice ? xa_to_value(advice) : 0;
}

/* Did the process advise that @va should live in HBM (GMEM_ACCEL_IOC_ADVISE)? */
bool gmem_prefers_device(struct gmem_ctx *ctx, u64 va)
{
	return (gmem_advice_of(ctx, va) & GMEM_ADVICE_LOCATION) == GMEM_ACCEL_PREFER_DEVICE;
}

/* Did the process advise that @va should live in system memory? */
bool gmem_prefers_system(struct gmem_ctx *ctx, u64 va)
{
	return (gmem_advice_of(ctx, va) & GMEM_ADVICE_LOCATION) == GMEM_ACCEL_PREFER_SYSTEM;
}

/*
 * The span of [start, end) the device is to keep mapped (accessed-by): [*lo, *hi), false if
 * none of it is.
 */
static bool gmem_accessed_span(struct gmem_ctx *ctx, u64 start, u64 end, u64 *lo, u64 *hi)
{
	MA_STATE(mas, &ctx->advice, start >> PAGE_SHIFT, start >> PAGE_SHIFT);
	unsigned long first = start >> PAGE_SHIFT, last = (end >> PAGE_SHIFT) - 1;
	unsigned long a = ULONG_MAX, b = 0;
	void *entry;

	mtree_lock(&ctx->advice);
	mas_for_each(&mas, entry, last) {
		if (!(xa_to_value(entry) & GMEM_ADVICE_ACCESSED_BY))
			continue;
		a = min(a, max(mas.index, first));
		b = max(b, min(mas.last, last));
	}
	mtree_unlock(&ctx->advice);
	if (a > b)
		return false;
	*lo = (u64)a << PAGE_SHIFT;
	*hi = (u64)(b + 1) << PAGE_SHIFT;
	return true;
}

/*
 * Rewrite the advice of pages [first, last]: clear bits @clear, set @set, range by range of
 * what each has now.
 */
static int gmem_advice_update(struct gmem_ctx *ctx, unsigned long first, unsigned long last,
			      unsigned long clear, unsigned long set)
{
	MA_STATE(mas, &ctx->advice, first, first);
	unsigned long i = first;
	int ret = 0;

	mtree_lock(&ctx->advice);
	while (!ret) {
		unsigned long v, stop;
		void *entry;

		mas_set(&mas, i);
		entry = mas_walk(&mas);
		stop = min(mas.last, last);
		v = ((entry ? xa_to_value(entry) : 0) & ~clear) | set;
		mas_set_range(&mas, i, stop);
		/* (allocating, it drops the tree's lock: GFP_KERNEL) */
		ret = mas_store_gfp(&mas, v ? xa_mk_value(v) : NULL, GFP_KERNEL);
		if (stop == last)
			break;
		i = stop + 1;
	}
	mtree_unlock(&ctx->advice);
	return ret;
}

/*
 * Map the accessed-by pages of [start, end) where they are now, a window at a time, from
 * what the CPU maps (faulting nothing); @req, @pfns: a window's scratch. The mmap lock not
 * held. Best effort: what is not mapped faults in as without the advice.
 */
void gmem_advice_map_range(struct gmem_ctx *ctx, u64 start, u64 end, unsigned long *req,
			   unsigned long *pfns)
{
	u64 addr = start;
	int srcu;

	if (mtree_empty(&ctx->advice) || !mmget_not_zero(ctx->mm))
		return;
	srcu = gmem_notifiers_enter();
	while (addr < end && !fatal_signal_pending(current)) {
		struct vm_area_struct *vma;
		u64 w, wend, lo, hi;

		mmap_read_lock(ctx->mm);
		vma = find_vma(ctx->mm, addr);
		if (vma && vma->vm_start < end) {
			addr = max_t(u64, addr, vma->vm_start);
			gmem_window(vma, addr, &w, &wend);
			wend = min(wend, end);
		}
		mmap_read_unlock(ctx->mm);
		if (!vma || vma->vm_start >= end)
			break;
		if (gmem_accessed_span(ctx, addr, wend, &lo, &hi))
			gmem_map_window(ctx, lo, hi, req, pfns);
		addr = wend;
		cond_resched();
	}
	gmem_notifiers_exit(srcu);
	mmput(ctx->mm);
}

/* gmem_advice_cpu_moved() for [lo, hi), inside one window. */
static void gmem_advice_map_held(struct gmem_ctx *ctx, u64 lo, u64 hi, unsigned long *pfns)
{
	struct mmu_interval_notifier *mni;
	int srcu, replaced, tries = 0;

	srcu = gmem_notifiers_enter();
	mni = gmem_notifier(ctx, lo);
	while (mni && tries++ < 8 && !gmem_pt_reserve(ctx, lo, hi)) {
		struct hmm_range range = {
			.notifier = mni,
			.start = lo,
			.end = hi,
			.hmm_pfns = pfns,
			.dev_private_owner = ctx->g,
		};
		unsigned long own;
		int ret;

		memset(pfns, 0, ((hi - lo) >> PAGE_SHIFT) * sizeof(*pfns));
		own = gmem_own_moves(mni);
		range.notifier_seq = mmu_interval_read_begin(mni);
		ret = hmm_range_fault(&range);
		if (ret == -EBUSY)
			continue;
		if (ret)
			break;
		mutex_lock(&ctx->lock);
		if (gmem_read_retry(mni, range.notifier_seq, own)) {
			mutex_unlock(&ctx->lock);
			continue;
		}
		replaced = gmem_pt_map(ctx, lo, pfns, (hi - lo) >> PAGE_SHIFT);
		mutex_unlock(&ctx->lock);
		if (replaced > 0 || replaced == -EAGAIN)
			gmem_tlb_invalidate(ctx->g, ctx->id, lo, hi - lo);
		if (replaced != -EAGAIN)
			break;
	}
	gmem_notifiers_exit(srcu);
}

/*
 * The driver moved pages of [start, end) of @ctx's process home with the mmap lock held (a
 * CPU access's migrate_to_ram, an eviction): map the accessed-by ones where they are now,
 * before the access completes. Under that lock (every migrate_to_ram() caller holds it), so
 * this is hmm_range_fault()'s own loop, faulting nothing, without gmem_notifier_get() (which
 * may take it): a window the device never reached has nothing to keep mapped. @pfns: a
 * window's scratch.
 */
void gmem_advice_cpu_moved(struct gmem_ctx *ctx, u64 start, u64 end, unsigned long *pfns)
{
	if (mtree_empty(&ctx->advice))
		return;
	mmap_assert_locked(ctx->mm);
	for (u64 w = start, next, lo, hi; w < end; w = next) {
		next = min(ALIGN(w + 1, GMEM_HUGE_SIZE), end);
		if (gmem_accessed_span(ctx, w, next, &lo, &hi))
			gmem_advice_map_held(ctx, lo, hi, pfns);
	}
}

/*
 * GMEM_ACCEL_IOC_ADVISE on the checked range [adv->addr, + adv->size): see struct
 * gmem_accel_advise for what the flags mean and which combinations are -EINVAL.
 */
int gmem_advise(struct gmem_ctx *ctx, const struct gmem_accel_advise *adv)
{
	unsigned long first = adv->addr >> PAGE_SHIFT, clear = 0, set = 0, *scratch;
	u32 rm = adv->flags & (GMEM_ACCEL_ADVISE_READ_MOSTLY | GMEM_ACCEL_ADVISE_NOT_READ_MOSTLY);
	bool keep = adv->flags & GMEM_ACCEL_ADVISE_KEEP_LOCATION;
	u64 end = adv->addr + adv->size, moved;
	int ret;

	if (adv->flags & ~GMEM_ACCEL_ADVISE_FLAGS)
		return -EINVAL;
	if ((adv->flags & GMEM_ACCEL_ADVISE_ACCESSED_BY) &&
	    (adv->flags & GMEM_ACCEL_ADVISE_NOT_ACCESSED_BY))
		return -EINVAL;
	if (rm == (GMEM_ACCEL_ADVISE_READ_MOSTLY | GMEM_ACCEL_ADVISE_NOT_READ_MOSTLY))
		return -EINVAL;
	if (keep && (adv->location || !(rm || adv->flags & (GMEM_ACCEL_ADVISE_ACCESSED_BY |
							    GMEM_ACCEL_ADVISE_NOT_ACCESSED_BY))))
		return -EINVAL;
	if (adv->location > GMEM_ACCEL_PREFER_SYSTEM)
		return -EINVAL;
	/* Read duplication needs memory whose CPU mappings the driver owns: managed objects. */
	if (rm) {
		ret = gmem_managed_check(ctx, adv->addr, end);
		if (ret)
			return ret;
	}
	if (!keep) {
		clear |= GMEM_ADVICE_LOCATION;
		set |= adv->location;
	}
	if (adv->flags & GMEM_ACCEL_ADVISE_ACCESSED_BY)
		set |= GMEM_ADVICE_ACCESSED_BY;
	if (adv->flags & GMEM_ACCEL_ADVISE_NOT_ACCESSED_BY)
		clear |= GMEM_ADVICE_ACCESSED_BY;
	ret = gmem_advice_update(ctx, first, (end >> PAGE_SHIFT) - 1, clear, set);
	if (ret)
		return ret;
	/* Read-mostly is the managed pages' own; PREFER_SYSTEM brings them home too. */
	ret = gmem_managed_advise(ctx, adv->addr, end, adv->flags, adv->location);
	if (ret < 0)
		return ret;
	if (ret)	/* all managed: nothing for hmm to move or map */
		return 0;
	/* Home at once (and the accessed-by pages mapped there, by gmem_migrate()). */
	if (!keep && adv->location == GMEM_ACCEL_PREFER_SYSTEM && ctx->g->hbm.mapped)
		return gmem_migrate(ctx, adv->addr, end, GMEM_MIGRATE_SKIP_HOLES, &moved);
	if (!(adv->flags & GMEM_ACCEL_ADVISE_ACCESSED_BY))
		return 0;
	/* The present pages are mapped now; the others as the device first touches them. */
	scratch = kvmalloc_array(2 * GMEM_WINDOW_PAGES, sizeof(*scratch), GFP_KERNEL);
	if (!scratch)
		return -ENOMEM;
	gmem_advice_map_range(ctx, adv->addr, end, scratch, scratch + GMEM_WINDOW_PAGES);
	kvfree(scratch);
	return 0;
}
