/*
 * gmem-accel: fault injection, for the driver's error paths - what only an
 * emulator can do on demand. A write-only QOM property of each device:
 *   qom-set gmem0 inject dma-error,queue=N
 *       the next data access of queue N's engine fails: its command
 *       completes BAD_ADDRESS with error DMA, as a real PCIe error would.
 *   qom-set gmem0 inject hang,queue=N
 *       queue N's engine stops: it takes no step (STEPS and HEAD stand
 *       still) until the queue is disabled or the device reset.
 *   qom-set gmem0 inject inv-stuck
 *       TLB invalidations through the registers never complete: INV_DONE
 *       stays and the TLB keeps the translations, until a device reset.
 *   qom-set gmem0 inject fq-full
 *       the fault queue has no room for groups (they wait: FQ_STATUS
 *       OVERFLOW, ERROR_CODE FAULT_OVERFLOW) until the driver writes FQ_HEAD.
 *   qom-set gmem0 inject poison,offset=X
 *       HBM's page at byte offset X goes bad: an engine step that touches it
 *       fails (its command's status POISON, error POISON with the offset),
 *       as an uncorrectable ECC error would; BAR2 still shows the data. Up to
 *       GMEM_POISON_MAX pages, until a device reset.
 *   qom-set gmem0 inject reset
 *       the device resets itself, as after a surprise reset: every register
 *       back to its reset value (SCRATCH 0), rings, contexts and the fault
 *       queue disabled, the commands in progress dropped. HBM keeps its data.
 * (HMP: qom-set gmem0 inject hang,queue=1.) Pending injections show in the
 * state property; a device reset drops them, a migration does not carry them
 * (they are a test's, not the guest's).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qemu/keyval.h"
#include "qapi/error.h"
#include "qobject/qdict.h"
#include "gmem-accel.h"

#define GMEM_INJECT_KINDS \
    "dma-error,queue=N; hang,queue=N; inv-stuck; fq-full; poison,offset=X; " \
    "reset"

static bool gmem_inject_queue(QDict *args, unsigned *qid, Error **errp)
{
    const char *q = qdict_get_try_str(args, "queue");

    if (!q || qemu_strtoui(q, NULL, 0, qid) || *qid >= GMEM_NUM_QUEUES) {
        error_setg(errp, "inject: queue=N is needed, N from 0 to %u",
                   GMEM_NUM_QUEUES - 1);
        return false;
    }
    qdict_del(args, "queue");
    return true;
}

/* Poison the HBM page at offset=X (refused outside HBM or beyond the limit). */
static void gmem_inject_poison(GmemAccelState *s, QDict *args, Error **errp)
{
    const char *o = qdict_get_try_str(args, "offset");
    uint64_t off;

    if (!o || qemu_strtou64(o, NULL, 0, &off) || off >= s->hbm_size) {
        error_setg(errp, "inject: poison needs offset=X, an HBM byte offset "
                   "below 0x%" PRIx64, s->hbm_size);
        return;
    }
    qdict_del(args, "offset");
    if (qdict_size(args)) {
        error_setg(errp, "inject: unknown parameter '%s' for poison",
                   qdict_first(args)->key);
        return;
    }
    off &= ~(uint64_t)(GMEM_PAGE_SIZE - 1);
    for (unsigned p = 0; p < s->npoison; p++) {
        if (s->poison[p] == off) {
            return;
        }
    }
    if (s->npoison == GMEM_POISON_MAX) {
        error_setg(errp, "inject: %u pages are poisoned already, the most "
                   "a device holds; a reset clears them", GMEM_POISON_MAX);
        return;
    }
    s->poison[s->npoison++] = off;
}

static void gmem_set_inject(Object *obj, const char *value, Error **errp)
{
    GmemAccelState *s = GMEM_ACCEL(obj);
    g_autoptr(QDict) args = keyval_parse(value, "kind", NULL, errp);
    g_autofree char *kind = NULL;
    bool dma_error, hang, inv_stuck, fq_full, reset;
    unsigned qid = 0;

    if (!args) {
        return;
    }
    kind = g_strdup(qdict_get_try_str(args, "kind"));
    qdict_del(args, "kind");
    dma_error = !g_strcmp0(kind, "dma-error");
    hang = !g_strcmp0(kind, "hang");
    inv_stuck = !g_strcmp0(kind, "inv-stuck");
    fq_full = !g_strcmp0(kind, "fq-full");
    reset = !g_strcmp0(kind, "reset");
    if (!g_strcmp0(kind, "poison")) {
        gmem_inject_poison(s, args, errp);
        return;
    }
    if (!dma_error && !hang && !inv_stuck && !fq_full && !reset) {
        error_setg(errp, "inject: unknown kind '%s'; one of: "
                   GMEM_INJECT_KINDS, kind ?: "");
        return;
    }
    if ((dma_error || hang) && !gmem_inject_queue(args, &qid, errp)) {
        return;
    }
    if (qdict_size(args)) {
        error_setg(errp, "inject: unknown parameter '%s' for %s",
                   qdict_first(args)->key, kind);
        return;
    }
    if (dma_error) {
        s->inject_dma_error |= BIT_ULL(qid);
    } else if (hang) {
        s->inject_hang |= BIT_ULL(qid);
    } else if (inv_stuck) {
        s->inject_inv_stuck = true;
    } else if (fq_full) {
        s->inject_fq_full = true;
    } else {
        gmem_accel_reset_state(s, "injected");
    }
}

void gmem_inject_class_init(ObjectClass *klass)
{
    object_class_property_add_str(klass, "inject", NULL, gmem_set_inject);
    object_class_property_set_description(klass, "inject",
        "inject a fault (write-only): " GMEM_INJECT_KINDS);
}
