/*
 * Minimal client for QEMU's qtest protocol (system/qtest.c): start QEMU with
 * "-accel qtest -qtest stdio", send text commands, read the replies. Used by
 * the host tests to drive gmem-accel with no guest at all.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QTEST_CLIENT_H
#define QTEST_CLIENT_H

#include <glib.h>
#include <stdint.h>

typedef struct QTest QTest;

/* Start $QEMU (q35, no defaults) with extra space-separated arguments. */
QTest *qt_start(const char *extra_args);
void qt_quit(QTest *qt);

uint8_t qt_inb(QTest *qt, uint16_t port);
uint32_t qt_inl(QTest *qt, uint16_t port);
void qt_outl(QTest *qt, uint16_t port, uint32_t val);
uint8_t qt_readb(QTest *qt, uint64_t addr);
uint32_t qt_readl(QTest *qt, uint64_t addr);
uint64_t qt_readq(QTest *qt, uint64_t addr);
void qt_writeb(QTest *qt, uint64_t addr, uint8_t val);
void qt_writel(QTest *qt, uint64_t addr, uint32_t val);
void qt_writeq(QTest *qt, uint64_t addr, uint64_t val);
void qt_memwrite(QTest *qt, uint64_t addr, const void *buf, size_t len);
void qt_memread(QTest *qt, uint64_t addr, void *buf, size_t len);

/* PCI configuration space of bus 0 through the 0xcf8/0xcfc ports. */
uint32_t qt_pci_cfg_readl(QTest *qt, int devfn, int reg);
void qt_pci_cfg_writel(QTest *qt, int devfn, int reg, uint32_t val);

#endif
