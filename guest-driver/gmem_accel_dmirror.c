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
#include "gmem_accel_queue.h"
#include "gmem_accel_pt.h"
#include "gmem_accel_migrate.h"
#include "gmem_accel_fault.h"
#include "gmem_accel_dmirror.h"

static char *dmirror_name = "gmem_dmirror";
module_param(dmirror_name, charp, 0444);
MODULE_PARM_DESC(dmirror_name,
		 "base name of the test_hmm-compatible nodes (default gmem_dmirror; hmm_dmirror gives lib/test_hmm.ko's names, which clash if that module is loaded too)");

#define GMEM_DMIRROR_TIMEOUT_MS	60000

static dev_t gmem_dmirror_devt;
static const struct class gmem_dmirror_class = {
	.name = "gmem_dmirror",
};

/* An operand range of the running command (see gmem_dmirror_state). */
struct gmem_dmirror_range {
	u64 start, end;
	bool write;
};

/*
 * A test_hmm-interface file's state, the context's hook_data. While a command runs, @ahead
 * holds its operand ranges: a device fault inside one faults all of them in, as test_hmm's
 * dmirror_fault() does (gmem_dmirror_fault_hook()).
 */
struct gmem_dmirror_state {
	struct mutex cmd_lock;		/* one command at a time: @ahead is the running one's */
	struct gmem_dmirror_range ahead[2];
	unsigned int nahead;
};

static struct gmem_dmirror_state *gmem_dmirror_of(struct gmem_ctx *ctx)
{
	return ctx->hook_data;
}

static bool gmem_ahead_of(struct gmem_dmirror_state *st, u64 va)
{
	for (unsigned int r = 0; r < READ_ONCE(st->nahead); r++)
		if (va >= st->ahead[r].start && va < st->ahead[r].end)
			return true;
	return false;
}

/*
 * Fault in the whole of @r, a window at a time: every page requested. A window the device
 * maps already (e.g. the other buffer of a copy, in use before) is left as it is.
 */
static int gmem_fault_ahead(struct gmem_ctx *ctx, const struct gmem_dmirror_range *r,
			    unsigned long *req, unsigned long *pfns)
{
	unsigned long want = HMM_PFN_REQ_FAULT | (r->write ? HMM_PFN_REQ_WRITE : 0);
	int ret = 0;

	for (u64 va = r->start, start, end, first, last; va < r->end && !ret; va = end) {
		cond_resched();
		/* Ranges reach 256 GiB: stop once only this reference keeps the process's mm. */
		if (atomic_read(&ctx->mm->mm_users) <= 1)
			return -EFAULT;
		if (gmem_owner_dying(ctx))
			return -EINTR;
		/* (mapped already, as a copy's other buffer often is: no VMA to look up) */
		end = min(r->end, ALIGN(va + 1, GMEM_HUGE_SIZE));
		if (gmem_pt_maps_all(ctx, va, end, r->write ? GMEM_PTE_WRITE : 0))
			continue;
		ret = gmem_fault_window(ctx, va, &start, &end);
		if (ret)
			break;
		/* Every page the range touches, the partial first one too. */
		first = (va - start) >> PAGE_SHIFT;
		last = (min(r->end, end) - start + PAGE_SIZE - 1) >> PAGE_SHIFT;
		for (unsigned long p = first; p < last; p++)
			req[p] = want;
		ret = gmem_fault_range(ctx, start, end, first, last, req, pfns);
	}
	return ret;
}

/* The context's fault hook: a fault inside the running command's ranges brings all in. */
static int gmem_dmirror_fault_hook(struct gmem_ctx *ctx, const struct gmem_fault *f,
				   unsigned int n, unsigned long *req, unsigned long *pfns)
{
	struct gmem_dmirror_state *st = gmem_dmirror_of(ctx);
	bool hit = false;
	int ret = 0;

	for (unsigned int k = 0; k < n && !hit; k++)
		hit = gmem_ahead_of(st, f[k].va);
	if (!hit)
		return 0;
	for (unsigned int r = 0; r < READ_ONCE(st->nahead) && !ret; r++)
		ret = gmem_fault_ahead(ctx, &st->ahead[r], req, pfns);
	return ret ?: 1;
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
	struct gmem_dmirror_state *st = gmem_dmirror_of(ctx);
	struct gmem_accel_cmd one = {}, *cmds = &one;
	int ret;

	if (n > GMEM_ACCEL_MAX_BATCH)
		return -E2BIG;
	/* Most are one descriptor: a page's access allocates nothing. */
	if (n > 1)
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
	st->ahead[0] = (struct gmem_dmirror_range){ dst, dst + size, true };
	st->ahead[1] = (struct gmem_dmirror_range){ src, src + size, false };
	/* The device's first fault comes after the doorbell, which orders these stores. */
	WRITE_ONCE(st->nahead, ahead_src ? 2 : 1);
	before = atomic64_read(&ctx->stats[GMEM_CTX_FAULT_GROUPS]);
	ret = gmem_submit_wait(ctx, cmds, n, GMEM_DMIRROR_TIMEOUT_MS);
	if (cmds != &one)
		kfree(cmds);
	WRITE_ONCE(st->nahead, 0);
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
	/* test_hmm's semantics: a page in another device's HBM stays there (-ENOENT below). */
	ret = gmem_migrate(ctx, cmd->addr, end, GMEM_MIGRATE_TO_DEVICE, &moved);
	if (ret)
		return ret == -EFAULT ? -EINVAL : ret;	/* unmapped meanwhile */
	/*
	 * Every page moved here just now, or the device's page table tells where each is (a
	 * walk of the range: 11 % of the command's time for 64 MiB on 7.3).
	 */
	if (moved != cmd->npages) {
		ret = gmem_dmirror_mirror(ctx, cmd->addr, end, NULL, &local);
		if (ret)
			return ret;
		if (local != cmd->npages)
			return -ENOENT;
	}
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
	ret = gmem_migrate(f->ctx, cmd->addr, end, 0, &cmd->cpages);
	return ret == -EFAULT ? -EINVAL : ret;
}

/* Take the range exclusively; the device then reads it to cmd->ptr for the caller to check. */
static int gmem_dmirror_exclusive(struct gmem_file *f, struct hmm_dmirror_cmd *cmd, u64 end)
{
	int ret;

	ret = gmem_dmirror_take_exclusive(f->ctx, cmd->addr, end);
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
		return gmem_pt_any_marked(f->ctx, cmd->addr, end, GMEM_PTE_SW_EXCLUSIVE) ?
		       -EPERM : 0;
	case HMM_DMIRROR_RELEASE:
		gmem_hbm_evict_all(f->g);
		return 0;
#ifdef HMM_DMIRROR_FLAGS	/* the uAPI of 7.3's lib/test_hmm_uapi.h */
	case HMM_DMIRROR_FLAGS:
		if (cmd->npages & ~HMM_DMIRROR_FLAG_FAIL_ALLOC)
			return -EINVAL;
		/* FAIL_ALLOC: the next 2 MiB folio fails, the THP moves as pages */
		WRITE_ONCE(f->ctx->fail_next_huge, cmd->npages & HMM_DMIRROR_FLAG_FAIL_ALLOC);
		return 0;
	case HMM_DMIRROR_READ_UNLOCKED:
		/* Device faults never hold the mmap lock where a fault may drop it on 7.3. */
		cmd->cpages = cmd->npages;
		return gmem_dmirror_copy(f, cmd->ptr, cmd->addr, size, true, &cmd->faults);
#endif
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
		struct gmem_dmirror_state *st = gmem_dmirror_of(f->ctx);

		mutex_lock(&st->cmd_lock);
		ret = gmem_dmirror_cmd(f, op, &cmd);
		mutex_unlock(&st->cmd_lock);
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
	struct gmem_dmirror_state *st = kzalloc(sizeof(*st), GFP_KERNEL);
	struct gmem_file *f;
	int ret;

	if (!st)
		return -ENOMEM;
	mutex_init(&st->cmd_lock);
	ret = gmem_file_open(container_of(inode->i_cdev, struct gmem_accel, dmirror_cdev), file);
	if (ret) {
		kfree(st);
		return ret;
	}
	/* No command ran yet, so no fault of the context can reach the hook before this. */
	f = file->private_data;
	f->ctx->hook_data = st;
	f->ctx->fault_hook = gmem_dmirror_fault_hook;
	return 0;
}

static int gmem_dmirror_release(struct inode *inode, struct file *file)
{
	struct gmem_file *f = file->private_data;
	struct gmem_dmirror_state *st = gmem_dmirror_of(f->ctx);
	int ret;

	/* The context is shut down (no fault server left) before its file is freed. */
	ret = gmem_file_release(file);
	mutex_destroy(&st->cmd_lock);
	kfree(st);
	return ret;
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
