// SPDX-License-Identifier: GPL-2.0
/*
 * Memory attributes of the DRM accel front end (Linux 7.3), as xe's madvise sets them:
 * MADVISE sets a range's preferred location or atomic access, QUERY_MEM_ATTRS reads them back
 * with the range that has them. The atomic access decides where the device's ATOMIC_ADD may
 * run: anywhere (UNDEFINED, DEVICE), in HBM only (GLOBAL: the range moves in), or nowhere
 * (CPU: the batch fails with EPERM, memory untouched), also for pages the device maps already
 * and for one page inside a 2 MiB range. Every sum is read back; HBM pages and the device's
 * gauges count back to where they were.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_drm_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define HUGE (2ul << 20)
#define DEV 1

static const char * const gauges[] = { "contexts_now", "drm_hbm_pages_now", "pt_pages_now",
					"dma_mapped_pages_now" };
#define NGAUGES 4

FIXTURE(attrs) {
	int fd;
	int64_t base[NGAUGES];
	uint8_t *buf;		/* 2 MiB aligned: one drm_gpusvm range */
};

FIXTURE_SETUP(attrs)
{
	self->fd = -1;
	self->buf = NULL;
	if (!path_exists("/sys/class/accel"))
		SKIP(return, "no DRM accel framework: the DRM front end needs Linux 7.3 with CONFIG_DRM_GPUSVM (images/kernel-7.3.config)");
	ASSERT_EQ(0, gmem_set_frontend(DEV, "drm"));
	for (int i = 0; i < NGAUGES; i++) {
		ASSERT_EQ(0, gmem_debugfs_stat(DEV, gauges[i], &self->base[i])) TH_LOG("%s", gauges[i]);
	}
	self->fd = gmem_open_accel(DEV, O_RDWR);
	ASSERT_LE(0, self->fd) TH_LOG("device %d's accel node: %s", DEV, strerror(errno));
	self->buf = mmap(NULL, 2 * HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	ASSERT_NE(MAP_FAILED, self->buf);
	self->buf = (uint8_t *)(((uintptr_t)self->buf + HUGE - 1) & ~(HUGE - 1));
	memset(self->buf, 0, HUGE);
}

FIXTURE_TEARDOWN(attrs)
{
	if (self->fd >= 0) {
		close(self->fd);
		for (int i = 0; i < NGAUGES; i++) {
			EXPECT_EQ(self->base[i],
				  gmem_wait_stat(DEV, gauges[i], self->base[i], 120000))
				TH_LOG("%s back to its value before the test", gauges[i]);
		}
	}
	if (path_exists("/sys/class/accel"))
		EXPECT_EQ(0, gmem_set_frontend(DEV, "gmem"));
}

static int madvise_attr(int fd, void *addr, size_t len, unsigned int type, unsigned int value)
{
	struct gmem_accel_drm_madvise m = { .addr = (uintptr_t)addr, .size = len, .type = type,
					    .value = value };

	return ioctl(fd, DRM_IOCTL_GMEM_ACCEL_MADVISE, &m) ? -errno : 0;
}

static int query(int fd, void *addr, struct gmem_accel_drm_mem_attrs *q)
{
	memset(q, 0, sizeof(*q));
	q->addr = (uintptr_t)addr;
	return ioctl(fd, DRM_IOCTL_GMEM_ACCEL_QUERY_MEM_ATTRS, q) ? -errno : 0;
}

/* The device adds @v to each of the @n u32 at @p (4 KiB apart): 0 or the batch's -errno. */
static int dev_atomic_add(int fd, void *p, unsigned int n, uint32_t v)
{
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_ATOMIC_ADD, .dst = (uintptr_t)p,
				    .size = n, .value = v, .dst_stride = PAGE };

	return run_cmds(fd, &c, 1);
}

static uint32_t *word(FIXTURE_DATA(attrs) *self, unsigned long page)
{
	return (uint32_t *)(self->buf + page * PAGE);
}

/* How many of the 4 KiB pages from @addr the device maps in HBM; -errno. */
static long hbm_pages(int fd, void *addr, size_t len)
{
	uint8_t out[HUGE / PAGE];
	struct gmem_accel_snapshot s = { .addr = (uintptr_t)addr, .npages = len / PAGE,
					 .out = (uintptr_t)out };
	long hbm = 0;

	if (len > HUGE || ioctl(fd, DRM_IOCTL_GMEM_ACCEL_SNAPSHOT, &s))
		return len > HUGE ? -E2BIG : -errno;
	for (size_t i = 0; i < len / PAGE; i++)
		hbm += !!(out[i] & GMEM_ACCEL_PAGE_HBM);
	return hbm;
}

TEST_F(attrs, bad_input_is_refused)
{
	struct gmem_accel_drm_madvise m = { .addr = (uintptr_t)self->buf, .size = PAGE,
					    .type = GMEM_ACCEL_DRM_ATTR_ATOMIC };
	struct gmem_accel_drm_mem_attrs q = { 0 };

	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, self->buf, PAGE, 2, 0));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, self->buf, PAGE, GMEM_ACCEL_DRM_ATTR_ATOMIC,
					GMEM_ACCEL_DRM_ATOMIC_CPU + 1));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, self->buf, PAGE,
					GMEM_ACCEL_DRM_ATTR_PREFERRED_LOC,
					GMEM_ACCEL_PREFER_SYSTEM + 1));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, self->buf + 1, PAGE,
					GMEM_ACCEL_DRM_ATTR_ATOMIC, 0));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, self->buf, PAGE + 1,
					GMEM_ACCEL_DRM_ATTR_ATOMIC, 0));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, self->buf, 0, GMEM_ACCEL_DRM_ATTR_ATOMIC, 0));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, (void *)(uintptr_t)-PAGE, PAGE,
					GMEM_ACCEL_DRM_ATTR_ATOMIC, 0));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, (void *)(1ul << 60), PAGE,
					GMEM_ACCEL_DRM_ATTR_ATOMIC, 0));
	m.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_MADVISE, &m));
	EXPECT_EQ(EINVAL, errno);
	q.addr = (uintptr_t)self->buf;
	q.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_QUERY_MEM_ATTRS, &q));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, query(self->fd, (void *)(1ul << 60), &q));
	/* nothing was set by the refused calls */
	ASSERT_EQ(0, query(self->fd, self->buf, &q));
	EXPECT_EQ(GMEM_ACCEL_PREFER_NONE, q.location);
	EXPECT_EQ(GMEM_ACCEL_DRM_ATOMIC_UNDEFINED, q.atomic);
	EXPECT_EQ(0, q.start);
}

/* Two attributes set over overlapping ranges read back each with the range that has both. */
TEST_F(attrs, query_gives_each_range_its_attributes)
{
	struct gmem_accel_drm_mem_attrs q;
	uintptr_t b = (uintptr_t)self->buf;

	ASSERT_EQ(0, madvise_attr(self->fd, self->buf, 2 * PAGE,
				  GMEM_ACCEL_DRM_ATTR_PREFERRED_LOC, GMEM_ACCEL_PREFER_DEVICE));
	ASSERT_EQ(0, madvise_attr(self->fd, self->buf + PAGE, 2 * PAGE,
				  GMEM_ACCEL_DRM_ATTR_ATOMIC, GMEM_ACCEL_DRM_ATOMIC_GLOBAL));
	ASSERT_EQ(0, query(self->fd, self->buf, &q));
	EXPECT_EQ(b, q.start);
	EXPECT_EQ(b + PAGE, q.end);
	EXPECT_EQ(GMEM_ACCEL_PREFER_DEVICE, q.location);
	EXPECT_EQ(GMEM_ACCEL_DRM_ATOMIC_UNDEFINED, q.atomic);
	ASSERT_EQ(0, query(self->fd, self->buf + PAGE + 5, &q));
	EXPECT_EQ(b + PAGE, q.start);
	EXPECT_EQ(b + 2 * PAGE, q.end);
	EXPECT_EQ(GMEM_ACCEL_PREFER_DEVICE, q.location);
	EXPECT_EQ(GMEM_ACCEL_DRM_ATOMIC_GLOBAL, q.atomic);
	ASSERT_EQ(0, query(self->fd, self->buf + 2 * PAGE, &q));
	EXPECT_EQ(b + 2 * PAGE, q.start);
	EXPECT_EQ(b + 3 * PAGE, q.end);
	EXPECT_EQ(GMEM_ACCEL_PREFER_NONE, q.location);
	EXPECT_EQ(GMEM_ACCEL_DRM_ATOMIC_GLOBAL, q.atomic);
	ASSERT_EQ(0, query(self->fd, self->buf + 3 * PAGE, &q));
	EXPECT_EQ(b + 3 * PAGE, q.start);
	EXPECT_EQ(GMEM_ACCEL_PREFER_NONE, q.location);
	EXPECT_EQ(GMEM_ACCEL_DRM_ATOMIC_UNDEFINED, q.atomic);
	/* back to the defaults: one range again */
	ASSERT_EQ(0, madvise_attr(self->fd, self->buf, 4 * PAGE, GMEM_ACCEL_DRM_ATTR_ATOMIC,
				  GMEM_ACCEL_DRM_ATOMIC_UNDEFINED));
	ASSERT_EQ(0, madvise_attr(self->fd, self->buf, 4 * PAGE,
				  GMEM_ACCEL_DRM_ATTR_PREFERRED_LOC, GMEM_ACCEL_PREFER_NONE));
	ASSERT_EQ(0, query(self->fd, self->buf + PAGE, &q));
	EXPECT_GT(b, q.start);
	EXPECT_LT(b + 4 * PAGE, q.end);
}

/* CPU: the device's atomics fail, also where it maps the pages already; its writes do not. */
TEST_F(attrs, cpu_atomics_refuse_the_device)
{
	ASSERT_EQ(0, dev_atomic_add(self->fd, self->buf, 8, 5));
	EXPECT_EQ(5, *word(self, 7));
	ASSERT_EQ(0, madvise_attr(self->fd, self->buf, HUGE, GMEM_ACCEL_DRM_ATTR_ATOMIC,
				  GMEM_ACCEL_DRM_ATOMIC_CPU));
	EXPECT_EQ(-EPERM, dev_atomic_add(self->fd, self->buf, 8, 5));
	for (unsigned long i = 0; i < 8; i++) {
		EXPECT_EQ(5, *word(self, i)) TH_LOG("page %lu", i);
	}
	/* writes are not atomics */
	ASSERT_EQ(0, dev_fill(self->fd, self->buf, 0x0707070707070707ull, PAGE));
	EXPECT_EQ(0x07070707u, *word(self, 0));
	ASSERT_EQ(0, madvise_attr(self->fd, self->buf, HUGE, GMEM_ACCEL_DRM_ATTR_ATOMIC,
				  GMEM_ACCEL_DRM_ATOMIC_DEVICE));
	ASSERT_EQ(0, dev_atomic_add(self->fd, self->buf, 8, 1));
	EXPECT_EQ(0x07070708u, *word(self, 0));
	EXPECT_EQ(6, *word(self, 7));
}

/* One CPU page inside a 2 MiB range: only its atomics fail, the pages around it add. */
TEST_F(attrs, one_cpu_page_in_a_range)
{
	ASSERT_EQ(0, madvise_attr(self->fd, self->buf + 100 * PAGE, PAGE,
				  GMEM_ACCEL_DRM_ATTR_ATOMIC, GMEM_ACCEL_DRM_ATOMIC_CPU));
	ASSERT_EQ(0, dev_atomic_add(self->fd, self->buf, 100, 3));
	ASSERT_EQ(0, dev_atomic_add(self->fd, self->buf + 101 * PAGE, 411, 4));
	EXPECT_EQ(-EPERM, dev_atomic_add(self->fd, self->buf + 100 * PAGE, 1, 9));
	EXPECT_EQ(3, *word(self, 0));
	EXPECT_EQ(3, *word(self, 99));
	EXPECT_EQ(0, *word(self, 100));
	EXPECT_EQ(4, *word(self, 101));
	EXPECT_EQ(4, *word(self, 511));
}

/* DEVICE: the device's atomics run where the pages are, in system memory here. */
TEST_F(attrs, device_atomics_run_in_place)
{
	int64_t in0, in;

	ASSERT_EQ(0, gmem_debugfs_stat(DEV, "drm_to_hbm", &in0));
	ASSERT_EQ(0, madvise_attr(self->fd, self->buf, HUGE, GMEM_ACCEL_DRM_ATTR_ATOMIC,
				  GMEM_ACCEL_DRM_ATOMIC_DEVICE));
	for (int round = 0; round < 3; round++)
		ASSERT_EQ(0, dev_atomic_add(self->fd, self->buf, 512, 2));
	EXPECT_EQ(0, hbm_pages(self->fd, self->buf, HUGE));
	for (unsigned long i = 0; i < 512; i++) {
		ASSERT_EQ(6, *word(self, i)) TH_LOG("page %lu", i);
	}
	ASSERT_EQ(0, gmem_debugfs_stat(DEV, "drm_to_hbm", &in));
	EXPECT_EQ(in0, in);
}

/*
 * GLOBAL: an atomic moves the range into HBM first (the device's atomics there are atomic
 * against the CPU's, whose access brings the pages home); plain writes leave it in place.
 */
TEST_F(attrs, global_atomics_move_the_range_to_hbm)
{
	int64_t in0, in;

	ASSERT_EQ(0, gmem_debugfs_stat(DEV, "drm_to_hbm", &in0));
	ASSERT_EQ(0, dev_fill(self->fd, self->buf, 0x0101010101010101ull, HUGE));
	ASSERT_EQ(0, madvise_attr(self->fd, self->buf, HUGE, GMEM_ACCEL_DRM_ATTR_ATOMIC,
				  GMEM_ACCEL_DRM_ATOMIC_GLOBAL));
	ASSERT_EQ(0, dev_fill(self->fd, self->buf, 0x0202020202020202ull, HUGE));
	EXPECT_EQ(0, hbm_pages(self->fd, self->buf, HUGE));
	ASSERT_EQ(0, dev_atomic_add(self->fd, self->buf, 512, 0x10));
	EXPECT_EQ(HUGE / PAGE, hbm_pages(self->fd, self->buf, HUGE));
	ASSERT_EQ(0, gmem_debugfs_stat(DEV, "drm_to_hbm", &in));
	EXPECT_LE(in0 + (int64_t)(HUGE / PAGE), in);
	/* the CPU's read brings the sums home */
	for (unsigned long i = 0; i < 512; i++) {
		ASSERT_EQ(0x02020212u, *word(self, i)) TH_LOG("page %lu", i);
	}
	EXPECT_EQ(0x02020202u, *(uint32_t *)(self->buf + 4));
	EXPECT_EQ(0, hbm_pages(self->fd, self->buf, HUGE));
	/* and in again for the next atomic */
	ASSERT_EQ(0, dev_atomic_add(self->fd, self->buf, 512, 1));
	EXPECT_EQ(HUGE / PAGE, hbm_pages(self->fd, self->buf, HUGE));
	EXPECT_EQ(0x02020213u, *word(self, 511));
}

struct churn {
	int fd;
	uint8_t *buf;
	atomic_bool stop;
};

/* Attributes changing under the device's atomics, and the CPU touching the pages. */
static void *churn_attrs(void *arg)
{
	struct churn *c = arg;
	static const unsigned int values[] = { GMEM_ACCEL_DRM_ATOMIC_GLOBAL,
					       GMEM_ACCEL_DRM_ATOMIC_CPU,
					       GMEM_ACCEL_DRM_ATOMIC_DEVICE,
					       GMEM_ACCEL_DRM_ATOMIC_UNDEFINED };

	for (unsigned int i = 0; !atomic_load(&c->stop); i++) {
		if (madvise_attr(c->fd, c->buf, HUGE, GMEM_ACCEL_DRM_ATTR_ATOMIC, values[i % 4]))
			return (void *)1;
		/* a CPU write beside the device's words: GLOBAL pages come home */
		c->buf[(i % 64) * PAGE + 64]++;
		usleep(500);
	}
	return NULL;
}

/*
 * MADVISE racing the device's atomics and the CPU's accesses: each batch adds or fails with
 * EPERM as a whole, and every word holds exactly the sum of the batches that succeeded.
 */
TEST_F_TIMEOUT(attrs, attributes_racing_atomics_lose_nothing, 900)
{
	struct churn c = { .fd = self->fd, .buf = self->buf };
	unsigned int done[64] = { 0 }, refused = 0;
	pthread_t t;
	void *ret;

	ASSERT_EQ(0, pthread_create(&t, NULL, churn_attrs, &c));
	for (unsigned int i = 0; i < 1024; i++) {
		int err = dev_atomic_add(self->fd, self->buf + (i % 64) * PAGE, 1, 1);

		if (err == -EPERM) {
			refused++;
			continue;
		}
		ASSERT_EQ(0, err) TH_LOG("batch %u", i);
		done[i % 64]++;
	}
	atomic_store(&c.stop, true);
	ASSERT_EQ(0, pthread_join(t, &ret));
	EXPECT_EQ(NULL, ret);
	for (unsigned long i = 0; i < 64; i++) {
		EXPECT_EQ(done[i], *word(self, i)) TH_LOG("page %lu", i);
	}
	TH_LOG("%u of 1024 atomics refused (CPU attribute)", refused);
}

TEST_HARNESS_MAIN
