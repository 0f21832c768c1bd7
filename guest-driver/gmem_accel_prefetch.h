/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: density prefetch (gmem_accel_prefetch.c): what a fault group brings in
 * beyond the pages it asks for.
 */
#ifndef GMEM_ACCEL_PREFETCH_H
#define GMEM_ACCEL_PREFETCH_H

#include "gmem_accel_types.h"

void gmem_prefetch(struct gmem_ctx *ctx, u64 start, u64 end, const struct gmem_fault *f,
		   unsigned int n, unsigned long *req, unsigned long *pfns);

#endif /* GMEM_ACCEL_PREFETCH_H */
