/*
 * Minimal client for QEMU's qtest protocol; see qtest_client.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qtest_client.h"

#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct QTest {
    GPid pid;
    FILE *in;       /* our commands -> QEMU's stdin */
    FILE *out;      /* QEMU's stdout -> replies */
};

/* QEMU dies with the test, so a failed assertion does not leave it behind. */
static void qt_child_setup(gpointer data G_GNUC_UNUSED)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

QTest *qt_start(const char *extra_args)
{
    const char *qemu = g_getenv("QEMU");
    g_autofree char *cmd = NULL;
    g_auto(GStrv) argv = NULL;
    g_autoptr(GError) err = NULL;
    QTest *qt = g_new0(QTest, 1);
    int fd_in, fd_out;

    if (!qemu) {
        g_error("set QEMU to the qemu-system-x86_64 to test");
    }
    cmd = g_strdup_printf("%s -machine q35 -accel qtest -nodefaults "
                          "-display none -monitor none -serial none "
                          "-L /usr/share/seabios -L /usr/share/qemu "
                          "-qtest-log none "
                          "-qtest stdio %s", qemu, extra_args);
    argv = g_strsplit(cmd, " ", -1);
    if (!g_spawn_async_with_pipes(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
                                  qt_child_setup, NULL, &qt->pid, &fd_in, &fd_out, NULL,
                                  &err)) {
        g_error("cannot start %s: %s", qemu, err->message);
    }
    qt->in = fdopen(fd_in, "w");
    qt->out = fdopen(fd_out, "r");
    return qt;
}

void qt_quit(QTest *qt)
{
    int status;

    fclose(qt->in);     /* EOF on the qtest chardev ends QEMU */
    kill(qt->pid, SIGTERM);
    waitpid(qt->pid, &status, 0);
    g_spawn_close_pid(qt->pid);
    fclose(qt->out);
    g_free(qt);
}

/* Send one command; return the reply line after "OK" (caller frees). */
static char *G_GNUC_PRINTF(2, 3) qt_cmd(QTest *qt, const char *fmt, ...)
{
    g_autofree char *line = NULL;
    size_t cap = 0;
    va_list ap;

    va_start(ap, fmt);
    vfprintf(qt->in, fmt, ap);
    va_end(ap);
    fputc('\n', qt->in);
    fflush(qt->in);
    for (;;) {
        /* Any length: a b64read reply holds the whole buffer. */
        if (getline(&line, &cap, qt->out) < 0) {
            g_error("QEMU closed the qtest connection (crashed?)");
        }
        g_strchomp(line);
        if (g_str_has_prefix(line, "IRQ ")) {
            continue;   /* asynchronous interrupt notification */
        }
        if (!g_str_has_prefix(line, "OK")) {
            g_error("qtest command failed: %s", line);
        }
        return g_strdup(line[2] == ' ' ? line + 3 : "");
    }
}

static uint64_t qt_cmd_value(QTest *qt, const char *op, uint64_t addr)
{
    g_autofree char *r = qt_cmd(qt, "%s 0x%" G_GINT64_MODIFIER "x", op, addr);

    return g_ascii_strtoull(r, NULL, 0);
}

uint8_t qt_inb(QTest *qt, uint16_t port)
{
    return qt_cmd_value(qt, "inb", port);
}

uint32_t qt_inl(QTest *qt, uint16_t port)
{
    return qt_cmd_value(qt, "inl", port);
}

void qt_outl(QTest *qt, uint16_t port, uint32_t val)
{
    g_free(qt_cmd(qt, "outl 0x%x 0x%x", port, val));
}

uint8_t qt_readb(QTest *qt, uint64_t addr)
{
    return qt_cmd_value(qt, "readb", addr);
}

uint32_t qt_readl(QTest *qt, uint64_t addr)
{
    return qt_cmd_value(qt, "readl", addr);
}

uint64_t qt_readq(QTest *qt, uint64_t addr)
{
    return qt_cmd_value(qt, "readq", addr);
}

void qt_writeb(QTest *qt, uint64_t addr, uint8_t val)
{
    g_free(qt_cmd(qt, "writeb 0x%" G_GINT64_MODIFIER "x 0x%x", addr, val));
}

void qt_writel(QTest *qt, uint64_t addr, uint32_t val)
{
    g_free(qt_cmd(qt, "writel 0x%" G_GINT64_MODIFIER "x 0x%x", addr, val));
}

void qt_writeq(QTest *qt, uint64_t addr, uint64_t val)
{
    g_free(qt_cmd(qt, "writeq 0x%" G_GINT64_MODIFIER "x 0x%"
                  G_GINT64_MODIFIER "x", addr, val));
}

void qt_memwrite(QTest *qt, uint64_t addr, const void *buf, size_t len)
{
    g_autofree char *b64 = g_base64_encode(buf, len);

    g_free(qt_cmd(qt, "b64write 0x%" G_GINT64_MODIFIER "x 0x%zx %s",
                  addr, len, b64));
}

void qt_memread(QTest *qt, uint64_t addr, void *buf, size_t len)
{
    g_autofree char *r = qt_cmd(qt, "b64read 0x%" G_GINT64_MODIFIER "x 0x%zx",
                                addr, len);
    gsize n;
    g_autofree guchar *data = g_base64_decode(r, &n);

    g_assert(n == len);
    memcpy(buf, data, len);
}

static uint32_t cfg_addr(int devfn, int reg)
{
    return 0x80000000u | (devfn << 8) | (reg & 0xfc);
}

uint32_t qt_pci_cfg_readl(QTest *qt, int devfn, int reg)
{
    qt_outl(qt, 0xcf8, cfg_addr(devfn, reg));
    return qt_inl(qt, 0xcfc);
}

void qt_pci_cfg_writel(QTest *qt, int devfn, int reg, uint32_t val)
{
    qt_outl(qt, 0xcf8, cfg_addr(devfn, reg));
    qt_outl(qt, 0xcfc, val);
}
