// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the replay policy, UVM's uvm_perf_fault_replay_policy mapped onto this
 * device, whose groups are per stalled command and answered per group (docs/uapi.md):
 * 0 block: each group is answered as soon as it is serviced;
 * 1 batch: a fault worker takes the complete groups waiting (up to uvm_perf_fault_batch_count
 *   faults), services them all, then answers them all;
 * 2 batch_flush (default): batch, and before answering it looks at the queue once more and
 *   services the groups posted meanwhile in the same pass;
 * 3 once: batch after batch until the queue holds no complete group (GMEM_FAULT_BUDGET groups
 *   at most), then answers them all.
 * A process waiting for its batch serves its own group and answers it at once whatever the
 * policy (gmem_accel_wait.c): holding its answer for others' would only delay the one
 * command it waits for.
 */
#include <linux/delay.h>
#include <linux/moduleparam.h>

#include "gmem_accel.h"
#include "gmem_accel_fault.h"
#include "gmem_accel_replay.h"
#include "gmem_accel_thrashing.h"

enum {
	GMEM_REPLAY_BLOCK,
	GMEM_REPLAY_BATCH,
	GMEM_REPLAY_BATCH_FLUSH,
	GMEM_REPLAY_ONCE,
	GMEM_REPLAY_POLICIES
};

GMEM_PARAM_RANGE(uvm_perf_fault_replay_policy, GMEM_REPLAY_BATCH_FLUSH, 0,
		 GMEM_REPLAY_POLICIES - 1, NULL,
		 "when fault workers answer groups: 0 block, 1 batch, 2 batch_flush, 3 once (default 2)");
/* Up to the fault queue's size: a batch never holds more than the queue does. */
GMEM_PARAM_RANGE(uvm_perf_fault_batch_count, GMEM_FAULT_GROUP_MAX, 1, 1u << GMEM_FQ_LOG2,
		 NULL,
		 "faults a fault worker takes into one batch, 1-16384 (default 256)");

/* Do the fault workers answer in batches (any policy but block)? */
bool gmem_replay_batching(void)
{
	return READ_ONCE(uvm_perf_fault_replay_policy) != GMEM_REPLAY_BLOCK;
}

/*
 * Take and service up to @ready groups into @answers from @k on (@limit in all); the new
 * count. *@faults: theirs added.
 */
static unsigned int gmem_replay_take(struct gmem_accel *g, struct gmem_fault *group,
				     struct gmem_answer *answers, unsigned int k,
				     unsigned int limit, unsigned int ready, unsigned int *faults)
{
	bool more;

	while (ready-- && k < limit) {
		unsigned int n = gmem_fault_take(g, group, -1, &more);

		if (!n)
			break;
		gmem_fault_service(g, group, n, &answers[k++]);
		*faults += n;
		cond_resched();
	}
	return k;
}

/*
 * A fault worker's pass over the queue under a batching policy (see the file's comment);
 * how many groups it answered, GMEM_FAULT_BUDGET at most. Groups posted while it services a
 * batch go to another worker (the fault interrupt wakes an idle one), so one batch's slow
 * group holds up the groups of that batch only.
 */
unsigned int gmem_replay_drain(struct gmem_accel *g, struct gmem_fault *group,
			       struct gmem_answer *answers)
{
	unsigned int policy = READ_ONCE(uvm_perf_fault_replay_policy);
	unsigned int count = READ_ONCE(uvm_perf_fault_batch_count);
	unsigned int done = 0;

	while (done < GMEM_FAULT_BUDGET) {
		unsigned int k, faults = 0, nap_ms = 0, nap_us = 0;
		unsigned int ready = gmem_fault_ready(g, count);
		unsigned int limit = GMEM_FAULT_BUDGET - done;

		if (!ready)
			break;
		k = gmem_replay_take(g, group, answers, 0, limit, ready, &faults);
		/* batch_flush: what was posted meanwhile, in the room the batch has left */
		if (policy == GMEM_REPLAY_BATCH_FLUSH && faults < count && k < limit) {
			ready = gmem_fault_ready(g, count - faults);
			k = gmem_replay_take(g, group, answers, k, limit, ready, &faults);
		}
		while (policy == GMEM_REPLAY_ONCE && k < limit && (ready = gmem_fault_ready(g, count))) {
			unsigned int before = k;

			k = gmem_replay_take(g, group, answers, k, limit, ready, &faults);
			if (k == before)
				break;	/* another server took them */
		}
		if (!k)
			break;
		/* Contention, thrashing: the batch's longest naps, once, before its answers. */
		for (unsigned int i = 0; i < k; i++) {
			if (answers[i].nap_ms)
				gmem_dev_count(g, GMEM_DEV_FAULT_THROTTLES, 1);
			nap_ms = max(nap_ms, answers[i].nap_ms);
			nap_us = max(nap_us, answers[i].thrash_nap_us);
		}
		if (nap_ms)
			msleep(nap_ms);
		gmem_thrashing_nap(nap_us);
		gmem_dev_count(g, GMEM_DEV_REPLAY_BATCHES, 1);
		gmem_dev_count(g, GMEM_DEV_REPLAY_BATCH_GROUPS, k);
		for (unsigned int i = 0; i < k; i++)
			gmem_fault_respond(g, &answers[i]);
		done += k;
		cond_resched();
	}
	return done;
}
