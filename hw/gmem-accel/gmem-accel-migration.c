/*
 * gmem-accel: migration. A stream is untrusted input, as the guest's
 * register writes are: every field it carries is checked against the rules
 * the registers enforce before the device runs on it (docs/devel/
 * secure-coding-practices.rst), and an in-flight command is validated again
 * as if fetched from its ring.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "migration/vmstate.h"
#include "hw/pci/msix.h"
#include "gmem-accel.h"

static bool gmem_ring_ok(uint64_t base, uint32_t align, uint32_t log2)
{
    return base % align == 0 && log2 >= 1 && log2 <= GMEM_RING_MAX_LOG2;
}

static bool gmem_fault_ok(const GmemFault *f)
{
    return f->access && !(f->access & ~(GMEM_ACCESS_READ | GMEM_ACCESS_WRITE |
                                        GMEM_ACCESS_ATOMIC)) &&
           (f->reason == GMEM_FAULT_NOT_PRESENT ||
            f->reason == GMEM_FAULT_PERMISSION) &&
           !(f->va & (GMEM_PAGE_SIZE - 1));
}

/* NULL if queue @q's state is one the device could be in, else why not. */
static const char *gmem_queue_check(GmemAccelState *s, GmemQueue *q)
{
    uint32_t mask;

    if (q->ctrl & ~GMEM_CQ_CTRL_ENABLE ||
        q->entries_log2 > GMEM_RING_MAX_LOG2) {
        return "queue CTRL or ENTRIES_LOG2";
    }
    if (!(q->ctrl & GMEM_CQ_CTRL_ENABLE)) {
        return q->state == GMEM_CQ_STATE_DISABLED && !q->busy && !q->head &&
               !q->tail && !q->nfaults && !q->group_posted ?
               NULL : "a disabled queue with work";
    }
    mask = gmem_ring_mask(q->entries_log2);
    if (!gmem_ring_ok(q->base, GMEM_CMD_SIZE, q->entries_log2) ||
        q->head > mask || q->tail > mask ||
        q->state < GMEM_CQ_STATE_IDLE || q->state > GMEM_CQ_STATE_BROKEN) {
        return "queue ring, HEAD, TAIL or state";
    }
    if ((q->state == GMEM_CQ_STATE_IDLE &&
         (q->busy || q->head != q->tail)) ||
        (q->state == GMEM_CQ_STATE_BROKEN && q->busy) ||
        (q->state == GMEM_CQ_STATE_STALLED &&
         (!q->busy || !q->nfaults)) ||
        (q->state != GMEM_CQ_STATE_STALLED &&
         q->state != GMEM_CQ_STATE_BROKEN &&
         (q->nfaults || q->group_posted)) ||
        q->nfaults > GMEM_FAULT_GROUP_MAX) {
        return "queue state against its command and faults";
    }
    for (uint32_t i = 0; i < q->nfaults; i++) {
        if (!gmem_fault_ok(&q->faults[i])) {
            return "a fault of a stalled group";
        }
    }
    if (q->busy) {
        /* Only a command that passed these checks is ever in flight. */
        gmem_cmd_decode(q->raw, &q->cmd);
        if (gmem_cmd_validate(&q->cmd, s->hbm_size) != GMEM_CMD_ST_OK ||
            q->progress > gmem_cmd_length(&q->cmd)) {
            return "the in-flight command";
        }
    }
    return NULL;
}

/* NULL if the loaded state is one the device could be in, else why not. */
static const char *gmem_state_check(GmemAccelState *s)
{
    bool fq_on = s->fq_ctrl & GMEM_FQ_CTRL_ENABLE;

    if (s->status & ~(GMEM_STATUS_READY | GMEM_STATUS_ERROR)) {
        return "STATUS";
    }
    if (s->fq_ctrl & ~GMEM_FQ_CTRL_ENABLE ||
        s->fq_entries_log2 > GMEM_RING_MAX_LOG2) {
        return "FQ_CTRL or FQ_ENTRIES_LOG2";
    }
    if (fq_on ? !gmem_ring_ok(s->fq_base, GMEM_FAULT_RECORD_SIZE,
                              s->fq_entries_log2) ||
                s->fq_head > gmem_ring_mask(s->fq_entries_log2) ||
                s->fq_tail > gmem_ring_mask(s->fq_entries_log2)
              : s->fq_head || s->fq_tail || s->fq_overflow) {
        return "the fault queue";
    }
    for (unsigned c = 0; c < GMEM_NUM_CONTEXTS; c++) {
        if (s->ctx[c].ctrl & ~GMEM_CTX_CTRL_MASK ||
            s->ctx[c].root & (GMEM_PAGE_SIZE - 1)) {
            return "a context's CTRL or ROOT";
        }
    }
    for (unsigned qid = 0; qid < GMEM_NUM_QUEUES; qid++) {
        const char *why = gmem_queue_check(s, &s->queue[qid]);

        if (why) {
            return why;
        }
        if (extract64(s->cq_fault_hold, qid, 1) &&
            !(s->queue[qid].ctrl & GMEM_CQ_CTRL_ENABLE)) {
            return "a disabled queue's FAULT_HOLD";
        }
    }
    return NULL;
}

static const VMStateDescription gmem_vmstate_fault = {
    .name = "gmem-accel/fault",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(va, GmemFault),
        VMSTATE_UINT64(pte, GmemFault),
        VMSTATE_UINT8(access, GmemFault),
        VMSTATE_UINT8(reason, GmemFault),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription gmem_vmstate_context = {
    .name = "gmem-accel/context",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(root, GmemContext),
        VMSTATE_UINT32(ctrl, GmemContext),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription gmem_vmstate_queue = {
    .name = "gmem-accel/queue",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(base, GmemQueue),
        VMSTATE_UINT32(entries_log2, GmemQueue),
        VMSTATE_UINT32(ctrl, GmemQueue),
        VMSTATE_UINT32(head, GmemQueue),
        VMSTATE_UINT32(tail, GmemQueue),
        VMSTATE_UINT32(state, GmemQueue),
        VMSTATE_UINT32(completed, GmemQueue),
        VMSTATE_BOOL(busy, GmemQueue),
        VMSTATE_UINT8_ARRAY(raw, GmemQueue, GMEM_CMD_SIZE),
        VMSTATE_UINT64(progress, GmemQueue),
        VMSTATE_UINT16(group, GmemQueue),
        VMSTATE_BOOL(group_posted, GmemQueue),
        VMSTATE_UINT32(nfaults, GmemQueue),
        VMSTATE_STRUCT_ARRAY(faults, GmemQueue, GMEM_FAULT_GROUP_MAX, 1,
                             gmem_vmstate_fault, GmemFault),
        VMSTATE_END_OF_LIST()
    },
};

static int gmem_accel_post_load(void *opaque, int version_id)
{
    GmemAccelState *s = opaque;
    const char *why = gmem_state_check(s);

    if (why) {
        error_report("%s %s: incoming state rejected: %s", TYPE_GMEM_ACCEL,
                     DEVICE(s)->id ?: "", why);
        return -EINVAL;
    }
    /*
     * A broken queue holds no fault group (gmem_queue_break()), but a device
     * that kept it there may have sent one: nothing can answer or retry it,
     * so it is dropped rather than the stream refused.
     */
    for (unsigned qid = 0; qid < GMEM_NUM_QUEUES; qid++) {
        GmemQueue *q = &s->queue[qid];

        if (q->state == GMEM_CQ_STATE_BROKEN) {
            q->nfaults = 0;
            q->group_posted = false;
        }
    }
    gmem_engine_post_load(s);
    return 0;
}

static bool gmem_fq_irq_hold_needed(void *opaque)
{
    return ((GmemAccelState *)opaque)->fq_irq_hold;
}

/* From 0.8; a stream without it had no hold. */
static const VMStateDescription gmem_vmstate_fq_irq_hold = {
    .name = TYPE_GMEM_ACCEL "/fq-irq-hold",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = gmem_fq_irq_hold_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(fq_irq_hold, GmemAccelState),
        VMSTATE_END_OF_LIST()
    },
};

static bool gmem_cq_fault_hold_needed(void *opaque)
{
    return ((GmemAccelState *)opaque)->cq_fault_hold;
}

/* From 0.10; a stream without it had no queue's hold. */
static const VMStateDescription gmem_vmstate_cq_fault_hold = {
    .name = TYPE_GMEM_ACCEL "/cq-fault-hold",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = gmem_cq_fault_hold_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(cq_fault_hold, GmemAccelState),
        VMSTATE_END_OF_LIST()
    },
};

static bool gmem_ac_needed(void *opaque)
{
    GmemAccelState *s = opaque;

    /* Not after reset: what reset leaves needs nothing sent. */
    return s->ac.ctrl || s->ac.tracked || s->ac.base || s->ac.entries_log2 ||
           s->ac.granularity != GMEM_AC_GRAN_64K ||
           s->ac.threshold != GMEM_AC_THRESHOLD_DEFAULT || s->ac.clear_va ||
           s->ac.clear_ctx || s->ac.notified || s->ac.dropped || s->ac.seq ||
           s->ac.head || s->ac.tail;
}

static int gmem_ac_post_load(void *opaque, int version_id)
{
    GmemAccelState *s = opaque;
    const char *why = gmem_ac_check(s);

    if (why) {
        error_report("%s %s: incoming state rejected: %s", TYPE_GMEM_ACCEL,
                     DEVICE(s)->id ?: "", why);
        return -EINVAL;
    }
    return 0;
}

static const VMStateDescription gmem_vmstate_ac_region = {
    .name = TYPE_GMEM_ACCEL "/ac-region",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(va, GmemAcRegion),
        VMSTATE_UINT64(used, GmemAcRegion),
        VMSTATE_UINT32(count, GmemAcRegion),
        VMSTATE_UINT16(ctx, GmemAcRegion),
        VMSTATE_UINT8(aperture, GmemAcRegion),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * From 0.11: the access counters' registers and table, sent unless they
 * are as reset leaves them (as realize leaves them on the destination).
 */
static const VMStateDescription gmem_vmstate_ac = {
    .name = TYPE_GMEM_ACCEL "/access-counters",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = gmem_ac_needed,
    .post_load = gmem_ac_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(ac.base, GmemAccelState),
        VMSTATE_UINT32(ac.entries_log2, GmemAccelState),
        VMSTATE_UINT32(ac.ctrl, GmemAccelState),
        VMSTATE_UINT32(ac.head, GmemAccelState),
        VMSTATE_UINT32(ac.tail, GmemAccelState),
        VMSTATE_UINT32(ac.granularity, GmemAccelState),
        VMSTATE_UINT32(ac.threshold, GmemAccelState),
        VMSTATE_UINT64(ac.clear_va, GmemAccelState),
        VMSTATE_UINT32(ac.clear_ctx, GmemAccelState),
        VMSTATE_UINT32(ac.notified, GmemAccelState),
        VMSTATE_UINT32(ac.dropped, GmemAccelState),
        VMSTATE_UINT32(ac.seq, GmemAccelState),
        VMSTATE_UINT64(ac.tick, GmemAccelState),
        VMSTATE_UINT32(ac.tracked, GmemAccelState),
        VMSTATE_STRUCT_ARRAY(ac.region, GmemAccelState, GMEM_AC_MAX_REGIONS,
                             1, gmem_vmstate_ac_region, GmemAcRegion),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription gmem_accel_vmstate = {
    .name = TYPE_GMEM_ACCEL,
    /*
     * 3: a queue's fault group holds GMEM_FAULT_GROUP_MAX = 256 faults (0.7);
     * 4: GMEM_NUM_QUEUES = 64 queues (0.9)
     */
    .version_id = 4,
    .minimum_version_id = 4,
    .post_load = gmem_accel_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, GmemAccelState),
        VMSTATE_MSIX(parent_obj, GmemAccelState),
        VMSTATE_UINT32(status, GmemAccelState),
        VMSTATE_UINT32(error_code, GmemAccelState),
        VMSTATE_UINT32(error_info, GmemAccelState),
        VMSTATE_UINT64(error_addr, GmemAccelState),
        VMSTATE_UINT32(scratch, GmemAccelState),
        VMSTATE_STRUCT_ARRAY(ctx, GmemAccelState, GMEM_NUM_CONTEXTS, 1,
                             gmem_vmstate_context, GmemContext),
        VMSTATE_STRUCT_ARRAY(queue, GmemAccelState, GMEM_NUM_QUEUES, 1,
                             gmem_vmstate_queue, GmemQueue),
        VMSTATE_UINT64(fq_base, GmemAccelState),
        VMSTATE_UINT32(fq_entries_log2, GmemAccelState),
        VMSTATE_UINT32(fq_ctrl, GmemAccelState),
        VMSTATE_UINT32(fq_head, GmemAccelState),
        VMSTATE_UINT32(fq_tail, GmemAccelState),
        VMSTATE_BOOL(fq_overflow, GmemAccelState),
        VMSTATE_UINT32(fault_seq, GmemAccelState),
        VMSTATE_UINT16(next_group, GmemAccelState),
        VMSTATE_UINT64(inv_va, GmemAccelState),
        VMSTATE_UINT64(inv_size, GmemAccelState),
        VMSTATE_UINT32(inv_ctx, GmemAccelState),
        VMSTATE_UINT32(inv_done, GmemAccelState),
        VMSTATE_UINT64_ARRAY(counters, GmemAccelState, GMEM_NUM_COUNTERS),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &gmem_vmstate_fq_irq_hold,
        &gmem_vmstate_cq_fault_hold,
        &gmem_vmstate_ac,
        NULL
    },
};

