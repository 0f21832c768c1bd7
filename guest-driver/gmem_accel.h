/* SPDX-License-Identifier: GPL-2.0 */
/* gmem-accel driver: state shared by the driver's files. */
#ifndef GMEM_ACCEL_H
#define GMEM_ACCEL_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/idr.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/rwsem.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"

#define GMEM_ACCEL_NAME "gmem_accel"
#define GMEM_ACCEL_MAX_DEVICES 64

#define GMEM_CQ_LOG2	8	/* 256 commands per ring */
#define GMEM_FQ_LOG2	10	/* 1024 fault records */

struct gmem_ctx;

/* One command ring. Slots carry the context and batch fence of the command in them. */
struct gmem_queue {
	unsigned int id;
	struct mutex lock;		/* submission: tail, next_seq, slot info */
	void *ring;			/* 64-byte descriptors, DMA coherent */
	dma_addr_t ring_dma;
	u32 tail;			/* next free slot (driver's copy of TAIL) */
	u32 reaped;			/* next slot whose status was not yet looked at */
	u64 next_seq;			/* fence value of the next batch */
	u64 *fence;			/* the device writes completed batch seqs here */
	dma_addr_t fence_dma;
	u64 reaped_seq;			/* batches whose statuses have been collected */
	struct gmem_ctx **slot_ctx;
	u64 *slot_seq;
	int cancel_errno;		/* why the driver cancelled the command at HEAD */
	wait_queue_head_t wq;		/* waiters for fences and ring space */
};

/**
 * struct gmem_accel - one bound device
 * @dev:        the class device behind /dev/gmem_accelN; its refcount owns this struct
 * @cdev:       character device
 * @pdev:       PCI device, NULL once unbound (open files then get -ENODEV)
 * @regs:       BAR0 registers, valid while @pdev is set
 * @lock:       taken for read by file operations, for write by unbind
 * @info:       identity read from the registers at probe
 */
struct gmem_accel {
	struct device dev;
	struct cdev cdev;
	struct pci_dev *pdev;
	void __iomem *regs;
	struct rw_semaphore lock;
	struct gmem_accel_info info;

	struct gmem_queue queue[GMEM_NUM_QUEUES];

	/* fault queue, drained by fault_work */
	void *fq;
	dma_addr_t fq_dma;
	u32 fq_head;
	unsigned long *fault_req;	/* fault_work's hmm input flags and results, */
	unsigned long *fault_pfns;	/* one 2 MiB block each (the work is ordered) */
	struct work_struct fault_work;
	struct workqueue_struct *wq;

	/* contexts: ids 1..63 (0 is the driver's own), looked up by fault servicing */
	struct mutex ctx_lock;
	struct gmem_ctx *ctx[GMEM_NUM_CONTEXTS];
	struct ida ctx_ids;

	struct mutex inv_lock;		/* the TLB invalidation registers */
	u32 inv_seq;
	bool dead;			/* the device failed; everything gets -EIO */
};

/* A device page-table page and, above level 1, the tables it points to. */
struct gmem_pt {
	u64 *pte;			/* 512 entries, DMA coherent */
	dma_addr_t dma;
	struct gmem_pt **child;		/* levels 2-4 */
};

/**
 * struct gmem_ctx - one open file: a process address space mirrored on the device
 * @id:        device context (ASID) number
 * @mm:        the address space (mmgrab'd)
 * @notifier:  covers the whole address space; zaps device PTEs on CPU changes
 * @lock:      the device page table; held to program PTEs after mmu_interval_read_retry
 * @root:      level-4 table
 * @errors:    fence -> errno of batches that failed, until waited for
 * @stats:     counters for GMEM_ACCEL_IOC_STATS
 */
struct gmem_ctx {
	struct gmem_accel *g;
	unsigned int id;
	struct mm_struct *mm;
	struct mmu_interval_notifier notifier;
	struct mutex lock;
	struct gmem_pt root;
	struct xarray errors;
	struct gmem_accel_stats stats;
	u64 last_fence[GMEM_NUM_QUEUES];
	bool shut_down;
};

static inline struct gmem_accel *to_gmem_accel(struct device *dev)
{
	return container_of(dev, struct gmem_accel, dev);
}

static inline u32 gmem_read(struct gmem_accel *g, u32 reg)
{
	return readl(g->regs + reg);
}

static inline void gmem_write(struct gmem_accel *g, u32 reg, u32 val)
{
	writel(val, g->regs + reg);
}

static inline void gmem_write64(struct gmem_accel *g, u32 reg, u64 val)
{
	writel(lower_32_bits(val), g->regs + reg);
	writel(upper_32_bits(val), g->regs + reg + 4);
}

/* gmem_accel_hw.c: rings, interrupts, TLB invalidation */
int gmem_hw_init(struct gmem_accel *g);
void gmem_hw_fini(struct gmem_accel *g);
int gmem_tlb_invalidate(struct gmem_accel *g, unsigned int ctx, u64 va, u64 size);

/* gmem_accel_queue.c: command submission and fences */
int gmem_submit(struct gmem_ctx *ctx, const struct gmem_accel_cmd *cmds, u32 count,
		u64 *fence);
int gmem_wait(struct gmem_ctx *ctx, u64 fence, u32 timeout_ms);
void gmem_queue_reap(struct gmem_accel *g, struct gmem_queue *q);
int gmem_ctx_drain(struct gmem_ctx *ctx);

/* gmem_accel_ctx.c: contexts and their device page tables */
struct gmem_ctx *gmem_ctx_create(struct gmem_accel *g);
void gmem_ctx_destroy(struct gmem_ctx *ctx);
void gmem_ctx_shutdown(struct gmem_ctx *ctx);
int gmem_pt_map(struct gmem_ctx *ctx, u64 va, unsigned long *hmm_pfns, unsigned long npages);
void gmem_pt_snapshot(struct gmem_ctx *ctx, u64 va, u8 *out, unsigned long npages);

/* gmem_accel_fault.c: fault queue servicing */
void gmem_fault_work(struct work_struct *work);

extern const struct file_operations gmem_accel_fops;
extern const struct attribute_group *gmem_accel_groups[];

#endif /* GMEM_ACCEL_H */
