// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the device's HBM as MEMORY_DEVICE_PRIVATE memory, or, when the device
 * says BAR2 is CPU-coherent (CAP_COHERENT), as MEMORY_DEVICE_COHERENT memory the CPU maps
 * directly (as amdkfd does for CPU-coherent VRAM). Process pages move
 * into HBM with migrate_vma_* (explicit migration requests) and back on a CPU fault
 * (migrate_to_ram), on request, when their context closes, when HBM is full (the least
 * recently used 2 MiB chunk is evicted) and at unbind. The device's DMA engine moves the
 * data, on the driver's own queue 0, which never waits on a page fault.
 */
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "gmem_accel.h"

/* Source and destination of one migration window, with the data's DMA mappings. */
struct gmem_migration {
	struct gmem_accel *g;
	unsigned long src[GMEM_WINDOW_PAGES];
	unsigned long dst[GMEM_WINDOW_PAGES];
	dma_addr_t dma[GMEM_WINDOW_PAGES];	/* the system page of each entry, or 0 */
	u8 desc[GMEM_WINDOW_PAGES][GMEM_CMD_SIZE];
	unsigned int ndesc;
};

static struct gmem_accel *gmem_hbm_owner(struct page *page)
{
	return container_of(page->pgmap, struct gmem_accel, hbm.pgmap);
}

/* Is @page one of @g's HBM pages? Its byte offset in HBM goes to @offset. */
bool gmem_hbm_page(struct gmem_accel *g, struct page *page, u64 *offset)
{
	if (!is_zone_device_page(page) || page->pgmap != &g->hbm.pgmap)
		return false;
	*offset = (u64)(page_to_pfn(page) - g->hbm.pfn_first) << PAGE_SHIFT;
	return true;
}

static struct gmem_chunk *gmem_chunk_of(struct gmem_hbm *hbm, unsigned long pfn)
{
	return &hbm->chunks[(pfn - hbm->pfn_first) / GMEM_WINDOW_PAGES];
}

static unsigned long gmem_chunk_pfn(struct gmem_hbm *hbm, struct gmem_chunk *c)
{
	return hbm->pfn_first + (c - hbm->chunks) * GMEM_WINDOW_PAGES;
}

/* A free HBM page from the fill chunk or a free one; NULL if every chunk is in use. */
static struct page *gmem_hbm_take(struct gmem_accel *g)
{
	struct gmem_hbm *hbm = &g->hbm;
	struct gmem_chunk *c;
	unsigned long i;

	spin_lock(&hbm->lock);
	c = hbm->fill;
	if (!c || c->used == GMEM_WINDOW_PAGES) {
		c = list_first_entry_or_null(&hbm->free, struct gmem_chunk, link);
		if (!c) {
			spin_unlock(&hbm->lock);
			return NULL;
		}
		list_move_tail(&c->link, &hbm->lru);
		hbm->fill = c;
		gmem_dev_count(g, GMEM_DEV_HBM_CHUNKS_NOW, 1);
	}
	i = find_first_zero_bit(c->busy, GMEM_WINDOW_PAGES);
	__set_bit(i, c->busy);
	c->used++;
	spin_unlock(&hbm->lock);
	gmem_dev_count(g, GMEM_DEV_HBM_PAGES_NOW, 1);
	return pfn_to_page(gmem_chunk_pfn(hbm, c) + i);
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
	if (c->used && c != hbm->fill)
		list_move_tail(&c->link, &hbm->lru);
	spin_unlock(&hbm->lock);
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

/* The owner of HBM page @page, referenced; NULL if the page is free. */
static struct gmem_owner *gmem_page_owner_get(struct gmem_hbm *hbm, struct page *page)
{
	struct gmem_owner *owner;

	spin_lock(&hbm->lock);	/* page_free() drops the page's reference under it */
	owner = page->zone_device_data;
	if (owner)
		kref_get(&owner->ref);
	spin_unlock(&hbm->lock);
	return owner;
}

static void gmem_hbm_page_free(struct page *page)
{
	struct gmem_accel *g = gmem_hbm_owner(page);
	struct gmem_hbm *hbm = &g->hbm;
	unsigned long pfn = page_to_pfn(page);
	struct gmem_chunk *c = gmem_chunk_of(hbm, pfn);
	struct gmem_owner *owner;

	spin_lock(&hbm->lock);
	owner = page->zone_device_data;
	page->zone_device_data = NULL;
	__clear_bit((pfn - hbm->pfn_first) % GMEM_WINDOW_PAGES, c->busy);
	if (!--c->used) {
		if (c == hbm->fill)
			hbm->fill = NULL;
		list_move_tail(&c->link, &hbm->free);
		gmem_dev_count(g, GMEM_DEV_HBM_CHUNKS_NOW, -1);
	}
	spin_unlock(&hbm->lock);
	gmem_owner_put(owner);
	gmem_dev_count(g, GMEM_DEV_HBM_PAGES_NOW, -1);
}

static void gmem_evict_range(struct gmem_accel *g, unsigned long pfn, unsigned long npages,
			     struct gmem_owner *only, struct mm_struct *held);

/*
 * An HBM page for context @ctx, locked and referenced as migrate_vma wants it. When HBM is
 * full the least recently used chunk is evicted to system memory; NULL if nothing could
 * be freed (every page in use is pinned or mid-migration).
 */
static struct page *gmem_hbm_alloc(struct gmem_ctx *ctx)
{
	struct gmem_accel *g = ctx->g;
	struct gmem_hbm *hbm = &g->hbm;
	struct page *page;

	for (unsigned int tries = 0; !(page = gmem_hbm_take(g)); tries++) {
		struct gmem_chunk *victim;

		if (tries == hbm->nchunks)
			return NULL;
		spin_lock(&hbm->lock);
		victim = list_first_entry_or_null(&hbm->lru, struct gmem_chunk, link);
		if (victim)	/* next time, the next one, should this one not empty */
			list_move_tail(&victim->link, &hbm->lru);
		spin_unlock(&hbm->lock);
		if (!victim)
			return NULL;
		gmem_dev_count(g, GMEM_DEV_EVICTIONS, 1);
		gmem_evict_range(g, gmem_chunk_pfn(hbm, victim), GMEM_WINDOW_PAGES, NULL, ctx->mm);
	}
	zone_device_page_init(page);
	kref_get(&ctx->owner->ref);
	page->zone_device_data = ctx->owner;
	return page;
}

/*
 * Grow the last descriptor by a page if it is an @op with @flags that ends just before @dst
 * (and @src): pages that sit in a row on both sides (an HBM chunk, a split THP) move with
 * one command instead of one each.
 */
static bool gmem_extend_last(struct gmem_migration *m, u8 op, u8 flags, u64 dst, u64 src)
{
	void *d;
	u64 size;

	if (!m->ndesc)
		return false;
	d = m->desc[m->ndesc - 1];
	if (*(u8 *)(d + GMEM_CMD_OFF_OPCODE) != op || *(u8 *)(d + GMEM_CMD_OFF_FLAGS) != flags)
		return false;
	size = le64_to_cpu(*(__le64 *)(d + GMEM_CMD_OFF_SIZE));
	if (le64_to_cpu(*(__le64 *)(d + GMEM_CMD_OFF_DST)) + size != dst ||
	    (op == GMEM_OP_COPY && le64_to_cpu(*(__le64 *)(d + GMEM_CMD_OFF_SRC)) + size != src))
		return false;
	*(__le64 *)(d + GMEM_CMD_OFF_SIZE) = cpu_to_le64(size + PAGE_SIZE);
	return true;
}

static void gmem_add_copy(struct gmem_migration *m, u8 dst_kind, u64 dst, u8 src_kind,
			  u64 src)
{
	u8 flags = GMEM_CMD_F_DST(dst_kind) | GMEM_CMD_F_SRC(src_kind);

	if (!gmem_extend_last(m, GMEM_OP_COPY, flags, dst, src))
		gmem_put_desc(m->desc[m->ndesc++], GMEM_OP_COPY, flags, 0, dst, src, PAGE_SIZE,
			      0, 0, 0, 0);
}

static void gmem_add_zero(struct gmem_migration *m, u64 hbm_offset)
{
	u8 flags = GMEM_CMD_F_DST(GMEM_ADDR_HBM);

	if (!gmem_extend_last(m, GMEM_OP_FILL, flags, hbm_offset, 0))
		gmem_put_desc(m->desc[m->ndesc++], GMEM_OP_FILL, flags, 0, hbm_offset, 0,
			      PAGE_SIZE, 0, 0, 0, 0);
}

/* DMA-map system page @page as entry @i's; false if it cannot be. */
static bool gmem_map_sys(struct gmem_migration *m, unsigned long i, struct page *page)
{
	struct device *dev = &m->g->pdev->dev;

	m->dma[i] = dma_map_page(dev, page, 0, PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(dev, m->dma[i])) {
		m->dma[i] = 0;
		return false;
	}
	return true;
}

/* Run the copies; on failure give the new pages back so nothing migrates. */
static int gmem_migration_copy(struct gmem_migration *m, unsigned long npages)
{
	struct device *dev = &m->g->pdev->dev;
	int ret = m->ndesc ? gmem_kernel_run(m->g, m->desc, m->ndesc) : 0;

	for (unsigned long i = 0; i < npages; i++) {
		struct page *dpage = migrate_pfn_to_page(m->dst[i]);

		if (m->dma[i])
			dma_unmap_page(dev, m->dma[i], PAGE_SIZE, DMA_BIDIRECTIONAL);
		m->dma[i] = 0;
		if (ret && dpage) {
			unlock_page(dpage);
			put_page(dpage);
			m->dst[i] = 0;
		}
	}
	if (ret)
		dev_err_ratelimited(&m->g->pdev->dev, "HBM migration copy failed: %d\n", ret);
	return ret;
}

/*
 * The copy half of moving HBM pages (m->src, from migrate_vma_setup or migrate_device_range)
 * to system memory: new pages, filled by the device. Pages not owned by @owner (when set)
 * stay. @vma and @start place new pages near the process (NULL: any node).
 */
static int gmem_copy_to_ram(struct gmem_migration *m, unsigned long npages,
			    struct vm_area_struct *vma, unsigned long start, void *owner)
{
	m->ndesc = 0;
	for (unsigned long i = 0; i < npages; i++) {
		struct page *spage = migrate_pfn_to_page(m->src[i]);
		struct page *dpage;
		u64 off;

		m->dst[i] = 0;
		m->dma[i] = 0;
		if (!spage || !(m->src[i] & MIGRATE_PFN_MIGRATE) ||
		    !gmem_hbm_page(m->g, spage, &off) ||
		    (owner && spage->zone_device_data != owner))
			continue;
		dpage = vma ? alloc_page_vma(GFP_HIGHUSER_MOVABLE, vma, start + i * PAGE_SIZE)
			    : alloc_page(GFP_HIGHUSER_MOVABLE);
		if (!dpage)
			continue;
		lock_page(dpage);
		m->dst[i] = migrate_pfn(page_to_pfn(dpage)) |
			    (m->src[i] & MIGRATE_PFN_WRITE);
		if (!gmem_map_sys(m, i, dpage)) {
			unlock_page(dpage);
			put_page(dpage);
			m->dst[i] = 0;
			continue;
		}
		gmem_add_copy(m, GMEM_ADDR_SYS, m->dma[i], GMEM_ADDR_HBM, off);
	}
	return gmem_migration_copy(m, npages);
}

static unsigned long gmem_count_migrated(struct gmem_migration *m, unsigned long npages)
{
	unsigned long n = 0;

	for (unsigned long i = 0; i < npages; i++)
		n += m->dst[i] && (m->src[i] & MIGRATE_PFN_MIGRATE);
	return n;
}

/*
 * Move HBM pages in [pfn, pfn + npages) to system memory, whichever processes map them
 * (only @owner's, when set). Their mappings, CPU and device, are updated by the kernel's
 * rmap walk and the notifiers it calls.
 */
/*
 * migrate_device_range() takes HBM pages whatever maps them, and 6.12's check lets through a
 * page that only a device-exclusive entry holds (make_device_exclusive_range() on coherent HBM:
 * no mapcount, one reference). migrate_device_finalize() would then turn that entry into a
 * present PTE with a new reference, the entry's never dropped: the page would outlive its
 * process (found by the ioctl fuzzer: EXCLUSIVE, then RELEASE). Give back, as the kernel's
 * own restore path does, every page unmapped for the move that someone else still holds.
 */
static void gmem_evict_skip_held(unsigned long *src, unsigned long npages)
{
	for (unsigned long i = 0; i < npages; i++) {
		struct page *page = migrate_pfn_to_page(src[i]);
		struct folio *folio;

		if (!page || !(src[i] & MIGRATE_PFN_MIGRATE))
			continue;
		folio = page_folio(page);
		if (folio_mapped(folio) || folio_ref_count(folio) <= 1)
			continue;	/* only our reference: free to move */
		src[i] = 0;
		folio_unlock(folio);
		folio_put(folio);
	}
}

/*
 * The mmap lock for reading, with no munmap() in flight: munmap() detaches the VMAs under the
 * write lock but zaps them and frees their anon_vmas after downgrading it to a read lock, so
 * a plain read lock may share the mm with a teardown. Taking it for writing waits for that
 * to end; downgrading keeps out the next one and lets page faults in.
 */
static void gmem_mmap_lock_settled(struct mm_struct *mm)
{
	mmap_write_lock(mm);
	mmap_write_downgrade(mm);
}

static bool gmem_mmap_trylock_settled(struct mm_struct *mm)
{
	/* 6.12 has no mmap_write_trylock(); this is what it would be, less the tracepoint. */
	if (!down_write_trylock(&mm->mmap_lock))
		return false;
	mmap_write_downgrade(mm);
	return true;
}

/*
 * Move @owner's HBM pages in [pfn, pfn + npages) home. migrate_device_range() unmaps them
 * wherever they are mapped and migrate_device_finalize() walks their anon_vma to map them
 * again, with no reference on it: a thread of the process that munmaps the range in between
 * frees it (KASAN: use-after-free in rmap_walk_anon). So the owner's mmap lock is held
 * throughout with no munmap() in flight (gmem_mmap_lock_settled()): its VMAs, and the
 * anon_vmas they keep, stay. @held: an mm the caller holds so already; any other is only
 * tried then (two processes evicting each other's pages must not wait for each other), and
 * skipped if busy. Not covered: a page the owner no longer maps but a forked child still
 * does (the child's munmap can free the anon_vma); the kernel's migrate_device_range() would
 * have to hold a reference on it, as migrate_pages() does.
 */
static void gmem_evict_owned(struct gmem_migration *m, unsigned long pfn, unsigned long npages,
			     struct gmem_owner *owner, struct mm_struct *held)
{
	struct mm_struct *mm = owner->mm;	/* mmgrab'd: even exited, its lock is there */
	unsigned long moved;

	if (mm != held) {
		if (!held)
			gmem_mmap_lock_settled(mm);
		else if (!gmem_mmap_trylock_settled(mm))
			return;
	}
	if (migrate_device_range(m->src, pfn, npages))
		goto out;
	gmem_evict_skip_held(m->src, npages);
	gmem_copy_to_ram(m, npages, NULL, 0, owner);
	migrate_device_pages(m->src, m->dst, npages);
	moved = gmem_count_migrated(m, npages);
	migrate_device_finalize(m->src, m->dst, npages);
	gmem_dev_count(m->g, GMEM_DEV_MIGRATED_TO_SYSTEM, moved);
out:
	if (mm != held)
		mmap_read_unlock(mm);
}

/*
 * Move the HBM pages in [pfn, pfn + npages) home (only @only's, when set), a run of one
 * owner's pages at a time, under that owner's mmap lock (gmem_evict_owned()).
 */
static void gmem_evict_range(struct gmem_accel *g, unsigned long pfn, unsigned long npages,
			     struct gmem_owner *only, struct mm_struct *held)
{
	struct gmem_migration *m = kvzalloc(sizeof(*m), GFP_KERNEL);
	struct gmem_hbm *hbm = &g->hbm;

	if (!m)
		return;
	m->g = g;
	for (unsigned long i = 0, run; i < npages; i += run) {
		struct gmem_owner *owner = gmem_page_owner_get(hbm, pfn_to_page(pfn + i));

		for (run = 1; i + run < npages; run++)
			if (READ_ONCE(pfn_to_page(pfn + i + run)->zone_device_data) != owner)
				break;
		if (owner && (!only || owner == only))
			gmem_evict_owned(m, pfn + i, run, owner, held);
		gmem_owner_put(owner);
		cond_resched();
	}
	kvfree(m);
}

/* Move [start, end) of @vma (one window) back to system memory. */
static int gmem_window_to_ram(struct gmem_accel *g, struct gmem_migration *m,
			      struct vm_area_struct *vma, unsigned long start, unsigned long end,
			      struct page *fault_page, unsigned long *moved)
{
	struct migrate_vma args = {
		.vma = vma,
		.start = start,
		.end = end,
		.src = m->src,
		.dst = m->dst,
		.pgmap_owner = g,
		.flags = g->hbm.pgmap.type == MEMORY_DEVICE_COHERENT ?
			 MIGRATE_VMA_SELECT_DEVICE_COHERENT : MIGRATE_VMA_SELECT_DEVICE_PRIVATE,
		.fault_page = fault_page,
	};
	unsigned long npages = (end - start) >> PAGE_SHIFT;
	int ret;

	ret = migrate_vma_setup(&args);
	if (ret)
		return ret;
	if (args.cpages)
		ret = gmem_copy_to_ram(m, npages, vma, start, NULL);
	migrate_vma_pages(&args);
	*moved = gmem_count_migrated(m, npages);
	migrate_vma_finalize(&args);
	gmem_dev_count(g, GMEM_DEV_MIGRATED_TO_SYSTEM, *moved);
	return ret;
}

/*
 * CPU access to a page in HBM: bring back the window around it — its 2 MiB block inside
 * the VMA — so that neighbours the CPU is about to touch come along.
 */
static vm_fault_t gmem_hbm_migrate_to_ram(struct vm_fault *vmf)
{
	struct gmem_accel *g = gmem_hbm_owner(vmf->page);
	struct gmem_migration *m = kvzalloc(sizeof(*m), GFP_KERNEL);
	unsigned long moved = 0;
	u64 start, end;
	int ret;

	if (!m)
		return VM_FAULT_OOM;
	gmem_window(vmf->vma, vmf->address, &start, &end);
	m->g = g;
	gmem_dev_count(g, GMEM_DEV_CPU_FAULTS, 1);
	ret = gmem_window_to_ram(g, m, vmf->vma, start, end, vmf->page, &moved);
	kvfree(m);
	if (ret == -ENOMEM)
		return VM_FAULT_OOM;
	return ret ? VM_FAULT_SIGBUS : 0;
}

static const struct dev_pagemap_ops gmem_hbm_private_ops = {
	.page_free = gmem_hbm_page_free,
	.migrate_to_ram = gmem_hbm_migrate_to_ram,
};

/* The CPU reaches coherent HBM itself: no migration on CPU access. */
static const struct dev_pagemap_ops gmem_hbm_coherent_ops = {
	.page_free = gmem_hbm_page_free,
};

/*
 * Move [start, end) of @vma (one window) into HBM. The context's own mapping of the range
 * is removed here (its notifier skips migrations this context starts) and set up again,
 * pointing at HBM, once the pages have moved.
 */
static int gmem_window_to_device(struct gmem_ctx *ctx, struct gmem_migration *m,
				 struct vm_area_struct *vma, unsigned long start,
				 unsigned long end, unsigned long *moved)
{
	struct migrate_vma args = {
		.vma = vma,
		.start = start,
		.end = end,
		.src = m->src,
		.dst = m->dst,
		.pgmap_owner = ctx,
		.flags = MIGRATE_VMA_SELECT_SYSTEM,
	};
	unsigned long npages = (end - start) >> PAGE_SHIFT;
	unsigned long seq;
	int ret;

	memset(m->dst, 0, sizeof(m->dst));
	memset(m->dma, 0, sizeof(m->dma));
	m->ndesc = 0;
	/* The device page-table pages for the result; without them the device faults later. */
	gmem_pt_reserve(ctx, start, end);
	seq = mmu_interval_read_begin(&ctx->notifier);
	ret = migrate_vma_setup(&args);
	if (ret)
		return ret;
	if (!args.cpages) {
		migrate_vma_finalize(&args);
		return 0;
	}
	gmem_pt_unmap(ctx, start, end);

	for (unsigned long i = 0; i < npages; i++) {
		struct page *spage = migrate_pfn_to_page(m->src[i]);
		struct page *dpage;
		u64 off;

		if (!(m->src[i] & MIGRATE_PFN_MIGRATE))
			continue;
		dpage = gmem_hbm_alloc(ctx);
		if (!dpage)
			break;		/* HBM is full of pages that cannot move */
		gmem_hbm_page(ctx->g, dpage, &off);
		m->dst[i] = migrate_pfn(page_to_pfn(dpage));
		if ((m->src[i] & MIGRATE_PFN_WRITE) || (!spage && (vma->vm_flags & VM_WRITE)))
			m->dst[i] |= MIGRATE_PFN_WRITE;
		if (!spage) {		/* never touched, or the zero page */
			gmem_add_zero(m, off);
		} else if (gmem_map_sys(m, i, spage)) {
			gmem_add_copy(m, GMEM_ADDR_HBM, off, GMEM_ADDR_SYS, m->dma[i]);
		} else {
			unlock_page(dpage);
			put_page(dpage);
			m->dst[i] = 0;
		}
	}
	ret = gmem_migration_copy(m, npages);
	migrate_vma_pages(&args);
	*moved = gmem_count_migrated(m, npages);
	gmem_pt_map_migrated(ctx, start, m->src, m->dst, npages, seq);
	migrate_vma_finalize(&args);
	gmem_ctx_count(ctx, GMEM_CTX_MIGRATED_TO_DEVICE, *moved);
	gmem_dev_count(ctx->g, GMEM_DEV_MIGRATED_TO_DEVICE, *moved);
	return ret;
}

/*
 * Migrate [start, end) of the context's process to HBM (@to_device) or back to system
 * memory, a window (2 MiB block inside a VMA) at a time. -EFAULT if part of the range is
 * not mapped, or (to HBM) not readable (unless @skip_holes); pages that cannot move
 * (pinned, shared, HBM full of such) stay where they are.
 */
int gmem_migrate(struct gmem_ctx *ctx, u64 start, u64 end, bool to_device, bool skip_holes,
		 u64 *moved)
{
	struct gmem_accel *g = ctx->g;
	struct gmem_migration *m;
	int ret = 0;

	*moved = 0;
	if (!g->hbm.mapped)
		return -ENODEV;
	if (!mmget_not_zero(ctx->mm))
		return -ESRCH;
	m = kvzalloc(sizeof(*m), GFP_KERNEL);
	if (!m) {
		mmput(ctx->mm);
		return -ENOMEM;
	}
	m->g = g;
	/* Moving in may evict this process's own pages (gmem_evict_owned()). */
	if (to_device)
		gmem_mmap_lock_settled(ctx->mm);
	else
		mmap_read_lock(ctx->mm);
	for (u64 addr = start; addr < end && !ret;) {
		struct vm_area_struct *vma = find_vma(ctx->mm, addr);
		unsigned long n = 0;
		u64 first, next;

		if (!vma || vma->vm_start >= end || (vma->vm_start > addr && !skip_holes)) {
			ret = skip_holes ? 0 : -EFAULT;
			break;
		}
		addr = max_t(u64, addr, vma->vm_start);
		gmem_window(vma, addr, &first, &next);
		next = min(next, end);
		if (to_device && !(vma->vm_flags & VM_READ)) {
			/* The process cannot read it: the device may not either, HBM or not. */
			ret = skip_holes ? 0 : -EFAULT;
			addr = vma->vm_end;
			continue;
		}
		if (to_device)
			ret = gmem_window_to_device(ctx, m, vma, addr, next, &n);
		else
			ret = gmem_window_to_ram(g, m, vma, addr, next, NULL, &n);
		if (!to_device)
			gmem_ctx_count(ctx, GMEM_CTX_MIGRATED_TO_SYSTEM, n);
		*moved += n;
		addr = next;
		if (fatal_signal_pending(current))
			ret = -EINTR;
		else if (READ_ONCE(g->unbinding))
			ret = -ENODEV;
	}
	mmap_read_unlock(ctx->mm);
	mmput(ctx->mm);
	kvfree(m);
	return ret;
}

/*
 * A device fault in a PREFER_DEVICE range: move its window [start, end) to HBM first, so
 * that the fault maps HBM. Failures leave the pages in system memory, mapped from there.
 * Called by the fault server (g->fault_lock; it owns hbm.fault_migration).
 */
void gmem_fault_migrate(struct gmem_ctx *ctx, u64 start, u64 end)
{
	struct gmem_migration *m = ctx->g->hbm.fault_migration;
	struct vm_area_struct *vma;
	unsigned long n = 0;

	if (!m)
		return;
	gmem_mmap_lock_settled(ctx->mm);	/* it may evict (gmem_evict_owned()) */
	vma = vma_lookup(ctx->mm, start);
	/* Only memory the process may read: the fault's own check comes after this. */
	if (vma && end <= vma->vm_end && (vma->vm_flags & VM_READ))
		gmem_window_to_device(ctx, m, vma, start, end, &n);
	mmap_read_unlock(ctx->mm);
}

/*
 * A device write to pages of [start, end) (one window) that sit in HBM while the CPU maps them
 * read-only (COW after fork, swapped in without write access, mprotect): bring the window home,
 * as a CPU write would (migrate_to_ram), so that the fault's next hmm_range_fault breaks COW
 * or fails the write (-EPERM). hmm_range_fault reports the driver's own device-private pages
 * as they are and faults nothing for them, so without this the device's write faults forever.
 * Called by the fault server (g->fault_lock; it owns hbm.fault_migration).
 */
void gmem_fault_unshare(struct gmem_ctx *ctx, u64 start, u64 end)
{
	struct gmem_migration *m = ctx->g->hbm.fault_migration;
	struct vm_area_struct *vma;
	unsigned long n = 0;

	lockdep_assert_held(&ctx->g->fault_lock);
	if (!m)
		return;
	mmap_read_lock(ctx->mm);
	vma = vma_lookup(ctx->mm, start);
	if (vma && end <= vma->vm_end)
		gmem_window_to_ram(ctx->g, m, vma, start, end, NULL, &n);
	mmap_read_unlock(ctx->mm);
	gmem_ctx_count(ctx, GMEM_CTX_MIGRATED_TO_SYSTEM, n);
}

/* Move every page in use out of HBM (unbind; HMM_DMIRROR_RELEASE). */
void gmem_hbm_evict_all(struct gmem_accel *g)
{
	struct gmem_hbm *hbm = &g->hbm;

	for (unsigned int c = 0; c < hbm->nchunks; c++) {
		if (READ_ONCE(hbm->chunks[c].used))
			gmem_evict_range(g, gmem_chunk_pfn(hbm, &hbm->chunks[c]),
					 GMEM_WINDOW_PAGES, NULL, NULL);
	}
}

/*
 * A context closes: its pages in HBM go back to its process, if that still runs (an exiting
 * process has freed them already). Only runs of its own pages are touched, so other
 * contexts' pages stay mapped; only chunks in use are looked at.
 */
void gmem_hbm_release_ctx(struct gmem_ctx *ctx)
{
	struct gmem_hbm *hbm = &ctx->g->hbm;

	if (!hbm->mapped)
		return;
	for (unsigned int c = 0; c < hbm->nchunks; c++) {
		if (READ_ONCE(hbm->chunks[c].used))
			gmem_evict_range(ctx->g, gmem_chunk_pfn(hbm, &hbm->chunks[c]),
					 GMEM_WINDOW_PAGES, ctx->owner, NULL);
	}
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
	hbm->nchunks = size / GMEM_HUGE_SIZE;
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
	hbm->fault_migration = kvzalloc(sizeof(*hbm->fault_migration), GFP_KERNEL);
	if (hbm->fault_migration)
		hbm->fault_migration->g = g;
	hbm->mapped = true;
	return 0;
}

/* Unbind: every page goes back to system memory, then the pages go away. */
void gmem_hbm_fini(struct gmem_accel *g)
{
	struct gmem_hbm *hbm = &g->hbm;

	if (!hbm->mapped)
		return;
	gmem_hbm_evict_all(g);
	hbm->mapped = false;
	memunmap_pages(&hbm->pgmap);
	gmem_hbm_release_range(g);
	kvfree(hbm->chunks);
	kvfree(hbm->fault_migration);
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
	seq_puts(m, "lru (chunk:pages in use, least recently used first):");
	list_for_each_entry(c, &hbm->lru, link)
		seq_printf(m, " %ld:%u", c - hbm->chunks, c->used);
	seq_puts(m, "\n");
	spin_unlock(&hbm->lock);
}
