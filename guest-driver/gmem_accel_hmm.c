// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: faulting a window's pages in with hmm_range_fault() and mapping the
 * result into the context's device page table, with the mmu_interval_notifier retry loop of
 * Documentation/mm/hmm.rst. A fault maps the present pages around it, a 64 KiB block at a
 * time, and memory that comes in 2 MiB units (a THP, an HBM chunk) a window at once.
 */
#include <linux/delay.h>
#include <linux/hmm.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>

#include "gmem_accel.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_pt.h"
#include "gmem_accel_hbm.h"
#include "gmem_accel_fault.h"
#include "gmem_accel_trace.h"

/* Present pages around a fault are mapped with it, a block of this size (a THP: all of it). */
#define GMEM_MAP_AROUND		SZ_64K

/*
 * hmm_range_fault() over @range with the mmu_interval_notifier retry loop of
 * Documentation/mm/hmm.rst, then ctx->lock: returns 0 holding ctx->lock, the result still
 * current (the caller programs the device page table from it, then unlocks), or an errno
 * without the lock. @req holds each page's input flags, restored on every retry (NULL: none,
 * a pass that faults nothing).
 */
int gmem_hmm_range_fault_lock(struct gmem_ctx *ctx, struct hmm_range *range,
			      const unsigned long *req, unsigned long npages)
	__acquires(&ctx->lock)
{
	unsigned long timeout = jiffies + msecs_to_jiffies(HMM_RANGE_DEFAULT_TIMEOUT);
	bool delayed = false;
	unsigned long own;
	u32 delay;
	int ret;

	for (;;) {
		if (time_after(jiffies, timeout))
			return -EBUSY;
		if (gmem_owner_dying(ctx))
			return -EINTR;
		if (req)
			memcpy(range->hmm_pfns, req, npages * sizeof(*req));
		else
			memset(range->hmm_pfns, 0, npages * sizeof(*range->hmm_pfns));
		own = gmem_own_moves(range->notifier);
		ret = gmem_hmm_range_fault(range);
		if (ret == -EBUSY)
			continue;
		if (ret)
			return ret;
		/* Injected (debugfs): what changes meanwhile is what read_retry is for. */
		delay = READ_ONCE(ctx->g->inject_map_delay_ms);
		if (unlikely(delay && !delayed)) {
			/* (once a pass, and not out of its time to map) */
			delay = min(delay, 10000u);
			gmem_dev_count(ctx->g, GMEM_DEV_INJECTED_MAP_DELAYS, 1);
			msleep(delay);
			timeout += msecs_to_jiffies(delay);
			delayed = true;
		}
		mutex_lock(&ctx->lock);
		if (!gmem_read_retry(range->notifier, range->notifier_seq, own))
			return 0;	/* as documented: with ctx->lock held */
		mutex_unlock(&ctx->lock);
	}
}

/*
 * Does the fault ask to write pages that are in our HBM while the CPU maps them read-only?
 * hmm_range_fault() leaves those as they are (see gmem_fault_unshare()). Their span,
 * [*lo, *hi) in pages, grows to take them in. ctx->lock held.
 */
static bool gmem_hbm_readonly_for_write(struct gmem_ctx *ctx, const unsigned long *req,
					const unsigned long *pfns, unsigned long npages,
					unsigned long *lo, unsigned long *hi)
{
	bool any = false;

	lockdep_assert_held(&ctx->lock);
	for (unsigned long i = 0; i < npages; i++) {
		if ((req[i] & HMM_PFN_REQ_WRITE) && (pfns[i] & HMM_PFN_VALID) &&
		    !(pfns[i] & HMM_PFN_WRITE) &&
		    is_device_private_page(hmm_pfn_to_page(pfns[i]))) {
			*lo = min(*lo, i);
			*hi = max(*hi, i + 1);
			any = true;
		}
	}
	return any;
}

/*
 * The pages a fault group asks for in a pass's range: @req[@first, @last), from its start.
 * @window: if the first is memory in 2 MiB units (gmem_fault_whole_window()), the pass maps
 * nothing and returns 1, for the caller to map the window.
 */
struct gmem_asked {
	const unsigned long *req;
	unsigned long first, last;
	bool window;
};

/* Memory that lives in 2 MiB units, a THP or an HBM chunk of ours, is mapped a window at once. */
static bool gmem_fault_whole_window(struct gmem_ctx *ctx, unsigned long hmm_pfn)
{
	u64 off;

	return (hmm_pfn & HMM_PFN_VALID) &&
	       (hmm_pfn_to_map_order(hmm_pfn) >= GMEM_HUGE_SHIFT - PAGE_SHIFT ||
		gmem_hbm_page(ctx->g, hmm_pfn_to_page(hmm_pfn), &off));
}

/* Did a pass find every page @asked for there, with the access asked (@pfns: its result)? */
static bool gmem_asked_there(const struct gmem_asked *asked, const unsigned long *pfns)
{
	for (unsigned long i = asked->first; i < asked->last; i++) {
		unsigned long want = asked->req[i];

		if (want && (!(pfns[i] & HMM_PFN_VALID) ||
			     ((want & HMM_PFN_REQ_WRITE) && !(pfns[i] & HMM_PFN_WRITE))))
			return false;
	}
	return true;
}

/*
 * Behind an IOMMU, a 64 KiB block in which the group asks for one page and the device maps
 * nothing yet gets that page alone: the neighbours the CPU maps wait for a second fault in the
 * block (UVM's density, a block at a time). There each neighbour is a DMA mapping of its own,
 * an IOMMU update each, which a device touching one page of the block would pay for nothing.
 * A device that goes on to use the block maps it whole at its second fault there. @pfns:
 * hmm's result from @va, @npages long. ctx->lock held.
 */
static void gmem_map_lone_page_only(struct gmem_ctx *ctx, u64 va, const struct gmem_asked *asked,
				    unsigned long *pfns, unsigned long npages)
{
	lockdep_assert_held(&ctx->lock);
	if (!ctx->g->dma_translated)
		return;		/* a direct mapping costs next to nothing */
	for (unsigned long i = asked->first, lo, hi; i < asked->last; i = hi) {
		u64 block = ALIGN_DOWN(va + i * PAGE_SIZE, GMEM_MAP_AROUND);
		unsigned long n = 0, only = 0;

		lo = block < va ? 0 : (block - va) >> PAGE_SHIFT;
		hi = min_t(unsigned long, npages, (block + GMEM_MAP_AROUND - va) >> PAGE_SHIFT);
		for (unsigned long j = max(lo, asked->first); j < min(hi, asked->last); j++) {
			if (asked->req[j]) {
				n++;
				only = j;
			}
		}
		if (n != 1 || gmem_pt_block_mapped(ctx, block))
			continue;
		for (unsigned long j = lo; j < hi; j++)
			if (j != only)
				pfns[j] = 0;
	}
}

/*
 * Does a group inside the 64 KiB block at @block skip the map-around: one faulting pass over
 * the pages it @asked for, not a pass that maps the CPU's pages there first? Where the device
 * maps two pages of the block or more, it was mapped around already, and walking it again
 * would find nothing new (a device reading fresh memory a page at a time would take two
 * passes a page). A lone page in a block the device maps nothing of, behind an IOMMU, is
 * mapped alone anyway (gmem_map_lone_page_only()).
 */
static bool gmem_block_skips_map_pass(struct gmem_ctx *ctx, u64 block,
				      const struct gmem_asked *asked)
{
	unsigned int mapped, n = 0;

	for (unsigned long i = asked->first; i < asked->last; i++)
		n += !!asked->req[i];
	mutex_lock(&ctx->lock);
	mapped = gmem_pt_block_mapped(ctx, block);
	mutex_unlock(&ctx->lock);
	return mapped >= 2 || (!mapped && n == 1 && ctx->g->dma_translated);
}

/*
 * hmm_range_fault() over [start, end), faulting in the pages flagged in @req if @fault (and,
 * as hmm does, every page from the first flagged one to @end), then, if @map, mapping the
 * result into the device page table (what @asked allows of it, if set: gmem_map_lone_page_only()).
 * Without @fault, @req is not read.
 */
static int gmem_hmm_pass(struct gmem_ctx *ctx, u64 start, u64 end, unsigned long *req,
			 unsigned long *pfns, bool fault, bool map, const struct gmem_asked *asked)
{
	unsigned long npages = (end - start) >> PAGE_SHIFT;
	struct hmm_range range = {
		.start = start,
		.end = end,
		.hmm_pfns = pfns,
		.pfn_flags_mask = fault ? HMM_PFN_REQ_FAULT | HMM_PFN_REQ_WRITE : 0,
		.dev_private_owner = ctx->g,
	};
	unsigned long lo = npages, hi = 0;
	int ret, replaced, unshares = 0;

	range.notifier = gmem_notifier_get(ctx, start);
	if (IS_ERR(range.notifier))
		return PTR_ERR(range.notifier);
	for (;;) {
		bool unshare;

		replaced = 0;
		/* Page-table pages are allocated here, never under ctx->lock. */
		ret = map ? gmem_pt_reserve(ctx, start, end) : 0;
		if (ret)
			return ret;
		ret = gmem_hmm_range_fault_lock(ctx, &range, fault ? req : NULL, npages);
		if (fault)
			trace_gmem_accel_fault_range(ctx->id, start, end, ret);
		if (ret)
			return ret;
		if (asked && asked->window && gmem_fault_whole_window(ctx, pfns[asked->first])) {
			mutex_unlock(&ctx->lock);
			return 1;
		}
		unshare = fault && gmem_hbm_readonly_for_write(ctx, req, pfns, npages, &lo, &hi);
		if (map && !unshare && asked)
			gmem_map_lone_page_only(ctx, start, asked, pfns, npages);
		if (map && !unshare)
			replaced = gmem_pt_map(ctx, start, pfns, npages);
		mutex_unlock(&ctx->lock);
		/*
		 * e.g. read-only -> writable: the old entry may be cached. Also when the spare
		 * tables ran out part-way (-EAGAIN): what was replaced by then is not counted.
		 */
		if (replaced > 0 || replaced == -EAGAIN)
			gmem_tlb_invalidate(ctx->g, ctx->id, start, end - start);
		if (unshare) {
			/* Bounded: pages that will not come home fail the command, not loop. */
			if (++unshares > 3)
				return -EBUSY;
			gmem_fault_unshare(ctx, start + lo * PAGE_SIZE, start + hi * PAGE_SIZE);
			continue;
		}
		if (replaced == -EAGAIN)
			continue;
		if (replaced < 0)
			return replaced;
		/*
		 * The written pages were in HBM: they go back, now writable, if HBM has room.
		 * Read-only entries in a writable VMA are what each NUMA balancing scan leaves
		 * (change_prot_numa()), and the device's writes would otherwise drain its HBM a
		 * page at a time.
		 */
		if (unshares)
			gmem_fault_return(ctx, start + lo * PAGE_SIZE, start + hi * PAGE_SIZE);
		return 0;
	}
}

/*
 * Map into the device page table what the CPU maps of [start, end) (2 MiB at most),
 * faulting nothing: the result of a migration whose own notifier call left it no sequence
 * number to map by (gmem_window_from_peers()), a fault's THP or HBM chunk, a window at once.
 * @req, @pfns: a window's scratch. Takes the mmap lock.
 */
int gmem_map_window(struct gmem_ctx *ctx, u64 start, u64 end, unsigned long *req,
		    unsigned long *pfns)
{
	return gmem_hmm_pass(ctx, start, end, req, pfns, false, true, NULL);
}

/*
 * Fault in the pages flagged in @req of [start, end) (in one window) and map them with what
 * the CPU maps there: a prefetch (gmem_accel_prefetch.c). @req, @pfns: from @start.
 */
int gmem_fault_pages(struct gmem_ctx *ctx, u64 start, u64 end, unsigned long *req,
		     unsigned long *pfns)
{
	return gmem_hmm_pass(ctx, start, end, req, pfns, true, true, NULL);
}

/*
 * Fault in the pages flagged in @req[@first, @last) of the window [start, end) (2 MiB at most;
 * the span's first and last pages flagged, @req outside it not read: a single-page fault
 * neither fills nor scans a window's 512 entries) and map, with them, the pages the CPU maps
 * in their 64 KiB blocks (in a block where the group asks for one page, once the device maps
 * something there: gmem_map_lone_page_only()); the whole window where memory comes in 2 MiB
 * units (a THP, which the device then maps with a 2 MiB page; an HBM chunk).
 * Neighbours are mapped a 64 KiB block at a time, not all 2 MiB of them at every fault.
 * hmm_range_fault() faults every page from the first one asked for to the end of its
 * range, so unless the whole window is asked for, the faulting passes cover just the flagged
 * span, 64 KiB at a time, and a last pass maps the neighbours without faulting. (A group holds
 * up to 256 faults: one pass over a megabyte that must be read in from swap reclaims, under
 * a tight memcg, pages of the same mm and so invalidates itself, retry after retry.) A group
 * inside one 64 KiB block takes the pass that faults nothing first: pages the CPU maps
 * already need no other; in a block mapped around before, the faulting pass alone
 * (gmem_block_skips_map_pass()).
 */
int gmem_fault_range(struct gmem_ctx *ctx, u64 start, u64 end, unsigned long first,
		     unsigned long last, unsigned long *req, unsigned long *pfns)
{
	unsigned long npages = (end - start) >> PAGE_SHIFT;
	struct gmem_asked asked;
	unsigned long a, b;
	int ret;

	if (first >= last)
		return 0;
	if (first == 0 && last == npages)
		return gmem_hmm_pass(ctx, start, end, req, pfns, true, true, NULL);
	a = (max_t(u64, ALIGN_DOWN(start + first * PAGE_SIZE, GMEM_MAP_AROUND), start) - start) >>
	    PAGE_SHIFT;
	b = (min_t(u64, ALIGN(start + last * PAGE_SIZE, GMEM_MAP_AROUND), end) - start) >>
	    PAGE_SHIFT;
	asked = (struct gmem_asked){ req + a, first - a, last - a, true };
	if (b - a <= GMEM_MAP_AROUND >> PAGE_SHIFT) {
		u64 block = ALIGN_DOWN(start + first * PAGE_SIZE, GMEM_MAP_AROUND);

		/*
		 * One block: a pass that faults nothing maps what the CPU maps there (data it
		 * wrote, a page the device had before). If that was all the group asked for,
		 * the fault is served in one pass instead of a faulting one and this one.
		 */
		ret = 0;
		if (!gmem_block_skips_map_pass(ctx, block, &asked)) {
			ret = gmem_hmm_pass(ctx, start + a * PAGE_SIZE, start + b * PAGE_SIZE,
					    req + a, pfns + a, false, true, &asked);
			if (ret < 0)
				return ret;
			if (gmem_asked_there(&asked, pfns + a)) {
				if (ret)	/* memory in 2 MiB units: the window at once */
					ret = gmem_map_window(ctx, start, end, req, pfns);
				return ret;
			}
		}
		if (!ret) {
			/* The rest is faulted in and mapped; the neighbours are mapped already. */
			ret = gmem_hmm_pass(ctx, start + first * PAGE_SIZE,
					    start + last * PAGE_SIZE, req + first, pfns + first,
					    true, true, NULL);
			if (!ret && gmem_fault_whole_window(ctx, pfns[first]))
				return gmem_map_window(ctx, start, end, req, pfns);
			return ret;
		}
		/*
		 * Memory in 2 MiB units not there as asked (a write to HBM the CPU maps
		 * read-only, which comes home first): as any group.
		 */
	}
	for (unsigned long p = first, q; p < last; p = q) {
		q = min_t(unsigned long, last, ALIGN(p + 1, GMEM_MAP_AROUND >> PAGE_SHIFT));
		while (p < q && !req[p])
			p++;
		if (p == q)
			continue;
		ret = gmem_hmm_pass(ctx, start + p * PAGE_SIZE, start + q * PAGE_SIZE, req + p,
				    pfns + p, true, false, NULL);
		if (ret)
			return ret;
	}
	if (gmem_fault_whole_window(ctx, pfns[first]))
		return gmem_map_window(ctx, start, end, req, pfns);
	asked.window = false;
	return gmem_hmm_pass(ctx, start + a * PAGE_SIZE, start + b * PAGE_SIZE, req + a,
			     pfns + a, false, true, &asked);
}

/*
 * The window around faulting page @va: its 2 MiB-aligned block, inside its VMA; the unit
 * gmem_fault_range() works in.
 */
int gmem_fault_window(struct gmem_ctx *ctx, u64 va, u64 *start, u64 *end)
{
	struct vm_area_struct *vma;
	int ret = 0;

	mmap_read_lock(ctx->mm);
	vma = vma_lookup(ctx->mm, va);
	if (vma)
		gmem_window(vma, va, start, end);
	else
		ret = -EFAULT;
	mmap_read_unlock(ctx->mm);
	return ret;
}

