// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the DRM accel front end's device. A device the frontend parameter gives
 * to DRM is /dev/accel/accelN, a compute accelerator as drivers/accel registers them: each
 * open DRM file is one device context of the core (as an open /dev/gmem_accelN is), bound to
 * the opening process, whose shared virtual memory is drm_gpusvm's (gmem_accel_drm_svm.c).
 * Its ioctls (gmem_accel_drm_uapi.h) take the structures of their /dev/gmem_accelN
 * counterparts and call the same core.
 */
#include <linux/pci.h>
#include <linux/file.h>
#include <linux/slab.h>
#include <linux/sync_file.h>
#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>

#include "gmem_accel.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_drm.h"
#include "gmem_accel_drm_uapi.h"
#include "gmem_accel_queue.h"

struct gmem_drm {
	struct drm_device drm;
	struct gmem_accel *g;
};

struct gmem_accel *gmem_drm_to_g(struct drm_device *drm)
{
	return container_of(drm, struct gmem_drm, drm)->g;
}

/*
 * A new context, bound to the opening process, with drm_gpusvm for its memory: given it
 * under the device's lock, so that an unbind shuts the context down with it (hook_fini) or
 * has done so before and the open fails.
 */
static int gmem_drm_open(struct drm_device *drm, struct drm_file *file)
{
	struct gmem_file *f = gmem_file_new(gmem_drm_to_g(drm));
	int ret;

	if (IS_ERR(f))
		return PTR_ERR(f);
	down_read(&f->g->lock);
	if (!f->g->pdev || READ_ONCE(f->g->unbinding))
		ret = -ENODEV;
	else
		ret = gmem_drm_svm_init(f->ctx, drm);
	up_read(&f->g->lock);
	if (ret) {
		gmem_file_free(f);
		return ret;
	}
	file->driver_priv = f;
	return 0;
}

static void gmem_drm_postclose(struct drm_device *drm, struct drm_file *file)
{
	gmem_file_free(file->driver_priv);
}

/*
 * Every ioctl: the device not being unbound (gmem_accel.lock read), and the caller the
 * process whose address space the context mirrors (a forked child opens its own).
 */
struct gmem_ctx *gmem_drm_enter(struct drm_file *file)
{
	struct gmem_file *f = file->driver_priv;

	down_read(&f->g->lock);
	if (!f->g->pdev || READ_ONCE(f->g->unbinding)) {
		up_read(&f->g->lock);
		return ERR_PTR(-ENODEV);
	}
	if (current->mm != f->ctx->mm) {
		up_read(&f->g->lock);
		return ERR_PTR(-EACCES);
	}
	return f->ctx;
}

void gmem_drm_exit(struct drm_file *file)
{
	up_read(&((struct gmem_file *)file->driver_priv)->g->lock);
}

static int gmem_drm_get_info(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct gmem_accel_info *info = data;

	if (info->flags)
		return -EINVAL;
	*info = gmem_drm_to_g(drm)->info;
	return 0;
}

/*
 * SUBMIT: as GMEM_ACCEL_IOC_SUBMIT. With GMEM_ACCEL_SUBMIT_WAIT the fence is filled in before
 * the wait, and DRM copies it out whatever the wait returns: a wait a signal interrupts
 * (EINTR) is taken up again with WAIT on that fence.
 */
static int gmem_drm_submit(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct gmem_accel_submit *sub = data;
	struct gmem_accel_cmd *cmds;
	struct gmem_ctx *ctx;
	int ret;

	if ((sub->flags & ~(GMEM_ACCEL_SUBMIT_IN_FENCE | GMEM_ACCEL_SUBMIT_WAIT)) || !sub->count)
		return -EINVAL;
	if (sub->count > GMEM_ACCEL_MAX_BATCH)
		return -E2BIG;
	ctx = gmem_drm_enter(file);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	if (sub->flags & GMEM_ACCEL_SUBMIT_IN_FENCE) {
		/* The device cannot wait for a fence: the batch is queued once it signaled. */
		ret = sub->fence > INT_MAX ? -EBADF : gmem_fence_wait_fd(ctx->g, sub->fence);
		if (ret)
			goto out;
	}
	cmds = memdup_array_user(u64_to_user_ptr(sub->cmds), sub->count, sizeof(*cmds));
	if (IS_ERR(cmds)) {
		ret = PTR_ERR(cmds);
		goto out;
	}
	if (sub->flags & GMEM_ACCEL_SUBMIT_WAIT)
		ret = gmem_submit_wait_fence(ctx, cmds, sub->count, &sub->fence);
	else
		ret = gmem_submit(ctx, cmds, sub->count, false, &sub->fence, NULL);
	kfree(cmds);
out:
	gmem_drm_exit(file);
	return ret;
}

static int gmem_drm_wait(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct gmem_accel_wait *w = data;
	struct gmem_ctx *ctx;
	int ret;

	if (w->flags)
		return -EINVAL;
	ctx = gmem_drm_enter(file);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	ret = gmem_wait(ctx, w->fence, w->timeout_ms);
	gmem_drm_exit(file);
	return ret;
}

static int gmem_drm_stats(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct gmem_accel_stats *st = data;
	struct gmem_ctx *ctx;

	if (st->flags)
		return -EINVAL;
	ctx = gmem_drm_enter(file);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	gmem_ctx_get_stats(ctx, data);
	gmem_drm_exit(file);
	return 0;
}

/* An ioctl that is @fn(ctx, data) on the caller's context, between _enter() and _exit(). */
#define GMEM_DRM_CTX_IOCTL(name, fn)						\
static int gmem_drm_##name(struct drm_device *drm, void *data, struct drm_file *file)	\
{										\
	struct gmem_ctx *ctx = gmem_drm_enter(file);				\
	int ret;								\
										\
	if (IS_ERR(ctx))							\
		return PTR_ERR(ctx);						\
	ret = fn(ctx, data);							\
	gmem_drm_exit(file);							\
	return ret;								\
}

GMEM_DRM_CTX_IOCTL(snapshot, gmem_drm_mem_snapshot)
GMEM_DRM_CTX_IOCTL(advise, gmem_drm_mem_advise)
GMEM_DRM_CTX_IOCTL(madvise, gmem_drm_mem_madvise)
GMEM_DRM_CTX_IOCTL(query_mem_attrs, gmem_drm_mem_query)

/* FENCE_EXPORT: as GMEM_ACCEL_IOC_FENCE_EXPORT; the fd is the process's once installed. */
static int gmem_drm_fence_export(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct gmem_accel_fence_export *e = data;
	struct sync_file *sync;
	struct gmem_ctx *ctx;
	int fd;

	if ((e->flags & ~O_CLOEXEC) || e->pad)
		return -EINVAL;
	ctx = gmem_drm_enter(file);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	sync = gmem_fence_sync_file(ctx, e->fence);
	gmem_drm_exit(file);
	if (IS_ERR(sync))
		return PTR_ERR(sync);
	fd = get_unused_fd_flags(e->flags);
	if (fd < 0) {
		fput(sync->file);
		return fd;
	}
	fd_install(fd, sync->file);
	e->fd = fd;
	return 0;
}

/* PREFETCH: as GMEM_ACCEL_IOC_MIGRATE, through drm_gpusvm (TO_SYSTEM: as PREFER_SYSTEM). */
static int gmem_drm_prefetch(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct gmem_accel_migrate *m = data;
	struct gmem_ctx *ctx;
	int ret = 0;

	if (m->flags || m->target > GMEM_ACCEL_TO_SYSTEM || m->pages)
		return -EINVAL;
	if (!m->size || !PAGE_ALIGNED(m->addr) || !PAGE_ALIGNED(m->size) ||
	    m->addr + m->size < m->addr)
		return -EINVAL;
	if (m->addr + m->size > TASK_SIZE_MAX)
		return -EFAULT;
	ctx = gmem_drm_enter(file);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	if (m->target == GMEM_ACCEL_TO_DEVICE)
		ret = gmem_drm_svm_prefetch(ctx, m->addr, m->addr + m->size);
	else
		gmem_drm_svm_evict(ctx, m->addr, m->addr + m->size);
	gmem_drm_exit(file);
	return ret;
}

static const struct drm_ioctl_desc gmem_drm_ioctls[] = {
	DRM_IOCTL_DEF_DRV(GMEM_ACCEL_GET_INFO, gmem_drm_get_info, 0),
	DRM_IOCTL_DEF_DRV(GMEM_ACCEL_SUBMIT, gmem_drm_submit, 0),
	DRM_IOCTL_DEF_DRV(GMEM_ACCEL_WAIT, gmem_drm_wait, 0),
	DRM_IOCTL_DEF_DRV(GMEM_ACCEL_STATS, gmem_drm_stats, 0),
	DRM_IOCTL_DEF_DRV(GMEM_ACCEL_SNAPSHOT, gmem_drm_snapshot, 0),
	DRM_IOCTL_DEF_DRV(GMEM_ACCEL_ADVISE, gmem_drm_advise, 0),
	DRM_IOCTL_DEF_DRV(GMEM_ACCEL_MADVISE, gmem_drm_madvise, 0),
	DRM_IOCTL_DEF_DRV(GMEM_ACCEL_QUERY_MEM_ATTRS, gmem_drm_query_mem_attrs, 0),
	DRM_IOCTL_DEF_DRV(GMEM_ACCEL_GEM_CREATE, gmem_drm_gem_create, 0),
	DRM_IOCTL_DEF_DRV(GMEM_ACCEL_GEM_MMAP_OFFSET, gmem_drm_gem_mmap_offset, 0),
	DRM_IOCTL_DEF_DRV(GMEM_ACCEL_GEM_QUERY, gmem_drm_gem_query, 0),
	DRM_IOCTL_DEF_DRV(GMEM_ACCEL_FENCE_EXPORT, gmem_drm_fence_export, 0),
	DRM_IOCTL_DEF_DRV(GMEM_ACCEL_PREFETCH, gmem_drm_prefetch, 0),
};

/*
 * Of DRM's core ioctls, those that make sense on a node with GEM objects but neither
 * syncobjs, flink names nor a master: DRM runs every one on an accel file, and some assume
 * what this driver has not (GET_UNIQUE and GET_MAGIC the file's master, a NULL pointer).
 * GEM_CLOSE frees a handle, PRIME shares an object as a dma-buf. The driver's own ioctls all
 * pass.
 */
static bool gmem_drm_ioctl_allowed(unsigned int cmd)
{
	unsigned int nr = DRM_IOCTL_NR(cmd);

	if (nr >= DRM_COMMAND_BASE && nr < DRM_COMMAND_END)
		return true;
	return nr == DRM_IOCTL_NR(DRM_IOCTL_VERSION) || nr == DRM_IOCTL_NR(DRM_IOCTL_GET_CAP) ||
	       nr == DRM_IOCTL_NR(DRM_IOCTL_SET_CLIENT_CAP) ||
	       nr == DRM_IOCTL_NR(DRM_IOCTL_SET_CLIENT_NAME) ||
	       nr == DRM_IOCTL_NR(DRM_IOCTL_GEM_CLOSE) ||
	       nr == DRM_IOCTL_NR(DRM_IOCTL_PRIME_HANDLE_TO_FD) ||
	       nr == DRM_IOCTL_NR(DRM_IOCTL_PRIME_FD_TO_HANDLE);
}

static long gmem_drm_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	if (_IOC_TYPE(cmd) == DRM_IOCTL_BASE && !gmem_drm_ioctl_allowed(cmd))
		return -EACCES;
	return drm_ioctl(filp, cmd, arg);
}

#ifdef CONFIG_COMPAT
static long gmem_drm_compat_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	if (_IOC_TYPE(cmd) == DRM_IOCTL_BASE && !gmem_drm_ioctl_allowed(cmd))
		return -EACCES;
	return drm_compat_ioctl(filp, cmd, arg);
}
#else
#define gmem_drm_compat_ioctl NULL
#endif

/*
 * DRM_ACCEL_FOPS but for open and mmap: objects are mapped by the core, at its offsets, in
 * the device's object address_space (gmem_accel_drm_gem.c), not by drm_gem_mmap().
 */
static const struct file_operations gmem_drm_fops = {
	.owner = THIS_MODULE,
	.open = gmem_drm_gem_open,
	.mmap = gmem_drm_gem_mmap,
	.get_unmapped_area = gmem_drm_gem_get_unmapped_area,
	.release = drm_release,
	.unlocked_ioctl = gmem_drm_ioctl,
	.compat_ioctl = gmem_drm_compat_ioctl,
	.poll = drm_poll,
	.read = drm_read,
	.llseek = noop_llseek,
	.fop_flags = FOP_UNSIGNED_OFFSET,
};

static const struct drm_driver gmem_drm_driver = {
	.driver_features = DRIVER_COMPUTE_ACCEL | DRIVER_GEM,
	.open = gmem_drm_open,
	.postclose = gmem_drm_postclose,
	.gem_prime_import = gmem_drm_gem_import,
	.ioctls = gmem_drm_ioctls,
	.num_ioctls = ARRAY_SIZE(gmem_drm_ioctls),
	.fops = &gmem_drm_fops,
	.name = "gmem-accel",
	.desc = "gmem-accel heterogeneous-memory accelerator",
	.major = 1,
};

/* Register @g's accel device; the PCI device's devres frees it after unbind. */
int gmem_drm_add(struct gmem_accel *g)
{
	struct gmem_drm *d;
	int ret;

	d = devm_drm_dev_alloc(&g->pdev->dev, &gmem_drm_driver, struct gmem_drm, drm);
	if (IS_ERR(d))
		return PTR_ERR(d);
	d->g = g;
	ret = drm_dev_register(&d->drm, 0);
	if (ret)
		return ret;
	g->drm = &d->drm;
	/* (without device memory the front end still works, in system memory) */
	ret = gmem_dpm_dev_init(g);
	if (ret)
		pci_warn(g->pdev, "no drm_pagemap cache, HBM unused: %d\n", ret);
	return 0;
}

/* Unbind: no new file opens; open ones fail their calls (-ENODEV) until they close. */
void gmem_drm_unplug(struct gmem_accel *g)
{
	if (!g->drm)
		return;
	gmem_dpm_unplug(g);
	drm_dev_unplug(g->drm);
}
