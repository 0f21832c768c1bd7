/*
 * gmem-accel: command queue state: fetching and checking the descriptor at
 * HEAD, completing it (status written back, NOTIFY), enabling a queue.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "system/dma.h"
#include "gmem-accel.h"
#include "trace.h"

static uint64_t gmem_desc_addr(GmemQueue *q)
{
    return q->base + (uint64_t)q->head * GMEM_CMD_SIZE;
}

/*
 * The ring cannot be used: the engine stops until the queue is disabled. The
 * command at HEAD and its fault group are dropped with it, so that a broken
 * queue holds nothing another path could act on (a response, a retry) and
 * its state is one a migration stream may carry.
 */
void gmem_queue_break(GmemAccelState *s, unsigned qid)
{
    GmemQueue *q = &s->queue[qid];

    q->state = GMEM_CQ_STATE_BROKEN;
    q->busy = false;
    q->progress = 0;
    q->nfaults = 0;
    q->group_posted = false;
    trace_gmem_accel_queue_state(qid, GMEM_CQ_STATE_BROKEN);
}

/* Write the status of the command at HEAD back and move past it. */
void gmem_queue_complete(GmemAccelState *s, unsigned qid,
                                uint32_t status)
{
    GmemQueue *q = &s->queue[qid];
    uint64_t desc = gmem_desc_addr(q);
    uint8_t st[4];

    trace_gmem_accel_cmd_done(qid, q->head, gmem_op_name(q->cmd.opcode),
                              status);
    stl_le_p(st, status);
    if (!gmem_sys_rw(s, desc + offsetof(struct gmem_cmd_desc, status), st,
                     sizeof(st), true)) {
        gmem_accel_set_error(s, GMEM_ERR_DMA, qid, desc,
                             "queue %u: cannot write the status of the "
                             "descriptor at 0x%" PRIx64, qid, desc);
        gmem_queue_break(s, qid);
        return;
    }
    q->busy = false;
    q->nfaults = 0;
    q->group_posted = false;
    q->head = (q->head + 1) & gmem_ring_mask(q->entries_log2);
    q->completed++;
    s->counters[GMEM_CNT_COMMANDS]++;
    q->state = q->head == q->tail ? GMEM_CQ_STATE_IDLE
                                  : GMEM_CQ_STATE_RUNNING;
    if (q->cmd.flags & GMEM_CMD_F_NOTIFY) {
        gmem_notify(s, GMEM_VEC_QUEUE(qid));
    }
}

/* Fetch and check the descriptor at HEAD; false if it already completed. */
bool gmem_queue_fetch(GmemAccelState *s, unsigned qid)
{
    GmemQueue *q = &s->queue[qid];
    uint64_t desc = gmem_desc_addr(q);
    uint32_t st;

    if (!gmem_sys_rw(s, desc, q->raw, GMEM_CMD_SIZE, false)) {
        gmem_accel_set_error(s, GMEM_ERR_DMA, qid, desc,
                             "queue %u: cannot read the descriptor at 0x%"
                             PRIx64, qid, desc);
        gmem_queue_break(s, qid);
        return false;
    }
    gmem_cmd_decode(q->raw, &q->cmd);
    q->busy = true;
    q->progress = 0;
    q->nfaults = 0;
    q->group_posted = false;
    trace_gmem_accel_cmd_start(qid, q->head, gmem_op_name(q->cmd.opcode),
                               q->cmd.ctx, q->cmd.dst, q->cmd.src,
                               q->cmd.size);
    st = gmem_cmd_validate(&q->cmd, s->hbm_size);
    if (st != GMEM_CMD_ST_OK) {
        gmem_accel_set_error(s, GMEM_ERR_BAD_COMMAND, qid << 16 | st, desc,
                             "queue %u: malformed %s command (opcode %u) at "
                             "0x%" PRIx64 ", status %u", qid,
                             gmem_op_name(q->cmd.opcode), q->cmd.opcode,
                             desc, st);
        gmem_queue_complete(s, qid, st);
        return false;
    }
    return true;
}


void gmem_queue_enable(GmemAccelState *s, unsigned qid, hwaddr addr,
                              uint64_t val)
{
    GmemQueue *q = &s->queue[qid];

    if (val & ~GMEM_CQ_CTRL_ENABLE) {
        gmem_bad_value(s, addr, val, "unknown CTRL bits");
        return;
    }
    if (val == q->ctrl) {
        return;
    }
    if (val && (q->base % GMEM_CMD_SIZE || q->entries_log2 < 1 ||
                q->entries_log2 > GMEM_RING_MAX_LOG2)) {
        gmem_bad_value(s, addr, val, "enable needs BASE aligned to 64 bytes "
                       "and ENTRIES_LOG2 in 1..16");
        return;
    }
    /*
     * Both ways the ring starts empty: the command in progress is dropped,
     * and a hung engine (injected) is reset with it.
     */
    if (gmem_mover_holds(s, qid)) {
        gmem_mover_finish(s);   /* its copies were under way: they end */
    }
    s->inject_hang &= ~BIT_ULL(qid);
    s->cq_fault_hold &= ~BIT_ULL(qid);
    *q = (GmemQueue) {
        .base = q->base,
        .entries_log2 = q->entries_log2,
        .ctrl = val,
    };
    q->state = val ? GMEM_CQ_STATE_IDLE : GMEM_CQ_STATE_DISABLED;
    trace_gmem_accel_queue_state(qid, q->state);
}
