// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: drm_pagemap peers between DRM front-end devices, the way drm_pagemap
 * (7.0+) intends them. Each device's pagemap and each DRM context joins the driver's one
 * owner list (drm_pagemap_acquire_owner()): members that reach each other's memory share an
 * owner, and any gmem-accel device's DMA engine reaches any other's HBM through its BAR2
 * (hardware spec, System memory access), so all of them share one. That shared owner makes
 * another device's HBM pages visible where they are:
 *
 * - a context's hmm_range_fault() returns them in place (device_private_page_owner), and
 *   the pagemap's device_map gives the faulting device their bus address in the peer's BAR2
 *   (GMEM_DRM_INTERCONNECT_PEER), which its page table maps as system memory: device-to-
 *   device access;
 * - drm_pagemap_migrate_to_devmem() collects them too (its pgmap_owner) and has the peer's
 *   DMA engine copy them straight into this device's HBM, reached through this device's BAR2
 *   the same way: source-peer migration, with no stop in system memory.
 *
 * Which of the two a device fault gets is the range's placement advice (gmem_accel_drm_mem.c):
 * PREFER_DEVICE moves the range into the faulting device's HBM, no advice maps it in place.
 * The mapping of a peer's BAR2 is the core's (gmem_peer_map_hbm(), gmem_accel_peer.c), as
 * the other front end's device-to-device migration uses it.
 */
#include <linux/iommu.h>
#include <linux/slab.h>
#include <drm/drm_pagemap.h>
#include <drm/drm_pagemap_util.h>

#include "gmem_accel.h"
#include "gmem_accel_drm.h"
#include "gmem_accel_trace.h"

static DRM_PAGEMAP_OWNER_LIST_DEFINE(gmem_dpm_owners);

/*
 * Every member of the list is a gmem-accel device's pagemap or context, and any two
 * gmem-accel devices reach each other's HBM peer to peer.
 */
static bool gmem_dpm_interconnect(struct drm_pagemap_peer *peer1,
				  struct drm_pagemap_peer *peer2)
{
	return true;
}

/* Join (a pagemap, a context) the driver's owner list: @peer->owner is its owner. */
int gmem_dpm_owner_get(struct drm_pagemap_peer *peer)
{
	return drm_pagemap_acquire_owner(peer, &gmem_dpm_owners, gmem_dpm_interconnect);
}

/* Leave it (once; a peer that never joined is left alone). */
void gmem_dpm_owner_put(struct drm_pagemap_peer *peer)
{
	if (peer->owner)
		drm_pagemap_release_owner(peer);
}

/* A new DRM context's owner: its faults see every gmem-accel device's HBM pages in place. */
int gmem_drm_peer_join(struct gmem_drm_mem *mem)
{
	struct drm_pagemap_peer *peer = kzalloc(sizeof(*peer), GFP_KERNEL);
	int ret;

	if (!peer)
		return -ENOMEM;
	ret = gmem_dpm_owner_get(peer);
	if (ret) {
		kfree(peer);
		return ret;
	}
	mem->peer = peer;
	mem->owner = peer->owner;
	return 0;
}

void gmem_drm_peer_leave(struct gmem_drm_mem *mem)
{
	if (!mem->peer)
		return;
	gmem_dpm_owner_put(mem->peer);
	kfree(mem->peer);
	mem->peer = NULL;
	mem->owner = NULL;
}

/*
 * device_map of @g's HBM page at @off for another device @dev: its bus address through @g's
 * BAR2, peer to peer. Refused (DMA_MAPPING_ERROR: the fault fails with EFAULT, the migration
 * does not happen) while @g is being unbound, whose pages are on their way home.
 */
struct drm_pagemap_addr gmem_dpm_peer_map(struct gmem_accel *g, struct device *dev, u64 off,
					  unsigned int order, enum dma_data_direction dir)
{
	dma_addr_t addr = DMA_MAPPING_ERROR;

	if (!READ_ONCE(g->unbinding) && READ_ONCE(g->pdev))
		addr = gmem_peer_map_hbm(dev, g, off, PAGE_SIZE << order, dir);
	if (addr != DMA_MAPPING_ERROR) {
		gmem_dev_count(g, GMEM_DEV_DRM_PEER_MAPS_NOW, 1l << order);
		gmem_dev_count(g, GMEM_DEV_DRM_PEER_MAPS, 1l << order);
	}
	trace_gmem_accel_drm_peer_map(dev_name(dev), dev_name(&g->dev), off, order,
				      addr != DMA_MAPPING_ERROR);
	return drm_pagemap_addr_encode(addr, GMEM_DRM_INTERCONNECT_PEER, order, dir);
}

/*
 * The offset in @g's HBM of the page another device @dev maps at @addr (gmem_dpm_peer_map()):
 * BAR2's physical address again, through @dev's IOMMU domain (without one, the bus address
 * is the physical one). U64_MAX if it is not in @g's HBM.
 */
u64 gmem_dpm_peer_offset(struct gmem_accel *g, struct device *dev, dma_addr_t addr)
{
	struct iommu_domain *domain = iommu_get_domain_for_dev(dev);
	phys_addr_t phys = domain ? iommu_iova_to_phys(domain, addr) : addr;

	if (phys < g->hbm_bar || phys - g->hbm_bar >= g->info.hbm_size)
		return U64_MAX;
	return phys - g->hbm_bar;
}

void gmem_dpm_peer_unmap(struct gmem_accel *g, struct device *dev,
			 const struct drm_pagemap_addr *addr)
{
	gmem_peer_unmap_hbm(dev, addr->addr, PAGE_SIZE << addr->order, addr->dir);
	gmem_dev_count(g, GMEM_DEV_DRM_PEER_MAPS_NOW, -(1l << addr->order));
}

/* @g's DMA engine copied @pages pages of its HBM into another device's (@err: or failed). */
void gmem_dpm_peer_copied(struct gmem_accel *g, unsigned long pages, int err)
{
	if (!err)
		gmem_dev_count(g, GMEM_DEV_DRM_TO_PEER, pages);
	trace_gmem_accel_drm_to_peer(dev_name(&g->dev), pages, err);
}
