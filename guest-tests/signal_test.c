// SPDX-License-Identifier: GPL-2.0
/*
 * Signals and fences against the blocking calls: a non-fatal signal ends a wait with EINTR
 * and nothing else (the command runs, its error or success is reported once, to the next
 * WAIT); a batch's fence signals once the batch is done, whichever path saw it finish,
 * including a SUBMIT_WAIT batch, which raises no interrupt of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define HOLD "/sys/kernel/debug/gmem_accel/gmem_accel0/inject_fault_hold"
/* Generous: a batch that faults its pages in may take long on a slow or loaded host. */
#define WAIT_MS 120000

static void on_signal(int sig)
{
}

/* SIGUSR1 interrupts system calls: no SA_RESTART, as a careless program installs it. */
static int interrupting_sigusr1(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	return sigaction(SIGUSR1, &sa, NULL);
}

static int submit(int fd, struct gmem_accel_cmd *c, unsigned int n, __u32 flags, __u64 *fence)
{
	struct gmem_accel_submit s = { .cmds = (uintptr_t)c, .count = n, .flags = flags };
	int ret = ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &s) ? -errno : 0;

	*fence = s.fence;
	return ret;
}

static int wait_fence(int fd, __u64 fence)
{
	struct gmem_accel_wait w = { .fence = fence, .timeout_ms = WAIT_MS };

	return ioctl(fd, GMEM_ACCEL_IOC_WAIT, &w) ? -errno : 0;
}

/* WAIT as a careful program does: again after each EINTR. */
static int wait_through_signals(int fd, __u64 fence, unsigned int *eintr)
{
	int ret;

	while ((ret = wait_fence(fd, fence)) == -EINTR)
		(*eintr)++;
	return ret;
}

static int export_fence(int fd, __u64 fence)
{
	struct gmem_accel_fence_export e = { .fence = fence, .flags = O_CLOEXEC };

	return ioctl(fd, GMEM_ACCEL_IOC_FENCE_EXPORT, &e) ? -errno : e.fd;
}

static uint64_t hold_state(void)
{
	uint64_t v = ~0ull;

	read_sysfs_u64(HOLD, &v);
	return v;
}

/* Wait for the armed fault hold to hold a group; false after 60 s. */
static bool hold_taken(void)
{
	for (int i = 0; i < 6000; i++) {
		if (hold_state() == 2)
			return true;
		usleep(10000);
	}
	return false;
}

/* The fence number the next batch of @fd gets: one more than a batch run now. */
static __u64 next_fence(int fd, uint8_t *page)
{
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)page,
				    .size = PAGE, .value = 0 };
	__u64 fence = 0;

	if (submit(fd, &c, 1, 0, &fence) || wait_fence(fd, fence))
		return 0;
	return fence + 1;
}

FIXTURE(signal) {
	int fd;
	uint8_t *scratch;
};

FIXTURE_SETUP(signal)
{
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	ASSERT_EQ(0, interrupting_sigusr1());
	self->fd = gmem_open(0, O_RDWR);
	ASSERT_LE(0, self->fd) TH_LOG("open /dev/gmem_accel0: %s", strerror(errno));
	self->scratch = map_anon(PAGE, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, self->scratch);
}

FIXTURE_TEARDOWN(signal)
{
	write_sysfs(HOLD, "0");
	munmap(self->scratch, PAGE);
	close(self->fd);
}

struct waiter {
	int fd;
	uint8_t *dst, *src;
	size_t len;
	bool submit_wait;	/* SUBMIT_WAIT, else SUBMIT then WAIT */
	int rounds;
	volatile bool done;
	/* results */
	int ret, wrong_round;
	__u64 fence;
	unsigned int eintr;
};

/* One COPY that faults: SUBMIT_WAIT (or SUBMIT, WAIT), then WAIT again after an EINTR. */
static int copy_once(struct waiter *w)
{
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)w->dst,
				    .src = (uintptr_t)w->src, .size = w->len };
	int ret;

	w->fence = 0;
	do
		ret = submit(w->fd, &c, 1, w->submit_wait ? GMEM_ACCEL_SUBMIT_WAIT : 0,
			     &w->fence);
	while (ret == -EINTR && !w->fence);	/* not queued: as SA_RESTART would */
	if (w->submit_wait && ret != -EINTR)
		return ret;
	if (ret == -EINTR)
		w->eintr++;
	else if (ret)
		return ret;
	return wait_through_signals(w->fd, w->fence, &w->eintr);
}

static void *held_copy(void *arg)
{
	struct waiter *w = arg;

	w->ret = copy_once(w);
	w->done = true;
	return NULL;
}

/*
 * Rounds of a COPY into fresh (faulting) memory; each round's bytes checked. Stops at the
 * first wrong round.
 */
static void *copy_rounds(void *arg)
{
	struct waiter *w = arg;

	for (int r = 0; r < w->rounds && !w->ret && !w->wrong_round; r++) {
		w->dst = map_anon(w->len, PROT_READ | PROT_WRITE);
		if (!w->dst) {
			w->ret = -ENOMEM;
			break;
		}
		pattern(w->src, w->len, r);
		w->ret = copy_once(w);
		if (!w->ret && memcmp(w->dst, w->src, w->len))
			w->wrong_round = r + 1;
		munmap(w->dst, w->len);
	}
	w->done = true;
	return NULL;
}

/*
 * The fault group of a waiting command is held (fault injection) while its thread gets
 * non-fatal signals: the wait ends with EINTR or completes, never cancels the command. The
 * next WAIT reports success, once, with every byte copied, and nothing was cancelled.
 */
static void held_and_signaled(struct __test_metadata *_metadata, int fd, bool submit_wait)
{
	struct waiter w = { .fd = fd, .len = 16 * PAGE, .submit_wait = submit_wait, .ret = 1 };
	struct gmem_accel_stats before = ctx_stats(fd), after;
	pthread_t t;

	w.src = map_anon(w.len, PROT_READ | PROT_WRITE);
	w.dst = map_anon(w.len, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, w.src);
	ASSERT_NE(NULL, w.dst);
	pattern(w.src, w.len, 7);
	ASSERT_EQ(0, write_sysfs(HOLD, "1"));
	ASSERT_EQ(0, pthread_create(&t, NULL, held_copy, &w));
	EXPECT_TRUE(hold_taken()) TH_LOG("the command's fault group was never held");
	for (int i = 0; i < 20; i++) {
		pthread_kill(t, SIGUSR1);
		usleep(5000);
	}
	ASSERT_EQ(0, write_sysfs(HOLD, "0"));
	/* A signal after the hold too, while the group is served. */
	for (int i = 0; i < 2000 && !w.done; i++) {
		pthread_kill(t, SIGUSR1);
		usleep(1000);
	}
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, w.ret) TH_LOG("the command ended with %s", strerror(-w.ret));
	EXPECT_EQ(0, memcmp(w.dst, w.src, w.len)) TH_LOG("the copy was lost");
	/* Reported once: a WAIT after the one that reported it finds nothing to report. */
	EXPECT_EQ(0, wait_fence(fd, w.fence));
	after = ctx_stats(fd);
	EXPECT_EQ(before.cancels, after.cancels) TH_LOG("a fault group was cancelled");
	TH_LOG("%u EINTR seen", w.eintr);
	munmap(w.src, w.len);
	munmap(w.dst, w.len);
}

TEST_F_TIMEOUT(signal, held_fault_submit_wait, 300)
{
	held_and_signaled(_metadata, self->fd, true);
}

TEST_F_TIMEOUT(signal, held_fault_submit_then_wait, 300)
{
	held_and_signaled(_metadata, self->fd, false);
}

/*
 * A storm of non-fatal signals at a thread copying into fresh memory, round after round, with
 * SUBMIT_WAIT and with SUBMIT then WAIT: every round's bytes arrive, no fault group is
 * cancelled, no command fails.
 */
static void storm(struct __test_metadata *_metadata, int fd, bool submit_wait)
{
	struct waiter w = { .fd = fd, .len = 8 * PAGE, .submit_wait = submit_wait,
			    .rounds = debug_kernel() ? 40 : 100 };
	struct gmem_accel_stats before = ctx_stats(fd), after;
	unsigned long sent = 0;
	pthread_t t;

	w.src = map_anon(w.len, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, w.src);
	ASSERT_EQ(0, pthread_create(&t, NULL, copy_rounds, &w));
	while (!w.done) {
		pthread_kill(t, SIGUSR1);
		sent++;
		usleep(200);
	}
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, w.ret) TH_LOG("a command failed: %s", strerror(-w.ret));
	EXPECT_EQ(0, w.wrong_round) TH_LOG("round %d's copy was lost", w.wrong_round - 1);
	after = ctx_stats(fd);
	EXPECT_EQ(before.cancels, after.cancels) TH_LOG("a fault group was cancelled");
	TH_LOG("%lu signals sent, %u EINTR seen, %d rounds", sent, w.eintr, w.rounds);
	munmap(w.src, w.len);
}

TEST_F_TIMEOUT(signal, storm_submit_wait, 600)
{
	storm(_metadata, self->fd, true);
}

TEST_F_TIMEOUT(signal, storm_submit_then_wait, 600)
{
	storm(_metadata, self->fd, false);
}

/* A child's SUBMIT that waits for @sync first; exits 0 if its FILL ran. */
static int in_fence_child(int sync, uint8_t *dst)
{
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)dst,
				    .size = PAGE, .value = 0x5a5a5a5a5a5a5a5aull };
	struct gmem_accel_submit s = { .cmds = (uintptr_t)&c, .count = 1,
				       .flags = GMEM_ACCEL_SUBMIT_IN_FENCE, .fence = sync };
	int fd = gmem_open(0, O_RDWR);

	if (fd < 0 || ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &s) || wait_fence(fd, s.fence))
		return 1;
	return dst[0] == 0x5a && dst[PAGE - 1] == 0x5a ? 0 : 2;
}

/* Wait up to @ms for child @pid; its exit status, -1 if it did not end (then killed). */
static int reap_within(pid_t pid, int ms)
{
	int status;

	for (int i = 0; i < ms / 10; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/*
 * The fence of a SUBMIT_WAIT batch exported while the batch runs (its fault held): the
 * sync_file polls readable once the batch is done, and another process's SUBMIT that waits
 * for it runs. The batch raises no interrupt of its own; its waiter signals the fence.
 */
TEST_F_TIMEOUT(signal, fence_exported_during_submit_wait_signals, 300)
{
	struct waiter w = { .fd = self->fd, .len = 4 * PAGE, .submit_wait = true, .ret = 1 };
	__u64 fence = next_fence(self->fd, self->scratch);
	struct pollfd p = { .events = POLLIN };
	uint8_t *shared;
	pthread_t t;
	pid_t child;
	int sync;

	ASSERT_NE(0, fence);
	shared = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, shared);
	w.src = map_anon(w.len, PROT_READ | PROT_WRITE);
	w.dst = map_anon(w.len, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, w.src);
	ASSERT_NE(NULL, w.dst);
	pattern(w.src, w.len, 3);
	ASSERT_EQ(0, write_sysfs(HOLD, "1"));
	ASSERT_EQ(0, pthread_create(&t, NULL, held_copy, &w));
	ASSERT_TRUE(hold_taken()) TH_LOG("the command's fault group was never held");
	sync = export_fence(self->fd, fence);
	ASSERT_LE(0, sync) TH_LOG("FENCE_EXPORT of the running batch: %s", strerror(-sync));
	p.fd = sync;
	EXPECT_EQ(0, poll(&p, 1, 0)) TH_LOG("readable while its batch is held");
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0)
		_exit(in_fence_child(sync, shared));
	usleep(100000);
	EXPECT_NE(0x5a, shared[0]) TH_LOG("the child's batch ran before its in-fence signaled");
	ASSERT_EQ(0, write_sysfs(HOLD, "0"));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, w.ret);
	EXPECT_EQ(fence, w.fence) TH_LOG("the exported fence was not the batch's");
	EXPECT_EQ(0, memcmp(w.dst, w.src, w.len));
	EXPECT_EQ(1, poll(&p, 1, 60000)) TH_LOG("the sync_file never became readable");
	EXPECT_TRUE(p.revents & POLLIN);
	EXPECT_EQ(0, reap_within(child, 120000)) TH_LOG("the child's in-fence SUBMIT never ran");
	close(sync);
	munmap(shared, PAGE);
	munmap(w.src, w.len);
	munmap(w.dst, w.len);
}

/*
 * Fences exported while SUBMIT_WAIT batches run, many times without fault injection: each
 * sync_file becomes readable once its batch is done.
 */
struct exporter {
	int fd;
	__u64 first;
	int rounds;
	volatile bool stop;
	int exported, unsignaled;
};

static void *export_rounds(void *arg)
{
	struct exporter *e = arg;

	for (__u64 f = e->first; f < e->first + e->rounds && !e->stop; f++) {
		struct pollfd p = { .events = POLLIN };

		/* Wait for batch f to be queued (EINVAL until then). */
		while ((p.fd = export_fence(e->fd, f)) == -EINVAL && !e->stop)
			sched_yield();
		if (p.fd < 0)
			continue;
		e->exported++;
		if (poll(&p, 1, 60000) != 1)
			e->unsignaled++;
		close(p.fd);
	}
	return NULL;
}

TEST_F_TIMEOUT(signal, fences_exported_during_submit_wait_rounds, 600)
{
	struct waiter w = { .fd = self->fd, .len = 2 * PAGE, .submit_wait = true, .rounds = 60 };
	struct exporter e = { .fd = self->fd, .rounds = 60 };
	pthread_t te;

	e.first = next_fence(self->fd, self->scratch);
	ASSERT_NE(0, e.first);
	w.src = map_anon(w.len, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, w.src);
	ASSERT_EQ(0, pthread_create(&te, NULL, export_rounds, &e));
	copy_rounds(&w);
	e.stop = true;
	ASSERT_EQ(0, pthread_join(te, NULL));
	EXPECT_EQ(0, w.ret);
	EXPECT_EQ(0, w.wrong_round);
	EXPECT_EQ(0, e.unsignaled) TH_LOG("%d of %d exported fences never signaled",
					   e.unsignaled, e.exported);
	TH_LOG("%d fences exported", e.exported);
	munmap(w.src, w.len);
}

static int64_t stat_of(const char *name)
{
	int64_t v = INT64_MIN;

	gmem_debugfs_stat(0, name, &v);
	return v;
}

/*
 * A process killed while its SUBMIT_WAIT's fault group is held: the command ends with its
 * owner, the held server lets go, and every gauge of the device is back where it was.
 */
TEST_F_TIMEOUT(signal, killed_during_held_submit_wait, 300)
{
	static const char *const gauges[] = { "contexts_now", "pt_pages_now",
					      "dma_mapped_pages_now", "notifiers_now" };
	int64_t before[4];
	int status;
	pid_t pid;

	for (int i = 0; i < 4; i++)
		before[i] = stat_of(gauges[i]);
	ASSERT_EQ(0, write_sysfs(HOLD, "1"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct waiter w = { .fd = gmem_open(0, O_RDWR), .len = 16 * PAGE,
				    .submit_wait = true };

		w.src = map_anon(w.len, PROT_READ | PROT_WRITE);
		w.dst = map_anon(w.len, PROT_READ | PROT_WRITE);
		if (w.fd < 0 || !w.src || !w.dst)
			_exit(1);
		copy_once(&w);
		_exit(2);	/* not reached: killed while held */
	}
	EXPECT_TRUE(hold_taken()) TH_LOG("the child's fault group was never held");
	kill(pid, SIGKILL);
	EXPECT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(0, write_sysfs(HOLD, "0"));
	for (int i = 0; i < 4; i++) {
		int64_t now = gmem_wait_stat(0, gauges[i], before[i], 30000);

		EXPECT_EQ(before[i], now) TH_LOG("%s", gauges[i]);
	}
}

struct migrater {
	int fd;
	uint8_t *buf;
	size_t len;
	volatile bool done;
	long moved;
};

static void *migrate_all(void *arg)
{
	struct migrater *m = arg;

	m->moved = dev_migrate(m->fd, m->buf, m->len, GMEM_ACCEL_TO_DEVICE);
	m->done = true;
	return NULL;
}

/*
 * MIGRATE under a storm of non-fatal signals is not interrupted: every page moves, the bytes
 * with them.
 */
TEST_F_TIMEOUT(signal, migrate_runs_through_signals, 600)
{
	struct migrater m = { .fd = self->fd, .len = 16ul << 20 };
	uint8_t *want;
	pthread_t t;
	unsigned long sent = 0;

	m.buf = map_anon(m.len, PROT_READ | PROT_WRITE);
	want = map_anon(m.len, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, m.buf);
	ASSERT_NE(NULL, want);
	ASSERT_EQ(0, no_numa_scan(m.buf, m.len));
	pattern(want, m.len, 9);
	memcpy(m.buf, want, m.len);
	ASSERT_EQ(0, pthread_create(&t, NULL, migrate_all, &m));
	while (!m.done) {
		pthread_kill(t, SIGUSR1);
		sent++;
		usleep(500);
	}
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ((long)(m.len / PAGE), m.moved) TH_LOG("%lu signals sent", sent);
	EXPECT_EQ(0, memcmp(m.buf, want, m.len));
	munmap(m.buf, m.len);
	munmap(want, m.len);
}

struct in_fence_submit {
	int fd, sync;
	uint8_t *dst;
	int ret;
	__u64 fence;
	volatile bool done;
};

static void *submit_after(void *arg)
{
	struct in_fence_submit *s = arg;
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)s->dst,
				    .size = PAGE, .value = 0x4242424242424242ull };
	struct gmem_accel_submit sub = { .cmds = (uintptr_t)&c, .count = 1,
					 .flags = GMEM_ACCEL_SUBMIT_IN_FENCE, .fence = s->sync };

	s->ret = ioctl(s->fd, GMEM_ACCEL_IOC_SUBMIT, &sub) ? -errno : 0;
	s->fence = sub.fence;
	s->done = true;
	return NULL;
}

/*
 * A SUBMIT waiting for its in-fence (a SUBMIT_WAIT batch whose fault is held) gets a
 * non-fatal signal: EINTR, nothing queued (the FILL did not run, and ran not later either;
 * `fence` still holds the in-fence); submitted again once the fence signaled, it runs.
 */
TEST_F_TIMEOUT(signal, in_fence_wait_interrupted_queues_nothing, 300)
{
	struct waiter w = { .fd = self->fd, .len = 4 * PAGE, .submit_wait = true, .ret = 1 };
	struct in_fence_submit s = { .fd = gmem_open(0, O_RDWR) };
	__u64 fence = next_fence(self->fd, self->scratch);
	pthread_t tw, ts;

	ASSERT_LE(0, s.fd);
	ASSERT_NE(0, fence);
	s.dst = map_anon(PAGE, PROT_READ | PROT_WRITE);
	w.src = map_anon(w.len, PROT_READ | PROT_WRITE);
	w.dst = map_anon(w.len, PROT_READ | PROT_WRITE);
	ASSERT_TRUE(s.dst && w.src && w.dst);
	s.dst[0] = 1;
	ASSERT_EQ(0, write_sysfs(HOLD, "1"));
	ASSERT_EQ(0, pthread_create(&tw, NULL, held_copy, &w));
	ASSERT_TRUE(hold_taken());
	s.sync = export_fence(self->fd, fence);
	ASSERT_LE(0, s.sync);
	ASSERT_EQ(0, pthread_create(&ts, NULL, submit_after, &s));
	usleep(100000);
	for (int i = 0; i < 600 && !s.done; i++) {
		pthread_kill(ts, SIGUSR1);
		usleep(10000);
	}
	ASSERT_EQ(0, pthread_join(ts, NULL));
	EXPECT_EQ(-EINTR, s.ret);
	EXPECT_EQ(s.sync, s.fence) TH_LOG("a fence for a batch that was not queued");
	ASSERT_EQ(0, write_sysfs(HOLD, "0"));
	ASSERT_EQ(0, pthread_join(tw, NULL));
	EXPECT_EQ(0, w.ret);
	usleep(200000);
	EXPECT_EQ(1, s.dst[0]) TH_LOG("the interrupted SUBMIT's FILL ran");
	/* Again, the fence signaled now: it runs. */
	s.done = false;
	submit_after(&s);
	EXPECT_EQ(0, s.ret);
	EXPECT_EQ(0, wait_fence(s.fd, s.fence));
	EXPECT_EQ(0x42, s.dst[0]);
	close(s.sync);
	close(s.fd);
	munmap(s.dst, PAGE);
	munmap(w.src, w.len);
	munmap(w.dst, w.len);
}

struct allocation {
	int fd;
	struct gmem_accel_obj_alloc a;
	int ret;
	volatile bool done;
};

static void *alloc_obj(void *arg)
{
	struct allocation *al = arg;

	al->ret = ioctl(al->fd, GMEM_ACCEL_IOC_OBJ_ALLOC, &al->a) ? -errno : 0;
	al->done = true;
	return NULL;
}

/*
 * An HBM allocation that has to evict another object to make room, under a storm of
 * non-fatal signals: it succeeds (or restarts unseen), the evicted object keeps its bytes.
 */
TEST_F_TIMEOUT(signal, obj_alloc_evicting_through_signals, 600)
{
	uint64_t hbm = gmem_expect("hbm_size", 256ul << 20);
	struct allocation first = { .fd = self->fd,
				    .a = { .size = hbm / 4 * 3, .flags = GMEM_ACCEL_OBJ_HBM } };
	struct allocation second = { .fd = self->fd,
				     .a = { .size = hbm / 2, .flags = GMEM_ACCEL_OBJ_HBM } };
	struct gmem_accel_obj_free fr = { 0 };
	struct gmem_accel_obj_query q = { 0 };
	uint8_t *map, *out = map_anon(PAGE, PROT_READ | PROT_WRITE);
	unsigned long sent = 0;
	pthread_t t;

	ASSERT_NE(NULL, out);
	alloc_obj(&first);
	ASSERT_EQ(0, first.ret);
	map = mmap(NULL, first.a.size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		   first.a.mmap_offset);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, dev_fill(self->fd, map, 0x2727272727272727ull, first.a.size));
	ASSERT_EQ(0, pthread_create(&t, NULL, alloc_obj, &second));
	while (!second.done) {
		pthread_kill(t, SIGUSR1);
		sent++;
		usleep(500);
	}
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, second.ret) TH_LOG("%lu signals sent", sent);
	q.handle = first.a.handle;
	ASSERT_EQ(0, ioctl(self->fd, GMEM_ACCEL_IOC_OBJ_QUERY, &q));
	EXPECT_TRUE(q.flags & GMEM_ACCEL_OBJ_SYSTEM) TH_LOG("the first object was not evicted");
	for (uint64_t off = 0; off < first.a.size; off += first.a.size / 8) {
		ASSERT_EQ(0, dev_copy(self->fd, out, map + off, PAGE));
		EXPECT_EQ(0x27, out[0]);
		EXPECT_EQ(0x27, map[off + PAGE - 1]);
	}
	munmap(map, first.a.size);
	fr.handle = first.a.handle;
	EXPECT_EQ(0, ioctl(self->fd, GMEM_ACCEL_IOC_OBJ_FREE, &fr));
	fr.handle = second.a.handle;
	EXPECT_EQ(0, second.ret ? 0 : ioctl(self->fd, GMEM_ACCEL_IOC_OBJ_FREE, &fr));
	munmap(out, PAGE);
}

struct adviser {
	int fd;
	uint8_t *buf;
	size_t len;
	volatile bool done;
	int ret;
};

static void *advise_home(void *arg)
{
	struct adviser *a = arg;
	struct gmem_accel_advise adv = { .addr = (uintptr_t)a->buf, .size = a->len,
					 .location = GMEM_ACCEL_PREFER_SYSTEM };

	a->ret = ioctl(a->fd, GMEM_ACCEL_IOC_ADVISE, &adv) ? -errno : 0;
	a->done = true;
	return NULL;
}

/*
 * ADVISE PREFER_SYSTEM brings a range's HBM pages home at once; under a storm of non-fatal
 * signals it is not interrupted: it succeeds, every page is home, every byte with it.
 */
TEST_F_TIMEOUT(signal, advise_home_runs_through_signals, 600)
{
	struct adviser a = { .fd = self->fd, .len = 16ul << 20 };
	unsigned long sent = 0, in_hbm = 0;
	uint8_t *want;
	pthread_t t;

	a.buf = map_anon(a.len, PROT_READ | PROT_WRITE);
	want = map_anon(a.len, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, a.buf);
	ASSERT_NE(NULL, want);
	ASSERT_EQ(0, no_numa_scan(a.buf, a.len));
	pattern(want, a.len, 5);
	memcpy(a.buf, want, a.len);
	ASSERT_EQ((long)(a.len / PAGE), dev_migrate(self->fd, a.buf, a.len, GMEM_ACCEL_TO_DEVICE));
	ASSERT_EQ(0, pthread_create(&t, NULL, advise_home, &a));
	while (!a.done) {
		pthread_kill(t, SIGUSR1);
		sent++;
		usleep(500);
	}
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, a.ret) TH_LOG("%lu signals sent", sent);
	for (size_t off = 0; off < a.len; off += PAGE)
		in_hbm += !!(page_view(self->fd, a.buf + off) & GMEM_ACCEL_PAGE_HBM);
	EXPECT_EQ(0, in_hbm) TH_LOG("pages left in HBM");
	EXPECT_EQ(0, memcmp(a.buf, want, a.len));
	munmap(a.buf, a.len);
	munmap(want, a.len);
}

TEST_HARNESS_MAIN
