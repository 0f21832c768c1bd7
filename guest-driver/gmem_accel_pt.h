/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: a context's device page table: its tables, zaps and lookups
 * (gmem_accel_pt.c) and the leaves that map memory (gmem_accel_pt_map.c).
 */
#ifndef GMEM_ACCEL_PT_H
#define GMEM_ACCEL_PT_H

#include <linux/mmu_notifier.h>

#include "gmem_accel_types.h"

/*
 * Software bits of device PTEs (GMEM_PTE_SW_MASK): the page-table code's own (bit 8, a
 * cleared entry whose page is still DMA-mapped; bit 11, a page whose DMA mapping someone else
 * owns: an object, or drm_gpusvm for a DRM front-end context; with it, on an object's, bit 10,
 * a read duplicate), and those a context's hook may set on other leaves (gmem_pt_mark()).
 */
#define GMEM_PTE_SW_STALE	(1ull << 8)
#define GMEM_PTE_SW_HOOK_MASK	(0x6ull << 8)
#define GMEM_PTE_SW_OBJECT	(1ull << 11)
/* On an object's leaf (GMEM_PTE_SW_OBJECT) only: a read duplicate's HBM copy (managed) */
#define GMEM_PTE_SW_OBJ_DUP	(1ull << 10)

/* gmem_accel_pt.c: device page tables */
int gmem_pt_init(struct gmem_ctx *ctx);
void gmem_pt_fini(struct gmem_ctx *ctx);
unsigned long gmem_pt_zap(struct gmem_ctx *ctx, u64 start, u64 end);
int gmem_pt_reserve(struct gmem_ctx *ctx, u64 start, u64 end);
int gmem_pt_reserve_n(struct gmem_ctx *ctx, u64 start, u64 end, unsigned int n);
int gmem_pt_map(struct gmem_ctx *ctx, u64 va, unsigned long *hmm_pfns, unsigned long npages);
int gmem_pt_mark(struct gmem_ctx *ctx, u64 va, u64 sw_bits);
u64 gmem_pt_leaf(struct gmem_ctx *ctx, u64 va, bool *huge);
bool gmem_pt_any_marked(struct gmem_ctx *ctx, u64 start, u64 end, u64 sw_bits);
bool gmem_pt_maps_all(struct gmem_ctx *ctx, u64 start, u64 end, u64 perm);
unsigned int gmem_pt_block_mapped(struct gmem_ctx *ctx, u64 va);
void gmem_pt_window_mapped(struct gmem_ctx *ctx, u64 va, unsigned long *map);
void gmem_pt_snapshot(struct gmem_ctx *ctx, u64 va, u8 *out, unsigned long npages);
void gmem_pt_unmap(struct gmem_ctx *ctx, u64 start, u64 end);
void gmem_pt_drop_window(struct gmem_ctx *ctx, u64 start);
void gmem_pt_map_migrated(struct gmem_ctx *ctx, struct mmu_interval_notifier *mni, u64 va,
			  const unsigned long *src, const unsigned long *dst, unsigned long npages,
			  unsigned long seq);
/* A writable leaf's permissions beyond READ (the driver's leaves: atomics wherever writes) */
#define GMEM_PTE_RW	(GMEM_PTE_WRITE | GMEM_PTE_ATOMIC)
int gmem_pt_map_obj(struct gmem_ctx *ctx, u64 va, u64 target, u64 page_size, bool hbm,
		    u64 perm, bool dup);

/* Within the page-table code (gmem_accel_pt.c, gmem_accel_pt_map.c) */
/* The device a context's page-table pages and leaves are DMA-mapped for. */
static inline struct device *gmem_dma_dev(struct gmem_ctx *ctx)
{
	return &ctx->g->pdev->dev;
}

u64 gmem_leaf_size(int level);
void gmem_leaf_release(struct gmem_ctx *ctx, u64 *pte, int level);
struct gmem_pt *gmem_pt_table(struct gmem_ctx *ctx, u64 va, int level, bool create);
bool gmem_pt_drop_table(struct gmem_ctx *ctx, struct gmem_pt *pt, unsigned int idx, u64 va);

#endif /* GMEM_ACCEL_PT_H */
