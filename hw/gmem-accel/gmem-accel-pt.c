/*
 * gmem-accel: page-table walker and dumper. Four levels of 512 entries;
 * every entry the guest wrote is checked (reserved bits, target inside HBM,
 * no table visited twice on one path) before it is trusted, by the functions
 * both the walker and the monitor's dump use. See docs/hardware-spec.md.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "gmem-accel-core.h"

uint8_t gmem_pte_perms(uint64_t pte)
{
    uint8_t perms = 0;

    if (pte & GMEM_PTE_READ) {
        perms |= GMEM_ACCESS_READ;
    }
    if (pte & GMEM_PTE_WRITE) {
        perms |= GMEM_ACCESS_WRITE;
    }
    /* An atomic reads and writes: it needs all three bits. */
    if ((pte & GMEM_PTE_PERM_MASK) == GMEM_PTE_PERM_MASK) {
        perms |= GMEM_ACCESS_ATOMIC;
    }
    return perms;
}

GmemWalkStatus gmem_pt_check(const GmemTranslation *t, unsigned access)
{
    return (t->perms & access) == access ? GMEM_WALK_OK
                                         : GMEM_WALK_PERMISSION;
}

/*
 * Judge entry @pte read from level @level for @va: a leaf (OK, @t filled
 * in), a pointer to the next table (OK, *is_table), or why it is neither.
 */
static GmemWalkStatus gmem_pt_entry(uint64_t pte, int level, uint64_t va,
                                    uint64_t hbm_size, GmemTranslation *t,
                                    bool *is_table)
{
    *is_table = false;
    if (!(pte & GMEM_PTE_VALID)) {
        return GMEM_WALK_NOT_PRESENT;
    }
    if (level == 1 || (level == 2 && (pte & GMEM_PTE_HUGE))) {
        uint64_t size = level == 1 ? GMEM_PAGE_SIZE : GMEM_HUGE_SIZE;
        uint64_t rsvd = GMEM_PTE_LEAF_RSVD |
                        (level == 1 ? GMEM_PTE_HUGE : GMEM_PTE_CONT) |
                        ((size - 1) & GMEM_PTE_ADDR_MASK);

        if (pte & rsvd) {
            return GMEM_WALK_RESERVED;
        }
        t->va_base = va & ~(size - 1);
        t->page_size = size;
        t->target = pte & GMEM_PTE_ADDR_MASK;
        t->target_hbm = pte & GMEM_PTE_HBM;
        t->perms = gmem_pte_perms(pte);
        t->ptes = 1;
        if (t->target_hbm && !gmem_hbm_contains(hbm_size, t->target, size)) {
            return GMEM_WALK_BAD_ADDRESS;
        }
        return GMEM_WALK_OK;
    }
    /* A pointer to the next table: permissions live in leaves only. */
    if (pte & GMEM_PTE_TABLE_RSVD) {
        return GMEM_WALK_RESERVED;
    }
    *is_table = true;
    return GMEM_WALK_OK;
}

/*
 * Widen the 4 KiB page @t, whose entry has CONT, to its group's 64 KiB page
 * if the group holds together: its 16 entries all have CONT and the same
 * bits but the software's, and map consecutive 4 KiB pages of a 64 KiB
 * aligned target. Otherwise @t stays the 4 KiB page its own entry maps:
 * software rewriting a group entry by entry is not an error.
 */
static void gmem_pt_cont(GmemPteReader read_pte, void *opaque,
                         uint64_t hbm_size, uint64_t va, GmemTranslation *t)
{
    const uint64_t same = ~(GMEM_PTE_ADDR_MASK | GMEM_PTE_SW_MASK);
    uint64_t group = t->pte_addr & ~(GMEM_CONT_ENTRIES * 8 - 1);
    uint64_t pte[GMEM_CONT_ENTRIES], first;

    if (!read_pte(opaque, t->pte_hbm, group, pte, GMEM_CONT_ENTRIES)) {
        return;
    }
    first = pte[0];
    for (unsigned i = 0; i < GMEM_CONT_ENTRIES; i++) {
        if ((pte[i] & same) != (t->pte & same) ||
            (pte[i] & GMEM_PTE_ADDR_MASK) !=
            (first & GMEM_PTE_ADDR_MASK) + i * GMEM_PAGE_SIZE) {
            return;
        }
    }
    if ((first & GMEM_PTE_ADDR_MASK) & (GMEM_CONT_SIZE - 1) ||
        (t->target_hbm && !gmem_hbm_contains(hbm_size,
                                             first & GMEM_PTE_ADDR_MASK,
                                             GMEM_CONT_SIZE))) {
        return;
    }
    t->va_base = va & ~(GMEM_CONT_SIZE - 1);
    t->page_size = GMEM_CONT_SIZE;
    t->target = first & GMEM_PTE_ADDR_MASK;
    t->pte = first;
    t->pte_addr = group;
    t->ptes = GMEM_CONT_ENTRIES;
}

/* Can the table at @table be read at all? (HBM tables: inside HBM) */
static bool gmem_table_ok(uint64_t table, bool table_hbm, uint64_t hbm_size)
{
    return !table_hbm || gmem_hbm_contains(hbm_size, table, GMEM_PAGE_SIZE);
}

GmemWalkStatus gmem_pt_walk(GmemPteReader read_pte, void *opaque,
                            uint64_t root, bool root_hbm, uint64_t hbm_size,
                            uint64_t va, GmemTranslation *t)
{
    return gmem_pt_walk_from(read_pte, opaque, root, root_hbm, GMEM_PT_LEVELS,
                             hbm_size, va, t);
}

GmemWalkStatus gmem_pt_walk_from(GmemPteReader read_pte, void *opaque,
                                 uint64_t table, bool table_hbm, int start,
                                 uint64_t hbm_size, uint64_t va,
                                 GmemTranslation *t)
{
    uint64_t visited[GMEM_PT_LEVELS];
    bool visited_hbm[GMEM_PT_LEVELS];

    memset(t, 0, sizeof(*t));
    t->level = start;
    if (va >> GMEM_VA_BITS || start < 1 || start > GMEM_PT_LEVELS) {
        return GMEM_WALK_NOT_PRESENT;   /* no entry can map it */
    }

    for (int level = start; level >= 1; level--) {
        int depth = start - level;
        GmemWalkStatus st;
        bool is_table;
        uint64_t pte;

        t->level = level;
        t->pte = 0;
        for (int i = 0; i < depth; i++) {
            if (visited[i] == table && visited_hbm[i] == table_hbm) {
                t->pte_addr = table;
                t->pte_hbm = table_hbm;
                return GMEM_WALK_LOOP;
            }
        }
        visited[depth] = table;
        visited_hbm[depth] = table_hbm;

        t->pte_addr = table + GMEM_PT_INDEX(va, level) * sizeof(uint64_t);
        t->pte_hbm = table_hbm;
        if (!gmem_table_ok(table, table_hbm, hbm_size) ||
            !read_pte(opaque, table_hbm, t->pte_addr, &pte, 1)) {
            return GMEM_WALK_BAD_ADDRESS;
        }
        t->pte = pte;
        st = gmem_pt_entry(pte, level, va, hbm_size, t, &is_table);
        if (st == GMEM_WALK_OK && !is_table && (pte & GMEM_PTE_CONT)) {
            gmem_pt_cont(read_pte, opaque, hbm_size, va, t);
        }
        if (st != GMEM_WALK_OK || !is_table) {
            return st;
        }
        table = pte & GMEM_PTE_ADDR_MASK;
        table_hbm = pte & GMEM_PTE_HBM;
    }
    g_assert_not_reached();     /* level 1 always returns */
}

/* ---- the dump: every leaf of a context in VA order, merged into runs ---- */

typedef struct GmemPtDump {
    GmemPteReader read_pte;
    void *opaque;
    uint64_t hbm_size;
    uint64_t va_start, va_end;
    unsigned tables, max_tables;
    GmemPtRangeFn fn;
    void *fn_opaque;
    bool have_run;
    GmemPtRange run;            /* the run being extended */
    uint64_t path[GMEM_PT_LEVELS];
    bool path_hbm[GMEM_PT_LEVELS];
} GmemPtDump;

static bool gmem_dump_flush(GmemPtDump *d)
{
    if (!d->have_run) {
        return true;
    }
    d->have_run = false;
    return d->fn(d->fn_opaque, &d->run);
}

/* Does leaf @t continue the current run (VA, target and PTE slot)? */
static bool gmem_dump_extends(const GmemPtDump *d, const GmemTranslation *t)
{
    const GmemPtRange *r = &d->run;

    return d->have_run && r->status == GMEM_WALK_OK &&
           t->page_size == r->first.page_size &&
           t->va_base == r->va + r->size &&
           t->pte == r->first.pte + r->size &&
           t->pte_hbm == r->first.pte_hbm &&
           t->pte_addr == r->first.pte_addr + r->pages * sizeof(uint64_t);
}

static bool gmem_dump_leaf(GmemPtDump *d, const GmemTranslation *t)
{
    if (gmem_dump_extends(d, t)) {
        d->run.pages += t->ptes;
        d->run.size += t->page_size;
        return true;
    }
    if (!gmem_dump_flush(d)) {
        return false;
    }
    d->have_run = true;
    d->run = (GmemPtRange) {
        .status = GMEM_WALK_OK, .va = t->va_base, .size = t->page_size,
        .pages = t->ptes, .first = *t,
    };
    return true;
}

/* A malformed entry or table ends any run and is reported on its own. */
static bool gmem_dump_error(GmemPtDump *d, GmemWalkStatus st, uint64_t va,
                            uint64_t span, const GmemTranslation *t)
{
    GmemPtRange r = {
        .status = st, .va = va, .size = span, .pages = 1, .first = *t,
    };

    return gmem_dump_flush(d) && d->fn(d->fn_opaque, &r);
}

static GmemPtDumpResult gmem_dump_table(GmemPtDump *d, int level,
                                        uint64_t table, bool table_hbm,
                                        uint64_t va_base)
{
    uint64_t span = 1ull << GMEM_PT_SHIFT(level);
    int depth = GMEM_PT_LEVELS - level;
    GmemTranslation t = {
        .level = level, .pte_addr = table, .pte_hbm = table_hbm,
    };

    for (int i = 0; i < depth; i++) {
        if (d->path[i] == table && d->path_hbm[i] == table_hbm) {
            return gmem_dump_error(d, GMEM_WALK_LOOP, va_base,
                                   span * GMEM_PT_ENTRIES, &t) ?
                   GMEM_DUMP_COMPLETE : GMEM_DUMP_STOPPED;
        }
    }
    if (d->tables == d->max_tables) {
        return GMEM_DUMP_TOO_MANY_TABLES;
    }
    d->tables++;
    d->path[depth] = table;
    d->path_hbm[depth] = table_hbm;

    for (unsigned idx = 0; idx < GMEM_PT_ENTRIES; idx++) {
        uint64_t va = va_base + idx * span;
        GmemWalkStatus st;
        GmemPtDumpResult res;
        bool is_table;
        uint64_t pte;

        if (va + span <= d->va_start || va >= d->va_end) {
            continue;
        }
        t = (GmemTranslation) {
            .level = level, .pte_hbm = table_hbm,
            .pte_addr = table + idx * sizeof(uint64_t),
        };
        if (!gmem_table_ok(table, table_hbm, d->hbm_size) ||
            !d->read_pte(d->opaque, table_hbm, t.pte_addr, &pte, 1)) {
            /* The whole table is unreadable: one report covers it. */
            t.pte_addr = table;
            return gmem_dump_error(d, GMEM_WALK_BAD_ADDRESS, va_base,
                                   span * GMEM_PT_ENTRIES, &t) ?
                   GMEM_DUMP_COMPLETE : GMEM_DUMP_STOPPED;
        }
        t.pte = pte;
        st = gmem_pt_entry(pte, level, va, d->hbm_size, &t, &is_table);
        if (st == GMEM_WALK_NOT_PRESENT) {
            continue;
        }
        if (st != GMEM_WALK_OK) {
            if (!gmem_dump_error(d, st, va, span, &t)) {
                return GMEM_DUMP_STOPPED;
            }
            continue;
        }
        if (!is_table) {
            if (pte & GMEM_PTE_CONT) {
                gmem_pt_cont(d->read_pte, d->opaque, d->hbm_size, va, &t);
            }
            if (!gmem_dump_leaf(d, &t)) {
                return GMEM_DUMP_STOPPED;
            }
            /* A 64 KiB page is reported once, whichever entry found it. */
            idx |= t.ptes - 1;
            continue;
        }
        res = gmem_dump_table(d, level - 1, pte & GMEM_PTE_ADDR_MASK,
                              pte & GMEM_PTE_HBM, va);
        if (res != GMEM_DUMP_COMPLETE) {
            return res;
        }
    }
    return GMEM_DUMP_COMPLETE;
}

GmemPtDumpResult gmem_pt_dump(GmemPteReader read_pte, void *opaque,
                              uint64_t root, bool root_hbm, uint64_t hbm_size,
                              uint64_t va_start, uint64_t va_end,
                              unsigned max_tables, GmemPtRangeFn fn,
                              void *fn_opaque)
{
    GmemPtDump d = {
        .read_pte = read_pte, .opaque = opaque, .hbm_size = hbm_size,
        .va_start = va_start, .va_end = MIN(va_end, 1ull << GMEM_VA_BITS),
        .max_tables = max_tables, .fn = fn, .fn_opaque = fn_opaque,
    };
    GmemPtDumpResult res = GMEM_DUMP_COMPLETE;

    if (d.va_start < d.va_end) {
        res = gmem_dump_table(&d, GMEM_PT_LEVELS, root, root_hbm, 0);
    }
    /* What was found before a budget ran out is still reported. */
    if (res != GMEM_DUMP_STOPPED && !gmem_dump_flush(&d)) {
        res = GMEM_DUMP_STOPPED;
    }
    return res;
}

const char *gmem_walk_status_name(GmemWalkStatus st)
{
    static const char *const names[] = {
        [GMEM_WALK_OK] = "ok",
        [GMEM_WALK_NOT_PRESENT] = "not-present",
        [GMEM_WALK_PERMISSION] = "permission",
        [GMEM_WALK_RESERVED] = "reserved-bits",
        [GMEM_WALK_BAD_ADDRESS] = "bad-address",
        [GMEM_WALK_LOOP] = "loop",
    };

    return st < G_N_ELEMENTS(names) ? names[st] : "?";
}
