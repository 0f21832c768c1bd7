// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: migration between system memory and HBM with migrate_vma_*, a window
 * (a 2 MiB block inside a VMA) at a time: on request (gmem_migrate(): MIGRATE and test_hmm's
 * MIGRATE_TO_DEV/SYS), back on a CPU fault (migrate_to_ram), and for the fault server and
 * eviction (gmem_pages_to_ram()). Each window is moved in two halves, so that the device
 * copies one window while the CPU sets up the next; the copies themselves are built in
 * gmem_accel_copy.c and run on the driver's own queue 0, which never waits on a page fault.
 */
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "gmem_accel_queue.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_pt.h"
#include "gmem_accel_hbm.h"
#include "gmem_accel_obj.h"
#include "gmem_accel_migrate.h"
#include "gmem_accel_fault.h"
#include "gmem_accel_trace.h"
#include "gmem_accel_advice.h"
#include "gmem_accel_thrashing.h"

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

	m->begun_ns = ktime_get_ns();
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
	trace_gmem_accel_migrate(m->ctx ? m->ctx->id : -1, args->start, args->end, false, *moved,
				 ret, m->begun_ns);
	return ret;
}

int gmem_pages_to_ram(struct gmem_accel *g, struct gmem_migration *m,
		      struct vm_area_struct *vma, unsigned long start, unsigned long end,
		      struct page *fault_page, unsigned long pfn, unsigned long nr,
		      unsigned long *moved)
{
	int ret = gmem_window_out_begin(g, m, vma, start, end, fault_page, pfn, nr);

	return ret ?: gmem_window_out_end(g, m, moved);
}

/* Move [start, end) of @vma (one window) back to system memory. */
int gmem_window_to_ram(struct gmem_accel *g, struct gmem_migration *m,
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
	struct gmem_ctx *ctxs[GMEM_CPU_FAULT_CTXS];
	unsigned int nctx, i, nap_us = 0;
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
	/* The contexts of the process: a thrashing page's CPU side naps first. */
	nctx = gmem_ctxs_of_mm(g, vmf->vma->vm_mm, ctxs, ARRAY_SIZE(ctxs));
	for (i = 0; i < nctx; i++)
		nap_us = max(nap_us, gmem_thrashing_cpu_nap(ctxs[i], vmf->address));
	gmem_thrashing_nap(nap_us);
	gmem_window(vmf->vma, vmf->address, &start, &end);
	ret = gmem_window_to_ram(g, m, vmf->vma, start, end, vmf->page, &moved);
	for (i = 0; moved && i < nctx; i++)
		gmem_thrashing_moved(ctxs[i], m, false);
	/* Accessed-by: the device maps the new pages before the CPU's access completes. */
	for (i = 0; i < nctx; i++) {
		if (moved)
			gmem_advice_cpu_moved(ctxs[i], start, end, m->dst);
		gmem_ctx_put(ctxs[i]);
	}
	gmem_migration_put(g, m);
	if (ret == -ENOMEM)
		return VM_FAULT_OOM;
	if (gmem_hbm_poisoned(g, vmf->page))	/* found so just now */
		return VM_FAULT_HWPOISON;
	return ret ? VM_FAULT_SIGBUS : 0;
}

/*
 * Remove the context's device mappings of the pages migrate_vma_setup() collected into
 * @m->src, a run of them at a time (a compound entry stands for its whole window): their
 * entries would go on pointing at the old pages. The pages it left keep theirs, as the CPU
 * keeps its: pages an earlier pass moved (a second pass over the window leaves them), pinned
 * ones. (Zapping the whole window would take those from the device until its next fault.)
 */
static void gmem_unmap_collected(struct gmem_ctx *ctx, struct gmem_migration *m,
				 unsigned long start, unsigned long npages)
{
	unsigned long i = 0, j;

	mutex_lock(&ctx->lock);
	gmem_own_moved(m->mni);
	while (i < npages) {
		if (!(m->src[i] & MIGRATE_PFN_MIGRATE)) {
			i++;
			continue;
		}
		for (j = i; j < npages && (m->src[j] & MIGRATE_PFN_MIGRATE);)
			j += (m->src[j] & GMEM_PFN_COMPOUND) ? GMEM_WINDOW_PAGES : 1;
		j = min(j, npages);
		gmem_pt_zap(ctx, start + i * PAGE_SIZE, start + j * PAGE_SIZE);
		i = j;
	}
	mutex_unlock(&ctx->lock);
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
	m->begun_ns = ktime_get_ns();
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
	trace_gmem_accel_migrate(ctx->id, args->start, args->end, true, *moved, ret, m->begun_ns);
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
 * leaves a swap entry where it is, which a guest short of memory has many of. Best effort:
 * what comes in moves on the next pass. The mmap
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
 * moment. As the ioctl asks
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
static int gmem_window_in_second_pass(struct gmem_ctx *ctx, struct gmem_migration *m,
				      struct vm_area_struct *vma, unsigned long start,
				      unsigned long end, unsigned long *moved)
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
		ret = gmem_window_in_second_pass(ctx, m, vma, start, end, &n);
	*moved += n;
	return ret;
}

/*
 * Move window [start, end) of @vma into HBM while the window before it, *@pending (or NULL),
 * has its copies in flight: the device copies one window while this CPU sets up the next
 * (the device's engine runs beside the CPU). @m: the migration not pending. Windows go
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
		ret = gmem_window_in_second_pass(ctx, m, vma, start, end, &n);
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
void gmem_migrate_lock(struct gmem_ctx *ctx, bool evict)
	__acquires(&ctx->mm->mmap_lock)
{
	if (evict)
		gmem_mmap_read_lock_no_munmap(ctx->mm);
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
	unsigned long *map_req, *map_pfns;	/* scratch for gmem_map_window() */
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
		if (skip_holes && gmem_obj_vma(vma)) {
			/*
			 * An object's mapping is no anonymous memory migrate_vma can move (its
			 * managed pages move in gmem_accel_managed.c): a hole to skip, not -EINVAL.
			 */
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
	 * the device's first access faults it in). Every window is finished, so the arrays of
	 * m[0] are free: they are gmem_map_window()'s scratch, a window's hmm input flags and
	 * results.
	 */
	map_req = m[0]->dst;
	map_pfns = m[0]->src;
	for (int i = 0; i < 2; i++) {
		peer_start = min(peer_start, m[i]->peer_start);
		peer_end = max(peer_end, m[i]->peer_end);
	}
	for (u64 addr = peer_start; addr < peer_end;) {
		u64 next = min(ALIGN(addr + 1, GMEM_HUGE_SIZE), peer_end);

		if (gmem_map_window(ctx, addr, next, map_req, map_pfns))
			break;
		addr = next;
	}
	/* Accessed-by pages are mapped where they went (into HBM: as they moved). */
	if (!to_device)
		gmem_advice_map_range(ctx, start, end, map_req, map_pfns);
out:
	for (int i = 0; i < 2; i++)
		gmem_migration_put(g, m[i]);
	gmem_notifiers_exit(srcu);
	mmput(ctx->mm);
	return ret;
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
