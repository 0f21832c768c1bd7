// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: /dev/gmem_accelN. Each open file is a device context bound to the
 * opening process's address space; docs/uapi.md documents the ioctls.
 */
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "gmem_accel.h"
#include "gmem_accel_queue.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_pt.h"
#include "gmem_accel_migrate.h"
#include "gmem_accel_obj.h"
#include "gmem_accel_advice.h"

/* A new context of @g bound to the calling process, in a gmem_file of its own. */
struct gmem_file *gmem_file_new(struct gmem_accel *g)
{
	struct gmem_file *f;
	int ret = 0;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return ERR_PTR(-ENOMEM);
	down_read(&g->lock);
	if (!g->pdev || READ_ONCE(g->unbinding)) {
		ret = -ENODEV;
	} else {
		f->ctx = gmem_ctx_create(g);
		if (IS_ERR(f->ctx))
			ret = PTR_ERR(f->ctx);
	}
	up_read(&g->lock);
	if (ret) {
		kfree(f);
		return ERR_PTR(ret);
	}
	get_device(&g->dev);
	f->g = g;
	gmem_obj_file_init(f);
	return f;
}

/* Its context drained, taken off the device and freed; then @f. */
void gmem_file_free(struct gmem_file *f)
{
	struct gmem_accel *g = f->g;

	down_read(&g->lock);
	if (g->pdev) {	/* else unbind took the context off the device already */
		gmem_hbm_release_ctx(f->ctx);
		/* Commands that outlive the drain are dropped with their queue. */
		if (gmem_ctx_drain(f->ctx))
			gmem_queue_stop(f->ctx);
		gmem_ctx_shutdown(f->ctx);
	}
	up_read(&g->lock);
	gmem_ctx_destroy(f->ctx);
	gmem_obj_file_fini(f);
	kfree(f);
	put_device(&g->dev);
}

/* Bind a new context of @g to the opening process; the file's private_data is a gmem_file. */
int gmem_file_open(struct gmem_accel *g, struct file *file)
{
	struct gmem_file *f = gmem_file_new(g);

	if (IS_ERR(f))
		return PTR_ERR(f);
	file->private_data = f;
	return 0;
}

int gmem_file_release(struct file *file)
{
	gmem_file_free(file->private_data);
	return 0;
}

static int gmem_accel_open(struct inode *inode, struct file *file)
{
	struct gmem_accel *g = container_of(inode->i_cdev, struct gmem_accel, cdev);
	int ret = gmem_file_open(g, file);

	/* Objects' CPU mappings all go in the device's own address_space (eviction). */
	if (!ret)
		file->f_mapping = g->obj_inode->i_mapping;
	return ret;
}

static int gmem_accel_release_file(struct inode *inode, struct file *file)
{
	return gmem_file_release(file);
}

static long gmem_accel_get_info(struct gmem_accel *g, void __user *uarg)
{
	struct gmem_accel_info info;

	if (copy_from_user(&info, uarg, sizeof(info)))
		return -EFAULT;
	if (info.flags)
		return -EINVAL;
	info = g->info;
	if (copy_to_user(uarg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static long gmem_accel_submit(struct gmem_ctx *ctx, void __user *uarg)
{
	struct gmem_accel_submit sub;
	struct gmem_accel_cmd *cmds;
	long ret;

	if (copy_from_user(&sub, uarg, sizeof(sub)))
		return -EFAULT;
	if ((sub.flags & ~(GMEM_ACCEL_SUBMIT_IN_FENCE | GMEM_ACCEL_SUBMIT_WAIT)) || !sub.count)
		return -EINVAL;
	if (sub.count > GMEM_ACCEL_MAX_BATCH)
		return -E2BIG;
	if (sub.flags & GMEM_ACCEL_SUBMIT_IN_FENCE) {
		/* The device cannot wait for a fence: the batch is queued once it signaled. */
		ret = sub.fence > INT_MAX ? -EBADF : gmem_fence_wait_fd(ctx->g, sub.fence);
		if (ret)
			return ret;
	}
	cmds = memdup_array_user(u64_to_user_ptr(sub.cmds), sub.count, sizeof(*cmds));
	if (IS_ERR(cmds))
		return PTR_ERR(cmds);
	if (sub.flags & GMEM_ACCEL_SUBMIT_WAIT) {
		ret = gmem_submit_wait_user(ctx, cmds, sub.count,
					    &((struct gmem_accel_submit __user *)uarg)->fence);
		kfree(cmds);
		return ret;
	}
	ret = gmem_submit(ctx, cmds, sub.count, false, &sub.fence, NULL);
	kfree(cmds);
	if (!ret && put_user(sub.fence, &((struct gmem_accel_submit __user *)uarg)->fence))
		ret = -EFAULT;
	return ret;
}

static long gmem_accel_wait(struct gmem_ctx *ctx, void __user *uarg)
{
	struct gmem_accel_wait w;

	if (copy_from_user(&w, uarg, sizeof(w)))
		return -EFAULT;
	if (w.flags)
		return -EINVAL;
	return gmem_wait(ctx, w.fence, w.timeout_ms);
}

static long gmem_accel_snapshot(struct gmem_ctx *ctx, void __user *uarg)
{
	struct gmem_accel_snapshot snap;
	long ret = 0;
	u8 *out;

	if (copy_from_user(&snap, uarg, sizeof(snap)))
		return -EFAULT;
	if (snap.flags || snap.pad || !snap.npages || !PAGE_ALIGNED(snap.addr))
		return -EINVAL;
	if (snap.npages > GMEM_ACCEL_MAX_SNAPSHOT)
		return -E2BIG;
	if (snap.addr + (snap.npages << PAGE_SHIFT) < snap.addr ||
	    snap.addr + (snap.npages << PAGE_SHIFT) > (1ull << GMEM_VA_BITS))
		return -EINVAL;
	out = kvmalloc(snap.npages, GFP_KERNEL);
	if (!out)
		return -ENOMEM;
	gmem_pt_snapshot(ctx, snap.addr, out, snap.npages);
	if (copy_to_user(u64_to_user_ptr(snap.out), out, snap.npages))
		ret = -EFAULT;
	kvfree(out);
	return ret;
}

static long gmem_accel_stats(struct gmem_ctx *ctx, void __user *uarg)
{
	struct gmem_accel_stats st;

	if (copy_from_user(&st, uarg, sizeof(st)))
		return -EFAULT;
	if (st.flags)
		return -EINVAL;
	gmem_ctx_get_stats(ctx, &st);
	if (copy_to_user(uarg, &st, sizeof(st)))
		return -EFAULT;
	return 0;
}

/* A MIGRATE or ADVISE range: -EINVAL if empty, unaligned or wrapping, -EFAULT if not user. */
static int gmem_check_page_range(u64 addr, u64 size)
{
	if (!size || !PAGE_ALIGNED(addr) || !PAGE_ALIGNED(size) || addr + size < addr)
		return -EINVAL;
	return addr + size > TASK_SIZE_MAX ? -EFAULT : 0;
}

static long gmem_accel_migrate(struct gmem_ctx *ctx, void __user *uarg)
{
	struct gmem_accel_migrate mig;
	long ret;

	if (copy_from_user(&mig, uarg, sizeof(mig)))
		return -EFAULT;
	if (mig.flags || mig.target > GMEM_ACCEL_TO_SYSTEM)
		return -EINVAL;
	ret = gmem_check_page_range(mig.addr, mig.size);
	if (ret)
		return ret;
	ret = gmem_migrate(ctx, mig.addr, mig.addr + mig.size,
			   mig.target == GMEM_ACCEL_TO_DEVICE ?
			   GMEM_MIGRATE_TO_DEVICE | GMEM_MIGRATE_PEERS : 0, &mig.pages);
	if (put_user(mig.pages, &((struct gmem_accel_migrate __user *)uarg)->pages))
		ret = ret ?: -EFAULT;
	return ret;
}

static long gmem_accel_advise(struct gmem_ctx *ctx, void __user *uarg)
{
	struct gmem_accel_advise adv;
	int ret;

	if (copy_from_user(&adv, uarg, sizeof(adv)))
		return -EFAULT;
	ret = gmem_check_page_range(adv.addr, adv.size);
	return ret ?: gmem_advise(ctx, &adv);
}

static long gmem_accel_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct gmem_file *f = file->private_data;
	struct gmem_accel *g = f->g;
	void __user *uarg = (void __user *)arg;
	long ret;

	down_read(&g->lock);
	if (!g->pdev || READ_ONCE(g->unbinding)) {
		ret = -ENODEV;	/* unbound (or being unbound) while open */
		goto out;
	}
	/* The context mirrors the opener's address space; a forked child opens its own. */
	if (cmd != GMEM_ACCEL_IOC_GET_INFO && current->mm != f->ctx->mm) {
		ret = -EACCES;
		goto out;
	}
	switch (cmd) {
	case GMEM_ACCEL_IOC_GET_INFO:
		ret = gmem_accel_get_info(g, uarg);
		break;
	case GMEM_ACCEL_IOC_SUBMIT:
		ret = gmem_accel_submit(f->ctx, uarg);
		break;
	case GMEM_ACCEL_IOC_WAIT:
		ret = gmem_accel_wait(f->ctx, uarg);
		break;
	case GMEM_ACCEL_IOC_SNAPSHOT:
		ret = gmem_accel_snapshot(f->ctx, uarg);
		break;
	case GMEM_ACCEL_IOC_STATS:
		ret = gmem_accel_stats(f->ctx, uarg);
		break;
	case GMEM_ACCEL_IOC_MIGRATE:
		ret = gmem_accel_migrate(f->ctx, uarg);
		break;
	case GMEM_ACCEL_IOC_ADVISE:
		ret = gmem_accel_advise(f->ctx, uarg);
		break;
	case GMEM_ACCEL_IOC_FENCE_EXPORT:
		ret = gmem_fence_export(f->ctx, uarg);
		break;
	case GMEM_ACCEL_IOC_OBJ_ALLOC:
	case GMEM_ACCEL_IOC_OBJ_FREE:
	case GMEM_ACCEL_IOC_OBJ_QUERY:
	case GMEM_ACCEL_IOC_OBJ_EXPORT:
	case GMEM_ACCEL_IOC_OBJ_IMPORT:
		ret = gmem_obj_ioctl(f, cmd, uarg);
		break;
	default:
		ret = -ENOTTY;
		break;
	}
out:
	up_read(&g->lock);
	return ret;
}

const struct file_operations gmem_accel_fops = {
	.owner = THIS_MODULE,
	.open = gmem_accel_open,
	.release = gmem_accel_release_file,
	.unlocked_ioctl = gmem_accel_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = gmem_obj_mmap,
	.get_unmapped_area = gmem_obj_get_unmapped_area,
};
