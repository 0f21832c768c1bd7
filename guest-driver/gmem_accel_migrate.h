/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: migration between system memory and HBM: a window at a time both ways
 * (gmem_accel_migrate.c), its copies and DMA mappings (gmem_accel_copy.c), eviction
 * (gmem_accel_evict.c) and moving in from other devices' HBM (gmem_accel_peer.c).
 */
#ifndef GMEM_ACCEL_MIGRATE_H
#define GMEM_ACCEL_MIGRATE_H

#include <linux/migrate.h>
#include <linux/scatterlist.h>

#include "gmem_accel_queue.h"
#include "gmem_accel_types.h"

/*
 * Source and destination of one migration window, with the data's DMA mappings. Up to
 * @src, gmem_migration_get() zeroes it for each use; the arrays are scratch that each use
 * writes before it reads.
 */
struct gmem_migration {
	struct gmem_accel *g;
	struct gmem_ctx *ctx;			/* the context that asked, if one did */
	bool no_evict;				/* into free HBM only (gmem_fault_return()) */
	bool evicted;				/* to make room (gmem_hbm_alloc()) */
	bool room;				/* an eviction to make room: RAM may refuse */
	/* moving in from another device's HBM: it, and its BAR2 as this device reaches it */
	struct gmem_accel *peer;
	dma_addr_t peer_bar;
	DECLARE_BITMAP(dma_huge, GMEM_WINDOW_PAGES);	/* @dma[i] maps a whole 2 MiB folio */
	/* ... or, with @sg_mapped, @sgl maps them all as one (gmem_map_sys_window()) */
	struct sg_table sgt;
	bool sg_mapped;
	unsigned int ndesc;
	/* Between the halves of a move (gmem_window_in/out_begin/end()): */
	bool copying;				/* out of HBM: its copies queued */
	struct gmem_kernel_job job;		/* its copies, queued */
	struct migrate_vma args;
	struct mmu_interval_notifier *mni;	/* the window's notifier, */
	unsigned long seq;			/* and its sequence before setup */
	/* gmem_migrate() into HBM with GMEM_MIGRATE_PEERS: what came from other devices' */
	bool peers;
	u64 peer_start, peer_end;
	u64 begun_ns;				/* the move's start, for its trace event */

	unsigned long src[GMEM_WINDOW_PAGES];
	unsigned long dst[GMEM_WINDOW_PAGES];
	dma_addr_t dma[GMEM_WINDOW_PAGES];	/* the system page of each entry, or 0 */
	u64 hbm_off[GMEM_WINDOW_PAGES];		/* to RAM: where each new page's data is */
	struct scatterlist sgl[GMEM_WINDOW_PAGES];
	struct gmem_cmd_desc desc[GMEM_WINDOW_PAGES];
};

/* gmem_accel_migrate.c: migration a window at a time, both ways; migrate_to_ram */
extern const struct dev_pagemap_ops gmem_hbm_private_ops;
extern const struct dev_pagemap_ops gmem_hbm_coherent_ops;
bool gmem_thp_migration_possible(struct gmem_accel *g);
void gmem_migration_spares_free(struct gmem_accel *g);
/* gmem_migrate()'s @how */
#define GMEM_MIGRATE_TO_DEVICE	(1u << 0)	/* into HBM (else home) */
#define GMEM_MIGRATE_SKIP_HOLES	(1u << 1)	/* unmapped or unreadable parts are no error */
#define GMEM_MIGRATE_PEERS	(1u << 2)	/* and from other devices' HBM, peer to peer */
int gmem_migrate(struct gmem_ctx *ctx, u64 start, u64 end, unsigned int how, u64 *moved);
int gmem_window_to_device(struct gmem_ctx *ctx, struct gmem_migration *m,
			  struct vm_area_struct *vma, unsigned long start, unsigned long end,
			  unsigned long *moved);
int gmem_pages_to_ram(struct gmem_accel *g, struct gmem_migration *m,
		      struct vm_area_struct *vma, unsigned long start, unsigned long end,
		      struct page *fault_page, unsigned long pfn, unsigned long nr,
		      unsigned long *moved);
int gmem_window_to_ram(struct gmem_accel *g, struct gmem_migration *m,
		       struct vm_area_struct *vma, unsigned long start, unsigned long end,
		       struct page *fault_page, unsigned long *moved);
void gmem_migrate_lock(struct gmem_ctx *ctx, bool evict) __acquires(&ctx->mm->mmap_lock);

/* gmem_accel_copy.c: a window's copies and DMA mappings */
struct gmem_migration *gmem_migration_get(struct gmem_accel *g);
void gmem_migration_put(struct gmem_accel *g, struct gmem_migration *m);
void gmem_map_sys_window(struct gmem_migration *m, unsigned long npages,
			 const unsigned long *pfns);
int gmem_migration_wait(struct gmem_migration *m, unsigned long npages, bool out);
void gmem_copy_to_ram_begin(struct gmem_migration *m, unsigned long npages,
			    struct vm_area_struct *vma, unsigned long start, void *owner);
int gmem_copy_to_ram(struct gmem_migration *m, unsigned long npages,
		     struct vm_area_struct *vma, unsigned long start, void *owner);
unsigned long gmem_count_migrated(struct gmem_migration *m, unsigned long npages);
bool gmem_hbm_dst(struct gmem_ctx *ctx, struct gmem_migration *m, unsigned long i,
		  unsigned long va, struct page *spage, unsigned long write, bool huge);

/* gmem_accel_evict.c: eviction */
void gmem_evict_ahead(struct gmem_accel *g, u64 bytes);
struct page *gmem_hbm_alloc(struct gmem_ctx *ctx, struct gmem_migration *m, bool huge);
void gmem_mmap_read_lock_no_munmap(struct mm_struct *mm) __acquires(&mm->mmap_lock);
void gmem_hbm_release_ctx(struct gmem_ctx *ctx);
void gmem_hbm_evict_all(struct gmem_accel *g);
bool gmem_hbm_evict_lru(struct gmem_accel *g);
void gmem_evict_work(struct work_struct *work);

/* gmem_accel_peer.c: moving in from other devices' HBM */
int gmem_window_from_peers(struct gmem_ctx *ctx, struct gmem_migration *m,
			   struct vm_area_struct *vma, unsigned long start, unsigned long end,
			   unsigned long *moved);

#endif /* GMEM_ACCEL_MIGRATE_H */
