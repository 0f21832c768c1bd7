// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the device's access counters and access-counter migration, as UVM has
 * it. The device counts each context's accesses to every region of VA (64 KiB or 2 MiB) and
 * writes a record to the notification ring when a region's count reaches the threshold. A
 * record of a region in system memory (remote) moves that region to HBM; then its counters
 * are cleared so that it can notify again. Counting runs only while the policy is on
 * (uvm_perf_access_counter_migration_enable), off by default as UVM's is without ATS.
 *
 * Vector 0, shared with the fault queue, looks at the ring (head against AC_TAIL) and hands
 * its records to a work item: a migration sleeps. The device is not trusted: every field of a
 * record is checked before it is used, and a bad one is counted and ignored.
 */
#include <linux/dma-mapping.h>
#include <linux/moduleparam.h>
#include <linux/seq_file.h>

#include "gmem_accel.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_counters.h"
#include "gmem_accel_migrate.h"
#include "gmem_accel_trace.h"

#define GMEM_AC_ENTRIES	(1u << GMEM_AC_LOG2)
#define GMEM_AC_MASK	(GMEM_AC_ENTRIES - 1)
static_assert(GMEM_AC_LOG2 <= GMEM_RING_MAX_LOG2);

static void gmem_ac_apply_all(void);

/*
 * UVM's parameters, names and defaults. Migration: -1 (or below) UVM's own choice, which is
 * off without ATS, 0 off, 1 (or above) on. A write takes effect on every device at once.
 */
static int uvm_perf_access_counter_migration_enable = -1;

static int gmem_ac_set_enable(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_int(val, kp);

	if (!ret)
		gmem_ac_apply_all();
	return ret;
}

static const struct kernel_param_ops gmem_ac_enable_ops = {
	.set = gmem_ac_set_enable,
	.get = param_get_int,
};
module_param_cb(uvm_perf_access_counter_migration_enable, &gmem_ac_enable_ops,
		&uvm_perf_access_counter_migration_enable, 0644);
MODULE_PARM_DESC(uvm_perf_access_counter_migration_enable,
		 "whether access counters migrate what the device reaches in system memory: <= -1 default (off, as UVM's without ATS), 0 off, >= 1 on");

GMEM_PARAM_RANGE(uvm_perf_access_counter_threshold, GMEM_AC_THRESHOLD_DEFAULT, 1,
		 GMEM_AC_THRESHOLD_MAX, gmem_ac_apply_all,
		 "accesses to a region that make a notification, 1..65535 (default 256)");

/* Kept as the log2 of the region size; read and written as UVM's string. */
static unsigned int uvm_perf_access_counter_granularity = GMEM_AC_GRAN_2M;

static int gmem_ac_set_granularity(const char *val, const struct kernel_param *kp)
{
	unsigned int v;

	if (sysfs_streq(val, "64k"))
		v = GMEM_AC_GRAN_64K;
	else if (sysfs_streq(val, "2m"))
		v = GMEM_AC_GRAN_2M;
	else
		return -EINVAL;
	WRITE_ONCE(uvm_perf_access_counter_granularity, v);
	gmem_ac_apply_all();
	return 0;
}

static int gmem_ac_get_granularity(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%s\n",
			 READ_ONCE(uvm_perf_access_counter_granularity) == GMEM_AC_GRAN_64K ?
			 "64k" : "2m");
}

static const struct kernel_param_ops gmem_ac_granularity_ops = {
	.set = gmem_ac_set_granularity,
	.get = gmem_ac_get_granularity,
};
module_param_cb(uvm_perf_access_counter_granularity, &gmem_ac_granularity_ops, NULL, 0644);
MODULE_PARM_DESC(uvm_perf_access_counter_granularity,
		 "size of the region a counter tracks: 64k or 2m (default 2m)");

GMEM_PARAM_RANGE(uvm_perf_access_counter_batch_count, 256, 1, UINT_MAX, NULL,
		 "notifications taken per pass of the worker, >= 1 (default 256)");

static bool gmem_ac_wanted(void)
{
	return READ_ONCE(uvm_perf_access_counter_migration_enable) > 0;
}

/* Add what the device dropped since the last look (AC_DROPPED wraps). Under ac_lock. */
static void gmem_ac_count_dropped(struct gmem_accel *g)
{
	u32 now = gmem_read(g, GMEM_REG_AC_DROPPED);

	gmem_dev_count(g, GMEM_DEV_AC_DROPPED, (u32)(now - g->ac.dropped));
	g->ac.dropped = now;
}

static void gmem_ac_disable(struct gmem_accel *g)
{
	gmem_write(g, GMEM_REG_AC_CTRL, 0);
	gmem_ac_count_dropped(g);
	gmem_write(g, GMEM_REG_AC_CLEAR, GMEM_AC_CLEAR_ALL);
	WRITE_ONCE(g->ac.enabled, false);
}

/* Enabling empties the ring and the device's table of regions. */
static void gmem_ac_enable(struct gmem_accel *g, unsigned int granularity)
{
	gmem_write64(g, GMEM_REG_AC_BASE_LO, g->ac.ring_dma);
	gmem_write(g, GMEM_REG_AC_ENTRIES_LOG2, GMEM_AC_LOG2);
	gmem_write(g, GMEM_REG_AC_GRANULARITY, granularity);
	g->ac.granularity = granularity;
	g->ac.head = 0;
	g->ac.tail = 0;
	g->ac.dropped = 0;
	bitmap_zero(g->ac.stale, GMEM_AC_ENTRIES);
	gmem_write(g, GMEM_REG_AC_CTRL, GMEM_AC_CTRL_ENABLE);
	if (!(gmem_read(g, GMEM_REG_AC_CTRL) & GMEM_AC_CTRL_ENABLE)) {
		dev_warn_ratelimited(&g->pdev->dev, "the access counters would not enable\n");
		return;
	}
	WRITE_ONCE(g->ac.enabled, true);
}

/*
 * Make the device count as the parameters say: enabled while the policy is on, with their
 * granularity (a change re-enables, which empties the ring) and threshold. Called with
 * ac_lock held.
 */
static void gmem_ac_program(struct gmem_accel *g)
{
	unsigned int granularity = READ_ONCE(uvm_perf_access_counter_granularity);
	bool want = gmem_ac_wanted();

	lockdep_assert_held(&g->ac_lock);
	if (!g->ac.ring)
		return;
	if (g->ac.enabled && (!want || granularity != g->ac.granularity))
		gmem_ac_disable(g);
	gmem_write(g, GMEM_REG_AC_THRESHOLD, READ_ONCE(uvm_perf_access_counter_threshold));
	if (want && !g->ac.enabled)
		gmem_ac_enable(g, granularity);
}

static int gmem_ac_apply_one(struct device *dev, void *unused)
{
	struct gmem_accel *g = to_gmem_accel(dev);

	/* Unbind sets pdev to NULL under the write lock: the registers are gone then. */
	down_read(&g->lock);
	if (g->pdev) {
		mutex_lock(&g->ac_lock);
		gmem_ac_program(g);
		mutex_unlock(&g->ac_lock);
	}
	up_read(&g->lock);
	return 0;
}

static void gmem_ac_apply_all(void)
{
	gmem_walk_devices(NULL, gmem_ac_apply_one);
}

/* What a record asks, once checked (gmem_ac_take()). */
enum gmem_ac_kind { GMEM_AC_NONE, GMEM_AC_BAD, GMEM_AC_LOCAL, GMEM_AC_STALE, GMEM_AC_REMOTE };

/* Is the record one the device may write, with the region size the driver programmed? */
static bool gmem_ac_valid(struct gmem_accel *g, const struct gmem_access_record *rec)
{
	u64 va = le64_to_cpu(rec->va), size = 1ull << g->ac.granularity;
	u16 ctx = le16_to_cpu(rec->ctx);

	return rec->granularity == g->ac.granularity &&
	       rec->aperture <= GMEM_AC_APERTURE_REMOTE &&
	       ctx >= 1 && ctx < GMEM_NUM_CONTEXTS &&
	       !(va & (size - 1)) && va < (1ull << GMEM_VA_BITS) &&
	       le32_to_cpu(rec->count) >= 1 &&
	       !rec->reserved0 && !rec->reserved1;
}

/*
 * Injected (debugfs inject_ac_bad_records): what a broken device could write, one field
 * broken in each record, field by field.
 */
static void gmem_ac_break(struct gmem_access_record *rec, unsigned int n)
{
	switch (n % 8) {
	case 0:
		rec->ctx = 0;
		break;
	case 1:
		rec->ctx = cpu_to_le16(GMEM_NUM_CONTEXTS);
		break;
	case 2:
		rec->aperture = GMEM_AC_APERTURE_REMOTE + 1;
		break;
	case 3:
		rec->granularity = rec->granularity == GMEM_AC_GRAN_2M ? GMEM_AC_GRAN_64K :
					GMEM_AC_GRAN_2M;
		break;
	case 4:
		rec->va = cpu_to_le64(le64_to_cpu(rec->va) | PAGE_SIZE);
		break;
	case 5:
		rec->va = cpu_to_le64(1ull << GMEM_VA_BITS);
		break;
	case 6:
		rec->count = 0;
		break;
	default:
		rec->reserved1 = cpu_to_le64(1);
		break;
	}
}

/*
 * Take the record at the ring's head and say what it asks (counted, but for the one to
 * migrate); GMEM_AC_NONE if there is none. A remote record of a live context comes with the
 * context referenced in *@ctx, its region in [*@va, *@va + *@size). Called with ac_lock held.
 */
static enum gmem_ac_kind gmem_ac_take(struct gmem_accel *g, struct gmem_ctx **ctx, u64 *va,
				      u64 *size)
{
	struct gmem_access_record rec;
	u32 head = g->ac.head;
	bool stale;
	int n;

	lockdep_assert_held(&g->ac_lock);
	*ctx = NULL;
	if (!g->ac.enabled || READ_ONCE(g->unbinding))
		return GMEM_AC_NONE;
	/* Reset under the driver: the ring is gone until the watchdog sets it up again. */
	if (!(gmem_read(g, GMEM_REG_AC_CTRL) & GMEM_AC_CTRL_ENABLE))
		return GMEM_AC_NONE;
	if (head == g->ac.tail) {
		/* (a tail outside the ring is the device's bug: it reads as one inside) */
		g->ac.tail = gmem_read(g, GMEM_REG_AC_TAIL) & GMEM_AC_MASK;
		gmem_ac_count_dropped(g);
		if (head == g->ac.tail)
			return GMEM_AC_NONE;
	}
	dma_rmb();	/* the records before the tail that says they are there */
	memcpy(&rec, &g->ac.ring[head], sizeof(rec));
	n = atomic_dec_if_positive(&g->ac.inject_bad);
	if (n >= 0)
		gmem_ac_break(&rec, n);
	stale = __test_and_clear_bit(head, g->ac.stale);
	WRITE_ONCE(g->ac.head, (head + 1) & GMEM_AC_MASK);
	gmem_write(g, GMEM_REG_AC_HEAD, g->ac.head);
	gmem_dev_count(g, GMEM_DEV_AC_NOTIFICATIONS, 1);

	if (!gmem_ac_valid(g, &rec)) {
		gmem_dev_count(g, GMEM_DEV_AC_RECORDS_BAD, 1);
		return GMEM_AC_BAD;
	}
	*va = le64_to_cpu(rec.va);
	*size = 1ull << g->ac.granularity;
	trace_gmem_accel_ac_notify(le16_to_cpu(rec.ctx), *va, le32_to_cpu(rec.count),
				   rec.aperture);
	if (rec.aperture == GMEM_AC_APERTURE_LOCAL) {
		gmem_dev_count(g, GMEM_DEV_AC_RECORDS_LOCAL, 1);
		return GMEM_AC_LOCAL;
	}
	if (!stale)
		*ctx = gmem_ctx_get(g, le16_to_cpu(rec.ctx));
	if (!*ctx) {
		gmem_dev_count(g, GMEM_DEV_AC_RECORDS_STALE, 1);
		return GMEM_AC_STALE;
	}
	return GMEM_AC_REMOTE;
}

/*
 * A region of @ctx the device reaches in system memory often: move it to HBM, as a MIGRATE
 * of it would (pages already there, or that cannot move, stay), then clear its counters so
 * that it can notify again.
 */
static void gmem_ac_migrate(struct gmem_accel *g, struct gmem_ctx *ctx, u64 va, u64 size)
{
	u64 moved = 0;
	int err;

	if (!gmem_ac_wanted()) {
		gmem_dev_count(g, GMEM_DEV_AC_RECORDS_STALE, 1);
		return;
	}
	err = gmem_migrate(ctx, va, va + size,
			   GMEM_MIGRATE_TO_DEVICE | GMEM_MIGRATE_SKIP_HOLES, &moved);
	trace_gmem_accel_ac_migrate(ctx->id, va, moved, err);
	if (err == -ESRCH)	/* the process is exiting */
		gmem_dev_count(g, GMEM_DEV_AC_RECORDS_STALE, 1);
	if (moved) {
		gmem_dev_count(g, GMEM_DEV_AC_MIGRATIONS, 1);
		gmem_dev_count(g, GMEM_DEV_AC_PAGES_MIGRATED, moved);
	}
	mutex_lock(&g->ac_lock);
	if (g->ac.enabled) {
		gmem_write64(g, GMEM_REG_AC_CLEAR_VA_LO, va);
		gmem_write(g, GMEM_REG_AC_CLEAR_CTX, ctx->id);
		gmem_write(g, GMEM_REG_AC_CLEAR, GMEM_AC_CLEAR_REGION);
	}
	mutex_unlock(&g->ac_lock);
}

/*
 * Take up to uvm_perf_access_counter_batch_count records, one at a time (each frees its
 * slot for the device at once), then queue itself again if the ring may hold more.
 */
static void gmem_ac_work(struct work_struct *work)
{
	struct gmem_accel *g = container_of(work, struct gmem_accel, ac.work);
	unsigned int budget = READ_ONCE(uvm_perf_access_counter_batch_count);
	enum gmem_ac_kind kind = GMEM_AC_NONE;

	while (budget--) {
		struct gmem_ctx *ctx;
		u64 va, size;

		mutex_lock(&g->ac_lock);
		kind = gmem_ac_take(g, &ctx, &va, &size);
		mutex_unlock(&g->ac_lock);
		if (kind == GMEM_AC_NONE)
			return;
		if (kind == GMEM_AC_REMOTE) {
			gmem_ac_migrate(g, ctx, va, size);
			gmem_ctx_put(ctx);
		}
		cond_resched();
	}
	queue_work(system_unbound_wq, &g->ac.work);
}

/* Vector 0 (shared with the fault queue): records in the ring? Costs nothing while off. */
void gmem_ac_irq(struct gmem_accel *g)
{
	if (READ_ONCE(g->ac.enabled) &&
	    gmem_read(g, GMEM_REG_AC_TAIL) != READ_ONCE(g->ac.head))
		queue_work(system_unbound_wq, &g->ac.work);
}

/*
 * Context @id is going away (gmem_ctx_shutdown(), before its id is free again): its records
 * still in the ring are stale, so that a new context with the same id is not moved for them.
 * A worker that took one before holds the context, which waits for it.
 */
void gmem_ac_ctx_gone(struct gmem_accel *g, unsigned int id)
{
	mutex_lock(&g->ac_lock);
	if (g->ac.enabled) {
		u32 tail = gmem_read(g, GMEM_REG_AC_TAIL) & GMEM_AC_MASK;

		dma_rmb();
		for (u32 i = g->ac.head; i != tail; i = (i + 1) & GMEM_AC_MASK)
			if (le16_to_cpu(READ_ONCE(g->ac.ring[i].ctx)) == id)
				__set_bit(i, g->ac.stale);
	}
	mutex_unlock(&g->ac_lock);
}

/* At probe: the ring, if the device has access counters (enabled by gmem_ac_start()). */
int gmem_ac_init(struct gmem_accel *g)
{
	mutex_init(&g->ac_lock);
	INIT_WORK(&g->ac.work, gmem_ac_work);
	if (!(g->info.caps & GMEM_CAP_ACCESS_COUNTERS))
		return 0;
	g->ac.ring = dmam_alloc_coherent(&g->pdev->dev,
					 GMEM_AC_ENTRIES * sizeof(struct gmem_access_record),
					 &g->ac.ring_dma, GFP_KERNEL);
	return g->ac.ring ? 0 : -ENOMEM;
}

void gmem_ac_start(struct gmem_accel *g)
{
	mutex_lock(&g->ac_lock);
	gmem_ac_program(g);
	mutex_unlock(&g->ac_lock);
}

/* The device was reset: the counters are off and zeroed; set them up as the policy says. */
void gmem_ac_recover(struct gmem_accel *g)
{
	mutex_lock(&g->ac_lock);
	WRITE_ONCE(g->ac.enabled, false);
	gmem_ac_program(g);
	mutex_unlock(&g->ac_lock);
}

/* Unbind, after the device was reset and vector 0 freed: no record is taken any more. */
void gmem_ac_fini(struct gmem_accel *g)
{
	mutex_lock(&g->ac_lock);
	WRITE_ONCE(g->ac.enabled, false);
	mutex_unlock(&g->ac_lock);
	cancel_work_sync(&g->ac.work);
}

/* debugfs "access_counters": the driver's view, then the device's registers. */
void gmem_ac_debugfs_show(struct gmem_accel *g, struct seq_file *m)
{
	down_read(&g->lock);
	mutex_lock(&g->ac_lock);
	seq_printf(m, "present %d\nenabled %d\ngranularity %u\nhead %u\ntail %u\n",
		   !!g->ac.ring, g->ac.enabled, g->ac.granularity, g->ac.head, g->ac.tail);
	if (g->regs && g->ac.ring)
		seq_printf(m, "hw_ctrl %u\nhw_tail %u\nhw_threshold %u\nhw_tracked %u\nhw_notified %u\nhw_dropped %u\n",
			   gmem_read(g, GMEM_REG_AC_CTRL), gmem_read(g, GMEM_REG_AC_TAIL),
			   gmem_read(g, GMEM_REG_AC_THRESHOLD),
			   gmem_read(g, GMEM_REG_AC_TRACKED),
			   gmem_read(g, GMEM_REG_AC_NOTIFIED),
			   gmem_read(g, GMEM_REG_AC_DROPPED));
	mutex_unlock(&g->ac_lock);
	up_read(&g->lock);
}
