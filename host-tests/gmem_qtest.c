/*
 * gmem-accel over qtest; see gmem_qtest.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <unistd.h>

#include "gmem_accel_hw.h"
#include "gmem_qtest.h"

#define PCI_COMMAND_MEMORY  0x2
#define PCI_COMMAND_MASTER  0x4
#define MSIX_CTRL_ENABLE    0x80000000u /* message control bit 15, as dword */

uint32_t gq_reg(GmemQTest *g, uint32_t off)
{
    return qt_readl(g->qt, BAR0_ADDR + off);
}

void gq_set_reg(GmemQTest *g, uint32_t off, uint32_t val)
{
    qt_writel(g->qt, BAR0_ADDR + off, val);
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

/* Start QEMU with the device; @extra: more QEMU arguments or NULL. */
static GmemQTest *gq_launch(const char *props, const char *extra)
{
    GmemQTest *g = g_new0(GmemQTest, 1);
    g_autofree char *args = NULL;
    int fd = g_file_open_tmp("gmem-qtest-XXXXXX.log", &g->log_path, NULL);

    g_assert_cmpint(fd, >=, 0);
    close(fd);
    g->qmp_path = g_strdup_printf("%s.qmp", g->log_path);
    args = g_strdup_printf("-d guest_errors -D %s "
                           "-qmp unix:%s,server=on,wait=off "
                           "-device gmem-accel,id=gmem0,addr=04.0%s%s%s%s",
                           g->log_path, g->qmp_path,
                           props ? "," : "", props ? props : "",
                           extra ? " " : "", extra ? extra : "");
    g->qt = qt_start(args);
    g_assert_cmphex(qt_pci_cfg_readl(g->qt, DEVFN, 0x00), ==,
                    GMEM_PCI_DEVICE_ID << 16 | GMEM_PCI_VENDOR_ID);
    return g;
}

GmemQTest *gq_start(const char *props)
{
    GmemQTest *g = gq_launch(props, NULL);

    qt_pci_cfg_writel(g->qt, DEVFN, 0x10, (uint32_t)BAR0_ADDR);
    qt_pci_cfg_writel(g->qt, DEVFN, 0x14, BAR0_ADDR >> 32);
    qt_pci_cfg_writel(g->qt, DEVFN, 0x18, (uint32_t)BAR2_ADDR);
    qt_pci_cfg_writel(g->qt, DEVFN, 0x1c, BAR2_ADDR >> 32);
    qt_pci_cfg_writel(g->qt, DEVFN, 0x04,
                      PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);

    /* MSI-X on, each vector a 4-byte write of MSI_DATA(v) into RAM. */
    for (unsigned v = 0; v < GMEM_MSIX_VECTORS; v++) {
        uint64_t entry = BAR0_ADDR + GMEM_MSIX_TABLE_OFFSET + 16 * v;

        qt_writel(g->qt, entry, MSI_ADDR + 4 * v);
        qt_writel(g->qt, entry + 4, 0);
        qt_writel(g->qt, entry + 8, MSI_DATA(v));
        qt_writel(g->qt, entry + 12, 0);
        qt_writel(g->qt, MSI_ADDR + 4 * v, 0);
    }
    qt_pci_cfg_writel(g->qt, DEVFN, GMEM_CFG_MSIX_OFFSET,
                      qt_pci_cfg_readl(g->qt, DEVFN, GMEM_CFG_MSIX_OFFSET) |
                      MSIX_CTRL_ENABLE);
    return g;
}

/* Poll query-migrate until it reports completed (or fail the test). */
static void gq_wait_migration(GmemQTest *g)
{
    for (int i = 0; i < 3000; i++) {
        g_autoptr(JsonNode) ret = gq_qmp_return(g,
            "{\"execute\": \"query-migrate\"}");
        const char *st = json_object_get_string_member_with_default(
            json_node_get_object(ret), "status", "none");

        if (!strcmp(st, "completed")) {
            return;
        }
        if (!strcmp(st, "failed") || !strcmp(st, "cancelled")) {
            g_error("migration %s", st);
        }
        g_usleep(10 * 1000);
    }
    g_error("migration did not complete in 30 s");
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
    GmemQTest *g = gq_launch(props, "-incoming defer");
    g_autofree char *cmd = g_strdup_printf(
        "{\"execute\": \"migrate-incoming\", \"arguments\": "
        "{\"uri\": \"%s\"}}", uri);

    json_node_unref(gq_qmp_return(g, cmd));
    gq_wait_migration(g);
    return g;
}

void gq_quit(GmemQTest *g)
{
    qt_quit(g->qt);
    g_unlink(g->log_path);
    g_unlink(g->qmp_path);
    g_free(g->log_path);
    g_free(g->qmp_path);
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
    uint32_t data = qt_readl(g->qt, MSI_ADDR + 4 * v);

    qt_writel(g->qt, MSI_ADDR + 4 * v, 0);
    return data == MSI_DATA(v);
}

/* Read one line from the QMP connection. */
static char *qmp_line(GDataInputStream *in)
{
    g_autoptr(GError) err = NULL;
    char *line = g_data_input_stream_read_line(in, NULL, NULL, &err);

    if (!line) {
        g_error("QMP connection closed: %s", err ? err->message : "EOF");
    }
    return line;
}

/* Read the next reply, passing over events (which carry a timestamp). */
static char *qmp_reply(GDataInputStream *in)
{
    char *line = qmp_line(in);

    while (g_str_has_prefix(line, "{\"timestamp\"")) {
        g_free(line);
        line = qmp_line(in);
    }
    return line;
}

char *gq_qmp(GmemQTest *g, const char *json)
{
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_autoptr(GSocketAddress) addr = g_unix_socket_address_new(g->qmp_path);
    g_autoptr(GError) err = NULL;
    g_autoptr(GSocketConnection) conn = NULL;
    g_autoptr(GDataInputStream) in = NULL;
    GOutputStream *out;
    g_autofree char *cmd = g_strdup_printf(
        "{\"execute\": \"qmp_capabilities\"}\n%s\n", json);

    conn = g_socket_client_connect(client, G_SOCKET_CONNECTABLE(addr), NULL,
                                   &err);
    if (!conn) {
        g_error("cannot connect to QMP at %s: %s", g->qmp_path, err->message);
    }
    in = g_data_input_stream_new(
        g_io_stream_get_input_stream(G_IO_STREAM(conn)));
    out = g_io_stream_get_output_stream(G_IO_STREAM(conn));
    g_free(qmp_line(in));                       /* greeting */
    g_assert_true(g_output_stream_write_all(out, cmd, strlen(cmd), NULL, NULL,
                                            NULL));
    g_free(qmp_reply(in));                      /* capabilities */
    return qmp_reply(in);
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
