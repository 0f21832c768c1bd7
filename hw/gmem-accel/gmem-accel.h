/*
 * gmem-accel: emulated PCIe accelerator with its own HBM (device state)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_GMEM_ACCEL_H
#define HW_GMEM_ACCEL_H

#include "hw/pci/pci_device.h"
#include "qemu/interval-tree.h"
#include "qemu/units.h"
#include "qemu/bitops.h"
#include "qom/object.h"
#include "system/runstate.h"
#include "gmem-accel-core.h"

#define TYPE_GMEM_ACCEL "gmem-accel"
#define GMEM_TLB_MAX_ENTRIES (64 * 1024)
#define GMEM_WALK_CACHE_MAX_ENTRIES 4096
OBJECT_DECLARE_SIMPLE_TYPE(GmemAccelState, GMEM_ACCEL)

typedef struct GmemContext {
    uint64_t root;
    uint32_t ctrl;          /* GMEM_CTX_CTRL_* */
} GmemContext;

/* One fault record before it is written to the fault queue. */
typedef struct GmemFault {
    uint64_t va;
    uint64_t pte;
    uint8_t access;
    uint8_t reason;
} GmemFault;

/*
 * A region the access counters track (gmem-accel-counters.c): set
 * (ctx, aperture, va) % GMEM_AC_SETS, GMEM_AC_WAYS ways each.
 */
#define GMEM_AC_SETS (GMEM_AC_MAX_REGIONS / GMEM_AC_WAYS)
typedef struct GmemAcRegion {
    uint64_t va;            /* region base, while used */
    uint64_t used;          /* AC tick of its last access; 0: a free way */
    uint32_t count;
    uint16_t ctx;
    uint8_t aperture;       /* GMEM_AC_APERTURE_* */
} GmemAcRegion;

typedef struct GmemAc {
    /* registers */
    uint64_t base;
    uint32_t entries_log2;
    uint32_t ctrl;
    uint32_t head;
    uint32_t tail;
    uint32_t granularity;   /* log2: GMEM_AC_GRAN_64K or _2M */
    uint32_t threshold;
    uint64_t clear_va;
    uint32_t clear_ctx;
    uint32_t notified;
    uint32_t dropped;
    uint32_t seq;
    /* the table */
    uint64_t tick;          /* accesses' clock, for replacement */
    uint32_t tracked;       /* ways in use */
    GmemAcRegion region[GMEM_AC_MAX_REGIONS];
} GmemAc;

/* Poisoned HBM pages a device holds at once (injected) */
#define GMEM_POISON_MAX 16

/* Where an operand of a step lands: HBM offset or bus address */
typedef struct GmemTarget {
    bool hbm;
    uint64_t addr;
} GmemTarget;

/* The data mover (gmem-accel-mover.c): a batch of copies off the BQL */
#define GMEM_MOVER_MAX_BYTES    (16 * MiB)
#define GMEM_MOVER_MAX_RUNS     4096    /* of 4 KiB pages: 16 MiB */
#define GMEM_MOVER_MAX_THREADS  8

typedef struct GmemMoverRun {
    uint8_t *ptr[2];            /* source, destination (mapped) */
    GmemTarget tgt[2];
    uint64_t len;
    IntervalTreeNode read, written;     /* host addresses, in the batch's */
} GmemMoverRun;

typedef struct GmemMoverTask {
    struct GmemAccelState *s;
    unsigned first, n;          /* its runs */
} GmemMoverTask;

typedef struct GmemMover {
    struct ThreadPool *pool;    /* NULL with movers=0 */
    QEMUBH *done_bh;
    int qid;                    /* the queue whose batch it is; -1: none */
    bool in_flight;             /* handed to the threads */
    unsigned nruns;
    uint64_t bytes;
    int pending;                /* tasks still copying (atomic) */
    uint64_t batches;           /* QOM state, not migrated */
    IntervalTreeRoot read, written;     /* what the runs read and write */
    GmemMoverRun *run;          /* GMEM_MOVER_MAX_RUNS */
    GmemMoverTask task[GMEM_MOVER_MAX_THREADS];
} GmemMover;

/* An address translation of the IOMMU in front of the device (atc.c) */
#define GMEM_ATC_ENTRIES        64
typedef struct GmemAtcEntry {
    bool valid;
    bool write;         /* translated for writing too */
    hwaddr iova;        /* bus address, mask-aligned */
    hwaddr mask;        /* page size - 1 */
    hwaddr target;      /* in @as */
    AddressSpace *as;
} GmemAtcEntry;
typedef struct GmemAtcIommu GmemAtcIommu;

typedef struct GmemQueue {
    /* registers */
    uint64_t base;
    uint32_t entries_log2;
    uint32_t ctrl;
    uint32_t head;
    uint32_t tail;
    uint32_t state;         /* GMEM_CQ_STATE_* */
    uint32_t completed;
    uint32_t steps;         /* progress a watchdog can see; not migrated */

    /* the command at HEAD, once fetched */
    bool busy;
    uint8_t raw[GMEM_CMD_SIZE];
    GmemCmd cmd;
    uint64_t progress;

    /* a stalled command's fault group */
    uint16_t group;
    bool group_posted;      /* records are in the fault queue */
    uint32_t nfaults;
    GmemFault faults[GMEM_FAULT_GROUP_MAX];
} GmemQueue;

/*
 * System-memory PTEs read a line at a time while a step is merged: the
 * next pages' entries are in the line the first one came from.
 */
#define GMEM_PTE_LINE_ENTRIES   GMEM_CONT_ENTRIES
typedef struct GmemPteLine {
    bool on;                    /* between gmem_pte_lines_begin() and end */
    bool valid;
    uint64_t addr;              /* bus address, GMEM_PTE_LINE_ENTRIES aligned */
    uint64_t pte[GMEM_PTE_LINE_ENTRIES];
} GmemPteLine;

struct GmemAccelState {
    PCIDevice parent_obj;

    MemoryRegion bar0;          /* registers + MSI-X table/PBA */
    MemoryRegion regs;
    MemoryRegion hbm;           /* BAR2, RAM-backed */
    uint8_t *hbm_ptr;
    QEMUBH *engine_bh;
    QEMUTimer *engine_pause;    /* a busy engine's breather: see exec.c */
    VMChangeStateEntry *vm_state;   /* engines pause while the VM is stopped */
    uint8_t *bounce;            /* GMEM_STEP_MAX_BYTES, one step's data */
    GmemPteLine pte_line;       /* see gmem_pte_lines_begin() */

    /* registers */
    uint32_t status;
    uint32_t error_code;
    uint32_t error_info;
    uint64_t error_addr;
    uint32_t scratch;

    GmemContext ctx[GMEM_NUM_CONTEXTS];
    GmemQueue queue[GMEM_NUM_QUEUES];
    GmemTlb tlb;
    GmemMover mover;

    /* fault queue */
    uint64_t fq_base;
    uint32_t fq_entries_log2;
    uint32_t fq_ctrl;
    uint32_t fq_head;
    uint32_t fq_tail;
    bool fq_overflow;
    bool fq_irq_hold;           /* FQ_IRQ_HOLD */
    uint64_t cq_fault_hold;     /* each queue's CQ_FAULT_HOLD, bit q */
    uint32_t fault_seq;
    uint16_t next_group;

    /* register-driven TLB invalidation */
    uint64_t inv_va;
    uint64_t inv_size;
    uint32_t inv_ctx;
    uint32_t inv_done;

    uint64_t counters[GMEM_NUM_COUNTERS];
    GmemAc ac;                      /* access counters (counters.c) */

    /* how the engines ran (QOM 'state'), not migrated */
    uint32_t inline_max_commands;   /* most one MMIO write started */
    uint64_t kicks_deferred;        /* writes from another engine's work */
    uint64_t inject_dma_error;      /* queues whose next access fails */
    uint64_t inject_hang;           /* queues whose engine stopped */
    bool inject_inv_stuck;          /* TLB invalidations never complete */
    bool inject_fq_full;            /* no room for groups until FQ_HEAD */
    uint64_t poison[GMEM_POISON_MAX];   /* HBM pages engines cannot access */
    unsigned npoison;
    uint64_t engine_pauses;         /* turns that left work for a pause */
    uint64_t walk_cache_hits;       /* walks begun at level 1 */
    uint64_t pte_reads;             /* walker's page-table accesses */

    /* the address-translation cache (atc.c), not migrated */
    GmemAtcEntry atc[GMEM_ATC_ENTRIES];
    MemoryListener atc_listener;
    QLIST_HEAD(, GmemAtcIommu) atc_iommus;
    bool atc_listening;
    bool atc_unusable;              /* an IOMMU without unmap notifications */
    uint64_t atc_hits, atc_misses, atc_flushes;

    /* guest-error log rate limit (gmem-accel-error.c), not migrated */
    int64_t log_window;
    uint32_t log_count;
    uint32_t log_suppressed;

    /* properties */
    uint64_t hbm_size;
    uint32_t tlb_entries;
    uint32_t walk_cache_entries;    /* 0: no walk cache */
    uint32_t movers;                /* copy threads; 0: the engine copies */
    bool ats;
    bool pasid;
    bool pri;
    bool coherent;      /* CAP_COHERENT: the guest may use BAR2 as CPU memory */
    bool hbm_prealloc;  /* the HBM's host memory allocated at realize */
    bool atc_on;        /* "atc": keep the IOMMU's translations (atc.c) */
};

/*
 * The device's files, each calling only those listed after it:
 *   gmem-accel.c          QOM device: properties, realize, reset
 *   gmem-accel-migration.c  vmstate, and the checks of an incoming stream
 *   gmem-accel-monitor.c  QOM 'state'/'page-table[N]', HMP 'info gmem-accel'
 *   gmem-accel-inject.c   QOM 'inject': faults the engines take on demand
 *   gmem-accel-regs.c     the register file: access table and decoder
 *   gmem-accel-exec.c     the DMA engines: running commands, budgets
 *   gmem-accel-fault.c    replayable faults and the fault queue
 *   gmem-accel-counters.c access counters and their notification ring
 *   gmem-accel-queue.c    command queue state: fetch, check, complete
 *   gmem-accel-mmu.c      translation, contexts, TLB invalidation
 *   gmem-accel-mover.c    the engines' copies, on worker threads
 *   gmem-accel-mem.c      HBM and system memory access
 *   gmem-accel-atc.c      the IOMMU's translations the device keeps
 *   gmem-accel-error.c    guest errors and MSI-X notification
 * and the QEMU-free core (gmem-accel-core.h: walker, TLB, descriptors).
 */

/* gmem-accel-migration.c */
extern const VMStateDescription gmem_accel_vmstate;

/* gmem-accel-monitor.c */
void gmem_monitor_class_init(ObjectClass *klass);
void gmem_monitor_register(void);

/* gmem-accel-inject.c */
void gmem_inject_class_init(ObjectClass *klass);

/* gmem-accel-regs.c */
extern const MemoryRegionOps gmem_regs_ops;
/* Device-level reset: registers and engines, not PCI config space. */
void gmem_accel_reset_state(GmemAccelState *s, const char *why);

/* gmem-accel-exec.c */
void gmem_engine_reset(GmemAccelState *s);
void gmem_engine_realize(GmemAccelState *s);
void gmem_engine_unrealize(GmemAccelState *s);
void gmem_engine_post_load(GmemAccelState *s);
/* Run queue @qid now, on the writing thread, within a budget. */
void gmem_engine_kick(GmemAccelState *s, unsigned qid);

/* gmem-accel-mover.c */
bool gmem_mover_add(GmemAccelState *s, unsigned qid, const GmemTarget *tgt,
                    uint64_t len);
bool gmem_mover_holds(GmemAccelState *s, unsigned qid);
void gmem_mover_start(GmemAccelState *s);
void gmem_mover_finish(GmemAccelState *s);
void gmem_mover_realize(GmemAccelState *s);
void gmem_mover_unrealize(GmemAccelState *s);

/* gmem-accel-fault.c */
void gmem_fault_add(GmemQueue *q, unsigned cap, uint64_t va,
                    unsigned access, GmemWalkStatus st, uint64_t pte);
unsigned gmem_group_cap(GmemAccelState *s);
void gmem_queue_stall(GmemAccelState *s, unsigned qid);
void gmem_fault_retry(GmemAccelState *s);
int gmem_fault_respond(GmemAccelState *s, uint32_t val);
void gmem_fq_enable(GmemAccelState *s, hwaddr addr, uint64_t val);
void gmem_fq_irq_hold(GmemAccelState *s, hwaddr addr, uint64_t val);
void gmem_cq_fault_hold(GmemAccelState *s, unsigned qid, bool hold);

/* gmem-accel-counters.c */
void gmem_ac_reset(GmemAccelState *s);
uint32_t gmem_ac_read(GmemAccelState *s, hwaddr reg);
void gmem_ac_write(GmemAccelState *s, hwaddr reg, uint64_t val);
/* Count @len bytes at @va of @ctx that an engine step accessed. */
void gmem_ac_count(GmemAccelState *s, uint16_t ctx, uint64_t va,
                   uint64_t len, bool hbm);
/* NULL if the loaded access-counter state is one the device could reach */
const char *gmem_ac_check(GmemAccelState *s);

/* gmem-accel-queue.c */
void gmem_queue_break(GmemAccelState *s, unsigned qid);
void gmem_queue_complete(GmemAccelState *s, unsigned qid, uint32_t status);
bool gmem_queue_fetch(GmemAccelState *s, unsigned qid);
void gmem_queue_enable(GmemAccelState *s, unsigned qid, hwaddr addr,
                       uint64_t val);

/* gmem-accel-mmu.c */
/* Translate @va in @ctx for @access, through the TLB. */
GmemWalkStatus gmem_translate(GmemAccelState *s, uint16_t ctx, uint64_t va,
                              unsigned access, GmemTranslation *t);
void gmem_invalidate(GmemAccelState *s, uint16_t ctx, uint64_t va,
                     uint64_t size);
uint32_t gmem_pt_error(GmemAccelState *s, uint16_t ctx, uint64_t va,
                       GmemWalkStatus st, const GmemTranslation *t);
void gmem_ctx_write(GmemAccelState *s, unsigned c, unsigned r,
                    hwaddr addr, uint64_t val);
void gmem_inv_trigger(GmemAccelState *s, uint32_t seq);

/* gmem-accel-mem.c */
bool gmem_read_pte(void *opaque, bool hbm, uint64_t addr, uint64_t *pte,
                   unsigned n);
bool gmem_peek_pte(void *opaque, bool hbm, uint64_t addr, uint64_t *pte,
                   unsigned n);
void gmem_pte_lines_begin(GmemAccelState *s);
void gmem_pte_lines_end(GmemAccelState *s);
bool gmem_mem_rw(GmemAccelState *s, bool hbm, uint64_t addr,
                 void *buf, uint64_t len, bool write);
void *gmem_mem_map(GmemAccelState *s, bool hbm, uint64_t addr,
                   uint64_t len, bool write);
void gmem_mem_unmap(GmemAccelState *s, bool hbm, uint64_t addr,
                    void *p, uint64_t len, bool write, bool written);
bool gmem_copy_map(GmemAccelState *s, const GmemTarget *tgt, uint64_t len,
                   uint8_t **p);
void gmem_copy_unmap(GmemAccelState *s, const GmemTarget *tgt, uint64_t len,
                     uint8_t *const *p, bool written);
uint64_t gmem_load_elem(const void *p, unsigned width);
bool gmem_sys_rw(GmemAccelState *s, uint64_t addr, void *buf, uint64_t len,
                 bool write);
void gmem_store_elem(void *p, unsigned width, uint64_t v);
bool gmem_mem_atomic_add(GmemAccelState *s, bool hbm, uint64_t addr,
                         uint64_t len, unsigned width, uint64_t add);

/* gmem-accel-atc.c */
AddressSpace *gmem_atc_lookup(GmemAccelState *s, uint64_t addr, uint64_t len,
                              bool write, hwaddr *xaddr);
void gmem_atc_reset(GmemAccelState *s);
void gmem_atc_unrealize(GmemAccelState *s);

/* gmem-accel-error.c */
void gmem_notify(GmemAccelState *s, unsigned vector);
void gmem_accel_set_error(GmemAccelState *s, uint32_t code, uint32_t info,
                          uint64_t addr, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);
void gmem_bad_value(GmemAccelState *s, hwaddr addr, uint64_t val,
                    const char *why);

/* Index mask of a ring of 1 << @log2 entries (0 for a value never valid) */
static inline uint32_t gmem_ring_mask(uint32_t log2)
{
    return log2 <= GMEM_RING_MAX_LOG2 ? (1u << log2) - 1 : 0;
}

/* A write to the LO or HI register of a 64-bit pair */
static inline void gmem_set_lo(uint64_t *r, uint64_t val)
{
    *r = deposit64(*r, 0, 32, val);
}

static inline void gmem_set_hi(uint64_t *r, uint64_t val)
{
    *r = deposit64(*r, 32, 32, val);
}

#endif
