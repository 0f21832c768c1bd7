/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: oversubscription (gmem_accel_oversub.c): while HBM cannot hold what the
 * device's faults ask it for, a PREFER_DEVICE fault maps system memory instead of migrating.
 */
#ifndef GMEM_ACCEL_OVERSUB_H
#define GMEM_ACCEL_OVERSUB_H

#include "gmem_accel_types.h"

u64 gmem_oversub_busy(struct gmem_hbm *hbm);
void gmem_oversub_evicting(struct gmem_accel *g, unsigned long pfn, bool in_burst);
bool gmem_oversub_remote(struct gmem_ctx *ctx, u64 va);
/* the same policy for the DRM front end's HBM (gmem_accel_drm_pagemap.c) */
u64 gmem_oversub_use(u64 *burst_ns, u64 *busy_ns);
void gmem_oversub_evicting_va(struct gmem_accel *g, u64 va, bool in_burst);
bool gmem_oversub_active(struct gmem_accel *g, u16 ctx_id, u64 va);
void gmem_oversub_mapped_remote(struct gmem_accel *g, u16 ctx_id, u64 va);

#endif /* GMEM_ACCEL_OVERSUB_H */
