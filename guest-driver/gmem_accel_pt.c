// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: device page tables, the twin of the device's walker (gmem-accel-pt.c):
 * their pages, walking them, zapping ranges and looking entries up. A context's table
 * mirrors what hmm_range_fault() gave it; pages move in under ctx->lock after
 * mmu_interval_read_retry() (gmem_accel_pt_map.c fills the leaves), and the notifier zaps
 * them (gmem_pt_zap) under the same lock. Tables are allocated before the lock is taken
 * (gmem_pt_reserve), never under it.
 */
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "gmem_accel.h"
#include "gmem_accel_pt.h"
#include "gmem_accel_trace.h"

/*
 * GMEM_PTE_SW_STALE: the entry was cleared (VALID dropped) but its page is still DMA-mapped
 * until the device TLB has forgotten it.
 */
static_assert(GMEM_PTE_SW_STALE & GMEM_PTE_SW_MASK);
static_assert((GMEM_PTE_SW_HOOK_MASK & GMEM_PTE_SW_MASK) == GMEM_PTE_SW_HOOK_MASK);
static_assert(!(GMEM_PTE_SW_STALE & GMEM_PTE_SW_HOOK_MASK));
static_assert(!(GMEM_PTE_SW_OBJECT & (GMEM_PTE_SW_HOOK_MASK | GMEM_PTE_SW_STALE)));
static_assert(GMEM_PTE_SW_OBJECT & GMEM_PTE_SW_MASK);

static int gmem_pt_alloc(struct gmem_ctx *ctx, struct gmem_pt *pt, int level)
{
	pt->pte = dma_alloc_coherent(gmem_dma_dev(ctx), PAGE_SIZE, &pt->dma, GFP_KERNEL);
	if (!pt->pte)
		return -ENOMEM;
	pt->child = NULL;
	if (level > 1) {
		pt->child = kcalloc(GMEM_PT_ENTRIES, sizeof(*pt->child), GFP_KERNEL);
		if (!pt->child) {
			dma_free_coherent(gmem_dma_dev(ctx), PAGE_SIZE, pt->pte, pt->dma);
			return -ENOMEM;
		}
	}
	gmem_dev_count(ctx->g, GMEM_DEV_PT_PAGES_NOW, 1);
	return 0;
}

u64 gmem_leaf_size(int level)
{
	return level == 1 ? GMEM_PAGE_SIZE : GMEM_HUGE_SIZE;
}

/*
 * Does the leaf map the shared zero page, through the device's one mapping of it (not the
 * page table's to unmap)? No other mapping gets that address while it is held.
 */
static bool gmem_leaf_zero(struct gmem_ctx *ctx, u64 pte, int level)
{
	return level == 1 && (pte & GMEM_PTE_ADDR_MASK) == ctx->g->zero_dma;
}

/*
 * Unmap a leaf's system page for DMA and clear the entry (which is no longer valid). HBM and
 * objects' pages are not the page table's to unmap.
 */
void gmem_leaf_release(struct gmem_ctx *ctx, u64 *pte, int level)
{
	u64 e = READ_ONCE(*pte);

	if ((e & (GMEM_PTE_VALID | GMEM_PTE_SW_STALE)) &&
	    !(e & (GMEM_PTE_HBM | GMEM_PTE_SW_OBJECT)) && !gmem_leaf_zero(ctx, e, level)) {
		dma_unmap_page(gmem_dma_dev(ctx), e & GMEM_PTE_ADDR_MASK, gmem_leaf_size(level),
			       DMA_BIDIRECTIONAL);
		gmem_dev_count(ctx->g, GMEM_DEV_DMA_MAPPED_NOW,
			       -(s64)(gmem_leaf_size(level) >> PAGE_SHIFT));
	}
	WRITE_ONCE(*pte, 0);
}

static void gmem_pt_free(struct gmem_ctx *ctx, struct gmem_pt *pt, int level)
{
	if (!pt->pte)
		return;
	for (int i = 0; i < GMEM_PT_ENTRIES; i++) {
		if (pt->child && pt->child[i]) {
			gmem_pt_free(ctx, pt->child[i], level - 1);
			kfree(pt->child[i]);
		} else if (pt->pte[i] & (GMEM_PTE_VALID | GMEM_PTE_SW_STALE)) {
			gmem_leaf_release(ctx, &pt->pte[i], level);
		}
	}
	kfree(pt->child);
	dma_free_coherent(gmem_dma_dev(ctx), PAGE_SIZE, pt->pte, pt->dma);
	pt->pte = NULL;
	gmem_dev_count(ctx->g, GMEM_DEV_PT_PAGES_NOW, -1);
}

/*
 * Page-table pages come from the context's spares, allocated before ctx->lock was taken: the
 * MMU notifier takes ctx->lock, and an allocation that enters reclaim can call the notifier,
 * which would then wait for the lock its own caller holds (Documentation/mm/hmm.rst).
 * gmem_pt_reserve() tops the spares up for a range, then the caller locks and maps; a caller
 * that finds them gone (another thread of the process used them) unlocks, reserves and retries.
 */
static int gmem_spare_kind(int level)
{
	return level > 1;	/* tables above level 1 have a child array */
}

/* How many 2^@shift-byte blocks [start, end) touches. */
static unsigned int gmem_blocks(u64 start, u64 end, unsigned int shift)
{
	return ((end - 1) >> shift) - (start >> shift) + 1;
}

/* Top the spares of each kind up to @need[kind]. */
static int gmem_spares_fill(struct gmem_ctx *ctx, const unsigned int need[2])
{
	struct gmem_pt_spares *sp = &ctx->spares;

	for (int k = 0; k < 2; k++) {
		while (READ_ONCE(sp->n[k]) < need[k]) {
			struct gmem_pt *pt = kzalloc(sizeof(*pt), GFP_KERNEL);

			if (!pt || gmem_pt_alloc(ctx, pt, k ? 2 : 1)) {
				kfree(pt);
				return -ENOMEM;
			}
			spin_lock(&sp->lock);
			if (sp->n[k] < GMEM_PT_SPARE_MAX) {
				sp->pt[k][sp->n[k]++] = pt;
				pt = NULL;
			}
			spin_unlock(&sp->lock);
			if (pt) {	/* another thread filled them meanwhile */
				gmem_pt_free(ctx, pt, k ? 2 : 1);
				kfree(pt);
			}
		}
	}
	return 0;
}

/*
 * The tables of each kind that mapping [start, end) would create now. A range whose tables
 * exist takes no spare, so a context's faults allocate only where it maps for the first time.
 */
static void gmem_pt_missing(struct gmem_ctx *ctx, u64 start, u64 end, unsigned int need[2])
{
	mutex_lock(&ctx->lock);
	for (int level = 1; level < GMEM_PT_LEVELS; level++) {
		u64 span = 1ull << GMEM_PT_SHIFT(level + 1);

		for (u64 va = ALIGN_DOWN(start, span); va < end; va += span)
			if (!gmem_pt_table(ctx, va, level, false))
				need[gmem_spare_kind(level)]++;
	}
	mutex_unlock(&ctx->lock);
}

/*
 * Spares for @n ranges like [start, end) that map before the next reservation: a migration
 * reserves for two windows while one is in flight (gmem_window_in_pipelined()), as each maps
 * its own, and the first would take what the second's top-up found there. One range gets
 * the tables it lacks; more get a bound for any range of that size.
 */
int gmem_pt_reserve_n(struct gmem_ctx *ctx, u64 start, u64 end, unsigned int n)
{
	unsigned int need[2] = { 0, 0 };

	might_sleep();
	lockdep_assert_not_held(&ctx->lock);
	if (start >= end)
		return 0;
	if (n == 1) {
		gmem_pt_missing(ctx, start, end, need);
	} else {
		/* At most one new table per block each level's tables cover. */
		need[0] = n * gmem_blocks(start, end, GMEM_PT_SHIFT(2));
		need[1] = n * (gmem_blocks(start, end, GMEM_PT_SHIFT(3)) +
			       gmem_blocks(start, end, GMEM_PT_SHIFT(4)));
	}
	if (WARN_ON_ONCE(need[0] > GMEM_PT_SPARE_MAX || need[1] > GMEM_PT_SPARE_MAX))
		return -EINVAL;		/* callers map a 2 MiB window at a time */
	return gmem_spares_fill(ctx, need);
}

int gmem_pt_reserve(struct gmem_ctx *ctx, u64 start, u64 end)
{
	return gmem_pt_reserve_n(ctx, start, end, 1);
}

/* A spare table for @level, or NULL if there is none left. */
static struct gmem_pt *gmem_spare_take(struct gmem_ctx *ctx, int level)
{
	struct gmem_pt_spares *sp = &ctx->spares;
	int k = gmem_spare_kind(level);
	struct gmem_pt *pt = NULL;

	spin_lock(&sp->lock);
	if (sp->n[k])
		pt = sp->pt[k][--sp->n[k]];
	spin_unlock(&sp->lock);
	return pt;
}

static void gmem_spares_free(struct gmem_ctx *ctx)
{
	struct gmem_pt_spares *sp = &ctx->spares;

	for (int k = 0; k < 2; k++) {
		while (sp->n[k]) {
			struct gmem_pt *pt = sp->pt[k][--sp->n[k]];

			gmem_pt_free(ctx, pt, k ? 2 : 1);
			kfree(pt);
		}
	}
}


/*
 * The table at @level (1 or 2) holding @va's entry, created on the way from the spares if
 * @create. NULL if it does not exist, or (@create) the spares ran out: -EAGAIN to callers.
 */
struct gmem_pt *gmem_pt_table(struct gmem_ctx *ctx, u64 va, int level, bool create)
{
	struct gmem_pt *pt = &ctx->root;

	lockdep_assert_held(&ctx->lock);
	for (int l = GMEM_PT_LEVELS; l > level; l--) {
		unsigned int i = GMEM_PT_INDEX(va, l);
		struct gmem_pt *next = pt->child[i];

		if (!next) {
			if (!create)
				return NULL;
			next = gmem_spare_take(ctx, l - 1);
			if (!next)
				return NULL;
			/*
			 * A 2 MiB leaf where a table must go: the device TLB may hold it, so
			 * it must forget it before the page is unmapped for DMA.
			 */
			if (pt->pte[i] & (GMEM_PTE_VALID | GMEM_PTE_SW_STALE)) {
				u64 base = ALIGN_DOWN(va, 1ull << GMEM_PT_SHIFT(l));

				gmem_pt_zap(ctx, base, base + (1ull << GMEM_PT_SHIFT(l)));
			}
			pt->child[i] = next;
			WRITE_ONCE(pt->pte[i], next->dma | GMEM_PTE_VALID);
		}
		pt = next;
	}
	return pt;
}

/* Called on a leaf entry by gmem_pt_walk(); returning true stops the walk. */
typedef bool (*gmem_leaf_fn)(struct gmem_ctx *ctx, u64 *pte, int level, void *data);

/*
 * Call @fn on every leaf entry overlapping [start, end) in the tables that exist below @pt (at
 * @level, covering from @base; [start, end) meets it): the work follows what is mapped, not
 * the size of the range, and only the entries the range overlaps are looked at, not all 512
 * of every level. Returns true if @fn stopped it.
 */
static bool gmem_pt_walk(struct gmem_ctx *ctx, struct gmem_pt *pt, int level, u64 base,
			 u64 start, u64 end, gmem_leaf_fn fn, void *data)
{
	unsigned int shift = GMEM_PT_SHIFT(level);
	u64 span = 1ull << shift;
	unsigned int lo = start > base ? (start - base) >> shift : 0;
	unsigned int hi = min_t(u64, GMEM_PT_ENTRIES, (end - base + span - 1) >> shift);

	for (unsigned int i = lo; i < hi; i++) {
		u64 va = base + i * span;

		if (pt->child && pt->child[i]) {
			if (gmem_pt_walk(ctx, pt->child[i], level - 1, va, start, end, fn, data))
				return true;
		} else if (fn(ctx, &pt->pte[i], level, data)) {
			return true;
		}
	}
	return false;
}

/* Pass 1 of a zap: drop VALID, keep the address (STALE) for pass 2; count in *@data. */
static bool gmem_leaf_clear(struct gmem_ctx *ctx, u64 *pte, int level, void *data)
{
	u64 e = READ_ONCE(*pte);

	if (e & GMEM_PTE_VALID) {
		WRITE_ONCE(*pte, (e & ~GMEM_PTE_VALID) | GMEM_PTE_SW_STALE);
		++*(unsigned long *)data;
	}
	return false;
}

/* Pass 2: the device has forgotten them; unmap the pages. */
static bool gmem_leaf_release_stale(struct gmem_ctx *ctx, u64 *pte, int level, void *data)
{
	if (READ_ONCE(*pte) & GMEM_PTE_SW_STALE)
		gmem_leaf_release(ctx, pte, level);
	return false;
}

/*
 * Remove the device's mappings of [start, end): clear the PTEs, wait for the device TLB to
 * drop them, then unmap the pages. Called with ctx->lock held.
 */
unsigned long gmem_pt_zap(struct gmem_ctx *ctx, u64 start, u64 end)
{
	unsigned long n;

	lockdep_assert_held(&ctx->lock);
	/* Only a zap that cleared entries waits for the TLB: tell lockdep on every one. */
	might_lock(&ctx->g->inv_lock);
	end = min_t(u64, end, 1ull << GMEM_VA_BITS);
	if (start >= end)
		return 0;
	n = 0;
	gmem_pt_walk(ctx, &ctx->root, GMEM_PT_LEVELS, 0, start, end, gmem_leaf_clear, &n);
	if (!n)
		return 0;
	/* A 2 MiB leaf may reach past the range: invalidate whole huge pages. */
	start = ALIGN_DOWN(start, GMEM_HUGE_SIZE);
	end = ALIGN(end, GMEM_HUGE_SIZE);
	if (ctx->g->regs)
		gmem_tlb_invalidate(ctx->g, ctx->id, start, end - start);
	gmem_pt_walk(ctx, &ctx->root, GMEM_PT_LEVELS, 0, start, end, gmem_leaf_release_stale, NULL);
	gmem_ctx_count(ctx, GMEM_CTX_PAGES_ZAPPED, n);
	return n;
}

/*
 * Drop the table of 4 KiB entries under level-2 entry @idx of @pt (covering @va, 2 MiB aligned)
 * so that a 2 MiB leaf can go there. Its leaves are cleared, then the pointer, and one
 * invalidation of the 2 MiB makes the device forget both — the translations and its walk
 * cache's copy of the pointer — before the table and the pages are released. Returns whether
 * a valid leaf was dropped. Called with ctx->lock held.
 */
bool gmem_pt_drop_table(struct gmem_ctx *ctx, struct gmem_pt *pt, unsigned int idx,
			u64 va)
{
	struct gmem_pt *old = pt->child[idx];
	unsigned long n = 0;

	gmem_pt_walk(ctx, old, 1, va, va, va + GMEM_HUGE_SIZE, gmem_leaf_clear, &n);
	WRITE_ONCE(pt->pte[idx], 0);
	if (ctx->g->regs)
		gmem_tlb_invalidate(ctx->g, ctx->id, va, GMEM_HUGE_SIZE);
	pt->child[idx] = NULL;
	gmem_pt_free(ctx, old, 1);	/* releases the cleared (STALE) leaves */
	kfree(old);
	gmem_ctx_count(ctx, GMEM_CTX_PAGES_ZAPPED, n);
	return n;
}

/*
 * Drop what the device maps of window @start (2 MiB aligned), and its table of 4 KiB entries:
 * the window's memory is unmapped and its notifier on its way out (gmem_notifier_gc()).
 */
void gmem_pt_drop_window(struct gmem_ctx *ctx, u64 start)
{
	unsigned int idx = GMEM_PT_INDEX(start, 2);
	struct gmem_pt *pt;

	mutex_lock(&ctx->lock);
	pt = gmem_pt_table(ctx, start, 2, false);
	if (pt && pt->child[idx])
		gmem_pt_drop_table(ctx, pt, idx, start);
	else if (pt)
		gmem_pt_zap(ctx, start, start + GMEM_HUGE_SIZE);	/* a 2 MiB leaf */
	mutex_unlock(&ctx->lock);
}

/* Remove the context's device mappings of [start, end). */
void gmem_pt_unmap(struct gmem_ctx *ctx, u64 start, u64 end)
{
	mutex_lock(&ctx->lock);
	gmem_pt_zap(ctx, start, end);
	mutex_unlock(&ctx->lock);
}

/*
 * Set software bits @sw_bits (of GMEM_PTE_SW_HOOK_MASK) in the 4 KiB leaf mapping @va: a
 * context's hook marks entries it made. The next mapping of the page clears them. Called
 * with ctx->lock held; -ENOENT if no 4 KiB leaf maps @va.
 */
int gmem_pt_mark(struct gmem_ctx *ctx, u64 va, u64 sw_bits)
{
	struct gmem_pt *pt;
	u64 *pte;

	lockdep_assert_held(&ctx->lock);
	if (WARN_ON_ONCE(sw_bits & ~GMEM_PTE_SW_HOOK_MASK))
		return -EINVAL;
	pt = gmem_pt_table(ctx, va, 1, false);
	if (!pt)
		return -ENOENT;
	pte = &pt->pte[GMEM_PT_INDEX(va, 1)];
	if (!(READ_ONCE(*pte) & GMEM_PTE_VALID))
		return -ENOENT;
	WRITE_ONCE(*pte, *pte | sw_bits);
	return 0;
}

/* The leaf entry translating @va (0 if none); @huge: a 2 MiB leaf. ctx->lock held. */
u64 gmem_pt_leaf(struct gmem_ctx *ctx, u64 va, bool *huge)
{
	struct gmem_pt *pt;
	u64 e;

	lockdep_assert_held(&ctx->lock);
	pt = gmem_pt_table(ctx, va, 2, false);
	*huge = false;
	if (!pt)
		return 0;
	e = READ_ONCE(pt->pte[GMEM_PT_INDEX(va, 2)]);
	if (e & GMEM_PTE_HUGE) {
		*huge = true;
		return e;
	}
	pt = pt->child[GMEM_PT_INDEX(va, 2)];
	return pt ? READ_ONCE(pt->pte[GMEM_PT_INDEX(va, 1)]) : 0;
}

/* How many pages of the 64 KiB block at @va (aligned) the device maps. ctx->lock held. */
unsigned int gmem_pt_block_mapped(struct gmem_ctx *ctx, u64 va)
{
	unsigned int n = 0;
	struct gmem_pt *pt;
	u64 e;

	lockdep_assert_held(&ctx->lock);
	pt = gmem_pt_table(ctx, va, 2, false);
	if (!pt)
		return 0;
	e = READ_ONCE(pt->pte[GMEM_PT_INDEX(va, 2)]);
	if (e & GMEM_PTE_HUGE)
		return e & GMEM_PTE_VALID ? GMEM_CONT_ENTRIES : 0;
	pt = pt->child[GMEM_PT_INDEX(va, 2)];
	for (unsigned int i = 0; pt && i < GMEM_CONT_ENTRIES; i++)
		n += !!(READ_ONCE(pt->pte[GMEM_PT_INDEX(va, 1) + i]) & GMEM_PTE_VALID);
	return n;
}

/*
 * Which pages of the 2 MiB block at @va (aligned) the device maps, a bit each in @map
 * (GMEM_WINDOW_PAGES bits). ctx->lock held.
 */
void gmem_pt_window_mapped(struct gmem_ctx *ctx, u64 va, unsigned long *map)
{
	struct gmem_pt *pt;
	u64 e;

	lockdep_assert_held(&ctx->lock);
	bitmap_zero(map, GMEM_WINDOW_PAGES);
	pt = gmem_pt_table(ctx, va, 2, false);
	if (!pt)
		return;
	e = READ_ONCE(pt->pte[GMEM_PT_INDEX(va, 2)]);
	if (e & GMEM_PTE_HUGE) {
		if (e & GMEM_PTE_VALID)
			bitmap_fill(map, GMEM_WINDOW_PAGES);
		return;
	}
	pt = pt->child[GMEM_PT_INDEX(va, 2)];
	for (unsigned int i = 0; pt && i < GMEM_WINDOW_PAGES; i++)
		if (READ_ONCE(pt->pte[i]) & GMEM_PTE_VALID)
			__set_bit(i, map);
}

/* Does the device map every page of [start, end), with @perm (GMEM_PTE_WRITE, _ATOMIC) too? */
bool gmem_pt_maps_all(struct gmem_ctx *ctx, u64 start, u64 end, u64 perm)
{
	u64 need = GMEM_PTE_VALID | perm;
	bool all = true, huge;

	mutex_lock(&ctx->lock);
	for (u64 va = start; va < end && all; va += huge ? GMEM_HUGE_SIZE - (va & (GMEM_HUGE_SIZE - 1))
							: PAGE_SIZE)
		all = (gmem_pt_leaf(ctx, va, &huge) & need) == need;
	mutex_unlock(&ctx->lock);
	return all;
}

static bool gmem_leaf_marked(struct gmem_ctx *ctx, u64 *pte, int level, void *data)
{
	u64 e = READ_ONCE(*pte);

	return (e & GMEM_PTE_VALID) && (e & *(const u64 *)data);
}

/*
 * Does a valid entry of [start, end) carry one of @sw_bits (gmem_pt_mark())? Any range a
 * process names: only the tables that exist are looked at.
 */
bool gmem_pt_any_marked(struct gmem_ctx *ctx, u64 start, u64 end, u64 sw_bits)
{
	bool found;

	end = min_t(u64, end, 1ull << GMEM_VA_BITS);
	if (start >= end)
		return false;
	mutex_lock(&ctx->lock);
	found = gmem_pt_walk(ctx, &ctx->root, GMEM_PT_LEVELS, 0, start, end, gmem_leaf_marked,
			     &sw_bits);
	mutex_unlock(&ctx->lock);
	return found;
}

/*
 * Does @va's CONT group hold together, so the device sees one 64 KiB page (the hardware's
 * rule: 16 valid CONT entries, the same bits but the address and software's, consecutive
 * targets from a 64 KiB aligned one)? A migrated group one of whose pages moved away does not.
 */
static bool gmem_pt_cont_whole(struct gmem_ctx *ctx, u64 va)
{
	const u64 same = ~(GMEM_PTE_ADDR_MASK | GMEM_PTE_SW_MASK);
	struct gmem_pt *pt = gmem_pt_table(ctx, va, 1, false);
	unsigned int first = GMEM_PT_INDEX(va, 1) & ~(GMEM_CONT_ENTRIES - 1);
	u64 e0;

	if (!pt)
		return false;
	e0 = READ_ONCE(pt->pte[first]);
	if (!(e0 & GMEM_PTE_VALID) || !(e0 & GMEM_PTE_CONT) ||
	    !IS_ALIGNED(e0 & GMEM_PTE_ADDR_MASK, GMEM_CONT_SIZE))
		return false;
	for (unsigned int j = 1; j < GMEM_CONT_ENTRIES; j++) {
		u64 e = READ_ONCE(pt->pte[first + j]);

		if ((e & same) != (e0 & same) ||
		    (e & GMEM_PTE_ADDR_MASK) != (e0 & GMEM_PTE_ADDR_MASK) + j * GMEM_PAGE_SIZE)
			return false;
	}
	return true;
}

/* The device's view of [va, va + npages pages): GMEM_ACCEL_PAGE_* per page. */
void gmem_pt_snapshot(struct gmem_ctx *ctx, u64 va, u8 *out, unsigned long npages)
{
	mutex_lock(&ctx->lock);
	for (unsigned long i = 0; i < npages; i++) {
		bool huge;
		u64 e = gmem_pt_leaf(ctx, va + i * PAGE_SIZE, &huge);
		u8 flags = 0;

		if (e & GMEM_PTE_VALID) {
			flags |= GMEM_ACCEL_PAGE_READ;
			if (e & GMEM_PTE_WRITE)
				flags |= GMEM_ACCEL_PAGE_WRITE;
			if (e & GMEM_PTE_HBM)
				flags |= GMEM_ACCEL_PAGE_HBM;
			if (huge)
				flags |= GMEM_ACCEL_PAGE_2M;
			if ((e & GMEM_PTE_CONT) && gmem_pt_cont_whole(ctx, va + i * PAGE_SIZE))
				flags |= GMEM_ACCEL_PAGE_64K;
			if ((e & GMEM_PTE_SW_OBJECT) && (e & GMEM_PTE_SW_OBJ_DUP))
				flags |= GMEM_ACCEL_PAGE_DUPLICATE;
		}
		out[i] = flags;
	}
	mutex_unlock(&ctx->lock);
}

/*
 * The root, and spares for the first command's paths below it (one buffer read, another
 * written, under one upper path): its faults then allocate no table, the open did.
 */
int gmem_pt_init(struct gmem_ctx *ctx)
{
	static const unsigned int path[2] = { 2, GMEM_PT_LEVELS - 2 };
	int ret;

	spin_lock_init(&ctx->spares.lock);
	ret = gmem_pt_alloc(ctx, &ctx->root, GMEM_PT_LEVELS);
	if (!ret && gmem_spares_fill(ctx, path)) {
		gmem_pt_fini(ctx);
		ret = -ENOMEM;
	}
	return ret;
}

/* Free the whole table and the spares: the device no longer walks it. */
void gmem_pt_fini(struct gmem_ctx *ctx)
{
	gmem_pt_free(ctx, &ctx->root, GMEM_PT_LEVELS);
	gmem_spares_free(ctx);
}
