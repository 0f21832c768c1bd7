// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: debugfs, /sys/kernel/debug/gmem_accel/gmem_accelN/
 *   stats     device-wide counters, "name value" per line
 *   contexts  one line per open context: id, process, its GMEM_ACCEL_IOC_STATS counters
 *   queues    the driver's and the device's view of each command ring
 *   access_counters  the driver's and the device's view of the access counters
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "gmem_accel.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_hbm.h"
#include "gmem_accel_obj.h"
#include "gmem_accel_counters.h"

static struct dentry *gmem_debugfs_root;

static const char * const gmem_dev_counter_names[GMEM_DEV_NR_COUNTERS] = {
	[GMEM_DEV_FAULT_IRQS] = "fault_irqs",
	[GMEM_DEV_FAULT_RECORDS] = "fault_records",
	[GMEM_DEV_FAULT_RECORDS_DROPPED] = "fault_records_dropped",
	[GMEM_DEV_FAULT_GROUPS] = "fault_groups",
	[GMEM_DEV_FAULT_GROUPS_BY_WAITER] = "fault_groups_by_waiter",
	[GMEM_DEV_REPLAYS] = "replays",
	[GMEM_DEV_CANCELS] = "cancels",
	[GMEM_DEV_INVALIDATIONS] = "invalidations",
	[GMEM_DEV_TLB_INVALIDATIONS] = "tlb_invalidations",
	[GMEM_DEV_TLB_INVALIDATION_TIMEOUTS] = "tlb_invalidation_timeouts",
	[GMEM_DEV_BATCHES] = "batches",
	[GMEM_DEV_COMMANDS] = "commands",
	[GMEM_DEV_CONTEXTS_CREATED] = "contexts_created",
	[GMEM_DEV_CONTEXTS_NOW] = "contexts_now",
	[GMEM_DEV_PT_PAGES_NOW] = "pt_pages_now",
	[GMEM_DEV_DMA_MAPPED_NOW] = "dma_mapped_pages_now",
	[GMEM_DEV_HBM_PAGES_NOW] = "hbm_pages_now",
	[GMEM_DEV_HBM_CHUNKS_NOW] = "hbm_chunks_now",
	[GMEM_DEV_MIGRATED_TO_DEVICE] = "migrated_to_device",
	[GMEM_DEV_MIGRATED_TO_SYSTEM] = "migrated_to_system",
	[GMEM_DEV_MIGRATED_FROM_PEER] = "migrated_from_peer",
	[GMEM_DEV_NOTIFIERS_NOW] = "notifiers_now",
	[GMEM_DEV_NOTIFIERS_FREED] = "notifiers_freed",
	[GMEM_DEV_QUEUE_IRQS] = "queue_irqs",
	[GMEM_DEV_WAKE_FENCES] = "wake_fences",
	[GMEM_DEV_FAULT_GROUPS_INTERRUPTED] = "fault_groups_interrupted",
	[GMEM_DEV_FENCES_LATE] = "fences_late",
	[GMEM_DEV_FAULT_THROTTLES] = "fault_throttles",
	[GMEM_DEV_PREFETCH_PAGES] = "prefetch_pages",
	[GMEM_DEV_REPLAY_BATCHES] = "replay_batches",
	[GMEM_DEV_REPLAY_BATCH_GROUPS] = "replay_batch_groups",
	[GMEM_DEV_THRASHING_DETECTED] = "thrashing_detected",
	[GMEM_DEV_THRASHING_THROTTLES] = "thrashing_throttles",
	[GMEM_DEV_THRASHING_PINS] = "thrashing_pins",
	[GMEM_DEV_THRASHING_PINNED_PAGES_NOW] = "thrashing_pinned_pages_now",
	[GMEM_DEV_MANAGED_TO_HBM] = "managed_to_hbm",
	[GMEM_DEV_MANAGED_TO_SYS] = "managed_to_sys",
	[GMEM_DEV_MANAGED_EVICTIONS] = "managed_evictions",
	[GMEM_DEV_READDUP_COPIES] = "readdup_copies",
	[GMEM_DEV_READDUP_COLLAPSE_CPU] = "readdup_collapse_cpu",
	[GMEM_DEV_READDUP_COLLAPSE_DEVICE] = "readdup_collapse_device",
	[GMEM_DEV_READDUP_PAGES_NOW] = "readdup_pages_now",
	[GMEM_DEV_OVERSUB_EPISODES] = "oversub_episodes",
	[GMEM_DEV_OVERSUB_REMOTE_MAPS] = "oversub_remote_maps",
	[GMEM_DEV_INJECTED_MAP_DELAYS] = "injected_map_delays",
	[GMEM_DEV_DRM_HBM_PAGES_NOW] = "drm_hbm_pages_now",
	[GMEM_DEV_DRM_TO_HBM] = "drm_to_hbm",
	[GMEM_DEV_DRM_TO_RAM] = "drm_to_ram",
	[GMEM_DEV_DRM_EVICTIONS] = "drm_evictions",
	[GMEM_DEV_DRM_MIGRATE_FAILS] = "drm_migrate_fails",
	[GMEM_DEV_DRM_PEER_MAPS_NOW] = "drm_peer_maps_now",
	[GMEM_DEV_DRM_PEER_MAPS] = "drm_peer_maps",
	[GMEM_DEV_DRM_TO_PEER] = "drm_to_peer",
	[GMEM_DEV_CPU_FAULTS] = "cpu_faults",
	[GMEM_DEV_EVICTIONS] = "evictions",
	[GMEM_DEV_EVICTIONS_AHEAD] = "evictions_ahead",
	[GMEM_DEV_ENGINE_RESETS] = "engine_resets",
	[GMEM_DEV_DEVICE_RESETS] = "device_resets",
	[GMEM_DEV_FAULT_QUEUE_OVERFLOWS] = "fault_queue_overflows",
	[GMEM_DEV_HBM_PAGES_POISONED] = "hbm_pages_poisoned",
	[GMEM_DEV_OBJECTS_NOW] = "objects_now",
	[GMEM_DEV_OBJ_HBM_PAGES_NOW] = "obj_hbm_pages_now",
	[GMEM_DEV_OBJ_SYSTEM_PAGES_NOW] = "obj_system_pages_now",
	[GMEM_DEV_OBJ_EVICTIONS] = "obj_evictions",
	[GMEM_DEV_AC_NOTIFICATIONS] = "ac_notifications",
	[GMEM_DEV_AC_RECORDS_BAD] = "ac_records_bad",
	[GMEM_DEV_AC_RECORDS_LOCAL] = "ac_records_local",
	[GMEM_DEV_AC_RECORDS_STALE] = "ac_records_stale",
	[GMEM_DEV_AC_MIGRATIONS] = "ac_migrations",
	[GMEM_DEV_AC_PAGES_MIGRATED] = "ac_pages_migrated",
	[GMEM_DEV_AC_DROPPED] = "ac_dropped",
};

static int stats_show(struct seq_file *m, void *unused)
{
	struct gmem_accel *g = m->private;

	for (int i = 0; i < GMEM_DEV_NR_COUNTERS; i++)
		seq_printf(m, "%s %lld\n", gmem_dev_counter_names[i],
			   atomic64_read(&g->stats[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(stats);

static int contexts_show(struct seq_file *m, void *unused)
{
	struct gmem_accel *g = m->private;
	struct gmem_accel_stats st;

	seq_puts(m, "ctx pid comm faults fault_groups replays cancels pages_mapped pages_zapped invalidations commands migrated_to_device migrated_to_system\n");
	mutex_lock(&g->ctx_lock);
	for (int i = 0; i < GMEM_NUM_CONTEXTS; i++) {
		struct gmem_ctx *ctx = g->ctx[i];

		if (!ctx)
			continue;
		gmem_ctx_get_stats(ctx, &st);
		seq_printf(m, "%u %d %s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu\n",
			   ctx->id, ctx->tgid, ctx->comm, st.faults, st.fault_groups, st.replays,
			   st.cancels, st.pages_mapped, st.pages_zapped, st.invalidations,
			   st.commands, st.migrated_to_device, st.migrated_to_system);
	}
	mutex_unlock(&g->ctx_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(contexts);

static int queues_show(struct seq_file *m, void *unused)
{
	struct gmem_accel *g = m->private;

	seq_puts(m, "queue tail reaped next_seq fence hw_head hw_state\n");
	down_read(&g->lock);
	for (int i = 0; g->regs && i < GMEM_NUM_QUEUES; i++) {
		struct gmem_queue *q = &g->queue[i];

		if (q->next_seq == 1)
			continue;	/* never used: a context's, before it had work */
		mutex_lock(&q->lock);
		seq_printf(m, "%u %u %u %llu %llu %u %u\n", q->id, q->tail, q->reaped,
			   q->next_seq, READ_ONCE(*q->fence),
			   gmem_read(g, GMEM_REG_QUEUE(i, GMEM_CQ_HEAD)),
			   gmem_read(g, GMEM_REG_QUEUE(i, GMEM_CQ_STATE)));
		mutex_unlock(&q->lock);
	}
	up_read(&g->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(queues);

static int hbm_show(struct seq_file *m, void *unused)
{
	gmem_hbm_debugfs_show(m->private, m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(hbm);

static int objects_show(struct seq_file *m, void *unused)
{
	gmem_obj_debugfs_show(m->private, m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(objects);

static int access_counters_show(struct seq_file *m, void *unused)
{
	gmem_ac_debugfs_show(m->private, m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(access_counters);

void gmem_debugfs_add(struct gmem_accel *g)
{
	g->debugfs = debugfs_create_dir(dev_name(&g->dev), gmem_debugfs_root);
	debugfs_create_file("stats", 0444, g->debugfs, g, &stats_fops);
	debugfs_create_file("contexts", 0444, g->debugfs, g, &contexts_fops);
	debugfs_create_file("queues", 0444, g->debugfs, g, &queues_fops);
	debugfs_create_file("hbm", 0444, g->debugfs, g, &hbm_fops);
	debugfs_create_file("objects", 0444, g->debugfs, g, &objects_fops);
	debugfs_create_file("access_counters", 0444, g->debugfs, g, &access_counters_fops);
	/* Fault injection: the next N fault groups lose their mapping before the replay. */
	debugfs_create_atomic_t("inject_stalled_faults", 0600, g->debugfs, &g->inject_stalls);
	debugfs_create_atomic_t("inject_fault_hold", 0600, g->debugfs, &g->inject_fault_hold);
	/* A fault pass sleeps this long between its hmm_range_fault() and its mapping. */
	debugfs_create_u32("inject_map_delay_ms", 0600, g->debugfs, &g->inject_map_delay_ms);
	/* The next N access-counter records taken each have a field broken (a device's bug). */
	debugfs_create_atomic_t("inject_ac_bad_records", 0600, g->debugfs, &g->ac.inject_bad);
}

/* Waits for readers; after it, no file here touches @g. */
void gmem_debugfs_remove(struct gmem_accel *g)
{
	debugfs_remove_recursive(g->debugfs);
	g->debugfs = NULL;
}

void gmem_debugfs_init(void)
{
	gmem_debugfs_root = debugfs_create_dir(GMEM_ACCEL_NAME, NULL);
}

void gmem_debugfs_exit(void)
{
	debugfs_remove_recursive(gmem_debugfs_root);
}
