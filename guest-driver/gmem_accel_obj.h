/* SPDX-License-Identifier: GPL-2.0 */
/* gmem-accel driver: device memory objects, shared by gmem_accel_obj.c and gmem_accel_dmabuf.c */
#ifndef GMEM_ACCEL_OBJ_H
#define GMEM_ACCEL_OBJ_H

#include "gmem_accel_types.h"

struct dma_buf;
struct drm_pagemap;
struct gmem_accel_obj_query;

/* mmap offset of object id i: i << 36 (an object is at most GMEM_ACCEL_OBJ_MAX_SIZE) */
#define GMEM_OBJ_OFFSET_SHIFT	36
#define GMEM_OBJ_PGOFF_SHIFT	(GMEM_OBJ_OFFSET_SHIFT - PAGE_SHIFT)
#define GMEM_OBJ_PGOFF_MASK	((1ul << GMEM_OBJ_PGOFF_SHIFT) - 1)

/**
 * struct gmem_obj - a device memory object
 * @ref:       one per handle, per VMA mapping it and per dma-buf
 * @lock:      guards where it is: @flags' placement, @addr, @pages (eviction changes them)
 * @g:         its device (a reference on g->dev)
 * @id:        its number, unique among all devices' objects: its mmap offset is id << 36
 *             on every file that holds it, so an eviction finds every CPU mapping
 * @size:      bytes, a multiple of @page_size
 * @page_size: bytes of each of its device pages
 * @flags:     GMEM_ACCEL_OBJ_*: its placement, page size and PINNED
 * @npages:    device pages
 * @addr:      per device page, its HBM offset, or its system memory's bus address
 * @pages:     system memory: per device page, its (compound) page
 * @link:      on g->objs
 * @peer_lock: guards @peers
 * @peers:     other devices it was imported on (struct gmem_obj_peer)
 * @tgid:      who allocated it, for debugfs
 * @comm:      and its name
 * @mstate:    managed: per device page, GMEM_MANAGED_* (gmem_accel_managed.c); NULL otherwise
 * @hbm:       managed: per device page not GMEM_MANAGED_SYS, its HBM copy's offset
 * @read_mostly: managed: per device page, read duplication advised (bitmap)
 * @nhbm:      managed: device pages with an HBM copy
 * @dpagemap:  DRM front end: the drm_pagemap its HBM is from (referenced), or NULL
 */
struct gmem_obj {
	struct kref ref;
	struct mutex lock;
	struct gmem_accel *g;
	u64 id;
	u64 size;
	u64 page_size;
	u32 flags;
	unsigned long npages;
	u64 *addr;
	struct page **pages;
	struct list_head link;
	spinlock_t peer_lock;
	struct list_head peers;
	pid_t tgid;
	char comm[TASK_COMM_LEN];
	u8 *mstate;
	u64 *hbm;
	unsigned long *read_mostly;
	unsigned long nhbm;
	struct drm_pagemap *dpagemap;
};

/**
 * struct gmem_obj_peer - an object as another device reaches it, over PCIe peer to peer
 * @link: on gmem_obj.peers
 * @g:    that device (a reference on g->dev)
 * @addr: per device page, the bus address that device's DMA uses: BAR2 of the object's
 *        device (HBM), or the system memory DMA-mapped for it
 */
struct gmem_obj_peer {
	struct list_head link;
	struct gmem_accel *g;
	u64 addr[];
};

static inline bool gmem_obj_in_hbm(const struct gmem_obj *obj)
{
	return obj->flags & GMEM_ACCEL_OBJ_HBM;
}

static inline bool gmem_obj_is_managed(const struct gmem_obj *obj)
{
	return obj->flags & GMEM_ACCEL_OBJ_MANAGED;
}

/* Byte offset in its object of @va in object mapping @vma. */
static inline u64 gmem_obj_offset(const struct vm_area_struct *vma, u64 va)
{
	return ((vma->vm_pgoff & GMEM_OBJ_PGOFF_MASK) << PAGE_SHIFT) + (va - vma->vm_start);
}

/* gmem_accel_obj.c: device memory objects: allocation, mmap, device faults on them */
int gmem_obj_dev_init(struct gmem_accel *g);
void gmem_obj_dev_fini(struct gmem_accel *g);
void gmem_obj_dev_unbind(struct gmem_accel *g);
void gmem_obj_file_init(struct gmem_file *f);
void gmem_obj_file_fini(struct gmem_file *f);
long gmem_obj_ioctl(struct gmem_file *f, unsigned int cmd, void __user *uarg);
int gmem_obj_mmap(struct file *file, struct vm_area_struct *vma);
unsigned long gmem_obj_get_unmapped_area(struct file *file, unsigned long addr,
					 unsigned long len, unsigned long pgoff,
					 unsigned long flags);
int gmem_obj_fault(struct gmem_ctx *ctx, u64 va, bool write, u64 *start, u64 *end);
void gmem_obj_debugfs_show(struct gmem_accel *g, struct seq_file *m);

struct gmem_obj *gmem_obj_create(struct gmem_accel *g, u64 size, u32 flags);
void gmem_obj_put(struct gmem_obj *obj);
void gmem_obj_describe(struct gmem_obj *obj, struct gmem_accel_obj_query *q);
int gmem_obj_mmap_obj(struct gmem_obj *obj, struct vm_area_struct *vma);
unsigned long gmem_obj_place(struct file *file, unsigned long addr, unsigned long len,
			     unsigned long pgoff, unsigned long flags, unsigned long align);
/* A new handle on @f for @obj (which gains a reference); 0 or -errno. */
int gmem_obj_add_handle(struct gmem_file *f, struct gmem_obj *obj, u32 *handle);
struct gmem_obj *gmem_obj_lookup(struct gmem_file *f, u32 handle);
struct gmem_obj *gmem_obj_lookup_id(struct gmem_file *f, unsigned long id);
struct gmem_obj_peer *gmem_obj_peer_of(struct gmem_obj *obj, struct gmem_accel *g);
u64 gmem_obj_mmap_offset(const struct gmem_obj *obj);
int gmem_obj_add_peer(struct gmem_obj *obj, struct gmem_accel *g);
int gmem_obj_hbm_take(struct gmem_accel *g, unsigned int npages, u64 *off, struct gmem_obj *mine);
bool gmem_obj_vma(const struct vm_area_struct *vma);
void gmem_obj_vm_open(struct vm_area_struct *vma);
void gmem_obj_vm_close(struct vm_area_struct *vma);

/* gmem_accel_managed.c: managed objects: residency by device page, read duplication */
enum gmem_managed_state {
	GMEM_MANAGED_SYS,	/* system memory holds it; no HBM copy */
	GMEM_MANAGED_HBM,	/* its HBM copy holds it; the system page is stale */
	GMEM_MANAGED_DUP,	/* both hold it, both mapped read-only (a read duplicate) */
};

extern const struct vm_operations_struct gmem_managed_vm_ops;
int gmem_managed_init(struct gmem_obj *obj);
void gmem_managed_fini(struct gmem_obj *obj);
void gmem_managed_device_prepare(struct gmem_ctx *ctx, u64 va, bool write);
u64 gmem_managed_target(struct gmem_obj *obj, u64 off, bool *hbm, bool *wr, bool *dup);
bool gmem_managed_evict_one(struct gmem_accel *g, struct gmem_obj *mine);
void gmem_managed_dev_unbind(struct gmem_accel *g);
int gmem_managed_check(struct gmem_ctx *ctx, u64 start, u64 end);
int gmem_managed_advise(struct gmem_ctx *ctx, u64 start, u64 end, u32 flags, u32 location);

/* gmem_accel_dmabuf.c */
long gmem_obj_export(struct gmem_file *f, void __user *uarg);
long gmem_obj_import(struct gmem_file *f, void __user *uarg);
struct dma_buf *gmem_obj_dmabuf(struct gmem_obj *obj);
struct gmem_obj *gmem_obj_from_dmabuf(struct dma_buf *dmabuf, struct gmem_accel *g);

#endif
