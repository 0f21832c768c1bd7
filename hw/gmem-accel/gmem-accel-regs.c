/*
 * gmem-accel: the register file (BAR0 below the MSI-X table). One table
 * says which registers exist and which are read-only or write-only (as
 * riscv-iommu's regs_ro/regs_rw/regs_wc masks do); the decoder checks every
 * access against it before a block's handler sees the access, so the
 * handlers only deal with registers that may be accessed that way.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "gmem-accel.h"
#include "trace.h"

typedef enum GmemRegKind {
    GMEM_REG_NONE,      /* no register here: BAD_REG */
    GMEM_REG_RO,        /* writes are READ_ONLY errors */
    GMEM_REG_RW,
    GMEM_REG_WO,        /* reads as zero */
} GmemRegKind;

/*
 * A block of 32-bit registers at @base, repeated @count times @stride
 * apart (the queues, contexts and counters). Handlers get the instance @n
 * and the register's offset @reg inside it; for one-instance blocks @reg is
 * the register's BAR0 offset.
 */
typedef struct GmemRegBlock {
    hwaddr base;
    hwaddr stride;
    unsigned count;
    const uint8_t *kind;        /* GmemRegKind per register, by offset / 4 */
    unsigned nregs;
    uint32_t (*read)(GmemAccelState *s, unsigned n, hwaddr reg);
    void (*write)(GmemAccelState *s, unsigned n, hwaddr reg, hwaddr addr,
                  uint64_t val);
} GmemRegBlock;

/* Kind of register @r of a block starting at @base */
#define REG_IN(base, r, k) [((r) - (base)) / 4] = GMEM_REG_##k
#define REG(r, k) REG_IN(0, r, k)
#define FQ(r, k) REG_IN(GMEM_REG_FQ_BASE_LO, r, k)

static const uint8_t gmem_id_regs[] = {
    REG(GMEM_REG_ID, RO), REG(GMEM_REG_VERSION, RO), REG(GMEM_REG_CAP, RO),
    REG(GMEM_REG_NUM_VECTORS, RO), REG(GMEM_REG_HBM_SIZE_LO, RO),
    REG(GMEM_REG_HBM_SIZE_HI, RO), REG(GMEM_REG_STATUS, RO),
    REG(GMEM_REG_RESET, WO), REG(GMEM_REG_ERROR_CODE, RW),
    REG(GMEM_REG_ERROR_INFO, RO), REG(GMEM_REG_SCRATCH, RW),
    REG(GMEM_REG_ERROR_ADDR_LO, RO), REG(GMEM_REG_ERROR_ADDR_HI, RO),
    REG(GMEM_REG_NUM_CONTEXTS, RO), REG(GMEM_REG_NUM_QUEUES, RO),
    REG(GMEM_REG_TLB_ENTRIES, RO),
};

static const uint8_t gmem_fq_regs[] = {
    FQ(GMEM_REG_FQ_BASE_LO, RW), FQ(GMEM_REG_FQ_BASE_HI, RW),
    FQ(GMEM_REG_FQ_ENTRIES_LOG2, RW), FQ(GMEM_REG_FQ_CTRL, RW),
    FQ(GMEM_REG_FQ_HEAD, RW), FQ(GMEM_REG_FQ_TAIL, RO),
    FQ(GMEM_REG_FQ_STATUS, RO), FQ(GMEM_REG_FAULT_RESPONSE, WO),
    FQ(GMEM_REG_FQ_PENDING, RO), FQ(GMEM_REG_FQ_IRQ_HOLD, RW),
    FQ(GMEM_REG_INV_VA_LO, RW), FQ(GMEM_REG_INV_VA_HI, RW),
    FQ(GMEM_REG_INV_SIZE_LO, RW), FQ(GMEM_REG_INV_SIZE_HI, RW),
    FQ(GMEM_REG_INV_CTX, RW), FQ(GMEM_REG_INV_TRIGGER, RW),
    FQ(GMEM_REG_INV_DONE, RO),
};

#define AC(r, k) REG_IN(GMEM_REG_AC_BASE_LO, r, k)
static const uint8_t gmem_ac_regs[] = {
    AC(GMEM_REG_AC_BASE_LO, RW), AC(GMEM_REG_AC_BASE_HI, RW),
    AC(GMEM_REG_AC_ENTRIES_LOG2, RW), AC(GMEM_REG_AC_CTRL, RW),
    AC(GMEM_REG_AC_HEAD, RW), AC(GMEM_REG_AC_TAIL, RO),
    AC(GMEM_REG_AC_GRANULARITY, RW), AC(GMEM_REG_AC_THRESHOLD, RW),
    AC(GMEM_REG_AC_CLEAR_VA_LO, RW), AC(GMEM_REG_AC_CLEAR_VA_HI, RW),
    AC(GMEM_REG_AC_CLEAR_CTX, RW), AC(GMEM_REG_AC_CLEAR, WO),
    AC(GMEM_REG_AC_TRACKED, RO), AC(GMEM_REG_AC_NOTIFIED, RO),
    AC(GMEM_REG_AC_DROPPED, RO), AC(GMEM_REG_AC_CAPACITY, RO),
};

static const uint8_t gmem_cq_regs[] = {
    REG(GMEM_CQ_BASE_LO, RW), REG(GMEM_CQ_BASE_HI, RW),
    REG(GMEM_CQ_ENTRIES_LOG2, RW), REG(GMEM_CQ_CTRL, RW),
    REG(GMEM_CQ_TAIL, RW), REG(GMEM_CQ_HEAD, RO), REG(GMEM_CQ_STATE, RO),
    REG(GMEM_CQ_COMPLETED, RO), REG(GMEM_CQ_STEPS, RO),
    REG(GMEM_CQ_FAULT_HOLD, RW),
};

static const uint8_t gmem_counter_regs[] = { GMEM_REG_RO, GMEM_REG_RO };

static const uint8_t gmem_ctx_regs[] = {
    REG(GMEM_CTX_ROOT_LO, RW), REG(GMEM_CTX_ROOT_HI, RW),
    REG(GMEM_CTX_CTRL, RW),
};

static uint32_t gmem_half(uint64_t r, hwaddr reg)
{
    return extract64(r, reg & 4 ? 32 : 0, 32);
}

/* ---- identity, status and errors (0x000-0x0ff) ---- */

static uint32_t gmem_caps(GmemAccelState *s)
{
    return GMEM_CAP_HBM | GMEM_CAP_MMU | GMEM_CAP_DMA | GMEM_CAP_FAULTS |
           GMEM_CAP_PAGE_64K | GMEM_CAP_ACCESS_COUNTERS |
           (s->ats ? GMEM_CAP_ATS : 0) |
           (s->pasid ? GMEM_CAP_PASID : 0) |
           (s->pri ? GMEM_CAP_PRI : 0) |
           (s->coherent ? GMEM_CAP_COHERENT : 0);
}

void gmem_accel_reset_state(GmemAccelState *s, const char *why)
{
    trace_gmem_accel_reset(why);
    s->status = GMEM_STATUS_READY;
    s->error_code = GMEM_ERR_NONE;
    s->error_info = 0;
    s->error_addr = 0;
    s->scratch = 0;
    gmem_engine_reset(s);
    gmem_ac_reset(s);
    gmem_atc_reset(s);
}

static uint32_t gmem_id_read(GmemAccelState *s, unsigned n, hwaddr reg)
{
    switch (reg) {
    case GMEM_REG_ID:
        return GMEM_ID_MAGIC;
    case GMEM_REG_VERSION:
        return GMEM_VERSION;
    case GMEM_REG_CAP:
        return gmem_caps(s);
    case GMEM_REG_NUM_VECTORS:
        return GMEM_MSIX_VECTORS;
    case GMEM_REG_HBM_SIZE_LO:
    case GMEM_REG_HBM_SIZE_HI:
        return gmem_half(s->hbm_size, reg);
    case GMEM_REG_STATUS:
        return s->status;
    case GMEM_REG_ERROR_CODE:
        return s->error_code;
    case GMEM_REG_ERROR_INFO:
        return s->error_info;
    case GMEM_REG_SCRATCH:
        return s->scratch;
    case GMEM_REG_ERROR_ADDR_LO:
    case GMEM_REG_ERROR_ADDR_HI:
        return gmem_half(s->error_addr, reg);
    case GMEM_REG_NUM_CONTEXTS:
        return GMEM_NUM_CONTEXTS;
    case GMEM_REG_NUM_QUEUES:
        return GMEM_NUM_QUEUES;
    case GMEM_REG_TLB_ENTRIES:
        return s->tlb_entries;
    }
    return 0;
}

static void gmem_id_write(GmemAccelState *s, unsigned n, hwaddr reg,
                          hwaddr addr, uint64_t val)
{
    switch (reg) {
    case GMEM_REG_SCRATCH:
        s->scratch = val;
        break;
    case GMEM_REG_ERROR_CODE:   /* any write clears the error */
        s->error_code = GMEM_ERR_NONE;
        s->error_info = 0;
        s->error_addr = 0;
        s->status &= ~GMEM_STATUS_ERROR;
        break;
    case GMEM_REG_RESET:
        if (val == GMEM_RESET_MAGIC) {
            gmem_accel_reset_state(s, "register");
        } else {
            gmem_accel_set_error(s, GMEM_ERR_BAD_RESET, val, 0,
                                 "RESET written with 0x%" PRIx64 ", not "
                                 "GMEM_RESET_MAGIC", val);
        }
        break;
    }
}

/* ---- fault queue and register-driven TLB invalidation (0x100-0x1ff) ---- */

static uint32_t gmem_fq_read(GmemAccelState *s, unsigned n, hwaddr reg)
{
    uint32_t pending = 0;

    switch (reg) {
    case GMEM_REG_FQ_BASE_LO:
    case GMEM_REG_FQ_BASE_HI:
        return gmem_half(s->fq_base, reg);
    case GMEM_REG_FQ_ENTRIES_LOG2:
        return s->fq_entries_log2;
    case GMEM_REG_FQ_CTRL:
        return s->fq_ctrl;
    case GMEM_REG_FQ_HEAD:
        return s->fq_head;
    case GMEM_REG_FQ_TAIL:
        return s->fq_tail;
    case GMEM_REG_FQ_STATUS:
        return (s->fq_ctrl & GMEM_FQ_CTRL_ENABLE ? GMEM_FQ_STATUS_ENABLED
                                                 : 0) |
               (s->fq_overflow ? GMEM_FQ_STATUS_OVERFLOW : 0);
    case GMEM_REG_FQ_PENDING:
        for (unsigned qid = 0; qid < GMEM_NUM_QUEUES; qid++) {
            pending += s->queue[qid].state == GMEM_CQ_STATE_STALLED;
        }
        return pending;
    case GMEM_REG_FQ_IRQ_HOLD:
        return s->fq_irq_hold;
    case GMEM_REG_INV_VA_LO:
    case GMEM_REG_INV_VA_HI:
        return gmem_half(s->inv_va, reg);
    case GMEM_REG_INV_SIZE_LO:
    case GMEM_REG_INV_SIZE_HI:
        return gmem_half(s->inv_size, reg);
    case GMEM_REG_INV_CTX:
        return s->inv_ctx;
    case GMEM_REG_INV_TRIGGER:
    case GMEM_REG_INV_DONE:
        return s->inv_done;
    }
    return 0;
}

static void gmem_fq_write(GmemAccelState *s, unsigned n, hwaddr reg,
                          hwaddr addr, uint64_t val)
{
    bool enabled = s->fq_ctrl & GMEM_FQ_CTRL_ENABLE;
    int qid;

    switch (reg) {
    case GMEM_REG_FQ_BASE_LO:
    case GMEM_REG_FQ_BASE_HI:
    case GMEM_REG_FQ_ENTRIES_LOG2:
        if (enabled) {
            gmem_bad_value(s, addr, val, "fault queue is enabled; disable "
                           "it before changing its ring");
        } else if (reg == GMEM_REG_FQ_BASE_LO) {
            gmem_set_lo(&s->fq_base, val);
        } else if (reg == GMEM_REG_FQ_BASE_HI) {
            gmem_set_hi(&s->fq_base, val);
        } else if (val < 1 || val > GMEM_RING_MAX_LOG2) {
            /* checked here, not at enable: a stream carries it either way */
            gmem_bad_value(s, addr, val, "FQ_ENTRIES_LOG2 is 1..16");
        } else {
            s->fq_entries_log2 = val;
        }
        break;
    case GMEM_REG_FQ_CTRL:
        gmem_fq_enable(s, addr, val);
        break;
    case GMEM_REG_FQ_HEAD:
        if (!enabled || val > gmem_ring_mask(s->fq_entries_log2)) {
            gmem_bad_value(s, addr, val, "FQ_HEAD needs an enabled fault "
                           "queue and an index inside its ring");
            break;
        }
        s->fq_head = val;
        s->inject_fq_full = false;
        if (s->fq_overflow) {
            gmem_fault_retry(s);
        }
        break;
    case GMEM_REG_FQ_IRQ_HOLD:
        gmem_fq_irq_hold(s, addr, val);
        break;
    case GMEM_REG_FAULT_RESPONSE:
        qid = gmem_fault_respond(s, val);
        if (qid >= 0) {
            gmem_engine_kick(s, qid);
        }
        break;
    case GMEM_REG_INV_VA_LO:
        gmem_set_lo(&s->inv_va, val);
        break;
    case GMEM_REG_INV_VA_HI:
        gmem_set_hi(&s->inv_va, val);
        break;
    case GMEM_REG_INV_SIZE_LO:
        gmem_set_lo(&s->inv_size, val);
        break;
    case GMEM_REG_INV_SIZE_HI:
        gmem_set_hi(&s->inv_size, val);
        break;
    case GMEM_REG_INV_CTX:
        s->inv_ctx = val;
        break;
    case GMEM_REG_INV_TRIGGER:
        gmem_inv_trigger(s, val);
        break;
    }
}

/* ---- access counters (0x300-0x33f): gmem-accel-counters.c ---- */

static uint32_t gmem_ac_reg_read(GmemAccelState *s, unsigned n, hwaddr reg)
{
    return gmem_ac_read(s, reg);
}

static void gmem_ac_reg_write(GmemAccelState *s, unsigned n, hwaddr reg,
                              hwaddr addr, uint64_t val)
{
    gmem_ac_write(s, reg, val);
}

/* ---- command queues (0x1000 + q * 0x40) ---- */

static uint32_t gmem_cq_read(GmemAccelState *s, unsigned qid, hwaddr reg)
{
    GmemQueue *q = &s->queue[qid];

    switch (reg) {
    case GMEM_CQ_BASE_LO:
    case GMEM_CQ_BASE_HI:
        return gmem_half(q->base, reg);
    case GMEM_CQ_ENTRIES_LOG2:
        return q->entries_log2;
    case GMEM_CQ_CTRL:
        return q->ctrl;
    case GMEM_CQ_TAIL:
        return q->tail;
    case GMEM_CQ_HEAD:
        return q->head;
    case GMEM_CQ_STATE:
        return q->state;
    case GMEM_CQ_COMPLETED:
        return q->completed;
    case GMEM_CQ_STEPS:
        return q->steps;
    case GMEM_CQ_FAULT_HOLD:
        return extract64(s->cq_fault_hold, qid, 1);
    }
    return 0;
}

static void gmem_cq_write(GmemAccelState *s, unsigned qid, hwaddr reg,
                          hwaddr addr, uint64_t val)
{
    GmemQueue *q = &s->queue[qid];
    uint64_t tail;

    switch (reg) {
    case GMEM_CQ_BASE_LO:
    case GMEM_CQ_BASE_HI:
    case GMEM_CQ_ENTRIES_LOG2:
        if (q->ctrl & GMEM_CQ_CTRL_ENABLE) {
            gmem_bad_value(s, addr, val, "queue is enabled; disable it "
                           "before changing its ring");
        } else if (reg == GMEM_CQ_BASE_LO) {
            gmem_set_lo(&q->base, val);
        } else if (reg == GMEM_CQ_BASE_HI) {
            gmem_set_hi(&q->base, val);
        } else if (val < 1 || val > GMEM_RING_MAX_LOG2) {
            gmem_bad_value(s, addr, val, "ENTRIES_LOG2 is 1..16");
        } else {
            q->entries_log2 = val;
        }
        break;
    case GMEM_CQ_CTRL:
        gmem_queue_enable(s, qid, addr, val);
        /* a disabled queue's group no longer waits for fault-queue room */
        if (!(q->ctrl & GMEM_CQ_CTRL_ENABLE) && s->fq_overflow) {
            gmem_fault_retry(s);
        }
        break;
    case GMEM_CQ_TAIL:
        tail = val & ~(uint64_t)GMEM_CQ_TAIL_FAULT_HOLD;
        if (!(q->ctrl & GMEM_CQ_CTRL_ENABLE)) {
            gmem_bad_value(s, addr, val, "doorbell of a disabled queue");
        } else if (tail > gmem_ring_mask(q->entries_log2)) {
            gmem_accel_set_error(s, GMEM_ERR_BAD_TAIL, qid, val,
                                 "queue %u: TAIL %" PRIu64 " is past the "
                                 "ring of %u entries", qid, tail,
                                 1u << q->entries_log2);
        } else {
            q->tail = tail;
            trace_gmem_accel_doorbell(qid, tail,
                                      val & GMEM_CQ_TAIL_FAULT_HOLD);
            /* (before the kick: the run it starts may post a group) */
            gmem_cq_fault_hold(s, qid, val & GMEM_CQ_TAIL_FAULT_HOLD);
            if (q->state == GMEM_CQ_STATE_IDLE) {
                q->state = GMEM_CQ_STATE_RUNNING;
            }
            gmem_engine_kick(s, qid);
        }
        break;
    case GMEM_CQ_FAULT_HOLD:
        if (val > 1) {
            gmem_bad_value(s, addr, val, "FAULT_HOLD is 0 or 1");
        } else if (!(q->ctrl & GMEM_CQ_CTRL_ENABLE)) {
            gmem_bad_value(s, addr, val, "FAULT_HOLD of a disabled queue");
        } else {
            gmem_cq_fault_hold(s, qid, val);
        }
        break;
    }
}

/* ---- counters (0x400 + i * 8) and contexts (0x800 + c * 0x10) ---- */

static uint32_t gmem_counter_read(GmemAccelState *s, unsigned i, hwaddr reg)
{
    return gmem_half(s->counters[i], reg);
}

static uint32_t gmem_ctx_read(GmemAccelState *s, unsigned c, hwaddr reg)
{
    return reg == GMEM_CTX_CTRL ? s->ctx[c].ctrl : gmem_half(s->ctx[c].root,
                                                             reg);
}

static void gmem_ctx_reg_write(GmemAccelState *s, unsigned c, hwaddr reg,
                               hwaddr addr, uint64_t val)
{
    gmem_ctx_write(s, c, reg, addr, val);
}

/* ---- the decoder ---- */

static const GmemRegBlock gmem_reg_blocks[] = {
    { 0, 0x100, 1, gmem_id_regs, ARRAY_SIZE(gmem_id_regs),
      gmem_id_read, gmem_id_write },
    { GMEM_REG_FQ_BASE_LO, 0x100, 1, gmem_fq_regs, ARRAY_SIZE(gmem_fq_regs),
      gmem_fq_read, gmem_fq_write },
    { GMEM_REG_AC_BASE_LO, 0x40, 1, gmem_ac_regs, ARRAY_SIZE(gmem_ac_regs),
      gmem_ac_reg_read, gmem_ac_reg_write },
    { GMEM_REG_QUEUE_BASE, GMEM_REG_QUEUE_STRIDE, GMEM_NUM_QUEUES,
      gmem_cq_regs, ARRAY_SIZE(gmem_cq_regs), gmem_cq_read, gmem_cq_write },
    { GMEM_REG_COUNTER_BASE, 8, GMEM_NUM_COUNTERS, gmem_counter_regs,
      ARRAY_SIZE(gmem_counter_regs), gmem_counter_read, NULL },
    { GMEM_REG_CTX_BASE, GMEM_REG_CTX_STRIDE, GMEM_NUM_CONTEXTS,
      gmem_ctx_regs, ARRAY_SIZE(gmem_ctx_regs), gmem_ctx_read,
      gmem_ctx_reg_write },
};

/* The block, instance and register at @addr, and what kind it is. */
static GmemRegKind gmem_reg_decode(hwaddr addr, const GmemRegBlock **blk,
                                   unsigned *n, hwaddr *reg)
{
    for (unsigned i = 0; i < ARRAY_SIZE(gmem_reg_blocks); i++) {
        const GmemRegBlock *b = &gmem_reg_blocks[i];
        hwaddr off = addr - b->base, r = off % b->stride;

        if (addr < b->base || off / b->stride >= b->count ||
            r / 4 >= b->nregs || !b->kind[r / 4]) {
            continue;
        }
        *blk = b;
        *n = off / b->stride;
        *reg = b->count == 1 ? addr : r;
        return b->kind[r / 4];
    }
    return GMEM_REG_NONE;
}

static void gmem_bad_reg(GmemAccelState *s, hwaddr addr, bool write)
{
    gmem_accel_set_error(s, GMEM_ERR_BAD_REG, addr, 0,
                         "%s of unknown register 0x%" HWADDR_PRIx,
                         write ? "write" : "read", addr);
}

static uint64_t gmem_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    GmemAccelState *s = opaque;
    const GmemRegBlock *b;
    unsigned n;
    hwaddr reg;
    uint64_t val = 0;

    switch (gmem_reg_decode(addr, &b, &n, &reg)) {
    case GMEM_REG_NONE:
        gmem_bad_reg(s, addr, false);
        break;
    case GMEM_REG_WO:
        break;
    default:
        val = b->read(s, n, reg);
        break;
    }
    trace_gmem_accel_mmio_read(addr, val);
    return val;
}

static void gmem_regs_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    GmemAccelState *s = opaque;
    const GmemRegBlock *b;
    unsigned n;
    hwaddr reg;

    trace_gmem_accel_mmio_write(addr, val);
    switch (gmem_reg_decode(addr, &b, &n, &reg)) {
    case GMEM_REG_NONE:
        gmem_bad_reg(s, addr, true);
        break;
    case GMEM_REG_RO:
        gmem_accel_set_error(s, GMEM_ERR_READ_ONLY, addr, 0,
                             "write to read-only register 0x%" HWADDR_PRIx,
                             addr);
        break;
    default:
        b->write(s, n, reg, addr, val);
        break;
    }
}

static bool gmem_regs_accepts(void *opaque, hwaddr addr, unsigned size,
                              bool is_write, MemTxAttrs attrs)
{
    GmemAccelState *s = opaque;

    /* .impl splits 8-byte accesses; anything narrower is a guest error */
    if (size < 4 || (addr & 3)) {
        gmem_accel_set_error(s, GMEM_ERR_BAD_ACCESS, addr, 0,
                             "%u-byte %s at 0x%" HWADDR_PRIx ": registers "
                             "take aligned 4- or 8-byte accesses", size,
                             is_write ? "write" : "read", addr);
        return false;
    }
    return true;
}

const MemoryRegionOps gmem_regs_ops = {
    .read = gmem_regs_read,
    .write = gmem_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .accepts = gmem_regs_accepts,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};
