// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the test_hmm interface's view of the device page table (SNAPSHOT and the
 * mirror MIGRATE_TO_DEV checks) and its EXCLUSIVE mappings, a 2 MiB window at a time;
 * gmem_accel_dmirror.c has the commands and the node.
 */
#include <linux/hmm.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/rmap.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <lib/test_hmm_uapi.h>

#include "gmem_accel.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_pt.h"
#include "gmem_accel_fault.h"
#include "gmem_accel_dmirror.h"

static_assert((GMEM_PTE_SW_EXCLUSIVE & GMEM_PTE_SW_HOOK_MASK) == GMEM_PTE_SW_EXCLUSIVE);

/* Scratch for one window of 2 MiB: hmm_range_fault input/output, migrate_vma arrays. */
struct gmem_dmirror_window {
	unsigned long req[GMEM_WINDOW_PAGES];
	unsigned long pfns[GMEM_WINDOW_PAGES];
	unsigned long src[GMEM_WINDOW_PAGES];
	unsigned long dst[GMEM_WINDOW_PAGES];
	u8 prot[GMEM_WINDOW_PAGES];
};

/* Scratch for a walk over the context's process, which is held (mmget) until the put. */
static struct gmem_dmirror_window *gmem_window_get(struct gmem_ctx *ctx)
{
	struct gmem_dmirror_window *w = kvmalloc(sizeof(*w), GFP_KERNEL);

	if (!w)
		return ERR_PTR(-ENOMEM);
	if (!mmget_not_zero(ctx->mm)) {
		kvfree(w);
		return ERR_PTR(-EINVAL);
	}
	return w;
}

static void gmem_window_put(struct gmem_ctx *ctx, struct gmem_dmirror_window *w)
{
	mmput(ctx->mm);
	kvfree(w);
}

/* The 2 MiB-aligned window holding @va, clipped to [va, end). */
static u64 gmem_window_end(u64 va, u64 end)
{
	return min_t(u64, ALIGN(va + 1, GMEM_HUGE_SIZE), end);
}

/* What a device entry @pte (with hmm_range_fault's @pfn for its page) is, in test_hmm's terms. */
static u8 gmem_dmirror_prot(struct gmem_accel *g, u64 pte, bool huge, unsigned long pfn)
{
	struct page *page;
	u8 prot = HMM_DMIRROR_PROT_NONE;

	if (!(pte & GMEM_PTE_VALID))
		return pfn & HMM_PFN_ERROR ? HMM_DMIRROR_PROT_ERROR : HMM_DMIRROR_PROT_NONE;
	page = pfn & HMM_PFN_VALID ? hmm_pfn_to_page(pfn) : NULL;
	if (pte & GMEM_PTE_HBM)
		prot = g->hbm.pgmap.type == MEMORY_DEVICE_COHERENT ?
		       HMM_DMIRROR_PROT_DEV_COHERENT_LOCAL : HMM_DMIRROR_PROT_DEV_PRIVATE_LOCAL;
	else if (page && is_device_coherent_page(page))
		prot = HMM_DMIRROR_PROT_DEV_COHERENT_REMOTE;	/* another device's, over the bus */
	else if (page && is_zero_pfn(page_to_pfn(page)))
		prot = HMM_DMIRROR_PROT_ZERO;
	prot |= pte & GMEM_PTE_WRITE ? HMM_DMIRROR_PROT_WRITE : HMM_DMIRROR_PROT_READ;
	if (huge)
		prot |= HMM_DMIRROR_PROT_PMD;
	return prot;
}

/*
 * Mirror one window [start, end) of the CPU page table into the device's without faulting
 * anything (what the CPU maps, the device maps), then describe the device's entries for
 * [start, end) into @w->prot.
 */
static int gmem_dmirror_mirror_window(struct gmem_ctx *ctx, struct gmem_dmirror_window *w,
				      u64 start, u64 end)
{
	unsigned long npages = (end - start) >> PAGE_SHIFT;
	struct hmm_range range = {
		.start = start,
		.end = end,
		.hmm_pfns = w->pfns,
		.dev_private_owner = ctx->g,
	};
	int ret, replaced;

	range.notifier = gmem_notifier_get(ctx, start);
	if (IS_ERR(range.notifier))
		return PTR_ERR(range.notifier);
	memset(w->req, 0, npages * sizeof(*w->req));
	do {
		ret = gmem_pt_reserve(ctx, start, end);
		if (ret)
			return ret;
		ret = gmem_hmm_range_fault_lock(ctx, &range, w->req, npages);
		if (ret)
			return ret;
		replaced = gmem_pt_map(ctx, start, w->pfns, npages);
		for (unsigned long i = 0; i < npages; i++) {
			bool huge;
			u64 pte = gmem_pt_leaf(ctx, start + i * PAGE_SIZE, &huge);

			w->prot[i] = gmem_dmirror_prot(ctx->g, pte, huge, w->pfns[i]);
		}
		mutex_unlock(&ctx->lock);
		/* As gmem_hmm_pass(): -EAGAIN may have replaced entries uncounted. */
		if (replaced > 0 || replaced == -EAGAIN)
			gmem_tlb_invalidate(ctx->g, ctx->id, start, end - start);
	} while (replaced == -EAGAIN);
	return replaced < 0 ? replaced : 0;
}

/* Does no VMA meet [start, end)? The device maps nothing there either. */
static bool gmem_dmirror_hole(struct mm_struct *mm, u64 start, u64 end)
{
	struct vm_area_struct *vma;

	mmap_read_lock(mm);
	vma = find_vma(mm, start);
	mmap_read_unlock(mm);
	return !vma || vma->vm_start >= end;
}

/*
 * Mirror [start, end) as above; the description goes to user memory at @out if set, and
 * *@local counts pages the device maps in its own HBM.
 */
int gmem_dmirror_mirror(struct gmem_ctx *ctx, u64 start, u64 end, u8 __user *out, u64 *local)
{
	struct gmem_dmirror_window *w;
	int ret = 0, srcu;

	w = gmem_window_get(ctx);
	if (IS_ERR(w))
		return PTR_ERR(w);
	*local = 0;
	srcu = gmem_notifiers_enter();
	for (u64 va = start, next; va < end && !ret; va = next) {
		unsigned long n;

		/* A range may span terabytes: stay killable, let others run. */
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		cond_resched();
		next = gmem_window_end(va, end);
		n = (next - va) >> PAGE_SHIFT;
		if (gmem_dmirror_hole(ctx->mm, va, next))	/* as hmm_range_fault says: */
			memset(w->prot, HMM_DMIRROR_PROT_ERROR, n);	/* HMM_PFN_ERROR */
		else
			ret = gmem_dmirror_mirror_window(ctx, w, va, next);
		if (ret)
			break;
		for (unsigned long i = 0; i < n; i++) {
			u8 where = w->prot[i] & ~(HMM_DMIRROR_PROT_READ | HMM_DMIRROR_PROT_WRITE |
						  HMM_DMIRROR_PROT_PMD);

			*local += where == HMM_DMIRROR_PROT_DEV_PRIVATE_LOCAL ||
				  where == HMM_DMIRROR_PROT_DEV_COHERENT_LOCAL;
		}
		if (out && copy_to_user(out + ((va - start) >> PAGE_SHIFT), w->prot, n))
			ret = -EFAULT;
	}
	gmem_notifiers_exit(srcu);
	gmem_window_put(ctx, w);
	return ret;
}

/*
 * Split the THPs of [start, end) while the PMD still maps them (gmem_accel_compat.h,
 * GMEM_SPLIT_THP_SELECT, says why and how): migrate_vma_setup() splits them, and
 * migrate_vma_finalize() puts back every page it took, as it was.
 */
static void gmem_dmirror_split_thp(struct gmem_ctx *ctx, struct gmem_dmirror_window *w,
				   struct vm_area_struct *vma, u64 start, u64 end)
{
	struct migrate_vma args = {
		.vma = vma,
		.start = start,
		.end = end,
		.src = w->src,
		.dst = w->dst,
		.pgmap_owner = ctx->g,
		.flags = GMEM_SPLIT_THP_SELECT,
	};

	memset(w->dst, 0, sizeof(w->dst));
	if (!migrate_vma_setup(&args))
		migrate_vma_finalize(&args);
}

/*
 * Take the page at @va exclusively for the device and map it: readable, writable, atomic, and
 * marked so that CHECK_EXCLUSIVE sees it until a CPU access revokes it (the notifier then zaps
 * the entry). Inside a read_begin/read_retry section of @mni (the window's notifier), the page
 * locked until it is mapped: a CPU access revokes the mapping only after it exists. A page at a
 * time: 7.3's make_device_exclusive() hands back the page's whole folio locked, where the next
 * page of a THP would wait. The mmap lock is held.
 */
static int gmem_dmirror_exclusive_page(struct gmem_ctx *ctx, struct mmu_interval_notifier *mni,
				       u64 va)
{
	unsigned long timeout = jiffies + msecs_to_jiffies(HMM_RANGE_DEFAULT_TIMEOUT);
	int ret = -EBUSY;

	while (!time_after(jiffies, timeout)) {
		unsigned long seq = mmu_interval_read_begin(mni);
		unsigned long pfn;
		struct page *page;
		bool retry;

		/* Tables before the page is locked and ctx->lock taken. */
		if (gmem_pt_reserve(ctx, va, va + PAGE_SIZE))
			return -ENOMEM;
		page = gmem_make_device_exclusive(ctx->mm, va, ctx);
		if (IS_ERR(page))
			return PTR_ERR(page);	/* busy, shared, or not anonymous */
		mutex_lock(&ctx->lock);
		retry = mmu_interval_read_retry(mni, seq);
		if (!retry) {
			pfn = page_to_pfn(page) | HMM_PFN_VALID | HMM_PFN_WRITE;
			ret = gmem_pt_map(ctx, va, &pfn, 1);
			if (ret >= 0)
				gmem_pt_mark(ctx, va, GMEM_PTE_SW_EXCLUSIVE);
		}
		mutex_unlock(&ctx->lock);
		if (ret > 0 || ret == -EAGAIN)
			gmem_tlb_invalidate(ctx->g, ctx->id, va, PAGE_SIZE);
		if (ret == -EAGAIN) {	/* spare tables gone: reserve again */
			retry = true;
			ret = -EBUSY;
		}
		unlock_page(page);
		put_page(page);
		if (!retry)
			break;
	}
	return ret < 0 ? ret : 0;
}

/* Take one window [start, end) exclusively for the device and map it, page by page. */
static int gmem_dmirror_exclusive_window(struct gmem_ctx *ctx, struct gmem_dmirror_window *w,
					 u64 start, u64 end)
{
	struct mmu_interval_notifier *mni = gmem_notifier_get(ctx, start);
	struct vm_area_struct *vma;
	int ret = 0;

	if (IS_ERR(mni))	/* -EFAULT: nothing mapped there */
		return PTR_ERR(mni) == -EFAULT ? -EINVAL : PTR_ERR(mni);
	mmap_read_lock(ctx->mm);
	vma = vma_lookup(ctx->mm, start);
	if (!vma || end > vma->vm_end) {
		mmap_read_unlock(ctx->mm);
		return -EINVAL;
	}
	gmem_dmirror_split_thp(ctx, w, vma, start, end);
	for (u64 va = start; va < end && !ret; va += PAGE_SIZE)
		ret = gmem_dmirror_exclusive_page(ctx, mni, va);
	mmap_read_unlock(ctx->mm);
	return ret;
}

/* Take [start, end) exclusively for the device, a window at a time, and map it. */
int gmem_dmirror_take_exclusive(struct gmem_ctx *ctx, u64 start, u64 end)
{
	struct gmem_dmirror_window *w;
	int ret = 0, srcu;

	w = gmem_window_get(ctx);
	if (IS_ERR(w))
		return PTR_ERR(w);
	srcu = gmem_notifiers_enter();
	for (u64 va = start, next; va < end && !ret; va = next) {
		cond_resched();
		next = gmem_window_end(va, end);
		ret = fatal_signal_pending(current) ? -EINTR :
		      gmem_dmirror_exclusive_window(ctx, w, va, next);
	}
	gmem_notifiers_exit(srcu);
	gmem_window_put(ctx, w);
	return ret;
}
