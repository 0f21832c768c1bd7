// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the uAPI of lib/test_hmm.ko (lib/test_hmm_uapi.h, from the kernel tree
 * the module is built against) on a real device, so that the kernel's own HMM selftests
 * (tools/testing/selftests/mm/hmm-tests.c) run against it. Each device gets a node
 * /dev/<dmirror_name>N next to /dev/gmem_accelN; an open file is a device context, as there.
 *
 * test_hmm fakes its device with CPU copies. Here READ and WRITE are DMA copies by the
 * device through its MMU, faulting like any command; MIGRATE_TO_DEV/SYS use the HBM
 * migration path; SNAPSHOT mirrors the CPU page table into the device's and reports the
 * device's entries; EXCLUSIVE maps pages taken with make_device_exclusive_range(); RELEASE
 * evicts HBM. test_hmm's semantics are kept where hmm-tests checks them: a command's first
 * fault brings in its whole range (cmd.faults counts fault rounds), errnos, cpages.
 */
#include <linux/fs.h>
#include <linux/hmm.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pgtable.h>
#include <linux/rmap.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <lib/test_hmm_uapi.h>

#include "gmem_accel.h"

static char *dmirror_name = "gmem_dmirror";
module_param(dmirror_name, charp, 0444);
MODULE_PARM_DESC(dmirror_name,
		 "base name of the test_hmm-compatible nodes (default gmem_dmirror; hmm_dmirror gives lib/test_hmm.ko's names, which clash if that module is loaded too)");

#define GMEM_DMIRROR_TIMEOUT_MS	60000

static dev_t gmem_dmirror_devt;
static const struct class gmem_dmirror_class = {
	.name = "gmem_dmirror",
};

/* Scratch for one window of 2 MiB: hmm_range_fault input/output, exclusive pages. */
struct gmem_dmirror_window {
	unsigned long req[GMEM_WINDOW_PAGES];
	unsigned long pfns[GMEM_WINDOW_PAGES];
	unsigned long src[GMEM_WINDOW_PAGES];
	unsigned long dst[GMEM_WINDOW_PAGES];
	struct page *pages[GMEM_WINDOW_PAGES];
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

/*
 * The device copies @size bytes from @src to @dst (user addresses of the context's process).
 * A fault in @src, or in @dst, brings all of @src (read) and @dst (write) in at once, as
 * test_hmm does; *@faults is how many fault rounds the command needed.
 */
static int gmem_dmirror_copy(struct gmem_file *f, u64 dst, u64 src, u64 size, bool ahead_src,
			     u64 *faults)
{
	u64 n = DIV_ROUND_UP(size, GMEM_CMD_MAX_BYTES), before;
	struct gmem_ctx *ctx = f->ctx;
	struct gmem_accel_cmd *cmds;
	int ret;

	if (n > GMEM_ACCEL_MAX_BATCH)
		return -E2BIG;
	cmds = kcalloc(n, sizeof(*cmds), GFP_KERNEL);
	if (!cmds)
		return -ENOMEM;
	for (u64 i = 0; i < n; i++) {
		u64 done = i * GMEM_CMD_MAX_BYTES;

		cmds[i].op = GMEM_ACCEL_OP_COPY;
		cmds[i].dst = dst + done;
		cmds[i].src = src + done;
		cmds[i].size = min_t(u64, size - done, GMEM_CMD_MAX_BYTES);
	}
	ctx->ahead[0] = (struct gmem_fault_ahead){ dst, dst + size, true };
	ctx->ahead[1] = (struct gmem_fault_ahead){ src, src + size, false };
	/* The device's first fault comes after the doorbell, which orders these stores. */
	WRITE_ONCE(ctx->nahead, ahead_src ? 2 : 1);
	before = atomic64_read(&ctx->stats[GMEM_CTX_FAULT_GROUPS]);
	ret = gmem_submit_wait(ctx, cmds, n, GMEM_DMIRROR_TIMEOUT_MS);
	kfree(cmds);
	WRITE_ONCE(ctx->nahead, 0);
	*faults = atomic64_read(&ctx->stats[GMEM_CTX_FAULT_GROUPS]) - before;
	return ret;
}

/* test_hmm's rule for migrations: every page of the range mapped and readable, or -EINVAL. */
static int gmem_dmirror_check_vmas(struct mm_struct *mm, u64 start, u64 end)
{
	int ret = 0;

	mmap_read_lock(mm);
	for (u64 va = start; va < end && !ret;) {
		struct vm_area_struct *vma = vma_lookup(mm, va);

		if (!vma || !(vma->vm_flags & VM_READ))
			ret = -EINVAL;
		else
			va = vma->vm_end;
	}
	mmap_read_unlock(mm);
	return ret;
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
		.notifier = &ctx->notifier,
		.start = start,
		.end = end,
		.hmm_pfns = w->pfns,
		.dev_private_owner = ctx->g,
	};
	int ret, replaced;

	memset(w->req, 0, npages * sizeof(*w->req));
	do {
		ret = gmem_pt_reserve(ctx, start, end);
		if (ret)
			return ret;
		ret = gmem_hmm_range_locked(ctx, &range, w->req, npages);
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
static int gmem_dmirror_mirror(struct gmem_ctx *ctx, u64 start, u64 end, u8 __user *out,
			       u64 *local)
{
	struct gmem_dmirror_window *w;
	int ret = 0;

	w = gmem_window_get(ctx);
	if (IS_ERR(w))
		return PTR_ERR(w);
	*local = 0;
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
	gmem_window_put(ctx, w);
	return ret;
}

static int gmem_dmirror_snapshot(struct gmem_file *f, struct hmm_dmirror_cmd *cmd, u64 end)
{
	u64 local;
	int ret;

	/*
	 * As test_hmm, whose first copy_to_user() fails: without this a NULL buffer would mean
	 * "no output" below and a range of terabytes would be walked for nothing.
	 */
	if (!cmd->ptr)
		return -EFAULT;
	ret = gmem_dmirror_mirror(f->ctx, cmd->addr, end, u64_to_user_ptr(cmd->ptr), &local);
	if (!ret)
		cmd->cpages = cmd->npages;
	return ret;
}

/*
 * Move the range to HBM; -ENOENT unless every page of it is then in this device's HBM (as
 * test_hmm, whose mirror must hold every page). The device then reads the range to cmd->ptr,
 * for the caller to check.
 */
static int gmem_dmirror_migrate_to_dev(struct gmem_file *f, struct hmm_dmirror_cmd *cmd, u64 end)
{
	struct gmem_ctx *ctx = f->ctx;
	u64 moved, local;
	int ret;

	ret = gmem_dmirror_check_vmas(ctx->mm, cmd->addr, end);
	if (ret)
		return ret;
	ret = gmem_migrate(ctx, cmd->addr, end, true, false, &moved);
	if (ret)
		return ret == -EFAULT ? -EINVAL : ret;	/* unmapped meanwhile */
	ret = gmem_dmirror_mirror(ctx, cmd->addr, end, NULL, &local);
	if (ret)
		return ret;
	if (local != cmd->npages)
		return -ENOENT;
	ret = gmem_dmirror_copy(f, cmd->ptr, cmd->addr, end - cmd->addr, false, &cmd->faults);
	if (!ret)
		cmd->cpages = cmd->npages;
	return ret;
}

static int gmem_dmirror_migrate_to_sys(struct gmem_file *f, struct hmm_dmirror_cmd *cmd, u64 end)
{
	int ret;

	ret = gmem_dmirror_check_vmas(f->ctx->mm, cmd->addr, end);
	if (ret)
		return ret;
	ret = gmem_migrate(f->ctx, cmd->addr, end, false, false, &cmd->cpages);
	return ret == -EFAULT ? -EINVAL : ret;
}

/*
 * make_device_exclusive_range() on 6.12 refuses every tail page of a large folio: its GUP
 * splits a THP's PMD mapping (FOLL_SPLIT_PMD) but not the folio, so a range backed by THPs
 * (THP "always") fails — test_hmm then returns -EBUSY. Split the folios first, while the
 * PMD still maps them: migrate_vma_setup() does (split_folio()), and is the only way a
 * module can. Selecting only this device's private pages, it takes no system page; the
 * ones it takes, migrate_vma_finalize() puts back as they were.
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
		.flags = MIGRATE_VMA_SELECT_DEVICE_PRIVATE,
	};

	memset(w->dst, 0, sizeof(w->dst));
	if (!migrate_vma_setup(&args))
		migrate_vma_finalize(&args);
}

/*
 * Take one window [start, end) exclusively for the device and map it, inside the notifier's
 * read_begin/read_retry section: the pages stay locked until they are mapped, so a CPU
 * access revokes the mapping only after it exists.
 */
static int gmem_dmirror_exclusive_window(struct gmem_ctx *ctx, struct gmem_dmirror_window *w,
					 u64 start, u64 end)
{
	unsigned long timeout = jiffies + msecs_to_jiffies(HMM_RANGE_DEFAULT_TIMEOUT);
	long npages = (end - start) >> PAGE_SHIFT;
	struct vm_area_struct *vma;
	int ret = -EBUSY;

	mmap_read_lock(ctx->mm);
	vma = vma_lookup(ctx->mm, start);
	if (!vma || end > vma->vm_end) {
		mmap_read_unlock(ctx->mm);
		return -EINVAL;
	}
	gmem_dmirror_split_thp(ctx, w, vma, start, end);
	while (!time_after(jiffies, timeout)) {
		unsigned long seq = mmu_interval_read_begin(&ctx->notifier);
		bool all = true, retry = false;
		long got;

		/* Tables before the pages are locked and ctx->lock taken. */
		if (gmem_pt_reserve(ctx, start, end)) {
			ret = -ENOMEM;
			break;
		}
		got = make_device_exclusive_range(ctx->mm, start, end, w->pages, ctx);
		if (got < 0) {
			ret = got;
			break;
		}
		for (long i = 0; i < npages; i++)
			all &= i < got && w->pages[i];
		if (all) {
			mutex_lock(&ctx->lock);
			retry = mmu_interval_read_retry(&ctx->notifier, seq);
			if (!retry)
				ret = gmem_pt_map_exclusive(ctx, start, w->pages, npages);
			mutex_unlock(&ctx->lock);
			if (ret > 0 || ret == -EAGAIN)
				gmem_tlb_invalidate(ctx->g, ctx->id, start, end - start);
			if (ret == -EAGAIN) {	/* spare tables gone: reserve again */
				retry = true;
				ret = -EBUSY;
			}
		}
		for (long i = 0; i < got; i++) {
			if (w->pages[i]) {
				unlock_page(w->pages[i]);
				put_page(w->pages[i]);
			}
		}
		if (!all)
			ret = -EBUSY;	/* a page was busy, shared, or not anonymous */
		if (!retry)
			break;
	}
	mmap_read_unlock(ctx->mm);
	return ret < 0 ? ret : 0;
}

/* Take the range exclusively; the device then reads it to cmd->ptr for the caller to check. */
static int gmem_dmirror_exclusive(struct gmem_file *f, struct hmm_dmirror_cmd *cmd, u64 end)
{
	struct gmem_ctx *ctx = f->ctx;
	struct gmem_dmirror_window *w;
	int ret = 0;

	w = gmem_window_get(ctx);
	if (IS_ERR(w))
		return PTR_ERR(w);
	for (u64 va = cmd->addr, next; va < end && !ret; va = next) {
		cond_resched();
		next = gmem_window_end(va, end);
		ret = fatal_signal_pending(current) ? -EINTR :
		      gmem_dmirror_exclusive_window(ctx, w, va, next);
	}
	gmem_window_put(ctx, w);
	if (ret)
		return ret;
	/* Only the destination may fault: faulting the source in would end exclusivity. */
	ret = gmem_dmirror_copy(f, cmd->ptr, cmd->addr, end - cmd->addr, false, &cmd->faults);
	if (!ret)
		cmd->cpages = cmd->npages;
	return ret;
}

static long gmem_dmirror_cmd(struct gmem_file *f, unsigned int op, struct hmm_dmirror_cmd *cmd)
{
	u64 size = cmd->npages << PAGE_SHIFT;
	u64 end = cmd->addr + size;

	if (!PAGE_ALIGNED(cmd->addr) || !cmd->npages ||
	    cmd->npages > (TASK_SIZE_MAX >> PAGE_SHIFT) || end <= cmd->addr)
		return -EINVAL;
	if (end > TASK_SIZE_MAX || end > (1ull << GMEM_VA_BITS))
		return -EFAULT;
	cmd->cpages = 0;
	cmd->faults = 0;

	switch (op) {
	case HMM_DMIRROR_READ:
		cmd->cpages = cmd->npages;
		return gmem_dmirror_copy(f, cmd->ptr, cmd->addr, size, true, &cmd->faults);
	case HMM_DMIRROR_WRITE:
		cmd->cpages = cmd->npages;
		return gmem_dmirror_copy(f, cmd->addr, cmd->ptr, size, true, &cmd->faults);
	case HMM_DMIRROR_MIGRATE_TO_DEV:
		return gmem_dmirror_migrate_to_dev(f, cmd, end);
	case HMM_DMIRROR_MIGRATE_TO_SYS:
		return gmem_dmirror_migrate_to_sys(f, cmd, end);
	case HMM_DMIRROR_SNAPSHOT:
		return gmem_dmirror_snapshot(f, cmd, end);
	case HMM_DMIRROR_EXCLUSIVE:
		return gmem_dmirror_exclusive(f, cmd, end);
	case HMM_DMIRROR_CHECK_EXCLUSIVE:
		return gmem_pt_any_exclusive(f->ctx, cmd->addr, end) ? -EPERM : 0;
	case HMM_DMIRROR_RELEASE:
		gmem_hbm_evict_all(f->g);
		return 0;
	default:
		return -ENOTTY;
	}
}

static long gmem_dmirror_ioctl(struct file *file, unsigned int op, unsigned long arg)
{
	struct gmem_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;
	struct hmm_dmirror_cmd cmd;
	long ret;

	if (copy_from_user(&cmd, uarg, sizeof(cmd)))
		return -EFAULT;
	down_read(&f->g->lock);
	if (!f->g->pdev) {
		ret = -ENODEV;
	} else if (current->mm != f->ctx->mm) {
		ret = -EACCES;	/* a forked child opens its own */
	} else {
		mutex_lock(&f->cmd_lock);
		ret = gmem_dmirror_cmd(f, op, &cmd);
		mutex_unlock(&f->cmd_lock);
	}
	up_read(&f->g->lock);
	if (!ret && copy_to_user(uarg, &cmd, sizeof(cmd)))
		ret = -EFAULT;
	return ret;
}

/* As test_hmm: zeroed pages of the driver's, inserted in the process's mapping. */
static int gmem_dmirror_mmap(struct file *file, struct vm_area_struct *vma)
{
	for (unsigned long addr = vma->vm_start; addr < vma->vm_end; addr += PAGE_SIZE) {
		struct page *page = alloc_page(GFP_KERNEL | __GFP_ZERO);
		int ret;

		if (!page)
			return -ENOMEM;
		ret = vm_insert_page(vma, addr, page);
		put_page(page);		/* the mapping holds it now, or nobody */
		if (ret)
			return ret;
	}
	return 0;
}

static int gmem_dmirror_open(struct inode *inode, struct file *file)
{
	return gmem_file_open(container_of(inode->i_cdev, struct gmem_accel, dmirror_cdev), file);
}

static int gmem_dmirror_release(struct inode *inode, struct file *file)
{
	return gmem_file_release(file);
}

static const struct file_operations gmem_dmirror_fops = {
	.owner = THIS_MODULE,
	.open = gmem_dmirror_open,
	.release = gmem_dmirror_release,
	.mmap = gmem_dmirror_mmap,
	.unlocked_ioctl = gmem_dmirror_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

/* /dev/<dmirror_name>N for /dev/gmem_accelN. Without it the device works all the same. */
void gmem_dmirror_add(struct gmem_accel *g)
{
	dev_t devt = MKDEV(MAJOR(gmem_dmirror_devt), g->info.minor);
	struct device *dev;
	int ret;

	cdev_init(&g->dmirror_cdev, &gmem_dmirror_fops);
	g->dmirror_cdev.owner = THIS_MODULE;
	cdev_set_parent(&g->dmirror_cdev, &g->dev.kobj);
	ret = cdev_add(&g->dmirror_cdev, devt, 1);
	if (ret)
		goto err;
	dev = device_create(&gmem_dmirror_class, &g->dev, devt, g, "%s%u", dmirror_name,
			    g->info.minor);
	if (IS_ERR(dev)) {
		ret = PTR_ERR(dev);
		cdev_del(&g->dmirror_cdev);
		goto err;
	}
	g->dmirror_dev = dev;
	return;
err:
	dev_warn(&g->dev, "no test_hmm interface %s%u (%d): is lib/test_hmm.ko loaded with the same names? Load gmem_accel with another dmirror_name.\n",
		 dmirror_name, g->info.minor, ret);
}

void gmem_dmirror_remove(struct gmem_accel *g)
{
	if (!g->dmirror_dev)
		return;
	device_destroy(&gmem_dmirror_class, g->dmirror_dev->devt);
	cdev_del(&g->dmirror_cdev);
	g->dmirror_dev = NULL;
}

int gmem_dmirror_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&gmem_dmirror_devt, 0, GMEM_ACCEL_MAX_DEVICES, "gmem_dmirror");
	if (ret)
		return ret;
	ret = class_register(&gmem_dmirror_class);
	if (ret)
		unregister_chrdev_region(gmem_dmirror_devt, GMEM_ACCEL_MAX_DEVICES);
	return ret;
}

void gmem_dmirror_exit(void)
{
	class_unregister(&gmem_dmirror_class);
	unregister_chrdev_region(gmem_dmirror_devt, GMEM_ACCEL_MAX_DEVICES);
}
