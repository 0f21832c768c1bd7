/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: what differs between the kernels it supports, Linux 6.12 LTS and 7.3, and
 * only here. Kbuild finds each difference in the headers of the kernel being built against
 * (GMEM_HAVE_*); the rest of the driver calls the gmem_ names below on both.
 */
#ifndef GMEM_ACCEL_COMPAT_H
#define GMEM_ACCEL_COMPAT_H

#include <linux/hmm.h>
#include <linux/memremap.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/rmap.h>

/* 7.3: page->pgmap lives in the folio, read with page_pgmap(). */
static inline struct dev_pagemap *gmem_page_pgmap(struct page *page)
{
#ifdef GMEM_HAVE_PAGE_PGMAP
	return page_pgmap(page);
#else
	return page->pgmap;
#endif
}

/*
 * A free device page (the first of a 2^@order folio on 7.3; 6.12 knows pages only) handed
 * out. Not page_folio(@page): a page that was a tail of a freed 2 MiB folio still points at
 * that folio's head until this resets it.
 */
static inline void gmem_zone_device_init(struct page *page, struct dev_pagemap *pgmap,
					 unsigned int order)
{
#ifdef GMEM_HAVE_FOLIO_FREE
	/* (a large folio is rmappable too: split and deferred split need that, as for a THP) */
	zone_device_folio_init((struct folio *)page, pgmap, order);
#else
	WARN_ON_ONCE(order);
	zone_device_page_init(page);
#endif
}

/*
 * dev_pagemap_ops' free callback: a folio on 7.3, a page on 6.12 (gmem_hbm_folio_free() takes
 * the folio on both). GMEM_PGMAP_FREE_OP goes into the ops' initializer.
 */
void gmem_hbm_folio_free(struct folio *folio);
#ifdef GMEM_HAVE_FOLIO_FREE
#define GMEM_PGMAP_FREE_OP .folio_free = gmem_hbm_folio_free
#else
static inline void gmem_hbm_page_free(struct page *page)
{
	gmem_hbm_folio_free(page_folio(page));
}
#define GMEM_PGMAP_FREE_OP .page_free = gmem_hbm_page_free
#endif

/*
 * 7.3 calls the driver when it splits a large device folio (dev_pagemap_ops.folio_split):
 * GMEM_PGMAP_SPLIT_OP goes into the ops' initializer; gmem_folio_split_init() does what the
 * core leaves to the callback (the new folio's pgmap and mapping, as the core's default does).
 */
void gmem_hbm_folio_split(struct folio *head, struct folio *tail);
#ifdef GMEM_HAVE_FOLIO_SPLIT
#define GMEM_PGMAP_SPLIT_OP .folio_split = gmem_hbm_folio_split,
static inline void gmem_folio_split_init(struct folio *head, struct folio *tail)
{
	tail->pgmap = head->pgmap;
	tail->page.mapping = head->page.mapping;
}
#else
#define GMEM_PGMAP_SPLIT_OP
static inline void gmem_folio_split_init(struct folio *head, struct folio *tail)
{
}
#endif

/*
 * 7.3 migrates a THP whole (MIGRATE_VMA_SELECT_COMPOUND, MIGRATE_PFN_COMPOUND); on 6.12 both
 * are 0, so the 2 MiB paths never run.
 */
#ifdef GMEM_HAVE_MIGRATE_COMPOUND
#define GMEM_SELECT_COMPOUND	MIGRATE_VMA_SELECT_COMPOUND
#define GMEM_PFN_COMPOUND	MIGRATE_PFN_COMPOUND
#else
#define GMEM_SELECT_COMPOUND	0
#define GMEM_PFN_COMPOUND	0UL
#endif

/*
 * Take the page at @addr of @mm for the device: its CPU mapping becomes a device-exclusive
 * entry. Returns the page, locked and referenced (on 7.3 its whole folio is locked), or an
 * errno: -EBUSY if the page could not be taken (busy, shared, not anonymous).
 */
static inline struct page *gmem_make_device_exclusive(struct mm_struct *mm, unsigned long addr,
						      void *owner)
{
#ifdef GMEM_HAVE_MAKE_DEVICE_EXCLUSIVE
	struct folio *folio;

	return make_device_exclusive(mm, addr, owner, &folio);
#else
	struct page *page = NULL;
	int got = make_device_exclusive_range(mm, addr, addr + PAGE_SIZE, &page, owner);

	if (got < 0)
		return ERR_PTR(got);
	return page ?: ERR_PTR(-EBUSY);
#endif
}

/* A folio near @addr of @vma: 6.12's vma_alloc_folio() has one more argument, hugepage. */
static inline struct folio *gmem_vma_alloc_folio(gfp_t gfp, unsigned int order,
						 struct vm_area_struct *vma, unsigned long addr)
{
#ifdef GMEM_HAVE_VMA_ALLOC_HUGEPAGE_ARG
	return vma_alloc_folio(gfp, order, vma, addr, false);
#else
	return vma_alloc_folio(gfp, order, vma, addr);
#endif
}

/*
 * A THP in a range to take exclusively is split first (gmem_dmirror_split_thp()): 6.12's
 * make_device_exclusive_range() refuses the tail pages of a large folio, and 7.3's
 * make_device_exclusive() splits the PMD mapping itself, an invalidation inside the caller's
 * read_begin/read_retry section (a retry then reverts the page, another one: a livelock). A
 * module can split only with migrate_vma_setup(), selecting what makes that kernel split a THP
 * it finds: any selection on 6.12, system memory without MIGRATE_VMA_SELECT_COMPOUND on 7.3.
 * migrate_vma_finalize() puts every page back.
 */
#ifdef GMEM_HAVE_MIGRATE_COMPOUND
#define GMEM_SPLIT_THP_SELECT	MIGRATE_VMA_SELECT_SYSTEM
#else
#define GMEM_SPLIT_THP_SELECT	MIGRATE_VMA_SELECT_DEVICE_PRIVATE
#endif

/* 6.13 made MODULE_IMPORT_NS() take a string */
#ifdef GMEM_HAVE_IMPORT_NS_STRING
#define GMEM_MODULE_IMPORT_NS_DMA_BUF MODULE_IMPORT_NS("DMA_BUF")
#else
#define GMEM_MODULE_IMPORT_NS_DMA_BUF MODULE_IMPORT_NS(DMA_BUF)
#endif

/* 6.13 dropped mm_get_unmapped_area()'s mm argument (it is current->mm's) */
#ifdef GMEM_HAVE_GUA_NO_MM
#define gmem_mm_get_unmapped_area(file, addr, len, pgoff, flags) \
	mm_get_unmapped_area(file, addr, len, pgoff, flags)
#else
#define gmem_mm_get_unmapped_area(file, addr, len, pgoff, flags) \
	mm_get_unmapped_area(current->mm, file, addr, len, pgoff, flags)
#endif

/*
 * hmm_range_fault() for a device fault, the mmap lock not held. 7.3 lets the fault handler
 * drop the lock (a userfaultfd-registered range waits for its handler instead of failing);
 * on 6.12 the lock is held throughout. -EBUSY: the range changed meanwhile, try again.
 */
static inline int gmem_hmm_range_fault(struct hmm_range *range)
{
	struct mm_struct *mm = range->notifier->mm;
	int ret;

#ifdef GMEM_HAVE_HMM_FAULT_UNLOCKED
	/* (one walk: -EBUSY comes back, so the caller restores its per-page requests) */
	if ((range->default_flags | range->pfn_flags_mask) & HMM_PFN_REQ_FAULT)
		return hmm_range_fault_unlocked_timeout(range, 1);
#endif
	range->notifier_seq = mmu_interval_read_begin(range->notifier);
	mmap_read_lock(mm);
	ret = hmm_range_fault(range);
	mmap_read_unlock(mm);
	return ret;
}

#endif /* GMEM_ACCEL_COMPAT_H */
