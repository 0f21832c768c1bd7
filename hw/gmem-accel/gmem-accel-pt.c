/*
 * gmem-accel: page-table walker. Four levels of 512 entries; every entry
 * the guest wrote is checked (reserved bits, target inside HBM, no table
 * visited twice) before the walk trusts it. See docs/hardware-spec.md.
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

static bool gmem_in_hbm(uint64_t addr, uint64_t len, uint64_t hbm_size)
{
    return addr < hbm_size && len <= hbm_size - addr;
}

GmemWalkStatus gmem_pt_walk(GmemPteReader read_pte, void *opaque,
                            uint64_t root, bool root_hbm, uint64_t hbm_size,
                            uint64_t va, GmemTranslation *t)
{
    uint64_t table = root;
    bool table_hbm = root_hbm;
    uint64_t visited[GMEM_PT_LEVELS];
    bool visited_hbm[GMEM_PT_LEVELS];

    memset(t, 0, sizeof(*t));
    t->level = GMEM_PT_LEVELS;
    if (va >> GMEM_VA_BITS) {
        return GMEM_WALK_NOT_PRESENT;   /* no entry can map it */
    }

    for (int level = GMEM_PT_LEVELS; level >= 1; level--) {
        int depth = GMEM_PT_LEVELS - level;
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
        if ((table_hbm && !gmem_in_hbm(table, GMEM_PAGE_SIZE, hbm_size)) ||
            !read_pte(opaque, table_hbm, t->pte_addr, &pte)) {
            return GMEM_WALK_BAD_ADDRESS;
        }
        t->pte = pte;
        if (!(pte & GMEM_PTE_VALID)) {
            return GMEM_WALK_NOT_PRESENT;
        }

        if (level == 1 || (level == 2 && (pte & GMEM_PTE_HUGE))) {
            uint64_t size = level == 1 ? GMEM_PAGE_SIZE : GMEM_HUGE_SIZE;
            uint64_t rsvd = GMEM_PTE_LEAF_RSVD |
                            (level == 1 ? GMEM_PTE_HUGE : 0) |
                            ((size - 1) & GMEM_PTE_ADDR_MASK);

            if (pte & rsvd) {
                return GMEM_WALK_RESERVED;
            }
            t->va_base = va & ~(size - 1);
            t->page_size = size;
            t->target = pte & GMEM_PTE_ADDR_MASK;
            t->target_hbm = pte & GMEM_PTE_HBM;
            t->perms = gmem_pte_perms(pte);
            if (t->target_hbm && !gmem_in_hbm(t->target, size, hbm_size)) {
                return GMEM_WALK_BAD_ADDRESS;
            }
            return GMEM_WALK_OK;
        }

        /* A pointer to the next table: permissions live in leaves only. */
        if (pte & GMEM_PTE_TABLE_RSVD) {
            return GMEM_WALK_RESERVED;
        }
        table = pte & GMEM_PTE_ADDR_MASK;
        table_hbm = pte & GMEM_PTE_HBM;
    }
    g_assert_not_reached();     /* level 1 always returns */
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
