/*
 * gmem-accel MMU, DMA engine and replayable faults through qtest, no guest:
 * page tables built in guest RAM, commands on the rings, fault records read
 * back, interrupts seen as MSI-X writes into RAM, and every malformed input
 * ending in an error status while QEMU keeps running.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "gmem_env.h"

/* Where an operand of each kind lives, for checking through the back door */
#define VA_SYS      0x10000000ull   /* VA -> SYS_DATA + 0x100000 */
#define VA_HBM      0x20000000ull   /* VA -> HBM 0x200000 */
#define NPAGES      4

static void map_windows(Env *e)
{
    for (int p = 0; p < NPAGES; p++) {
        map4k(e, VA_SYS + p * 4096, SYS_DATA + 0x100000 + p * 4096, RWA);
        map4k(e, VA_HBM + p * 4096, 0x200000 + p * 4096, RWA | GMEM_PTE_HBM);
    }
}

/* Bus address (or BAR2 address) holding what @kind/@addr designates. */
static uint64_t backing(unsigned kind, uint64_t addr)
{
    switch (kind) {
    case GMEM_ADDR_HBM:
        return BAR2_ADDR + addr;
    case GMEM_ADDR_SYS:
        return addr;
    default:
        return addr >= VA_HBM ? BAR2_ADDR + 0x200000 + (addr - VA_HBM)
                              : SYS_DATA + 0x100000 + (addr - VA_SYS);
    }
}

static void test_copy_all_kinds(void)
{
    static const uint64_t base[3][2] = {
        /* [kind] = { src, dst } */
        [GMEM_ADDR_VA] = { VA_SYS + 0x123, VA_HBM + 0x777 },
        [GMEM_ADDR_HBM] = { 0x10035, 0x30001 },
        [GMEM_ADDR_SYS] = { SYS_DATA + 0x11, SYS_DATA + 0x20003 },
    };
    const size_t len = 3 * 4096 + 700;  /* crosses pages, odd ends */
    Env *e = env_start(NULL);
    g_autofree uint8_t *src = g_malloc(len + 2), *out = g_malloc(len + 2);
    g_autofree uint8_t *want = g_malloc(len + 2);

    map_windows(e);
    for (unsigned sk = 0; sk < 3; sk++) {
        for (unsigned dk = 0; dk < 3; dk++) {
            uint64_t s = base[sk][0], d = base[dk][1];

            pattern(src, len, sk * 3 + dk);
            qtest_memwrite(e->qt, backing(sk, s), src, len);
            memset(want, 0xee, len + 2);
            qtest_memwrite(e->qt, backing(dk, d) - 1, want, len + 2);
            g_assert_cmpuint(run(e, 0, copy_cmd(dk, d, sk, s, len)),
                             ==, GMEM_CMD_ST_OK);
            qtest_memread(e->qt, backing(dk, d) - 1, out, len + 2);
            memcpy(want + 1, src, len);
            g_assert_cmpmem(out, len + 2, want, len + 2);   /* guards too */
        }
    }
    g_assert_cmpuint(counter(e, GMEM_CNT_BYTES), ==, 9 * len);
    g_assert_cmpuint(counter(e, GMEM_CNT_COMMANDS), ==, 9);
    g_assert_cmpuint(counter(e, GMEM_CNT_FAULTS), ==, 0);
    /* 8 distinct VA pages were walked once each, then hit in the TLB. */
    g_assert_cmpuint(counter(e, GMEM_CNT_WALKS), ==, 8);
    g_assert_cmpuint(counter(e, GMEM_CNT_TLB_MISSES), ==, 8);
    g_assert_cmpuint(counter(e, GMEM_CNT_TLB_HITS), >, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(0, GMEM_CQ_COMPLETED)), ==,
                     9);
    env_quit(e);
}

/*
 * Pages that are contiguous behind their VAs move in one step, pages that
 * are not in steps of their own, and a missing page ends a run without
 * being skipped: a copy over 6 VA pages whose targets run 0,1,2 | 9 | 10,11
 * lands byte for byte, and with page 3 missing faults on page 3 alone.
 */
static void test_copy_contiguous_runs(void)
{
    static const unsigned page_of[6] = { 0, 1, 2, 9, 10, 11 };
    const uint64_t va = 0x40000000ull, sys = SYS_DATA + 0x300000;
    const size_t len = 6 * 4096 - 300;
    Env *e = env_start(NULL);
    g_autofree uint8_t *src = g_malloc(len), *out = g_malloc(len);
    Rec r[4];
    uint32_t idx;

    for (unsigned p = 0; p < 6; p++) {
        if (p != 3) {
            map4k(e, va + p * 4096, sys + page_of[p] * 4096, RWA);
        }
    }
    pattern(src, len, 21);
    for (unsigned p = 0; p < 6; p++) {
        qtest_memwrite(e->qt, sys + page_of[p] * 4096 + (p ? 0 : 100),
                    src + (p ? p * 4096 - 100 : 0),
                    MIN(4096 - (p ? 0 : 100), len - (p ? p * 4096 - 100 : 0)));
    }
    idx = submit(e, 1, copy_cmd(GMEM_ADDR_HBM, 0x5000, GMEM_ADDR_VA,
                                va + 100, len));
    wait_state(e, 1, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(fq_take(e, r, G_N_ELEMENTS(r)), ==, 1);
    g_assert_cmphex(r[0].va, ==, va + 3 * 4096);
    map4k(e, va + 3 * 4096, sys + page_of[3] * 4096, RWA);
    qtest_memwrite(e->qt, sys + page_of[3] * 4096, src + 3 * 4096 - 100, 4096);
    respond(e, r[0].group, GMEM_RESP_REPLAY);
    g_assert_cmpuint(wait_done(e, 1, idx), ==, GMEM_CMD_ST_OK);
    qtest_memread(e->qt, BAR2_ADDR + 0x5000, out, len);
    g_assert_cmpmem(out, len, src, len);

    /* And back, HBM to the scattered pages. */
    pattern(src, len, 22);
    qtest_memwrite(e->qt, BAR2_ADDR + 0x5000, src, len);
    g_assert_cmpuint(run(e, 1, copy_cmd(GMEM_ADDR_VA, va + 100, GMEM_ADDR_HBM,
                                        0x5000, len)), ==, GMEM_CMD_ST_OK);
    for (unsigned p = 0; p < 6; p++) {
        size_t off = p ? p * 4096 - 100 : 0;
        size_t n = MIN(4096 - (p ? 0 : 100), len - off);

        qtest_memread(e->qt, sys + page_of[p] * 4096 + (p ? 0 : 100), out, n);
        g_assert_cmpmem(out, n, src + off, n);
    }
    g_assert_cmpuint(counter(e, GMEM_CNT_BYTES), ==, 2 * len);
    env_quit(e);
}

/*
 * A long copy, system and HBM both ways and one whose source and destination
 * overlap, with the mover's @props; the system pages it ends with go to @out
 * (MOVER_SYS bytes), its batches to @batches.
 */
#define MOVER_SYS   (8ull << 20)

static void mover_copies(const char *props, uint8_t *out, int64_t *batches)
{
    /* runs inline; left to the engine at the end; one run of the mover */
    const uint64_t inline_bytes = 256 << 10, min_left = 4 << 20;
    const uint64_t run_len = 64 << 10;
    const uint64_t va = 0x40000000ull, sys = 16ull << 20;
    const size_t len = 6 << 20;    /* well past what runs inline */
    Env *e = env_start(props);
    g_autofree uint8_t *src = g_malloc(len), *back = g_malloc(len);

    for (uint64_t off = 0; off < MOVER_SYS; off += GMEM_HUGE_SIZE) {
        map2m(e, va + off, sys + off, RW);
    }
    pattern(src, len, 31);
    qtest_memwrite(e->qt, BAR2_ADDR, src, len);
    g_assert_cmpuint(run(e, 0, copy_cmd(GMEM_ADDR_VA, va, GMEM_ADDR_HBM, 0,
                                        len)), ==, GMEM_CMD_ST_OK);
    qtest_memread(e->qt, sys, back, len);
    g_assert_cmpmem(back, len, src, len);
    g_assert_cmpuint(run(e, 1, copy_cmd(GMEM_ADDR_HBM, len, GMEM_ADDR_VA, va,
                                        len)), ==, GMEM_CMD_ST_OK);
    qtest_memread(e->qt, BAR2_ADDR + len, back, len);
    g_assert_cmpmem(back, len, src, len);
    *batches = gq_state(e->g, "gmem0", "mover-batches");
    /*
     * Overlapping: each step reads what earlier steps wrote. Each 64 KiB
     * run reads what the one before writes, so no two share a batch (their
     * threads could run them in either order): a batch per run, for the
     * runs that go to the mover at all.
     */
    g_assert_cmpuint(run(e, 2, copy_cmd(GMEM_ADDR_VA, va + 0x11000,
                                        GMEM_ADDR_VA, va, len)),
                     ==, GMEM_CMD_ST_OK);
    qtest_memread(e->qt, sys, out, MOVER_SYS);
    g_assert_cmpuint(counter(e, GMEM_CNT_BYTES), ==, 3 * len);
    if (*batches) {
        g_assert_cmpint(gq_state(e->g, "gmem0", "mover-batches") - *batches,
                        >=, (len - inline_bytes - min_left) / run_len);
    }
    env_quit(e);
}

/*
 * The mover (movers=N: a COPY's bytes move on worker threads, off the BQL)
 * changes how fast a long copy goes, never what it writes.
 */
static void test_mover(void)
{
    g_autofree uint8_t *with = g_malloc(MOVER_SYS);
    g_autofree uint8_t *without = g_malloc(MOVER_SYS);
    int64_t batches_with, batches_without;

    mover_copies("movers=2", with, &batches_with);
    mover_copies("movers=0", without, &batches_without);
    g_assert_cmpint(batches_with, >, 0);
    g_assert_cmpint(batches_without, ==, 0);
    g_assert_cmpmem(with, MOVER_SYS, without, MOVER_SYS);
}

static void test_fill_all_kinds(void)
{
    static const uint64_t dst[3] = {
        [GMEM_ADDR_VA] = VA_HBM + 0xffd,
        [GMEM_ADDR_HBM] = 0x50003,
        [GMEM_ADDR_SYS] = SYS_DATA + 0x30007,
    };
    const uint64_t value = 0x0123456789abcdefull;
    const size_t len = 2 * 4096 + 13;
    Env *e = env_start(NULL);
    g_autofree uint8_t *out = g_malloc(len + 2);
    g_autofree uint8_t *want = g_malloc(len + 2);

    map_windows(e);
    for (unsigned k = 0; k < 3; k++) {
        GmemCmd c = { .opcode = GMEM_OP_FILL, .ctx = CTX,
                      .flags = GMEM_CMD_F_DST(k), .dst = dst[k],
                      .size = len, .value = value };

        memset(want, 0xee, len + 2);
        qtest_memwrite(e->qt, backing(k, dst[k]) - 1, want, len + 2);
        g_assert_cmpuint(run(e, 1, c), ==, GMEM_CMD_ST_OK);
        /* Byte i of the fill is byte (i % 8) of the value. */
        for (size_t i = 0; i < len; i++) {
            want[1 + i] = value >> (8 * (i % 8));
        }
        qtest_memread(e->qt, backing(k, dst[k]) - 1, out, len + 2);
        g_assert_cmpmem(out, len + 2, want, len + 2);
    }
    env_quit(e);
}

static void test_huge_pages(void)
{
    const uint64_t va = 0x40000000ull;
    const size_t len = 64 * 1024;
    Env *e = env_start(NULL);
    g_autofree uint8_t *src = g_malloc(len), *out = g_malloc(len);

    map2m(e, va, 2 * GMEM_HUGE_SIZE, RW | GMEM_PTE_HBM);
    pattern(src, len, 7);
    qtest_memwrite(e->qt, SYS_DATA, src, len);
    g_assert_cmpuint(run(e, 0, copy_cmd(GMEM_ADDR_VA,
                         va + 0x180000 - len / 2, GMEM_ADDR_SYS, SYS_DATA,
                         len)), ==, GMEM_CMD_ST_OK);
    qtest_memread(e->qt, BAR2_ADDR + 2 * GMEM_HUGE_SIZE + 0x180000 - len / 2,
               out, len);
    g_assert_cmpmem(out, len, src, len);
    /* 16 pages of 4 KiB, one walk: the 2 MiB translation served them all */
    g_assert_cmpuint(counter(e, GMEM_CNT_WALKS), ==, 1);
    g_assert_cmpuint(counter(e, GMEM_CNT_TLB_HITS), ==, 15);

    /* Past the 2 MiB page nothing is mapped: a fault, not a wrap-around. */
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_TAIL), ==, 0);
    submit(e, 0, copy_cmd(GMEM_ADDR_VA, va + GMEM_HUGE_SIZE - 8,
                                     GMEM_ADDR_SYS, SYS_DATA, 16));
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    g_assert_cmphex(fault_record(e, 0).va, ==, va + GMEM_HUGE_SIZE);
    env_quit(e);
}

static void test_64k_pages(void)
{
    const uint64_t va = 0x40000000ull;
    const size_t len = 2 * GMEM_CONT_SIZE;
    Env *e = env_start(NULL);
    g_autofree uint8_t *src = g_malloc(len), *out = g_malloc(len);

    /* Two 64 KiB pages in HBM, the second mapped at the lower VA. */
    map64k(e, va, 0x30000, RW | GMEM_PTE_HBM);
    map64k(e, va + GMEM_CONT_SIZE, 0x10000, RW | GMEM_PTE_HBM);
    pattern(src, len, 9);
    qtest_memwrite(e->qt, SYS_DATA, src, len);
    g_assert_cmpuint(run(e, 0, copy_cmd(GMEM_ADDR_VA, va, GMEM_ADDR_SYS,
                                        SYS_DATA, len)), ==, GMEM_CMD_ST_OK);
    qtest_memread(e->qt, BAR2_ADDR + 0x30000, out, GMEM_CONT_SIZE);
    g_assert_cmpmem(out, GMEM_CONT_SIZE, src, GMEM_CONT_SIZE);
    qtest_memread(e->qt, BAR2_ADDR + 0x10000, out, GMEM_CONT_SIZE);
    g_assert_cmpmem(out, GMEM_CONT_SIZE, src + GMEM_CONT_SIZE,
                    GMEM_CONT_SIZE);
    /* 32 pages of 4 KiB, two walks: one 64 KiB translation per group. */
    g_assert_cmpuint(counter(e, GMEM_CNT_WALKS), ==, 2);
    g_assert_cmpuint(counter(e, GMEM_CNT_TLB_HITS), ==, 30);

    /*
     * Software takes one page out of the first group: with the TLB
     * invalidated the rest of it is mapped 4 KiB at a time, still right.
     */
    map4k(e, va + 0x5000, 0, 0);
    gq_set_reg(e->g, GMEM_REG_INV_CTX, CTX);
    gq_set_reg(e->g, GMEM_REG_INV_VA_LO, (uint32_t)va);
    gq_set_reg(e->g, GMEM_REG_INV_VA_HI, va >> 32);
    gq_set_reg(e->g, GMEM_REG_INV_SIZE_LO, 0x1000);
    gq_set_reg(e->g, GMEM_REG_INV_SIZE_HI, 0);
    gq_set_reg(e->g, GMEM_REG_INV_TRIGGER, 7);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_INV_DONE), ==, 7);
    g_assert_cmpuint(run(e, 0, copy_cmd(GMEM_ADDR_SYS, SYS_DATA + len,
                                        GMEM_ADDR_VA, va, 0x5000)),
                     ==, GMEM_CMD_ST_OK);
    qtest_memread(e->qt, SYS_DATA + len, out, 0x5000);
    g_assert_cmpmem(out, 0x5000, src, 0x5000);
    g_assert_cmpuint(counter(e, GMEM_CNT_WALKS), ==, 2 + 5);

    /* The hole faults; the page after it is still there. */
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_TAIL), ==, 0);
    submit(e, 0, copy_cmd(GMEM_ADDR_SYS, SYS_DATA + len, GMEM_ADDR_VA,
                          va + 0x4ff8, 16));
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    g_assert_cmphex(fault_record(e, 0).va, ==, va + 0x5000);
    env_quit(e);
}

/* Copy @pages 4 KiB pages at @va to system memory at @out: the bytes */
static void read_pages(Env *e, uint64_t va, unsigned pages, uint64_t out)
{
    g_assert_cmpuint(run(e, 0, copy_cmd(GMEM_ADDR_SYS, out, GMEM_ADDR_VA, va,
                                        pages * 4096ull)), ==, GMEM_CMD_ST_OK);
}

/*
 * The walk cache (0.6): a walk after the first in a 2 MiB region starts at
 * its level-1 table, and keeps using that table until an invalidation of
 * the region, even when software repointed the level-2 entry.
 */
static void test_walk_cache(void)
{
    const uint64_t va = 0x50000000ull, out = SYS_DATA + 0x300000;
    Env *e = env_start(NULL);
    uint64_t l2_slot, old_l1, new_l1;

    g_assert_cmpint(gq_state(e->g, "gmem0", "walk-cache-entries"), ==, 64);
    for (unsigned p = 0; p < 40; p++) {
        map4k(e, va + p * 4096, SYS_DATA + p * 4096, RW);
        qtest_writeq(e->qt, SYS_DATA + p * 4096, 0x1000 + p);
    }
    read_pages(e, va, 32, out);
    g_assert_cmpuint(counter(e, GMEM_CNT_WALKS), ==, 32);
    g_assert_cmpint(gq_state(e->g, "gmem0", "walk-cache-hits"), ==, 31);
    /*
     * Each step of 16 pages reads its level-1 entries as one line: four
     * reads for the first walk, one for the second step's 16 entries.
     */
    g_assert_cmpint(gq_state(e->g, "gmem0", "pte-reads"), ==, 4 + 1);
    g_assert_cmphex(qtest_readq(e->qt, out + 31 * 4096), ==, 0x1000 + 31);

    /* A new level-1 table mapping pages 32-39 elsewhere, no invalidation */
    l2_slot = pte_slot(e, va, 2);
    old_l1 = qtest_readq(e->qt, l2_slot) & GMEM_PTE_ADDR_MASK;
    new_l1 = pt_alloc(e);
    for (unsigned p = 32; p < 40; p++) {
        uint64_t other = SYS_DATA + 0x100000 + p * 4096;

        qtest_writeq(e->qt, new_l1 + GMEM_PT_INDEX(va + p * 4096, 1) * 8,
                     other | RW);
        qtest_writeq(e->qt, other, 0x2000 + p);
    }
    qtest_writeq(e->qt, l2_slot, new_l1 | GMEM_PTE_VALID);
    g_assert_cmphex(old_l1, !=, new_l1);
    read_pages(e, va + 32 * 4096, 1, out);     /* the cached, old table */
    g_assert_cmphex(qtest_readq(e->qt, out), ==, 0x1000 + 32);
    g_assert_cmpint(gq_state(e->g, "gmem0", "walk-cache-hits"), ==, 32);
    /* Invalidating any page of the region drops the cached table */
    g_assert_cmpuint(run(e, 0, (GmemCmd) { .opcode = GMEM_OP_TLB_INV,
                         .ctx = CTX, .dst = va + 0x1ff000, .size = 4096 }),
                     ==, GMEM_CMD_ST_OK);
    read_pages(e, va + 33 * 4096, 1, out);
    g_assert_cmphex(qtest_readq(e->qt, out), ==, 0x2000 + 33);
    g_assert_cmpint(gq_state(e->g, "gmem0", "walk-cache-hits"), ==, 32);
    read_pages(e, va + 34 * 4096, 1, out);
    g_assert_cmphex(qtest_readq(e->qt, out), ==, 0x2000 + 34);
    g_assert_cmpint(gq_state(e->g, "gmem0", "walk-cache-hits"), ==, 33);
    /* Rewriting the context's CTRL drops its tables too */
    gq_set_reg(e->g, GMEM_REG_CTX(CTX, GMEM_CTX_CTRL), GMEM_CTX_CTRL_ENABLE);
    read_pages(e, va + 35 * 4096, 1, out);
    g_assert_cmpint(gq_state(e->g, "gmem0", "walk-cache-hits"), ==, 33);
    env_quit(e);

    /* walk-cache-entries=0: every miss walks from the root */
    e = env_start("walk-cache-entries=0");
    for (unsigned p = 0; p < 8; p++) {
        map4k(e, va + p * 4096, SYS_DATA + p * 4096, RW);
    }
    read_pages(e, va, 8, out);
    g_assert_cmpuint(counter(e, GMEM_CNT_WALKS), ==, 8);
    g_assert_cmpint(gq_state(e->g, "gmem0", "walk-cache-hits"), ==, 0);
    g_assert_cmpint(gq_state(e->g, "gmem0", "pte-reads"), ==, 8 * 4);
    env_quit(e);
}

static void test_fault_replay(void)
{
    const uint64_t va = 0x30000000ull;
    const size_t len = 3 * 4096;
    Env *e = env_start(NULL);
    g_autofree uint8_t *src = g_malloc(len), *out = g_malloc(len);
    Rec r[8];
    uint32_t idx;

    pattern(src, len, 3);
    qtest_memwrite(e->qt, SYS_DATA + 0x200000, src, len);
    /* A command before it: the faulting one is not in slot 0. */
    g_assert_cmpuint(run(e, 2, copy_cmd(GMEM_ADDR_SYS, SYS_DATA + 0x100000,
                                        GMEM_ADDR_SYS, SYS_DATA, 64)),
                     ==, GMEM_CMD_ST_OK);
    gq_msi_fired(e->g, GMEM_VEC_FAULT);
    idx = submit(e, 2, copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_VA,
                                           va, len));
    wait_state(e, 2, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(status_of(e, 2, idx), ==, GMEM_CMD_ST_PENDING);
    g_assert_true(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_PENDING), ==, 1);

    /* All three pages in one group, the last one flagged. */
    g_assert_cmpuint(fq_take(e, r, G_N_ELEMENTS(r)), ==, 3);
    for (unsigned i = 0; i < 3; i++) {
        g_assert_cmphex(r[i].va, ==, va + i * 4096);
        g_assert_cmpuint(r[i].ctx, ==, CTX);
        g_assert_cmpuint(r[i].access, ==, GMEM_ACCESS_READ);
        g_assert_cmpuint(r[i].reason, ==, GMEM_FAULT_NOT_PRESENT);
        g_assert_cmpuint(r[i].engine, ==, 2);
        g_assert_cmpuint(r[i].slot, ==, idx);
        g_assert_cmpuint(idx, ==, 1);
        g_assert_cmpuint(r[i].group, ==, r[0].group);
        g_assert_cmpuint(r[i].flags, ==, i == 2 ? GMEM_FAULT_F_LAST : 0);
        g_assert_cmpuint(r[i].seq, ==, i);
        g_assert_cmphex(r[i].pte, ==, 0);
    }
    g_assert_cmpuint(counter(e, GMEM_CNT_FAULTS), ==, 3);

    /* Replay before mapping: the same pages fault again, in a new group. */
    respond(e, r[0].group, GMEM_RESP_REPLAY);
    wait_state(e, 2, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(fq_take(e, r + 3, 5), ==, 3);
    g_assert_true(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    g_assert_cmpuint(r[3].group, !=, r[0].group);
    g_assert_cmpuint(r[3].seq, ==, 3);

    /* Map them and replay: the copy finishes byte for byte. */
    for (unsigned i = 0; i < 3; i++) {
        map4k(e, va + i * 4096, SYS_DATA + 0x200000 + i * 4096, RO);
    }
    respond(e, r[3].group, GMEM_RESP_REPLAY);
    g_assert_cmpuint(wait_done(e, 2, idx), ==, GMEM_CMD_ST_OK);
    qtest_memread(e->qt, SYS_DATA, out, len);
    g_assert_cmpmem(out, len, src, len);
    g_assert_cmpuint(counter(e, GMEM_CNT_REPLAYS), ==, 2);
    g_assert_cmpuint(counter(e, GMEM_CNT_FAULTS), ==, 6);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_PENDING), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(2, GMEM_CQ_STATE)), ==,
                     GMEM_CQ_STATE_IDLE);
    env_quit(e);
}

/*
 * FQ_IRQ_HOLD: a group posted while held raises no fault interrupt;
 * releasing the hold raises it for records still unconsumed, and only then.
 */
static void test_fault_irq_hold(void)
{
    const uint64_t va = 0x30000000ull;
    Env *e = env_start(NULL);
    Rec r[4];
    uint32_t idx;

    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_IRQ_HOLD), ==, 0);
    gq_set_reg(e->g, GMEM_REG_FQ_IRQ_HOLD, 2);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE, GMEM_REG_FQ_IRQ_HOLD);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_IRQ_HOLD), ==, 0);

    /* Held: the group is posted, no interrupt; released: the interrupt. */
    gq_set_reg(e->g, GMEM_REG_FQ_IRQ_HOLD, 1);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_IRQ_HOLD), ==, 1);
    idx = submit(e, 1, copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_VA, va,
                                4096));
    wait_state(e, 1, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_TAIL), ==, 1);
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    gq_set_reg(e->g, GMEM_REG_FQ_IRQ_HOLD, 0);
    g_assert_true(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    g_assert_cmpuint(fq_take(e, r, G_N_ELEMENTS(r)), ==, 1);
    gq_set_reg(e->g, GMEM_REG_FQ_IRQ_HOLD, 0);
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_FAULT));

    /* Replayed unmapped under the hold: taken before release, no interrupt. */
    gq_set_reg(e->g, GMEM_REG_FQ_IRQ_HOLD, 1);
    respond(e, r[0].group, GMEM_RESP_REPLAY);
    wait_state(e, 1, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(fq_take(e, r, G_N_ELEMENTS(r)), ==, 1);
    gq_set_reg(e->g, GMEM_REG_FQ_IRQ_HOLD, 0);
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_FAULT));

    /* Not held: each group interrupts. */
    respond(e, r[0].group, GMEM_RESP_REPLAY);
    wait_state(e, 1, GMEM_CQ_STATE_STALLED);
    g_assert_true(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    g_assert_cmpuint(fq_take(e, r, G_N_ELEMENTS(r)), ==, 1);
    map4k(e, va, SYS_DATA + 0x100000, RW);
    respond(e, r[0].group, GMEM_RESP_REPLAY);
    g_assert_cmpuint(wait_done(e, 1, idx), ==, GMEM_CMD_ST_OK);
    g_assert_cmpuint(counter(e, GMEM_CNT_FAULTS), ==, 3);

    /* A reset releases it. */
    gq_set_reg(e->g, GMEM_REG_FQ_IRQ_HOLD, 1);
    gq_set_reg(e->g, GMEM_REG_RESET, GMEM_RESET_MAGIC);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_IRQ_HOLD), ==, 0);
    env_quit(e);
}

/*
 * CQ_FAULT_HOLD (0.10): a doorbell with GMEM_CQ_TAIL_FAULT_HOLD holds the
 * fault interrupt for its queue's groups only; one without the bit, or a
 * write of 0, releases it, raising the interrupt for records unconsumed.
 */
static void test_queue_fault_hold(void)
{
    const uint64_t va = 0x30000000ull, va2 = 0x30100000ull;
    const uint32_t hold = GMEM_CQ_TAIL_FAULT_HOLD;
    const uint32_t reg1 = GMEM_REG_QUEUE(1, GMEM_CQ_FAULT_HOLD);
    Env *e = env_start(NULL);
    uint8_t in[4096], out[4096];
    uint32_t idx, idx2;
    uint16_t group2;
    Rec r[4];

    pattern(in, sizeof(in), 3);
    qtest_memwrite(e->qt, SYS_DATA + 0x100000, in, sizeof(in));

    g_assert_cmpuint(gq_reg(e->g, reg1), ==, 0);
    gq_set_reg(e->g, reg1, 2);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE, reg1);
    gq_set_reg(e->g, GMEM_REG_QUEUE(ENV_QUEUES, GMEM_CQ_FAULT_HOLD), 1);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE,
                    GMEM_REG_QUEUE(ENV_QUEUES, GMEM_CQ_FAULT_HOLD));
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(ENV_QUEUES,
                                                 GMEM_CQ_FAULT_HOLD)), ==, 0);
    /* Bits between the index and the hold are no index: BAD_TAIL. */
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_TAIL), 1u << 30 | hold);
    gq_expect_error(e->g, GMEM_ERR_BAD_TAIL, 1);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_TAIL)), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, reg1), ==, 0);

    /* Held by the doorbell: queue 1's group posts quietly, queue 2's not. */
    idx = submit_bits(e, 1, copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_VA,
                                     va, 4096), hold);
    wait_state(e, 1, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_TAIL)), ==,
                     idx + 1);
    g_assert_cmpuint(gq_reg(e->g, reg1), ==, 1);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_TAIL), ==, 1);
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    idx2 = submit(e, 2, copy_cmd(GMEM_ADDR_SYS, SYS_DATA + 0x30000,
                                 GMEM_ADDR_VA, va2, 4096));
    wait_state(e, 2, GMEM_CQ_STATE_STALLED);
    g_assert_true(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    g_assert_cmpuint(fq_take(e, r, G_N_ELEMENTS(r)), ==, 2);
    g_assert_cmpuint(r[0].engine, ==, 1);
    g_assert_cmpuint(r[1].engine, ==, 2);
    group2 = r[1].group;

    /* Replayed unmapped, still held: posted again without the interrupt. */
    respond(e, r[0].group, GMEM_RESP_REPLAY);
    wait_state(e, 1, GMEM_CQ_STATE_STALLED);
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    /* Released with a record unconsumed: the interrupt, once. */
    gq_set_reg(e->g, reg1, 0);
    g_assert_true(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    gq_set_reg(e->g, reg1, 0);
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    g_assert_cmpuint(fq_take(e, r, G_N_ELEMENTS(r)), ==, 1);

    /* Held again, then a doorbell without the bit hands the record back. */
    gq_set_reg(e->g, reg1, 1);
    respond(e, r[0].group, GMEM_RESP_REPLAY);
    wait_state(e, 1, GMEM_CQ_STATE_STALLED);
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    submit(e, 1, copy_cmd(GMEM_ADDR_SYS, SYS_DATA + 0x20000, GMEM_ADDR_SYS,
                          SYS_DATA + 0x10000, 64));
    g_assert_cmpuint(gq_reg(e->g, reg1), ==, 0);
    g_assert_true(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    g_assert_cmpuint(fq_take(e, r, G_N_ELEMENTS(r)), ==, 1);

    /* Under FQ_IRQ_HOLD a queue's release raises nothing. */
    gq_set_reg(e->g, GMEM_REG_FQ_IRQ_HOLD, 1);
    gq_set_reg(e->g, reg1, 1);
    respond(e, r[0].group, GMEM_RESP_REPLAY);
    wait_state(e, 1, GMEM_CQ_STATE_STALLED);
    gq_set_reg(e->g, reg1, 0);
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    gq_set_reg(e->g, GMEM_REG_FQ_IRQ_HOLD, 0);
    g_assert_true(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    g_assert_cmpuint(fq_take(e, r, G_N_ELEMENTS(r)), ==, 1);

    /* Mapped, both complete; the bytes arrived. */
    map4k(e, va, SYS_DATA + 0x100000, RW);
    map4k(e, va2, SYS_DATA + 0x200000, RW);
    respond(e, r[0].group, GMEM_RESP_REPLAY);
    g_assert_cmpuint(wait_done(e, 1, idx), ==, GMEM_CMD_ST_OK);
    g_assert_cmpuint(wait_done(e, 1, idx + 1), ==, GMEM_CMD_ST_OK);
    respond(e, group2, GMEM_RESP_REPLAY);
    g_assert_cmpuint(wait_done(e, 2, idx2), ==, GMEM_CMD_ST_OK);
    qtest_memread(e->qt, SYS_DATA, out, sizeof(out));
    g_assert_cmpmem(out, sizeof(out), in, sizeof(in));
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_PENDING), ==, 0);
    g_assert_cmpuint(counter(e, GMEM_CNT_FAULTS), ==, 5);

    /* Disabling the queue, or a reset, drops the hold. */
    gq_set_reg(e->g, reg1, 1);
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_CTRL), 0);
    g_assert_cmpuint(gq_reg(e->g, reg1), ==, 0);
    gq_set_reg(e->g, GMEM_REG_QUEUE(2, GMEM_CQ_FAULT_HOLD), 1);
    gq_set_reg(e->g, GMEM_REG_RESET, GMEM_RESET_MAGIC);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(2, GMEM_CQ_FAULT_HOLD)), ==,
                     0);
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_FAULT));
    env_quit(e);
}

static void test_fault_cancel_and_permissions(void)
{
    const uint64_t va = 0x30000000ull;
    Env *e = env_start(NULL);
    uint32_t copy, fence;
    Rec r[4];

    /* Destination mapped read-only: a permission fault on the write. */
    map4k(e, va, SYS_DATA, RO);
    copy = submit(e, 0, copy_cmd(GMEM_ADDR_VA, va + 8,
                                            GMEM_ADDR_HBM, 0, 8));
    fence = submit(e, 0, (GmemCmd) {
        .opcode = GMEM_OP_FENCE, .flags = GMEM_CMD_F_DST(GMEM_ADDR_SYS),
        .dst = FENCE_ADDR, .value = 0xfeedf00dcafe });
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(fq_take(e, r, 4), ==, 1);
    g_assert_cmphex(r[0].va, ==, va);
    g_assert_cmpuint(r[0].access, ==, GMEM_ACCESS_WRITE);
    g_assert_cmpuint(r[0].reason, ==, GMEM_FAULT_PERMISSION);
    g_assert_cmphex(r[0].pte, ==, SYS_DATA | RO);
    g_assert_cmphex(qtest_readq(e->qt, FENCE_ADDR), ==, 0);   /* behind it */

    /* CANCEL fails that command only; the fence behind it runs. */
    respond(e, r[0].group, GMEM_RESP_CANCEL);
    g_assert_cmpuint(wait_done(e, 0, copy), ==, GMEM_CMD_ST_FAULT);
    g_assert_cmpuint(wait_done(e, 0, fence), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, FENCE_ADDR), ==, 0xfeedf00dcafe);
    g_assert_cmpuint(counter(e, GMEM_CNT_CANCELS), ==, 1);
    /* A second answer to the same group is an error. */
    respond(e, r[0].group, GMEM_RESP_REPLAY);
    gq_expect_error(e->g, GMEM_ERR_BAD_RESPONSE,
                    r[0].group | GMEM_RESP_REPLAY << GMEM_RESP_SHIFT);
    env_quit(e);
}

static void test_stall_is_per_queue(void)
{
    Env *e = env_start(NULL);
    uint32_t stalled;

    map_windows(e);
    stalled = submit(e, 0, copy_cmd(GMEM_ADDR_SYS, SYS_DATA,
                                               GMEM_ADDR_VA, 0x50000000, 64));
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    qtest_writeq(e->qt, backing(GMEM_ADDR_VA, VA_SYS), 0x1122334455667788);
    g_assert_cmpuint(run(e, 3, copy_cmd(GMEM_ADDR_HBM, 0x100,
                         GMEM_ADDR_VA, VA_SYS, 8)), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + 0x100), ==,
                    0x1122334455667788);
    g_assert_cmpuint(status_of(e, 0, stalled), ==, GMEM_CMD_ST_PENDING);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(0, GMEM_CQ_STATE)), ==,
                     GMEM_CQ_STATE_STALLED);
    env_quit(e);
}

static void test_tlb_invalidation(void)
{
    const uint64_t va = 0x60000000ull;
    Env *e = env_start(NULL);
    GmemCmd rd = copy_cmd(GMEM_ADDR_HBM, 0x1000, GMEM_ADDR_VA, va, 8);

    qtest_writeq(e->qt, SYS_DATA, 0xaaaa);
    qtest_writeq(e->qt, SYS_DATA + 4096, 0xbbbb);
    map4k(e, va, SYS_DATA, RW);
    g_assert_cmpuint(run(e, 0, rd), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + 0x1000), ==, 0xaaaa);

    /* Repoint the PTE: the TLB still holds the old translation. */
    map4k(e, va, SYS_DATA + 4096, RW);
    g_assert_cmpuint(run(e, 0, rd), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + 0x1000), ==, 0xaaaa);

    /* Register invalidation of another range leaves it; of this one, not */
    gq_set_reg64(e->g, GMEM_REG_INV_VA_LO, va + 4096);
    gq_set_reg64(e->g, GMEM_REG_INV_SIZE_LO, 4096);
    gq_set_reg(e->g, GMEM_REG_INV_CTX, CTX);
    gq_set_reg(e->g, GMEM_REG_INV_TRIGGER, 41);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_INV_DONE), ==, 41);
    g_assert_cmpuint(run(e, 0, rd), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + 0x1000), ==, 0xaaaa);
    gq_set_reg64(e->g, GMEM_REG_INV_VA_LO, va);
    gq_set_reg(e->g, GMEM_REG_INV_TRIGGER, 42);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_INV_DONE), ==, 42);
    g_assert_cmpuint(run(e, 0, rd), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + 0x1000), ==, 0xbbbb);

    /* The command form, ordered in the queue: back to the first page. */
    map4k(e, va, SYS_DATA, RW);
    g_assert_cmpuint(run(e, 1, (GmemCmd) { .opcode = GMEM_OP_TLB_INV,
                         .ctx = CTX, .dst = va, .size = 4096 }), ==,
                     GMEM_CMD_ST_OK);
    g_assert_cmpuint(run(e, 1, rd), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + 0x1000), ==, 0xaaaa);

    /* Unmapping needs an invalidation too; then the access faults. */
    map4k(e, va, 0, 0);
    g_assert_cmpuint(run(e, 1, (GmemCmd) { .opcode = GMEM_OP_TLB_INV,
                         .ctx = GMEM_INV_ALL_CONTEXTS }), ==, GMEM_CMD_ST_OK);
    submit(e, 1, rd);
    wait_state(e, 1, GMEM_CQ_STATE_STALLED);
    env_quit(e);
}

static void test_fence_notify(void)
{
    Env *e = env_start(NULL);
    GmemCmd f = { .opcode = GMEM_OP_FENCE,
                  .flags = GMEM_CMD_F_DST(GMEM_ADDR_SYS), .dst = FENCE_ADDR,
                  .value = 7 };

    g_assert_cmpuint(run(e, 2, f), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, FENCE_ADDR), ==, 7);
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_QUEUE(2)));
    f.flags |= GMEM_CMD_F_NOTIFY;
    f.value = 8;
    g_assert_cmpuint(run(e, 2, f), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, FENCE_ADDR), ==, 8);
    g_assert_true(gq_msi_fired(e->g, GMEM_VEC_QUEUE(2)));
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_QUEUE(1)));
    /* A fence into HBM and into a device VA. */
    map_windows(e);
    f = (GmemCmd) { .opcode = GMEM_OP_FENCE, .ctx = CTX,
                    .flags = GMEM_CMD_F_DST(GMEM_ADDR_VA), .dst = VA_HBM + 8,
                    .value = 0x99 };
    g_assert_cmpuint(run(e, 2, f), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + 0x200008), ==, 0x99);

    /*
     * The last of the 64 queues (0.9: one for each context) runs while queue
     * 1 is stalled on a fault, and raises its vector, 2 + 63 mod 6 (shared).
     */
    map4k(e, 0x60000000, 0, 0);
    submit(e, 1, (GmemCmd) { .opcode = GMEM_OP_FILL, .ctx = CTX,
                             .flags = GMEM_CMD_F_DST(GMEM_ADDR_VA),
                             .dst = 0x60000000, .size = 8 });
    wait_state(e, 1, GMEM_CQ_STATE_STALLED);
    queue_setup(e, GMEM_NUM_QUEUES - 1);
    f = (GmemCmd) { .opcode = GMEM_OP_FENCE,
                    .flags = GMEM_CMD_F_DST(GMEM_ADDR_SYS) | GMEM_CMD_F_NOTIFY,
                    .dst = FENCE_ADDR, .value = 63 };
    gq_msi_fired(e->g, GMEM_VEC_QUEUE(2));
    g_assert_cmpuint(run(e, GMEM_NUM_QUEUES - 1, f), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, FENCE_ADDR), ==, 63);
    g_assert_true(gq_msi_fired(e->g, GMEM_VEC_QUEUE(GMEM_NUM_QUEUES - 1)));
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_QUEUE(2)));
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_ERROR));
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_STATE)), ==,
                     GMEM_CQ_STATE_STALLED);
    env_quit(e);
}

static void test_compute(void)
{
    const uint64_t va = 0x70000000ull;
    const unsigned n = 40, dstride = 4100, sstride = 8;
    Env *e = env_start(NULL);
    GmemCmd add = { .opcode = GMEM_OP_ATOMIC_ADD, .ctx = CTX, .dst = va,
                    .size = n, .dst_stride = dstride, .value = 0x10001 };
    GmemCmd axpy = { .opcode = GMEM_OP_SCALE_ADD, .ctx = CTX,
                     .flags = GMEM_CMD_F_WIDE | GMEM_CMD_F_DST(GMEM_ADDR_HBM),
                     .dst = 0x8000, .src = va, .size = n,
                     .dst_stride = 24, .src_stride = sstride,
                     .value = 3, .value2 = 1000 };

    /* 40 u32 elements 4100 bytes apart span 41 pages. */
    for (unsigned p = 0; p < 41; p++) {
        map4k(e, va + p * 4096, SYS_DATA + p * 4096, RWA);
    }
    for (unsigned i = 0; i < n; i++) {
        qtest_writel(e->qt, SYS_DATA + i * dstride, i);
        qtest_writel(e->qt, SYS_DATA + i * dstride + 4, 0xdddddddd);
    }
    g_assert_cmpuint(run(e, 0, add), ==, GMEM_CMD_ST_OK);
    g_assert_cmpuint(run(e, 0, add), ==, GMEM_CMD_ST_OK);
    for (unsigned i = 0; i < n; i++) {
        g_assert_cmphex(qtest_readl(e->qt, SYS_DATA + i * dstride), ==,
                        i + 2 * 0x10001);
        g_assert_cmphex(qtest_readl(e->qt, SYS_DATA + i * dstride + 4), ==,
                        0xdddddddd);
    }

    /* dst[i] = src[i] * 3 + 1000 on u64, src contiguous, into HBM. */
    for (unsigned i = 0; i < n; i++) {
        qtest_writeq(e->qt, SYS_DATA + i * sstride, 0x100000000ull * i + i);
    }
    g_assert_cmpuint(run(e, 0, axpy), ==, GMEM_CMD_ST_OK);
    for (unsigned i = 0; i < n; i++) {
        g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + 0x8000 + i * 24), ==,
                        (0x100000000ull * i + i) * 3 + 1000);
    }

    /* An atomic on a page without the A bit is a permission fault. */
    map4k(e, va, SYS_DATA, RW);
    g_assert_cmpuint(run(e, 0, (GmemCmd) { .opcode = GMEM_OP_TLB_INV,
                         .ctx = CTX }), ==, GMEM_CMD_ST_OK);
    submit(e, 0, add);
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(fault_record(e, 0).access, ==, GMEM_ACCESS_ATOMIC);
    g_assert_cmpuint(fault_record(e, 0).reason, ==, GMEM_FAULT_PERMISSION);
    env_quit(e);
}

/* u32 element @k of the 4 pages at SYS_DATA is @k, + @add in [@lo, @hi) */
static void check_elems(Env *e, unsigned lo, unsigned hi, uint32_t add)
{
    g_autofree uint32_t *v = g_new(uint32_t, 4 * 1024);

    qtest_memread(e->qt, SYS_DATA, v, 4 * 4096);
    for (unsigned k = 0; k < 4 * 1024; k++) {
        g_assert_cmphex(le32_to_cpu(v[k]), ==,
                        k + (k >= lo && k < hi ? add : 0));
    }
}

/*
 * A compute command over contiguous elements takes those of a page in one
 * step (one translation, one mapping). An ATOMIC_ADD of three pages' worth
 * from the middle of a page, the third page unmapped: it stalls there with
 * the elements before the fault added, and after the replay every element
 * has been added once, in four steps. An AXPY whose two sides start at other
 * offsets in their pages: a step ends where either side's page does.
 */
static void test_element_runs(void)
{
    const uint64_t va = 0x90000000ull, x = va + 0x10000, y = va + 0x20000;
    const unsigned n = 2048;
    Env *e = env_start(NULL);
    GmemCmd add = { .opcode = GMEM_OP_ATOMIC_ADD, .ctx = CTX, .dst = va + 2048,
                    .size = 3 * 1024, .dst_stride = 4, .value = 3 };
    GmemCmd axpy = { .opcode = GMEM_OP_AXPY, .ctx = CTX, .dst = y + 256,
                     .src = x + 2048, .size = n, .dst_stride = 4,
                     .src_stride = 4, .value = 5 };
    g_autofree uint32_t *v = g_new(uint32_t, 4 * 1024);
    g_autofree uint32_t *w = g_new(uint32_t, 4 * 1024);
    Rec r[2];
    uint32_t idx;

    for (unsigned k = 0; k < 4 * 1024; k++) {
        v[k] = cpu_to_le32(k);
    }
    qtest_memwrite(e->qt, SYS_DATA, v, 4 * 4096);
    for (unsigned p = 0; p < 4; p++) {
        if (p != 2) {
            map4k(e, va + p * 4096, SYS_DATA + p * 4096, RWA);
        }
    }
    idx = submit(e, 0, add);
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(fq_take(e, r, 2), ==, 1);
    g_assert_cmphex(r[0].va, ==, va + 2 * 4096);
    check_elems(e, 512, 2048, 3);
    map4k(e, va + 2 * 4096, SYS_DATA + 2 * 4096, RWA);
    respond(e, r[0].group, GMEM_RESP_REPLAY);
    g_assert_cmpuint(wait_done(e, 0, idx), ==, GMEM_CMD_ST_OK);
    check_elems(e, 512, 512 + 3 * 1024, 3);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(0, GMEM_CQ_STEPS)), ==, 4);

    /* x's pages end at elements 512 and 1536, y's at 960 and 1984 */
    for (unsigned p = 0; p < 3; p++) {
        map4k(e, x + p * 4096, SYS_DATA + 0x10000 + p * 4096, RW);
        map4k(e, y + p * 4096, SYS_DATA + 0x20000 + p * 4096, RW);
    }
    qtest_memwrite(e->qt, SYS_DATA + 0x10000 + 2048, v, n * 4);
    qtest_memwrite(e->qt, SYS_DATA + 0x20000 + 256, v, n * 4);
    g_assert_cmpuint(run(e, 0, axpy), ==, GMEM_CMD_ST_OK);
    qtest_memread(e->qt, SYS_DATA + 0x20000 + 256, w, n * 4);
    for (unsigned k = 0; k < n; k++) {
        g_assert_cmphex(le32_to_cpu(w[k]), ==, k + 5 * k);
    }
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(0, GMEM_CQ_STEPS)), ==,
                     4 + 5);
    env_quit(e);
}

/*
 * AXPY (0.6): y[i] += x[i] * a, y read back and written on u32,
 * wrapping; a y the context may only read stops the engine on a permission
 * fault whose record asks for read and write.
 */
static void test_axpy(void)
{
    const uint64_t va = 0x78000000ull;
    const unsigned n = 64;
    Env *e = env_start(NULL);
    GmemCmd axpy = { .opcode = GMEM_OP_AXPY, .ctx = CTX, .dst = va + 4096,
                     .src = va, .size = n, .dst_stride = 4, .src_stride = 4,
                     .value = 7 };

    map4k(e, va, SYS_DATA, RW);
    map4k(e, va + 4096, SYS_DATA + 4096, RW);
    for (unsigned i = 0; i < n; i++) {
        qtest_writel(e->qt, SYS_DATA + i * 4, 0x30000000u + i);
        qtest_writel(e->qt, SYS_DATA + 4096 + i * 4, 1000 * i);
    }
    g_assert_cmpuint(run(e, 0, axpy), ==, GMEM_CMD_ST_OK);
    for (unsigned i = 0; i < n; i++) {
        g_assert_cmphex(qtest_readl(e->qt, SYS_DATA + 4096 + i * 4), ==,
                        (uint32_t)(1000 * i + (0x30000000u + i) * 7));
        g_assert_cmphex(qtest_readl(e->qt, SYS_DATA + i * 4), ==,
                        0x30000000u + i);
    }
    /* value2 is not AXPY's: BAD_FIELD, y untouched */
    axpy.value2 = 1;
    g_assert_cmpuint(run(e, 0, axpy), ==, GMEM_CMD_ST_BAD_FIELD);
    g_assert_cmphex(qtest_readl(e->qt, SYS_DATA + 4096), ==, 0x30000000u * 7);
    axpy.value2 = 0;

    map4k(e, va + 4096, SYS_DATA + 4096, RO);
    g_assert_cmpuint(run(e, 0, (GmemCmd) { .opcode = GMEM_OP_TLB_INV,
                         .ctx = CTX }), ==, GMEM_CMD_ST_OK);
    submit(e, 0, axpy);
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(fault_record(e, 0).access, ==,
                     GMEM_ACCESS_READ | GMEM_ACCESS_WRITE);
    g_assert_cmpuint(fault_record(e, 0).reason, ==, GMEM_FAULT_PERMISSION);
    g_assert_cmphex(fault_record(e, 0).va, ==, va + 4096);
    env_quit(e);
}

/*
 * A command over @n unmapped pages (page 3 mapped) with a fault queue of 2^@fq_log2 records:
 * one group of @want faults, in order, then one REPLAY after mapping them all completes it.
 */
static void fault_coalescing(unsigned n, unsigned fq_log2, unsigned want)
{
    const uint64_t va = 0x80000000ull;
    Env *e = env_start(NULL);
    GmemCmd add = { .opcode = GMEM_OP_ATOMIC_ADD, .ctx = CTX,
                    .flags = GMEM_CMD_F_WIDE, .dst = va, .size = n,
                    .dst_stride = 4096, .value = 5 };
    g_autofree Rec *r = g_new0(Rec, want + 1);
    uint32_t idx, got;

    gq_set_reg(e->g, GMEM_REG_FQ_CTRL, 0);
    fq_setup(e, fq_log2);
    /* Each element on its own unmapped page; element 3 is mapped. */
    map4k(e, va + 3 * 4096, SYS_DATA + 3 * 4096, RWA);
    idx = submit(e, 0, add);
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    got = fq_take(e, r, want + 1);
    g_assert_cmpuint(got, ==, want);
    for (unsigned i = 0, page = 0; i < got; i++, page++) {
        page += page == 3;          /* mapped: no fault for it */
        g_assert_cmphex(r[i].va, ==, va + page * 4096);
        g_assert_cmpuint(r[i].group, ==, r[0].group);
        g_assert_cmpuint(r[i].access, ==, GMEM_ACCESS_ATOMIC);
    }
    g_assert_cmpuint(r[got - 1].flags, ==, GMEM_FAULT_F_LAST);
    /* Map everything, replay once: no second group is needed. */
    for (unsigned p = 0; p < n; p++) {
        map4k(e, va + p * 4096, SYS_DATA + p * 4096, RWA);
        qtest_writeq(e->qt, SYS_DATA + p * 4096, 100 + p);
    }
    respond(e, r[0].group, GMEM_RESP_REPLAY);
    g_assert_cmpuint(wait_done(e, 0, idx), ==, GMEM_CMD_ST_OK);
    g_assert_cmpuint(counter(e, GMEM_CNT_FAULTS), ==, want);
    /* Every element, the mapped one too, was added exactly once. */
    for (unsigned p = 0; p < n; p++) {
        g_assert_cmpuint(qtest_readq(e->qt, SYS_DATA + p * 4096), ==,
                         100 + p + 5);
    }
    env_quit(e);
}

/* A group holds GMEM_FAULT_GROUP_MAX faults (as many as a UVM fault batch). */
static void test_fault_coalescing(void)
{
    fault_coalescing(GMEM_FAULT_GROUP_MAX + 8, 9, GMEM_FAULT_GROUP_MAX);
}

/* ... but never more than the fault queue holds (one slot stays empty). */
static void test_fault_group_fits_queue(void)
{
    fault_coalescing(80, FQ_LOG2, (1u << FQ_LOG2) - 1);
}

static void test_fault_queue_overflow(void)
{
    Env *e = env_start(NULL);
    uint32_t a, b;
    Rec r[2];

    /* Two entries: one usable slot, so a second group must wait. */
    gq_set_reg(e->g, GMEM_REG_FQ_CTRL, 0);
    fq_setup(e, 1);
    a = submit(e, 0, copy_cmd(GMEM_ADDR_HBM, 0, GMEM_ADDR_VA,
                                         0x90000000, 8));
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    b = submit(e, 1, copy_cmd(GMEM_ADDR_HBM, 0, GMEM_ADDR_VA,
                                         0x90001000, 8));
    wait_state(e, 1, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_STATUS), ==,
                     GMEM_FQ_STATUS_ENABLED | GMEM_FQ_STATUS_OVERFLOW);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_TAIL), ==, 1);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_PENDING), ==, 2);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_ERROR_CODE), ==,
                     GMEM_ERR_FAULT_OVERFLOW);
    g_assert_true(gq_log_has(e->g, "fault queue full"));
    gq_set_reg(e->g, GMEM_REG_ERROR_CODE, 0);

    /* Consuming the first record makes room: the waiting one is posted. */
    g_assert_cmpuint(fq_take(e, r, 1), ==, 1);
    g_assert_cmphex(r[0].va, ==, 0x90000000);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_TAIL), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_STATUS), ==,
                     GMEM_FQ_STATUS_ENABLED);
    g_assert_cmpuint(fq_take(e, r + 1, 1), ==, 1);
    g_assert_cmphex(r[1].va, ==, 0x90001000);
    g_assert_cmpuint(r[1].engine, ==, 1);
    g_assert_cmpuint(r[0].slot, ==, a);
    g_assert_cmpuint(r[1].slot, ==, b);
    respond(e, r[0].group, GMEM_RESP_CANCEL);
    respond(e, r[1].group, GMEM_RESP_CANCEL);
    g_assert_cmpuint(wait_done(e, 0, a), ==, GMEM_CMD_ST_FAULT);
    g_assert_cmpuint(wait_done(e, 1, b), ==, GMEM_CMD_ST_FAULT);

    /* No fault queue at all: the faulting command fails at once. */
    gq_set_reg(e->g, GMEM_REG_FQ_CTRL, 0);
    g_assert_cmpuint(run(e, 2, copy_cmd(GMEM_ADDR_HBM, 0,
                         GMEM_ADDR_VA, 0x90000000, 8)), ==, GMEM_CMD_ST_FAULT);
    env_quit(e);
}

static void test_reset_mid_work(void)
{
    Env *e = env_start(NULL);

    submit(e, 0, copy_cmd(GMEM_ADDR_HBM, 0, GMEM_ADDR_VA,
                                     0x90000000, 8));
    submit(e, 1, (GmemCmd) { .opcode = GMEM_OP_FILL,
                              .flags = GMEM_CMD_F_DST(GMEM_ADDR_HBM),
                              .size = 32 << 20, .value = 1 });
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    gq_set_reg(e->g, GMEM_REG_RESET, GMEM_RESET_MAGIC);
    for (unsigned q = 0; q < GMEM_NUM_QUEUES; q++) {
        g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_STATE)), ==,
                         GMEM_CQ_STATE_DISABLED);
        g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_HEAD)), ==, 0);
    }
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_PENDING), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_STATUS), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_CTX(CTX, GMEM_CTX_CTRL)), ==, 0);
    g_assert_cmpuint(counter(e, GMEM_CNT_FAULTS), ==, 0);
    g_assert_cmphex(gq_reg(e->g, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);

    /* Set up again from scratch: the device works. */
    gq_set_reg64(e->g, GMEM_REG_CTX(CTX, GMEM_CTX_ROOT_LO), e->root);
    gq_set_reg(e->g, GMEM_REG_CTX(CTX, GMEM_CTX_CTRL), GMEM_CTX_CTRL_ENABLE);
    queue_setup(e, 0);
    map4k(e, 0x90000000, SYS_DATA, RW);
    qtest_writeq(e->qt, SYS_DATA, 0x5151);
    g_assert_cmpuint(run(e, 0, copy_cmd(GMEM_ADDR_HBM, 0x40,
                         GMEM_ADDR_VA, 0x90000000, 8)), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + 0x40), ==, 0x5151);
    env_quit(e);
}

/* A command that must fail with @st and leave error (@code, @info). */
static void expect_cmd_error(Env *e, GmemCmd c, uint32_t st,
                             uint32_t code, uint32_t info, const char *log)
{
    g_assert_cmpuint(run(e, 0, c), ==, st);
    gq_expect_error(e->g, code, info);
    g_assert_true(gq_log_has(e->g, log));
}

static void test_bad_page_tables(void)
{
    const uint64_t va = 0xa0000000ull;
    Env *e = env_start(NULL);
    GmemCmd rd = copy_cmd(GMEM_ADDR_HBM, 0, GMEM_ADDR_VA, va, 8);
    uint64_t l1_slot = pte_slot(e, va, 1), l2_slot = pte_slot(e, va, 2);
    uint64_t l2_pte = qtest_readq(e->qt, l2_slot);
    uint64_t l3_table = qtest_readq(e->qt, pte_slot(e, va, 3)) &
                        GMEM_PTE_ADDR_MASK;
    GmemCmd inv = { .opcode = GMEM_OP_TLB_INV, .ctx = CTX };

    qtest_writeq(e->qt, l1_slot, SYS_DATA | RW | (1ull << 7));
    g_assert_cmpuint(run(e, 0, rd), ==, GMEM_CMD_ST_PT_ERROR);
    g_assert_cmphex(gq_reg64(e->g, GMEM_REG_ERROR_ADDR_LO), ==, l1_slot);
    gq_expect_error(e->g, GMEM_ERR_PT_RESERVED, CTX << 16 | 1);
    g_assert_true(gq_log_has(e->g, "reserved-bits at level 1"));

    /*
     * A level-2 entry pointing back at the level-3 table: a loop. (A valid
     * table pointer changed: invalidate, or the walk cache keeps the old.)
     */
    qtest_writeq(e->qt, l2_slot, l3_table | GMEM_PTE_VALID);
    run(e, 0, inv);
    expect_cmd_error(e, rd, GMEM_CMD_ST_PT_ERROR, GMEM_ERR_PT_LOOP,
                     CTX << 16 | 1, "loop");
    /* ... or at the root (self-reference through the whole walk). */
    qtest_writeq(e->qt, l2_slot, e->root | GMEM_PTE_VALID);
    run(e, 0, inv);
    expect_cmd_error(e, rd, GMEM_CMD_ST_PT_ERROR, GMEM_ERR_PT_LOOP,
                     CTX << 16 | 1, "loop");

    /* A table where there is no memory, and one past the end of HBM. */
    qtest_writeq(e->qt, l2_slot, UNBACKED | GMEM_PTE_VALID);
    run(e, 0, inv);
    expect_cmd_error(e, rd, GMEM_CMD_ST_PT_ERROR, GMEM_ERR_PT_ADDRESS,
                     CTX << 16 | 1, "bad-address");
    qtest_writeq(e->qt, l2_slot, HBM_SIZE | GMEM_PTE_VALID | GMEM_PTE_HBM);
    expect_cmd_error(e, rd, GMEM_CMD_ST_PT_ERROR, GMEM_ERR_PT_ADDRESS,
                     CTX << 16 | 1, "bad-address");

    /* A page past the end of HBM. */
    qtest_writeq(e->qt, l2_slot, l2_pte);
    qtest_writeq(e->qt, l1_slot, (HBM_SIZE - 4096) | RW | GMEM_PTE_HBM);
    g_assert_cmpuint(run(e, 0, rd), ==, GMEM_CMD_ST_OK);
    run(e, 0, inv);
    qtest_writeq(e->qt, l1_slot, HBM_SIZE | RW | GMEM_PTE_HBM);
    expect_cmd_error(e, rd, GMEM_CMD_ST_PT_ERROR, GMEM_ERR_PT_ADDRESS,
                     CTX << 16 | 1, "bad-address");

    /* A system page where nothing answers: the data access fails. */
    qtest_writeq(e->qt, l1_slot, UNBACKED | RW);
    expect_cmd_error(e, rd, GMEM_CMD_ST_BAD_ADDRESS, GMEM_ERR_DMA, 0,
                     "memory access failed");

    /* A root table in HBM past its end. */
    gq_set_reg64(e->g, GMEM_REG_CTX(CTX, GMEM_CTX_ROOT_LO), HBM_SIZE);
    gq_set_reg(e->g, GMEM_REG_CTX(CTX, GMEM_CTX_CTRL),
               GMEM_CTX_CTRL_ENABLE | GMEM_CTX_CTRL_ROOT_HBM);
    expect_cmd_error(e, rd, GMEM_CMD_ST_PT_ERROR, GMEM_ERR_PT_ADDRESS,
                     CTX << 16 | 4, "bad-address");
    env_quit(e);
}

static void test_bad_commands_and_queues(void)
{
    Env *e = env_start(NULL);
    GmemCmd c;

    c = (GmemCmd) { .opcode = 0x42 };
    expect_cmd_error(e, c, GMEM_CMD_ST_BAD_OPCODE, GMEM_ERR_BAD_COMMAND,
                     GMEM_CMD_ST_BAD_OPCODE, "malformed unknown command");
    c = copy_cmd(GMEM_ADDR_HBM, 0, GMEM_ADDR_HBM, HBM_SIZE - 4, 8);
    expect_cmd_error(e, c, GMEM_CMD_ST_BAD_ADDRESS, GMEM_ERR_BAD_COMMAND,
                     GMEM_CMD_ST_BAD_ADDRESS, "malformed copy");
    c = copy_cmd(GMEM_ADDR_HBM, 0, GMEM_ADDR_HBM, 64, 8);
    c.reserved = 1;
    expect_cmd_error(e, c, GMEM_CMD_ST_BAD_FIELD, GMEM_ERR_BAD_COMMAND,
                     GMEM_CMD_ST_BAD_FIELD, "malformed copy");
    c = copy_cmd(GMEM_ADDR_VA, 0, GMEM_ADDR_HBM, 64, 8);
    c.ctx = GMEM_NUM_CONTEXTS;
    expect_cmd_error(e, c, GMEM_CMD_ST_BAD_CONTEXT, GMEM_ERR_BAD_COMMAND,
                     GMEM_CMD_ST_BAD_CONTEXT, "malformed copy");
    c.ctx = 9;          /* in range, never enabled */
    expect_cmd_error(e, c, GMEM_CMD_ST_BAD_CONTEXT, GMEM_ERR_BAD_CONTEXT, 9,
                     "context 9 is not enabled");
    c = copy_cmd(GMEM_ADDR_SYS, UNBACKED, GMEM_ADDR_HBM, 64, 8);
    expect_cmd_error(e, c, GMEM_CMD_ST_BAD_ADDRESS, GMEM_ERR_DMA, 0,
                     "memory access failed");

    /* A doorbell past the ring is refused; TAIL keeps its value. */
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_TAIL), 1u << CQ_LOG2);
    gq_expect_error(e->g, GMEM_ERR_BAD_TAIL, 1);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_TAIL)), ==, 0);
    g_assert_true(gq_log_has(e->g, "is past the ring"));

    /* Ring changes while enabled, misaligned rings, bad sizes: refused. */
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_BASE_LO), 0x1234);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE, GMEM_REG_QUEUE(1, 0));
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_CTRL), 0);
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_BASE_LO), 0x1234);
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_CTRL), GMEM_CQ_CTRL_ENABLE);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE,
                    GMEM_REG_QUEUE(1, GMEM_CQ_CTRL));
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_STATE)), ==,
                     GMEM_CQ_STATE_DISABLED);
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_BASE_LO), CQ_RING(1));
    /* A size no ring may have is refused when written, kept out of state */
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_ENTRIES_LOG2), 17);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE,
                    GMEM_REG_QUEUE(1, GMEM_CQ_ENTRIES_LOG2));
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_ENTRIES_LOG2)),
                     ==, CQ_LOG2);
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_TAIL), 1);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE,
                    GMEM_REG_QUEUE(1, GMEM_CQ_TAIL));

    /* A ring where there is no memory: the queue breaks, not QEMU. */
    gq_set_reg64(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_BASE_LO), UNBACKED);
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_ENTRIES_LOG2), 4);
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_CTRL), GMEM_CQ_CTRL_ENABLE);
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_TAIL), 1);
    wait_state(e, 1, GMEM_CQ_STATE_BROKEN);
    gq_expect_error(e->g, GMEM_ERR_DMA, 1);
    /* Disable, fix, enable: it works again. */
    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_CTRL), 0);
    queue_setup(e, 1);
    g_assert_cmpuint(run(e, 1, (GmemCmd) { .opcode = GMEM_OP_NOP }), ==,
                     GMEM_CMD_ST_OK);

    /* Contexts, fault queue and invalidation registers check values. */
    gq_set_reg(e->g, GMEM_REG_CTX(3, GMEM_CTX_ROOT_LO), 0x1001);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE, GMEM_REG_CTX(3, 0));
    gq_set_reg(e->g, GMEM_REG_CTX(3, GMEM_CTX_CTRL), 0x4);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE,
                    GMEM_REG_CTX(3, GMEM_CTX_CTRL));
    gq_set_reg(e->g, GMEM_REG_FQ_HEAD, 1u << FQ_LOG2);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE, GMEM_REG_FQ_HEAD);
    gq_set_reg(e->g, GMEM_REG_FAULT_RESPONSE, 7 | 3 << GMEM_RESP_SHIFT);
    gq_expect_error(e->g, GMEM_ERR_BAD_RESPONSE, 7 | 3 << GMEM_RESP_SHIFT);
    gq_set_reg(e->g, GMEM_REG_INV_CTX, 64);
    gq_set_reg(e->g, GMEM_REG_INV_TRIGGER, 5);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE, GMEM_REG_INV_CTX);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_INV_DONE), ==, 0);
    env_quit(e);
}

static void inject(Env *e, const char *what, const char *error)
{
    g_autofree char *cmd = g_strdup_printf(
        "{\"execute\": \"qom-set\", \"arguments\": {\"path\": "
        "\"/machine/peripheral/gmem0\", \"property\": \"inject\", "
        "\"value\": \"%s\"}}", what);
    g_autofree char *reply = gq_qmp(e->g, cmd);

    if (error) {
        g_assert_nonnull(strstr(reply, error));
    } else {
        g_assert_nonnull(strstr(reply, "\"return\""));
    }
}

/*
 * An injected DMA error fails the next data access of that queue only, as
 * a PCIe error would: BAD_ADDRESS and ERROR_CODE DMA; the same command
 * works again after, and another queue never saw it.
 */
static void test_inject_dma_error(void)
{
    Env *e = env_start(NULL);
    GmemCmd c = copy_cmd(GMEM_ADDR_HBM, 0x1000, GMEM_ADDR_SYS, SYS_DATA, 64);

    inject(e, "dma-error", "queue=N is needed, N from 0 to 63");
    inject(e, "dma-error,queue=64", "queue=N is needed");
    inject(e, "dma-error,queue=1,when=now", "unknown parameter 'when'");
    inject(e, "stall", "unknown kind 'stall'");
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_STATUS) & GMEM_STATUS_ERROR, ==, 0);

    inject(e, "dma-error,queue=1", NULL);
    qtest_writeq(e->qt, SYS_DATA, 0x1234);
    g_assert_cmpuint(run(e, 2, c), ==, GMEM_CMD_ST_OK);
    g_assert_cmpuint(run(e, 1, c), ==, GMEM_CMD_ST_BAD_ADDRESS);
    gq_expect_error(e->g, GMEM_ERR_DMA, 1);
    g_assert_cmpuint(run(e, 1, c), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + 0x1000), ==, 0x1234);

    /* A reset drops what was pending. */
    inject(e, "dma-error,queue=0", NULL);
    gq_set_reg(e->g, GMEM_REG_RESET, GMEM_RESET_MAGIC);
    queue_setup(e, 0);
    g_assert_cmpuint(run(e, 0, c), ==, GMEM_CMD_ST_OK);
    env_quit(e);
}

/*
 * An injected hang stops one engine: its STEPS and HEAD stand still while
 * another queue works, until the queue is disabled, which drops the command
 * and the hang. An injected reset is one the driver did not ask for: every
 * register at its reset value (SCRATCH too: how a driver notices), HBM kept.
 */
static void test_inject_hang_and_reset(void)
{
    Env *e = env_start(NULL);
    GmemCmd fill = { .opcode = GMEM_OP_FILL,
                     .flags = GMEM_CMD_F_DST(GMEM_ADDR_HBM),
                     .size = 8 << 20, .value = 7 };
    GmemCmd c = copy_cmd(GMEM_ADDR_HBM, 0x1000, GMEM_ADDR_SYS, SYS_DATA, 64);
    uint32_t idx;

    inject(e, "hang", "queue=N is needed");
    inject(e, "reset,queue=1", "unknown parameter 'queue' for reset");
    inject(e, "hang,queue=1", NULL);
    g_assert_cmpint(gq_state(e->g, "gmem0", "inject-hang"), ==, 1 << 1);
    idx = submit(e, 1, fill);
    qtest_writeq(e->qt, SYS_DATA, 0x4242);
    g_assert_cmpuint(run(e, 2, c), ==, GMEM_CMD_ST_OK);   /* others work */
    g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + 0x1000), ==, 0x4242);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(2, GMEM_CQ_STEPS)), >=, 1);
    for (int i = 0; i < 1000; i++) {    /* each read lets the engines run */
        g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_STEPS)), ==,
                         0);
    }
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_STATE)), ==,
                     GMEM_CQ_STATE_RUNNING);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_HEAD)), ==, 0);
    g_assert_cmpuint(status_of(e, 1, idx), ==, GMEM_CMD_ST_PENDING);

    gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_CTRL), 0);
    g_assert_cmpint(gq_state(e->g, "gmem0", "inject-hang"), ==, 0);
    queue_setup(e, 1);
    g_assert_cmpuint(run(e, 1, fill), ==, GMEM_CMD_ST_OK);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_STEPS)), >=, 8);

    gq_set_reg(e->g, GMEM_REG_SCRATCH, 0x676d656d);
    inject(e, "hang,queue=3", NULL);
    inject(e, "reset", NULL);
    g_assert_cmphex(gq_reg(e->g, GMEM_REG_SCRATCH), ==, 0);
    g_assert_cmphex(gq_reg(e->g, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    g_assert_cmpint(gq_state(e->g, "gmem0", "inject-hang"), ==, 0);
    for (unsigned q = 0; q < GMEM_NUM_QUEUES; q++) {
        g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_STATE)), ==,
                         GMEM_CQ_STATE_DISABLED);
        g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_STEPS)), ==,
                         0);
    }
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_CTX(CTX, GMEM_CTX_CTRL)), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_CTRL), ==, 0);
    g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + 0x1000), ==, 7);  /* fill */
    env_quit(e);
}

/*
 * inv-stuck: register invalidations stop completing (INV_DONE stays, the TLB keeps the
 * stale translation) until a reset. fq-full: the next group waits as for a full fault
 * queue (OVERFLOW, FAULT_OVERFLOW) until FQ_HEAD is written, moved or not.
 */
static void test_inject_inv_stuck_and_fq_full(void)
{
    const uint64_t va = 0x60000000ull;
    Env *e = env_start(NULL);
    GmemCmd rd = copy_cmd(GMEM_ADDR_HBM, 0x1000, GMEM_ADDR_VA, va, 8);
    uint32_t a;
    Rec r;

    inject(e, "inv-stuck,queue=1", "unknown parameter 'queue' for inv-stuck");
    qtest_writeq(e->qt, SYS_DATA, 0xaaaa);
    qtest_writeq(e->qt, SYS_DATA + 4096, 0xbbbb);
    map4k(e, va, SYS_DATA, RW);
    g_assert_cmpuint(run(e, 0, rd), ==, GMEM_CMD_ST_OK);
    map4k(e, va, SYS_DATA + 4096, RW);
    inject(e, "inv-stuck", NULL);
    gq_set_reg64(e->g, GMEM_REG_INV_VA_LO, va);
    gq_set_reg64(e->g, GMEM_REG_INV_SIZE_LO, 4096);
    gq_set_reg(e->g, GMEM_REG_INV_CTX, CTX);
    gq_set_reg(e->g, GMEM_REG_INV_TRIGGER, 7);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_INV_DONE), ==, 0);
    g_assert_cmpuint(run(e, 0, rd), ==, GMEM_CMD_ST_OK);     /* stale */
    g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + 0x1000), ==, 0xaaaa);
    gq_set_reg(e->g, GMEM_REG_RESET, GMEM_RESET_MAGIC);
    g_assert_false(gq_state(e->g, "gmem0", "inject-inv-stuck"));
    gq_set_reg(e->g, GMEM_REG_INV_TRIGGER, 8);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_INV_DONE), ==, 8);

    /* fq-full, from scratch after the reset */
    gq_set_reg64(e->g, GMEM_REG_CTX(CTX, GMEM_CTX_ROOT_LO), e->root);
    gq_set_reg(e->g, GMEM_REG_CTX(CTX, GMEM_CTX_CTRL), GMEM_CTX_CTRL_ENABLE);
    queue_setup(e, 0);
    fq_setup(e, 4);
    inject(e, "fq-full", NULL);
    a = submit(e, 0, copy_cmd(GMEM_ADDR_HBM, 0, GMEM_ADDR_VA, 0x90000000, 8));
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_STATUS), ==,
                     GMEM_FQ_STATUS_ENABLED | GMEM_FQ_STATUS_OVERFLOW);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_TAIL), ==, 0);
    gq_expect_error(e->g, GMEM_ERR_FAULT_OVERFLOW, 0);
    gq_set_reg(e->g, GMEM_REG_FQ_HEAD, 0);      /* not moved: room all the same */
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_STATUS), ==,
                     GMEM_FQ_STATUS_ENABLED);
    g_assert_cmpuint(fq_take(e, &r, 1), ==, 1);
    g_assert_cmphex(r.va, ==, 0x90000000);
    respond(e, r.group, GMEM_RESP_CANCEL);
    g_assert_cmpuint(wait_done(e, 0, a), ==, GMEM_CMD_ST_FAULT);
    g_assert_false(gq_state(e->g, "gmem0", "inject-fq-full"));
    env_quit(e);
}

/*
 * A poisoned HBM page fails every engine step that reads or writes any of
 * it (status POISON, error POISON with its offset), and only those; a reset
 * clears the poison.
 */
static void test_inject_poison(void)
{
    Env *e = env_start(NULL);
    GmemCmd rd = copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_HBM, 0x2000, 64);
    GmemCmd wr = copy_cmd(GMEM_ADDR_HBM, 0x2ff8, GMEM_ADDR_SYS, SYS_DATA, 8);
    GmemCmd span = copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_HBM, 0x1000,
                            0x2000);
    GmemCmd next = copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_HBM, 0x3000, 64);

    inject(e, "poison", "poison needs offset=X");
    inject(e, "poison,offset=0x4000000", "an HBM byte offset below 0x4000000");
    inject(e, "poison,offset=0x2000,queue=1", "unknown parameter 'queue'");
    inject(e, "poison,offset=0x2123", NULL);    /* the page of it */
    g_assert_cmpint(gq_state(e->g, "gmem0", "inject-poisoned-pages"), ==, 1);
    g_assert_cmpuint(run(e, 1, rd), ==, GMEM_CMD_ST_POISON);
    gq_expect_error(e->g, GMEM_ERR_POISON, 1);
    g_assert_cmpuint(run(e, 2, wr), ==, GMEM_CMD_ST_POISON);
    gq_expect_error(e->g, GMEM_ERR_POISON, 2);
    g_assert_cmpuint(run(e, 2, span), ==, GMEM_CMD_ST_POISON);
    g_assert_cmphex(gq_reg64(e->g, GMEM_REG_ERROR_ADDR_LO), ==, 0x2000);
    gq_expect_error(e->g, GMEM_ERR_POISON, 2);
    g_assert_cmpuint(run(e, 1, next), ==, GMEM_CMD_ST_OK);

    for (unsigned p = 1; p < 16; p++) {
        g_autofree char *what = g_strdup_printf("poison,offset=%u", p << 20);

        inject(e, what, NULL);
    }
    inject(e, "poison,offset=0x2000", NULL);    /* already: no new entry */
    inject(e, "poison,offset=0x3000000", "16 pages are poisoned already");
    gq_set_reg(e->g, GMEM_REG_RESET, GMEM_RESET_MAGIC);
    g_assert_cmpint(gq_state(e->g, "gmem0", "inject-poisoned-pages"), ==, 0);
    queue_setup(e, 1);
    g_assert_cmpuint(run(e, 1, rd), ==, GMEM_CMD_ST_OK);
    env_quit(e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/gmem-accel/dma/copy-all-kinds", test_copy_all_kinds);
    g_test_add_func("/gmem-accel/dma/copy-contiguous-runs",
                    test_copy_contiguous_runs);
    g_test_add_func("/gmem-accel/dma/mover", test_mover);
    g_test_add_func("/gmem-accel/dma/fill-all-kinds", test_fill_all_kinds);
    g_test_add_func("/gmem-accel/dma/fence-notify", test_fence_notify);
    g_test_add_func("/gmem-accel/dma/compute", test_compute);
    g_test_add_func("/gmem-accel/dma/element-runs", test_element_runs);
    g_test_add_func("/gmem-accel/dma/axpy", test_axpy);
    g_test_add_func("/gmem-accel/mmu/huge-pages", test_huge_pages);
    g_test_add_func("/gmem-accel/mmu/64k-pages", test_64k_pages);
    g_test_add_func("/gmem-accel/mmu/walk-cache", test_walk_cache);
    g_test_add_func("/gmem-accel/mmu/tlb-invalidation",
                    test_tlb_invalidation);
    g_test_add_func("/gmem-accel/fault/replay", test_fault_replay);
    g_test_add_func("/gmem-accel/fault/irq-hold", test_fault_irq_hold);
    g_test_add_func("/gmem-accel/fault/queue-hold", test_queue_fault_hold);
    g_test_add_func("/gmem-accel/fault/cancel-and-permissions",
                    test_fault_cancel_and_permissions);
    g_test_add_func("/gmem-accel/fault/stall-is-per-queue",
                    test_stall_is_per_queue);
    g_test_add_func("/gmem-accel/fault/coalescing", test_fault_coalescing);
    g_test_add_func("/gmem-accel/fault/group-fits-queue",
                    test_fault_group_fits_queue);
    g_test_add_func("/gmem-accel/fault/queue-overflow",
                    test_fault_queue_overflow);
    g_test_add_func("/gmem-accel/reset-mid-work", test_reset_mid_work);
    g_test_add_func("/gmem-accel/bad/page-tables", test_bad_page_tables);
    g_test_add_func("/gmem-accel/bad/commands-and-queues",
                    test_bad_commands_and_queues);
    g_test_add_func("/gmem-accel/engine/inject-dma-error",
                    test_inject_dma_error);
    g_test_add_func("/gmem-accel/engine/inject-hang-and-reset",
                    test_inject_hang_and_reset);
    g_test_add_func("/gmem-accel/engine/inject-inv-stuck-and-fq-full",
                    test_inject_inv_stuck_and_fq_full);
    g_test_add_func("/gmem-accel/engine/inject-poison", test_inject_poison);
    return g_test_run();
}
