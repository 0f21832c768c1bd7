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
#include "drm_fixture.h"

#define PAGE DRM_PAGE
#define HUGE DRM_HUGE

DRM_FIXTURE(attrs);

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

/* The u32 at the start of page @page of @buf. */
static uint32_t *word(uint8_t *buf, unsigned long page)
{
	return (uint32_t *)(buf + page * PAGE);
}

TEST_F(attrs, bad_input_is_refused)
{
	uint8_t *buf = map_2m(HUGE);
	struct gmem_accel_drm_madvise m = { .addr = (uintptr_t)buf, .size = PAGE,
					    .type = GMEM_ACCEL_DRM_ATTR_ATOMIC };
	struct gmem_accel_drm_mem_attrs q = { 0 };

	ASSERT_NE(NULL, buf);
	memset(buf, 0, HUGE);
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, buf, PAGE, 2, 0));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, buf, PAGE, GMEM_ACCEL_DRM_ATTR_ATOMIC,
					GMEM_ACCEL_DRM_ATOMIC_CPU + 1));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, buf, PAGE,
					GMEM_ACCEL_DRM_ATTR_PREFERRED_LOC,
					GMEM_ACCEL_PREFER_SYSTEM + 1));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, buf + 1, PAGE,
					GMEM_ACCEL_DRM_ATTR_ATOMIC, 0));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, buf, PAGE + 1,
					GMEM_ACCEL_DRM_ATTR_ATOMIC, 0));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, buf, 0, GMEM_ACCEL_DRM_ATTR_ATOMIC, 0));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, (void *)(uintptr_t)-PAGE, PAGE,
					GMEM_ACCEL_DRM_ATTR_ATOMIC, 0));
	EXPECT_EQ(-EINVAL, madvise_attr(self->fd, (void *)(1ul << 60), PAGE,
					GMEM_ACCEL_DRM_ATTR_ATOMIC, 0));
	m.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_MADVISE, &m));
	EXPECT_EQ(EINVAL, errno);
	q.addr = (uintptr_t)buf;
	q.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_QUERY_MEM_ATTRS, &q));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, query(self->fd, (void *)(1ul << 60), &q));
	/* nothing was set by the refused calls */
	ASSERT_EQ(0, query(self->fd, buf, &q));
	EXPECT_EQ(GMEM_ACCEL_PREFER_NONE, q.location);
	EXPECT_EQ(GMEM_ACCEL_DRM_ATOMIC_UNDEFINED, q.atomic);
	EXPECT_EQ(0, q.start);
	munmap(buf, HUGE);
	closed_gives_back(_metadata, self);
}

/* Two attributes set over overlapping ranges read back each with the range that has both. */
TEST_F(attrs, query_gives_each_range_its_attributes)
{
	uint8_t *buf = map_2m(HUGE);
	struct gmem_accel_drm_mem_attrs q;
	uintptr_t b = (uintptr_t)buf;

	ASSERT_NE(NULL, buf);
	memset(buf, 0, HUGE);
	ASSERT_EQ(0, madvise_attr(self->fd, buf, 2 * PAGE,
				  GMEM_ACCEL_DRM_ATTR_PREFERRED_LOC, GMEM_ACCEL_PREFER_DEVICE));
	ASSERT_EQ(0, madvise_attr(self->fd, buf + PAGE, 2 * PAGE,
				  GMEM_ACCEL_DRM_ATTR_ATOMIC, GMEM_ACCEL_DRM_ATOMIC_GLOBAL));
	ASSERT_EQ(0, query(self->fd, buf, &q));
	EXPECT_EQ(b, q.start);
	EXPECT_EQ(b + PAGE, q.end);
	EXPECT_EQ(GMEM_ACCEL_PREFER_DEVICE, q.location);
	EXPECT_EQ(GMEM_ACCEL_DRM_ATOMIC_UNDEFINED, q.atomic);
	ASSERT_EQ(0, query(self->fd, buf + PAGE + 5, &q));
	EXPECT_EQ(b + PAGE, q.start);
	EXPECT_EQ(b + 2 * PAGE, q.end);
	EXPECT_EQ(GMEM_ACCEL_PREFER_DEVICE, q.location);
	EXPECT_EQ(GMEM_ACCEL_DRM_ATOMIC_GLOBAL, q.atomic);
	ASSERT_EQ(0, query(self->fd, buf + 2 * PAGE, &q));
	EXPECT_EQ(b + 2 * PAGE, q.start);
	EXPECT_EQ(b + 3 * PAGE, q.end);
	EXPECT_EQ(GMEM_ACCEL_PREFER_NONE, q.location);
	EXPECT_EQ(GMEM_ACCEL_DRM_ATOMIC_GLOBAL, q.atomic);
	ASSERT_EQ(0, query(self->fd, buf + 3 * PAGE, &q));
	EXPECT_EQ(b + 3 * PAGE, q.start);
	EXPECT_EQ(GMEM_ACCEL_PREFER_NONE, q.location);
	EXPECT_EQ(GMEM_ACCEL_DRM_ATOMIC_UNDEFINED, q.atomic);
	/* back to the defaults: one range again */
	ASSERT_EQ(0, madvise_attr(self->fd, buf, 4 * PAGE, GMEM_ACCEL_DRM_ATTR_ATOMIC,
				  GMEM_ACCEL_DRM_ATOMIC_UNDEFINED));
	ASSERT_EQ(0, madvise_attr(self->fd, buf, 4 * PAGE,
				  GMEM_ACCEL_DRM_ATTR_PREFERRED_LOC, GMEM_ACCEL_PREFER_NONE));
	ASSERT_EQ(0, query(self->fd, buf + PAGE, &q));
	EXPECT_GT(b, q.start);
	EXPECT_LT(b + 4 * PAGE, q.end);
	munmap(buf, HUGE);
	closed_gives_back(_metadata, self);
}

/* CPU: the device's atomics fail, also where it maps the pages already; its writes do not. */
TEST_F(attrs, cpu_atomics_refuse_the_device)
{
	uint8_t *buf = map_2m(HUGE);

	ASSERT_NE(NULL, buf);
	memset(buf, 0, HUGE);
	ASSERT_EQ(0, dev_atomic_add(self->fd, buf, 8, 5));
	EXPECT_EQ(5, *word(buf, 7));
	ASSERT_EQ(0, madvise_attr(self->fd, buf, HUGE, GMEM_ACCEL_DRM_ATTR_ATOMIC,
				  GMEM_ACCEL_DRM_ATOMIC_CPU));
	EXPECT_EQ(-EPERM, dev_atomic_add(self->fd, buf, 8, 5));
	for (unsigned long i = 0; i < 8; i++) {
		EXPECT_EQ(5, *word(buf, i)) TH_LOG("page %lu", i);
	}
	/* writes are not atomics */
	ASSERT_EQ(0, dev_fill(self->fd, buf, 0x0707070707070707ull, PAGE));
	EXPECT_EQ(0x07070707u, *word(buf, 0));
	ASSERT_EQ(0, madvise_attr(self->fd, buf, HUGE, GMEM_ACCEL_DRM_ATTR_ATOMIC,
				  GMEM_ACCEL_DRM_ATOMIC_DEVICE));
	ASSERT_EQ(0, dev_atomic_add(self->fd, buf, 8, 1));
	EXPECT_EQ(0x07070708u, *word(buf, 0));
	EXPECT_EQ(6, *word(buf, 7));
	munmap(buf, HUGE);
	closed_gives_back(_metadata, self);
}

/* One CPU page inside a 2 MiB range: only its atomics fail, the pages around it add. */
TEST_F(attrs, one_cpu_page_in_a_range)
{
	uint8_t *buf = map_2m(HUGE);

	ASSERT_NE(NULL, buf);
	memset(buf, 0, HUGE);
	ASSERT_EQ(0, madvise_attr(self->fd, buf + 100 * PAGE, PAGE,
				  GMEM_ACCEL_DRM_ATTR_ATOMIC, GMEM_ACCEL_DRM_ATOMIC_CPU));
	ASSERT_EQ(0, dev_atomic_add(self->fd, buf, 100, 3));
	ASSERT_EQ(0, dev_atomic_add(self->fd, buf + 101 * PAGE, 411, 4));
	EXPECT_EQ(-EPERM, dev_atomic_add(self->fd, buf + 100 * PAGE, 1, 9));
	EXPECT_EQ(3, *word(buf, 0));
	EXPECT_EQ(3, *word(buf, 99));
	EXPECT_EQ(0, *word(buf, 100));
	EXPECT_EQ(4, *word(buf, 101));
	EXPECT_EQ(4, *word(buf, 511));
	munmap(buf, HUGE);
	closed_gives_back(_metadata, self);
}

/* DEVICE: the device's atomics run where the pages are, in system memory here. */
TEST_F(attrs, device_atomics_run_in_place)
{
	uint8_t *buf = map_2m(HUGE);
	int64_t in0, in;

	ASSERT_NE(NULL, buf);
	memset(buf, 0, HUGE);
	ASSERT_EQ(0, gmem_debugfs_stat(DRM_DEV, "drm_to_hbm", &in0));
	ASSERT_EQ(0, madvise_attr(self->fd, buf, HUGE, GMEM_ACCEL_DRM_ATTR_ATOMIC,
				  GMEM_ACCEL_DRM_ATOMIC_DEVICE));
	for (int round = 0; round < 3; round++)
		ASSERT_EQ(0, dev_atomic_add(self->fd, buf, 512, 2));
	EXPECT_EQ(0, hbm_pages(self->fd, buf, HUGE));
	for (unsigned long i = 0; i < 512; i++) {
		ASSERT_EQ(6, *word(buf, i)) TH_LOG("page %lu", i);
	}
	ASSERT_EQ(0, gmem_debugfs_stat(DRM_DEV, "drm_to_hbm", &in));
	EXPECT_EQ(in0, in);
	munmap(buf, HUGE);
	closed_gives_back(_metadata, self);
}

/*
 * GLOBAL: an atomic moves the range into HBM first (the device's atomics there are atomic
 * against the CPU's, whose access brings the pages home); plain writes leave it in place.
 */
TEST_F_TIMEOUT(attrs, global_atomics_move_the_range_to_hbm, 300)
{
	uint8_t *buf = map_2m(HUGE);
	int64_t in0, in;

	ASSERT_NE(NULL, buf);
	memset(buf, 0, HUGE);
	ASSERT_EQ(0, gmem_debugfs_stat(DRM_DEV, "drm_to_hbm", &in0));
	ASSERT_EQ(0, dev_fill(self->fd, buf, 0x0101010101010101ull, HUGE));
	ASSERT_EQ(0, madvise_attr(self->fd, buf, HUGE, GMEM_ACCEL_DRM_ATTR_ATOMIC,
				  GMEM_ACCEL_DRM_ATOMIC_GLOBAL));
	ASSERT_EQ(0, dev_fill(self->fd, buf, 0x0202020202020202ull, HUGE));
	EXPECT_EQ(0, hbm_pages(self->fd, buf, HUGE));
	ASSERT_EQ(0, dev_atomic_add(self->fd, buf, 512, 0x10));
	EXPECT_EQ(HUGE / PAGE, hbm_pages(self->fd, buf, HUGE));
	ASSERT_EQ(0, gmem_debugfs_stat(DRM_DEV, "drm_to_hbm", &in));
	EXPECT_LE(in0 + (int64_t)(HUGE / PAGE), in);
	/* the CPU's read brings the sums home */
	for (unsigned long i = 0; i < 512; i++) {
		ASSERT_EQ(0x02020212u, *word(buf, i)) TH_LOG("page %lu", i);
	}
	EXPECT_EQ(0x02020202u, *(uint32_t *)(buf + 4));
	EXPECT_EQ(0, hbm_pages(self->fd, buf, HUGE));
	/* and in again for the next atomic */
	ASSERT_EQ(0, dev_atomic_add(self->fd, buf, 512, 1));
	EXPECT_EQ(HUGE / PAGE, hbm_pages(self->fd, buf, HUGE));
	EXPECT_EQ(0x02020213u, *word(buf, 511));
	munmap(buf, HUGE);
	closed_gives_back(_metadata, self);
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
	uint8_t *buf = map_2m(HUGE);
	struct churn c = { .fd = self->fd, .buf = buf };
	unsigned int done[64] = { 0 }, refused = 0;
	pthread_t t;
	void *ret;

	ASSERT_NE(NULL, buf);
	memset(buf, 0, HUGE);
	ASSERT_EQ(0, pthread_create(&t, NULL, churn_attrs, &c));
	for (unsigned int i = 0; i < 1024; i++) {
		int err = dev_atomic_add(self->fd, buf + (i % 64) * PAGE, 1, 1);

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
		EXPECT_EQ(done[i], *word(buf, i)) TH_LOG("page %lu", i);
	}
	TH_LOG("%u of 1024 atomics refused (CPU attribute)", refused);
	munmap(buf, HUGE);
	closed_gives_back(_metadata, self);
}

TEST_HARNESS_MAIN
