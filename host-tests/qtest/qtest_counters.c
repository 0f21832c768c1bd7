/*
 * gmem-accel access counters (spec 0.11) through qtest: COPY commands over
 * system memory and HBM counted per region and aperture, records read back
 * from the notification ring, granularity, clearing, a full ring, bad
 * register values, reset, the monitor and a migration.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <glib/gstdio.h>
#include "qemu/bswap.h"
#include "gmem_env.h"

#define VA_SYS      0x10000000ull   /* 64 pages -> SYS_DATA + 0x100000 */
#define VA_HBM      0x20000000ull   /* 64 pages -> HBM 0x200000 */
#define NPAGES      64
#define AC_RING     0x00230000ull
#define AC_LOG2     4
#define SCRATCH_HBM 0x800000ull     /* the side of a COPY not counted */
#define REGION      (16 * 4096)     /* 16 pages: one 64 KiB region */

typedef struct AcRec {
    uint64_t va;
    uint32_t count, seq;
    uint16_t ctx;
    uint8_t aperture, granularity;
    uint32_t reserved0;
    uint64_t reserved1;
} AcRec;

static Env *ac_start(void)
{
    Env *e = env_start(NULL);

    for (unsigned p = 0; p < NPAGES; p++) {
        map4k(e, VA_SYS + p * 4096, SYS_DATA + 0x100000 + p * 4096, RW);
        map4k(e, VA_HBM + p * 4096, 0x200000 + p * 4096, RW | GMEM_PTE_HBM);
    }
    return e;
}

static void ac_enable(Env *e, unsigned log2, unsigned gran, unsigned thr)
{
    gq_set_reg64(e->g, GMEM_REG_AC_BASE_LO, AC_RING);
    gq_set_reg(e->g, GMEM_REG_AC_ENTRIES_LOG2, log2);
    gq_set_reg(e->g, GMEM_REG_AC_GRANULARITY, gran);
    gq_set_reg(e->g, GMEM_REG_AC_THRESHOLD, thr);
    gq_set_reg(e->g, GMEM_REG_AC_CTRL, GMEM_AC_CTRL_ENABLE);
    g_assert_cmphex(gq_reg(e->g, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_CTRL), ==, GMEM_AC_CTRL_ENABLE);
    gq_msi_fired(e->g, GMEM_VEC_ACCESS);
}

/* Read @size bytes at @va of the device (a remote or local window) */
static void touch_read(Env *e, uint64_t va, uint64_t size)
{
    g_assert_cmpuint(run(e, 0, copy_cmd(GMEM_ADDR_HBM, SCRATCH_HBM,
                                        GMEM_ADDR_VA, va, size)),
                     ==, GMEM_CMD_ST_OK);
}

/* Write @size bytes at @va */
static void touch_write(Env *e, uint64_t va, uint64_t size)
{
    g_assert_cmpuint(run(e, 0, copy_cmd(GMEM_ADDR_VA, va, GMEM_ADDR_HBM,
                                        SCRATCH_HBM, size)),
                     ==, GMEM_CMD_ST_OK);
}

static AcRec ac_record(Env *e, uint32_t i)
{
    struct gmem_access_record raw;
    AcRec r;

    qtest_memread(e->qt, AC_RING + i * GMEM_ACCESS_RECORD_SIZE, &raw,
                  sizeof(raw));
    r.va = le64_to_cpu(raw.va);
    r.count = le32_to_cpu(raw.count);
    r.ctx = le16_to_cpu(raw.ctx);
    r.aperture = raw.aperture;
    r.granularity = raw.granularity;
    r.seq = le32_to_cpu(raw.seq);
    r.reserved0 = le32_to_cpu(raw.reserved0);
    r.reserved1 = le64_to_cpu(raw.reserved1);
    return r;
}

static void expect_record(Env *e, uint32_t i, uint64_t va, uint8_t aperture,
                          uint32_t count, uint8_t gran, uint32_t seq)
{
    AcRec r = ac_record(e, i);

    g_assert_cmphex(r.va, ==, va);
    g_assert_cmpuint(r.ctx, ==, CTX);
    g_assert_cmpuint(r.aperture, ==, aperture);
    g_assert_cmpuint(r.count, ==, count);
    g_assert_cmpuint(r.granularity, ==, gran);
    g_assert_cmpuint(r.seq, ==, seq);
    g_assert_cmpuint(r.reserved0, ==, 0);
    g_assert_cmpuint(r.reserved1, ==, 0);
}

static uint32_t tail(Env *e)
{
    return gq_reg(e->g, GMEM_REG_AC_TAIL);
}

static void test_threshold(void)
{
    Env *e = ac_start();

    g_assert_cmphex(gq_reg(e->g, GMEM_REG_CAP) & GMEM_CAP_ACCESS_COUNTERS,
                    ==, GMEM_CAP_ACCESS_COUNTERS);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_CAPACITY), ==,
                     GMEM_AC_MAX_REGIONS);
    ac_enable(e, AC_LOG2, GMEM_AC_GRAN_64K, 32);

    /* 16 remote pages read: below the threshold, no record */
    touch_read(e, VA_SYS, REGION);
    g_assert_cmpuint(tail(e), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_TRACKED), ==, 1);
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_ACCESS));
    /* 16 more: exactly the threshold, one record, the interrupt */
    touch_read(e, VA_SYS, REGION);
    g_assert_cmpuint(tail(e), ==, 1);
    expect_record(e, 0, VA_SYS, GMEM_AC_APERTURE_REMOTE, 32,
                  GMEM_AC_GRAN_64K, 0);
    g_assert_true(gq_msi_fired(e->g, GMEM_VEC_ACCESS));
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_NOTIFIED), ==, 1);

    /* Local: HBM written through the VA, in its own aperture */
    touch_write(e, VA_HBM + REGION, REGION);
    touch_write(e, VA_HBM + REGION + 4096, REGION - 4096);
    g_assert_cmpuint(tail(e), ==, 1);   /* 31 */
    touch_write(e, VA_HBM + REGION + 0x800, 8);   /* one page: 32 */
    g_assert_cmpuint(tail(e), ==, 2);
    expect_record(e, 1, VA_HBM + REGION, GMEM_AC_APERTURE_LOCAL, 32,
                  GMEM_AC_GRAN_64K, 1);
    /*
     * VA_SYS's count started again from 0: a command over it and the next
     * region notifies neither, the second both, in the order it went
     */
    touch_read(e, VA_SYS, 2 * REGION);
    g_assert_cmpuint(tail(e), ==, 2);
    touch_read(e, VA_SYS, 2 * REGION);
    g_assert_cmpuint(tail(e), ==, 4);
    expect_record(e, 2, VA_SYS, GMEM_AC_APERTURE_REMOTE, 32,
                  GMEM_AC_GRAN_64K, 2);
    expect_record(e, 3, VA_SYS + REGION, GMEM_AC_APERTURE_REMOTE, 32,
                  GMEM_AC_GRAN_64K, 3);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_TRACKED), ==, 3);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_DROPPED), ==, 0);
    g_assert_cmphex(gq_reg(e->g, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    env_quit(e);
}

static void test_granularity(void)
{
    Env *e = ac_start();

    ac_enable(e, AC_LOG2, GMEM_AC_GRAN_64K, 16);
    touch_read(e, VA_SYS + REGION, REGION);
    g_assert_cmpuint(tail(e), ==, 1);
    expect_record(e, 0, VA_SYS + REGION, GMEM_AC_APERTURE_REMOTE, 16,
                  GMEM_AC_GRAN_64K, 0);

    /* no change while enabled */
    gq_set_reg(e->g, GMEM_REG_AC_GRANULARITY, GMEM_AC_GRAN_2M);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE, GMEM_REG_AC_GRANULARITY);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_GRANULARITY), ==,
                     GMEM_AC_GRAN_64K);

    gq_set_reg(e->g, GMEM_REG_AC_CTRL, 0);
    ac_enable(e, AC_LOG2, GMEM_AC_GRAN_2M, 16);
    g_assert_cmpuint(tail(e), ==, 0);   /* enabling started the ring anew */
    /* 8 pages in each of two 64 KiB regions: one 2 MiB region, 16 */
    touch_read(e, VA_SYS + REGION + REGION / 2, REGION);
    g_assert_cmpuint(tail(e), ==, 1);
    expect_record(e, 0, VA_SYS, GMEM_AC_APERTURE_REMOTE, 16,
                  GMEM_AC_GRAN_2M, 1);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_TRACKED), ==, 1);
    env_quit(e);
}

static void test_clear(void)
{
    Env *e = ac_start();

    ac_enable(e, AC_LOG2, GMEM_AC_GRAN_64K, 32);
    touch_read(e, VA_SYS, REGION);
    touch_write(e, VA_HBM, REGION);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_TRACKED), ==, 2);

    /* one region, by a VA inside it: the local one stays */
    gq_set_reg64(e->g, GMEM_REG_AC_CLEAR_VA_LO, VA_SYS + 0x1234);
    gq_set_reg(e->g, GMEM_REG_AC_CLEAR_CTX, CTX);
    gq_set_reg(e->g, GMEM_REG_AC_CLEAR, GMEM_AC_CLEAR_REGION);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_TRACKED), ==, 1);
    touch_read(e, VA_SYS, REGION);  /* 16 again, not 32 */
    g_assert_cmpuint(tail(e), ==, 0);
    touch_write(e, VA_HBM, REGION); /* the local one's 32 */
    g_assert_cmpuint(tail(e), ==, 1);
    expect_record(e, 0, VA_HBM, GMEM_AC_APERTURE_LOCAL, 32,
                  GMEM_AC_GRAN_64K, 0);
    /* another context's region of that VA is another region */
    gq_set_reg(e->g, GMEM_REG_AC_CLEAR_CTX, CTX + 1);
    gq_set_reg(e->g, GMEM_REG_AC_CLEAR, GMEM_AC_CLEAR_REGION);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_TRACKED), ==, 2);

    /* all of them */
    gq_set_reg(e->g, GMEM_REG_AC_CLEAR, GMEM_AC_CLEAR_ALL);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_TRACKED), ==, 0);
    touch_read(e, VA_SYS, REGION);
    g_assert_cmpuint(tail(e), ==, 1);
    touch_read(e, VA_SYS, REGION);
    g_assert_cmpuint(tail(e), ==, 2);
    expect_record(e, 1, VA_SYS, GMEM_AC_APERTURE_REMOTE, 32,
                  GMEM_AC_GRAN_64K, 1);
    g_assert_cmphex(gq_reg(e->g, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    env_quit(e);
}

static void test_disabled(void)
{
    Env *e = ac_start();

    /* never enabled: a threshold of 1 and nothing counted */
    gq_set_reg64(e->g, GMEM_REG_AC_BASE_LO, AC_RING);
    gq_set_reg(e->g, GMEM_REG_AC_ENTRIES_LOG2, AC_LOG2);
    gq_set_reg(e->g, GMEM_REG_AC_THRESHOLD, 1);
    touch_read(e, VA_SYS, 4 * REGION);
    touch_write(e, VA_HBM, 4 * REGION);
    g_assert_cmpuint(tail(e), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_TRACKED), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_NOTIFIED), ==, 0);
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_ACCESS));

    /* enabled, then disabled: counting stops, the table stays */
    ac_enable(e, AC_LOG2, GMEM_AC_GRAN_64K, 32);
    touch_read(e, VA_SYS, REGION);
    gq_set_reg(e->g, GMEM_REG_AC_CTRL, 0);
    touch_read(e, VA_SYS, 4 * REGION);
    g_assert_cmpuint(tail(e), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_TRACKED), ==, 1);
    g_assert_false(gq_msi_fired(e->g, GMEM_VEC_ACCESS));
    env_quit(e);
}

/* A refused write sets BAD_VALUE (or READ_ONLY) and changes nothing */
static void bad_write(Env *e, uint32_t reg, uint32_t val, uint32_t code)
{
    uint32_t before = gq_reg(e->g, reg);

    gq_set_reg(e->g, reg, val);
    if (code == GMEM_ERR_BAD_VALUE) {
        g_assert_cmphex(gq_reg64(e->g, GMEM_REG_ERROR_ADDR_LO), ==, val);
    }
    gq_expect_error(e->g, code, reg);
    g_assert_cmphex(gq_reg(e->g, reg), ==, before);
}

static void test_bad_values(void)
{
    Env *e = ac_start();

    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_GRANULARITY), ==,
                     GMEM_AC_GRAN_64K);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_THRESHOLD), ==,
                     GMEM_AC_THRESHOLD_DEFAULT);
    bad_write(e, GMEM_REG_AC_GRANULARITY, 17, GMEM_ERR_BAD_VALUE);
    bad_write(e, GMEM_REG_AC_GRANULARITY, 12, GMEM_ERR_BAD_VALUE);
    bad_write(e, GMEM_REG_AC_THRESHOLD, 0, GMEM_ERR_BAD_VALUE);
    bad_write(e, GMEM_REG_AC_THRESHOLD, GMEM_AC_THRESHOLD_MAX + 1,
              GMEM_ERR_BAD_VALUE);
    bad_write(e, GMEM_REG_AC_ENTRIES_LOG2, 0, GMEM_ERR_BAD_VALUE);
    bad_write(e, GMEM_REG_AC_ENTRIES_LOG2, GMEM_RING_MAX_LOG2 + 1,
              GMEM_ERR_BAD_VALUE);
    bad_write(e, GMEM_REG_AC_CTRL, 2, GMEM_ERR_BAD_VALUE);
    bad_write(e, GMEM_REG_AC_HEAD, 0, GMEM_ERR_BAD_VALUE);   /* disabled */
    bad_write(e, GMEM_REG_AC_CLEAR_CTX, GMEM_NUM_CONTEXTS, GMEM_ERR_BAD_VALUE);
    bad_write(e, GMEM_REG_AC_TAIL, 1, GMEM_ERR_READ_ONLY);
    bad_write(e, GMEM_REG_AC_TRACKED, 1, GMEM_ERR_READ_ONLY);
    bad_write(e, GMEM_REG_AC_CAPACITY, 1, GMEM_ERR_READ_ONLY);
    gq_set_reg(e->g, GMEM_REG_AC_CLEAR, 3);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE, GMEM_REG_AC_CLEAR);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_CLEAR), ==, 0);   /* WO */

    /* enabling needs a ring: none yet, then an unaligned base */
    bad_write(e, GMEM_REG_AC_CTRL, GMEM_AC_CTRL_ENABLE, GMEM_ERR_BAD_VALUE);
    gq_set_reg64(e->g, GMEM_REG_AC_BASE_LO, AC_RING + 8);
    gq_set_reg(e->g, GMEM_REG_AC_ENTRIES_LOG2, AC_LOG2);
    bad_write(e, GMEM_REG_AC_CTRL, GMEM_AC_CTRL_ENABLE, GMEM_ERR_BAD_VALUE);

    /* enabled: the ring and granularity are fixed, HEAD inside the ring */
    ac_enable(e, AC_LOG2, GMEM_AC_GRAN_64K, 16);
    bad_write(e, GMEM_REG_AC_BASE_LO, 0x1000, GMEM_ERR_BAD_VALUE);
    bad_write(e, GMEM_REG_AC_ENTRIES_LOG2, 2, GMEM_ERR_BAD_VALUE);
    bad_write(e, GMEM_REG_AC_HEAD, 1u << AC_LOG2, GMEM_ERR_BAD_VALUE);
    g_assert_cmpuint(gq_reg64(e->g, GMEM_REG_AC_BASE_LO), ==, AC_RING);
    /* and it still counts as programmed */
    touch_read(e, VA_SYS, REGION);
    g_assert_cmpuint(tail(e), ==, 1);
    expect_record(e, 0, VA_SYS, GMEM_AC_APERTURE_REMOTE, 16,
                  GMEM_AC_GRAN_64K, 0);
    g_assert_cmphex(gq_reg(e->g, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    env_quit(e);
}

/* A full ring drops records, counts them, and never holds the engine */
static void test_full_ring(void)
{
    Env *e = ac_start();

    ac_enable(e, 1, GMEM_AC_GRAN_64K, 16);     /* room for one record */
    touch_read(e, VA_SYS, REGION);
    g_assert_cmpuint(tail(e), ==, 1);
    for (unsigned i = 0; i < 3; i++) {
        touch_read(e, VA_SYS, REGION);
    }
    /* one command notifying 4 regions: 4 more dropped, the copy done */
    touch_read(e, VA_SYS, 4 * REGION);
    g_assert_cmpuint(tail(e), ==, 1);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_DROPPED), ==, 7);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_NOTIFIED), ==, 1);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(0, GMEM_CQ_STATE)), ==,
                     GMEM_CQ_STATE_IDLE);
    g_assert_cmphex(gq_reg(e->g, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    /* room again: the next record goes in, numbered after the written */
    gq_set_reg(e->g, GMEM_REG_AC_HEAD, 1);
    touch_write(e, VA_HBM, REGION);
    g_assert_cmpuint(tail(e), ==, 0);
    expect_record(e, 1, VA_HBM, GMEM_AC_APERTURE_LOCAL, 16,
                  GMEM_AC_GRAN_64K, 1);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_DROPPED), ==, 7);
    env_quit(e);
}

/*
 * A long COPY's steps go to the mover's threads (from the bottom half):
 * they count as the engine's own, page by page. 8 MiB over four 2 MiB pages
 * of system memory, 2 MiB regions, threshold 512: a record each, at 512.
 */
static void test_mover_steps(void)
{
    const uint64_t va = 0x40000000ull, sys = 0x01000000ull;
    Env *e = ac_start();

    for (unsigned i = 0; i < 4; i++) {
        map2m(e, va + i * GMEM_HUGE_SIZE, sys + i * GMEM_HUGE_SIZE, RW);
    }
    ac_enable(e, AC_LOG2, GMEM_AC_GRAN_2M, 512);
    touch_read(e, va, 4 * GMEM_HUGE_SIZE);
    g_assert_cmpuint(tail(e), ==, 4);
    for (unsigned i = 0; i < 4; i++) {
        expect_record(e, i, va + i * GMEM_HUGE_SIZE, GMEM_AC_APERTURE_REMOTE,
                      512, GMEM_AC_GRAN_2M, i);
    }
    g_assert_cmpint(gq_state(e->g, "gmem0", "mover-batches"), >, 0);
    env_quit(e);
}

static void test_reset(void)
{
    Env *e = ac_start();

    ac_enable(e, AC_LOG2, GMEM_AC_GRAN_2M, 16);
    touch_read(e, VA_SYS, 2 * REGION);  /* 16 and 16: two records */
    g_assert_cmpuint(tail(e), ==, 2);
    gq_set_reg(e->g, GMEM_REG_RESET, GMEM_RESET_MAGIC);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_CTRL), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_TRACKED), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_TAIL), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_NOTIFIED), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_DROPPED), ==, 0);
    g_assert_cmpuint(gq_reg64(e->g, GMEM_REG_AC_BASE_LO), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_GRANULARITY), ==,
                     GMEM_AC_GRAN_64K);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_THRESHOLD), ==,
                     GMEM_AC_THRESHOLD_DEFAULT);
    env_quit(e);
}

static JsonObject *ac_state(JsonNode *st)
{
    JsonObject *o = json_node_get_object(st);

    g_assert_true(json_object_has_member(o, "access-counters"));
    return json_object_get_object_member(o, "access-counters");
}

static JsonNode *qom_state(GmemQTest *g)
{
    return gq_qmp_return(g, "{\"execute\": \"qom-get\", \"arguments\": "
                         "{\"path\": \"/machine/peripheral/gmem0\", "
                         "\"property\": \"state\"}}");
}

static void test_monitor(void)
{
    Env *e = ac_start();
    g_autoptr(JsonNode) st = NULL;
    g_autofree char *hmp = NULL;
    JsonObject *ac, *r;
    JsonArray *regions;

    ac_enable(e, AC_LOG2, GMEM_AC_GRAN_64K, 32);
    touch_read(e, VA_SYS, REGION);
    touch_write(e, VA_HBM, 2 * REGION);
    touch_write(e, VA_HBM, REGION);
    st = qom_state(e->g);
    ac = ac_state(st);
    g_assert_true(json_object_get_boolean_member(ac, "enabled"));
    g_assert_cmpint(json_object_get_int_member(ac, "granularity"), ==,
                    64 * 1024);
    g_assert_cmpint(json_object_get_int_member(ac, "threshold"), ==, 32);
    g_assert_cmpint(json_object_get_int_member(ac, "base"), ==, AC_RING);
    g_assert_cmpint(json_object_get_int_member(ac, "entries"), ==,
                    1 << AC_LOG2);
    g_assert_cmpint(json_object_get_int_member(ac, "tracked"), ==, 3);
    g_assert_cmpint(json_object_get_int_member(ac, "capacity"), ==,
                    GMEM_AC_MAX_REGIONS);
    g_assert_cmpint(json_object_get_int_member(ac, "notified"), ==, 1);
    g_assert_cmpint(json_object_get_int_member(ac, "dropped"), ==, 0);
    g_assert_cmpint(json_object_get_int_member(ac, "tail"), ==, 1);
    regions = json_object_get_array_member(ac, "regions");
    g_assert_cmpuint(json_array_get_length(regions), ==, 3);
    for (unsigned i = 0; i < 3; i++) {
        int64_t va;

        r = json_array_get_object_element(regions, i);
        va = json_object_get_int_member(r, "va");
        g_assert_cmpint(json_object_get_int_member(r, "context"), ==, CTX);
        if (va == VA_SYS) {
            g_assert_cmpstr(json_object_get_string_member(r, "aperture"),
                            ==, "system");
            g_assert_cmpint(json_object_get_int_member(r, "count"), ==, 16);
        } else if (va == VA_HBM) {     /* notified at 32, from 0 again */
            g_assert_cmpstr(json_object_get_string_member(r, "aperture"),
                            ==, "hbm");
            g_assert_cmpint(json_object_get_int_member(r, "count"), ==, 0);
        } else {
            g_assert_cmpint(va, ==, VA_HBM + REGION);
            g_assert_cmpint(json_object_get_int_member(r, "count"), ==, 16);
        }
    }
    hmp = gq_hmp(e->g, "info gmem-accel");
    g_test_message("%s", hmp);
    g_assert_nonnull(strstr(hmp, "  access counters: enabled, granularity "
                                 "64 KiB, threshold 32, base 0x230000 head 0 "
                                 "tail 1, 3/256 regions tracked, 1 notified, "
                                 "0 dropped\n"));
    env_quit(e);
}

/* The table, registers and ring migrate: a count goes on where it was */
static void test_migration(void)
{
    Env *e = ac_start();
    g_autofree char *dir = g_dir_make_tmp("gmem-ac-mig-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "state", NULL);
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    GmemQTest *old;

    ac_enable(e, AC_LOG2, GMEM_AC_GRAN_64K, 32);
    touch_read(e, VA_SYS, 2 * REGION);
    touch_read(e, VA_SYS, REGION);      /* VA_SYS 32: a record */
    g_assert_cmpuint(tail(e), ==, 1);
    touch_write(e, VA_HBM, REGION);     /* VA_HBM 16 */

    old = e->g;
    gq_migrate_out(e->g, uri);
    e->g = gq_start_incoming("hbm-size=64M", uri);
    e->qt = e->g->qt;
    gq_quit(old);
    g_unlink(file);
    g_rmdir(dir);

    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_CTRL), ==, GMEM_AC_CTRL_ENABLE);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_THRESHOLD), ==, 32);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_TRACKED), ==, 3);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_AC_NOTIFIED), ==, 1);
    g_assert_cmpuint(tail(e), ==, 1);
    /* VA_SYS + REGION had 16: 16 more notify, as VA_HBM's 16 more */
    touch_read(e, VA_SYS + REGION, REGION);
    g_assert_cmpuint(tail(e), ==, 2);
    expect_record(e, 1, VA_SYS + REGION, GMEM_AC_APERTURE_REMOTE, 32,
                  GMEM_AC_GRAN_64K, 1);
    touch_write(e, VA_HBM, REGION);
    g_assert_cmpuint(tail(e), ==, 3);
    expect_record(e, 2, VA_HBM, GMEM_AC_APERTURE_LOCAL, 32,
                  GMEM_AC_GRAN_64K, 2);
    env_quit(e);
}

/* Load @data as a migration stream into a new QEMU: does it accept it? */
static bool stream_loads(const char *file, const char *uri,
                         const uint8_t *data, gsize len)
{
    GmemQTest *g;
    bool loaded;

    g_assert_true(g_file_set_contents(file, (const char *)data, len, NULL));
    g = gq_try_incoming("hbm-size=64M", uri, &loaded);
    gq_quit(g);
    return loaded;
}

/* The last occurrence of @pat: the device's state comes after guest RAM. */
static gsize stream_find_last(const uint8_t *data, gsize len,
                              const void *pat, size_t n)
{
    for (gsize i = len - n + 1; i-- > 0;) {
        if (!memcmp(data + i, pat, n)) {
            return i;
        }
    }
    g_error("pattern not in the migration stream");
}

/*
 * A stream is untrusted: access-counter state the registers could never
 * reach (a granularity, a TAIL past the ring, a region out of its set, of
 * another aperture or context, unaligned, AC_TRACKED not counting them) is
 * refused; the untouched stream loads.
 */
static void test_stream_checked(void)
{
    Env *e = ac_start();
    g_autofree char *dir = g_dir_make_tmp("gmem-ac-hostile-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "state", NULL);
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree uint8_t *data = NULL, *edit = NULL;
    uint8_t regs[28], region[23];
    gsize len, r, g;
    struct { gsize off; unsigned size; uint64_t val; } bad[] = {
        { 0, 4, 20 },           /* registers' GRANULARITY */
        { 0, 4, GMEM_AC_THRESHOLD_MAX + 1 },
        { 0, 4, 1u << AC_LOG2 },    /* TAIL */
        { 0, 8, VA_SYS + 4096 },    /* the region's VA: unaligned */
        { 0, 8, 0 },            /* TICK: the region used after it */
        { 0, 4, 2 },            /* TRACKED */
        { 0, 2, GMEM_NUM_CONTEXTS },
        { 0, 1, 2 },            /* aperture */
        { 0, 4, GMEM_AC_THRESHOLD_MAX + 1 },    /* count */
    };

    ac_enable(e, AC_LOG2, GMEM_AC_GRAN_64K, 32);
    touch_read(e, VA_SYS, REGION);
    gq_migrate_out(e->g, uri);
    g_assert_true(g_file_get_contents(file, (char **)&data, &len, NULL));
    /* vmstate is big-endian: BASE, ENTRIES_LOG2, CTRL, HEAD, TAIL, GRAN, THR */
    stq_be_p(regs, AC_RING);
    stl_be_p(regs + 8, AC_LOG2);
    stl_be_p(regs + 12, GMEM_AC_CTRL_ENABLE);
    stl_be_p(regs + 16, 0);
    stl_be_p(regs + 20, 0);
    stl_be_p(regs + 24, GMEM_AC_GRAN_64K);
    g = stream_find_last(data, len, regs, sizeof(regs));
    /* the one region: VA, used (tick 1), count, ctx, aperture */
    stq_be_p(region, VA_SYS);
    stq_be_p(region + 8, 1);
    stl_be_p(region + 16, 16);
    stw_be_p(region + 20, CTX);
    region[22] = GMEM_AC_APERTURE_REMOTE;
    r = stream_find_last(data, len, region, sizeof(region));
    bad[0].off = g + 24;
    bad[1].off = g + 28;
    bad[2].off = g + 20;
    bad[3].off = r;
    bad[4].off = g + 56;
    bad[5].off = g + 64;
    bad[6].off = r + 20;
    bad[7].off = r + 22;
    bad[8].off = r + 16;
    g_assert_true(stream_loads(file, uri, data, len));
    for (unsigned i = 0; i < G_N_ELEMENTS(bad); i++) {
        uint8_t *p;

        g_free(edit);
        edit = g_memdup2(data, len);
        p = edit + bad[i].off;
        switch (bad[i].size) {
        case 8:
            stq_be_p(p, bad[i].val);
            break;
        case 4:
            stl_be_p(p, bad[i].val);
            break;
        case 2:
            stw_be_p(p, bad[i].val);
            break;
        default:
            *p = bad[i].val;
        }
        g_test_message("edit %u", i);
        g_assert_false(stream_loads(file, uri, edit, len));
    }
    g_unlink(file);
    g_rmdir(dir);
    env_quit(e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/gmem-accel/ac/threshold", test_threshold);
    g_test_add_func("/gmem-accel/ac/granularity", test_granularity);
    g_test_add_func("/gmem-accel/ac/clear", test_clear);
    g_test_add_func("/gmem-accel/ac/disabled", test_disabled);
    g_test_add_func("/gmem-accel/ac/bad-values", test_bad_values);
    g_test_add_func("/gmem-accel/ac/full-ring", test_full_ring);
    g_test_add_func("/gmem-accel/ac/mover-steps", test_mover_steps);
    g_test_add_func("/gmem-accel/ac/reset", test_reset);
    g_test_add_func("/gmem-accel/ac/monitor", test_monitor);
    g_test_add_func("/gmem-accel/ac/migration", test_migration);
    g_test_add_func("/gmem-accel/ac/stream-checked", test_stream_checked);
    return g_test_run();
}
