// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: where a DRM front-end context's memory lives. Its preferred location,
 * by address range (ADVISE, as xe's madvise sets a preferred location): in a PREFER_DEVICE
 * range a device fault moves the drm_gpusvm range into the device's HBM through drm_pagemap
 * (gmem_accel_drm_pagemap.c) before mapping it; elsewhere it maps the pages where they are,
 * and in a PREFER_SYSTEM range it brings HBM pages home first. And the device's view of the
 * context's pages (SNAPSHOT), which shows where each is mapped.
 */
#include <linux/maple_tree.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <drm/drm_pagemap.h>

#include "gmem_accel.h"
#include "gmem_accel_drm.h"
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
	mt_init(&mem->prefs);
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
}

/* The location advice for the page at @va: GMEM_ACCEL_PREFER_*. */
unsigned int gmem_drm_mem_pref(struct gmem_drm_mem *mem, u64 va)
{
	void *entry = mtree_load(&mem->prefs, va);

	return entry ? xa_to_value(entry) : GMEM_ACCEL_PREFER_NONE;
}

/*
 * ADVISE on the DRM node: the location alone (the accessed-by and read-mostly attributes
 * belong to the other front end: -EOPNOTSUPP). PREFER_SYSTEM brings the range's HBM pages
 * home at once.
 */
int gmem_drm_mem_advise(struct gmem_ctx *ctx, struct gmem_accel_advise *a)
{
	struct gmem_drm_mem *mem = gmem_drm_svm_mem(ctx);
	u64 end = a->addr + a->size;
	int ret;

	if (a->flags & ~GMEM_ACCEL_ADVISE_FLAGS)
		return -EINVAL;
	if (a->flags)
		return -EOPNOTSUPP;
	if (a->location > GMEM_ACCEL_PREFER_SYSTEM || !a->size || !PAGE_ALIGNED(a->addr) ||
	    !PAGE_ALIGNED(a->size) || end < a->addr || end > TASK_SIZE)
		return -EINVAL;
	if (a->location == GMEM_ACCEL_PREFER_NONE)
		ret = mtree_store_range(&mem->prefs, a->addr, end - 1, NULL, GFP_KERNEL);
	else
		ret = mtree_store_range(&mem->prefs, a->addr, end - 1,
					xa_mk_value(a->location), GFP_KERNEL);
	if (ret)
		return ret;
	if (a->location == GMEM_ACCEL_PREFER_SYSTEM && mem->dpagemap)
		gmem_drm_svm_evict(ctx, a->addr, end);
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
