// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE	/* mremap */
/*
 * The mm events of a distribution's kernel while the device maps the pages: reclaim and swap
 * (a memcg limit, MADV_PAGEOUT), MADV_COLD and MADV_FREE, KSM merging, NUMA migration
 * (move_pages, mbind), compaction, userfaultfd, hardware poison, mremap. After each, the bytes
 * the device reads must be the CPU's, the device's writes must land in the process's current
 * page (never a merged, swapped-out or freed one), and its view (SNAPSHOT) must follow the CPU's
 * page table. Device 0 (private HBM; no page here is migrated to it).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include <lib/test_hmm_uapi.h>	/* what the kernel's HMM can do (userfaultfd) */
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define HUGE (2ul << 20)
#define RW (PROT_READ | PROT_WRITE)
#define MPOL_BIND 2
#define MPOL_MF_MOVE (1 << 1)
#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

/* Anonymous memory in 4 KiB pages (KSM and swap work on those). */
static uint8_t *map_pages(size_t len)
{
	uint8_t *p = map_anon(len, RW);

	if (p)
		madvise(p, len, MADV_NOHUGEPAGE);
	return p;
}

/* Page @i's bytes: its index in the first word, @seed elsewhere. */
static void fill_page(uint8_t *page, size_t i, uint8_t seed)
{
	memset(page, seed, PAGE);
	*(uint64_t *)page = i * 0x9e3779b97f4a7c15ull;
}

#define READ_CHUNK	(256 * PAGE)

/* device_reads_as_cpu() through @tmp, READ_CHUNK bytes of the caller's. */
static int device_reads_into(int fd, uint8_t *tmp, const uint8_t *buf, size_t len)
{
	int ret = 0;

	for (size_t off = 0; off < len && !ret; off += READ_CHUNK) {
		size_t n = len - off < READ_CHUNK ? len - off : READ_CHUNK;

		ret = dev_copy(fd, tmp, buf + off, n);
		if (!ret && memcmp(tmp, buf + off, n))
			ret = -EILSEQ;
	}
	return ret;
}

/* Does the device read [buf, buf + len) as the CPU sees it? Compared a chunk at a time. */
static int device_reads_as_cpu(int fd, const uint8_t *buf, size_t len)
{
	uint8_t *tmp = malloc(READ_CHUNK);
	int ret;

	if (!tmp)
		return -ENOMEM;
	ret = device_reads_into(fd, tmp, buf, len);
	free(tmp);
	return ret;
}

/* How many of @npages pages from @buf the device maps (SNAPSHOT), writable ones in *@writable. */
static long device_maps(int fd, void *buf, unsigned long npages, long *writable)
{
	uint8_t *v = malloc(npages);
	struct gmem_accel_snapshot s = { .addr = (uintptr_t)buf, .npages = npages,
					 .out = (uintptr_t)v };
	long n = 0, w = 0;

	if (!v || ioctl(fd, GMEM_ACCEL_IOC_SNAPSHOT, &s)) {
		free(v);
		return -1;
	}
	for (unsigned long i = 0; i < npages; i++) {
		n += !!(v[i] & GMEM_ACCEL_PAGE_READ);
		w += !!(v[i] & GMEM_ACCEL_PAGE_WRITE);
	}
	free(v);
	if (writable)
		*writable = w;
	return n;
}

/* How many of @npages pages from @buf the device maps (SNAPSHOT) while they are swapped out. */
static long device_maps_swapped(int fd, void *buf, unsigned long npages)
{
	uint8_t *v = malloc(npages);
	struct gmem_accel_snapshot s = { .addr = (uintptr_t)buf, .npages = npages,
					 .out = (uintptr_t)v };
	long n = 0;

	if (!v || ioctl(fd, GMEM_ACCEL_IOC_SNAPSHOT, &s)) {
		free(v);
		return -1;
	}
	for (unsigned long i = 0; i < npages; i++)
		n += (v[i] & GMEM_ACCEL_PAGE_READ) &&
		     (pagemap((uint8_t *)buf + i * PAGE) & PM_SWAPPED);
	free(v);
	return n;
}

static long read_long(const char *path)
{
	char buf[64];

	if (read_sysfs(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

FIXTURE(mm) {
	int fd;
};

FIXTURE_SETUP(mm)
{
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	self->fd = gmem_open(0, O_RDWR);
	ASSERT_LE(0, self->fd) TH_LOG("open /dev/gmem_accel0: %s", strerror(errno));
}

FIXTURE_TEARDOWN(mm)
{
	close(self->fd);
}

/*
 * The context hears of the CPU's changes to the 2 MiB windows the device reached, not of the
 * whole mm: one notifier per window, inserted as the device reaches it. (With one notifier over
 * the whole address space, each change anywhere restarted every window in flight; under
 * reclaim of the process's own pages a device fault retried until HMM's one-second timeout
 * and its command failed with EBUSY.) Nothing mapped, no notifier; they go with the context.
 */
TEST_F_TIMEOUT(mm, invalidations_elsewhere_pass_the_device_by, 180)
{
	size_t len = 2 * HUGE;
	uint8_t *dev = map_pages(len), *cpu = map_pages(3 * HUGE), *raw = map_pages(2 * HUGE);
	uint8_t *win, *out;
	int64_t notifiers0, notifiers, after;
	uint64_t inval;
	int fd;

	ASSERT_NE(NULL, dev);
	ASSERT_NE(NULL, cpu);
	ASSERT_NE(NULL, raw);
	/*
	 * The device's reads land in a window of their own, kept: a buffer freed after them
	 * would have its window's notifier go later, in the collector's own time, possibly
	 * between the last two counts below on a loaded host.
	 */
	out = (uint8_t *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1));
	/*
	 * A NUMA balancing scan of @dev invalidates its windows (protection_vma), more of them
	 * the longer the loop below takes on a loaded host: not a change elsewhere.
	 */
	ASSERT_EQ(0, no_numa_scan(dev, len));
	/* A whole window of @cpu's: no window of @dev's can share it. */
	win = (uint8_t *)(((uintptr_t)cpu + HUGE) & ~(HUGE - 1));
	memset(dev, 1, len);
	memset(cpu, 2, 3 * HUGE);
	fd = gmem_open(0, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, dev_fill(fd, out, 0, READ_CHUNK));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "notifiers_now", &notifiers0));
	ASSERT_EQ(0, device_reads_into(fd, out, dev, len));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "notifiers_now", &notifiers));
	/* 4 MiB: two windows if aligned, three if not. */
	EXPECT_LE(notifiers0 + 2, notifiers);
	EXPECT_GE(notifiers0 + 3, notifiers);

	inval = ctx_stats(fd).invalidations;
	for (int i = 0; i < 100; i++) {
		ASSERT_EQ(0, madvise(win, HUGE, MADV_DONTNEED));
		win[i * PAGE] = i;
	}
	/*
	 * One notifier over the whole mm hears all 100 changes. The device's own windows still
	 * hear compaction and reclaim moving their pages meanwhile: 13 once, on the debug kernel
	 * beside the other suites, with NUMA balancing kept off them; so fewer than half.
	 */
	EXPECT_GT(inval + 50, ctx_stats(fd).invalidations)
		TH_LOG("%llu invalidations for 100 changes the device never reached",
		       (unsigned long long)(ctx_stats(fd).invalidations - inval));
	ASSERT_EQ(0, madvise(dev, len, MADV_DONTNEED));
	EXPECT_LT(inval, ctx_stats(fd).invalidations);
	EXPECT_EQ(0, device_maps(fd, dev, len / PAGE, NULL));
	/* A window nothing maps any more: the device's access fails, and costs no notifier. */
	ASSERT_EQ(0, gmem_debugfs_stat(0, "notifiers_now", &notifiers));
	ASSERT_EQ(0, munmap(win, HUGE));
	EXPECT_EQ(-EFAULT, dev_copy(fd, dev, win + PAGE, 64));
	EXPECT_EQ(-EFAULT, dev_fill(fd, win, 1, 64));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "notifiers_now", &after));
	EXPECT_EQ(notifiers, after);
	close(fd);
	/* (@out's notifier went with the context) */
	EXPECT_EQ(notifiers0 - 1, gmem_wait_stat(0, "notifiers_now", notifiers0 - 1, 10000));
	munmap(dev, len);
	munmap(cpu, 3 * HUGE);
	munmap(raw, 2 * HUGE);
}

/*
 * Device 0's counter @name once it reaches @want from below (@dir 1) or from above (@dir -1),
 * given @timeout_ms, or what it was then.
 */
static int64_t wait_stat_reaches(const char *name, int64_t want, int dir, int timeout_ms)
{
	int64_t v = INT64_MIN;

	for (int waited = 0; !gmem_debugfs_stat(0, name, &v) && (v - want) * dir < 0 &&
	     waited < timeout_ms; waited += 10)
		usleep(10 * 1000);
	return v;
}

/*
 * A window whose memory is unmapped gives back its notifier and its table of 4 KiB device
 * entries (as drm_gpusvm's garbage collector does): a process that maps and unmaps buffers all
 * over its address space, as a runtime's allocations do, does not grow them for as long as it
 * keeps the device open. What is mapped there later is the device's to read afresh. (On the
 * DRM front end the notifiers are drm_gpusvm's, which the core's counters do not count: the
 * tables are what its collector gives back.)
 */
TEST_F_TIMEOUT(mm, unmapped_windows_give_back_their_notifiers, 300)
{
	const int rounds = 32;
	size_t len = 2 * HUGE, span = rounds * len + HUGE;
	int64_t notifiers0, freed0, pt0, notifiers, freed, pt;
	uint8_t *area, *base, *p;

	/* Addresses of its own for every round: a reservation nothing else lands in. */
	area = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, area);
	base = (uint8_t *)(((uintptr_t)area + HUGE - 1) & ~(HUGE - 1));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "notifiers_now", &notifiers0));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "notifiers_freed", &freed0));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "pt_pages_now", &pt0));
	for (int r = 0; r < rounds; r++) {
		p = base + r * len;
		ASSERT_EQ(p, mmap(p, len, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
		/* 4 KiB pages: the device maps them through a table of its own per window */
		ASSERT_EQ(0, madvise(p, len, MADV_NOHUGEPAGE));
		memset(p, r + 1, len);
		ASSERT_EQ(0, device_reads_as_cpu(self->fd, p, len));
		ASSERT_EQ(0, munmap(p, len));
	}
	/* Two windows a round, each given back by a work item: waited for. */
	if (!gmem_fd_is_accel(self->fd)) {
		freed = wait_stat_reaches("notifiers_freed", freed0 + 2 * rounds, 1, 60000);
		EXPECT_LE(freed0 + 2 * rounds, freed);
		ASSERT_EQ(0, gmem_debugfs_stat(0, "notifiers_now", &notifiers));
		EXPECT_GE(notifiers0 + 4, notifiers)
			TH_LOG("%lld notifiers more after %d rounds",
			       (long long)(notifiers - notifiers0), rounds);
	}
	/*
	 * The test's own buffer for the comparisons keeps a window or two, and the upper tables
	 * stay (one boot, 7.3: 10 pages and 3 notifiers more, against 74 and 67 when unmapped
	 * windows kept theirs).
	 */
	pt = wait_stat_reaches("pt_pages_now", pt0 + 16, -1, 60000);
	EXPECT_GE(pt0 + 16, pt)
		TH_LOG("%lld page-table pages more after %d rounds", (long long)(pt - pt0), rounds);
	/* Mapped again: the device reads the new bytes, and its writes reach the CPU. */
	p = base;
	ASSERT_EQ(p, mmap(p, len, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	memset(p, 0x5a, len);
	EXPECT_EQ(0, device_reads_as_cpu(self->fd, p, len));
	ASSERT_EQ(0, dev_fill(self->fd, p + HUGE, 0xa5a5a5a5a5a5a5a5ull, PAGE));
	EXPECT_EQ(0xa5, p[HUGE + PAGE - 1]);
	EXPECT_EQ(0x5a, p[HUGE + PAGE]);
	munmap(area, span);
}

/* A child's context migrating 128 MiB to HBM and back until killed: SRCU readers, always. */
static pid_t migrate_forever(void)
{
	size_t len = 128ul << 20;
	int ready[2];
	char c = 0;
	pid_t pid;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = gmem_open(0, O_RDWR);
		uint8_t *buf = map_anon(len, RW);

		if (fd < 0 || !buf)
			_exit(1);
		memset(buf, 1, len);
		for (;;) {
			if (dev_migrate(fd, buf, len, GMEM_ACCEL_TO_DEVICE) < 0 ||
			    dev_migrate(fd, buf, len, GMEM_ACCEL_TO_SYSTEM) < 0)
				_exit(2);
			if (write(ready[1], &c, 1) != 1)
				_exit(3);
		}
	}
	/* Its notifiers are all in once it has been round once. */
	if (pid > 0 && read(ready[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(ready[0]);
	close(ready[1]);
	return pid;
}

/*
 * A window unmapped and mapped again while the notifier collector still waits for the readers
 * of its old notifier (others' migrations) keeps what the device maps there afterwards: the
 * collector drops a window's mappings only when no new notifier covers it: dropped regardless,
 * the device's next access there would fault again (hmm-tests' anon_read_multiple would count
 * two faults for one read). A round is telling when the new notifier came in before the old
 * one left (notifiers_now one higher).
 */
TEST_F_TIMEOUT(mm, window_mapped_again_keeps_its_device_mappings, 600)
{
	const int rounds = 16;
	size_t len = HUGE, npages = len / PAGE;
	uint8_t *area, *p, *dst = map_pages(len);
	int64_t before, now;
	int telling = 0;
	pid_t busy;

	ASSERT_NE(NULL, dst);
	/* A whole window of its own (the collector frees a window no VMA meets). */
	area = mmap(NULL, 2 * HUGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, area);
	p = (uint8_t *)(((uintptr_t)area + HUGE - 1) & ~(HUGE - 1));
	ASSERT_EQ(0, munmap(area, 2 * HUGE));
	ASSERT_EQ(p, mmap(p, len, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	ASSERT_EQ(0, madvise(p, len, MADV_NOHUGEPAGE));
	ASSERT_EQ(0, no_numa_scan(p, len));
	memset(p, 1, len);
	ASSERT_EQ(0, dev_copy(self->fd, dst, p, len));
	busy = migrate_forever();
	ASSERT_LT(0, busy);
	for (int r = 0; r < rounds; r++) {
		ASSERT_EQ(0, gmem_debugfs_stat(0, "notifiers_now", &before));
		ASSERT_EQ(0, munmap(p, len));
		usleep(5000);	/* the collector takes the window out, then waits */
		ASSERT_EQ(p, mmap(p, len, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
		ASSERT_EQ(0, madvise(p, len, MADV_NOHUGEPAGE));
		ASSERT_EQ(0, no_numa_scan(p, len));
		memset(p, r + 2, len);
		ASSERT_EQ(0, dev_copy(self->fd, dst, p, len));
		EXPECT_EQ(0, memcmp(dst, p, len));
		ASSERT_EQ(0, gmem_debugfs_stat(0, "notifiers_now", &now));
		if (now == before + 1) {
			telling++;
			/* The old notifier leaves once the migration running then is done. */
			EXPECT_EQ(before, gmem_wait_stat(0, "notifiers_now", before, 120000));
		}
		EXPECT_EQ((long)npages, device_maps(self->fd, p, npages, NULL))
			TH_LOG("round %d: the device lost the window's mappings (%s)", r,
			       now == before + 1 ? "new notifier before the old left" : "");
	}
	kill(busy, SIGKILL);
	waitpid(busy, NULL, 0);
	TH_LOG("%d of %d rounds had the new notifier in before the old one left", telling, rounds);
	munmap(p, len);
	munmap(dst, len);
	if (!telling)
		SKIP(return, "the collector never waited long enough to tell");
}

/*
 * MADV_PAGEOUT swaps out pages the device maps: the device mapping goes with them, and the
 * device's next read swaps them back in with the same bytes. A device write to a swapped-out
 * page lands in the page the CPU then reads.
 */
TEST_F_TIMEOUT(mm, pageout_swaps_out_device_mapped_pages, 180)
{
	size_t npages = 256, len = npages * PAGE;
	uint8_t *buf = map_pages(len);
	uint64_t inval;

	if (!have_swap())
		SKIP(return, "no swap (the guest sets up zram0)");
	ASSERT_NE(NULL, buf);
	for (size_t i = 0; i < npages; i++)
		fill_page(buf + i * PAGE, i, 0x5a);
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));
	ASSERT_EQ((long)npages, device_maps(self->fd, buf, npages, NULL));
	inval = ctx_stats(self->fd).invalidations;

	ASSERT_EQ(0, madvise(buf, len, MADV_PAGEOUT));
	EXPECT_LT(npages / 2, swapped_pages(buf, npages)) TH_LOG("MADV_PAGEOUT swapped too little");
	EXPECT_LT(inval, ctx_stats(self->fd).invalidations);
	/* A page MADV_PAGEOUT skipped (not yet on the LRU, busy) may stay mapped; no other. */
	EXPECT_EQ(0, device_maps_swapped(self->fd, buf, npages));

	/* The device writes a swapped-out page: swapped in, written, the CPU sees it. */
	ASSERT_EQ(0, madvise(buf, len, MADV_PAGEOUT));
	ASSERT_EQ(0, dev_fill(self->fd, buf + 7 * PAGE, 0x1111111111111111ull, PAGE));
	/* Everything else is read back by the device as the CPU reads it (swap-in). */
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));
	for (size_t i = 0; i < npages; i++) {
		uint8_t want[PAGE];

		fill_page(want, i, 0x5a);
		if (i == 7)
			memset(want, 0x11, PAGE);
		ASSERT_EQ(0, memcmp(want, buf + i * PAGE, PAGE)) TH_LOG("page %zu", i);
	}
	munmap(buf, len);
}

/*
 * A memcg limit below the working set: reclaim swaps out pages the device mapped while the
 * process keeps using the device on all of them; no byte is lost either way.
 */
TEST_F_TIMEOUT(mm, memcg_reclaim_under_device_mappings, 900)
{
	const char *cg = "/sys/fs/cgroup/gmem_mm_test";
	/* 32 MiB in a 12 MiB limit: the ratio is what matters, the volume only costs time */
	size_t npages = 32 << 8, len = npages * PAGE;
	const char *why;
	int ret = gmem_memcg_create("gmem_mm_test", 12ul << 20, &why), status;
	pid_t pid;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, ret) TH_LOG("%s: %s", cg, strerror(-ret));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* The child lives in the cgroup with its own context. */
		int fd, err = 0;
		uint8_t *buf;
		uint64_t inval;
		long swapped;

		if (gmem_memcg_join("gmem_mm_test"))
			_exit(10);
		fd = gmem_open(0, O_RDWR);
		buf = map_pages(len);
		if (fd < 0 || !buf)
			_exit(11);
		for (size_t i = 0; i < npages; i++)
			fill_page(buf + i * PAGE, i, 0xc3);
		/* Twice over, device reads of everything: each pass swaps the other half out. */
		inval = ctx_stats(fd).invalidations;
		for (int pass = 0; pass < 2 && !err; pass++)
			err = device_reads_as_cpu(fd, buf, len);
		if (err) {
			printf("# device read: %s\n", strerror(-err));
			_exit(12);
		}
		swapped = read_long("/sys/fs/cgroup/gmem_mm_test/memory.swap.current");
		printf("# swap in use by the cgroup: %ld KiB; invalidations %llu\n", swapped >> 10,
		       (unsigned long long)(ctx_stats(fd).invalidations - inval));
		if (swapped <= 0)
			_exit(13);
		if (ctx_stats(fd).invalidations == inval)
			_exit(14);
		/* The device writes every page's first word; the CPU checks each. */
		for (size_t i = 0; i < npages; i += 256) {
			struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_ATOMIC_ADD,
						    .flags = GMEM_ACCEL_CMD_WIDE,
						    .dst = (uintptr_t)(buf + i * PAGE),
						    .size = 256, .value = 1, .dst_stride = PAGE };

			if (run_cmds(fd, &c, 1))
				_exit(15);
		}
		for (size_t i = 0; i < npages; i++) {
			if (*(uint64_t *)(buf + i * PAGE) != i * 0x9e3779b97f4a7c15ull + 1 ||
			    buf[i * PAGE + PAGE - 1] != 0xc3) {
				printf("# page %zu wrong after the device's add\n", i);
				_exit(16);
			}
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("child step %d failed", WEXITSTATUS(status));
	EXPECT_EQ(0, rmdir(cg));
}

/*
 * MADV_COLD leaves the pages mapped (the device keeps them); MADV_FREE lets reclaim drop
 * them unless written again — a device write counts as one: after MADV_FREE and a pageout,
 * the page the device wrote keeps its bytes, the others read as zeros or their old bytes.
 */
TEST_F_TIMEOUT(mm, madv_cold_and_free, 120)
{
	size_t npages = 32, len = npages * PAGE;
	uint8_t *buf = map_pages(len);

	ASSERT_NE(NULL, buf);
	for (size_t i = 0; i < npages; i++)
		fill_page(buf + i * PAGE, i, 0x3c);
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));

	ASSERT_EQ(0, madvise(buf, len, MADV_COLD));
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));
	ASSERT_EQ(0, dev_fill(self->fd, buf, 0x4444444444444444ull, PAGE));
	EXPECT_EQ(0x44, buf[PAGE - 1]);

	ASSERT_EQ(0, madvise(buf, len, MADV_FREE));
	EXPECT_EQ(0, device_maps(self->fd, buf, npages, NULL)) TH_LOG("MADV_FREE left device PTEs");
	ASSERT_EQ(0, dev_fill(self->fd, buf + 3 * PAGE, 0x6666666666666666ull, PAGE));
	ASSERT_EQ(0, madvise(buf, len, MADV_PAGEOUT));
	for (size_t i = 0; i < PAGE; i++) {
		ASSERT_EQ(0x66, buf[3 * PAGE + i]) TH_LOG("the device's write after MADV_FREE was lost");
	}
	for (size_t i = 0; i < npages; i++) {
		uint8_t want[PAGE];

		if (i == 3)
			continue;
		fill_page(want, i, 0x3c);
		if (i == 0)
			memset(want, 0x44, PAGE);
		if (buf[i * PAGE + 8] == 0) {	/* freed: all zeros */
			memset(want, 0, PAGE);
		}
		ASSERT_EQ(0, memcmp(want, buf + i * PAGE, PAGE)) TH_LOG("page %zu", i);
	}
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));
	munmap(buf, len);
}

/*
 * KSM merges identical pages the device maps: the device keeps reading the merged page, may
 * map it only read-only, and its write breaks the merge — the page it wrote changes, its
 * twins do not.
 */
TEST_F_TIMEOUT(mm, ksm_merge_then_device_write, 300)
{
	size_t npages = 16, len = npages * PAGE;
	uint8_t *buf = map_pages(len);
	long merged = 0, writable = -1;

	if (access("/sys/kernel/mm/ksm/run", W_OK))
		SKIP(return, "no KSM");
	ASSERT_NE(NULL, buf);
	memset(buf, 0x77, len);
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));
	ASSERT_EQ((long)npages, device_maps(self->fd, buf, npages, &writable));
	ASSERT_EQ(0, madvise(buf, len, MADV_MERGEABLE));
	ASSERT_EQ(0, write_sysfs("/sys/kernel/mm/ksm/pages_to_scan", "10000"));
	ASSERT_EQ(0, write_sysfs("/sys/kernel/mm/ksm/sleep_millisecs", "10"));
	ASSERT_EQ(0, write_sysfs("/sys/kernel/mm/ksm/run", "1"));
	for (int waited = 0; waited < 120000; waited += 50) {
		merged = read_long("/proc/self/ksm_merging_pages");
		if (merged >= (long)npages)
			break;
		usleep(50 * 1000);
	}
	EXPECT_EQ((long)npages, merged) TH_LOG("KSM merged %ld of %zu pages", merged, npages);

	/* Reading the merged page: the bytes are right, and the device may not write it. */
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));
	EXPECT_LE(0, device_maps(self->fd, buf, npages, &writable));
	EXPECT_EQ(0, writable) TH_LOG("the device maps a KSM page writable");

	/* The device writes page 5: only page 5 changes; the merge is broken there. */
	ASSERT_EQ(0, dev_fill(self->fd, buf + 5 * PAGE, 0x0101010101010101ull, PAGE));
	for (size_t i = 0; i < npages; i++) {
		for (size_t b = 0; b < PAGE; b += 512)
			ASSERT_EQ(i == 5 ? 0x01 : 0x77, buf[i * PAGE + b]) TH_LOG("page %zu", i);
	}
	/* ksmd notices the broken merge at its next scan: wait for it, boundedly. */
	for (int waited = 0; waited < 120000; waited += 50) {
		merged = read_long("/proc/self/ksm_merging_pages");
		if (merged < (long)npages)
			break;
		usleep(50 * 1000);
	}
	EXPECT_GT((long)npages, merged) TH_LOG("KSM still counts page 5 as merged");
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));
	write_sysfs("/sys/kernel/mm/ksm/run", "2");	/* unmerge everything, stop */
	munmap(buf, len);
}

/* The NUMA node of @addr's page (move_pages with no target), or -errno. */
static int page_node(void *addr)
{
	int status = -1;

	if (syscall(SYS_move_pages, 0, 1, &addr, NULL, &status, 0))
		return -errno;
	return status;
}

/*
 * move_pages() and mbind(MPOL_MF_MOVE) migrate pages the device maps to the other node: the
 * device's mapping follows (its reads and writes reach the new pages).
 */
TEST_F_TIMEOUT(mm, numa_migration_of_mapped_pages, 180)
{
	size_t npages = 64, len = npages * PAGE;
	uint8_t *buf = map_pages(len);
	void *pages[64];
	int nodes[64], status[64];
	unsigned long mask;
	int from, to;

	if (!path_exists("/sys/devices/system/node/node1"))
		SKIP(return, "one NUMA node (run-vm.sh --numa 2)");
	ASSERT_NE(NULL, buf);
	for (size_t i = 0; i < npages; i++)
		fill_page(buf + i * PAGE, i, 0x21);
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));
	from = page_node(buf);
	ASSERT_LE(0, from);
	to = !from;

	for (size_t i = 0; i < npages; i++) {
		pages[i] = buf + i * PAGE;
		nodes[i] = to;
	}
	ASSERT_EQ(0, syscall(SYS_move_pages, 0, npages, pages, nodes, status, MPOL_MF_MOVE));
	for (size_t i = 0; i < npages; i++) {
		ASSERT_EQ(to, status[i]) TH_LOG("page %zu", i);
	}
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));
	ASSERT_EQ(0, dev_fill(self->fd, buf + 9 * PAGE, 0x9999999999999999ull, PAGE));
	EXPECT_EQ(0x99, buf[10 * PAGE - 1]);
	EXPECT_EQ(to, page_node(buf + 9 * PAGE));

	/* And back with mbind. */
	mask = 1ul << from;
	ASSERT_EQ(0, syscall(SYS_mbind, buf, len, MPOL_BIND, &mask, 8 * sizeof(mask),
			     MPOL_MF_MOVE)) TH_LOG("mbind: %s", strerror(errno));
	for (size_t i = 0; i < npages; i++) {
		ASSERT_EQ(from, page_node(buf + i * PAGE)) TH_LOG("page %zu", i);
	}
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));
	ASSERT_EQ(0, dev_fill(self->fd, buf + 11 * PAGE, 0xabababababababab, PAGE));
	EXPECT_EQ(0xab, buf[12 * PAGE - 1]);
	EXPECT_EQ(0x99, buf[10 * PAGE - 1]);
	munmap(buf, len);
}

/* Compaction moves pages the device maps; the device's reads and writes follow them. */
TEST_F_TIMEOUT(mm, compaction_of_mapped_pages, 180)
{
	size_t npages = 512, len = npages * PAGE;
	uint8_t *buf = map_pages(len);

	if (access("/proc/sys/vm/compact_memory", W_OK))
		SKIP(return, "no compaction");
	ASSERT_NE(NULL, buf);
	for (size_t i = 0; i < npages; i++)
		fill_page(buf + i * PAGE, i, 0x17);
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));
	ASSERT_EQ(0, write_sysfs("/proc/sys/vm/compact_memory", "1"));
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));
	ASSERT_EQ(0, dev_fill(self->fd, buf + 100 * PAGE, 0x1818181818181818ull, PAGE));
	EXPECT_EQ(0x18, buf[101 * PAGE - 1]);
	munmap(buf, len);
}

#ifdef HMM_DMIRROR_READ_UNLOCKED
/*
 * The kernel lets hmm_range_fault() drop the mmap lock for a fault handler (7.3:
 * hmm_range_fault_unlocked_timeout(), the kernel's test_hmm READ_UNLOCKED marks it): a device
 * fault on a missing page of a userfaultfd range waits for the handler, as a CPU access does.
 */
#define GMEM_UFFD_DEVICE_WAITS 1

struct uffd_handler {
	int uffd;
	volatile int stop;
	volatile int events;		/* faults the handler served */
	volatile uintptr_t last;	/* the page of the last one */
};

/* Fill each missing page the device (or anyone) faults on with 0xc0 + its index. */
static void *uffd_serve(void *arg)
{
	struct uffd_handler *h = arg;
	static uint8_t page[PAGE];
	struct uffd_msg msg;

	while (!h->stop) {
		struct pollfd pfd = { .fd = h->uffd, .events = POLLIN };
		struct uffdio_copy copy = { .src = (uintptr_t)page, .len = PAGE };

		if (poll(&pfd, 1, 20) <= 0 || read(h->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
		    msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		copy.dst = msg.arg.pagefault.address & ~(PAGE - 1);
		memset(page, 0xc0 + h->events, PAGE);
		/* (counted first: the copy wakes the faulting command) */
		h->last = copy.dst;
		h->events++;
		ioctl(h->uffd, UFFDIO_COPY, &copy);
	}
	return NULL;
}
#endif

/*
 * A range registered with userfaultfd (missing mode). Where the kernel lets a device fault
 * wait for the handler (GMEM_UFFD_DEVICE_WAITS: 7.3), the handler fills the page the device
 * reads or writes, the device then sees the handler's bytes and its writes land; elsewhere
 * (6.12: hmm_range_fault() faults without FAULT_FLAG_ALLOW_RETRY, so handle_userfault()
 * refuses it) the command fails with EFAULT and no event reaches the handler. Once the handler
 * has filled a page (UFFDIO_COPY, UFFDIO_ZEROPAGE), the device reads it either way.
 * (docs/uapi.md, "userfaultfd")
 */
TEST_F_TIMEOUT(mm, userfaultfd_missing_pages, 120)
{
	size_t len = 4 * PAGE;
	uint8_t *buf = map_anon(len, RW), *src = malloc(PAGE), *out = malloc(PAGE);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .range = { .start = (uintptr_t)buf, .len = len },
				       .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_copy copy = { .dst = (uintptr_t)buf, .src = (uintptr_t)src, .len = PAGE };
	struct uffdio_zeropage zero = { .range = { .start = (uintptr_t)buf + PAGE, .len = PAGE } };
	int uffd;

	ASSERT_NE(NULL, buf);
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		SKIP(return, "no userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_API, &api));
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));

#ifdef GMEM_UFFD_DEVICE_WAITS
	struct uffd_handler h = { .uffd = uffd };
	pthread_t thread;

	ASSERT_EQ(0, pthread_create(&thread, NULL, uffd_serve, &h));
	memset(out, 0x55, PAGE);
	EXPECT_EQ(0, dev_copy(self->fd, out, buf + 2 * PAGE, PAGE));
	EXPECT_EQ(1, h.events);
	EXPECT_EQ((uintptr_t)buf + 2 * PAGE, h.last);
	EXPECT_EQ(0xc0, out[0]);
	EXPECT_EQ(0xc0, out[PAGE - 1]);
	EXPECT_EQ(0, dev_fill(self->fd, buf + 3 * PAGE, 0x3b3b3b3b3b3b3b3bull, PAGE));
	EXPECT_EQ(2, h.events);
	EXPECT_EQ((uintptr_t)buf + 3 * PAGE, h.last);
	EXPECT_EQ(0x3b, buf[3 * PAGE]);
	EXPECT_EQ(0x3b, buf[4 * PAGE - 1]);
	h.stop = 1;
	ASSERT_EQ(0, pthread_join(thread, NULL));
#else
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };

	EXPECT_EQ(-EFAULT, dev_copy(self->fd, out, buf + 2 * PAGE, PAGE));
	EXPECT_EQ(-EFAULT, dev_fill(self->fd, buf + 3 * PAGE, 0, PAGE));
	EXPECT_EQ(0, poll(&pfd, 1, 100)) TH_LOG("a device fault left an event for the handler");
#endif

	memset(src, 0xe1, PAGE);
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_COPY, &copy));
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_ZEROPAGE, &zero));
	memset(out, 0x55, PAGE);
	ASSERT_EQ(0, dev_copy(self->fd, out, buf, PAGE));
	EXPECT_EQ(0, memcmp(out, src, PAGE));
	ASSERT_EQ(0, dev_copy(self->fd, out, buf + PAGE, PAGE));
	for (size_t i = 0; i < PAGE; i += 64)
		ASSERT_EQ(0, out[i]);
	ASSERT_EQ(0, dev_fill(self->fd, buf, 0x2a2a2a2a2a2a2a2aull, PAGE));
	EXPECT_EQ(0x2a, buf[PAGE - 1]);
	close(uffd);
	munmap(buf, len);
	free(src);
	free(out);
}

static volatile sig_atomic_t sigbus_code;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	sigbus_code = si->si_code;
}

/*
 * madvise(MADV_HWPOISON) on a page the device maps: the kernel unmaps it everywhere (SIGBUS to
 * the process for a dirty page), the device must not read it — its command fails with EFAULT
 * — and the neighbours keep working. Runs in a child, which poisoning may kill.
 */
TEST_F_TIMEOUT(mm, hwpoison_of_a_mapped_page, 120)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
		size_t npages = 8, len = npages * PAGE;
		uint8_t *buf = map_pages(len), *out = malloc(PAGE);
		int fd = gmem_open(0, O_RDWR), ret;

		if (fd < 0 || !buf || !out)
			_exit(10);
		sigaction(SIGBUS, &sa, NULL);
		for (size_t i = 0; i < npages; i++)
			fill_page(buf + i * PAGE, i, 0x4d);
		if (device_reads_as_cpu(fd, buf, len))
			_exit(11);
		if (madvise(buf + 2 * PAGE, PAGE, MADV_HWPOISON)) {
			printf("# MADV_HWPOISON: %s\n", strerror(errno));
			_exit(errno == EINVAL ? 4 : 12);	/* 4: no MEMORY_FAILURE */
		}
		printf("# SIGBUS code after poisoning: %d\n", (int)sigbus_code);
		if (device_maps(fd, buf + 2 * PAGE, 1, NULL) != 0)
			_exit(13);
		ret = dev_copy(fd, out, buf + 2 * PAGE, PAGE);
		if (ret != -EFAULT) {
			printf("# device read of the poisoned page: %d\n", ret);
			_exit(14);
		}
		/* Other work goes on: the neighbours read and write as before. */
		if (device_reads_as_cpu(fd, buf, 2 * PAGE) ||
		    device_reads_as_cpu(fd, buf + 3 * PAGE, 5 * PAGE))
			_exit(15);
		if (dev_fill(fd, buf + 3 * PAGE, 0x3333333333333333ull, PAGE) ||
		    buf[4 * PAGE - 1] != 0x33)
			_exit(16);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("killed by signal %d", WTERMSIG(status));
	if (WEXITSTATUS(status) == 4)
		SKIP(return, "no MEMORY_FAILURE in this kernel");
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("child step %d failed", WEXITSTATUS(status));
}

/*
 * mremap moves a range the device maps: the old addresses fault for the device (EFAULT), the
 * new ones read the same bytes, and writes reach the pages the CPU sees there.
 */
TEST_F_TIMEOUT(mm, mremap_of_a_mapped_range, 120)
{
	size_t npages = 16, len = npages * PAGE;
	uint8_t *buf = map_pages(len), *to = map_anon(2 * len, PROT_NONE), *moved;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, to);
	for (size_t i = 0; i < npages; i++)
		fill_page(buf + i * PAGE, i, 0x6b);
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, buf, len));
	moved = mremap(buf, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to + len);
	ASSERT_EQ(to + len, moved);
	EXPECT_EQ(0, device_maps(self->fd, buf, npages, NULL));
	EXPECT_EQ(-EFAULT, dev_fill(self->fd, buf, 0, 8));
	ASSERT_EQ(0, device_reads_as_cpu(self->fd, moved, len));
	for (size_t i = 0; i < npages; i++) {
		uint8_t want[PAGE];

		fill_page(want, i, 0x6b);
		ASSERT_EQ(0, memcmp(want, moved + i * PAGE, PAGE)) TH_LOG("page %zu", i);
	}
	ASSERT_EQ(0, dev_fill(self->fd, moved + PAGE, 0x7c7c7c7c7c7c7c7cull, PAGE));
	EXPECT_EQ(0x7c, moved[2 * PAGE - 1]);
	munmap(to, 2 * len);
}

TEST_HARNESS_MAIN
