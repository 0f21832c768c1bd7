// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: migration between system memory and HBM with migrate_vma_* and
 * migrate_device_range(): on request (MIGRATE, PREFER_DEVICE faults), back on a CPU fault
 * (migrate_to_ram), when a context closes, when HBM is full (the least recently used 2 MiB
 * chunk is evicted) and at unbind. The device's DMA engine moves the data, on the driver's
 * own queue 0, which never waits on a page fault.
 */
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "gmem_accel.h"

static void gmem_evict_range(struct gmem_accel *g, unsigned long pfn, unsigned long npages,
			     struct gmem_owner *only, struct mm_struct *held, bool ahead,
			     bool room);
static int gmem_pages_to_ram(struct gmem_accel *g, struct gmem_migration *m,
			     struct vm_area_struct *vma, unsigned long start, unsigned long end,
			     struct page *fault_page, unsigned long pfn, unsigned long nr,
			     unsigned long *moved);

/*
 * Can a THP move whole into @g's HBM and back (7.3; never on 6.12)? Into private HBM only: 7.3
 * collects a PMD-mapped THP for a migration of system memory alone, so a coherent one (mapped
 * like system memory) could not come back.
 */
bool gmem_thp_migration_possible(struct gmem_accel *g)
{
	return GMEM_SELECT_COMPOUND != 0 && g->hbm.pgmap.type == MEMORY_DEVICE_PRIVATE;
}

/* A window that is a whole aligned 2 MiB moves a THP whole, unless sysfs turned that off. */
static unsigned long gmem_select_compound(struct gmem_accel *g, unsigned long start,
					  unsigned long end)
{
	return gmem_thp_migration_possible(g) && !READ_ONCE(g->thp_migration_off) &&
	       IS_ALIGNED(start, GMEM_HUGE_SIZE) && end - start == GMEM_HUGE_SIZE ?
	       GMEM_SELECT_COMPOUND : 0;
}

/* migrate_vma's selection of @g's HBM pages. */
static unsigned long gmem_select_hbm(struct gmem_accel *g)
{
	return g->hbm.pgmap.type == MEMORY_DEVICE_COHERENT ? MIGRATE_VMA_SELECT_DEVICE_COHERENT :
							      MIGRATE_VMA_SELECT_DEVICE_PRIVATE;
}

/*
 * Evict the least recently used chunk of migrated pages to system memory (@held: the mm whose
 * lock the caller holds, settled, or NULL; @ahead: for the eviction worker, by address only).
 * False if no chunk holds migrated pages.
 */
static bool gmem_hbm_evict_chunk(struct gmem_accel *g, struct mm_struct *held, bool ahead)
{
	struct gmem_hbm *hbm = &g->hbm;
	struct gmem_chunk *victim;

	spin_lock(&hbm->lock);
	victim = list_first_entry_or_null(&hbm->lru, struct gmem_chunk, link);
	if (victim)	/* next time, the next one, should this one not empty */
		list_move_tail(&victim->link, &hbm->lru);
	spin_unlock(&hbm->lock);
	if (!victim)
		return false;
	gmem_dev_count(g, GMEM_DEV_EVICTIONS, 1);
	if (ahead)
		gmem_dev_count(g, GMEM_DEV_EVICTIONS_AHEAD, 1);
	gmem_evict_range(g, gmem_chunk_pfn(hbm, victim), GMEM_WINDOW_PAGES, NULL, held, ahead,
			 true);
	return true;
}

/* Make room in HBM for an object: evict the least recently used migrated chunk. */
bool gmem_hbm_evict_lru(struct gmem_accel *g)
{
	return gmem_hbm_evict_chunk(g, NULL, false);
}

/*
 * HBM the eviction worker keeps free while a migration into a full HBM has more than a chunk
 * to go: it evicts on another CPU while the migration moves pages in on its own, where
 * eviction in the migration's path takes turns with it (with 4 KiB pages each costs the
 * kernel about as much as the move in). What a migration may evict beyond its need (pages
 * already in HBM need no room) is bounded by this.
 */
#define GMEM_EVICT_AHEAD	(4 * GMEM_WINDOW_PAGES)

/*
 * A migration into HBM that had to evict (gmem_hbm_alloc()) has @bytes left to move (0: it is
 * done): while that is more than a chunk, have the eviction worker keep room for it, up to
 * GMEM_EVICT_AHEAD pages. A migration that finds room, or the pages in HBM already, wakes no
 * worker; one of up to 2 MiB into a full HBM evicts one chunk, as it would without it.
 */
static void gmem_evict_ahead(struct gmem_accel *g, u64 bytes)
{
	unsigned long want = bytes > GMEM_HUGE_SIZE ?
			     min_t(u64, bytes >> PAGE_SHIFT, GMEM_EVICT_AHEAD) : 0;

	if (READ_ONCE(g->evict_ahead) != want)
		WRITE_ONCE(g->evict_ahead, want);
	if (want && gmem_hbm_free_pages(g) < want)
		queue_work(system_unbound_wq, &g->evict_work);
}

/*
 * The eviction worker: least recently used chunks go home until g->evict_ahead pages are
 * free, by address only (gmem_evict_owned()), so that it needs no more than the read side of
 * the owners' mmap locks, which the migration it runs beside holds too.
 */
void gmem_evict_work(struct work_struct *work)
{
	struct gmem_accel *g = container_of(work, struct gmem_accel, evict_work);

	for (unsigned int tries = 0; tries < g->hbm.nchunks; tries++) {
		if (READ_ONCE(g->unbinding) ||
		    gmem_hbm_free_pages(g) >= READ_ONCE(g->evict_ahead) ||
		    !gmem_hbm_evict_chunk(g, NULL, true))
			break;
	}
}

/*
 * An HBM page for context @ctx's migration @m — with @huge, a whole 2 MiB folio — locked and
 * referenced as migrate_vma wants it. When HBM is full the least recently used chunk is
 * evicted to system memory (once for a folio, which otherwise moves as pages; m->evicted
 * notes it), unless m->no_evict; NULL if nothing could be freed (every page in use is pinned
 * or mid-migration).
 */
static struct page *gmem_hbm_alloc(struct gmem_ctx *ctx, struct gmem_migration *m, bool huge)
{
	struct gmem_accel *g = ctx->g;
	struct gmem_hbm *hbm = &g->hbm;
	unsigned int order = huge ? GMEM_HUGE_SHIFT - PAGE_SHIFT : 0;
	struct page *page;

	for (unsigned int tries = 0;
	     !(page = huge ? gmem_hbm_take_huge(g) : gmem_hbm_take(g)); tries++) {
		if (m->no_evict || tries == (huge ? 1 : hbm->nchunks) ||
		    !gmem_hbm_evict_chunk(g, ctx->mm, false))
			return NULL;
		m->evicted = true;
	}
	gmem_zone_device_init(page, &g->hbm.pgmap, order);
	kref_get(&ctx->owner->ref);
	atomic_long_add(1ul << order, &ctx->owner->pages);
	page->zone_device_data = ctx->owner;
	return page;
}

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
 * (gmem_extend_last()), and unmapping them is one call too. 6.12 moves a THP as 512 pages:
 * their copies took 300-400 commands a window. If it fails, each page is mapped on its own
 * (gmem_map_sys()).
 */
static void gmem_map_sys_window(struct gmem_migration *m, unsigned long npages,
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
static int gmem_migration_wait(struct gmem_migration *m, unsigned long npages, bool out)
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
 * scratch arrays. kvzalloc() of the ~80 KiB for each CPU fault had been 0.37 ms of its 1.23
 * (7.3 under TCG, trace_printk).
 */
static struct gmem_migration *gmem_migration_get(struct gmem_accel *g)
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
static void gmem_migration_put(struct gmem_accel *g, struct gmem_migration *m)
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
static void gmem_copy_to_ram_begin(struct gmem_migration *m, unsigned long npages,
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

static int gmem_copy_to_ram(struct gmem_migration *m, unsigned long npages,
			    struct vm_area_struct *vma, unsigned long start, void *owner)
{
	gmem_copy_to_ram_begin(m, npages, vma, start, owner);
	return gmem_migration_wait(m, npages, true);
}

static unsigned long gmem_count_migrated(struct gmem_migration *m, unsigned long npages)
{
	unsigned long n = 0;

	for (unsigned long i = 0; i < npages; i++)
		if (m->dst[i] && (m->src[i] & MIGRATE_PFN_MIGRATE))
			n += gmem_entry_pages(m, i);
	return n;
}

/*
 * Move HBM pages in [pfn, pfn + npages) to system memory, whichever processes map them
 * (only @owner's, when set). Their mappings, CPU and device, are updated by the kernel's
 * rmap walk and the notifiers it calls.
 */
/*
 * migrate_device_range() takes HBM pages whatever maps them, and 6.12's check lets through a
 * page that only a device-exclusive entry holds (make_device_exclusive_range() on coherent HBM:
 * no mapcount, one reference). migrate_device_finalize() would then turn that entry into a
 * present PTE with a new reference, the entry's never dropped: the page would outlive its
 * process (found by the ioctl fuzzer: EXCLUSIVE, then RELEASE). Give back, as the kernel's
 * own restore path does, every page unmapped for the move that someone else still holds.
 */
static void gmem_evict_skip_held(unsigned long *src, unsigned long npages)
{
	for (unsigned long i = 0; i < npages; i++) {
		struct page *page = migrate_pfn_to_page(src[i]);
		struct folio *folio;

		if (!page || !(src[i] & MIGRATE_PFN_MIGRATE))
			continue;
		folio = page_folio(page);
		if (folio_mapped(folio) || folio_ref_count(folio) <= 1)
			continue;	/* only our reference: free to move */
		src[i] = 0;
		folio_unlock(folio);
		folio_put(folio);
	}
}

/*
 * The mmap lock for reading, with no munmap() in flight: munmap() detaches the VMAs under the
 * write lock but zaps them and frees their anon_vmas after downgrading it to a read lock, so
 * a plain read lock may share the mm with a teardown. Taking it for writing waits for that
 * to end; downgrading keeps out the next one and lets page faults in.
 */
static void gmem_mmap_lock_settled(struct mm_struct *mm)
{
	mmap_write_lock(mm);
	mmap_write_downgrade(mm);
}

static bool gmem_mmap_trylock_settled(struct mm_struct *mm)
{
	/* 6.12 has no mmap_write_trylock(); this is what it would be, less the tracepoint. */
	if (!down_write_trylock(&mm->mmap_lock))
		return false;
	mmap_write_downgrade(mm);
	return true;
}

/*
 * Move what it can of the HBM pages in [pfn, pfn + npages) home by the addresses in @mm they
 * moved in from (gmem_hbm_set_va()): one migrate_vma per run of them in a row, whose MMU
 * notifier call covers the run, where migrate_device_range() unmaps page by page with an
 * invalidation each (a chunk: 512 device TLB invalidations instead of one). A page that is
 * no longer there (mremap, freed) stays for the caller. How many pages moved.
 */
static unsigned long gmem_evict_by_va(struct gmem_migration *m, struct mm_struct *mm,
				      unsigned long pfn, unsigned long npages)
{
	struct gmem_hbm *hbm = &m->g->hbm;
	unsigned long moved = 0;

	for (unsigned long i = 0, run; i < npages; i += run) {
		unsigned long va = gmem_hbm_va(hbm, pfn + i), end, n = 0;
		struct vm_area_struct *vma = va ? vma_lookup(mm, va) : NULL;

		for (run = 1; i + run < npages; run++)
			if (gmem_hbm_va(hbm, pfn + i + run) != va + run * PAGE_SIZE)
				break;
		if (!vma)
			continue;
		end = min(va + run * PAGE_SIZE, vma->vm_end);
		run = (end - va) >> PAGE_SHIFT;
		if (!gmem_pages_to_ram(m->g, m, vma, va, end, NULL, pfn, npages, &n))
			moved += n;
		cond_resched();
	}
	return moved;
}

/*
 * How many of the HBM pages from @pfn on (at most @npages) have one owner, returned
 * referenced in *@owner (NULL: free pages).
 */
static unsigned long gmem_owner_run(struct gmem_hbm *hbm, unsigned long pfn, unsigned long npages,
				    struct gmem_owner **owner)
{
	unsigned long run;

	*owner = gmem_page_owner_get(hbm, pfn_to_page(pfn), &run);
	for (run = min(run, npages); run < npages; run++)
		if (READ_ONCE(pfn_to_page(pfn + run)->zone_device_data) != *owner)
			break;
	return run;
}

/*
 * Move @owner's HBM pages in [pfn, pfn + npages) home by page frame, a run of its pages at a
 * time: a page the address pass freed may be someone else's by now, whose mmap lock is not
 * held (gmem_copy_to_ram()'s owner filter would keep their data, but not spare them the unmap
 * and map again).
 */
static void gmem_evict_by_pfn(struct gmem_migration *m, unsigned long pfn, unsigned long npages,
			      struct gmem_owner *owner)
{
	struct gmem_hbm *hbm = &m->g->hbm;

	for (unsigned long i = 0, run; i < npages; i += run) {
		struct gmem_owner *now;
		unsigned long moved;

		run = gmem_owner_run(hbm, pfn + i, npages - i, &now);
		gmem_owner_put(now);
		if (now != owner || migrate_device_range(m->src, pfn + i, run))
			continue;
		gmem_evict_skip_held(m->src, run);
		gmem_copy_to_ram(m, run, NULL, 0, owner);
		migrate_device_pages(m->src, m->dst, run);
		moved = gmem_count_migrated(m, run);
		migrate_device_finalize(m->src, m->dst, run);
		gmem_dev_count(m->g, GMEM_DEV_MIGRATED_TO_SYSTEM, moved);
	}
}

/*
 * Move @owner's HBM pages in [pfn, pfn + npages) home: by address first (gmem_evict_by_va()),
 * then what is still theirs by page frame (gmem_evict_by_pfn()). migrate_device_range() unmaps
 * them wherever they are mapped and migrate_device_finalize() walks their anon_vma to map them
 * again, with no reference on it: a thread of the process that munmaps the range in between
 * frees it (KASAN: use-after-free in rmap_walk_anon). So the owner's mmap lock is held
 * throughout with no munmap() in flight (gmem_mmap_lock_settled()): its VMAs, and the
 * anon_vmas they keep, stay. @held: an mm the caller holds so already; any other is only
 * tried then (two processes evicting each other's pages must not wait for each other), and
 * skipped if busy. @ahead: the eviction worker's way, by address only. Not covered: a page
 * the owner no longer maps but a forked child still does (the child's munmap can free the
 * anon_vma); the kernel's migrate_device_range() would have to hold a reference on it, as
 * migrate_pages() does.
 */
static void gmem_evict_owned(struct gmem_migration *m, unsigned long pfn, unsigned long npages,
			     struct gmem_owner *owner, struct mm_struct *held, bool ahead)
{
	struct mm_struct *mm = owner->mm;	/* mmgrab'd: even exited, its lock is there */

	if (ahead) {
		/*
		 * By address only: migrate_vma needs no more than the read lock, under which
		 * no munmap() can take the VMAs it works in (gmem_evict_work()).
		 */
		if (!mmget_not_zero(mm))
			return;
		mmap_read_lock(mm);
		gmem_evict_by_va(m, mm, pfn, npages);
		mmap_read_unlock(mm);
		mmput(mm);
		return;
	}
	if (mm != held) {
		if (!held)
			gmem_mmap_lock_settled(mm);
		else if (!gmem_mmap_trylock_settled(mm))
			return;
	}
	if (gmem_evict_by_va(m, mm, pfn, npages) < npages)
		gmem_evict_by_pfn(m, pfn, npages, owner);
	if (mm != held)
		mmap_read_unlock(mm);
}

/*
 * Move the HBM pages in [pfn, pfn + npages) home (only @only's, when set), a run of one
 * owner's pages at a time, under that owner's mmap lock (gmem_evict_owned(); @ahead: the
 * eviction worker's way). @room: only to make room in HBM, so a page RAM cannot take stays
 * in HBM (the allocation that wanted the room goes without) rather than wake the OOM killer.
 */
static void gmem_evict_range(struct gmem_accel *g, unsigned long pfn, unsigned long npages,
			     struct gmem_owner *only, struct mm_struct *held, bool ahead,
			     bool room)
{
	struct gmem_migration *m = gmem_migration_get(g);

	if (!m)
		return;
	m->room = room;
	for (unsigned long i = 0, run; i < npages; i += run) {
		struct gmem_owner *owner;

		run = gmem_owner_run(&g->hbm, pfn + i, npages - i, &owner);
		if (owner && (!only || owner == only))
			gmem_evict_owned(m, pfn + i, run, owner, held, ahead);
		gmem_owner_put(owner);
		cond_resched();
	}
	m->room = false;
	gmem_migration_put(g, m);
}

/*
 * Move [start, end) of @vma (one window) back to system memory: its pages in @g's HBM, only
 * those in [pfn, pfn + nr) (an eviction's chunk: the others stay). In two halves, so that
 * a window's copies can run while the next window is set up (gmem_migrate()): this one
 * collects the pages and queues their copies, gmem_window_out_end() finishes.
 */
static int gmem_window_out_begin(struct gmem_accel *g, struct gmem_migration *m,
				 struct vm_area_struct *vma, unsigned long start,
				 unsigned long end, struct page *fault_page, unsigned long pfn,
				 unsigned long nr)
{
	struct migrate_vma *args = &m->args;
	unsigned long npages = (end - start) >> PAGE_SHIFT;
	int ret;

	*args = (struct migrate_vma) {
		.vma = vma,
		.start = start,
		.end = end,
		.src = m->src,
		.dst = m->dst,
		.pgmap_owner = g,
		.flags = gmem_select_hbm(g) | gmem_select_compound(g, start, end),
		.fault_page = fault_page,
	};
	ret = migrate_vma_setup(args);
	if (ret)
		return ret;
	for (unsigned long i = 0; i < npages; i++) {
		struct page *page = migrate_pfn_to_page(m->src[i]);

		/* (left unmigrated, migrate_vma_finalize() maps it again) */
		if (page && page_to_pfn(page) - pfn >= nr)
			m->src[i] &= ~MIGRATE_PFN_MIGRATE;
	}
	m->copying = args->cpages;
	if (m->copying)
		gmem_copy_to_ram_begin(m, npages, vma, start, NULL);
	return 0;
}

static int gmem_window_out_end(struct gmem_accel *g, struct gmem_migration *m,
			       unsigned long *moved)
{
	struct migrate_vma *args = &m->args;
	unsigned long npages = (args->end - args->start) >> PAGE_SHIFT;
	int ret = m->copying ? gmem_migration_wait(m, npages, true) : 0;

	migrate_vma_pages(args);
	*moved = gmem_count_migrated(m, npages);
	migrate_vma_finalize(args);
	gmem_dev_count(g, GMEM_DEV_MIGRATED_TO_SYSTEM, *moved);
	return ret;
}

static int gmem_pages_to_ram(struct gmem_accel *g, struct gmem_migration *m,
			     struct vm_area_struct *vma, unsigned long start, unsigned long end,
			     struct page *fault_page, unsigned long pfn, unsigned long nr,
			     unsigned long *moved)
{
	int ret = gmem_window_out_begin(g, m, vma, start, end, fault_page, pfn, nr);

	return ret ?: gmem_window_out_end(g, m, moved);
}

/* Move [start, end) of @vma (one window) back to system memory. */
static int gmem_window_to_ram(struct gmem_accel *g, struct gmem_migration *m,
			      struct vm_area_struct *vma, unsigned long start, unsigned long end,
			      struct page *fault_page, unsigned long *moved)
{
	return gmem_pages_to_ram(g, m, vma, start, end, fault_page, 0, ULONG_MAX, moved);
}

/*
 * CPU access to a page in HBM: bring back the window around it — its 2 MiB block inside
 * the VMA — so that neighbours the CPU is about to touch come along.
 */
static vm_fault_t gmem_hbm_migrate_to_ram(struct vm_fault *vmf)
{
	struct gmem_accel *g = gmem_hbm_owner(vmf->page);
	struct gmem_migration *m;
	unsigned long moved = 0;
	u64 start, end;
	int ret;

	gmem_dev_count(g, GMEM_DEV_CPU_FAULTS, 1);
	/* Its data is lost: SIGBUS (BUS_MCEERR_AR), as memory_failure() gives a poisoned page. */
	if (gmem_hbm_poisoned(g, vmf->page))
		return VM_FAULT_HWPOISON;
	m = gmem_migration_get(g);
	if (!m)
		return VM_FAULT_OOM;
	gmem_window(vmf->vma, vmf->address, &start, &end);
	ret = gmem_window_to_ram(g, m, vmf->vma, start, end, vmf->page, &moved);
	gmem_migration_put(g, m);
	if (ret == -ENOMEM)
		return VM_FAULT_OOM;
	if (gmem_hbm_poisoned(g, vmf->page))	/* found so just now */
		return VM_FAULT_HWPOISON;
	return ret ? VM_FAULT_SIGBUS : 0;
}

/*
 * An HBM page for entry @i (with @huge, a 2 MiB folio) holding system page @spage's data
 * (zeroes if NULL): queued for the copy. false if HBM has none (for a page: is full of pages
 * that cannot move); the entry is then left in system memory.
 */
static bool gmem_hbm_dst(struct gmem_ctx *ctx, struct gmem_migration *m, unsigned long i,
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

/*
 * Remove the context's device mappings of the pages migrate_vma_setup() collected into
 * @m->src, a run of them at a time (a compound entry stands for its whole window): their
 * entries would go on pointing at the old pages. The pages it left keep theirs, as the CPU
 * keeps its: pages an earlier pass moved (a second pass over the window leaves them), pinned
 * ones. Zapping the whole window took those from the device until its next fault.
 */
static void gmem_unmap_collected(struct gmem_ctx *ctx, struct gmem_migration *m,
				 unsigned long start, unsigned long npages)
{
	unsigned long i = 0, j;

	while (i < npages) {
		if (!(m->src[i] & MIGRATE_PFN_MIGRATE)) {
			i++;
			continue;
		}
		for (j = i; j < npages && (m->src[j] & MIGRATE_PFN_MIGRATE);)
			j += (m->src[j] & GMEM_PFN_COMPOUND) ? GMEM_WINDOW_PAGES : 1;
		j = min(j, npages);
		gmem_pt_unmap(ctx, start + i * PAGE_SIZE, start + j * PAGE_SIZE);
		i = j;
	}
}

/*
 * Move [start, end) of @vma (one window) into HBM: its system pages, or with m->peer set, its
 * pages in that device's HBM (gmem_accel_peer.c). The context's own mapping of the pages that
 * move is removed here (its notifier skips migrations this context starts) and set up again,
 * pointing at HBM, once they have moved. In two halves, so that a window's copies can run
 * while the next window is set up (gmem_migrate()): this one collects the pages, allocates
 * HBM and queues the copies; 1 if gmem_window_in_end() is to finish, 0 if nothing moves.
 */
static int gmem_window_in_begin(struct gmem_ctx *ctx, struct gmem_migration *m,
				struct vm_area_struct *vma, unsigned long start, unsigned long end)
{
	struct gmem_accel *peer = m->peer;
	struct migrate_vma *args = &m->args;
	unsigned long npages = (end - start) >> PAGE_SHIFT;
	struct mmu_interval_notifier *mni = gmem_notifier(ctx, start);
	int ret;

	/*
	 * The caller inserted it (gmem_notifier_get()) before taking the mmap lock; gone only
	 * if the window was unmapped meanwhile (gmem_notifier_gc()) and mapped again: then
	 * nothing moves (a fault's best effort; gmem_migrate() looks it up under this lock).
	 */
	if (!mni)
		return 0;
	m->mni = mni;
	*args = (struct migrate_vma) {
		.vma = vma,
		.start = start,
		.end = end,
		.src = m->src,
		.dst = m->dst,
		/* A peer's pages are selected by their owner; ours by none. */
		.pgmap_owner = peer ? (void *)peer : ctx,
		.flags = peer ? gmem_select_hbm(peer) |
				(gmem_select_compound(peer, start, end) &
				 gmem_select_compound(ctx->g, start, end)) :
				MIGRATE_VMA_SELECT_SYSTEM | gmem_select_compound(ctx->g, start, end),
	};
	memset(m->dst, 0, sizeof(m->dst));
	memset(m->dma, 0, sizeof(m->dma));
	m->ndesc = 0;
	/* The device page-table pages for the result; without them the device faults later. */
	gmem_pt_reserve(ctx, start, end);
	m->seq = mmu_interval_read_begin(mni);
	ret = migrate_vma_setup(args);
	if (ret)
		return ret;
	if (!args->cpages) {
		migrate_vma_finalize(args);
		return 0;
	}
	gmem_unmap_collected(ctx, m, start, npages);
	if (!peer)
		gmem_map_sys_window(m, npages, m->src);

	for (unsigned long i = 0; i < npages; i++) {
		struct page *spage = migrate_pfn_to_page(m->src[i]);
		unsigned long write = 0, nr = 1;
		bool full = false;

		if (!(m->src[i] & MIGRATE_PFN_MIGRATE))
			continue;
		if ((m->src[i] & MIGRATE_PFN_WRITE) || (!spage && (vma->vm_flags & VM_WRITE)))
			write = MIGRATE_PFN_WRITE;
		/* A THP (or an empty 2 MiB) moves whole into a 2 MiB folio, if one is free. */
		if ((m->src[i] & GMEM_PFN_COMPOUND) && i + GMEM_WINDOW_PAGES <= npages) {
			nr = GMEM_WINDOW_PAGES;
			if (gmem_hbm_dst(ctx, m, i, start + i * PAGE_SIZE, spage, write, true)) {
				i += nr - 1;
				continue;
			}
		}
		/* (migrate_vma_pages() splits a THP whose pages go to pages) */
		for (unsigned long j = 0; j < nr && !full; j++)
			full = !gmem_hbm_dst(ctx, m, i + j, start + (i + j) * PAGE_SIZE,
					     spage ? pfn_to_page(page_to_pfn(spage) + j) : NULL,
					     write, false);
		if (full)
			break;		/* HBM is full of pages that cannot move */
		i += nr - 1;
	}
	/* (gmem_window_in_end() waits for them: gmem_migration_wait()) */
	gmem_kernel_submit(m->g, m->desc, m->ndesc, &m->job);
	return 1;
}

/* The second half: wait for the copies, then move and map the pages; how many moved. */
static int gmem_window_in_end(struct gmem_ctx *ctx, struct gmem_migration *m,
			      unsigned long *moved)
{
	struct migrate_vma *args = &m->args;
	unsigned long npages = (args->end - args->start) >> PAGE_SHIFT;
	int ret;

	ret = gmem_migration_wait(m, npages, false);
	migrate_vma_pages(args);
	*moved = gmem_count_migrated(m, npages);
	/*
	 * A peer pass's own setup invalidated the sequence (the notifier skips only migrations
	 * owned by this context): gmem_map_window() maps the result once it is final instead.
	 */
	if (!m->peer)
		gmem_pt_map_migrated(ctx, m->mni, args->start, m->src, m->dst, npages, m->seq);
	migrate_vma_finalize(args);
	gmem_ctx_count(ctx, GMEM_CTX_MIGRATED_TO_DEVICE, *moved);
	gmem_dev_count(ctx->g, GMEM_DEV_MIGRATED_TO_DEVICE, *moved);
	if (m->peer)
		gmem_dev_count(ctx->g, GMEM_DEV_MIGRATED_FROM_PEER, *moved);
	return ret;
}

int gmem_window_to_device(struct gmem_ctx *ctx, struct gmem_migration *m,
			  struct vm_area_struct *vma, unsigned long start, unsigned long end,
			  unsigned long *moved)
{
	int ret = gmem_window_in_begin(ctx, m, vma, start, end);

	*moved = 0;
	return ret > 0 ? gmem_window_in_end(ctx, m, moved) : ret;
}

/*
 * Swap in the pages of [start, end) flagged in @skipped, as a prefetch does: migrate_vma_setup()
 * leaves a swap entry where it is (1,417 pages of oversubscription's first 64 MiB once, the
 * debug kernel short of memory). Best effort: what comes in moves on the next pass. The mmap
 * lock is held. A run of them at a time: hmm_range_fault() faults every page from the first
 * one asked for to the end of its range, and would bring our HBM pages there home too.
 * (@skipped holds no page migrate_vma_setup() saw: never one of our HBM or one never touched;
 * a page left in another device's HBM comes home, as a CPU access does.)
 */
static void gmem_window_populate(struct gmem_ctx *ctx, struct gmem_migration *m,
				 struct vm_area_struct *vma, unsigned long start,
				 unsigned long end, const unsigned long *skipped)
{
	struct mmu_interval_notifier *mni = m->mni;	/* gmem_window_in_begin()'s */
	unsigned long npages = (end - start) >> PAGE_SHIFT, i, j;
	/* Writable now, or HBM would get it read-only and the first write would bring it home. */
	unsigned long req = HMM_PFN_REQ_FAULT | (vma->vm_flags & VM_WRITE ? HMM_PFN_REQ_WRITE : 0);

	for_each_set_bitrange(i, j, skipped, npages) {
		struct hmm_range range = {
			.notifier = mni,
			.start = start + i * PAGE_SIZE,
			.end = start + j * PAGE_SIZE,
			.hmm_pfns = m->dst,
			.default_flags = req,
			.dev_private_owner = ctx->g,
		};

		range.notifier_seq = mmu_interval_read_begin(range.notifier);
		hmm_range_fault(&range);
	}
}

/*
 * After a window's first pass (gmem_window_to_device()) left pages behind, once more:
 * migrate_vma_setup() skips a page that compaction, khugepaged or another CPU holds for a
 * moment (94 pages of a 1 GiB MIGRATE once, under the debug kernel). As the ioctl asks
 * (@from_peers), pages in another device's HBM come straight from there and swapped-out
 * ones are swapped in for the second pass; test_hmm's MIGRATE_TO_DEV leaves both, as test_hmm
 * does (hmm-tests' migrate_mixed). A pinned page or one already in HBM stays again, at the
 * cost of a second pass over its window that moves nothing.
 */
static int gmem_window_in_rest(struct gmem_ctx *ctx, struct gmem_migration *m,
			       struct vm_area_struct *vma, unsigned long start, unsigned long end,
			       unsigned long *moved, unsigned long *from_peers)
{
	unsigned long again = 0, npages = (end - start) >> PAGE_SHIFT;
	DECLARE_BITMAP(skipped, GMEM_WINDOW_PAGES);
	int ret;

	if (from_peers) {
		/* No page where migrate_vma_setup() looked: swapped out, or a device's HBM. */
		for (unsigned long i = 0; i < npages; i++)
			__assign_bit(i, skipped, !m->src[i]);
		ret = gmem_window_from_peers(ctx, m, vma, start, end, from_peers);
		*moved += *from_peers;
		if (ret || *moved == npages)
			return ret;
		/* (a hole in a file mapping has no entry either, and stays one) */
		if (vma_is_anonymous(vma))
			gmem_window_populate(ctx, m, vma, start, end, skipped);
	}
	ret = gmem_window_to_device(ctx, m, vma, start, end, &again);
	*moved += again;
	return ret;
}

/*
 * The second pass over window [start, end) of @m, after its first left pages behind: from
 * other devices' HBM too when the migration asks (m->peers), noting where for gmem_migrate().
 */
static int gmem_window_in_again(struct gmem_ctx *ctx, struct gmem_migration *m,
				struct vm_area_struct *vma, unsigned long start, unsigned long end,
				unsigned long *moved)
{
	unsigned long from_peers = 0;
	int ret = gmem_window_in_rest(ctx, m, vma, start, end, moved,
				      m->peers ? &from_peers : NULL);

	if (from_peers) {
		m->peer_start = min(m->peer_start, start);
		m->peer_end = max(m->peer_end, end);
	}
	return ret;
}

/*
 * Finish the window @m has in flight (gmem_window_in_begin()), with its second pass if pages
 * stayed behind; add what moved to @moved.
 */
static int gmem_window_in_finish(struct gmem_ctx *ctx, struct gmem_migration *m, u64 *moved)
{
	struct vm_area_struct *vma = m->args.vma;
	unsigned long start = m->args.start, end = m->args.end, n = 0;
	int ret = gmem_window_in_end(ctx, m, &n);

	if (!ret && n < (end - start) >> PAGE_SHIFT)
		ret = gmem_window_in_again(ctx, m, vma, start, end, &n);
	*moved += n;
	return ret;
}

/*
 * Move window [start, end) of @vma into HBM while the window before it, *@pending (or NULL),
 * has its copies in flight: the device copies one window while this CPU sets up the next
 * (under TCG the copy runs on QEMU's own thread). @m: the migration not pending. Windows go
 * one at a time when HBM has no free chunk, so that the migration's own eviction never meets
 * its window in flight (the eviction worker's may: migrate_vma skips the pages it locked).
 */
static int gmem_window_in_pipelined(struct gmem_ctx *ctx, struct gmem_migration *m,
				    struct gmem_migration **pending, struct vm_area_struct *vma,
				    unsigned long start, unsigned long end, u64 *moved)
{
	unsigned long n = 0;
	int ret = 0, begun;

	if (*pending && !gmem_hbm_has_free_chunk(ctx->g)) {
		ret = gmem_window_in_finish(ctx, *pending, moved);
		*pending = NULL;
		if (ret)
			return ret;
	}
	/* Each window maps its own device page tables: spares for both. */
	if (*pending)
		gmem_pt_reserve_n(ctx, start, end, 2);
	begun = gmem_window_in_begin(ctx, m, vma, start, end);
	if (*pending) {
		ret = gmem_window_in_finish(ctx, *pending, moved);
		*pending = NULL;
	}
	if (begun > 0) {
		*pending = m;
	} else if (!begun && !ret) {
		/* Nothing collected: the second pass, as after a first that left pages behind. */
		ret = gmem_window_in_again(ctx, m, vma, start, end, &n);
		*moved += n;
	}
	return ret ?: min(begun, 0);
}

/* Finish window @m out of HBM: wait for its copies, let the kernel map its new pages. */
static int gmem_window_out_finish(struct gmem_ctx *ctx, struct gmem_migration *m, u64 *moved)
{
	unsigned long n = 0;
	int ret = gmem_window_out_end(ctx->g, m, &n);

	gmem_ctx_count(ctx, GMEM_CTX_MIGRATED_TO_SYSTEM, n);
	*moved += n;
	return ret;
}

/*
 * Move window [start, end) of @vma home while the window before it, *@pending (or NULL), has
 * its copies in flight, as gmem_window_in_pipelined() does into HBM. @m: the migration not
 * pending.
 */
static int gmem_window_out_pipelined(struct gmem_ctx *ctx, struct gmem_migration *m,
				     struct gmem_migration **pending, struct vm_area_struct *vma,
				     unsigned long start, unsigned long end, u64 *moved)
{
	int ret = gmem_window_out_begin(ctx->g, m, vma, start, end, NULL, 0, ULONG_MAX);
	int err = *pending ? gmem_window_out_finish(ctx, *pending, moved) : 0;

	*pending = ret ? NULL : m;
	return err ?: ret;
}

/* The mmap lock for a migration: moving in may evict the process's pages (gmem_evict_owned()). */
static void gmem_migrate_lock(struct gmem_ctx *ctx, bool evict)
{
	if (evict)
		gmem_mmap_lock_settled(ctx->mm);
	else
		mmap_read_lock(ctx->mm);
}

/* How far a migration inserts its windows' notifiers at once (gmem_notifiers_get()). */
#define GMEM_NOTIFIERS_AHEAD	(32 * GMEM_HUGE_SIZE)

/*
 * Migrate [start, end) of the context's process to HBM (@how: GMEM_MIGRATE_TO_DEVICE; with
 * GMEM_MIGRATE_PEERS from other devices' HBM too) or back to system memory, a window (2 MiB
 * block inside a VMA) at a time. -EFAULT if part of the range is not mapped, or (to HBM) not
 * readable (unless GMEM_MIGRATE_SKIP_HOLES); pages that cannot move (pinned, shared, HBM full
 * of such) stay where they are.
 */
int gmem_migrate(struct gmem_ctx *ctx, u64 start, u64 end, unsigned int how, u64 *moved)
{
	bool to_device = how & GMEM_MIGRATE_TO_DEVICE, skip_holes = how & GMEM_MIGRATE_SKIP_HOLES;
	/* Two windows at a time (gmem_window_in/out_pipelined()). */
	struct gmem_migration *m[2] = {}, *pending = NULL, *next_m;
	struct gmem_accel *g = ctx->g;
	u64 peer_start = end, peer_end = start;
	int ret = 0, srcu;

	*moved = 0;
	if (!g->hbm.mapped)
		return -ENODEV;
	if (!mmget_not_zero(ctx->mm))
		return -ESRCH;
	srcu = gmem_notifiers_enter();
	for (int i = 0; i < 2 && !ret; i++) {
		m[i] = gmem_migration_get(g);
		if (!m[i]) {
			ret = -ENOMEM;
			break;
		}
		m[i]->ctx = ctx;
		m[i]->peers = how & GMEM_MIGRATE_PEERS;
		m[i]->peer_start = end;
		m[i]->peer_end = start;
	}
	if (ret)
		goto out;
	gmem_migrate_lock(ctx, to_device);
	for (u64 addr = start; addr < end && !ret;) {
		struct vm_area_struct *vma = find_vma(ctx->mm, addr);
		u64 first, next;

		if (!vma || vma->vm_start >= end || (vma->vm_start > addr && !skip_holes)) {
			ret = skip_holes ? 0 : -EFAULT;
			break;
		}
		addr = max_t(u64, addr, vma->vm_start);
		gmem_window(vma, addr, &first, &next);
		next = min(next, end);
		if (to_device && !(vma->vm_flags & VM_READ)) {
			/* The process cannot read it: the device may not either, HBM or not. */
			ret = skip_holes ? 0 : -EFAULT;
			addr = vma->vm_end;
			continue;
		}
		if (to_device && !gmem_notifier(ctx, addr)) {
			/* Its notifier first, which the mmap lock may not be held for. */
			if (pending)
				ret = gmem_window_in_finish(ctx, pending, moved);
			pending = NULL;
			if (ret)
				break;
			mmap_read_unlock(ctx->mm);
			ret = gmem_notifiers_get(ctx, addr, min(end, addr + GMEM_NOTIFIERS_AHEAD));
			gmem_migrate_lock(ctx, to_device);
			continue;	/* the VMAs may have changed meanwhile */
		}
		next_m = pending == m[0] ? m[1] : m[0];
		if (to_device) {
			if (m[0]->evicted || m[1]->evicted)
				gmem_evict_ahead(g, end - addr);
			ret = gmem_window_in_pipelined(ctx, next_m, &pending, vma, addr, next,
						       moved);
		} else {
			ret = gmem_window_out_pipelined(ctx, next_m, &pending, vma, addr, next,
							moved);
		}
		addr = next;
		if (fatal_signal_pending(current))
			ret = -EINTR;
		else if (READ_ONCE(g->unbinding))
			ret = -ENODEV;
	}
	if (pending) {
		int err = to_device ? gmem_window_in_finish(ctx, pending, moved) :
				      gmem_window_out_finish(ctx, pending, moved);

		ret = ret ?: err;
	}
	mmap_read_unlock(ctx->mm);
	if (m[0]->evicted || m[1]->evicted)
		gmem_evict_ahead(g, 0);
	/*
	 * What came from peers is mapped now, as the rest was when it moved (if this fails,
	 * the device's first access faults it in).
	 */
	for (int i = 0; i < 2; i++) {
		peer_start = min(peer_start, m[i]->peer_start);
		peer_end = max(peer_end, m[i]->peer_end);
	}
	for (u64 addr = peer_start; addr < peer_end;) {
		u64 next = min(ALIGN(addr + 1, GMEM_HUGE_SIZE), peer_end);

		if (gmem_map_window(ctx, addr, next, m[0]->dst, m[0]->src))
			break;
		addr = next;
	}
out:
	for (int i = 0; i < 2; i++)
		gmem_migration_put(g, m[i]);
	gmem_notifiers_exit(srcu);
	mmput(ctx->mm);
	return ret;
}

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
	    !gmem_window_to_device(ctx, m, vma, start, end, &n) &&
	    n < (end - start) >> PAGE_SHIFT)
		gmem_window_from_peers(ctx, m, vma, start, end, &n);
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

const struct dev_pagemap_ops gmem_hbm_private_ops = {
	GMEM_PGMAP_FREE_OP,
	GMEM_PGMAP_SPLIT_OP
	.migrate_to_ram = gmem_hbm_migrate_to_ram,
};

/* The CPU reaches coherent HBM itself: no migration on CPU access. */
const struct dev_pagemap_ops gmem_hbm_coherent_ops = {
	GMEM_PGMAP_FREE_OP,
};

/* Move every page in use out of HBM (unbind; HMM_DMIRROR_RELEASE). */
void gmem_hbm_evict_all(struct gmem_accel *g)
{
	struct gmem_hbm *hbm = &g->hbm;

	for (unsigned int c = 0; c < hbm->nchunks; c++) {
		if (READ_ONCE(hbm->chunks[c].used))
			gmem_evict_range(g, gmem_chunk_pfn(hbm, &hbm->chunks[c]),
					 GMEM_WINDOW_PAGES, NULL, NULL, false, false);
	}
}

/*
 * A context closes: its pages in HBM go back to its process, if that still runs (an exiting
 * process has freed them already). Only runs of its own pages are touched, so other
 * contexts' pages stay mapped; only chunks in use are looked at.
 */
void gmem_hbm_release_ctx(struct gmem_ctx *ctx)
{
	struct gmem_hbm *hbm = &ctx->g->hbm;

	if (!hbm->mapped)
		return;
	/* Its pages the eviction worker has in flight are home after this. */
	flush_work(&ctx->g->evict_work);
	for (unsigned int c = 0; c < hbm->nchunks; c++) {
		if (READ_ONCE(hbm->chunks[c].used))
			gmem_evict_range(ctx->g, gmem_chunk_pfn(hbm, &hbm->chunks[c]),
					 GMEM_WINDOW_PAGES, ctx->owner, NULL, false, false);
	}
}

