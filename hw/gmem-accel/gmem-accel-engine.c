/*
 * gmem-accel: DMA engines, device MMU and replayable faults.
 *
 * Each command queue is an engine. A doorbell or a fault response starts its
 * queue at once on the vCPU thread that wrote it, up to a budget of work;
 * what is left runs in a bottom half on the main loop, a budget per queue
 * per run, so a long command never holds a vCPU. A command that misses a
 * translation stalls only its own queue: the faulting pages (plus the next
 * few the command will touch) go to the fault queue as one group, and the
 * queue waits for the driver's REPLAY or CANCEL for that group.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/bswap.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/rcu.h"
#include "qemu/units.h"
#include "hw/pci/msix.h"
#include "migration/vmstate.h"
#include "system/dma.h"
#include "system/runstate.h"
#include "gmem-accel.h"
#include "trace.h"

/* Work a queue may do per bottom-half run before the others get theirs. */
#define GMEM_ENGINE_BUDGET      (1 * MiB)
/* Work a doorbell or fault response does on the vCPU thread that wrote it. */
#define GMEM_INLINE_BUDGET      (256 * KiB)
#define GMEM_ELEMENT_COST       64      /* budget bytes per compute element */
/* Steps a faulting command looks ahead for more faults to coalesce. */
#define GMEM_FAULT_LOOKAHEAD    1024

static void gmem_notify(GmemAccelState *s, unsigned vector)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    if (msix_enabled(pdev)) {
        msix_notify(pdev, vector);
    }
}

static uint32_t gmem_ring_mask(uint32_t log2)
{
    return (1u << log2) - 1;
}

/* ---- memory: HBM through its host pointer, system memory through DMA ---- */

static bool gmem_hbm_range(GmemAccelState *s, uint64_t addr, uint64_t len)
{
    return addr < s->hbm_size && len <= s->hbm_size - addr;
}

bool gmem_read_pte(void *opaque, bool hbm, uint64_t addr, uint64_t *pte)
{
    GmemAccelState *s = opaque;
    MemTxResult res;

    if (hbm) {
        if (!gmem_hbm_range(s, addr, sizeof(*pte))) {
            return false;
        }
        *pte = ldq_le_p(s->hbm_ptr + addr);
        return true;
    }
    /*
     * Not ldq_le_pci_dma(): its dma_memory_rw() path made walks cost more
     * than the copies they serve.
     */
    *pte = address_space_ldq_le(pci_get_address_space(PCI_DEVICE(s)), addr,
                                MEMTXATTRS_UNSPECIFIED, &res);
    return res == MEMTX_OK;
}

static bool gmem_mem_rw(GmemAccelState *s, bool hbm, uint64_t addr,
                        void *buf, uint64_t len, bool write)
{
    if (hbm) {
        if (!gmem_hbm_range(s, addr, len)) {
            return false;
        }
        if (write) {
            memcpy(s->hbm_ptr + addr, buf, len);
            memory_region_set_dirty(&s->hbm, addr, len);
        } else {
            memcpy(buf, s->hbm_ptr + addr, len);
        }
        return true;
    }
    return pci_dma_rw(PCI_DEVICE(s), addr, buf, len,
                      write ? DMA_DIRECTION_FROM_DEVICE
                            : DMA_DIRECTION_TO_DEVICE,
                      MEMTXATTRS_UNSPECIFIED) == MEMTX_OK;
}

/*
 * A host pointer to @len bytes of system memory at bus address @addr, mapped
 * with pci_dma_map(), if all of them are RAM the device may access directly;
 * NULL for anything else (MMIO, holes, ROM for writes, bus mastering off),
 * which then goes through pci_dma_rw() and its error reporting.
 */
static void *gmem_sys_map(GmemAccelState *s, uint64_t addr, uint64_t len,
                          bool write)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    DMADirection dir = write ? DMA_DIRECTION_FROM_DEVICE
                             : DMA_DIRECTION_TO_DEVICE;
    hwaddr xlat, l = len;
    bool direct;
    void *p;

    WITH_RCU_READ_LOCK_GUARD() {
        MemoryRegion *mr = address_space_translate(
            pci_get_address_space(pdev), addr, &xlat, &l, write,
            MEMTXATTRS_UNSPECIFIED);

        direct = l == len &&
                 memory_access_is_direct(mr, write, MEMTXATTRS_UNSPECIFIED);
    }
    if (!direct) {
        return NULL;
    }
    l = len;
    p = pci_dma_map(pdev, addr, &l, dir);
    if (p && l < len) {
        pci_dma_unmap(pdev, p, l, dir, 0);
        return NULL;
    }
    return p;
}

/* A host pointer to @len bytes of HBM or system RAM, or NULL (see above). */
static void *gmem_mem_map(GmemAccelState *s, bool hbm, uint64_t addr,
                          uint64_t len, bool write)
{
    if (hbm) {
        return gmem_hbm_range(s, addr, len) ? s->hbm_ptr + addr : NULL;
    }
    return gmem_sys_map(s, addr, len, write);
}

/* Done with gmem_mem_map()'s @p: mark what was @written dirty. */
static void gmem_mem_unmap(GmemAccelState *s, bool hbm, uint64_t addr,
                           void *p, uint64_t len, bool write, bool written)
{
    if (hbm) {
        if (written) {
            memory_region_set_dirty(&s->hbm, addr, len);
        }
        return;
    }
    pci_dma_unmap(PCI_DEVICE(s), p, len,
                  write ? DMA_DIRECTION_FROM_DEVICE : DMA_DIRECTION_TO_DEVICE,
                  written ? len : 0);
}

static uint64_t gmem_load_elem(const void *p, unsigned width)
{
    return width == 8 ? ldq_le_p(p) : ldl_le_p(p);
}

static void gmem_store_elem(void *p, unsigned width, uint64_t v)
{
    if (width == 8) {
        stq_le_p(p, v);
    } else {
        stl_le_p(p, v);
    }
}

/* Add to a naturally aligned element, atomically against the guest CPUs. */
static void gmem_atomic_add_host(void *p, unsigned width, uint64_t add)
{
    if (width == 8) {
        uint64_t *p64 = p, old = qatomic_read(p64), seen;

        while ((seen = qatomic_cmpxchg(p64, old,
                    cpu_to_le64(le64_to_cpu(old) + add))) != old) {
            old = seen;
        }
    } else {
        uint32_t *p32 = p, old = qatomic_read(p32), seen;

        while ((seen = qatomic_cmpxchg(p32, old,
                    cpu_to_le32(le32_to_cpu(old) + (uint32_t)add))) != old) {
            old = seen;
        }
    }
}

static bool gmem_mem_atomic_add(GmemAccelState *s, bool hbm, uint64_t addr,
                                unsigned width, uint64_t add)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    dma_addr_t len = width;
    uint8_t buf[8];
    void *p;

    if (hbm) {
        if (!gmem_hbm_range(s, addr, width)) {
            return false;
        }
        gmem_atomic_add_host(s->hbm_ptr + addr, width, add);
        memory_region_set_dirty(&s->hbm, addr, width);
        return true;
    }
    p = dma_memory_map(as, addr, &len, DMA_DIRECTION_FROM_DEVICE,
                       MEMTXATTRS_UNSPECIFIED);
    if (p && len == width) {
        gmem_atomic_add_host(p, width, add);
        dma_memory_unmap(as, p, len, DMA_DIRECTION_FROM_DEVICE, len);
        return true;
    }
    if (p) {
        dma_memory_unmap(as, p, len, DMA_DIRECTION_FROM_DEVICE, 0);
    }
    /* Not RAM (e.g. another device's BAR): a plain read-modify-write. */
    if (!gmem_mem_rw(s, false, addr, buf, width, false)) {
        return false;
    }
    gmem_store_elem(buf, width, gmem_load_elem(buf, width) + add);
    return gmem_mem_rw(s, false, addr, buf, width, true);
}

/* ---- MMU ---- */

GmemWalkStatus gmem_translate(GmemAccelState *s, uint16_t ctx, uint64_t va,
                              unsigned access, GmemTranslation *t)
{
    const GmemTlbEntry *e = gmem_tlb_lookup(&s->tlb, ctx, va);
    GmemContext *c = &s->ctx[ctx];
    GmemWalkStatus st;

    if (e) {
        s->counters[GMEM_CNT_TLB_HITS]++;
        *t = e->t;
        return gmem_pt_check(t, access);
    }
    s->counters[GMEM_CNT_TLB_MISSES]++;
    s->counters[GMEM_CNT_WALKS]++;
    st = gmem_pt_walk(gmem_read_pte, s, c->root,
                      c->ctrl & GMEM_CTX_CTRL_ROOT_HBM, s->hbm_size, va, t);
    trace_gmem_accel_walk(ctx, va, gmem_walk_status_name(st), t->level,
                          t->pte);
    if (st == GMEM_WALK_OK) {
        gmem_tlb_insert(&s->tlb, ctx, t);
        st = gmem_pt_check(t, access);
    }
    return st;
}

static void gmem_invalidate(GmemAccelState *s, uint16_t ctx, uint64_t va,
                            uint64_t size)
{
    unsigned n = gmem_tlb_invalidate(&s->tlb, ctx, va, size);

    trace_gmem_accel_tlb_invalidate(ctx, va, size, n);
}

/* ---- queues ---- */

static uint64_t gmem_desc_addr(GmemQueue *q)
{
    return q->base + (uint64_t)q->head * GMEM_CMD_SIZE;
}

static void gmem_queue_break(GmemAccelState *s, unsigned qid)
{
    s->queue[qid].state = GMEM_CQ_STATE_BROKEN;
    s->queue[qid].busy = false;
    trace_gmem_accel_queue_state(qid, GMEM_CQ_STATE_BROKEN);
}

/* Write the status of the command at HEAD back and move past it. */
static void gmem_queue_complete(GmemAccelState *s, unsigned qid,
                                uint32_t status)
{
    GmemQueue *q = &s->queue[qid];
    uint64_t desc = gmem_desc_addr(q);

    trace_gmem_accel_cmd_done(qid, q->head, gmem_op_name(q->cmd.opcode),
                              status);
    if (stl_le_pci_dma(PCI_DEVICE(s), desc + GMEM_CMD_OFF_STATUS, status,
                       MEMTXATTRS_UNSPECIFIED) != MEMTX_OK) {
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
static bool gmem_queue_fetch(GmemAccelState *s, unsigned qid)
{
    GmemQueue *q = &s->queue[qid];
    uint64_t desc = gmem_desc_addr(q);
    uint32_t st;

    if (pci_dma_read(PCI_DEVICE(s), desc, q->raw, GMEM_CMD_SIZE) !=
        MEMTX_OK) {
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

/* ---- faults ---- */

static void gmem_fault_add(GmemQueue *q, unsigned cap, uint64_t va,
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
static unsigned gmem_group_cap(GmemAccelState *s)
{
    return MIN(GMEM_FAULT_GROUP_MAX, gmem_ring_mask(s->fq_entries_log2));
}

/* Write @qid's group to the fault queue if it fits; true once posted. */
static bool gmem_fault_post(GmemAccelState *s, unsigned qid)
{
    GmemQueue *q = &s->queue[qid];
    uint32_t mask = gmem_ring_mask(s->fq_entries_log2);
    uint32_t room = (s->fq_head - s->fq_tail - 1) & mask;

    if (room < q->nfaults) {
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
        uint8_t rec[GMEM_FAULT_RECORD_SIZE] = { 0 };
        uint64_t addr = s->fq_base + (uint64_t)s->fq_tail *
                        GMEM_FAULT_RECORD_SIZE;

        stq_le_p(rec + GMEM_FAULT_OFF_VA, q->faults[i].va);
        stw_le_p(rec + GMEM_FAULT_OFF_CTX, q->cmd.ctx);
        stw_le_p(rec + GMEM_FAULT_OFF_GROUP, q->group);
        rec[GMEM_FAULT_OFF_ACCESS] = q->faults[i].access;
        rec[GMEM_FAULT_OFF_REASON] = q->faults[i].reason;
        rec[GMEM_FAULT_OFF_ENGINE] = qid;
        rec[GMEM_FAULT_OFF_FLAGS] = i + 1 == q->nfaults ? GMEM_FAULT_F_LAST
                                                        : 0;
        stq_le_p(rec + GMEM_FAULT_OFF_PTE, q->faults[i].pte);
        stl_le_p(rec + GMEM_FAULT_OFF_SEQ, s->fault_seq++);
        stw_le_p(rec + GMEM_FAULT_OFF_SLOT, q->head);
        if (pci_dma_write(PCI_DEVICE(s), addr, rec, sizeof(rec)) !=
            MEMTX_OK) {
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
    gmem_notify(s, GMEM_VEC_FAULT);
    return true;
}

/* Post the groups that waited for room, oldest queue first. */
static void gmem_fault_retry(GmemAccelState *s)
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
 * The step at q->progress faulted (its faults are in q->faults): look ahead
 * for the next pages this command will fault on, then stall the queue.
 */
static void gmem_queue_stall(GmemAccelState *s, unsigned qid)
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
    q->group = s->next_group++;
    q->state = GMEM_CQ_STATE_STALLED;
    trace_gmem_accel_queue_state(qid, GMEM_CQ_STATE_STALLED);
    gmem_fault_post(s, qid);    /* or later, when FQ_HEAD makes room */
}

/* ---- execution ---- */

typedef struct GmemTarget {
    bool hbm;
    uint64_t addr;
} GmemTarget;

/* Report a malformed page table met while translating @va. */
static uint32_t gmem_pt_error(GmemAccelState *s, uint16_t ctx, uint64_t va,
                              GmemWalkStatus st, const GmemTranslation *t)
{
    static const uint32_t codes[] = {
        [GMEM_WALK_RESERVED] = GMEM_ERR_PT_RESERVED,
        [GMEM_WALK_BAD_ADDRESS] = GMEM_ERR_PT_ADDRESS,
        [GMEM_WALK_LOOP] = GMEM_ERR_PT_LOOP,
    };

    gmem_accel_set_error(s, codes[st], ctx << 16 | t->level,
                         st == GMEM_WALK_BAD_ADDRESS && t->pte ? t->target
                                                               : t->pte_addr,
                         "context %u, VA 0x%" PRIx64 ": page table %s at "
                         "level %d (entry 0x%" PRIx64 " at %s 0x%" PRIx64 ")",
                         ctx, va, gmem_walk_status_name(st), t->level, t->pte,
                         t->pte_hbm ? "HBM" : "bus address", t->pte_addr);
    return GMEM_CMD_ST_PT_ERROR;
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
    void *src = gmem_mem_map(s, tgt[0].hbm, tgt[0].addr, len, false);
    void *dst = src ? gmem_mem_map(s, tgt[1].hbm, tgt[1].addr, len, true)
                    : NULL;

    if (dst) {
        memmove(dst, src, len);
        gmem_mem_unmap(s, tgt[1].hbm, tgt[1].addr, dst, len, true, true);
    }
    if (src) {
        gmem_mem_unmap(s, tgt[0].hbm, tgt[0].addr, src, len, false, false);
    }
    return dst;
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
            return;
        }
        for (unsigned i = 0; i < 2; i++) {
            contiguous &= !n.op[i].len ||
                          (nt[i].hbm == tgt[i].hbm &&
                           nt[i].addr == tgt[i].addr + step->op[i].len);
        }
        if (!contiguous) {
            return;
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
        return gmem_mem_atomic_add(s, tgt[1].hbm, tgt[1].addr, width,
                                   c->value);
    case GMEM_OP_SCALE_ADD:
        if (!gmem_mem_rw(s, tgt[0].hbm, tgt[0].addr, elem, width, false)) {
            return false;
        }
        v = gmem_load_elem(elem, width) * c->value + c->value2;
        gmem_store_elem(elem, width, v);
        return gmem_mem_rw(s, tgt[1].hbm, tgt[1].addr, elem, width, true);
    default:
        return true;
    }
}

/* Run the command at HEAD until it completes, stalls or uses @budget. */
static void gmem_cmd_run(GmemAccelState *s, unsigned qid, uint64_t *budget)
{
    GmemQueue *q = &s->queue[qid];
    uint64_t len = gmem_cmd_length(&q->cmd);

    if (q->cmd.opcode == GMEM_OP_TLB_INV) {
        gmem_invalidate(s, q->cmd.ctx, q->cmd.dst, q->cmd.size);
        gmem_queue_complete(s, qid, GMEM_CMD_ST_OK);
        return;
    }
    while (q->progress < len) {
        GmemStep step;
        GmemTarget tgt[2];
        uint32_t st;

        if (!*budget) {
            return;
        }
        gmem_cmd_step(&q->cmd, q->progress, &step);
        st = gmem_step_translate(s, qid, &step, tgt);
        if (st == GMEM_CMD_ST_FAULT) {
            gmem_queue_stall(s, qid);
            return;
        }
        if (st == GMEM_CMD_ST_OK) {
            gmem_step_merge(s, &q->cmd, &step, tgt);
        }
        if (st == GMEM_CMD_ST_OK &&
            !gmem_step_exec(s, q, q->progress, &step, tgt)) {
            gmem_accel_set_error(s, GMEM_ERR_DMA, qid, tgt[1].addr,
                                 "queue %u: %s command: memory access failed "
                                 "(HBM offset or bus address 0x%" PRIx64
                                 " or 0x%" PRIx64 ")", qid,
                                 gmem_op_name(q->cmd.opcode), tgt[0].addr,
                                 tgt[1].addr);
            st = GMEM_CMD_ST_BAD_ADDRESS;
        }
        if (st != GMEM_CMD_ST_OK) {
            gmem_queue_complete(s, qid, st);
            return;
        }
        *budget -= MIN(*budget, MAX(step.op[1].len, GMEM_ELEMENT_COST));
        q->progress = step.next;
    }
    gmem_queue_complete(s, qid, GMEM_CMD_ST_OK);
}

static void gmem_queue_run(GmemAccelState *s, unsigned qid, uint64_t budget)
{
    GmemQueue *q = &s->queue[qid];

    while (budget && q->state == GMEM_CQ_STATE_RUNNING) {
        if (!q->busy) {
            if (q->head == q->tail) {
                q->state = GMEM_CQ_STATE_IDLE;
                break;
            }
            if (!gmem_queue_fetch(s, qid)) {
                continue;
            }
        }
        gmem_cmd_run(s, qid, &budget);
    }
}

static void gmem_engine_bh(void *opaque)
{
    GmemAccelState *s = opaque;
    bool more = false;

    /*
     * A stopped VM's devices leave its memory alone (a migration or savevm
     * is copying it); the engines go on when it runs again.
     */
    if (!runstate_is_running()) {
        return;
    }
    for (unsigned qid = 0; qid < GMEM_NUM_QUEUES; qid++) {
        gmem_queue_run(s, qid, GMEM_ENGINE_BUDGET);
        more |= s->queue[qid].state == GMEM_CQ_STATE_RUNNING;
    }
    if (more) {
        qemu_bh_schedule(s->engine_bh);
    }
}

/*
 * Run queue @qid now, on the thread that wrote the doorbell or the fault
 * response, and leave what is left to the bottom half. Handing every command
 * to the main loop cost a thread wake-up each way (tens of microseconds
 * under TCG), which dominated a short command's latency.
 */
static void gmem_engine_kick(GmemAccelState *s, unsigned qid)
{
    if (runstate_is_running()) {
        gmem_queue_run(s, qid, GMEM_INLINE_BUDGET);
    }
    if (s->queue[qid].state == GMEM_CQ_STATE_RUNNING) {
        qemu_bh_schedule(s->engine_bh);
    }
}

static void gmem_fault_respond(GmemAccelState *s, uint32_t val)
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
        gmem_engine_kick(s, qid);
        return;
    }
    gmem_accel_set_error(s, GMEM_ERR_BAD_RESPONSE, val, 0,
                         "FAULT_RESPONSE 0x%x: no stalled group %u, or "
                         "code %u is neither REPLAY nor CANCEL", val, group,
                         code);
}

/* ---- registers ---- */

static void gmem_bad_value(GmemAccelState *s, hwaddr addr, uint64_t val,
                           const char *why)
{
    gmem_accel_set_error(s, GMEM_ERR_BAD_VALUE, addr, val,
                         "register 0x%" HWADDR_PRIx ": value 0x%" PRIx64
                         " rejected: %s", addr, val, why);
}

static void gmem_set_lo(uint64_t *r, uint64_t val)
{
    *r = deposit64(*r, 0, 32, val);
}

static void gmem_set_hi(uint64_t *r, uint64_t val)
{
    *r = deposit64(*r, 32, 32, val);
}

static bool gmem_queue_reg_read(GmemQueue *q, unsigned r, uint64_t *val)
{
    switch (r) {
    case GMEM_CQ_BASE_LO:
        *val = extract64(q->base, 0, 32);
        return true;
    case GMEM_CQ_BASE_HI:
        *val = extract64(q->base, 32, 32);
        return true;
    case GMEM_CQ_ENTRIES_LOG2:
        *val = q->entries_log2;
        return true;
    case GMEM_CQ_CTRL:
        *val = q->ctrl;
        return true;
    case GMEM_CQ_TAIL:
        *val = q->tail;
        return true;
    case GMEM_CQ_HEAD:
        *val = q->head;
        return true;
    case GMEM_CQ_STATE:
        *val = q->state;
        return true;
    case GMEM_CQ_COMPLETED:
        *val = q->completed;
        return true;
    }
    return false;
}

static void gmem_queue_enable(GmemAccelState *s, unsigned qid, hwaddr addr,
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
    /* Both ways the ring starts empty: the command in progress is dropped. */
    *q = (GmemQueue) {
        .base = q->base,
        .entries_log2 = q->entries_log2,
        .ctrl = val,
    };
    q->state = val ? GMEM_CQ_STATE_IDLE : GMEM_CQ_STATE_DISABLED;
    trace_gmem_accel_queue_state(qid, q->state);
    if (!val && s->fq_overflow) {
        gmem_fault_retry(s);
    }
}

static bool gmem_queue_reg_write(GmemAccelState *s, unsigned qid, unsigned r,
                                 hwaddr addr, uint64_t val)
{
    GmemQueue *q = &s->queue[qid];

    switch (r) {
    case GMEM_CQ_BASE_LO:
    case GMEM_CQ_BASE_HI:
    case GMEM_CQ_ENTRIES_LOG2:
        if (q->ctrl & GMEM_CQ_CTRL_ENABLE) {
            gmem_bad_value(s, addr, val, "queue is enabled; disable it "
                           "before changing its ring");
        } else if (r == GMEM_CQ_BASE_LO) {
            gmem_set_lo(&q->base, val);
        } else if (r == GMEM_CQ_BASE_HI) {
            gmem_set_hi(&q->base, val);
        } else {
            q->entries_log2 = val;  /* checked when enabled */
        }
        return true;
    case GMEM_CQ_CTRL:
        gmem_queue_enable(s, qid, addr, val);
        return true;
    case GMEM_CQ_TAIL:
        if (!(q->ctrl & GMEM_CQ_CTRL_ENABLE)) {
            gmem_bad_value(s, addr, val, "doorbell of a disabled queue");
        } else if (val > gmem_ring_mask(q->entries_log2)) {
            gmem_accel_set_error(s, GMEM_ERR_BAD_TAIL, qid, val,
                                 "queue %u: TAIL %" PRIu64 " is past the "
                                 "ring of %u entries", qid, val,
                                 1u << q->entries_log2);
        } else {
            q->tail = val;
            trace_gmem_accel_doorbell(qid, val);
            if (q->state == GMEM_CQ_STATE_IDLE) {
                q->state = GMEM_CQ_STATE_RUNNING;
            }
            gmem_engine_kick(s, qid);
        }
        return true;
    case GMEM_CQ_HEAD:
    case GMEM_CQ_STATE:
    case GMEM_CQ_COMPLETED:
        gmem_accel_set_error(s, GMEM_ERR_READ_ONLY, addr, 0,
                             "write to read-only queue register 0x%"
                             HWADDR_PRIx, addr);
        return true;
    }
    return false;
}

static void gmem_ctx_write(GmemAccelState *s, unsigned c, unsigned r,
                           hwaddr addr, uint64_t val)
{
    GmemContext *ctx = &s->ctx[c];

    if (r == GMEM_CTX_ROOT_LO && (val & (GMEM_PAGE_SIZE - 1))) {
        gmem_bad_value(s, addr, val, "the root table must be 4 KiB aligned");
        return;
    }
    if (r == GMEM_CTX_CTRL && (val & ~GMEM_CTX_CTRL_MASK)) {
        gmem_bad_value(s, addr, val, "unknown context CTRL bits");
        return;
    }
    if (r == GMEM_CTX_ROOT_LO) {
        gmem_set_lo(&ctx->root, val);
    } else if (r == GMEM_CTX_ROOT_HI) {
        gmem_set_hi(&ctx->root, val);
    } else {
        ctx->ctrl = val;
    }
    trace_gmem_accel_context(c, ctx->root, ctx->ctrl);
    gmem_invalidate(s, c, 0, 0);
}

static void gmem_fq_enable(GmemAccelState *s, hwaddr addr, uint64_t val)
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

static bool gmem_fq_reg_write(GmemAccelState *s, hwaddr addr, uint64_t val)
{
    bool enabled = s->fq_ctrl & GMEM_FQ_CTRL_ENABLE;

    switch (addr) {
    case GMEM_REG_FQ_BASE_LO:
    case GMEM_REG_FQ_BASE_HI:
    case GMEM_REG_FQ_ENTRIES_LOG2:
        if (enabled) {
            gmem_bad_value(s, addr, val, "fault queue is enabled; disable "
                           "it before changing its ring");
        } else if (addr == GMEM_REG_FQ_BASE_LO) {
            gmem_set_lo(&s->fq_base, val);
        } else if (addr == GMEM_REG_FQ_BASE_HI) {
            gmem_set_hi(&s->fq_base, val);
        } else {
            s->fq_entries_log2 = val;
        }
        return true;
    case GMEM_REG_FQ_CTRL:
        gmem_fq_enable(s, addr, val);
        return true;
    case GMEM_REG_FQ_HEAD:
        if (!enabled || val > gmem_ring_mask(s->fq_entries_log2)) {
            gmem_bad_value(s, addr, val, "FQ_HEAD needs an enabled fault "
                           "queue and an index inside its ring");
            return true;
        }
        s->fq_head = val;
        if (s->fq_overflow) {
            gmem_fault_retry(s);
        }
        return true;
    case GMEM_REG_FAULT_RESPONSE:
        gmem_fault_respond(s, val);
        return true;
    }
    return false;
}

static bool gmem_inv_reg_write(GmemAccelState *s, hwaddr addr, uint64_t val)
{
    switch (addr) {
    case GMEM_REG_INV_VA_LO:
        gmem_set_lo(&s->inv_va, val);
        return true;
    case GMEM_REG_INV_VA_HI:
        gmem_set_hi(&s->inv_va, val);
        return true;
    case GMEM_REG_INV_SIZE_LO:
        gmem_set_lo(&s->inv_size, val);
        return true;
    case GMEM_REG_INV_SIZE_HI:
        gmem_set_hi(&s->inv_size, val);
        return true;
    case GMEM_REG_INV_CTX:
        s->inv_ctx = val;
        return true;
    case GMEM_REG_INV_TRIGGER:
        if (s->inv_ctx >= GMEM_NUM_CONTEXTS &&
            s->inv_ctx != GMEM_INV_ALL_CONTEXTS) {
            gmem_bad_value(s, GMEM_REG_INV_CTX, s->inv_ctx,
                           "INV_CTX is neither a context nor ALL");
            return true;
        }
        gmem_invalidate(s, s->inv_ctx, s->inv_va, s->inv_size);
        s->inv_done = val;
        return true;
    }
    return false;
}

bool gmem_engine_reg_read(GmemAccelState *s, hwaddr addr, uint64_t *val)
{
    if (addr >= GMEM_REG_QUEUE_BASE &&
        addr < GMEM_REG_QUEUE(GMEM_NUM_QUEUES, 0)) {
        hwaddr off = addr - GMEM_REG_QUEUE_BASE;

        return gmem_queue_reg_read(&s->queue[off / GMEM_REG_QUEUE_STRIDE],
                                   off % GMEM_REG_QUEUE_STRIDE, val);
    }
    if (addr >= GMEM_REG_CTX_BASE &&
        addr < GMEM_REG_CTX(GMEM_NUM_CONTEXTS, 0)) {
        hwaddr off = addr - GMEM_REG_CTX_BASE;
        GmemContext *c = &s->ctx[off / GMEM_REG_CTX_STRIDE];

        switch (off % GMEM_REG_CTX_STRIDE) {
        case GMEM_CTX_ROOT_LO:
            *val = extract64(c->root, 0, 32);
            return true;
        case GMEM_CTX_ROOT_HI:
            *val = extract64(c->root, 32, 32);
            return true;
        case GMEM_CTX_CTRL:
            *val = c->ctrl;
            return true;
        }
        return false;
    }
    if (addr >= GMEM_REG_COUNTER_BASE &&
        addr < GMEM_REG_COUNTER(GMEM_NUM_COUNTERS)) {
        hwaddr off = addr - GMEM_REG_COUNTER_BASE;

        *val = extract64(s->counters[off / 8], off % 8 ? 32 : 0, 32);
        return true;
    }
    switch (addr) {
    case GMEM_REG_FQ_BASE_LO:
        *val = extract64(s->fq_base, 0, 32);
        return true;
    case GMEM_REG_FQ_BASE_HI:
        *val = extract64(s->fq_base, 32, 32);
        return true;
    case GMEM_REG_FQ_ENTRIES_LOG2:
        *val = s->fq_entries_log2;
        return true;
    case GMEM_REG_FQ_CTRL:
        *val = s->fq_ctrl;
        return true;
    case GMEM_REG_FQ_HEAD:
        *val = s->fq_head;
        return true;
    case GMEM_REG_FQ_TAIL:
        *val = s->fq_tail;
        return true;
    case GMEM_REG_FQ_STATUS:
        *val = (s->fq_ctrl & GMEM_FQ_CTRL_ENABLE ? GMEM_FQ_STATUS_ENABLED
                                                 : 0) |
               (s->fq_overflow ? GMEM_FQ_STATUS_OVERFLOW : 0);
        return true;
    case GMEM_REG_FQ_PENDING:
        *val = 0;
        for (unsigned qid = 0; qid < GMEM_NUM_QUEUES; qid++) {
            *val += s->queue[qid].state == GMEM_CQ_STATE_STALLED;
        }
        return true;
    case GMEM_REG_FAULT_RESPONSE:
        *val = 0;   /* write-only */
        return true;
    case GMEM_REG_INV_TRIGGER:
        *val = s->inv_done;
        return true;
    case GMEM_REG_INV_VA_LO:
        *val = extract64(s->inv_va, 0, 32);
        return true;
    case GMEM_REG_INV_VA_HI:
        *val = extract64(s->inv_va, 32, 32);
        return true;
    case GMEM_REG_INV_SIZE_LO:
        *val = extract64(s->inv_size, 0, 32);
        return true;
    case GMEM_REG_INV_SIZE_HI:
        *val = extract64(s->inv_size, 32, 32);
        return true;
    case GMEM_REG_INV_CTX:
        *val = s->inv_ctx;
        return true;
    case GMEM_REG_INV_DONE:
        *val = s->inv_done;
        return true;
    }
    return false;
}

/* Handles the engine's registers; false if @addr is not one of them. */
bool gmem_engine_reg_write(GmemAccelState *s, hwaddr addr, uint64_t val)
{
    if (addr >= GMEM_REG_QUEUE_BASE &&
        addr < GMEM_REG_QUEUE(GMEM_NUM_QUEUES, 0)) {
        hwaddr off = addr - GMEM_REG_QUEUE_BASE;

        return gmem_queue_reg_write(s, off / GMEM_REG_QUEUE_STRIDE,
                                    off % GMEM_REG_QUEUE_STRIDE, addr, val);
    }
    if (addr >= GMEM_REG_CTX_BASE &&
        addr < GMEM_REG_CTX(GMEM_NUM_CONTEXTS, 0)) {
        hwaddr off = addr - GMEM_REG_CTX_BASE;
        unsigned r = off % GMEM_REG_CTX_STRIDE;

        if (r > GMEM_CTX_CTRL) {
            return false;
        }
        gmem_ctx_write(s, off / GMEM_REG_CTX_STRIDE, r, addr, val);
        return true;
    }
    if (addr >= GMEM_REG_COUNTER_BASE &&
        addr < GMEM_REG_COUNTER(GMEM_NUM_COUNTERS)) {
        gmem_accel_set_error(s, GMEM_ERR_READ_ONLY, addr, 0,
                             "write to counter register 0x%" HWADDR_PRIx,
                             addr);
        return true;
    }
    if (addr == GMEM_REG_FQ_TAIL || addr == GMEM_REG_FQ_STATUS ||
        addr == GMEM_REG_FQ_PENDING || addr == GMEM_REG_INV_DONE) {
        gmem_accel_set_error(s, GMEM_ERR_READ_ONLY, addr, 0,
                             "write to read-only register 0x%" HWADDR_PRIx,
                             addr);
        return true;
    }
    return gmem_fq_reg_write(s, addr, val) ||
           gmem_inv_reg_write(s, addr, val);
}

/* ---- life cycle ---- */

void gmem_engine_reset(GmemAccelState *s)
{
    qemu_bh_cancel(s->engine_bh);
    memset(s->ctx, 0, sizeof(s->ctx));
    memset(s->queue, 0, sizeof(s->queue));
    gmem_tlb_invalidate(&s->tlb, GMEM_INV_ALL_CONTEXTS, 0, 0);
    s->fq_base = 0;
    s->fq_entries_log2 = 0;
    s->fq_ctrl = 0;
    s->fq_head = s->fq_tail = 0;
    s->fq_overflow = false;
    s->fault_seq = 0;
    s->next_group = 0;
    s->inv_va = s->inv_size = 0;
    s->inv_ctx = 0;
    s->inv_done = 0;
    memset(s->counters, 0, sizeof(s->counters));
}

static void gmem_engine_vm_state(void *opaque, bool running,
                                 RunState state)
{
    GmemAccelState *s = opaque;

    if (running) {
        qemu_bh_schedule(s->engine_bh);
    }
}

void gmem_engine_realize(GmemAccelState *s)
{
    s->hbm_ptr = memory_region_get_ram_ptr(&s->hbm);
    s->engine_bh = qemu_bh_new_guarded(gmem_engine_bh, s,
                                       &DEVICE(s)->mem_reentrancy_guard);
    gmem_tlb_init(&s->tlb, s->tlb_entries);
    s->bounce = g_malloc(GMEM_STEP_MAX_BYTES);
    s->vm_state = qemu_add_vm_change_state_handler(gmem_engine_vm_state, s);
}

void gmem_engine_unrealize(GmemAccelState *s)
{
    qemu_del_vm_change_state_handler(s->vm_state);
    qemu_bh_delete(s->engine_bh);
    gmem_tlb_free(&s->tlb);
    g_free(s->bounce);
}

/* ---- migration ---- */

void gmem_engine_post_load(GmemAccelState *s)
{
    gmem_tlb_invalidate(&s->tlb, GMEM_INV_ALL_CONTEXTS, 0, 0);
    for (unsigned qid = 0; qid < GMEM_NUM_QUEUES; qid++) {
        gmem_cmd_decode(s->queue[qid].raw, &s->queue[qid].cmd);
    }
    qemu_bh_schedule(s->engine_bh);
}

static int gmem_queue_post_load(void *opaque, int version_id)
{
    GmemQueue *q = opaque;
    uint32_t max = q->entries_log2 <= GMEM_RING_MAX_LOG2 ?
                   gmem_ring_mask(q->entries_log2) : 0;

    if (q->nfaults > GMEM_FAULT_GROUP_MAX || q->head > max || q->tail > max ||
        q->state > GMEM_CQ_STATE_BROKEN) {
        return -EINVAL;
    }
    return 0;
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

const VMStateDescription gmem_vmstate_context = {
    .name = "gmem-accel/context",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(root, GmemContext),
        VMSTATE_UINT32(ctrl, GmemContext),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription gmem_vmstate_queue = {
    .name = "gmem-accel/queue",
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = gmem_queue_post_load,
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
