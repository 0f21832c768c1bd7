/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: the process's advice (gmem_accel_advice.c): preferred location and
 * accessed-by, by page.
 */
#ifndef GMEM_ACCEL_ADVICE_H
#define GMEM_ACCEL_ADVICE_H

#include "gmem_accel_types.h"

int gmem_advise(struct gmem_ctx *ctx, const struct gmem_accel_advise *adv);
bool gmem_prefers_device(struct gmem_ctx *ctx, u64 va);
bool gmem_prefers_system(struct gmem_ctx *ctx, u64 va);
void gmem_advice_map_range(struct gmem_ctx *ctx, u64 start, u64 end, unsigned long *req,
			   unsigned long *pfns);
void gmem_advice_cpu_moved(struct gmem_ctx *ctx, u64 start, u64 end, unsigned long *pfns);

#endif /* GMEM_ACCEL_ADVICE_H */
