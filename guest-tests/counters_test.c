// SPDX-License-Identifier: GPL-2.0
/*
 * Access-counter migration (gmem_accel_counters.c): a device hammering a range of system
 * memory moves it to HBM once a region's count passes uvm_perf_access_counter_threshold, and
 * with the policy off nothing moves; the threshold and granularity parameters take effect,
 * bad values are refused, a device reset sets the counters up again, and munmap, a kill or a
 * close racing the notifications leave nothing behind. Every case checks the bytes.
 *
 * What counts (docs/hardware-spec.md, "Access counters"): a COPY's step counts one access per
 * 4 KiB page of each VA operand it touches, in the aperture the page translates to. The
 * copies here go from the hammered buffer (system memory: remote) to a buffer moved to HBM
 * first (local: its records move nothing), so a COPY of N pages counts N remote accesses.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE	4096ul
#define SZ_64K	(64ul << 10)
#define SZ_2M	(2ul << 20)
#define PARAMS	"/sys/module/gmem_accel/parameters/uvm_perf_access_counter_"
#define AC_DEBUGFS "/sys/kernel/debug/gmem_accel/gmem_accel0/access_counters"
#define TRACE_EVENTS "/sys/kernel/tracing/events/gmem_accel/gmem_accel_ac_"

static const char * const params[] = {
	"migration_enable", "threshold", "granularity", "batch_count",
};
#define NPARAMS	(sizeof(params) / sizeof(params[0]))

static int set_param(const char *name, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), PARAMS "%s", name);
	return write_sysfs(path, val);
}

static int get_param(const char *name, char *buf, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), PARAMS "%s", name);
	return read_sysfs(path, buf, len);
}

static int64_t stat0(const char *name)
{
	int64_t v = INT64_MIN;

	gmem_debugfs_stat(0, name, &v);
	return v;
}

/* Poll counter @name of device 0 until it reaches @want (or @timeout_ms); the last value. */
static int64_t wait_at_least(const char *name, int64_t want, int timeout_ms)
{
	int64_t v = stat0(name);

	for (int waited = 0; v < want && waited < timeout_ms; waited += 10) {
		usleep(10 * 1000);
		v = stat0(name);
	}
	return v;
}

/* A line "name value" of debugfs access_counters; -1 if absent. */
static int64_t ac_field(const char *name)
{
	FILE *f = fopen(AC_DEBUGFS, "r");
	long long v, ret = -1;
	char key[64];

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2)
		if (!strcmp(key, name))
			ret = v;
	fclose(f);
	return ret;
}

/* @len bytes of private memory aligned to 2 MiB, or NULL. */
static uint8_t *map_aligned(size_t len)
{
	uint8_t *p = mmap(NULL, len + SZ_2M, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (uint8_t *)(((uintptr_t)p + SZ_2M - 1) & ~(SZ_2M - 1));
	if (a > p)
		munmap(p, a - p);
	munmap(a + len, p + SZ_2M - a);
	no_numa_scan(a, len);
	return a;
}

/* The device copies @src to @dst @times times, up to 16 commands a batch; 0 or -errno. */
static int hammer(int fd, void *dst, const void *src, size_t len, int times)
{
	struct gmem_accel_cmd c[16];

	while (times > 0) {
		int n = times < 16 ? times : 16, ret;

		for (int i = 0; i < n; i++)
			c[i] = (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_COPY,
				.dst = (uintptr_t)dst, .src = (uintptr_t)src, .size = len };
		ret = run_cmds(fd, c, n);
		if (ret)
			return ret;
		times -= n;
	}
	return 0;
}

/* How many of @npages pages from @addr the device maps in HBM (SNAPSHOT); -errno. */
static long hbm_pages(int fd, void *addr, size_t npages)
{
	uint8_t *v = calloc(npages, 1);
	struct gmem_accel_snapshot s = { .addr = (uintptr_t)addr, .npages = npages,
					 .out = (uintptr_t)v };
	long n = 0;

	if (!v)
		return -ENOMEM;
	if (ioctl(fd, GMEM_ACCEL_IOC_SNAPSHOT, &s)) {
		free(v);
		return -errno;
	}
	for (size_t i = 0; i < npages; i++)
		n += !!(v[i] & GMEM_ACCEL_PAGE_HBM);
	free(v);
	return n;
}

/*
 * Wait until the device maps @npages pages from @src in HBM, reading them once more each
 * round (a migration maps what it moved unless the CPU changed something meanwhile; the
 * device's fault maps it then). The last count.
 */
static long wait_in_hbm(int fd, void *dst, void *src, size_t npages, int timeout_ms)
{
	long n = hbm_pages(fd, src, npages);

	for (int waited = 0; n != (long)npages && waited < timeout_ms; waited += 100) {
		usleep(100 * 1000);
		if (hammer(fd, dst, src, npages * PAGE, 1))
			return -1;
		n = hbm_pages(fd, src, npages);
	}
	return n;
}

FIXTURE(counters) {
	char saved[NPARAMS][32];
	bool have_saved;
	int fd;
	uint8_t *src, *dst, *ref;
	size_t len;
};

FIXTURE_SETUP(counters)
{
	uint64_t caps = 0;

	self->fd = -1;
	self->have_saved = false;
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	if (read_sysfs_u64("/sys/class/gmem_accel/gmem_accel0/capabilities", &caps) ||
	    !(caps & GMEM_CAP_ACCESS_COUNTERS) || !(caps & GMEM_CAP_HBM))
		SKIP(return, "device 0 has no access counters or no HBM");
	for (size_t i = 0; i < NPARAMS; i++)
		ASSERT_EQ(0, get_param(params[i], self->saved[i], sizeof(self->saved[i])));
	self->have_saved = true;
	self->fd = gmem_open(0, O_RDWR);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(counters)
{
	if (self->fd >= 0)
		close(self->fd);
	write_sysfs(TRACE_EVENTS "notify/enable", "0");
	write_sysfs(TRACE_EVENTS "migrate/enable", "0");
	for (size_t i = 0; self->have_saved && i < NPARAMS; i++)
		EXPECT_EQ(0, set_param(params[i], self->saved[i]));
}

/*
 * The hammered buffer (@len, a pattern, in system memory), the buffer the device copies it
 * to (moved to HBM first) and the bytes both must hold.
 */
static void buffers(struct __test_metadata *_metadata, FIXTURE_DATA(counters) *self,
		    size_t len)
{
	self->len = len;
	self->src = map_aligned(len);
	self->dst = map_aligned(len);
	self->ref = malloc(len);
	ASSERT_NE(NULL, self->src);
	ASSERT_NE(NULL, self->dst);
	ASSERT_NE(NULL, self->ref);
	pattern(self->ref, len, 58);
	memcpy(self->src, self->ref, len);
	memset(self->dst, 0, len);
	ASSERT_EQ((long)(len / PAGE), dev_migrate(self->fd, self->dst, len, GMEM_ACCEL_TO_DEVICE));
}

/* Both buffers hold the pattern (the CPU's reads bring HBM pages home). */
static void bytes_exact(struct __test_metadata *_metadata, FIXTURE_DATA(counters) *self)
{
	EXPECT_EQ(0, memcmp(self->src, self->ref, self->len));
	EXPECT_EQ(0, memcmp(self->dst, self->ref, self->len));
}

/* UVM's defaults: -1 (auto: off without ATS), 256, 2m, 256; the device is not counting. */
TEST_F_TIMEOUT(counters, defaults_are_uvms, 60)
{
	EXPECT_STREQ("-1", self->saved[0]);
	EXPECT_STREQ("256", self->saved[1]);
	EXPECT_STREQ("2m", self->saved[2]);
	EXPECT_STREQ("256", self->saved[3]);
	EXPECT_EQ(1, ac_field("present"));
	EXPECT_EQ(0, ac_field("enabled"));
	EXPECT_EQ(0, ac_field("hw_ctrl"));
}

/* With migration on, a 2 MiB region the device keeps reading moves to HBM, whole. */
TEST_F_TIMEOUT(counters, hammered_region_moves_to_hbm, 300)
{
	int64_t mig0, pages0, notif0, bad0;
	struct gmem_accel_stats st0;

	ASSERT_EQ(0, set_param("granularity", "2m"));
	ASSERT_EQ(0, set_param("threshold", "256"));
	ASSERT_EQ(0, set_param("migration_enable", "1"));
	EXPECT_EQ(1, ac_field("enabled"));
	buffers(_metadata, self, SZ_2M);
	st0 = ctx_stats(self->fd);
	mig0 = stat0("ac_migrations");
	pages0 = stat0("ac_pages_migrated");
	notif0 = stat0("ac_notifications");
	bad0 = stat0("ac_records_bad");

	/* 512 remote accesses a copy: each passes the threshold of 256 */
	ASSERT_EQ(0, hammer(self->fd, self->dst, self->src, SZ_2M, 4));
	EXPECT_LE(mig0 + 1, wait_at_least("ac_migrations", mig0 + 1, 60000));
	EXPECT_LE(notif0 + 1, stat0("ac_notifications"));
	EXPECT_LE(pages0 + 512, stat0("ac_pages_migrated"));
	EXPECT_EQ(512, wait_in_hbm(self->fd, self->dst, self->src, 512, 60000));
	EXPECT_LE(st0.migrated_to_device + 512, ctx_stats(self->fd).migrated_to_device);
	EXPECT_EQ(bad0, stat0("ac_records_bad"));
	bytes_exact(_metadata, self);
}

/* Each notification and each migration it asks for is a trace event, with context and VA. */
TEST_F_TIMEOUT(counters, trace_events, 300)
{
	char want_ctx[32], want_va[48];
	int64_t mig0;
	char *trace;
	int tfd;

	ASSERT_EQ(0, set_param("granularity", "2m"));
	ASSERT_EQ(0, set_param("threshold", "256"));
	ASSERT_EQ(0, set_param("migration_enable", "1"));
	buffers(_metadata, self, SZ_2M);
	tfd = open("/sys/kernel/tracing/trace", O_WRONLY | O_TRUNC);
	ASSERT_LE(0, tfd);
	close(tfd);
	ASSERT_EQ(0, write_sysfs(TRACE_EVENTS "notify/enable", "1"));
	ASSERT_EQ(0, write_sysfs(TRACE_EVENTS "migrate/enable", "1"));
	mig0 = stat0("ac_migrations");
	ASSERT_EQ(0, hammer(self->fd, self->dst, self->src, SZ_2M, 4));
	EXPECT_LE(mig0 + 1, wait_at_least("ac_migrations", mig0 + 1, 60000));
	ASSERT_EQ(0, write_sysfs(TRACE_EVENTS "notify/enable", "0"));
	ASSERT_EQ(0, write_sysfs(TRACE_EVENTS "migrate/enable", "0"));
	trace = read_whole_file("/sys/kernel/tracing/trace");
	ASSERT_NE(NULL, trace);
	snprintf(want_ctx, sizeof(want_ctx), "ctx=%u ", ctx_stats(self->fd).context);
	snprintf(want_va, sizeof(want_va), "va=%#lx ", (unsigned long)self->src);
	EXPECT_TRUE(text_has_line(trace, "gmem_accel_ac_notify:", want_ctx, want_va,
				  "aperture=remote", NULL));
	EXPECT_TRUE(text_has_line(trace, "gmem_accel_ac_migrate:", want_ctx, want_va, "err=0",
				  NULL));
	snprintf(want_va, sizeof(want_va), "va=%#lx ", (unsigned long)self->dst);
	EXPECT_TRUE(text_has_line(trace, "gmem_accel_ac_notify:", want_ctx, want_va,
				  "aperture=local", NULL));
	if (!text_has_line(trace, "gmem_accel_ac_migrate:", want_ctx, "err=0", "pages=", NULL))
		TH_LOG("the trace was:\n%s", trace);
	free(trace);
	bytes_exact(_metadata, self);
}

/* Off (0, and the default -1): the device does not even count, nothing moves. */
TEST_F_TIMEOUT(counters, off_nothing_moves, 300)
{
	const char *off[] = { "0", "-1" };

	for (int k = 0; k < 2; k++) {
		int64_t mig0, notif0, hw_notified0;
		struct gmem_accel_stats st0;

		ASSERT_EQ(0, set_param("migration_enable", off[k]));
		EXPECT_EQ(0, ac_field("enabled"));
		EXPECT_EQ(0, ac_field("hw_ctrl"));
		buffers(_metadata, self, SZ_2M);
		st0 = ctx_stats(self->fd);
		mig0 = stat0("ac_migrations");
		notif0 = stat0("ac_notifications");
		hw_notified0 = ac_field("hw_notified");	/* (disabled, it keeps its count) */
		ASSERT_EQ(0, hammer(self->fd, self->dst, self->src, SZ_2M, 8));
		EXPECT_EQ(hw_notified0, ac_field("hw_notified"));
		EXPECT_EQ(0, ac_field("hw_tracked"));
		EXPECT_EQ(notif0, stat0("ac_notifications"));
		EXPECT_EQ(mig0, stat0("ac_migrations"));
		EXPECT_EQ(st0.migrated_to_device, ctx_stats(self->fd).migrated_to_device);
		EXPECT_EQ(0, hbm_pages(self->fd, self->src, 512));
		bytes_exact(_metadata, self);
		munmap(self->src, SZ_2M);
		munmap(self->dst, SZ_2M);
		free(self->ref);
	}
}

/*
 * The threshold is the device's: at 1024, one copy of 2 MiB (512 accesses) makes no record;
 * the second does, and the region moves.
 */
TEST_F_TIMEOUT(counters, threshold_takes_effect, 300)
{
	int64_t mig0;

	ASSERT_EQ(0, set_param("threshold", "1024"));
	ASSERT_EQ(0, set_param("granularity", "2m"));
	ASSERT_EQ(0, set_param("migration_enable", "1"));
	EXPECT_EQ(1024, ac_field("hw_threshold"));
	buffers(_metadata, self, SZ_2M);
	mig0 = stat0("ac_migrations");
	ASSERT_EQ(0, hammer(self->fd, self->dst, self->src, SZ_2M, 1));
	EXPECT_EQ(0, ac_field("hw_notified"));
	EXPECT_EQ(0, hbm_pages(self->fd, self->src, 512));
	ASSERT_EQ(0, hammer(self->fd, self->dst, self->src, SZ_2M, 1));
	EXPECT_LE(1, ac_field("hw_notified"));
	EXPECT_LE(mig0 + 1, wait_at_least("ac_migrations", mig0 + 1, 60000));
	EXPECT_EQ(512, wait_in_hbm(self->fd, self->dst, self->src, 512, 60000));
	bytes_exact(_metadata, self);
}

/* At 64k only the hammered 64 KiB block moves; the rest of its 2 MiB stays home. */
TEST_F_TIMEOUT(counters, granularity_64k_moves_only_the_hammered_block, 300)
{
	size_t off = 8 * SZ_64K, first = off / PAGE, n = SZ_64K / PAGE;
	int64_t mig0, pages0;

	ASSERT_EQ(0, set_param("granularity", "64k"));
	ASSERT_EQ(0, set_param("threshold", "256"));
	ASSERT_EQ(0, set_param("migration_enable", "1"));
	EXPECT_EQ(16, ac_field("granularity"));
	buffers(_metadata, self, SZ_2M);
	ASSERT_EQ(0, madvise(self->src, SZ_2M, MADV_NOHUGEPAGE));
	mig0 = stat0("ac_migrations");
	pages0 = stat0("ac_pages_migrated");
	/* every block once (16 accesses each), then one block 20 times (320) */
	ASSERT_EQ(0, hammer(self->fd, self->dst, self->src, SZ_2M, 1));
	ASSERT_EQ(0, hammer(self->fd, self->dst + off, self->src + off, SZ_64K, 20));
	EXPECT_LE(mig0 + 1, wait_at_least("ac_migrations", mig0 + 1, 60000));
	EXPECT_EQ((long)n, wait_in_hbm(self->fd, self->dst + off, self->src + off, n, 60000));
	EXPECT_EQ(pages0 + (long)n, stat0("ac_pages_migrated"));
	EXPECT_EQ((long)n, hbm_pages(self->fd, self->src, SZ_2M / PAGE));
	EXPECT_EQ(0, hbm_pages(self->fd, self->src, first));
	bytes_exact(_metadata, self);
}

/* Switched off while counting: the device stops and forgets every region at once. */
TEST_F_TIMEOUT(counters, switched_off_stops_counting, 300)
{
	ASSERT_EQ(0, set_param("threshold", "65535"));
	ASSERT_EQ(0, set_param("migration_enable", "1"));
	buffers(_metadata, self, SZ_2M);
	ASSERT_EQ(0, hammer(self->fd, self->dst, self->src, SZ_2M, 1));
	EXPECT_LE(1, ac_field("hw_tracked"));
	ASSERT_EQ(0, set_param("migration_enable", "0"));
	EXPECT_EQ(0, ac_field("enabled"));
	EXPECT_EQ(0, ac_field("hw_ctrl"));
	EXPECT_EQ(0, ac_field("hw_tracked"));
	bytes_exact(_metadata, self);
}

/* Values UVM's parameters do not take are refused (EINVAL) and change nothing. */
TEST_F_TIMEOUT(counters, bad_values_are_refused, 60)
{
	static const struct { const char *param, *val; } bad[] = {
		{ "threshold", "0" }, { "threshold", "65536" }, { "threshold", "x" },
		{ "threshold", "-1" }, { "granularity", "4k" }, { "granularity", "16m" },
		{ "granularity", "\n" }, { "granularity", "2mb" }, { "batch_count", "0" },
		{ "batch_count", "x" }, { "migration_enable", "on" },
		{ "migration_enable", "\n" },
	};
	char now[NPARAMS][32], buf[32];

	for (size_t i = 0; i < NPARAMS; i++)
		ASSERT_EQ(0, get_param(params[i], now[i], sizeof(now[i])));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, set_param(bad[i].param, bad[i].val))
			TH_LOG("%s = '%s'", bad[i].param, bad[i].val);
	}
	for (size_t i = 0; i < NPARAMS; i++) {
		ASSERT_EQ(0, get_param(params[i], buf, sizeof(buf)));
		EXPECT_STREQ(now[i], buf);
	}
	/* and the good ones are taken as given */
	ASSERT_EQ(0, set_param("granularity", "64k"));
	ASSERT_EQ(0, get_param("granularity", buf, sizeof(buf)));
	EXPECT_STREQ("64k", buf);
	ASSERT_EQ(0, set_param("threshold", "65535"));
	ASSERT_EQ(0, get_param("threshold", buf, sizeof(buf)));
	EXPECT_STREQ("65535", buf);
	ASSERT_EQ(0, set_param("batch_count", "1"));
	ASSERT_EQ(0, set_param("migration_enable", "7"));
	EXPECT_EQ(1, ac_field("enabled"));
}

/* A device reset under the driver: the watchdog sets the counters up again. */
TEST_F_TIMEOUT(counters, reset_sets_counters_up_again, 300)
{
	int64_t resets = stat0("device_resets"), mig0;
	/* a refused access-counter register write (0x300-0x33c) logs this */
	const char *refused = "device error 5, info 0x3";
	int refused0 = gmem_kernel_log_count(refused);

	ASSERT_EQ(0, set_param("granularity", "2m"));
	ASSERT_EQ(0, set_param("threshold", "256"));
	ASSERT_EQ(0, set_param("migration_enable", "1"));
	buffers(_metadata, self, SZ_2M);
	ASSERT_EQ(0, gmem_inject(0, "reset"));
	ASSERT_EQ(resets + 1, gmem_wait_stat(0, "device_resets", resets + 1, 30000));
	EXPECT_EQ(1, ac_field("hw_ctrl"));
	EXPECT_EQ(256, ac_field("hw_threshold"));
	mig0 = stat0("ac_migrations");
	/* (a batch the reset cancelled would be ECANCELED; none runs across it here) */
	ASSERT_EQ(0, hammer(self->fd, self->dst, self->src, SZ_2M, 4));
	EXPECT_LE(mig0 + 1, wait_at_least("ac_migrations", mig0 + 1, 60000));
	EXPECT_EQ(512, wait_in_hbm(self->fd, self->dst, self->src, 512, 60000));
	EXPECT_EQ(refused0, gmem_kernel_log_count(refused));
	bytes_exact(_metadata, self);
}

/*
 * Records a broken device would write (debugfs inject_ac_bad_records breaks one field of each:
 * context 0 and 64, aperture, granularity, an unaligned VA, one past 48 bits, count 0, a
 * reserved field): each is counted and ignored, nothing moves for it, and the records after
 * them work as before.
 */
TEST_F_TIMEOUT(counters, bad_records_are_counted_and_ignored, 300)
{
	const char *inject = "/sys/kernel/debug/gmem_accel/gmem_accel0/inject_ac_bad_records";
	int64_t bad0 = stat0("ac_records_bad"), mig0 = stat0("ac_migrations"), taken;
	uint64_t left = 0;

	ASSERT_EQ(0, set_param("granularity", "2m"));
	ASSERT_EQ(0, set_param("threshold", "256"));
	ASSERT_EQ(0, set_param("migration_enable", "1"));
	buffers(_metadata, self, SZ_2M);
	/* more than the copies make: every record they make is broken */
	ASSERT_EQ(0, write_sysfs(inject, "1000"));
	ASSERT_EQ(0, hammer(self->fd, self->dst, self->src, SZ_2M, 4));
	for (int waited = 0; ac_field("head") != ac_field("hw_tail") && waited < 60000;
	     waited += 10)
		usleep(10 * 1000);
	ASSERT_EQ(0, read_sysfs_u64(inject, &left));
	ASSERT_EQ(0, write_sysfs(inject, "0"));
	taken = 1000 - (int64_t)left;
	EXPECT_LE(8, taken);	/* each field broken at least once */
	EXPECT_EQ(bad0 + taken, stat0("ac_records_bad"));
	EXPECT_EQ(mig0, stat0("ac_migrations"));
	EXPECT_EQ(0, hbm_pages(self->fd, self->src, 512));
	/* and the next ones work */
	ASSERT_EQ(0, hammer(self->fd, self->dst, self->src, SZ_2M, 4));
	EXPECT_LE(mig0 + 1, wait_at_least("ac_migrations", mig0 + 1, 60000));
	EXPECT_EQ(512, wait_in_hbm(self->fd, self->dst, self->src, 512, 60000));
	EXPECT_EQ(bad0 + taken, stat0("ac_records_bad"));
	bytes_exact(_metadata, self);
}

/* Wait until the device is idle again: no context, no HBM page (nothing leaked). */
static void back_to_baseline(struct __test_metadata *_metadata)
{
	EXPECT_EQ(0, gmem_wait_stat(0, "contexts_now", 0, 60000));
	EXPECT_EQ(0, gmem_wait_stat(0, "hbm_pages_now", 0, 60000));
}

/*
 * Notifications in flight (64 KiB regions, a record every 16 accesses) while the hammered
 * range is unmapped under the worker's migrations, round after round.
 */
TEST_F_TIMEOUT(counters, munmap_while_notifications_in_flight, 600)
{
	size_t len = 4 * SZ_2M;
	int64_t bad0 = stat0("ac_records_bad"), notif0 = stat0("ac_notifications");
	uint8_t *ref = malloc(len), *dst = map_aligned(len);

	ASSERT_NE(NULL, ref);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, set_param("granularity", "64k"));
	ASSERT_EQ(0, set_param("threshold", "16"));
	ASSERT_EQ(0, set_param("migration_enable", "1"));
	pattern(ref, len, 7);
	memset(dst, 0, len);
	for (int round = 0; round < 8; round++) {
		uint8_t *src = map_aligned(len);

		ASSERT_NE(NULL, src);
		memcpy(src, ref, len);
		ASSERT_EQ((long)(len / PAGE), dev_migrate(self->fd, dst, len, GMEM_ACCEL_TO_DEVICE));
		ASSERT_EQ(0, hammer(self->fd, dst, src, len, 2));
		ASSERT_EQ(0, munmap(src, len));
		EXPECT_EQ(0, memcmp(dst, ref, len)) TH_LOG("round %d", round);
	}
	EXPECT_LT(notif0, stat0("ac_notifications"));
	close(self->fd);
	self->fd = -1;
	munmap(dst, len);
	free(ref);
	back_to_baseline(_metadata);
	EXPECT_EQ(bad0, stat0("ac_records_bad"));
}

/* A process that hammers a range until it is killed, at a different moment each round. */
TEST_F_TIMEOUT(counters, killed_while_its_region_migrates, 600)
{
	ASSERT_EQ(0, set_param("granularity", "2m"));
	ASSERT_EQ(0, set_param("threshold", "64"));
	ASSERT_EQ(0, set_param("migration_enable", "1"));
	close(self->fd);
	self->fd = -1;
	for (int round = 0; round < 6; round++) {
		int64_t notif0 = stat0("ac_notifications");
		int pipefd[2], status;
		char c;
		pid_t pid;

		ASSERT_EQ(0, pipe(pipefd));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			size_t len = 4 * SZ_2M;
			int fd = gmem_open(0, O_RDWR);
			uint8_t *src = map_aligned(len), *dst = map_aligned(len);

			if (fd < 0 || !src || !dst)
				_exit(1);
			memset(src, 1, len);
			memset(dst, 0, len);
			if (dev_migrate(fd, dst, len, GMEM_ACCEL_TO_DEVICE) < 0)
				_exit(1);
			if (write(pipefd[1], "r", 1) != 1)
				_exit(1);
			for (;;)
				if (hammer(fd, dst, src, len, 1))
					_exit(1);
		}
		close(pipefd[1]);
		ASSERT_EQ(1, read(pipefd[0], &c, 1));
		close(pipefd[0]);
		EXPECT_LT(notif0, wait_at_least("ac_notifications", notif0 + 1, 60000));
		usleep(round * 7000);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("round %d: status %#x", round, status);
	}
	back_to_baseline(_metadata);
}

/*
 * A context closed with its records still in the ring (a record for every step: threshold
 * 1): they are stale, counted as such, and never move another context's memory. Tried a few
 * times, as the worker may have drained the ring before the close.
 */
TEST_F_TIMEOUT(counters, closed_with_records_queued, 600)
{
	size_t len = 8 * SZ_2M;
	int64_t stale0 = stat0("ac_records_stale"), bad0 = stat0("ac_records_bad");
	bool stale = false;

	ASSERT_EQ(0, set_param("granularity", "64k"));
	ASSERT_EQ(0, set_param("threshold", "1"));
	ASSERT_EQ(0, set_param("migration_enable", "1"));
	for (int round = 0; round < 5 && !stale; round++) {
		uint8_t *src = map_aligned(len), *dst = map_aligned(len);

		ASSERT_NE(NULL, src);
		ASSERT_NE(NULL, dst);
		if (self->fd < 0)
			self->fd = gmem_open(0, O_RDWR);
		ASSERT_LE(0, self->fd);
		memset(src, 0x5a, len);
		memset(dst, 0, len);
		ASSERT_EQ((long)(len / PAGE), dev_migrate(self->fd, dst, len, GMEM_ACCEL_TO_DEVICE));
		ASSERT_EQ(0, hammer(self->fd, dst, src, len, 1));
		close(self->fd);
		self->fd = -1;
		for (size_t i = 0; i < len; i += PAGE)
			ASSERT_EQ(0x5a, dst[i]);
		munmap(src, len);
		munmap(dst, len);
		back_to_baseline(_metadata);
		/* the ring drained: every record taken */
		for (int waited = 0; ac_field("head") != ac_field("hw_tail") && waited < 60000;
		     waited += 10)
			usleep(10 * 1000);
		EXPECT_EQ(ac_field("hw_tail"), ac_field("head"));
		stale = stat0("ac_records_stale") > stale0;
	}
	EXPECT_TRUE(stale);
	EXPECT_EQ(bad0, stat0("ac_records_bad"));
}

TEST_HARNESS_MAIN
