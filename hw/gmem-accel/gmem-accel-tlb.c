/*
 * gmem-accel: device TLB, caching translations ATS-style. Direct-mapped:
 * a translation has its slot by (ctx, VA >> its page shift: 12, 16 or 21),
 * so a lookup probes three slots. Faults are never cached.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "gmem-accel-core.h"

void gmem_tlb_init(GmemTlb *tlb, uint32_t size, uint32_t walk_size)
{
    tlb->size = size;
    tlb->entries = g_new0(GmemTlbEntry, size);
    tlb->walk_size = walk_size;
    tlb->walk = g_new0(GmemWalkEntry, walk_size);
}

void gmem_tlb_free(GmemTlb *tlb)
{
    g_free(tlb->entries);
    tlb->entries = NULL;
    tlb->size = 0;
    g_free(tlb->walk);
    tlb->walk = NULL;
    tlb->walk_size = 0;
}

/* Slot of (@ctx, @va >> @shift) in a direct-mapped table of @size slots */
static uint32_t gmem_slot(uint32_t size, uint16_t ctx, uint64_t va,
                          unsigned shift)
{
    uint64_t key = (va >> shift) ^ ((uint64_t)ctx << 36) ^
                   ((uint64_t)shift << 42);

    /* Fibonacci hashing: neighbouring pages land in different slots. */
    return (key * 0x9e3779b97f4a7c15ull) >> 32 & (size - 1);
}

static uint32_t gmem_tlb_slot(const GmemTlb *tlb, uint16_t ctx, uint64_t va,
                              unsigned shift)
{
    return gmem_slot(tlb->size, ctx, va, shift);
}

const GmemTlbEntry *gmem_tlb_lookup(const GmemTlb *tlb, uint16_t ctx,
                                    uint64_t va)
{
    static const unsigned shifts[] = {
        GMEM_PAGE_SHIFT, GMEM_CONT_SHIFT, GMEM_HUGE_SHIFT,
    };

    for (unsigned i = 0; i < G_N_ELEMENTS(shifts); i++) {
        const GmemTlbEntry *e =
            &tlb->entries[gmem_tlb_slot(tlb, ctx, va, shifts[i])];

        if (e->valid && e->ctx == ctx &&
            e->t.page_size == 1ull << shifts[i] &&
            e->t.va_base == (va & ~(e->t.page_size - 1))) {
            return e;
        }
    }
    return NULL;
}

void gmem_tlb_insert(GmemTlb *tlb, uint16_t ctx, const GmemTranslation *t)
{
    unsigned shift = t->page_size == GMEM_HUGE_SIZE ? GMEM_HUGE_SHIFT :
                     t->page_size == GMEM_CONT_SIZE ? GMEM_CONT_SHIFT :
                     GMEM_PAGE_SHIFT;
    GmemTlbEntry *e = &tlb->entries[gmem_tlb_slot(tlb, ctx, t->va_base,
                                                  shift)];

    e->valid = true;
    e->ctx = ctx;
    e->t = *t;
}

const GmemWalkEntry *gmem_walk_lookup(const GmemTlb *tlb, uint16_t ctx,
                                      uint64_t va)
{
    const GmemWalkEntry *w;

    if (!tlb->walk_size) {
        return NULL;
    }
    va &= ~(GMEM_HUGE_SIZE - 1);
    w = &tlb->walk[gmem_slot(tlb->walk_size, ctx, va, GMEM_HUGE_SHIFT)];
    return w->valid && w->ctx == ctx && w->va == va ? w : NULL;
}

void gmem_walk_insert(GmemTlb *tlb, uint16_t ctx, uint64_t va,
                      uint64_t table, bool table_hbm)
{
    GmemWalkEntry *w;

    if (!tlb->walk_size) {
        return;
    }
    va &= ~(GMEM_HUGE_SIZE - 1);
    w = &tlb->walk[gmem_slot(tlb->walk_size, ctx, va, GMEM_HUGE_SHIFT)];
    *w = (GmemWalkEntry) { .valid = true, .table_hbm = table_hbm, .ctx = ctx,
                           .va = va, .table = table };
}

unsigned gmem_tlb_invalidate(GmemTlb *tlb, uint16_t ctx, uint64_t va,
                             uint64_t size)
{
    uint64_t end = size ? va + size : UINT64_MAX;
    unsigned dropped = 0;

    if (end < va) {
        end = UINT64_MAX;
    }
    /* A changed table pointer above a 2 MiB region: its cached table goes */
    for (uint32_t i = 0; i < tlb->walk_size; i++) {
        GmemWalkEntry *w = &tlb->walk[i];

        if (w->valid && (ctx == GMEM_INV_ALL_CONTEXTS || w->ctx == ctx) &&
            (!size || (w->va < end && w->va + GMEM_HUGE_SIZE > va))) {
            w->valid = false;
        }
    }
    for (uint32_t i = 0; i < tlb->size; i++) {
        GmemTlbEntry *e = &tlb->entries[i];

        if (!e->valid ||
            (ctx != GMEM_INV_ALL_CONTEXTS && e->ctx != ctx) ||
            (size && (e->t.va_base >= end ||
                      e->t.va_base + e->t.page_size <= va))) {
            continue;
        }
        e->valid = false;
        dropped++;
    }
    return dropped;
}

unsigned gmem_tlb_count(const GmemTlb *tlb)
{
    unsigned n = 0;

    for (uint32_t i = 0; i < tlb->size; i++) {
        n += tlb->entries[i].valid;
    }
    return n;
}
