/*
 * gmem-accel register file and BARs through the qtest protocol, no guest:
 * identity, HBM size, scratch, register reset, every error path of the
 * register decoder, HBM data and its preallocation, BAR sizing and MSI-X.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"

#include "gmem_accel_hw.h"
#include "gmem_qtest.h"

static void test_identity(void)
{
    GmemQTest *g = gq_start(NULL);

    g_assert_cmphex(gq_reg(g, GMEM_REG_ID), ==, GMEM_ID_MAGIC);
    g_assert_cmphex(gq_reg(g, GMEM_REG_VERSION), ==, GMEM_VERSION);
    g_assert_cmphex(gq_reg(g, GMEM_REG_CAP), ==,
                    GMEM_CAP_KNOWN_MASK & ~GMEM_CAP_COHERENT);
    g_assert_cmpuint(gq_reg(g, GMEM_REG_NUM_CONTEXTS), ==, GMEM_NUM_CONTEXTS);
    g_assert_cmpuint(gq_reg(g, GMEM_REG_NUM_QUEUES), ==, GMEM_NUM_QUEUES);
    g_assert_cmpuint(gq_reg(g, GMEM_REG_TLB_ENTRIES), ==, 256);
    g_assert_cmpuint(gq_reg(g, GMEM_REG_NUM_VECTORS), ==, GMEM_MSIX_VECTORS);
    g_assert_cmphex(gq_reg(g, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    g_assert_cmphex(gq_pci_cfg_readl(g->qt, DEVFN, 0x08) >> 8, ==,
                    GMEM_PCI_CLASS_CODE << 8);
    g_assert_cmphex(gq_pci_cfg_readl(g->qt, DEVFN, 0x08) & 0xff, ==,
                    GMEM_PCI_REVISION);
    gq_quit(g);

    g = gq_start("ats=off,pasid=off,pri=off");
    g_assert_cmphex(gq_reg(g, GMEM_REG_CAP), ==, GMEM_CAP_HBM | GMEM_CAP_MMU |
                    GMEM_CAP_DMA | GMEM_CAP_FAULTS | GMEM_CAP_PAGE_64K |
                    GMEM_CAP_ACCESS_COUNTERS);
    gq_quit(g);

    g = gq_start("coherent=on");
    g_assert_cmphex(gq_reg(g, GMEM_REG_CAP), ==, GMEM_CAP_KNOWN_MASK);
    gq_quit(g);

    g = gq_start("tlb-entries=16");
    g_assert_cmpuint(gq_reg(g, GMEM_REG_TLB_ENTRIES), ==, 16);
    gq_quit(g);
}

static void test_hbm_size_registers(void)
{
    GmemQTest *g = gq_start("hbm-size=64M");

    g_assert_cmphex(gq_reg(g, GMEM_REG_HBM_SIZE_LO), ==, 64 << 20);
    g_assert_cmphex(gq_reg(g, GMEM_REG_HBM_SIZE_HI), ==, 0);
    g_assert_cmphex(qtest_readq(g->qt, BAR0_ADDR + GMEM_REG_HBM_SIZE_LO), ==,
                    64 << 20);
    gq_quit(g);

    g = gq_start("hbm-size=8G");
    g_assert_cmphex(gq_reg(g, GMEM_REG_HBM_SIZE_LO), ==, 0);
    g_assert_cmphex(gq_reg(g, GMEM_REG_HBM_SIZE_HI), ==, 2);
    g_assert_cmphex(qtest_readq(g->qt, BAR0_ADDR + GMEM_REG_HBM_SIZE_LO), ==,
                    8ull << 30);
    gq_quit(g);
}

static void test_scratch_and_reset(void)
{
    GmemQTest *g = gq_start(NULL);

    gq_set_reg(g, GMEM_REG_SCRATCH, 0xdeadbeef);
    g_assert_cmphex(gq_reg(g, GMEM_REG_SCRATCH), ==, 0xdeadbeef);
    g_assert_cmphex(gq_reg(g, GMEM_REG_RESET), ==, 0);    /* write-only */
    gq_set_reg(g, GMEM_REG_RESET, GMEM_RESET_MAGIC);
    g_assert_cmphex(gq_reg(g, GMEM_REG_SCRATCH), ==, 0);
    g_assert_cmphex(gq_reg(g, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    gq_quit(g);
}

static void test_register_errors(void)
{
    GmemQTest *g = gq_start(NULL);

    gq_set_reg(g, GMEM_REG_SCRATCH, 0x12345678);

    g_assert_cmphex(gq_reg(g, 0x044), ==, 0);
    gq_expect_error(g, GMEM_ERR_BAD_REG, 0x044);
    g_assert_true(gq_log_has(g, "read of unknown register 0x44"));
    g_assert_cmphex(gq_reg(g, GMEM_REG_CTX(5, 0xc)), ==, 0);
    gq_expect_error(g, GMEM_ERR_BAD_REG, GMEM_REG_CTX(5, 0xc));
    gq_set_reg(g, GMEM_REG_QUEUE(2, 0x28), 1);
    gq_expect_error(g, GMEM_ERR_BAD_REG, GMEM_REG_QUEUE(2, 0x28));
    gq_set_reg(g, GMEM_REG_QUEUE(2, GMEM_CQ_STEPS), 1);
    gq_expect_error(g, GMEM_ERR_READ_ONLY, GMEM_REG_QUEUE(2, GMEM_CQ_STEPS));
    gq_set_reg(g, 0xffc, 1);
    gq_expect_error(g, GMEM_ERR_BAD_REG, 0xffc);
    /* 0x200, where the queues sat before 0.9, is no register: a write is refused. */
    gq_set_reg(g, 0x200, 0x1000);
    gq_expect_error(g, GMEM_ERR_BAD_REG, 0x200);
    gq_set_reg(g, GMEM_REG_QUEUE(GMEM_NUM_QUEUES - 1, GMEM_CQ_HEAD), 1);
    gq_expect_error(g, GMEM_ERR_READ_ONLY,
                    GMEM_REG_QUEUE(GMEM_NUM_QUEUES - 1, GMEM_CQ_HEAD));
    gq_set_reg(g, GMEM_REGS_SIZE - 4, 1);
    gq_expect_error(g, GMEM_ERR_BAD_REG, GMEM_REGS_SIZE - 4);

    gq_set_reg(g, GMEM_REG_ID, 0);
    gq_expect_error(g, GMEM_ERR_READ_ONLY, GMEM_REG_ID);
    g_assert_cmphex(gq_reg(g, GMEM_REG_ID), ==, GMEM_ID_MAGIC);
    gq_set_reg(g, GMEM_REG_HBM_SIZE_LO, 1);
    gq_expect_error(g, GMEM_ERR_READ_ONLY, GMEM_REG_HBM_SIZE_LO);
    gq_set_reg(g, GMEM_REG_COUNTER(GMEM_CNT_FAULTS), 1);
    gq_expect_error(g, GMEM_ERR_READ_ONLY, GMEM_REG_COUNTER(GMEM_CNT_FAULTS));
    gq_set_reg(g, GMEM_REG_QUEUE(1, GMEM_CQ_HEAD), 1);
    gq_expect_error(g, GMEM_ERR_READ_ONLY, GMEM_REG_QUEUE(1, GMEM_CQ_HEAD));
    gq_set_reg(g, GMEM_REG_FQ_TAIL, 1);
    gq_expect_error(g, GMEM_ERR_READ_ONLY, GMEM_REG_FQ_TAIL);
    g_assert_cmphex(gq_reg(g, GMEM_REG_HBM_SIZE_LO), ==, 256 << 20);

    qtest_writeb(g->qt, BAR0_ADDR + GMEM_REG_SCRATCH, 0xff);
    gq_expect_error(g, GMEM_ERR_BAD_ACCESS, GMEM_REG_SCRATCH);
    qtest_readb(g->qt, BAR0_ADDR + GMEM_REG_SCRATCH + 1);
    gq_expect_error(g, GMEM_ERR_BAD_ACCESS, GMEM_REG_SCRATCH + 1);

    gq_set_reg(g, GMEM_REG_RESET, 1);
    gq_expect_error(g, GMEM_ERR_BAD_RESET, 1);

    /* None of it reached the scratch register or reset the device. */
    g_assert_cmphex(gq_reg(g, GMEM_REG_SCRATCH), ==, 0x12345678);
    gq_quit(g);
}

static void test_hbm_data(void)
{
    const uint64_t size = 16 << 20;
    const uint64_t offsets[] = { 0, size / 2 + 123, size - 4096 };
    GmemQTest *g = gq_start("hbm-size=16M");
    uint8_t out[4096], in[4096];

    for (unsigned i = 0; i < G_N_ELEMENTS(offsets); i++) {
        for (unsigned j = 0; j < sizeof(out); j++) {
            out[j] = (uint8_t)(j * 7 + i * 13 + 1);
        }
        qtest_memwrite(g->qt, BAR2_ADDR + offsets[i], out, sizeof(out));
    }
    for (unsigned i = 0; i < G_N_ELEMENTS(offsets); i++) {
        for (unsigned j = 0; j < sizeof(out); j++) {
            out[j] = (uint8_t)(j * 7 + i * 13 + 1);
        }
        qtest_memread(g->qt, BAR2_ADDR + offsets[i], in, sizeof(in));
        g_assert_cmpmem(in, sizeof(in), out, sizeof(out));
    }
    /* HBM is memory: a device reset does not clear it. */
    gq_set_reg(g, GMEM_REG_RESET, GMEM_RESET_MAGIC);
    qtest_memread(g->qt, BAR2_ADDR + offsets[2], in, sizeof(in));
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));
    gq_quit(g);
}

/* Resident memory of the QEMU under test, bytes (VmRSS of /proc/PID/status). */
static uint64_t gq_rss(GmemQTest *g)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status",
                                            qtest_pid(g->qt));
    g_autofree char *text = NULL;
    const char *line;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    line = strstr(text, "\nVmRSS:");
    g_assert_nonnull(line);
    return g_ascii_strtoull(line + strlen("\nVmRSS:"), NULL, 10) << 10;
}

/* hbm-prealloc=on: the HBM is resident (and zero) from realize on. */
static void test_hbm_prealloc(void)
{
    const uint64_t size = 256 << 20;
    GmemQTest *g = gq_start("hbm-size=256M");
    uint64_t lazy = gq_rss(g);
    uint8_t in[4096], zero[4096] = {};

    gq_quit(g);
    g = gq_start("hbm-size=256M,hbm-prealloc=on");
    g_assert_cmpuint(gq_rss(g), >=, lazy + size - (16 << 20));
    qtest_memread(g->qt, BAR2_ADDR + size - sizeof(in), in, sizeof(in));
    g_assert_cmpmem(in, sizeof(in), zero, sizeof(zero));
    gq_quit(g);
}

static void test_bar_sizing(void)
{
    QTestState *qt = gq_init("-device gmem-accel,addr=04.0,hbm-size=1G");
    uint64_t bar0, bar2;

    /* The standard sizing dance: write all ones, read back the mask. */
    for (int r = 0x10; r <= 0x1c; r += 4) {
        gq_pci_cfg_writel(qt, DEVFN, r, 0xffffffff);
    }
    bar0 = (uint64_t)gq_pci_cfg_readl(qt, DEVFN, 0x14) << 32 |
           gq_pci_cfg_readl(qt, DEVFN, 0x10);
    bar2 = (uint64_t)gq_pci_cfg_readl(qt, DEVFN, 0x1c) << 32 |
           gq_pci_cfg_readl(qt, DEVFN, 0x18);
    g_assert_cmphex(bar0 & 0xf, ==, 0x4);           /* 64-bit memory */
    g_assert_cmphex(bar2 & 0xf, ==, 0xc);           /* 64-bit prefetchable */
    g_assert_cmphex(~(bar0 & ~0xfull) + 1, ==, GMEM_BAR0_SIZE);
    g_assert_cmphex(~(bar2 & ~0xfull) + 1, ==, 1ull << 30);
    gq_qtest_quit(qt);
}

static void test_msix_capability(void)
{
    GmemQTest *g = gq_start(NULL);
    uint32_t cap = gq_pci_cfg_readl(g->qt, DEVFN, GMEM_CFG_MSIX_OFFSET);

    g_assert_cmphex(cap & 0xff, ==, 0x11);                      /* MSI-X */
    g_assert_cmpuint((cap >> 16) & 0x7ff, ==, GMEM_MSIX_VECTORS - 1);
    g_assert_cmphex(gq_pci_cfg_readl(g->qt, DEVFN, GMEM_CFG_MSIX_OFFSET + 4),
                    ==, GMEM_MSIX_TABLE_OFFSET | GMEM_BAR_REGS);
    g_assert_cmphex(gq_pci_cfg_readl(g->qt, DEVFN, GMEM_CFG_MSIX_OFFSET + 8),
                    ==, GMEM_MSIX_PBA_OFFSET | GMEM_BAR_REGS);
    gq_quit(g);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/gmem-accel/regs/identity", test_identity);
    g_test_add_func("/gmem-accel/regs/hbm-size", test_hbm_size_registers);
    g_test_add_func("/gmem-accel/regs/scratch-and-reset",
                    test_scratch_and_reset);
    g_test_add_func("/gmem-accel/regs/errors", test_register_errors);
    g_test_add_func("/gmem-accel/hbm/data", test_hbm_data);
    g_test_add_func("/gmem-accel/hbm/prealloc", test_hbm_prealloc);
    g_test_add_func("/gmem-accel/pci/bar-sizing", test_bar_sizing);
    g_test_add_func("/gmem-accel/pci/msix", test_msix_capability);
    return g_test_run();
}
