/*
 * gmem-accel behind QEMU's intel-iommu, through qtest: the device's DMA is
 * translated by the IOMMU's tables, a mapping the software changes is used
 * once it has invalidated the IOTLB, and an access the IOMMU refuses is the
 * command's BAD_ADDRESS with the device's DMA error. The IOMMU is programmed
 * in legacy mode: a root table, a context entry for the device, 4-level
 * second-level tables, register-based invalidation.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/i386/intel_iommu_internal.h"
#include "gmem_env.h"

#define VTD             Q35_HOST_BRIDGE_IOMMU_ADDR
#define VTD_TABLES      0x01000000ull   /* root, context, second-level tables */
#define IDENTITY_END    0x01000000ull   /* the environment's RAM, mapped 1:1 */
#define IOVA            0x40000000ull   /* the tests' own mapping; no RAM */
#define DOMAIN          1
#define PAGE            4096ull
#define A_PAGE          (SYS_DATA + 0x100000)
#define B_PAGE          (SYS_DATA + 0x200000)

typedef struct Vtd {
    Env *e;
    uint64_t next;      /* the next free table */
    uint64_t slpt;      /* level-4 second-level table */
} Vtd;

static uint64_t vtd_alloc(Vtd *v)
{
    uint64_t t = v->next;

    v->next += PAGE;
    qtest_memset(v->e->qt, t, 0, PAGE);
    return t;
}

/* The level-1 entry of @iova, creating the tables above it. */
static uint64_t vtd_slot(Vtd *v, uint64_t iova)
{
    uint64_t table = v->slpt;

    for (int level = 4; level > 1; level--) {
        uint64_t slot = table + ((iova >> (12 + 9 * (level - 1))) & 511) * 8;
        uint64_t e = qtest_readq(v->e->qt, slot);

        if (!(e & VTD_SL_R)) {
            e = vtd_alloc(v) | VTD_SL_R | VTD_SL_W;
            qtest_writeq(v->e->qt, slot, e);
        }
        table = e & ~(PAGE - 1);
    }
    return table + ((iova >> 12) & 511) * 8;
}

static void vtd_map(Vtd *v, uint64_t iova, uint64_t gpa, uint64_t perm)
{
    qtest_writeq(v->e->qt, vtd_slot(v, iova), perm ? gpa | perm : 0);
}

static void vtd_wait(Vtd *v, uint64_t reg, uint64_t bit, bool set)
{
    for (int i = 0; i < 10000; i++) {     /* 10 s: it is done at once */
        if (!!(qtest_readq(v->e->qt, VTD + reg) & bit) == set) {
            return;
        }
        g_usleep(1000);
    }
    g_error("intel-iommu register 0x%" PRIx64 " bit 0x%" PRIx64 " not %d",
            reg, bit, set);
}

/* Invalidate the IOTLB: one page of the domain, or all of it (@iova ~0). */
static void vtd_invalidate(Vtd *v, uint64_t iova)
{
    uint64_t cmd = VTD_TLB_IVT | (uint64_t)DOMAIN << 32;

    if (iova == ~0ull) {
        cmd |= VTD_TLB_GLOBAL_FLUSH;
    } else {
        qtest_writeq(v->e->qt, VTD + DMAR_IVA_REG, iova);     /* AM 0 */
        cmd |= VTD_TLB_PSI_FLUSH;
    }
    qtest_writeq(v->e->qt, VTD + DMAR_IOTLB_REG, cmd);
    vtd_wait(v, DMAR_IOTLB_REG, VTD_TLB_IVT, false);
}

/*
 * The environment, then translation on: the device (bus 0, DEVFN) in
 * domain DOMAIN, the environment's RAM mapped 1:1, nothing else.
 */
static Vtd vtd_start(const char *props)
{
    Vtd v = { .next = VTD_TABLES };
    uint64_t root, ctx, l1[512];
    uint64_t cap;

    v.e = env_start_after("-device intel-iommu,intremap=off", props, NULL);
    cap = qtest_readq(v.e->qt, VTD + DMAR_CAP_REG);
    g_assert_true(cap & VTD_CAP_SAGAW_48bit);
    root = vtd_alloc(&v);
    ctx = vtd_alloc(&v);
    v.slpt = vtd_alloc(&v);
    for (uint64_t base = 0; base < IDENTITY_END; base += 512 * PAGE) {
        uint64_t l1_table = vtd_slot(&v, base) & ~(PAGE - 1);

        for (unsigned i = 0; i < 512; i++) {
            l1[i] = cpu_to_le64((base + i * PAGE) | VTD_SL_R | VTD_SL_W);
        }
        qtest_memwrite(v.e->qt, l1_table, l1, sizeof(l1));
    }
    qtest_writeq(v.e->qt, root, ctx | VTD_ROOT_ENTRY_P);
    qtest_writeq(v.e->qt, ctx + DEVFN * 16, v.slpt | VTD_CONTEXT_ENTRY_P);
    qtest_writeq(v.e->qt, ctx + DEVFN * 16 + 8,
                 (uint64_t)DOMAIN << 8 | 2);    /* AW 2: 48 bits, 4 levels */
    qtest_writeq(v.e->qt, VTD + DMAR_RTADDR_REG, root);
    qtest_writel(v.e->qt, VTD + DMAR_GCMD_REG, VTD_GCMD_SRTP);
    vtd_wait(&v, DMAR_GSTS_REG, VTD_GSTS_RTPS, true);
    qtest_writeq(v.e->qt, VTD + DMAR_CCMD_REG,
                 VTD_CCMD_ICC | VTD_CCMD_GLOBAL_INVL);
    vtd_wait(&v, DMAR_CCMD_REG, VTD_CCMD_ICC, false);
    vtd_invalidate(&v, ~0ull);
    qtest_writel(v.e->qt, VTD + DMAR_GCMD_REG, VTD_GCMD_TE);
    vtd_wait(&v, DMAR_GSTS_REG, VTD_GSTS_TES, true);
    return v;
}

/* Copy the system page at bus address @iova to HBM 0; the status. */
static uint32_t read_page(Env *e, uint64_t iova)
{
    return run(e, 0, copy_cmd(GMEM_ADDR_HBM, 0, GMEM_ADDR_SYS, iova, PAGE));
}

static void expect_hbm(Env *e, const uint8_t *want)
{
    g_autofree uint8_t *got = g_malloc(PAGE);

    qtest_memread(e->qt, BAR2_ADDR, got, PAGE);
    g_assert_cmpmem(got, PAGE, want, PAGE);
}

/*
 * The device reads through the IOMMU's mapping; remapped and invalidated
 * (one page, then the whole IOTLB), it reads the new page; unmapped, or
 * written through a read-only mapping, the access fails as the IOMMU says.
 */
static void test_translated_dma(void)
{
    g_autofree uint8_t *a = g_malloc(PAGE), *b = g_malloc(PAGE);
    g_autofree uint8_t *got = g_malloc(PAGE);
    Vtd v = vtd_start(NULL);
    Env *e = v.e;
    int64_t hits, misses, flushes;

    pattern(a, PAGE, 1);
    pattern(b, PAGE, 2);
    qtest_memwrite(e->qt, A_PAGE, a, PAGE);
    qtest_memwrite(e->qt, B_PAGE, b, PAGE);

    /* IOVA is no RAM: it is page A to the device. */
    vtd_map(&v, IOVA, A_PAGE, VTD_SL_R | VTD_SL_W);
    vtd_invalidate(&v, IOVA);
    g_assert_cmpuint(read_page(e, IOVA), ==, GMEM_CMD_ST_OK);
    expect_hbm(e, a);

    /* Again: every translation from the device's cache (ATC) this time. */
    misses = gq_state(e->g, "gmem0", "atc-misses");
    hits = gq_state(e->g, "gmem0", "atc-hits");
    g_assert_cmpuint(read_page(e, IOVA), ==, GMEM_CMD_ST_OK);
    g_assert_cmpint(gq_state(e->g, "gmem0", "atc-misses"), ==, misses);
    g_assert_cmpint(gq_state(e->g, "gmem0", "atc-hits"), >, hits);

    /* Remapped to B, that page invalidated: the ATC emptied, B. */
    flushes = gq_state(e->g, "gmem0", "atc-flushes");
    vtd_map(&v, IOVA, B_PAGE, VTD_SL_R | VTD_SL_W);
    vtd_invalidate(&v, IOVA);
    g_assert_cmpint(gq_state(e->g, "gmem0", "atc-flushes"), >, flushes);
    g_assert_cmpuint(read_page(e, IOVA), ==, GMEM_CMD_ST_OK);
    expect_hbm(e, b);

    /* Back to A, the whole IOTLB invalidated: A. */
    vtd_map(&v, IOVA, A_PAGE, VTD_SL_R | VTD_SL_W);
    vtd_invalidate(&v, ~0ull);
    g_assert_cmpuint(read_page(e, IOVA), ==, GMEM_CMD_ST_OK);
    expect_hbm(e, a);

    /* Read-only: read, yes; a write there fails and changes nothing. */
    vtd_map(&v, IOVA, A_PAGE, VTD_SL_R);
    vtd_invalidate(&v, IOVA);
    g_assert_cmpuint(read_page(e, IOVA), ==, GMEM_CMD_ST_OK);
    g_assert_cmpuint(run(e, 0, copy_cmd(GMEM_ADDR_SYS, IOVA, GMEM_ADDR_SYS,
                                        B_PAGE, PAGE)), ==,
                     GMEM_CMD_ST_BAD_ADDRESS);
    gq_expect_error(e->g, GMEM_ERR_DMA, 0);
    g_assert_true(gq_log_has(e->g, "memory access failed"));
    expect_hbm(e, a);
    qtest_memread(e->qt, A_PAGE, got, PAGE);
    g_assert_cmpmem(got, PAGE, a, PAGE);

    /* Unmapped and invalidated: the read fails. */
    vtd_map(&v, IOVA, 0, 0);
    vtd_invalidate(&v, IOVA);
    g_assert_cmpuint(read_page(e, IOVA), ==, GMEM_CMD_ST_BAD_ADDRESS);
    gq_expect_error(e->g, GMEM_ERR_DMA, 0);

    /* Mapped again; translation off: the ATC emptied, IOVA no RAM again. */
    vtd_map(&v, IOVA, A_PAGE, VTD_SL_R | VTD_SL_W);
    vtd_invalidate(&v, IOVA);
    g_assert_cmpuint(read_page(e, IOVA), ==, GMEM_CMD_ST_OK);
    flushes = gq_state(e->g, "gmem0", "atc-flushes");
    qtest_writel(e->qt, VTD + DMAR_GCMD_REG, 0);
    vtd_wait(&v, DMAR_GSTS_REG, VTD_GSTS_TES, false);
    g_assert_cmpint(gq_state(e->g, "gmem0", "atc-flushes"), >, flushes);
    g_assert_cmpuint(read_page(e, IOVA), ==, GMEM_CMD_ST_BAD_ADDRESS);
    gq_expect_error(e->g, GMEM_ERR_DMA, 0);
    /* (the environment's own pages are where they were: it still works) */
    g_assert_cmpuint(read_page(e, A_PAGE), ==, GMEM_CMD_ST_OK);
    expect_hbm(e, a);
    env_quit(e);
}

/*
 * Bus mastering off empties the ATC: the device's accesses fail, none from
 * a translation kept from before; on again, they work.
 */
static void test_bus_master_off(void)
{
    g_autofree uint8_t *a = g_malloc(PAGE);
    Vtd v = vtd_start(NULL);
    Env *e = v.e;
    uint32_t cmd = gq_pci_cfg_readl(e->qt, DEVFN, PCI_COMMAND);
    int64_t flushes;

    pattern(a, PAGE, 3);
    qtest_memwrite(e->qt, A_PAGE, a, PAGE);
    vtd_map(&v, IOVA, A_PAGE, VTD_SL_R | VTD_SL_W);
    vtd_invalidate(&v, IOVA);
    g_assert_cmpuint(read_page(e, IOVA), ==, GMEM_CMD_ST_OK);
    flushes = gq_state(e->g, "gmem0", "atc-flushes");
    gq_pci_cfg_writel(e->qt, DEVFN, PCI_COMMAND, cmd & ~PCI_COMMAND_MASTER);
    g_assert_cmpint(gq_state(e->g, "gmem0", "atc-flushes"), >, flushes);
    gq_pci_cfg_writel(e->qt, DEVFN, PCI_COMMAND, cmd);
    g_assert_cmpuint(read_page(e, IOVA), ==, GMEM_CMD_ST_OK);
    expect_hbm(e, a);
    env_quit(e);
}

/* atc=off: each access translated by the IOMMU, none kept */
static void test_atc_off(void)
{
    g_autofree uint8_t *a = g_malloc(PAGE);
    Vtd v = vtd_start("atc=off");
    Env *e = v.e;

    pattern(a, PAGE, 4);
    qtest_memwrite(e->qt, A_PAGE, a, PAGE);
    vtd_map(&v, IOVA, A_PAGE, VTD_SL_R | VTD_SL_W);
    vtd_invalidate(&v, IOVA);
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(read_page(e, IOVA), ==, GMEM_CMD_ST_OK);
        expect_hbm(e, a);
    }
    g_assert_cmpint(gq_state(e->g, "gmem0", "atc-hits"), ==, 0);
    g_assert_cmpint(gq_state(e->g, "gmem0", "atc-misses"), ==, 0);
    env_quit(e);
}

/*
 * The device's writes aimed at intel-iommu's registers: an 8-byte write to
 * FECTL (a FENCE there, a fault record over it) met assert(size == 4) in
 * vtd_mem_write() and aborted QEMU. The device's accesses to system memory
 * reach RAM only: the FENCE fails with BAD_ADDRESS, a fault record that
 * cannot be written cancels its command, a ring there breaks its queue; each
 * with ERROR_CODE DMA, and the IOMMU's registers as they were.
 */
static void test_dma_at_iommu_registers(void)
{
    Env *e = env_start_after("-device intel-iommu,intremap=off", NULL, NULL);
    GmemCmd fence = {
        .opcode = GMEM_OP_FENCE, .flags = GMEM_CMD_F_DST(GMEM_ADDR_SYS),
        .dst = VTD + DMAR_FECTL_REG, .value = 1,
    };
    uint32_t fectl = qtest_readl(e->qt, VTD + DMAR_FECTL_REG);

    g_assert_cmpuint(run(e, 0, fence), ==, GMEM_CMD_ST_BAD_ADDRESS);
    gq_expect_error(e->g, GMEM_ERR_DMA, 0);
    g_assert_true(gq_log_has(e->g, "not RAM"));

    /* fault records at 0x20-0x3f of the registers: over FECTL */
    gq_set_reg(e->g, GMEM_REG_FQ_CTRL, 0);
    gq_set_reg64(e->g, GMEM_REG_FQ_BASE_LO, VTD + DMAR_FECTL_REG -
                 DMAR_FECTL_REG % GMEM_FAULT_RECORD_SIZE);
    gq_set_reg(e->g, GMEM_REG_FQ_CTRL, GMEM_FQ_CTRL_ENABLE);
    g_assert_cmpuint(run(e, 1, copy_cmd(GMEM_ADDR_SYS, SYS_DATA, GMEM_ADDR_VA,
                                        0x30000000ull, 64)), ==,
                     GMEM_CMD_ST_FAULT);
    gq_expect_error(e->g, GMEM_ERR_DMA, 1);
    g_assert_true(gq_log_has(e->g, "cannot write a fault record"));
    g_assert_cmpuint(gq_reg(e->g, GMEM_REG_FQ_TAIL), ==, 0);

    /* a command ring at them */
    gq_set_reg(e->g, GMEM_REG_QUEUE(2, GMEM_CQ_CTRL), 0);
    gq_set_reg64(e->g, GMEM_REG_QUEUE(2, GMEM_CQ_BASE_LO), VTD);
    gq_set_reg(e->g, GMEM_REG_QUEUE(2, GMEM_CQ_CTRL), GMEM_CQ_CTRL_ENABLE);
    gq_set_reg(e->g, GMEM_REG_QUEUE(2, GMEM_CQ_TAIL), 1);
    wait_state(e, 2, GMEM_CQ_STATE_BROKEN);
    gq_expect_error(e->g, GMEM_ERR_DMA, 2);

    g_assert_cmphex(qtest_readl(e->qt, VTD + DMAR_FECTL_REG), ==, fectl);
    env_quit(e);
}

/* The same through a translation: an IOVA the IOMMU maps onto its registers */
static void test_dma_through_iommu_to_registers(void)
{
    Vtd v = vtd_start(NULL);
    Env *e = v.e;
    GmemCmd fence = {
        .opcode = GMEM_OP_FENCE, .flags = GMEM_CMD_F_DST(GMEM_ADDR_SYS),
        .dst = IOVA + DMAR_FECTL_REG, .value = 1,
    };

    vtd_map(&v, IOVA, VTD, VTD_SL_R | VTD_SL_W);
    vtd_invalidate(&v, IOVA);
    /* twice: the second time the translation is the ATC's */
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(run(e, 0, fence), ==, GMEM_CMD_ST_BAD_ADDRESS);
        gq_expect_error(e->g, GMEM_ERR_DMA, 0);
    }
    /* RAM behind the same IOVA works */
    vtd_map(&v, IOVA, A_PAGE, VTD_SL_R | VTD_SL_W);
    vtd_invalidate(&v, IOVA);
    g_assert_cmpuint(run(e, 0, fence), ==, GMEM_CMD_ST_OK);
    g_assert_cmphex(qtest_readq(e->qt, A_PAGE + DMAR_FECTL_REG), ==, 1);
    env_quit(e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/gmem-accel/iommu/translated-dma", test_translated_dma);
    g_test_add_func("/gmem-accel/iommu/bus-master-off", test_bus_master_off);
    g_test_add_func("/gmem-accel/iommu/atc-off", test_atc_off);
    g_test_add_func("/gmem-accel/iommu/dma-at-iommu-registers",
                    test_dma_at_iommu_registers);
    g_test_add_func("/gmem-accel/iommu/dma-through-iommu-to-registers",
                    test_dma_through_iommu_to_registers);
    return g_test_run();
}
