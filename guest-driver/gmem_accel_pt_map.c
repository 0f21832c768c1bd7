// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: filling a context's device page table: leaves for what
 * hmm_range_fault() found (system memory DMA-mapped, the shared zero page, HBM), for the
 * pages a migration of the context's own moved into HBM, and for objects' pages, as 4 KiB
 * entries, 64 KiB CONT groups or 2 MiB leaves. Called under ctx->lock, with the tables
 * reserved beforehand (gmem_pt_reserve()).
 */
#include <linux/dma-mapping.h>
#include <linux/hmm.h>
#include <linux/iommu.h>
#include <linux/migrate.h>
#include <linux/mm.h>

#include "gmem_accel_pt.h"
#include "gmem_accel_hbm.h"

/* A leaf for bus address (or, @hbm, HBM offset) @addr. */
static u64 gmem_leaf_pte(u64 addr, bool write, bool hbm)
{
	u64 pte = (addr & GMEM_PTE_ADDR_MASK) | GMEM_PTE_VALID | GMEM_PTE_READ;

	if (write)
		pte |= GMEM_PTE_WRITE | GMEM_PTE_ATOMIC;
	if (hbm)
		pte |= GMEM_PTE_HBM;
	return pte;
}

/*
 * Make @entry (a leaf the page table need not DMA-unmap: HBM or an object's page) @va's 4 KiB
 * entry. Returns 1 if it replaced a valid entry (which the device TLB may hold), 0, or
 * -EAGAIN (no spare table: reserve and retry).
 */
static int gmem_pt_set_4k(struct gmem_ctx *ctx, u64 va, u64 entry)
{
	struct gmem_pt *pt = gmem_pt_table(ctx, va, 1, true);
	int replaced;
	u64 *pte;

	if (!pt)
		return -EAGAIN;
	pte = &pt->pte[GMEM_PT_INDEX(va, 1)];
	if (READ_ONCE(*pte) == entry)
		return 0;	/* already so: nothing for the device TLB to forget */
	replaced = !!(READ_ONCE(*pte) & GMEM_PTE_VALID);
	if (READ_ONCE(*pte) & (GMEM_PTE_VALID | GMEM_PTE_SW_STALE))
		gmem_leaf_release(ctx, pte, 1);
	WRITE_ONCE(*pte, entry);
	gmem_ctx_count(ctx, GMEM_CTX_PAGES_MAPPED, 1);
	return replaced;
}

/* Point @va's 4 KiB entry at HBM offset @off. Returns as gmem_pt_set_4k() does. */
static int gmem_pt_set_hbm(struct gmem_ctx *ctx, u64 va, u64 off, bool write)
{
	return gmem_pt_set_4k(ctx, va, gmem_leaf_pte(off, write, true));
}

/*
 * Make @entry (as for gmem_pt_set_4k(), with HUGE) the 2 MiB leaf at @va (aligned), dropping
 * a table of 4 KiB entries there. Returns as gmem_pt_set_4k() does.
 */
static int gmem_pt_set_2m(struct gmem_ctx *ctx, u64 va, u64 entry)
{
	struct gmem_pt *pt = gmem_pt_table(ctx, va, 2, true);
	unsigned int idx = GMEM_PT_INDEX(va, 2);
	int replaced = 0;
	u64 *pte;

	if (!pt)
		return -EAGAIN;
	pte = &pt->pte[idx];
	if (READ_ONCE(*pte) == entry)
		return 0;
	if (pt->child[idx])
		replaced = gmem_pt_drop_table(ctx, pt, idx, va);
	if (READ_ONCE(*pte) & GMEM_PTE_VALID)
		replaced = 1;
	if (READ_ONCE(*pte) & (GMEM_PTE_VALID | GMEM_PTE_SW_STALE))
		gmem_leaf_release(ctx, pte, 2);
	WRITE_ONCE(*pte, entry);
	gmem_ctx_count(ctx, GMEM_CTX_PAGES_MAPPED, GMEM_WINDOW_PAGES);
	return replaced;
}

/* Point the 2 MiB at @va (aligned) at HBM offset @off (aligned: a 2 MiB folio). */
static int gmem_pt_set_hbm_huge(struct gmem_ctx *ctx, u64 va, u64 off, bool write)
{
	return gmem_pt_set_2m(ctx, va, gmem_leaf_pte(off, write, true) | GMEM_PTE_HUGE);
}

/*
 * Make @entry (as for gmem_pt_set_4k()) the first of the 4 KiB entries mapping @size bytes at
 * @va, the next ones following it 4 KiB apart. Returns as gmem_pt_set_4k() does.
 */
static int gmem_pt_set_run(struct gmem_ctx *ctx, u64 va, u64 entry, u64 size)
{
	int ret, replaced = 0;

	for (u64 o = 0; o < size; o += GMEM_PAGE_SIZE) {
		ret = gmem_pt_set_4k(ctx, va + o, entry + o);
		if (ret < 0)
			return ret;
		replaced |= ret;
	}
	return replaced;
}

/*
 * Point the 64 KiB at @va (aligned) at HBM offset @off (aligned) as one CONT group: the device
 * walks once and keeps one TLB entry for its 16 pages. A page of it mapped otherwise later
 * breaks the group, which the hardware allows (its other entries then map 4 KiB each).
 */
static int gmem_pt_set_hbm_64k(struct gmem_ctx *ctx, u64 va, u64 off, bool write)
{
	return gmem_pt_set_run(ctx, va, gmem_leaf_pte(off, write, true) | GMEM_PTE_CONT,
			       GMEM_CONT_SIZE);
}

/*
 * Map one device page of an object (or a page drm_gpusvm DMA-mapped, for the DRM front end):
 * @page_size bytes at @va onto @target (an HBM offset if @hbm, else the bus address of the
 * system memory, mapped by its owner), both aligned to @page_size, with @perm (of
 * GMEM_PTE_RW) beyond READ: a 2 MiB leaf, a CONT group of 16 entries (64 KiB) or one 4 KiB
 * entry. Called with ctx->lock held, tables reserved for [va, va + page_size); returns as
 * gmem_pt_set_4k() does.
 */
int gmem_pt_map_obj(struct gmem_ctx *ctx, u64 va, u64 target, u64 page_size, bool hbm,
		    u64 perm, bool dup)
{
	u64 entry = gmem_leaf_pte(target, false, hbm) | (perm & GMEM_PTE_RW) |
		    GMEM_PTE_SW_OBJECT | (dup ? GMEM_PTE_SW_OBJ_DUP : 0);

	lockdep_assert_held(&ctx->lock);
	if (page_size == GMEM_HUGE_SIZE)
		return gmem_pt_set_2m(ctx, va, entry | GMEM_PTE_HUGE);
	if (page_size == GMEM_CONT_SIZE)
		entry |= GMEM_PTE_CONT;
	return gmem_pt_set_run(ctx, va, entry, page_size);
}

/*
 * Do the 16 migrated pages from @i make one 64 KiB of HBM from offset @off0 (64 KiB aligned),
 * all writable or all not (@write)?
 */
static bool gmem_migrated_cont(struct gmem_accel *g, const unsigned long *src,
			       const unsigned long *dst, unsigned long i, u64 off0, bool write)
{
	for (unsigned long j = 1; j < GMEM_CONT_ENTRIES; j++) {
		struct page *page = migrate_pfn_to_page(dst[i + j]);
		u64 off;

		if (!page || !(src[i + j] & MIGRATE_PFN_MIGRATE) ||
		    (dst[i + j] & GMEM_PFN_COMPOUND) || !gmem_hbm_page(g, page, &off) ||
		    off != off0 + j * PAGE_SIZE || !!(dst[i + j] & MIGRATE_PFN_WRITE) != write)
			return false;
	}
	return true;
}

/* The same for 16 pages of a hmm_range_fault result from @i; touches them (LRU) if so. */
static bool gmem_hmm_cont(struct gmem_accel *g, const unsigned long *pfns, unsigned long i,
			  u64 off0, bool write)
{
	for (unsigned long j = 1; j < GMEM_CONT_ENTRIES; j++) {
		unsigned long pfn = pfns[i + j];
		u64 off;

		if (!(pfn & HMM_PFN_VALID) || (pfn & HMM_PFN_ERROR) ||
		    !is_zone_device_page(hmm_pfn_to_page(pfn)) ||
		    !gmem_hbm_page(g, hmm_pfn_to_page(pfn), &off) ||
		    off != off0 + j * PAGE_SIZE || !!(pfn & HMM_PFN_WRITE) != write)
			return false;
	}
	for (unsigned long j = 1; j < GMEM_CONT_ENTRIES; j++)
		gmem_hbm_touch(g, hmm_pfn_to_page(pfns[i + j]));
	return true;
}

/* Can the 64 KiB from index @i (of @npages) at @va, HBM offset @off, be one CONT group? */
static bool gmem_cont_fits(u64 va, unsigned long i, unsigned long npages, u64 off)
{
	return IS_ALIGNED(va + i * PAGE_SIZE, GMEM_CONT_SIZE) &&
	       IS_ALIGNED(off, GMEM_CONT_SIZE) && npages - i >= GMEM_CONT_ENTRIES;
}

/*
 * After this context migrated [va, va + npages pages) to HBM: map the pages that moved
 * (migrate_vma's @src still says MIGRATE, @dst the HBM page), unless the CPU's page table
 * changed since @seq (of @mni, the window's notifier) or the tables the caller reserved are
 * gone — the device then faults them in.
 */
void gmem_pt_map_migrated(struct gmem_ctx *ctx, struct mmu_interval_notifier *mni, u64 va,
			  const unsigned long *src, const unsigned long *dst, unsigned long npages,
			  unsigned long seq)
{
	mutex_lock(&ctx->lock);
	if (!mmu_interval_read_retry(mni, seq)) {
		for (unsigned long i = 0; i < npages; i++) {
			struct page *page = migrate_pfn_to_page(dst[i]);
			bool write = dst[i] & MIGRATE_PFN_WRITE;
			int ret;
			u64 off;

			if (!page || !(src[i] & MIGRATE_PFN_MIGRATE) ||
			    !gmem_hbm_page(ctx->g, page, &off))
				continue;
			/*
			 * The range was zapped: nothing valid is replaced. A THP: one leaf;
			 * 64 KiB of HBM in a row: one CONT group.
			 */
			if (dst[i] & GMEM_PFN_COMPOUND) {
				ret = gmem_pt_set_hbm_huge(ctx, va + i * PAGE_SIZE, off, write);
				i += GMEM_WINDOW_PAGES - 1;
			} else if (gmem_cont_fits(va, i, npages, off) &&
				   gmem_migrated_cont(ctx->g, src, dst, i, off, write)) {
				ret = gmem_pt_set_hbm_64k(ctx, va + i * PAGE_SIZE, off, write);
				i += GMEM_CONT_ENTRIES - 1;
			} else {
				ret = gmem_pt_set_hbm(ctx, va + i * PAGE_SIZE, off, write);
			}
			if (ret < 0)
				break;
		}
	}
	mutex_unlock(&ctx->lock);
}

/* The physical address behind a system-memory leaf, through the IOMMU if there is one. */
static phys_addr_t gmem_leaf_phys(struct gmem_ctx *ctx, u64 pte)
{
	struct iommu_domain *dom = iommu_get_domain_for_dev(gmem_dma_dev(ctx));
	dma_addr_t dma = pte & GMEM_PTE_ADDR_MASK;

	return dom ? iommu_iova_to_phys(dom, dma) : dma;
}

/*
 * Does @pte map @page already, @write as asked, @huge or not, with no software bits? A valid
 * entry maps the page the CPU maps: whatever gives the CPU another page there (COW, KSM,
 * migration, reclaim, munmap) invalidates the range first, which zaps the entry under
 * ctx->lock (gmem_invalidate()), and this context's own migrations unmap it themselves. So
 * the rights are what is compared. (Through an IOMMU each dma_map_page() gives a new address,
 * so whole entries never compare equal, and walking the IOMMU's table for the page behind
 * each is too slow for a fault's path: only a debug kernel (VM_WARN_ON_ONCE) checks it.)
 */
static bool gmem_leaf_maps(struct gmem_ctx *ctx, u64 pte, struct page *page, bool write,
			   bool huge)
{
	u64 want = gmem_leaf_pte(0, write, false) | (huge ? GMEM_PTE_HUGE : 0);

	if ((pte & ~GMEM_PTE_ADDR_MASK) != want)
		return false;
	VM_WARN_ON_ONCE(gmem_leaf_phys(ctx, pte) != page_to_phys(page));
	return true;
}

/*
 * Map the valid pages of @hmm_pfns (a result of hmm_range_fault from @va) into the device
 * page table, as 2 MiB leaves where the CPU maps a whole aligned THP. Called with ctx->lock
 * held after mmu_interval_read_retry() said the result is current, and after
 * gmem_pt_reserve() for the range. Returns the number of entries that replaced a valid one
 * (their old translation may be in the device TLB), or -errno: -EAGAIN if the spare tables
 * ran out (the caller unlocks, reserves and retries).
 */
int gmem_pt_map(struct gmem_ctx *ctx, u64 va, unsigned long *hmm_pfns, unsigned long npages)
{
	struct device *dev = gmem_dma_dev(ctx);
	int replaced = 0;

	lockdep_assert_held(&ctx->lock);

	for (unsigned long i = 0; i < npages; i++) {
		unsigned long pfn = hmm_pfns[i];
		u64 addr = va + i * PAGE_SIZE;
		bool write = pfn & HMM_PFN_WRITE;
		struct gmem_pt *pt;
		dma_addr_t dma;
		u64 entry, *pte;
		bool huge, zero;
		int level;

		if (!(pfn & HMM_PFN_VALID) || (pfn & HMM_PFN_ERROR))
			continue;
		if (is_zone_device_page(hmm_pfn_to_page(pfn))) {
			u64 off;
			int ret;

			/*
			 * Our HBM, private or coherent. hmm_range_fault leaves no other
			 * device's private pages in place; another device's coherent
			 * memory is mapped over the bus like system memory.
			 */
			if (gmem_hbm_page(ctx->g, hmm_pfn_to_page(pfn), &off)) {
				gmem_hbm_touch(ctx->g, hmm_pfn_to_page(pfn));
				/* A 2 MiB HBM folio the CPU maps whole: one leaf (7.3). */
				if (hmm_pfn_to_map_order(pfn) >= GMEM_HUGE_SHIFT - PAGE_SHIFT &&
				    IS_ALIGNED(addr, GMEM_HUGE_SIZE) && npages - i >= 512 &&
				    IS_ALIGNED(off, GMEM_HUGE_SIZE)) {
					ret = gmem_pt_set_hbm_huge(ctx, addr, off, write);
					i += 511;
				} else if (gmem_cont_fits(va, i, npages, off) &&
					   gmem_hmm_cont(ctx->g, hmm_pfns, i, off, write)) {
					ret = gmem_pt_set_hbm_64k(ctx, addr, off, write);
					i += GMEM_CONT_ENTRIES - 1;
				} else {
					ret = gmem_pt_set_hbm(ctx, addr, off, write);
				}
				if (ret < 0)
					return ret;
				replaced += ret;
				continue;
			}
			if (is_device_private_page(hmm_pfn_to_page(pfn)))
				continue;
		}
		huge = hmm_pfn_to_map_order(pfn) >= GMEM_HUGE_SHIFT - PAGE_SHIFT &&
		       IS_ALIGNED(addr, GMEM_HUGE_SIZE) && npages - i >= 512 &&
		       IS_ALIGNED(page_to_pfn(hmm_pfn_to_page(pfn)), 512);
		level = huge ? 2 : 1;
		pt = gmem_pt_table(ctx, addr, level, true);
		if (!pt)
			return -EAGAIN;
		pte = &pt->pte[GMEM_PT_INDEX(addr, level)];
		/* 4 KiB entries there before: drop them and their table (invalidated). */
		if (huge && pt->child[GMEM_PT_INDEX(addr, 2)])
			gmem_pt_drop_table(ctx, pt, GMEM_PT_INDEX(addr, 2), addr);
		if (gmem_leaf_maps(ctx, READ_ONCE(*pte), hmm_pfn_to_page(pfn), write, huge)) {
			i += huge ? 511 : 0;
			continue;
		}
		/*
		 * Memory read before anything wrote it is the zero page: the device's one
		 * mapping of it, not a new one per page (behind an IOMMU each dma_map_page()
		 * is an IOMMU update and an IOVA).
		 */
		zero = !huge && !write && is_zero_pfn(page_to_pfn(hmm_pfn_to_page(pfn)));
		if (zero) {
			dma = ctx->g->zero_dma;
		} else {
			dma = dma_map_page(dev, hmm_pfn_to_page(pfn), 0, gmem_leaf_size(level),
					   DMA_BIDIRECTIONAL);
			if (dma_mapping_error(dev, dma))
				return -ENOMEM;
		}
		if (huge)
			i += 511;
		entry = gmem_leaf_pte(dma, write, false) | (huge ? GMEM_PTE_HUGE : 0);
		if (READ_ONCE(*pte) == entry) {
			/*
			 * Mapped so already (a direct DMA mapping gives the same address each
			 * time): keep it, and the device TLB need not forget it.
			 */
			if (!zero)
				dma_unmap_page(dev, dma, gmem_leaf_size(level), DMA_BIDIRECTIONAL);
			continue;
		}
		if (!zero)
			gmem_dev_count(ctx->g, GMEM_DEV_DMA_MAPPED_NOW, huge ? 512 : 1);
		if (READ_ONCE(*pte) & (GMEM_PTE_VALID | GMEM_PTE_SW_STALE)) {
			replaced++;
			gmem_leaf_release(ctx, pte, level);
		}
		WRITE_ONCE(*pte, entry);
		/*
		 * The device writes without setting the CPU PTE's dirty bit: a writable mapping
		 * dirties the folio now, or reclaim could drop a clean one (e.g. after
		 * MADV_FREE) with the device's data. Safe without the folio lock: truncation
		 * and reclaim unmap through the notifier, which waits for ctx->lock.
		 */
		if (write)
			folio_mark_dirty(page_folio(hmm_pfn_to_page(pfn)));
		gmem_ctx_count(ctx, GMEM_CTX_PAGES_MAPPED, huge ? 512 : 1);
	}
	return replaced;
}
