/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: the DRM accel front end, on a kernel with the GPU SVM layer
 * (CONFIG_DRM_GPUSVM: Linux 7.3 as images/kernel-7.3.config builds it). A device the frontend
 * parameter gives to it is /dev/accel/accelN (gmem_accel_drm.c) instead of /dev/gmem_accelN;
 * its contexts' shared virtual memory is drm_gpusvm's (gmem_accel_drm_svm.c). Rings, the fault
 * queue and its servers, device page tables, TLB invalidation and reset are the core's, shared
 * by both front ends.
 */
#ifndef GMEM_ACCEL_DRM_H
#define GMEM_ACCEL_DRM_H

#include "gmem_accel_types.h"

struct drm_device;

#if IS_ENABLED(CONFIG_DRM_GPUSVM)
/* gmem_accel_drm.c: the accel device */
int gmem_drm_add(struct gmem_accel *g);
void gmem_drm_unplug(struct gmem_accel *g);
/* gmem_accel_drm_svm.c: a context's shared virtual memory through drm_gpusvm */
int gmem_drm_svm_init(struct gmem_ctx *ctx, struct drm_device *drm);
#else
static inline int gmem_drm_add(struct gmem_accel *g)
{
	return -EOPNOTSUPP;
}

static inline void gmem_drm_unplug(struct gmem_accel *g)
{
}
#endif

#endif /* GMEM_ACCEL_DRM_H */
