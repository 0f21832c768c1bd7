// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: eviction, HBM pages going home to system memory whoever asked for
 * them: the least recently used 2 MiB chunk when HBM is full (in a migration's path, or
 * ahead of it by the eviction worker), a closing context's pages, every page at unbind. An
 * HBM page is moved home under its owner's mmap lock, taken so that no munmap() is in flight
 * (gmem_mmap_read_lock_no_munmap()); this file owns that lock's use.
 */
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "gmem_accel_ctx.h"
#include "gmem_accel_hbm.h"
#include "gmem_accel_migrate.h"
#include "gmem_accel_trace.h"
#include "gmem_accel_advice.h"
#include "gmem_accel_obj.h"
#include "gmem_accel_oversub.h"

static void gmem_evict_range(struct gmem_accel *g, unsigned long pfn, unsigned long npages,
			     struct gmem_owner *only, struct mm_struct *held, bool ahead,
			     bool room);

/*
 * Evict the least recently used chunk of migrated pages to system memory (@held: the mm whose
 * lock the caller holds with no munmap() in flight, or NULL; @ahead: for the eviction worker,
 * by address only). False if no chunk holds migrated pages.
 */
static bool gmem_hbm_evict_chunk(struct gmem_accel *g, struct mm_struct *held, bool ahead)
{
	struct gmem_hbm *hbm = &g->hbm;
	struct gmem_chunk *victim;
	u64 begun_ns = ktime_get_ns();
	bool in_burst = false;

	spin_lock(&hbm->lock);
	victim = list_first_entry_or_null(&hbm->lru, struct gmem_chunk, link);
	if (victim) {	/* next time, the next one, should this one not empty */
		list_move_tail(&victim->link, &hbm->lru);
		/* Used in this burst of use: the working set does not fit in HBM. */
		gmem_oversub_busy(hbm);
		in_burst = victim->used_ns >= hbm->burst_ns;
	}
	spin_unlock(&hbm->lock);
	if (!victim)
		return false;
	gmem_oversub_evicting(g, gmem_chunk_pfn(hbm, victim), in_burst);
	gmem_dev_count(g, GMEM_DEV_EVICTIONS, 1);
	if (ahead)
		gmem_dev_count(g, GMEM_DEV_EVICTIONS_AHEAD, 1);
	gmem_evict_range(g, gmem_chunk_pfn(hbm, victim), GMEM_WINDOW_PAGES, NULL, held, ahead,
			 true);
	trace_gmem_accel_evict(victim - hbm->chunks, ahead, begun_ns);
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
void gmem_evict_ahead(struct gmem_accel *g, u64 bytes)
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
 * referenced as migrate_vma wants it. When HBM is full managed objects' HBM copies go first
 * (they have a home in system memory already), then the least recently used chunk is
 * evicted to system memory (once for a folio, which otherwise moves as pages; m->evicted
 * notes it), unless m->no_evict; NULL if nothing could be freed (every page in use is pinned
 * or mid-migration).
 */
struct page *gmem_hbm_alloc(struct gmem_ctx *ctx, struct gmem_migration *m, bool huge)
{
	struct gmem_accel *g = ctx->g;
	struct gmem_hbm *hbm = &g->hbm;
	unsigned int order = huge ? GMEM_HUGE_SHIFT - PAGE_SHIFT : 0;
	struct page *page;

	for (unsigned int tries = 0;
	     !(page = huge ? gmem_hbm_take_huge(g) : gmem_hbm_take(g)); tries++) {
		if (m->no_evict || tries == (huge ? 1 : hbm->nchunks) ||
		    !(gmem_managed_evict_one(g, NULL) || gmem_hbm_evict_chunk(g, ctx->mm, false)))
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
 * Move HBM pages in [pfn, pfn + npages) to system memory, whichever processes map them
 * (only @owner's, when set). Their mappings, CPU and device, are updated by the kernel's
 * rmap walk and the notifiers it calls.
 */
/*
 * migrate_device_range() takes HBM pages whatever maps them, and 6.12's check lets through a
 * page that only a device-exclusive entry holds (make_device_exclusive_range() on coherent HBM:
 * no mapcount, one reference). migrate_device_finalize() would then turn that entry into a
 * present PTE with a new reference, the entry's never dropped: the page would outlive its
 * process (HMM_DMIRROR_EXCLUSIVE, then HMM_DMIRROR_RELEASE). Give back, as the kernel's
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
void gmem_mmap_read_lock_no_munmap(struct mm_struct *mm)
	__acquires(&mm->mmap_lock)
{
	mmap_write_lock(mm);
	mmap_write_downgrade(mm);
}

/* The same, if the lock is free now; true if it was taken (for reading). */
static bool gmem_mmap_read_trylock_no_munmap(struct mm_struct *mm)
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
/*
 * Pages of [va, end) of @mm just went home: the contexts of @mm that keep them mapped
 * (accessed-by) map them there now. The mmap lock is held; m->dst is free again.
 */
static void gmem_evict_map_accessed(struct gmem_migration *m, struct mm_struct *mm, u64 va,
				    u64 end)
{
	struct gmem_ctx *ctxs[GMEM_CPU_FAULT_CTXS];
	unsigned int n = gmem_ctxs_of_mm(m->g, mm, ctxs, ARRAY_SIZE(ctxs));

	for (unsigned int i = 0; i < n; i++) {
		gmem_advice_cpu_moved(ctxs[i], va, end, m->dst);
		gmem_ctx_put(ctxs[i]);
	}
}

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
		if (n)
			gmem_evict_map_accessed(m, mm, va, end);
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
 * frees it (a use-after-free in rmap_walk_anon). So the owner's mmap lock is held
 * throughout with no munmap() in flight (gmem_mmap_read_lock_no_munmap()): its VMAs, and the
 * anon_vmas they keep, stay. @held: an mm the caller holds so already; any other is only
 * tried then (two processes evicting each other's pages must not wait for each other), and
 * skipped if busy. @ahead: the eviction worker's way, by address only. An owner whose last
 * user is gone is not walked by address: exit_mmap() zaps it under the mmap lock for
 * reading, which would share the mm with our migrate_vma, and its pages go with it; what
 * others still map goes by page frame. Not covered: a page the owner no longer maps but a
 * forked child still does (the child's munmap can free the anon_vma); the kernel's
 * migrate_device_range() would have to hold a reference on it, as migrate_pages() does.
 */
static void gmem_evict_owned(struct gmem_migration *m, unsigned long pfn, unsigned long npages,
			     struct gmem_owner *owner, struct mm_struct *held, bool ahead)
{
	struct mm_struct *mm = owner->mm;	/* mmgrab'd: even exited, its lock is there */
	bool live;

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
	/* (@held: the caller keeps it, with mmget, and holds its lock) */
	live = mm == held || mmget_not_zero(mm);
	if (mm != held) {
		if (!held) {
			gmem_mmap_read_lock_no_munmap(mm);
		} else if (!gmem_mmap_read_trylock_no_munmap(mm)) {
			if (live)
				mmput_async(mm);
			return;
		}
	}
	if (!live || gmem_evict_by_va(m, mm, pfn, npages) < npages)
		gmem_evict_by_pfn(m, pfn, npages, owner);
	if (mm != held) {
		mmap_read_unlock(mm);
		/* (our put may be its last: its teardown must not run under the caller's locks) */
		if (live)
			mmput_async(mm);
	}
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

