/*
 * gmem-accel: the device MMU: translation through the TLB and the walker,
 * context registers and TLB invalidation (commands and registers).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "gmem-accel.h"
#include "trace.h"

GmemWalkStatus gmem_translate(GmemAccelState *s, uint16_t ctx, uint64_t va,
                              unsigned access, GmemTranslation *t)
{
    const GmemTlbEntry *e = gmem_tlb_lookup(&s->tlb, ctx, va);
    const GmemWalkEntry *w;
    GmemContext *c = &s->ctx[ctx];
    GmemWalkStatus st;

    if (e) {
        s->counters[GMEM_CNT_TLB_HITS]++;
        *t = e->t;
        return gmem_pt_check(t, access);
    }
    s->counters[GMEM_CNT_TLB_MISSES]++;
    s->counters[GMEM_CNT_WALKS]++;
    w = gmem_walk_lookup(&s->tlb, ctx, va);
    if (w) {
        s->walk_cache_hits++;
        st = gmem_pt_walk_from(gmem_read_pte, s, w->table, w->table_hbm, 1,
                               s->hbm_size, va, t);
    } else {
        st = gmem_pt_walk(gmem_read_pte, s, c->root,
                          c->ctrl & GMEM_CTX_CTRL_ROOT_HBM, s->hbm_size, va,
                          t);
        /*
         * A walk that read a level-1 entry went through valid pointers:
         * keep the table it reached, unless that table was the trouble.
         */
        if (t->level == 1 && st != GMEM_WALK_BAD_ADDRESS &&
            st != GMEM_WALK_LOOP) {
            gmem_walk_insert(&s->tlb, ctx, va,
                             t->pte_addr & ~(uint64_t)(GMEM_PAGE_SIZE - 1),
                             t->pte_hbm);
        }
    }
    trace_gmem_accel_walk(ctx, va, gmem_walk_status_name(st), t->level,
                          t->pte, !!w);
    if (st == GMEM_WALK_OK) {
        gmem_tlb_insert(&s->tlb, ctx, t);
        st = gmem_pt_check(t, access);
    }
    return st;
}

void gmem_invalidate(GmemAccelState *s, uint16_t ctx, uint64_t va,
                            uint64_t size)
{
    unsigned n;

    /* Copies in flight used the old translations: done first (ATS's rule) */
    gmem_mover_finish(s);
    n = gmem_tlb_invalidate(&s->tlb, ctx, va, size);

    trace_gmem_accel_tlb_invalidate(ctx, va, size, n);
}


/* Report a malformed page table met while translating @va. */
uint32_t gmem_pt_error(GmemAccelState *s, uint16_t ctx, uint64_t va,
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

void gmem_ctx_write(GmemAccelState *s, unsigned c, unsigned r,
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

/* INV_TRIGGER written with @seq: invalidate what INV_VA/SIZE/CTX say. */
void gmem_inv_trigger(GmemAccelState *s, uint32_t seq)
{
    if (s->inv_ctx >= GMEM_NUM_CONTEXTS &&
        s->inv_ctx != GMEM_INV_ALL_CONTEXTS) {
        gmem_bad_value(s, GMEM_REG_INV_CTX, s->inv_ctx,
                       "INV_CTX is neither a context nor ALL");
        return;
    }
    if (s->inject_inv_stuck) {
        return;     /* injected: the TLB keeps it, INV_DONE stays */
    }
    gmem_invalidate(s, s->inv_ctx, s->inv_va, s->inv_size);
    s->inv_done = seq;
}
