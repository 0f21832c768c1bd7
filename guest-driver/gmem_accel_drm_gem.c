// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: GEM objects of the DRM accel front end. Each is a thin GEM wrapper
 * around one of the core's device memory objects (gmem_accel_obj.c): the core allocates it
 * (in system memory, or in HBM taken from the device's drm_pagemap, whose HBM it is: never
 * evicted, while drm_pagemap evicts its ranges to make room), maps it for the CPU (gmem_accel_obj_map.c) and for the device, and
 * shares it as a dma-buf (gmem_accel_dmabuf.c); DRM's GEM handles and PRIME name it. As on
 * /dev/gmem_accelN, an object's mmap offset is the core's (its id), its CPU mappings live in
 * the device's object address_space (the file's f_mapping), so eviction and unbind find them,
 * and a device fault in a mapping of it maps its pages: its CPU address is its device address.
 * The SVM's attributes hold there too: a device atomic is refused or allowed as MADVISE says,
 * and PREFETCH passes such a mapping by (its pages never move).
 */
#include <linux/dma-buf.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_prime.h>

#include "gmem_accel.h"
#include "gmem_accel_drm.h"
#include "gmem_accel_drm_uapi.h"
#include "gmem_accel_obj.h"
#include "gmem_accel_pt.h"

struct gmem_drm_bo {
	struct drm_gem_object base;
	struct gmem_obj *obj;		/* referenced */
};

static struct gmem_obj *to_obj(struct drm_gem_object *gem)
{
	return container_of(gem, struct gmem_drm_bo, base)->obj;
}

static void gmem_drm_bo_free(struct drm_gem_object *gem)
{
	struct gmem_drm_bo *bo = container_of(gem, struct gmem_drm_bo, base);

	drm_gem_object_release(gem);
	gmem_obj_put(bo->obj);
	kfree(bo);
}

/* PRIME export: the core's dma-buf, which /dev/gmem_accelN files import too. */
static struct dma_buf *gmem_drm_bo_export(struct drm_gem_object *gem, int flags)
{
	return gmem_obj_dmabuf(to_obj(gem));
}

static const struct drm_gem_object_funcs gmem_drm_bo_funcs = {
	.free = gmem_drm_bo_free,
	.export = gmem_drm_bo_export,
};

/* A GEM object for @obj, whose reference it takes over (dropped on failure). */
static struct drm_gem_object *gmem_drm_bo_new(struct drm_device *drm, struct gmem_obj *obj)
{
	struct gmem_drm_bo *bo = kzalloc(sizeof(*bo), GFP_KERNEL);

	if (!bo) {
		gmem_obj_put(obj);
		return ERR_PTR(-ENOMEM);
	}
	bo->obj = obj;
	bo->base.funcs = &gmem_drm_bo_funcs;
	drm_gem_private_object_init(drm, &bo->base, obj->size);
	return &bo->base;
}

/* PRIME import: a gmem-accel object (of this device, or another's reached peer to peer). */
struct drm_gem_object *gmem_drm_gem_import(struct drm_device *drm, struct dma_buf *dmabuf)
{
	struct gmem_obj *obj = gmem_obj_from_dmabuf(dmabuf, gmem_drm_to_g(drm));

	if (IS_ERR(obj))
		return ERR_CAST(obj);
	return gmem_drm_bo_new(drm, obj);
}

int gmem_drm_gem_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct gmem_accel_obj_alloc *a = data;
	struct drm_gem_object *gem;
	struct gmem_ctx *ctx;
	struct gmem_obj *obj;
	u32 handle;
	int ret;

	if (a->handle || a->mmap_offset)
		return -EINVAL;		/* out fields: zero in */
	/* Managed objects' pages would move as drm_gpusvm moves malloc'd memory here. */
	if (a->flags == GMEM_ACCEL_OBJ_MANAGED)
		return -EOPNOTSUPP;
	ctx = gmem_drm_enter(file);	/* (the device's HBM stays while it is bound) */
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	/* No placement: HBM (evicting ranges as for HBM), else system memory. */
	if (!(a->flags & (GMEM_ACCEL_OBJ_HBM | GMEM_ACCEL_OBJ_SYSTEM | GMEM_ACCEL_OBJ_MANAGED))) {
		obj = gmem_obj_create(ctx->g, a->size, a->flags | GMEM_ACCEL_OBJ_HBM);
		if (obj == ERR_PTR(-ENOSPC) || obj == ERR_PTR(-ENODEV))
			obj = gmem_obj_create(ctx->g, a->size, a->flags);
	} else {
		obj = gmem_obj_create(ctx->g, a->size, a->flags);
	}
	gmem_drm_exit(file);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	a->mmap_offset = gmem_obj_mmap_offset(obj);
	gem = gmem_drm_bo_new(drm, obj);
	if (IS_ERR(gem))
		return PTR_ERR(gem);
	ret = drm_gem_handle_create(file, gem, &handle);
	drm_gem_object_put(gem);	/* the handle holds it now, or nothing does */
	if (ret)
		return ret;
	a->handle = handle;
	return 0;
}

int gmem_drm_gem_mmap_offset(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_gmem_accel_gem_mmap_offset *mo = data;
	struct drm_gem_object *gem;

	if (mo->flags || mo->offset)
		return -EINVAL;
	gem = drm_gem_object_lookup(file, mo->handle);
	if (!gem)
		return -ENOENT;
	mo->offset = gmem_obj_mmap_offset(to_obj(gem));
	drm_gem_object_put(gem);
	return 0;
}

int gmem_drm_gem_query(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct gmem_accel_obj_query *q = data;
	struct drm_gem_object *gem;

	gem = drm_gem_object_lookup(file, q->handle);
	if (!gem)
		return -ENOENT;
	gmem_obj_describe(to_obj(gem), q);
	drm_gem_object_put(gem);
	return 0;
}

/* The core object with id @id if @file holds a GEM handle to it, referenced; else NULL. */
static struct gmem_obj *gmem_drm_gem_lookup_id(struct drm_file *file, unsigned long id)
{
	struct gmem_obj *found = NULL;
	struct drm_gem_object *gem;
	int h;

	spin_lock(&file->table_lock);
	idr_for_each_entry(&file->object_idr, gem, h) {
		/* (a handle being created is reserved with NULL) */
		if (gem && to_obj(gem)->id == id) {
			found = to_obj(gem);
			kref_get(&found->ref);
			break;
		}
	}
	spin_unlock(&file->table_lock);
	return found;
}

/* mmap() of an object, at the offset GEM_CREATE or GEM_MMAP_OFFSET gave: the core's mapping. */
int gmem_drm_gem_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct drm_file *file = filp->private_data;
	struct gmem_obj *obj;

	if (drm_dev_is_unplugged(file->minor->dev))
		return -ENODEV;
	obj = gmem_drm_gem_lookup_id(file, vma->vm_pgoff >> GMEM_OBJ_PGOFF_SHIFT);
	if (!obj)
		return -EINVAL;		/* no object of this file's at this offset */
	return gmem_obj_mmap_obj(obj, vma);
}

unsigned long gmem_drm_gem_get_unmapped_area(struct file *filp, unsigned long addr,
					     unsigned long len, unsigned long pgoff,
					     unsigned long flags)
{
	struct gmem_obj *obj = gmem_drm_gem_lookup_id(filp->private_data,
						      pgoff >> GMEM_OBJ_PGOFF_SHIFT);
	unsigned long align = PAGE_SIZE;

	if (obj) {
		align = obj->page_size;
		gmem_obj_put(obj);
	}
	return gmem_obj_place(filp, addr, len, pgoff, flags, align);
}

/*
 * accel_open(), then the file's mappings go to the device's object address_space, where the
 * core's eviction and unbind unmap an object from every process at once.
 */
int gmem_drm_gem_open(struct inode *inode, struct file *filp)
{
	struct drm_file *file;
	int ret = accel_open(inode, filp);

	if (ret)
		return ret;
	file = filp->private_data;
	filp->f_mapping = gmem_drm_to_g(file->minor->dev)->obj_inode->i_mapping;
	return 0;
}

/* May a GEM object's writable leaf [va, va + *size) do atomics (else 4 KiB leaves)? */
bool gmem_drm_hook_atomic(struct gmem_ctx *ctx, u64 va, u64 *size, bool hbm)
{
	struct gmem_drm_mem *mem = gmem_drm_svm_mem(ctx);

	if (*size > PAGE_SIZE && !gmem_drm_mem_atomic_uniform(mem, va, *size))
		*size = PAGE_SIZE;
	return gmem_drm_mem_atomic_ok(mem, va, hbm);
}

/*
 * A device atomic at @va in a GEM object's mapping, which gmem_obj_fault() mapped as the
 * atomic access gives it (gmem_drm_hook_atomic()): it fails as on any memory where that
 * refuses it, EPERM (CPU) or ENOSPC (GLOBAL: an object in system memory never moves).
 */
int gmem_drm_obj_atomic(struct gmem_ctx *ctx, u64 va, u64 perm)
{
	switch (gmem_drm_mem_atomic(gmem_drm_svm_mem(ctx), va)) {
	case GMEM_ACCEL_DRM_ATOMIC_CPU:
		return -EPERM;
	case GMEM_ACCEL_DRM_ATOMIC_GLOBAL:
		return gmem_pt_maps_all(ctx, va, va + PAGE_SIZE, perm) ? 0 : -ENOSPC;
	default:
		return 0;
	}
}

/* The end of the GEM object mapping at @va of @mm, or 0 if @va is in none. */
u64 gmem_drm_obj_vma_end(struct mm_struct *mm, u64 va)
{
	struct vm_area_struct *vma;
	u64 end = 0;

	mmap_read_lock(mm);
	vma = vma_lookup(mm, va);
	if (vma && gmem_obj_vma(vma))
		end = vma->vm_end;
	mmap_read_unlock(mm);
	return end;
}
