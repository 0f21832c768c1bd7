// SPDX-License-Identifier: GPL-2.0
/*
 * Shared virtual memory: the device works on plain process pointers (runs before module_test,
 * which then unloads the module after use). Each test opens its own
 * context, has the device read or write memory of some kind, and checks the bytes, the errno
 * of a failed command, the driver's counters and the device's view of the pages (SNAPSHOT).
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
#include <linux/version.h>

#include "kselftest_harness.h"
#include <lib/test_hmm_uapi.h>
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define HUGE (2ul << 20)

/* Tests that need no fixture (a timeout needs one). */
GMEM_PLAIN_FIXTURE(svm_proc)

FIXTURE(svm) {
	int fd;
};

FIXTURE_SETUP(svm)
{
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	self->fd = gmem_open(0, O_RDWR);
	ASSERT_LE(0, self->fd) TH_LOG("open /dev/gmem_accel0: %s", strerror(errno));
}

FIXTURE_TEARDOWN(svm)
{
	close(self->fd);
}

/* malloc'd memory both ways, byte for byte, through faults the driver services. */
TEST_F_TIMEOUT(svm, copy_malloc, 120)
{
	size_t len = 256 * 1024 + 123;
	uint8_t *src = malloc(len), *dst = malloc(len + 2);
	struct gmem_accel_stats st;

	pattern(src, len, 1);
	memset(dst, 0xaa, len + 2);
	ASSERT_EQ(0, dev_copy(self->fd, dst + 1, src, len));
	ASSERT_EQ(0, memcmp(dst + 1, src, len));
	EXPECT_EQ(0xaa, dst[0]);
	EXPECT_EQ(0xaa, dst[len + 1]);
	st = ctx_stats(self->fd);
	EXPECT_LT(0, st.faults);
	EXPECT_EQ(st.fault_groups, st.replays);
	EXPECT_EQ(0, st.cancels);
	EXPECT_LE((len / PAGE) * 2, st.pages_mapped);
	EXPECT_EQ(GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE, page_view(self->fd, dst + PAGE) &
		  (GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE));
	/* Mapped now: the same copy again faults no more. */
	ASSERT_EQ(0, dev_copy(self->fd, dst + 1, src, len));
	EXPECT_EQ(st.faults, ctx_stats(self->fd).faults);
	free(src);
	free(dst);
}

/* The stack and a file mapping (tmpfs), written by the device and read back by the CPU. */
TEST_F_TIMEOUT(svm, stack_and_file, 120)
{
	uint8_t stack_src[3000], stack_dst[3000], buf[2 * PAGE];
	char path[] = "/tmp/svm-file-XXXXXX";
	int file = mkstemp(path);
	uint8_t *map;

	pattern(stack_src, sizeof(stack_src), 2);
	memset(stack_dst, 0, sizeof(stack_dst));
	ASSERT_EQ(0, dev_copy(self->fd, stack_dst, stack_src, sizeof(stack_src)));
	ASSERT_EQ(0, memcmp(stack_dst, stack_src, sizeof(stack_src)));

	ASSERT_LE(0, file);
	ASSERT_EQ(0, ftruncate(file, 2 * PAGE));
	map = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, dev_fill(self->fd, map + 100, 0x0123456789abcdefull, 2 * PAGE - 200));
	ASSERT_EQ(2 * PAGE, pread(file, buf, 2 * PAGE, 0));
	for (size_t i = 0; i < 2 * PAGE; i++) {
		uint8_t want = i < 100 || i >= 2 * PAGE - 100 ? 0 :
			       (uint8_t)(0x0123456789abcdefull >> (8 * ((i - 100) % 8)));
		ASSERT_EQ(want, buf[i]) TH_LOG("file byte %zu", i);
	}
	munmap(map, 2 * PAGE);
	close(file);
	unlink(path);
}

/*
 * Untouched anonymous memory reads as zeros, through the zero page, mapped read-only: the
 * device's one DMA mapping of it, none of its own per page. A CPU write then gives the page
 * a page of its own, which the device sees (and maps for DMA).
 */
TEST_F_TIMEOUT(svm, zero_page_read, 120)
{
	/* src: a 64 KiB block of its own, which a fault's map-around does not leave */
	uint8_t *map = map_anon(32 * PAGE, PROT_READ | PROT_WRITE);
	uint8_t *dst = map_anon(4 * PAGE, PROT_READ | PROT_WRITE);
	uint8_t *src = (uint8_t *)(((uintptr_t)map + 16 * PAGE - 1) & ~(16 * PAGE - 1));
	int64_t mapped, now;

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	/* (a NUMA balancing scan would take the device's entries away meanwhile) */
	ASSERT_EQ(0, no_numa_scan(map, 32 * PAGE));
	ASSERT_EQ(0, no_numa_scan(dst, 4 * PAGE));
	/* (dst's pages are mapped first: what a read of src maps is counted alone) */
	ASSERT_EQ(0, dev_fill(self->fd, dst, 0x5555555555555555ull, 4 * PAGE));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "dma_mapped_pages_now", &mapped));
	ASSERT_EQ(0, dev_copy(self->fd, dst, src, 4 * PAGE));
	for (size_t i = 0; i < 4 * PAGE; i++)
		ASSERT_EQ(0, dst[i]);
	EXPECT_EQ(GMEM_ACCEL_PAGE_READ, page_view(self->fd, src));
	EXPECT_EQ(GMEM_ACCEL_PAGE_READ, page_view(self->fd, src + 3 * PAGE));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "dma_mapped_pages_now", &now));
	EXPECT_EQ(mapped, now);
	src[2 * PAGE + 7] = 0x3c;
	ASSERT_EQ(0, dev_copy(self->fd, dst, src + 2 * PAGE, PAGE));
	EXPECT_EQ(0x3c, dst[7]);
	EXPECT_EQ(0, dst[8]);
	ASSERT_EQ(0, gmem_debugfs_stat(0, "dma_mapped_pages_now", &now));
	EXPECT_EQ(mapped + 1, now);
	/* A device write then gets the page its own copy (write fault, CPU sees it). */
	ASSERT_EQ(0, dev_fill(self->fd, src, 0x1111111111111111ull, PAGE));
	EXPECT_EQ(0x11, src[PAGE - 1]);
	EXPECT_EQ(0, src[PAGE]);
	munmap(map, 32 * PAGE);
	munmap(dst, 4 * PAGE);
}

/* Faults nothing can satisfy fail the command with the right errno; the context lives on. */
TEST_F_TIMEOUT(svm, bad_access_errnos, 60)
{
	uint8_t *none = map_anon(PAGE, PROT_NONE), *ro = map_anon(PAGE, PROT_READ);
	uint8_t *ok = malloc(PAGE), *gone = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct gmem_accel_stats st;

	ASSERT_NE(NULL, none);
	ASSERT_NE(NULL, ro);
	ASSERT_EQ(0, munmap(gone, PAGE));
	EXPECT_EQ(-EFAULT, dev_copy(self->fd, ok, none, 64));
	EXPECT_EQ(-EFAULT, dev_fill(self->fd, none, 1, 64));
	EXPECT_EQ(-EPERM, dev_fill(self->fd, ro, 1, 64));
	EXPECT_EQ(-EFAULT, dev_copy(self->fd, gone, ok, 64));
	EXPECT_EQ(0, dev_copy(self->fd, ok, ro, 64));	/* reading it is fine */
	st = ctx_stats(self->fd);
	EXPECT_EQ(4, st.cancels);
	memset(ok, 0, PAGE);
	EXPECT_EQ(0, dev_fill(self->fd, ok, 0x4242424242424242ull, PAGE));
	EXPECT_EQ(0x42, ok[PAGE - 1]);
	munmap(none, PAGE);
	munmap(ro, PAGE);
	free(ok);
}

/* munmap, mprotect and MADV_DONTNEED under device mappings: the device view follows. */
TEST_F_TIMEOUT(svm, cpu_changes_invalidate, 120)
{
	uint8_t *buf = map_anon(8 * PAGE, PROT_READ | PROT_WRITE), *out = malloc(PAGE);
	uint64_t inval;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, dev_fill(self->fd, buf, 0x7777777777777777ull, 8 * PAGE));
	ASSERT_EQ(0x77, buf[5 * PAGE]);
	ASSERT_EQ(GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE, page_view(self->fd, buf));
	inval = ctx_stats(self->fd).invalidations;

	/* DONTNEED: the CPU sees zeros, and so must the device (not the old page). */
	ASSERT_EQ(0, madvise(buf, PAGE, MADV_DONTNEED));
	EXPECT_EQ(0, page_view(self->fd, buf));
	EXPECT_LT(inval, ctx_stats(self->fd).invalidations);
	ASSERT_EQ(0, dev_copy(self->fd, out, buf, PAGE));
	for (size_t i = 0; i < PAGE; i++)
		ASSERT_EQ(0, out[i]);

	/* mprotect read-only: writes now fail with EPERM, reads still work. */
	ASSERT_EQ(0, mprotect(buf + PAGE, PAGE, PROT_READ));
	EXPECT_EQ(0, page_view(self->fd, buf + PAGE) & GMEM_ACCEL_PAGE_WRITE);
	EXPECT_EQ(-EPERM, dev_fill(self->fd, buf + PAGE, 0, 8));
	ASSERT_EQ(0, dev_copy(self->fd, out, buf + PAGE, PAGE));
	EXPECT_EQ(0x77, out[PAGE - 1]);

	/* munmap: gone for the device too. */
	ASSERT_EQ(GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE, page_view(self->fd, buf + 7 * PAGE));
	ASSERT_EQ(0, munmap(buf + 7 * PAGE, PAGE));
	EXPECT_EQ(0, page_view(self->fd, buf + 7 * PAGE));
	EXPECT_EQ(-EFAULT, dev_fill(self->fd, buf + 7 * PAGE, 0, 8));
	munmap(buf, 7 * PAGE);
	free(out);
}

/* After fork, parent and child each see their own data through their own contexts. */
TEST_F_TIMEOUT(svm, fork_copy_on_write, 120)
{
	uint8_t *buf = map_anon(4 * PAGE, PROT_READ | PROT_WRITE);
	uint8_t *check = malloc(4 * PAGE);
	int status;
	pid_t pid;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, dev_fill(self->fd, buf, 0xa1a1a1a1a1a1a1a1ull, 4 * PAGE));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = gmem_open(0, O_RDWR);
		struct gmem_accel_info info = { 0 };

		/* The inherited file belongs to the parent's address space. */
		if (ioctl(self->fd, GMEM_ACCEL_IOC_SNAPSHOT, &info) != -1 || errno != EACCES)
			_exit(10);
		if (fd < 0 || dev_fill(fd, buf, 0xc2c2c2c2c2c2c2c2ull, 4 * PAGE))
			_exit(11);
		for (size_t i = 0; i < 4 * PAGE; i++)
			if (buf[i] != 0xc2)
				_exit(12);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* The parent's pages were write-protected by fork; the device still reads its data. */
	ASSERT_EQ(0, dev_copy(self->fd, check, buf, 4 * PAGE));
	for (size_t i = 0; i < 4 * PAGE; i++)
		ASSERT_EQ(0xa1, check[i]);
	ASSERT_EQ(0, dev_fill(self->fd, buf, 0xb3b3b3b3b3b3b3b3ull, PAGE));
	EXPECT_EQ(0xb3, buf[10]);
	munmap(buf, 4 * PAGE);
	free(check);
}

/* A THP the CPU maps with one PMD is one 2 MiB device page. */
TEST_F_TIMEOUT(svm, thp_is_2m_on_device, 120)
{
	uint8_t *raw = map_anon(2 * HUGE, PROT_READ | PROT_WRITE), *buf, *out = malloc(PAGE);
	uint8_t view[512];
	int i;
	struct gmem_accel_snapshot s = { .npages = 512, .out = (uintptr_t)view };

	ASSERT_NE(NULL, raw);
	buf = (uint8_t *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1));
	ASSERT_EQ(0, madvise(buf, HUGE, MADV_HUGEPAGE));
	memset(buf, 0x3c, HUGE);
	ASSERT_EQ(0, dev_copy(self->fd, out, buf + 12345, PAGE));
	EXPECT_EQ(0x3c, out[PAGE - 1]);
	s.addr = (uintptr_t)buf;
	ASSERT_EQ(0, ioctl(self->fd, GMEM_ACCEL_IOC_SNAPSHOT, &s));
	for (i = 0; i < 512; i++)
		ASSERT_EQ(GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE | GMEM_ACCEL_PAGE_2M, view[i])
			TH_LOG("page %d", i);
	munmap(raw, 2 * HUGE);
	free(out);
}

/*
 * A device write to one page populates that page only, not its 2 MiB window: hmm_range_fault
 * faults every page from the first one asked for to the end of its range, so the driver
 * faults just the span the device asked for. The CPU's write of the last page creates the
 * page table first (else the kernel fills the whole hole anyway).
 */
TEST_F_TIMEOUT(svm, fault_populates_only_the_faulting_page, 120)
{
	uint8_t *raw = map_anon(2 * HUGE, PROT_READ | PROT_WRITE), *buf;
	unsigned char resident[512];
	int i, n = 0;

	ASSERT_NE(NULL, raw);
	buf = (uint8_t *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1));
	ASSERT_EQ(0, madvise(buf, HUGE, MADV_NOHUGEPAGE));
	buf[HUGE - 1] = 1;
	ASSERT_EQ(0, dev_fill(self->fd, buf + 7 * PAGE, 0x5a5a5a5a5a5a5a5aull, PAGE));
	ASSERT_EQ(0, mincore(buf, HUGE, resident));
	for (i = 0; i < 512; i++)
		n += resident[i] & 1;
	EXPECT_EQ(2, n);
	EXPECT_EQ(1, resident[7] & 1);
	EXPECT_EQ(0x5a, buf[7 * PAGE + 100]);
	munmap(raw, 2 * HUGE);
}

/* The device's view of @buf's 512 pages (SNAPSHOT) into @view; 0 or -1. */
static int device_view(int fd, uint8_t *buf, uint8_t *view)
{
	struct gmem_accel_snapshot s = { .addr = (uintptr_t)buf, .npages = 512,
					 .out = (uintptr_t)view };

	return ioctl(fd, GMEM_ACCEL_IOC_SNAPSHOT, &s);
}

/* Of @buf's 512 pages, does the device map just [@lo, @hi), readable and writable (SNAPSHOT)? */
static bool maps_just(int fd, uint8_t *buf, int lo, int hi)
{
	uint8_t view[512];

	if (device_view(fd, buf, view))
		return false;
	for (int i = 0; i < 512; i++)
		if (view[i] != (i >= lo && i < hi ? GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE : 0))
			return false;
	return true;
}

/*
 * A device fault maps, with the faulting page, the pages around it that the CPU maps: those
 * of its 64 KiB block, not the rest of the 2 MiB window (small pages; a THP is mapped whole).
 * Through an IOMMU each is a DMA mapping of its own, so there a lone fault in a block the
 * device has nothing of yet maps its page alone, and the next fault there the rest (as does
 * one that asks for two pages of the block at once).
 */
TEST_F_TIMEOUT(svm, fault_maps_present_neighbours_in_64k_block, 120)
{
	uint8_t *raw = map_anon(2 * HUGE, PROT_READ | PROT_WRITE), *buf, *out = malloc(2 * PAGE);

	ASSERT_NE(NULL, raw);
	ASSERT_NE(NULL, out);
	buf = (uint8_t *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1));
	ASSERT_EQ(0, madvise(buf, HUGE, MADV_NOHUGEPAGE));
	/* (a NUMA balancing scan would take the device's entries away meanwhile) */
	ASSERT_EQ(0, no_numa_scan(buf, HUGE));
	memset(buf, 0x6e, HUGE);
	ASSERT_EQ(0, dev_copy(self->fd, out, buf + 20 * PAGE, PAGE));
	EXPECT_EQ(0x6e, out[PAGE - 1]);
	EXPECT_TRUE(gmem_expect("iommu", 0) ? maps_just(self->fd, buf, 20, 21) :
					      maps_just(self->fd, buf, 16, 32));
	ASSERT_EQ(0, dev_copy(self->fd, out, buf + 25 * PAGE, PAGE));
	EXPECT_TRUE(maps_just(self->fd, buf, 16, 32));
	ASSERT_EQ(0, dev_copy(self->fd, out, buf + 40 * PAGE, 2 * PAGE));
	EXPECT_EQ(0x6e, out[2 * PAGE - 1]);
	EXPECT_TRUE(maps_just(self->fd, buf, 16, 48));
	munmap(raw, 2 * HUGE);
	free(out);
}

/*
 * In a 64 KiB block the device has had mapped around, a later fault maps its own page alone:
 * walking the block again found nothing new at each such fault (a device reading fresh
 * memory a page at a time paid two passes a page), and a page the CPU maps there since comes
 * with a fault of its own.
 */
TEST_F_TIMEOUT(svm, fault_in_block_mapped_around_maps_its_page_alone, 120)
{
	uint8_t *raw = map_anon(2 * HUGE, PROT_READ | PROT_WRITE), *buf, *out = malloc(2 * PAGE);
	const uint8_t rw = GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE;
	uint8_t view[512];

	ASSERT_NE(NULL, raw);
	ASSERT_NE(NULL, out);
	buf = (uint8_t *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1));
	ASSERT_EQ(0, madvise(buf, HUGE, MADV_NOHUGEPAGE));
	ASSERT_EQ(0, no_numa_scan(buf, HUGE));
	memset(buf, 0x6e, 4 * PAGE);
	/* Two pages of the block at once: mapped around, the four the CPU maps. */
	ASSERT_EQ(0, dev_copy(self->fd, out, buf, 2 * PAGE));
	EXPECT_TRUE(maps_just(self->fd, buf, 0, 4));
	buf[8 * PAGE] = 0x5b;
	/* A page nobody wrote: the zero page, read-only; page 8 is not looked for. */
	ASSERT_EQ(0, dev_copy(self->fd, out, buf + 12 * PAGE, PAGE));
	EXPECT_EQ(0, out[PAGE - 1]);
	ASSERT_EQ(0, device_view(self->fd, buf, view));
	for (int i = 0; i < 512; i++) {
		EXPECT_EQ(i < 4 ? rw : i == 12 ? GMEM_ACCEL_PAGE_READ : 0, view[i])
			TH_LOG("page %d", i);
	}
	ASSERT_EQ(0, dev_copy(self->fd, out, buf + 8 * PAGE, PAGE));
	EXPECT_EQ(0x5b, out[0]);
	ASSERT_EQ(0, device_view(self->fd, buf, view));
	EXPECT_EQ(rw, view[8]);
	munmap(raw, 2 * HUGE);
	free(out);
}

/*
 * A process waiting for its command serves the command's fault itself (no hand-off to the
 * fault worker): test_hmm's READ through /dev/gmem_dmirror0 takes one fault group, served
 * by the waiter, and reads the fresh pages as zeros.
 */
TEST_F_TIMEOUT(svm_proc, waiter_serves_its_faults, 120)
{
	int fd = open("/dev/gmem_dmirror0", O_RDWR);
	uint8_t *buf = map_anon(4 * PAGE, PROT_READ | PROT_WRITE), *mirror = malloc(4 * PAGE);
	struct hmm_dmirror_cmd c = { .addr = (uintptr_t)buf, .ptr = (uintptr_t)mirror,
				     .npages = 4 };
	int64_t groups0, groups1, by_waiter0, by_waiter1;
	size_t i;

	ASSERT_LE(0, fd) TH_LOG("open /dev/gmem_dmirror0: %s", strerror(errno));
	ASSERT_NE(NULL, buf);
	memset(mirror, 0xee, 4 * PAGE);
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups", &groups0));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups_by_waiter", &by_waiter0));
	ASSERT_EQ(0, ioctl(fd, HMM_DMIRROR_READ, &c)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups", &groups1));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups_by_waiter", &by_waiter1));
	EXPECT_EQ(4, c.cpages);
	EXPECT_EQ(1, c.faults);
	EXPECT_EQ(1, groups1 - groups0);
	EXPECT_EQ(1, by_waiter1 - by_waiter0);
	for (i = 0; i < 4 * PAGE; i++)
		ASSERT_EQ(0, mirror[i]) TH_LOG("byte %zu", i);
	munmap(buf, 4 * PAGE);
	free(mirror);
	close(fd);
}

/*
 * SUBMIT with GMEM_ACCEL_SUBMIT_WAIT waits for its batch and returns the batch's result, its
 * fence set (a WAIT on it then returns at once). Its faults are served on the caller's thread
 * and its fence is quiet: on mapped memory it has completed when the doorbell's write
 * returns, and no queue interrupt is taken. What is refused before anything is queued (a bad
 * command, an unknown flag) gets no fence.
 */
TEST_F_TIMEOUT(svm, submit_that_waits, 120)
{
	size_t len = 16 * PAGE;
	uint8_t *buf = map_anon(len, PROT_READ | PROT_WRITE);
	uint8_t *out = map_anon(len, PROT_READ | PROT_WRITE);
	uint8_t *hole = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)out,
				    .src = (uintptr_t)buf, .size = len };
	struct gmem_accel_submit sub = { .cmds = (uintptr_t)&c, .count = 1,
					 .flags = GMEM_ACCEL_SUBMIT_WAIT };
	struct gmem_accel_wait w = {};
	int64_t irqs0, irqs;

	ASSERT_TRUE(buf && out && hole);
	ASSERT_EQ(0, munmap(hole, PAGE));
	/* (a NUMA balancing scan would zap the pages: the copies would fault again) */
	ASSERT_EQ(0, no_numa_scan(buf, len));
	ASSERT_EQ(0, no_numa_scan(out, len));
	memset(buf, 0x42, len);
	ASSERT_EQ(0, ioctl(self->fd, GMEM_ACCEL_IOC_SUBMIT, &sub)) TH_LOG("%s", strerror(errno));
	EXPECT_LT(0, sub.fence);
	EXPECT_EQ(0, memcmp(buf, out, len));
	w.fence = sub.fence;
	EXPECT_EQ(0, ioctl(self->fd, GMEM_ACCEL_IOC_WAIT, &w));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "queue_irqs", &irqs0));
	for (int i = 0; i < 50; i++) {
		buf[i] = i;
		sub.fence = 0;
		ASSERT_EQ(0, ioctl(self->fd, GMEM_ACCEL_IOC_SUBMIT, &sub));
		ASSERT_EQ(i, out[i]);
		ASSERT_LT(w.fence, sub.fence);
	}
	ASSERT_EQ(0, gmem_debugfs_stat(0, "queue_irqs", &irqs));
	EXPECT_EQ(irqs0, irqs) TH_LOG("queue interrupts for 50 batches on mapped memory");
	/* The batch's errno is the call's: a page the process has not mapped. */
	c.src = (uintptr_t)hole;
	c.size = PAGE;
	sub.fence = 0;
	EXPECT_EQ(-1, ioctl(self->fd, GMEM_ACCEL_IOC_SUBMIT, &sub));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_LT(0, sub.fence);
	/* Refused before anything is queued: no fence. */
	c.src = (uintptr_t)buf;
	c.op = 0xff;
	sub.fence = 0;
	EXPECT_EQ(-1, ioctl(self->fd, GMEM_ACCEL_IOC_SUBMIT, &sub));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, sub.fence);
	c.op = GMEM_ACCEL_OP_COPY;
	sub.flags = GMEM_ACCEL_SUBMIT_WAIT | 1u << 2;
	EXPECT_EQ(-1, ioctl(self->fd, GMEM_ACCEL_IOC_SUBMIT, &sub));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, sub.fence);
	munmap(buf, len);
	munmap(out, len);
}

/*
 * A SUBMIT_WAIT's doorbell holds the fault interrupt for its queue (CQ_TAIL_FAULT_HOLD), the
 * waiter serving the batch's faults. One that stops serving before its batch is done (the
 * doorbell ran 256 KiB of a 32 MiB fill; the rest runs in QEMU's main loop) rings again
 * without the hold and sleeps: a fault the batch raises after that interrupts and a worker serves it.
 * Were the hold kept, nobody would look and the batch would never end.
 */
TEST_F_TIMEOUT(svm, sleeping_waiter_hands_its_faults_back, 120)
{
	size_t big = 32ul << 20;
	uint8_t *fill = map_anon(big, PROT_READ | PROT_WRITE);
	uint8_t *fresh = map_anon(PAGE, PROT_READ | PROT_WRITE);
	uint8_t *out = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct gmem_accel_cmd c[2] = {
		{ .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)fill, .size = big,
		  .value = 0x7777777777777777ull },
		{ .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)out, .src = (uintptr_t)fresh,
		  .size = PAGE },
	};
	struct gmem_accel_submit sub = { .cmds = (uintptr_t)c, .count = 2,
					 .flags = GMEM_ACCEL_SUBMIT_WAIT };
	int64_t groups0, groups, by_waiter0, by_waiter, irqs0, irqs, wakes0, wakes;
	size_t i;

	ASSERT_TRUE(fill && fresh && out);
	ASSERT_EQ(0, no_numa_scan(fill, big));
	ASSERT_EQ(0, no_numa_scan(out, PAGE));
	/* The fill's pages and the destination mapped: only the fresh page faults. */
	ASSERT_EQ(0, dev_fill(self->fd, fill, 0, big));
	ASSERT_EQ(0, dev_fill(self->fd, out, 0xee, PAGE));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups", &groups0));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups_by_waiter", &by_waiter0));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_irqs", &irqs0));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "wake_fences", &wakes0));
	ASSERT_EQ(0, ioctl(self->fd, GMEM_ACCEL_IOC_SUBMIT, &sub)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups", &groups));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups_by_waiter", &by_waiter));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_irqs", &irqs));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "wake_fences", &wakes));
	EXPECT_EQ(groups0 + 1, groups);
	for (i = 0; i < big; i += 4099)
		ASSERT_EQ(0x77, fill[i]) TH_LOG("byte %zu", i);
	for (i = 0; i < PAGE; i++)
		ASSERT_EQ(0, out[i]) TH_LOG("byte %zu", i);
	if (wakes == wakes0 + 1) {
		/* It slept before the fault came: the interrupt, and a worker served it. */
		EXPECT_LE(irqs0 + 1, irqs);
		EXPECT_EQ(by_waiter0, by_waiter);
	} else {
		/* (a waiter kept off its CPU until the fault was posted serves it, awake) */
		EXPECT_EQ(wakes0, wakes);
		EXPECT_EQ(by_waiter0 + 1, by_waiter);
		TH_LOG("the waiter did not sleep: served the fault itself");
	}
	munmap(fill, big);
	munmap(fresh, PAGE);
	munmap(out, PAGE);
}

/*
 * test_hmm's commands are waited for on the caller's thread, and their fences are quiet: one
 * that completes as the doorbell's write returns (a mapped page) raises no queue interrupt,
 * and a caller that has to sleep (128 MiB: the doorbell runs 256 KiB of it) adds one fence of
 * its own that does (wake_fences). Nothing else uses device 0 meanwhile: every queue
 * interrupt is one of those fences'.
 */
TEST_F_TIMEOUT(svm_proc, quiet_fences_interrupt_only_a_sleeper, 300)
{
	size_t big = 128ul << 20;
	int fd = open("/dev/gmem_dmirror0", O_RDWR);
	uint8_t *buf = map_anon(big, PROT_READ | PROT_WRITE);
	uint8_t *mirror = map_anon(big, PROT_READ | PROT_WRITE);
	struct hmm_dmirror_cmd c = { .addr = (uintptr_t)buf, .ptr = (uintptr_t)mirror,
				     .npages = 1 };
	int64_t irqs0, irqs, wakes0, wakes;

	ASSERT_LE(0, fd) TH_LOG("open /dev/gmem_dmirror0: %s", strerror(errno));
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, mirror);
	/* A NUMA balancing scan would zap the mapped page: the next read would fault. */
	ASSERT_EQ(0, no_numa_scan(buf, big));
	ASSERT_EQ(0, no_numa_scan(mirror, big));
	memset(buf, 0x5a, big);
	memset(mirror, 0, big);
	ASSERT_EQ(0, ioctl(fd, HMM_DMIRROR_READ, &c)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "queue_irqs", &irqs0));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "wake_fences", &wakes0));
	for (int i = 0; i < 100; i++) {
		ASSERT_EQ(0, ioctl(fd, HMM_DMIRROR_READ, &c)) TH_LOG("%s", strerror(errno));
		ASSERT_EQ(0, c.faults);
	}
	ASSERT_EQ(0, gmem_debugfs_stat(0, "queue_irqs", &irqs));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "wake_fences", &wakes));
	EXPECT_EQ(irqs0, irqs) TH_LOG("queue interrupts for 100 reads of a mapped page");
	EXPECT_EQ(wakes0, wakes);

	/* Three rounds: a caller's CPU taken away for the whole copy would not sleep. */
	for (int r = 0; r < 3; r++) {
		c.npages = big / PAGE;
		ASSERT_EQ(0, ioctl(fd, HMM_DMIRROR_READ, &c)) TH_LOG("%s", strerror(errno));
		ASSERT_EQ(0, memcmp(buf, mirror, big)) TH_LOG("round %d", r);
		memset(mirror, 0, big);
	}
	ASSERT_EQ(0, gmem_debugfs_stat(0, "wake_fences", &wakes));
	EXPECT_LE(wakes0 + 1, wakes);
	EXPECT_GE(wakes0 + 3, wakes);
	/* (a fence's interrupt may come after its waiter saw the batch pass) */
	irqs = irqs0 + wakes - wakes0;
	EXPECT_EQ(irqs, gmem_wait_stat(0, "queue_irqs", irqs, 10000));
	munmap(buf, big);
	munmap(mirror, big);
	close(fd);
}

/*
 * The waiter serves its batch's faults itself, and the doorbell of its quiet batch holds the
 * fault interrupt for its queue's groups meanwhile (bit 31, GMEM_CQ_TAIL_FAULT_HOLD, sets the
 * queue's FAULT_HOLD): 100 single-page faults, each one fault its waiter served, raise (almost)
 * no fault interrupt; without the hold, each would raise one.
 */
TEST_F_TIMEOUT(svm_proc, served_faults_raise_no_interrupt, 120)
{
	size_t n = 100, two_mib = 2ul << 20;
	int fd = open("/dev/gmem_dmirror0", O_RDWR);
	uint8_t *map = map_anon(2 * two_mib, PROT_READ | PROT_WRITE);
	uint8_t *mirror = map_anon(PAGE, PROT_READ | PROT_WRITE);
	int64_t irqs0, irqs, by_waiter0, by_waiter;
	uint8_t *buf;

	ASSERT_LE(0, fd) TH_LOG("open /dev/gmem_dmirror0: %s", strerror(errno));
	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, mirror);
	/* (a NUMA balancing scan of the mirror page would add a fault to a read) */
	ASSERT_EQ(0, no_numa_scan(map, 2 * two_mib));
	ASSERT_EQ(0, no_numa_scan(mirror, PAGE));
	/* Untouched small pages under an existing page table: a fault maps its page alone. */
	buf = (uint8_t *)(((uintptr_t)map + two_mib - 1) & ~(two_mib - 1));
	ASSERT_EQ(0, madvise(buf, two_mib, MADV_NOHUGEPAGE));
	buf[two_mib - 1] = 1;
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_irqs", &irqs0));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups_by_waiter", &by_waiter0));
	for (size_t i = 0; i < n; i++) {
		struct hmm_dmirror_cmd c = { .addr = (uintptr_t)(buf + i * PAGE),
					     .ptr = (uintptr_t)mirror, .npages = 1 };

		mirror[0] = 0x5a;
		ASSERT_EQ(0, ioctl(fd, HMM_DMIRROR_READ, &c)) TH_LOG("%s", strerror(errno));
		ASSERT_EQ(1, c.faults) TH_LOG("page %zu", i);
		ASSERT_EQ(0, mirror[0]) TH_LOG("page %zu", i);
	}
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_irqs", &irqs));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups_by_waiter", &by_waiter));
	EXPECT_LE(by_waiter0 + n, by_waiter);
	/* (a command the device ran later, from its own loop, faults unheld: allow a few) */
	EXPECT_GE(irqs0 + 5, irqs) TH_LOG("%lld fault interrupts for %zu served faults",
					  (long long)(irqs - irqs0), n);
	munmap(map, 2 * two_mib);
	munmap(mirror, PAGE);
	close(fd);
}

/* Compute commands: atomics on one counter, a strided scale-add. */
/*
 * Coherent HBM taken exclusively by the device (test_hmm's EXCLUSIVE), then every HBM page
 * evicted (RELEASE, migrate_device_range): the exclusive pages stay as they are, and when the
 * process exits they are freed. On 6.12, migrate_device_finalize() would turn such a page's
 * device-exclusive entry into a mapping with a reference never dropped, so eviction gives
 * back every page someone else still holds: otherwise the pages outlive their process.
 */
TEST_F_TIMEOUT(svm_proc, exclusive_coherent_pages_survive_release, 120)
{
	int dev = gmem_expect("devices", 1) - 1, status;
	char node[64];
	pid_t pid;

	if (!gmem_expect("coherent", 0))
		SKIP(return, "no coherent device (run-vm.sh --coherent N)");
	snprintf(node, sizeof(node), "/dev/gmem_dmirror%d", dev);
	ASSERT_EQ(0, gmem_wait_stat(dev, "hbm_pages_now", 0, 30000));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		size_t npages = 64, len = npages * PAGE;
		uint8_t *buf = map_anon(len, PROT_READ | PROT_WRITE), *out = malloc(len);
		struct hmm_dmirror_cmd c = { .addr = (uintptr_t)buf, .ptr = (uintptr_t)out,
					     .npages = npages };
		int fd = open(node, O_RDWR);
		int64_t in_hbm = -1;

		if (fd < 0 || !buf || !out)
			_exit(10);
		memset(buf, 0x3d, len);
		if (ioctl(fd, HMM_DMIRROR_MIGRATE_TO_DEV, &c) || ioctl(fd, HMM_DMIRROR_EXCLUSIVE, &c))
			_exit(11);
		if (ioctl(fd, HMM_DMIRROR_RELEASE, &c))
			_exit(12);
		gmem_debugfs_stat(dev, "hbm_pages_now", &in_hbm);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 15, 0)
		/*
		 * A device-exclusive entry keeps its page mapped and try_to_migrate() handles
		 * it: the pages go home, and the device's exclusive entries with them.
		 */
		if (in_hbm != 0)
			_exit(13);
		if (ioctl(fd, HMM_DMIRROR_CHECK_EXCLUSIVE, &c))
			_exit(15);
#else
		/* Only the entry holds the page (no mapcount): it cannot move, it stays. */
		if (in_hbm != (int64_t)npages)
			_exit(13);
#endif
		for (size_t i = 0; i < len; i += 512)
			if (buf[i] != 0x3d)
				_exit(14);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("child step %d failed", WEXITSTATUS(status));
	EXPECT_EQ(0, gmem_wait_stat(dev, "hbm_pages_now", 0, 30000)) TH_LOG("HBM pages leaked");
}

TEST_F_TIMEOUT(svm, compute, 120)
{
	uint32_t *counter = malloc(64), *x = malloc(1024 * 16), *y = malloc(1024 * 16);
	struct gmem_accel_cmd c[2] = {
		{ .op = GMEM_ACCEL_OP_ATOMIC_ADD, .dst = (uintptr_t)&counter[1], .size = 1000,
		  .value = 3 },
		{ .op = GMEM_ACCEL_OP_SCALE_ADD, .dst = (uintptr_t)y, .src = (uintptr_t)x,
		  .size = 1024, .value = 5, .value2 = 7, .dst_stride = 16, .src_stride = 16 },
	};

	int i;

	counter[1] = 10;
	for (i = 0; i < 4096; i++) {
		x[i] = i;
		y[i] = 0xffffffff;
	}
	ASSERT_EQ(0, run_cmds(self->fd, c, 2));
	EXPECT_EQ(3010, counter[1]);
	for (i = 0; i < 4096; i++)
		ASSERT_EQ(i % 4 ? 0xffffffff : (uint32_t)(i * 5 + 7), y[i]) TH_LOG("y[%d]", i);
	free(counter);
	free(x);
	free(y);
}

/* AXPY: y[i] += x[i] * a on plain malloc'd u64 arrays over several pages, both read back. */
TEST_F_TIMEOUT(svm, axpy, 120)
{
	enum { N = 3000 };
	uint64_t *x = malloc(N * 8), *y = malloc(N * 8);
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_AXPY, .flags = GMEM_ACCEL_CMD_WIDE,
				    .dst = (uintptr_t)y, .src = (uintptr_t)x, .size = N,
				    .value = 3, .dst_stride = 8, .src_stride = 8 };

	ASSERT_TRUE(x && y);
	for (int i = 0; i < N; i++) {
		x[i] = 0x100000001ull * i;
		y[i] = UINT64_MAX - i;
	}
	ASSERT_EQ(0, run_cmds(self->fd, &c, 1));
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(UINT64_MAX - i + 0x300000003ull * i, y[i]) TH_LOG("y[%d]", i);
		ASSERT_EQ(0x100000001ull * i, x[i]) TH_LOG("x[%d] changed", i);
	}
	free(x);
	free(y);
}

/* Several processes at once, each its own context and data. */
TEST_F_TIMEOUT(svm_proc, many_processes, 300)
{
	enum { N = 6 };
	pid_t pids[N];
	int status;

	for (int p = 0; p < N; p++) {
		pids[p] = fork();
		ASSERT_LE(0, pids[p]);
		if (pids[p] == 0) {
			int fd = gmem_open(p % 2, O_RDWR);
			size_t len = 64 * 1024;
			uint8_t *a = malloc(len), *b = malloc(len);

			if (fd < 0)
				_exit(1);
			for (int round = 0; round < 5; round++) {
				pattern(a, len, p * 10 + round);
				if (dev_copy(fd, b, a, len) || memcmp(a, b, len))
					_exit(2);
			}
			_exit(0);
		}
	}
	for (int p = 0; p < N; p++) {
		ASSERT_EQ(pids[p], waitpid(pids[p], &status, 0));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("process %d", p);
	}
}

/*
 * 16 processes fault at once, a page at a time: each on its own context and queue, serving
 * its own fault groups (taken out of the fault queue's order when another's is older). Every
 * fault lands where it was asked, none is cancelled, and each group is answered once: the
 * device's fault records are the contexts' faults (a page is written once; a replay that
 * faulted again, its mapping taken meanwhile, would count on both sides). The pages are
 * 64 KiB apart, in 4 KiB pages: never dense enough for density prefetch to bring in the next.
 */
TEST_F_TIMEOUT(svm_proc, processes_fault_at_once_each_on_its_own_queue, 300)
{
	enum { N = 16, FAULTS = 32, STRIDE = 16 * PAGE };
	int64_t *faults = mmap(NULL, N * sizeof(*faults), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int64_t records0, records, dropped0, dropped, sum = 0;
	int go[2], status;
	pid_t pids[N];
	char c;

	ASSERT_NE(MAP_FAILED, faults);
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_records", &records0));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_records_dropped", &dropped0));
	ASSERT_EQ(0, pipe(go));
	for (int p = 0; p < N; p++) {
		pids[p] = fork();
		ASSERT_LE(0, pids[p]);
		if (pids[p] == 0) {
			int fd = gmem_open(0, O_RDWR);
			uint64_t *buf = map_anon(FAULTS * STRIDE, PROT_READ | PROT_WRITE);
			struct gmem_accel_stats st;

			close(go[1]);
			if (fd < 0 || !buf || madvise(buf, FAULTS * STRIDE, MADV_NOHUGEPAGE) ||
			    read(go[0], &c, 1) != 0)
				_exit(1);
			for (int i = 0; i < FAULTS; i++)
				if (dev_fill(fd, buf + i * STRIDE / 8, 1000 * p + i, 8))
					_exit(2);
			for (int i = 0; i < FAULTS; i++)
				if (buf[i * STRIDE / 8] != (uint64_t)(1000 * p + i))
					_exit(3);
			st = ctx_stats(fd);
			faults[p] = st.faults;
			if (st.queue != st.context || st.cancels || st.faults < FAULTS)
				_exit(4);
			_exit(0);
		}
	}
	close(go[0]);
	close(go[1]);	/* all start */
	for (int p = 0; p < N; p++) {
		ASSERT_EQ(pids[p], waitpid(pids[p], &status, 0));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("process %d (faults %lld)", p,
							   (long long)faults[p]);
		sum += faults[p];
	}
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_records", &records));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_records_dropped", &dropped));
	EXPECT_EQ(sum, records - records0);
	EXPECT_EQ(0, dropped - dropped0);
	munmap(faults, N * sizeof(*faults));
}

/* Device resources that every context gives back when it goes. */
static const char * const gauges[] = { "contexts_now", "pt_pages_now", "dma_mapped_pages_now",
					"notifiers_now" };
#define NGAUGES 4

/*
 * A process killed while its command is faulting leaves nothing behind (its context,
 * page-table pages, DMA mappings and MMU notifiers are all returned) and the device serving
 * others.
 */
TEST_F_TIMEOUT(svm_proc, killed_while_faulting, 300)
{
	size_t len = 64ul << 20;
	int64_t before[NGAUGES];
	int status, fd, i;
	pid_t pid;
	uint8_t *a = malloc(PAGE), *b = malloc(PAGE);

	for (i = 0; i < NGAUGES; i++) {
		const char *name = gauges[i];

		ASSERT_EQ(0, gmem_debugfs_stat(0, name, &before[i])) TH_LOG("%s", name);
	}
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int cfd = gmem_open(0, O_RDWR);
		uint8_t *big = map_anon(len, PROT_READ | PROT_WRITE);
		struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)big,
					    .size = len, .value = 1 };
		struct gmem_accel_submit s = { .cmds = (uintptr_t)&c, .count = 1 };

		if (cfd < 0 || !big || ioctl(cfd, GMEM_ACCEL_IOC_SUBMIT, &s))
			_exit(1);
		pause();
		_exit(0);
	}
	usleep(300 * 1000);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	for (i = 0; i < NGAUGES; i++) {
		const char *name = gauges[i];

		EXPECT_EQ(before[i], gmem_wait_stat(0, name, before[i], 10000))
			TH_LOG("%s after the killed process", name);
	}
	fd = gmem_open(0, O_RDWR);
	ASSERT_LE(0, fd);
	pattern(a, PAGE, 9);
	ASSERT_EQ(0, dev_copy(fd, b, a, PAGE));
	EXPECT_EQ(0, memcmp(a, b, PAGE));
	close(fd);
}

/* ioctl(@req, @arg) must fail with errno @err. */
#define EXPECT_IOCTL_ERRNO(err, fd, req, arg) do {		\
	EXPECT_EQ(-1, ioctl(fd, req, arg));			\
	EXPECT_EQ(err, errno);					\
} while (0)

/* Every ioctl checks its arguments; none of the bad ones leaves anything behind. */
TEST_F_TIMEOUT(svm, bad_ioctls, 60)
{
	uint64_t word = 0, big = 1ull << 24;
	uintptr_t w = (uintptr_t)&word;
	const uintptr_t kernel = 0xffff888000000000ull;
	struct {
		const char *what;
		struct gmem_accel_cmd c;
		int err;
	} cmds[] = {
		{ "op 0", { .op = 0, .dst = w, .size = 8 }, EINVAL },
		{ "op 99", { .op = 99, .dst = w, .size = 8 }, EINVAL },
		{ "unknown flag", { .op = GMEM_ACCEL_OP_FILL, .flags = 2, .dst = w, .size = 8 },
		  EINVAL },
		{ "size 0", { .op = GMEM_ACCEL_OP_FILL, .dst = w }, EINVAL },
		{ "copy over 4 GiB", { .op = GMEM_ACCEL_OP_COPY, .dst = w, .src = w,
				       .size = (4ull << 30) + 1 }, EINVAL },
		{ "range wraps", { .op = GMEM_ACCEL_OP_FILL, .dst = UINT64_MAX - 8, .size = 64 },
		  EINVAL },
		{ "kernel address", { .op = GMEM_ACCEL_OP_FILL, .dst = kernel, .size = 8 }, EFAULT },
		{ "fill with src", { .op = GMEM_ACCEL_OP_FILL, .dst = w, .src = w, .size = 8 },
		  EINVAL },
		{ "copy with value", { .op = GMEM_ACCEL_OP_COPY, .dst = w, .src = w, .size = 8,
				       .value = 1 }, EINVAL },
		{ "copy WIDE", { .op = GMEM_ACCEL_OP_COPY, .flags = GMEM_ACCEL_CMD_WIDE, .dst = w,
				 .src = w, .size = 8 }, EINVAL },
		{ "atomic unaligned", { .op = GMEM_ACCEL_OP_ATOMIC_ADD, .dst = w + 1, .size = 1 },
		  EINVAL },
		{ "atomic stride", { .op = GMEM_ACCEL_OP_ATOMIC_ADD, .dst = w, .size = 1,
				     .dst_stride = big + 4 }, EINVAL },
		{ "atomic elements", { .op = GMEM_ACCEL_OP_ATOMIC_ADD, .dst = w, .size = big + 1 },
		  EINVAL },
		{ "atomic with src", { .op = GMEM_ACCEL_OP_ATOMIC_ADD, .dst = w, .src = w,
				       .size = 1 }, EINVAL },
		{ "scale-add unaligned src", { .op = GMEM_ACCEL_OP_SCALE_ADD, .dst = w,
					       .src = w + 2, .size = 1 }, EINVAL },
		{ "axpy with value2", { .op = GMEM_ACCEL_OP_AXPY, .dst = w, .src = w,
					.size = 1, .value2 = 1 }, EINVAL },
		{ "op past the last", { .op = GMEM_ACCEL_OP_AXPY + 1, .dst = w, .size = 1 },
		  EINVAL },
		{ "compute past the device's 48-bit VA", { .op = GMEM_ACCEL_OP_ATOMIC_ADD,
			.dst = 0xfffffffff000, .size = 4096, .dst_stride = 4096 }, EFAULT },
	};
	struct gmem_accel_cmd ok = { .op = GMEM_ACCEL_OP_FILL, .dst = w, .size = 8, .value = 5 };
	struct gmem_accel_submit sub = { .cmds = (uintptr_t)&ok, .count = 1 };
	struct gmem_accel_wait wait = { 0 };
	uint8_t view[4];
	struct gmem_accel_snapshot snap = { .addr = w & ~(PAGE - 1), .npages = 1,
					    .out = (uintptr_t)view };
	struct gmem_accel_stats st = { .flags = 1 };
	struct gmem_accel_info info = { .flags = 1 };
	int fd = self->fd;

	for (unsigned int i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		sub.cmds = (uintptr_t)&cmds[i].c;
		EXPECT_EQ(-1, ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &sub)) TH_LOG("%s", cmds[i].what);
		EXPECT_EQ(cmds[i].err, errno) TH_LOG("%s", cmds[i].what);
	}
	sub.cmds = (uintptr_t)&ok;
	EXPECT_IOCTL_ERRNO(ENOTTY, fd, _IO(GMEM_ACCEL_IOC_MAGIC, 0x7f), NULL);
	EXPECT_IOCTL_ERRNO(EFAULT, fd, GMEM_ACCEL_IOC_SUBMIT, NULL);
	sub.flags = 1;
	EXPECT_IOCTL_ERRNO(EINVAL, fd, GMEM_ACCEL_IOC_SUBMIT, &sub);
	sub.flags = 0;
	sub.count = 0;
	EXPECT_IOCTL_ERRNO(EINVAL, fd, GMEM_ACCEL_IOC_SUBMIT, &sub);
	sub.count = GMEM_ACCEL_MAX_BATCH + 1;
	EXPECT_IOCTL_ERRNO(E2BIG, fd, GMEM_ACCEL_IOC_SUBMIT, &sub);
	sub.count = 1;
	sub.cmds = 8;
	EXPECT_IOCTL_ERRNO(EFAULT, fd, GMEM_ACCEL_IOC_SUBMIT, &sub);
	sub.cmds = (uintptr_t)&ok;

	/* Fences: none issued yet on this file, a bad queue, flags. */
	wait.fence = 0;
	EXPECT_IOCTL_ERRNO(EINVAL, fd, GMEM_ACCEL_IOC_WAIT, &wait);
	wait.fence = 5;
	EXPECT_IOCTL_ERRNO(EINVAL, fd, GMEM_ACCEL_IOC_WAIT, &wait);
	wait.fence = 7ull << 56 | 1;
	EXPECT_IOCTL_ERRNO(EINVAL, fd, GMEM_ACCEL_IOC_WAIT, &wait);
	wait.fence = 1;
	wait.flags = 1;
	EXPECT_IOCTL_ERRNO(EINVAL, fd, GMEM_ACCEL_IOC_WAIT, &wait);
	EXPECT_IOCTL_ERRNO(EFAULT, fd, GMEM_ACCEL_IOC_WAIT, (void *)8);

	/* Snapshots. */
	snap.addr += 1;
	EXPECT_IOCTL_ERRNO(EINVAL, fd, GMEM_ACCEL_IOC_SNAPSHOT, &snap);
	snap.addr -= 1;
	snap.npages = 0;
	EXPECT_IOCTL_ERRNO(EINVAL, fd, GMEM_ACCEL_IOC_SNAPSHOT, &snap);
	snap.npages = GMEM_ACCEL_MAX_SNAPSHOT + 1;
	EXPECT_IOCTL_ERRNO(E2BIG, fd, GMEM_ACCEL_IOC_SNAPSHOT, &snap);
	snap.npages = 1;
	snap.out = 8;
	EXPECT_IOCTL_ERRNO(EFAULT, fd, GMEM_ACCEL_IOC_SNAPSHOT, &snap);
	snap.out = (uintptr_t)view;
	snap.flags = 1;
	EXPECT_IOCTL_ERRNO(EINVAL, fd, GMEM_ACCEL_IOC_SNAPSHOT, &snap);
	EXPECT_IOCTL_ERRNO(EINVAL, fd, GMEM_ACCEL_IOC_STATS, &st);
	EXPECT_IOCTL_ERRNO(EINVAL, fd, GMEM_ACCEL_IOC_GET_INFO, &info);

	/* Nothing was queued by any of that; a good command still works. */
	st.flags = 0;
	ASSERT_EQ(0, ioctl(fd, GMEM_ACCEL_IOC_STATS, &st));
	EXPECT_EQ(0, st.commands);
	ASSERT_EQ(0, run_cmds(fd, &ok, 1));
	EXPECT_EQ(5, word);	/* the 8 bytes of value */
}

TEST_HARNESS_MAIN
