/*
 * gmem-accel: guest errors (ERROR_CODE/INFO/ADDR, the log, the error
 * vector) and MSI-X notification: the bottom layer every other file uses.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "hw/pci/msix.h"
#include "gmem-accel.h"
#include "trace.h"

void gmem_notify(GmemAccelState *s, unsigned vector)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    if (msix_enabled(pdev)) {
        msix_notify(pdev, vector);
    }
}

/*
 * Guest errors a device logs per second; the rest are counted and reported
 * once the second is over. A malformed ring otherwise writes megabytes of
 * log per doorbell. ERROR_CODE and the trace event see every error.
 */
#define GMEM_LOG_BURST          20
#define GMEM_LOG_WINDOW_MS      1000

static bool gmem_log_allowed(GmemAccelState *s)
{
    int64_t now = qemu_clock_get_ms(QEMU_CLOCK_REALTIME);

    if (now - s->log_window >= GMEM_LOG_WINDOW_MS) {
        if (s->log_suppressed) {
            qemu_log_mask(LOG_GUEST_ERROR, "%s %s: %u more guest errors "
                          "were not logged\n", TYPE_GMEM_ACCEL,
                          DEVICE(s)->id ?: "", s->log_suppressed);
        }
        s->log_window = now;
        s->log_count = 0;
        s->log_suppressed = 0;
    }
    if (s->log_count < GMEM_LOG_BURST) {
        s->log_count++;
        return true;
    }
    s->log_suppressed++;
    return false;
}

/* Record a guest error in ERROR_CODE/INFO/ADDR, log it, raise its vector. */
void gmem_accel_set_error(GmemAccelState *s, uint32_t code, uint32_t info,
                          uint64_t addr, const char *fmt, ...)
{
    va_list ap;

    if (qemu_loglevel_mask(LOG_GUEST_ERROR) && gmem_log_allowed(s)) {
        g_autofree char *msg = NULL;

        va_start(ap, fmt);
        msg = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        qemu_log_mask(LOG_GUEST_ERROR, "%s %s: %s\n", TYPE_GMEM_ACCEL,
                      DEVICE(s)->id ?: "", msg);
    }
    trace_gmem_accel_error(code, info, addr);
    s->status |= GMEM_STATUS_ERROR;
    s->error_code = code;
    s->error_info = info;
    s->error_addr = addr;
    gmem_notify(s, GMEM_VEC_ERROR);
}

void gmem_bad_value(GmemAccelState *s, hwaddr addr, uint64_t val,
                    const char *why)
{
    gmem_accel_set_error(s, GMEM_ERR_BAD_VALUE, addr, val,
                         "register 0x%" HWADDR_PRIx ": value 0x%" PRIx64
                         " rejected: %s", addr, val, why);
}
