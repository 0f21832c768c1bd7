// SPDX-License-Identifier: GPL-2.0
/*
 * Density prefetch and the replay policy (gmem_accel_prefetch.c, gmem_accel_replay.c): a
 * device touching a buffer in order, a page per command as a GPU's warps do, faults a few
 * times per 2 MiB window with prefetch on and once per page (or per 64 KiB block the CPU
 * populated) with it off; the module parameters switch it and are checked; every replay
 * policy runs a multi-process fault workload to the last byte; munmap, kills and signals
 * during it lose nothing and leak nothing.
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
#define MIB (1ul << 20)
#define PARAM(n) "/sys/module/gmem_accel/parameters/" n
#define P_ENABLE PARAM("uvm_perf_prefetch_enable")
#define P_THRESHOLD PARAM("uvm_perf_prefetch_threshold")
#define P_MIN_FAULTS PARAM("uvm_perf_prefetch_min_faults")
#define P_POLICY PARAM("uvm_perf_fault_replay_policy")
#define P_BATCH PARAM("uvm_perf_fault_batch_count")

static const char *const params[] = { P_ENABLE, P_THRESHOLD, P_MIN_FAULTS, P_POLICY, P_BATCH };
#define NPARAMS (sizeof(params) / sizeof(params[0]))

/* Seconds on the monotonic clock: printed beside the counts, never asserted. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int set_param(const char *path, long v)
{
	char s[32];

	snprintf(s, sizeof(s), "%ld", v);
	return write_sysfs(path, s);
}

static uint64_t param(const char *path)
{
	uint64_t v = ~0ull;

	read_sysfs_u64(path, &v);
	return v;
}

static int64_t stat0(const char *name)
{
	int64_t v = INT64_MIN;

	gmem_debugfs_stat(0, name, &v);
	return v;
}

/* A 2 MiB aligned buffer of @len bytes (4 KiB pages), or NULL. */
static uint8_t *map_aligned(size_t len)
{
	uint8_t *p = map_small_pages(len + 2 * MIB), *a;

	if (!p)
		return NULL;
	a = (uint8_t *)(((uintptr_t)p + 2 * MIB - 1) & ~(2 * MIB - 1));
	if (a > p)
		munmap(p, a - p);
	munmap(a + len, p + len + 2 * MIB - (a + len));
	return a;
}

static uint64_t page_value(size_t page, unsigned int seed)
{
	return 0x0101010101010101ull * (uint8_t)(page * 7 + seed + 1);
}

/*
 * The device touches [buf, buf + len) in order, one command per page, GMEM_ACCEL_MAX_BATCH
 * commands a batch: a FILL of each page (@src NULL) or a COPY of @src's page into it.
 * 0 or the errno of the first batch that failed.
 */
static int touch_in_order(int fd, uint8_t *buf, const uint8_t *src, size_t len, unsigned int seed)
{
	struct gmem_accel_cmd c[GMEM_ACCEL_MAX_BATCH];
	size_t pages = len / PAGE;

	for (size_t p = 0; p < pages; ) {
		unsigned int n = 0;
		int ret;

		for (; n < GMEM_ACCEL_MAX_BATCH && p < pages; n++, p++) {
			memset(&c[n], 0, sizeof(c[n]));
			c[n].op = src ? GMEM_ACCEL_OP_COPY : GMEM_ACCEL_OP_FILL;
			c[n].dst = (uintptr_t)(buf + p * PAGE);
			c[n].src = src ? (uintptr_t)(src + p * PAGE) : 0;
			c[n].value = src ? 0 : page_value(p, seed);
			c[n].size = PAGE;
		}
		ret = run_cmds(fd, c, n);
		if (ret)
			return ret;
	}
	return 0;
}

/* Pages of @buf that do not hold what touch_in_order(FILL, @seed) wrote. */
static size_t fill_mismatches(const uint8_t *buf, size_t len, unsigned int seed)
{
	size_t bad = 0;

	for (size_t p = 0; p < len / PAGE; p++) {
		uint64_t v = page_value(p, seed);
		const uint64_t *w = (const uint64_t *)(buf + p * PAGE);

		for (size_t i = 0; i < PAGE / 8; i++)
			if (w[i] != v) {
				bad++;
				break;
			}
	}
	return bad;
}

struct run {
	uint64_t groups;	/* the context's fault groups */
	double secs;		/* the touch took */
	int64_t prefetched;	/* the device's prefetch_pages */
	int ret;
	size_t bad;		/* pages with wrong bytes */
};

/* A sequential FILL of fresh memory on a new context, with prefetch @on. */
static struct run fresh_run(size_t len, bool on, unsigned int seed)
{
	struct run r = { .ret = -ENOMEM };
	uint8_t *buf = map_aligned(len);
	int fd = gmem_open(0, O_RDWR);
	int64_t pf0 = stat0("prefetch_pages");

	if (!buf || fd < 0 || set_param(P_ENABLE, on))
		goto out;
	r.secs = now_s();
	r.ret = touch_in_order(fd, buf, NULL, len, seed);
	r.secs = now_s() - r.secs;
	r.groups = ctx_stats(fd).fault_groups;
	r.prefetched = stat0("prefetch_pages") - pf0;
	r.bad = fill_mismatches(buf, len, seed);
out:
	if (fd >= 0)
		close(fd);
	if (buf)
		munmap(buf, len);
	return r;
}

FIXTURE(prefetch) {
	uint64_t saved[NPARAMS];
};

FIXTURE_SETUP(prefetch)
{
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	for (unsigned int i = 0; i < NPARAMS; i++) {
		self->saved[i] = param(params[i]);
		ASSERT_NE(~0ull, self->saved[i]) TH_LOG("%s", params[i]);
	}
}

FIXTURE_TEARDOWN(prefetch)
{
	for (unsigned int i = 0; i < NPARAMS; i++)
		set_param(params[i], self->saved[i]);
}

/*
 * Fresh memory (the CPU never touched it), 64 MiB filled a page per command: off, every page
 * is a fault group of its own; on, a window faults a few times and the rest is prefetched.
 */
TEST_F_TIMEOUT(prefetch, sequential_fresh_cuts_fault_groups, 1200)
{
	size_t len = debug_kernel() ? 16 * MIB : 64 * MIB;
	struct run off = fresh_run(len, false, 1), on = fresh_run(len, true, 2);

	ASSERT_EQ(0, off.ret);
	ASSERT_EQ(0, on.ret);
	EXPECT_EQ(0, off.bad);
	EXPECT_EQ(0, on.bad);
	EXPECT_EQ(0, off.prefetched);
	EXPECT_LT(0, on.prefetched);
	EXPECT_LE(on.groups * 4, off.groups) TH_LOG("fault groups: %llu on, %llu off",
		(unsigned long long)on.groups, (unsigned long long)off.groups);
	ksft_print_msg("%zu MiB fresh: %llu fault groups off (%.2f s), %llu on (%.2f s), %lld pages prefetched\n",
		       len / MIB, (unsigned long long)off.groups, off.secs,
		       (unsigned long long)on.groups, on.secs, (long long)on.prefetched);
}

/*
 * Memory the CPU wrote, copied a page per command: off, map-around maps a 64 KiB block at
 * a time; on, the density of the window brings in the rest of it.
 */
TEST_F_TIMEOUT(prefetch, sequential_populated_cuts_fault_groups, 1200)
{
	size_t len = debug_kernel() ? 8 * MIB : 32 * MIB;
	uint64_t groups[2];

	for (int on = 0; on < 2; on++) {
		uint8_t *src = map_aligned(len), *dst = map_aligned(len);
		int fd = gmem_open(0, O_RDWR);
		int64_t pf0 = stat0("prefetch_pages");

		ASSERT_NE(NULL, src);
		ASSERT_NE(NULL, dst);
		ASSERT_LE(0, fd);
		pattern(src, len, 5 + on);
		memset(dst, 0, len);
		ASSERT_EQ(0, set_param(P_ENABLE, on));
		ASSERT_EQ(0, touch_in_order(fd, dst, src, len, 0));
		EXPECT_EQ(0, memcmp(src, dst, len));
		groups[on] = ctx_stats(fd).fault_groups;
		if (on) {
			EXPECT_LT(0, stat0("prefetch_pages") - pf0);
		} else {
			EXPECT_EQ(0, stat0("prefetch_pages") - pf0);
		}
		close(fd);
		munmap(src, len);
		munmap(dst, len);
	}
	EXPECT_LE(groups[1] * 4, groups[0]) TH_LOG("fault groups: %llu on, %llu off",
		(unsigned long long)groups[1], (unsigned long long)groups[0]);
	ksft_print_msg("%zu MiB populated: %llu fault groups off, %llu on\n", len / MIB,
		       (unsigned long long)groups[0], (unsigned long long)groups[1]);
}

/* uvm_perf_prefetch_threshold 100: no region is ever dense enough; 51 prefetches. */
TEST_F_TIMEOUT(prefetch, threshold_changes_the_result, 600)
{
	struct run r;

	ASSERT_EQ(0, set_param(P_THRESHOLD, 100));
	r = fresh_run(4 * MIB, true, 3);
	ASSERT_EQ(0, r.ret);
	EXPECT_EQ(0, r.bad);
	EXPECT_EQ(0, r.prefetched);
	EXPECT_EQ(4 * MIB / PAGE, r.groups);
	ASSERT_EQ(0, set_param(P_THRESHOLD, 51));
	r = fresh_run(4 * MIB, true, 4);
	ASSERT_EQ(0, r.ret);
	EXPECT_EQ(0, r.bad);
	EXPECT_LT(0, r.prefetched);
	EXPECT_GT(4 * MIB / PAGE / 4, r.groups);
}

/*
 * uvm_perf_prefetch_min_faults 2: groups of one fault in a window prefetch nothing; groups of
 * two (a command over two pages) do.
 */
TEST_F_TIMEOUT(prefetch, min_faults_honoured, 600)
{
	size_t len = 4 * MIB;
	uint8_t *buf = map_aligned(len);
	int fd = gmem_open(0, O_RDWR);
	int64_t pf0;
	struct run r;

	ASSERT_NE(NULL, buf);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_param(P_MIN_FAULTS, 2));
	r = fresh_run(len, true, 6);
	ASSERT_EQ(0, r.ret);
	EXPECT_EQ(0, r.prefetched);
	/* 8 KiB a command: each group asks for two pages of one window */
	pf0 = stat0("prefetch_pages");
	for (size_t off = 0; off < len; off += 2 * PAGE)
		ASSERT_EQ(0, dev_fill(fd, buf + off, 0x4242424242424242ull, 2 * PAGE));
	EXPECT_LT(0, stat0("prefetch_pages") - pf0);
	for (size_t i = 0; i < len; i += 512)
		ASSERT_EQ(0x42, buf[i]);
	close(fd);
	munmap(buf, len);
}

/* Values out of range are refused with EINVAL and change nothing. */
TEST_F_TIMEOUT(prefetch, bad_values_einval, 60)
{
	static const struct { const char *p; long bad; } cases[] = {
		{ P_ENABLE, 2 }, { P_THRESHOLD, 0 }, { P_THRESHOLD, 101 }, { P_MIN_FAULTS, 0 },
		{ P_MIN_FAULTS, 21 }, { P_POLICY, 4 }, { P_BATCH, 0 }, { P_BATCH, 16385 },
	};

	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t before = param(cases[i].p);

		EXPECT_EQ(-EINVAL, set_param(cases[i].p, cases[i].bad)) TH_LOG("%s", cases[i].p);
		EXPECT_EQ(before, param(cases[i].p));
	}
	EXPECT_EQ(-EINVAL, write_sysfs(P_THRESHOLD, "many"));
	EXPECT_EQ(0, set_param(P_BATCH, 16384));
	EXPECT_EQ(0, set_param(P_BATCH, 1));
	EXPECT_EQ(0, set_param(P_THRESHOLD, 1));
	EXPECT_EQ(1, param(P_THRESHOLD));
}

/* Batches of FILLs a process keeps in flight (its ring holds 256 commands). */
#define INFLIGHT 3

/*
 * One process of the policy workload: @rounds times, INFLIGHT batches of a page per FILL over
 * fresh memory queued at once, waited for by poll() on their sync_file (not by WAIT, which
 * would serve the faults on this thread: the fault workers serve them, under the policy),
 * then every byte checked. Exit status 0, or the step that failed (20 + errno for a batch).
 */
static int policy_child(int rounds, unsigned int seed)
{
	size_t len = INFLIGHT * GMEM_ACCEL_MAX_BATCH * PAGE;
	int fd = gmem_open(0, O_RDWR);

	if (fd < 0)
		return 10;
	for (int r = 0; r < rounds; r++) {
		uint8_t *buf = map_small_pages(len);
		struct gmem_accel_cmd c[GMEM_ACCEL_MAX_BATCH];
		uint64_t fence[INFLIGHT];

		if (!buf)
			return 11;
		for (int b = 0; b < INFLIGHT; b++) {
			struct gmem_accel_submit s = { .cmds = (uintptr_t)c,
						       .count = GMEM_ACCEL_MAX_BATCH };

			for (int i = 0; i < GMEM_ACCEL_MAX_BATCH; i++) {
				size_t p = b * GMEM_ACCEL_MAX_BATCH + i;

				memset(&c[i], 0, sizeof(c[i]));
				c[i].op = GMEM_ACCEL_OP_FILL;
				c[i].dst = (uintptr_t)(buf + p * PAGE);
				c[i].size = PAGE;
				c[i].value = page_value(p, seed + r);
			}
			if (ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &s))
				return 12;
			fence[b] = s.fence;
		}
		for (int b = 0; b < INFLIGHT; b++) {
			struct gmem_accel_fence_export e = { .fence = fence[b] };
			struct gmem_accel_wait w = { .fence = fence[b], .timeout_ms = 120000 };
			struct pollfd pfd = { .events = POLLIN };

			if (ioctl(fd, GMEM_ACCEL_IOC_FENCE_EXPORT, &e))
				return 13;
			pfd.fd = e.fd;
			if (poll(&pfd, 1, 300000) != 1)
				return 14;
			close(e.fd);
			if (ioctl(fd, GMEM_ACCEL_IOC_WAIT, &w))
				return 20 + errno;
		}
		if (fill_mismatches(buf, len, seed + r))
			return 15;
		munmap(buf, len);
	}
	close(fd);
	return 0;
}

/* Run @procs processes of policy_child(); 0 if each exited 0, else the first status. */
static int run_policy_workload(int procs, int rounds)
{
	pid_t pid[16];
	int status, failed = 0;

	for (int i = 0; i < procs; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			_exit(policy_child(rounds, 17 * i));
	}
	for (int i = 0; i < procs; i++) {
		if (pid[i] < 0 || waitpid(pid[i], &status, 0) != pid[i])
			failed = failed ?: 1;
		else if (!WIFEXITED(status) || WEXITSTATUS(status))
			failed = failed ?: (WIFEXITED(status) ? WEXITSTATUS(status) : 2);
	}
	return failed;
}

/*
 * Each replay policy runs a multi-process fault workload to the last byte, no batch failing
 * (EBUSY included); the answer passes show its batching: under block each answers one group,
 * under the others a pass answers every group it serviced together.
 */
TEST_F_TIMEOUT(prefetch, replay_policies_complete, 1800)
{
	int procs = debug_kernel() ? 4 : 8, rounds = debug_kernel() ? 1 : 2;

	ASSERT_EQ(0, set_param(P_ENABLE, 0));	/* a group per page: many of them */
	for (int policy = 0; policy < 4; policy++) {
		int64_t b0 = stat0("replay_batches"), g0 = stat0("replay_batch_groups");
		int64_t c0 = stat0("cancels"), batches, groups;
		double t;

		ASSERT_EQ(0, set_param(P_POLICY, policy));
		t = now_s();
		EXPECT_EQ(0, run_policy_workload(procs, rounds)) TH_LOG("policy %d", policy);
		t = now_s() - t;
		batches = stat0("replay_batches") - b0;
		groups = stat0("replay_batch_groups") - g0;
		EXPECT_EQ(0, stat0("cancels") - c0) TH_LOG("policy %d", policy);
		EXPECT_LT(0, batches);
		if (policy == 0) {
			EXPECT_EQ(batches, groups);
		} else {
			EXPECT_LT(batches, groups);
		}
		ksft_print_msg("policy %d: %lld groups answered in %lld passes, %.2f s\n", policy,
			       (long long)groups, (long long)batches, t);
	}
}

/* The device gauges a test must leave as it found them. */
static const char *const gauges[] = {
	"contexts_now", "pt_pages_now", "dma_mapped_pages_now", "hbm_pages_now",
};
#define NGAUGES (sizeof(gauges) / sizeof(gauges[0]))

static void read_gauges(int64_t *v)
{
	for (unsigned int i = 0; i < NGAUGES; i++)
		v[i] = stat0(gauges[i]);
}

/* Wait (60 s at most) for the gauges to come back to @base; true if they did. */
static bool gauges_back(const int64_t *base)
{
	for (int t = 0; t < 600; t++) {
		int64_t now[NGAUGES];
		bool same = true;

		read_gauges(now);
		for (unsigned int i = 0; i < NGAUGES; i++)
			same &= now[i] == base[i];
		if (same)
			return true;
		usleep(100000);
	}
	return false;
}

struct unmapper {
	uint8_t *volatile target;
	volatile int stop;
	int rounds;
};

/* Another thread: unmap the buffer the device is touching, again and again. */
static void *unmap_loop(void *arg)
{
	struct unmapper *u = arg;

	while (!u->stop) {
		uint8_t *t = u->target;

		if (t) {
			usleep(200 + rand() % 2000);
			munmap(t, 2 * MIB);
			u->target = NULL;
			u->rounds++;
		}
		usleep(100);
	}
	return NULL;
}

/*
 * munmap of the buffer while its prefetch is decided: the device's commands on it either
 * land or fail with EFAULT, a buffer beside it that stays mapped gets every byte, and the
 * device's gauges come back once the context closes.
 */
TEST_F_TIMEOUT(prefetch, munmap_during_prefetch, 900)
{
	struct unmapper u = { 0 };
	int64_t base[NGAUGES];
	uint8_t *keep = map_aligned(2 * MIB);
	int fd = gmem_open(0, O_RDWR), rounds = debug_kernel() ? 10 : 40;
	pthread_t t;

	ASSERT_NE(NULL, keep);
	ASSERT_LE(0, fd);
	close(fd);
	read_gauges(base);
	fd = gmem_open(0, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pthread_create(&t, NULL, unmap_loop, &u));
	for (int r = 0; r < rounds; r++) {
		uint8_t *buf = map_aligned(2 * MIB);
		int ret;

		ASSERT_NE(NULL, buf);
		u.target = buf;
		ret = touch_in_order(fd, buf, NULL, 2 * MIB, r);
		EXPECT_TRUE(ret == 0 || ret == -EFAULT) TH_LOG("round %d: %d", r, ret);
		while (u.target)
			usleep(100);
		ASSERT_EQ(0, touch_in_order(fd, keep, NULL, 2 * MIB, r));
		ASSERT_EQ(0, fill_mismatches(keep, 2 * MIB, r)) TH_LOG("round %d", r);
	}
	u.stop = 1;
	pthread_join(t, NULL);
	close(fd);
	munmap(keep, 2 * MIB);
	EXPECT_TRUE(gauges_back(base));
}

/*
 * A process killed while the fault workers hold its groups in a batch (each batching
 * policy): the others' bytes all land, and the device's gauges come back.
 */
TEST_F_TIMEOUT(prefetch, kill_during_batch, 900)
{
	int64_t base[NGAUGES];

	read_gauges(base);
	for (int policy = 1; policy < 4; policy++) {
		pid_t victim;
		int status;

		ASSERT_EQ(0, set_param(P_POLICY, policy));
		victim = fork();
		if (victim == 0)
			_exit(policy_child(1000, 3));
		/* once its groups flow through the workers */
		for (int64_t g0 = stat0("fault_groups"), i = 0;
		     i < 3000 && stat0("fault_groups") < g0 + 50; i++)
			usleep(10000);
		ASSERT_EQ(0, kill(victim, SIGKILL));
		EXPECT_EQ(0, run_policy_workload(2, 1)) TH_LOG("policy %d", policy);
		ASSERT_EQ(victim, waitpid(victim, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status));
	}
	EXPECT_TRUE(gauges_back(base));
}

static volatile int signals_seen;

static void on_signal(int sig)
{
	signals_seen++;
}

struct signaller {
	pthread_t target;
	volatile int stop;
};

static void *signal_loop(void *arg)
{
	struct signaller *s = arg;

	while (!s->stop) {
		pthread_kill(s->target, SIGUSR1);
		usleep(500);
	}
	return NULL;
}

/*
 * Signals while the process waits for batches whose faults prefetch: a WAIT ends with EINTR,
 * the work goes on, and asked again it reports the batch; every byte lands.
 */
TEST_F_TIMEOUT(prefetch, signals_while_waiting, 900)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct signaller s = { .target = pthread_self() };
	size_t len = debug_kernel() ? 4 * MIB : 16 * MIB, pages = len / PAGE;
	uint8_t *buf = map_aligned(len);
	int fd = gmem_open(0, O_RDWR), eintr = 0;
	pthread_t t;

	ASSERT_NE(NULL, buf);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_create(&t, NULL, signal_loop, &s));
	for (size_t p = 0; p < pages; p += GMEM_ACCEL_MAX_BATCH) {
		struct gmem_accel_cmd c[GMEM_ACCEL_MAX_BATCH];
		struct gmem_accel_submit sub = { .cmds = (uintptr_t)c, .count = GMEM_ACCEL_MAX_BATCH };
		struct gmem_accel_wait w = { .timeout_ms = 120000 };
		int ret;

		for (int i = 0; i < GMEM_ACCEL_MAX_BATCH; i++) {
			memset(&c[i], 0, sizeof(c[i]));
			c[i].op = GMEM_ACCEL_OP_FILL;
			c[i].dst = (uintptr_t)(buf + (p + i) * PAGE);
			c[i].size = PAGE;
			c[i].value = page_value(p + i, 9);
		}
		while (ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &sub))
			ASSERT_EQ(EINTR, errno);
		w.fence = sub.fence;
		while ((ret = ioctl(fd, GMEM_ACCEL_IOC_WAIT, &w)) && errno == EINTR)
			eintr++;
		ASSERT_EQ(0, ret) TH_LOG("batch at page %zu: %s", p, strerror(errno));
	}
	s.stop = 1;
	pthread_join(t, NULL);
	EXPECT_EQ(0, fill_mismatches(buf, len, 9));
	EXPECT_LT(0, signals_seen);
	ksft_print_msg("%d signals, %d waits interrupted\n", signals_seen, eintr);
	close(fd);
	munmap(buf, len);
}

TEST_HARNESS_MAIN
