// SPDX-License-Identifier: GPL-2.0
/*
 * GMEM_ACCEL_IOC_ADVISE's accessed-by (guest-driver/gmem_accel_advice.c): the device keeps
 * an advised range mapped wherever its pages are, so its accesses do not fault while the
 * driver moves the pages (MIGRATE either way, a CPU touch of HBM pages, eviction of every HBM
 * page: test_hmm's RELEASE on the device's /dev/gmem_dmirror0); without the advice
 * the same work faults. And the flags' rules: unknown bits and bad combinations are EINVAL,
 * flags 0 sets the location as it always did.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <lib/test_hmm_uapi.h>

#include "kselftest_harness.h"
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define NPAGES 32
#define HALF (NPAGES / 2 * PAGE)
#define RW (PROT_READ | PROT_WRITE)
#define AB (GMEM_ACCEL_ADVISE_ACCESSED_BY | GMEM_ACCEL_ADVISE_KEEP_LOCATION)

FIXTURE(advice) {
	int fd;
	int dm;			/* /dev/gmem_dmirror0: the same device's test_hmm interface */
	uint8_t *buf;		/* source half, then destination half */
	uint8_t *want;
};

FIXTURE_SETUP(advice)
{
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	self->fd = gmem_open(0, O_RDWR);
	ASSERT_LE(0, self->fd);
	self->dm = open("/dev/gmem_dmirror0", O_RDWR);
	ASSERT_LE(0, self->dm);
	self->buf = map_small_pages(2 * HALF);
	self->want = malloc(HALF);
	ASSERT_NE(NULL, self->buf);
	ASSERT_NE(NULL, self->want);
	pattern(self->buf, HALF, 11);
	memcpy(self->want, self->buf, HALF);
	memset(self->buf + HALF, 0x5a, HALF);	/* present: mapped by the advice at once */
}

FIXTURE_TEARDOWN(advice)
{
	close(self->dm);
	close(self->fd);
	free(self->want);
}

/*
 * The workload: the device copies the source half into the destination half, between moves
 * of the pages for other reasons; the bytes are checked each time. The device faults it
 * took, after the first copy.
 */
static long copy_while_moving(struct __test_metadata *_metadata, int fd, int dm, uint8_t *buf,
			      const uint8_t *want)
{
	uint64_t faults0;

	/* (the first copy maps what the advice did not: nothing, with it) */
	ASSERT_EQ(0, dev_copy(fd, buf + HALF, buf, HALF));
	faults0 = ctx_stats(fd).faults;
	/* MIGRATE into HBM, then the device works there. */
	ASSERT_EQ(0, dev_migrate(fd, buf, 2 * HALF, GMEM_ACCEL_TO_DEVICE) < 0);
	ASSERT_EQ(0, dev_copy(fd, buf + HALF, buf, HALF));
	/* The CPU touches HBM pages: they come home. */
	EXPECT_EQ(0, memcmp(buf + HALF, want, HALF));
	EXPECT_EQ(0, memcmp(buf, want, HALF));
	ASSERT_EQ(0, dev_copy(fd, buf + HALF, buf, HALF));
	/* MIGRATE into HBM and back. */
	ASSERT_EQ(0, dev_migrate(fd, buf, 2 * HALF, GMEM_ACCEL_TO_DEVICE) < 0);
	ASSERT_EQ(0, dev_migrate(fd, buf, 2 * HALF, GMEM_ACCEL_TO_SYSTEM) < 0);
	ASSERT_EQ(0, dev_copy(fd, buf + HALF, buf, HALF));
	EXPECT_EQ(0, memcmp(buf + HALF, want, HALF));
	/* Into HBM, then evicted (every HBM page of the device goes home). */
	ASSERT_EQ(0, dev_migrate(fd, buf, 2 * HALF, GMEM_ACCEL_TO_DEVICE) < 0);
	ASSERT_EQ(0, ioctl(dm, HMM_DMIRROR_RELEASE,
			   &(struct hmm_dmirror_cmd){ .addr = (uintptr_t)buf, .npages = 1 }));
	EXPECT_FALSE(page_view(fd, buf) & GMEM_ACCEL_PAGE_HBM);
	ASSERT_EQ(0, dev_copy(fd, buf + HALF, buf, HALF));
	EXPECT_EQ(0, memcmp(buf + HALF, want, HALF));
	return ctx_stats(fd).faults - faults0;
}

/* Accessed-by: no device fault, wherever the pages went. */
TEST_F_TIMEOUT(advice, accessed_by_device_never_faults, 300)
{
	long faults;

	ASSERT_EQ(0, dev_advise(self->fd, self->buf, 2 * HALF, 0, AB));
	faults = copy_while_moving(_metadata, self->fd, self->dm, self->buf, self->want);
	EXPECT_EQ(0, faults);
	/* And the first copy did not fault either: ADVISE mapped the present pages. */
	EXPECT_EQ(0, ctx_stats(self->fd).faults);
}

/* Without the advice the same work faults after each move. */
TEST_F_TIMEOUT(advice, without_accessed_by_device_faults, 300)
{
	long faults = copy_while_moving(_metadata, self->fd, self->dm, self->buf, self->want);

	EXPECT_LT(0, faults);
}

/* NOT_ACCESSED_BY takes it back: the moves fault again. */
TEST_F_TIMEOUT(advice, not_accessed_by_undoes_it, 300)
{
	ASSERT_EQ(0, dev_advise(self->fd, self->buf, 2 * HALF, 0, AB));
	ASSERT_EQ(0, dev_advise(self->fd, self->buf, 2 * HALF, 0,
				GMEM_ACCEL_ADVISE_NOT_ACCESSED_BY | GMEM_ACCEL_ADVISE_KEEP_LOCATION));
	EXPECT_LT(0, copy_while_moving(_metadata, self->fd, self->dm, self->buf, self->want));
}

/*
 * KEEP_LOCATION leaves the location as it was: PREFER_DEVICE then accessed-by still migrates
 * on a device fault; and flags 0 keeps setting the location alone.
 */
TEST_F_TIMEOUT(advice, keep_location_keeps_prefer_device, 300)
{
	uint8_t *fresh = map_small_pages(4 * PAGE);

	ASSERT_NE(NULL, fresh);
	ASSERT_EQ(0, dev_advise(self->fd, fresh, 4 * PAGE, GMEM_ACCEL_PREFER_DEVICE, 0));
	ASSERT_EQ(0, dev_advise(self->fd, fresh, 4 * PAGE, 0, AB));
	/* Untouched memory: nothing to map yet; the device's fault migrates it to HBM. */
	ASSERT_EQ(0, dev_fill(self->fd, fresh, 3, 4 * PAGE));
	EXPECT_TRUE(page_view(self->fd, fresh) & GMEM_ACCEL_PAGE_HBM);
	/* Location NONE (flags 0): accessed-by stays, the next fault maps system memory. */
	ASSERT_EQ(0, dev_advise(self->fd, fresh, 4 * PAGE, GMEM_ACCEL_PREFER_NONE, 0));
	EXPECT_EQ(3, fresh[0]);	/* home */
	EXPECT_FALSE(page_view(self->fd, fresh) & GMEM_ACCEL_PAGE_HBM);
	munmap(fresh, 4 * PAGE);
}

/* Bad flags are refused (EINVAL) and change nothing. */
TEST_F_TIMEOUT(advice, bad_flags, 60)
{
	uint8_t *b = self->buf;

	EXPECT_EQ(-EINVAL, dev_advise(self->fd, b, PAGE, 0, 1u << 5));
	EXPECT_EQ(-EINVAL, dev_advise(self->fd, b, PAGE, 0, 1u << 31));
	EXPECT_EQ(-EINVAL, dev_advise(self->fd, b, PAGE, 0, GMEM_ACCEL_ADVISE_ACCESSED_BY |
				      GMEM_ACCEL_ADVISE_NOT_ACCESSED_BY));
	EXPECT_EQ(-EINVAL, dev_advise(self->fd, b, PAGE, 0, GMEM_ACCEL_ADVISE_KEEP_LOCATION));
	EXPECT_EQ(-EINVAL, dev_advise(self->fd, b, PAGE, GMEM_ACCEL_PREFER_DEVICE, AB));
	EXPECT_EQ(-EINVAL, dev_advise(self->fd, b, PAGE, 3, GMEM_ACCEL_ADVISE_ACCESSED_BY));
	/* Valid ones. */
	EXPECT_EQ(0, dev_advise(self->fd, b, PAGE, GMEM_ACCEL_PREFER_NONE, 0));
	EXPECT_EQ(0, dev_advise(self->fd, b, PAGE, GMEM_ACCEL_PREFER_NONE,
				GMEM_ACCEL_ADVISE_ACCESSED_BY));
	EXPECT_EQ(0, dev_advise(self->fd, b, PAGE, 0, GMEM_ACCEL_ADVISE_NOT_ACCESSED_BY));
	/* None of the refused ones took effect: the device faults as without advice. */
	ASSERT_EQ(0, dev_fill(self->fd, b + PAGE, 1, PAGE));
	EXPECT_LT(0, ctx_stats(self->fd).faults);
}

TEST_HARNESS_MAIN
