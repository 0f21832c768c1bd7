// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: thrashing mitigation, as UVM's perf_thrashing has it. A page that moves
 * between system memory and this device's HBM (a device fault's migration to HBM, the CPU's
 * migrate_to_ram) uvm_perf_thrashing_threshold times in a row, each move within
 * uvm_perf_thrashing_lapse_usec of the one before, is thrashing. The side that would move it
 * next is throttled first: it naps (nap x lapse) before moving it (the device: its fault
 * group is answered REPLAY after the nap, nothing moved or mapped). After
 * uvm_perf_thrashing_pin_threshold throttles the page is pinned where the CPU can reach it,
 * in system memory: the device's faults map it there instead of moving it, until pin x lapse
 * has passed or its block's state is reset (epoch x lapse without thrashing; at most
 * max_resets times a block). State is kept per 2 MiB block in ctx->thrash, per page once
 * moves of a block alternate between the sides, and bounded per context.
 */
#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "gmem_accel.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_pt.h"
#include "gmem_accel_fault.h"
#include "gmem_accel_migrate.h"
#include "gmem_accel_thrashing.h"
#include "gmem_accel_trace.h"

GMEM_PARAM_RANGE(uvm_perf_thrashing_enable, 1, 0, 1, NULL, "Detect and mitigate thrashing (0/1)");
GMEM_PARAM_RANGE(uvm_perf_thrashing_threshold, 3, 1, 7, NULL,
		 "Moves in a row, each within the lapse, that make a page thrash");
GMEM_PARAM_RANGE(uvm_perf_thrashing_pin_threshold, 10, 1, 255, NULL,
		 "Throttles of a thrashing page before it is pinned in system memory");
GMEM_PARAM_RANGE(uvm_perf_thrashing_lapse_usec, 500, 1, UINT_MAX, NULL,
		 "Time (us) within which a move counts as following the one before");
GMEM_PARAM_RANGE(uvm_perf_thrashing_nap, 1, 1, 100, NULL, "A throttled side's nap (x lapse)");
GMEM_PARAM_RANGE(uvm_perf_thrashing_epoch, 2000, 1, UINT_MAX, NULL,
		 "Time without thrashing after which a block's state is reset (x lapse)");
GMEM_PARAM_RANGE(uvm_perf_thrashing_pin, 300, 0, UINT_MAX, NULL,
		 "Time a page stays pinned (x lapse; 0: until its block is reset)");
GMEM_PARAM_RANGE(uvm_perf_thrashing_max_resets, 4, 0, UINT_MAX, NULL,
		 "Resets of a block's state, after which it keeps it");

#define GMEM_P(name)	READ_ONCE(uvm_perf_thrashing_##name)

/* A nap never keeps a fault server or a CPU fault longer than this, whatever the params. */
#define GMEM_THRASH_NAP_MAX_US	(USEC_PER_SEC)
/* Blocks a context keeps state for, and of them with per-page state (about 12 KiB each). */
#define GMEM_THRASH_MAX_BLOCKS	4096
#define GMEM_THRASH_MAX_TRACKED	128

#define GMEM_TP_PINNED		BIT(0)
#define GMEM_TP_DEV_THROTTLED	BIT(1)	/* the device's faults wait for @until */

struct gmem_thrash_page {
	u64 last;		/* ns: its last move, or the end of its last throttle */
	u64 until;		/* ns: the end of its throttle; pinned: of its pin (0: none) */
	u8 events;		/* moves in a row each within the lapse of the one before */
	u8 throttles;
	u8 flags;
};

struct gmem_thrash_block {
	u64 last;		/* ns: its last move */
	u64 last_thrash;	/* ns: its last move of a thrashing page */
	bool last_to_device;
	u8 resets;
	u16 pinned;
	struct gmem_thrash_page *pages;	/* GMEM_WINDOW_PAGES, once moves alternate */
};

static u64 gmem_lapse_ns(void)
{
	return (u64)GMEM_P(lapse_usec) * NSEC_PER_USEC;
}

void gmem_thrashing_nap(unsigned int nap_us)
{
	if (!nap_us)
		return;
	if (nap_us < 20 * USEC_PER_MSEC)
		fsleep(nap_us);
	else
		schedule_timeout_killable(usecs_to_jiffies(nap_us));
}

/* The nap of a throttle: nap x lapse, bounded. */
static unsigned int gmem_nap_us(void)
{
	return min_t(u64, (u64)GMEM_P(nap) * GMEM_P(lapse_usec), GMEM_THRASH_NAP_MAX_US);
}

static void gmem_thrash_unpin_page(struct gmem_ctx *ctx, struct gmem_thrash_block *b,
				   struct gmem_thrash_page *p, u64 va)
{
	p->flags &= ~GMEM_TP_PINNED;
	p->until = 0;
	b->pinned--;
	gmem_dev_count(ctx->g, GMEM_DEV_THRASHING_PINNED_PAGES_NOW, -1);
	trace_gmem_accel_thrashing_unpin(ctx->id, va);
}

/* Forget block @b's per-page state (its pins too). Under the xa_lock; the caller frees. */
static struct gmem_thrash_page *gmem_thrash_reset(struct gmem_ctx *ctx,
						  struct gmem_thrash_block *b, u64 start)
{
	struct gmem_thrash_page *pages = b->pages;

	for (unsigned int i = 0; pages && b->pinned && i < GMEM_WINDOW_PAGES; i++)
		if (pages[i].flags & GMEM_TP_PINNED)
			gmem_thrash_unpin_page(ctx, b, &pages[i], start + i * PAGE_SIZE);
	if (pages)
		ctx->thrash_tracked--;
	b->pages = NULL;
	b->last = 0;
	b->last_thrash = 0;
	return pages;
}

/* Block @idx's state, NULL if none. Under the xa_lock. */
static struct gmem_thrash_block *gmem_thrash_block(struct gmem_ctx *ctx, unsigned long idx)
{
	lockdep_assert_held(&ctx->thrash.xa_lock);
	return xa_load(&ctx->thrash, idx);
}

/* Make block @idx's state (and with @pages, its per-page state) exist, if room is left. */
static void gmem_thrash_alloc(struct gmem_ctx *ctx, unsigned long idx, bool pages)
{
	struct gmem_thrash_page *p = NULL;
	struct gmem_thrash_block *b, *nb;

	xa_lock(&ctx->thrash);
	b = gmem_thrash_block(ctx, idx);
	if ((b && (!pages || b->pages)) ||
	    (!b && ctx->thrash_blocks >= GMEM_THRASH_MAX_BLOCKS) ||
	    (pages && ctx->thrash_tracked >= GMEM_THRASH_MAX_TRACKED)) {
		xa_unlock(&ctx->thrash);
		return;
	}
	xa_unlock(&ctx->thrash);
	/* (allocated with no lock held: reclaim may run the MMU notifier) */
	if (!b) {
		nb = kzalloc(sizeof(*nb), GFP_KERNEL);
		if (!nb)
			return;
		xa_lock(&ctx->thrash);
		/* (allocating, it drops the lock: GFP_KERNEL) */
		if (!__xa_insert(&ctx->thrash, idx, nb, GFP_KERNEL)) {
			ctx->thrash_blocks++;
			nb = NULL;
		}
		xa_unlock(&ctx->thrash);
		kfree(nb);	/* another inserted it meanwhile */
	}
	if (!pages)
		return;
	p = kvcalloc(GMEM_WINDOW_PAGES, sizeof(*p), GFP_KERNEL);
	if (!p)
		return;
	xa_lock(&ctx->thrash);
	b = gmem_thrash_block(ctx, idx);
	if (b && !b->pages && ctx->thrash_tracked < GMEM_THRASH_MAX_TRACKED) {
		b->pages = p;
		ctx->thrash_tracked++;
		p = NULL;
	}
	xa_unlock(&ctx->thrash);
	kvfree(p);
}

/*
 * Record that pages [first, first + n) of block @idx (starting at @start) moved, @to_device
 * or home, now. Returns true if the block wants per-page state it does not have yet (its
 * moves alternate within the lapse). Under the xa_lock.
 */
static bool gmem_thrash_record(struct gmem_ctx *ctx, struct gmem_thrash_block *b, u64 start,
			       unsigned long first, unsigned long n, bool to_device, u64 now)
{
	u64 lapse = gmem_lapse_ns();
	unsigned int threshold = GMEM_P(threshold);
	bool alternate = b->last && b->last_to_device != to_device && now - b->last <= lapse;

	b->last = now;
	b->last_to_device = to_device;
	if (!b->pages)
		return alternate;
	for (unsigned long i = first; i < first + n; i++) {
		struct gmem_thrash_page *p = &b->pages[i];

		if (p->last && now <= p->last + lapse) {
			if (p->events < 7)
				p->events++;
			if (p->events == threshold)
				gmem_dev_count(ctx->g, GMEM_DEV_THRASHING_DETECTED, 1);
			if (p->events >= threshold)
				b->last_thrash = now;
		} else if (!(p->flags & GMEM_TP_PINNED)) {
			p->events = 0;
			p->throttles = 0;
		}
		p->last = max(p->last, now);
	}
	return false;
}

/*
 * Migration @m (one window, finished) moved pages of @ctx's process, @to_device (a device
 * fault's) or home (a CPU access's): record them.
 */
void gmem_thrashing_moved(struct gmem_ctx *ctx, const struct gmem_migration *m, bool to_device)
{
	unsigned long start = m->args.start, npages = (m->args.end - start) >> PAGE_SHIFT;
	unsigned long idx = start >> GMEM_HUGE_SHIFT, off, i, first = npages, last = 0;
	u64 base = ALIGN_DOWN(start, GMEM_HUGE_SIZE), now = ktime_get_ns();
	struct gmem_thrash_block *b;
	bool want = false;

	if (!GMEM_P(enable))
		return;
	for (i = 0; i < npages; i++) {
		if (m->dst[i] && (m->src[i] & MIGRATE_PFN_MIGRATE)) {
			first = min(first, i);
			last = (m->src[i] & GMEM_PFN_COMPOUND) ? npages : max(last, i + 1);
		}
	}
	if (first >= last)
		return;
	gmem_thrash_alloc(ctx, idx, false);
	off = (start - base) >> PAGE_SHIFT;
	xa_lock(&ctx->thrash);
	b = gmem_thrash_block(ctx, idx);
	if (b)
		want = gmem_thrash_record(ctx, b, base, off + first, last - first, to_device, now);
	xa_unlock(&ctx->thrash);
	/* Per-page state from the next move on, as UVM starts it. */
	if (want)
		gmem_thrash_alloc(ctx, idx, true);
}

/* Pin page @p (@va) in system memory for pin x lapse (0: until its block is reset). */
static void gmem_thrash_pin(struct gmem_ctx *ctx, struct gmem_thrash_block *b,
			    struct gmem_thrash_page *p, u64 va, u64 now)
{
	u64 pin = (u64)GMEM_P(pin) * gmem_lapse_ns();

	p->flags |= GMEM_TP_PINNED;
	p->flags &= ~GMEM_TP_DEV_THROTTLED;
	p->throttles = 0;
	p->until = pin ? now + pin : 0;
	b->pinned++;
	gmem_dev_count(ctx->g, GMEM_DEV_THRASHING_PINS, 1);
	gmem_dev_count(ctx->g, GMEM_DEV_THRASHING_PINNED_PAGES_NOW, 1);
	trace_gmem_accel_thrashing_pin(ctx->id, va);
	if (pin)
		mod_delayed_work(system_wq, &ctx->thrash_unpin, nsecs_to_jiffies(pin) + 1);
}

/* Throttle page @p (@va): @by_device or the CPU naps; true if the page is to be pinned. */
static bool gmem_thrash_throttle(struct gmem_ctx *ctx, struct gmem_thrash_page *p, u64 va,
				 u64 now, bool by_device, unsigned int *nap_us)
{
	if (p->throttles >= GMEM_P(pin_threshold))
		return true;
	p->throttles++;
	*nap_us = max(*nap_us, gmem_nap_us());
	p->until = now + (u64)gmem_nap_us() * NSEC_PER_USEC;
	/* The nap's end counts as the page's last event: the move after it follows it. */
	p->last = p->until;
	if (by_device)
		p->flags |= GMEM_TP_DEV_THROTTLED;
	gmem_dev_count(ctx->g, GMEM_DEV_THRASHING_THROTTLES, 1);
	trace_gmem_accel_thrashing_throttle(ctx->id, va);
	return false;
}

/*
 * Is block @b's state to be reset (epoch x lapse without thrashing, at most max_resets
 * times; not while pages are pinned for a time)? Under the xa_lock.
 */
static bool gmem_thrash_epoch_over(struct gmem_thrash_block *b, u64 now)
{
	u64 epoch = (u64)GMEM_P(epoch) * gmem_lapse_ns();

	return b->last_thrash && now - b->last_thrash > epoch &&
	       (!b->pinned || !GMEM_P(pin)) && b->resets < GMEM_P(max_resets);
}

/* The hint for one faulting page @p (@va) of a PREFER_DEVICE window. Under the xa_lock. */
static enum gmem_thrash_hint gmem_thrash_page_hint(struct gmem_ctx *ctx,
						   struct gmem_thrash_block *b,
						   struct gmem_thrash_page *p, u64 va, u64 now,
						   unsigned int *nap_us)
{
	if (p->flags & GMEM_TP_PINNED)
		return GMEM_THRASH_PIN;
	if (p->events < GMEM_P(threshold))
		return GMEM_THRASH_NONE;
	if (p->flags & GMEM_TP_DEV_THROTTLED) {
		if (now < p->until) {
			*nap_us = max_t(unsigned int, *nap_us, div_u64(p->until - now, NSEC_PER_USEC));
			return GMEM_THRASH_THROTTLE;
		}
		/* Its nap is over: this fault moves the page (the CPU's turn to wait next). */
		p->flags &= ~GMEM_TP_DEV_THROTTLED;
		return GMEM_THRASH_NONE;
	}
	if (now > p->last + gmem_lapse_ns())
		return GMEM_THRASH_NONE;	/* not thrashing any more: the move resets it */
	if (gmem_thrash_throttle(ctx, p, va, now, true, nap_us)) {
		gmem_thrash_pin(ctx, b, p, va, now);
		return GMEM_THRASH_PIN;
	}
	return GMEM_THRASH_THROTTLE;
}

/*
 * A device fault group's faults @f (@n, sorted) from the first in a PREFER_DEVICE window
 * ending at @end: is the window to migrate as usual (NONE), are its pages to be mapped where
 * they are (PIN: one of them is pinned), or is the group to be answered after a nap of
 * *@nap_us, nothing moved (THROTTLE)? Called by the fault server (ctx->fault_mutex held).
 */
enum gmem_thrash_hint gmem_thrashing_fault(struct gmem_ctx *ctx, const struct gmem_fault *f,
					   unsigned int n, u64 end, unsigned int *nap_us)
{
	unsigned long idx = f[0].va >> GMEM_HUGE_SHIFT;
	enum gmem_thrash_hint hint = GMEM_THRASH_NONE;
	u64 base = (u64)idx << GMEM_HUGE_SHIFT, now = ktime_get_ns();
	struct gmem_thrash_page *old = NULL;
	struct gmem_thrash_block *b;

	*nap_us = 0;
	if (!GMEM_P(enable))
		return GMEM_THRASH_NONE;
	xa_lock(&ctx->thrash);
	b = gmem_thrash_block(ctx, idx);
	if (b && b->pages && gmem_thrash_epoch_over(b, now)) {
		b->resets++;
		old = gmem_thrash_reset(ctx, b, base);
	}
	for (unsigned int i = 0; b && b->pages && i < n && f[i].va < end; i++) {
		u64 va = f[i].va & PAGE_MASK;
		enum gmem_thrash_hint h;

		h = gmem_thrash_page_hint(ctx, b, &b->pages[(va - base) >> PAGE_SHIFT], va, now,
					  nap_us);
		hint = max(hint, h);
	}
	xa_unlock(&ctx->thrash);
	kvfree(old);
	/* (a pinned page's window is mapped where it is: no nap) */
	if (hint != GMEM_THRASH_THROTTLE)
		*nap_us = 0;
	return hint;
}

/*
 * A CPU access to page @va of @ctx's process, in HBM, is about to bring it home: if the page
 * thrashes, the CPU naps first (how long: the return value, in us; the caller sleeps, with
 * no lock of the driver held).
 */
unsigned int gmem_thrashing_cpu_nap(struct gmem_ctx *ctx, u64 va)
{
	unsigned long idx = va >> GMEM_HUGE_SHIFT;
	u64 base = (u64)idx << GMEM_HUGE_SHIFT, now = ktime_get_ns();
	struct gmem_thrash_block *b;
	unsigned int nap_us = 0;

	if (!GMEM_P(enable))
		return 0;
	xa_lock(&ctx->thrash);
	b = gmem_thrash_block(ctx, idx);
	if (b && b->pages) {
		struct gmem_thrash_page *p = &b->pages[(va - base) >> PAGE_SHIFT];

		/* (a pinned page the CPU cannot reach in HBM comes home without a nap) */
		if (!(p->flags & GMEM_TP_PINNED) && p->events >= GMEM_P(threshold) &&
		    now <= p->last + gmem_lapse_ns())
			gmem_thrash_throttle(ctx, p, va & PAGE_MASK, now, false, &nap_us);
	}
	xa_unlock(&ctx->thrash);
	return nap_us;
}

/*
 * Unpin the pages whose pin ran out, and unmap them from the device, so that its next access
 * faults and the page may move again (as UVM unmaps a pinned page's remote mappings). Work
 * item; runs again while pins are left.
 */
static void gmem_thrash_unpin_work(struct work_struct *work)
{
	struct gmem_ctx *ctx = container_of(to_delayed_work(work), struct gmem_ctx, thrash_unpin);
	u64 now = ktime_get_ns(), next = 0, vas[16];
	struct gmem_thrash_block *b;
	unsigned int nvas = 0;
	unsigned long idx;

	xa_lock(&ctx->thrash);
	xa_for_each(&ctx->thrash, idx, b) {
		u64 base = (u64)idx << GMEM_HUGE_SHIFT;

		for (unsigned int i = 0; b->pages && b->pinned && i < GMEM_WINDOW_PAGES; i++) {
			struct gmem_thrash_page *p = &b->pages[i];

			if (!(p->flags & GMEM_TP_PINNED) || !p->until)
				continue;
			if (p->until > now || nvas == ARRAY_SIZE(vas)) {
				next = next ? min(next, p->until) : p->until;
				continue;
			}
			gmem_thrash_unpin_page(ctx, b, p, base + i * PAGE_SIZE);
			vas[nvas++] = base + i * PAGE_SIZE;
		}
	}
	xa_unlock(&ctx->thrash);
	for (unsigned int i = 0; i < nvas; i++) {
		gmem_pt_unmap(ctx, vas[i], vas[i] + PAGE_SIZE);
		gmem_tlb_invalidate(ctx->g, ctx->id, vas[i], PAGE_SIZE);
	}
	if (next)
		mod_delayed_work(system_wq, &ctx->thrash_unpin,
				 next > now ? nsecs_to_jiffies(next - now) + 1 : 1);
}

void gmem_thrashing_init(struct gmem_ctx *ctx)
{
	xa_init(&ctx->thrash);
	INIT_DELAYED_WORK(&ctx->thrash_unpin, gmem_thrash_unpin_work);
}

/* Window [start, + 2 MiB) was unmapped (gmem_notifier_gc()): its state goes. */
void gmem_thrashing_forget(struct gmem_ctx *ctx, u64 start)
{
	struct gmem_thrash_page *pages = NULL;
	struct gmem_thrash_block *b;

	xa_lock(&ctx->thrash);
	b = __xa_erase(&ctx->thrash, start >> GMEM_HUGE_SHIFT);
	if (b) {
		pages = gmem_thrash_reset(ctx, b, start);
		ctx->thrash_blocks--;
	}
	xa_unlock(&ctx->thrash);
	kvfree(pages);
	kfree(b);
}

/* The context shuts down (no fault server or CPU fault uses it any more): all state goes. */
void gmem_thrashing_stop(struct gmem_ctx *ctx)
{
	struct gmem_thrash_block *b;
	unsigned long idx;

	cancel_delayed_work_sync(&ctx->thrash_unpin);
	xa_for_each(&ctx->thrash, idx, b)
		gmem_thrashing_forget(ctx, (u64)idx << GMEM_HUGE_SHIFT);
	xa_destroy(&ctx->thrash);
}
