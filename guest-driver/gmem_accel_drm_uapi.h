/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * gmem-accel's DRM accel front end (/dev/accel/accelN, Linux 7.3): the ioctls of a device the
 * driver's frontend parameter gives to DRM (docs/uapi.md, "The DRM accel front end"). Each
 * takes the structure of its /dev/gmem_accelN counterpart (gmem_accel_uapi.h), with the same
 * meaning: one uAPI, two nodes. An open file is one device context, bound to the opening
 * process's address space; its shared virtual memory is the kernel's drm_gpusvm.
 */
#ifndef GMEM_ACCEL_DRM_UAPI_H
#define GMEM_ACCEL_DRM_UAPI_H

#include <drm/drm.h>

#include "gmem_accel_uapi.h"

#define DRM_GMEM_ACCEL_GET_INFO		0x00
#define DRM_GMEM_ACCEL_SUBMIT		0x01
#define DRM_GMEM_ACCEL_WAIT		0x02
#define DRM_GMEM_ACCEL_STATS		0x03
#define DRM_GMEM_ACCEL_SNAPSHOT		0x04
#define DRM_GMEM_ACCEL_ADVISE		0x05

#define DRM_IOCTL_GMEM_ACCEL_GET_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_GMEM_ACCEL_GET_INFO, struct gmem_accel_info)
#define DRM_IOCTL_GMEM_ACCEL_SUBMIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_GMEM_ACCEL_SUBMIT, struct gmem_accel_submit)
#define DRM_IOCTL_GMEM_ACCEL_WAIT \
	DRM_IOW(DRM_COMMAND_BASE + DRM_GMEM_ACCEL_WAIT, struct gmem_accel_wait)
#define DRM_IOCTL_GMEM_ACCEL_STATS \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_GMEM_ACCEL_STATS, struct gmem_accel_stats)
/* the device's view of the file's pages (GMEM_ACCEL_PAGE_HBM: in device memory) */
#define DRM_IOCTL_GMEM_ACCEL_SNAPSHOT \
	DRM_IOW(DRM_COMMAND_BASE + DRM_GMEM_ACCEL_SNAPSHOT, struct gmem_accel_snapshot)
/* a range's preferred location (flags 0: the location alone; docs/uapi.md) */
#define DRM_IOCTL_GMEM_ACCEL_ADVISE \
	DRM_IOW(DRM_COMMAND_BASE + DRM_GMEM_ACCEL_ADVISE, struct gmem_accel_advise)

#endif /* GMEM_ACCEL_DRM_UAPI_H */
