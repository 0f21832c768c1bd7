/*
 * gmem-accel as the monitor shows it, and across a migration, through
 * qtest: the QOM 'state' and 'page-table[N]' properties over QMP, HMP
 * 'info gmem-accel', and the device's state (a queue stalled on a posted
 * fault, counters, HBM) carried through a migration stream into a new QEMU.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <glib/gstdio.h>
#include "qemu/bswap.h"
#include "gmem_env.h"

#define VA      0x7f0000000000ull   /* 4 RW pages, 1 RO, 1 malformed */
#define VA_2M   0x7f0000400000ull   /* one 2 MiB HBM page */
#define VA_64K  0x7f0000600000ull   /* two 64 KiB HBM pages */
#define RSVD    (1ull << 7)

static JsonNode *qom_get(GmemQTest *g, const char *property)
{
    g_autofree char *cmd = g_strdup_printf(
        "{\"execute\": \"qom-get\", \"arguments\": "
        "{\"path\": \"/machine/peripheral/gmem0\", \"property\": \"%s\"}}",
        property);

    return gq_qmp_return(g, cmd);
}

static JsonObject *obj_at(JsonArray *a, unsigned i)
{
    return json_array_get_object_element(a, i);
}

static int64_t num(JsonObject *o, const char *member)
{
    g_assert_true(json_object_has_member(o, member));
    return json_object_get_int_member(o, member);
}

static const char *str(JsonObject *o, const char *member)
{
    g_assert_true(json_object_has_member(o, member));
    return json_object_get_string_member(o, member);
}

static bool flag(JsonObject *o, const char *member)
{
    g_assert_true(json_object_has_member(o, member));
    return json_object_get_boolean_member(o, member);
}

static void test_state(void)
{
    Env *e = env_start(NULL);
    g_autoptr(JsonNode) st = NULL;
    JsonObject *o, *q1;

    submit_bits(e, 1, copy_cmd(GMEM_ADDR_HBM, 0, GMEM_ADDR_VA, 0x90000000, 8),
                GMEM_CQ_TAIL_FAULT_HOLD);
    wait_state(e, 1, GMEM_CQ_STATE_STALLED);
    st = qom_get(e->g, "state");
    o = json_node_get_object(st);
    g_assert_cmpint(num(o, "hbm-size"), ==, HBM_SIZE);
    g_assert_cmpuint(json_array_get_length(
        json_object_get_array_member(o, "contexts")), ==, 1);
    g_assert_cmpint(num(obj_at(json_object_get_array_member(o, "contexts"), 0),
                        "root"), ==, e->root);
    g_assert_true(flag(obj_at(json_object_get_array_member(o, "contexts"), 0),
                       "enabled"));
    /* the queues the environment programmed, of 64 */
    g_assert_cmpuint(json_array_get_length(
        json_object_get_array_member(o, "queues")), ==, ENV_QUEUES);
    q1 = obj_at(json_object_get_array_member(o, "queues"), 1);
    g_assert_cmpint(num(q1, "id"), ==, 1);
    g_assert_cmpstr(str(q1, "state"), ==, "stalled");
    g_assert_cmpstr(str(q1, "command"), ==, "copy");
    g_assert_true(flag(q1, "group-posted"));
    g_assert_cmpint(num(q1, "group-faults"), ==, 1);
    g_assert_true(flag(q1, "fault-held"));
    g_assert_cmpstr(str(obj_at(json_object_get_array_member(o, "queues"), 0),
                        "state"), ==, "idle");
    g_assert_false(flag(obj_at(json_object_get_array_member(o, "queues"), 0),
                        "fault-held"));
    g_assert_cmpint(num(json_object_get_object_member(o, "counters"),
                        "faults"), ==, 1);
    g_assert_cmpint(num(json_object_get_object_member(o, "counters"),
                        "walks"), ==, 1);
    g_assert_false(flag(json_object_get_object_member(o, "fault-queue"),
                        "overflow"));
    env_quit(e);
}

/*
 * 4 RW pages, a RO page, a page with a reserved bit, a 2 MiB HBM page,
 * two 64 KiB HBM pages.
 */
static void map_sample(Env *e)
{
    for (int i = 0; i < 4; i++) {
        map4k(e, VA + i * 4096, SYS_DATA + i * 4096, RW);
    }
    map4k(e, VA + 0x4000, SYS_DATA + 0x10000, RO);
    map4k(e, VA + 0x6000, SYS_DATA + 0x20000, RW | RSVD);
    map2m(e, VA_2M, 0x200000, RWA | GMEM_PTE_HBM);
    map64k(e, VA_64K, 0x40000, RW | GMEM_PTE_HBM);
    map64k(e, VA_64K + GMEM_CONT_SIZE, 0x50000, RW | GMEM_PTE_HBM);
}

static void check_run(JsonObject *r, uint64_t va, uint64_t pages,
                      uint64_t page_size, uint64_t target, bool hbm,
                      uint64_t pte_addr, uint64_t bits)
{
    /* "pages" counts PTEs: a 64 KiB page takes 16 */
    uint64_t ptes = page_size == GMEM_CONT_SIZE ? GMEM_CONT_ENTRIES : 1;

    g_assert_false(json_object_has_member(r, "error"));
    g_assert_cmphex(num(r, "va"), ==, va);
    g_assert_cmpint(num(r, "pages"), ==, pages * ptes);
    g_assert_cmphex(num(r, "size"), ==, pages * page_size);
    g_assert_cmphex(num(r, "page-size"), ==, page_size);
    g_assert_cmphex(num(r, "target"), ==, target);
    g_assert_cmpstr(str(r, "target-in"), ==, hbm ? "hbm" : "system");
    g_assert_cmpint(flag(r, "read"), ==, !!(bits & GMEM_PTE_READ));
    g_assert_cmpint(flag(r, "write"), ==, !!(bits & GMEM_PTE_WRITE));
    g_assert_cmpint(flag(r, "atomic"), ==, !!(bits & GMEM_PTE_ATOMIC));
    g_assert_cmphex(num(r, "pte-addr"), ==, pte_addr);
    g_assert_cmpstr(str(r, "pte-in"), ==, "system");
    g_assert_cmpint(num(r, "level"), ==, page_size == GMEM_HUGE_SIZE ? 2 : 1);
    g_assert_cmphex(num(r, "pte"), ==, target | bits |
                    (page_size == GMEM_HUGE_SIZE ? GMEM_PTE_HUGE : 0) |
                    (page_size == GMEM_CONT_SIZE ? GMEM_PTE_CONT : 0));
}

static void test_page_table(void)
{
    Env *e = env_start(NULL);
    g_autoptr(JsonNode) pt = NULL, empty = NULL;
    g_autofree char *err = NULL;
    JsonObject *o, *bad;
    JsonArray *runs;

    map_sample(e);
    pt = qom_get(e->g, "page-table[" G_STRINGIFY(CTX) "]");
    o = json_node_get_object(pt);
    g_assert_cmpint(num(o, "id"), ==, CTX);
    g_assert_true(flag(o, "enabled"));
    g_assert_cmphex(num(o, "root"), ==, e->root);
    g_assert_cmpstr(str(o, "root-in"), ==, "system");
    g_assert_cmpstr(str(o, "dump"), ==, "complete");
    runs = json_object_get_array_member(o, "runs");
    g_assert_cmpuint(json_array_get_length(runs), ==, 5);
    check_run(obj_at(runs, 0), VA, 4, 4096, SYS_DATA, false,
              pte_slot(e, VA, 1), RW);
    check_run(obj_at(runs, 1), VA + 0x4000, 1, 4096, SYS_DATA + 0x10000,
              false, pte_slot(e, VA + 0x4000, 1), RO);
    bad = obj_at(runs, 2);
    g_assert_cmpstr(str(bad, "error"), ==, "reserved-bits");
    g_assert_cmphex(num(bad, "va"), ==, VA + 0x6000);
    g_assert_cmphex(num(bad, "pte"), ==, (SYS_DATA + 0x20000) | RW | RSVD);
    g_assert_cmphex(num(bad, "pte-addr"), ==, pte_slot(e, VA + 0x6000, 1));
    check_run(obj_at(runs, 3), VA_2M, 1, GMEM_HUGE_SIZE, 0x200000, true,
              pte_slot(e, VA_2M, 2), RWA | GMEM_PTE_HBM);
    check_run(obj_at(runs, 4), VA_64K, 2, GMEM_CONT_SIZE, 0x40000, true,
              pte_slot(e, VA_64K, 1), RW | GMEM_PTE_HBM);

    /* A table pointing back at its parent shows as a loop, QEMU lives on. */
    qtest_writeq(e->qt, pte_slot(e, 0x1000000000ull, 2),
              (pte_slot(e, 0x1000000000ull, 3) & GMEM_PTE_ADDR_MASK) |
              GMEM_PTE_VALID);
    json_node_unref(pt);
    pt = qom_get(e->g, "page-table[" G_STRINGIFY(CTX) "]");
    runs = json_object_get_array_member(json_node_get_object(pt), "runs");
    g_assert_cmpuint(json_array_get_length(runs), ==, 6);
    g_assert_cmpstr(str(obj_at(runs, 0), "error"), ==, "loop");

    /* A context never programmed is empty; there is no context 64. */
    empty = qom_get(e->g, "page-table[0]");
    g_assert_false(flag(json_node_get_object(empty), "enabled"));
    g_assert_cmpuint(json_array_get_length(json_object_get_array_member(
        json_node_get_object(empty), "runs")), ==, 0);
    err = gq_qmp(e->g, "{\"execute\": \"qom-get\", \"arguments\": "
                 "{\"path\": \"/machine/peripheral/gmem0\", "
                 "\"property\": \"page-table[64]\"}}");
    g_assert_nonnull(strstr(err, "\"error\""));
    env_quit(e);
}

static void check_use(JsonObject *m, uint64_t hbm, uint64_t size,
                      uint64_t page_size, uint64_t va)
{
    g_assert_cmphex(num(m, "hbm"), ==, hbm);
    g_assert_cmphex(num(m, "size"), ==, size);
    g_assert_cmphex(num(m, "page-size"), ==, page_size);
    g_assert_cmpint(num(m, "context"), ==, CTX);
    g_assert_cmphex(num(m, "va"), ==, va);
    g_assert_true(flag(m, "read"));
}

/*
 * hbm-map: who maps HBM, by HBM address. The sample plus a 4 KiB alias of the first 64 KiB
 * page: two runs over HBM 0x40000 (the sharers), system pages and the malformed entry left
 * out. And the same from HMP.
 */
static void test_hbm_map(void)
{
    Env *e = env_start(NULL);
    g_autoptr(JsonNode) map = NULL;
    g_autofree char *hmp = NULL, *line = NULL;
    JsonArray *uses;

    map_sample(e);
    map4k(e, VA + 0x8000, 0x40000, RO | GMEM_PTE_HBM);
    map = qom_get(e->g, "hbm-map");
    g_assert_cmpstr(str(json_node_get_object(map), "dump"), ==, "complete");
    uses = json_object_get_array_member(json_node_get_object(map), "mappings");
    g_assert_cmpuint(json_array_get_length(uses), ==, 3);
    check_use(obj_at(uses, 0), 0x40000, 0x1000, 0x1000, VA + 0x8000);
    check_use(obj_at(uses, 1), 0x40000, 2 * GMEM_CONT_SIZE, GMEM_CONT_SIZE,
              VA_64K);
    check_use(obj_at(uses, 2), 0x200000, GMEM_HUGE_SIZE, GMEM_HUGE_SIZE, VA_2M);
    g_assert_false(flag(obj_at(uses, 0), "write"));

    hmp = gq_hmp(e->g, "info gmem-accel-hbm gmem0");
    g_test_message("%s", hmp);
    g_assert_nonnull(strstr(hmp, "HBM 64 MiB: 3 runs map it, dump complete\n"));
    line = g_strdup_printf("  0x000000040000-0x000000060000    128 KiB  64K   %d  "
                           "0x%012" PRIx64 " rw-\n", CTX, (uint64_t)VA_64K);
    g_assert_nonnull(strstr(hmp, line));
    g_free(hmp);
    hmp = gq_hmp(e->g, "info gmem-accel-hbm nosuch");
    g_assert_cmpstr(hmp, ==, "no gmem-accel device with id 'nosuch'\n");
    env_quit(e);
}

static void test_hmp(void)
{
    Env *e = env_start(NULL);
    g_autofree char *all = NULL, *ctx = NULL, *window = NULL, *bad = NULL;
    g_autofree char *nodev = NULL, *run = NULL, *ctxline = NULL;

    map_sample(e);
    all = gq_hmp(e->g, "info gmem-accel");
    g_test_message("%s", all);
    g_assert_nonnull(strstr(all, "gmem0 (/machine/peripheral/gmem0), "
                                 "PCI 00:04.0\n"));
    ctxline = g_strdup_printf("  context  %d: enabled, root 0x%" PRIx64
                              " in system memory\n", CTX, e->root);
    g_assert_nonnull(strstr(all, ctxline));
    g_assert_nonnull(strstr(all, "  queue 0: idle "));
    g_assert_nonnull(strstr(all, "fault queue: enabled"));

    ctx = gq_hmp(e->g, "info gmem-accel gmem0 " G_STRINGIFY(CTX));
    g_test_message("%s", ctx);
    g_assert_nonnull(strstr(ctx, "5 runs, dump complete\n"));
    run = g_strdup_printf("  0x%012" PRIx64 "-0x%012" PRIx64 "     16 KiB"
                          "   4K rw-  system 0x%016" PRIx64 "  4 at system "
                          "0x%" PRIx64 "\n", (uint64_t)VA,
                          (uint64_t)VA + 0x4000, (uint64_t)SYS_DATA,
                          pte_slot(e, VA, 1));
    g_assert_nonnull(strstr(ctx, run));
    g_assert_nonnull(strstr(ctx, ": reserved-bits\n"));
    g_assert_nonnull(strstr(ctx, "   2M rwa  hbm    0x0000000000200000  1 "));
    g_assert_nonnull(strstr(ctx, "    128 KiB  64K rw-  hbm    "
                                 "0x0000000000040000  32 "));

    /* A VA window: only the read-only page. */
    window = gq_hmp(e->g, "info gmem-accel gmem0 " G_STRINGIFY(CTX)
                    " 0x7f0000004000 0x1000");
    g_assert_nonnull(strstr(window, "1 runs, dump complete\n"));
    g_assert_nonnull(strstr(window, " r--  system "));

    bad = gq_hmp(e->g, "info gmem-accel gmem0 64");
    g_assert_cmpstr(bad, ==, "context 64 does not exist: give 0-63\n");
    nodev = gq_hmp(e->g, "info gmem-accel gmem9");
    g_assert_cmpstr(nodev, ==, "no gmem-accel device with id 'gmem9'\n");
    env_quit(e);
}

#define DUMP_MAX_RUNS   16384           /* the device's GMEM_DUMP_MAX_RUNS */
#define VA_MANY         0x7e0000000000ull

/* @n runs of one 4 KiB page each, all over HBM page 0: one a PTE */
static void map_runs(Env *e, unsigned n)
{
    uint64_t table[GMEM_PT_ENTRIES];

    for (unsigned t = 0; t * GMEM_PT_ENTRIES < n; t++) {
        uint64_t l1 = pt_alloc(e);
        unsigned k = MIN(n - t * GMEM_PT_ENTRIES, GMEM_PT_ENTRIES);

        memset(table, 0, sizeof(table));
        for (unsigned i = 0; i < k; i++) {
            table[i] = cpu_to_le64(RW | GMEM_PTE_HBM);
        }
        qtest_memwrite(e->qt, l1, table, sizeof(table));
        qtest_writeq(e->qt, pte_slot(e, VA_MANY + t * GMEM_HUGE_SIZE, 2),
                     l1 | GMEM_PTE_VALID);
    }
}

static void check_dump(Env *e, const char *dump, const char *hbm_dump)
{
    g_autoptr(JsonNode) pt = qom_get(e->g, "page-table[" G_STRINGIFY(CTX) "]");
    g_autoptr(JsonNode) map = qom_get(e->g, "hbm-map");
    JsonObject *o = json_node_get_object(pt);

    g_assert_cmpstr(str(o, "dump"), ==, dump);
    g_assert_cmpuint(json_array_get_length(
        json_object_get_array_member(o, "runs")), ==, DUMP_MAX_RUNS);
    o = json_node_get_object(map);
    g_assert_cmpstr(str(o, "dump"), ==, hbm_dump);
    g_assert_cmpuint(json_array_get_length(
        json_object_get_array_member(o, "mappings")), ==, DUMP_MAX_RUNS);
}

/*
 * A dump reports at most 16384 runs: exactly that many is complete (it said
 * truncated), one more is truncated. The runs are counted as they come:
 * counting the list for each run made a dump quadratic, under the BQL.
 */
static void test_dump_run_limit(void)
{
    Env *e = env_start(NULL);
    g_autofree char *hmp = NULL;

    map_runs(e, DUMP_MAX_RUNS);
    check_dump(e, "complete", "complete");
    map4k(e, VA_MANY + DUMP_MAX_RUNS / GMEM_PT_ENTRIES * GMEM_HUGE_SIZE, 0,
          RW | GMEM_PTE_HBM);
    check_dump(e, "truncated: more than 16384 runs", "truncated");
    hmp = gq_hmp(e->g, "info gmem-accel gmem0 " G_STRINGIFY(CTX));
    g_assert_nonnull(strstr(hmp, "16384 runs, dump truncated: more than "
                                 "16384 runs\n"));
    env_quit(e);
}

/*
 * Stall a copy on a posted fault, migrate to a file, load it into a new
 * QEMU, and finish the copy there: the stall, the fault record, the
 * counters and HBM all came across.
 */
static void test_migration(void)
{
    const uint64_t va = 0x30000000ull;
    const size_t len = 2 * 4096;
    g_autofree char *dir = g_dir_make_tmp("gmem-mig-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "state", NULL);
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree uint8_t *src = g_malloc(len), *out = g_malloc(len);
    g_autofree uint8_t *hbm = g_malloc(4096), *hbm_out = g_malloc(4096);
    Env *e = env_start(NULL);
    GmemQTest *old;
    uint64_t counters[GMEM_NUM_COUNTERS];
    uint32_t idx;
    Rec r[4], after;

    pattern(src, len, 7);
    pattern(hbm, 4096, 9);
    qtest_memwrite(e->qt, SYS_DATA + 0x100000, src, len);
    qtest_memwrite(e->qt, BAR2_ADDR + 0x300000, hbm, 4096);
    idx = submit(e, 0, copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_VA, va,
                                len));
    wait_state(e, 0, GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(fq_take(e, r, G_N_ELEMENTS(r)), ==, 2);
    for (unsigned i = 0; i < GMEM_NUM_COUNTERS; i++) {
        counters[i] = counter(e, i);
    }

    gq_set_reg(e->g, GMEM_REG_FQ_IRQ_HOLD, 1);
    gq_set_reg(e->g, GMEM_REG_QUEUE(3, GMEM_CQ_FAULT_HOLD), 1);
    gq_migrate_out(e->g, uri);
    old = e->g;
    e->g = gq_start_incoming("hbm-size=64M", uri);
    e->qt = e->g->qt;
    gq_quit(old);

    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(0, GMEM_CQ_STATE)), ==,
                     GMEM_CQ_STATE_STALLED);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_TAIL), ==, e->fq_head);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_HEAD), ==, e->fq_head);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_IRQ_HOLD), ==, 1);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(3, GMEM_CQ_FAULT_HOLD)), ==,
                     1);
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_QUEUE(0, GMEM_CQ_FAULT_HOLD)), ==,
                     0);
    g_assert_cmphex(gq_reg64(e->g, GMEM_REG_CTX(CTX, GMEM_CTX_ROOT_LO)), ==,
                    e->root);
    for (unsigned i = 0; i < GMEM_NUM_COUNTERS; i++) {
        g_assert_cmpuint(counter(e, i), ==, counters[i]);
    }
    after = fault_record(e, 1);
    g_assert_cmphex(after.va, ==, r[1].va);
    g_assert_cmpuint(after.group, ==, r[1].group);
    qtest_memread(e->qt, BAR2_ADDR + 0x300000, hbm_out, 4096);
    g_assert_cmpmem(hbm_out, 4096, hbm, 4096);

    /* The driver's answer arrives after the move: the copy completes. */
    for (unsigned i = 0; i < 2; i++) {
        map4k(e, va + i * 4096, SYS_DATA + 0x100000 + i * 4096, RO);
    }
    respond(e, r[0].group, GMEM_RESP_REPLAY);
    g_assert_cmpuint(wait_done(e, 0, idx), ==, GMEM_CMD_ST_OK);
    qtest_memread(e->qt, SYS_DATA, out, len);
    g_assert_cmpmem(out, len, src, len);
    g_assert_cmpuint(counter(e, GMEM_CNT_REPLAYS), ==,
                     counters[GMEM_CNT_REPLAYS] + 1);
    g_assert_cmpuint(counter(e, GMEM_CNT_BYTES), ==,
                     counters[GMEM_CNT_BYTES] + len);
    env_quit(e);
    g_unlink(file);
    g_rmdir(dir);
}

/* While the VM is stopped the engines leave its memory alone. */
static void test_stopped_vm(void)
{
    Env *e = env_start(NULL);
    GmemCmd fill = {
        .opcode = GMEM_OP_FILL, .flags = GMEM_CMD_F_DST(GMEM_ADDR_SYS),
        .dst = SYS_DATA, .size = 4096, .value = 0x5a5a5a5a5a5a5a5aull,
    };
    uint32_t idx;

    qtest_writeq(e->qt, SYS_DATA, 0);
    json_node_unref(gq_qmp_return(e->g, "{\"execute\": \"stop\"}"));
    idx = submit(e, 0, fill);
    for (int i = 0; i < 1000; i++) {
        g_assert_cmpuint(status_of(e, 0, idx), ==, GMEM_CMD_ST_PENDING);
    }
    g_assert_cmphex(qtest_readq(e->qt, SYS_DATA), ==, 0);
    json_node_unref(gq_qmp_return(e->g, "{\"execute\": \"cont\"}"));
    g_assert_cmpuint(wait_done(e, 0, idx), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, SYS_DATA + 4088), ==, fill.value);
    env_quit(e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/gmem-accel/monitor/state", test_state);
    g_test_add_func("/gmem-accel/monitor/page-table", test_page_table);
    g_test_add_func("/gmem-accel/monitor/hmp", test_hmp);
    g_test_add_func("/gmem-accel/monitor/hbm-map", test_hbm_map);
    g_test_add_func("/gmem-accel/monitor/dump-run-limit", test_dump_run_limit);
    g_test_add_func("/gmem-accel/migration/stalled-fault", test_migration);
    g_test_add_func("/gmem-accel/migration/stopped-vm", test_stopped_vm);
    return g_test_run();
}
