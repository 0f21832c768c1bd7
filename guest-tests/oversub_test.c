// SPDX-License-Identifier: GPL-2.0
/*
 * Oversubscription (guest-driver/gmem_accel_oversub.c): a PREFER_DEVICE working set 4x the
 * HBM that the device streams through migrates and evicts a window at each fault without the
 * policy; with it, once an eviction of a chunk used in the current burst shows HBM
 * oversubscribed, the device's faults map system memory instead, and migrations and
 * evictions stop. A working set that fits still migrates; after an epoch without pressure,
 * faults migrate again. Every device read is checked word by word (the CPU never touches the
 * streamed buffer meanwhile: it would take pages home); the device counters show each step,
 * and its absence when the policy is off. TCG is slow: the fixture sets a 10 s epoch.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define MiB (1024ul * 1024)
#define WINDOW (2 * MiB)
#define CMD_LEN (64 * 1024ul)
#define BATCH 16
#define RW (PROT_READ | PROT_WRITE)
#define PARAM_PREFIX "gmem_perf_oversub_"

/* The parameters a test may change; the teardown restores each. */
static const char *const params[] = { "enable", "epoch_msec" };

static int64_t stat_of(int dev, const char *name)
{
	int64_t v = INT64_MIN;

	gmem_debugfs_stat(dev, name, &v);
	return v;
}

static int advise(int fd, void *addr, size_t len, unsigned int location)
{
	struct gmem_accel_advise a = { .addr = (uintptr_t)addr, .size = len,
				       .location = location };

	return ioctl(fd, GMEM_ACCEL_IOC_ADVISE, &a) ? -errno : 0;
}

/* The word at byte offset @off of a streamed buffer. */
static uint64_t word_at(size_t off, uint64_t seed)
{
	return (off / 8) * 0x9e3779b97f4a7c15ull ^ seed;
}

/* @p holds the buffer's bytes from offset @base. */
static void fill_words(uint64_t *p, size_t base, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len / 8; i++)
		p[i] = word_at(base + i * 8, seed);
}

/* Memory for the stream: 4 KiB pages NUMA balancing leaves alone, patterned, advised. */
static uint64_t *stream_buf(int fd, size_t len, uint64_t seed)
{
	uint64_t *p = map_anon(len, RW);

	if (!p)
		return NULL;
	if (madvise(p, len, MADV_NOHUGEPAGE) || no_numa_scan(p, len) ||
	    advise(fd, p, len, GMEM_ACCEL_PREFER_DEVICE)) {
		munmap(p, len);
		return NULL;
	}
	fill_words(p, 0, len, seed);
	return p;
}

/* A batch submitted and waited for through signals (EINTR: the batch goes on). */
static int run_patiently(int fd, struct gmem_accel_cmd *c, unsigned int n)
{
	struct gmem_accel_submit s = { .cmds = (uintptr_t)c, .count = n };
	struct gmem_accel_wait w = { .timeout_ms = 120000 };
	int ret;

	while ((ret = ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &s)) && errno == EINTR)
		;
	if (ret)
		return -errno;
	w.fence = s.fence;
	while ((ret = ioctl(fd, GMEM_ACCEL_IOC_WAIT, &w)) && errno == EINTR)
		;
	return ret ? -errno : 0;
}

/*
 * The device reads [buf + from, buf + to) into @scratch (BATCH x CMD_LEN), 64 KiB a command;
 * each batch's bytes are checked against the pattern of @seed. 0, -errno, or -EILSEQ for a
 * wrong word.
 */
static int stream(int fd, uint64_t *buf, size_t from, size_t to, uint64_t seed,
		  uint64_t *scratch)
{
	struct gmem_accel_cmd c[BATCH];

	for (size_t off = from; off < to; off += BATCH * CMD_LEN) {
		unsigned int n = 0;
		int ret;

		for (; n < BATCH && off + n * CMD_LEN < to; n++)
			c[n] = (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_COPY,
				.dst = (uintptr_t)scratch + n * CMD_LEN,
				.src = (uintptr_t)buf + off + n * CMD_LEN, .size = CMD_LEN };
		ret = run_patiently(fd, c, n);
		if (ret)
			return ret;
		for (size_t i = 0; i < n * CMD_LEN / 8; i++) {
			if (scratch[i] == word_at(off + i * 8, seed))
				continue;
			fprintf(stderr, "# offset %#zx: %#llx, not %#llx\n", off + i * 8,
				(unsigned long long)scratch[i],
				(unsigned long long)word_at(off + i * 8, seed));
			return -EILSEQ;
		}
	}
	return 0;
}

/* What one pass changed on the device. */
struct pass {
	int64_t migrated, evictions, remote, episodes;
};

static void pass_begin(int dev, struct pass *p)
{
	p->migrated = stat_of(dev, "migrated_to_device");
	p->evictions = stat_of(dev, "evictions");
	p->remote = stat_of(dev, "oversub_remote_maps");
	p->episodes = stat_of(dev, "oversub_episodes");
}

static void pass_end(int dev, struct pass *p)
{
	p->migrated = stat_of(dev, "migrated_to_device") - p->migrated;
	p->evictions = stat_of(dev, "evictions") - p->evictions;
	p->remote = stat_of(dev, "oversub_remote_maps") - p->remote;
	p->episodes = stat_of(dev, "oversub_episodes") - p->episodes;
}

FIXTURE(oversub) {
	int fd;
	int dev;
	uint64_t saved[2];
	size_t hbm, len;
	uint64_t *buf, *scratch;
	int64_t gauges0[4];
};

/* What a closed test leaves as it found: nothing in HBM, DMA-mapped, watched, open. */
static const char *const gauges[] = { "hbm_pages_now", "dma_mapped_pages_now", "notifiers_now",
				      "contexts_now" };

/*
 * An earlier test's oversubscription ends: its epoch, made short, runs out, and the next
 * PREFER_DEVICE fault notices (so that each test's episodes are its own).
 */
static int end_oversubscription(int dev, uint64_t *scratch)
{
	int fd = gmem_open(dev, O_RDWR), ret = -ENOMEM;
	uint64_t *p;

	if (fd < 0)
		return fd;
	gmem_param_set(PARAM_PREFIX, "epoch_msec", 1);
	usleep(20000);
	p = stream_buf(fd, CMD_LEN, 0);
	if (p) {
		ret = stream(fd, p, 0, CMD_LEN, 0, scratch);
		munmap(p, CMD_LEN);
	}
	close(fd);
	return ret;
}

FIXTURE_SETUP(oversub)
{
	struct gmem_accel_info info = { 0 };

	self->dev = 0;
	self->buf = NULL;
	self->fd = -1;
	for (int i = 0; i < 2; i++)
		self->saved[i] = gmem_param_get(PARAM_PREFIX, params[i]);
	ASSERT_EQ(0, gmem_param_set(PARAM_PREFIX, "enable", 1));
	self->scratch = map_anon(BATCH * CMD_LEN, RW);
	ASSERT_NE(NULL, self->scratch);
	ASSERT_EQ(0, end_oversubscription(self->dev, self->scratch));
	/* TCG streams HBM through far slower than a GPU: a quiet epoch it does not end early. */
	ASSERT_EQ(0, gmem_param_set(PARAM_PREFIX, "epoch_msec", 10000));
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	for (int i = 0; i < 4; i++)
		self->gauges0[i] = stat_of(self->dev, gauges[i]);
	self->fd = gmem_open(self->dev, O_RDWR);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, GMEM_ACCEL_IOC_GET_INFO, &info));
	self->hbm = info.hbm_size & ~(WINDOW - 1);
	self->len = 4 * self->hbm;
}

FIXTURE_TEARDOWN(oversub)
{
	if (self->buf)
		munmap(self->buf, self->len);
	if (self->fd >= 0)
		close(self->fd);
	for (int i = 0; i < 2; i++)
		gmem_param_set(PARAM_PREFIX, params[i], self->saved[i]);
}

/* Closed: each gauge back at its baseline @gauges0. */
static void expect_baseline(struct __test_metadata *_metadata, int dev, const int64_t *gauges0)
{
	for (int k = 0; k < 4; k++) {
		int64_t v = gmem_wait_stat(dev, gauges[k], gauges0[k], 120000);

		EXPECT_EQ(gauges0[k], v) TH_LOG("%s", gauges[k]);
	}
}

/*
 * With the policy: the first pass migrates until an eviction shows the oversubscription, then
 * maps system memory; the second pass migrates and evicts (almost) nothing.
 */
TEST_F_TIMEOUT(oversub, stream_4x_maps_remotely, 1800)
{
	size_t windows = self->len / WINDOW;
	struct pass p1, p2;

	self->buf = stream_buf(self->fd, self->len, 1);
	ASSERT_NE(NULL, self->buf);
	pass_begin(self->dev, &p1);
	ASSERT_EQ(0, stream(self->fd, self->buf, 0, self->len, 1, self->scratch));
	pass_end(self->dev, &p1);
	pass_begin(self->dev, &p2);
	ASSERT_EQ(0, stream(self->fd, self->buf, 0, self->len, 1, self->scratch));
	pass_end(self->dev, &p2);
	TH_LOG("pass 1: %lld migrated, %lld evictions, %lld remote; pass 2: %lld, %lld, %lld",
	       (long long)p1.migrated, (long long)p1.evictions, (long long)p1.remote,
	       (long long)p2.migrated, (long long)p2.evictions, (long long)p2.remote);
	EXPECT_LE(1, p1.episodes);
	/* Pass 1: HBM filled, then a few evictions before the state, the rest mapped remotely. */
	EXPECT_LE(self->hbm / PAGE / 2, p1.migrated);
	EXPECT_GT(windows / 8, p1.evictions);
	EXPECT_LT(windows / 2, p1.remote);
	/* Pass 2: what is in HBM stays, the rest is read where the first pass mapped it. */
	EXPECT_GT(windows / 16, p2.evictions);
	EXPECT_GT((int64_t)(self->len / PAGE / 16), p2.migrated);
	munmap(self->buf, self->len);
	self->buf = NULL;
	close(self->fd);
	self->fd = -1;
	expect_baseline(_metadata, self->dev, self->gauges0);
}

/* Without it: every window migrates at its fault and evicts another, in both passes. */
TEST_F_TIMEOUT(oversub, stream_4x_without_policy, 1800)
{
	size_t windows = self->len / WINDOW;
	struct pass p1, p2;

	ASSERT_EQ(0, gmem_param_set(PARAM_PREFIX, "enable", 0));
	self->buf = stream_buf(self->fd, self->len, 2);
	ASSERT_NE(NULL, self->buf);
	pass_begin(self->dev, &p1);
	ASSERT_EQ(0, stream(self->fd, self->buf, 0, self->len, 2, self->scratch));
	pass_end(self->dev, &p1);
	pass_begin(self->dev, &p2);
	ASSERT_EQ(0, stream(self->fd, self->buf, 0, self->len, 2, self->scratch));
	pass_end(self->dev, &p2);
	TH_LOG("pass 1: %lld migrated, %lld evictions; pass 2: %lld, %lld",
	       (long long)p1.migrated, (long long)p1.evictions, (long long)p2.migrated,
	       (long long)p2.evictions);
	EXPECT_EQ(0, p1.episodes + p2.episodes);
	EXPECT_EQ(0, p1.remote + p2.remote);
	EXPECT_LE((int64_t)(self->len / PAGE * 3 / 4), p1.migrated);
	EXPECT_LE((int64_t)(self->len / PAGE * 3 / 4), p2.migrated);
	EXPECT_LE(windows / 2, p1.evictions);
	EXPECT_LE(windows * 3 / 4, p2.evictions);
}

static unsigned long pages_in_hbm(int fd, void *addr, size_t len)
{
	unsigned long n = 0;

	for (size_t off = 0; off < len; off += PAGE)
		n += !!(page_view(fd, (char *)addr + off) & GMEM_ACCEL_PAGE_HBM);
	return n;
}

/* A working set half the HBM migrates at its faults, the policy on or not, and stays. */
TEST_F_TIMEOUT(oversub, fitting_working_set_migrates, 900)
{
	size_t len = self->hbm / 2;
	struct pass p;

	self->buf = stream_buf(self->fd, len, 3);
	ASSERT_NE(NULL, self->buf);
	pass_begin(self->dev, &p);
	ASSERT_EQ(0, stream(self->fd, self->buf, 0, len, 3, self->scratch));
	ASSERT_EQ(0, stream(self->fd, self->buf, 0, len, 3, self->scratch));
	pass_end(self->dev, &p);
	EXPECT_EQ(0, p.episodes);
	EXPECT_EQ(0, p.remote);
	EXPECT_EQ(0, p.evictions);
	/* (best effort, as every migration: a page held for a moment stays where it is) */
	EXPECT_LE((int64_t)(len / PAGE * 15 / 16), p.migrated);
	EXPECT_LE(len / PAGE * 15 / 16, pages_in_hbm(self->fd, self->buf, len));
	munmap(self->buf, len);
	self->buf = NULL;
}

/*
 * After the oversubscribed stream, an epoch without pressure: a new working set's faults
 * migrate again (evicting the stream's chunks, which are of an earlier burst: no episode).
 */
TEST_F_TIMEOUT(oversub, migration_resumes_after_an_epoch, 1800)
{
	size_t len = 16 * MiB;
	uint64_t *other;
	struct pass p1, p2;

	self->buf = stream_buf(self->fd, self->len, 4);
	ASSERT_NE(NULL, self->buf);
	pass_begin(self->dev, &p1);
	ASSERT_EQ(0, stream(self->fd, self->buf, 0, self->len, 4, self->scratch));
	pass_end(self->dev, &p1);
	ASSERT_LE(1, p1.episodes);
	ASSERT_LT(0, p1.remote);
	other = stream_buf(self->fd, len, 5);
	ASSERT_NE(NULL, other);
	/* The epoch, shortened, passes with nothing streamed. */
	ASSERT_EQ(0, gmem_param_set(PARAM_PREFIX, "epoch_msec", 300));
	sleep(2);
	pass_begin(self->dev, &p2);
	ASSERT_EQ(0, stream(self->fd, other, 0, len, 5, self->scratch));
	pass_end(self->dev, &p2);
	TH_LOG("after the epoch: %lld migrated, %lld evictions, %lld remote",
	       (long long)p2.migrated, (long long)p2.evictions, (long long)p2.remote);
	EXPECT_EQ(0, p2.episodes);
	EXPECT_EQ(0, p2.remote);
	EXPECT_LE((int64_t)(len / PAGE * 15 / 16), p2.migrated);
	EXPECT_LE(len / PAGE * 15 / 16, pages_in_hbm(self->fd, other, len));
	munmap(other, len);
}

/* A process killed while it streams oversubscribed leaves nothing behind. */
TEST_F_TIMEOUT(oversub, kill_during_oversubscribed_stream, 1800)
{
	int64_t remote0 = stat_of(self->dev, "oversub_remote_maps"), remote = remote0;
	int status;
	pid_t pid;

	close(self->fd);
	self->fd = -1;
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = gmem_open(self->dev, O_RDWR);
		uint64_t *buf = fd < 0 ? NULL : stream_buf(fd, self->len, 6);

		if (!buf)
			_exit(2);
		for (;;)
			if (stream(fd, buf, 0, self->len, 6, self->scratch))
				_exit(1);
	}
	/* Oversubscribed and mapping remotely for a while: kill it in its stream. */
	for (int ms = 0; remote < remote0 + 64 && ms < 1200000; ms += 100) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(100000);
		remote = stat_of(self->dev, "oversub_remote_maps");
	}
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("child exited %d", WEXITSTATUS(status));
	EXPECT_LE(remote0 + 64, remote);
	expect_baseline(_metadata, self->dev, self->gauges0);
}

struct racer {
	int fd;
	uint64_t *buf, *scratch;
	size_t len;
	int stop;		/* __atomic */
	int bad;		/* a command that ended other than 0 or EFAULT */
	unsigned long batches;
};

/* Device reads of the buffer's last quarter, over and over, while it is unmapped and back. */
static void *race_reader(void *arg)
{
	struct racer *r = arg;
	struct gmem_accel_cmd c[BATCH];

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		for (size_t off = r->len / 4 * 3; off < r->len; off += BATCH * CMD_LEN) {
			int ret;

			for (unsigned int n = 0; n < BATCH; n++)
				c[n] = (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_COPY,
					.dst = (uintptr_t)r->scratch + n * CMD_LEN,
					.src = (uintptr_t)r->buf + off + n * CMD_LEN,
					.size = CMD_LEN };
			ret = run_patiently(r->fd, c, BATCH);
			if (ret && ret != -EFAULT)
				r->bad = ret;
			r->batches++;
		}
	}
	return NULL;
}

/*
 * munmap of remotely mapped windows while the device faults on them (the policy's decision
 * and the unmap race): commands end well or with EFAULT, the memory mapped there again reads
 * right, nothing leaks.
 */
TEST_F_TIMEOUT(oversub, munmap_races_remote_mapping, 1800)
{
	struct racer r = { .fd = self->fd, .len = self->len };
	size_t part = self->len / 4 * 3;
	pthread_t t;

	self->buf = stream_buf(self->fd, self->len, 7);
	ASSERT_NE(NULL, self->buf);
	ASSERT_EQ(0, stream(self->fd, self->buf, 0, self->len, 7, self->scratch));
	ASSERT_LE(1, stat_of(self->dev, "oversub_remote_maps"));
	r.buf = self->buf;
	r.scratch = map_anon(BATCH * CMD_LEN, RW);
	ASSERT_NE(NULL, r.scratch);
	ASSERT_EQ(0, pthread_create(&t, NULL, race_reader, &r));
	for (int i = 0; i < 3; i++) {
		char *last = (char *)self->buf + part;
		void *p;

		usleep(200000);
		ASSERT_EQ(0, munmap(last, self->len - part));
		usleep(20000);
		p = mmap(last, self->len - part, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		ASSERT_EQ((void *)last, p);
		ASSERT_EQ(0, madvise(p, self->len - part, MADV_NOHUGEPAGE));
		ASSERT_EQ(0, no_numa_scan(p, self->len - part));
		ASSERT_EQ(0, advise(self->fd, p, self->len - part, GMEM_ACCEL_PREFER_DEVICE));
		fill_words(p, part, self->len - part, 8);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	EXPECT_EQ(0, r.bad);
	TH_LOG("%lu batches raced", r.batches);
	/* The first three quarters as they were, the last as written last. */
	EXPECT_EQ(0, stream(self->fd, self->buf, 0, part, 7, self->scratch));
	EXPECT_EQ(0, stream(self->fd, self->buf, part, self->len, 8, self->scratch));
	munmap(r.scratch, BATCH * CMD_LEN);
	munmap(self->buf, self->len);
	self->buf = NULL;
	close(self->fd);
	self->fd = -1;
	expect_baseline(_metadata, self->dev, self->gauges0);
}

static void on_alarm(int sig)
{
}

/* Signals all through the oversubscribed stream: every command completes, bytes exact. */
TEST_F_TIMEOUT(oversub, signals_during_oversubscribed_stream, 1800)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { { 0, 5000 }, { 0, 5000 } };
	struct pass p;
	int ret;

	self->buf = stream_buf(self->fd, self->len, 9);
	ASSERT_NE(NULL, self->buf);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));	/* no SA_RESTART: calls see EINTR */
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	pass_begin(self->dev, &p);
	ret = stream(self->fd, self->buf, 0, self->len, 9, self->scratch);
	if (!ret)
		ret = stream(self->fd, self->buf, 0, self->len, 9, self->scratch);
	pass_end(self->dev, &p);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	ASSERT_EQ(0, ret);
	EXPECT_LE(1, p.episodes);
	EXPECT_LT(0, p.remote);
}

/* Out-of-range writes to the parameters are refused and change nothing. */
TEST_F_TIMEOUT(oversub, parameters_are_checked, 60)
{
	EXPECT_EQ(-EINVAL, gmem_param_set(PARAM_PREFIX, "enable", 2));
	EXPECT_EQ(1, gmem_param_get(PARAM_PREFIX, "enable"));
	EXPECT_EQ(-EINVAL, gmem_param_set(PARAM_PREFIX, "epoch_msec", 0));
	EXPECT_EQ(-EINVAL, gmem_param_set(PARAM_PREFIX, "epoch_msec", 3600001));
	EXPECT_EQ(10000, gmem_param_get(PARAM_PREFIX, "epoch_msec"));
	EXPECT_EQ(0, gmem_param_set(PARAM_PREFIX, "enable", 0));
	EXPECT_EQ(0, gmem_param_get(PARAM_PREFIX, "enable"));
}

TEST_HARNESS_MAIN
