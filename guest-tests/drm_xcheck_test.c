// SPDX-License-Identifier: GPL-2.0
/*
 * The QEMU monitor cross-check for a context of the DRM accel front end (Linux 7.3): the
 * device page table the monitor reads (QOM page-table[ctx], over the host's QMP relay)
 * matches, page by page, what the DRM front end's SNAPSHOT says it mapped: writable and
 * read-only ranges, a 2 MiB THP, a range PREFER_DEVICE moved into HBM; and a range a device
 * read mapped for reading only, which a device write maps again for writing. The
 * /dev/gmem_accelN front end's own cross-check is host-tests/monitor_crosscheck.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
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
#define NPAGES 1024	/* a 2 MiB block of small pages, then a THP */

FIXTURE(xcheck) {
	int fd;
	uint8_t *raw;
};

FIXTURE_SETUP(xcheck)
{
	self->fd = -1;
	self->raw = NULL;
	if (!path_exists("/sys/class/accel"))
		SKIP(return, "no DRM accel framework: the DRM front end needs Linux 7.3 with CONFIG_DRM_GPUSVM (images/kernel-7.3.config)");
	ASSERT_EQ(0, gmem_set_frontend(DEV, "drm"));
	self->fd = gmem_open_accel(DEV, O_RDWR);
	ASSERT_LE(0, self->fd) TH_LOG("device %d's accel node: %s", DEV, strerror(errno));
}

FIXTURE_TEARDOWN(xcheck)
{
	if (self->raw)
		munmap(self->raw, NPAGES * PAGE + HUGE);
	if (self->fd >= 0)
		close(self->fd);
	if (path_exists("/sys/class/accel"))
		EXPECT_EQ(0, gmem_set_frontend(DEV, "gmem"));
}

/* The DRM front end's view of [buf, +NPAGES pages): SNAPSHOT; 0 or -errno. */
static int drm_view(int fd, uint8_t *buf, uint8_t *view)
{
	struct gmem_accel_snapshot s = { .addr = (uintptr_t)buf, .npages = NPAGES,
					 .out = (uintptr_t)view };

	return ioctl(fd, DRM_IOCTL_GMEM_ACCEL_SNAPSHOT, &s) ? -errno : 0;
}

TEST_F_TIMEOUT(xcheck, monitor_matches_snapshot, 300)
{
	struct gmem_accel_advise adv = { .location = GMEM_ACCEL_PREFER_DEVICE };
	struct gmem_accel_stats st = { 0 };
	uint8_t view[NPAGES], dev[NPAGES], again[NPAGES], *buf, *scratch = malloc(HUGE);
	unsigned int kinds = 0;
	int runs = 0, differ = -1;

	ASSERT_NE(NULL, scratch);
	self->raw = mmap(NULL, NPAGES * PAGE + HUGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->raw);
	buf = (uint8_t *)(((uintptr_t)self->raw + HUGE - 1) & ~(HUGE - 1));
	ASSERT_EQ(0, madvise(buf, HUGE, MADV_NOHUGEPAGE));
	ASSERT_EQ(0, madvise(buf + HUGE, HUGE, MADV_HUGEPAGE));
	/* Pages 16-40 read-only: a 64 KiB range the device reads, mapped read-only. */
	memset(buf + 16 * PAGE, 1, 25 * PAGE);
	ASSERT_EQ(0, mprotect(buf + 16 * PAGE, 25 * PAGE, PROT_READ));
	/* Pages 0-9 written by the device: their range (pages 0-15) mapped writable. */
	ASSERT_EQ(0, dev_fill(self->fd, buf, 0x5a, 10 * PAGE));
	ASSERT_EQ(0, dev_copy(self->fd, scratch, buf + 16 * PAGE, 4 * PAGE));
	/* Pages 48-63: PREFER_DEVICE, then a device read moves their range into HBM. */
	memset(buf + 48 * PAGE, 3, 16 * PAGE);
	adv.addr = (uintptr_t)buf + 48 * PAGE;
	adv.size = 16 * PAGE;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_ADVISE, &adv));
	ASSERT_EQ(0, dev_copy(self->fd, scratch, buf + 48 * PAGE, 16 * PAGE));
	EXPECT_EQ(3, scratch[16 * PAGE - 1]);
	/* The second 2 MiB: a THP the device reads, one 2 MiB range. */
	memset(buf + HUGE, 2, HUGE);
	ASSERT_EQ(0, dev_copy(self->fd, scratch, buf + HUGE + 5 * PAGE, PAGE));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_STATS, &st));

	/*
	 * The kernel may change the pages meanwhile (khugepaged, compaction): a comparison
	 * counts when the driver's view is the same before and after the monitor's read.
	 */
	for (int attempt = 0; attempt < 5; attempt++) {
		ASSERT_EQ(0, drm_view(self->fd, buf, view));
		runs = gmem_monitor_view(DEV, st.context, (uintptr_t)buf, NPAGES, dev);
		if (runs == -ENODEV || runs == -ENOENT)
			SKIP(return, "no host to ask for the monitor's page table (run-vm.sh's relay)");
		ASSERT_LT(0, runs) TH_LOG("the monitor's page table: %s", strerror(-runs));
		ASSERT_EQ(0, drm_view(self->fd, buf, again));
		if (!memcmp(view, again, NPAGES))
			break;
		TH_LOG("the driver's view changed during the monitor's read (attempt %d)", attempt);
	}
	differ = 0;
	for (int i = 0; i < NPAGES; i++) {
		kinds |= 1u << view[i];
		if (dev[i] != view[i] && differ++ < 5)
			TH_LOG("page %d: DRM front end %#x, monitor %#x", i, view[i], dev[i]);
	}
	EXPECT_EQ(0, differ);
	/* The pattern made every kind it means to compare. */
	EXPECT_TRUE(kinds & (1u << (GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE)));
	EXPECT_TRUE(kinds & (1u << GMEM_ACCEL_PAGE_READ));
	/* (a device read of memory the CPU maps writable maps it writable, as the CPU does) */
	EXPECT_EQ(GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE | GMEM_ACCEL_PAGE_2M, view[512]);
	EXPECT_TRUE(view[48] & GMEM_ACCEL_PAGE_HBM) TH_LOG("page 48: %#x", view[48]);
	free(scratch);
}

/*
 * A device read of memory nobody wrote maps its range for reading only (the shared zero page);
 * a device write there then maps it again for writing, to pages of its own: the bytes land,
 * and fresh memory still reads as zeros.
 */
TEST_F_TIMEOUT(xcheck, read_then_write, 300)
{
	uint8_t *buf, *fresh, *out = malloc(HUGE), view[NPAGES];

	ASSERT_NE(NULL, out);
	self->raw = mmap(NULL, NPAGES * PAGE + HUGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->raw);
	buf = (uint8_t *)(((uintptr_t)self->raw + HUGE - 1) & ~(HUGE - 1));
	fresh = buf + HUGE;
	ASSERT_EQ(0, madvise(buf, 2 * HUGE, MADV_NOHUGEPAGE));
	memset(out, 0xee, HUGE);
	ASSERT_EQ(0, dev_copy(self->fd, out, buf, HUGE));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[HUGE - 1]);
	ASSERT_EQ(0, drm_view(self->fd, buf, view));
	EXPECT_EQ(GMEM_ACCEL_PAGE_READ, view[0]);
	EXPECT_EQ(GMEM_ACCEL_PAGE_READ, view[511]);
	ASSERT_EQ(0, dev_fill(self->fd, buf + PAGE, 0x5a5a5a5a5a5a5a5aull, PAGE));
	EXPECT_EQ(0x5a, buf[PAGE]);
	EXPECT_EQ(0x5a, buf[2 * PAGE - 1]);
	EXPECT_EQ(0, buf[0]);
	EXPECT_EQ(0, buf[2 * PAGE]);
	ASSERT_EQ(0, drm_view(self->fd, buf, view));
	EXPECT_EQ(GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE, view[1]);
	/* The zero page was not written: memory nobody wrote still reads as zeros. */
	memset(out, 0xee, HUGE);
	ASSERT_EQ(0, dev_copy(self->fd, out, fresh, HUGE));
	EXPECT_EQ(0, out[0]);
	EXPECT_EQ(0, out[HUGE - 1]);
	EXPECT_EQ(0, fresh[0]);
	free(out);
}

TEST_HARNESS_MAIN
