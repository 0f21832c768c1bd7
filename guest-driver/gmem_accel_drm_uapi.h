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
/* memory attributes, as xe's madvise has them */
#define DRM_GMEM_ACCEL_MADVISE		0x0b
#define DRM_GMEM_ACCEL_QUERY_MEM_ATTRS	0x0c

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

/* the attribute MADVISE sets */
#define GMEM_ACCEL_DRM_ATTR_PREFERRED_LOC	0	/* value: GMEM_ACCEL_PREFER_* */
#define GMEM_ACCEL_DRM_ATTR_ATOMIC		1	/* value: GMEM_ACCEL_DRM_ATOMIC_* */

/* Who does atomics on a range's memory (xe's DRM_XE_ATOMIC_* values and meaning). */
#define GMEM_ACCEL_DRM_ATOMIC_UNDEFINED	0	/* the default: the device's, wherever it is */
#define GMEM_ACCEL_DRM_ATOMIC_DEVICE	1	/* the device's, wherever it is */
#define GMEM_ACCEL_DRM_ATOMIC_GLOBAL	2	/* the device's and the CPU's: in HBM */
#define GMEM_ACCEL_DRM_ATOMIC_CPU	3	/* the CPU's only: device atomics fail */

/**
 * struct gmem_accel_drm_madvise - set one memory attribute of a range (DRM_IOCTL_XE_MADVISE)
 * @addr:     page aligned
 * @size:     bytes, page aligned, not 0; addr + size at most the process's address space
 * @type:     GMEM_ACCEL_DRM_ATTR_*
 * @value:    the attribute's value
 * @reserved: 0
 */
struct gmem_accel_drm_madvise {
	__u64 addr;
	__u64 size;
	__u32 type;
	__u32 value;
	__u64 reserved[2];
};

/**
 * struct gmem_accel_drm_mem_attrs - the attributes at an address, and the range that has them
 * @addr:     in: any address below the process's address space's end
 * @start:    out: the first byte of the largest range around @addr with the same attributes
 * @end:      out: ... and the byte after its last
 * @location: out: GMEM_ACCEL_PREFER_*
 * @atomic:   out: GMEM_ACCEL_DRM_ATOMIC_*
 * @reserved: 0
 */
struct gmem_accel_drm_mem_attrs {
	__u64 addr;
	__u64 start;
	__u64 end;
	__u32 location;
	__u32 atomic;
	__u64 reserved;
};

#define DRM_IOCTL_GMEM_ACCEL_MADVISE \
	DRM_IOW(DRM_COMMAND_BASE + DRM_GMEM_ACCEL_MADVISE, struct gmem_accel_drm_madvise)
#define DRM_IOCTL_GMEM_ACCEL_QUERY_MEM_ATTRS \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_GMEM_ACCEL_QUERY_MEM_ATTRS, \
		 struct gmem_accel_drm_mem_attrs)
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
