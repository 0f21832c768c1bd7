// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: a DRM front-end context's shared virtual memory, through the kernel's GPU
 * SVM layer (drm_gpusvm) instead of the core's notifier windows and hmm passes. The context's
 * fault hook serves each fault group: drm_gpusvm_range_find_or_insert() (chunks of 2 MiB,
 * 64 KiB or 4 KiB that fit the CPU VMA), drm_gpusvm_get_pages() (hmm_range_fault() and the
 * DMA mappings, which drm_gpusvm owns), then, under drm_gpusvm's notifier lock with the pages
 * still valid, the device page-table leaves (the core's, marked as borrowing their DMA
 * mapping). drm_gpusvm's invalidate callback zaps the leaves of every range it touches, waits
 * for the device TLB, and gives the DMA mappings back; ranges whose memory was unmapped go to
 * a garbage collector, as xe's do, run before each fault group and by a work item.
 *
 * Locks: svm.lock (the driver lock drm_gpusvm is told of: its ranges are inserted and removed
 * under it) is taken by the fault server (under gmem_ctx.fault_mutex) and the garbage
 * collector, before mmap_lock; drm_gpusvm's notifier_lock is taken before gmem_ctx.lock.
 */
#include <linux/delay.h>
#include <linux/hmm.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <drm/drm_device.h>
#include <drm/drm_gpusvm.h>
#include <drm/drm_pagemap.h>

#include "gmem_accel.h"
#include "gmem_accel_drm.h"
#include "gmem_accel_drm_uapi.h"
#include "gmem_accel_fault.h"
#include "gmem_accel_obj.h"
#include "gmem_accel_pt.h"

/* A context's GPU SVM: the context's hook_data. */
struct gmem_drm_svm {
	struct drm_gpusvm gpusvm;
	struct gmem_ctx *ctx;
	struct drm_device *drm;		/* owns the DMA mappings */
	struct mutex lock;		/* ranges inserted and removed (drm_gpusvm's driver lock) */
	spinlock_t gc_lock;		/* gc_list */
	struct list_head gc_list;	/* ranges whose memory was unmapped, to remove */
	struct work_struct gc_work;
	bool stopped;
	struct gmem_drm_mem mem;	/* where its memory lives (gmem_accel_drm_mem.c) */
};

/*
 * @doomed: queued for removal, or being removed (under drm_gpusvm's notifier lock): never
 * queued again, as a range the collector took off its list and is removing is still in
 * drm_gpusvm's tree for the next munmap's invalidation to find.
 * @writable: its pages were faulted in for writing (set by the fault server, cleared when an
 * invalidation takes them); else a device read faulted them in for reading only, as the own
 * front end does, so that memory nobody wrote maps the zero page rather than being allocated.
 */
struct gmem_drm_range {
	struct drm_gpusvm_range base;
	struct drm_gpusvm_pages pages;
	struct list_head gc_link;
	bool doomed;
	bool writable;
};

static const unsigned long gmem_drm_chunk_sizes[] = { SZ_2M, SZ_64K, SZ_4K };

/* One notifier per this much address space, as xe's default (xe.svm_notifier_size). */
#define GMEM_DRM_NOTIFIER_SIZE	SZ_512M

static struct gmem_drm_svm *to_svm(struct drm_gpusvm *gpusvm)
{
	return container_of(gpusvm, struct gmem_drm_svm, gpusvm);
}

static struct gmem_drm_range *to_range(struct drm_gpusvm_range *r)
{
	return container_of(r, struct gmem_drm_range, base);
}

static unsigned long gmem_drm_range_pages(struct drm_gpusvm_range *r)
{
	return drm_gpusvm_range_size(r) >> PAGE_SHIFT;
}

static struct drm_gpusvm_range *gmem_drm_range_alloc(struct drm_gpusvm *gpusvm)
{
	struct gmem_drm_range *range = kzalloc(sizeof(*range), GFP_KERNEL);

	if (!range)
		return NULL;
	INIT_LIST_HEAD(&range->gc_link);
	drm_gpusvm_init_pages(&range->pages, to_svm(gpusvm)->drm);
	return &range->base;
}

static void gmem_drm_range_free(struct drm_gpusvm_range *r)
{
	drm_gpusvm_free_pages(r->gpusvm, &to_range(r)->pages, gmem_drm_range_pages(r));
	kfree(to_range(r));
}

/*
 * The CPU's page table changes under [mmu_range): the device forgets every range it touches
 * (their DMA mappings go whole), and unmapped ranges are collected. Called by drm_gpusvm with
 * its notifier lock held for writing.
 */
static void gmem_drm_invalidate(struct drm_gpusvm *gpusvm, struct drm_gpusvm_notifier *notifier,
				const struct mmu_notifier_range *mmu_range)
{
	struct gmem_drm_svm *svm = to_svm(gpusvm);
	struct drm_gpusvm_ctx gctx = { .in_notifier = true };
	unsigned long start = max(drm_gpusvm_notifier_start(notifier), mmu_range->start);
	unsigned long end = min(drm_gpusvm_notifier_end(notifier), mmu_range->end);
	struct gmem_ctx *ctx = svm->ctx;
	struct drm_gpusvm_range *r, *first;
	u64 zap_start, zap_end = 0;
	bool queued = false;

	first = drm_gpusvm_range_find(notifier, start, end);
	if (!first)
		return;
	/*
	 * One zap from the first range's start to the last one's end, one device TLB
	 * invalidation for all: a process's exit or a large munmap() meets many ranges. What
	 * lies between them (an object's leaves) the device faults in again.
	 */
	zap_start = drm_gpusvm_range_start(first);
	r = first;
	drm_gpusvm_for_each_range(r, notifier, start, end)
		zap_end = drm_gpusvm_range_end(r);
	mutex_lock(&ctx->lock);
	gmem_pt_zap(ctx, zap_start, zap_end);
	mutex_unlock(&ctx->lock);
	r = first;
	drm_gpusvm_for_each_range(r, notifier, start, end) {
		struct gmem_drm_range *range = to_range(r);

		drm_gpusvm_unmap_pages(gpusvm, &range->pages, gmem_drm_range_pages(r), &gctx);
		WRITE_ONCE(range->writable, false);
		/*
		 * Collected once: another munmap() in the range may come while the collector,
		 * having taken it off its list, has yet to remove it.
		 */
		if (mmu_range->event != MMU_NOTIFY_UNMAP || READ_ONCE(svm->stopped) ||
		    range->doomed)
			continue;
		drm_gpusvm_range_set_unmapped(r, &range->pages, 1, mmu_range);
		range->doomed = true;
		spin_lock(&svm->gc_lock);
		list_add_tail(&range->gc_link, &svm->gc_list);
		spin_unlock(&svm->gc_lock);
		queued = true;
	}
	if (queued)
		queue_work(system_unbound_wq, &svm->gc_work);
	gmem_ctx_count(ctx, GMEM_CTX_INVALIDATIONS, 1);
	gmem_dev_count(ctx->g, GMEM_DEV_INVALIDATIONS, 1);
}

static const struct drm_gpusvm_ops gmem_drm_svm_ops = {
	.range_alloc = gmem_drm_range_alloc,
	.range_free = gmem_drm_range_free,
	.invalidate = gmem_drm_invalidate,
};

/*
 * A range of the 2 MiB window at @start went: the window's table of 4 KiB device entries goes
 * too (the core's gmem_pt_drop_window(), as for the own front end's unmapped windows) once
 * nothing in the window is mapped, so that a process that maps and unmaps memory all over its
 * address space does not grow its page table. svm->lock held: no fault maps meanwhile.
 */
static void gmem_drm_window_gc(struct gmem_drm_svm *svm, u64 start)
{
	DECLARE_BITMAP(map, GMEM_WINDOW_PAGES);
	struct gmem_ctx *ctx = svm->ctx;
	bool empty;

	mutex_lock(&ctx->lock);
	gmem_pt_window_mapped(ctx, start, map);
	empty = bitmap_empty(map, GMEM_WINDOW_PAGES);
	mutex_unlock(&ctx->lock);
	if (empty)
		gmem_pt_drop_window(ctx, start);
}

/* Remove the ranges whose memory was unmapped, and the tables they leave empty; svm->lock held. */
static void gmem_drm_gc(struct gmem_drm_svm *svm)
{
	lockdep_assert_held(&svm->lock);
	for (;;) {
		struct gmem_drm_range *range;
		u64 window;

		spin_lock(&svm->gc_lock);
		range = list_first_entry_or_null(&svm->gc_list, struct gmem_drm_range, gc_link);
		if (range)
			list_del_init(&range->gc_link);
		spin_unlock(&svm->gc_lock);
		if (!range)
			return;
		/* (a range lies in one window: chunks are at most 2 MiB, and aligned) */
		window = ALIGN_DOWN(drm_gpusvm_range_start(&range->base), GMEM_HUGE_SIZE);
		drm_gpusvm_range_remove(&svm->gpusvm, &range->base);
		gmem_drm_window_gc(svm, window);
	}
}

static void gmem_drm_gc_work(struct work_struct *work)
{
	struct gmem_drm_svm *svm = container_of(work, struct gmem_drm_svm, gc_work);

	mutex_lock(&svm->lock);
	gmem_drm_gc(svm);
	mutex_unlock(&svm->lock);
}

/* The permissions of a leaf at @va of @svm's (@write: writable; @hbm: in HBM). */
static u64 gmem_drm_leaf_perm(struct gmem_drm_svm *svm, u64 va, bool write, bool hbm)
{
	if (!write)
		return 0;
	return GMEM_PTE_WRITE | (gmem_drm_mem_atomic_ok(&svm->mem, va, hbm) ? GMEM_PTE_ATOMIC : 0);
}

/*
 * Map @r's pages into the device page table: each DMA mapping drm_gpusvm made (a 2 MiB folio's
 * as one leaf where it fits and one atomic access covers it). ctx->lock held, under
 * drm_gpusvm's notifier lock with the pages valid; returns as gmem_pt_map() does.
 */
static int gmem_drm_map_range(struct gmem_drm_svm *svm, struct drm_gpusvm_range *r, bool write)
{
	struct drm_pagemap_addr *addr = to_range(r)->pages.dma_addr;
	unsigned long npages = gmem_drm_range_pages(r), i = 0, j = 0;
	u64 va = drm_gpusvm_range_start(r);
	struct gmem_ctx *ctx = svm->ctx;
	int replaced = 0, ret;

	lockdep_assert_held(&ctx->lock);
	while (i < npages) {
		unsigned long n = 1ul << addr[j].order;
		u64 at = va + i * PAGE_SIZE;
		/*
		 * (a page in the device's own HBM: drm_pagemap's, by its offset; one in another
		 * device's HBM: a bus address through its BAR2, system memory to this device)
		 */
		bool hbm = addr[j].proto == GMEM_DRM_INTERCONNECT_HBM;

		if ((!hbm && addr[j].proto != DRM_INTERCONNECT_SYSTEM &&
		     addr[j].proto != GMEM_DRM_INTERCONNECT_PEER) || i + n > npages)
			return -EFAULT;
		if (n == GMEM_WINDOW_PAGES && IS_ALIGNED(at, GMEM_HUGE_SIZE) &&
		    gmem_drm_mem_atomic_uniform(&svm->mem, at, GMEM_HUGE_SIZE)) {
			ret = gmem_pt_map_obj(ctx, at, addr[j].addr, GMEM_HUGE_SIZE, hbm,
					      gmem_drm_leaf_perm(svm, at, write, hbm), false);
			if (ret < 0)
				return ret;
			replaced |= ret;
		} else {
			for (unsigned long k = 0; k < n; k++) {
				u64 a = at + k * PAGE_SIZE;

				ret = gmem_pt_map_obj(ctx, a, addr[j].addr + k * PAGE_SIZE,
						      PAGE_SIZE, hbm,
						      gmem_drm_leaf_perm(svm, a, write, hbm),
						      false);
				if (ret < 0)
					return ret;
				replaced |= ret;
			}
		}
		gmem_ctx_count(ctx, GMEM_CTX_PAGES_MAPPED, n);
		i += n;
		j++;
	}
	return replaced;
}

/* Are @r's pages all in the device's HBM? Under drm_gpusvm's notifier lock, pages valid. */
static bool gmem_drm_range_in_hbm(struct drm_gpusvm_range *r)
{
	struct drm_pagemap_addr *addr = to_range(r)->pages.dma_addr;
	unsigned long npages = gmem_drm_range_pages(r);

	for (unsigned long i = 0, j = 0; i < npages; i += 1ul << addr[j].order, j++)
		if (addr[j].proto != GMEM_DRM_INTERCONNECT_HBM)
			return false;
	return true;
}

/* How many of @r's pages are in the device's HBM? Under drm_gpusvm's notifier lock, pages valid. */
static unsigned long gmem_drm_range_hbm_count(struct drm_gpusvm_range *r)
{
	struct drm_pagemap_addr *addr = to_range(r)->pages.dma_addr;
	unsigned long npages = gmem_drm_range_pages(r), n = 0;

	for (unsigned long i = 0, j = 0; i < npages; i += 1ul << addr[j].order, j++)
		if (addr[j].proto == GMEM_DRM_INTERCONNECT_HBM)
			n += 1ul << addr[j].order;
	return n;
}

/*
 * Is a page of @r in HBM (the device's, or a peer's it maps in place) mapped by more than one
 * process (shared after fork())? hmm_range_fault() gives the owner's device pages as they
 * are, read-only ones too (the CPU would break the COW on its write fault, which hmm does
 * not make for them): such a page is no page to write. Under drm_gpusvm's notifier lock,
 * pages valid (so all of them are of pages.dpagemap).
 */
static bool gmem_drm_range_hbm_shared(struct gmem_drm_svm *svm, struct drm_gpusvm_range *r)
{
	struct drm_gpusvm_pages *pages = &to_range(r)->pages;
	struct drm_pagemap_addr *addr = pages->dma_addr;
	unsigned long npages = gmem_drm_range_pages(r);

	for (unsigned long i = 0, j = 0; i < npages; i += 1ul << addr[j].order, j++)
		if ((addr[j].proto == GMEM_DRM_INTERCONNECT_HBM ||
		     addr[j].proto == GMEM_DRM_INTERCONNECT_PEER) &&
		    gmem_dpm_shared(pages->dpagemap, pages->drm->dev, &addr[j]))
			return true;
	return false;
}

/*
 * Does the CPU map every page of range @r writable now (a look, faulting nothing in; @pfns:
 * room for the range's pages)? A device read then maps them writable, as the own front end
 * maps what the CPU page table allows: a later device write to memory the CPU wrote needs
 * no second fault and DMA mapping. Memory nobody wrote (the zero page), shared after fork()
 * or write-protected stays read-only until the device writes it.
 */
static bool gmem_drm_range_cpu_writable(struct gmem_drm_svm *svm, struct drm_gpusvm_range *r,
					unsigned long *pfns)
{
	struct hmm_range hr = {
		.notifier = &r->notifier->notifier,
		.start = drm_gpusvm_range_start(r),
		.end = drm_gpusvm_range_end(r),
		.hmm_pfns = pfns,
		.dev_private_owner = svm->mem.owner,
	};
	unsigned long npages = gmem_drm_range_pages(r);
	struct mm_struct *mm = svm->ctx->mm;
	int ret;

	if (!pfns || npages > GMEM_WINDOW_PAGES || !mmget_not_zero(mm))
		return false;
	hr.notifier_seq = mmu_interval_read_begin(hr.notifier);
	mmap_read_lock(mm);
	ret = hmm_range_fault(&hr);
	mmap_read_unlock(mm);
	mmput(mm);
	if (ret)
		return false;
	for (unsigned long i = 0; i < npages; i++)
		if (!(pfns[i] & HMM_PFN_WRITE))
			return false;
	return true;
}

/* Does range @r have DMA-mapped pages (only an invalidation takes them from under us)? */
static bool gmem_drm_range_mapped(struct drm_gpusvm_range *r)
{
	struct drm_gpusvm_pages_flags flags = {
		.__flags = READ_ONCE(to_range(r)->pages.flags.__flags),
	};

	return flags.has_dma_mapping;
}

/* Forget range @r's pages (svm->lock held): the device's leaves, then the DMA mappings. */
static void gmem_drm_range_unmap(struct gmem_drm_svm *svm, struct drm_gpusvm_range *r)
{
	struct drm_gpusvm_ctx gctx = {};

	mutex_lock(&svm->ctx->lock);
	gmem_pt_zap(svm->ctx, drm_gpusvm_range_start(r), drm_gpusvm_range_end(r));
	mutex_unlock(&svm->ctx->lock);
	drm_gpusvm_unmap_pages(&svm->gpusvm, &to_range(r)->pages, gmem_drm_range_pages(r), &gctx);
}

/*
 * Forget range @r at once (svm->lock held): the device's leaves, its DMA mappings, the range.
 * For a range made for a VMA that mprotect() has split since: faulting it whole asks more
 * of part of it than that part now gives, so it is made again to fit.
 */
static void gmem_drm_range_drop(struct gmem_drm_svm *svm, struct drm_gpusvm_range *r)
{
	struct gmem_drm_range *range = to_range(r);

	/* (no invalidation queues it from here on: it is removed here) */
	drm_gpusvm_notifier_lock(&svm->gpusvm);
	range->doomed = true;
	drm_gpusvm_notifier_unlock(&svm->gpusvm);
	spin_lock(&svm->gc_lock);
	list_del_init(&range->gc_link);
	spin_unlock(&svm->gc_lock);
	gmem_drm_range_unmap(svm, r);
	drm_gpusvm_range_remove(&svm->gpusvm, r);
}

/* Does one VMA of @mm cover [start, end)? */
static bool gmem_drm_one_vma(struct mm_struct *mm, u64 start, u64 end)
{
	struct vm_area_struct *vma;
	bool ret;

	mmap_read_lock(mm);
	vma = vma_lookup(mm, start);
	ret = vma && end <= vma->vm_end;
	mmap_read_unlock(mm);
	return ret;
}

/*
 * A range whose pages went again before they could be mapped, twice: the CPU takes them
 * faster than a range of that size faults in (reclaim under a memcg limit takes some of its
 * 512 pages while the others come in). It is dropped, and made again no larger than the next
 * chunk size down (*@bound), so that the fault makes progress. True if it was.
 */
static bool gmem_drm_range_shrink(struct gmem_drm_svm *svm, struct drm_gpusvm_range *r,
				  unsigned int *lost, unsigned long *bound)
{
	unsigned long size = drm_gpusvm_range_size(r);

	if (++*lost < 2 || size <= SZ_4K)
		return false;
	*bound = size > SZ_64K ? SZ_64K : SZ_4K;
	*lost = 0;
	gmem_drm_range_drop(svm, r);
	return true;
}

/*
 * Serve a device fault at @va (@perm: the permissions beyond READ its access needs) through
 * drm_gpusvm; 0 or an errno the batch may fail with (docs/uapi.md: EFAULT, EPERM, EBUSY,
 * ENOSPC). @prefetch: as if the range preferred the device. The end of the range it made in
 * *@next. @pfns: scratch for a range's pages (NULL: a read maps for reading only).
 */
static int gmem_drm_fault_one(struct gmem_drm_svm *svm, u64 va, u64 perm, bool prefetch,
			      unsigned long *pfns, u64 *next)
{
	struct drm_gpusvm *gpusvm = &svm->gpusvm;
	struct gmem_ctx *ctx = svm->ctx;
	int ret, tries = 0, last = 0, move_err = 0, raced = 0;
	unsigned long bound = 0;	/* the largest range size to make; 0: any */
	unsigned int loc = prefetch ? GMEM_ACCEL_PREFER_DEVICE : gmem_drm_mem_pref(&svm->mem, va);
	unsigned int atomic = gmem_drm_mem_atomic(&svm->mem, va), lost = 0;
	bool write = perm & GMEM_PTE_WRITE, moved = false, migrated = false, vma_ro;
	/* a device atomic where only HBM gives it (gmem_drm_mem_atomic_ok()) */
	bool need_hbm = (perm & GMEM_PTE_ATOMIC) && atomic == GMEM_ACCEL_DRM_ATOMIC_GLOBAL;

	if ((perm & GMEM_PTE_ATOMIC) && atomic == GMEM_ACCEL_DRM_ATOMIC_CPU)
		return -EPERM;
	if (need_hbm && !svm->mem.dpagemap)
		return -ENOSPC;
	for (;;) {
		/*
		 * Device memory: pages in the device's HBM, or another device's (its peer's,
		 * as the owner is shared), are mapped there, but in a PREFER_SYSTEM range
		 * (which hmm_range_fault() then brings home); a PREFER_DEVICE range moves in,
		 * from a peer's HBM straight (source-peer migration), as a range does for an
		 * atomic that needs HBM. Any range of anonymous memory can move (as xe makes
		 * every range): the advice may come after the range.
		 */
		struct drm_gpusvm_ctx gctx = {
			.device_private_page_owner = loc == GMEM_ACCEL_PREFER_SYSTEM && !need_hbm ?
						     NULL : svm->mem.owner,
			.devmem_possible = !!svm->mem.dpagemap,
			.allow_mixed = true,
		};
		bool to_hbm = loc == GMEM_ACCEL_PREFER_DEVICE || need_hbm;
		struct vm_area_struct *vma;
		struct drm_gpusvm_range *r;
		bool noaccess;
		u64 start, end;

		/* The range kept changing (the core replays the group), or it is gone. */
		if (++tries > 12)
			return last ?: -EBUSY;
		if (gmem_owner_dying(ctx))
			return -EINTR;
		/* Each try: the VMA's protection may have changed since the last. */
		mmap_read_lock(ctx->mm);
		vma = vma_lookup(ctx->mm, va);
		/* As xe's read-only VMAs: the whole range is mapped read-only, or writable. */
		vma_ro = vma && !(vma->vm_flags & VM_WRITE);
		gctx.read_only = vma_ro;
		noaccess = vma && !(vma->vm_flags & VM_READ);
		mmap_read_unlock(ctx->mm);
		if (!vma || noaccess)
			return -EFAULT;
		if (write && vma_ro)
			return -EPERM;
		gmem_drm_gc(svm);
		r = drm_gpusvm_range_find_or_insert(gpusvm, va, bound ? ALIGN_DOWN(va, bound) : 0,
						    bound ? ALIGN_DOWN(va, bound) + bound : TASK_SIZE,
						    &gctx);
		if (r == ERR_PTR(-ENOENT) || r == ERR_PTR(-EPERM)) {
			/* the VMA went, or lost its write permission, since the look above */
			last = PTR_ERR(r) == -ENOENT ? -EFAULT : -EPERM;
			continue;
		}
		if (IS_ERR(r))	/* (-EIO: VM_IO or VM_PFNMAP memory, as hmm refuses it) */
			return PTR_ERR(r) == -ENOMEM ? -ENOMEM : -EFAULT;
		start = drm_gpusvm_range_start(r);
		end = drm_gpusvm_range_end(r);
		*next = end;
		/*
		 * A read faults the pages in for reading only, unless the range has them for
		 * writing already or the CPU maps them all writable; a write to a range that has
		 * them for reading only gives them back first, so that they are faulted in again
		 * for writing.
		 */
		if (!write && !READ_ONCE(to_range(r)->writable) && !gctx.read_only &&
		    !gmem_drm_range_cpu_writable(svm, r, pfns))
			gctx.read_only = true;
		if (write && !READ_ONCE(to_range(r)->writable) && gmem_drm_range_mapped(r))
			gmem_drm_range_unmap(svm, r);
		/* (once a fault: a range that cannot move is mapped where it is) */
		if (to_hbm && gctx.devmem_possible && r->flags.migrate_devmem && !moved) {
			moved = true;
			/* (a fault's move may leave it: HBM oversubscribed, as the own one's) */
			move_err = gmem_dpm_migrate_range(&svm->mem, r, ctx,
							  !prefetch && !need_hbm);
			migrated |= move_err > 0;
		}
		ret = drm_gpusvm_get_pages(gpusvm, &to_range(r)->pages, ctx->mm,
					   &r->notifier->notifier, start, end, &gctx);
		if ((ret == -EPERM || ret == -EFAULT) && !gmem_drm_one_vma(ctx->mm, start, end)) {
			/* made for a VMA split since: made again, to fit the VMA at @va */
			gmem_drm_range_drop(svm, r);
			last = ret;
			continue;
		}
		if (ret == -EOPNOTSUPP || ret == -EFAULT || ret == -EAGAIN || ret == -EBUSY) {
			/* the CPU's mappings changed under it (xe's corner case): once more */
			last = ret == -EFAULT ? ret : 0;
			/* (pages in two devices' HBM, which one range cannot map: home, as xe) */
			if (ret == -EOPNOTSUPP)
				drm_gpusvm_range_evict(gpusvm, r);
			if (ret != -EFAULT)
				gmem_drm_range_shrink(svm, r, &lost, &bound);
			cond_resched();
			continue;
		}
		if (ret)
			return ret;
		/* (a stale true only makes a later read fault its pages in for writing) */
		WRITE_ONCE(to_range(r)->writable, !gctx.read_only);
		/* Page-table pages are allocated here, never under the locks below. */
		ret = gmem_pt_reserve(ctx, start, end);
		if (ret)
			return ret;
		drm_gpusvm_notifier_lock(gpusvm);
		if (!drm_gpusvm_pages_valid(gpusvm, &to_range(r)->pages)) {
			drm_gpusvm_notifier_unlock(gpusvm);
			gmem_drm_range_shrink(svm, r, &lost, &bound);
			continue;
		}
		if (need_hbm && !gmem_drm_range_in_hbm(r)) {
			drm_gpusvm_notifier_unlock(gpusvm);
			/* no room, or memory that cannot move: no HBM for the atomic */
			if (!r->flags.migrate_devmem || move_err == -ENOMEM)
				return -ENOSPC;
			/*
			 * The CPU took it back before it could be mapped: contention, which
			 * throttles (not counted as a try) and moves it in again, but not for
			 * ever (seconds of it: the range kept changing) nor past an unbind.
			 */
			if (raced > 2000 || READ_ONCE(ctx->g->unbinding))
				return -EBUSY;
			tries--;
			usleep_range(50 << min(raced, 6), 100 << min(raced, 6));
			raced++;
			moved = false;
			continue;
		}
		if (!gctx.read_only && gmem_drm_range_hbm_shared(svm, r)) {
			/* home, where the write fault breaks the COW, then mapped there */
			drm_gpusvm_notifier_unlock(gpusvm);
			drm_gpusvm_range_evict(gpusvm, r);
			last = -EBUSY;
			continue;
		}
		mutex_lock(&ctx->lock);
		ret = gmem_drm_map_range(svm, r, !gctx.read_only);
		mutex_unlock(&ctx->lock);
		/* (STATS: the pages this context moved, as the core counts its migrations) */
		if (migrated && ret >= 0) {
			gmem_ctx_count(ctx, GMEM_CTX_MIGRATED_TO_DEVICE, gmem_drm_range_hbm_count(r));
			migrated = false;
		}
		drm_gpusvm_notifier_unlock(gpusvm);
		if (ret > 0 || ret == -EAGAIN)
			gmem_tlb_invalidate(ctx->g, ctx->id, start, end - start);
		if (ret == -EAGAIN)	/* spare tables gone meanwhile: reserve again */
			continue;
		return ret < 0 ? ret : 0;
	}
}

/* The context's fault hook: every fault of the group, through drm_gpusvm. */
static int gmem_drm_fault_hook(struct gmem_ctx *ctx, const struct gmem_fault *f, unsigned int n,
			       unsigned long *req, unsigned long *pfns)
{
	struct gmem_drm_svm *svm = ctx->hook_data;
	int ret = 0;

	mutex_lock(&svm->lock);
	for (unsigned int i = 0; i < n && !ret; i++) {
		u64 perm = gmem_fault_perm(&f[i]);
		u64 start, end;

		/* (an earlier fault's range may have mapped it) */
		if (gmem_pt_maps_all(ctx, f[i].va & PAGE_MASK, (f[i].va & PAGE_MASK) + PAGE_SIZE,
				     perm))
			continue;
		/* In a mapping of a GEM object: the core maps its pages (not hmm's). */
		ret = gmem_obj_fault(ctx, f[i].va & PAGE_MASK, perm & GMEM_PTE_WRITE, &start, &end);
		if (!ret && (perm & GMEM_PTE_ATOMIC))
			ret = gmem_drm_obj_atomic(ctx, f[i].va & PAGE_MASK, perm);
		if (ret == -ENOENT)
			ret = gmem_drm_fault_one(svm, f[i].va & PAGE_MASK, perm, false, pfns,
						 &end);
	}
	mutex_unlock(&svm->lock);
	return ret ? ret : GMEM_FAULT_HOOK_ALL;
}

/*
 * The context leaves the device (its fault servers are done): no range is collected any more,
 * and drm_gpusvm gives back every DMA mapping and notifier, before the page table goes.
 */
static void gmem_drm_svm_fini(struct gmem_ctx *ctx)
{
	struct gmem_drm_svm *svm = ctx->hook_data;
	struct drm_gpusvm_ctx gctx = {};
	struct drm_gpusvm_notifier *notifier, *next;

	WRITE_ONCE(svm->stopped, true);
	disable_work_sync(&svm->gc_work);
	/* (ranges are removed under the driver lock, drm_gpusvm_fini()'s too) */
	mutex_lock(&svm->lock);
	drm_gpusvm_for_each_notifier_safe(notifier, next, &svm->gpusvm, 0, LONG_MAX) {
		struct drm_gpusvm_range *r, *rnext;

		drm_gpusvm_for_each_range_safe(r, rnext, notifier, 0, LONG_MAX)
			drm_gpusvm_unmap_pages(&svm->gpusvm, &to_range(r)->pages,
					       gmem_drm_range_pages(r), &gctx);
	}
	drm_gpusvm_fini(&svm->gpusvm);
	mutex_unlock(&svm->lock);
	gmem_drm_mem_fini(&svm->mem);
	ctx->fault_hook = NULL;
	ctx->hook_atomic = NULL;
	ctx->hook_fini = NULL;
	ctx->hook_data = NULL;
	mutex_destroy(&svm->lock);
	kfree(svm);
}

/* Give a new context of the DRM front end its GPU SVM, over the opening process's mm. */
int gmem_drm_svm_init(struct gmem_ctx *ctx, struct drm_device *drm)
{
	struct gmem_drm_svm *svm = kzalloc(sizeof(*svm), GFP_KERNEL);
	int ret;

	if (!svm)
		return -ENOMEM;
	svm->ctx = ctx;
	svm->drm = drm;
	mutex_init(&svm->lock);
	spin_lock_init(&svm->gc_lock);
	INIT_LIST_HEAD(&svm->gc_list);
	INIT_WORK(&svm->gc_work, gmem_drm_gc_work);
	ret = gmem_drm_mem_init(&svm->mem, ctx->g);
	if (ret) {
		kfree(svm);
		return ret;
	}
	ret = drm_gpusvm_init(&svm->gpusvm, "gmem-accel SVM", ctx->mm, 0, TASK_SIZE,
			      GMEM_DRM_NOTIFIER_SIZE, &gmem_drm_svm_ops, gmem_drm_chunk_sizes,
			      ARRAY_SIZE(gmem_drm_chunk_sizes));
	if (ret) {
		gmem_drm_mem_fini(&svm->mem);
		kfree(svm);
		return ret;
	}
	drm_gpusvm_driver_set_lock(&svm->gpusvm, &svm->lock);
	ctx->hook_data = svm;
	ctx->hook_fini = gmem_drm_svm_fini;
	ctx->hook_atomic = gmem_drm_hook_atomic;
	ctx->fault_hook = gmem_drm_fault_hook;
	return 0;
}

struct gmem_drm_mem *gmem_drm_svm_mem(struct gmem_ctx *ctx)
{
	return &((struct gmem_drm_svm *)ctx->hook_data)->mem;
}

/*
 * The device forgets its leaves in [start, end) (a new attribute for them): drm_gpusvm keeps
 * the pages and their DMA mappings, so that the next fault maps them again at once.
 */
void gmem_drm_svm_unmap(struct gmem_ctx *ctx, u64 start, u64 end)
{
	mutex_lock(&ctx->lock);
	gmem_pt_zap(ctx, start, end);
	mutex_unlock(&ctx->lock);
}

/*
 * Move [start, end) into the device's HBM ahead of the device's faults, as xe's prefetch
 * bind does: each range made, migrated and mapped as a fault of a PREFER_DEVICE range would
 * be. A GEM object's mapping is passed by: its pages are the object's, which never move (as
 * MIGRATE leaves pages that cannot move). -ENODEV if the device has no HBM for it, else as
 * a fault (EFAULT: not mapped).
 */
int gmem_drm_svm_prefetch(struct gmem_ctx *ctx, u64 start, u64 end)
{
	struct gmem_drm_svm *svm = ctx->hook_data;
	u64 va, next = start;
	int ret = 0;

	if (!svm->mem.dpagemap)
		return -ENODEV;
	mutex_lock(&svm->lock);
	for (va = start; va < end && !ret; va = max(next, va + PAGE_SIZE)) {
		next = gmem_drm_obj_vma_end(ctx->mm, va);
		if (!next)
			ret = gmem_drm_fault_one(svm, va, 0, true, NULL, &next);
		if (!ret && fatal_signal_pending(current))
			ret = -EINTR;
	}
	mutex_unlock(&svm->lock);
	return ret;
}

/*
 * How many of range @r's pages are in device memory of the file's owner (this device's HBM or
 * a peer's): a look at the CPU's page table, nothing faulted. svm->lock held.
 */
static unsigned long gmem_drm_range_devmem_pages(struct gmem_drm_svm *svm,
						 struct drm_gpusvm_range *r)
{
	unsigned long npages = gmem_drm_range_pages(r), n = 0, *pfns;
	struct hmm_range hr = {
		.notifier = &r->notifier->notifier,
		.start = drm_gpusvm_range_start(r),
		.end = drm_gpusvm_range_end(r),
		.dev_private_owner = svm->mem.owner,
	};
	int ret = -EBUSY;

	pfns = kvcalloc(npages, sizeof(*pfns), GFP_KERNEL);
	if (!pfns || !mmget_not_zero(svm->ctx->mm)) {
		kvfree(pfns);
		return 0;
	}
	hr.hmm_pfns = pfns;
	for (int tries = 0; ret == -EBUSY && tries < 8; tries++) {
		hr.notifier_seq = mmu_interval_read_begin(hr.notifier);
		mmap_read_lock(svm->ctx->mm);
		ret = hmm_range_fault(&hr);
		mmap_read_unlock(svm->ctx->mm);
	}
	mmput(svm->ctx->mm);
	for (unsigned long i = 0; !ret && i < npages; i++) {
		struct page *page = (pfns[i] & HMM_PFN_VALID) ? hmm_pfn_to_page(pfns[i]) : NULL;

		n += page && is_device_private_page(page) &&
		     page_pgmap(page)->owner == svm->mem.owner;
	}
	kvfree(pfns);
	return n;
}

/*
 * Bring the HBM pages of every range that meets [start, end) home (PREFER_SYSTEM advice),
 * counted as the context's moves home.
 */
void gmem_drm_svm_evict(struct gmem_ctx *ctx, u64 start, u64 end)
{
	struct gmem_drm_svm *svm = ctx->hook_data;
	struct drm_gpusvm_notifier *notifier, *next;

	mutex_lock(&svm->lock);
	drm_gpusvm_for_each_notifier_safe(notifier, next, &svm->gpusvm, start, end) {
		struct drm_gpusvm_range *r, *rnext;

		drm_gpusvm_for_each_range_safe(r, rnext, notifier, start, end) {
			unsigned long n = gmem_drm_range_devmem_pages(svm, r);

			if (!drm_gpusvm_range_evict(&svm->gpusvm, r) && n)
				gmem_ctx_count(ctx, GMEM_CTX_MIGRATED_TO_SYSTEM, n);
		}
	}
	mutex_unlock(&svm->lock);
}
