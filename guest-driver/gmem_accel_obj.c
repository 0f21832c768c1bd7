// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: device memory objects. A process allocates bytes in HBM or in system
 * memory, in device pages of 4 KiB, 64 KiB or 2 MiB picked by size as NVIDIA UVM picks its
 * chunks, and mmap()s the object: HBM through BAR2, write-combined, as a large-BAR GPU maps
 * VRAM; system memory as its own pages. The device reaches the object at the same virtual
 * addresses: a device fault in an object's mapping maps the object's pages with one leaf per
 * device page (gmem_obj_fault()), and the MMU notifier zaps them as it zaps any memory.
 * An object lives while a handle or a mapping refers to it. Its mappings are
 * gmem_accel_obj_map.c's.
 */
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "gmem_accel_drm.h"
#include "gmem_accel_queue.h"
#include "gmem_accel_hbm.h"
#include "gmem_accel_migrate.h"
#include "gmem_accel_obj.h"

#define GMEM_OBJ_MAX_HANDLE	((1u << 20) - 1)
#define GMEM_OBJ_MAX_ID		((1u << 20) - 1)

static DEFINE_IDA(gmem_obj_ids);

static_assert(GMEM_ACCEL_OBJ_MAX_SIZE == 1ull << GMEM_OBJ_OFFSET_SHIFT);

#define GMEM_OBJ_PLACEMENT	(GMEM_ACCEL_OBJ_HBM | GMEM_ACCEL_OBJ_SYSTEM)
#define GMEM_OBJ_PAGE_SIZES \
	(GMEM_ACCEL_OBJ_PAGE_4K | GMEM_ACCEL_OBJ_PAGE_64K | GMEM_ACCEL_OBJ_PAGE_2M)

/* Give back the device pages [0, n) of @obj hold. */
static void gmem_obj_free_pages(struct gmem_obj *obj, unsigned long n)
{
	struct gmem_accel *g = obj->g;
	unsigned int order = ilog2(obj->page_size >> PAGE_SHIFT);

	for (unsigned long i = 0; i < n; i++) {
		if (gmem_obj_in_hbm(obj) && obj->dpagemap) {
			gmem_dpm_obj_give(obj->dpagemap, obj->addr[i], obj->page_size >> PAGE_SHIFT);
			continue;
		}
		if (gmem_obj_in_hbm(obj)) {
			gmem_hbm_obj_give(g, obj->addr[i], obj->page_size >> PAGE_SHIFT);
			continue;
		}
		dma_unmap_page(g->dev.parent, obj->addr[i], obj->page_size, DMA_BIDIRECTIONAL);
		__free_pages(obj->pages[i], order);
		gmem_dev_count(g, GMEM_DEV_OBJ_SYSTEM_PAGES_NOW, -(s64)(obj->page_size >> PAGE_SHIFT));
	}
}

/* Undo the first @n device pages of @peer's mappings, then drop the peer. */
static void gmem_obj_peer_free(struct gmem_obj *obj, struct gmem_obj_peer *peer,
			       unsigned long n)
{
	struct device *dev = peer->g->dev.parent;

	for (unsigned long i = 0; i < n; i++) {
		if (gmem_obj_in_hbm(obj))
			dma_unmap_resource(dev, peer->addr[i], obj->page_size, DMA_BIDIRECTIONAL,
					   0);
		else
			dma_unmap_page(dev, peer->addr[i], obj->page_size, DMA_BIDIRECTIONAL);
	}
	put_device(&peer->g->dev);
	kvfree(peer);
}

static struct gmem_obj_peer *gmem_obj_peer_of_locked(struct gmem_obj *obj,
						     struct gmem_accel *g)
{
	struct gmem_obj_peer *p;

	lockdep_assert_held(&obj->peer_lock);
	list_for_each_entry(p, &obj->peers, link)
		if (p->g == g)
			return p;
	return NULL;
}

/* How device @g reaches @obj, if it was imported there; peers stay until the object goes. */
struct gmem_obj_peer *gmem_obj_peer_of(struct gmem_obj *obj, struct gmem_accel *g)
{
	struct gmem_obj_peer *p;

	spin_lock(&obj->peer_lock);
	p = gmem_obj_peer_of_locked(obj, g);
	spin_unlock(&obj->peer_lock);
	return p;
}

/*
 * Let device @g reach @obj (of another device) peer to peer: map each device page for @g's
 * DMA, BAR2 of the object's device for HBM (dma_map_resource(), through the IOMMU if there
 * is one) or the system memory. Once per device; 0 or -errno.
 *
 * Under the object's lock, as an eviction moves it: the peer's view is made from the
 * placement it will keep (an object with peers is never evicted), never from HBM that an
 * eviction is about to give to another object.
 */
int gmem_obj_add_peer(struct gmem_obj *obj, struct gmem_accel *g)
{
	struct device *dev = g->dev.parent;
	struct gmem_obj_peer *peer;
	unsigned long i;
	int ret = 0;

	if (gmem_obj_peer_of(obj, g))
		return 0;
	/* Before the lock, which CPU faults take under mmap_lock. */
	peer = kvzalloc(struct_size(peer, addr, obj->npages), GFP_KERNEL);
	if (!peer)
		return -ENOMEM;
	peer->g = g;
	get_device(&g->dev);
	mutex_lock(&obj->lock);
	if (gmem_obj_peer_of(obj, g)) {
		i = 0;			/* another import won */
		goto unlock;
	}
	if (gmem_obj_in_hbm(obj) && (READ_ONCE(obj->g->unbinding) || !READ_ONCE(obj->g->pdev))) {
		i = 0;
		ret = -ENODEV;		/* its BAR2 is gone */
		goto unlock;
	}
	for (i = 0; i < obj->npages; i++) {
		dma_addr_t dma = gmem_obj_in_hbm(obj) ?
			dma_map_resource(dev, obj->g->hbm_bar + obj->addr[i], obj->page_size,
					 DMA_BIDIRECTIONAL, 0) :
			dma_map_page(dev, obj->pages[i], 0, obj->page_size, DMA_BIDIRECTIONAL);

		if (dma_mapping_error(dev, dma)) {
			ret = -ENOMEM;
			goto unlock;
		}
		peer->addr[i] = dma;
	}
	spin_lock(&obj->peer_lock);
	list_add_tail(&peer->link, &obj->peers);
	spin_unlock(&obj->peer_lock);
	peer = NULL;
unlock:
	if (peer)
		gmem_obj_peer_free(obj, peer, i);
	mutex_unlock(&obj->lock);
	return ret;
}

static void gmem_obj_release(struct kref *ref)
{
	struct gmem_obj *obj = container_of(ref, struct gmem_obj, ref);
	struct gmem_obj_peer *peer, *next;
	struct gmem_accel *g = obj->g;

	list_for_each_entry_safe(peer, next, &obj->peers, link)
		gmem_obj_peer_free(obj, peer, obj->npages);

	mutex_lock(&g->obj_lock);
	list_del(&obj->link);
	mutex_unlock(&g->obj_lock);
	if (gmem_obj_is_managed(obj))
		gmem_managed_fini(obj);		/* its HBM copies */
	gmem_obj_free_pages(obj, obj->npages);
	if (obj->dpagemap)
		gmem_dpm_put(obj->dpagemap);
	gmem_dev_count(g, GMEM_DEV_OBJECTS_NOW, -1);
	ida_free(&gmem_obj_ids, obj->id);
	mutex_destroy(&obj->lock);
	kvfree(obj->addr);
	kvfree(obj->pages);
	kfree(obj);
	put_device(&g->dev);
}

void gmem_obj_put(struct gmem_obj *obj)
{
	kref_put(&obj->ref, gmem_obj_release);
}

/* The object behind @handle on @f, referenced; NULL if there is none. */
struct gmem_obj *gmem_obj_lookup(struct gmem_file *f, u32 handle)
{
	struct gmem_obj *obj;

	xa_lock(&f->objs);
	obj = xa_load(&f->objs, handle);
	if (obj)
		kref_get(&obj->ref);
	xa_unlock(&f->objs);
	return obj;
}

/* Zero @obj's HBM with the device's FILL, as many device pages a batch as a kernel run takes. */
static int gmem_obj_zero_hbm(struct gmem_obj *obj)
{
	unsigned long batch = min_t(unsigned long, obj->npages, GMEM_WINDOW_PAGES);
	struct gmem_cmd_desc *desc = kvcalloc(batch, sizeof(*desc), GFP_KERNEL);
	int ret = 0;

	if (!desc)
		return -ENOMEM;
	for (unsigned long i = 0; i < obj->npages && !ret; i += batch) {
		unsigned int n = min(batch, obj->npages - i);

		for (unsigned int k = 0; k < n; k++)
			desc[k] = (struct gmem_cmd_desc) {
				.opcode = GMEM_OP_FILL,
				.flags = GMEM_CMD_F_DST(GMEM_ADDR_HBM),
				.dst = cpu_to_le64(obj->addr[i + k]),
				.size = cpu_to_le64(obj->page_size),
			};
		ret = gmem_kernel_run(obj->g, desc, n);
	}
	kvfree(desc);
	return ret;
}

/* System memory for every device page of @obj: @pages and their bus addresses in @addr. */
static int gmem_obj_alloc_system(struct gmem_obj *obj, struct page **pages, u64 *addr)
{
	struct device *dev = obj->g->dev.parent;
	unsigned int order = ilog2(obj->page_size >> PAGE_SHIFT);
	gfp_t gfp = GFP_HIGHUSER | __GFP_ZERO | __GFP_NOWARN | __GFP_RETRY_MAYFAIL |
		    __GFP_ACCOUNT | (order ? __GFP_COMP : 0);
	unsigned long i;

	for (i = 0; i < obj->npages; i++) {
		struct page *page = alloc_pages(gfp, order);
		dma_addr_t dma;

		if (!page)
			break;
		dma = dma_map_page(dev, page, 0, obj->page_size, DMA_BIDIRECTIONAL);
		if (dma_mapping_error(dev, dma)) {
			__free_pages(page, order);
			break;
		}
		pages[i] = page;
		addr[i] = dma;
	}
	if (i == obj->npages) {
		gmem_dev_count(obj->g, GMEM_DEV_OBJ_SYSTEM_PAGES_NOW,
			       obj->size >> PAGE_SHIFT);
		return 0;
	}
	while (i--) {
		dma_unmap_page(dev, addr[i], obj->page_size, DMA_BIDIRECTIONAL);
		__free_pages(pages[i], order);
	}
	return -ENOMEM;
}

/*
 * Move HBM object @obj to system memory to make room: unmap it from every process at once
 * (its CPU mappings are in the device's address_space; the MMU notifier then zaps every
 * context's device entries, and the TLB's), copy it with the DMA engine, and point it at its
 * new pages, which the next faults map. Pinned objects, objects other devices reach (peers)
 * and objects in system memory stay. True if it moved.
 */
static bool gmem_obj_evict(struct gmem_obj *obj)
{
	unsigned long batch = min_t(unsigned long, obj->npages, GMEM_WINDOW_PAGES), i;
	struct page **pages = kvcalloc(obj->npages, sizeof(*pages), GFP_KERNEL);
	u64 *addr = kvcalloc(obj->npages, sizeof(*addr), GFP_KERNEL);
	struct gmem_cmd_desc *desc = kvcalloc(batch, sizeof(*desc), GFP_KERNEL);
	struct gmem_accel *g = obj->g;
	bool moved = false;
	int ret = 0;

	if (!pages || !addr || !desc)
		goto out;
	mutex_lock(&obj->lock);
	if (!gmem_obj_in_hbm(obj) || (obj->flags & GMEM_ACCEL_OBJ_PINNED) ||
	    !list_empty(&obj->peers) || gmem_obj_alloc_system(obj, pages, addr))
		goto unlock;
	unmap_mapping_range(g->obj_inode->i_mapping, gmem_obj_mmap_offset(obj), obj->size, 1);
	for (i = 0; i < obj->npages && !ret; i += batch) {
		unsigned int n = min(batch, obj->npages - i);

		for (unsigned int k = 0; k < n; k++)
			desc[k] = (struct gmem_cmd_desc) {
				.opcode = GMEM_OP_COPY,
				.flags = GMEM_CMD_F_DST(GMEM_ADDR_SYS) |
					 GMEM_CMD_F_SRC(GMEM_ADDR_HBM),
				.dst = cpu_to_le64(addr[i + k]),
				.src = cpu_to_le64(obj->addr[i + k]),
				.size = cpu_to_le64(obj->page_size),
			};
		ret = gmem_kernel_run(g, desc, n);
	}
	if (!ret) {
		gmem_obj_free_pages(obj, obj->npages);	/* its HBM */
		swap(obj->addr, addr);
		obj->pages = pages;
		pages = NULL;
		obj->flags = (obj->flags & ~GMEM_ACCEL_OBJ_HBM) | GMEM_ACCEL_OBJ_SYSTEM;
		gmem_dev_count(g, GMEM_DEV_OBJ_EVICTIONS, 1);
		moved = true;
	} else {	/* it stays in HBM: the faults map it there again */
		struct gmem_obj tmp = { .g = g, .page_size = obj->page_size, .pages = pages,
					.addr = addr, .flags = GMEM_ACCEL_OBJ_SYSTEM };

		gmem_obj_free_pages(&tmp, obj->npages);
	}
unlock:
	mutex_unlock(&obj->lock);
out:
	kvfree(pages);
	kvfree(addr);
	kvfree(desc);
	return moved;
}

/* Evict the least recently allocated (or evicted-for) unpinned HBM object; true if one moved. */
static bool gmem_obj_evict_one(struct gmem_accel *g)
{
	struct gmem_obj *obj, *victim = NULL;
	bool moved;

	mutex_lock(&g->obj_lock);
	list_for_each_entry(obj, &g->objs, link) {
		u32 flags = READ_ONCE(obj->flags);

		if ((flags & GMEM_ACCEL_OBJ_HBM) && !(flags & GMEM_ACCEL_OBJ_PINNED) &&
		    list_empty_careful(&obj->peers) && kref_get_unless_zero(&obj->ref)) {
			victim = obj;
			break;
		}
	}
	mutex_unlock(&g->obj_lock);
	if (!victim)
		return false;
	moved = gmem_obj_evict(victim);
	gmem_obj_put(victim);
	return moved;
}

/*
 * @npages of object HBM (gmem_hbm_obj_take()). When HBM is full, managed objects' HBM copies
 * give way first (they have a home in system memory already), then migrated pages, the least
 * recently used chunk first, as for a migration; then unpinned objects, oldest first.
 * -ENOSPC if it cannot be had. @mine: a managed object whose copies stay (the one the HBM is
 * for), or NULL. With no lock held.
 */
int gmem_obj_hbm_take(struct gmem_accel *g, unsigned int npages, u64 *off, struct gmem_obj *mine)
{
	unsigned int evictions = 0;
	int ret;

	while ((ret = gmem_hbm_obj_take(g, npages, off))) {
		if (evictions++ == g->hbm.nchunks ||
		    !(gmem_managed_evict_one(g, mine) || gmem_hbm_evict_lru(g) ||
		      gmem_obj_evict_one(g)))
			break;
	}
	return ret;
}

/*
 * HBM for every device page of @obj (gmem_obj_hbm_take(); on the DRM front end, from the
 * device's drm_pagemap, whose HBM it is); -ENOSPC if it cannot be had.
 */
static int gmem_obj_take_hbm(struct gmem_obj *obj)
{
	unsigned long i;
	int ret = 0;

	if (obj->g->hbm_drm) {
		obj->dpagemap = gmem_dpm_get(obj->g);
		if (IS_ERR_OR_NULL(obj->dpagemap)) {
			ret = obj->dpagemap ? PTR_ERR(obj->dpagemap) : -ENODEV;
			obj->dpagemap = NULL;
			return ret;
		}
	}
	for (i = 0; i < obj->npages; i++) {
		if (obj->dpagemap)
			ret = gmem_dpm_obj_take(obj->dpagemap, obj->page_size >> PAGE_SHIFT,
						&obj->addr[i]);
		else
			ret = gmem_obj_hbm_take(obj->g, obj->page_size >> PAGE_SHIFT,
						&obj->addr[i], NULL);
		if (ret)
			break;
	}
	if (!ret)
		ret = gmem_obj_zero_hbm(obj);
	if (ret)
		gmem_obj_free_pages(obj, i);
	return ret;
}

/* Zeroed system memory for every device page of @obj, one compound page each, DMA-mapped. */
static int gmem_obj_take_system(struct gmem_obj *obj)
{
	obj->pages = kvcalloc(obj->npages, sizeof(*obj->pages), GFP_KERNEL);
	if (!obj->pages)
		return -ENOMEM;
	return gmem_obj_alloc_system(obj, obj->pages, obj->addr);
}

/* The device page size and placement an allocation asks for, or gets by default. */
static int gmem_obj_pick(struct gmem_accel *g, u64 size, u32 flags, u64 *page_size, u32 *place)
{
	u32 ps = flags & GMEM_OBJ_PAGE_SIZES;

	if ((flags & ~GMEM_ACCEL_OBJ_KNOWN) || hweight32(flags & GMEM_OBJ_PLACEMENT) > 1 ||
	    hweight32(ps) > 1 || !size || size > GMEM_ACCEL_OBJ_MAX_SIZE)
		return -EINVAL;
	/* Managed: its home is system memory, its device pages move on their own. */
	if ((flags & GMEM_ACCEL_OBJ_MANAGED) &&
	    (flags & (GMEM_OBJ_PLACEMENT | GMEM_ACCEL_OBJ_PINNED)))
		return -EINVAL;
	if (ps)
		*page_size = ps == GMEM_ACCEL_OBJ_PAGE_4K ? SZ_4K :
			     ps == GMEM_ACCEL_OBJ_PAGE_64K ? SZ_64K : SZ_2M;
	else
		*page_size = size < SZ_64K ? SZ_4K : size < SZ_2M ? SZ_64K : SZ_2M;
	*place = flags & GMEM_OBJ_PLACEMENT;
	if (flags & GMEM_ACCEL_OBJ_MANAGED)
		*place = GMEM_ACCEL_OBJ_SYSTEM;
	if (*place == GMEM_ACCEL_OBJ_HBM && !g->hbm.mapped && !g->hbm_drm)
		return -ENODEV;		/* this device has no HBM to give */
	if (!*place)	/* HBM while it has room without evicting anything */
		*place = g->hbm.mapped && gmem_hbm_free_bytes(g) >= round_up(size, *page_size) ?
			 GMEM_ACCEL_OBJ_HBM : GMEM_ACCEL_OBJ_SYSTEM;
	/* Never more than half the system's memory: a request fails, it does not OOM-kill. */
	if (*place == GMEM_ACCEL_OBJ_SYSTEM &&
	    round_up(size, *page_size) > (u64)totalram_pages() << (PAGE_SHIFT - 1))
		return -ENOMEM;
	return 0;
}

/* A new object of @size bytes on @g (GMEM_ACCEL_OBJ_* @flags), with one reference; ERR_PTR. */
struct gmem_obj *gmem_obj_create(struct gmem_accel *g, u64 size, u32 flags)
{
	struct gmem_obj *obj;
	u64 page_size;
	u32 place;
	int ret;

	ret = gmem_obj_pick(g, size, flags, &page_size, &place);
	if (ret)
		return ERR_PTR(ret);
	obj = kzalloc(sizeof(*obj), GFP_KERNEL);
	if (!obj)
		return ERR_PTR(-ENOMEM);
	kref_init(&obj->ref);
	mutex_init(&obj->lock);
	obj->g = g;
	spin_lock_init(&obj->peer_lock);
	INIT_LIST_HEAD(&obj->peers);
	obj->page_size = page_size;
	obj->size = round_up(size, page_size);
	obj->npages = obj->size / page_size;
	if (flags & GMEM_ACCEL_OBJ_MANAGED)
		place = GMEM_ACCEL_OBJ_MANAGED;	/* in system memory, never GMEM_ACCEL_OBJ_HBM */
	obj->flags = place | (flags & GMEM_ACCEL_OBJ_PINNED) |
		     (page_size == SZ_4K ? GMEM_ACCEL_OBJ_PAGE_4K :
		      page_size == SZ_64K ? GMEM_ACCEL_OBJ_PAGE_64K : GMEM_ACCEL_OBJ_PAGE_2M);
	obj->tgid = current->tgid;
	get_task_comm(obj->comm, current);
	obj->addr = kvcalloc(obj->npages, sizeof(*obj->addr), GFP_KERNEL);
	ret = obj->addr ? ida_alloc_range(&gmem_obj_ids, 1, GMEM_OBJ_MAX_ID, GFP_KERNEL) : -ENOMEM;
	if (ret > 0) {
		obj->id = ret;
		ret = place == GMEM_ACCEL_OBJ_HBM ? gmem_obj_take_hbm(obj) : gmem_obj_take_system(obj);
		if (!ret && place == GMEM_ACCEL_OBJ_MANAGED) {
			ret = gmem_managed_init(obj);
			if (ret)
				gmem_obj_free_pages(obj, obj->npages);
		}
		if (ret)
			ida_free(&gmem_obj_ids, obj->id);
	}
	if (ret) {
		gmem_managed_fini(obj);
		if (obj->dpagemap)
			gmem_dpm_put(obj->dpagemap);
		kvfree(obj->addr);
		kvfree(obj->pages);
		kfree(obj);
		return ERR_PTR(ret);
	}
	get_device(&g->dev);
	gmem_dev_count(g, GMEM_DEV_OBJECTS_NOW, 1);
	mutex_lock(&g->obj_lock);
	list_add_tail(&obj->link, &g->objs);
	mutex_unlock(&g->obj_lock);
	return obj;
}

u64 gmem_obj_mmap_offset(const struct gmem_obj *obj)
{
	return (u64)obj->id << GMEM_OBJ_OFFSET_SHIFT;
}

/* The object with id @id if @f holds a handle to it, referenced; else NULL. */
struct gmem_obj *gmem_obj_lookup_id(struct gmem_file *f, unsigned long id)
{
	struct gmem_obj *obj, *found = NULL;
	unsigned long h;

	xa_lock(&f->objs);
	xa_for_each(&f->objs, h, obj) {
		if (obj->id == id) {
			kref_get(&obj->ref);
			found = obj;
			break;
		}
	}
	xa_unlock(&f->objs);
	return found;
}

int gmem_obj_add_handle(struct gmem_file *f, struct gmem_obj *obj, u32 *handle)
{
	int ret;

	kref_get(&obj->ref);
	ret = xa_alloc(&f->objs, handle, obj, XA_LIMIT(1, GMEM_OBJ_MAX_HANDLE), GFP_KERNEL);
	if (ret) {
		gmem_obj_put(obj);
		return ret == -EBUSY ? -EMFILE : ret;
	}
	return 0;
}

static long gmem_obj_alloc_ioctl(struct gmem_file *f, void __user *uarg)
{
	struct gmem_accel_obj_alloc a;
	struct gmem_obj *obj;
	u32 handle;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	obj = gmem_obj_create(f->g, a.size, a.flags);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	a.mmap_offset = gmem_obj_mmap_offset(obj);
	ret = gmem_obj_add_handle(f, obj, &handle);
	gmem_obj_put(obj);	/* the handle holds it now, or nothing does */
	if (ret)
		return ret;
	a.handle = handle;
	if (copy_to_user(uarg, &a, sizeof(a))) {
		gmem_obj_put(xa_erase(&f->objs, handle));
		return -EFAULT;
	}
	return 0;
}

static long gmem_obj_free_ioctl(struct gmem_file *f, void __user *uarg)
{
	struct gmem_accel_obj_free fr;
	struct gmem_obj *obj;

	if (copy_from_user(&fr, uarg, sizeof(fr)))
		return -EFAULT;
	if (fr.flags)
		return -EINVAL;
	obj = xa_erase(&f->objs, fr.handle);
	if (!obj)
		return -ENOENT;
	gmem_obj_put(obj);
	return 0;
}

/* What @obj is now, into @q (all but its handle). */
void gmem_obj_describe(struct gmem_obj *obj, struct gmem_accel_obj_query *q)
{
	mutex_lock(&obj->lock);
	q->flags = obj->flags;
	q->size = obj->size;
	q->page_size = obj->page_size;
	q->hbm_addr = gmem_obj_in_hbm(obj) ? obj->addr[0] : ~0ull;
	q->mmap_offset = gmem_obj_mmap_offset(obj);
	mutex_unlock(&obj->lock);
}

static long gmem_obj_query_ioctl(struct gmem_file *f, void __user *uarg)
{
	struct gmem_accel_obj_query q;
	struct gmem_obj *obj;

	if (copy_from_user(&q, uarg, sizeof(q)))
		return -EFAULT;
	obj = gmem_obj_lookup(f, q.handle);
	if (!obj)
		return -ENOENT;
	gmem_obj_describe(obj, &q);
	gmem_obj_put(obj);
	return copy_to_user(uarg, &q, sizeof(q)) ? -EFAULT : 0;
}

long gmem_obj_ioctl(struct gmem_file *f, unsigned int cmd, void __user *uarg)
{
	switch (cmd) {
	case GMEM_ACCEL_IOC_OBJ_ALLOC:
		return gmem_obj_alloc_ioctl(f, uarg);
	case GMEM_ACCEL_IOC_OBJ_FREE:
		return gmem_obj_free_ioctl(f, uarg);
	case GMEM_ACCEL_IOC_OBJ_QUERY:
		return gmem_obj_query_ioctl(f, uarg);
	case GMEM_ACCEL_IOC_OBJ_EXPORT:
		return gmem_obj_export(f, uarg);
	case GMEM_ACCEL_IOC_OBJ_IMPORT:
		return gmem_obj_import(f, uarg);
	}
	return -ENOTTY;
}

void gmem_obj_file_init(struct gmem_file *f)
{
	xa_init_flags(&f->objs, XA_FLAGS_ALLOC1);
}

/* The file closes: its handles go; mappings keep their objects. */
void gmem_obj_file_fini(struct gmem_file *f)
{
	struct gmem_obj *obj;
	unsigned long h;

	xa_for_each(&f->objs, h, obj)
		gmem_obj_put(obj);
	xa_destroy(&f->objs);
}

void gmem_obj_debugfs_show(struct gmem_accel *g, struct seq_file *m)
{
	struct gmem_obj *obj;

	seq_puts(m, "id size page_size placement hbm_addr pinned refs pid comm\n");
	mutex_lock(&g->obj_lock);
	list_for_each_entry(obj, &g->objs, link) {
		mutex_lock(&obj->lock);
		seq_printf(m, "%llu %llu %llu %s %#llx %d %u %d %s\n", obj->id, obj->size,
			   obj->page_size, gmem_obj_in_hbm(obj) ? "hbm" :
			   gmem_obj_is_managed(obj) ? "managed" : "system",
			   gmem_obj_in_hbm(obj) ? obj->addr[0] : ~0ull,
			   !!(obj->flags & GMEM_ACCEL_OBJ_PINNED), kref_read(&obj->ref),
			   obj->tgid, obj->comm);
		mutex_unlock(&obj->lock);
	}
	mutex_unlock(&g->obj_lock);
}

