// SPDX-License-Identifier: GPL-2.0
/*
 * Managed objects (GMEM_ACCEL_OBJ_MANAGED) and read duplication (GMEM_ACCEL_ADVISE_READ_MOSTLY,
 * guest-driver/gmem_accel_managed.c): a managed page moves to HBM as the device touches it and
 * home as the CPU does; a read-mostly page read by the device is duplicated, both sides read
 * their own copy without faulting, and the first write from either side collapses it to the
 * writer with no write lost, however the two sides interleave. HBM copies give way to other
 * HBM allocations; kills, munmap, close and signals leave nothing behind. Every test ends
 * with the object and HBM counters back where they started.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"
#include "readdup_util.h"

/* The first of @n pages from @map whose device view is not @want; -1 if none. */
static long view_mismatch(int fd, uint8_t *map, size_t n, uint8_t want)
{
	for (size_t i = 0; i < n; i++)
		if (page_view(fd, map + i * PAGE) != want)
			return i;
	return -1;
}

FIXTURE(readdup) {
	int fd;
	struct leak_counters before;
};

FIXTURE_SETUP(readdup)
{
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	self->fd = -1;
	self->before = leak_counters();		/* (before this test's own context) */
	ASSERT_GE(self->before.dup_pages, 0) TH_LOG("no debugfs readdup counters");
	self->fd = gmem_open(0, O_RDWR);
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN(readdup)
{
	if (self->fd >= 0)
		close(self->fd);
	EXPECT_COUNTERS_BACK(self->before);
}

/* MANAGED's flag rules; a managed object is never exported. */
TEST_F_TIMEOUT(readdup, managed_alloc, 120)
{
	struct gmem_accel_obj_export e = { 0 };
	struct gmem_accel_obj_alloc a;
	struct gmem_accel_obj_query q;

	EXPECT_EQ(-EINVAL, obj_alloc(self->fd, PAGE, GMEM_ACCEL_OBJ_MANAGED | GMEM_ACCEL_OBJ_HBM,
				     &a));
	EXPECT_EQ(-EINVAL, obj_alloc(self->fd, PAGE, GMEM_ACCEL_OBJ_MANAGED |
				     GMEM_ACCEL_OBJ_SYSTEM, &a));
	EXPECT_EQ(-EINVAL, obj_alloc(self->fd, PAGE, GMEM_ACCEL_OBJ_MANAGED |
				     GMEM_ACCEL_OBJ_PINNED, &a));
	ASSERT_EQ(0, obj_alloc(self->fd, 3 * PAGE, GMEM_ACCEL_OBJ_MANAGED |
			       GMEM_ACCEL_OBJ_PAGE_64K, &a));
	q = (struct gmem_accel_obj_query) { .handle = a.handle };
	ASSERT_EQ(0, ioctl(self->fd, GMEM_ACCEL_IOC_OBJ_QUERY, &q));
	EXPECT_EQ(GMEM_ACCEL_OBJ_MANAGED | GMEM_ACCEL_OBJ_PAGE_64K, q.flags);
	EXPECT_EQ(64ul << 10, q.size);
	EXPECT_EQ(~0ull, q.hbm_addr);
	e.handle = a.handle;
	EXPECT_EQ(-1, ioctl(self->fd, GMEM_ACCEL_IOC_OBJ_EXPORT, &e));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(0, obj_free(self->fd, a.handle));
}

/* Without read-mostly: the device's touch moves a page to HBM, the CPU's brings it home. */
TEST_F_TIMEOUT(readdup, managed_migrates, 180)
{
	const size_t n = 16, len = n * PAGE;
	uint8_t *map = managed_map(self->fd, len, MANAGED_4K);
	uint8_t *dst = map_anon(len, RW), *want = malloc(len);
	int64_t to_hbm = stat_of("managed_to_hbm"), to_sys = stat_of("managed_to_sys");

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	pattern(want, len, 1);
	memcpy(map, want, len);
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_EQ(0, memcmp(dst, want, len));
	EXPECT_EQ(-1, view_mismatch(self->fd, map, n, GMEM_ACCEL_PAGE_READ |
				    GMEM_ACCEL_PAGE_WRITE | GMEM_ACCEL_PAGE_HBM));
	EXPECT_EQ(to_hbm + (int64_t)n, stat_of("managed_to_hbm"));
	/* The CPU reads: home, the device's entries gone. */
	EXPECT_EQ(0, memcmp(map, want, len));
	EXPECT_EQ(to_sys + (int64_t)n, stat_of("managed_to_sys"));
	EXPECT_EQ(0, page_view(self->fd, map));
	/* The device writes, the CPU reads its bytes. */
	ASSERT_EQ(0, dev_fill(self->fd, map, 0x0123456789abcdefull, len));
	EXPECT_EQ(-1, word_mismatch((uint64_t *)map, 0, len / 8, 0x0123456789abcdefull));
	munmap(map, len);
	munmap(dst, len);
	free(want);
}

/*
 * Read duplication: the device's read makes duplicates, both sides then read without a fault
 * or a collapse; a CPU write collapses home, a device write collapses to HBM, and each side
 * sees the other's bytes. NOT_READ_MOSTLY collapses the rest.
 */
TEST_F_TIMEOUT(readdup, duplicate_and_collapse, 240)
{
	const size_t n = 8, len = n * PAGE;
	uint8_t *map = managed_map(self->fd, len, MANAGED_4K);
	uint8_t *dst = map_anon(len, RW), *want = malloc(len);
	int64_t copies = stat_of("readdup_copies"), cpu = stat_of("readdup_collapse_cpu");
	int64_t dev = stat_of("readdup_collapse_device"), dups = stat_of("readdup_pages_now");
	uint64_t faults;

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, dev_advise(self->fd, map, len, 0, RM));
	pattern(want, len, 2);
	memcpy(map, want, len);
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_EQ(0, memcmp(dst, want, len));
	EXPECT_EQ(-1, view_mismatch(self->fd, map, n, DUP_VIEW));
	EXPECT_EQ(copies + (int64_t)n, stat_of("readdup_copies"));
	EXPECT_EQ(dups + (int64_t)n, stat_of("readdup_pages_now"));

	/* The CPU reads its own copy: nothing collapses. */
	EXPECT_EQ(0, memcmp(map, want, len));
	EXPECT_EQ(cpu, stat_of("readdup_collapse_cpu"));
	EXPECT_EQ(copies + (int64_t)n, stat_of("readdup_copies"));
	EXPECT_EQ(DUP_VIEW, page_view(self->fd, map));
	/* The device reads its own copy: no fault. */
	faults = ctx_stats(self->fd).faults;
	memset(dst, 0, len);
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_EQ(0, memcmp(dst, want, len));
	EXPECT_EQ(faults, ctx_stats(self->fd).faults);

	/* A CPU write of one byte collapses its page home; the device reads the new byte. */
	map[5] = want[5] ^ 0xff;
	want[5] ^= 0xff;
	EXPECT_EQ(cpu + 1, stat_of("readdup_collapse_cpu"));
	EXPECT_FALSE(page_view(self->fd, map) & GMEM_ACCEL_PAGE_DUPLICATE);
	EXPECT_EQ(DUP_VIEW, page_view(self->fd, map + PAGE));
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, PAGE));
	EXPECT_EQ(want[5], dst[5]);

	/* A device write collapses its page to HBM; the CPU reads the device's bytes. */
	ASSERT_EQ(0, dev_fill(self->fd, map + PAGE, 0x5a5a5a5a5a5a5a5aull, PAGE));
	EXPECT_EQ(dev + 1, stat_of("readdup_collapse_device"));
	EXPECT_EQ(GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE | GMEM_ACCEL_PAGE_HBM,
		  page_view(self->fd, map + PAGE));
	EXPECT_EQ(-1, word_mismatch((uint64_t *)(map + PAGE), 0, PAGE / 8, 0x5a5a5a5a5a5a5a5aull));
	memset(want + PAGE, 0x5a, PAGE);

	/* NOT_READ_MOSTLY: every duplicate collapses home; bytes as they were. */
	ASSERT_EQ(0, dev_advise(self->fd, map, len, 0, NOT_RM));
	EXPECT_EQ(dups, stat_of("readdup_pages_now"));
	for (size_t i = 0; i < n; i++)
		EXPECT_FALSE(page_view(self->fd, map + i * PAGE) & GMEM_ACCEL_PAGE_DUPLICATE);
	EXPECT_EQ(0, memcmp(map, want, len));
	/* Without the advice the device's read migrates: no duplicate. */
	copies = stat_of("readdup_copies");
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_EQ(0, memcmp(dst, want, len));
	EXPECT_EQ(copies, stat_of("readdup_copies"));
	EXPECT_EQ(GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE | GMEM_ACCEL_PAGE_HBM,
		  page_view(self->fd, map + 2 * PAGE));
	EXPECT_EQ(0, memcmp(map, want, len));
	munmap(map, len);
	munmap(dst, len);
	free(want);
}

/*
 * PREFER_SYSTEM: the device reaches a managed page in system memory instead of moving it; a
 * read-mostly page is still duplicated (reads come first, as in UVM), and a device write
 * collapses it to system memory.
 */
TEST_F_TIMEOUT(readdup, prefer_system, 180)
{
	const size_t n = 4, len = n * PAGE;
	uint8_t *map = managed_map(self->fd, len, MANAGED_4K);
	uint8_t *dst = map_anon(len, RW);
	int64_t to_hbm = stat_of("managed_to_hbm"), cpu = stat_of("readdup_collapse_cpu");

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	memset(map, 0x44, len);
	ASSERT_EQ(0, dev_advise(self->fd, map, len, GMEM_ACCEL_PREFER_SYSTEM, 0));
	ASSERT_EQ(0, dev_fill(self->fd, map, 0x5555555555555555ull, PAGE));
	EXPECT_EQ(GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE, page_view(self->fd, map));
	EXPECT_EQ(to_hbm, stat_of("managed_to_hbm"));
	EXPECT_EQ(0x55, map[PAGE - 1]);

	ASSERT_EQ(0, dev_advise(self->fd, map + PAGE, PAGE, 0, RM));
	ASSERT_EQ(0, dev_copy(self->fd, dst, map + PAGE, PAGE));
	EXPECT_EQ(DUP_VIEW, page_view(self->fd, map + PAGE));
	ASSERT_EQ(0, dev_fill(self->fd, map + PAGE, 0x6666666666666666ull, 8));
	EXPECT_EQ(GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE, page_view(self->fd, map + PAGE));
	EXPECT_EQ(cpu + 1, stat_of("readdup_collapse_cpu"));
	EXPECT_EQ(0x66, map[PAGE]);
	EXPECT_EQ(0x44, map[PAGE + 8]);
	EXPECT_EQ(to_hbm, stat_of("managed_to_hbm"));
	munmap(map, len);
	munmap(dst, len);
}

/* ADVISE's rules for read-mostly. */
TEST_F_TIMEOUT(readdup, advise_rules, 120)
{
	uint8_t *map = managed_map(self->fd, 4 * PAGE, MANAGED_4K);
	uint8_t *anon = map_anon(4 * PAGE, RW);
	uint8_t *heap = malloc(8 * PAGE);
	uint8_t *h = (uint8_t *)(((uintptr_t)heap + PAGE - 1) & ~(PAGE - 1));

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, anon);
	ASSERT_NE(NULL, heap);
	EXPECT_EQ(-EOPNOTSUPP, dev_advise(self->fd, h, PAGE, 0, RM));
	EXPECT_EQ(-EOPNOTSUPP, dev_advise(self->fd, anon, PAGE, 0, NOT_RM));
	EXPECT_EQ(-EOPNOTSUPP, dev_advise(self->fd, map, 5 * PAGE, 0, RM));	/* beyond it */
	EXPECT_EQ(-EINVAL, dev_advise(self->fd, map, PAGE, 0, RM | NOT_RM));
	EXPECT_EQ(-EINVAL, dev_advise(self->fd, map, PAGE, GMEM_ACCEL_PREFER_DEVICE, RM));
	EXPECT_EQ(0, dev_advise(self->fd, map, PAGE, 0, GMEM_ACCEL_ADVISE_READ_MOSTLY));
	EXPECT_EQ(0, dev_advise(self->fd, map, 4 * PAGE, GMEM_ACCEL_PREFER_SYSTEM,
			    GMEM_ACCEL_ADVISE_NOT_READ_MOSTLY));
	munmap(map, 4 * PAGE);
	munmap(anon, 4 * PAGE);
	free(heap);
}

struct writer {
	uint64_t *words;	/* word 0..7 of each page */
	size_t npages;
	bool stop;		/* set by the device's side when it is done */
	uint64_t progress;	/* the last round written so far */
	uint64_t rounds;	/* out: the last round written */
};

/* Round after round, until told to stop: r into words 0..7 of every page. */
static void *cpu_writer(void *arg)
{
	struct writer *w = arg;
	uint64_t r;

	for (r = 1; !__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE); r++) {
		for (size_t p = 0; p < w->npages; p++)
			for (size_t k = 0; k < 8; k++)
				__atomic_store_n(&w->words[p * PAGE / 8 + k], r, __ATOMIC_RELAXED);
		__atomic_store_n(&w->progress, r, __ATOMIC_RELEASE);
		sched_yield();	/* (the device's turns in between) */
	}
	w->rounds = r - 1;
	return NULL;
}

/*
 * Many writers: a CPU thread writes counters into read-mostly pages while the device reads the
 * pages (duplicating them) and writes other words of the same pages. Every write is there at
 * the end.
 */
TEST_F_TIMEOUT(readdup, no_lost_write, 600)
{
	const size_t n = 8, len = n * PAGE;
	const unsigned int iters = debug_kernel() ? 20 : 60;
	uint8_t *map = managed_map(self->fd, len, MANAGED_4K);
	uint8_t *dst = map_anon(len, RW);
	struct writer w = { .npages = n };
	int64_t cpu = stat_of("readdup_collapse_cpu"), dev = stat_of("readdup_collapse_device");
	pthread_t t;

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, dev_advise(self->fd, map, len, 0, RM));
	w.words = (uint64_t *)map;
	ASSERT_EQ(0, pthread_create(&t, NULL, cpu_writer, &w));
	/* A device reading the pages in a loop does not starve the CPU's writes (120 s at most). */
	for (time_t t0 = time(NULL); __atomic_load_n(&w.progress, __ATOMIC_ACQUIRE) < 16 &&
	     time(NULL) - t0 < 120;)
		ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_LE(16, __atomic_load_n(&w.progress, __ATOMIC_ACQUIRE));
	/* Reads duplicate the pages the CPU took home; every fourth pass the device writes too. */
	for (unsigned int i = 1; i <= iters; i++) {
		ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
		if (i % 4 && i != iters)
			continue;
		for (size_t p = 0; p < n; p++)
			ASSERT_EQ(0, dev_fill(self->fd, map + p * PAGE + PAGE / 2, i, PAGE / 2));
	}
	__atomic_store_n(&w.stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	/* (the two sides did take the pages from each other) */
	TH_LOG("rounds %llu; collapses: cpu %lld, device %lld", (unsigned long long)w.rounds,
	       (long long)(stat_of("readdup_collapse_cpu") - cpu),
	       (long long)(stat_of("readdup_collapse_device") - dev));
	for (size_t p = 0; p < n; p++) {
		uint64_t *words = (uint64_t *)(map + p * PAGE);

		EXPECT_EQ(-1, word_mismatch(words, 0, 8, w.rounds)) TH_LOG("page %zu", p);
		EXPECT_EQ(-1, word_mismatch(words, PAGE / 16, PAGE / 8, iters)) TH_LOG("page %zu", p);
	}
	/* And the device sees the same. */
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_EQ(0, memcmp(dst, map, len));
	munmap(map, len);
	munmap(dst, len);
}

/*
 * HBM pressure: duplicates and HBM-resident managed pages give way to an HBM object as big
 * as HBM's free room, then to a migration; the bytes stay exact.
 */
TEST_F_TIMEOUT(readdup, hbm_pressure, 600)
{
	const size_t len = 16 * M2;
	uint64_t hbm_size = 0;
	uint8_t *map = managed_map(self->fd, len, GMEM_ACCEL_OBJ_MANAGED | GMEM_ACCEL_OBJ_PAGE_2M);
	uint8_t *want = malloc(len), *dst = map_anon(len, RW), *big;
	int64_t evictions = stat_of("managed_evictions");
	struct gmem_accel_obj_alloc a;
	size_t big_len;

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, read_sysfs_u64("/sys/class/gmem_accel/gmem_accel0/hbm_size", &hbm_size));
	big_len = (hbm_size - 8 * M2) & ~(M2 - 1);
	pattern(want, len, 3);
	memcpy(map, want, len);
	ASSERT_EQ(0, dev_advise(self->fd, map, len / 2, 0, RM));	/* half duplicated, half moved */
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_EQ(DUP_VIEW | GMEM_ACCEL_PAGE_2M, page_view(self->fd, map));
	EXPECT_EQ(GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_WRITE | GMEM_ACCEL_PAGE_HBM |
		  GMEM_ACCEL_PAGE_2M, page_view(self->fd, map + len - M2));

	ASSERT_EQ(0, obj_alloc(self->fd, big_len, GMEM_ACCEL_OBJ_HBM, &a));
	EXPECT_LT(evictions, stat_of("managed_evictions"));
	EXPECT_EQ(0, memcmp(map, want, len));
	EXPECT_EQ(0, obj_free(self->fd, a.handle));

	/* Again, against a migration of anonymous memory as big. */
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_EQ(0, memcmp(dst, want, len));
	evictions = stat_of("managed_evictions");
	big = map_anon(big_len, RW);
	ASSERT_NE(NULL, big);
	memset(big, 0x77, big_len);
	EXPECT_EQ((long)(big_len / PAGE), dev_migrate(self->fd, big, big_len,
						      GMEM_ACCEL_TO_DEVICE));
	EXPECT_LT(evictions, stat_of("managed_evictions"));
	EXPECT_EQ(0, memcmp(map, want, len));
	munmap(big, big_len);
	munmap(map, len);
	munmap(dst, len);
	free(want);
}

/* A child that duplicates and collapses @map's pages in a loop until it is killed. */
static void churn(int fd, uint8_t *map, size_t len)
{
	uint8_t *dst = map_anon(len, RW);

	for (uint64_t i = 0;; i++) {
		dev_copy(fd, dst, map, len);
		map[(i % (len / PAGE)) * PAGE] = i;
		dev_fill(fd, map + (i * 7 % (len / PAGE)) * PAGE + 8, i, 8);
	}
}

/* Kills at any step of duplication and collapse, munmap racing them, close with duplicates. */
TEST_F_TIMEOUT(readdup, hostile, 600)
{
	const size_t len = 16 * PAGE;
	struct gmem_accel_wait w = { .timeout_ms = 120000 };
	struct gmem_accel_submit s;
	struct gmem_accel_cmd c;
	uint8_t *map;

	for (unsigned int round = 0; round < 6; round++) {
		pid_t pid = fork();

		ASSERT_GE(pid, 0);
		if (!pid) {
			int fd = gmem_open(0, O_RDWR);
			uint8_t *m = fd < 0 ? NULL : managed_map(fd, len, MANAGED_4K);

			if (!m || dev_advise(fd, m, len, 0, RM))
				_exit(1);
			churn(fd, m, len);
		}
		usleep(100000 + round * 150000);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	}

	/* munmap while a command duplicates the pages (in a process of its own: a fresh file). */
	for (unsigned int round = 0; round < 4; round++) {
		pid_t pid = fork();

		ASSERT_GE(pid, 0);
		if (!pid) {
			uint8_t *dst = map_anon(len, RW);
			int fd = gmem_open(0, O_RDWR);

			map = fd < 0 ? NULL : managed_map(fd, len, MANAGED_4K);
			if (!map || !dst || dev_advise(fd, map, len, 0, RM))
				_exit(1);
			memset(map, 0x11, len);
			c = (struct gmem_accel_cmd) { .op = GMEM_ACCEL_OP_COPY,
						      .dst = (uintptr_t)dst,
						      .src = (uintptr_t)map, .size = len };
			s = (struct gmem_accel_submit) { .cmds = (uintptr_t)&c, .count = 1 };
			if (ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &s))
				_exit(2);
			usleep(round * 10000);
			munmap(map, len);
			w.fence = s.fence;
			ioctl(fd, GMEM_ACCEL_IOC_WAIT, &w);	/* done or EFAULT */
			_exit(0);
		}
		ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	}

	/* Close the file with duplicates mapped and in place; then unmap. */
	map = managed_map(self->fd, len, MANAGED_4K);
	ASSERT_NE(NULL, map);
	ASSERT_EQ(0, dev_advise(self->fd, map, len, 0, RM));
	memset(map, 0x22, len);
	{
		uint8_t *dst = map_anon(len, RW);

		ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
		EXPECT_EQ(DUP_VIEW, page_view(self->fd, map));
		munmap(dst, len);
	}
	close(self->fd);
	self->fd = -1;
	for (size_t i = 0; i < len; i++)
		ASSERT_EQ(0x22, map[i]);
	map[0] = 0x33;		/* a write collapses, with no file left */
	EXPECT_EQ(0x33, map[0]);
	munmap(map, len);
}

/*
 * Unbind with managed pages in HBM and duplicated: they come home first, the device's writes
 * in them, and the CPU reads them with no device left; the device binds again.
 */
TEST_F_TIMEOUT(readdup, unbind_brings_pages_home, 300)
{
	const size_t n = 8, len = n * PAGE;
	uint8_t *map = managed_map(self->fd, len, MANAGED_4K);
	uint8_t *dst = map_anon(len, RW), *want = malloc(len);
	char addr[32];

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, gmem_pci_addr(0, addr, sizeof(addr)));
	pattern(want, len, 5);
	memcpy(map, want, len);
	ASSERT_EQ(0, dev_advise(self->fd, map, len / 2, 0, RM));
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));	/* half duplicated, half moved */
	ASSERT_EQ(0, dev_fill(self->fd, map + len - PAGE, 0x6b6b6b6b6b6b6b6bull, PAGE));
	memset(want + len - PAGE, 0x6b, PAGE);
	EXPECT_EQ(DUP_VIEW, page_view(self->fd, map));
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/unbind", addr));
	EXPECT_EQ(0, memcmp(map, want, len));
	map[0] ^= 1;		/* and writes, with no device */
	EXPECT_EQ(want[0] ^ 1, map[0]);
	munmap(map, len);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/bind", addr));
	for (int i = 0; i < 600 && !path_exists("/dev/gmem_accel0"); i++)
		usleep(100000);
	EXPECT_TRUE(path_exists("/dev/gmem_accel0"));
	munmap(dst, len);
	free(want);
}

static void on_signal(int sig)
{
}

/* A signal during the wait: EINTR, the command goes on, its bytes are right. */
TEST_F_TIMEOUT(readdup, signal_during_wait, 300)
{
	const size_t len = 256 * PAGE;
	struct itimerval every_ms = { .it_interval.tv_usec = 1000, .it_value.tv_usec = 1000 };
	struct itimerval off = { 0 };
	uint8_t *map = managed_map(self->fd, len, MANAGED_4K);
	uint8_t *dst = map_anon(len, RW), *want = malloc(len);
	struct sigaction sa = { .sa_handler = on_signal };
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_COPY };
	struct gmem_accel_submit s = { .cmds = (uintptr_t)&c, .count = 1 };
	struct gmem_accel_wait w = { .timeout_ms = 120000 };
	int ret, interrupted = 0;

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, dev_advise(self->fd, map, len, 0, RM));
	pattern(want, len, 4);
	memcpy(map, want, len);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	c.dst = (uintptr_t)dst;
	c.src = (uintptr_t)map;
	c.size = len;
	ASSERT_EQ(0, ioctl(self->fd, GMEM_ACCEL_IOC_SUBMIT, &s));
	w.fence = s.fence;
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &every_ms, NULL));
	while ((ret = ioctl(self->fd, GMEM_ACCEL_IOC_WAIT, &w)) && errno == EINTR)
		interrupted++;
	setitimer(ITIMER_REAL, &off, NULL);
	EXPECT_EQ(0, ret);
	TH_LOG("waits interrupted: %d", interrupted);
	EXPECT_EQ(0, memcmp(dst, want, len));
	EXPECT_EQ(0, memcmp(map, want, len));
	signal(SIGALRM, SIG_DFL);
	munmap(map, len);
	munmap(dst, len);
	free(want);
}

TEST_HARNESS_MAIN
