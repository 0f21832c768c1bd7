/*
 * Unit tests of gmem-accel's QEMU-free core: the page-table walker over
 * tables in fake system memory and HBM, the TLB, and command descriptors
 * (decoding, validation of every field, splitting into steps).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"     /* host-tests/shim: GLib and the C library */
#include "gmem-accel-core.h"

#define SYS_SIZE    (8u << 20)
#define HBM_SIZE    (4u << 20)

static uint8_t sys_mem[SYS_SIZE];
static uint8_t hbm_mem[HBM_SIZE];
static unsigned pte_reads;

/* Counts accesses: a read of several entries is one. */
static bool fake_read_pte(void *opaque G_GNUC_UNUSED, bool hbm, uint64_t addr,
                          uint64_t *pte, unsigned n)
{
    uint64_t size = hbm ? HBM_SIZE : SYS_SIZE;
    const uint8_t *mem = hbm ? hbm_mem : sys_mem;

    pte_reads++;
    if (addr >= size || size - addr < 8 * n) {
        return false;
    }
    for (unsigned e = 0; e < n; e++) {
        pte[e] = 0;
        for (int i = 7; i >= 0; i--) {
            pte[e] = pte[e] << 8 | mem[addr + 8 * e + i];
        }
    }
    return true;
}

static void set_pte(bool hbm, uint64_t table, uint64_t va, int level,
                    uint64_t pte)
{
    uint8_t *mem = hbm ? hbm_mem : sys_mem;
    uint64_t addr = table + GMEM_PT_INDEX(va, level) * 8;

    for (int i = 0; i < 8; i++) {
        mem[addr + i] = pte >> (8 * i);
    }
}

/* System-memory tables at 0x1000 (L4), 0x2000 (L3), 0x3000 (L2), 0x4000 (L1) */
#define L4 0x1000
#define L3 0x2000
#define L2 0x3000
#define L1 0x4000
#define TABLE(a) ((a) | GMEM_PTE_VALID)
#define RW (GMEM_PTE_VALID | GMEM_PTE_READ | GMEM_PTE_WRITE)

static void map_tables(uint64_t va)
{
    memset(sys_mem, 0, 0x10000);
    set_pte(false, L4, va, 4, TABLE(L3));
    set_pte(false, L3, va, 3, TABLE(L2));
    set_pte(false, L2, va, 2, TABLE(L1));
}

static GmemWalkStatus walk(uint64_t va, GmemTranslation *t)
{
    return gmem_pt_walk(fake_read_pte, NULL, L4, false, HBM_SIZE, va, t);
}

static void test_walk_4k(void)
{
    const uint64_t va = 0x7f1234567000ull;
    GmemTranslation t;

    map_tables(va);
    set_pte(false, L1, va, 1, 0x5000 | RW);
    pte_reads = 0;
    g_assert_cmpint(walk(va + 0x123, &t), ==, GMEM_WALK_OK);
    g_assert_cmpuint(pte_reads, ==, 4);
    g_assert_cmphex(t.va_base, ==, va);
    g_assert_cmphex(t.page_size, ==, GMEM_PAGE_SIZE);
    g_assert_cmphex(t.target, ==, 0x5000);
    g_assert_false(t.target_hbm);
    g_assert_cmpuint(t.perms, ==, GMEM_ACCESS_READ | GMEM_ACCESS_WRITE);
    g_assert_cmpint(t.level, ==, 1);
    g_assert_cmphex(t.pte_addr, ==, L1 + GMEM_PT_INDEX(va, 1) * 8);
    g_assert_cmpint(gmem_pt_check(&t, GMEM_ACCESS_WRITE), ==, GMEM_WALK_OK);
    g_assert_cmpint(gmem_pt_check(&t, GMEM_ACCESS_ATOMIC), ==,
                    GMEM_WALK_PERMISSION);

    /* The neighbouring page is not mapped: a fault at level 1. */
    g_assert_cmpint(walk(va + GMEM_PAGE_SIZE, &t), ==, GMEM_WALK_NOT_PRESENT);
    g_assert_cmpint(t.level, ==, 1);
    g_assert_cmphex(t.pte, ==, 0);

    /* From the level-1 table (the walk cache's start): one read, same page */
    pte_reads = 0;
    g_assert_cmpint(gmem_pt_walk_from(fake_read_pte, NULL, L1, false, 1,
                                      HBM_SIZE, va + 8, &t), ==, GMEM_WALK_OK);
    g_assert_cmpuint(pte_reads, ==, 1);
    g_assert_cmphex(t.target, ==, 0x5000);
    g_assert_cmphex(t.pte_addr, ==, L1 + GMEM_PT_INDEX(va, 1) * 8);
    /* from level 2: two reads; a level out of range maps nothing */
    pte_reads = 0;
    g_assert_cmpint(gmem_pt_walk_from(fake_read_pte, NULL, L2, false, 2,
                                      HBM_SIZE, va, &t), ==, GMEM_WALK_OK);
    g_assert_cmpuint(pte_reads, ==, 2);
    g_assert_cmpint(gmem_pt_walk_from(fake_read_pte, NULL, L1, false, 0,
                                      HBM_SIZE, va, &t), ==,
                    GMEM_WALK_NOT_PRESENT);
    g_assert_cmpint(gmem_pt_walk_from(fake_read_pte, NULL, L1, false, 5,
                                      HBM_SIZE, va, &t), ==,
                    GMEM_WALK_NOT_PRESENT);
}

static void test_walk_perms(void)
{
    const uint64_t va = 0x400000;
    GmemTranslation t;

    map_tables(va);
    set_pte(false, L1, va, 1, 0x5000 | GMEM_PTE_VALID | GMEM_PTE_READ);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_OK);
    g_assert_cmpuint(t.perms, ==, GMEM_ACCESS_READ);
    g_assert_cmpint(gmem_pt_check(&t, GMEM_ACCESS_WRITE), ==,
                    GMEM_WALK_PERMISSION);

    set_pte(false, L1, va, 1, 0x5000 | RW | GMEM_PTE_ATOMIC);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_OK);
    g_assert_cmpuint(t.perms, ==, GMEM_ACCESS_READ | GMEM_ACCESS_WRITE |
                     GMEM_ACCESS_ATOMIC);

    /* Atomic needs R and W too, and a valid entry with no bits allows none */
    set_pte(false, L1, va, 1, 0x5000 | GMEM_PTE_VALID | GMEM_PTE_ATOMIC);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_OK);
    g_assert_cmpuint(t.perms, ==, 0);
}

static void test_walk_2m_and_hbm(void)
{
    const uint64_t va = 0x40000000ull + 5 * GMEM_HUGE_SIZE;
    GmemTranslation t;

    map_tables(va);
    set_pte(false, L2, va, 2, GMEM_HUGE_SIZE | RW | GMEM_PTE_HUGE |
            GMEM_PTE_HBM);
    g_assert_cmpint(walk(va + 0x1234f, &t), ==, GMEM_WALK_OK);
    g_assert_cmpint(t.level, ==, 2);
    g_assert_cmphex(t.va_base, ==, va);
    g_assert_cmphex(t.page_size, ==, GMEM_HUGE_SIZE);
    g_assert_cmphex(t.target, ==, GMEM_HUGE_SIZE);
    g_assert_true(t.target_hbm);

    /* A 2 MiB page whose address is not 2 MiB aligned is malformed. */
    set_pte(false, L2, va, 2, (GMEM_HUGE_SIZE + 0x1000) | RW |
            GMEM_PTE_HUGE | GMEM_PTE_HBM);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_RESERVED);

    /* A 2 MiB page running past the end of HBM is a bad address. */
    set_pte(false, L2, va, 2, (uint64_t)HBM_SIZE | RW | GMEM_PTE_HUGE |
            GMEM_PTE_HBM);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_BAD_ADDRESS);

    /* Tables may live in HBM: L1 at HBM offset 0x10000. */
    set_pte(false, L2, va, 2, 0x10000 | GMEM_PTE_VALID | GMEM_PTE_HBM);
    memset(hbm_mem + 0x10000, 0, 0x1000);
    set_pte(true, 0x10000, va + 0x3000, 1, 0x7000 | RW);
    g_assert_cmpint(walk(va + 0x3000, &t), ==, GMEM_WALK_OK);
    g_assert_true(t.pte_hbm);
    g_assert_cmphex(t.target, ==, 0x7000);
    g_assert_false(t.target_hbm);
}

/* Map 64 KiB at @va onto @target as one CONT group of @bits. */
static void set_cont_group(uint64_t va, uint64_t target, uint64_t bits)
{
    for (unsigned i = 0; i < GMEM_CONT_ENTRIES; i++) {
        set_pte(false, L1, va + i * GMEM_PAGE_SIZE, 1,
                (target + i * GMEM_PAGE_SIZE) | bits | GMEM_PTE_CONT);
    }
}

static void test_walk_64k(void)
{
    const uint64_t va = 0x7f0000130000ull;     /* 64 KiB aligned */
    const uint64_t hbm = GMEM_PTE_HBM | RW;
    GmemTranslation t;

    map_tables(va);
    set_cont_group(va, 0x30000, hbm);
    /* The group's software bits may differ entry by entry. */
    set_pte(false, L1, va + 0x5000, 1, (0x35000 | hbm | GMEM_PTE_CONT) |
            GMEM_PTE_SW_MASK);
    pte_reads = 0;
    g_assert_cmpint(walk(va + 0x7abc, &t), ==, GMEM_WALK_OK);
    /* four levels, then the group's 16 entries in one read */
    g_assert_cmpuint(pte_reads, ==, 4 + 1);
    g_assert_cmpint(t.level, ==, 1);
    g_assert_cmphex(t.va_base, ==, va);
    g_assert_cmphex(t.page_size, ==, GMEM_CONT_SIZE);
    g_assert_cmphex(t.target, ==, 0x30000);
    g_assert_true(t.target_hbm);
    g_assert_cmpuint(t.ptes, ==, GMEM_CONT_ENTRIES);
    g_assert_cmphex(t.pte, ==, 0x30000 | hbm | GMEM_PTE_CONT);
    g_assert_cmphex(t.pte_addr, ==, L1 + GMEM_PT_INDEX(va, 1) * 8);

    /* A group that does not hold together maps 4 KiB pages, no error. */
    set_pte(false, L1, va + 0x9000, 1, 0x39000 | GMEM_PTE_VALID |
            GMEM_PTE_READ | GMEM_PTE_HBM | GMEM_PTE_CONT);   /* read-only */
    g_assert_cmpint(walk(va + 0x7abc, &t), ==, GMEM_WALK_OK);
    g_assert_cmphex(t.page_size, ==, GMEM_PAGE_SIZE);
    g_assert_cmphex(t.va_base, ==, va + 0x7000);
    g_assert_cmphex(t.target, ==, 0x37000);
    g_assert_cmpuint(t.ptes, ==, 1);
    g_assert_cmpint(walk(va + 0x9000, &t), ==, GMEM_WALK_OK);
    g_assert_cmpuint(t.perms, ==, GMEM_ACCESS_READ);

    set_cont_group(va, 0x30000, hbm);
    set_pte(false, L1, va + 0xf000, 1, 0);                  /* a hole */
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_OK);
    g_assert_cmphex(t.page_size, ==, GMEM_PAGE_SIZE);
    g_assert_cmpint(walk(va + 0xf000, &t), ==, GMEM_WALK_NOT_PRESENT);

    set_cont_group(va, 0x30000, hbm);
    set_pte(false, L1, va + 0x3000, 1, 0x3000 | hbm | GMEM_PTE_CONT);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_OK);        /* not in order */
    g_assert_cmphex(t.page_size, ==, GMEM_PAGE_SIZE);

    set_cont_group(va, 0x31000, hbm);                       /* misaligned */
    g_assert_cmpint(walk(va + 0x2000, &t), ==, GMEM_WALK_OK);
    g_assert_cmphex(t.page_size, ==, GMEM_PAGE_SIZE);
    g_assert_cmphex(t.target, ==, 0x33000);

    set_cont_group(va, 0x30000, RW);                        /* HBM differs */
    set_pte(false, L1, va, 1, 0x30000 | hbm | GMEM_PTE_CONT);
    g_assert_cmpint(walk(va + 0x1000, &t), ==, GMEM_WALK_OK);
    g_assert_cmphex(t.page_size, ==, GMEM_PAGE_SIZE);
    g_assert_false(t.target_hbm);

    /* A whole group in system memory, then one at the top of HBM. */
    set_cont_group(va, 0x50000, RW);
    g_assert_cmpint(walk(va + 0xffff, &t), ==, GMEM_WALK_OK);
    g_assert_cmphex(t.page_size, ==, GMEM_CONT_SIZE);
    g_assert_false(t.target_hbm);
    set_cont_group(va, HBM_SIZE - GMEM_CONT_SIZE, hbm);
    g_assert_cmpint(walk(va + 0x8000, &t), ==, GMEM_WALK_OK);
    g_assert_cmphex(t.target, ==, HBM_SIZE - GMEM_CONT_SIZE);
    g_assert_cmphex(t.page_size, ==, GMEM_CONT_SIZE);

    /* CONT is reserved in a 2 MiB leaf and in a table pointer. */
    set_pte(false, L2, va, 2, GMEM_HUGE_SIZE | RW | GMEM_PTE_HUGE |
            GMEM_PTE_CONT);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_RESERVED);
    g_assert_cmpint(t.level, ==, 2);
    set_pte(false, L2, va, 2, TABLE(L1) | GMEM_PTE_CONT);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_RESERVED);
}

static void test_walk_malformed(void)
{
    const uint64_t va = 0x12345000;
    GmemTranslation t;

    /* Reserved bit 7 in a leaf, bit 1 (R) in a table pointer. */
    map_tables(va);
    set_pte(false, L1, va, 1, 0x5000 | RW | (1ull << 7));
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_RESERVED);
    g_assert_cmpint(t.level, ==, 1);
    set_pte(false, L1, va, 1, 0x5000 | RW | (1ull << 60));
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_RESERVED);
    set_pte(false, L3, va, 3, TABLE(L2) | GMEM_PTE_READ);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_RESERVED);
    g_assert_cmpint(t.level, ==, 3);

    /* HUGE at level 3 (no 1 GiB pages) and at level 1. */
    set_pte(false, L3, va, 3, TABLE(L2) | GMEM_PTE_HUGE);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_RESERVED);
    set_pte(false, L3, va, 3, TABLE(L2));
    set_pte(false, L1, va, 1, 0x5000 | RW | GMEM_PTE_HUGE);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_RESERVED);

    /* Software bits 11:8 are ignored. */
    set_pte(false, L1, va, 1, 0x5000 | RW | GMEM_PTE_SW_MASK);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_OK);

    /* A table past the end of system memory or of HBM. */
    set_pte(false, L2, va, 2, TABLE(0x100000000ull));
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_BAD_ADDRESS);
    set_pte(false, L2, va, 2, TABLE((uint64_t)HBM_SIZE) | GMEM_PTE_HBM);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_BAD_ADDRESS);
    g_assert_cmpint(t.level, ==, 1);

    /* Root past the end of HBM. */
    g_assert_cmpint(gmem_pt_walk(fake_read_pte, NULL, HBM_SIZE, true,
                                 HBM_SIZE, va, &t), ==,
                    GMEM_WALK_BAD_ADDRESS);

    /* VA beyond 48 bits cannot be mapped, and reads no entry. */
    pte_reads = 0;
    g_assert_cmpint(walk(1ull << 48, &t), ==, GMEM_WALK_NOT_PRESENT);
    g_assert_cmpuint(pte_reads, ==, 0);
}

static void test_walk_loops(void)
{
    const uint64_t va = 0x12345000;
    GmemTranslation t;

    /* L4 points at itself. */
    map_tables(va);
    set_pte(false, L4, va, 4, TABLE(L4));
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_LOOP);
    g_assert_cmphex(t.pte_addr, ==, L4);

    /* L2 points back at L3. */
    map_tables(va);
    set_pte(false, L2, va, 2, TABLE(L3));
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_LOOP);

    /* The same address in the other aperture is another table, not a loop */
    map_tables(va);
    set_pte(false, L2, va, 2, TABLE(L3) | GMEM_PTE_HBM);
    memset(hbm_mem + L3, 0, 0x1000);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_NOT_PRESENT);
}

/* ---- page-table dump ---- */

#define MAX_RUNS 64

typedef struct Runs {
    unsigned n;
    unsigned stop_after;        /* 0: never stop */
    GmemPtRange r[MAX_RUNS];
} Runs;

static bool collect(void *opaque, const GmemPtRange *r)
{
    Runs *runs = opaque;

    g_assert_cmpuint(runs->n, <, MAX_RUNS);
    runs->r[runs->n++] = *r;
    return runs->n != runs->stop_after;
}

static GmemPtDumpResult dump(uint64_t start, uint64_t end, unsigned max_tables,
                             Runs *runs)
{
    runs->n = 0;
    return gmem_pt_dump(fake_read_pte, NULL, L4, false, HBM_SIZE, start, end,
                        max_tables, collect, runs);
}

/*
 * Every page of every run must translate exactly as the walker says, and
 * the pages around a run must not (or must belong to the neighbouring run).
 */
static void check_runs_against_walker(const Runs *runs)
{
    for (unsigned i = 0; i < runs->n; i++) {
        const GmemPtRange *r = &runs->r[i];

        if (r->status != GMEM_WALK_OK) {
            continue;
        }
        g_assert_cmphex(r->size / r->first.page_size * r->first.ptes, ==,
                        r->pages);
        g_assert_cmphex(r->size % r->first.page_size, ==, 0);
        for (uint64_t p = 0; p < r->size / r->first.page_size; p++) {
            uint64_t va = r->va + p * r->first.page_size;
            GmemTranslation t;

            g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_OK);
            g_assert_cmphex(t.va_base, ==, va);
            g_assert_cmphex(t.page_size, ==, r->first.page_size);
            g_assert_cmphex(t.target, ==,
                            r->first.target + p * r->first.page_size);
            g_assert_cmpint(t.target_hbm, ==, r->first.target_hbm);
            g_assert_cmpint(t.perms, ==, r->first.perms);
            g_assert_cmphex(t.pte_addr, ==,
                            r->first.pte_addr + 8 * p * r->first.ptes);
        }
    }
}

static void test_dump_runs(void)
{
    const uint64_t va = 0x7f0000000000ull;
    const uint64_t huge_va = va + 2 * GMEM_HUGE_SIZE;
    GmemTranslation t;
    Runs runs = { 0 };

    /* Four contiguous RW pages, one read-only page, a gap, one more page. */
    map_tables(va);
    for (int i = 0; i < 4; i++) {
        set_pte(false, L1, va + i * 0x1000, 1, (0x100000 + i * 0x1000) | RW);
    }
    set_pte(false, L1, va + 0x4000, 1,
            0x104000 | GMEM_PTE_VALID | GMEM_PTE_READ);
    set_pte(false, L1, va + 0x6000, 1, 0x106000 | RW);
    /* Two 2 MiB pages in HBM with all permissions. */
    for (int i = 0; i < 2; i++) {
        set_pte(false, L2, huge_va + i * GMEM_HUGE_SIZE, 2,
                (i * GMEM_HUGE_SIZE) | GMEM_PTE_VALID | GMEM_PTE_PERM_MASK |
                GMEM_PTE_HUGE | GMEM_PTE_HBM);
    }

    g_assert_cmpint(dump(0, UINT64_MAX, 16, &runs), ==, GMEM_DUMP_COMPLETE);
    g_assert_cmpuint(runs.n, ==, 4);
    g_assert_cmphex(runs.r[0].va, ==, va);
    g_assert_cmpuint(runs.r[0].pages, ==, 4);
    g_assert_cmphex(runs.r[0].size, ==, 0x4000);
    g_assert_cmphex(runs.r[0].first.target, ==, 0x100000);
    g_assert_cmphex(runs.r[0].first.pte_addr, ==,
                    L1 + GMEM_PT_INDEX(va, 1) * 8);
    g_assert_cmpint(runs.r[1].first.perms, ==, GMEM_ACCESS_READ);
    g_assert_cmpuint(runs.r[1].pages, ==, 1);
    g_assert_cmphex(runs.r[2].va, ==, va + 0x6000);
    g_assert_cmphex(runs.r[3].va, ==, huge_va);
    g_assert_cmpuint(runs.r[3].pages, ==, 2);
    g_assert_cmphex(runs.r[3].first.page_size, ==, GMEM_HUGE_SIZE);
    g_assert_true(runs.r[3].first.target_hbm);
    g_assert_cmpint(runs.r[3].first.level, ==, 2);
    check_runs_against_walker(&runs);

    /* A window: only what overlaps [va + 0x2000, va + 0x5000). */
    g_assert_cmpint(dump(va + 0x2000, va + 0x5000, 16, &runs), ==,
                    GMEM_DUMP_COMPLETE);
    g_assert_cmpuint(runs.n, ==, 2);
    g_assert_cmphex(runs.r[0].va, ==, va + 0x2000);
    g_assert_cmpuint(runs.r[0].pages, ==, 2);

    /* Non-contiguous targets split a run even with contiguous VA. */
    set_pte(false, L1, va + 0x1000, 1, 0x200000 | RW);
    g_assert_cmpint(dump(va, va + 0x4000, 16, &runs), ==, GMEM_DUMP_COMPLETE);
    g_assert_cmpuint(runs.n, ==, 3);
    check_runs_against_walker(&runs);

    /* The callback can stop the dump; the budget of tables bounds it. */
    runs.stop_after = 2;
    g_assert_cmpint(dump(0, UINT64_MAX, 16, &runs), ==, GMEM_DUMP_STOPPED);
    g_assert_cmpuint(runs.n, ==, 2);
    runs.stop_after = 0;
    g_assert_cmpint(dump(0, UINT64_MAX, 3, &runs), ==,
                    GMEM_DUMP_TOO_MANY_TABLES);   /* L1 is the 4th table */
    g_assert_cmpuint(runs.n, ==, 0);
    g_assert_cmpint(dump(0, UINT64_MAX, 4, &runs), ==, GMEM_DUMP_COMPLETE);
    /* A window reads only the tables it overlaps. */
    g_assert_cmpint(dump(huge_va, UINT64_MAX, 3, &runs), ==,
                    GMEM_DUMP_COMPLETE);
    g_assert_cmpuint(runs.n, ==, 1);

    /* Nothing mapped: nothing reported, and walking agrees. */
    memset(sys_mem, 0, 0x10000);
    g_assert_cmpint(dump(0, UINT64_MAX, 16, &runs), ==, GMEM_DUMP_COMPLETE);
    g_assert_cmpuint(runs.n, ==, 0);
    g_assert_cmpint(walk(va, &t), ==, GMEM_WALK_NOT_PRESENT);
}

static void test_dump_malformed(void)
{
    const uint64_t va = 0x12345000;
    Runs runs = { 0 };

    /* A reserved bit in one leaf: reported alone, the others still are. */
    map_tables(va);
    set_pte(false, L1, va, 1, 0x5000 | RW);
    set_pte(false, L1, va + 0x1000, 1, 0x6000 | RW | (1ull << 7));
    set_pte(false, L1, va + 0x2000, 1, 0x7000 | RW);
    g_assert_cmpint(dump(0, UINT64_MAX, 16, &runs), ==, GMEM_DUMP_COMPLETE);
    g_assert_cmpuint(runs.n, ==, 3);
    g_assert_cmpint(runs.r[1].status, ==, GMEM_WALK_RESERVED);
    g_assert_cmphex(runs.r[1].va, ==, va + 0x1000);
    g_assert_cmphex(runs.r[1].first.pte, ==, 0x6000 | RW | (1ull << 7));
    g_assert_cmphex(runs.r[1].first.pte_addr, ==,
                    L1 + GMEM_PT_INDEX(va + 0x1000, 1) * 8);
    g_assert_cmpint(runs.r[2].status, ==, GMEM_WALK_OK);

    /* L2 points back at L3: a loop, covering the looping table's VA. */
    map_tables(va);
    set_pte(false, L2, va, 2, TABLE(L3));
    g_assert_cmpint(dump(0, UINT64_MAX, 16, &runs), ==, GMEM_DUMP_COMPLETE);
    g_assert_cmpuint(runs.n, ==, 1);
    g_assert_cmpint(runs.r[0].status, ==, GMEM_WALK_LOOP);
    g_assert_cmphex(runs.r[0].first.pte_addr, ==, L3);
    g_assert_cmpint(runs.r[0].first.level, ==, 1);

    /* Every L4 entry points at the same L3 whose entries all point at the
     * same L2...: a table DAG the budget must bound. */
    memset(sys_mem, 0, 0x10000);
    for (uint64_t i = 0; i < 512; i++) {
        set_pte(false, L4, i << 39, 4, TABLE(L3));
        set_pte(false, L3, i << 30, 3, TABLE(L2));
        set_pte(false, L2, i << 21, 2, TABLE(L1));
    }
    pte_reads = 0;
    g_assert_cmpint(dump(0, UINT64_MAX, 100, &runs), ==,
                    GMEM_DUMP_TOO_MANY_TABLES);
    g_assert_cmpuint(pte_reads, <=, 100 * 512);

    /* A table in HBM past its end, and a root past the end of RAM. */
    map_tables(va);
    set_pte(false, L2, va, 2, TABLE((uint64_t)HBM_SIZE) | GMEM_PTE_HBM);
    g_assert_cmpint(dump(0, UINT64_MAX, 16, &runs), ==, GMEM_DUMP_COMPLETE);
    g_assert_cmpuint(runs.n, ==, 1);
    g_assert_cmpint(runs.r[0].status, ==, GMEM_WALK_BAD_ADDRESS);
    g_assert_cmphex(runs.r[0].va, ==, va & ~(GMEM_HUGE_SIZE - 1));
    g_assert_cmphex(runs.r[0].size, ==, GMEM_HUGE_SIZE);
    runs.n = 0;
    g_assert_cmpint(gmem_pt_dump(fake_read_pte, NULL, 1ull << 40, false,
                                 HBM_SIZE, 0, UINT64_MAX, 16, collect, &runs),
                    ==, GMEM_DUMP_COMPLETE);
    g_assert_cmpuint(runs.n, ==, 1);
    g_assert_cmpint(runs.r[0].status, ==, GMEM_WALK_BAD_ADDRESS);
    g_assert_cmphex(runs.r[0].size, ==, 1ull << 48);
}

static void test_dump_64k(void)
{
    const uint64_t va = 0x7f0000200000ull;
    Runs runs = { 0 };

    /* Two adjacent groups, then a broken one, then one 4 KiB page. */
    map_tables(va);
    set_cont_group(va, 0x40000, GMEM_PTE_HBM | RW);
    set_cont_group(va + GMEM_CONT_SIZE, 0x50000, GMEM_PTE_HBM | RW);
    set_cont_group(va + 2 * GMEM_CONT_SIZE, 0x60000, GMEM_PTE_HBM | RW);
    set_pte(false, L1, va + 2 * GMEM_CONT_SIZE + 0x4000, 1, 0);
    set_pte(false, L1, va + 3 * GMEM_CONT_SIZE, 1, 0x90000 | RW);

    g_assert_cmpint(dump(0, UINT64_MAX, 16, &runs), ==, GMEM_DUMP_COMPLETE);
    g_assert_cmpuint(runs.n, ==, 4);
    g_assert_cmphex(runs.r[0].va, ==, va);
    g_assert_cmphex(runs.r[0].size, ==, 2 * GMEM_CONT_SIZE);
    g_assert_cmphex(runs.r[0].first.page_size, ==, GMEM_CONT_SIZE);
    g_assert_cmpuint(runs.r[0].pages, ==, 2 * GMEM_CONT_ENTRIES);
    g_assert_cmphex(runs.r[0].first.target, ==, 0x40000);
    /* The broken group: its entries as 4 KiB pages around the hole. */
    g_assert_cmphex(runs.r[1].va, ==, va + 2 * GMEM_CONT_SIZE);
    g_assert_cmphex(runs.r[1].size, ==, 4 * GMEM_PAGE_SIZE);
    g_assert_cmphex(runs.r[1].first.page_size, ==, GMEM_PAGE_SIZE);
    g_assert_cmphex(runs.r[2].size, ==, 11 * GMEM_PAGE_SIZE);
    g_assert_cmphex(runs.r[3].va, ==, va + 3 * GMEM_CONT_SIZE);
    g_assert_cmphex(runs.r[3].first.page_size, ==, GMEM_PAGE_SIZE);
    check_runs_against_walker(&runs);

    /* A window starting inside a group reports the group once. */
    g_assert_cmpint(dump(va + GMEM_CONT_SIZE + 0x3000,
                         va + GMEM_CONT_SIZE + 0x5000, 16, &runs), ==,
                    GMEM_DUMP_COMPLETE);
    g_assert_cmpuint(runs.n, ==, 1);
    g_assert_cmphex(runs.r[0].va, ==, va + GMEM_CONT_SIZE);
    g_assert_cmphex(runs.r[0].size, ==, GMEM_CONT_SIZE);
    g_assert_cmpuint(runs.r[0].pages, ==, GMEM_CONT_ENTRIES);
}

static GmemTranslation xlat(uint64_t va_base, uint64_t size, uint64_t target)
{
    return (GmemTranslation) {
        .va_base = va_base, .page_size = size, .target = target,
        .perms = GMEM_ACCESS_READ,
    };
}

static void test_tlb(void)
{
    GmemTlb tlb;
    GmemTranslation a = xlat(0x10000, GMEM_PAGE_SIZE, 0xa000);
    GmemTranslation b = xlat(0x200000, GMEM_HUGE_SIZE, 0x400000);
    const GmemTlbEntry *e;

    gmem_tlb_init(&tlb, 64, 0);
    g_assert_null(gmem_tlb_lookup(&tlb, 1, 0x10000));
    gmem_tlb_insert(&tlb, 1, &a);
    gmem_tlb_insert(&tlb, 1, &b);
    gmem_tlb_insert(&tlb, 2, &a);
    g_assert_cmpuint(gmem_tlb_count(&tlb), ==, 3);

    e = gmem_tlb_lookup(&tlb, 1, 0x10fff);
    g_assert_nonnull(e);
    g_assert_cmphex(e->t.target, ==, 0xa000);
    g_assert_null(gmem_tlb_lookup(&tlb, 1, 0x11000));
    g_assert_null(gmem_tlb_lookup(&tlb, 3, 0x10000));
    e = gmem_tlb_lookup(&tlb, 1, 0x3fffff);
    g_assert_nonnull(e);
    g_assert_cmphex(e->t.page_size, ==, GMEM_HUGE_SIZE);

    /* A range touching the 2M page's last byte drops it, not the 4K one. */
    g_assert_cmpuint(gmem_tlb_invalidate(&tlb, 1, 0x3ff000, 0x1000), ==, 1);
    g_assert_null(gmem_tlb_lookup(&tlb, 1, 0x200000));
    g_assert_nonnull(gmem_tlb_lookup(&tlb, 1, 0x10000));
    /* A range ending where a page starts leaves it. */
    g_assert_cmpuint(gmem_tlb_invalidate(&tlb, 1, 0, 0x10000), ==, 0);
    /* Whole context 1, then every context. */
    g_assert_cmpuint(gmem_tlb_invalidate(&tlb, 1, 0, 0), ==, 1);
    g_assert_nonnull(gmem_tlb_lookup(&tlb, 2, 0x10000));
    g_assert_cmpuint(gmem_tlb_invalidate(&tlb, GMEM_INV_ALL_CONTEXTS, 0, 0),
                     ==, 1);
    g_assert_cmpuint(gmem_tlb_count(&tlb), ==, 0);

    /* A 64 KiB page: found from any VA in it, dropped by any page of it. */
    {
        GmemTranslation c = xlat(0x7f0000130000ull, GMEM_CONT_SIZE, 0x30000);

        gmem_tlb_insert(&tlb, 1, &c);
        e = gmem_tlb_lookup(&tlb, 1, 0x7f000013fff8ull);
        g_assert_nonnull(e);
        g_assert_cmphex(e->t.page_size, ==, GMEM_CONT_SIZE);
        g_assert_null(gmem_tlb_lookup(&tlb, 1, 0x7f0000140000ull));
        g_assert_cmpuint(gmem_tlb_invalidate(&tlb, 1, 0x7f0000138000ull,
                                             0x1000), ==, 1);
        g_assert_null(gmem_tlb_lookup(&tlb, 1, 0x7f0000130000ull));
    }

    /* A range that wraps around the address space reaches the top. */
    gmem_tlb_insert(&tlb, 1, &a);
    g_assert_cmpuint(gmem_tlb_invalidate(&tlb, 1, 0x8000, UINT64_MAX), ==, 1);
    gmem_tlb_free(&tlb);
}

/*
 * The walk cache: one level-1 table per (context, 2 MiB of VA), dropped by
 * any invalidation that overlaps its 2 MiB (a changed pointer above it).
 */
static void test_walk_cache(void)
{
    GmemTlb tlb;
    const GmemWalkEntry *w;

    gmem_tlb_init(&tlb, 16, 0);
    gmem_walk_insert(&tlb, 1, 0x200000, 0x4000, false);
    g_assert_null(gmem_walk_lookup(&tlb, 1, 0x200000));     /* none: off */
    gmem_tlb_free(&tlb);

    gmem_tlb_init(&tlb, 16, 64);      /* 64 slots: these two do not collide */
    g_assert_null(gmem_walk_lookup(&tlb, 1, 0x200000));
    gmem_walk_insert(&tlb, 1, 0x212345, 0x4000, false);
    gmem_walk_insert(&tlb, 2, 0x200000, 0x8000, true);
    w = gmem_walk_lookup(&tlb, 1, 0x3ff000);
    g_assert_nonnull(w);
    g_assert_cmphex(w->va, ==, 0x200000);
    g_assert_cmphex(w->table, ==, 0x4000);
    g_assert_false(w->table_hbm);
    g_assert_null(gmem_walk_lookup(&tlb, 1, 0x400000));
    g_assert_null(gmem_walk_lookup(&tlb, 3, 0x200000));
    w = gmem_walk_lookup(&tlb, 2, 0x200000);
    g_assert_true(w && w->table_hbm && w->table == 0x8000);

    /* A range ending where the region starts leaves it; one byte in drops */
    gmem_tlb_invalidate(&tlb, 1, 0x100000, 0x100000);
    g_assert_nonnull(gmem_walk_lookup(&tlb, 1, 0x200000));
    gmem_tlb_invalidate(&tlb, 1, 0x3ff000, 0x1000);
    g_assert_null(gmem_walk_lookup(&tlb, 1, 0x200000));
    g_assert_nonnull(gmem_walk_lookup(&tlb, 2, 0x200000));
    /* a 1 GiB range (a level-3 pointer) and every context */
    gmem_walk_insert(&tlb, 1, 0x200000, 0x4000, false);
    gmem_tlb_invalidate(&tlb, 1, 0, 1ull << 30);
    g_assert_null(gmem_walk_lookup(&tlb, 1, 0x200000));
    gmem_tlb_invalidate(&tlb, GMEM_INV_ALL_CONTEXTS, 0, 0);
    g_assert_null(gmem_walk_lookup(&tlb, 2, 0x200000));
    gmem_tlb_free(&tlb);
}

static void test_tlb_capacity(void)
{
    GmemTlb tlb;
    unsigned hits = 0;

    /* A one-entry TLB holds exactly the last translation. */
    gmem_tlb_init(&tlb, 1, 0);
    for (uint64_t p = 0; p < 8; p++) {
        GmemTranslation t = xlat(p << 12, GMEM_PAGE_SIZE, p << 20);

        gmem_tlb_insert(&tlb, 0, &t);
    }
    g_assert_cmpuint(gmem_tlb_count(&tlb), ==, 1);
    for (uint64_t p = 0; p < 8; p++) {
        hits += gmem_tlb_lookup(&tlb, 0, p << 12) != NULL;
    }
    g_assert_cmpuint(hits, ==, 1);
    g_assert_nonnull(gmem_tlb_lookup(&tlb, 0, 7 << 12));
    gmem_tlb_free(&tlb);
}

static GmemCmd cmd_copy(unsigned dkind, uint64_t dst, unsigned skind,
                        uint64_t src, uint64_t size)
{
    return (GmemCmd) {
        .opcode = GMEM_OP_COPY, .ctx = 3,
        .flags = GMEM_CMD_F_DST(dkind) | GMEM_CMD_F_SRC(skind),
        .dst = dst, .src = src, .size = size,
    };
}

static void test_cmd_roundtrip(void)
{
    GmemCmd c = {
        .opcode = GMEM_OP_SCALE_ADD, .flags = GMEM_CMD_F_WIDE, .ctx = 0x1234,
        .status = 0xa5a5a5a5, .dst = 0x1122334455667788ull,
        .src = 0x99aabbccddeeff00ull, .size = 42, .value = 7, .value2 = 9,
        .dst_stride = 0x10, .src_stride = 0x20, .reserved = 0x55,
    }, d;
    uint8_t raw[GMEM_CMD_SIZE];

    gmem_cmd_encode(&c, raw);
    /* Spot-check the byte offsets docs/hardware-spec.md gives. */
    g_assert_cmpuint(raw[0], ==, GMEM_OP_SCALE_ADD);
    g_assert_cmpuint(raw[2], ==, 0x34);
    g_assert_cmpuint(raw[3], ==, 0x12);
    g_assert_cmpuint(raw[8], ==, 0x88);
    g_assert_cmpuint(raw[15], ==, 0x11);
    g_assert_cmpuint(raw[52], ==, 0x20);
    gmem_cmd_decode(raw, &d);
    g_assert_cmpmem(&c, sizeof(c), &d, sizeof(d));
}

static void test_cmd_validate(void)
{
    GmemCmd c;

#define EXPECT(cmd, st) \
    g_assert_cmpuint(gmem_cmd_validate(&(cmd), HBM_SIZE), ==, (st))

    c = cmd_copy(GMEM_ADDR_VA, 0x1000, GMEM_ADDR_HBM, 0, 4096);
    EXPECT(c, GMEM_CMD_ST_OK);
    c.opcode = 0;
    EXPECT(c, GMEM_CMD_ST_BAD_OPCODE);
    c.opcode = 200;
    EXPECT(c, GMEM_CMD_ST_BAD_OPCODE);

    c = cmd_copy(GMEM_ADDR_VA, 0x1000, GMEM_ADDR_HBM, 0, 4096);
    c.flags |= 0x80;
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);
    c = cmd_copy(GMEM_ADDR_VA, 0x1000, GMEM_ADDR_HBM, 0, 4096);
    c.reserved = 1;
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);
    c = cmd_copy(GMEM_ADDR_VA, 0x1000, GMEM_ADDR_HBM, 0, 4096);
    c.value = 1;                            /* COPY has no value */
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);
    c = cmd_copy(GMEM_ADDR_VA, 0x1000, 3, 0, 4096);    /* kind 3 */
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);
    c = cmd_copy(GMEM_ADDR_VA, 0x1000, GMEM_ADDR_HBM, 0,
                 GMEM_CMD_MAX_BYTES + 1);
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);

    /* Ranges: HBM end, HBM overflow, VA beyond 48 bits, bus wrap. */
    c = cmd_copy(GMEM_ADDR_HBM, HBM_SIZE - 4096, GMEM_ADDR_SYS, 0, 4096);
    EXPECT(c, GMEM_CMD_ST_OK);
    c.size = 4097;
    EXPECT(c, GMEM_CMD_ST_BAD_ADDRESS);
    c = cmd_copy(GMEM_ADDR_HBM, UINT64_MAX - 10, GMEM_ADDR_SYS, 0, 4096);
    EXPECT(c, GMEM_CMD_ST_BAD_ADDRESS);
    c = cmd_copy(GMEM_ADDR_VA, (1ull << 48) - 4096, GMEM_ADDR_SYS, 0, 4097);
    EXPECT(c, GMEM_CMD_ST_BAD_ADDRESS);
    c = cmd_copy(GMEM_ADDR_SYS, UINT64_MAX - 10, GMEM_ADDR_SYS, 0, 4096);
    EXPECT(c, GMEM_CMD_ST_BAD_ADDRESS);
    c = cmd_copy(GMEM_ADDR_VA, 0, GMEM_ADDR_SYS, 0, 4096);
    c.ctx = GMEM_NUM_CONTEXTS;
    EXPECT(c, GMEM_CMD_ST_BAD_CONTEXT);
    c = cmd_copy(GMEM_ADDR_HBM, 0, GMEM_ADDR_SYS, 0, 4096);
    c.ctx = GMEM_NUM_CONTEXTS;              /* ctx unused without VA */
    EXPECT(c, GMEM_CMD_ST_OK);

    /* FENCE: 8-byte aligned, no size. */
    c = (GmemCmd) { .opcode = GMEM_OP_FENCE, .dst = 0x1008, .value = 5,
                    .flags = GMEM_CMD_F_DST(GMEM_ADDR_SYS) |
                             GMEM_CMD_F_NOTIFY };
    EXPECT(c, GMEM_CMD_ST_OK);
    c.dst = 0x1004;
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);
    c.dst = 0x1000;
    c.size = 8;
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);

    /* TLB_INV: VA kind only; a context or ALL. */
    c = (GmemCmd) { .opcode = GMEM_OP_TLB_INV, .ctx = GMEM_INV_ALL_CONTEXTS };
    EXPECT(c, GMEM_CMD_ST_OK);
    c.ctx = 64;
    EXPECT(c, GMEM_CMD_ST_BAD_CONTEXT);
    c.ctx = 1;
    c.flags = GMEM_CMD_F_DST(GMEM_ADDR_HBM);
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);

    /* ATOMIC_ADD: element alignment, stride limits, extent. */
    c = (GmemCmd) { .opcode = GMEM_OP_ATOMIC_ADD, .flags = GMEM_CMD_F_WIDE,
                    .dst = 0x10000, .size = 1000, .dst_stride = 4096,
                    .value = 3 };
    EXPECT(c, GMEM_CMD_ST_OK);
    c.dst = 0x10004;                        /* u64 at a 4-byte offset */
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);
    c.flags = 0;                            /* u32: fine */
    EXPECT(c, GMEM_CMD_ST_OK);
    c.dst_stride = GMEM_CMD_MAX_STRIDE + 4;
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);
    c.dst_stride = 4;
    c.size = GMEM_CMD_MAX_ELEMENTS + 1;
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);
    c.size = 1000;
    c.src = 8;                              /* no source operand */
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);
    c = (GmemCmd) { .opcode = GMEM_OP_ATOMIC_ADD,
                    .flags = GMEM_CMD_F_DST(GMEM_ADDR_HBM),
                    .dst = HBM_SIZE - 4 * 1024, .size = 1025,
                    .dst_stride = 4 };
    EXPECT(c, GMEM_CMD_ST_BAD_ADDRESS);
    c.size = 1024;
    EXPECT(c, GMEM_CMD_ST_OK);

    /* SCALE_ADD: source alignment too. */
    c = (GmemCmd) { .opcode = GMEM_OP_SCALE_ADD, .dst = 0x1000, .src = 0x2002,
                    .size = 4, .dst_stride = 4, .src_stride = 4 };
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);
    c.src = 0x2000;
    EXPECT(c, GMEM_CMD_ST_OK);

    /* AXPY: SCALE_ADD's operands without value2. */
    c.opcode = GMEM_OP_AXPY;
    c.value = 3;
    EXPECT(c, GMEM_CMD_ST_OK);
    c.value2 = 1;
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);
    c.value2 = 0;
    c.src_stride = 6;
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);

    /* NOP takes nothing. */
    c = (GmemCmd) { .opcode = GMEM_OP_NOP };
    EXPECT(c, GMEM_CMD_ST_OK);
    c.dst = 1;
    EXPECT(c, GMEM_CMD_ST_BAD_FIELD);
#undef EXPECT
}

static void test_cmd_steps(void)
{
    GmemCmd c = cmd_copy(GMEM_ADDR_VA, 0x10800, GMEM_ADDR_VA, 0x20f00,
                         0x3000);
    GmemStep st;
    uint64_t p = 0, total = 0;
    unsigned steps = 0;

    /* Copy steps never cross a page of either VA operand. */
    while (p < gmem_cmd_length(&c)) {
        gmem_cmd_step(&c, p, &st);
        g_assert_cmpuint(st.op[0].len, ==, st.op[1].len);
        g_assert_cmphex(st.op[0].addr, ==, 0x20f00 + p);
        g_assert_cmphex(st.op[1].addr, ==, 0x10800 + p);
        g_assert_cmpuint(st.op[0].addr / 4096, ==,
                         (st.op[0].addr + st.op[0].len - 1) / 4096);
        g_assert_cmpuint(st.op[1].addr / 4096, ==,
                         (st.op[1].addr + st.op[1].len - 1) / 4096);
        g_assert_cmpuint(st.op[0].access, ==, GMEM_ACCESS_READ);
        g_assert_cmpuint(st.op[1].access, ==, GMEM_ACCESS_WRITE);
        total += st.op[1].len;
        p = st.next;
        steps++;
    }
    g_assert_cmpuint(total, ==, 0x3000);
    g_assert_cmpuint(steps, ==, 7);     /* 0x100, 0x700, 0x100, ... */

    /* HBM to HBM moves GMEM_STEP_MAX_BYTES at a time. */
    c = cmd_copy(GMEM_ADDR_HBM, 0, GMEM_ADDR_HBM, 0x100000, 0x30000);
    gmem_cmd_step(&c, 0, &st);
    g_assert_cmpuint(st.op[1].len, ==, GMEM_STEP_MAX_BYTES);

    /* FILL has no source. */
    c = (GmemCmd) { .opcode = GMEM_OP_FILL, .dst = 0xff0, .size = 0x20,
                    .value = 1 };
    gmem_cmd_step(&c, 0, &st);
    g_assert_cmpuint(st.op[0].len, ==, 0);
    g_assert_cmpuint(st.op[1].len, ==, 0x10);

    /* Compute: element i at base + i * stride. */
    c = (GmemCmd) { .opcode = GMEM_OP_SCALE_ADD, .flags = GMEM_CMD_F_WIDE,
                    .dst = 0x100000, .src = 0x200000, .size = 10,
                    .dst_stride = 4096, .src_stride = 8 };
    g_assert_cmpuint(gmem_cmd_length(&c), ==, 10);
    gmem_cmd_step(&c, 7, &st);
    g_assert_cmphex(st.op[0].addr, ==, 0x200000 + 7 * 8);
    g_assert_cmphex(st.op[1].addr, ==, 0x100000 + 7 * 4096);
    g_assert_cmpuint(st.op[1].len, ==, 8);
    g_assert_cmpuint(st.next, ==, 8);
    g_assert_cmpuint(st.op[1].access, ==, GMEM_ACCESS_WRITE);
    c.opcode = GMEM_OP_AXPY;        /* reads the element it writes */
    gmem_cmd_step(&c, 7, &st);
    g_assert_cmphex(st.op[0].addr, ==, 0x200000 + 7 * 8);
    g_assert_cmpuint(st.op[0].access, ==, GMEM_ACCESS_READ);
    g_assert_cmphex(st.op[1].addr, ==, 0x100000 + 7 * 4096);
    g_assert_cmpuint(st.op[1].access, ==,
                     GMEM_ACCESS_READ | GMEM_ACCESS_WRITE);
    c.opcode = GMEM_OP_ATOMIC_ADD;
    gmem_cmd_step(&c, 2, &st);
    g_assert_cmpuint(st.op[0].len, ==, 0);
    g_assert_cmpuint(st.op[1].access, ==, GMEM_ACCESS_ATOMIC);

    /* Elements back to back: the rest of the page in one step. */
    c = (GmemCmd) { .opcode = GMEM_OP_ATOMIC_ADD, .dst = 0x1800, .size = 4096,
                    .dst_stride = 4 };
    gmem_cmd_step(&c, 0, &st);
    g_assert_cmphex(st.op[1].addr, ==, 0x1800);
    g_assert_cmpuint(st.op[1].len, ==, 0x800);
    g_assert_cmpuint(st.next, ==, 512);
    gmem_cmd_step(&c, 512, &st);
    g_assert_cmphex(st.op[1].addr, ==, 0x2000);
    g_assert_cmpuint(st.op[1].len, ==, 0x1000);
    g_assert_cmpuint(st.next, ==, 1536);
    gmem_cmd_step(&c, 4000, &st);           /* the last 96 elements */
    g_assert_cmpuint(st.op[1].len, ==, 96 * 4);
    g_assert_cmpuint(st.next, ==, 4096);
    c.dst_stride = 0;                       /* one element, over and over */
    gmem_cmd_step(&c, 0, &st);
    g_assert_cmpuint(st.op[1].len, ==, 4);
    g_assert_cmpuint(st.next, ==, 1);
    /* Two sides: a step ends where either side's page does. */
    c = (GmemCmd) { .opcode = GMEM_OP_AXPY, .flags = GMEM_CMD_F_WIDE,
                    .dst = 0x3100, .src = 0x2800, .size = 1000,
                    .dst_stride = 8, .src_stride = 8 };
    gmem_cmd_step(&c, 0, &st);
    g_assert_cmpuint(st.op[0].len, ==, 0x800);
    g_assert_cmpuint(st.op[1].len, ==, 0x800);
    g_assert_cmpuint(st.next, ==, 256);
    gmem_cmd_step(&c, 256, &st);            /* dst's page ends first now */
    g_assert_cmphex(st.op[1].addr, ==, 0x3900);
    g_assert_cmpuint(st.op[1].len, ==, 0x700);
    g_assert_cmpuint(st.next, ==, 256 + 224);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/gmem-accel/core/walk/4k", test_walk_4k);
    g_test_add_func("/gmem-accel/core/walk/perms", test_walk_perms);
    g_test_add_func("/gmem-accel/core/walk/2m-and-hbm", test_walk_2m_and_hbm);
    g_test_add_func("/gmem-accel/core/walk/64k", test_walk_64k);
    g_test_add_func("/gmem-accel/core/walk/malformed", test_walk_malformed);
    g_test_add_func("/gmem-accel/core/walk/loops", test_walk_loops);
    g_test_add_func("/gmem-accel/core/dump/runs", test_dump_runs);
    g_test_add_func("/gmem-accel/core/dump/64k", test_dump_64k);
    g_test_add_func("/gmem-accel/core/dump/malformed", test_dump_malformed);
    g_test_add_func("/gmem-accel/core/tlb/basic", test_tlb);
    g_test_add_func("/gmem-accel/core/tlb/capacity", test_tlb_capacity);
    g_test_add_func("/gmem-accel/core/tlb/walk-cache", test_walk_cache);
    g_test_add_func("/gmem-accel/core/cmd/roundtrip", test_cmd_roundtrip);
    g_test_add_func("/gmem-accel/core/cmd/validate", test_cmd_validate);
    g_test_add_func("/gmem-accel/core/cmd/steps", test_cmd_steps);
    return g_test_run();
}
