/*
 * gmem-accel against a hostile guest and a hostile migration stream
 * (issue 17): each test reproduces one defect the device had.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <glib/gstdio.h>
#include "qemu/bswap.h"
#include "gmem_env.h"

/* A migration stream in a temporary file. */
typedef struct Stream {
    char *dir, *file, *uri;
    uint8_t *data;
    gsize len;
} Stream;

static Stream *stream_save(Env *e)
{
    Stream *st = g_new0(Stream, 1);

    st->dir = g_dir_make_tmp("gmem-hostile-XXXXXX", NULL);
    st->file = g_build_filename(st->dir, "state", NULL);
    st->uri = g_strdup_printf("file:%s", st->file);
    gq_migrate_out(e->g, st->uri);
    g_assert_true(g_file_get_contents(st->file, (char **)&st->data, &st->len,
                                      NULL));
    return st;
}

/* The last occurrence of @pat: the device's state comes after guest RAM. */
static uint8_t *stream_find_last(Stream *st, const void *pat, size_t n)
{
    for (gsize i = st->len - n + 1; i-- > 0;) {
        if (!memcmp(st->data + i, pat, n)) {
            return st->data + i;
        }
    }
    g_error("pattern not in the migration stream");
}

/* Load the (edited) stream into a new QEMU: does it accept it? */
static bool stream_load(Stream *st)
{
    GmemQTest *g;
    bool loaded;

    g_assert_true(g_file_set_contents(st->file, (char *)st->data, st->len,
                                      NULL));
    g = gq_try_incoming("hbm-size=64M", st->uri, &loaded);
    gq_quit(g);
    return loaded;
}

static void stream_free(Stream *st)
{
    g_unlink(st->file);
    g_rmdir(st->dir);
    g_free(st->dir);
    g_free(st->file);
    g_free(st->uri);
    g_free(st->data);
    g_free(st);
}

/*
 * A stream whose in-flight command names context 65535 (or 64): loaded, it
 * indexed the 64-entry context array on the next step (SIGSEGV, or a
 * command ring walked as a page table). It must be refused.
 */
static void test_stream_in_flight_context(void)
{
    static const uint16_t bad_ctx[] = { 0xffff, GMEM_NUM_CONTEXTS };

    for (unsigned i = 0; i < G_N_ELEMENTS(bad_ctx); i++) {
        Env *e = env_start(NULL);
        GmemCmd c = copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_VA,
                             0x30000000ull, 8192);
        uint8_t raw[GMEM_CMD_SIZE], *p;
        Stream *st;

        submit(e, 0, c);
        wait_state(e, 0, GMEM_CQ_STATE_STALLED);
        st = stream_save(e);
        gmem_cmd_encode(&c, raw);
        p = stream_find_last(st, raw, sizeof(raw));
        g_assert_true(stream_load(st));         /* untouched: fine */
        p[2] = bad_ctx[i];                      /* ctx, little-endian */
        p[3] = bad_ctx[i] >> 8;
        g_assert_false(stream_load(st));
        stream_free(st);
        env_quit(e);
    }
}

/*
 * An enabled queue whose ring size is 2^20 entries in the stream: loaded,
 * `1u << log2` and index masks went wrong on the next doorbell.
 */
static void test_stream_queue_size(void)
{
    Env *e = env_start(NULL);
    uint8_t pat[16], *p;
    Stream *st;

    st = stream_save(e);
    /* vmstate is big-endian: BASE, ENTRIES_LOG2, CTRL of queue 2 */
    stq_be_p(pat, CQ_RING(2));
    stl_be_p(pat + 8, CQ_LOG2);
    stl_be_p(pat + 12, GMEM_CQ_CTRL_ENABLE);
    p = stream_find_last(st, pat, sizeof(pat));
    stl_be_p(p + 8, 20);
    g_assert_false(stream_load(st));
    stream_free(st);
    env_quit(e);
}

/*
 * FQ_ENTRIES_LOG2 written out of range while the fault queue is disabled
 * was stored, and made the VM unmigratable (the destination refused it).
 * It is refused at write time now, and the VM migrates.
 */
static void test_fq_size_keeps_vm_migratable(void)
{
    Env *e = env_start(NULL);
    Stream *st;

    gq_set_reg(e->g, GMEM_REG_FQ_CTRL, 0);
    gq_set_reg(e->g, GMEM_REG_FQ_ENTRIES_LOG2, 40);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE, GMEM_REG_FQ_ENTRIES_LOG2);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_ENTRIES_LOG2), ==, FQ_LOG2);
    gq_set_reg(e->g, GMEM_REG_FQ_ENTRIES_LOG2, 0);
    gq_expect_error(e->g, GMEM_ERR_BAD_VALUE, GMEM_REG_FQ_ENTRIES_LOG2);
    st = stream_save(e);
    g_assert_true(stream_load(st));
    stream_free(st);
    env_quit(e);
}

/*
 * ATOMIC_ADD to something that is not RAM was applied to a zeroed bounce
 * buffer and reported OK. It fails with BAD_ADDRESS, as COPY does.
 */
static void test_atomic_add_not_ram(void)
{
    Env *e = env_start(NULL);
    GmemCmd add = {
        .opcode = GMEM_OP_ATOMIC_ADD, .flags = GMEM_CMD_F_DST(GMEM_ADDR_SYS),
        .dst = UNBACKED, .size = 1, .value = 5,
    };

    g_assert_cmpuint(run(e, 0, add), ==, GMEM_CMD_ST_BAD_ADDRESS);
    gq_expect_error(e->g, GMEM_ERR_DMA, 0);
    add.dst = SYS_DATA;     /* RAM still works */
    qtest_writel(e->qt, SYS_DATA, 37);
    g_assert_cmpuint(run(e, 0, add), ==, GMEM_CMD_ST_OK);
    g_assert_cmpuint(qtest_readl(e->qt, SYS_DATA), ==, 42);
    env_quit(e);
}

/*
 * Group numbers are 16 bits: after 65536 groups on queue 1 the number queue
 * 0 still waits on came round again, and a response meant for one queue
 * could reach the other. Queue 1 now never gets a number queue 0 holds.
 */
static void test_group_numbers_wrap(void)
{
    const uint32_t ring = (1u << CQ_LOG2) - 1, fq_mask = (1u << FQ_LOG2) - 1;
    Env *e = env_start(NULL);
    uint8_t descs[GMEM_CMD_SIZE * 16];
    GmemCmd c0 = copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_VA,
                          0x30000000ull, 64);
    uint32_t idx0, n = 0;
    Rec r0;

    idx0 = submit(e, 0, c0);
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(fq_take(e, &r0, 1), ==, 1);

    /* Queue 1: batches of faulting commands, each cancelled at once. */
    for (uint32_t i = 0; i < ring; i++) {
        GmemCmd c = copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_VA,
                             0x40000000ull + i * 4096, 64);

        gmem_cmd_encode(&c, descs + i * GMEM_CMD_SIZE);
    }
    while (n < 65536 + 2 * ring) {
        qtest_memwrite(e->qt, CQ_RING(1), descs, ring * GMEM_CMD_SIZE);
        e->tail[1] = 0;
        gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_TAIL), ring);
        for (uint32_t i = 0; i < ring; i++, n++) {
            Rec r = fault_record(e, e->fq_head);

            g_assert_cmpuint(r.engine, ==, 1);
            g_assert_cmpuint(r.group, !=, r0.group);
            e->fq_head = (e->fq_head + 1) & fq_mask;
            gq_set_reg(e->g, GMEM_REG_FQ_HEAD, e->fq_head);
            respond(e, r.group, GMEM_RESP_CANCEL);
        }
        wait_state(e, 1, GMEM_CQ_STATE_IDLE);
        /* the ring is empty again: start it over at slot 0 */
        gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_CTRL), 0);
        gq_set_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_CTRL),
                   GMEM_CQ_CTRL_ENABLE);
    }
    /* Queue 0's own answer still reaches queue 0. */
    map4k(e, 0x30000000ull, SYS_DATA + 0x100000, RW);
    respond(e, r0.group, GMEM_RESP_REPLAY);
    g_assert_cmpuint(wait_done(e, 0, idx0), ==, GMEM_CMD_ST_OK);
    env_quit(e);
}

/*
 * A doorbell of malformed descriptors logged one line each (megabytes per
 * ring); the log is limited per device now, the error registers are not.
 */
static void test_guest_error_log_is_limited(void)
{
    const uint32_t ring = (1u << CQ_LOG2) - 1;
    Env *e = env_start(NULL);
    g_autofree char *log = NULL;
    unsigned lines = 0;

    for (unsigned round = 0; round < 4; round++) {
        for (uint32_t i = 0; i < ring; i++) {
            submit(e, 0, (GmemCmd) { .opcode = 99 });
        }
        wait_state(e, 0, GMEM_CQ_STATE_IDLE);
        g_assert_cmpuint(gq_reg(e->g, GMEM_REG_ERROR_CODE), ==,
                         GMEM_ERR_BAD_COMMAND);
        gq_set_reg(e->g, GMEM_REG_ERROR_CODE, 0);
    }
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(0, GMEM_CQ_COMPLETED)), ==,
                     4 * ring);
    g_assert_true(g_file_get_contents(e->g->log_path, &log, NULL, NULL));
    for (char *p = log; (p = strstr(p, "malformed")); p++) {
        lines++;
    }
    g_assert_cmpuint(lines, >=, 1);
    g_assert_cmpuint(lines, <=, 40);    /* 20 a second, two windows at most */
    env_quit(e);
}

/* Write @n descriptors @c to ring @ring_addr and ring queue @q's doorbell. */
static void ring_of(Env *e, unsigned q, uint64_t ring_addr, unsigned log2,
                    GmemCmd c, uint32_t n)
{
    g_autofree uint8_t *descs = g_malloc0((size_t)n * GMEM_CMD_SIZE);

    for (uint32_t i = 0; i < n; i++) {
        gmem_cmd_encode(&c, descs + (size_t)i * GMEM_CMD_SIZE);
    }
    qtest_memwrite(e->qt, ring_addr, descs, (size_t)n * GMEM_CMD_SIZE);
    gq_set_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_CTRL), 0);
    gq_set_reg64(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_BASE_LO), ring_addr);
    gq_set_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_ENTRIES_LOG2), log2);
    gq_set_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_CTRL), GMEM_CQ_CTRL_ENABLE);
    gq_set_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_TAIL), n);
    wait_state(e, q, GMEM_CQ_STATE_IDLE);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_COMPLETED)), ==,
                     n);
}

/*
 * One doorbell ran a whole ring inline when its commands did no data work:
 * 4095 NOPs, or TLB_INVs that each scan a 64 Ki-entry TLB. Every command
 * costs budget now: one MMIO write starts at most 1024 NOPs and a handful of
 * such TLB_INVs; the bottom half does the rest.
 */
static void test_doorbell_work_is_bounded(void)
{
    Env *e = env_start("tlb-entries=65536");
    GmemCmd inv = { .opcode = GMEM_OP_TLB_INV, .ctx = GMEM_INV_ALL_CONTEXTS };

    ring_of(e, 1, 0x01000000ull, 12, (GmemCmd) { .opcode = GMEM_OP_NOP },
            4095);
    g_assert_cmpint(gq_state(e->g, "gmem0", "inline-max-commands"), <=,
                    1024);
    g_assert_cmpint(gq_state(e->g, "gmem0", "inline-max-commands"), >=, 1);
    ring_of(e, 2, 0x01400000ull, 8, inv, 255);
    g_assert_cmpint(gq_state(e->g, "gmem0", "inline-max-commands"), <=,
                    1024);
    env_quit(e);
    e = env_start("tlb-entries=65536");
    ring_of(e, 2, 0x01400000ull, 8, inv, 255);
    g_assert_cmpint(gq_state(e->g, "gmem0", "inline-max-commands"), <=, 8);
    env_quit(e);
}

/*
 * Device A's MSI-X vector aimed at device B's doorbell: B ran its ring
 * inline inside A's work, once per A command. B's bottom half runs it now.
 */
#define B_DEVFN     (5 << 3)
#define B_BAR0      0xe0100000ull
#define B_RING      0x00300000ull

static void test_msi_into_another_device(void)
{
    Env *e;
    uint32_t n = 15;
    g_autofree uint8_t *descs = g_malloc0(n * GMEM_CMD_SIZE);
    GmemCmd nop = { .opcode = GMEM_OP_NOP };
    uint64_t entry = BAR0_ADDR + GMEM_MSIX_TABLE_OFFSET +
                     16 * GMEM_VEC_QUEUE(0);
    uint64_t b_tail = B_BAR0 + GMEM_REG_QUEUE(1, GMEM_CQ_TAIL);

    e = g_new0(Env, 1);
    e->g = gq_start_with("hbm-size=64M",
                         "-device gmem-accel,id=gmem1,addr=05.0,hbm-size=64M");
    e->qt = e->g->qt;
    queue_setup(e, 0);
    /* B: BAR0 mapped, memory and bus mastering on, queue 1 with 15 NOPs */
    gq_pci_cfg_writel(e->qt, B_DEVFN, 0x10, (uint32_t)B_BAR0);
    gq_pci_cfg_writel(e->qt, B_DEVFN, 0x14, B_BAR0 >> 32);
    gq_pci_cfg_writel(e->qt, B_DEVFN, 0x04, 0x6);
    for (uint32_t i = 0; i < n; i++) {
        gmem_cmd_encode(&nop, descs + i * GMEM_CMD_SIZE);
    }
    qtest_memwrite(e->qt, B_RING, descs, n * GMEM_CMD_SIZE);
    qtest_writel(e->qt, B_BAR0 + GMEM_REG_QUEUE(1, GMEM_CQ_BASE_LO), B_RING);
    qtest_writel(e->qt, B_BAR0 + GMEM_REG_QUEUE(1, GMEM_CQ_BASE_HI), 0);
    qtest_writel(e->qt, B_BAR0 + GMEM_REG_QUEUE(1, GMEM_CQ_ENTRIES_LOG2),
                 CQ_LOG2);
    qtest_writel(e->qt, B_BAR0 + GMEM_REG_QUEUE(1, GMEM_CQ_CTRL),
                 GMEM_CQ_CTRL_ENABLE);
    /* A: queue 0's completion vector writes n to B's doorbell */
    qtest_writel(e->qt, entry, (uint32_t)b_tail);
    qtest_writel(e->qt, entry + 4, b_tail >> 32);
    qtest_writel(e->qt, entry + 8, n);

    g_assert_cmpuint(run(e, 0, (GmemCmd) { .opcode = GMEM_OP_NOP,
                                           .flags = GMEM_CMD_F_NOTIFY }),
                     ==, GMEM_CMD_ST_OK);
    /* B's bottom half runs B's ring: wait for it (each read lets it run) */
    for (int i = 0; i < 200000; i++) {
        if (qtest_readl(e->qt, B_BAR0 + GMEM_REG_QUEUE(1, GMEM_CQ_HEAD)) ==
            n) {
            break;
        }
    }
    g_assert_cmpuint(qtest_readl(e->qt,
                                 B_BAR0 + GMEM_REG_QUEUE(1, GMEM_CQ_HEAD)),
                     ==, n);
    g_assert_cmpint(gq_state(e->g, "gmem1", "kicks-deferred"), ==, 1);
    g_assert_cmpint(gq_state(e->g, "gmem1", "inline-max-commands"), ==, 0);
    env_quit(e);
}

/*
 * A long command ran in bottom halves back to back, which left the BQL free
 * for microseconds at a time: a vCPU that needed it (an interrupt, a register
 * read) waited for the whole batch, and a guest froze for minutes. Each turn
 * with work left is now followed by a pause, so 32 MiB of FILL (32 turns of
 * 1 MiB after the inline start) makes about 31 pauses, and still completes.
 */
static void test_busy_engine_pauses(void)
{
    Env *e = env_start(NULL);
    int64_t pauses = gq_state(e->g, "gmem0", "engine-pauses");

    g_assert_cmpuint(run(e, 1, (GmemCmd) { .opcode = GMEM_OP_FILL,
                         .flags = GMEM_CMD_F_DST(GMEM_ADDR_HBM),
                         .dst = 0, .size = 32 << 20,
                         .value = 0x5a5a5a5a5a5a5a5aull }), ==,
                     GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, BAR2_ADDR + (32 << 20) - 8), ==,
                    0x5a5a5a5a5a5a5a5aull);
    g_assert_cmpint(gq_state(e->g, "gmem0", "engine-pauses") - pauses, >=,
                    30);
    env_quit(e);
}

/*
 * A page table whose every entry points at the same next table (three tables
 * of guest memory) has 512^3 paths: the monitor's dump reads at most 4096
 * tables of it and says so, rather than hold the main loop for the walk.
 */
static void test_page_table_dump_is_bounded(void)
{
    Env *e = env_start(NULL);
    uint64_t l3 = pt_alloc(e), l2 = pt_alloc(e), l1 = pt_alloc(e);
    uint64_t table[512];
    g_autoptr(JsonNode) pt = NULL;
    gint64 t0;

    for (unsigned i = 0; i < 512; i++) {
        table[i] = cpu_to_le64(l3 | GMEM_PTE_VALID);
    }
    qtest_memwrite(e->qt, e->root, table, sizeof(table));
    for (unsigned i = 0; i < 512; i++) {
        table[i] = cpu_to_le64(l2 | GMEM_PTE_VALID);
    }
    qtest_memwrite(e->qt, l3, table, sizeof(table));
    for (unsigned i = 0; i < 512; i++) {
        table[i] = cpu_to_le64(l1 | GMEM_PTE_VALID);
    }
    qtest_memwrite(e->qt, l2, table, sizeof(table));
    t0 = g_get_monotonic_time();
    pt = gq_qmp_return(e->g, "{\"execute\": \"qom-get\", \"arguments\": "
                       "{\"path\": \"/machine/peripheral/gmem0\", "
                       "\"property\": \"page-table[1]\"}}");
    g_test_message("page-table dump: %.3f s",
                   (g_get_monotonic_time() - t0) / 1e6);
    g_assert_cmpstr(json_object_get_string_member(json_node_get_object(pt),
                                                  "dump"), ==,
                    "truncated: more than 4096 tables");
    env_quit(e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/gmem-accel/hostile/stream-in-flight-context",
                    test_stream_in_flight_context);
    g_test_add_func("/gmem-accel/hostile/stream-queue-size",
                    test_stream_queue_size);
    g_test_add_func("/gmem-accel/hostile/fq-size-keeps-vm-migratable",
                    test_fq_size_keeps_vm_migratable);
    g_test_add_func("/gmem-accel/hostile/atomic-add-not-ram",
                    test_atomic_add_not_ram);
    g_test_add_func("/gmem-accel/hostile/group-numbers-wrap",
                    test_group_numbers_wrap);
    g_test_add_func("/gmem-accel/hostile/guest-error-log-is-limited",
                    test_guest_error_log_is_limited);
    g_test_add_func("/gmem-accel/hostile/doorbell-work-is-bounded",
                    test_doorbell_work_is_bounded);
    g_test_add_func("/gmem-accel/hostile/msi-into-another-device",
                    test_msi_into_another_device);
    g_test_add_func("/gmem-accel/hostile/busy-engine-pauses",
                    test_busy_engine_pauses);
    g_test_add_func("/gmem-accel/hostile/page-table-dump-is-bounded",
                    test_page_table_dump_is_bounded);
    return g_test_run();
}
