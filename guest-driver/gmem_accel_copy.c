// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the copy half of a migration window (struct gmem_migration). It
 * DMA-maps the window's system pages (as one scatterlist where it can), allocates the
 * destination pages (HBM or system memory), builds the device's COPY and FILL descriptors,
 * merging runs that sit in a row on both sides, queues them on the driver's own queue 0 and
 * waits for them, page by page past a poisoned HBM page. It also keeps the migrations'
 * scratch between uses (gmem_migration_get()).
 */
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "gmem_accel_queue.h"
#include "gmem_accel_hbm.h"
#include "gmem_accel_migrate.h"

/*
 * Grow the last descriptor by @size if it is an @op with @flags that ends just before @dst
 * (and @src): pages that sit in a row on both sides (an HBM chunk, a split THP) move with
 * one command instead of one each.
 */
static bool gmem_extend_last(struct gmem_migration *m, u8 op, u8 flags, u64 dst, u64 src,
			     u64 size)
{
	struct gmem_cmd_desc *d;
	u64 last;

	if (!m->ndesc)
		return false;
	d = &m->desc[m->ndesc - 1];
	if (d->opcode != op || d->flags != flags)
		return false;
	last = le64_to_cpu(d->size);
	if (le64_to_cpu(d->dst) + last != dst ||
	    (op == GMEM_OP_COPY && le64_to_cpu(d->src) + last != src))
		return false;
	d->size = cpu_to_le64(last + size);
	return true;
}

/* Append an @op (COPY or FILL with zeroes) of @size bytes to the window's batch. */
static void gmem_add_desc(struct gmem_migration *m, u8 op, u8 flags, u64 dst, u64 src,
			  u64 size)
{
	if (gmem_extend_last(m, op, flags, dst, src, size))
		return;
	m->desc[m->ndesc++] = (struct gmem_cmd_desc) {
		.opcode = op,
		.flags = flags,
		.dst = cpu_to_le64(dst),
		.src = cpu_to_le64(src),
		.size = cpu_to_le64(size),
	};
}

static void gmem_add_copy(struct gmem_migration *m, u8 dst_kind, u64 dst, u8 src_kind,
			  u64 src, u64 size)
{
	gmem_add_desc(m, GMEM_OP_COPY, GMEM_CMD_F_DST(dst_kind) | GMEM_CMD_F_SRC(src_kind), dst,
		      src, size);
}

static void gmem_add_zero(struct gmem_migration *m, u64 hbm_offset, u64 size)
{
	gmem_add_desc(m, GMEM_OP_FILL, GMEM_CMD_F_DST(GMEM_ADDR_HBM), hbm_offset, 0, size);
}

/* DMA-map system memory @page (a page, or with @huge its 2 MiB folio) as entry @i's. */
static bool gmem_map_sys(struct gmem_migration *m, unsigned long i, struct page *page,
			 bool huge)
{
	struct device *dev = &m->g->pdev->dev;

	m->dma[i] = dma_map_page(dev, page, 0, huge ? GMEM_HUGE_SIZE : PAGE_SIZE,
				 DMA_BIDIRECTIONAL);
	if (dma_mapping_error(dev, m->dma[i])) {
		m->dma[i] = 0;
		return false;
	}
	__assign_bit(i, m->dma_huge, huge);
	return true;
}

static void gmem_unmap_sys(struct gmem_migration *m, unsigned long i)
{
	if (!m->dma[i])
		return;
	/* (a peer's BAR2 is mapped once for the whole pass, a window's pages maybe too) */
	if (!m->peer && !m->sg_mapped)
		dma_unmap_page(&m->g->pdev->dev, m->dma[i],
			       test_bit(i, m->dma_huge) ? GMEM_HUGE_SIZE : PAGE_SIZE,
			       DMA_BIDIRECTIONAL);
	m->dma[i] = 0;
}

static void gmem_unmap_sys_window(struct gmem_migration *m)
{
	if (!m->sg_mapped)
		return;
	dma_unmap_sgtable(&m->g->pdev->dev, &m->sgt, DMA_BIDIRECTIONAL, 0);
	m->sg_mapped = false;
}

/* How many of the window's @npages pages entry @i of @pfns stands for: a 2 MiB folio's, or one. */
static unsigned long gmem_pfn_pages(const unsigned long *pfns, unsigned long i,
				    unsigned long npages)
{
	if (!(pfns[i] & GMEM_PFN_COMPOUND))
		return 1;
	return min_t(unsigned long, GMEM_WINDOW_PAGES, npages - i);
}

/*
 * DMA-map the system pages of the window's entries in @pfns (m->src: those that migrate;
 * m->dst: all) as one scatterlist, not a page at a time: behind an IOMMU they get one run of
 * addresses, so with HBM pages in a row the window's copies coalesce into one command
 * (gmem_extend_last()), and unmapping them is one call too. 6.12 moves a THP as 512 pages,
 * whose copies would otherwise take hundreds of commands a window. If it fails, each page is
 * mapped on its own (gmem_map_sys()).
 */
void gmem_map_sys_window(struct gmem_migration *m, unsigned long npages,
			 const unsigned long *pfns)
{
	unsigned long need = pfns == m->src ? MIGRATE_PFN_MIGRATE : MIGRATE_PFN_VALID;
	struct scatterlist *sg = NULL;
	unsigned long i, j, nr;
	unsigned int nents = 0, left = 0;
	dma_addr_t addr = 0;

	sg_init_table(m->sgl, GMEM_WINDOW_PAGES);
	for (i = 0; i < npages; i += nr) {
		struct page *page = migrate_pfn_to_page(pfns[i]);

		nr = gmem_pfn_pages(pfns, i, npages);
		if (!page || !(pfns[i] & need))
			continue;
		if (sg && page_to_pfn(sg_page(sg)) + (sg->length >> PAGE_SHIFT) ==
			  page_to_pfn(page)) {
			sg->length += nr << PAGE_SHIFT;
			continue;
		}
		sg = sg ? sg_next(sg) : m->sgl;
		sg_set_page(sg, page, nr << PAGE_SHIFT, 0);
		nents++;
	}
	if (!sg)
		return;
	sg_mark_end(sg);
	m->sgt = (struct sg_table) { .sgl = m->sgl, .orig_nents = nents };
	if (dma_map_sgtable(&m->g->pdev->dev, &m->sgt, DMA_BIDIRECTIONAL, 0))
		return;
	/* The mapped segments cover the pages in order, each page whole. */
	sg = m->sgt.sgl;
	for (i = 0; i < npages; i += nr) {
		nr = gmem_pfn_pages(pfns, i, npages);
		if (!migrate_pfn_to_page(pfns[i]) || !(pfns[i] & need))
			continue;
		for (j = 0; j < nr; j++, addr += PAGE_SIZE, left -= PAGE_SIZE) {
			if (!left) {
				if (WARN_ON_ONCE(!sg)) {	/* (cannot be: the same pages) */
					m->sg_mapped = true;
					gmem_unmap_sys_window(m);
					memset(m->dma, 0, sizeof(m->dma));
					return;
				}
				addr = sg_dma_address(sg);
				left = sg_dma_len(sg);
				sg = sg_next(sg);
			}
			m->dma[i + j] = addr;
		}
	}
	m->sg_mapped = true;
}

/*
 * Where this device's engine reads source page @spage of entry @i (with @huge, a 2 MiB
 * folio): system memory, DMA-mapped; in a pass from a peer, the peer's BAR2 at the page's
 * HBM offset. false if it cannot (a poisoned peer page stays where it is).
 */
static bool gmem_map_src(struct gmem_migration *m, unsigned long i, struct page *spage,
			 bool huge)
{
	u64 off;

	if (!m->peer)
		return m->dma[i] || gmem_map_sys(m, i, spage, huge);
	if (!gmem_hbm_page(m->peer, spage, &off) ||
	    gmem_hbm_any_poisoned(m->peer, spage, huge ? GMEM_WINDOW_PAGES : 1))
		return false;
	m->dma[i] = m->peer_bar + off;
	return true;
}

/* How many pages entry @i of @m moves: a whole THP's, or one. */
static unsigned long gmem_entry_pages(const struct gmem_migration *m, unsigned long i)
{
	return (m->dst[i] & GMEM_PFN_COMPOUND) ? GMEM_WINDOW_PAGES : 1;
}

/*
 * The copies (@out: out of HBM, else into it) failed on a poisoned HBM page (EHWPOISON): copy
 * page by page, mark each page whose copy fails (gmem_hbm_poison(): never handed out again)
 * and leave its entry where it is — a 2 MiB one whole, which moves as pages next time
 * (gmem_copy_to_ram()). The rest move.
 */
static int gmem_copy_each(struct gmem_migration *m, unsigned long npages, bool out)
{
	int ret = 0;

	for (unsigned long i = 0; i < npages && !ret; i++) {
		struct page *spage = migrate_pfn_to_page(m->src[i]);
		struct page *dpage = migrate_pfn_to_page(m->dst[i]);
		struct page *hbm_page = out ? spage : dpage;
		unsigned long nr = gmem_entry_pages(m, i);
		bool lost = false;
		u64 off;

		if (!dpage || !hbm_page || !gmem_hbm_page(m->g, hbm_page, &off))
			continue;
		for (unsigned long j = 0; j < nr && !ret; j++) {
			u64 hbm = off + j * PAGE_SIZE, sys = m->dma[i] + j * PAGE_SIZE;

			m->ndesc = 0;
			if (out)
				gmem_add_copy(m, GMEM_ADDR_SYS, sys, GMEM_ADDR_HBM, hbm, PAGE_SIZE);
			else if (m->dma[i])
				gmem_add_copy(m, GMEM_ADDR_HBM, hbm, GMEM_ADDR_SYS, sys, PAGE_SIZE);
			else
				gmem_add_zero(m, hbm, PAGE_SIZE);
			ret = gmem_kernel_run(m->g, m->desc, m->ndesc);
			if (ret != -EHWPOISON)
				continue;
			gmem_hbm_poison(m->g, pfn_to_page(page_to_pfn(hbm_page) + j));
			lost = true;
			ret = 0;
		}
		if (!lost)
			continue;
		gmem_unmap_sys(m, i);
		unlock_page(dpage);
		put_page(dpage);
		m->dst[i] = 0;
		i += nr - 1;
	}
	return ret;
}

/*
 * Run the copies (@out: out of HBM); on failure give the new pages back so nothing migrates,
 * but for poisoned HBM pages, which alone stay where they were.
 */
int gmem_migration_wait(struct gmem_migration *m, unsigned long npages, bool out)
{
	int ret = gmem_kernel_wait(m->g, &m->job);

	if (ret == -EHWPOISON)
		ret = gmem_copy_each(m, npages, out);

	for (unsigned long i = 0; i < npages; i++) {
		struct page *dpage = migrate_pfn_to_page(m->dst[i]);

		gmem_unmap_sys(m, i);
		if (ret && dpage) {
			unlock_page(dpage);
			put_page(dpage);
			m->dst[i] = 0;
		}
	}
	gmem_unmap_sys_window(m);
	if (ret)
		dev_err_ratelimited(&m->g->pdev->dev, "HBM migration copy failed: %d\n", ret);
	return ret;
}

/*
 * A migration for @g: one of its spares if it has one, else a new one; zeroed up to its
 * scratch arrays. Spares spare a CPU fault (migrate_to_ram) the allocation and zeroing of
 * ~80 KiB, a large part of its cost.
 */
struct gmem_migration *gmem_migration_get(struct gmem_accel *g)
{
	struct gmem_migration *m = NULL;

	for (unsigned int i = 0; i < GMEM_SPARE_MIGRATIONS && !m; i++)
		m = xchg(&g->spare_migrations[i], NULL);
	if (!m)
		m = kvmalloc(sizeof(*m), GFP_KERNEL);
	if (m) {
		memset(m, 0, offsetof(struct gmem_migration, src));
		m->g = g;
	}
	return m;
}

/* Done with @m (or NULL): a spare of @g's again, unless it has enough. */
void gmem_migration_put(struct gmem_accel *g, struct gmem_migration *m)
{
	for (unsigned int i = 0; i < GMEM_SPARE_MIGRATIONS && m; i++)
		if (!cmpxchg(&g->spare_migrations[i], NULL, m))
			m = NULL;
	kvfree(m);
}

/* Unbind's last step: the spares go. */
void gmem_migration_spares_free(struct gmem_accel *g)
{
	for (unsigned int i = 0; i < GMEM_SPARE_MIGRATIONS; i++)
		kvfree(xchg(&g->spare_migrations[i], NULL));
}

/*
 * Test hook: does the context that asked for @m want its next 2 MiB folio to fail
 * (HMM_DMIRROR_FLAG_FAIL_ALLOC)? Asking uses the wish up.
 */
static bool gmem_fail_huge(struct gmem_ctx *ctx)
{
	return ctx && READ_ONCE(ctx->fail_next_huge) && xchg(&ctx->fail_next_huge, false);
}

/*
 * A new system page for entry @i (with @huge, a 2 MiB THP), near @addr of @vma if given, for
 * the data at HBM offset @off: locked. false if none.
 */
static bool gmem_sys_dst(struct gmem_migration *m, unsigned long i, struct vm_area_struct *vma,
			 unsigned long addr, u64 off, unsigned long write, bool huge)
{
	unsigned int order = huge ? GMEM_HUGE_SHIFT - PAGE_SHIFT : 0;
	gfp_t gfp = GFP_HIGHUSER_MOVABLE | (huge ? __GFP_NOWARN | __GFP_NORETRY :
					    m->room ? __GFP_NOWARN | __GFP_RETRY_MAYFAIL : 0);
	struct folio *folio;

	if (huge && gmem_fail_huge(m->ctx))
		return false;
	folio = vma ? gmem_vma_alloc_folio(gfp, order, vma, addr) : folio_alloc(gfp, order);
	if (!folio)
		return false;
	folio_lock(folio);
	m->dst[i] = migrate_pfn(folio_pfn(folio)) | write | (huge ? GMEM_PFN_COMPOUND : 0);
	m->hbm_off[i] = off;
	return true;
}

/*
 * DMA-map the new pages (all at once if it can: gmem_map_sys_window()) and queue their
 * copies; a page that cannot be mapped is given back, and its entry stays in HBM.
 */
static void gmem_queue_to_ram(struct gmem_migration *m, unsigned long npages)
{
	gmem_map_sys_window(m, npages, m->dst);
	for (unsigned long i = 0, nr; i < npages; i += nr) {
		struct page *dpage = migrate_pfn_to_page(m->dst[i]);

		nr = gmem_entry_pages(m, i);
		if (!dpage)
			continue;
		if (!m->dma[i] && !gmem_map_sys(m, i, dpage, nr > 1)) {
			folio_unlock(page_folio(dpage));
			folio_put(page_folio(dpage));
			m->dst[i] = 0;
			continue;
		}
		gmem_add_copy(m, GMEM_ADDR_SYS, m->dma[i], GMEM_ADDR_HBM, m->hbm_off[i],
			      nr << PAGE_SHIFT);
	}
}

/*
 * The copy half of moving HBM pages (m->src, from migrate_vma_setup or migrate_device_range)
 * to system memory: new pages, their copies queued on the device; gmem_migration_wait()
 * waits for them. Pages not owned by @owner (when set) stay. @vma and @start place new pages
 * near the process (NULL: any node).
 */
void gmem_copy_to_ram_begin(struct gmem_migration *m, unsigned long npages,
			    struct vm_area_struct *vma, unsigned long start, void *owner)
{
	/*
	 * The loop skips the tail entries of a 2 MiB move: none may keep an earlier window's
	 * page, which migrate_vma_finalize() would unlock and put again.
	 */
	memset(m->dst, 0, sizeof(m->dst));
	memset(m->dma, 0, sizeof(m->dma));
	m->ndesc = 0;
	for (unsigned long i = 0; i < npages; i++) {
		struct page *spage = migrate_pfn_to_page(m->src[i]);
		unsigned long write = m->src[i] & MIGRATE_PFN_WRITE, nr = 1;
		u64 off;

		m->dst[i] = 0;
		m->dma[i] = 0;
		if (!spage || !(m->src[i] & MIGRATE_PFN_MIGRATE) ||
		    !gmem_hbm_page(m->g, spage, &off) ||
		    (owner && spage->zone_device_data != owner))
			continue;
		/* A 2 MiB folio moves whole, unless a page of it is poisoned or no THP is free. */
		if ((m->src[i] & GMEM_PFN_COMPOUND) && i + GMEM_WINDOW_PAGES <= npages) {
			nr = GMEM_WINDOW_PAGES;
			if (!gmem_hbm_any_poisoned(m->g, spage, nr) &&
			    gmem_sys_dst(m, i, vma, start + i * PAGE_SIZE, off, write, true)) {
				i += nr - 1;
				continue;
			}
		}
		/* (migrate_vma_pages() splits a THP whose pages go to pages) */
		for (unsigned long j = 0; j < nr; j++) {
			m->dst[i + j] = 0;
			m->dma[i + j] = 0;
			/* (a poisoned page stays: its data is lost, its owner gets SIGBUS) */
			if (!gmem_hbm_poisoned(m->g, pfn_to_page(page_to_pfn(spage) + j)))
				gmem_sys_dst(m, i + j, vma, start + (i + j) * PAGE_SIZE,
					     off + j * PAGE_SIZE, write, false);
		}
		i += nr - 1;
	}
	gmem_queue_to_ram(m, npages);
	gmem_kernel_submit(m->g, m->desc, m->ndesc, &m->job);
}

int gmem_copy_to_ram(struct gmem_migration *m, unsigned long npages,
		     struct vm_area_struct *vma, unsigned long start, void *owner)
{
	gmem_copy_to_ram_begin(m, npages, vma, start, owner);
	return gmem_migration_wait(m, npages, true);
}

unsigned long gmem_count_migrated(struct gmem_migration *m, unsigned long npages)
{
	unsigned long n = 0;

	for (unsigned long i = 0; i < npages; i++)
		if (m->dst[i] && (m->src[i] & MIGRATE_PFN_MIGRATE))
			n += gmem_entry_pages(m, i);
	return n;
}

/*
 * An HBM page for entry @i (with @huge, a 2 MiB folio) holding system page @spage's data
 * (zeroes if NULL): queued for the copy. false if HBM has none (for a page: is full of pages
 * that cannot move); the entry is then left in system memory.
 */
bool gmem_hbm_dst(struct gmem_ctx *ctx, struct gmem_migration *m, unsigned long i,
		  unsigned long va, struct page *spage, unsigned long write, bool huge)
{
	u64 size = huge ? GMEM_HUGE_SIZE : PAGE_SIZE;
	struct page *dpage;
	u64 off;

	dpage = huge && gmem_fail_huge(ctx) ? NULL : gmem_hbm_alloc(ctx, m, huge);
	if (!dpage)
		return false;
	if (spage && !gmem_map_src(m, i, spage, huge)) {
		unlock_page(dpage);
		put_page(dpage);
		return !huge;	/* (a page that cannot be mapped stays; HBM is not full) */
	}
	gmem_hbm_page(ctx->g, dpage, &off);
	gmem_hbm_set_va(&ctx->g->hbm, dpage, huge ? GMEM_WINDOW_PAGES : 1, va);
	m->dst[i] = migrate_pfn(page_to_pfn(dpage)) | write | (huge ? GMEM_PFN_COMPOUND : 0);
	if (spage)
		gmem_add_copy(m, GMEM_ADDR_HBM, off, GMEM_ADDR_SYS, m->dma[i], size);
	else		/* never touched, or the zero page */
		gmem_add_zero(m, off, size);
	return true;
}
