/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * gmem-accel hardware contract: the one definition of the device's PCI
 * identity, registers and bit fields, shared by the QEMU device
 * (hw/gmem-accel/) and the Linux driver (guest-driver/).
 * docs/hardware-spec.md describes the same layout in prose: change both.
 *
 * Macros and two structs (the fault record and the command descriptor),
 * so it builds unchanged in QEMU and the kernel and passes both checkpatches:
 * hence no indentation (QEMU forbids tabs, the kernel leading spaces).
 */
#ifndef GMEM_ACCEL_HW_H
#define GMEM_ACCEL_HW_H

/*
 * Field types of structures in memory, little-endian: QEMU (whose every
 * file includes qemu/osdep.h first) has plain integers, the kernel __le*.
 */
#ifdef QEMU_OSDEP_H
#define GMEM_U8                     uint8_t
#define GMEM_LE16                   uint16_t
#define GMEM_LE32                   uint32_t
#define GMEM_LE64                   uint64_t
#else
#include <linux/types.h>
#define GMEM_U8                     __u8
#define GMEM_LE16                   __le16
#define GMEM_LE32                   __le32
#define GMEM_LE64                   __le64
#endif

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
#define GMEM_REGS_SIZE              0x2000
#define GMEM_MSIX_TABLE_OFFSET      0x2000
#define GMEM_MSIX_PBA_OFFSET        0x3000

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
#define GMEM_REG_ERROR_ADDR_LO      0x030   /* RO: address at fault */
#define GMEM_REG_ERROR_ADDR_HI      0x034
#define GMEM_REG_NUM_CONTEXTS       0x038   /* RO: GMEM_NUM_CONTEXTS */
#define GMEM_REG_NUM_QUEUES         0x03c   /* RO: GMEM_NUM_QUEUES */
#define GMEM_REG_TLB_ENTRIES        0x040   /* RO: device TLB size */

#define GMEM_ID_MAGIC               0x4d454d47  /* "GMEM" little-endian */
#define GMEM_VERSION_MAJOR          0
#define GMEM_VERSION_MINOR          11
#define GMEM_VERSION ((GMEM_VERSION_MAJOR << 16) | GMEM_VERSION_MINOR)
#define GMEM_VERSION_MAJOR_OF(v)    (((v) >> 16) & 0xffff)
#define GMEM_VERSION_MINOR_OF(v)    ((v) & 0xffff)

/* GMEM_REG_CAP: set only for features implemented and enabled */
#define GMEM_CAP_HBM                (1u << 0)   /* BAR2 is device memory */
#define GMEM_CAP_ATS                (1u << 1)   /* ATS ext. capability */
#define GMEM_CAP_PASID              (1u << 2)   /* PASID ext. capability */
#define GMEM_CAP_PRI                (1u << 3)   /* PRI ext. capability */
#define GMEM_CAP_MMU                (1u << 4)   /* contexts, walker, TLB */
#define GMEM_CAP_DMA                (1u << 5)   /* command queues */
#define GMEM_CAP_FAULTS             (1u << 6)   /* replayable faults */
#define GMEM_CAP_COHERENT           (1u << 7)   /* BAR2 is CPU-coherent RAM */
#define GMEM_CAP_PAGE_64K           (1u << 8)   /* GMEM_PTE_CONT (from 0.5) */
#define GMEM_CAP_ACCESS_COUNTERS    (1u << 9)   /* GMEM_REG_AC_* (from 0.11) */
#define GMEM_CAP_KNOWN_MASK         0x000003ffu

/* GMEM_REG_STATUS */
#define GMEM_STATUS_READY           (1u << 0)
#define GMEM_STATUS_ERROR           (1u << 1)   /* see ERROR_CODE */

#define GMEM_RESET_MAGIC            0x54455352  /* "RSET" */

/*
 * GMEM_REG_ERROR_CODE values. ERROR_INFO and ERROR_ADDR hold what the
 * comment says; the error also raises GMEM_VEC_ERROR.
 */
#define GMEM_ERR_NONE               0
#define GMEM_ERR_BAD_REG            1   /* unknown register: offset */
#define GMEM_ERR_BAD_ACCESS         2   /* bad width/alignment: offset */
#define GMEM_ERR_READ_ONLY          3   /* write to RO register: offset */
#define GMEM_ERR_BAD_RESET          4   /* RESET without magic: value */
#define GMEM_ERR_BAD_VALUE          5   /* bad value: offset; addr value */
#define GMEM_ERR_BAD_TAIL           6   /* past the ring: queue; addr TAIL */
#define GMEM_ERR_BAD_COMMAND        7   /* queue << 16 | CMD_ST_*; addr desc */
#define GMEM_ERR_PT_RESERVED        8   /* ctx << 16 | level; addr PTE */
#define GMEM_ERR_PT_ADDRESS         9   /* ctx << 16 | level; addr table/page */
#define GMEM_ERR_PT_LOOP            10  /* ctx << 16 | level; addr table */
#define GMEM_ERR_BAD_CONTEXT        11  /* ctx; addr VA */
#define GMEM_ERR_BAD_RESPONSE       12  /* value written to FAULT_RESPONSE */
#define GMEM_ERR_DMA                13  /* queue; addr bus/HBM address */
#define GMEM_ERR_FAULT_OVERFLOW     14  /* group; fault queue full */
#define GMEM_ERR_POISON             15  /* queue; addr the poisoned HBM page */
#define GMEM_ERR_AC_DMA             16  /* ctx; addr the record's (0.11) */

/* HBM size limits (BAR2 is a power of two) */
#define GMEM_HBM_MIN_SIZE           (2ull << 20)
#define GMEM_HBM_MAX_SIZE           (64ull << 30)

/*
 * MSI-X vectors (numbered so from 0.9). The 64 queues share six: a vector each
 * would take 66 of a CPU's ~200, too many for a guest with 16 devices.
 */
#define GMEM_MSIX_VECTORS           8
#define GMEM_VEC_FAULT              0   /* fault records posted */
/* access-counter records posted (0.11): one handler serves both queues */
#define GMEM_VEC_ACCESS             GMEM_VEC_FAULT
#define GMEM_VEC_ERROR              1   /* ERROR_CODE set */
#define GMEM_NUM_QUEUE_VECTORS      (GMEM_MSIX_VECTORS - 2)
/* a command with NOTIFY on queue q done */
#define GMEM_VEC_QUEUE(q)           (2 + (q) % GMEM_NUM_QUEUE_VECTORS)

/*
 * Fault queue: a ring of GMEM_FAULT_RECORD_SIZE records in system memory
 * (bus address). The device writes at TAIL, the driver consumes at HEAD;
 * both are indices in [0, 1 << ENTRIES_LOG2). Full when TAIL + 1 == HEAD.
 */
#define GMEM_REG_FQ_BASE_LO         0x100   /* RW: ring base, record aligned */
#define GMEM_REG_FQ_BASE_HI         0x104
#define GMEM_REG_FQ_ENTRIES_LOG2    0x108   /* RW: 1..GMEM_RING_MAX_LOG2 */
#define GMEM_REG_FQ_CTRL            0x10c   /* RW: GMEM_FQ_CTRL_* */
#define GMEM_REG_FQ_HEAD            0x110   /* RW: driver's consumer index */
#define GMEM_REG_FQ_TAIL            0x114   /* RO: device's producer index */
#define GMEM_REG_FQ_STATUS          0x118   /* RO: GMEM_FQ_STATUS_* */
#define GMEM_REG_FAULT_RESPONSE     0x11c   /* WO: group | GMEM_RESP_* << 16 */
#define GMEM_REG_FQ_PENDING         0x120   /* RO: groups awaiting response */
/*
 * 1: groups are posted without the fault interrupt (a driver thread serves
 * the queue meanwhile); writing 0 raises it if TAIL != HEAD (from 0.8).
 */
#define GMEM_REG_FQ_IRQ_HOLD        0x124   /* RW: 0 or 1 */

#define GMEM_FQ_CTRL_ENABLE         (1u << 0)   /* 0 -> 1 zeroes HEAD/TAIL */
#define GMEM_FQ_STATUS_ENABLED      (1u << 0)
#define GMEM_FQ_STATUS_OVERFLOW     (1u << 1)   /* a group waits for room */

#define GMEM_RESP_GROUP_MASK        0xffffu
#define GMEM_RESP_SHIFT             16
#define GMEM_RESP_REPLAY            1   /* translate again and continue */
#define GMEM_RESP_CANCEL            2   /* fail the command: ST_FAULT */

/*
 * TLB invalidation through registers, usable while every queue is stalled:
 * write INV_VA/INV_SIZE/INV_CTX, then a sequence number to INV_TRIGGER;
 * the invalidation is complete when INV_DONE reads that number.
 * INV_SIZE 0 means the whole context; INV_CTX GMEM_INV_ALL_CONTEXTS, all.
 */
#define GMEM_REG_INV_VA_LO          0x140
#define GMEM_REG_INV_VA_HI          0x144
#define GMEM_REG_INV_SIZE_LO        0x148
#define GMEM_REG_INV_SIZE_HI        0x14c
#define GMEM_REG_INV_CTX            0x150
#define GMEM_REG_INV_TRIGGER        0x154   /* RW: sequence number */
#define GMEM_REG_INV_DONE           0x158   /* RO: last sequence completed */
#define GMEM_INV_ALL_CONTEXTS       0xffffu

/*
 * Access counters (from 0.11), as a GPU's: per context, the engines'
 * accesses to each region of VA (1 << AC_GRANULARITY bytes, aligned)
 * are counted apart for HBM (local) and system memory (remote), a page an
 * operand touches in a command step counting one. A region whose count
 * reaches AC_THRESHOLD gets a record in the notification ring (system
 * memory, like the fault queue: full when TAIL + 1 == HEAD) and its count
 * starts again from 0; with the ring full the record is dropped and
 * AC_DROPPED counts it. The device tracks at most GMEM_AC_MAX_REGIONS
 * regions at once (GMEM_AC_WAYS-way sets; a new region replaces its set's
 * least recently touched one). Software clears one region (AC_CLEAR_VA and
 * AC_CLEAR_CTX, then GMEM_AC_CLEAR_REGION to AC_CLEAR) or all of them.
 */
#define GMEM_REG_AC_BASE_LO         0x300   /* RW: ring base, record aligned */
#define GMEM_REG_AC_BASE_HI         0x304
#define GMEM_REG_AC_ENTRIES_LOG2    0x308   /* RW: 1..GMEM_RING_MAX_LOG2 */
#define GMEM_REG_AC_CTRL            0x30c   /* RW: GMEM_AC_CTRL_* */
#define GMEM_REG_AC_HEAD            0x310   /* RW: driver's consumer index */
#define GMEM_REG_AC_TAIL            0x314   /* RO: device's producer index */
#define GMEM_REG_AC_GRANULARITY     0x318   /* RW: log2 bytes, 16 or 21 */
#define GMEM_REG_AC_THRESHOLD       0x31c   /* RW: 1..GMEM_AC_THRESHOLD_MAX */
#define GMEM_REG_AC_CLEAR_VA_LO     0x320   /* RW: a VA in the region */
#define GMEM_REG_AC_CLEAR_VA_HI     0x324
#define GMEM_REG_AC_CLEAR_CTX       0x328   /* RW: its context */
#define GMEM_REG_AC_CLEAR           0x32c   /* WO: GMEM_AC_CLEAR_* */
#define GMEM_REG_AC_TRACKED         0x330   /* RO: regions tracked now */
#define GMEM_REG_AC_NOTIFIED        0x334   /* RO: records written (wraps) */
#define GMEM_REG_AC_DROPPED         0x338   /* RO: records dropped (wraps) */
#define GMEM_REG_AC_CAPACITY        0x33c   /* RO: GMEM_AC_MAX_REGIONS */

/* 0 -> 1 zeroes HEAD, TAIL, NOTIFIED, DROPPED and every region's count */
#define GMEM_AC_CTRL_ENABLE         (1u << 0)
#define GMEM_AC_GRAN_64K            16
#define GMEM_AC_GRAN_2M             21
#define GMEM_AC_THRESHOLD_MAX       65535
#define GMEM_AC_THRESHOLD_DEFAULT   256     /* after reset, as UVM's */
#define GMEM_AC_CLEAR_REGION        1       /* both apertures of one region */
#define GMEM_AC_CLEAR_ALL           2
#define GMEM_AC_MAX_REGIONS         256
#define GMEM_AC_WAYS                4

/*
 * Access-counter record, at the notification ring's TAIL. Little-endian,
 * no padding (both sides check its size).
 */
struct gmem_access_record {
GMEM_LE64 va;           /* region base VA, GRANULARITY aligned */
GMEM_LE32 count;        /* accesses counted, >= the threshold */
GMEM_LE16 ctx;          /* context */
GMEM_U8 aperture;       /* GMEM_AC_APERTURE_* */
GMEM_U8 granularity;    /* log2 of the region's size: 16 or 21 */
GMEM_LE32 seq;          /* device-wide record number */
GMEM_LE32 reserved0;    /* 0 */
GMEM_LE64 reserved1;    /* 0 */
};
#define GMEM_ACCESS_RECORD_SIZE     32
#define GMEM_AC_APERTURE_LOCAL      0   /* HBM */
#define GMEM_AC_APERTURE_REMOTE     1   /* system memory */

/*
 * Command queues: GMEM_NUM_QUEUES rings of GMEM_CMD_SIZE descriptors in
 * system memory, one engine each. The driver writes descriptors, then the
 * index past the last one to TAIL (doorbell); the device consumes at HEAD
 * and writes each descriptor's status word back when it is done with it.
 * As many as there are contexts (from 0.9), so that a
 * driver can give each context its own, as a GPU gives each its channel: a
 * queue stalled on one context's faults holds up no other context.
 */
#define GMEM_NUM_QUEUES             64
#define GMEM_REG_QUEUE_BASE         0x1000
#define GMEM_REG_QUEUE_STRIDE       0x40
#define GMEM_REG_QUEUE(q, r) \
(GMEM_REG_QUEUE_BASE + (q) * GMEM_REG_QUEUE_STRIDE + (r))
#define GMEM_CQ_BASE_LO             0x00    /* RW: ring base, 64-byte aligned */
#define GMEM_CQ_BASE_HI             0x04
#define GMEM_CQ_ENTRIES_LOG2        0x08    /* RW: 1..GMEM_RING_MAX_LOG2 */
#define GMEM_CQ_CTRL                0x0c    /* RW: GMEM_CQ_CTRL_* */
#define GMEM_CQ_TAIL                0x10    /* RW: doorbell */
#define GMEM_CQ_HEAD                0x14    /* RO */
#define GMEM_CQ_STATE               0x18    /* RO: GMEM_CQ_STATE_* */
#define GMEM_CQ_COMPLETED           0x1c    /* RO: commands completed */
#define GMEM_CQ_STEPS               0x20    /* RO: engine steps taken (wraps) */
/*
 * 1: the queue's fault groups are posted without the fault interrupt (the
 * thread that rang the doorbell serves them); 1 -> 0 raises it if the fault
 * queue holds records and FQ_IRQ_HOLD is 0 (from 0.10).
 */
#define GMEM_CQ_FAULT_HOLD          0x24    /* RW: 0 or 1 */
/*
 * A doorbell sets the queue's FAULT_HOLD to this bit of the value written
 * (from 0.10): one write queues a batch and holds its faults' interrupt for
 * the thread that waits, another without the bit hands them back.
 */
#define GMEM_CQ_TAIL_FAULT_HOLD     (1u << 31)

#define GMEM_CQ_CTRL_ENABLE         (1u << 0)   /* 0 -> 1 zeroes HEAD/TAIL */
#define GMEM_CQ_STATE_DISABLED      0
#define GMEM_CQ_STATE_IDLE          1   /* HEAD == TAIL */
#define GMEM_CQ_STATE_RUNNING       2
#define GMEM_CQ_STATE_STALLED       3   /* waiting for a fault response */
#define GMEM_CQ_STATE_BROKEN        4   /* bad ring; disable to recover */

#define GMEM_RING_MAX_LOG2          16

/* Address-space contexts: one register block each */
#define GMEM_NUM_CONTEXTS           64
#define GMEM_REG_CTX_BASE           0x800
#define GMEM_REG_CTX_STRIDE         0x10
#define GMEM_REG_CTX(c, r) \
(GMEM_REG_CTX_BASE + (c) * GMEM_REG_CTX_STRIDE + (r))
#define GMEM_CTX_ROOT_LO            0x00    /* RW: level-4 table, 4K aligned */
#define GMEM_CTX_ROOT_HI            0x04
#define GMEM_CTX_CTRL               0x08    /* RW: GMEM_CTX_CTRL_* */
/* Writing ROOT or CTRL drops the context's TLB entries. */
#define GMEM_CTX_CTRL_ENABLE        (1u << 0)
#define GMEM_CTX_CTRL_ROOT_HBM      (1u << 1)   /* root table lives in HBM */
#define GMEM_CTX_CTRL_MASK          0x3u

/* Counters: RO 64-bit LO/HI pairs, zeroed by reset */
#define GMEM_REG_COUNTER_BASE       0x400
#define GMEM_REG_COUNTER(i)         (GMEM_REG_COUNTER_BASE + (i) * 8)
#define GMEM_CNT_FAULTS             0   /* fault records posted */
#define GMEM_CNT_REPLAYS            1
#define GMEM_CNT_CANCELS            2
#define GMEM_CNT_TLB_HITS           3
#define GMEM_CNT_TLB_MISSES         4
#define GMEM_CNT_WALKS              5   /* page-table walks */
#define GMEM_CNT_BYTES              6   /* bytes copied/filled */
#define GMEM_CNT_COMMANDS           7   /* commands completed */
#define GMEM_NUM_COUNTERS           8

/*
 * Page tables: 4 levels of 512 64-bit entries (4 KiB tables), 48-bit VA.
 * Level 4 indexes VA[47:39], level 3 VA[38:30], level 2 VA[29:21],
 * level 1 VA[20:12]. A level-2 entry with HUGE maps 2 MiB; level-1 entries
 * map 4 KiB, or 64 KiB as a CONT group: the 16 aligned entries of one
 * 64 KiB VA range, each with CONT, the same bits (but the software's) and
 * consecutive addresses of a 64 KiB-aligned target (a group that breaks this maps 4 KiB pages).
 * Tables and pages live in system memory (bus address) or HBM (offset into
 * BAR2), as the entry's HBM bit says.
 */
#define GMEM_VA_BITS                48
#define GMEM_PT_LEVELS              4
#define GMEM_PT_ENTRIES             512
#define GMEM_PAGE_SHIFT             12
#define GMEM_PAGE_SIZE              (1ull << GMEM_PAGE_SHIFT)
#define GMEM_CONT_SHIFT             16
#define GMEM_CONT_SIZE              (1ull << GMEM_CONT_SHIFT)
#define GMEM_CONT_ENTRIES           (GMEM_CONT_SIZE / GMEM_PAGE_SIZE)
#define GMEM_HUGE_SHIFT             21
#define GMEM_HUGE_SIZE              (1ull << GMEM_HUGE_SHIFT)
#define GMEM_PT_SHIFT(level)        (GMEM_PAGE_SHIFT + 9 * ((level) - 1))
#define GMEM_PT_INDEX(va, level)    (((va) >> GMEM_PT_SHIFT(level)) & 0x1ff)

#define GMEM_PTE_VALID              (1ull << 0)
#define GMEM_PTE_READ               (1ull << 1)  /* leaf only */
#define GMEM_PTE_WRITE              (1ull << 2)  /* leaf only */
#define GMEM_PTE_ATOMIC             (1ull << 3)  /* leaf only */
#define GMEM_PTE_HUGE               (1ull << 4)  /* level 2: 2 MiB leaf */
#define GMEM_PTE_HBM                (1ull << 5)  /* target is in HBM */
#define GMEM_PTE_CONT               (1ull << 6)  /* level 1: in a 64K group */
#define GMEM_PTE_SW_MASK            (0xfull << 8)   /* ignored: software's */
#define GMEM_PTE_ADDR_MASK          0x000ffffffffff000ull  /* bits 51:12 */
#define GMEM_PTE_PERM_MASK \
(GMEM_PTE_READ | GMEM_PTE_WRITE | GMEM_PTE_ATOMIC)
/* Bits that must be zero: in a leaf, and in a table pointer */
#define GMEM_PTE_LEAF_RSVD \
(~(GMEM_PTE_VALID | GMEM_PTE_PERM_MASK | GMEM_PTE_HUGE | \
GMEM_PTE_HBM | GMEM_PTE_CONT | GMEM_PTE_SW_MASK | GMEM_PTE_ADDR_MASK))
#define GMEM_PTE_TABLE_RSVD \
(~(GMEM_PTE_VALID | GMEM_PTE_HBM | GMEM_PTE_SW_MASK | GMEM_PTE_ADDR_MASK))

/* Access types (fault records, permission checks) */
#define GMEM_ACCESS_READ            (1u << 0)
#define GMEM_ACCESS_WRITE           (1u << 1)
#define GMEM_ACCESS_ATOMIC          (1u << 2)   /* needs R, W and A */

/*
 * Fault record: the device writes one per page that missed, at the fault
 * queue's TAIL. Little-endian; the fields sit at their natural alignment,
 * so the struct has no padding (both sides check its size).
 */
struct gmem_fault_record {
GMEM_LE64 va;           /* page-aligned VA that missed */
GMEM_LE16 ctx;          /* context */
GMEM_LE16 group;        /* answer with FAULT_RESPONSE */
GMEM_U8 access;         /* GMEM_ACCESS_* */
GMEM_U8 reason;         /* GMEM_FAULT_* */
GMEM_U8 engine;         /* queue that faulted */
GMEM_U8 flags;          /* GMEM_FAULT_F_* */
GMEM_LE64 pte;          /* the entry that stopped the walk (0 if none) */
GMEM_LE32 seq;          /* device-wide record number */
/* its queue's HEAD: a CANCEL fails that command, its error belongs there */
GMEM_LE16 slot;
GMEM_LE16 reserved;     /* 0 */
};
#define GMEM_FAULT_RECORD_SIZE      32
#define GMEM_FAULT_NOT_PRESENT      1   /* an entry on the walk is invalid */
#define GMEM_FAULT_PERMISSION       2   /* leaf lacks the access's bits */
#define GMEM_FAULT_F_LAST           (1u << 0)   /* last record of its group */
/* (page, access) pairs coalesced into one group, as a UVM fault batch */
#define GMEM_FAULT_GROUP_MAX        256

/*
 * Command descriptor, in a command ring. Little-endian, no padding (as the
 * fault record).
 */
struct gmem_cmd_desc {
GMEM_U8 opcode;         /* GMEM_OP_* */
GMEM_U8 flags;          /* GMEM_CMD_F_* */
GMEM_LE16 ctx;          /* context for GMEM_ADDR_VA operands */
GMEM_LE32 status;       /* driver writes 0; device writes GMEM_CMD_ST_* */
GMEM_LE64 dst;
GMEM_LE64 src;
GMEM_LE64 size;         /* bytes (COPY, FILL, TLB_INV) or elements */
GMEM_LE64 value;        /* FILL pattern, FENCE value, compute's a */
GMEM_LE64 value2;       /* SCALE_ADD b */
GMEM_LE32 dst_stride;   /* compute: bytes between elements */
GMEM_LE32 src_stride;
GMEM_LE64 reserved;     /* 0 */
};
#define GMEM_CMD_SIZE               64

#define GMEM_OP_NOP                 1
#define GMEM_OP_COPY                2   /* dst[0..size) = src[0..size) */
#define GMEM_OP_FILL                3   /* dst bytes = value's, repeated */
#define GMEM_OP_FENCE               4   /* u64 value to dst */
#define GMEM_OP_TLB_INV             5   /* ctx, VA dst, size (0: all) */
#define GMEM_OP_ATOMIC_ADD          6   /* dst[i*ds] += value, atomic */
#define GMEM_OP_SCALE_ADD           7   /* dst[i*ds] = src[i*ss]*value+value2 */
#define GMEM_OP_AXPY                8   /* dst[i*ds] += src[i*ss]*value (0.6) */

/* flags: operand kinds, notify, element width */
#define GMEM_CMD_F_DST_KIND(f)      ((f) & 3)
#define GMEM_CMD_F_SRC_KIND(f)      (((f) >> 2) & 3)
#define GMEM_CMD_F_DST(kind)        (kind)
#define GMEM_CMD_F_SRC(kind)        ((kind) << 2)
#define GMEM_CMD_F_NOTIFY           (1u << 4)   /* GMEM_VEC_QUEUE when done */
#define GMEM_CMD_F_WIDE             (1u << 5)   /* compute on u64, not u32 */
#define GMEM_CMD_F_KNOWN            0x3fu
#define GMEM_ADDR_VA                0   /* device VA in the command's ctx */
#define GMEM_ADDR_HBM               1   /* offset into HBM */
#define GMEM_ADDR_SYS               2   /* system bus address (DMA) */

#define GMEM_CMD_MAX_BYTES          (1ull << 32)    /* COPY/FILL size */
#define GMEM_CMD_MAX_ELEMENTS       (1ull << 24)    /* compute size */
#define GMEM_CMD_MAX_STRIDE         (1u << 24)
#define GMEM_CMD_F_ELEM_SIZE(f)     ((f) & GMEM_CMD_F_WIDE ? 8 : 4)
/* Bytes from a compute operand's first element to the end of its last */
#define GMEM_EXTENT(n, stride, elem) ((n) ? ((n) - 1) * (stride) + (elem) : 0)

/*
 * What each opcode uses (GMEM_OP_USES): a field or operand it does not use
 * must be zero. The device completes a descriptor that breaks these rules
 * with GMEM_CMD_ST_BAD_OPCODE/BAD_FIELD; the driver checks them first.
 */
#define GMEM_USE_KNOWN              (1u << 0)   /* a defined opcode */
#define GMEM_USE_DST                (1u << 1)   /* dst and its kind */
#define GMEM_USE_SRC                (1u << 2)   /* src and its kind */
#define GMEM_USE_SIZE               (1u << 3)
#define GMEM_USE_VALUE              (1u << 4)
#define GMEM_USE_VALUE2             (1u << 5)
#define GMEM_USE_STRIDES            (1u << 6)   /* of the operands it uses */
#define GMEM_USE_WIDE               (1u << 7)   /* GMEM_CMD_F_WIDE allowed */
/* size is bytes, at most GMEM_CMD_MAX_BYTES */
#define GMEM_USE_BYTES              (1u << 8)
/*
 * size is elements, at most GMEM_CMD_MAX_ELEMENTS; operands and strides
 * are multiples of the element size, strides at most GMEM_CMD_MAX_STRIDE
 */
#define GMEM_USE_ELEMENTS           (1u << 9)
#define GMEM_USE_DST_ALIGN8         (1u << 10)  /* dst is 8-byte aligned */

#define GMEM_USES_NOP               GMEM_USE_KNOWN
#define GMEM_USES_COPY \
(GMEM_USE_KNOWN | GMEM_USE_DST | GMEM_USE_SRC | GMEM_USE_SIZE | GMEM_USE_BYTES)
#define GMEM_USES_FILL \
(GMEM_USE_KNOWN | GMEM_USE_DST | GMEM_USE_SIZE | GMEM_USE_VALUE | \
GMEM_USE_BYTES)
#define GMEM_USES_FENCE \
(GMEM_USE_KNOWN | GMEM_USE_DST | GMEM_USE_VALUE | GMEM_USE_DST_ALIGN8)
/* TLB_INV: dst is a VA of ctx (GMEM_INV_ALL_CONTEXTS: every context) */
#define GMEM_USES_TLB_INV \
(GMEM_USE_KNOWN | GMEM_USE_DST | GMEM_USE_SIZE)
#define GMEM_USES_ATOMIC_ADD \
(GMEM_USE_KNOWN | GMEM_USE_DST | GMEM_USE_SIZE | GMEM_USE_VALUE | \
GMEM_USE_STRIDES | GMEM_USE_WIDE | GMEM_USE_ELEMENTS)
#define GMEM_USES_SCALE_ADD \
(GMEM_USES_ATOMIC_ADD | GMEM_USE_SRC | GMEM_USE_VALUE2)
#define GMEM_USES_AXPY              (GMEM_USES_ATOMIC_ADD | GMEM_USE_SRC)
/* The table: GMEM_USE_* of opcode @op, 0 for an undefined one */
#define GMEM_OP_USES(op) \
((op) == GMEM_OP_NOP ? GMEM_USES_NOP : \
(op) == GMEM_OP_COPY ? GMEM_USES_COPY : \
(op) == GMEM_OP_FILL ? GMEM_USES_FILL : \
(op) == GMEM_OP_FENCE ? GMEM_USES_FENCE : \
(op) == GMEM_OP_TLB_INV ? GMEM_USES_TLB_INV : \
(op) == GMEM_OP_ATOMIC_ADD ? GMEM_USES_ATOMIC_ADD : \
(op) == GMEM_OP_SCALE_ADD ? GMEM_USES_SCALE_ADD : \
(op) == GMEM_OP_AXPY ? GMEM_USES_AXPY : 0)


/* Status words */
#define GMEM_CMD_ST_PENDING         0
#define GMEM_CMD_ST_OK              1
#define GMEM_CMD_ST_FAULT           2   /* fault cancelled or unanswerable */
#define GMEM_CMD_ST_BAD_OPCODE      3
#define GMEM_CMD_ST_BAD_FIELD       4   /* flags, kind, size, stride, rsvd */
#define GMEM_CMD_ST_BAD_CONTEXT     5   /* out of range or disabled */
#define GMEM_CMD_ST_BAD_ADDRESS     6   /* HBM/system address unusable */
#define GMEM_CMD_ST_PT_ERROR        7   /* malformed page table */
#define GMEM_CMD_ST_POISON          8   /* touched a poisoned HBM page */

#endif /* GMEM_ACCEL_HW_H */
