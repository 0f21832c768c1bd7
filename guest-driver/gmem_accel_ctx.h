/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: contexts (gmem_accel_ctx.c), one per open file, and their MMU
 * notifiers, one per window (gmem_accel_notifier.c).
 */
#ifndef GMEM_ACCEL_CTX_H
#define GMEM_ACCEL_CTX_H

#include "gmem_accel_types.h"

/* gmem_accel_ctx.c: contexts */
struct gmem_ctx *gmem_ctx_create(struct gmem_accel *g);
struct gmem_ctx *gmem_ctx_get(struct gmem_accel *g, unsigned int id);
void gmem_ctx_put(struct gmem_ctx *ctx);
/* A CPU fault looks at this many contexts of its process at most. */
#define GMEM_CPU_FAULT_CTXS	4
unsigned int gmem_ctxs_of_mm(struct gmem_accel *g, struct mm_struct *mm, struct gmem_ctx **ctxs,
			     unsigned int max);
void gmem_ctx_destroy(struct gmem_ctx *ctx);
void gmem_ctx_shutdown(struct gmem_ctx *ctx);
void gmem_ctx_get_stats(struct gmem_ctx *ctx, struct gmem_accel_stats *st);

/* gmem_accel_notifier.c: a context's MMU notifiers */
struct mmu_interval_notifier *gmem_notifier(struct gmem_ctx *ctx, u64 va);
struct mmu_interval_notifier *gmem_notifier_get(struct gmem_ctx *ctx, u64 va);
int gmem_notifiers_get(struct gmem_ctx *ctx, u64 va, u64 end);
void gmem_notifiers_remove(struct gmem_ctx *ctx);
void gmem_notifier_gc(struct work_struct *work);
int gmem_notifiers_enter(void);
void gmem_notifiers_exit(int idx);
void gmem_notifiers_free(struct gmem_ctx *ctx);
void gmem_own_moved(struct mmu_interval_notifier *mni);
unsigned long gmem_own_moves(struct mmu_interval_notifier *mni);
bool gmem_read_retry(struct mmu_interval_notifier *mni, unsigned long seq, unsigned long own);

#endif /* GMEM_ACCEL_CTX_H */
