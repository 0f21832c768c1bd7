// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: a DRM front-end device's HBM as the kernel's drm_pagemap device memory.
 * Such a device has no dev_pagemap of the core's (gmem_hbm_init() leaves it out): its HBM is
 * a MEMORY_DEVICE_PRIVATE dev_pagemap with drm_pagemap's page operations, each page's
 * zone_device_data drm_pagemap's, created when a file first needs it and kept between uses by
 * the device's drm_pagemap cache (its shrinker frees an unused one), as xe does. An
 * allocation (struct gmem_dpm_block) holds the HBM of one drm_gpusvm range, aligned to its
 * size; drm_pagemap moves the range in (populate_mm), home on a CPU touch (migrate_to_ram)
 * and home on eviction, calling the copies here, which run on the device's DMA engine
 * (queue 0, gmem_kernel_run()). Out of HBM, the oldest allocation is evicted to make room;
 * once that evicts what the current burst of HBM use filled, HBM is oversubscribed and a
 * device fault maps a range where its pages are instead, as the own front end's faults do
 * (gmem_accel_oversub.c).
 * A file's allocations go home when it is closed, every one when the device is unbound.
 *
 * The device reaches its own HBM by an HBM offset (GMEM_DRM_INTERCONNECT_HBM); another
 * device reaches it peer to peer, and the pages' owner is shared by every device
 * (gmem_accel_drm_peer.c). Coherent HBM (coherent=on) is not offered as
 * MEMORY_DEVICE_COHERENT: drm_pagemap moves device-private pages only.
 */
#include <linux/bitmap.h>
#include <linux/delay.h>
#include <linux/dma-fence.h>
#include <linux/dma-mapping.h>
#include <linux/llist.h>
#include <linux/memremap.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <drm/drm_device.h>
#include <drm/drm_drv.h>
#include <drm/drm_gpusvm.h>
#include <drm/drm_pagemap.h>
#include <drm/drm_pagemap_util.h>

#include "gmem_accel.h"
#include "gmem_accel_drm.h"
#include "gmem_accel_oversub.h"
#include "gmem_accel_queue.h"

/* A device's HBM as drm_pagemap pages. */
struct gmem_dpm {
	struct drm_pagemap dpagemap;
	struct dev_pagemap pagemap;
	struct drm_pagemap_peer peer;	/* its owner: the pagemap owner (gmem_accel_drm_peer.c) */
	struct gmem_accel *g;		/* referenced (its struct device) */
	struct resource *res;		/* the pages' physical addresses, as requested */
	bool mapped;			/* pagemap is the device's devres */
	unsigned long pfn_first, npages;
	spinlock_t lock;		/* busy, blocks, burst_ns, busy_ns */
	unsigned long *busy;		/* HBM pages of live allocations */
	struct list_head blocks;	/* live allocations, oldest first: eviction's order */
	/* the current burst of HBM use: its start, its last fill (gmem_oversub_use()) */
	u64 burst_ns, busy_ns;
	struct llist_node dead;		/* destroyed, to be freed by gmem_dpm_reap() */
};

/* One allocation: the HBM of one drm_gpusvm range, while any of its pages is used. */
struct gmem_dpm_block {
	struct drm_pagemap_devmem devmem;
	struct gmem_dpm *dpm;
	struct kref ref;		/* drm_pagemap's (until devmem_release) and evictors' */
	struct list_head link;		/* in dpm->blocks unless released or being evicted */
	bool released;
	const void *owner;		/* the file's gmem_drm_mem that moved it; NULL once gone */
	unsigned long first, npages;	/* its HBM pages */
	unsigned long va;		/* where its range began in its process */
	u64 used_ns;			/* filled (gmem_oversub_use()) */
	struct llist_node dead;
};

/*
 * Pagemaps and blocks are freed by a work item: their last references may drop where
 * nothing may sleep (a page freed under a page-table lock, the shrinker).
 */
static LLIST_HEAD(gmem_dpm_dead);
static LLIST_HEAD(gmem_dpm_blocks_dead);
static void gmem_dpm_reap(struct work_struct *work);
static DECLARE_WORK(gmem_dpm_reap_work, gmem_dpm_reap);

static struct gmem_dpm *to_dpm(struct drm_pagemap *dpagemap)
{
	return container_of(dpagemap, struct gmem_dpm, dpagemap);
}

static struct gmem_dpm_block *to_block(struct drm_pagemap_devmem *devmem)
{
	return container_of(devmem, struct gmem_dpm_block, devmem);
}

static u64 gmem_dpm_offset(struct gmem_dpm *dpm, struct page *page)
{
	return (u64)(page_to_pfn(page) - dpm->pfn_first) << PAGE_SHIFT;
}

static void gmem_dpm_block_release(struct kref *ref)
{
	struct gmem_dpm_block *b = container_of(ref, struct gmem_dpm_block, ref);

	llist_add(&b->dead, &gmem_dpm_blocks_dead);
	schedule_work(&gmem_dpm_reap_work);
}

static void gmem_dpm_block_put(struct gmem_dpm_block *b)
{
	kref_put(&b->ref, gmem_dpm_block_release);
}

static void gmem_dpm_free(struct gmem_dpm *dpm)
{
	struct drm_device *drm = dpm->dpagemap.drm;
	int idx;

	/* After unbind, the device's devres gave the pages and their range back already. */
	if (dpm->mapped && drm_dev_enter(drm, &idx)) {
		devm_memunmap_pages(drm->dev, &dpm->pagemap);
		devm_release_mem_region(drm->dev, dpm->res->start, resource_size(dpm->res));
		drm_dev_exit(idx);
	}
	gmem_dpm_owner_put(&dpm->peer);
	bitmap_free(dpm->busy);
	put_device(&dpm->g->dev);
	drm_dev_put(drm);
	kfree(dpm);
}

static void gmem_dpm_reap(struct work_struct *work)
{
	struct llist_node *blocks = llist_del_all(&gmem_dpm_blocks_dead);
	struct llist_node *dead = llist_del_all(&gmem_dpm_dead);
	struct gmem_dpm_block *b, *bnext;
	struct gmem_dpm *dpm, *next;

	llist_for_each_entry_safe(b, bnext, blocks, dead) {
		mmdrop(b->devmem.mm);
		kfree(b);
	}
	llist_for_each_entry_safe(dpm, next, dead, dead)
		gmem_dpm_free(dpm);
}

/* drm_pagemap's last reference went (or the shrinker frees the cached pagemap). */
static void gmem_dpm_destroy(struct drm_pagemap *dpagemap, bool is_atomic_or_reclaim)
{
	struct gmem_dpm *dpm = to_dpm(dpagemap);

	/* (the drm device outlives the work: its devres frees the pagemap cache first) */
	drm_dev_get(dpagemap->drm);
	if (!is_atomic_or_reclaim) {
		gmem_dpm_free(dpm);
		return;
	}
	llist_add(&dpm->dead, &gmem_dpm_dead);
	schedule_work(&gmem_dpm_reap_work);
}

/*
 * Is an HBM page that device @dev maps at @addr (device_map() below: an offset in this
 * device's HBM, or another device's address of it, peer to peer) mapped by more than one
 * process? One not found in the HBM is taken as shared: its range goes home.
 */
bool gmem_dpm_shared(struct drm_pagemap *dpagemap, struct device *dev,
		     const struct drm_pagemap_addr *addr)
{
	struct gmem_dpm *dpm = to_dpm(dpagemap);
	unsigned long npages = 1ul << addr->order;
	u64 off = addr->addr;

	if (addr->proto == GMEM_DRM_INTERCONNECT_PEER)
		off = gmem_dpm_peer_offset(dpm->g, dev, addr->addr);
	if (off == U64_MAX || (off >> PAGE_SHIFT) + npages > dpm->npages)
		return true;
	for (unsigned long i = 0; i < npages; i++) {
		struct page *page = pfn_to_page(dpm->pfn_first + (off >> PAGE_SHIFT) + i);

		if (folio_mapcount(page_folio(page)) > 1)
			return true;
	}
	return false;
}

/* The device itself reaches its HBM by its offset, another device peer to peer. */
static struct drm_pagemap_addr gmem_dpm_device_map(struct drm_pagemap *dpagemap,
						    struct device *dev, struct page *page,
						    unsigned int order,
						    enum dma_data_direction dir)
{
	struct gmem_dpm *dpm = to_dpm(dpagemap);

	if (dev == dpagemap->drm->dev)
		return drm_pagemap_addr_encode(gmem_dpm_offset(dpm, page),
					       GMEM_DRM_INTERCONNECT_HBM, order, dir);
	return gmem_dpm_peer_map(dpm->g, dev, gmem_dpm_offset(dpm, page), order, dir);
}

static void gmem_dpm_device_unmap(struct drm_pagemap *dpagemap, struct device *dev,
				  const struct drm_pagemap_addr *addr)
{
	if (addr->proto == GMEM_DRM_INTERCONNECT_PEER)
		gmem_dpm_peer_unmap(to_dpm(dpagemap)->g, dev, addr);
}

/* Append a COPY (@src_kind at @src to HBM or system memory at @dst), or grow the last one. */
static void gmem_dpm_add(struct gmem_cmd_desc *desc, unsigned int *n, u8 op, u8 flags, u64 dst,
			 u64 src, u64 size)
{
	struct gmem_cmd_desc *d = *n ? &desc[*n - 1] : NULL;

	if (d && d->opcode == op && d->flags == flags &&
	    le64_to_cpu(d->dst) + le64_to_cpu(d->size) == dst &&
	    (op != GMEM_OP_COPY || le64_to_cpu(d->src) + le64_to_cpu(d->size) == src)) {
		d->size = cpu_to_le64(le64_to_cpu(d->size) + size);
		return;
	}
	desc[(*n)++] = (struct gmem_cmd_desc) {
		.opcode = op,
		.flags = flags,
		.dst = cpu_to_le64(dst),
		.src = cpu_to_le64(src),
		.size = cpu_to_le64(size),
	};
}

/*
 * drm_pagemap's copies, on the device's DMA engine: @pages are HBM pages (the destination,
 * or with @to_ram the source), @addr the system memory's DMA addresses, each entry of
 * PAGE_SIZE << order. A new HBM page without a source (nothing was there) is zeroed. With
 * @to_ram, @addr may be another device's HBM through its BAR2 (a source-peer migration):
 * system memory to the engine as well.
 */
static int gmem_dpm_copy(struct page **pages, struct drm_pagemap_addr *addr,
			 unsigned long npages, struct dma_fence *pre, bool to_ram)
{
	struct gmem_cmd_desc *desc = NULL;
	struct gmem_dpm *dpm = NULL;
	unsigned int n = 0;
	unsigned long moved = 0, to_peer = 0;
	int ret;

	if (pre)
		dma_fence_wait(pre, false);
	for (unsigned long i = 0; i < npages;) {
		struct page *page = pages[i];
		unsigned long nr;
		u64 hbm;

		if (!page || (to_ram && !addr[i].addr)) {
			i++;
			continue;
		}
		if (!dpm) {
			dpm = container_of(page_pgmap(page), struct gmem_dpm, pagemap);
			desc = kvmalloc_array(npages, sizeof(*desc), GFP_KERNEL);
			if (!desc)
				return -ENOMEM;
		}
		hbm = gmem_dpm_offset(dpm, page);
		if (addr[i].addr) {
			nr = 1ul << addr[i].order;
			if (addr[i].proto == GMEM_DRM_INTERCONNECT_PEER)
				to_peer += nr;
			gmem_dpm_add(desc, &n, GMEM_OP_COPY,
				     to_ram ? GMEM_CMD_F_DST(GMEM_ADDR_SYS) | GMEM_CMD_F_SRC(GMEM_ADDR_HBM)
					    : GMEM_CMD_F_DST(GMEM_ADDR_HBM) | GMEM_CMD_F_SRC(GMEM_ADDR_SYS),
				     to_ram ? addr[i].addr : hbm, to_ram ? hbm : addr[i].addr,
				     nr << PAGE_SHIFT);
		} else {
			nr = folio_nr_pages(page_folio(page));
			gmem_dpm_add(desc, &n, GMEM_OP_FILL, GMEM_CMD_F_DST(GMEM_ADDR_HBM), hbm, 0,
				     nr << PAGE_SHIFT);
		}
		moved += nr;
		i += nr;
	}
	if (!dpm)
		return 0;
	ret = READ_ONCE(dpm->g->pdev) ? gmem_kernel_run(dpm->g, desc, n) : -ENODEV;
	kvfree(desc);
	if (to_peer)
		gmem_dpm_peer_copied(dpm->g, to_peer, ret);
	if (ret) {
		dev_err_ratelimited(dpm->dpagemap.drm->dev, "drm_pagemap copy %s HBM failed: %d\n",
				    to_ram ? "out of" : "into", ret);
		return ret == -EHWPOISON ? -EIO : ret;
	}
	gmem_dev_count(dpm->g, to_ram ? GMEM_DEV_DRM_TO_RAM : GMEM_DEV_DRM_TO_HBM,
		       moved - to_peer);
	return 0;
}

static int gmem_dpm_copy_to_devmem(struct page **pages, struct drm_pagemap_addr *addr,
				   unsigned long npages, struct dma_fence *pre)
{
	return gmem_dpm_copy(pages, addr, npages, pre, false);
}

static int gmem_dpm_copy_to_ram(struct page **pages, struct drm_pagemap_addr *addr,
				unsigned long npages, struct dma_fence *pre)
{
	return gmem_dpm_copy(pages, addr, npages, pre, true);
}

static int gmem_dpm_populate_pfn(struct drm_pagemap_devmem *devmem, unsigned long npages,
				 unsigned long *pfn)
{
	struct gmem_dpm_block *b = to_block(devmem);

	for (unsigned long i = 0; i < npages && i < b->npages; i++)
		pfn[i] = b->dpm->pfn_first + b->first + i;
	return 0;
}

/* No page of the allocation is used any more (may be called where nothing may sleep). */
static void gmem_dpm_devmem_release(struct drm_pagemap_devmem *devmem)
{
	struct gmem_dpm_block *b = to_block(devmem);
	struct gmem_dpm *dpm = b->dpm;

	spin_lock(&dpm->lock);
	bitmap_clear(dpm->busy, b->first, b->npages);
	list_del_init(&b->link);
	b->released = true;
	spin_unlock(&dpm->lock);
	gmem_dev_count(dpm->g, GMEM_DEV_DRM_HBM_PAGES_NOW, -(s64)b->npages);
	dma_fence_put(devmem->pre_migrate_fence);
	gmem_dpm_block_put(b);
}

static const struct drm_pagemap_devmem_ops gmem_dpm_devmem_ops = {
	.devmem_release = gmem_dpm_devmem_release,
	.populate_devmem_pfn = gmem_dpm_populate_pfn,
	.copy_to_devmem = gmem_dpm_copy_to_devmem,
	.copy_to_ram = gmem_dpm_copy_to_ram,
};

/*
 * Evict the oldest allocation (of @owner's only, unless NULL) to system memory; false if
 * there is none. One that cannot move now goes to the back of the list, owned by nobody.
 * @for_room: to make room in HBM; evicting what this burst of use filled then means that
 * HBM is oversubscribed.
 */
static bool gmem_dpm_evict_one(struct gmem_dpm *dpm, const void *owner, bool for_room)
{
	struct gmem_dpm_block *b, *victim = NULL;
	bool in_burst = false;
	int ret;

	spin_lock(&dpm->lock);
	list_for_each_entry(b, &dpm->blocks, link) {
		if (!owner || b->owner == owner) {
			victim = b;
			list_del_init(&b->link);
			kref_get(&b->ref);
			break;
		}
	}
	if (victim && for_room) {
		gmem_oversub_use(&dpm->burst_ns, &dpm->busy_ns);
		in_burst = victim->used_ns >= dpm->burst_ns;
	}
	spin_unlock(&dpm->lock);
	if (!victim)
		return false;
	gmem_oversub_evicting_va(dpm->g, victim->va, in_burst);
	ret = drm_pagemap_evict_to_ram(&victim->devmem);
	if (!ret)
		gmem_dev_count(dpm->g, GMEM_DEV_DRM_EVICTIONS, 1);
	spin_lock(&dpm->lock);
	if (!victim->released && list_empty(&victim->link)) {
		victim->owner = NULL;
		list_add_tail(&victim->link, &dpm->blocks);
	}
	spin_unlock(&dpm->lock);
	gmem_dpm_block_put(victim);
	return true;
}

/*
 * HBM for @npages (a range: 2 MiB, 64 KiB or 4 KiB, aligned to its size), evicting the
 * oldest allocations while none is free; -ENOMEM if nothing more can be evicted.
 */
static struct gmem_dpm_block *gmem_dpm_alloc(struct gmem_dpm *dpm, unsigned long va,
					     unsigned long npages, struct mm_struct *mm,
					     const void *owner)
{
	struct gmem_dpm_block *b = kzalloc(sizeof(*b), GFP_KERNEL);
	unsigned long align = roundup_pow_of_two(npages) - 1, first;
	unsigned int evicted = 0;

	if (!b)
		return ERR_PTR(-ENOMEM);
	for (;;) {
		spin_lock(&dpm->lock);
		first = bitmap_find_next_zero_area(dpm->busy, dpm->npages, 0, npages, align);
		if (first < dpm->npages) {
			bitmap_set(dpm->busy, first, npages);
			list_add_tail(&b->link, &dpm->blocks);
			b->used_ns = gmem_oversub_use(&dpm->burst_ns, &dpm->busy_ns);
			spin_unlock(&dpm->lock);
			break;
		}
		spin_unlock(&dpm->lock);
		/* (each eviction frees at least one allocation's pages, unless it raced) */
		if (fatal_signal_pending(current) || evicted++ > dpm->npages / npages + 16 ||
		    !gmem_dpm_evict_one(dpm, NULL, true)) {
			kfree(b);
			return ERR_PTR(-ENOMEM);
		}
	}
	kref_init(&b->ref);
	b->dpm = dpm;
	b->owner = owner;
	b->first = first;
	b->npages = npages;
	b->va = va;
	mmgrab(mm);
	drm_pagemap_devmem_init(&b->devmem, dpm->dpagemap.drm->dev, mm, &gmem_dpm_devmem_ops,
				&dpm->dpagemap, npages << PAGE_SHIFT, NULL);
	gmem_dev_count(dpm->g, GMEM_DEV_DRM_HBM_PAGES_NOW, npages);
	return b;
}

/* Move [start, end) of @mm (mmap_lock held) into HBM for @owner; 0 or an errno. */
static int gmem_dpm_populate(struct gmem_dpm *dpm, unsigned long start, unsigned long end,
			     struct mm_struct *mm, unsigned long timeslice_ms, const void *owner)
{
	struct drm_pagemap_migrate_details md = { .timeslice_ms = timeslice_ms };
	struct gmem_dpm_block *b;
	int idx, ret;

	if (!drm_dev_enter(dpm->dpagemap.drm, &idx))
		return -ENODEV;
	b = gmem_dpm_alloc(dpm, start, (end - start) >> PAGE_SHIFT, mm, owner);
	ret = PTR_ERR_OR_ZERO(b);
	if (!ret)	/* (drm_pagemap takes over the allocation's first reference) */
		ret = drm_pagemap_migrate_to_devmem(&b->devmem, mm, start, end, &md);
	drm_dev_exit(idx);
	return ret;
}

static int gmem_dpm_populate_mm(struct drm_pagemap *dpagemap, unsigned long start,
				unsigned long end, struct mm_struct *mm, unsigned long timeslice_ms)
{
	return gmem_dpm_populate(to_dpm(dpagemap), start, end, mm, timeslice_ms, NULL);
}

static const struct drm_pagemap_ops gmem_dpm_ops = {
	.device_map = gmem_dpm_device_map,
	.device_unmap = gmem_dpm_device_unmap,
	.populate_mm = gmem_dpm_populate_mm,
	.destroy = gmem_dpm_destroy,
};

/* Is a free stretch of HBM there for @npages, aligned to their size? */
static bool gmem_dpm_room(struct gmem_dpm *dpm, unsigned long npages)
{
	unsigned long align = roundup_pow_of_two(npages) - 1;
	bool room;

	spin_lock(&dpm->lock);
	room = bitmap_find_next_zero_area(dpm->busy, dpm->npages, 0, npages, align) <
	       dpm->npages;
	spin_unlock(&dpm->lock);
	return room;
}

/*
 * Move drm_gpusvm range @r of context @ctx, whose memory is @mem, into HBM unless it is there
 * (drm_gpusvm's lock held, not mmap_lock); best effort: a range that cannot move is mapped
 * where it is. If some of it is in HBM already, it goes home first and moves whole.
 * @may_stay: a device fault's move, which HBM oversubscribed and full leaves where it is
 * (gmem_oversub_active()), as the own front end's faults do; else a move asked for. 1 if it
 * moved, 0 if it was there or stays, else -errno.
 */
int gmem_dpm_migrate_range(struct gmem_drm_mem *mem, struct drm_gpusvm_range *r,
			   struct gmem_ctx *ctx, bool may_stay)
{
	struct gmem_dpm *dpm = to_dpm(mem->dpagemap);
	unsigned long start = drm_gpusvm_range_start(r), end = drm_gpusvm_range_end(r);
	struct mm_struct *mm = ctx->mm;
	int ret = 0;

	if (drm_gpusvm_scan_mm(r, mem->owner, &dpm->pagemap) == DRM_GPUSVM_SCAN_EQUAL)
		return 0;
	if (may_stay && gmem_oversub_active(dpm->g, ctx->id, start) &&
	    !gmem_dpm_room(dpm, (end - start) >> PAGE_SHIFT)) {
		gmem_oversub_mapped_remote(dpm->g, ctx->id, start);
		return 0;
	}
	for (int tries = 0; tries < 2; tries++) {
		if (!mmget_not_zero(mm))
			return -EFAULT;
		mmap_read_lock(mm);
		ret = gmem_dpm_populate(dpm, start, end, mm, 0, mem);
		mmap_read_unlock(mm);
		mmput(mm);
		if (ret != -EBUSY)
			break;
		drm_gpusvm_range_evict(r->gpusvm, r);
	}
	if (ret)
		gmem_dev_count(dpm->g, GMEM_DEV_DRM_MIGRATE_FAILS, 1);
	return ret ?: 1;
}

/* The file whose memory is @owner is closed: its allocations go home. */
void gmem_dpm_evict_owner(struct drm_pagemap *dpagemap, const void *owner)
{
	struct gmem_dpm *dpm = to_dpm(dpagemap);

	while (gmem_dpm_evict_one(dpm, owner, false))
		;
}

static struct gmem_dpm *gmem_dpm_create(struct gmem_accel *g)
{
	struct device *dev = g->drm->dev;
	u64 size = ALIGN_DOWN(g->info.hbm_size, GMEM_HUGE_SIZE);
	struct gmem_dpm *dpm;
	struct resource *res;
	void *addr;
	int ret;

	if (!size)
		return ERR_PTR(-ENODEV);
	dpm = kzalloc(sizeof(*dpm), GFP_KERNEL);
	if (!dpm)
		return ERR_PTR(-ENOMEM);
	dpm->npages = size >> PAGE_SHIFT;
	dpm->busy = bitmap_zalloc(dpm->npages, GFP_KERNEL);
	if (!dpm->busy) {
		kfree(dpm);
		return ERR_PTR(-ENOMEM);
	}
	spin_lock_init(&dpm->lock);
	INIT_LIST_HEAD(&dpm->blocks);
	ret = drm_pagemap_init(&dpm->dpagemap, &dpm->pagemap, g->drm, &gmem_dpm_ops);
	if (ret) {
		bitmap_free(dpm->busy);
		kfree(dpm);
		return ERR_PTR(ret);
	}
	get_device(&g->dev);
	dpm->g = g;
	/* From here drm_pagemap_put() frees it (gmem_dpm_destroy()). */
	ret = gmem_dpm_owner_get(&dpm->peer);
	if (ret)
		goto err;
	res = devm_request_free_mem_region(dev, &iomem_resource, size);
	if (IS_ERR(res)) {
		ret = PTR_ERR(res);
		goto err;
	}
	dpm->pagemap.type = MEMORY_DEVICE_PRIVATE;
	dpm->pagemap.range.start = res->start;
	dpm->pagemap.range.end = res->start + size - 1;
	dpm->pagemap.nr_range = 1;
	dpm->pagemap.owner = dpm->peer.owner;
	dpm->pagemap.ops = drm_pagemap_pagemap_ops_get();
	addr = devm_memremap_pages(dev, &dpm->pagemap);
	if (IS_ERR(addr)) {
		ret = PTR_ERR(addr);
		devm_release_mem_region(dev, res->start, resource_size(res));
		goto err;
	}
	dpm->res = res;
	dpm->pfn_first = res->start >> PAGE_SHIFT;
	dpm->mapped = true;
	return dpm;
err:
	drm_pagemap_put(&dpm->dpagemap);
	return ERR_PTR(ret);
}

/*
 * The device's HBM for a new file, referenced: the cached pagemap, or a new one; NULL if the
 * device has none to give (its files' memory then stays in system memory).
 */
/*
 * HBM for one device page of an object of the DRM front end (gmem_accel_obj.c): @npages
 * aligned to their size, from @dpagemap's pages, the oldest ranges evicted while none is
 * free. The object holds a reference on @dpagemap while it has HBM. 0 or -ENOSPC.
 */
int gmem_dpm_obj_take(struct drm_pagemap *dpagemap, unsigned int npages, u64 *off)
{
	struct gmem_dpm *dpm = to_dpm(dpagemap);
	unsigned int evicted = 0;
	unsigned long first;

	for (;;) {
		spin_lock(&dpm->lock);
		first = bitmap_find_next_zero_area(dpm->busy, dpm->npages, 0, npages, npages - 1);
		if (first < dpm->npages) {
			bitmap_set(dpm->busy, first, npages);
			spin_unlock(&dpm->lock);
			break;
		}
		spin_unlock(&dpm->lock);
		if (fatal_signal_pending(current) || evicted++ > dpm->npages / npages + 16 ||
		    !gmem_dpm_evict_one(dpm, NULL, true))
			return -ENOSPC;
	}
	*off = (u64)first << PAGE_SHIFT;
	gmem_dev_count(dpm->g, GMEM_DEV_OBJ_HBM_PAGES_NOW, npages);
	return 0;
}

void gmem_dpm_obj_give(struct drm_pagemap *dpagemap, u64 off, unsigned int npages)
{
	struct gmem_dpm *dpm = to_dpm(dpagemap);

	spin_lock(&dpm->lock);
	bitmap_clear(dpm->busy, off >> PAGE_SHIFT, npages);
	spin_unlock(&dpm->lock);
	gmem_dev_count(dpm->g, GMEM_DEV_OBJ_HBM_PAGES_NOW, -(s64)npages);
}

void gmem_dpm_put(struct drm_pagemap *dpagemap)
{
	drm_pagemap_put(dpagemap);
}

struct drm_pagemap *gmem_dpm_get(struct gmem_accel *g)
{
	struct drm_pagemap_cache *cache = READ_ONCE(g->dpm_cache);
	struct drm_pagemap *dpagemap;
	struct gmem_dpm *dpm;

	if (!cache)
		return NULL;
	if (drm_pagemap_cache_lock_lookup(cache))
		return ERR_PTR(-EINTR);
	if (!READ_ONCE(g->dpm_cache)) {		/* unplugged meanwhile */
		drm_pagemap_cache_unlock_lookup(cache);
		return NULL;
	}
	dpagemap = drm_pagemap_get_from_cache(cache);
	if (!dpagemap) {
		dpm = gmem_dpm_create(g);
		if (IS_ERR(dpm)) {
			dev_warn_ratelimited(g->drm->dev, "HBM not usable by drm_pagemap: %ld\n",
					     PTR_ERR(dpm));
			dpagemap = NULL;
		} else {
			dpagemap = &dpm->dpagemap;
			drm_pagemap_cache_set_pagemap(cache, dpagemap);
		}
	} else if (IS_ERR(dpagemap) && PTR_ERR(dpagemap) != -EINTR) {
		dpagemap = NULL;
	}
	drm_pagemap_cache_unlock_lookup(cache);
	return dpagemap;
}

/*
 * Released after the pagemap cache (devres runs in reverse): the pagemap held at unplug is put
 * only once the cache has let go of it. The last put of an unplugged device's pagemap destroys
 * it at once without telling the cache, whose teardown would then read it freed.
 */
static void gmem_dpm_release_held(void *arg)
{
	struct gmem_dpm_hold *hold = arg;

	drm_pagemap_put(hold->dpagemap);
}

/* A new DRM device: its pagemap cache and the shrinker that frees a pagemap unused. */
int gmem_dpm_dev_init(struct gmem_accel *g)
{
	struct drm_pagemap_shrinker *shrinker;
	struct drm_pagemap_cache *cache;
	struct gmem_dpm_hold *hold;
	int ret;

	hold = devm_kzalloc(g->drm->dev, sizeof(*hold), GFP_KERNEL);
	if (!hold)
		return -ENOMEM;
	ret = devm_add_action_or_reset(g->drm->dev, gmem_dpm_release_held, hold);
	if (ret)
		return ret;
	g->dpm_hold = hold;
	shrinker = drm_pagemap_shrinker_create_devm(g->drm);
	if (IS_ERR(shrinker))
		return PTR_ERR(shrinker);
	cache = drm_pagemap_cache_create_devm(shrinker);
	if (IS_ERR(cache))
		return PTR_ERR(cache);
	g->dpm_cache = cache;
	return 0;
}

/*
 * Unplug, before the device's contexts shut down: no file looks the pagemap up any more, and
 * the one in use is held until the cache is gone (gmem_dpm_release_held()).
 */
void gmem_dpm_unplug(struct gmem_accel *g)
{
	struct drm_pagemap_cache *cache = g->dpm_cache;
	bool locked;

	if (!cache)
		return;
	/* (under the lookup lock, unless a signal is pending: gmem_dpm_get() makes none after) */
	locked = !drm_pagemap_cache_lock_lookup(cache);
	WRITE_ONCE(g->dpm_cache, NULL);
	if (locked)
		drm_pagemap_cache_unlock_lookup(cache);
	g->dpm_hold->dpagemap = drm_pagemap_get_from_cache_if_active(cache);
}

static size_t gmem_dpm_nr_blocks(struct gmem_dpm *dpm)
{
	size_t n;

	spin_lock(&dpm->lock);
	n = list_count_nodes(&dpm->blocks);
	spin_unlock(&dpm->lock);
	return n;
}

/* Unbind (its contexts shut down): every HBM page goes home while the DMA engine runs. */
void gmem_dpm_unbind(struct gmem_accel *g)
{
	struct drm_pagemap *dpagemap = g->dpm_hold ? g->dpm_hold->dpagemap : NULL;
	struct gmem_dpm *dpm;
	size_t n;

	if (!dpagemap)
		return;		/* (unused: no page of it is anywhere) */
	dpm = to_dpm(dpagemap);
	/* each at most once: one that cannot move stays until its pages are freed */
	n = gmem_dpm_nr_blocks(dpm);
	while (n-- && gmem_dpm_evict_one(dpm, NULL, false))
		;
	/*
	 * A CPU fault bringing an allocation home meanwhile holds its pages, which the eviction
	 * then passes by: its copy runs on queue 0 until this returns. So, while allocations go
	 * (seconds without one going: those cannot move), wait and evict again.
	 */
	for (unsigned long deadline = jiffies + 5 * HZ; (n = gmem_dpm_nr_blocks(dpm)) &&
	     time_before(jiffies, deadline);) {
		msleep(20);
		gmem_dpm_evict_one(dpm, NULL, false);
		if (gmem_dpm_nr_blocks(dpm) < n)
			deadline = jiffies + 5 * HZ;
	}
}

/* Module unload: the pagemaps and allocations whose last reference went are freed. */
void gmem_dpm_exit(void)
{
	flush_work(&gmem_dpm_reap_work);
}
