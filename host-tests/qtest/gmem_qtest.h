/*
 * gmem-accel over qtest (QEMU's libqtest): one device at 00:04.0 on q35 with
 * its BARs mapped, bus mastering on and MSI-X vectors that write into guest
 * RAM, so a test sees each interrupt as a memory write.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef GMEM_QTEST_H
#define GMEM_QTEST_H

#include <json-glib/json-glib.h>

#include "libqtest.h"

#define DEVFN       (4 << 3)            /* -device gmem-accel,addr=04.0 */
#define BAR0_ADDR   0xe0000000ull
#define BAR2_ADDR   0x1000000000ull     /* 64 GiB, above any RAM here */
#define MSI_ADDR    0x00080000ull   /* vector v writes MSI_DATA(v) at + 4v */
#define MSI_DATA(v) (0x5a00u + (v))

typedef struct GmemQTest {
    QTestState *qt;
    char *log_path;     /* QEMU's -d guest_errors log */
} GmemQTest;

/* Start QEMU (q35, no defaults) with extra arguments: libqtest's qtest_init */
QTestState *gq_init(const char *args);
/* qtest_quit(), fast (see gmem_qtest.c) */
void gq_qtest_quit(QTestState *qt);
/* PCI configuration space of bus 0 through the 0xcf8/0xcfc ports. */
uint32_t gq_pci_cfg_readl(QTestState *qt, int devfn, int reg);
void gq_pci_cfg_writel(QTestState *qt, int devfn, int reg, uint32_t val);

/* Start QEMU with one device (extra -device properties in @props, or NULL). */
GmemQTest *gq_start(const char *props);
/* The same, with more QEMU arguments (e.g. a second device) */
GmemQTest *gq_start_with(const char *props, const char *extra);
/* The same with @pre before the device's arguments (an IOMMU it is behind) */
GmemQTest *gq_start_after(const char *pre, const char *props,
                          const char *extra);
/* Start QEMU loading its state from @uri (a migration stream), untouched. */
GmemQTest *gq_start_incoming(const char *props, const char *uri);
/*
 * Start QEMU loading @uri, staying alive if the load fails: *@loaded says
 * whether it did.
 */
GmemQTest *gq_try_incoming(const char *props, const char *uri, bool *loaded);
GmemQTest *gq_try_incoming_with(const char *props, const char *extra,
                                const char *uri, bool *loaded);
/* Migrate the VM's state to @uri and wait until that completes. */
void gq_migrate_out(GmemQTest *g, const char *uri);
void gq_quit(GmemQTest *g);

uint32_t gq_reg(GmemQTest *g, uint32_t off);
void gq_set_reg(GmemQTest *g, uint32_t off, uint32_t val);
void gq_set_reg64(GmemQTest *g, uint32_t lo_off, uint64_t val);
uint64_t gq_reg64(GmemQTest *g, uint32_t lo_off);

/* ERROR state must be exactly (code, info); then clear it. */
void gq_expect_error(GmemQTest *g, uint32_t code, uint32_t info);
/* Does the guest-error log contain @needle? */
bool gq_log_has(GmemQTest *g, const char *needle);

/* Run one QMP command (JSON text); returns the reply line (caller frees). */
char *gq_qmp(GmemQTest *g, const char *json);
/* Run one QMP command that must succeed; returns its "return" value. */
JsonNode *gq_qmp_return(GmemQTest *g, const char *json);
/* Member @name of device @id's QOM 'state' (an integer). */
int64_t gq_state(GmemQTest *g, const char *id, const char *name);
/* Run an HMP command line; returns its output (caller frees). */
char *gq_hmp(GmemQTest *g, const char *cmdline);

/* Did vector @v fire since the last call? (clears its RAM flag) */
bool gq_msi_fired(GmemQTest *g, unsigned v);

#endif
