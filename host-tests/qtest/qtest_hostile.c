/*
 * gmem-accel against a hostile guest and a hostile migration stream: each
 * test drives the device into a state a careless device mishandles (a crash,
 * a hang, a VM that cannot migrate, an access it must not make) and checks
 * that the device refuses it or comes through.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <glib/gstdio.h>
#include "qemu/bswap.h"
#include "standard-headers/linux/pci_regs.h"
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
 * A stream whose in-flight command names context 65535 (or 64) must be
 * refused: loaded, the next step would index the 64-entry context array out
 * of bounds (a crash, or a command ring walked as a page table).
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
 * is refused at write time and the register keeps its value: stored, the
 * value would make every destination refuse the stream, and the VM could not
 * migrate. The test checks the error, the value and the migration.
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
 * ATOMIC_ADD to something that is not RAM fails with BAD_ADDRESS, as COPY
 * does: mapped, such a target is a zeroed bounce buffer, and the add would be
 * reported OK without reaching anything.
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
 * Group numbers are 16 bits and wrap: after 65536 groups on queue 1 the
 * number queue 0 still waits on comes round again. Queue 1 must never get
 * it, or a response meant for one queue could reach the other.
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
 * A doorbell of malformed descriptors would log one line each (megabytes per
 * ring): the log is limited per device, the error registers are not.
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
 * One doorbell must not run a whole ring inline when its commands do no
 * data work (4095 NOPs, or TLB_INVs that each scan a 64 Ki-entry TLB): every
 * command costs budget, so one MMIO write starts at most 1024 NOPs and a
 * handful of such TLB_INVs; the bottom half does the rest.
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
 * Device A's MSI-X vector aimed at device B's doorbell: B must not run its
 * ring inline inside A's work, once per A command (engines nested behind one
 * vCPU write); B's bottom half runs it.
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
 * A long command runs in bottom-half turns, each with work left followed by
 * a pause: turns back to back would leave the BQL free for microseconds at a
 * time, and a vCPU that needs it (an interrupt, a register read) would wait
 * for the whole batch, the guest frozen meanwhile. 32 MiB of FILL (32 turns
 * of 1 MiB after the inline start) makes about 31 pauses, and completes.
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

/* Bus mastering of the device on or off (its DMA fails while off). */
static void bus_master(Env *e, bool on)
{
    uint32_t cmd = gq_pci_cfg_readl(e->qt, DEVFN, PCI_COMMAND);

    gq_pci_cfg_writel(e->qt, DEVFN, PCI_COMMAND,
                      on ? cmd | PCI_COMMAND_MASTER
                         : cmd & ~PCI_COMMAND_MASTER);
}

/* ERROR_CODE must be @code with @info; cleared (no MSI: bus mastering off) */
static void expect_error_quiet(Env *e, uint32_t code, uint32_t info)
{
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_ERROR_CODE), ==, code);
    g_assert_cmphex(gq_reg(e->g, GMEM_REG_ERROR_INFO), ==, info);
    gq_set_reg(e->g, GMEM_REG_ERROR_CODE, 0);
}

static void inject_fq_full(Env *e)
{
    json_node_unref(gq_qmp_return(e->g,
        "{\"execute\": \"qom-set\", \"arguments\": {\"path\": "
        "\"/machine/peripheral/gmem0\", \"property\": \"inject\", "
        "\"value\": \"fq-full\"}}"));
}

/*
 * A queue whose status write-back fails breaks, and must drop its fault
 * group with it: a broken queue holding a group is a state every
 * destination refuses ("queue state against its command and faults"), and
 * the VM could not migrate. The guest gets there by faulting a command,
 * turning bus mastering off and then cancelling the group (queue 0), or
 * moving FQ_HEAD so that a group that waited for room is posted (queue 1:
 * its record cannot be written, the command is cancelled). Breaking a queue
 * drops its group: the VM migrates, the queues arrive broken with no group,
 * and recover as usual.
 */
static void test_broken_queue_migrates(void)
{
    Env *e = env_start(NULL);
    GmemCmd nop = { .opcode = GMEM_OP_NOP };
    Rec recs[4];
    uint32_t idx0, idx1;
    GmemQTest *g;
    Stream *st;
    Env d;
    bool loaded;
    uint8_t pat[16], *p;

    idx0 = submit(e, 0, copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_VA,
                                 0x30000000ull, 64));
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(fq_take(e, recs, G_N_ELEMENTS(recs)), ==, 1);
    inject_fq_full(e);
    idx1 = submit(e, 1, copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_VA,
                                 0x31000000ull, 64));
    wait_state(e, 1, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_ERROR_CODE), ==,
                     GMEM_ERR_FAULT_OVERFLOW);
    gq_set_reg(e->g, GMEM_REG_ERROR_CODE, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_STATUS), ==,
                     GMEM_FQ_STATUS_ENABLED | GMEM_FQ_STATUS_OVERFLOW);

    bus_master(e, false);
    respond(e, recs[0].group, GMEM_RESP_CANCEL);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(0, GMEM_CQ_STATE)), ==,
                     GMEM_CQ_STATE_BROKEN);
    expect_error_quiet(e, GMEM_ERR_DMA, 0);
    gq_set_reg(e->g, GMEM_REG_FQ_HEAD, e->fq_head);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(1, GMEM_CQ_STATE)), ==,
                     GMEM_CQ_STATE_BROKEN);
    expect_error_quiet(e, GMEM_ERR_DMA, 1);
    bus_master(e, true);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_PENDING), ==, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_STATUS), ==,
                     GMEM_FQ_STATUS_ENABLED);
    /* neither status was written: HEAD stays at the command */
    g_assert_cmpuint(status_of(e, 0, idx0), ==, GMEM_CMD_ST_PENDING);
    g_assert_cmpuint(status_of(e, 1, idx1), ==, GMEM_CMD_ST_PENDING);

    st = stream_save(e);
    /* queue 0 broke with no fault group: none is in the stream */
    stq_be_p(pat, CQ_RING(0));
    stl_be_p(pat + 8, CQ_LOG2);
    stl_be_p(pat + 12, GMEM_CQ_CTRL_ENABLE);
    p = stream_find_last(st, pat, sizeof(pat));
    /* head, tail, state, completed, busy, raw[64], progress, group */
    p += 16 + 4 * 4 + 1 + GMEM_CMD_SIZE + 8 + 2;
    g_assert_cmpuint(p[0], ==, 0);                  /* group_posted */
    g_assert_cmpuint(ldl_be_p(p + 1), ==, 0);       /* nfaults */
    g = gq_try_incoming("hbm-size=64M", st->uri, &loaded);
    g_assert_true(loaded);
    d = (Env) { .g = g, .qt = g->qt };
    for (unsigned q = 0; q < 2; q++) {
        g_assert_cmpuint(gq_reg(g, GMEM_REG_QUEUE(q, GMEM_CQ_STATE)), ==,
                         GMEM_CQ_STATE_BROKEN);
        g_assert_cmpuint(gq_reg(g, GMEM_REG_QUEUE(q, GMEM_CQ_HEAD)), ==,
                         q ? idx1 : idx0);
        /* disabled and enabled again, it works */
        gq_set_reg(g, GMEM_REG_QUEUE(q, GMEM_CQ_CTRL), 0);
        gq_set_reg(g, GMEM_REG_QUEUE(q, GMEM_CQ_CTRL), GMEM_CQ_CTRL_ENABLE);
        g_assert_cmpuint(run(&d, q, nop), ==, GMEM_CMD_ST_OK);
    }
    g_assert_cmpuint(gq_reg(g, GMEM_REG_FQ_PENDING), ==, 0);
    g_assert_cmphex(gq_reg(g, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    gq_quit(g);

    /*
     * A stream whose broken queue still holds its group (a device that kept
     * it) is taken too, the group dropped: queue 0's group number and its
     * fault are still in the stream, as they were.
     */
    p[0] = 1;
    stl_be_p(p + 1, 1);
    g_assert_true(stream_load(st));
    stream_free(st);
    env_quit(e);
}

/*
 * Engine DMA aimed at another gmem-accel's registers: a FILL or a compute
 * command with stride 0 at its RESET register would reset it once per
 * element, at INV_TRIGGER scan its whole TLB once per element, and a COPY
 * would read its registers. The device's accesses to system memory reach
 * RAM only: such a command fails at its first access, BAD_ADDRESS with
 * ERROR_CODE DMA, the peer untouched; its HBM (BAR2, RAM) is still
 * reachable, peer to peer.
 */
#define P_DEVFN     (5 << 3)
#define P_BAR0      0xe0100000ull
#define P_BAR2      0x2000000000ull
#define P_RING      0x00300000ull

static void test_engine_dma_into_peer_registers(void)
{
    Env *e = env_start_with(NULL, "-device gmem-accel,id=gmem1,addr=05.0,"
                                  "hbm-size=64M,tlb-entries=65536");
    GmemCmd fill = {
        .opcode = GMEM_OP_FILL, .flags = GMEM_CMD_F_DST(GMEM_ADDR_SYS),
        .dst = P_BAR0 + GMEM_REG_RESET, .size = 4,
        .value = GMEM_RESET_MAGIC | (uint64_t)GMEM_RESET_MAGIC << 32,
    };
    GmemCmd scale = {
        .opcode = GMEM_OP_SCALE_ADD,
        .flags = GMEM_CMD_F_DST(GMEM_ADDR_SYS) | GMEM_CMD_F_SRC(GMEM_ADDR_SYS),
        .dst = P_BAR0 + GMEM_REG_RESET, .src = SYS_DATA,
        .size = 4096, .value = 1,
    };
    uint8_t buf[64], want[64];
    uint32_t steps;

    gq_pci_cfg_writel(e->qt, P_DEVFN, PCI_BASE_ADDRESS_0, (uint32_t)P_BAR0);
    gq_pci_cfg_writel(e->qt, P_DEVFN, PCI_BASE_ADDRESS_1, P_BAR0 >> 32);
    gq_pci_cfg_writel(e->qt, P_DEVFN, PCI_BASE_ADDRESS_2, (uint32_t)P_BAR2);
    gq_pci_cfg_writel(e->qt, P_DEVFN, PCI_BASE_ADDRESS_3, P_BAR2 >> 32);
    gq_pci_cfg_writel(e->qt, P_DEVFN, PCI_COMMAND,
                      PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    qtest_writel(e->qt, P_BAR0 + GMEM_REG_SCRATCH, 0x5ca1ab1e);
    qtest_writel(e->qt, P_BAR0 + GMEM_REG_QUEUE(1, GMEM_CQ_BASE_LO), P_RING);
    qtest_writel(e->qt, P_BAR0 + GMEM_REG_QUEUE(1, GMEM_CQ_ENTRIES_LOG2),
                 CQ_LOG2);
    qtest_writel(e->qt, P_BAR0 + GMEM_REG_QUEUE(1, GMEM_CQ_CTRL),
                 GMEM_CQ_CTRL_ENABLE);
    qtest_writel(e->qt, SYS_DATA, GMEM_RESET_MAGIC);

    /* FILL, then SCALE_ADD with stride 0, at the peer's RESET */
    g_assert_cmpuint(run(e, 0, fill), ==, GMEM_CMD_ST_BAD_ADDRESS);
    gq_expect_error(e->g, GMEM_ERR_DMA, 0);
    g_assert_cmpuint(run(e, 0, scale), ==, GMEM_CMD_ST_BAD_ADDRESS);
    gq_expect_error(e->g, GMEM_ERR_DMA, 0);
    g_assert_true(gq_log_has(e->g, "not RAM"));
    /* at its INV_TRIGGER: the first element fails, none is done */
    scale.dst = P_BAR0 + GMEM_REG_INV_TRIGGER;
    qtest_writel(e->qt, SYS_DATA, 7);
    steps = gq_reg(e->g, GMEM_REG_QUEUE(0, GMEM_CQ_STEPS));
    g_assert_cmpuint(run(e, 0, scale), ==, GMEM_CMD_ST_BAD_ADDRESS);
    gq_expect_error(e->g, GMEM_ERR_DMA, 0);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(0, GMEM_CQ_STEPS)), ==, steps);
    /* a COPY from its registers */
    g_assert_cmpuint(run(e, 0, copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_SYS,
                                        P_BAR0, sizeof(buf))), ==,
                     GMEM_CMD_ST_BAD_ADDRESS);
    gq_expect_error(e->g, GMEM_ERR_DMA, 0);

    /* The peer saw none of it */
    g_assert_cmphex(qtest_readl(e->qt, P_BAR0 + GMEM_REG_SCRATCH), ==,
                    0x5ca1ab1e);
    g_assert_cmphex(qtest_readl(e->qt, P_BAR0 + GMEM_REG_QUEUE(1,
                                                              GMEM_CQ_CTRL)),
                    ==, GMEM_CQ_CTRL_ENABLE);
    g_assert_cmpuint(qtest_readl(e->qt, P_BAR0 + GMEM_REG_INV_DONE), ==, 0);
    g_assert_cmphex(qtest_readl(e->qt, P_BAR0 + GMEM_REG_STATUS), ==,
                    GMEM_STATUS_READY);

    /* Its HBM is memory: a COPY there and back works */
    pattern(want, sizeof(want), 9);
    qtest_memwrite(e->qt, SYS_DATA + 0x1000, want, sizeof(want));
    g_assert_cmpuint(run(e, 0, copy_cmd(GMEM_ADDR_SYS, P_BAR2 + 0x3000,
                                        GMEM_ADDR_SYS, SYS_DATA + 0x1000,
                                        sizeof(want))), ==, GMEM_CMD_ST_OK);
    qtest_memread(e->qt, P_BAR2 + 0x3000, buf, sizeof(buf));
    g_assert_cmpmem(buf, sizeof(buf), want, sizeof(want));
    g_assert_cmpuint(run(e, 0, copy_cmd(GMEM_ADDR_HBM, 0, GMEM_ADDR_SYS,
                                        P_BAR2 + 0x3000, sizeof(want))), ==,
                     GMEM_CMD_ST_OK);
    qtest_memread(e->qt, BAR2_ADDR, buf, sizeof(buf));
    g_assert_cmpmem(buf, sizeof(buf), want, sizeof(want));
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
    g_test_add_func("/gmem-accel/hostile/broken-queue-migrates",
                    test_broken_queue_migrates);
    g_test_add_func("/gmem-accel/hostile/engine-dma-into-peer-registers",
                    test_engine_dma_into_peer_registers);
    return g_test_run();
}
