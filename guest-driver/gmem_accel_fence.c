// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: a batch's completion as a dma-fence, handed out as a sync_file (as
 * CUDA's IPC event handles and GPU drivers' out-fences are). Each command queue is a
 * timeline whose seqnos are its ring sequence numbers; the last command of every batch
 * writes that number. Whoever sees a batch pass signals the fences up to it: the queue's
 * interrupt, the waiter of a quiet batch (SUBMIT_WAIT, no interrupt), a queue reset, a
 * context's drain, unbind (with -ENODEV). A fence is handed out only with an interrupt to
 * come after its batch (gmem_queue_notify_after()), and the watchdog signals, and on the
 * debug kernel reports, any left armed after its batch passed. A sync_file polls, and a
 * SUBMIT in any process may wait for one first.
 *
 * A fence never touches its queue once signaled; every unsignaled fence is on its queue's
 * armed list. Its ops are this module's code: a fence pins the module until released.
 */
#include <linux/module.h>
#include <linux/dma-fence.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/slab.h>
#include <linux/sync_file.h>
#include <linux/uaccess.h>

#include "gmem_accel_queue.h"

struct gmem_dma_fence {
	struct dma_fence base;
	spinlock_t lock;
	struct list_head link;		/* on gmem_queue.armed until signaled */
	u64 seq;			/* the batch's ring sequence number */
	unsigned int late;		/* watchdog passes that found its batch passed */
};

static const char *gmem_fence_driver_name(struct dma_fence *f)
{
	return GMEM_ACCEL_NAME;
}

static const char *gmem_fence_timeline_name(struct dma_fence *f)
{
	return "command queue";
}

static void gmem_fence_release(struct dma_fence *f)
{
	dma_fence_free(f);
	module_put(THIS_MODULE);	/* taken in gmem_fence_create() */
}

static const struct dma_fence_ops gmem_dma_fence_ops = {
	.get_driver_name = gmem_fence_driver_name,
	.get_timeline_name = gmem_fence_timeline_name,
	.release = gmem_fence_release,
};

void gmem_fences_init(struct gmem_queue *q)
{
	spin_lock_init(&q->fence_lock);
	INIT_LIST_HEAD(&q->armed);
	q->fence_context = dma_fence_context_alloc(1);
}

/*
 * Signal @q's fences whose batch has passed, or with @err (unbind) all of them. Called from
 * the queue's interrupt, after a queue reset and at unbind.
 */
void gmem_fences_signal(struct gmem_queue *q, int err)
{
	struct gmem_dma_fence *f, *n;
	unsigned long flags;
	LIST_HEAD(done);

	spin_lock_irqsave(&q->fence_lock, flags);
	list_for_each_entry_safe(f, n, &q->armed, link)
		if (err || READ_ONCE(*q->fence) >= f->seq)
			list_move_tail(&f->link, &done);
	spin_unlock_irqrestore(&q->fence_lock, flags);
	list_for_each_entry_safe(f, n, &done, link) {
		list_del(&f->link);
		if (err)
			dma_fence_set_error(&f->base, err);
		dma_fence_signal(&f->base);
		dma_fence_put(&f->base);	/* the armed list's */
	}
}

/*
 * Fences whose batch passed GMEM_FENCE_LATE_PASSES watchdog passes ago (seconds) and still
 * wait for the interrupt: every path that sees a batch finish signals its fences, so this is
 * a driver bug. The debug kernel WARNs (the suite's kernel_log fails); every kernel signals
 * them, so none is left waiting for ever.
 */
#define GMEM_FENCE_LATE_PASSES	3

void gmem_fences_check(struct gmem_queue *q)
{
	struct gmem_dma_fence *f, *n;
	unsigned long flags;
	LIST_HEAD(late);

	spin_lock_irqsave(&q->fence_lock, flags);
	list_for_each_entry_safe(f, n, &q->armed, link)
		if (READ_ONCE(*q->fence) >= f->seq && ++f->late >= GMEM_FENCE_LATE_PASSES)
			list_move_tail(&f->link, &late);
	spin_unlock_irqrestore(&q->fence_lock, flags);
	list_for_each_entry_safe(f, n, &late, link) {
		WARN_ONCE(IS_ENABLED(CONFIG_DEBUG_KERNEL),
			  "gmem_accel: queue %u: the fence of batch %llu was not signaled when its batch passed\n",
			  q->id, f->seq);
		gmem_dev_count(q->g, GMEM_DEV_FENCES_LATE, 1);
		list_del(&f->link);
		dma_fence_signal(&f->base);
		dma_fence_put(&f->base);	/* the armed list's */
	}
}

/* A fence for ring sequence number @seq of @q (0: long done), signaled already if it passed. */
static struct dma_fence *gmem_fence_create(struct gmem_accel *g, struct gmem_queue *q, u64 seq)
{
	struct gmem_dma_fence *f = kzalloc(sizeof(*f), GFP_KERNEL);
	unsigned long flags;
	bool done;

	if (!f)
		return NULL;
	__module_get(THIS_MODULE);
	spin_lock_init(&f->lock);
	f->seq = seq;
	dma_fence_init(&f->base, &gmem_dma_fence_ops, &f->lock, q->fence_context, seq);
	/* Checked under the lock the interrupt takes: a later pass finds the fence armed. */
	spin_lock_irqsave(&q->fence_lock, flags);
	done = !seq || READ_ONCE(*q->fence) >= seq || READ_ONCE(g->unbinding);
	if (!done) {
		dma_fence_get(&f->base);
		list_add_tail(&f->link, &q->armed);
	}
	spin_unlock_irqrestore(&q->fence_lock, flags);
	if (done)
		dma_fence_signal(&f->base);
	return &f->base;
}

/* A sync_file for fence @seqno of @ctx; ERR_PTR (a fence this context never got: EINVAL). */
struct sync_file *gmem_fence_sync_file(struct gmem_ctx *ctx, u64 seqno)
{
	struct sync_file *sync;
	struct dma_fence *fence;
	s64 seq;
	int ret;

	seq = gmem_ctx_fence_seq(ctx, seqno);
	if (seq < 0)
		return ERR_PTR(seq);
	/* Its batch may be quiet (SUBMIT_WAIT): the interrupt that signals the fence first. */
	ret = seq ? gmem_queue_notify_after(ctx, seq) : 0;
	if (ret)
		return ERR_PTR(ret);
	fence = gmem_fence_create(ctx->g, &ctx->g->queue[gmem_ctx_queue(ctx)], seq);
	if (!fence)
		return ERR_PTR(-ENOMEM);
	sync = sync_file_create(fence);
	dma_fence_put(fence);
	return sync ?: ERR_PTR(-ENOMEM);
}

long gmem_fence_export(struct gmem_ctx *ctx, void __user *uarg)
{
	struct gmem_accel_fence_export e;
	struct sync_file *sync;
	int fd;

	if (copy_from_user(&e, uarg, sizeof(e)))
		return -EFAULT;
	if ((e.flags & ~O_CLOEXEC) || e.pad)
		return -EINVAL;
	sync = gmem_fence_sync_file(ctx, e.fence);
	if (IS_ERR(sync))
		return PTR_ERR(sync);
	fd = get_unused_fd_flags(e.flags);
	if (fd < 0 || put_user(fd, &((struct gmem_accel_fence_export __user *)uarg)->fd)) {
		if (fd >= 0)
			put_unused_fd(fd);
		fput(sync->file);
		return fd < 0 ? fd : -EFAULT;
	}
	fd_install(fd, sync->file);
	return 0;
}

/*
 * Wait for the sync_file @fd before a SUBMIT: -EBADF for no such file, -EINVAL if it is no
 * sync_file, -ERESTARTSYS if a signal came, -ENODEV if the device is being unbound. A fence
 * that signaled with an error still lets the batch run: the caller asked for the order only.
 */
int gmem_fence_wait_fd(struct gmem_accel *g, int fd)
{
	struct dma_fence *fence;
	struct file *file = fget(fd);
	long ret = 0;

	if (!file)
		return -EBADF;
	fput(file);
	fence = sync_file_get_fence(fd);
	if (!fence)
		return -EINVAL;
	/* A second at a time: unbind waits for the device lock this caller holds. */
	while (!ret && !READ_ONCE(g->unbinding))
		ret = dma_fence_wait_timeout(fence, true, HZ);
	dma_fence_put(fence);
	if (ret < 0)
		return ret;
	return ret ? 0 : -ENODEV;
}
