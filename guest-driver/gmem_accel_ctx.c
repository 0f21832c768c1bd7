// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: contexts. Each open file mirrors its process's address space into one
 * device context: a device page table the driver owns (gmem_accel_pt.c), kept coherent with
 * the CPU's by MMU notifiers (gmem_accel_notifier.c).
 */
#include <linux/dma-mapping.h>
#include <linux/hmm.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "gmem_accel_queue.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_pt.h"
#include "gmem_accel_hbm.h"
#include "gmem_accel_counters.h"
#include "gmem_accel_thrashing.h"
#include "gmem_accel_trace.h"

/*
 * Context @id, referenced (gmem_ctx_put()), or NULL: a fault server holds the reference, not
 * g->ctx_lock, while it works for the context, so another context's close never waits for it.
 */
struct gmem_ctx *gmem_ctx_get(struct gmem_accel *g, unsigned int id)
{
	struct gmem_ctx *ctx = NULL;

	if (id >= GMEM_NUM_CONTEXTS)
		return NULL;
	mutex_lock(&g->ctx_lock);
	if (g->ctx[id]) {
		ctx = g->ctx[id];
		kref_get(&ctx->users);
	}
	mutex_unlock(&g->ctx_lock);
	return ctx;
}

static void gmem_ctx_unused(struct kref *ref)
{
	complete(&container_of(ref, struct gmem_ctx, users)->unused);
}

/*
 * References on the contexts of process @mm (up to @max, into @ctxs): a CPU fault's view of
 * who may care about the page it moves. How many; each to be put.
 */
unsigned int gmem_ctxs_of_mm(struct gmem_accel *g, struct mm_struct *mm, struct gmem_ctx **ctxs,
			     unsigned int max)
{
	unsigned int n = 0;

	mutex_lock(&g->ctx_lock);
	for (unsigned int id = 1; id < GMEM_NUM_CONTEXTS && n < max; id++) {
		struct gmem_ctx *ctx = g->ctx[id];

		if (ctx && ctx->mm == mm) {
			kref_get(&ctx->users);
			ctxs[n++] = ctx;
		}
	}
	mutex_unlock(&g->ctx_lock);
	return n;
}

void gmem_ctx_put(struct gmem_ctx *ctx)
{
	kref_put(&ctx->users, gmem_ctx_unused);
}

static void gmem_ctx_free(struct gmem_ctx *ctx)
{
	kvfree(ctx->fault_req);
	kvfree(ctx->fault_pfns);
	kvfree(ctx->waiter_group);
	kvfree(ctx->fault_migration);
	kfree(ctx);
}

/* Bind the calling process's address space to a new device context. */
struct gmem_ctx *gmem_ctx_create(struct gmem_accel *g)
{
	struct gmem_ctx *ctx;
	int id, ret;

	if (!current->mm)
		return ERR_PTR(-EINVAL);
	/*
	 * The mm's notifier subscriptions, once: their first registration takes every lock of
	 * the mm and gives up on any signal pending (mm_take_all_locks()). Here that is a
	 * restartable open; later, inserting a window's notifier would fail a fault or a
	 * MIGRATE for a signal that should only end a wait.
	 */
	if (!READ_ONCE(current->mm->notifier_subscriptions)) {
		ret = mmu_notifier_register(NULL, current->mm);
		if (ret)
			return ERR_PTR(ret == -EINTR ? -ERESTARTSYS : ret);
	}
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return ERR_PTR(-ENOMEM);
	ctx->g = g;
	mutex_init(&ctx->lock);
	mutex_init(&ctx->fault_mutex);
	mutex_init(&ctx->notifier_mutex);
	xa_init(&ctx->notifiers);
	INIT_WORK(&ctx->notifier_gc, gmem_notifier_gc);
	ctx->fault_req = kvcalloc(GMEM_WINDOW_PAGES, sizeof(long), GFP_KERNEL);
	ctx->fault_pfns = kvcalloc(GMEM_WINDOW_PAGES, sizeof(long), GFP_KERNEL);
	ctx->waiter_group = kvcalloc(GMEM_FAULT_GROUP_MAX, sizeof(*ctx->waiter_group), GFP_KERNEL);
	if (!ctx->fault_req || !ctx->fault_pfns || !ctx->waiter_group) {
		ret = -ENOMEM;
		goto err_free;
	}
	kref_init(&ctx->users);		/* the device's context table's */
	init_completion(&ctx->unused);
	/*
	 * Reclaim may take ctx->lock (through the notifier): tell lockdep now, so that an
	 * allocation under the lock is reported even when reclaim never ran during the test.
	 */
	if (IS_ENABLED(CONFIG_LOCKDEP)) {
		fs_reclaim_acquire(GFP_KERNEL);
		might_lock(&ctx->lock);
		fs_reclaim_release(GFP_KERNEL);
	}
	xa_init(&ctx->errors);
	mt_init(&ctx->advice);
	gmem_thrashing_init(ctx);
	ctx->tgid = current->tgid;
	get_task_comm(ctx->comm, current);

	/* Context 0 is kept for the driver's own work. */
	id = ida_alloc_range(&g->ctx_ids, 1, GMEM_NUM_CONTEXTS - 1, GFP_KERNEL);
	if (id < 0) {
		ret = id == -ENOSPC ? -EBUSY : id;
		goto err_free;
	}
	ctx->id = id;
	ret = gmem_pt_init(ctx);
	if (ret)
		goto err_id;
	ctx->owner = gmem_owner_create(current->mm);
	if (!ctx->owner) {
		ret = -ENOMEM;
		goto err_pt;
	}
	ctx->mm = ctx->owner->mm;	/* kept (mmgrab) by the owner */

	mutex_lock(&g->ctx_lock);
	g->ctx[id] = ctx;
	mutex_unlock(&g->ctx_lock);
	gmem_dev_count(g, GMEM_DEV_CONTEXTS_CREATED, 1);
	gmem_dev_count(g, GMEM_DEV_CONTEXTS_NOW, 1);
	gmem_write64(g, GMEM_REG_CTX(id, GMEM_CTX_ROOT_LO), ctx->root.dma);
	gmem_write(g, GMEM_REG_CTX(id, GMEM_CTX_CTRL), GMEM_CTX_CTRL_ENABLE);
	return ctx;

err_pt:
	gmem_pt_fini(ctx);
err_id:
	ida_free(&g->ctx_ids, id);
err_free:
	gmem_ctx_free(ctx);
	return ERR_PTR(ret);
}

/*
 * Take the context off the device and free its page table. Idempotent: unbind and close both
 * call it, each after its commands are done or dropped with its queue (gmem_queue_stop()), so
 * the device is never handed work for a context it no longer has.
 */
void gmem_ctx_shutdown(struct gmem_ctx *ctx)
{
	struct gmem_accel *g = ctx->g;

	if (ctx->shut_down)
		return;
	ctx->shut_down = true;
	mutex_lock(&g->ctx_lock);
	g->ctx[ctx->id] = NULL;
	mutex_unlock(&g->ctx_lock);
	/* Fault servers still at work for this context finish first (only they can hold it). */
	gmem_ctx_put(ctx);
	wait_for_completion(&ctx->unused);
	gmem_thrashing_stop(ctx);
	gmem_notifiers_remove(ctx);
	if (g->regs) {
		/* Disabling drops the context's translations from the device TLB too. */
		gmem_write(g, GMEM_REG_CTX(ctx->id, GMEM_CTX_CTRL), 0);
		gmem_write64(g, GMEM_REG_CTX(ctx->id, GMEM_CTX_ROOT_LO), 0);
		gmem_ac_ctx_gone(g, ctx->id);
	}
	if (ctx->hook_fini)
		ctx->hook_fini(ctx);
	gmem_pt_fini(ctx);
	gmem_dev_count(g, GMEM_DEV_CONTEXTS_NOW, -1);
	mutex_lock(&g->ctx_lock);
	ida_free(&g->ctx_ids, ctx->id);
	mutex_unlock(&g->ctx_lock);
}

void gmem_ctx_get_stats(struct gmem_ctx *ctx, struct gmem_accel_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->context = ctx->id;
	st->queue = gmem_ctx_queue(ctx);
	st->faults = atomic64_read(&ctx->stats[GMEM_CTX_FAULTS]);
	st->fault_groups = atomic64_read(&ctx->stats[GMEM_CTX_FAULT_GROUPS]);
	st->replays = atomic64_read(&ctx->stats[GMEM_CTX_REPLAYS]);
	st->cancels = atomic64_read(&ctx->stats[GMEM_CTX_CANCELS]);
	st->pages_mapped = atomic64_read(&ctx->stats[GMEM_CTX_PAGES_MAPPED]);
	st->pages_zapped = atomic64_read(&ctx->stats[GMEM_CTX_PAGES_ZAPPED]);
	st->invalidations = atomic64_read(&ctx->stats[GMEM_CTX_INVALIDATIONS]);
	st->commands = atomic64_read(&ctx->stats[GMEM_CTX_COMMANDS]);
	st->migrated_to_device = atomic64_read(&ctx->stats[GMEM_CTX_MIGRATED_TO_DEVICE]);
	st->migrated_to_system = atomic64_read(&ctx->stats[GMEM_CTX_MIGRATED_TO_SYSTEM]);
}

void gmem_ctx_destroy(struct gmem_ctx *ctx)
{
	gmem_ctx_shutdown(ctx);
	gmem_owner_put(ctx->owner);
	gmem_notifiers_free(ctx);
	xa_destroy(&ctx->errors);
	mtree_destroy(&ctx->advice);
	gmem_ctx_free(ctx);
}
