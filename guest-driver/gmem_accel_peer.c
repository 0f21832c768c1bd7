// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: device-to-device migration. A process's pages in another gmem-accel
 * device's HBM move straight into this device's HBM, this device's DMA engine reading the
 * other's BAR2 over PCIe peer to peer, instead of going home to system memory and out again
 * (which is what amdkfd's svm_migrate_vram_to_vram() still does).
 *
 * migrate_vma selects device pages by their pgmap owner, which is their device, so each
 * peer's pages are collected by a pass of their own (gmem_window_to_device() with m->peer
 * set). A pass runs only for a peer that holds HBM pages of this process, and only for a
 * window that its system-memory pass did not move whole.
 *
 * The mapping of a peer's HBM for this device's engine (gmem_peer_map_hbm()) is the core's,
 * shared with the DRM front end, whose drm_pagemap peers reach each other's HBM the same way.
 */
#include <linux/dma-mapping.h>
#include <linux/mm.h>

#include "gmem_accel.h"
#include "gmem_accel_migrate.h"
#include "gmem_accel_trace.h"

struct gmem_peer_walk {
	struct gmem_ctx *ctx;
	struct gmem_migration *m;
	struct vm_area_struct *vma;
	unsigned long start, end;
	unsigned long moved;
	int ret;
};

/* Does @peer hold HBM pages of @mm (moved in by one of its contexts for @mm)? */
static bool gmem_peer_holds(struct gmem_accel *peer, struct mm_struct *mm)
{
	bool holds = false;

	mutex_lock(&peer->ctx_lock);
	for (unsigned int id = 1; id < GMEM_NUM_CONTEXTS && !holds; id++) {
		struct gmem_ctx *c = peer->ctx[id];

		holds = c && c->mm == mm && atomic_long_read(&c->owner->pages) > 0;
	}
	mutex_unlock(&peer->ctx_lock);
	return holds;
}

/*
 * [@off, @off + @size) of @peer's HBM as a bus address @dma_dev reaches it by, peer to peer
 * through @peer's BAR2 (hardware spec, System memory access); DMA_MAPPING_ERROR if it cannot.
 */
dma_addr_t gmem_peer_map_hbm(struct device *dma_dev, struct gmem_accel *peer, u64 off,
			     size_t size, enum dma_data_direction dir)
{
	dma_addr_t bar;

	if (off >= peer->info.hbm_size || size > peer->info.hbm_size - off)
		return DMA_MAPPING_ERROR;
	bar = dma_map_resource(dma_dev, peer->hbm_bar + off, size, dir, DMA_ATTR_SKIP_CPU_SYNC);
	if (dma_mapping_error(dma_dev, bar)) {
		dev_warn_ratelimited(dma_dev, "cannot reach %s's HBM peer to peer\n",
				     dev_name(&peer->dev));
		return DMA_MAPPING_ERROR;
	}
	return bar;
}

void gmem_peer_unmap_hbm(struct device *dma_dev, dma_addr_t bar, size_t size,
			 enum dma_data_direction dir)
{
	dma_unmap_resource(dma_dev, bar, size, dir, DMA_ATTR_SKIP_CPU_SYNC);
}

/*
 * One peer's pass over the window. The peer's lock is only tried: a peer being unbound
 * (which takes it for writing and then evicts its pages home) is left to do so.
 */
static int gmem_peer_pass(struct device *dev, void *data)
{
	struct gmem_accel *peer = to_gmem_accel(dev);
	struct gmem_peer_walk *w = data;
	struct gmem_ctx *ctx = w->ctx;
	struct device *dma_dev = &ctx->g->pdev->dev;
	struct gmem_migration *m = w->m;
	unsigned long moved = 0;
	dma_addr_t bar;

	if (peer == ctx->g || !down_read_trylock(&peer->lock))
		return 0;
	if (!peer->pdev || READ_ONCE(peer->unbinding) || !peer->hbm.mapped ||
	    !gmem_peer_holds(peer, ctx->mm))
		goto out;
	bar = gmem_peer_map_hbm(dma_dev, peer, 0, peer->info.hbm_size, DMA_BIDIRECTIONAL);
	if (bar == DMA_MAPPING_ERROR)
		goto out;
	m->peer = peer;
	m->peer_bar = bar;
	w->ret = gmem_window_to_device(ctx, m, w->vma, w->start, w->end, &moved);
	m->peer = NULL;
	gmem_peer_unmap_hbm(dma_dev, bar, peer->info.hbm_size, DMA_BIDIRECTIONAL);
	trace_gmem_accel_migrate_peer(ctx->id, dev_name(&peer->dev), w->start, w->end, moved,
				      w->ret);
	w->moved += moved;
out:
	up_read(&peer->lock);
	return w->ret;
}

/*
 * Move the pages of [start, end) of @vma (one window) that sit in other gmem-accel devices'
 * HBM into this context's device. *@moved: how many did. mmap lock held, as for
 * gmem_window_to_device(). Unlike a move from system memory, the device does not map the
 * pages yet: gmem_map_window(), once the mmap lock is dropped, or its next fault, does.
 */
int gmem_window_from_peers(struct gmem_ctx *ctx, struct gmem_migration *m,
			   struct vm_area_struct *vma, unsigned long start, unsigned long end,
			   unsigned long *moved)
{
	struct gmem_peer_walk w = {
		.ctx = ctx, .m = m, .vma = vma, .start = start, .end = end,
	};

	gmem_walk_devices(&w, gmem_peer_pass);
	*moved = w.moved;
	return w.ret;
}
