/*
 * gmem-accel: the DMA engines, one per command queue. A doorbell or a fault
 * response starts its queue at once on the vCPU thread that wrote it, up to
 * a budget of work; what is left runs in a bottom half on the main loop, a
 * budget per queue per run, so a long command never holds a vCPU.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "system/runstate.h"
#include "gmem-accel.h"
#include "trace.h"

/* Work a queue may do per bottom-half run before the others get theirs. */
#define GMEM_ENGINE_BUDGET      (1 * MiB)
/*
 * A queue with work left after its turn runs again after a pause of a
 * quarter of the turn's time (at least GMEM_ENGINE_MIN_PAUSE_NS) rather than
 * at once: bottom halves back to back hold the BQL all but a few
 * microseconds, and a vCPU that needs it to take an interrupt or reach a
 * device would wait for the whole batch, the guest's timers with it. The
 * engine keeps four fifths of the main loop.
 */
#define GMEM_ENGINE_SHARE       4
#define GMEM_ENGINE_MIN_PAUSE_NS (20 * SCALE_US)
/* Work a doorbell or fault response does on the vCPU thread that wrote it. */
#define GMEM_INLINE_BUDGET      (256 * KiB)
#define GMEM_ELEMENT_COST       64      /* budget bytes per compute element */
/*
 * What every command costs, whatever it does (a NOP, a TLB_INV, a malformed
 * descriptor): a ring full of them is work too, and one doorbell must not
 * run a whole 64 Ki-entry ring on the vCPU thread.
 */
#define GMEM_COMMAND_COST       256
/*
 * A step the mover copies costs its bytes over this: under the BQL it is only
 * translated and mapped, so a bottom-half run fills a batch of up to 16 MiB.
 */
#define GMEM_MOVER_SHARE        16
/*
 * A COPY with less than this left copies in the engine: for the short
 * commands of a migration (a page or a run of pages each) a batch's two
 * thread hand-offs cost more than the copy.
 */
#define GMEM_MOVER_MIN_LEFT     (4 * MiB)
/* And a TLB_INV, which scans the whole TLB, per entry */
#define GMEM_TLB_SCAN_COST      1

/*
 * Engines running now, of any gmem-accel device (all under the BQL). A
 * doorbell or fault response written by an engine (device A's MSI-X aimed
 * at device B's registers) does not run B inline within A's work, where
 * engines could nest without bound behind one vCPU write: B's bottom half
 * runs it.
 */
static unsigned gmem_engines_running;

/* A step's budget: its bytes, or GMEM_ELEMENT_COST per element computed. */
static uint64_t gmem_step_cost(const GmemCmd *c, uint64_t progress,
                               const GmemStep *step)
{
    if (GMEM_OP_USES(c->opcode) & GMEM_USE_ELEMENTS) {
        return (step->next - progress) * GMEM_ELEMENT_COST;
    }
    return MAX(step->op[1].len, GMEM_ELEMENT_COST);
}

/*
 * Translate the step's operands. Returns GMEM_CMD_ST_OK, GMEM_CMD_ST_FAULT
 * (faults recorded in q->faults) or the status the command fails with.
 */
static uint32_t gmem_step_translate(GmemAccelState *s, unsigned qid,
                                    const GmemStep *step, GmemTarget *tgt)
{
    GmemQueue *q = &s->queue[qid];
    uint16_t ctx = q->cmd.ctx;
    bool faulted = false;

    for (unsigned i = 0; i < 2; i++) {
        const GmemOperand *op = &step->op[i];
        GmemTranslation t;
        GmemWalkStatus st;

        if (!op->len) {
            continue;
        }
        if (op->kind != GMEM_ADDR_VA) {
            tgt[i].hbm = op->kind == GMEM_ADDR_HBM;
            tgt[i].addr = op->addr;
            continue;
        }
        if (!(s->ctx[ctx].ctrl & GMEM_CTX_CTRL_ENABLE)) {
            gmem_accel_set_error(s, GMEM_ERR_BAD_CONTEXT, ctx, op->addr,
                                 "queue %u: context %u is not enabled", qid,
                                 ctx);
            return GMEM_CMD_ST_BAD_CONTEXT;
        }
        st = gmem_translate(s, ctx, op->addr, op->access, &t);
        switch (st) {
        case GMEM_WALK_OK:
            tgt[i].hbm = t.target_hbm;
            tgt[i].addr = t.target + (op->addr - t.va_base);
            break;
        case GMEM_WALK_NOT_PRESENT:
        case GMEM_WALK_PERMISSION:
            gmem_fault_add(q, gmem_group_cap(s), op->addr, op->access, st,
                           t.pte);
            faulted = true;
            break;
        default:
            return gmem_pt_error(s, ctx, op->addr, st, &t);
        }
    }
    return faulted ? GMEM_CMD_ST_FAULT : GMEM_CMD_ST_OK;
}

/*
 * COPY between RAM (HBM or system) with one memmove from host pointer to host
 * pointer; false, with nothing done, if either side is not RAM.
 */
static bool gmem_copy_direct(GmemAccelState *s, const GmemTarget *tgt,
                             uint64_t len)
{
    uint8_t *p[2];

    if (!gmem_copy_map(s, tgt, len, p)) {
        return false;
    }
    memmove(p[1], p[0], len);
    gmem_copy_unmap(s, tgt, len, p, true);
    return true;
}

/* FILL's byte @i of the step at @progress: @value repeated, little-endian. */
static void gmem_fill_pattern(uint8_t *buf, uint64_t len, uint64_t progress,
                              uint64_t value)
{
    uint64_t splat = (value & 0xff) * 0x0101010101010101ull;

    if (value == splat) {
        memset(buf, value & 0xff, len);
        return;
    }
    for (uint64_t i = 0; i < len; i++) {
        buf[i] = value >> (8 * ((progress + i) & 7));
    }
}

/* Translate the step's operands if all of them can be, with no side effect. */
static bool gmem_step_translates(GmemAccelState *s, uint16_t ctx,
                                 const GmemStep *step, GmemTarget *tgt)
{
    for (unsigned i = 0; i < 2; i++) {
        const GmemOperand *op = &step->op[i];
        GmemTranslation t;

        if (!op->len) {
            continue;
        }
        if (op->kind != GMEM_ADDR_VA) {
            tgt[i] = (GmemTarget) { op->kind == GMEM_ADDR_HBM, op->addr };
            continue;
        }
        if (gmem_translate(s, ctx, op->addr, op->access, &t) != GMEM_WALK_OK) {
            return false;
        }
        tgt[i] = (GmemTarget) { t.target_hbm,
                                t.target + (op->addr - t.va_base) };
    }
    return true;
}

/*
 * Grow a translated COPY or FILL step over the steps after it while each
 * operand goes on contiguously in the same memory, up to GMEM_STEP_MAX_BYTES:
 * pages the driver allocates in a row (HBM chunks, split THPs) then move with
 * one memmove, one mapping and one dirty update instead of one per page.
 * Called between gmem_pte_lines_begin() and end(), as the step's translation
 * was: the walks of its pages read their entries a line at a time.
 */
static void gmem_step_merge(GmemAccelState *s, const GmemCmd *c,
                            GmemStep *step, const GmemTarget *tgt)
{
    uint64_t len = gmem_cmd_length(c);

    if (c->opcode != GMEM_OP_COPY && c->opcode != GMEM_OP_FILL) {
        return;
    }
    while (step->next < len) {
        GmemStep n;
        GmemTarget nt[2];
        bool contiguous = true;

        gmem_cmd_step(c, step->next, &n);
        if (step->op[1].len + n.op[1].len > GMEM_STEP_MAX_BYTES ||
            !gmem_step_translates(s, c->ctx, &n, nt)) {
            break;
        }
        for (unsigned i = 0; i < 2; i++) {
            contiguous &= !n.op[i].len ||
                          (nt[i].hbm == tgt[i].hbm &&
                           nt[i].addr == tgt[i].addr + step->op[i].len);
        }
        if (!contiguous) {
            break;
        }
        for (unsigned i = 0; i < 2; i++) {
            step->op[i].len += n.op[i].len;
        }
        step->next = n.next;
    }
}

/* Do the step's work on translated targets; false on a DMA error. */
static bool gmem_step_exec(GmemAccelState *s, GmemQueue *q,
                           uint64_t progress, const GmemStep *step,
                           const GmemTarget *tgt)
{
    const GmemCmd *c = &q->cmd;
    const GmemOperand *src = &step->op[0], *dst = &step->op[1];
    unsigned width = c->flags & GMEM_CMD_F_WIDE ? 8 : 4;
    uint8_t *buf = s->bounce;   /* steps are at most GMEM_STEP_MAX_BYTES */
    uint8_t elem[8];
    uint64_t v;

    switch (c->opcode) {
    case GMEM_OP_COPY:
        if (!gmem_copy_direct(s, tgt, dst->len) &&
            (!gmem_mem_rw(s, tgt[0].hbm, tgt[0].addr, buf, src->len, false) ||
             !gmem_mem_rw(s, tgt[1].hbm, tgt[1].addr, buf, dst->len, true))) {
            return false;
        }
        s->counters[GMEM_CNT_BYTES] += dst->len;
        return true;
    case GMEM_OP_FILL: {
        void *p = gmem_mem_map(s, tgt[1].hbm, tgt[1].addr, dst->len, true);

        if (p) {
            gmem_fill_pattern(p, dst->len, progress, c->value);
            gmem_mem_unmap(s, tgt[1].hbm, tgt[1].addr, p, dst->len, true,
                           true);
        } else {
            gmem_fill_pattern(buf, dst->len, progress, c->value);
            if (!gmem_mem_rw(s, tgt[1].hbm, tgt[1].addr, buf, dst->len,
                             true)) {
                return false;
            }
        }
        s->counters[GMEM_CNT_BYTES] += dst->len;
        return true;
    }
    case GMEM_OP_FENCE:
        stq_le_p(elem, c->value);
        return gmem_mem_rw(s, tgt[1].hbm, tgt[1].addr, elem, 8, true);
    case GMEM_OP_ATOMIC_ADD:
        return gmem_mem_atomic_add(s, tgt[1].hbm, tgt[1].addr, dst->len,
                                   width, c->value);
    case GMEM_OP_SCALE_ADD:
    case GMEM_OP_AXPY:
        for (uint64_t i = 0; i < dst->len; i += width) {
            if (!gmem_mem_rw(s, tgt[0].hbm, tgt[0].addr + i, elem, width,
                             false)) {
                return false;
            }
            v = gmem_load_elem(elem, width) * c->value + c->value2;
            /* AXPY's addend is dst's element (value2 is 0: GMEM_USES_AXPY) */
            if (c->opcode == GMEM_OP_AXPY) {
                if (!gmem_mem_rw(s, tgt[1].hbm, tgt[1].addr + i, elem, width,
                                 false)) {
                    return false;
                }
                v += gmem_load_elem(elem, width);
            }
            gmem_store_elem(elem, width, v);
            if (!gmem_mem_rw(s, tgt[1].hbm, tgt[1].addr + i, elem, width,
                             true)) {
                return false;
            }
        }
        return true;
    default:
        return true;
    }
}

/*
 * The access counters see a step the engine did (or handed to the mover):
 * each VA operand's pages, in the aperture they were translated to.
 */
static void gmem_step_count(GmemAccelState *s, const GmemCmd *c,
                            const GmemStep *step, const GmemTarget *tgt)
{
    for (unsigned i = 0; i < 2; i++) {
        if (step->op[i].len && step->op[i].kind == GMEM_ADDR_VA) {
            gmem_ac_count(s, c->ctx, step->op[i].addr, step->op[i].len,
                          tgt[i].hbm);
        }
    }
}

/* Does queue @qid's engine fail its next data access? (injected; once) */
static bool gmem_injected_dma_error(GmemAccelState *s, unsigned qid)
{
    if (!(s->inject_dma_error & BIT_ULL(qid))) {
        return false;
    }
    s->inject_dma_error &= ~BIT_ULL(qid);
    return true;
}

/*
 * Has queue @qid's engine stopped (an injected hang)? It takes no step until
 * its queue is disabled or the device reset, and does not keep the bottom
 * half turning meanwhile.
 */
static bool gmem_engine_hung(GmemAccelState *s, unsigned qid)
{
    return s->inject_hang & BIT_ULL(qid);
}

/* The first poisoned HBM page @step touches (injected), or -1. */
static int64_t gmem_step_poisoned(GmemAccelState *s, const GmemStep *step,
                                  const GmemTarget *tgt)
{
    for (unsigned i = 0; i < 2; i++) {
        for (unsigned p = 0; tgt[i].hbm && step->op[i].len && p < s->npoison;
             p++) {
            if (s->poison[p] < tgt[i].addr + step->op[i].len &&
                s->poison[p] + GMEM_PAGE_SIZE > tgt[i].addr) {
                return s->poison[p];
            }
        }
    }
    return -1;
}

/*
 * With a batch of queue @qid's copies building (the mover's), take @step into
 * it if it can go there with no side effect: translated, merged, no poisoned
 * page, no injected error pending, RAM on both sides. Anything else waits
 * until the batch has moved and is then run as usual. Returns whether taken.
 */
static bool gmem_step_to_mover(GmemAccelState *s, unsigned qid,
                               GmemStep *step, GmemTarget *tgt)
{
    GmemQueue *q = &s->queue[qid];
    bool ok;

    if (q->cmd.opcode != GMEM_OP_COPY) {
        return false;
    }
    gmem_pte_lines_begin(s);
    ok = gmem_step_translates(s, q->cmd.ctx, step, tgt);
    if (ok) {
        gmem_step_merge(s, &q->cmd, step, tgt);
    }
    gmem_pte_lines_end(s);
    return ok && gmem_step_poisoned(s, step, tgt) < 0 &&
           !(s->inject_dma_error & BIT_ULL(qid)) &&
           gmem_mover_add(s, qid, tgt, step->op[1].len);
}

/*
 * Run the command at HEAD until it completes, stalls or uses @budget. With
 * @offload (the bottom half), a COPY's steps go to the mover in a batch
 * (gmem-accel-mover.c), and the command goes on when the batch has moved.
 */
static void gmem_cmd_run(GmemAccelState *s, unsigned qid, uint64_t *budget,
                         bool offload)
{
    GmemQueue *q = &s->queue[qid];
    uint64_t len = gmem_cmd_length(&q->cmd);

    if (q->cmd.opcode == GMEM_OP_TLB_INV) {
        gmem_invalidate(s, q->cmd.ctx, q->cmd.dst, q->cmd.size);
        *budget -= MIN(*budget, ((uint64_t)s->tlb.size + s->tlb.walk_size) *
                                GMEM_TLB_SCAN_COST);
        gmem_queue_complete(s, qid, GMEM_CMD_ST_OK);
        return;
    }
    while (q->progress < len) {
        GmemStep step;
        GmemTarget tgt[2];
        int64_t poisoned = -1;
        uint32_t st;

        if (!*budget) {
            break;
        }
        gmem_cmd_step(&q->cmd, q->progress, &step);
        if (gmem_mover_holds(s, qid)) {
            if (!gmem_step_to_mover(s, qid, &step, tgt)) {
                break;
            }
            gmem_step_count(s, &q->cmd, &step, tgt);
            *budget -= MIN(*budget, MAX(step.op[1].len / GMEM_MOVER_SHARE,
                                        GMEM_ELEMENT_COST));
            q->progress = step.next;
            q->steps++;
            continue;
        }
        gmem_pte_lines_begin(s);
        st = gmem_step_translate(s, qid, &step, tgt);
        if (st == GMEM_CMD_ST_OK) {
            gmem_step_merge(s, &q->cmd, &step, tgt);
        }
        gmem_pte_lines_end(s);
        if (st == GMEM_CMD_ST_FAULT) {
            gmem_queue_stall(s, qid);
            return;
        }
        if (st == GMEM_CMD_ST_OK) {
            poisoned = gmem_step_poisoned(s, &step, tgt);
        }
        if (poisoned >= 0) {
            gmem_accel_set_error(s, GMEM_ERR_POISON, qid, poisoned,
                                 "queue %u: %s command: HBM page 0x%" PRIx64
                                 " is poisoned", qid,
                                 gmem_op_name(q->cmd.opcode), poisoned);
            st = GMEM_CMD_ST_POISON;
        } else if (st == GMEM_CMD_ST_OK && gmem_injected_dma_error(s, qid)) {
            st = GMEM_CMD_ST_BAD_ADDRESS;
        } else if (st == GMEM_CMD_ST_OK && offload &&
                   q->cmd.opcode == GMEM_OP_COPY &&
                   len - q->progress >= GMEM_MOVER_MIN_LEFT &&
                   gmem_mover_add(s, qid, tgt, step.op[1].len)) {
            /* the first of a batch */
        } else if (st == GMEM_CMD_ST_OK &&
                   !gmem_step_exec(s, q, q->progress, &step, tgt)) {
            st = GMEM_CMD_ST_BAD_ADDRESS;
        }
        if (st == GMEM_CMD_ST_BAD_ADDRESS) {
            gmem_accel_set_error(s, GMEM_ERR_DMA, qid, tgt[1].addr,
                                 "queue %u: %s command: memory access failed: "
                                 "not RAM, or not reachable (HBM offset or "
                                 "bus address 0x%" PRIx64 " or 0x%" PRIx64
                                 ")", qid, gmem_op_name(q->cmd.opcode),
                                 tgt[0].addr, tgt[1].addr);
        }
        if (st != GMEM_CMD_ST_OK) {
            gmem_queue_complete(s, qid, st);
            return;
        }
        gmem_step_count(s, &q->cmd, &step, tgt);
        *budget -= MIN(*budget, gmem_step_cost(&q->cmd, q->progress, &step));
        q->progress = step.next;
        q->steps++;
    }
    if (gmem_mover_holds(s, qid)) {
        gmem_mover_start(s);    /* the command completes after its copies */
    } else if (q->progress >= len) {
        gmem_queue_complete(s, qid, GMEM_CMD_ST_OK);
    }
}

/*
 * Run queue @qid within @budget, @offload as gmem_cmd_run(); returns how many
 * commands it started. A queue whose copies the mover has waits for them.
 */
static unsigned gmem_queue_run(GmemAccelState *s, unsigned qid,
                               uint64_t budget, bool offload)
{
    GmemQueue *q = &s->queue[qid];
    unsigned started = 0;

    if (gmem_engine_hung(s, qid)) {
        return 0;
    }
    while (budget && q->state == GMEM_CQ_STATE_RUNNING &&
           !gmem_mover_holds(s, qid)) {
        if (!q->busy) {
            if (q->head == q->tail) {
                q->state = GMEM_CQ_STATE_IDLE;
                break;
            }
            budget -= MIN(budget, GMEM_COMMAND_COST);
            started++;
            if (!gmem_queue_fetch(s, qid)) {
                continue;
            }
        }
        gmem_cmd_run(s, qid, &budget, offload);
    }
    return started;
}

static void gmem_engine_bh(void *opaque)
{
    GmemAccelState *s = opaque;
    int64_t start = qemu_clock_get_ns(QEMU_CLOCK_REALTIME), used;
    bool more = false;

    /*
     * A stopped VM's devices leave its memory alone (a migration or savevm
     * is copying it); the engines go on when it runs again.
     */
    if (!runstate_is_running()) {
        return;
    }
    gmem_engines_running++;
    for (unsigned qid = 0; qid < GMEM_NUM_QUEUES; qid++) {
        gmem_queue_run(s, qid, GMEM_ENGINE_BUDGET, true);
        /* the mover's end runs the bottom half again */
        more |= s->queue[qid].state == GMEM_CQ_STATE_RUNNING &&
                !gmem_engine_hung(s, qid) && !gmem_mover_holds(s, qid);
    }
    gmem_engines_running--;
    if (more) {
        used = qemu_clock_get_ns(QEMU_CLOCK_REALTIME) - start;
        timer_mod_ns(s->engine_pause, start + used +
                     MAX(used / GMEM_ENGINE_SHARE, GMEM_ENGINE_MIN_PAUSE_NS));
        s->engine_pauses++;
    }
}

static void gmem_engine_pause_end(void *opaque)
{
    GmemAccelState *s = opaque;

    qemu_bh_schedule(s->engine_bh);
}

/*
 * Run queue @qid now, on the thread that wrote the doorbell or the fault
 * response, and leave what is left to the bottom half: handing a command to
 * the main loop costs a thread wake-up each way, more than a short command's
 * own work, so a short command completes (or posts its fault) before the
 * MMIO write returns.
 */
void gmem_engine_kick(GmemAccelState *s, unsigned qid)
{
    if (gmem_engines_running) {
        s->kicks_deferred++;
    } else if (runstate_is_running()) {
        unsigned n;

        gmem_engines_running++;
        n = gmem_queue_run(s, qid, GMEM_INLINE_BUDGET, false);
        gmem_engines_running--;
        s->inline_max_commands = MAX(s->inline_max_commands, n);
    }
    if (s->queue[qid].state == GMEM_CQ_STATE_RUNNING &&
        !gmem_engine_hung(s, qid) && !gmem_mover_holds(s, qid) &&
        !timer_pending(s->engine_pause)) {
        qemu_bh_schedule(s->engine_bh);
    }
}

void gmem_engine_reset(GmemAccelState *s)
{
    gmem_mover_finish(s);
    qemu_bh_cancel(s->engine_bh);
    timer_del(s->engine_pause);
    memset(s->ctx, 0, sizeof(s->ctx));
    memset(s->queue, 0, sizeof(s->queue));
    gmem_tlb_invalidate(&s->tlb, GMEM_INV_ALL_CONTEXTS, 0, 0);
    s->fq_base = 0;
    s->fq_entries_log2 = 0;
    s->fq_ctrl = 0;
    s->fq_head = s->fq_tail = 0;
    s->fq_irq_hold = false;
    s->cq_fault_hold = 0;
    s->fq_overflow = false;
    s->fault_seq = 0;
    s->next_group = 0;
    s->inv_va = s->inv_size = 0;
    s->inv_ctx = 0;
    s->inv_done = 0;
    s->inject_dma_error = 0;
    s->inject_hang = 0;
    s->inject_inv_stuck = false;
    s->inject_fq_full = false;
    s->npoison = 0;
    memset(s->counters, 0, sizeof(s->counters));
    s->walk_cache_hits = 0;
    s->pte_reads = 0;
}

static void gmem_engine_vm_state(void *opaque, bool running,
                                 RunState state)
{
    GmemAccelState *s = opaque;

    if (running) {
        qemu_bh_schedule(s->engine_bh);
    } else {
        gmem_mover_finish(s);   /* a stopped VM's memory stays as it is */
    }
}

void gmem_engine_realize(GmemAccelState *s)
{
    s->hbm_ptr = memory_region_get_ram_ptr(&s->hbm);
    s->engine_bh = qemu_bh_new_guarded(gmem_engine_bh, s,
                                       &DEVICE(s)->mem_reentrancy_guard);
    s->engine_pause = timer_new_ns(QEMU_CLOCK_REALTIME, gmem_engine_pause_end,
                                   s);
    gmem_tlb_init(&s->tlb, s->tlb_entries, s->walk_cache_entries);
    s->bounce = g_malloc(GMEM_STEP_MAX_BYTES);
    s->vm_state = qemu_add_vm_change_state_handler(gmem_engine_vm_state, s);
    gmem_mover_realize(s);
}

void gmem_engine_unrealize(GmemAccelState *s)
{
    qemu_del_vm_change_state_handler(s->vm_state);
    gmem_mover_unrealize(s);
    qemu_bh_delete(s->engine_bh);
    timer_free(s->engine_pause);
    gmem_tlb_free(&s->tlb);
    g_free(s->bounce);
}


void gmem_engine_post_load(GmemAccelState *s)
{
    gmem_tlb_invalidate(&s->tlb, GMEM_INV_ALL_CONTEXTS, 0, 0);
    for (unsigned qid = 0; qid < GMEM_NUM_QUEUES; qid++) {
        gmem_cmd_decode(s->queue[qid].raw, &s->queue[qid].cmd);
    }
    qemu_bh_schedule(s->engine_bh);
}
