/*
 * gmem-accel: the device as the monitor sees it.
 *
 * QMP (machine-readable), read-only QOM properties of each device:
 *   state           contexts, queues, fault queue, counters and access
 *                   counters
 *   page-table[N]   context N's page table as runs of mapped pages
 *   hbm-map         who maps HBM: every run of every enabled context that
 *                   targets HBM, by HBM address (sharers are runs of several
 *                   contexts over the same HBM)
 * HMP: info gmem-accel [id [ctx [va [size]]]] and info gmem-accel-hbm id
 * print the same data, built from the same dictionaries, so the views
 * cannot disagree.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "monitor/monitor.h"
#include "gmem-accel.h"

/* A page-table dump reads at most this many tables, reports this many runs */
#define GMEM_DUMP_MAX_TABLES 4096
#define GMEM_DUMP_MAX_RUNS   16384

static const char *const gmem_counter_names[GMEM_NUM_COUNTERS] = {
    [GMEM_CNT_FAULTS] = "faults",
    [GMEM_CNT_REPLAYS] = "replays",
    [GMEM_CNT_CANCELS] = "cancels",
    [GMEM_CNT_TLB_HITS] = "tlb-hits",
    [GMEM_CNT_TLB_MISSES] = "tlb-misses",
    [GMEM_CNT_WALKS] = "walks",
    [GMEM_CNT_BYTES] = "bytes",
    [GMEM_CNT_COMMANDS] = "commands",
};

static const char *const gmem_queue_states[] = {
    [GMEM_CQ_STATE_DISABLED] = "disabled",
    [GMEM_CQ_STATE_IDLE] = "idle",
    [GMEM_CQ_STATE_RUNNING] = "running",
    [GMEM_CQ_STATE_STALLED] = "stalled",
    [GMEM_CQ_STATE_BROKEN] = "broken",
};

static const char *gmem_aperture(bool hbm)
{
    return hbm ? "hbm" : "system";
}

static QDict *gmem_queue_dict(GmemAccelState *s, unsigned qid)
{
    GmemQueue *q = &s->queue[qid];
    QDict *d = qdict_new();

    qdict_put_int(d, "id", qid);
    qdict_put_str(d, "state", q->state < G_N_ELEMENTS(gmem_queue_states) ?
                  gmem_queue_states[q->state] : "?");
    qdict_put_int(d, "base", q->base);
    qdict_put_int(d, "entries", q->entries_log2 <= GMEM_RING_MAX_LOG2 ?
                  1u << q->entries_log2 : 0);
    qdict_put_int(d, "head", q->head);
    qdict_put_int(d, "tail", q->tail);
    qdict_put_int(d, "completed", q->completed);
    qdict_put_int(d, "steps", q->steps);
    qdict_put_bool(d, "fault-held", s->cq_fault_hold & BIT_ULL(qid));
    if (q->busy) {
        qdict_put_str(d, "command", gmem_op_name(q->cmd.opcode));
        qdict_put_int(d, "progress", q->progress);
    }
    if (q->state == GMEM_CQ_STATE_STALLED) {
        qdict_put_int(d, "group", q->group);
        qdict_put_bool(d, "group-posted", q->group_posted);
        qdict_put_int(d, "group-faults", q->nfaults);
    }
    return d;
}

static QDict *gmem_context_dict(GmemAccelState *s, unsigned c)
{
    QDict *cd = qdict_new();

    qdict_put_int(cd, "id", c);
    qdict_put_bool(cd, "enabled", s->ctx[c].ctrl & GMEM_CTX_CTRL_ENABLE);
    qdict_put_int(cd, "root", s->ctx[c].root);
    qdict_put_str(cd, "root-in",
                  gmem_aperture(s->ctx[c].ctrl & GMEM_CTX_CTRL_ROOT_HBM));
    return cd;
}

/* The access counters: registers, and the regions tracked (at most 256) */
static QDict *gmem_ac_dict(GmemAccelState *s)
{
    QDict *d = qdict_new();
    QList *regions = qlist_new();

    qdict_put_bool(d, "enabled", s->ac.ctrl & GMEM_AC_CTRL_ENABLE);
    qdict_put_int(d, "base", s->ac.base);
    qdict_put_int(d, "entries", s->ac.entries_log2 ? 1u << s->ac.entries_log2
                                                   : 0);
    qdict_put_int(d, "head", s->ac.head);
    qdict_put_int(d, "tail", s->ac.tail);
    qdict_put_int(d, "granularity", 1ull << s->ac.granularity);
    qdict_put_int(d, "threshold", s->ac.threshold);
    qdict_put_int(d, "tracked", s->ac.tracked);
    qdict_put_int(d, "capacity", GMEM_AC_MAX_REGIONS);
    qdict_put_int(d, "notified", s->ac.notified);
    qdict_put_int(d, "dropped", s->ac.dropped);
    for (unsigned i = 0; i < GMEM_AC_MAX_REGIONS; i++) {
        const GmemAcRegion *r = &s->ac.region[i];
        QDict *rd;

        if (!r->used) {
            continue;
        }
        rd = qdict_new();
        qdict_put_int(rd, "context", r->ctx);
        qdict_put_int(rd, "va", r->va);
        qdict_put_str(rd, "aperture", gmem_aperture(r->aperture ==
                                                    GMEM_AC_APERTURE_LOCAL));
        qdict_put_int(rd, "count", r->count);
        qlist_append(regions, rd);
    }
    qdict_put(d, "regions", regions);
    return d;
}

static QDict *gmem_state_dict(GmemAccelState *s)
{
    QDict *d = qdict_new(), *fq = qdict_new(), *cnt = qdict_new();
    QList *ctxs = qlist_new(), *queues = qlist_new();

    qdict_put_int(d, "hbm-size", s->hbm_size);
    qdict_put_int(d, "status", s->status);
    qdict_put_int(d, "error-code", s->error_code);
    qdict_put_int(d, "tlb-entries", s->tlb_entries);
    qdict_put_int(d, "tlb-valid", gmem_tlb_count(&s->tlb));
    qdict_put_int(d, "walk-cache-entries", s->walk_cache_entries);
    qdict_put_int(d, "walk-cache-hits", s->walk_cache_hits);
    qdict_put_int(d, "atc-hits", s->atc_hits);
    qdict_put_int(d, "atc-misses", s->atc_misses);
    qdict_put_int(d, "atc-flushes", s->atc_flushes);
    qdict_put_int(d, "pte-reads", s->pte_reads);
    qdict_put_int(d, "inline-max-commands", s->inline_max_commands);
    qdict_put_int(d, "kicks-deferred", s->kicks_deferred);
    qdict_put_int(d, "engine-pauses", s->engine_pauses);
    qdict_put_int(d, "movers", s->movers);
    qdict_put_int(d, "mover-batches", s->mover.batches);
    qdict_put_int(d, "inject-dma-error", s->inject_dma_error);
    qdict_put_int(d, "inject-hang", s->inject_hang);
    qdict_put_bool(d, "inject-inv-stuck", s->inject_inv_stuck);
    qdict_put_bool(d, "inject-fq-full", s->inject_fq_full);
    qdict_put_int(d, "inject-poisoned-pages", s->npoison);
    for (unsigned c = 0; c < GMEM_NUM_CONTEXTS; c++) {
        if (s->ctx[c].ctrl || s->ctx[c].root) {     /* ever programmed */
            qlist_append(ctxs, gmem_context_dict(s, c));
        }
    }
    qdict_put(d, "contexts", ctxs);
    for (unsigned q = 0; q < GMEM_NUM_QUEUES; q++) {
        GmemQueue *cq = &s->queue[q];

        /* ever programmed: of 64, a driver uses those it has contexts for */
        if (cq->base || cq->entries_log2 || cq->ctrl || cq->completed) {
            qlist_append(queues, gmem_queue_dict(s, q));
        }
    }
    qdict_put(d, "queues", queues);
    qdict_put_bool(fq, "enabled", s->fq_ctrl & GMEM_FQ_CTRL_ENABLE);
    qdict_put_int(fq, "base", s->fq_base);
    qdict_put_int(fq, "head", s->fq_head);
    qdict_put_int(fq, "tail", s->fq_tail);
    qdict_put_bool(fq, "overflow", s->fq_overflow);
    qdict_put_bool(fq, "irq-held", s->fq_irq_hold);
    qdict_put(d, "fault-queue", fq);
    for (unsigned i = 0; i < GMEM_NUM_COUNTERS; i++) {
        qdict_put_int(cnt, gmem_counter_names[i], s->counters[i]);
    }
    qdict_put(d, "counters", cnt);
    qdict_put(d, "access-counters", gmem_ac_dict(s));
    return d;
}

/* ---- page tables ---- */

static QDict *gmem_run_dict(const GmemPtRange *r)
{
    QDict *d = qdict_new();
    const GmemTranslation *t = &r->first;

    qdict_put_int(d, "va", r->va);
    qdict_put_int(d, "size", r->size);
    qdict_put_int(d, "level", t->level);
    qdict_put_int(d, "pte", t->pte);
    qdict_put_int(d, "pte-addr", t->pte_addr);
    qdict_put_str(d, "pte-in", gmem_aperture(t->pte_hbm));
    if (r->status != GMEM_WALK_OK) {
        qdict_put_str(d, "error", gmem_walk_status_name(r->status));
        return d;
    }
    qdict_put_int(d, "pages", r->pages);
    qdict_put_int(d, "page-size", t->page_size);
    qdict_put_int(d, "target", t->target);
    qdict_put_str(d, "target-in", gmem_aperture(t->target_hbm));
    qdict_put_bool(d, "read", t->perms & GMEM_ACCESS_READ);
    qdict_put_bool(d, "write", t->perms & GMEM_ACCESS_WRITE);
    qdict_put_bool(d, "atomic", t->perms & GMEM_ACCESS_ATOMIC);
    return d;
}

/* The runs of a dump, counted as they come (qlist_size() walks the list) */
typedef struct GmemRunList {
    QList *runs;
    unsigned n;
} GmemRunList;

/* Take a run; one past GMEM_DUMP_MAX_RUNS stops the dump (truncated). */
static bool gmem_add_run(void *opaque, const GmemPtRange *r)
{
    GmemRunList *l = opaque;

    if (l->n == GMEM_DUMP_MAX_RUNS) {
        return false;
    }
    qlist_append(l->runs, gmem_run_dict(r));
    l->n++;
    return true;
}

/* Context @c's mappings overlapping [va, end), as the device sees them now. */
static QDict *gmem_page_table_dict(GmemAccelState *s, unsigned c,
                                   uint64_t va, uint64_t end)
{
    static const char *const results[] = {
        [GMEM_DUMP_COMPLETE] = "complete",
        [GMEM_DUMP_STOPPED] = "truncated: more than "
                              stringify(GMEM_DUMP_MAX_RUNS) " runs",
        [GMEM_DUMP_TOO_MANY_TABLES] = "truncated: more than "
                              stringify(GMEM_DUMP_MAX_TABLES) " tables",
    };
    QDict *d = gmem_context_dict(s, c);
    GmemRunList l = { .runs = qlist_new() };
    GmemPtDumpResult res = GMEM_DUMP_COMPLETE;

    /* A context never given a root has no table to read. */
    if (s->ctx[c].ctrl || s->ctx[c].root) {
        res = gmem_pt_dump(gmem_peek_pte, s, s->ctx[c].root,
                           s->ctx[c].ctrl & GMEM_CTX_CTRL_ROOT_HBM,
                           s->hbm_size, va, end, GMEM_DUMP_MAX_TABLES,
                           gmem_add_run, &l);
    }
    qdict_put_str(d, "dump", results[res]);
    qdict_put(d, "runs", l.runs);
    return d;
}

/* ---- HBM: which context maps which of it, where ---- */

typedef struct GmemHbmUse {
    uint64_t hbm, size, page_size, va;
    unsigned ctx;
    uint8_t perms;
} GmemHbmUse;

typedef struct GmemHbmCollect {
    GArray *uses;
    unsigned ctx;
} GmemHbmCollect;

static bool gmem_collect_hbm(void *opaque, const GmemPtRange *r)
{
    GmemHbmCollect *col = opaque;
    GmemHbmUse u = {
        .hbm = r->first.target, .size = r->size,
        .page_size = r->first.page_size, .va = r->va, .ctx = col->ctx,
        .perms = r->first.perms,
    };

    if (r->status != GMEM_WALK_OK || !r->first.target_hbm) {
        return true;
    }
    if (col->uses->len == GMEM_DUMP_MAX_RUNS) {
        return false;   /* one more than fits: truncated */
    }
    g_array_append_val(col->uses, u);
    return true;
}

static gint gmem_hbm_use_cmp(gconstpointer a, gconstpointer b)
{
    const GmemHbmUse *x = a, *y = b;

    if (x->hbm != y->hbm) {
        return x->hbm < y->hbm ? -1 : 1;
    }
    if (x->ctx != y->ctx) {
        return x->ctx < y->ctx ? -1 : 1;
    }
    return x->va < y->va ? -1 : x->va > y->va;
}

/* Every enabled context's runs that target HBM, sorted by HBM address. */
static QDict *gmem_hbm_map_dict(GmemAccelState *s)
{
    GmemHbmCollect col = { .uses = g_array_new(false, false,
                                               sizeof(GmemHbmUse)) };
    QDict *d = qdict_new();
    QList *list = qlist_new();
    bool complete = true;

    for (unsigned c = 0; c < GMEM_NUM_CONTEXTS && complete; c++) {
        if (!(s->ctx[c].ctrl & GMEM_CTX_CTRL_ENABLE)) {
            continue;
        }
        col.ctx = c;
        complete = gmem_pt_dump(gmem_peek_pte, s, s->ctx[c].root,
                                s->ctx[c].ctrl & GMEM_CTX_CTRL_ROOT_HBM,
                                s->hbm_size, 0, UINT64_MAX,
                                GMEM_DUMP_MAX_TABLES, gmem_collect_hbm,
                                &col) == GMEM_DUMP_COMPLETE;
    }
    g_array_sort(col.uses, gmem_hbm_use_cmp);
    for (guint i = 0; i < col.uses->len; i++) {
        const GmemHbmUse *u = &g_array_index(col.uses, GmemHbmUse, i);
        QDict *m = qdict_new();

        qdict_put_int(m, "hbm", u->hbm);
        qdict_put_int(m, "size", u->size);
        qdict_put_int(m, "page-size", u->page_size);
        qdict_put_int(m, "context", u->ctx);
        qdict_put_int(m, "va", u->va);
        qdict_put_bool(m, "read", u->perms & GMEM_ACCESS_READ);
        qdict_put_bool(m, "write", u->perms & GMEM_ACCESS_WRITE);
        qdict_put_bool(m, "atomic", u->perms & GMEM_ACCESS_ATOMIC);
        qlist_append(list, m);
    }
    g_array_free(col.uses, true);
    qdict_put_int(d, "hbm-size", s->hbm_size);
    qdict_put_str(d, "dump", complete ? "complete" : "truncated");
    qdict_put(d, "mappings", list);
    return d;
}

static void gmem_visit_dict(Visitor *v, const char *name, QDict *d,
                            Error **errp)
{
    QObject *obj = QOBJECT(d);

    visit_type_any(v, name, &obj, errp);
    qobject_unref(obj);
}

static void gmem_get_state(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    gmem_visit_dict(v, name, gmem_state_dict(GMEM_ACCEL(obj)), errp);
}

static void gmem_get_page_table(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    unsigned c = (uintptr_t)opaque;

    gmem_visit_dict(v, name, gmem_page_table_dict(GMEM_ACCEL(obj), c, 0,
                                                  UINT64_MAX), errp);
}

static void gmem_get_hbm_map(Object *obj, Visitor *v, const char *name,
                             void *opaque, Error **errp)
{
    gmem_visit_dict(v, name, gmem_hbm_map_dict(GMEM_ACCEL(obj)), errp);
}

/* ---- HMP: info gmem-accel ---- */

static void gmem_print_size(Monitor *mon, uint64_t bytes)
{
    g_autofree char *str = size_to_str(bytes);

    monitor_printf(mon, "%10s", str);
}

static const char *gmem_page_size_name(uint64_t page_size)
{
    return page_size == GMEM_HUGE_SIZE ? "2M" :
           page_size == GMEM_CONT_SIZE ? "64K" : "4K";
}

static void gmem_print_state(Monitor *mon, QDict *st)
{
    const QListEntry *e;

    monitor_printf(mon, "  HBM %" PRId64 " MiB, status 0x%" PRIx64
                   ", error code %" PRId64 ", TLB %" PRId64 "/%" PRId64
                   " entries valid\n",
                   qdict_get_int(st, "hbm-size") >> 20,
                   qdict_get_int(st, "status"),
                   qdict_get_int(st, "error-code"),
                   qdict_get_int(st, "tlb-valid"),
                   qdict_get_int(st, "tlb-entries"));
    monitor_printf(mon, "  counters:");
    for (unsigned i = 0; i < GMEM_NUM_COUNTERS; i++) {
        monitor_printf(mon, " %s %" PRId64, gmem_counter_names[i],
                       qdict_get_int(qdict_get_qdict(st, "counters"),
                                     gmem_counter_names[i]));
    }
    monitor_printf(mon, "\n");
    QLIST_FOREACH_ENTRY(qdict_get_qlist(st, "contexts"), e) {
        QDict *c = qobject_to(QDict, qlist_entry_obj(e));

        monitor_printf(mon, "  context %2" PRId64 ": %s, root 0x%" PRIx64
                       " in %s memory\n", qdict_get_int(c, "id"),
                       qdict_get_bool(c, "enabled") ? "enabled" : "disabled",
                       qdict_get_int(c, "root"), qdict_get_str(c, "root-in"));
    }
    QLIST_FOREACH_ENTRY(qdict_get_qlist(st, "queues"), e) {
        QDict *q = qobject_to(QDict, qlist_entry_obj(e));

        monitor_printf(mon, "  queue %" PRId64 ": %-8s base 0x%" PRIx64
                       " entries %" PRId64 " head %" PRId64 " tail %" PRId64
                       " completed %" PRId64, qdict_get_int(q, "id"),
                       qdict_get_str(q, "state"), qdict_get_int(q, "base"),
                       qdict_get_int(q, "entries"), qdict_get_int(q, "head"),
                       qdict_get_int(q, "tail"),
                       qdict_get_int(q, "completed"));
        if (qdict_haskey(q, "command")) {
            monitor_printf(mon, ", %s at %" PRId64, qdict_get_str(q, "command"),
                           qdict_get_int(q, "progress"));
        }
        if (qdict_haskey(q, "group")) {
            monitor_printf(mon, ", fault group %" PRId64 " (%" PRId64
                           " faults%s)", qdict_get_int(q, "group"),
                           qdict_get_int(q, "group-faults"),
                           qdict_get_bool(q, "group-posted") ? ", posted" : "");
        }
        if (qdict_get_bool(q, "fault-held")) {
            monitor_printf(mon, ", fault interrupt held");
        }
        monitor_printf(mon, "\n");
    }
    {
        QDict *fq = qdict_get_qdict(st, "fault-queue");

        monitor_printf(mon, "  fault queue: %s, base 0x%" PRIx64 " head %"
                       PRId64 " tail %" PRId64 "%s%s\n",
                       qdict_get_bool(fq, "enabled") ? "enabled" : "disabled",
                       qdict_get_int(fq, "base"), qdict_get_int(fq, "head"),
                       qdict_get_int(fq, "tail"),
                       qdict_get_bool(fq, "overflow") ? ", OVERFLOW" : "",
                       qdict_get_bool(fq, "irq-held") ? ", interrupt held"
                                                      : "");
    }
    {
        QDict *ac = qdict_get_qdict(st, "access-counters");

        monitor_printf(mon, "  access counters: %s, granularity %" PRId64
                       " KiB, threshold %" PRId64 ", base 0x%" PRIx64
                       " head %" PRId64 " tail %" PRId64 ", %" PRId64 "/%"
                       PRId64 " regions tracked, %" PRId64 " notified, %"
                       PRId64 " dropped\n",
                       qdict_get_bool(ac, "enabled") ? "enabled" : "disabled",
                       qdict_get_int(ac, "granularity") >> 10,
                       qdict_get_int(ac, "threshold"),
                       qdict_get_int(ac, "base"), qdict_get_int(ac, "head"),
                       qdict_get_int(ac, "tail"),
                       qdict_get_int(ac, "tracked"),
                       qdict_get_int(ac, "capacity"),
                       qdict_get_int(ac, "notified"),
                       qdict_get_int(ac, "dropped"));
    }
}

static void gmem_print_page_table(Monitor *mon, QDict *pt)
{
    const QListEntry *e;

    monitor_printf(mon, "  context %" PRId64 " (%s, root 0x%" PRIx64
                   " in %s memory): %zu runs, dump %s\n",
                   qdict_get_int(pt, "id"),
                   qdict_get_bool(pt, "enabled") ? "enabled" : "disabled",
                   qdict_get_int(pt, "root"), qdict_get_str(pt, "root-in"),
                   qlist_size(qdict_get_qlist(pt, "runs")),
                   qdict_get_str(pt, "dump"));
    monitor_printf(mon, "  %-29s %10s %4s %-4s %-25s %s\n", "VA range",
                   "size", "page", "perm", "target", "PTEs");
    QLIST_FOREACH_ENTRY(qdict_get_qlist(pt, "runs"), e) {
        QDict *r = qobject_to(QDict, qlist_entry_obj(e));
        uint64_t va = qdict_get_int(r, "va");

        monitor_printf(mon, "  0x%012" PRIx64 "-0x%012" PRIx64 " ", va,
                       va + qdict_get_int(r, "size"));
        gmem_print_size(mon, qdict_get_int(r, "size"));
        if (qdict_haskey(r, "error")) {
            monitor_printf(mon, " L%" PRId64 " entry 0x%016" PRIx64
                           " at %s 0x%" PRIx64 ": %s\n",
                           qdict_get_int(r, "level"), qdict_get_int(r, "pte"),
                           qdict_get_str(r, "pte-in"),
                           qdict_get_int(r, "pte-addr"),
                           qdict_get_str(r, "error"));
            continue;
        }
        monitor_printf(mon, " %4s %c%c%c  %-6s 0x%016" PRIx64 "  %" PRId64
                       " at %s 0x%" PRIx64 "\n",
                       gmem_page_size_name(qdict_get_int(r, "page-size")),
                       qdict_get_bool(r, "read") ? 'r' : '-',
                       qdict_get_bool(r, "write") ? 'w' : '-',
                       qdict_get_bool(r, "atomic") ? 'a' : '-',
                       qdict_get_str(r, "target-in"),
                       qdict_get_int(r, "target"), qdict_get_int(r, "pages"),
                       qdict_get_str(r, "pte-in"),
                       qdict_get_int(r, "pte-addr"));
    }
}

typedef struct GmemInfoArgs {
    Monitor *mon;
    const char *id;
    int64_t ctx;            /* -1: no page table */
    uint64_t va, size;
    unsigned found;
} GmemInfoArgs;

static int gmem_info_one(Object *obj, void *opaque)
{
    GmemInfoArgs *a = opaque;
    GmemAccelState *s;
    g_autofree char *path = NULL;
    const char *id;

    if (!object_dynamic_cast(obj, TYPE_GMEM_ACCEL)) {
        return 0;
    }
    s = GMEM_ACCEL(obj);
    id = DEVICE(s)->id;
    if (a->id && g_strcmp0(a->id, id)) {
        return 0;
    }
    a->found++;
    path = object_get_canonical_path(obj);
    monitor_printf(a->mon, "%s (%s), PCI %02x:%02x.%x\n", id ?: "(no id)",
                   path, pci_dev_bus_num(PCI_DEVICE(s)),
                   PCI_SLOT(PCI_DEVICE(s)->devfn),
                   PCI_FUNC(PCI_DEVICE(s)->devfn));
    if (a->ctx < 0) {
        QDict *st = gmem_state_dict(s);

        gmem_print_state(a->mon, st);
        qobject_unref(st);
    } else {
        uint64_t end = a->size ? a->va + a->size : UINT64_MAX;
        QDict *pt = gmem_page_table_dict(s, a->ctx, a->va,
                                         end < a->va ? UINT64_MAX : end);

        gmem_print_page_table(a->mon, pt);
        qobject_unref(pt);
    }
    return 0;
}

static void hmp_info_gmem_accel(Monitor *mon, const QDict *qdict)
{
    GmemInfoArgs a = {
        .mon = mon,
        .id = qdict_get_try_str(qdict, "id"),
        .ctx = qdict_get_try_int(qdict, "ctx", -1),
        .va = qdict_get_try_int(qdict, "va", 0),
        .size = qdict_get_try_int(qdict, "size", 0),
    };

    if (a.ctx >= GMEM_NUM_CONTEXTS || a.ctx < -1) {
        monitor_printf(mon, "context %" PRId64 " does not exist: give 0-%d\n",
                       a.ctx, GMEM_NUM_CONTEXTS - 1);
        return;
    }
    if (a.ctx >= 0 && !a.id) {
        monitor_printf(mon, "give a device id with a context\n");
        return;
    }
    object_child_foreach_recursive(object_get_root(), gmem_info_one, &a);
    if (!a.found) {
        monitor_printf(mon, a.id ? "no gmem-accel device with id '%s'\n"
                                 : "no gmem-accel device%s\n",
                       a.id ?: "");
    }
}

static void gmem_print_hbm_map(Monitor *mon, QDict *d)
{
    QList *list = qdict_get_qlist(d, "mappings");
    const QListEntry *e;

    monitor_printf(mon, "  HBM %" PRId64 " MiB: %zu runs map it, dump %s\n",
                   qdict_get_int(d, "hbm-size") >> 20, qlist_size(list),
                   qdict_get_str(d, "dump"));
    monitor_printf(mon, "  %-29s %10s %4s %3s  %-14s %s\n", "HBM range", "size",
                   "page", "ctx", "VA", "perm");
    QLIST_FOREACH_ENTRY(list, e) {
        QDict *m = qobject_to(QDict, qlist_entry_obj(e));
        uint64_t hbm = qdict_get_int(m, "hbm");

        monitor_printf(mon, "  0x%012" PRIx64 "-0x%012" PRIx64 " ", hbm,
                       hbm + qdict_get_int(m, "size"));
        gmem_print_size(mon, qdict_get_int(m, "size"));
        monitor_printf(mon, " %4s %3" PRId64 "  0x%012" PRIx64 " %c%c%c\n",
                       gmem_page_size_name(qdict_get_int(m, "page-size")),
                       qdict_get_int(m, "context"), qdict_get_int(m, "va"),
                       qdict_get_bool(m, "read") ? 'r' : '-',
                       qdict_get_bool(m, "write") ? 'w' : '-',
                       qdict_get_bool(m, "atomic") ? 'a' : '-');
    }
}

static int gmem_info_hbm_one(Object *obj, void *opaque)
{
    GmemInfoArgs *a = opaque;
    QDict *d;

    if (!object_dynamic_cast(obj, TYPE_GMEM_ACCEL) ||
        g_strcmp0(a->id, DEVICE(obj)->id)) {
        return 0;
    }
    a->found++;
    monitor_printf(a->mon, "%s:\n", a->id);
    d = gmem_hbm_map_dict(GMEM_ACCEL(obj));
    gmem_print_hbm_map(a->mon, d);
    qobject_unref(d);
    return 0;
}

static void hmp_info_gmem_accel_hbm(Monitor *mon, const QDict *qdict)
{
    GmemInfoArgs a = { .mon = mon, .id = qdict_get_str(qdict, "id") };

    object_child_foreach_recursive(object_get_root(), gmem_info_hbm_one, &a);
    if (!a.found) {
        monitor_printf(mon, "no gmem-accel device with id '%s'\n", a.id);
    }
}

void gmem_monitor_class_init(ObjectClass *klass)
{
    object_class_property_add(klass, "state", "any", gmem_get_state, NULL,
                              NULL, NULL);
    object_class_property_set_description(klass, "state",
        "contexts, queues, fault queue, counters and access counters "
        "(read-only)");
    object_class_property_add(klass, "hbm-map", "any", gmem_get_hbm_map, NULL,
                              NULL, NULL);
    object_class_property_set_description(klass, "hbm-map",
        "which context maps which HBM, where, with what page size: runs of "
        "every enabled context that target HBM, by HBM address (read-only)");
    for (uintptr_t c = 0; c < GMEM_NUM_CONTEXTS; c++) {
        g_autofree char *name = g_strdup_printf("page-table[%" PRIuPTR "]", c);

        object_class_property_add(klass, name, "any", gmem_get_page_table,
                                  NULL, NULL, (void *)c);
        object_class_property_set_description(klass, name,
            "this context's page table as runs of pages (read-only)");
    }
}

void gmem_monitor_register(void)
{
    monitor_register_hmp("gmem-accel", true, hmp_info_gmem_accel);
    monitor_register_hmp("gmem-accel-hbm", true, hmp_info_gmem_accel_hbm);
}
