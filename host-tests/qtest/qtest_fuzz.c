/*
 * A structure-aware fuzzer of gmem-accel over qtest: each case
 * starts QEMU with a random device (and sometimes a peer device), then runs
 * random but well-shaped guest actions: register writes (known registers
 * with edge values, and anywhere), descriptors in rings (valid templates
 * with one field broken, or random bytes), page tables (valid, reserved
 * bits, loops, HBM), fault-queue answers (right, stale, garbage), resets,
 * MSI-X vectors aimed at device registers, faults injected from the host
 * (the device's 'inject'), and migrations into a new QEMU.
 * After each case QEMU must still answer. Everything follows from the case
 * seed, which a failure prints: run that case alone with --seed S --cases 1.
 *
 *   gmem-accel-qtest-fuzz [--seconds N] [--seed S] [--cases N] [--tap]
 *   GMEM_FUZZ_CORPUS=FILE: case seeds that failed, run first and appended to
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <glib/gstdio.h>
#include "gmem_env.h"

#define OPS_PER_CASE    300
#define CASE_TIMEOUT_S  120     /* a case taking longer is a hang */
#define PEER_BAR0       0xe0100000ull
#define PEER_DEVFN      (5 << 3)
#define RAM_END         0x02000000ull   /* what the fuzzer writes into */

static uint64_t rng;
static uint64_t case_seed;
static uint64_t qtest_ops, migrations, injections;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t pick(uint64_t n)
{
    return n ? rnd() % n : 0;
}

/* A value of the kinds that break code: edges, powers of two, anything. */
static uint64_t edgy(void)
{
    static const uint64_t edges[] = {
        0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 63, 64, 0xff, 0x100,
        0xfff, 0x1000, 0xffff, 0x10000, 0x1fffff, 0x200000, 0x7fffffff,
        0x80000000, 0xffffffff, 0x100000000ull, 1ull << 47, 1ull << 48,
        ~0ull, ~0ull - 1, 0x8000000000000000ull,
    };

    switch (pick(4)) {
    case 0:
        return edges[pick(G_N_ELEMENTS(edges))];
    case 1:
        return 1ull << pick(64);
    case 2:
        return pick(0x10000);
    default:
        return rnd();
    }
}

static void wr(Env *e, uint32_t reg, uint32_t val)
{
    qtest_ops++;
    gq_set_reg(e->g, reg, val);
}

static uint32_t rd(Env *e, uint32_t reg)
{
    qtest_ops++;
    return gq_reg(e->g, reg);
}

/* A register of the device: a known one mostly, sometimes any offset. */
static uint32_t any_reg(void)
{
    static const uint32_t known[] = {
        GMEM_REG_RESET, GMEM_REG_ERROR_CODE, GMEM_REG_SCRATCH,
        GMEM_REG_FQ_BASE_LO, GMEM_REG_FQ_BASE_HI, GMEM_REG_FQ_ENTRIES_LOG2,
        GMEM_REG_FQ_CTRL, GMEM_REG_FQ_HEAD, GMEM_REG_FAULT_RESPONSE,
        GMEM_REG_FQ_IRQ_HOLD,
        GMEM_REG_INV_VA_LO, GMEM_REG_INV_VA_HI, GMEM_REG_INV_SIZE_LO,
        GMEM_REG_INV_SIZE_HI, GMEM_REG_INV_CTX, GMEM_REG_INV_TRIGGER,
        GMEM_REG_AC_BASE_LO, GMEM_REG_AC_ENTRIES_LOG2, GMEM_REG_AC_CTRL,
        GMEM_REG_AC_HEAD, GMEM_REG_AC_GRANULARITY, GMEM_REG_AC_THRESHOLD,
        GMEM_REG_AC_CLEAR_VA_LO, GMEM_REG_AC_CLEAR_CTX, GMEM_REG_AC_CLEAR,
    };

    switch (pick(4)) {
    case 0:
        return known[pick(G_N_ELEMENTS(known))];
    case 1:
        return GMEM_REG_QUEUE(pick(GMEM_NUM_QUEUES), 4 * pick(10));
    case 2:
        return GMEM_REG_CTX(pick(GMEM_NUM_CONTEXTS), 4 * pick(4));
    default:
        return 4 * pick(GMEM_REGS_SIZE / 4);
    }
}

/* An address an operand may name: mapped VA, RAM, HBM, holes, edges. */
static uint64_t any_addr(unsigned kind)
{
    switch (pick(3)) {
    case 0:
        return kind == GMEM_ADDR_HBM ? pick(HBM_SIZE) :
               kind == GMEM_ADDR_SYS ? SYS_DATA + pick(0x100000) :
               0x30000000ull + pick(0x400000);
    case 1:
        return pick(RAM_END) & ~7ull;
    default:
        return edgy();
    }
}

/* A descriptor: a valid command's shape with a field or two at random. */
static GmemCmd any_cmd(void)
{
    GmemCmd c = {
        .opcode = 1 + pick(7), .ctx = pick(4) ? CTX : edgy(),
        .flags = pick(4) ? GMEM_CMD_F_DST(pick(3)) | GMEM_CMD_F_SRC(pick(3)) |
                           (pick(2) ? GMEM_CMD_F_NOTIFY : 0) |
                           (pick(2) ? GMEM_CMD_F_WIDE : 0)
                         : pick(256),
    };
    unsigned use = GMEM_OP_USES(c.opcode);

    c.dst = use & GMEM_USE_DST ? any_addr(GMEM_CMD_F_DST_KIND(c.flags)) : 0;
    c.src = use & GMEM_USE_SRC ? any_addr(GMEM_CMD_F_SRC_KIND(c.flags)) : 0;
    c.size = use & GMEM_USE_SIZE ? (pick(3) ? pick(3 * 4096) : edgy()) : 0;
    c.value = use & GMEM_USE_VALUE ? rnd() : 0;
    c.value2 = use & GMEM_USE_VALUE2 ? rnd() : 0;
    if (use & GMEM_USE_STRIDES) {
        c.dst_stride = pick(2) ? 8 << pick(8) : edgy();
        c.src_stride = use & GMEM_USE_SRC ? (pick(2) ? 8 << pick(8) : edgy())
                                          : 0;
    }
    if (use & GMEM_USE_ELEMENTS) {
        c.size = pick(3) ? pick(64) : edgy();
        c.dst &= ~7ull;
        c.src &= ~7ull;
    }
    switch (pick(8)) {      /* break one thing, sometimes */
    case 0:
        c.reserved = rnd();
        break;
    case 1:
        c.opcode = pick(256);
        break;
    case 2:
        c.flags = pick(256);
        break;
    default:
        break;
    }
    return c;
}

static void op_submit(Env *e)
{
    unsigned q = pick(ENV_QUEUES);
    uint32_t n = 1 + pick(8);

    for (uint32_t i = 0; i < n; i++) {
        uint32_t slot = e->tail[q];
        uint8_t raw[GMEM_CMD_SIZE];

        if (pick(10)) {
            GmemCmd c = any_cmd();

            gmem_cmd_encode(&c, raw);
        } else {
            for (unsigned b = 0; b < sizeof(raw); b++) {
                raw[b] = rnd();
            }
        }
        qtest_memwrite(e->qt, CQ_RING(q) + slot * GMEM_CMD_SIZE, raw,
                       sizeof(raw));
        qtest_ops++;
        e->tail[q] = (slot + 1) & ((1u << CQ_LOG2) - 1);
    }
    wr(e, GMEM_REG_QUEUE(q, GMEM_CQ_TAIL),
       pick(16) ? e->tail[q] | (pick(2) ? GMEM_CQ_TAIL_FAULT_HOLD : 0)
                : edgy());
}

/* Room left in the page-table pool (it ends where the rings begin)? */
static bool pool_has_room(Env *e)
{
    return e->pt_next + 4 * 4096 <= CQ_RING(0);
}

static void op_page_table(Env *e)
{
    uint64_t va = 0x30000000ull + pick(0x400000);
    uint64_t bits = pick(4) ? (RW | (pick(2) ? GMEM_PTE_ATOMIC : 0))
                            : edgy() | GMEM_PTE_VALID;
    uint64_t target = pick(2) ? SYS_DATA + (pick(256) << 12)
                              : (pick(HBM_SIZE) & ~0xfffull) | GMEM_PTE_HBM;

    if (!pool_has_room(e)) {
        return;
    }

    switch (pick(5)) {
    case 0:
        map2m(e, va, target & ~0x1fffffull, bits);
        break;
    case 1:         /* a table pointing at itself or its parent */
        qtest_writeq(e->qt, pte_slot(e, va, 2),
                     (pick(2) ? e->root : PT_POOL + (pick(8) << 12)) |
                     GMEM_PTE_VALID);
        break;
    case 2:         /* any entry anywhere in the table pool */
        qtest_writeq(e->qt, PT_POOL + (pick(64) << 12) + pick(512) * 8,
                     edgy());
        break;
    default:
        map4k(e, va & ~0xfffull, target, bits);
        break;
    }
    qtest_ops += 4;
    if (pick(4) == 0) {
        wr(e, GMEM_REG_INV_CTX, pick(2) ? CTX : edgy());
        wr(e, GMEM_REG_INV_TRIGGER, rnd());
    }
}

static void op_faults(Env *e)
{
    uint32_t log2 = rd(e, GMEM_REG_FQ_ENTRIES_LOG2);
    uint32_t mask = log2 && log2 <= GMEM_RING_MAX_LOG2 ? (1u << log2) - 1 : 0;
    uint32_t tail = rd(e, GMEM_REG_FQ_TAIL);

    for (unsigned n = 0; n < 32 && e->fq_head != tail && mask; n++) {
        Rec r = fault_record(e, e->fq_head & mask);
        uint32_t code = pick(8) ? 1 + pick(2) : pick(8);

        qtest_ops++;
        e->fq_head = (e->fq_head + 1) & mask;
        if (pick(3) == 0 && pool_has_room(e)) {
            map4k(e, r.va & ~0xfffull, SYS_DATA + (pick(256) << 12), RWA);
        }
        wr(e, GMEM_REG_FQ_HEAD, e->fq_head);
        wr(e, GMEM_REG_FAULT_RESPONSE,
           (pick(8) ? r.group : rnd()) | code << GMEM_RESP_SHIFT);
    }
}

/* MSI-X vector @v of the device aimed at a register of it or of its peer. */
static void op_msi_aim(Env *e, bool peer)
{
    uint64_t entry = BAR0_ADDR + GMEM_MSIX_TABLE_OFFSET + 16 * pick(8);
    uint64_t target = (peer && pick(2) ? PEER_BAR0 : BAR0_ADDR) + any_reg();

    qtest_writel(e->qt, entry, target);
    qtest_writel(e->qt, entry + 4, target >> 32);
    qtest_writel(e->qt, entry + 8, pick(2) ? pick(16) : rnd());
    qtest_ops += 3;
}

/* A fault injected from the host (the device's 'inject'), now and then a bad one. */
static void op_inject(Env *e)
{
    g_autofree char *what = NULL;
    g_autofree char *cmd = NULL;
    unsigned q = pick(8) ? pick(GMEM_NUM_QUEUES) : rnd();

    switch (pick(7)) {
    case 0:
        what = g_strdup_printf("dma-error,queue=%u", q);
        break;
    case 1:
        what = g_strdup_printf("hang,queue=%u", q);
        break;
    case 2:
        what = g_strdup("inv-stuck");
        break;
    case 3:
        what = g_strdup("fq-full");
        break;
    case 4:
        what = g_strdup_printf("poison,offset=%" PRIu64,
                               pick(8) ? pick(HBM_SIZE) : edgy());
        break;
    case 5:
        what = g_strdup("reset");
        break;
    default:
        what = g_strdup_printf("hang,queue=%u,when=%u", q, (unsigned)rnd());
        break;
    }
    cmd = g_strdup_printf("{\"execute\": \"qom-set\", \"arguments\": "
                          "{\"path\": \"/machine/peripheral/gmem0\", "
                          "\"property\": \"inject\", \"value\": \"%s\"}}",
                          what);
    g_free(gq_qmp(e->g, cmd));
    qtest_ops++;
    injections++;
}

static void op_migrate(Env *e, const char *props, const char *extra)
{
    g_autofree char *dir = g_dir_make_tmp("gmem-fuzz-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "state", NULL);
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    GmemQTest *old = e->g;
    bool loaded;

    gq_migrate_out(e->g, uri);
    e->g = gq_try_incoming_with(props, extra, uri, &loaded);
    e->qt = e->g->qt;
    gq_quit(old);
    g_unlink(file);
    g_rmdir(dir);
    /* A state the device reached must load (the destination checks all). */
    g_assert_true(loaded);
    migrations++;
}

static void run_case(uint64_t seed)
{
    g_autofree char *props = NULL;
    const char *extra = NULL;
    bool peer;
    Env *e;

    case_seed = seed;
    rng = seed | 1;
    peer = pick(4) == 0;
    props = g_strdup_printf("tlb-entries=%u%s", 16u << pick(9),
                            pick(4) ? "" : ",coherent=on");
    if (peer) {
        extra = "-device gmem-accel,id=gmem1,addr=05.0,hbm-size=64M";
    }
    e = env_start_with(props, extra);
    if (peer) {
        gq_pci_cfg_writel(e->qt, PEER_DEVFN, 0x10, (uint32_t)PEER_BAR0);
        gq_pci_cfg_writel(e->qt, PEER_DEVFN, 0x14, PEER_BAR0 >> 32);
        gq_pci_cfg_writel(e->qt, PEER_DEVFN, 0x04, 0x6);
    }
    alarm(CASE_TIMEOUT_S);
    for (unsigned i = 0; i < OPS_PER_CASE; i++) {
        switch (pick(16)) {
        case 0: case 1: case 2: case 3: case 4:
            op_submit(e);
            break;
        case 5: case 6: case 7:
            op_page_table(e);
            break;
        case 8: case 9: case 10:
            op_faults(e);
            break;
        case 11: case 12:
            wr(e, any_reg(), pick(2) ? edgy() : pick(32));
            break;
        case 13:
            op_msi_aim(e, peer);
            break;
        case 14:
            if (pick(4) == 0) {
                g_autofree char *all = g_strdup_printf("hbm-size=64M,%s",
                                                       props);

                op_migrate(e, all, extra);
            }
            break;
        default:
            if (pick(8) == 1) {
                op_inject(e);
            } else if (pick(8) == 0) {
                wr(e, GMEM_REG_RESET, pick(2) ? GMEM_RESET_MAGIC : rnd());
                for (unsigned q = 0; q < ENV_QUEUES; q++) {
                    queue_setup(e, q);
                }
                fq_setup(e, 1 + pick(FQ_LOG2));
                gq_set_reg64(e->g, GMEM_REG_CTX(CTX, GMEM_CTX_ROOT_LO),
                             e->root);
                wr(e, GMEM_REG_CTX(CTX, GMEM_CTX_CTRL),
                   GMEM_CTX_CTRL_ENABLE);
            }
            break;
        }
    }
    alarm(0);
    env_quit(e);    /* QEMU still answers with the device's ID */
}

static void on_alarm(int sig)
{
    fprintf(stderr, "# case seed %" PRIu64 " hung (no reply in %d s)\n",
            case_seed, CASE_TIMEOUT_S);
    abort();        /* libqtest's abort hook kills QEMU */
}

static void on_abort(void *unused)
{
    const char *corpus = g_getenv("GMEM_FUZZ_CORPUS");
    FILE *f = corpus ? fopen(corpus, "a") : NULL;

    fprintf(stderr, "# FAILED case seed %" PRIu64 ": run it alone with "
            "--seed %" PRIu64 " --cases 1\n", case_seed, case_seed);
    if (f) {
        fprintf(f, "%" PRIu64 "\n", case_seed);
        fclose(f);
    }
}

/* Another case? --cases N counts them; else until --seconds are up. */
static bool fuzz_more(const uint64_t *arg, uint64_t cases, gint64 end)
{
    if (arg[2]) {
        return cases < arg[2];
    }
    return g_get_monotonic_time() < end;
}

static void test_fuzz(gconstpointer data)
{
    const uint64_t *arg = data;     /* seconds, seed, cases */
    const char *corpus = g_getenv("GMEM_FUZZ_CORPUS");
    gint64 end = g_get_monotonic_time() + arg[0] * G_TIME_SPAN_SECOND;
    g_autofree char *seen = NULL;
    uint64_t cases = 0, master = arg[1] | 1;
    struct sigaction sa = { .sa_handler = on_alarm };

    sigaction(SIGALRM, &sa, NULL);
    /* on abort (a failed check, a hang): report the seed; QEMU is killed */
    qtest_add_abrt_handler(on_abort, NULL);
    if (corpus && g_file_get_contents(corpus, &seen, NULL, NULL)) {
        g_auto(GStrv) seeds = g_strsplit(seen, "\n", -1);

        for (char **s = seeds; *s && **s; s++) {
            run_case(g_ascii_strtoull(*s, NULL, 10));
            cases++;
        }
    }
    while (fuzz_more(arg, cases, end)) {
        uint64_t seed = arg[2] == 1 ? arg[1] : 0;

        if (!seed) {
            master ^= master << 13;
            master ^= master >> 7;
            master ^= master << 17;
            seed = master;
        }
        run_case(seed);
        cases++;
    }
    printf("# %" PRIu64 " cases, %" PRIu64 " qtest operations, %" PRIu64
           " migrations, %" PRIu64 " injections, seed %" PRIu64 "\n", cases,
           qtest_ops, migrations, injections, arg[1]);
    g_assert_cmpuint(cases, >, 0);
}

int main(int argc, char **argv)
{
    static uint64_t arg[3] = { 60, 0, 0 };  /* seconds, seed, cases */
    static const char *const names[] = { "--seconds", "--seed", "--cases" };
    int kept = 1;

    /* Ours out of argv first: GLib's own --seed means something else. */
    for (int i = 1; i < argc; i++) {
        unsigned k = 0;

        while (k < G_N_ELEMENTS(names) && strcmp(argv[i], names[k])) {
            k++;
        }
        if (k < G_N_ELEMENTS(names) && i + 1 < argc) {
            arg[k] = g_ascii_strtoull(argv[++i], NULL, 10);
        } else {
            argv[kept++] = argv[i];
        }
    }
    argc = kept;
    g_test_init(&argc, &argv, NULL);
    if (!arg[1]) {
        arg[1] = g_get_real_time();
    }
    printf("# seed %" PRIu64 " (again: --seed %" PRIu64 ")\n", arg[1],
           arg[1]);
    g_test_add_data_func("/gmem-accel/fuzz", arg, test_fuzz);
    return g_test_run();
}
