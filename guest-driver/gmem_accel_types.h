/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: the structures and constants the driver's components share (the
 * device, its queues, HBM and fault queue; a context and its page table), with their
 * counters and register accessors. What each lock guards and their order: DOC: Locking in
 * gmem_accel.h.
 */
#ifndef GMEM_ACCEL_TYPES_H
#define GMEM_ACCEL_TYPES_H

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/device.h>
#include <linux/maple_tree.h>
#include <linux/idr.h>
#include <linux/memremap.h>
#include <linux/migrate.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/rwsem.h>
#include <linux/scatterlist.h>
#include <linux/sched.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "gmem_accel_compat.h"
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"

#define GMEM_ACCEL_NAME "gmem_accel"
/* What the driver keeps in SCRATCH: a reset clears it (gmem_accel_reset.c). */
#define GMEM_DRIVER_COOKIE	0x676d656d	/* "gmem" */
#define GMEM_ACCEL_MAX_DEVICES 64

#define GMEM_CQ_LOG2	8	/* 256 commands per ring */
/* Fault records: room for every user context's largest group at once (63 x 256). */
#define GMEM_FQ_LOG2	14
/*
 * A context remembers the ring sequence number of its last GMEM_CTX_FENCES batches: more than
 * a ring holds at once (each batch takes two slots or more), so an older one has completed.
 */
#define GMEM_CTX_FENCES	(1u << (GMEM_CQ_LOG2 - 1))
/* Replays in a row that leave a command's faults unmapped before it fails (EBUSY). */
#define GMEM_FAULT_STALLS	16
/*
 * Replays in a row whose pages another's change took while they were served (contention,
 * gmem_fault_progress()): throttled, each after a nap that grows to GMEM_FAULT_NAP_MAX_MS,
 * up to this many (about half a minute of pages that kept moving) before EBUSY.
 */
#define GMEM_FAULT_CONTENDED	2048
#define GMEM_FAULT_NAP_MAX_MS	16
/*
 * Fault workers. Each context's queue can have a group outstanding (64); a process that waits
 * serves its own, so the workers take the others' and those nobody waits for.
 */
#define GMEM_FAULT_WORKERS	4
/*
 * A window: the 2 MiB block (inside a VMA) the driver works in. A migration moves one, a fault
 * maps at most one, HBM is allocated and evicted a chunk of one at a time.
 */
#define GMEM_WINDOW_PAGES	(GMEM_HUGE_SIZE / PAGE_SIZE)

/* The window around @va: its 2 MiB-aligned block, clipped to @vma. */
static inline void gmem_window(const struct vm_area_struct *vma, u64 va, u64 *start, u64 *end)
{
	*start = max_t(u64, ALIGN_DOWN(va, GMEM_HUGE_SIZE), vma->vm_start);
	*end = min_t(u64, ALIGN(va + 1, GMEM_HUGE_SIZE), vma->vm_end);
}

struct gmem_ctx;
struct gmem_migration;
struct gmem_answer;

/* Device-wide counters (debugfs "stats"); the *_NOW ones are gauges, the rest only grow. */
enum gmem_dev_counter {
	GMEM_DEV_FAULT_IRQS,
	GMEM_DEV_FAULT_RECORDS,
	GMEM_DEV_FAULT_RECORDS_DROPPED,	/* beyond GMEM_FAULT_GROUP_MAX in one group */
	GMEM_DEV_FAULT_GROUPS,
	GMEM_DEV_FAULT_GROUPS_BY_WAITER,	/* of those, served by a waiting process */
	GMEM_DEV_REPLAYS,
	GMEM_DEV_CANCELS,
	GMEM_DEV_INVALIDATIONS,
	GMEM_DEV_TLB_INVALIDATIONS,
	GMEM_DEV_TLB_INVALIDATION_TIMEOUTS,
	GMEM_DEV_BATCHES,
	GMEM_DEV_COMMANDS,
	GMEM_DEV_CONTEXTS_CREATED,
	GMEM_DEV_CONTEXTS_NOW,
	GMEM_DEV_PT_PAGES_NOW,		/* device page-table pages */
	GMEM_DEV_DMA_MAPPED_NOW,	/* 4 KiB pages DMA-mapped for device PTEs */
	GMEM_DEV_HBM_PAGES_NOW,		/* HBM pages holding process data */
	GMEM_DEV_HBM_CHUNKS_NOW,	/* 2 MiB chunks with at least one such page */
	GMEM_DEV_MIGRATED_TO_DEVICE,	/* pages */
	GMEM_DEV_MIGRATED_TO_SYSTEM,	/* pages, all causes */
	GMEM_DEV_CPU_FAULTS,		/* migrate_to_ram calls */
	GMEM_DEV_EVICTIONS,		/* chunks evicted to make room */
	GMEM_DEV_EVICTIONS_AHEAD,	/* of those, by the eviction worker (gmem_evict_ahead()) */
	GMEM_DEV_ENGINE_RESETS,		/* hung engines the watchdog reset */
	GMEM_DEV_DEVICE_RESETS,		/* resets under the driver it recovered from */
	GMEM_DEV_FAULT_QUEUE_OVERFLOWS,	/* groups that waited for room */
	GMEM_DEV_HBM_PAGES_POISONED,	/* HBM pages the device cannot read any more */
	GMEM_DEV_OBJECTS_NOW,		/* device memory objects (gmem_accel_obj.c) */
	GMEM_DEV_OBJ_HBM_PAGES_NOW,	/* 4 KiB pages of HBM they hold */
	GMEM_DEV_OBJ_SYSTEM_PAGES_NOW,	/* 4 KiB pages of system memory they hold */
	GMEM_DEV_OBJ_EVICTIONS,		/* objects moved from HBM to system memory */
	GMEM_DEV_MIGRATED_FROM_PEER,	/* pages moved in from another device's HBM */
	GMEM_DEV_NOTIFIERS_NOW,		/* MMU notifiers of contexts (one per 2 MiB window) */
	GMEM_DEV_NOTIFIERS_FREED,	/* of unmapped windows, while their context lives */
	GMEM_DEV_QUEUE_IRQS,		/* command queues' interrupts (a batch's fence) */
	GMEM_DEV_WAKE_FENCES,		/* fences added for a quiet batch's waiter to sleep on */
	GMEM_DEV_FAULT_GROUPS_INTERRUPTED, /* replayed: their server's signal, not their failure */
	GMEM_DEV_FENCES_LATE,		/* fences signaled by the watchdog, not their interrupt */
	GMEM_DEV_FAULT_THROTTLES,	/* contended groups answered after a nap */
	/* density prefetch and the replay policy (gmem_accel_prefetch.c, gmem_accel_replay.c) */
	GMEM_DEV_PREFETCH_PAGES,	/* pages faulted in beyond what groups asked for */
	GMEM_DEV_REPLAY_BATCHES,	/* answer passes: groups answered together */
	GMEM_DEV_REPLAY_BATCH_GROUPS,	/* groups answered in them */
	/* access-counter migration (gmem_accel_counters.c) */
	GMEM_DEV_AC_NOTIFICATIONS,	/* records taken from the notification ring */
	GMEM_DEV_AC_RECORDS_BAD,	/* of those, malformed: ignored */
	GMEM_DEV_AC_RECORDS_LOCAL,	/* of a region in HBM: nothing to move */
	GMEM_DEV_AC_RECORDS_STALE,	/* of a context gone, or come with the policy off */
	GMEM_DEV_AC_MIGRATIONS,		/* regions that moved pages to HBM */
	GMEM_DEV_AC_PAGES_MIGRATED,
	GMEM_DEV_AC_DROPPED,		/* records the device dropped (AC_DROPPED: ring full) */
	/* thrashing mitigation (gmem_accel_thrashing.c) */
	GMEM_DEV_THRASHING_DETECTED,	/* pages found moving back and forth */
	GMEM_DEV_THRASHING_THROTTLES,	/* naps of a side that moved a thrashing page */
	GMEM_DEV_THRASHING_PINS,	/* thrashing pages pinned in system memory */
	GMEM_DEV_THRASHING_PINNED_PAGES_NOW, /* of them, pinned now */
	/* managed objects and read duplication (gmem_accel_managed.c), in device pages */
	GMEM_DEV_MANAGED_TO_HBM,	/* moved to HBM (system page stale) */
	GMEM_DEV_MANAGED_TO_SYS,	/* copied home from HBM (HBM copy dropped or kept) */
	GMEM_DEV_MANAGED_EVICTIONS,	/* HBM copies that gave way to another HBM allocation */
	GMEM_DEV_READDUP_COPIES,	/* read duplicates made (a copy either way) */
	GMEM_DEV_READDUP_COLLAPSE_CPU,	/* duplicates collapsed to system memory */
	GMEM_DEV_READDUP_COLLAPSE_DEVICE, /* duplicates collapsed to HBM by a device write */
	GMEM_DEV_READDUP_PAGES_NOW,	/* duplicated now */
	/* oversubscription (gmem_accel_oversub.c) */
	GMEM_DEV_OVERSUB_EPISODES,	/* times HBM was found oversubscribed */
	GMEM_DEV_OVERSUB_REMOTE_MAPS,	/* fault windows mapped in system memory, not migrated */
	/* fault injection (debugfs inject_map_delay_ms) */
	GMEM_DEV_INJECTED_MAP_DELAYS,	/* fault passes held between their walk and mapping */
	/* the DRM front end's HBM through drm_pagemap (gmem_accel_drm_pagemap.c), in pages */
	GMEM_DEV_DRM_HBM_PAGES_NOW,	/* HBM pages of live allocations now */
	GMEM_DEV_DRM_TO_HBM,		/* copied (or zeroed) into HBM by a migration */
	GMEM_DEV_DRM_TO_RAM,		/* copied out of HBM (CPU fault, eviction, advice, close) */
	GMEM_DEV_DRM_EVICTIONS,		/* allocations evicted to make room */
	GMEM_DEV_DRM_MIGRATE_FAILS,	/* device faults whose range stayed in system memory */
	/* drm_pagemap peers (gmem_accel_drm_peer.c), in pages of this device's HBM */
	GMEM_DEV_DRM_PEER_MAPS_NOW,	/* mapped by another device peer to peer now */
	GMEM_DEV_DRM_PEER_MAPS,		/* mapped by another device peer to peer */
	GMEM_DEV_DRM_TO_PEER,		/* copied straight into another device's HBM */
	GMEM_DEV_NR_COUNTERS
};

/* Per-context counters: GMEM_ACCEL_IOC_STATS and debugfs "contexts". */
enum gmem_ctx_counter {
	GMEM_CTX_FAULTS,
	GMEM_CTX_FAULT_GROUPS,
	GMEM_CTX_REPLAYS,
	GMEM_CTX_CANCELS,
	GMEM_CTX_PAGES_MAPPED,
	GMEM_CTX_PAGES_ZAPPED,
	GMEM_CTX_INVALIDATIONS,
	GMEM_CTX_COMMANDS,
	GMEM_CTX_MIGRATED_TO_DEVICE,
	GMEM_CTX_MIGRATED_TO_SYSTEM,
	GMEM_CTX_NR_COUNTERS
};

/* 2 MiB of HBM: the unit the allocator hands out and evicts. */
struct gmem_chunk {
	struct list_head link;		/* on gmem_hbm.free or gmem_hbm.lru */
	unsigned int used;		/* pages holding data (busy, not poisoned) */
	DECLARE_BITMAP(busy, GMEM_WINDOW_PAGES);	/* in use, or poisoned */
	DECLARE_BITMAP(poisoned, GMEM_WINDOW_PAGES);	/* never handed out again */
	bool huge;			/* handed out whole, one 2 MiB folio (7.3) */
	unsigned int obj_pages;		/* pages objects hold: then on gmem_hbm.objs */
	/* Where each page's data lives in its owner's address space (gmem_hbm_set_va()). */
	unsigned long va[GMEM_WINDOW_PAGES];
	u64 used_ns;			/* last filled or used (gmem_oversub_busy()) */
};

/* Migrations kept for reuse between uses (gmem_migration_get()), ~80 KiB each. */
#define GMEM_SPARE_MIGRATIONS	4

/*
 * HBM as device-private memory: one struct page per 4 KiB of HBM (pfn_first + offset / 4K),
 * a migrated page's data at that offset in the device's HBM.
 */
struct gmem_hbm {
	struct dev_pagemap pgmap;
	struct resource *res;		/* its physical addresses, as requested */
	unsigned long pfn_first;
	spinlock_t lock;		/* chunks, lists, fill */
	struct gmem_chunk *chunks;
	unsigned int nchunks;
	struct list_head free;		/* chunks with no page in use */
	struct list_head lru;		/* chunks in use, least recently used first */
	struct list_head objs;		/* chunks holding objects' pages (never evicted) */
	struct gmem_chunk *fill;	/* where the next pages come from */
	bool mapped;
	/* the current burst of use: its start, its last fill or use (gmem_oversub_busy()) */
	u64 burst_ns, busy_ns;
};

/*
 * One command ring. Slots carry the context of the command in them, its batch's fence (the
 * context's count) and the errno the driver cancelled it with.
 */
struct gmem_queue {
	struct gmem_accel *g;
	unsigned int id;
	struct mutex lock;		/* submission: tail, next_seq, slot info */
	struct gmem_cmd_desc *ring;	/* DMA coherent */
	dma_addr_t ring_dma;
	u32 tail;			/* next free slot (driver's copy of TAIL) */
	u32 reaped;			/* next slot whose status was not yet looked at */
	u64 next_seq;			/* sequence number of the next batch */
	u64 notify_seq;			/* the last batch queued to raise the interrupt */
	u64 *fence;			/* the device writes completed batch seqs here */
	u64 irq_fence;			/* *fence as its interrupt last saw it */
	dma_addr_t fence_dma;
	u64 reaped_seq;			/* batches whose statuses have been collected */
	struct gmem_ctx **slot_ctx;
	u64 *slot_fence;
	int *slot_err;			/* set by the fault server, before its CANCEL */
	u32 *slot_stalls;		/* replays in a row that did not map what was asked */
	wait_queue_head_t wq;		/* waiters for fences and ring space */
	/* sync_files of its batches (gmem_accel_fence.c): its timeline, those not yet signaled */
	u64 fence_context;
	spinlock_t fence_lock;
	struct list_head armed;
	/* the watchdog's (gmem_accel_reset.c): HEAD and STEPS as last seen, and since when */
	u32 wd_head;
	u32 wd_steps;
	unsigned long wd_since;
};

/* One fault record, decoded (gmem_accel_fault.c). */
struct gmem_fault {
	u64 va;
	u16 ctx;
	u16 group;
	u16 slot;
	u8 access;
	u8 engine;
	u8 flags;
};

/*
 * The access counters' notification ring (gmem_accel_counters.c), under gmem_accel.ac_lock;
 * @ring is NULL on a device without them.
 */
#define GMEM_AC_LOG2	10
struct gmem_ac {
	struct gmem_access_record *ring;	/* DMA coherent */
	dma_addr_t ring_dma;
	bool enabled;			/* AC_CTRL ENABLE, as programmed */
	u8 granularity;			/* AC_GRANULARITY, as programmed */
	u32 head;			/* next record to take (the AC_HEAD written) */
	u32 tail;			/* AC_TAIL as last read */
	u32 dropped;			/* AC_DROPPED as last read */
	/* records of a context closed while they were in the ring (gmem_ac_ctx_gone()) */
	DECLARE_BITMAP(stale, 1u << GMEM_AC_LOG2);
	struct work_struct work;	/* takes the records, migrates (gmem_ac_work()) */
	atomic_t inject_bad;		/* debugfs inject_ac_bad_records: break the next N */
};

/* g->inject_fault_hold: 0 off, or (the value debugfs is given) armed, or holding a group */
#define GMEM_INJECT_HOLD_ARMED		1
#define GMEM_INJECT_HOLD_HOLDING	2

/**
 * struct gmem_accel - one bound device
 * @dev:        the class device behind /dev/gmem_accelN; its refcount owns this struct
 * @cdev:       character device
 * @pdev:       PCI device, NULL once unbound (open files then get -ENODEV)
 * @regs:       BAR0 registers, valid while @pdev is set
 * @lock:       taken for read by file operations, for write by unbind
 * @unbinding:  set (and every waiter woken) before unbind takes @lock: what a file operation
 *              waits for ends at once with -ENODEV, so unbind does not wait for user sleeps
 * @info:       identity read from the registers at probe
 */
struct drm_device;
struct drm_pagemap;

/* A DRM front-end device's pagemap held from unplug until after its cache is gone. */
struct gmem_dpm_hold {
	struct drm_pagemap *dpagemap;
};
struct drm_pagemap_cache;

struct gmem_accel {
	struct device dev;
	struct cdev cdev;		/* /dev/gmem_accelN, unless the DRM front end has it: */
	struct drm_device *drm;		/* /dev/accel/accelN (gmem_accel_drm.c) */
	/* its HBM, drm_pagemap's (gmem_accel_drm_pagemap.c): no dev_pagemap of the core's */
	bool hbm_drm;
	struct drm_pagemap_cache *dpm_cache;
	struct gmem_dpm_hold *dpm_hold;	/* the pagemap in use at unplug (devres-managed) */
	struct pci_dev *pdev;
	void __iomem *regs;
	struct rw_semaphore lock;
	bool unbinding;
	struct gmem_accel_info info;
	/* the shared zero page, mapped for the device to read once (gmem_pt_map()) */
	dma_addr_t zero_dma;
	/* DMA goes through an IOMMU's translation: mappings cost (gmem_map_lone_page_only()) */
	bool dma_translated;

	struct gmem_queue queue[GMEM_NUM_QUEUES];

	/* fault queue, drained by the fault workers and waiting processes, a group at a time */
	struct mutex fault_lock;
	atomic_t fault_servers;		/* processes that will drain it before they sleep */
	bool fault_irq_left;		/* the fault interrupt left records to them */
	/* contexts whose waiting process serves their groups itself (gmem_wait_serving()) */
	DECLARE_BITMAP(ctx_serving, GMEM_NUM_CONTEXTS);
	struct gmem_fault_record *fq;
	dma_addr_t fq_dma;
	u32 fq_head;			/* its record is not taken, unless it is the tail */
	/* records of groups taken out of order, past fq_head (gmem_fault_take()) */
	DECLARE_BITMAP(fq_taken, 1u << GMEM_FQ_LOG2);
	bool fq_overflowed;		/* a group waits for room: write FQ_HEAD again */
	/* fault workers: one takes a group, another the next meanwhile (gmem_fault_kick()) */
	struct gmem_fault_worker {
		struct work_struct work;
		struct gmem_accel *g;
		struct gmem_fault *group;	/* the group it services (GMEM_FAULT_GROUP_MAX) */
		/* the answers of its batch (GMEM_FAULT_BUDGET, gmem_replay_drain()) */
		struct gmem_answer *answers;
	} fault_worker[GMEM_FAULT_WORKERS];
	unsigned long fault_workers_busy;	/* bit per worker at work */
	atomic_t inject_fault_hold;	/* debugfs inject_fault_hold: GMEM_INJECT_HOLD_* */
	u32 inject_map_delay_ms;	/* debugfs inject_map_delay_ms (gmem_hmm_range_fault_lock()) */
	struct workqueue_struct *wq;

	/* access counters: their ring and registers (gmem_accel_counters.c) */
	struct mutex ac_lock;
	struct gmem_ac ac;

	/* contexts: ids 1..63 (0 is the driver's own), looked up by fault servicing */
	struct mutex ctx_lock;
	struct gmem_ctx *ctx[GMEM_NUM_CONTEXTS];
	struct ida ctx_ids;

	struct gmem_ctx *kctx;		/* context 0: the driver's own commands, on queue 0 */
	struct gmem_hbm hbm;
	bool thp_migration_off;		/* sysfs thp_migration 0: THPs move page by page */
	struct work_struct evict_work;	/* makes room ahead of a migration (gmem_evict_ahead()) */
	unsigned long evict_ahead;	/* free pages it keeps meanwhile */

	struct mutex inv_lock;		/* the TLB invalidation registers */
	u32 inv_seq;

	struct delayed_work watchdog;	/* hung engines, resets under the driver */
	bool reset_requested;		/* by the driver itself: gmem_device_reset() */

	atomic64_t stats[GMEM_DEV_NR_COUNTERS];
	struct dentry *debugfs;
	atomic_t inject_stalls;		/* debugfs inject_stalled_faults */

	struct mutex obj_lock;		/* objs */
	struct list_head objs;		/* every device memory object, oldest first */
	struct inode *obj_inode;	/* its address_space holds the objects' CPU mappings */
	u64 hbm_bar;			/* BAR2's physical address: objects' CPU mappings */

	struct cdev dmirror_cdev;	/* the test_hmm-compatible node (gmem_accel_dmirror.c) */
	struct device *dmirror_dev;

	/* migrations' scratch between uses (gmem_migration_get()), each slot taken by xchg() */
	struct gmem_migration *spare_migrations[GMEM_SPARE_MIGRATIONS];

	/* oversubscribed since (ns; 0: not), renewed by pressure (gmem_accel_oversub.c) */
	atomic64_t oversub_ns;
};

/* A device page-table page and, above level 1, the tables it points to. */
struct gmem_pt {
	u64 *pte;			/* 512 entries, DMA coherent */
	dma_addr_t dma;
	struct gmem_pt **child;		/* levels 2-4 */
};

/*
 * Page-table pages allocated before ctx->lock is taken (gmem_pt_reserve), for gmem_pt_table()
 * to use under it: [0] level-1 tables, [1] tables of levels 2 and 3 (with child arrays).
 * One 2 MiB window needs at most one of the first kind and two of the second.
 */
#define GMEM_PT_SPARE_MAX	4
struct gmem_pt_spares {
	spinlock_t lock;
	unsigned int n[2];
	struct gmem_pt *pt[2][GMEM_PT_SPARE_MAX];
};

/*
 * A context's fault hook: called by the fault server for each group (sorted by VA) before it
 * maps the group's pages; it may bring in more than the group asks (@req, @pfns: one window's
 * scratch). Returns 1 if it mapped pages (faults then mapped as asked are not served again),
 * 0 if not, or the errno to cancel the group with.
 */
typedef int (*gmem_fault_hook_fn)(struct gmem_ctx *ctx, const struct gmem_fault *f,
				  unsigned int n, unsigned long *req, unsigned long *pfns);
/* A hook's answer: it served the whole group; the core's own servicing does not run. */
#define GMEM_FAULT_HOOK_ALL	2

/*
 * Who moved an HBM page in: the address space of that context, kept (mmgrab) until the
 * context has closed and the last of its HBM pages is freed. Eviction locks it (see
 * gmem_evict_range()).
 */
struct gmem_owner {
	struct kref ref;
	struct mm_struct *mm;
	atomic_long_t pages;	/* HBM pages it holds now (gmem_peer_holds()) */
};

/* Bits of gmem_ctx.waiter_busy */
#define GMEM_WAITER_SERVING	0	/* a thread serves the context's faults in waiter_group */
#define GMEM_WAITER_OTHERS	1	/* another thread of the context waits meanwhile */

/**
 * struct gmem_ctx - one open file: a process address space mirrored on the device
 * @id:        device context (ASID) number
 * @users:     held by the device's context table until shutdown, and by each fault server
 *             while it works for the context (gmem_ctx_get())
 * @unused:    completed when @users drops to zero: shutdown waits for it
 * @mm:        the address space (the owner's mmgrab keeps it)
 * @owner:     its HBM pages' owner (page->zone_device_data)
 * @notifiers: window index -> its MMU notifier, which zaps device PTEs on CPU changes
 *             (gmem_accel_notifier.c)
 * @notifier_mutex: serializes their insertion, and their removal (unmapped windows', at
 *             shutdown all)
 * @notifier_gc: removes the notifiers of windows nothing maps any more (gmem_notifier_gc())
 * @lock:      the device page table; held to program PTEs after mmu_interval_read_retry.
 *             The MMU notifier takes it, so nothing that can enter reclaim runs under it.
 * @root:      level-4 table
 * @spares:    page-table pages allocated before @lock was taken (gmem_pt_reserve)
 * @errors:    fence -> errno of batches that failed, until waited for
 * @fences:    fences handed out: a context's batches are numbered 1, 2, ... (under its
 *             queue's lock, as is @fence_seq)
 * @fence_seq: the ring sequence number of fence f, at f % GMEM_CTX_FENCES
 * @stats:     counters for GMEM_ACCEL_IOC_STATS
 * @tgid, @comm: the opening process, for debugfs
 * @stopped:   its queue was reset at close (gmem_queue_stop()): its fault groups are gone
 * @advice:    GMEM_ACCEL_PREFER_* by page index (absent: NONE), with GMEM_ADVICE_ACCESSED_BY
 *             (gmem_accel_advice.c)
 * @thrash:    2 MiB block index -> struct gmem_thrash_block (gmem_accel_thrashing.c); its
 *             xa_lock guards the blocks' state and the two counts below
 * @thrash_unpin: unpins the pages whose pin ran out
 * @thrash_blocks, @thrash_tracked: blocks in @thrash; of them, with per-page state
 * @thrash_nap_us: the nap of the group the fault server throttles (under @fault_mutex)
 * @fault_hook: see gmem_fault_hook_fn; the test_hmm interface's fault-ahead, or the DRM front
 *             end's faults through drm_gpusvm (set at open)
 * @hook_data: the hook's state
 * @hook_fini: frees it at shutdown, once the context has left the device and before its page
 *             table goes
 * @hook_atomic: may a writable object leaf at @va, in HBM if @hbm, do atomics? NULL: yes.
 *             *@size, the leaf's, becomes PAGE_SIZE where the answer is not the same over it
 *             (the DRM front end's atomic attribute, gmem_accel_drm_mem.c)
 * @fault_mutex: held by the server of one of its fault groups (one at a time: its queue
 *             stalls on one group anyway), which uses the scratch below
 * @fault_req, @fault_pfns: hmm input flags and results, one 2 MiB window each
 * @waiter_group: the group a thread waiting for a batch serves (GMEM_FAULT_GROUP_MAX), taken
 *             by one thread at a time: every waiting process can serve its own faults
 *             (gmem_wait_serving())
 * @waiter_busy: GMEM_WAITER_* bits: who has @waiter_group
 * @fault_migration: for PREFER_DEVICE faults and unsharing; allocated at first use
 */
struct gmem_ctx {
	struct gmem_accel *g;
	unsigned int id;
	struct kref users;
	struct completion unused;
	struct mm_struct *mm;
	struct gmem_owner *owner;
	struct xarray notifiers;
	struct mutex notifier_mutex;	/* inserting @notifiers; removing them */
	struct work_struct notifier_gc;
	struct mutex lock;
	struct gmem_pt root;
	struct gmem_pt_spares spares;
	struct xarray errors;
	atomic64_t stats[GMEM_CTX_NR_COUNTERS];
	pid_t tgid;
	char comm[TASK_COMM_LEN];
	u64 fences;
	u64 fence_seq[GMEM_CTX_FENCES];
	u64 last_fence;			/* ring sequence number of its last batch */
	struct maple_tree advice;
	struct xarray thrash;
	struct delayed_work thrash_unpin;
	unsigned int thrash_blocks, thrash_tracked;
	unsigned int thrash_nap_us;
	gmem_fault_hook_fn fault_hook;
	void *hook_data;
	void (*hook_fini)(struct gmem_ctx *ctx);
	bool (*hook_atomic)(struct gmem_ctx *ctx, u64 va, u64 *size, bool hbm);
	struct mutex fault_mutex;	/* one fault server at a time, and its scratch */
	unsigned long *fault_req;
	unsigned long *fault_pfns;
	struct gmem_fault *waiter_group;
	unsigned long waiter_busy;
	struct gmem_migration *fault_migration;
	/* test_hmm's HMM_DMIRROR_FLAG_FAIL_ALLOC: the next 2 MiB folio this context asks fails */
	bool fail_next_huge;
	bool stopped;
	bool shut_down;
};

/* An open /dev/gmem_accelN or /dev/gmem_dmirrorN: one context. */
struct gmem_file {
	struct gmem_accel *g;
	struct gmem_ctx *ctx;
	struct xarray objs;		/* handle -> struct gmem_obj (gmem_accel_obj.c) */
};

static inline struct gmem_accel *to_gmem_accel(struct device *dev)
{
	return container_of(dev, struct gmem_accel, dev);
}

static inline void gmem_dev_count(struct gmem_accel *g, enum gmem_dev_counter c, s64 n)
{
	atomic64_add(n, &g->stats[c]);
}

static inline void gmem_ctx_count(struct gmem_ctx *ctx, enum gmem_ctx_counter c, s64 n)
{
	atomic64_add(n, &ctx->stats[c]);
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

#endif /* GMEM_ACCEL_TYPES_H */
