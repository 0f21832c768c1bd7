/*
 * gmem-accel over qtest; see gmem_qtest.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <glib/gstdio.h>
#include "qobject/qdict.h"
#include "qobject/qjson.h"
#include "gmem_accel_hw.h"
#include "gmem_qtest.h"

#define PCI_COMMAND_MEMORY  0x2
#define PCI_COMMAND_MASTER  0x4
#define MSIX_CTRL_ENABLE    0x80000000u /* message control bit 15, as dword */

uint32_t gq_reg(GmemQTest *g, uint32_t off)
{
    return qtest_readl(g->qt, BAR0_ADDR + off);
}

void gq_set_reg(GmemQTest *g, uint32_t off, uint32_t val)
{
    qtest_writel(g->qt, BAR0_ADDR + off, val);
}

void gq_set_reg64(GmemQTest *g, uint32_t lo_off, uint64_t val)
{
    gq_set_reg(g, lo_off, (uint32_t)val);
    gq_set_reg(g, lo_off + 4, val >> 32);
}

uint64_t gq_reg64(GmemQTest *g, uint32_t lo_off)
{
    return gq_reg(g, lo_off) | (uint64_t)gq_reg(g, lo_off + 4) << 32;
}

QTestState *gq_init(const char *args)
{
    return qtest_initf("-machine q35 -nodefaults -L /usr/share/seabios "
                       "-L /usr/share/qemu %s", args);
}

uint32_t gq_pci_cfg_readl(QTestState *qt, int devfn, int reg)
{
    qtest_outl(qt, 0xcf8, 0x80000000u | devfn << 8 | reg);
    return qtest_inl(qt, 0xcfc);
}

void gq_pci_cfg_writel(QTestState *qt, int devfn, int reg, uint32_t val)
{
    qtest_outl(qt, 0xcf8, 0x80000000u | devfn << 8 | reg);
    qtest_outl(qt, 0xcfc, val);
}

/*
 * qtest_quit(), without its wait: after its SIGTERM it polls for QEMU's exit
 * every 100 ms, and these tests start QEMU several times each, so the polls
 * would be most of their time. QEMU quits on QMP's "quit" at once; reap it
 * here, then qtest_quit() only checks the status.
 */
void gq_qtest_quit(QTestState *qt)
{
    gint64 end = g_get_monotonic_time() + 30 * G_TIME_SPAN_SECOND;

    qtest_qmp_send_raw(qt, "{\"execute\": \"quit\"}");
    while (qtest_probe_child(qt) && g_get_monotonic_time() < end) {
        g_usleep(1000);
    }
    qtest_quit(qt);
}

/*
 * Start QEMU with the device; @pre, @extra: more QEMU arguments before the
 * device's (one it must come after, as an IOMMU) and after it, or NULL.
 */
static GmemQTest *gq_launch(const char *pre, const char *props,
                            const char *extra)
{
    GmemQTest *g = g_new0(GmemQTest, 1);
    g_autofree char *args = NULL;
    int fd = g_file_open_tmp("gmem-qtest-XXXXXX.log", &g->log_path, NULL);

    g_assert_cmpint(fd, >=, 0);
    close(fd);
    args = g_strdup_printf("-d guest_errors -D %s %s%s"
                           "-device gmem-accel,id=gmem0,addr=04.0%s%s%s%s",
                           g->log_path, pre ? pre : "", pre ? " " : "",
                           props ? "," : "", props ? props : "",
                           extra ? " " : "", extra ? extra : "");
    g->qt = gq_init(args);
    g_assert_cmphex(gq_pci_cfg_readl(g->qt, DEVFN, 0x00), ==,
                    GMEM_PCI_DEVICE_ID << 16 | GMEM_PCI_VENDOR_ID);
    return g;
}

GmemQTest *gq_start(const char *props)
{
    return gq_start_with(props, NULL);
}

GmemQTest *gq_start_with(const char *props, const char *extra)
{
    return gq_start_after(NULL, props, extra);
}

GmemQTest *gq_start_after(const char *pre, const char *props,
                          const char *extra)
{
    GmemQTest *g = gq_launch(pre, props, extra);

    gq_pci_cfg_writel(g->qt, DEVFN, 0x10, (uint32_t)BAR0_ADDR);
    gq_pci_cfg_writel(g->qt, DEVFN, 0x14, BAR0_ADDR >> 32);
    gq_pci_cfg_writel(g->qt, DEVFN, 0x18, (uint32_t)BAR2_ADDR);
    gq_pci_cfg_writel(g->qt, DEVFN, 0x1c, BAR2_ADDR >> 32);
    gq_pci_cfg_writel(g->qt, DEVFN, 0x04,
                      PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);

    /* MSI-X on, each vector a 4-byte write of MSI_DATA(v) into RAM. */
    for (unsigned v = 0; v < GMEM_MSIX_VECTORS; v++) {
        uint64_t entry = BAR0_ADDR + GMEM_MSIX_TABLE_OFFSET + 16 * v;

        qtest_writel(g->qt, entry, MSI_ADDR + 4 * v);
        qtest_writel(g->qt, entry + 4, 0);
        qtest_writel(g->qt, entry + 8, MSI_DATA(v));
        qtest_writel(g->qt, entry + 12, 0);
        qtest_writel(g->qt, MSI_ADDR + 4 * v, 0);
    }
    gq_pci_cfg_writel(g->qt, DEVFN, GMEM_CFG_MSIX_OFFSET,
                      gq_pci_cfg_readl(g->qt, DEVFN, GMEM_CFG_MSIX_OFFSET) |
                      MSIX_CTRL_ENABLE);
    return g;
}

/* Poll query-migrate until it completes or fails: true if it completed. */
static bool gq_migration_done(GmemQTest *g)
{
    for (int i = 0; i < 3000; i++) {
        g_autoptr(JsonNode) ret = gq_qmp_return(g,
            "{\"execute\": \"query-migrate\"}");
        const char *st = json_object_get_string_member_with_default(
            json_node_get_object(ret), "status", "none");

        if (!strcmp(st, "completed")) {
            return true;
        }
        if (!strcmp(st, "failed") || !strcmp(st, "cancelled")) {
            return false;
        }
        g_usleep(10 * 1000);
    }
    g_error("migration did not complete in 30 s");
}

static void gq_wait_migration(GmemQTest *g)
{
    if (!gq_migration_done(g)) {
        g_error("migration failed");
    }
}

void gq_migrate_out(GmemQTest *g, const char *uri)
{
    g_autofree char *cmd = g_strdup_printf(
        "{\"execute\": \"migrate\", \"arguments\": {\"uri\": \"%s\"}}",
        uri);

    json_node_unref(gq_qmp_return(g, cmd));
    gq_wait_migration(g);
}

GmemQTest *gq_start_incoming(const char *props, const char *uri)
{
    GmemQTest *g = gq_launch(NULL, props, "-incoming defer");
    g_autofree char *cmd = g_strdup_printf(
        "{\"execute\": \"migrate-incoming\", \"arguments\": "
        "{\"uri\": \"%s\"}}", uri);

    json_node_unref(gq_qmp_return(g, cmd));
    gq_wait_migration(g);
    return g;
}

GmemQTest *gq_try_incoming(const char *props, const char *uri, bool *loaded)
{
    return gq_try_incoming_with(props, NULL, uri, loaded);
}

GmemQTest *gq_try_incoming_with(const char *props, const char *extra,
                                const char *uri, bool *loaded)
{
    g_autofree char *args = g_strdup_printf("-incoming defer%s%s",
                                            extra ? " " : "",
                                            extra ? extra : "");
    GmemQTest *g = gq_launch(NULL, props, args);
    g_autofree char *cmd = g_strdup_printf(
        "{\"execute\": \"migrate-incoming\", \"arguments\": "
        "{\"uri\": \"%s\", \"exit-on-error\": false}}", uri);

    json_node_unref(gq_qmp_return(g, cmd));
    *loaded = gq_migration_done(g);
    return g;
}

void gq_quit(GmemQTest *g)
{
    gq_qtest_quit(g->qt);
    g_unlink(g->log_path);
    g_free(g->log_path);
    g_free(g);
}

void gq_expect_error(GmemQTest *g, uint32_t code, uint32_t info)
{
    g_assert_cmphex(gq_reg(g, GMEM_REG_STATUS), ==,
                    GMEM_STATUS_READY | GMEM_STATUS_ERROR);
    g_assert_cmpuint(gq_reg(g, GMEM_REG_ERROR_CODE), ==, code);
    g_assert_cmphex(gq_reg(g, GMEM_REG_ERROR_INFO), ==, info);
    g_assert_true(gq_msi_fired(g, GMEM_VEC_ERROR));
    gq_set_reg(g, GMEM_REG_ERROR_CODE, 0);
    g_assert_cmphex(gq_reg(g, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    g_assert_cmpuint(gq_reg(g, GMEM_REG_ERROR_CODE), ==, GMEM_ERR_NONE);
    g_assert_cmphex(gq_reg(g, GMEM_REG_ERROR_INFO), ==, 0);
}

bool gq_log_has(GmemQTest *g, const char *needle)
{
    g_autofree char *log = NULL;

    g_assert_true(g_file_get_contents(g->log_path, &log, NULL, NULL));
    return strstr(log, needle) != NULL;
}

bool gq_msi_fired(GmemQTest *g, unsigned v)
{
    uint32_t data = qtest_readl(g->qt, MSI_ADDR + 4 * v);

    qtest_writel(g->qt, MSI_ADDR + 4 * v, 0);
    return data == MSI_DATA(v);
}

/* One QMP command through libqtest's monitor; its reply as JSON text. */
char *gq_qmp(GmemQTest *g, const char *json)
{
    g_autoptr(QDict) reply = NULL;
    g_autoptr(GString) text = NULL;

    qtest_qmp_send_raw(g->qt, "%s", json);
    reply = qtest_qmp_receive(g->qt);   /* events are kept aside */
    text = qobject_to_json(QOBJECT(reply));
    return g_strdup(text->str);
}

JsonNode *gq_qmp_return(GmemQTest *g, const char *json)
{
    g_autofree char *reply = gq_qmp(g, json);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) err = NULL;
    JsonObject *obj;

    if (!json_parser_load_from_data(parser, reply, -1, &err)) {
        g_error("QMP reply is not JSON (%s): %s", err->message, reply);
    }
    obj = json_node_get_object(json_parser_get_root(parser));
    if (!json_object_has_member(obj, "return")) {
        g_error("QMP command %s failed: %s", json, reply);
    }
    return json_node_copy(json_object_get_member(obj, "return"));
}

int64_t gq_state(GmemQTest *g, const char *id, const char *name)
{
    g_autofree char *cmd = g_strdup_printf(
        "{\"execute\": \"qom-get\", \"arguments\": {\"path\": "
        "\"/machine/peripheral/%s\", \"property\": \"state\"}}", id);
    g_autoptr(JsonNode) st = gq_qmp_return(g, cmd);

    return json_object_get_int_member(json_node_get_object(st), name);
}

char *gq_hmp(GmemQTest *g, const char *cmdline)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(JsonNode) cmd = NULL, ret = NULL;
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "execute");
    json_builder_add_string_value(b, "human-monitor-command");
    json_builder_set_member_name(b, "arguments");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "command-line");
    json_builder_add_string_value(b, cmdline);
    json_builder_end_object(b);
    json_builder_end_object(b);
    cmd = json_builder_get_root(b);
    text = json_to_string(cmd, FALSE);
    ret = gq_qmp_return(g, text);
    /* The monitor ends lines with CR LF. */
    lines = g_strsplit(json_node_get_string(ret), "\r\n", -1);
    return g_strjoinv("\n", lines);
}
