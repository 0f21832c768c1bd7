// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: density prefetch, as UVM's perf_prefetch. Once a fault group's pages of
 * a 2 MiB window are mapped, the window is looked at as a tree of naturally aligned
 * power-of-two regions: for each faulting page, the largest region around it in which more
 * than uvm_perf_prefetch_threshold percent of the pages are resident for the device (mapped
 * in the context's device page table, HBM included, or asked for now) is brought in whole.
 * The pages prefetched are faulted in and mapped as the group's own are, but best effort: a
 * page that cannot be had (poisoned, past a file's end, a userfaultfd range) fails no command,
 * it is simply not prefetched.
 */
#include <linux/hmm.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/userfaultfd_k.h>

#include "gmem_accel.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_pt.h"
#include "gmem_accel_fault.h"
#include "gmem_accel_prefetch.h"
#include "gmem_accel_trace.h"

GMEM_PARAM_RANGE(uvm_perf_prefetch_enable, 1, 0, 1, NULL,
		 "density prefetch of device faults: 1 on, 0 off (default 1)");
GMEM_PARAM_RANGE(uvm_perf_prefetch_threshold, 51, 1, 100, NULL,
		 "percent of a region resident for the device above which its other pages are prefetched, 1-100 (default 51)");
GMEM_PARAM_RANGE(uvm_perf_prefetch_min_faults, 1, 1, 20, NULL,
		 "faults a group needs in a window for that window to prefetch, 1-20 (default 1)");

/* How many bits of @map in [first, first + len) (a naturally aligned power of two) are set. */
static unsigned int gmem_region_weight(const unsigned long *map, unsigned int first,
				       unsigned int len)
{
	unsigned int w = 0;

	if (len < BITS_PER_LONG) {
		unsigned long word = map[first / BITS_PER_LONG] >> (first % BITS_PER_LONG);

		return hweight_long(word & (BIT(len) - 1));
	}
	for (unsigned int i = first / BITS_PER_LONG; i < (first + len) / BITS_PER_LONG; i++)
		w += hweight_long(map[i]);
	return w;
}

/*
 * The pages to prefetch, into @out, of the 2 MiB block whose residency is @res (the faulting
 * pages set too), around each faulting page set in @faulted: the largest region around it
 * that is dense enough (UVM's bitmap tree: each level up a region twice the size).
 */
static void gmem_prefetch_regions(const unsigned long *res, const unsigned long *faulted,
				  unsigned long *out, unsigned int threshold)
{
	unsigned int p;

	bitmap_zero(out, GMEM_WINDOW_PAGES);
	for_each_set_bit(p, faulted, GMEM_WINDOW_PAGES) {
		unsigned int best = 0, first = p;

		if (test_bit(p, out))
			continue;
		for (unsigned int len = 1; len <= GMEM_WINDOW_PAGES; len <<= 1) {
			unsigned int r = ALIGN_DOWN(p, len);

			if (gmem_region_weight(res, r, len) * 100 > threshold * len) {
				best = len;
				first = r;
			}
		}
		if (best > 1)
			bitmap_set(out, first, best);
	}
}

/*
 * May the pages of [start, end) (one VMA's) be faulted in for a prefetch, and writable
 * (*@write in, what the group asks; out, what the VMA allows)? Not in a range userfaultfd
 * handles (a missing page would wait for its handler, for a page nobody asked for), nor in
 * I/O mappings.
 */
static bool gmem_prefetch_allowed(struct gmem_ctx *ctx, u64 start, u64 end, bool *write)
{
	struct vm_area_struct *vma;
	bool ok;

	mmap_read_lock(ctx->mm);
	vma = vma_lookup(ctx->mm, start);
	ok = vma && end <= vma->vm_end && (vma->vm_flags & VM_READ) &&
	     !(vma->vm_flags & (VM_IO | VM_PFNMAP)) && !userfaultfd_armed(vma);
	if (ok && !(vma->vm_flags & VM_WRITE))
		*write = false;
	mmap_read_unlock(ctx->mm);
	return ok;
}

/*
 * Fault in and map the pages set in @want (of the block at @base) in [lo, hi), a 64 KiB block
 * at a time as gmem_fault_range() faults; how many were. @req, @pfns: the scratch of the
 * window, which starts at page @lo of the block. A block that fails is left as it is: its
 * pages fault later if the device touches them.
 */
static unsigned long gmem_prefetch_fault(struct gmem_ctx *ctx, u64 base, unsigned int lo,
					 unsigned int hi, const unsigned long *want, bool write,
					 unsigned long *req, unsigned long *pfns)
{
	unsigned int step = SZ_64K >> PAGE_SHIFT;
	unsigned long done = 0;

	for (unsigned int p = lo, q; p < hi; p = q) {
		unsigned int a, b, cnt;

		q = min(hi, ALIGN(p + 1, step));
		a = find_next_bit(want, q, p);
		if (a >= q)
			continue;
		b = a;
		cnt = 0;
		for (unsigned int j = a; j < q; j++) {
			req[j - lo] = 0;
			if (test_bit(j, want)) {
				req[j - lo] = HMM_PFN_REQ_FAULT | (write ? HMM_PFN_REQ_WRITE : 0);
				b = j + 1;
				cnt++;
			}
		}
		if (gmem_owner_dying(ctx))
			break;
		if (!gmem_fault_pages(ctx, base + a * PAGE_SIZE, base + b * PAGE_SIZE,
				      req + a - lo, pfns + a - lo))
			done += cnt;
		cond_resched();
	}
	return done;
}

/*
 * After group @f (@n faults, sorted, all in the window [start, end)) is mapped: prefetch what
 * the density of its 2 MiB block says (see the file's comment). @req, @pfns: the window's
 * scratch, overwritten. Called by the fault server (ctx->fault_mutex held).
 */
void gmem_prefetch(struct gmem_ctx *ctx, u64 start, u64 end, const struct gmem_fault *f,
		   unsigned int n, unsigned long *req, unsigned long *pfns)
{
	DECLARE_BITMAP(res, GMEM_WINDOW_PAGES);
	DECLARE_BITMAP(faulted, GMEM_WINDOW_PAGES);
	DECLARE_BITMAP(want, GMEM_WINDOW_PAGES);
	u64 base = ALIGN_DOWN(start, GMEM_HUGE_SIZE);
	unsigned int lo = (start - base) >> PAGE_SHIFT, hi = (end - base) >> PAGE_SHIFT;
	unsigned int threshold = READ_ONCE(uvm_perf_prefetch_threshold);
	unsigned long pages;
	bool write = false;

	if (!READ_ONCE(uvm_perf_prefetch_enable) || n < READ_ONCE(uvm_perf_prefetch_min_faults) ||
	    ctx->fault_hook)
		return;
	bitmap_zero(faulted, GMEM_WINDOW_PAGES);
	for (unsigned int i = 0; i < n; i++) {
		__set_bit((f[i].va - base) >> PAGE_SHIFT, faulted);
		write |= gmem_fault_writes(&f[i]);
	}
	/* Resident now: looked up each time, so nothing goes stale between faults. */
	mutex_lock(&ctx->lock);
	gmem_pt_window_mapped(ctx, base, res);
	mutex_unlock(&ctx->lock);
	bitmap_or(res, res, faulted, GMEM_WINDOW_PAGES);
	gmem_prefetch_regions(res, faulted, want, threshold);
	/* Only the window (its VMA's part of the block), only what the device lacks. */
	bitmap_andnot(want, want, res, GMEM_WINDOW_PAGES);
	bitmap_clear(want, 0, lo);
	bitmap_clear(want, hi, GMEM_WINDOW_PAGES - hi);
	if (bitmap_empty(want, GMEM_WINDOW_PAGES) || !gmem_prefetch_allowed(ctx, start, end, &write))
		return;
	pages = gmem_prefetch_fault(ctx, base, lo, hi, want, write, req, pfns);
	gmem_dev_count(ctx->g, GMEM_DEV_PREFETCH_PAGES, pages);
	trace_gmem_accel_prefetch(ctx->id, base + find_first_bit(want, GMEM_WINDOW_PAGES) *
				  PAGE_SIZE, pages, n);
}
