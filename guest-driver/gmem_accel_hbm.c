// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the device's HBM as MEMORY_DEVICE_PRIVATE memory, or, when the device
 * says BAR2 is CPU-coherent (CAP_COHERENT), as MEMORY_DEVICE_COHERENT memory the CPU maps
 * directly (as amdkfd does for CPU-coherent VRAM): its struct pages, handed out 2 MiB chunk
 * by chunk, least recently used first to be evicted, and each page's owner. Moving data in
 * and out is gmem_accel_migrate.c's.
 */
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "gmem_accel_hbm.h"
#include "gmem_accel_oversub.h"
#include "gmem_accel_migrate.h"

struct gmem_accel *gmem_hbm_owner(struct page *page)
{
	return container_of(gmem_page_pgmap(page), struct gmem_accel, hbm.pgmap);
}

/* Is @page one of @g's HBM pages? Its byte offset in HBM goes to @offset. */
bool gmem_hbm_page(struct gmem_accel *g, struct page *page, u64 *offset)
{
	if (!is_zone_device_page(page) || gmem_page_pgmap(page) != &g->hbm.pgmap)
		return false;
	*offset = (u64)(page_to_pfn(page) - g->hbm.pfn_first) << PAGE_SHIFT;
	return true;
}

static struct gmem_chunk *gmem_chunk_of(struct gmem_hbm *hbm, unsigned long pfn)
{
	return &hbm->chunks[(pfn - hbm->pfn_first) / GMEM_WINDOW_PAGES];
}

unsigned long gmem_chunk_pfn(struct gmem_hbm *hbm, struct gmem_chunk *c)
{
	return hbm->pfn_first + (c - hbm->chunks) * GMEM_WINDOW_PAGES;
}

/* A free HBM page from the fill chunk or a free one; NULL if every chunk is in use. */
struct page *gmem_hbm_take(struct gmem_accel *g)
{
	struct gmem_hbm *hbm = &g->hbm;
	struct gmem_chunk *c;
	unsigned long i;

	spin_lock(&hbm->lock);
	c = hbm->fill;
	/* (a poisoned page stays busy: a chunk can have fewer free pages than unused ones) */
	i = c ? find_first_zero_bit(c->busy, GMEM_WINDOW_PAGES) : GMEM_WINDOW_PAGES;
	while (i == GMEM_WINDOW_PAGES) {
		c = list_first_entry_or_null(&hbm->free, struct gmem_chunk, link);
		if (!c) {
			spin_unlock(&hbm->lock);
			return NULL;
		}
		list_move_tail(&c->link, &hbm->lru);
		c->used_ns = gmem_oversub_busy(hbm);
		hbm->fill = c;
		gmem_dev_count(g, GMEM_DEV_HBM_CHUNKS_NOW, 1);
		i = find_first_zero_bit(c->busy, GMEM_WINDOW_PAGES);
	}
	__set_bit(i, c->busy);
	c->used++;
	spin_unlock(&hbm->lock);
	gmem_dev_count(g, GMEM_DEV_HBM_PAGES_NOW, 1);
	return pfn_to_page(gmem_chunk_pfn(hbm, c) + i);
}

/*
 * A whole free chunk, handed out as one 2 MiB folio (its first page; 7.3 migrates THPs whole);
 * NULL if no chunk without a poisoned page is free.
 */
struct page *gmem_hbm_take_huge(struct gmem_accel *g)
{
	struct gmem_hbm *hbm = &g->hbm;
	struct gmem_chunk *c;

	spin_lock(&hbm->lock);
	list_for_each_entry(c, &hbm->free, link) {
		if (!bitmap_empty(c->poisoned, GMEM_WINDOW_PAGES))
			continue;
		list_move_tail(&c->link, &hbm->lru);
		bitmap_fill(c->busy, GMEM_WINDOW_PAGES);
		c->used = GMEM_WINDOW_PAGES;
		c->huge = true;
		c->used_ns = gmem_oversub_busy(hbm);
		spin_unlock(&hbm->lock);
		gmem_dev_count(g, GMEM_DEV_HBM_CHUNKS_NOW, 1);
		gmem_dev_count(g, GMEM_DEV_HBM_PAGES_NOW, GMEM_WINDOW_PAGES);
		return pfn_to_page(gmem_chunk_pfn(hbm, c));
	}
	spin_unlock(&hbm->lock);
	return NULL;
}

/*
 * The device is about to use @page (its fault maps it): its chunk becomes the most recently
 * used, the last to be evicted. The device reports no accesses, so this and filling a chunk
 * are what "recently used" means.
 */
void gmem_hbm_touch(struct gmem_accel *g, struct page *page)
{
	struct gmem_hbm *hbm = &g->hbm;
	struct gmem_chunk *c = gmem_chunk_of(hbm, page_to_pfn(page));

	spin_lock(&hbm->lock);
	/* (the fill chunk too: 2 MiB folios handed out since are newer than its start) */
	if (c->used) {
		list_move_tail(&c->link, &hbm->lru);
		c->used_ns = gmem_oversub_busy(hbm);
	}
	spin_unlock(&hbm->lock);
}

/*
 * @nr pages from @page hold the data of @va on in their owner's address space (they move in
 * now): eviction moves them home by address, a range at a time (gmem_evict_by_va()). Only a
 * hint: the mapping may move (mremap) or the page be freed; the eviction checks.
 */
void gmem_hbm_set_va(struct gmem_hbm *hbm, struct page *page, unsigned long nr, unsigned long va)
{
	unsigned long pfn = page_to_pfn(page);
	struct gmem_chunk *c = gmem_chunk_of(hbm, pfn);
	unsigned long first = (pfn - hbm->pfn_first) % GMEM_WINDOW_PAGES;

	for (unsigned long i = 0; i < nr && first + i < GMEM_WINDOW_PAGES; i++)
		WRITE_ONCE(c->va[first + i], va + i * PAGE_SIZE);
}

/* The address HBM page @pfn's data had when it moved in (gmem_hbm_set_va()); 0 if unknown. */
unsigned long gmem_hbm_va(struct gmem_hbm *hbm, unsigned long pfn)
{
	return READ_ONCE(gmem_chunk_of(hbm, pfn)->va[(pfn - hbm->pfn_first) % GMEM_WINDOW_PAGES]);
}

/*
 * Object memory: @npages (1, 16 or 512: one device page of an object) of HBM aligned to their
 * size, from a chunk that holds objects already or else a free one. Such a chunk leaves the
 * migration's lists: objects are not evicted with migrated pages. *@off: the HBM offset.
 * -ENOSPC if no chunk has room (the caller may evict migrated pages and retry).
 */
int gmem_hbm_obj_take(struct gmem_accel *g, unsigned int npages, u64 *off)
{
	struct gmem_hbm *hbm = &g->hbm;
	struct gmem_chunk *c;
	unsigned long i;

	spin_lock(&hbm->lock);
	if (npages < GMEM_WINDOW_PAGES) {
		list_for_each_entry(c, &hbm->objs, link) {
			i = bitmap_find_next_zero_area(c->busy, GMEM_WINDOW_PAGES, 0, npages,
						       npages - 1);
			if (i + npages <= GMEM_WINDOW_PAGES)
				goto found;
		}
	}
	list_for_each_entry(c, &hbm->free, link) {
		/* (a poisoned page stays busy, so it is never part of an area) */
		i = bitmap_find_next_zero_area(c->busy, GMEM_WINDOW_PAGES, 0, npages, npages - 1);
		if (i + npages <= GMEM_WINDOW_PAGES) {
			list_move_tail(&c->link, &hbm->objs);
			goto found;
		}
	}
	spin_unlock(&hbm->lock);
	return -ENOSPC;
found:
	bitmap_set(c->busy, i, npages);
	c->obj_pages += npages;
	spin_unlock(&hbm->lock);
	*off = ((u64)(c - hbm->chunks) * GMEM_WINDOW_PAGES + i) << PAGE_SHIFT;
	gmem_dev_count(g, GMEM_DEV_OBJ_HBM_PAGES_NOW, npages);
	return 0;
}

/* Give back what gmem_hbm_obj_take() gave; after unbind (no chunks) only the count. */
void gmem_hbm_obj_give(struct gmem_accel *g, u64 off, unsigned int npages)
{
	struct gmem_hbm *hbm = &g->hbm;
	unsigned long first = (off >> PAGE_SHIFT) % GMEM_WINDOW_PAGES;
	struct gmem_chunk *c;

	spin_lock(&hbm->lock);
	if (hbm->chunks && !WARN_ON_ONCE((off >> GMEM_HUGE_SHIFT) >= hbm->nchunks)) {
		c = &hbm->chunks[off >> GMEM_HUGE_SHIFT];
		for (unsigned long i = first; i < first + npages; i++)
			if (!test_bit(i, c->poisoned))
				__clear_bit(i, c->busy);
		c->obj_pages -= min(npages, c->obj_pages);
		if (!c->obj_pages)
			list_move_tail(&c->link, &hbm->free);
	}
	spin_unlock(&hbm->lock);
	gmem_dev_count(g, GMEM_DEV_OBJ_HBM_PAGES_NOW, -(s64)npages);
}

/* Is a chunk free: room for a whole window without evicting anything? */
bool gmem_hbm_has_free_chunk(struct gmem_accel *g)
{
	struct gmem_hbm *hbm = &g->hbm;
	bool free;

	spin_lock(&hbm->lock);
	free = !list_empty(&hbm->free);
	spin_unlock(&hbm->lock);
	return free;
}

/* Bytes of HBM in chunks nobody uses: what an object can have without evicting anything. */
u64 gmem_hbm_free_bytes(struct gmem_accel *g)
{
	struct gmem_hbm *hbm = &g->hbm;
	u64 n;

	spin_lock(&hbm->lock);
	n = list_count_nodes(&hbm->free) * GMEM_HUGE_SIZE;
	spin_unlock(&hbm->lock);
	return n;
}

/* Pages a migration can have without evicting anything: free chunks' and the fill chunk's. */
unsigned long gmem_hbm_free_pages(struct gmem_accel *g)
{
	struct gmem_hbm *hbm = &g->hbm;
	unsigned long n;

	spin_lock(&hbm->lock);
	n = list_count_nodes(&hbm->free) * GMEM_WINDOW_PAGES;
	if (hbm->fill)
		n += GMEM_WINDOW_PAGES - hbm->fill->used;
	spin_unlock(&hbm->lock);
	return n;
}

struct gmem_owner *gmem_owner_create(struct mm_struct *mm)
{
	struct gmem_owner *owner = kzalloc(sizeof(*owner), GFP_KERNEL);

	if (!owner)
		return NULL;
	kref_init(&owner->ref);
	owner->mm = mm;
	mmgrab(mm);
	return owner;
}

static void gmem_owner_release(struct kref *ref)
{
	struct gmem_owner *owner = container_of(ref, struct gmem_owner, ref);

	mmdrop(owner->mm);
	kfree(owner);
}

void gmem_owner_put(struct gmem_owner *owner)
{
	if (owner)
		kref_put(&owner->ref, gmem_owner_release);
}

/*
 * The owner of HBM page @page, referenced; NULL if the page is free. *@nr: how many pages
 * from @page on are known to share it (the rest of a 2 MiB folio; else 1).
 */
struct gmem_owner *gmem_page_owner_get(struct gmem_hbm *hbm, struct page *page,
				       unsigned long *nr)
{
	unsigned long pfn = page_to_pfn(page);
	struct gmem_chunk *c = gmem_chunk_of(hbm, pfn);
	struct gmem_owner *owner;

	spin_lock(&hbm->lock);	/* folio_free() drops the page's reference under it */
	*nr = 1;
	if (c->huge) {
		/* A tail page's zone_device_data is folio metadata: the head's says. */
		*nr = GMEM_WINDOW_PAGES - (pfn - hbm->pfn_first) % GMEM_WINDOW_PAGES;
		page = pfn_to_page(gmem_chunk_pfn(hbm, c));
	}
	owner = page->zone_device_data;
	if (owner)
		kref_get(&owner->ref);
	spin_unlock(&hbm->lock);
	return owner;
}

void gmem_hbm_folio_free(struct folio *folio)
{
	struct page *page = folio_page(folio, 0);
	struct gmem_accel *g = gmem_hbm_owner(page);
	struct gmem_hbm *hbm = &g->hbm;
	unsigned long pfn = page_to_pfn(page), nr = folio_nr_pages(folio);
	unsigned long first = (pfn - hbm->pfn_first) % GMEM_WINDOW_PAGES;
	struct gmem_chunk *c = gmem_chunk_of(hbm, pfn);
	struct gmem_owner *owner;

	spin_lock(&hbm->lock);
	owner = page->zone_device_data;
	/* A free page has none (a 2 MiB folio's tails held folio metadata there). */
	for (unsigned long i = 0; i < nr; i++)
		folio_page(folio, i)->zone_device_data = NULL;
	c->huge = false;
	/* (a poisoned page stays busy) */
	for (unsigned long i = first; i < first + nr && i < GMEM_WINDOW_PAGES; i++)
		if (!test_bit(i, c->poisoned))
			__clear_bit(i, c->busy);
	c->used -= min_t(unsigned long, nr, c->used);
	if (!c->used) {
		if (c == hbm->fill)
			hbm->fill = NULL;
		list_move_tail(&c->link, &hbm->free);
		gmem_dev_count(g, GMEM_DEV_HBM_CHUNKS_NOW, -1);
	}
	spin_unlock(&hbm->lock);
	if (owner)
		atomic_long_sub(nr, &owner->pages);
	gmem_owner_put(owner);
	gmem_dev_count(g, GMEM_DEV_HBM_PAGES_NOW, -(long)nr);
}

/*
 * The kernel splits a 2 MiB HBM folio (a partial munmap, mprotect or fork of it; 7.3): each
 * new folio @tail takes the owner, with a reference of its own, and what the core leaves to
 * the driver (dev_pagemap_ops.folio_split); @tail NULL: the split is done, the chunk holds
 * pages now.
 */
void gmem_hbm_folio_split(struct folio *head, struct folio *tail)
{
	struct page *page = folio_page(head, 0);
	struct gmem_hbm *hbm = &gmem_hbm_owner(page)->hbm;
	struct gmem_owner *owner;

	spin_lock(&hbm->lock);
	if (!tail) {
		gmem_chunk_of(hbm, page_to_pfn(page))->huge = false;
	} else {
		owner = page->zone_device_data;
		if (owner)
			kref_get(&owner->ref);
		folio_page(tail, 0)->zone_device_data = owner;
		gmem_folio_split_init(head, tail);
	}
	spin_unlock(&hbm->lock);
}

/*
 * The device cannot read HBM page @page any more (an engine step on it failed with POISON):
 * it stays busy once freed, so it is never handed out again. Its data is lost; whoever maps
 * it gets SIGBUS (gmem_accel_migrate.c).
 */
void gmem_hbm_poison(struct gmem_accel *g, struct page *page)
{
	struct gmem_hbm *hbm = &g->hbm;
	unsigned long pfn = page_to_pfn(page);
	struct gmem_chunk *c = gmem_chunk_of(hbm, pfn);
	bool was;

	spin_lock(&hbm->lock);
	was = __test_and_set_bit((pfn - hbm->pfn_first) % GMEM_WINDOW_PAGES, c->poisoned);
	spin_unlock(&hbm->lock);
	if (!was) {
		gmem_dev_count(g, GMEM_DEV_HBM_PAGES_POISONED, 1);
		dev_err(&g->pdev->dev,
			"HBM page at %#llx is poisoned: never used again; whoever had data there gets SIGBUS\n",
			(u64)(pfn - hbm->pfn_first) << PAGE_SHIFT);
	}
}

/* Is any of the @nr pages from @page (inside one chunk) poisoned? */
bool gmem_hbm_any_poisoned(struct gmem_accel *g, struct page *page, unsigned long nr)
{
	struct gmem_hbm *hbm = &g->hbm;
	unsigned long pfn = page_to_pfn(page);
	unsigned long first = (pfn - hbm->pfn_first) % GMEM_WINDOW_PAGES;

	return find_next_bit(gmem_chunk_of(hbm, pfn)->poisoned, first + nr, first) < first + nr;
}

bool gmem_hbm_poisoned(struct gmem_accel *g, struct page *page)
{
	struct gmem_hbm *hbm = &g->hbm;
	unsigned long pfn = page_to_pfn(page);

	return test_bit((pfn - hbm->pfn_first) % GMEM_WINDOW_PAGES,
			gmem_chunk_of(hbm, pfn)->poisoned);
}

/*
 * The range as it was given: request_free_mem_region() rounds the size up to a memory section
 * (128 MiB on x86), so a 64 MiB HBM holds a 128 MiB region, which only its full size frees.
 */
static void gmem_hbm_release_range(struct gmem_accel *g)
{
	struct gmem_hbm *hbm = &g->hbm;

	if (hbm->pgmap.type == MEMORY_DEVICE_COHERENT)
		pci_release_region(g->pdev, GMEM_BAR_HBM);
	else
		release_mem_region(hbm->res->start, resource_size(hbm->res));
	hbm->res = NULL;
}

/* Physical addresses for coherent HBM: BAR2 itself. */
static struct resource *gmem_hbm_bar(struct gmem_accel *g)
{
	struct pci_dev *pdev = g->pdev;
	int ret = pci_request_region(pdev, GMEM_BAR_HBM, GMEM_ACCEL_NAME " hbm");

	if (ret)
		return ERR_PTR(ret);
	return &pdev->resource[GMEM_BAR_HBM];
}

int gmem_hbm_init(struct gmem_accel *g)
{
	struct gmem_hbm *hbm = &g->hbm;
	u64 size = ALIGN_DOWN(g->info.hbm_size, GMEM_HUGE_SIZE);
	bool coherent = g->info.caps & GMEM_CAP_COHERENT;
	struct resource *res;
	void *addr;

	spin_lock_init(&hbm->lock);
	INIT_LIST_HEAD(&hbm->free);
	INIT_LIST_HEAD(&hbm->lru);
	INIT_LIST_HEAD(&hbm->objs);
	INIT_WORK(&g->evict_work, gmem_evict_work);
	/* (the DRM front end's HBM is drm_pagemap's: gmem_accel_drm_pagemap.c) */
	hbm->nchunks = g->hbm_drm ? 0 : size / GMEM_HUGE_SIZE;
	if (!hbm->nchunks)
		return 0;	/* nothing to migrate into */
	hbm->chunks = kvcalloc(hbm->nchunks, sizeof(*hbm->chunks), GFP_KERNEL);
	if (!hbm->chunks)
		return -ENOMEM;
	for (unsigned int c = 0; c < hbm->nchunks; c++)
		list_add_tail(&hbm->chunks[c].link, &hbm->free);

	/* Device-private pages need physical addresses nothing else uses: a free range. */
	res = coherent ? gmem_hbm_bar(g)
		       : request_free_mem_region(&iomem_resource, size, "gmem_accel hbm");
	if (IS_ERR(res)) {
		kvfree(hbm->chunks);
		return PTR_ERR(res);
	}
	hbm->res = res;
	hbm->pgmap.type = coherent ? MEMORY_DEVICE_COHERENT : MEMORY_DEVICE_PRIVATE;
	hbm->pgmap.range.start = res->start;
	hbm->pgmap.range.end = res->start + size - 1;
	hbm->pgmap.nr_range = 1;
	hbm->pgmap.ops = coherent ? &gmem_hbm_coherent_ops : &gmem_hbm_private_ops;
	hbm->pgmap.owner = g;
	addr = memremap_pages(&hbm->pgmap, dev_to_node(&g->pdev->dev));
	if (IS_ERR(addr)) {
		gmem_hbm_release_range(g);
		kvfree(hbm->chunks);
		return PTR_ERR(addr);
	}
	hbm->pfn_first = res->start >> PAGE_SHIFT;
	hbm->mapped = true;
	return 0;
}

/* Unbind: every page goes back to system memory, then the pages go away. */
void gmem_hbm_fini(struct gmem_accel *g)
{
	struct gmem_hbm *hbm = &g->hbm;
	struct gmem_chunk *chunks;

	if (!hbm->mapped)
		return;
	hbm->mapped = false;
	memunmap_pages(&hbm->pgmap);
	gmem_hbm_release_range(g);
	/* Objects may outlive the device: gmem_hbm_obj_give() then finds no chunks. */
	spin_lock(&hbm->lock);
	chunks = hbm->chunks;
	hbm->chunks = NULL;
	spin_unlock(&hbm->lock);
	kvfree(chunks);
}

void gmem_hbm_debugfs_show(struct gmem_accel *g, struct seq_file *m)
{
	struct gmem_hbm *hbm = &g->hbm;
	unsigned int nfree = 0;
	struct gmem_chunk *c;

	spin_lock(&hbm->lock);
	list_for_each_entry(c, &hbm->free, link)
		nfree++;
	seq_printf(m, "chunks %u\nchunks_free %u\nchunk_pages %u\n", hbm->nchunks, nfree,
		   (unsigned int)GMEM_WINDOW_PAGES);
	seq_puts(m, "objects (chunk:pages objects hold):");
	list_for_each_entry(c, &hbm->objs, link)
		seq_printf(m, " %ld:%u", c - hbm->chunks, c->obj_pages);
	seq_puts(m, "\n");
	seq_puts(m, "lru (chunk:pages in use, least recently used first):");
	list_for_each_entry(c, &hbm->lru, link)
		seq_printf(m, " %ld:%u", c - hbm->chunks, c->used);
	seq_puts(m, "\n");
	spin_unlock(&hbm->lock);
}
