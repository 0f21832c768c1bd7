/*
 * gmem-accel: the data mover. The engines translate, map and account a
 * COPY's steps under the BQL; the bytes themselves move on worker threads
 * without it, a batch of runs split between up to 'movers' threads, as a
 * real engine's data path runs beside its command processor. The bytes
 * never need the BQL; copied under it, they would hold it for the copy's
 * whole time, less the pauses the engine takes so that vCPUs get the lock
 * (exec.c).
 *
 * A batch (up to 16 MiB: each batch costs two thread hand-offs, so batches
 * are large) is one queue's (the queue waits for it); its runs were
 * translated before, so anything that may take a translation away — a TLB
 * invalidation, a context or queue change, a reset, a stopped VM — waits for
 * the batch first (gmem_mover_finish()), as an ATS invalidation completes
 * only after the accesses that used the old translation.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/main-loop.h"
#include "block/thread-pool.h"
#include "gmem-accel.h"
#include "trace.h"

/* Does [@p, @p + @len) meet an interval of @root? */
static bool gmem_meets(IntervalTreeRoot *root, const uint8_t *p, uint64_t len)
{
    return interval_tree_iter_first(root, (uintptr_t)p,
                                    (uintptr_t)p + len - 1);
}

static void gmem_note(IntervalTreeRoot *root, IntervalTreeNode *n,
                      const uint8_t *p, uint64_t len)
{
    n->start = (uintptr_t)p;
    n->last = (uintptr_t)p + len - 1;
    interval_tree_insert(n, root);
}

/*
 * Take a COPY step of queue @qid on translated targets @tgt into the batch;
 * false if the mover cannot: off, another queue's batch, full, not RAM on
 * both sides, or meeting a run already taken (the runs of a batch move in
 * any order, so none may write what another reads or writes).
 */
bool gmem_mover_add(GmemAccelState *s, unsigned qid, const GmemTarget *tgt,
                    uint64_t len)
{
    GmemMover *m = &s->mover;
    GmemMoverRun *r;
    uint8_t *p[2];

    if (!s->movers || m->in_flight || (m->qid >= 0 && m->qid != qid) ||
        m->nruns == GMEM_MOVER_MAX_RUNS ||
        m->bytes + len > GMEM_MOVER_MAX_BYTES ||
        !gmem_copy_map(s, tgt, len, p)) {
        return false;
    }
    if (gmem_meets(&m->written, p[1], len) ||
        gmem_meets(&m->read, p[1], len) ||
        gmem_meets(&m->written, p[0], len)) {
        gmem_copy_unmap(s, tgt, len, p, false);
        return false;
    }
    r = &m->run[m->nruns++];
    *r = (GmemMoverRun) {
        .ptr = { p[0], p[1] },
        .tgt = { tgt[0], tgt[1] },
        .len = len,
    };
    gmem_note(&m->read, &r->read, p[0], len);
    gmem_note(&m->written, &r->written, p[1], len);
    m->qid = qid;
    m->bytes += len;
    s->counters[GMEM_CNT_BYTES] += len;
    return true;
}

/* Does queue @qid wait for the mover (or is its batch being built)? */
bool gmem_mover_holds(GmemAccelState *s, unsigned qid)
{
    return s->mover.qid == (int)qid;
}

static int gmem_mover_task(void *opaque)
{
    GmemMoverTask *t = opaque;
    GmemMover *m = &t->s->mover;

    for (unsigned i = t->first; i < t->first + t->n; i++) {
        memmove(m->run[i].ptr[1], m->run[i].ptr[0], m->run[i].len);
    }
    if (qatomic_fetch_dec(&m->pending) == 1) {
        qemu_bh_schedule(m->done_bh);
    }
    return 0;
}

/* Hand the batch built for its queue to the worker threads. */
void gmem_mover_start(GmemAccelState *s)
{
    GmemMover *m = &s->mover;
    unsigned n = m->nruns, tasks = MIN(s->movers, n);

    if (!n || m->in_flight) {
        return;
    }
    trace_gmem_accel_mover_start(m->qid, n, m->bytes, tasks);
    m->in_flight = true;
    m->batches++;
    qatomic_set(&m->pending, tasks);
    for (unsigned i = 0; i < tasks; i++) {
        m->task[i] = (GmemMoverTask) {
            .s = s,
            .first = i * n / tasks,
            .n = (i + 1) * n / tasks - i * n / tasks,
        };
        thread_pool_submit(m->pool, gmem_mover_task, &m->task[i], NULL);
    }
}

/*
 * Wait for the batch's copies, then unmap its runs (marking what they wrote
 * dirty) and let its queue go on. Called with the BQL, which the copies do
 * not need.
 */
void gmem_mover_finish(GmemAccelState *s)
{
    GmemMover *m = &s->mover;

    if (m->qid < 0) {
        return;
    }
    gmem_mover_start(s);    /* its steps are accounted: they must move */
    thread_pool_wait(m->pool);
    for (unsigned i = 0; i < m->nruns; i++) {
        GmemMoverRun *r = &m->run[i];

        gmem_copy_unmap(s, r->tgt, r->len, r->ptr, true);
    }
    trace_gmem_accel_mover_done(m->qid, m->nruns, m->bytes);
    m->nruns = 0;
    m->bytes = 0;
    m->read = m->written = (IntervalTreeRoot) {};
    m->qid = -1;
    m->in_flight = false;
    qemu_bh_schedule(s->engine_bh);     /* the queue goes on */
}

static void gmem_mover_done_bh(void *opaque)
{
    gmem_mover_finish(opaque);
}

void gmem_mover_realize(GmemAccelState *s)
{
    GmemMover *m = &s->mover;

    m->qid = -1;
    m->run = g_new0(GmemMoverRun, GMEM_MOVER_MAX_RUNS);
    m->done_bh = qemu_bh_new_guarded(gmem_mover_done_bh, s,
                                     &DEVICE(s)->mem_reentrancy_guard);
    if (s->movers) {
        m->pool = thread_pool_new();
        thread_pool_set_max_threads(m->pool, s->movers);
    }
}

void gmem_mover_unrealize(GmemAccelState *s)
{
    GmemMover *m = &s->mover;

    gmem_mover_finish(s);
    if (m->pool) {
        thread_pool_free(m->pool);
        m->pool = NULL;
    }
    qemu_bh_delete(m->done_bh);
    g_free(m->run);
}
