/*
 * gmem-accel: the device's state for the monitor, as the read-only QOM
 * property "state" (QMP: qom-get path=/machine/peripheral/<id>
 * property=state; HMP: qom-get /machine/peripheral/<id> state).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "gmem-accel.h"

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

static QDict *gmem_queue_dict(GmemQueue *q, unsigned qid)
{
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

static QDict *gmem_state_dict(GmemAccelState *s)
{
    QDict *d = qdict_new(), *fq = qdict_new(), *cnt = qdict_new();
    QList *ctxs = qlist_new(), *queues = qlist_new();

    qdict_put_int(d, "hbm-size", s->hbm_size);
    qdict_put_int(d, "status", s->status);
    qdict_put_int(d, "error-code", s->error_code);
    qdict_put_int(d, "tlb-entries", s->tlb_entries);
    qdict_put_int(d, "tlb-valid", gmem_tlb_count(&s->tlb));
    for (unsigned c = 0; c < GMEM_NUM_CONTEXTS; c++) {
        QDict *cd;

        if (!s->ctx[c].ctrl && !s->ctx[c].root) {
            continue;   /* never programmed */
        }
        cd = qdict_new();
        qdict_put_int(cd, "id", c);
        qdict_put_bool(cd, "enabled", s->ctx[c].ctrl & GMEM_CTX_CTRL_ENABLE);
        qdict_put_int(cd, "root", s->ctx[c].root);
        qdict_put_bool(cd, "root-in-hbm",
                       s->ctx[c].ctrl & GMEM_CTX_CTRL_ROOT_HBM);
        qlist_append(ctxs, cd);
    }
    qdict_put(d, "contexts", ctxs);
    for (unsigned q = 0; q < GMEM_NUM_QUEUES; q++) {
        qlist_append(queues, gmem_queue_dict(&s->queue[q], q));
    }
    qdict_put(d, "queues", queues);
    qdict_put_bool(fq, "enabled", s->fq_ctrl & GMEM_FQ_CTRL_ENABLE);
    qdict_put_int(fq, "base", s->fq_base);
    qdict_put_int(fq, "head", s->fq_head);
    qdict_put_int(fq, "tail", s->fq_tail);
    qdict_put_bool(fq, "overflow", s->fq_overflow);
    qdict_put(d, "fault-queue", fq);
    for (unsigned i = 0; i < GMEM_NUM_COUNTERS; i++) {
        qdict_put_int(cnt, gmem_counter_names[i], s->counters[i]);
    }
    qdict_put(d, "counters", cnt);
    return d;
}

static void gmem_get_state(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    QObject *state = QOBJECT(gmem_state_dict(GMEM_ACCEL(obj)));

    visit_type_any(v, name, &state, errp);
    qobject_unref(state);
}

void gmem_monitor_init(GmemAccelState *s)
{
    object_property_add(OBJECT(s), "state", "any", gmem_get_state, NULL,
                        NULL, NULL);
    object_property_set_description(OBJECT(s), "state",
        "contexts, queues, fault queue and counters (read-only)");
}
