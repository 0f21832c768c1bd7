/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * gmem-accel hardware contract: the one definition of the device's PCI
 * identity, registers and bit fields, shared by the QEMU device
 * (hw/gmem-accel/) and the Linux driver (guest-driver/).
 * docs/hardware-spec.md describes the same layout in prose: change both.
 *
 * Plain integer macros only, so it builds unchanged in QEMU and the kernel.
 */
#ifndef GMEM_ACCEL_HW_H
#define GMEM_ACCEL_HW_H

/* PCI identity: QEMU's experimental vendor ID (as edu), an accelerator */
#define GMEM_PCI_VENDOR_ID          0x1234
#define GMEM_PCI_DEVICE_ID          0x474d
#define GMEM_PCI_REVISION           0x01
#define GMEM_PCI_CLASS_CODE         0x1200  /* PCI_CLASS_PROCESSING_ACCEL */

/* BARs */
#define GMEM_BAR_REGS               0   /* 64-bit MMIO: registers + MSI-X */
#define GMEM_BAR_HBM                2   /* 64-bit prefetchable: HBM */

/* BAR0 layout: registers in [0, GMEM_REGS_SIZE), then MSI-X */
#define GMEM_BAR0_SIZE              0x4000
#define GMEM_REGS_SIZE              0x1000
#define GMEM_MSIX_TABLE_OFFSET      0x2000
#define GMEM_MSIX_PBA_OFFSET        0x3000
#define GMEM_MSIX_VECTORS           8

/* Configuration space capabilities (offsets) */
#define GMEM_CFG_MSIX_OFFSET        0x70
#define GMEM_CFG_EXP_OFFSET         0x80
/*
 * Extended capabilities: the enabled ones among ATS, PASID and PRI, in that
 * order, packed from GMEM_CFG_EXT_CAP_BASE one GMEM_CFG_EXT_CAP_STRIDE apart
 * (with all three: 0x100, 0x110, 0x120).
 */
#define GMEM_CFG_EXT_CAP_BASE       0x100
#define GMEM_CFG_EXT_CAP_STRIDE     0x10
#define GMEM_PASID_WIDTH            20  /* PASID bits the device can tag */
#define GMEM_PRI_MAX_REQUESTS       64  /* outstanding page requests */

/*
 * Registers: 32 bits wide, little-endian; 64-bit quantities are LO/HI
 * pairs, and an 8-byte access to a pair is split by the device. Any other
 * width, an unaligned or unknown offset, or a write to a read-only register
 * is ignored and sets STATUS.ERROR with ERROR_CODE and ERROR_INFO.
 */
#define GMEM_REG_ID                 0x000   /* RO: GMEM_ID_MAGIC */
#define GMEM_REG_VERSION            0x004   /* RO: major << 16 | minor */
#define GMEM_REG_CAP                0x008   /* RO: GMEM_CAP_* */
#define GMEM_REG_NUM_VECTORS        0x00c   /* RO: MSI-X vectors */
#define GMEM_REG_HBM_SIZE_LO        0x010   /* RO: HBM (BAR2) bytes */
#define GMEM_REG_HBM_SIZE_HI        0x014
#define GMEM_REG_STATUS             0x018   /* RO: GMEM_STATUS_* */
#define GMEM_REG_RESET              0x01c   /* WO: GMEM_RESET_MAGIC */
#define GMEM_REG_ERROR_CODE         0x020   /* RW: GMEM_ERR_*, write clears */
#define GMEM_REG_ERROR_INFO         0x024   /* RO: offset/value at fault */
#define GMEM_REG_SCRATCH            0x028   /* RW: driver's, reset clears */

#define GMEM_ID_MAGIC               0x4d454d47  /* "GMEM" little-endian */
#define GMEM_VERSION_MAJOR          0
#define GMEM_VERSION_MINOR          1
#define GMEM_VERSION \
	((GMEM_VERSION_MAJOR << 16) | GMEM_VERSION_MINOR)
#define GMEM_VERSION_MAJOR_OF(v)    (((v) >> 16) & 0xffff)
#define GMEM_VERSION_MINOR_OF(v)    ((v) & 0xffff)

/* GMEM_REG_CAP: set only for features implemented and enabled */
#define GMEM_CAP_HBM                (1u << 0)   /* BAR2 is device memory */
#define GMEM_CAP_ATS                (1u << 1)   /* ATS ext. capability */
#define GMEM_CAP_PASID              (1u << 2)   /* PASID ext. capability */
#define GMEM_CAP_PRI                (1u << 3)   /* PRI ext. capability */
#define GMEM_CAP_KNOWN_MASK         0x0000000fu

/* GMEM_REG_STATUS */
#define GMEM_STATUS_READY           (1u << 0)
#define GMEM_STATUS_ERROR           (1u << 1)   /* see ERROR_CODE */

#define GMEM_RESET_MAGIC            0x54455352  /* "RSET" */

/* GMEM_REG_ERROR_CODE values, with what ERROR_INFO holds */
#define GMEM_ERR_NONE               0
#define GMEM_ERR_BAD_REG            1   /* unknown register: offset */
#define GMEM_ERR_BAD_ACCESS         2   /* bad width/alignment: offset */
#define GMEM_ERR_READ_ONLY          3   /* write to RO register: offset */
#define GMEM_ERR_BAD_RESET          4   /* RESET without magic: value */

/* HBM size limits (BAR2 is a power of two) */
#define GMEM_HBM_MIN_SIZE           (2ull << 20)
#define GMEM_HBM_MAX_SIZE           (64ull << 30)

#endif /* GMEM_ACCEL_HW_H */
