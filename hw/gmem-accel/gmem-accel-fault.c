/*
 * gmem-accel: replayable faults. A command that misses a translation stalls
 * only its own queue: the faulting pages (plus the next few the command will
 * touch) go to the fault queue as one group, and the queue waits for the
 * driver's REPLAY or CANCEL for that group.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/main-loop.h"
#include "system/dma.h"
#include "gmem-accel.h"
#include "trace.h"

/* Steps a faulting command looks ahead for more faults to coalesce. */
#define GMEM_FAULT_LOOKAHEAD    1024

void gmem_fault_add(GmemQueue *q, unsigned cap, uint64_t va,
                           unsigned access, GmemWalkStatus st, uint64_t pte)
{
    uint64_t page = va & ~(GMEM_PAGE_SIZE - 1);

    for (uint32_t i = 0; i < q->nfaults; i++) {
        if (q->faults[i].va == page && q->faults[i].access == access) {
            return;
        }
    }
    if (q->nfaults < cap) {
        q->faults[q->nfaults++] = (GmemFault) {
            .va = page,
            .pte = pte,
            .access = access,
            .reason = st == GMEM_WALK_PERMISSION ? GMEM_FAULT_PERMISSION
                                                 : GMEM_FAULT_NOT_PRESENT,
        };
    }
}

/* Largest group the fault queue can ever hold (one slot stays empty). */
unsigned gmem_group_cap(GmemAccelState *s)
{
    return MIN(GMEM_FAULT_GROUP_MAX, gmem_ring_mask(s->fq_entries_log2));
}

/* Write @qid's group to the fault queue if it fits; true once posted. */
static bool gmem_fault_post(GmemAccelState *s, unsigned qid)
{
    GmemQueue *q = &s->queue[qid];
    uint32_t mask = gmem_ring_mask(s->fq_entries_log2);
    uint32_t room = (s->fq_head - s->fq_tail - 1) & mask;

    if (room < q->nfaults || s->inject_fq_full) {
        if (!s->fq_overflow) {
            gmem_accel_set_error(s, GMEM_ERR_FAULT_OVERFLOW, q->group,
                                 s->fq_base, "fault queue full: group %u of "
                                 "queue %u waits for HEAD to move", q->group,
                                 qid);
        }
        s->fq_overflow = true;
        return false;
    }
    for (uint32_t i = 0; i < q->nfaults; i++) {
        uint64_t addr = s->fq_base + (uint64_t)s->fq_tail *
                        GMEM_FAULT_RECORD_SIZE;
        struct gmem_fault_record rec = {
            .va = cpu_to_le64(q->faults[i].va),
            .ctx = cpu_to_le16(q->cmd.ctx),
            .group = cpu_to_le16(q->group),
            .access = q->faults[i].access,
            .reason = q->faults[i].reason,
            .engine = qid,
            .flags = i + 1 == q->nfaults ? GMEM_FAULT_F_LAST : 0,
            .pte = cpu_to_le64(q->faults[i].pte),
            .seq = cpu_to_le32(s->fault_seq++),
            .slot = cpu_to_le16(q->head),
        };

        if (!gmem_sys_rw(s, addr, &rec, sizeof(rec), true)) {
            gmem_accel_set_error(s, GMEM_ERR_DMA, qid, addr,
                                 "cannot write a fault record at 0x%" PRIx64
                                 "; cancelling the command", addr);
            gmem_queue_complete(s, qid, GMEM_CMD_ST_FAULT);
            return false;
        }
        trace_gmem_accel_fault(qid, q->group, q->cmd.ctx, q->faults[i].va,
                               q->faults[i].access, q->faults[i].reason);
        s->fq_tail = (s->fq_tail + 1) & mask;
        s->counters[GMEM_CNT_FAULTS]++;
    }
    q->group_posted = true;
    if (!s->fq_irq_hold && !(s->cq_fault_hold & BIT_ULL(qid))) {
        gmem_notify(s, GMEM_VEC_FAULT);
    }
    return true;
}

/* Post the groups that waited for room, oldest queue first. */
void gmem_fault_retry(GmemAccelState *s)
{
    bool waiting = false;

    for (unsigned qid = 0; qid < GMEM_NUM_QUEUES; qid++) {
        GmemQueue *q = &s->queue[qid];

        if (q->state == GMEM_CQ_STATE_STALLED && !q->group_posted &&
            !gmem_fault_post(s, qid) && q->state == GMEM_CQ_STATE_STALLED) {
            waiting = true;
        }
    }
    s->fq_overflow = waiting;
}

/*
 * A group number for queue @qid. They are 16 bits and wrap: never hand out
 * one another stalled queue still waits on, so that a response can only ever
 * reach the queue it answers.
 */
static uint16_t gmem_group_new(GmemAccelState *s, unsigned qid)
{
    for (;;) {
        uint16_t group = s->next_group++;
        bool taken = false;

        for (unsigned i = 0; i < GMEM_NUM_QUEUES; i++) {
            taken |= i != qid && s->queue[i].state == GMEM_CQ_STATE_STALLED &&
                     s->queue[i].group == group;
        }
        if (!taken) {
            return group;     /* within GMEM_NUM_QUEUES tries */
        }
    }
}

/*
 * The step at q->progress faulted (its faults are in q->faults): look ahead
 * for the next pages this command will fault on, then stall the queue.
 */
void gmem_queue_stall(GmemAccelState *s, unsigned qid)
{
    GmemQueue *q = &s->queue[qid];
    uint64_t len = gmem_cmd_length(&q->cmd);
    unsigned cap = gmem_group_cap(s);
    GmemStep step;

    if (!(s->fq_ctrl & GMEM_FQ_CTRL_ENABLE)) {
        trace_gmem_accel_fault_unhandled(qid, q->cmd.ctx, q->faults[0].va);
        gmem_queue_complete(s, qid, GMEM_CMD_ST_FAULT);
        return;
    }
    gmem_cmd_step(&q->cmd, q->progress, &step);
    for (unsigned n = 0; n < GMEM_FAULT_LOOKAHEAD && q->nfaults < cap &&
         step.next < len; n++) {
        gmem_cmd_step(&q->cmd, step.next, &step);
        for (unsigned i = 0; i < 2; i++) {
            GmemOperand *op = &step.op[i];
            GmemTranslation t;
            GmemWalkStatus st;

            if (!op->len || op->kind != GMEM_ADDR_VA) {
                continue;
            }
            st = gmem_translate(s, q->cmd.ctx, op->addr, op->access, &t);
            if (st == GMEM_WALK_NOT_PRESENT || st == GMEM_WALK_PERMISSION) {
                gmem_fault_add(q, cap, op->addr, op->access, st, t.pte);
            }
        }
    }
    q->group = gmem_group_new(s, qid);
    q->state = GMEM_CQ_STATE_STALLED;
    trace_gmem_accel_queue_state(qid, GMEM_CQ_STATE_STALLED);
    gmem_fault_post(s, qid);    /* or later, when FQ_HEAD makes room */
}


/*
 * Answer a stalled group (FAULT_RESPONSE @val): the queue to run again, or -1
 * if there is none (an error).
 */
int gmem_fault_respond(GmemAccelState *s, uint32_t val)
{
    uint16_t group = val & GMEM_RESP_GROUP_MASK;
    uint32_t code = val >> GMEM_RESP_SHIFT;

    for (unsigned qid = 0; qid < GMEM_NUM_QUEUES; qid++) {
        GmemQueue *q = &s->queue[qid];

        if (q->state != GMEM_CQ_STATE_STALLED || !q->group_posted ||
            q->group != group ||
            (code != GMEM_RESP_REPLAY && code != GMEM_RESP_CANCEL)) {
            continue;
        }
        trace_gmem_accel_fault_response(qid, group, code);
        if (code == GMEM_RESP_REPLAY) {
            s->counters[GMEM_CNT_REPLAYS]++;
            q->nfaults = 0;
            q->group_posted = false;
            q->state = GMEM_CQ_STATE_RUNNING;
        } else {
            s->counters[GMEM_CNT_CANCELS]++;
            gmem_queue_complete(s, qid, GMEM_CMD_ST_FAULT);
        }
        return qid;
    }
    gmem_accel_set_error(s, GMEM_ERR_BAD_RESPONSE, val, 0,
                         "FAULT_RESPONSE 0x%x: no stalled group %u, or "
                         "code %u is neither REPLAY nor CANCEL", val, group,
                         code);
    return -1;
}


void gmem_fq_enable(GmemAccelState *s, hwaddr addr, uint64_t val)
{
    if (val & ~GMEM_FQ_CTRL_ENABLE) {
        gmem_bad_value(s, addr, val, "unknown FQ_CTRL bits");
        return;
    }
    if (val == s->fq_ctrl) {
        return;
    }
    if (val && (s->fq_base % GMEM_FAULT_RECORD_SIZE ||
                s->fq_entries_log2 < 1 ||
                s->fq_entries_log2 > GMEM_RING_MAX_LOG2)) {
        gmem_bad_value(s, addr, val, "enable needs FQ_BASE aligned to 32 "
                       "bytes and FQ_ENTRIES_LOG2 in 1..16");
        return;
    }
    s->fq_ctrl = val;
    s->fq_head = s->fq_tail = 0;
    if (!val) {
        /* Groups that never reached the queue fail rather than hang. */
        for (unsigned qid = 0; qid < GMEM_NUM_QUEUES; qid++) {
            GmemQueue *q = &s->queue[qid];

            if (q->state == GMEM_CQ_STATE_STALLED && !q->group_posted) {
                gmem_queue_complete(s, qid, GMEM_CMD_ST_FAULT);
            }
        }
        s->fq_overflow = false;
        qemu_bh_schedule(s->engine_bh);
    }
}

/*
 * FQ_IRQ_HOLD: while a driver thread serves the queue itself, the fault
 * interrupt would only wake another CPU for records already taken. Released,
 * it is raised for the records nobody has consumed.
 */
void gmem_fq_irq_hold(GmemAccelState *s, hwaddr addr, uint64_t val)
{
    if (val > 1) {
        gmem_bad_value(s, addr, val, "FQ_IRQ_HOLD is 0 or 1");
        return;
    }
    trace_gmem_accel_fq_irq_hold(val, s->fq_head, s->fq_tail);
    s->fq_irq_hold = val;
    if (!val && s->fq_tail != s->fq_head) {
        gmem_notify(s, GMEM_VEC_FAULT);
    }
}

/*
 * CQ_FAULT_HOLD, the same for one queue's groups, set and cleared by its
 * doorbell: the thread that rings it serves the faults of what it queued,
 * and a mapped page's access takes one MMIO write, not three.
 */
QEMU_BUILD_BUG_ON(GMEM_NUM_QUEUES > 64);   /* cq_fault_hold's bits */

void gmem_cq_fault_hold(GmemAccelState *s, unsigned qid, bool hold)
{
    bool held = s->cq_fault_hold & BIT_ULL(qid);

    if (hold == held) {
        return;
    }
    trace_gmem_accel_cq_fault_hold(qid, hold, s->fq_head, s->fq_tail);
    s->cq_fault_hold ^= BIT_ULL(qid);
    if (!hold && !s->fq_irq_hold && s->fq_tail != s->fq_head) {
        gmem_notify(s, GMEM_VEC_FAULT);
    }
}
