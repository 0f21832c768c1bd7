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
#define DRM_GMEM_ACCEL_GEM_CREATE	0x06
#define DRM_GMEM_ACCEL_GEM_MMAP_OFFSET	0x07
#define DRM_GMEM_ACCEL_GEM_QUERY	0x08
#define DRM_GMEM_ACCEL_FENCE_EXPORT	0x09
#define DRM_GMEM_ACCEL_PREFETCH		0x0a

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

/*
 * A GEM object of device memory: as GMEM_ACCEL_IOC_OBJ_ALLOC (size, GMEM_ACCEL_OBJ_* flags;
 * out: a GEM handle, which DRM_IOCTL_GEM_CLOSE frees, and the mmap offset). The device
 * reaches the object where the process maps it (its CPU address is its device address).
 * PRIME (DRM_IOCTL_PRIME_HANDLE_TO_FD / FD_TO_HANDLE) shares it with another process, or a
 * /dev/gmem_accelN file (GMEM_ACCEL_IOC_OBJ_IMPORT / EXPORT), as a dma-buf.
 */
#define DRM_IOCTL_GMEM_ACCEL_GEM_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_GMEM_ACCEL_GEM_CREATE, struct gmem_accel_obj_alloc)

/**
 * struct drm_gmem_accel_gem_mmap_offset - the mmap offset of a GEM object
 * @handle: in: the GEM handle
 * @flags:  in: 0
 * @offset: out: mmap(2) offset of the object on this file (MAP_SHARED), the same on every
 *          file that holds it
 */
struct drm_gmem_accel_gem_mmap_offset {
	__u32 handle;
	__u32 flags;
	__u64 offset;
};

#define DRM_IOCTL_GMEM_ACCEL_GEM_MMAP_OFFSET \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_GMEM_ACCEL_GEM_MMAP_OFFSET, \
		 struct drm_gmem_accel_gem_mmap_offset)

/* what a GEM object is (placement, page size...): as GMEM_ACCEL_IOC_OBJ_QUERY, by GEM handle */
#define DRM_IOCTL_GMEM_ACCEL_GEM_QUERY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_GMEM_ACCEL_GEM_QUERY, struct gmem_accel_obj_query)

/* a batch's fence as a sync_file: as GMEM_ACCEL_IOC_FENCE_EXPORT */
#define DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_GMEM_ACCEL_FENCE_EXPORT, struct gmem_accel_fence_export)
/*
 * move a range of the process's memory to HBM or home, as GMEM_ACCEL_IOC_MIGRATE (through
 * drm_gpusvm and drm_pagemap); @pages is not counted (out: 0)
 */
#define DRM_IOCTL_GMEM_ACCEL_PREFETCH \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_GMEM_ACCEL_PREFETCH, struct gmem_accel_migrate)

#endif /* GMEM_ACCEL_DRM_UAPI_H */
