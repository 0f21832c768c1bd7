/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver trace events: /sys/kernel/tracing/events/gmem_accel/. The fault path
 * (one event per group, one per hmm_range_fault window) and the invalidation path (notifier
 * callbacks, device TLB invalidations), plus command submission to relate them to batches,
 * migration both ways and from peers, eviction, and the memory policies' decisions (density
 * prefetch, access-counter migration, thrashing mitigation); scripts/run-timeline.sh lays
 * them out.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM gmem_accel

#if !defined(GMEM_ACCEL_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define GMEM_ACCEL_TRACE_H

#include <linux/mmu_notifier.h>
#include <linux/tracepoint.h>

TRACE_EVENT(gmem_accel_fault_group,
	TP_PROTO(u16 ctx, u16 group, unsigned int npages, u64 va, u8 access, int err),
	TP_ARGS(ctx, group, npages, va, access, err),
	TP_STRUCT__entry(
		__field(u16, ctx)
		__field(u16, group)
		__field(unsigned int, npages)
		__field(u64, va)
		__field(u8, access)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->group = group;
		__entry->npages = npages;
		__entry->va = va;
		__entry->access = access;
		__entry->err = err;
	),
	TP_printk("ctx=%u group=%u npages=%u va=%#llx access=%#x %s err=%d",
		  __entry->ctx, __entry->group, __entry->npages, __entry->va,
		  __entry->access, __entry->err ? "cancel" : "replay", __entry->err)
);

TRACE_EVENT(gmem_accel_prefetch,
	TP_PROTO(u16 ctx, u64 va_start, unsigned long pages, unsigned int faulted),
	TP_ARGS(ctx, va_start, pages, faulted),
	TP_STRUCT__entry(
		__field(u16, ctx)
		__field(u64, va_start)
		__field(unsigned long, pages)
		__field(unsigned int, faulted)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->va_start = va_start;
		__entry->pages = pages;
		__entry->faulted = faulted;
	),
	TP_printk("ctx=%u va_start=%#llx pages=%lu faulted=%u", __entry->ctx,
		  __entry->va_start, __entry->pages, __entry->faulted)
);

TRACE_EVENT(gmem_accel_fault_range,
	TP_PROTO(u16 ctx, u64 start, u64 end, int err),
	TP_ARGS(ctx, start, end, err),
	TP_STRUCT__entry(
		__field(u16, ctx)
		__field(u64, start)
		__field(u64, end)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->start = start;
		__entry->end = end;
		__entry->err = err;
	),
	TP_printk("ctx=%u start=%#llx end=%#llx err=%d",
		  __entry->ctx, __entry->start, __entry->end, __entry->err)
);

/* So that tools reading the format file can print event names too. */
TRACE_DEFINE_ENUM(MMU_NOTIFY_UNMAP);
TRACE_DEFINE_ENUM(MMU_NOTIFY_CLEAR);
TRACE_DEFINE_ENUM(MMU_NOTIFY_PROTECTION_VMA);
TRACE_DEFINE_ENUM(MMU_NOTIFY_PROTECTION_PAGE);
TRACE_DEFINE_ENUM(MMU_NOTIFY_SOFT_DIRTY);
TRACE_DEFINE_ENUM(MMU_NOTIFY_RELEASE);
TRACE_DEFINE_ENUM(MMU_NOTIFY_MIGRATE);
TRACE_DEFINE_ENUM(MMU_NOTIFY_EXCLUSIVE);

TRACE_EVENT(gmem_accel_invalidate,
	TP_PROTO(u16 ctx, u64 start, u64 end, int event, bool own_migration,
		 unsigned long zapped),
	TP_ARGS(ctx, start, end, event, own_migration, zapped),
	TP_STRUCT__entry(
		__field(u16, ctx)
		__field(u64, start)
		__field(u64, end)
		__field(int, event)
		__field(bool, own_migration)
		__field(unsigned long, zapped)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->start = start;
		__entry->end = end;
		__entry->event = event;
		__entry->own_migration = own_migration;
		__entry->zapped = zapped;
	),
	TP_printk("ctx=%u start=%#llx end=%#llx event=%s %s zapped=%lu",
		  __entry->ctx, __entry->start, __entry->end,
		  __print_symbolic(__entry->event,
				   { MMU_NOTIFY_UNMAP, "unmap" },
				   { MMU_NOTIFY_CLEAR, "clear" },
				   { MMU_NOTIFY_PROTECTION_VMA, "protection_vma" },
				   { MMU_NOTIFY_PROTECTION_PAGE, "protection_page" },
				   { MMU_NOTIFY_SOFT_DIRTY, "soft_dirty" },
				   { MMU_NOTIFY_RELEASE, "release" },
				   { MMU_NOTIFY_MIGRATE, "migrate" },
				   { MMU_NOTIFY_EXCLUSIVE, "exclusive" }),
		  __entry->own_migration ? "skipped" : "zap", __entry->zapped)
);

/* A window's notifier and device table given back: its memory was unmapped. */
TRACE_EVENT(gmem_accel_notifier_gc,
	TP_PROTO(u16 ctx, u64 start),
	TP_ARGS(ctx, start),
	TP_STRUCT__entry(
		__field(u16, ctx)
		__field(u64, start)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->start = start;
	),
	TP_printk("ctx=%u window=%#llx", __entry->ctx, __entry->start)
);

TRACE_EVENT(gmem_accel_tlb_invalidate,
	TP_PROTO(u16 ctx, u64 va, u64 size, u32 seq, int err),
	TP_ARGS(ctx, va, size, seq, err),
	TP_STRUCT__entry(
		__field(u16, ctx)
		__field(u64, va)
		__field(u64, size)
		__field(u32, seq)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->va = va;
		__entry->size = size;
		__entry->seq = seq;
		__entry->err = err;
	),
	TP_printk("ctx=%u va=%#llx size=%#llx seq=%u err=%d",
		  __entry->ctx, __entry->va, __entry->size, __entry->seq, __entry->err)
);

TRACE_EVENT(gmem_accel_queue_reset,
	TP_PROTO(unsigned int queue, unsigned int cancelled),
	TP_ARGS(queue, cancelled),
	TP_STRUCT__entry(
		__field(unsigned int, queue)
		__field(unsigned int, cancelled)
	),
	TP_fast_assign(
		__entry->queue = queue;
		__entry->cancelled = cancelled;
	),
	TP_printk("queue=%u cancelled=%u", __entry->queue, __entry->cancelled)
);

TRACE_EVENT(gmem_accel_submit,
	TP_PROTO(u16 ctx, unsigned int queue, u64 seq, u32 count),
	TP_ARGS(ctx, queue, seq, count),
	TP_STRUCT__entry(
		__field(u16, ctx)
		__field(unsigned int, queue)
		__field(u64, seq)
		__field(u32, count)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->queue = queue;
		__entry->seq = seq;
		__entry->count = count;
	),
	TP_printk("ctx=%u queue=%u seq=%llu commands=%u",
		  __entry->ctx, __entry->queue, __entry->seq, __entry->count)
);

/* A device-to-device migration pass: pages of a window moved in from a peer's HBM. */
TRACE_EVENT(gmem_accel_migrate_peer,
	TP_PROTO(u16 ctx, const char *peer, u64 start, u64 end, unsigned long moved, int err),
	TP_ARGS(ctx, peer, start, end, moved, err),
	TP_STRUCT__entry(
		__field(u16, ctx)
		__string(peer, peer)
		__field(u64, start)
		__field(u64, end)
		__field(unsigned long, moved)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__assign_str(peer);
		__entry->start = start;
		__entry->end = end;
		__entry->moved = moved;
		__entry->err = err;
	),
	TP_printk("ctx=%u from=%s start=%#llx end=%#llx moved=%lu err=%d",
		  __entry->ctx, __get_str(peer), __entry->start, __entry->end, __entry->moved,
		  __entry->err)
);

/*
 * A window's move between system memory and HBM, when done: the pages that moved, and when it
 * began (ktime_get_ns(), the clock of trace_clock "mono") so that a timeline shows its span.
 * @ctx: the context that asked, -1 for none (a CPU access, an eviction).
 */
TRACE_EVENT(gmem_accel_migrate,
	TP_PROTO(int ctx, u64 start, u64 end, bool to_device, unsigned long moved, int err,
		 u64 begun_ns),
	TP_ARGS(ctx, start, end, to_device, moved, err, begun_ns),
	TP_STRUCT__entry(
		__field(int, ctx)
		__field(u64, start)
		__field(u64, end)
		__field(bool, to_device)
		__field(unsigned long, moved)
		__field(int, err)
		__field(u64, begun_ns)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->start = start;
		__entry->end = end;
		__entry->to_device = to_device;
		__entry->moved = moved;
		__entry->err = err;
		__entry->begun_ns = begun_ns;
	),
	TP_printk("ctx=%d start=%#llx end=%#llx to=%s moved=%lu err=%d begun=%llu",
		  __entry->ctx, __entry->start, __entry->end,
		  __entry->to_device ? "device" : "system", __entry->moved, __entry->err,
		  __entry->begun_ns)
);

/*
 * HBM's 2 MiB chunk number @chunk evicted to make room, when done (@begun_ns as
 * gmem_accel_migrate's).
 */
TRACE_EVENT(gmem_accel_evict,
	TP_PROTO(unsigned int chunk, bool ahead, u64 begun_ns),
	TP_ARGS(chunk, ahead, begun_ns),
	TP_STRUCT__entry(
		__field(unsigned int, chunk)
		__field(bool, ahead)
		__field(u64, begun_ns)
	),
	TP_fast_assign(
		__entry->chunk = chunk;
		__entry->ahead = ahead;
		__entry->begun_ns = begun_ns;
	),
	TP_printk("chunk=%u %s begun=%llu", __entry->chunk,
		  __entry->ahead ? "ahead" : "for-room", __entry->begun_ns)
);

/* Access-counter migration (gmem_accel_counters.c): a checked record, then its region's move. */
TRACE_EVENT(gmem_accel_ac_notify,
	TP_PROTO(u16 ctx, u64 va, u32 count, u8 aperture),
	TP_ARGS(ctx, va, count, aperture),
	TP_STRUCT__entry(
		__field(u16, ctx)
		__field(u64, va)
		__field(u32, count)
		__field(u8, aperture)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->va = va;
		__entry->count = count;
		__entry->aperture = aperture;
	),
	TP_printk("ctx=%u va=%#llx count=%u aperture=%s", __entry->ctx, __entry->va,
		  __entry->count, __entry->aperture ? "remote" : "local")
);

TRACE_EVENT(gmem_accel_ac_migrate,
	TP_PROTO(u16 ctx, u64 va, u64 pages, int err),
	TP_ARGS(ctx, va, pages, err),
	TP_STRUCT__entry(
		__field(u16, ctx)
		__field(u64, va)
		__field(u64, pages)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->va = va;
		__entry->pages = pages;
		__entry->err = err;
	),
	TP_printk("ctx=%u va=%#llx pages=%llu err=%d", __entry->ctx, __entry->va,
		  __entry->pages, __entry->err)
);

/* Thrashing mitigation (gmem_accel_thrashing.c): a page's side throttled, pinned, unpinned. */
DECLARE_EVENT_CLASS(gmem_accel_thrashing,
	TP_PROTO(u16 ctx, u64 va),
	TP_ARGS(ctx, va),
	TP_STRUCT__entry(
		__field(u16, ctx)
		__field(u64, va)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->va = va;
	),
	TP_printk("ctx=%u va=%#llx", __entry->ctx, __entry->va)
);

DEFINE_EVENT(gmem_accel_thrashing, gmem_accel_thrashing_throttle,
	TP_PROTO(u16 ctx, u64 va),
	TP_ARGS(ctx, va));

DEFINE_EVENT(gmem_accel_thrashing, gmem_accel_thrashing_pin,
	TP_PROTO(u16 ctx, u64 va),
	TP_ARGS(ctx, va));

/*
 * Read duplication (gmem_accel_managed.c): a managed object's device page duplicated, or its
 * duplicate collapsed (to HBM or system memory); by context @ctx (-1: the CPU, the driver) at
 * @va (0 if none), object @obj, byte @off of it.
 */
DECLARE_EVENT_CLASS(gmem_accel_readdup,
	TP_PROTO(int ctx, u64 va, u64 obj, u64 off, bool to_hbm),
	TP_ARGS(ctx, va, obj, off, to_hbm),
	TP_STRUCT__entry(
		__field(int, ctx)
		__field(u64, va)
		__field(u64, obj)
		__field(u64, off)
		__field(bool, to_hbm)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->va = va;
		__entry->obj = obj;
		__entry->off = off;
		__entry->to_hbm = to_hbm;
	),
	TP_printk("ctx=%d va=%#llx obj=%llu off=%#llx to=%s", __entry->ctx, __entry->va,
		  __entry->obj, __entry->off, __entry->to_hbm ? "hbm" : "sys")
);

DEFINE_EVENT(gmem_accel_readdup, gmem_accel_readdup_dup,
	TP_PROTO(int ctx, u64 va, u64 obj, u64 off, bool to_hbm),
	TP_ARGS(ctx, va, obj, off, to_hbm));

DEFINE_EVENT(gmem_accel_readdup, gmem_accel_readdup_collapse,
	TP_PROTO(int ctx, u64 va, u64 obj, u64 off, bool to_hbm),
	TP_ARGS(ctx, va, obj, off, to_hbm));

DEFINE_EVENT(gmem_accel_thrashing, gmem_accel_thrashing_unpin,
	TP_PROTO(u16 ctx, u64 va),
	TP_ARGS(ctx, va));

/*
 * Oversubscription (gmem_accel_oversub.c): HBM found oversubscribed (enter: @va the evicted
 * chunk's first page's, ctx its owner's or 0), no longer (leave), a fault window mapped in
 * system memory instead of migrated (remote).
 */
DEFINE_EVENT(gmem_accel_thrashing, gmem_accel_oversub_enter,
	TP_PROTO(u16 ctx, u64 va),
	TP_ARGS(ctx, va));

DEFINE_EVENT(gmem_accel_thrashing, gmem_accel_oversub_leave,
	TP_PROTO(u16 ctx, u64 va),
	TP_ARGS(ctx, va));

DEFINE_EVENT(gmem_accel_thrashing, gmem_accel_oversub_remote,
	TP_PROTO(u16 ctx, u64 va),
	TP_ARGS(ctx, va));

/*
 * drm_pagemap peers (gmem_accel_drm_peer.c): device @dev given (@ok) or refused the bus
 * address of @hbm's HBM page at @off (PAGE_SIZE << @order bytes), peer to peer; @hbm's DMA
 * engine copying @pages pages of its HBM straight into another device's (source-peer
 * migration), @err its result.
 */
TRACE_EVENT(gmem_accel_drm_peer_map,
	TP_PROTO(const char *dev, const char *hbm, u64 off, unsigned int order, bool ok),
	TP_ARGS(dev, hbm, off, order, ok),
	TP_STRUCT__entry(
		__string(dev, dev)
		__string(hbm, hbm)
		__field(u64, off)
		__field(unsigned int, order)
		__field(bool, ok)
	),
	TP_fast_assign(
		__assign_str(dev);
		__assign_str(hbm);
		__entry->off = off;
		__entry->order = order;
		__entry->ok = ok;
	),
	TP_printk("dev=%s hbm=%s off=%#llx order=%u ok=%d", __get_str(dev), __get_str(hbm),
		  __entry->off, __entry->order, __entry->ok)
);

TRACE_EVENT(gmem_accel_drm_to_peer,
	TP_PROTO(const char *hbm, unsigned long pages, int err),
	TP_ARGS(hbm, pages, err),
	TP_STRUCT__entry(
		__string(hbm, hbm)
		__field(unsigned long, pages)
		__field(int, err)
	),
	TP_fast_assign(
		__assign_str(hbm);
		__entry->pages = pages;
		__entry->err = err;
	),
	TP_printk("hbm=%s pages=%lu err=%d", __get_str(hbm), __entry->pages, __entry->err)
);

#endif /* GMEM_ACCEL_TRACE_H */

/* Out of tree: the header is found next to the sources (Kbuild adds -I$(src)). */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE gmem_accel_trace
#include <trace/define_trace.h>
