// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the device's rings in system memory, its interrupts and TLB invalidation.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/iommu.h>
#include <linux/iopoll.h>
#include <linux/stringify.h>

#include "gmem_accel.h"
#include "gmem_accel_queue.h"
#include "gmem_accel_fault.h"
#include "gmem_accel_counters.h"
#include "gmem_accel_trace.h"

#define GMEM_CQ_BYTES	((1u << GMEM_CQ_LOG2) * GMEM_CMD_SIZE)
#define GMEM_FQ_BYTES	((1u << GMEM_FQ_LOG2) * GMEM_FAULT_RECORD_SIZE)

/* The layouts of gmem_accel_hw.h, as docs/hardware-spec.md gives them */
static_assert(sizeof(struct gmem_cmd_desc) == GMEM_CMD_SIZE);
static_assert(offsetof(struct gmem_cmd_desc, src_stride) == 52);
static_assert(sizeof(struct gmem_fault_record) == GMEM_FAULT_RECORD_SIZE);
static_assert(offsetof(struct gmem_fault_record, slot) == 28);
static_assert(sizeof(struct gmem_access_record) == GMEM_ACCESS_RECORD_SIZE);
static_assert((1u << GMEM_FQ_LOG2) - 1 >= (GMEM_NUM_CONTEXTS - 1) * GMEM_FAULT_GROUP_MAX);
static_assert(GMEM_FQ_LOG2 <= GMEM_RING_MAX_LOG2);

static irqreturn_t gmem_fault_irq(int irq, void *data)
{
	struct gmem_accel *g = data;

	gmem_dev_count(g, GMEM_DEV_FAULT_IRQS, 1);
	gmem_ac_irq(g);		/* the access counters' records come on this vector too */
	/*
	 * Processes serving the queue drain it themselves, and the last one out looks at what
	 * the flag left them (gmem_fault_serve_leave()), unless it left before the flag was
	 * set: then we take it back. Records already taken (the interrupt often comes after the
	 * waiter took its group) need no one.
	 */
	smp_mb();
	if (atomic_read(&g->fault_servers)) {
		WRITE_ONCE(g->fault_irq_left, true);
		smp_mb();	/* flag, then count; serve_leave: count, then flag */
		if (atomic_read(&g->fault_servers) || !xchg(&g->fault_irq_left, false))
			return IRQ_HANDLED;
	}
	if (gmem_fault_pending(g))
		gmem_fault_kick(g);
	return IRQ_HANDLED;
}

/*
 * A command with NOTIFY completed on one of the queues that share this vector (@data, the
 * first of them: GMEM_VEC_QUEUE()): wake the waiters of those whose fence moved.
 */
static irqreturn_t gmem_queue_irq(int irq, void *data)
{
	struct gmem_queue *first = data;
	struct gmem_accel *g = first->g;

	gmem_dev_count(g, GMEM_DEV_QUEUE_IRQS, 1);
	for (unsigned int i = first->id; i < GMEM_NUM_QUEUES; i += GMEM_NUM_QUEUE_VECTORS) {
		struct gmem_queue *q = &g->queue[i];
		u64 fence = READ_ONCE(*q->fence);

		if (fence == q->irq_fence)
			continue;
		q->irq_fence = fence;
		wake_up_all(&q->wq);
		gmem_fences_signal(q, 0);
	}
	return IRQ_HANDLED;
}

static irqreturn_t gmem_error_irq(int irq, void *data)
{
	struct gmem_accel *g = data;
	u32 code = gmem_read(g, GMEM_REG_ERROR_CODE);

	if (!code)
		return IRQ_NONE;
	/*
	 * A full fault queue is flow control, not an error (as UVM treats its fault buffer):
	 * the group waits for room, the worker makes it, the stats count it.
	 */
	if (code == GMEM_ERR_FAULT_OVERFLOW) {
		gmem_write(g, GMEM_REG_ERROR_CODE, 0);
		gmem_fault_overflow(g);
		return IRQ_HANDLED;
	}
	dev_err_ratelimited(&g->pdev->dev, "device error %u, info %#x, address %#x_%08x\n",
			    code, gmem_read(g, GMEM_REG_ERROR_INFO),
			    gmem_read(g, GMEM_REG_ERROR_ADDR_HI),
			    gmem_read(g, GMEM_REG_ERROR_ADDR_LO));
	gmem_write(g, GMEM_REG_ERROR_CODE, 0);
	return IRQ_HANDLED;
}

/* Point queue @q's registers at its ring and enable it (the ring starts empty). */
void gmem_queue_program(struct gmem_accel *g, struct gmem_queue *q)
{
	gmem_write64(g, GMEM_REG_QUEUE(q->id, GMEM_CQ_BASE_LO), q->ring_dma);
	gmem_write(g, GMEM_REG_QUEUE(q->id, GMEM_CQ_ENTRIES_LOG2), GMEM_CQ_LOG2);
	gmem_write(g, GMEM_REG_QUEUE(q->id, GMEM_CQ_CTRL), GMEM_CQ_CTRL_ENABLE);
}

/* Point the fault queue registers at its ring and enable it. Called with fault_lock held. */
void gmem_fq_program(struct gmem_accel *g)
{
	lockdep_assert_held(&g->fault_lock);
	g->fq_head = 0;
	bitmap_zero(g->fq_taken, 1u << GMEM_FQ_LOG2);
	gmem_write64(g, GMEM_REG_FQ_BASE_LO, g->fq_dma);
	gmem_write(g, GMEM_REG_FQ_ENTRIES_LOG2, GMEM_FQ_LOG2);
	gmem_write(g, GMEM_REG_FQ_CTRL, GMEM_FQ_CTRL_ENABLE);
}

static int gmem_queue_init(struct gmem_accel *g, struct gmem_queue *q, unsigned int id)
{
	struct device *dev = &g->pdev->dev;
	unsigned int slots = 1u << GMEM_CQ_LOG2;

	q->g = g;
	q->id = id;
	mutex_init(&q->lock);
	init_waitqueue_head(&q->wq);
	gmem_fences_init(q);
	q->ring = dmam_alloc_coherent(dev, GMEM_CQ_BYTES, &q->ring_dma, GFP_KERNEL);
	q->fence = dmam_alloc_coherent(dev, sizeof(u64), &q->fence_dma, GFP_KERNEL);
	q->slot_ctx = devm_kcalloc(dev, slots, sizeof(*q->slot_ctx), GFP_KERNEL);
	q->slot_fence = devm_kcalloc(dev, slots, sizeof(*q->slot_fence), GFP_KERNEL);
	q->slot_err = devm_kcalloc(dev, slots, sizeof(*q->slot_err), GFP_KERNEL);
	q->slot_stalls = devm_kcalloc(dev, slots, sizeof(*q->slot_stalls), GFP_KERNEL);
	if (!q->ring || !q->fence || !q->slot_ctx || !q->slot_fence || !q->slot_err ||
	    !q->slot_stalls)
		return -ENOMEM;
	q->next_seq = 1;
	gmem_queue_program(g, q);
	return 0;
}

/* Rings and interrupts; everything here is device-managed and goes at unbind. */
int gmem_hw_init(struct gmem_accel *g)
{
	struct device *dev = &g->pdev->dev;
	struct iommu_domain *dom;
	int ret;

	mutex_init(&g->ctx_lock);
	mutex_init(&g->inv_lock);
	mutex_init(&g->fault_lock);
	ida_init(&g->ctx_ids);
	/* A group buffer each (4 KiB: too much for a stack), never allocated when serving. */
	for (unsigned int i = 0; i < GMEM_FAULT_WORKERS; i++) {
		INIT_WORK(&g->fault_worker[i].work, gmem_fault_work);
		g->fault_worker[i].g = g;
		g->fault_worker[i].group = devm_kcalloc(dev, GMEM_FAULT_GROUP_MAX,
							sizeof(struct gmem_fault), GFP_KERNEL);
		g->fault_worker[i].answers = devm_kcalloc(dev, GMEM_FAULT_BUDGET,
							  sizeof(struct gmem_answer), GFP_KERNEL);
		if (!g->fault_worker[i].group || !g->fault_worker[i].answers)
			return -ENOMEM;
	}
	/* Context 0: the driver's own commands (no address space; HBM and bus addresses). */
	g->kctx = devm_kzalloc(dev, sizeof(*g->kctx), GFP_KERNEL);
	if (!g->kctx)
		return -ENOMEM;
	g->kctx->g = g;
	xa_init(&g->kctx->errors);
	dom = iommu_get_domain_for_dev(dev);
	g->dma_translated = dom && iommu_is_dma_domain(dom);
	/* Read-only for the device: its entries for the zero page never allow writes. */
	g->zero_dma = dma_map_page(dev, ZERO_PAGE(0), 0, PAGE_SIZE, DMA_TO_DEVICE);
	if (dma_mapping_error(dev, g->zero_dma))
		return -ENOMEM;
	g->wq = alloc_workqueue("%s-faults", WQ_UNBOUND | WQ_MEM_RECLAIM, GMEM_FAULT_WORKERS,
				dev_name(dev));
	if (!g->wq) {
		ret = -ENOMEM;
		goto err_zero;
	}

	g->fq = dmam_alloc_coherent(dev, GMEM_FQ_BYTES, &g->fq_dma, GFP_KERNEL);
	if (!g->fq) {
		ret = -ENOMEM;
		goto err_wq;
	}
	mutex_lock(&g->fault_lock);
	gmem_fq_program(g);
	mutex_unlock(&g->fault_lock);
	ret = gmem_ac_init(g);
	if (ret)
		goto err_wq;
	ret = devm_request_irq(dev, pci_irq_vector(g->pdev, GMEM_VEC_FAULT), gmem_fault_irq, 0,
			       GMEM_ACCEL_NAME "-fault", g);
	if (ret)
		goto err_wq;
	ret = devm_request_irq(dev, pci_irq_vector(g->pdev, GMEM_VEC_ERROR), gmem_error_irq, 0,
			       GMEM_ACCEL_NAME "-error", g);
	if (ret)
		goto err_wq;
	for (unsigned int i = 0; i < GMEM_NUM_QUEUES; i++) {
		ret = gmem_queue_init(g, &g->queue[i], i);
		if (ret)
			goto err_wq;
	}
	for (unsigned int i = 0; i < GMEM_NUM_QUEUE_VECTORS; i++) {
		ret = devm_request_irq(dev, pci_irq_vector(g->pdev, GMEM_VEC_QUEUE(i)),
				       gmem_queue_irq, 0, GMEM_ACCEL_NAME "-queue", &g->queue[i]);
		if (ret)
			goto err_wq;
	}
	/* Reset clears it: the watchdog's sign that the device was reset under the driver. */
	gmem_write(g, GMEM_REG_SCRATCH, GMEM_DRIVER_COOKIE);
	INIT_DELAYED_WORK(&g->watchdog, gmem_watchdog);
	gmem_ac_start(g);
	return 0;

err_wq:
	destroy_workqueue(g->wq);
err_zero:
	dma_unmap_page(dev, g->zero_dma, PAGE_SIZE, DMA_TO_DEVICE);
	return ret;
}

/* Quiesce the device and its interrupts before its managed memory goes away. */
void gmem_hw_fini(struct gmem_accel *g)
{
	struct device *dev = &g->pdev->dev;

	cancel_delayed_work_sync(&g->watchdog);
	gmem_write(g, GMEM_REG_RESET, GMEM_RESET_MAGIC);
	devm_free_irq(dev, pci_irq_vector(g->pdev, GMEM_VEC_FAULT), g);
	devm_free_irq(dev, pci_irq_vector(g->pdev, GMEM_VEC_ERROR), g);
	for (unsigned int i = 0; i < GMEM_NUM_QUEUE_VECTORS; i++)
		devm_free_irq(dev, pci_irq_vector(g->pdev, GMEM_VEC_QUEUE(i)), &g->queue[i]);
	for (unsigned int i = 0; i < GMEM_NUM_QUEUES; i++) {
		wake_up_all(&g->queue[i].wq);
		gmem_fences_signal(&g->queue[i], -ENODEV);	/* their batches never end now */
	}
	for (unsigned int i = 0; i < GMEM_FAULT_WORKERS; i++)
		cancel_work_sync(&g->fault_worker[i].work);
	gmem_ac_fini(g);
	destroy_workqueue(g->wq);
	xa_destroy(&g->kctx->errors);
	/* (after every context's page table: gmem_ctx_shutdown()) */
	dma_unmap_page(dev, g->zero_dma, PAGE_SIZE, DMA_TO_DEVICE);
}

/*
 * Drop the device TLB's translations of [va, va + size) in context @ctx and wait until the
 * device says they are gone, or reset it: they are gone then too.
 * Takes effect between two steps of any command in flight.
 */
/* How long the device has to finish a TLB invalidation before it is reset. */
#define GMEM_INV_TIMEOUT_MS	100

void gmem_tlb_invalidate(struct gmem_accel *g, unsigned int ctx, u64 va, u64 size)
{
	u32 seq, done;
	int ret;

	mutex_lock(&g->inv_lock);
	seq = ++g->inv_seq;
	gmem_write64(g, GMEM_REG_INV_VA_LO, va);
	gmem_write64(g, GMEM_REG_INV_SIZE_LO, size);
	gmem_write(g, GMEM_REG_INV_CTX, ctx);
	gmem_write(g, GMEM_REG_INV_TRIGGER, seq);
	ret = readl_poll_timeout(g->regs + GMEM_REG_INV_DONE, done, done == seq, 1,
				 GMEM_INV_TIMEOUT_MS * USEC_PER_MSEC);
	/*
	 * The TLB may still hold what the CPU just took away: only a reset empties it for sure,
	 * before the caller lets the page go. The watchdog then sets the device up again.
	 */
	if (ret)
		gmem_device_reset(g, "a TLB invalidation did not complete in "
				  __stringify(GMEM_INV_TIMEOUT_MS) " ms");
	mutex_unlock(&g->inv_lock);
	gmem_dev_count(g, ret ? GMEM_DEV_TLB_INVALIDATION_TIMEOUTS : GMEM_DEV_TLB_INVALIDATIONS,
		       1);
	trace_gmem_accel_tlb_invalidate(ctx, va, size, seq, ret);
}
