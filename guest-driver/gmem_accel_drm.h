/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: the DRM accel front end, on a kernel with the GPU SVM layer
 * (CONFIG_DRM_GPUSVM: Linux 7.3 as images/kernel-7.3.config builds it). A device the frontend
 * parameter gives to it is /dev/accel/accelN (gmem_accel_drm.c) instead of /dev/gmem_accelN;
 * its contexts' shared virtual memory is drm_gpusvm's (gmem_accel_drm_svm.c). Rings, the fault
 * queue and its servers, device page tables, TLB invalidation and reset are the core's, shared
 * by both front ends.
 */
#ifndef GMEM_ACCEL_DRM_H
#define GMEM_ACCEL_DRM_H

#include "gmem_accel_types.h"

struct dma_buf;
struct drm_device;
struct drm_file;
struct drm_gem_object;
struct file;
struct inode;
struct vm_area_struct;
struct drm_gpusvm_range;
struct drm_pagemap;
struct drm_pagemap_addr;
struct drm_pagemap_peer;
struct gmem_accel_advise;
struct gmem_accel_drm_madvise;
struct gmem_accel_drm_mem_attrs;
struct gmem_accel_snapshot;

/*
 * A DRM context's device memory: where its ranges should live (ADVISE) and the device's HBM
 * it migrates them to.
 */
struct gmem_drm_mem {
	struct maple_tree prefs;	/* GMEM_ACCEL_PREFER_* by address (none: PREFER_NONE) */
	struct maple_tree atomics;	/* GMEM_ACCEL_DRM_ATOMIC_* by address (none: UNDEFINED) */
	struct drm_pagemap *dpagemap;	/* referenced; NULL: the device has no HBM for it */
	struct drm_pagemap_peer *peer;	/* its place on the owner list (gmem_accel_drm_peer.c) */
	void *owner;			/* the owner its faults map in place: every device's HBM */
};

#if IS_ENABLED(CONFIG_DRM_GPUSVM)
/* gmem_accel_drm.c: the accel device */
int gmem_drm_add(struct gmem_accel *g);
void gmem_drm_unplug(struct gmem_accel *g);
struct gmem_accel *gmem_drm_to_g(struct drm_device *drm);
struct gmem_ctx *gmem_drm_enter(struct drm_file *file);
void gmem_drm_exit(struct drm_file *file);
/* gmem_accel_drm_gem.c: GEM objects, the core's device memory objects */
int gmem_drm_gem_create(struct drm_device *drm, void *data, struct drm_file *file);
int gmem_drm_gem_mmap_offset(struct drm_device *drm, void *data, struct drm_file *file);
int gmem_drm_gem_query(struct drm_device *drm, void *data, struct drm_file *file);
struct drm_gem_object *gmem_drm_gem_import(struct drm_device *drm, struct dma_buf *dmabuf);
int gmem_drm_gem_open(struct inode *inode, struct file *filp);
int gmem_drm_gem_mmap(struct file *filp, struct vm_area_struct *vma);
unsigned long gmem_drm_gem_get_unmapped_area(struct file *filp, unsigned long addr,
					     unsigned long len, unsigned long pgoff,
					     unsigned long flags);
/* gmem_accel_drm_svm.c: a context's shared virtual memory through drm_gpusvm */
int gmem_drm_svm_init(struct gmem_ctx *ctx, struct drm_device *drm);
struct gmem_drm_mem *gmem_drm_svm_mem(struct gmem_ctx *ctx);
bool gmem_drm_hook_atomic(struct gmem_ctx *ctx, u64 va, u64 *size, bool hbm);
int gmem_drm_obj_atomic(struct gmem_ctx *ctx, u64 va, u64 perm);
u64 gmem_drm_obj_vma_end(struct mm_struct *mm, u64 va);
void gmem_drm_svm_evict(struct gmem_ctx *ctx, u64 start, u64 end);
void gmem_drm_svm_unmap(struct gmem_ctx *ctx, u64 start, u64 end);
int gmem_drm_svm_prefetch(struct gmem_ctx *ctx, u64 start, u64 end);
/* gmem_accel_drm_mem.c: a context's placement advice and the device's view of its pages */
int gmem_drm_mem_init(struct gmem_drm_mem *mem, struct gmem_accel *g);
void gmem_drm_mem_fini(struct gmem_drm_mem *mem);
unsigned int gmem_drm_mem_pref(struct gmem_drm_mem *mem, u64 va);
unsigned int gmem_drm_mem_atomic(struct gmem_drm_mem *mem, u64 va);
bool gmem_drm_mem_atomic_ok(struct gmem_drm_mem *mem, u64 va, bool hbm);
bool gmem_drm_mem_atomic_uniform(struct gmem_drm_mem *mem, u64 va, u64 size);
int gmem_drm_mem_advise(struct gmem_ctx *ctx, struct gmem_accel_advise *a);
int gmem_drm_mem_madvise(struct gmem_ctx *ctx, struct gmem_accel_drm_madvise *m);
int gmem_drm_mem_query(struct gmem_ctx *ctx, struct gmem_accel_drm_mem_attrs *q);
int gmem_drm_mem_snapshot(struct gmem_ctx *ctx, struct gmem_accel_snapshot *snap);
/* gmem_accel_drm_pagemap.c: the device's HBM as drm_pagemap device memory */
#define GMEM_DRM_INTERCONNECT_HBM	(DRM_INTERCONNECT_DRIVER + 1)
/* (another device's HBM page: a bus address through its BAR2, mapped as system memory) */
#define GMEM_DRM_INTERCONNECT_PEER	(DRM_INTERCONNECT_DRIVER + 2)
int gmem_dpm_dev_init(struct gmem_accel *g);
struct drm_pagemap *gmem_dpm_get(struct gmem_accel *g);
bool gmem_dpm_shared(struct drm_pagemap *dpagemap, struct device *dev,
		     const struct drm_pagemap_addr *addr);
void gmem_dpm_put(struct drm_pagemap *dpagemap);
int gmem_dpm_obj_take(struct drm_pagemap *dpagemap, unsigned int npages, u64 *off);
void gmem_dpm_obj_give(struct drm_pagemap *dpagemap, u64 off, unsigned int npages);
int gmem_dpm_migrate_range(struct gmem_drm_mem *mem, struct drm_gpusvm_range *r,
			   struct gmem_ctx *ctx, bool may_stay);
void gmem_dpm_evict_owner(struct drm_pagemap *dpagemap, const void *owner);
void gmem_dpm_unplug(struct gmem_accel *g);
void gmem_dpm_unbind(struct gmem_accel *g);
void gmem_dpm_exit(void);
/* gmem_accel_drm_peer.c: drm_pagemap peers, other devices' HBM reached peer to peer */
int gmem_dpm_owner_get(struct drm_pagemap_peer *peer);
void gmem_dpm_owner_put(struct drm_pagemap_peer *peer);
int gmem_drm_peer_join(struct gmem_drm_mem *mem);
void gmem_drm_peer_leave(struct gmem_drm_mem *mem);
struct drm_pagemap_addr gmem_dpm_peer_map(struct gmem_accel *g, struct device *dev, u64 off,
					  unsigned int order, enum dma_data_direction dir);
void gmem_dpm_peer_unmap(struct gmem_accel *g, struct device *dev,
			 const struct drm_pagemap_addr *addr);
void gmem_dpm_peer_copied(struct gmem_accel *g, unsigned long pages, int err);
u64 gmem_dpm_peer_offset(struct gmem_accel *g, struct device *dev, dma_addr_t addr);
#else
static inline int gmem_drm_add(struct gmem_accel *g)
{
	return -EOPNOTSUPP;
}

static inline void gmem_drm_unplug(struct gmem_accel *g)
{
}

static inline void gmem_dpm_unbind(struct gmem_accel *g)
{
}

static inline void gmem_dpm_exit(void)
{
}

static inline struct drm_pagemap *gmem_dpm_get(struct gmem_accel *g)
{
	return NULL;
}

static inline void gmem_dpm_put(struct drm_pagemap *dpagemap)
{
}

static inline int gmem_dpm_obj_take(struct drm_pagemap *dpagemap, unsigned int npages, u64 *off)
{
	return -ENODEV;
}

static inline void gmem_dpm_obj_give(struct drm_pagemap *dpagemap, u64 off, unsigned int npages)
{
}
#endif

#endif /* GMEM_ACCEL_DRM_H */
