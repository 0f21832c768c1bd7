// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: where a DRM front-end context's memory lives, and who does atomics on
 * it: its memory attributes by address range, as xe's madvise sets them (ADVISE, MADVISE,
 * QUERY_MEM_ATTRS). The preferred location: in a PREFER_DEVICE range a device fault moves the
 * drm_gpusvm range into the device's HBM through drm_pagemap (gmem_accel_drm_pagemap.c)
 * before mapping it; elsewhere it maps the pages where they are, and in a PREFER_SYSTEM range
 * it brings HBM pages home first. The atomic access (GMEM_ACCEL_DRM_ATOMIC_*): which device
 * leaves carry the ATOMIC permission (gmem_drm_mem_atomic_ok()). And the device's view of the
 * context's pages (SNAPSHOT), which shows where each is mapped.
 */
#include <linux/maple_tree.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <drm/drm_pagemap.h>

#include "gmem_accel.h"
#include "gmem_accel_drm.h"
#include "gmem_accel_drm_uapi.h"
#include "gmem_accel_pt.h"

/*
 * A new file's: no advice yet, the device's HBM if it has any for drm_pagemap, and the owner
 * its faults map in place (every gmem-accel device's HBM: gmem_accel_drm_peer.c).
 */
int gmem_drm_mem_init(struct gmem_drm_mem *mem, struct gmem_accel *g)
{
	struct drm_pagemap *dpagemap = gmem_dpm_get(g);
	int ret;

	if (IS_ERR(dpagemap))
		return PTR_ERR(dpagemap);
	ret = gmem_drm_peer_join(mem);
	if (ret) {
		if (dpagemap)
			drm_pagemap_put(dpagemap);
		return ret;
	}
	/* (read by device faults, under RCU, while ADVISE writes) */
	mt_init_flags(&mem->prefs, MT_FLAGS_USE_RCU);
	mt_init_flags(&mem->atomics, MT_FLAGS_USE_RCU);
	mem->dpagemap = dpagemap;
	return 0;
}

/* The file is closed (its device context gone): its HBM pages go home, the advice goes. */
void gmem_drm_mem_fini(struct gmem_drm_mem *mem)
{
	if (mem->dpagemap) {
		gmem_dpm_evict_owner(mem->dpagemap, mem);
		drm_pagemap_put(mem->dpagemap);
		mem->dpagemap = NULL;
	}
	gmem_drm_peer_leave(mem);
	mtree_destroy(&mem->prefs);
	mtree_destroy(&mem->atomics);
}

static unsigned int gmem_drm_attr_at(struct maple_tree *mt, u64 va)
{
	void *entry = mtree_load(mt, va);

	return entry ? xa_to_value(entry) : 0;
}

/* The location advice for the page at @va: GMEM_ACCEL_PREFER_*. */
unsigned int gmem_drm_mem_pref(struct gmem_drm_mem *mem, u64 va)
{
	return gmem_drm_attr_at(&mem->prefs, va);
}

/* The atomic access of the page at @va: GMEM_ACCEL_DRM_ATOMIC_*. */
unsigned int gmem_drm_mem_atomic(struct gmem_drm_mem *mem, u64 va)
{
	return gmem_drm_attr_at(&mem->atomics, va);
}

/*
 * May a writable device leaf at @va, in HBM if @hbm, do atomics? The device's atomics on
 * system memory are a read then a write over the bus, atomic against the device's own but not
 * the CPU's: GLOBAL ranges have them in HBM only, where a CPU access first brings the page home.
 */
bool gmem_drm_mem_atomic_ok(struct gmem_drm_mem *mem, u64 va, bool hbm)
{
	unsigned int atomic = gmem_drm_mem_atomic(mem, va);

	return atomic == GMEM_ACCEL_DRM_ATOMIC_GLOBAL ? hbm : atomic != GMEM_ACCEL_DRM_ATOMIC_CPU;
}

/* Has all of [va, va + size) one atomic access (so one leaf may map it)? */
bool gmem_drm_mem_atomic_uniform(struct gmem_drm_mem *mem, u64 va, u64 size)
{
	MA_STATE(mas, &mem->atomics, va, va);

	rcu_read_lock();
	mas_walk(&mas);
	rcu_read_unlock();
	return mas.index <= va && mas.last >= va + size - 1;
}

/* @addr, @size: a page-aligned range of the process's address space? */
static bool gmem_drm_range_ok(u64 addr, u64 size)
{
	return size && PAGE_ALIGNED(addr) && PAGE_ALIGNED(size) && addr + size > addr &&
	       addr + size <= TASK_SIZE;
}

/* Give [addr, addr + size) value @value in @mt (0: the default, stored as nothing). */
static int gmem_drm_attr_set(struct maple_tree *mt, u64 addr, u64 size, unsigned int value)
{
	return mtree_store_range(mt, addr, addr + size - 1, value ? xa_mk_value(value) : NULL,
				 GFP_KERNEL);
}

static int gmem_drm_mem_set_location(struct gmem_ctx *ctx, u64 addr, u64 size,
				     unsigned int location)
{
	struct gmem_drm_mem *mem = gmem_drm_svm_mem(ctx);
	int ret;

	if (location > GMEM_ACCEL_PREFER_SYSTEM)
		return -EINVAL;
	ret = gmem_drm_attr_set(&mem->prefs, addr, size, location);
	if (!ret && location == GMEM_ACCEL_PREFER_SYSTEM && mem->dpagemap)
		gmem_drm_svm_evict(ctx, addr, addr + size);
	return ret;
}

/*
 * ADVISE on the DRM node: the location alone (the accessed-by and read-mostly attributes
 * belong to the other front end: -EOPNOTSUPP). PREFER_SYSTEM brings the range's HBM pages
 * home at once.
 */
int gmem_drm_mem_advise(struct gmem_ctx *ctx, struct gmem_accel_advise *a)
{
	if (a->flags & ~GMEM_ACCEL_ADVISE_FLAGS)
		return -EINVAL;
	if (a->flags)
		return -EOPNOTSUPP;
	if (!gmem_drm_range_ok(a->addr, a->size))
		return -EINVAL;
	return gmem_drm_mem_set_location(ctx, a->addr, a->size, a->location);
}

/*
 * MADVISE: one attribute of a range. A new atomic access takes effect at the device's next
 * access: the range's leaves go (their DMA mappings stay with drm_gpusvm), so that the next
 * fault maps them with the permission the attribute gives.
 */
int gmem_drm_mem_madvise(struct gmem_ctx *ctx, struct gmem_accel_drm_madvise *m)
{
	struct gmem_drm_mem *mem = gmem_drm_svm_mem(ctx);
	int ret;

	if (m->reserved[0] || m->reserved[1] || !gmem_drm_range_ok(m->addr, m->size))
		return -EINVAL;
	switch (m->type) {
	case GMEM_ACCEL_DRM_ATTR_PREFERRED_LOC:
		return gmem_drm_mem_set_location(ctx, m->addr, m->size, m->value);
	case GMEM_ACCEL_DRM_ATTR_ATOMIC:
		if (m->value > GMEM_ACCEL_DRM_ATOMIC_CPU)
			return -EINVAL;
		ret = gmem_drm_attr_set(&mem->atomics, m->addr, m->size, m->value);
		if (!ret)
			gmem_drm_svm_unmap(ctx, m->addr, m->addr + m->size);
		return ret;
	default:
		return -EINVAL;
	}
}

/* The entry of @mt at @va, and (narrowing [*start, *end]) the range it covers. */
static unsigned int gmem_drm_attr_span(struct maple_tree *mt, u64 va, u64 *start, u64 *last)
{
	MA_STATE(mas, mt, va, va);
	void *entry;

	rcu_read_lock();
	entry = mas_walk(&mas);
	rcu_read_unlock();
	*start = max_t(u64, *start, mas.index);
	*last = min_t(u64, *last, mas.last);
	return entry ? xa_to_value(entry) : 0;
}

/* QUERY_MEM_ATTRS: the attributes at an address, and how far around it they hold. */
int gmem_drm_mem_query(struct gmem_ctx *ctx, struct gmem_accel_drm_mem_attrs *q)
{
	struct gmem_drm_mem *mem = gmem_drm_svm_mem(ctx);
	u64 start = 0, last = TASK_SIZE - 1;

	if (q->reserved || q->addr >= TASK_SIZE)
		return -EINVAL;
	q->location = gmem_drm_attr_span(&mem->prefs, q->addr, &start, &last);
	q->atomic = gmem_drm_attr_span(&mem->atomics, q->addr, &start, &last);
	q->start = start;
	q->end = last + 1;
	return 0;
}

/* SNAPSHOT on the DRM node, as on /dev/gmem_accelN: GMEM_ACCEL_PAGE_* of each page. */
int gmem_drm_mem_snapshot(struct gmem_ctx *ctx, struct gmem_accel_snapshot *snap)
{
	int ret = 0;
	u8 *out;

	if (snap->flags || snap->pad || !snap->npages || !PAGE_ALIGNED(snap->addr))
		return -EINVAL;
	if (snap->npages > GMEM_ACCEL_MAX_SNAPSHOT)
		return -E2BIG;
	if (snap->addr + (snap->npages << PAGE_SHIFT) < snap->addr ||
	    snap->addr + (snap->npages << PAGE_SHIFT) > (1ull << GMEM_VA_BITS))
		return -EINVAL;
	out = kvmalloc(snap->npages, GFP_KERNEL);
	if (!out)
		return -ENOMEM;
	gmem_pt_snapshot(ctx, snap->addr, out, snap->npages);
	if (copy_to_user(u64_to_user_ptr(snap->out), out, snap->npages))
		ret = -EFAULT;
	kvfree(out);
	return ret;
}
