/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: thrashing mitigation (gmem_accel_thrashing.c): pages that move back and
 * forth between system memory and HBM are throttled, then pinned in system memory.
 */
#ifndef GMEM_ACCEL_THRASHING_H
#define GMEM_ACCEL_THRASHING_H

#include "gmem_accel_types.h"

struct gmem_fault;
struct gmem_migration;

/* What a device fault in a PREFER_DEVICE window is to do (gmem_thrashing_fault()). */
enum gmem_thrash_hint {
	GMEM_THRASH_NONE,	/* migrate the window as usual */
	GMEM_THRASH_THROTTLE,	/* answer REPLAY after a nap, neither migrating nor mapping */
	GMEM_THRASH_PIN,	/* map the pages where they are: no migration */
};

void gmem_thrashing_init(struct gmem_ctx *ctx);
void gmem_thrashing_stop(struct gmem_ctx *ctx);
void gmem_thrashing_forget(struct gmem_ctx *ctx, u64 start);
enum gmem_thrash_hint gmem_thrashing_fault(struct gmem_ctx *ctx, const struct gmem_fault *f,
					   unsigned int n, u64 end, unsigned int *nap_us);
void gmem_thrashing_moved(struct gmem_ctx *ctx, const struct gmem_migration *m, bool to_device);
unsigned int gmem_thrashing_cpu_nap(struct gmem_ctx *ctx, u64 va);
void gmem_thrashing_nap(unsigned int nap_us);

#endif /* GMEM_ACCEL_THRASHING_H */
