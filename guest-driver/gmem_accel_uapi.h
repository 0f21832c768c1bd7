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

/* Operations of struct gmem_accel_cmd */
#define GMEM_ACCEL_OP_COPY		1	/* dst[0, size) = src[0, size); bytes */
#define GMEM_ACCEL_OP_FILL		2	/* dst[0, size) = the bytes of value, repeated */
#define GMEM_ACCEL_OP_ATOMIC_ADD	3	/* dst[i * dst_stride] += value, i < size */
#define GMEM_ACCEL_OP_SCALE_ADD		4	/* dst[i * ds] = src[i * ss] * value + value2 */
#define GMEM_ACCEL_OP_AXPY		5	/* dst[i * ds] += src[i * ss] * value (from 0.6) */

/* struct gmem_accel_cmd.flags */
#define GMEM_ACCEL_CMD_WIDE		(1u << 0)	/* compute on u64 elements, not u32 */

#define GMEM_ACCEL_MAX_BATCH		64
#define GMEM_ACCEL_MAX_SNAPSHOT		(1u << 20)	/* pages */

/**
 * struct gmem_accel_cmd - one device command on the calling process's virtual addresses
 * @op:         GMEM_ACCEL_OP_*
 * @flags:      GMEM_ACCEL_CMD_*
 * @dst:        destination address
 * @src:        source address (COPY, SCALE_ADD, AXPY; else 0)
 * @size:       bytes (COPY, FILL: up to 4 GiB) or elements (compute: up to 2^24)
 * @value:      FILL pattern, addend (ATOMIC_ADD) or factor (SCALE_ADD, AXPY)
 * @value2:     SCALE_ADD addend; else 0
 * @dst_stride: compute: bytes between elements (0: all at dst), element aligned
 * @src_stride: SCALE_ADD, AXPY: likewise for src
 *
 * Fields an operation does not use must be zero. Compute addresses are element aligned.
 */
struct gmem_accel_cmd {
	__u32 op;
	__u32 flags;
	__u64 dst;
	__u64 src;
	__u64 size;
	__u64 value;
	__u64 value2;
	__u32 dst_stride;
	__u32 src_stride;
};

/* struct gmem_accel_submit.flags */
#define GMEM_ACCEL_SUBMIT_IN_FENCE	(1u << 0)	/* @fence in: a sync_file fd to wait for */
/*
 * The call also waits for the batch, as WAIT with no timeout (its faults served on the calling
 * thread), and returns the batch's result; @fence out is set first. The batch raises no
 * interrupt unless the wait has to sleep. A signal ends the wait with EINTR, the batch queued.
 */
#define GMEM_ACCEL_SUBMIT_WAIT		(1u << 1)

/**
 * struct gmem_accel_submit - queue a batch of commands
 * @cmds:  user pointer to @count struct gmem_accel_cmd
 * @count: 1..GMEM_ACCEL_MAX_BATCH
 * @flags: GMEM_ACCEL_SUBMIT_*, else zero
 * @fence: in, with GMEM_ACCEL_SUBMIT_IN_FENCE: a sync_file fd the batch runs after (any
 *         process's, any driver's); out: pass to GMEM_ACCEL_IOC_WAIT or FENCE_EXPORT
 */
struct gmem_accel_submit {
	__u64 cmds;
	__u32 count;
	__u32 flags;
	__u64 fence;
};

/**
 * struct gmem_accel_wait - wait until a batch is done
 * @fence:      from GMEM_ACCEL_IOC_SUBMIT on this file
 * @timeout_ms: 0 = just poll
 * @flags:      must be zero
 *
 * Returns 0 when every command of the batch succeeded; EFAULT (an address the process has
 * not mapped, or PROT_NONE), EPERM (a write to memory the process may only read), EIO (the
 * device failed the command), ETIME (not done within the timeout), EINVAL (no such fence).
 */
struct gmem_accel_wait {
	__u64 fence;
	__u32 timeout_ms;
	__u32 flags;
};

/* Per page of struct gmem_accel_snapshot */
#define GMEM_ACCEL_PAGE_READ	(1u << 0)	/* mapped on the device (readable) */
#define GMEM_ACCEL_PAGE_WRITE	(1u << 1)	/* and writable */
#define GMEM_ACCEL_PAGE_2M	(1u << 2)	/* by a 2 MiB device page */
#define GMEM_ACCEL_PAGE_HBM	(1u << 3)	/* to device memory */
#define GMEM_ACCEL_PAGE_64K	(1u << 4)	/* by a 64 KiB device page (a CONT group) */
/* a read duplicate: the device maps its own HBM copy read-only and system memory holds a copy too */
#define GMEM_ACCEL_PAGE_DUPLICATE (1u << 5)

/**
 * struct gmem_accel_snapshot - the device's view of a range of this process's pages
 * @addr:   page aligned
 * @npages: 1..GMEM_ACCEL_MAX_SNAPSHOT
 * @out:    user pointer to @npages bytes, GMEM_ACCEL_PAGE_* each (0: not mapped)
 * @flags:  must be zero
 */
struct gmem_accel_snapshot {
	__u64 addr;
	__u64 npages;
	__u64 out;
	__u32 flags;
	__u32 pad;
};

/**
 * struct gmem_accel_stats - this file's context
 * @context:       device context number (as the monitor shows it)
 * @flags:         must be zero on input
 * @faults:        fault records serviced
 * @fault_groups:  groups answered (replayed + cancelled)
 * @replays:       groups replayed
 * @cancels:       groups cancelled (their command failed)
 * @pages_mapped:  device PTEs written (a 2 MiB page counts 512)
 * @pages_zapped:  device PTEs removed by invalidations
 * @invalidations: mmu notifier invalidations received
 * @commands:      commands submitted
 * @migrated_to_device: pages this context moved into HBM
 * @migrated_to_system: pages it moved back with GMEM_ACCEL_IOC_MIGRATE
 * @queue:         the device command queue its batches run on (the monitor's queue N)
 * @pad:           zero
 */
struct gmem_accel_stats {
	__u32 context;
	__u32 flags;
	__u64 faults;
	__u64 fault_groups;
	__u64 replays;
	__u64 cancels;
	__u64 pages_mapped;
	__u64 pages_zapped;
	__u64 invalidations;
	__u64 commands;
	__u64 migrated_to_device;
	__u64 migrated_to_system;
	__u32 queue;
	__u32 pad;
};

/* struct gmem_accel_advise.location */
#define GMEM_ACCEL_PREFER_NONE		0	/* no advice: device faults map system memory */
#define GMEM_ACCEL_PREFER_DEVICE	1	/* device faults migrate the pages to HBM */
#define GMEM_ACCEL_PREFER_SYSTEM	2	/* pages live in system memory */

/* struct gmem_accel_advise.flags */
#define GMEM_ACCEL_ADVISE_ACCESSED_BY	 (1u << 0) /* the device keeps the range mapped */
#define GMEM_ACCEL_ADVISE_NOT_ACCESSED_BY (1u << 1) /* ... no more */
#define GMEM_ACCEL_ADVISE_KEEP_LOCATION	 (1u << 2) /* leave the location advice as it is */
#define GMEM_ACCEL_ADVISE_READ_MOSTLY	 (1u << 3) /* read duplication (managed memory) */
#define GMEM_ACCEL_ADVISE_NOT_READ_MOSTLY (1u << 4) /* ... no more: duplicates collapse */
#define GMEM_ACCEL_ADVISE_FLAGS		 (GMEM_ACCEL_ADVISE_ACCESSED_BY | \
					  GMEM_ACCEL_ADVISE_NOT_ACCESSED_BY | \
					  GMEM_ACCEL_ADVISE_KEEP_LOCATION | \
					  GMEM_ACCEL_ADVISE_READ_MOSTLY | \
					  GMEM_ACCEL_ADVISE_NOT_READ_MOSTLY)

/**
 * struct gmem_accel_advise - where a range of this process's memory should live, and whether
 * the device keeps it mapped
 * @addr:     page aligned
 * @size:     bytes, page aligned, not 0
 * @location: GMEM_ACCEL_PREFER_*; 0 with GMEM_ACCEL_ADVISE_KEEP_LOCATION
 * @flags:    GMEM_ACCEL_ADVISE_*; 0 sets the location alone
 *
 * Two attributes of each page, set independently, as CUDA's cudaMemAdvise() has them:
 *
 * The location (unless @flags has KEEP_LOCATION). The policy for device faults follows: in a
 * PREFER_DEVICE range the driver migrates the faulting window (the 2 MiB block inside the
 * VMA) to HBM and maps it there (unless the page thrashes: the driver then pins it in system
 * memory for a while, see docs/uapi.md); elsewhere it maps system memory for the device to
 * reach over the bus. PREFER_SYSTEM also migrates the range's HBM pages back at once.
 *
 * Accessed-by (ACCESSED_BY sets it, NOT_ACCESSED_BY clears it, neither leaves it): the device
 * maps the range's pages wherever they are. ADVISE maps the present ones at once, and a move
 * the driver makes (MIGRATE, a CPU access to HBM, eviction, a fault's migration) maps their
 * new place before it returns, so the device's accesses there do not fault and move nothing.
 * Changes the driver does not make (munmap, the kernel's own migration) unmap them as before.
 *
 * Read-mostly (READ_MOSTLY sets it, NOT_READ_MOSTLY clears it, neither leaves it), only on
 * managed memory (GMEM_ACCEL_OBJ_MANAGED): a device read of a page in system memory copies it
 * to HBM and both keep a read-only copy (a read duplicate, GMEM_ACCEL_PAGE_DUPLICATE); the
 * first write from either side collapses the copies to the writer. NOT_READ_MOSTLY collapses
 * the range's duplicates to system memory. The attribute belongs to the object's device pages
 * (every mapping of them), not to this context's addresses.
 *
 * -EINVAL: an unknown flag, ACCESSED_BY with NOT_ACCESSED_BY, READ_MOSTLY with
 * NOT_READ_MOSTLY, KEEP_LOCATION without one of those four or with a @location, an unknown
 * @location. -EOPNOTSUPP: (NOT_)READ_MOSTLY on a range not wholly inside mappings of managed
 * objects of this device. Advice belongs to the address range of this
 * context until replaced (it outlives munmap) or the file is closed; CPU accesses always
 * bring pages back.
 */
struct gmem_accel_advise {
	__u64 addr;
	__u64 size;
	__u32 location;
	__u32 flags;
};

/* struct gmem_accel_migrate.target */
#define GMEM_ACCEL_TO_DEVICE	0	/* into this device's HBM */
#define GMEM_ACCEL_TO_SYSTEM	1	/* back to system memory */

/**
 * struct gmem_accel_migrate - move a range of this process's memory, like a prefetch
 * @addr:   page aligned
 * @size:   bytes, page aligned, not 0
 * @target: GMEM_ACCEL_TO_*
 * @flags:  must be zero
 * @pages:  out: pages that moved (pages already there, pinned or shared do not)
 *
 * The process keeps using the same addresses: a CPU access to a page in HBM brings it (and
 * its neighbours in HBM) back, and the device maps HBM pages directly. EFAULT if part of
 * the range is not mapped, ENODEV if the device has no usable HBM, EIO if the device failed
 * a copy (the pages of that copy stay where they were).
 */
struct gmem_accel_migrate {
	__u64 addr;
	__u64 size;
	__u32 target;
	__u32 flags;
	__u64 pages;
};

/* struct gmem_accel_obj_alloc.flags (and struct gmem_accel_obj_query.flags, out) */
#define GMEM_ACCEL_OBJ_HBM		(1u << 0)	/* place in device memory */
#define GMEM_ACCEL_OBJ_SYSTEM		(1u << 1)	/* place in system memory */
#define GMEM_ACCEL_OBJ_PAGE_4K		(1u << 2)	/* force the page size (else by size) */
#define GMEM_ACCEL_OBJ_PAGE_64K		(1u << 3)
#define GMEM_ACCEL_OBJ_PAGE_2M		(1u << 4)
#define GMEM_ACCEL_OBJ_PINNED		(1u << 5)	/* never evicted to system memory */
/* migrates page by page between system memory and HBM on demand */
#define GMEM_ACCEL_OBJ_MANAGED		(1u << 6)
#define GMEM_ACCEL_OBJ_KNOWN		0x7fu

/* Largest object: as much as the largest HBM (64 GiB) */
#define GMEM_ACCEL_OBJ_MAX_SIZE		(1ull << 36)

/**
 * struct gmem_accel_obj_alloc - allocate a device memory object
 * @size:        bytes, 1..GMEM_ACCEL_OBJ_MAX_SIZE; rounded up to the page size
 * @flags:       GMEM_ACCEL_OBJ_*: at most one placement (neither: HBM if it has room, else
 *               system memory) and at most one page size (none: < 64 KiB -> 4 KiB,
 *               < 2 MiB -> 64 KiB, else 2 MiB, as NVIDIA UVM picks chunks)
 * @handle:      out: names the object on this file
 * @mmap_offset: out: mmap(2) offset of the object (MAP_SHARED), the same on every file of
 *               the device that holds it
 *
 * MANAGED (with no placement and not PINNED, else EINVAL): the object lives in system memory
 * and its device pages migrate one by one on demand, to HBM as the device touches them and
 * back as the CPU does (read-mostly pages are duplicated instead, GMEM_ACCEL_IOC_ADVISE).
 *
 * The object is zeroed. ENOSPC if HBM has no room for an HBM object, ENOMEM for system memory.
 */
struct gmem_accel_obj_alloc {
	__u64 size;
	__u32 flags;
	__u32 handle;
	__u64 mmap_offset;
};

/**
 * struct gmem_accel_obj_query - what an object is
 * @handle:      in: the object
 * @flags:       out: its placement, page size and PINNED (GMEM_ACCEL_OBJ_*)
 * @size:        out: bytes (a multiple of @page_size)
 * @page_size:   out: bytes of each device page: 4096, 65536 or 2097152
 * @hbm_addr:    out: HBM offset of its first byte (as the monitor shows it); ~0 if in system
 *               memory
 * @mmap_offset: out: as GMEM_ACCEL_IOC_OBJ_ALLOC gave it
 */
struct gmem_accel_obj_query {
	__u32 handle;
	__u32 flags;
	__u64 size;
	__u64 page_size;
	__u64 hbm_addr;
	__u64 mmap_offset;
};

/**
 * struct gmem_accel_obj_free - drop this file's handle to an object
 * @handle: the object; its memory is freed with the last reference (handle, mapping)
 * @flags:  must be zero
 */
struct gmem_accel_obj_free {
	__u32 handle;
	__u32 flags;
};

/**
 * struct gmem_accel_obj_export - share an object as a dma-buf file descriptor
 * @handle: in: the object (on this file)
 * @flags:  in: O_CLOEXEC, else zero
 * @fd:     out: the dma-buf; pass it to another process (SCM_RIGHTS) to import
 * @pad:    zero
 *
 * EOPNOTSUPP for a managed object (GMEM_ACCEL_OBJ_MANAGED).
 */
struct gmem_accel_obj_export {
	__u32 handle;
	__u32 flags;
	__s32 fd;
	__u32 pad;
};

/**
 * struct gmem_accel_obj_import - a handle on this file for an exported object
 * @fd:          in: a dma-buf gmem-accel exported (another driver's: EOPNOTSUPP)
 * @flags:       in: zero
 * @handle:      out: the object's handle here (the same object: its bytes are shared)
 * @pad:         zero
 * @mmap_offset: out: as GMEM_ACCEL_IOC_OBJ_ALLOC gives it
 */
struct gmem_accel_obj_import {
	__s32 fd;
	__u32 flags;
	__u32 handle;
	__u32 pad;
	__u64 mmap_offset;
};

/**
 * struct gmem_accel_fence_export - a batch's completion as a sync_file fd
 * @fence: in: from GMEM_ACCEL_IOC_SUBMIT on this file
 * @flags: in: O_CLOEXEC, else zero
 * @fd:    out: a sync_file; poll() says POLLIN once the batch is done (WAIT tells how it went)
 * @pad:   zero
 */
struct gmem_accel_fence_export {
	__u64 fence;
	__u32 flags;
	__s32 fd;
	__u64 pad;
};

#define GMEM_ACCEL_IOC_GET_INFO _IOWR(GMEM_ACCEL_IOC_MAGIC, 0x00, struct gmem_accel_info)
#define GMEM_ACCEL_IOC_SUBMIT   _IOWR(GMEM_ACCEL_IOC_MAGIC, 0x01, struct gmem_accel_submit)
#define GMEM_ACCEL_IOC_WAIT     _IOW(GMEM_ACCEL_IOC_MAGIC, 0x02, struct gmem_accel_wait)
#define GMEM_ACCEL_IOC_SNAPSHOT _IOW(GMEM_ACCEL_IOC_MAGIC, 0x03, struct gmem_accel_snapshot)
#define GMEM_ACCEL_IOC_STATS    _IOWR(GMEM_ACCEL_IOC_MAGIC, 0x04, struct gmem_accel_stats)
#define GMEM_ACCEL_IOC_MIGRATE  _IOWR(GMEM_ACCEL_IOC_MAGIC, 0x05, struct gmem_accel_migrate)
#define GMEM_ACCEL_IOC_ADVISE   _IOW(GMEM_ACCEL_IOC_MAGIC, 0x06, struct gmem_accel_advise)
#define GMEM_ACCEL_IOC_OBJ_ALLOC _IOWR(GMEM_ACCEL_IOC_MAGIC, 0x07, struct gmem_accel_obj_alloc)
#define GMEM_ACCEL_IOC_OBJ_FREE  _IOW(GMEM_ACCEL_IOC_MAGIC, 0x08, struct gmem_accel_obj_free)
#define GMEM_ACCEL_IOC_OBJ_QUERY _IOWR(GMEM_ACCEL_IOC_MAGIC, 0x09, struct gmem_accel_obj_query)
#define GMEM_ACCEL_IOC_OBJ_EXPORT _IOWR(GMEM_ACCEL_IOC_MAGIC, 0x0a, struct gmem_accel_obj_export)
#define GMEM_ACCEL_IOC_OBJ_IMPORT _IOWR(GMEM_ACCEL_IOC_MAGIC, 0x0b, struct gmem_accel_obj_import)
#define GMEM_ACCEL_IOC_FENCE_EXPORT \
	_IOWR(GMEM_ACCEL_IOC_MAGIC, 0x0c, struct gmem_accel_fence_export)

#endif /* _UAPI_GMEM_ACCEL_H */
