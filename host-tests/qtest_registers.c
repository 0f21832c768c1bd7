/*
 * gmem-accel register file and BARs through the qtest protocol, no guest:
 * identity, HBM size, scratch, register reset, every error path of the
 * register decoder, HBM data, BAR sizing and MSI-X.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <string.h>

#include "gmem_accel_hw.h"
#include "qtest_client.h"

#define DEVFN       (4 << 3)            /* -device gmem-accel,addr=04.0 */
#define BAR0_ADDR   0xe0000000ull
#define BAR2_ADDR   0x1000000000ull     /* 64 GiB, above any RAM here */

#define PCI_COMMAND_MEMORY  0x2
#define PCI_COMMAND_MASTER  0x4

static uint32_t reg(QTest *qt, uint32_t off)
{
    return qt_readl(qt, BAR0_ADDR + off);
}

static void set_reg(QTest *qt, uint32_t off, uint32_t val)
{
    qt_writel(qt, BAR0_ADDR + off, val);
}

/* Start QEMU with one device on pcie.0 and its BARs mapped. */
static QTest *start(const char *props)
{
    g_autofree char *args = g_strdup_printf("-device gmem-accel,addr=04.0%s%s",
                                            props ? "," : "",
                                            props ? props : "");
    QTest *qt = qt_start(args);

    g_assert_cmphex(qt_pci_cfg_readl(qt, DEVFN, 0x00), ==,
                    GMEM_PCI_DEVICE_ID << 16 | GMEM_PCI_VENDOR_ID);
    qt_pci_cfg_writel(qt, DEVFN, 0x10, (uint32_t)BAR0_ADDR);
    qt_pci_cfg_writel(qt, DEVFN, 0x14, BAR0_ADDR >> 32);
    qt_pci_cfg_writel(qt, DEVFN, 0x18, (uint32_t)BAR2_ADDR);
    qt_pci_cfg_writel(qt, DEVFN, 0x1c, BAR2_ADDR >> 32);
    qt_pci_cfg_writel(qt, DEVFN, 0x04, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    return qt;
}

/* Error state must be exactly (code, info); then clear it. */
static void expect_error(QTest *qt, uint32_t code, uint32_t info)
{
    g_assert_cmphex(reg(qt, GMEM_REG_STATUS), ==,
                    GMEM_STATUS_READY | GMEM_STATUS_ERROR);
    g_assert_cmpuint(reg(qt, GMEM_REG_ERROR_CODE), ==, code);
    g_assert_cmphex(reg(qt, GMEM_REG_ERROR_INFO), ==, info);
    set_reg(qt, GMEM_REG_ERROR_CODE, 0);
    g_assert_cmphex(reg(qt, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    g_assert_cmpuint(reg(qt, GMEM_REG_ERROR_CODE), ==, GMEM_ERR_NONE);
    g_assert_cmphex(reg(qt, GMEM_REG_ERROR_INFO), ==, 0);
}

static void test_identity(void)
{
    QTest *qt = start(NULL);

    g_assert_cmphex(reg(qt, GMEM_REG_ID), ==, GMEM_ID_MAGIC);
    g_assert_cmphex(reg(qt, GMEM_REG_VERSION), ==, GMEM_VERSION);
    g_assert_cmphex(reg(qt, GMEM_REG_CAP), ==, GMEM_CAP_HBM | GMEM_CAP_ATS |
                    GMEM_CAP_PASID | GMEM_CAP_PRI);
    g_assert_cmpuint(reg(qt, GMEM_REG_NUM_VECTORS), ==, GMEM_MSIX_VECTORS);
    g_assert_cmphex(reg(qt, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    g_assert_cmphex(qt_pci_cfg_readl(qt, DEVFN, 0x08) >> 8, ==,
                    GMEM_PCI_CLASS_CODE << 8);
    g_assert_cmphex(qt_pci_cfg_readl(qt, DEVFN, 0x08) & 0xff, ==,
                    GMEM_PCI_REVISION);
    qt_quit(qt);

    qt = start("ats=off,pasid=off,pri=off");
    g_assert_cmphex(reg(qt, GMEM_REG_CAP), ==, GMEM_CAP_HBM);
    qt_quit(qt);
}

static void test_hbm_size_registers(void)
{
    QTest *qt = start("hbm-size=64M");

    g_assert_cmphex(reg(qt, GMEM_REG_HBM_SIZE_LO), ==, 64 << 20);
    g_assert_cmphex(reg(qt, GMEM_REG_HBM_SIZE_HI), ==, 0);
    g_assert_cmphex(qt_readq(qt, BAR0_ADDR + GMEM_REG_HBM_SIZE_LO), ==,
                    64 << 20);
    qt_quit(qt);

    qt = start("hbm-size=8G");
    g_assert_cmphex(reg(qt, GMEM_REG_HBM_SIZE_LO), ==, 0);
    g_assert_cmphex(reg(qt, GMEM_REG_HBM_SIZE_HI), ==, 2);
    g_assert_cmphex(qt_readq(qt, BAR0_ADDR + GMEM_REG_HBM_SIZE_LO), ==,
                    8ull << 30);
    qt_quit(qt);
}

static void test_scratch_and_reset(void)
{
    QTest *qt = start(NULL);

    set_reg(qt, GMEM_REG_SCRATCH, 0xdeadbeef);
    g_assert_cmphex(reg(qt, GMEM_REG_SCRATCH), ==, 0xdeadbeef);
    g_assert_cmphex(reg(qt, GMEM_REG_RESET), ==, 0);    /* write-only */
    set_reg(qt, GMEM_REG_RESET, GMEM_RESET_MAGIC);
    g_assert_cmphex(reg(qt, GMEM_REG_SCRATCH), ==, 0);
    g_assert_cmphex(reg(qt, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    qt_quit(qt);
}

static void test_register_errors(void)
{
    QTest *qt = start(NULL);

    set_reg(qt, GMEM_REG_SCRATCH, 0x12345678);

    g_assert_cmphex(reg(qt, 0x800), ==, 0);
    expect_error(qt, GMEM_ERR_BAD_REG, 0x800);
    set_reg(qt, 0xffc, 1);
    expect_error(qt, GMEM_ERR_BAD_REG, 0xffc);

    set_reg(qt, GMEM_REG_ID, 0);
    expect_error(qt, GMEM_ERR_READ_ONLY, GMEM_REG_ID);
    g_assert_cmphex(reg(qt, GMEM_REG_ID), ==, GMEM_ID_MAGIC);
    set_reg(qt, GMEM_REG_HBM_SIZE_LO, 1);
    expect_error(qt, GMEM_ERR_READ_ONLY, GMEM_REG_HBM_SIZE_LO);
    g_assert_cmphex(reg(qt, GMEM_REG_HBM_SIZE_LO), ==, 256 << 20);

    qt_writeb(qt, BAR0_ADDR + GMEM_REG_SCRATCH, 0xff);
    expect_error(qt, GMEM_ERR_BAD_ACCESS, GMEM_REG_SCRATCH);
    qt_readb(qt, BAR0_ADDR + GMEM_REG_SCRATCH + 1);
    expect_error(qt, GMEM_ERR_BAD_ACCESS, GMEM_REG_SCRATCH + 1);

    set_reg(qt, GMEM_REG_RESET, 1);
    expect_error(qt, GMEM_ERR_BAD_RESET, 1);

    /* None of it reached the scratch register or reset the device. */
    g_assert_cmphex(reg(qt, GMEM_REG_SCRATCH), ==, 0x12345678);
    qt_quit(qt);
}

static void test_hbm_data(void)
{
    const uint64_t size = 16 << 20;
    const uint64_t offsets[] = { 0, size / 2 + 123, size - 4096 };
    QTest *qt = start("hbm-size=16M");
    uint8_t out[4096], in[4096];

    for (unsigned i = 0; i < G_N_ELEMENTS(offsets); i++) {
        for (unsigned j = 0; j < sizeof(out); j++) {
            out[j] = (uint8_t)(j * 7 + i * 13 + 1);
        }
        qt_memwrite(qt, BAR2_ADDR + offsets[i], out, sizeof(out));
    }
    for (unsigned i = 0; i < G_N_ELEMENTS(offsets); i++) {
        for (unsigned j = 0; j < sizeof(out); j++) {
            out[j] = (uint8_t)(j * 7 + i * 13 + 1);
        }
        qt_memread(qt, BAR2_ADDR + offsets[i], in, sizeof(in));
        g_assert_cmpmem(in, sizeof(in), out, sizeof(out));
    }
    /* HBM is memory: a device reset does not clear it. */
    set_reg(qt, GMEM_REG_RESET, GMEM_RESET_MAGIC);
    qt_memread(qt, BAR2_ADDR + offsets[2], in, sizeof(in));
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));
    qt_quit(qt);
}

static void test_bar_sizing(void)
{
    QTest *qt = qt_start("-device gmem-accel,addr=04.0,hbm-size=1G");
    uint64_t bar0, bar2;

    /* The standard sizing dance: write all ones, read back the mask. */
    for (int r = 0x10; r <= 0x1c; r += 4) {
        qt_pci_cfg_writel(qt, DEVFN, r, 0xffffffff);
    }
    bar0 = (uint64_t)qt_pci_cfg_readl(qt, DEVFN, 0x14) << 32 |
           qt_pci_cfg_readl(qt, DEVFN, 0x10);
    bar2 = (uint64_t)qt_pci_cfg_readl(qt, DEVFN, 0x1c) << 32 |
           qt_pci_cfg_readl(qt, DEVFN, 0x18);
    g_assert_cmphex(bar0 & 0xf, ==, 0x4);           /* 64-bit memory */
    g_assert_cmphex(bar2 & 0xf, ==, 0xc);           /* 64-bit prefetchable */
    g_assert_cmphex(~(bar0 & ~0xfull) + 1, ==, GMEM_BAR0_SIZE);
    g_assert_cmphex(~(bar2 & ~0xfull) + 1, ==, 1ull << 30);
    qt_quit(qt);
}

static void test_msix_capability(void)
{
    QTest *qt = start(NULL);
    uint32_t cap = qt_pci_cfg_readl(qt, DEVFN, GMEM_CFG_MSIX_OFFSET);

    g_assert_cmphex(cap & 0xff, ==, 0x11);                      /* MSI-X */
    g_assert_cmpuint((cap >> 16) & 0x7ff, ==, GMEM_MSIX_VECTORS - 1);
    g_assert_cmphex(qt_pci_cfg_readl(qt, DEVFN, GMEM_CFG_MSIX_OFFSET + 4),
                    ==, GMEM_MSIX_TABLE_OFFSET | GMEM_BAR_REGS);
    g_assert_cmphex(qt_pci_cfg_readl(qt, DEVFN, GMEM_CFG_MSIX_OFFSET + 8),
                    ==, GMEM_MSIX_PBA_OFFSET | GMEM_BAR_REGS);
    qt_quit(qt);
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
    g_test_add_func("/gmem-accel/pci/bar-sizing", test_bar_sizing);
    g_test_add_func("/gmem-accel/pci/msix", test_msix_capability);
    return g_test_run();
}
