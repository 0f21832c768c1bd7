/*
 * gmem-accel: emulated PCIe accelerator with its own HBM (device state)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_GMEM_ACCEL_H
#define HW_GMEM_ACCEL_H

#include "hw/pci/pci_device.h"
#include "qom/object.h"
#include "system/runstate.h"
#include "gmem-accel-core.h"

#define TYPE_GMEM_ACCEL "gmem-accel"
#define GMEM_TLB_MAX_ENTRIES (64 * 1024)
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

typedef struct GmemQueue {
    /* registers */
    uint64_t base;
    uint32_t entries_log2;
    uint32_t ctrl;
    uint32_t head;
    uint32_t tail;
    uint32_t state;         /* GMEM_CQ_STATE_* */
    uint32_t completed;

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

struct GmemAccelState {
    PCIDevice parent_obj;

    MemoryRegion bar0;          /* registers + MSI-X table/PBA */
    MemoryRegion regs;
    MemoryRegion hbm;           /* BAR2, RAM-backed */
    uint8_t *hbm_ptr;
    QEMUBH *engine_bh;
    VMChangeStateEntry *vm_state;   /* engines pause while the VM is stopped */
    uint8_t *bounce;            /* GMEM_STEP_MAX_BYTES, one step's data */

    /* registers */
    uint32_t status;
    uint32_t error_code;
    uint32_t error_info;
    uint64_t error_addr;
    uint32_t scratch;

    GmemContext ctx[GMEM_NUM_CONTEXTS];
    GmemQueue queue[GMEM_NUM_QUEUES];
    GmemTlb tlb;

    /* fault queue */
    uint64_t fq_base;
    uint32_t fq_entries_log2;
    uint32_t fq_ctrl;
    uint32_t fq_head;
    uint32_t fq_tail;
    bool fq_overflow;
    uint32_t fault_seq;
    uint16_t next_group;

    /* register-driven TLB invalidation */
    uint64_t inv_va;
    uint64_t inv_size;
    uint32_t inv_ctx;
    uint32_t inv_done;

    uint64_t counters[GMEM_NUM_COUNTERS];

    /* properties */
    uint64_t hbm_size;
    uint32_t tlb_entries;
    bool ats;
    bool pasid;
    bool pri;
    bool coherent;      /* CAP_COHERENT: the guest may use BAR2 as CPU memory */
};

/* gmem-accel.c */
void gmem_accel_set_error(GmemAccelState *s, uint32_t code, uint32_t info,
                          uint64_t addr, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);

/* gmem-accel-engine.c: queues, contexts, faults */
void gmem_engine_reset(GmemAccelState *s);
void gmem_engine_realize(GmemAccelState *s);
void gmem_engine_unrealize(GmemAccelState *s);
bool gmem_engine_reg_read(GmemAccelState *s, hwaddr addr, uint64_t *val);
bool gmem_engine_reg_write(GmemAccelState *s, hwaddr addr, uint64_t val);
void gmem_engine_post_load(GmemAccelState *s);
/* Translate @va in @ctx for @access, through the TLB. */
GmemWalkStatus gmem_translate(GmemAccelState *s, uint16_t ctx, uint64_t va,
                              unsigned access, GmemTranslation *t);
bool gmem_read_pte(void *opaque, bool hbm, uint64_t addr, uint64_t *pte);

/* gmem-accel-monitor.c */
/* QOM properties 'state' and 'page-table[N]'; HMP 'info gmem-accel' */
void gmem_monitor_class_init(ObjectClass *klass);
void gmem_monitor_register(void);

extern const VMStateDescription gmem_vmstate_context;
extern const VMStateDescription gmem_vmstate_queue;

#endif
