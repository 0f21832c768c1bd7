/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * gmem-accel user-space API: ioctls on /dev/gmem_accelN. docs/uapi.md documents them.
 */
#ifndef _UAPI_GMEM_ACCEL_H
#define _UAPI_GMEM_ACCEL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define GMEM_ACCEL_IOC_MAGIC 'G'

/**
 * struct gmem_accel_info - identity of the device behind an open file
 * @vendor_id:   PCI vendor ID
 * @device_id:   PCI device ID
 * @revision:    PCI revision ID
 * @minor:       N of /dev/gmem_accelN
 * @version:     hardware version, major << 16 | minor (GMEM_REG_VERSION)
 * @caps:        GMEM_CAP_* bits (GMEM_REG_CAP)
 * @num_vectors: MSI-X vectors the driver enabled
 * @flags:       must be zero on input; reserved
 * @hbm_size:    device memory size in bytes
 */
struct gmem_accel_info {
	__u16 vendor_id;
	__u16 device_id;
	__u8 revision;
	__u8 pad0[3];
	__u32 minor;
	__u32 version;
	__u32 caps;
	__u32 num_vectors;
	__u32 flags;
	__u64 hbm_size;
};

#define GMEM_ACCEL_IOC_GET_INFO _IOWR(GMEM_ACCEL_IOC_MAGIC, 0x00, struct gmem_accel_info)

#endif /* _UAPI_GMEM_ACCEL_H */
