// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the fault queue. The fault interrupt wakes a fault worker, which (with
 * the processes waiting for their batches, gmem_accel_wait.c) takes the queue's groups one
 * at a time (a group = the pages one stalled command needs; groups of different contexts are
 * serviced at once by different threads), has their pages faulted in and mapped
 * (gmem_accel_hmm.c; an object's, gmem_accel_obj_map.c) and answers REPLAY. A fault the
 * process's mappings cannot satisfy is answered CANCEL and the command fails with the errno
 * hmm_range_fault() gave (EFAULT, EPERM); one that keeps faulting fails with EBUSY (the
 * replay rule, gmem_fault_progress()).
 */
#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sort.h>

#include "gmem_accel_ctx.h"
#include "gmem_accel_pt.h"
#include "gmem_accel_fault.h"
#include "gmem_accel_obj.h"
#include "gmem_accel_prefetch.h"
#include "gmem_accel_replay.h"
#include "gmem_accel_advice.h"
#include "gmem_accel_thrashing.h"
#include "gmem_accel_oversub.h"
#include "gmem_accel_trace.h"

static void gmem_fault_read(struct gmem_accel *g, u32 idx, struct gmem_fault *f)
{
	const struct gmem_fault_record *rec = &g->fq[idx];

	f->va = le64_to_cpu(rec->va);
	f->ctx = le16_to_cpu(rec->ctx);
	f->group = le16_to_cpu(rec->group);
	f->slot = le16_to_cpu(rec->slot);
	f->access = rec->access;
	f->engine = rec->engine;
	f->flags = rec->flags;
}

bool gmem_fault_writes(const struct gmem_fault *f)
{
	return f->access & (GMEM_ACCESS_WRITE | GMEM_ACCESS_ATOMIC);
}

/* The leaf permissions beyond READ the access of @f needs (GMEM_PTE_WRITE, _ATOMIC). */
u64 gmem_fault_perm(const struct gmem_fault *f)
{
	if (f->access & GMEM_ACCESS_ATOMIC)
		return GMEM_PTE_WRITE | GMEM_PTE_ATOMIC;
	return f->access & GMEM_ACCESS_WRITE ? GMEM_PTE_WRITE : 0;
}

static int gmem_fault_cmp(const void *a, const void *b)
{
	const struct gmem_fault *x = a, *y = b;

	return x->va < y->va ? -1 : x->va > y->va;
}

/*
 * Is this thread the context's own process, killed? Its faults then end at once (its
 * handle_mm_fault() gives up on a fatal signal, and hmm_range_fault() would retry for a
 * second per window). Another process's faults, served on this thread, go on.
 */
bool gmem_owner_dying(struct gmem_ctx *ctx)
{
	return current->mm == ctx->mm && fatal_signal_pending(current);
}

/*
 * Does the device page table now give every fault of the group the access it asked for? A
 * REPLAY that would only fault again is no progress (see gmem_fault_answer()).
 */
static bool gmem_fault_granted(struct gmem_ctx *ctx, const struct gmem_fault *f, unsigned int n)
{
	for (unsigned int k = 0; k < n; k++)
		if (!gmem_pt_maps_all(ctx, f[k].va, f[k].va + PAGE_SIZE, gmem_fault_perm(&f[k])))
			return false;
	return true;
}

/*
 * Service one group of faults of context @ctx; 0 or the errno to fail its command with,
 * -EAGAIN if every step succeeded and still not every page is mapped as asked (a CPU
 * change raced it, or a page the kernel would not give as asked).
 */
static int gmem_fault_group(struct gmem_ctx *ctx, struct gmem_fault *f, unsigned int n,
			    unsigned long *req, unsigned long *pfns)
{
	bool served = false;
	unsigned int i = 0;
	int ret = 0;

	if (!mmget_not_zero(ctx->mm))
		return -EFAULT;		/* the process is exiting */
	/* A PREFER_DEVICE page migrates with the mm's lock taken for writing: tell lockdep. */
	might_lock(&ctx->mm->mmap_lock);
	sort(f, n, sizeof(*f), gmem_fault_cmp, NULL);
	if (ctx->fault_hook) {
		ret = ctx->fault_hook(ctx, f, n, req, pfns);
		served = ret > 0;
		if (ret == GMEM_FAULT_HOOK_ALL)
			i = n;
		ret = min(ret, 0);
	}
	while (i < n && !ret) {
		unsigned long first, last;
		bool remote = false;
		unsigned int k, w;
		u64 start, end;

		/*
		 * Brought in by the hook, unless that did not give the access this fault wants
		 * (the ranges of a copy may overlap: a write into the read-only source).
		 */
		if (served &&
		    gmem_pt_maps_all(ctx, f[i].va, f[i].va + PAGE_SIZE, gmem_fault_perm(&f[i]))) {
			i++;
			continue;
		}

		/* In a mapping of a device memory object: its pages, not hmm's. */
		ret = gmem_obj_fault(ctx, f[i].va & PAGE_MASK, gmem_fault_writes(&f[i]), &start,
				     &end);
		if (ret != -ENOENT) {
			while (!ret && i < n && f[i].va >= start && f[i].va < end)
				i++;
			continue;
		}
		ret = gmem_fault_window(ctx, f[i].va & PAGE_MASK, &start, &end);
		if (ret)
			break;
		if (gmem_prefers_device(ctx, f[i].va)) {
			/* A thrashing page: throttled (-ETIME: a nap, then REPLAY), or pinned. */
			switch (gmem_thrashing_fault(ctx, f + i, n - i, end, &ctx->thrash_nap_us)) {
			case GMEM_THRASH_THROTTLE:
				ret = -ETIME;
				continue;
			case GMEM_THRASH_NONE:
				/* HBM oversubscribed: mapped where it is. */
				remote = gmem_oversub_remote(ctx, start);
				if (!remote)
					gmem_fault_migrate(ctx, start, end);
				break;
			case GMEM_THRASH_PIN:
				break;
			}
		}
		/* Every fault of the group in this window (they are sorted) is requested here. */
		first = (f[i].va - start) >> PAGE_SHIFT;
		for (k = i; k < n && f[k].va >= start && f[k].va < end; k++)
			;
		last = ((f[k - 1].va - start) >> PAGE_SHIFT) + 1;
		memset(req + first, 0, (last - first) * sizeof(*req));
		for (w = i; i < k; i++) {
			unsigned long p = (f[i].va - start) >> PAGE_SHIFT;

			req[p] |= HMM_PFN_REQ_FAULT;
			if (gmem_fault_writes(&f[i]))
				req[p] |= HMM_PFN_REQ_WRITE;
		}
		ret = gmem_fault_range(ctx, start, end, first, last, req, pfns);
		/* (the whole window instead of the migration it stands for: no prefetch) */
		if (!ret && remote)
			gmem_map_window(ctx, start, end, req, pfns);
		else if (!ret)
			gmem_prefetch(ctx, start, end, f + w, k - w, req, pfns);
		cond_resched();
	}
	/* Injected (debugfs): the pages are gone again before the replay, as if the CPU took them. */
	if (!ret && atomic_dec_if_positive(&ctx->g->inject_stalls) >= 0)
		gmem_pt_unmap(ctx, f[0].va, f[0].va + PAGE_SIZE);
	if (!ret && !gmem_fault_granted(ctx, f, n))
		ret = -EAGAIN;
	mmput(ctx->mm);
	return ret;
}

/*
 * The rule for replaying: a group whose pages are all mapped as asked is replayed; one that
 * is not (-EAGAIN) is replayed too, but only GMEM_FAULT_STALLS times in a row for one
 * command: then the command fails with EBUSY instead of faulting forever (the pages cannot
 * be mapped as asked). A group whose faulting step's own page is mapped as asked counts as
 * progress (the command moves on from there), however many of the others it lost again.
 *
 * Contention is no failure: a group that lost its pages (-EAGAIN, or -EBUSY from a range
 * that kept changing) while an invalidation of its context ran (@contended: another
 * thread's migration, munmap, the CPU's fault) is replayed without counting as a stall; from
 * the fifth such replay in a row its server naps first, longer each time up to
 * GMEM_FAULT_NAP_MAX_MS, as UVM throttles a thrashing processor, so the other side's change
 * can finish. Only GMEM_FAULT_CONTENDED of those in a row fail it (EBUSY). Any other error
 * cancels at once. The errno is kept in the command's slot, where the reaper finds it with
 * the command's FAULT status. The nap to take, in ms, to *@nap_ms.
 */
#define GMEM_STALLS_MASK	0xffffu
#define GMEM_CONTENDED_SHIFT	16

static int gmem_fault_progress(struct gmem_queue *q, u16 slot, int err, bool contended,
			       unsigned int *nap_ms)
{
	u32 packed = READ_ONCE(q->slot_stalls[slot]);
	u32 stalls = packed & GMEM_STALLS_MASK, busy = packed >> GMEM_CONTENDED_SHIFT;

	*nap_ms = 0;
	if ((err == -EAGAIN || err == -EBUSY) && contended) {
		if (++busy >= GMEM_FAULT_CONTENDED)
			err = -EBUSY;
		else
			err = 0;
		if (busy > 4)
			*nap_ms = min(1u << min(busy - 5, 4u), GMEM_FAULT_NAP_MAX_MS);
	} else if (err == -EAGAIN) {
		err = ++stalls >= GMEM_FAULT_STALLS ? -EBUSY : 0;
		busy = 0;
	} else if (!err) {
		stalls = 0;
		busy = 0;
	}
	WRITE_ONCE(q->slot_stalls[slot], stalls | busy << GMEM_CONTENDED_SHIFT);
	if (err)
		WRITE_ONCE(q->slot_err[slot], err);
	return err;
}

/*
 * Test hook (debugfs inject_fault_hold): armed (1), the next group serviced waits, holding
 * (2), until the value is set to 0 again (or its process is killed), as if its pages were
 * slow to come.
 */
static void gmem_fault_inject_hold(struct gmem_accel *g)
{
	if (atomic_cmpxchg(&g->inject_fault_hold, GMEM_INJECT_HOLD_ARMED,
			   GMEM_INJECT_HOLD_HOLDING) != GMEM_INJECT_HOLD_ARMED)
		return;
	while (atomic_read(&g->inject_fault_hold) && !fatal_signal_pending(current) &&
	       !READ_ONCE(g->unbinding))
		msleep(20);
}

/*
 * Service group @f (@n faults) and decide its answer into @a, which holds its context until
 * gmem_fault_respond() sends it. Servers of different contexts' groups run at once;
 * ctx->fault_mutex keeps one context's scratch to one of them.
 */
void gmem_fault_service(struct gmem_accel *g, struct gmem_fault *f, unsigned int n,
			struct gmem_answer *a)
{
	bool interrupted = false, contended = false;
	struct gmem_ctx *ctx;
	int err = -ENXIO;

	gmem_fault_inject_hold(g);
	a->thrash_nap_us = 0;
	ctx = gmem_ctx_get(g, f[0].ctx);
	if (ctx) {
		/* The device posts the faulting step's fault first; servicing sorts the group. */
		struct gmem_fault first = f[0];
		s64 invalidations;
		int srcu;

		mutex_lock(&ctx->fault_mutex);
		srcu = gmem_notifiers_enter();
		invalidations = atomic64_read(&ctx->stats[GMEM_CTX_INVALIDATIONS]);
		err = gmem_fault_group(ctx, f, n, ctx->fault_req, ctx->fault_pfns);
		contended = invalidations != atomic64_read(&ctx->stats[GMEM_CTX_INVALIDATIONS]);
		gmem_notifiers_exit(srcu);
		if (err == -EAGAIN && gmem_pt_maps_all(ctx, first.va, first.va + PAGE_SIZE,
						       gmem_fault_perm(&first)))
			err = 0;
		/* Throttled for thrashing (gmem_accel_thrashing.c): replayed after its nap. */
		if (err == -ETIME) {
			a->thrash_nap_us = ctx->thrash_nap_us;
			err = 0;
		}
		/*
		 * The serving thread's own signal is not the command's failure: only its
		 * owner's death cancels it. Replayed, the fault comes back, to a fault worker
		 * (a waiter with a signal pending stops serving), and counts as no stall.
		 */
		if ((err == -EINTR || err == -ERESTARTSYS) && !gmem_owner_dying(ctx)) {
			gmem_dev_count(g, GMEM_DEV_FAULT_GROUPS_INTERRUPTED, 1);
			interrupted = true;
			err = 0;
		}
		mutex_unlock(&ctx->fault_mutex);
	}
	a->nap_ms = 0;
	if (!interrupted && f[0].engine < GMEM_NUM_QUEUES && f[0].slot < BIT(GMEM_CQ_LOG2))
		err = gmem_fault_progress(&g->queue[f[0].engine], f[0].slot, err, contended,
					  &a->nap_ms);
	else if (err == -EAGAIN)
		err = -EBUSY;
	a->ctx = ctx;
	a->first = f[0];
	a->n = n;
	a->err = err;
}

/* Send the answer gmem_fault_service() decided, after its nap if it has one. */
void gmem_fault_respond(struct gmem_accel *g, struct gmem_answer *a)
{
	const struct gmem_fault *f = &a->first;
	struct gmem_ctx *ctx = a->ctx;
	int err = a->err;
	bool gone;
	u32 resp;

	resp = f->group | (err ? GMEM_RESP_CANCEL : GMEM_RESP_REPLAY) << GMEM_RESP_SHIFT;
	gone = !ctx || READ_ONCE(ctx->stopped);
	if (ctx) {
		gmem_ctx_count(ctx, GMEM_CTX_FAULTS, a->n);
		gmem_ctx_count(ctx, GMEM_CTX_FAULT_GROUPS, 1);
		gmem_ctx_count(ctx, err ? GMEM_CTX_CANCELS : GMEM_CTX_REPLAYS, 1);
		gmem_ctx_put(ctx);
		a->ctx = NULL;
	}
	gmem_dev_count(g, GMEM_DEV_FAULT_GROUPS, 1);
	gmem_dev_count(g, err ? GMEM_DEV_CANCELS : GMEM_DEV_REPLAYS, 1);
	trace_gmem_accel_fault_group(f->ctx, f->group, a->n, f->va, f->access, err);
	dev_dbg(&g->pdev->dev, "fault group %u: context %u, %u pages from %#llx: %s (%d)\n",
		f->group, f->ctx, a->n, f->va, err ? "cancel" : "replay", err);
	/* The group of a queue dropped at close (gmem_queue_stop()) is the device's no more. */
	if (gone && (f->engine >= GMEM_NUM_QUEUES ||
		     gmem_read(g, GMEM_REG_QUEUE(f->engine, GMEM_CQ_STATE)) !=
		     GMEM_CQ_STATE_STALLED))
		return;
	gmem_write(g, GMEM_REG_FAULT_RESPONSE, resp);
}

/* Service group @f (@n faults) and answer it at once (replay policy block). */
static void gmem_fault_answer(struct gmem_accel *g, struct gmem_fault *f, unsigned int n)
{
	struct gmem_answer a;

	gmem_fault_service(g, f, n, &a);
	if (a.nap_ms) {
		gmem_dev_count(g, GMEM_DEV_FAULT_THROTTLES, 1);
		msleep(a.nap_ms);
	}
	gmem_thrashing_nap(a.thrash_nap_us);
	/* (counted first: a process that sees its command done sees the count) */
	gmem_dev_count(g, GMEM_DEV_REPLAY_BATCHES, 1);
	gmem_dev_count(g, GMEM_DEV_REPLAY_BATCH_GROUPS, 1);
	gmem_fault_respond(g, &a);
}

/*
 * Where the first group not yet taken of context @want starts, between the fault queue's
 * head and @tail; the head if it has none (or @want is -1). Called with fault_lock held.
 */
static u32 gmem_fault_find(struct gmem_accel *g, u32 tail, int want)
{
	u32 mask = (1u << GMEM_FQ_LOG2) - 1, i = g->fq_head, start = i;
	bool seek = want >= 0;

	while (seek && i != tail) {
		struct gmem_fault f;

		gmem_fault_read(g, i, &f);
		if (i == start && !test_bit(i, g->fq_taken) && f.ctx == want)
			return start;
		i = (i + 1) & mask;
		if (f.flags & GMEM_FAULT_F_LAST)
			start = i;
	}
	return g->fq_head;
}

/* Records gmem_fault_unserved() looks at before it assumes one needs a worker. */
#define GMEM_FAULT_SCAN_MAX	64

/*
 * Does a record between fq_head and @tail, not taken, belong to a context nobody serves? A
 * context whose waiting process serves it (ctx_serving) takes its own group; a worker woken
 * for it would only preempt a running process and find nothing to do. Under fault_lock.
 */
static bool gmem_fault_unserved(struct gmem_accel *g, u32 tail)
{
	u32 mask = (1u << GMEM_FQ_LOG2) - 1;
	unsigned int seen = 0;

	for (u32 i = g->fq_head; i != tail; i = (i + 1) & mask) {
		struct gmem_fault f;

		if (++seen > GMEM_FAULT_SCAN_MAX)
			return true;
		if (test_bit(i, g->fq_taken))
			continue;
		gmem_fault_read(g, i, &f);
		if (f.ctx >= GMEM_NUM_CONTEXTS || !test_bit(f.ctx, g->ctx_serving))
			return true;
	}
	return false;
}

/*
 * Take a complete group off the fault queue into @group (GMEM_FAULT_GROUP_MAX entries;
 * records beyond are dropped and counted): the first one of context @want if there is one,
 * else the oldest; how many faults it has, 0 if the queue holds no complete group. The device
 * posts a group whole, then moves FQ_TAIL. *@more: the queue holds records of a context no
 * waiting process serves.
 *
 * A process waiting for its batch takes its own group first: taking the oldest, it would
 * serve another's while its own went to a third server, and sleep until that one was done.
 * A group taken out of order stays in the ring, marked in fq_taken, until the head passes
 * it.
 */
unsigned int gmem_fault_take(struct gmem_accel *g, struct gmem_fault *group, int want,
			     bool *more)
{
	u32 mask = (1u << GMEM_FQ_LOG2) - 1;
	unsigned int n = 0;
	u32 tail, i;

	*more = false;
	mutex_lock(&g->fault_lock);
	if (!g->regs)
		goto out;
	tail = gmem_read(g, GMEM_REG_FQ_TAIL);
	if (tail == g->fq_head)
		goto out;	/* (FQ_HEAD unwritten: the device takes a write as room made) */
	/* A device reset under us empties the queue: the watchdog sets it up again. */
	if (tail > mask || !(gmem_read(g, GMEM_REG_FQ_CTRL) & GMEM_FQ_CTRL_ENABLE))
		goto out;
	dma_rmb();
	for (i = gmem_fault_find(g, tail, want); i != tail; ) {
		struct gmem_fault f;

		gmem_fault_read(g, i, &f);
		set_bit(i, g->fq_taken);
		i = (i + 1) & mask;
		gmem_dev_count(g, GMEM_DEV_FAULT_RECORDS, 1);
		if (n < GMEM_FAULT_GROUP_MAX)
			group[n++] = f;
		else
			gmem_dev_count(g, GMEM_DEV_FAULT_RECORDS_DROPPED, 1);
		if (f.flags & GMEM_FAULT_F_LAST)
			break;
	}
	/* (a group the device left unfinished is dropped: it posts groups whole) */
	if (!n || !(group[n - 1].flags & GMEM_FAULT_F_LAST))
		n = 0;
	/* Past what is taken: a group waiting for room in the queue can be posted now. */
	while (g->fq_head != tail && test_bit(g->fq_head, g->fq_taken)) {
		clear_bit(g->fq_head, g->fq_taken);
		WRITE_ONCE(g->fq_head, (g->fq_head + 1) & mask);
	}
	gmem_write(g, GMEM_REG_FQ_HEAD, g->fq_head);
	*more = gmem_fault_unserved(g, tail);
out:
	mutex_unlock(&g->fault_lock);
	return n;
}

/* Records in the fault queue the driver has not consumed? A look, without fault_lock. */
bool gmem_fault_pending(struct gmem_accel *g)
{
	return g->regs && gmem_read(g, GMEM_REG_FQ_TAIL) != READ_ONCE(g->fq_head);
}

/*
 * More groups wait than the caller is about to service: set an idle fault worker on them, so
 * that one slow group (a page the kernel has to read in, a migration) does not hold up the
 * others. Any context.
 */
void gmem_fault_kick(struct gmem_accel *g)
{
	unsigned int i;

	for (i = 0; i < GMEM_FAULT_WORKERS - 1; i++)
		if (!test_bit(i, &g->fault_workers_busy))
			break;
	queue_work(g->wq, &g->fault_worker[i].work);
}

/*
 * A process that waits for its batch serves the faults the batch raises on its own thread
 * (gmem_fault_serve): the device posts them as the doorbell is written, and handing them to
 * the fault worker costs a wake-up of another CPU each way, most of a fault's round trip.
 * Between gmem_fault_serve_begin() and _end() it counts as a server: the fault interrupt
 * leaves the queue to the servers (fault_irq_left), and the last one out looks at what it
 * left.
 *
 * The interrupt itself is held by the doorbell of the batch the process serves
 * (CQ_TAIL_FAULT_HOLD), for its queue's groups: taken on another CPU, it would only find the
 * records gone, and cost the fault's round trip a wake-up. The hold is part of the doorbell
 * write, so it costs no MMIO access of its own. A process that stops serving before its
 * batch is done rings the doorbell again without the hold (gmem_fence_wake()), which raises
 * the interrupt for any record left.
 */
void gmem_fault_serve_begin(struct gmem_accel *g)
{
	atomic_inc(&g->fault_servers);
}

/* Stop counting as a server; true if the last one out, with records the interrupt left. */
static bool gmem_fault_serve_leave(struct gmem_accel *g)
{
	/* (fully ordered) Pairs with gmem_fault_irq(): it kicks a worker, or we see its flag. */
	if (atomic_dec_return(&g->fault_servers))
		return false;
	return xchg(&g->fault_irq_left, false);
}

/*
 * How many complete groups not taken wait in the fault queue, oldest first, as long as their
 * faults stay below @max_faults (the first one counts whatever its size).
 */
unsigned int gmem_fault_ready(struct gmem_accel *g, unsigned int max_faults)
{
	u32 mask = (1u << GMEM_FQ_LOG2) - 1, tail;
	unsigned int groups = 0, faults = 0, in_group = 0;

	mutex_lock(&g->fault_lock);
	if (!g->regs)
		goto out;
	tail = gmem_read(g, GMEM_REG_FQ_TAIL);
	if (tail > mask)
		goto out;
	dma_rmb();
	for (u32 i = g->fq_head; i != tail; i = (i + 1) & mask) {
		struct gmem_fault f;

		if (test_bit(i, g->fq_taken))
			continue;
		gmem_fault_read(g, i, &f);
		in_group++;
		if (!(f.flags & GMEM_FAULT_F_LAST))
			continue;
		if (groups && faults + in_group > max_faults)
			break;
		faults += in_group;
		in_group = 0;
		groups++;
	}
out:
	mutex_unlock(&g->fault_lock);
	return groups;
}

/*
 * Answer the complete groups in the fault queue, GMEM_FAULT_BUDGET at most, taking them one
 * at a time into @group (others may take the next meanwhile); how many. A @waiter, a process
 * waiting for context @want's batch (gmem_fault_serve()), answers one group at most, its own
 * if it can, and stops counting as a server when it takes one: the fault interrupt then wakes
 * a worker for groups posted meanwhile, instead of leaving them to it. A fault worker (with
 * its @answers) answers as the replay policy says (gmem_replay_drain()).
 */
static unsigned int gmem_fault_drain(struct gmem_accel *g, struct gmem_fault *group, bool waiter,
				     int want, struct gmem_answer *answers)
{
	unsigned int n, groups = 0, budget = waiter ? 1 : GMEM_FAULT_BUDGET;
	bool more;

	if (answers && gmem_replay_batching())
		groups = gmem_replay_drain(g, group, answers);
	else
		while (groups < budget && (n = gmem_fault_take(g, group, want, &more))) {
			/* (the interrupt's records are often the group just taken: look first) */
			if (waiter && gmem_fault_serve_leave(g) && !more)
				more = gmem_fault_pending(g);
			if (more)
				gmem_fault_kick(g);
			gmem_fault_answer(g, group, n);
			groups++;
			/* A queue of groups can take long on a slow host: let others run. */
			cond_resched();
		}
	/* The device looks for room again when FQ_HEAD is written, moved or not. */
	if (xchg(&g->fq_overflowed, false)) {
		mutex_lock(&g->fault_lock);
		if (g->regs)
			gmem_write(g, GMEM_REG_FQ_HEAD, g->fq_head);
		mutex_unlock(&g->fault_lock);
	}
	return groups;
}

/*
 * A fault group waits for room in the fault queue (error FAULT_OVERFLOW, or FQ_STATUS seen by
 * the watchdog): the worker drains the queue and writes FQ_HEAD, which the device waits for.
 * Any context.
 */
void gmem_fault_overflow(struct gmem_accel *g)
{
	if (!xchg(&g->fq_overflowed, true))
		gmem_dev_count(g, GMEM_DEV_FAULT_QUEUE_OVERFLOWS, 1);
	gmem_fault_kick(g);
}

void gmem_fault_work(struct work_struct *work)
{
	struct gmem_fault_worker *w = container_of(work, struct gmem_fault_worker, work);
	struct gmem_accel *g = w->g;
	unsigned int id = w - g->fault_worker, groups;

	set_bit(id, &g->fault_workers_busy);
	groups = gmem_fault_drain(g, w->group, false, -1, w->answers);
	clear_bit(id, &g->fault_workers_busy);
	if (groups == GMEM_FAULT_BUDGET)
		queue_work(g->wq, work);	/* more, after others have run */
}

/* Records left in the queue that no waiting process serves? (gmem_fault_unserved()) */
bool gmem_fault_left_unserved(struct gmem_accel *g)
{
	bool left = false;
	u32 tail;

	if (!gmem_fault_pending(g))
		return false;
	mutex_lock(&g->fault_lock);
	if (g->regs) {
		tail = gmem_read(g, GMEM_REG_FQ_TAIL);
		left = tail <= (1u << GMEM_FQ_LOG2) - 1 && gmem_fault_unserved(g, tail);
	}
	mutex_unlock(&g->fault_lock);
	return left;
}

/*
 * The last server out looks at the queue only if the fault interrupt left records to the
 * servers: a held queue's records are its waiter's, and one that stops serving early
 * releases them. Each look is an MMIO read, an exit to the hypervisor on every mapped
 * page's access.
 */
void gmem_fault_serve_end(struct gmem_accel *g)
{
	if (gmem_fault_serve_leave(g) ? gmem_fault_pending(g) : gmem_fault_left_unserved(g))
		gmem_fault_kick(g);
}

/*
 * Serve the fault queue beside whoever else does, after gmem_fault_serve_begin(): answer one
 * group, @ctx's if there is one, as no server any more (true), or none, still one (false).
 */
bool gmem_fault_serve(struct gmem_ctx *ctx, struct gmem_fault *group)
{
	struct gmem_accel *g = ctx->g;
	unsigned int groups = gmem_fault_drain(g, group, true, ctx->id, NULL);

	gmem_dev_count(g, GMEM_DEV_FAULT_GROUPS_BY_WAITER, groups);
	return groups;
}
