// SPDX-License-Identifier: GPL-2.0
/*
 * Managed objects and read duplication attacked as a careless or hostile program would:
 * mprotect, mremap, partial munmap, MADV_DONTNEED and fork on a mapping whose pages are
 * duplicated; two contexts and a second process writing while the device reads; advice
 * toggled from another thread; OBJ_FREE and close with a command running; kills and signal
 * storms amid duplications and collapses; HBM taken by pinned objects; a device reset with
 * pages in HBM; and ADVISE ranges that are wrong or span several objects and page sizes.
 * Each case checks the bytes, the errnos, and the leak counters back at their start.
 * (readdup_test holds the interface's plain behaviour.)
 */
#define _GNU_SOURCE
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
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"
#include "readdup_util.h"

#define K64 (64ul << 10)
#define IS_DUP(v) (((v) & DUP_VIEW) == DUP_VIEW && (v) != 0xee)

/* @len bytes read-mostly, written with pattern @seed (into @want too), duplicated. */
static int make_dups(int fd, uint8_t *map, uint8_t *want, size_t len, unsigned int seed)
{
	uint8_t *dst = map_anon(len, RW);
	int ret;

	if (!dst)
		return -ENOMEM;
	pattern(want, len, seed);
	memcpy(map, want, len);
	ret = dev_advise(fd, map, len, 0, RM) ?: dev_copy(fd, dst, map, len);
	if (!ret && memcmp(dst, want, len))
		ret = -EILSEQ;
	munmap(dst, len);
	return ret;
}

/* The first of @n pages from @map that is not a read duplicate; -1 if none. */
static long not_dup(int fd, uint8_t *map, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!IS_DUP(page_view(fd, map + i * PAGE)))
			return i;
	return -1;
}

/* One command, its wait retried after each EINTR (counted in *@intr). */
static int run_intr(int fd, struct gmem_accel_cmd *c, int *intr)
{
	struct gmem_accel_submit s = { .cmds = (uintptr_t)c, .count = 1 };
	struct gmem_accel_wait w = { .timeout_ms = 120000 };
	int ret;

	while ((ret = ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &s)) && errno == EINTR)
		(*intr)++;
	if (ret)
		return -errno;
	w.fence = s.fence;
	while ((ret = ioctl(fd, GMEM_ACCEL_IOC_WAIT, &w)) && errno == EINTR)
		(*intr)++;
	return ret ? -errno : 0;
}

static int advise_intr(int fd, void *p, size_t len, unsigned int flags, int *intr)
{
	int ret;

	while ((ret = dev_advise(fd, p, len, 0, flags)) == -EINTR)
		(*intr)++;
	return ret;
}

FIXTURE(attack) {
	int fd;
	struct leak_counters before;
};

FIXTURE_SETUP(attack)
{
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	self->before = leak_counters();	/* (the context this fixture opens included) */
	self->fd = gmem_open(0, O_RDWR);
	ASSERT_GE(self->fd, 0);
	ASSERT_GE(self->before.dup_pages, 0) TH_LOG("no debugfs readdup counters");
}

FIXTURE_TEARDOWN(attack)
{
	if (self->fd >= 0)
		close(self->fd);
	EXPECT_COUNTERS_BACK(self->before);
}

/*
 * mprotect on duplicated pages: read-only, the device's write fails EPERM and the duplicates
 * stay; back to read-write, the CPU's first write still collapses (the entry must not have
 * become writable on the stale system copy); PROT_NONE: the device gets EFAULT.
 */
TEST_F_TIMEOUT(attack, mprotect_round_trip, 240)
{
	const size_t n = 8, len = n * PAGE;
	uint8_t *map = managed_map(self->fd, len, MANAGED_4K);
	uint8_t *dst = map_anon(len, RW), *want = malloc(len);
	int64_t cpu;

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, make_dups(self->fd, map, want, len, 21));
	ASSERT_EQ(0, mprotect(map, len, PROT_READ));
	EXPECT_EQ(0, memcmp(map, want, len));
	EXPECT_EQ(-EPERM, dev_fill(self->fd, map, 0x1111111111111111ull, PAGE));
	EXPECT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_EQ(0, memcmp(dst, want, len));
	EXPECT_EQ(-1, not_dup(self->fd, map, n));

	ASSERT_EQ(0, mprotect(map, len, RW));
	EXPECT_EQ(0, memcmp(map, want, len));
	cpu = stat_of("readdup_collapse_cpu");
	map[3 * PAGE + 7] ^= 0x5a;
	want[3 * PAGE + 7] ^= 0x5a;
	EXPECT_EQ(cpu + 1, stat_of("readdup_collapse_cpu"));
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_EQ(0, memcmp(dst, want, len)) TH_LOG("the device read a stale copy");
	ASSERT_EQ(0, dev_fill(self->fd, map + PAGE, 0x2222222222222222ull, PAGE));
	memset(want + PAGE, 0x22, PAGE);
	EXPECT_EQ(0, memcmp(map, want, len));

	ASSERT_EQ(0, mprotect(map, len, PROT_NONE));
	EXPECT_EQ(-EFAULT, dev_copy(self->fd, dst, map, PAGE));
	ASSERT_EQ(0, mprotect(map, len, RW));
	EXPECT_EQ(0, memcmp(map, want, len));
	munmap(map, len);
	munmap(dst, len);
	free(want);
}

/*
 * mremap of a duplicated mapping: the device finds it at its new address, not at the old;
 * a write there collapses; growing it fails (the mapping cannot grow past the object).
 */
TEST_F_TIMEOUT(attack, mremap_moves, 240)
{
	const size_t n = 8, len = n * PAGE;
	uint8_t *map = managed_map(self->fd, len, MANAGED_4K);
	uint8_t *dst = map_anon(len, RW), *want = malloc(len), *moved = map_anon(len, RW);

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	ASSERT_NE(NULL, moved);
	ASSERT_EQ(0, make_dups(self->fd, map, want, len, 22));
	moved = mremap(map, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, moved);
	ASSERT_NE(MAP_FAILED, moved) TH_LOG("mremap: %s", strerror(errno));
	EXPECT_EQ(-EFAULT, dev_copy(self->fd, dst, map, PAGE));
	EXPECT_EQ(0, dev_copy(self->fd, dst, moved, len));
	EXPECT_EQ(0, memcmp(dst, want, len));
	EXPECT_EQ(-1, not_dup(self->fd, moved, n));
	EXPECT_EQ(0, memcmp(moved, want, len));
	moved[5 * PAGE] ^= 0xff;
	want[5 * PAGE] ^= 0xff;
	EXPECT_FALSE(page_view(self->fd, moved + 5 * PAGE) & GMEM_ACCEL_PAGE_DUPLICATE);
	ASSERT_EQ(0, dev_copy(self->fd, dst, moved, len));
	EXPECT_EQ(0, memcmp(dst, want, len));
	EXPECT_EQ(MAP_FAILED, (void *)mremap(moved, len, 2 * len, 0));
	/* Shrunk: the tail goes, the head stays duplicated and right. */
	ASSERT_NE(MAP_FAILED, (void *)mremap(moved, len, len / 2, 0));
	EXPECT_EQ(-EFAULT, dev_copy(self->fd, dst, moved + len / 2, PAGE));
	ASSERT_EQ(0, dev_copy(self->fd, dst, moved, len / 2));
	EXPECT_EQ(0, memcmp(dst, want, len / 2));
	munmap(moved, len / 2);
	munmap(dst, len);
	free(want);
}

/*
 * A hole punched in a duplicated mapping, MADV_DONTNEED on another part: the object's bytes
 * stay (it is shared memory), advice over the hole fails, the rest keeps working.
 */
TEST_F_TIMEOUT(attack, munmap_hole_and_dontneed, 240)
{
	const size_t n = 16, len = n * PAGE;
	uint8_t *map = managed_map(self->fd, len, MANAGED_4K);
	uint8_t *dst = map_anon(len, RW), *want = malloc(len);
	int ret;

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, make_dups(self->fd, map, want, len, 23));
	ASSERT_EQ(0, munmap(map + 4 * PAGE, 4 * PAGE));
	EXPECT_EQ(-EOPNOTSUPP, dev_advise(self->fd, map, len, 0, NOT_RM));
	EXPECT_EQ(-EFAULT, dev_copy(self->fd, dst, map + 4 * PAGE, PAGE));
	EXPECT_EQ(-1, not_dup(self->fd, map, 4));
	EXPECT_EQ(-1, not_dup(self->fd, map + 8 * PAGE, 8));

	ret = madvise(map + 8 * PAGE, 4 * PAGE, MADV_DONTNEED);
	EXPECT_TRUE(!ret || errno == EINVAL);	/* (a VM_PFNMAP mapping: EINVAL) */
	EXPECT_EQ(0, memcmp(map + 8 * PAGE, want + 8 * PAGE, 8 * PAGE));
	memset(dst, 0, len);
	ASSERT_EQ(0, dev_copy(self->fd, dst, map + 8 * PAGE, 8 * PAGE));
	EXPECT_EQ(0, memcmp(dst, want + 8 * PAGE, 8 * PAGE));
	map[9 * PAGE + 1] = ~want[9 * PAGE + 1];
	want[9 * PAGE + 1] = ~want[9 * PAGE + 1];
	ASSERT_EQ(0, dev_copy(self->fd, dst, map + 8 * PAGE, 8 * PAGE));
	EXPECT_EQ(0, memcmp(dst, want + 8 * PAGE, 8 * PAGE));
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, 4 * PAGE));
	EXPECT_EQ(0, memcmp(dst, want, 4 * PAGE));
	EXPECT_EQ(0, dev_advise(self->fd, map, 4 * PAGE, 0, NOT_RM));
	EXPECT_EQ(0, memcmp(map, want, 4 * PAGE));
	munmap(map, 4 * PAGE);
	munmap(map + 8 * PAGE, 8 * PAGE);
	munmap(dst, len);
	free(want);
}

struct writer {
	uint64_t *words;	/* words [first, first + 8) of each page */
	size_t npages, first;
	bool stop;
	uint64_t rounds;	/* out: the last round written */
};

static void *cpu_writer(void *arg)
{
	struct writer *w = arg;
	uint64_t r;

	for (r = 1; !__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE); r++) {
		for (size_t p = 0; p < w->npages; p++)
			for (size_t k = w->first; k < w->first + 8; k++)
				__atomic_store_n(&w->words[p * PAGE / 8 + k], r, __ATOMIC_RELAXED);
		sched_yield();
	}
	w->rounds = r - 1;
	return NULL;
}

/*
 * fork: the child, with a context of its own, writes the shared object from the CPU and
 * from its device while the parent's device reads (duplicating) and writes other words.
 * Every process's last write is there.
 */
TEST_F_TIMEOUT(attack, fork_child_writes_shared, 600)
{
	const size_t n = 8, len = n * PAGE;
	const unsigned int rounds = debug_kernel() ? 10 : 30;
	uint8_t *map = managed_map(self->fd, len, MANAGED_4K);
	uint8_t *dst = map_anon(len, RW), *want = malloc(len);
	unsigned int i = 0;
	int status;
	pid_t pid;

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, make_dups(self->fd, map, want, len, 24));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		int fd = gmem_open(0, O_RDWR);

		if (fd < 0)
			_exit(10);
		/* The parent's context is not the child's. */
		if (dev_copy(self->fd, dst, map, PAGE) != -EACCES)
			_exit(11);
		for (uint64_t r = 1; r <= rounds; r++) {
			for (size_t p = 0; p < n; p++)
				for (size_t k = 0; k < 8; k++)
					((uint64_t *)(map + p * PAGE))[k] = r;
			for (size_t p = 0; p < n; p++)
				if (dev_fill(fd, map + p * PAGE + 64, r, 64))
					_exit(12);
		}
		_exit(0);
	}
	while (!waitpid(pid, &status, WNOHANG)) {
		ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
		i++;
		for (size_t p = 0; p < n; p++)
			ASSERT_EQ(0, dev_fill(self->fd, map + p * PAGE + PAGE / 2, i, PAGE / 2));
	}
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	TH_LOG("parent rounds %u", i);
	for (size_t p = 0; p < n; p++) {
		uint64_t *w = (uint64_t *)(map + p * PAGE);

		EXPECT_EQ(-1, word_mismatch(w, 0, 16, rounds)) TH_LOG("page %zu", p);
		EXPECT_EQ(-1, word_mismatch(w, PAGE / 16, PAGE / 8, i)) TH_LOG("page %zu", p);
		EXPECT_EQ(0, memcmp(map + p * PAGE + 128, want + p * PAGE + 128, PAGE / 2 - 128));
	}
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_EQ(0, memcmp(dst, map, len));
	munmap(map, len);
	munmap(dst, len);
	free(want);
}

struct dev_side {
	int fd;
	uint8_t *map;
	size_t npages;
	bool stop;
	bool fill;		/* fills words 8..15 of each page with its round, else reads */
	uint64_t rounds;
	int err, intr;
	unsigned int rm_toggles;	/* for the advice thread */
};

static void *dev_thread(void *arg)
{
	struct dev_side *d = arg;
	uint8_t *dst = map_anon(d->npages * PAGE, RW);
	struct gmem_accel_cmd c;
	uint64_t r;

	for (r = 1; !d->err && !__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE); r++) {
		for (size_t p = 0; p < d->npages && !d->err; p++) {
			if (d->fill)
				c = (struct gmem_accel_cmd) { .op = GMEM_ACCEL_OP_FILL,
					.dst = (uintptr_t)(d->map + p * PAGE + 64),
					.size = 64, .value = r };
			else
				c = (struct gmem_accel_cmd) { .op = GMEM_ACCEL_OP_COPY,
					.dst = (uintptr_t)(dst + p * PAGE),
					.src = (uintptr_t)(d->map + p * PAGE), .size = PAGE };
			d->err = run_intr(d->fd, &c, &d->intr);
		}
		if (!d->err)
			__atomic_store_n(&d->rounds, r, __ATOMIC_RELEASE);
	}
	munmap(dst, d->npages * PAGE);
	return NULL;
}

static void *advice_thread(void *arg)
{
	struct dev_side *d = arg;

	while (!d->err && !__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		d->err = advise_intr(d->fd, d->map, d->npages * PAGE,
				     d->rm_toggles++ % 2 ? NOT_RM : RM, &d->intr);
		usleep(500);
	}
	return NULL;
}

static void on_signal(int sig)
{
}

/*
 * Two contexts (two opens in one process) on the same managed pages at once: one reads them
 * (duplicating), one writes words 8..15 of each; a CPU thread writes words 0..7, another
 * thread toggles read-mostly on and off; with @storm a SIGALRM every millisecond interrupts
 * every wait. Every side's last write is there and no command fails.
 */
static void race(struct __test_metadata *_metadata, int fd, bool storm)
{
	const size_t n = 8, len = n * PAGE;
	const uint64_t fills = debug_kernel() ? 15 : 40;
	struct itimerval every_ms = { .it_interval.tv_usec = 1000, .it_value.tv_usec = 1000 };
	struct itimerval off = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	uint8_t *map = managed_map(fd, len, MANAGED_4K), *dst = map_anon(len, RW);
	int fd2 = gmem_open(0, O_RDWR);
	struct dev_side reader = { .fd = fd, .map = map, .npages = n };
	struct dev_side writer = { .fd = fd2, .map = map, .npages = n, .fill = true };
	struct dev_side advisor = { .fd = fd2, .map = map, .npages = n };
	struct writer cw = { .words = (uint64_t *)map, .npages = n };
	pthread_t t[4];

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	ASSERT_LE(0, fd2);
	memset(map, 0x3c, len);
	ASSERT_EQ(0, dev_advise(fd, map, len, 0, RM));
	if (storm) {
		ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
		ASSERT_EQ(0, setitimer(ITIMER_REAL, &every_ms, NULL));
	}
	ASSERT_EQ(0, pthread_create(&t[0], NULL, dev_thread, &reader));
	ASSERT_EQ(0, pthread_create(&t[1], NULL, dev_thread, &writer));
	ASSERT_EQ(0, pthread_create(&t[2], NULL, advice_thread, &advisor));
	ASSERT_EQ(0, pthread_create(&t[3], NULL, cpu_writer, &cw));
	while (!writer.err && __atomic_load_n(&writer.rounds, __ATOMIC_ACQUIRE) < fills &&
	       !reader.err && !advisor.err)
		usleep(20000);
	__atomic_store_n(&writer.stop, true, __ATOMIC_RELEASE);
	pthread_join(t[1], NULL);
	__atomic_store_n(&reader.stop, true, __ATOMIC_RELEASE);
	__atomic_store_n(&advisor.stop, true, __ATOMIC_RELEASE);
	__atomic_store_n(&cw.stop, true, __ATOMIC_RELEASE);
	pthread_join(t[0], NULL);
	pthread_join(t[2], NULL);
	pthread_join(t[3], NULL);
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_DFL);
	EXPECT_EQ(0, reader.err);
	EXPECT_EQ(0, writer.err);
	EXPECT_EQ(0, advisor.err);
	TH_LOG("rounds: cpu %llu, fills %llu, reads %llu, toggles %u; EINTR %d",
	       (unsigned long long)cw.rounds, (unsigned long long)writer.rounds,
	       (unsigned long long)reader.rounds, advisor.rm_toggles,
	       reader.intr + writer.intr + advisor.intr);
	for (size_t p = 0; p < n; p++) {
		uint64_t *w = (uint64_t *)(map + p * PAGE);

		EXPECT_EQ(-1, word_mismatch(w, 0, 8, cw.rounds)) TH_LOG("page %zu", p);
		EXPECT_EQ(-1, word_mismatch(w, 8, 16, writer.rounds)) TH_LOG("page %zu", p);
		EXPECT_EQ(-1, word_mismatch(w, 16, PAGE / 8, 0x3c3c3c3c3c3c3c3cull));
	}
	ASSERT_EQ(0, dev_copy(fd2, dst, map, len));
	EXPECT_EQ(0, memcmp(dst, map, len));
	munmap(map, len);
	munmap(dst, len);
	close(fd2);
}

TEST_F_TIMEOUT(attack, two_contexts_toggling_advice, 600)
{
	race(_metadata, self->fd, false);
}

TEST_F_TIMEOUT(attack, two_contexts_signal_storm, 600)
{
	race(_metadata, self->fd, true);
}

/*
 * OBJ_FREE while a command reads the object (the mapping keeps it), a double free, munmap or
 * close while the command runs: the command ends with 0 or EFAULT, nothing is left.
 */
TEST_F_TIMEOUT(attack, free_unmap_close_during_command, 300)
{
	const size_t len = 256 * PAGE;

	for (unsigned int round = 0; round < 6; round++) {
		pid_t pid = fork();
		int status;

		ASSERT_GE(pid, 0);
		if (!pid) {
			struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_COPY, .size = len };
			struct gmem_accel_submit s = { .cmds = (uintptr_t)&c, .count = 1 };
			struct gmem_accel_wait w = { .timeout_ms = 120000 };
			uint8_t *dst = map_anon(len, RW), *map;
			struct gmem_accel_obj_alloc a;
			int fd = gmem_open(0, O_RDWR), ret;

			if (fd < 0 || !dst || obj_alloc(fd, len, MANAGED_4K, &a))
				_exit(1);
			map = mmap(NULL, len, RW, MAP_SHARED, fd, a.mmap_offset);
			if (map == MAP_FAILED || dev_advise(fd, map, len, 0, RM))
				_exit(2);
			memset(map, 0x5c, len);
			c.dst = (uintptr_t)dst;
			c.src = (uintptr_t)map;
			if (ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &s))
				_exit(3);
			if (obj_free(fd, a.handle) || obj_free(fd, a.handle) != -ENOENT)
				_exit(4);
			usleep(round * 3000);
			if (round % 2) {	/* munmap, then wait */
				munmap(map, len);
				w.fence = s.fence;
				ret = ioctl(fd, GMEM_ACCEL_IOC_WAIT, &w) ? errno : 0;
				if (ret && ret != EFAULT)
					_exit(5);
				if (!ret && dst[len - 1] != 0x5c)
					_exit(6);
				close(fd);
				_exit(0);
			}
			close(fd);	/* waits for the command */
			for (size_t i = 0; i < len; i += PAGE / 2)
				if (map[i] != 0x5c)
					_exit(7);
			map[0] = 0x5d;	/* collapses with no file */
			_exit(map[0] == 0x5d && map[PAGE] == 0x5c ? 0 : 8);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("round %u", round);
	}
}

/*
 * Kills of a second process churning (duplicating, collapsing from both sides) the object
 * the parent maps too, at different moments: the parent's own pages stay exact throughout.
 */
TEST_F_TIMEOUT(attack, kill_sharer_mid_stream, 600)
{
	const size_t n = 16, len = n * PAGE, half = len / 2;
	uint8_t *map = managed_map(self->fd, len, MANAGED_4K);
	uint8_t *dst = map_anon(len, RW), *want = malloc(len);

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, make_dups(self->fd, map, want, len, 25));
	for (unsigned int round = 0; round < 5; round++) {
		pid_t pid = fork();

		ASSERT_GE(pid, 0);
		if (!pid) {
			int fd = gmem_open(0, O_RDWR);

			if (fd < 0)
				_exit(1);
			for (uint64_t i = 0;; i++) {	/* the second half only */
				dev_copy(fd, dst, map + half, half);
				map[half + (i % (n / 2)) * PAGE + 9] = i;
				dev_fill(fd, map + half + (i * 3 % (n / 2)) * PAGE + 16, i, 8);
			}
		}
		for (unsigned int k = 0; k < 3 + round; k++) {
			uint64_t v = round * 16 + k + 1;

			ASSERT_EQ(0, dev_fill(self->fd, map, v, half));
			EXPECT_EQ(-1, word_mismatch((uint64_t *)map, 0, half / 8, v));
			memset(map, (int)v, half);
			ASSERT_EQ(0, dev_copy(self->fd, dst, map, half));
			EXPECT_EQ(-1, word_mismatch((uint64_t *)dst, 0, half / 8,
						    0x0101010101010101ull * (uint8_t)v));
			ASSERT_EQ(0, dev_advise(self->fd, map, half, 0, k % 2 ? NOT_RM : RM));
		}
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	}
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_EQ(0, memcmp(dst, map, len));
	munmap(map, len);
	munmap(dst, len);
	free(want);
}

/*
 * HBM all taken by pinned objects: managed pages find no room, so the device reaches them in
 * system memory, duplicates or not, and no command fails; once HBM is free they duplicate.
 */
TEST_F_TIMEOUT(attack, hbm_taken_by_pinned, 600)
{
	const size_t n = 32, len = n * PAGE;
	const unsigned int max = 16384;
	uint32_t *handles = calloc(max, sizeof(*handles));
	uint8_t *map = managed_map(self->fd, len, MANAGED_4K);
	uint8_t *dst = map_anon(len, RW), *want = malloc(len);
	struct gmem_accel_obj_alloc a;
	unsigned int nh = 0;
	int ret = 0;

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	pattern(want, len, 26);
	memcpy(map, want, len);
	ASSERT_EQ(0, dev_advise(self->fd, map, len, 0, RM));
	while (nh < max && !(ret = obj_alloc(self->fd, M2, GMEM_ACCEL_OBJ_HBM |
					      GMEM_ACCEL_OBJ_PINNED | GMEM_ACCEL_OBJ_PAGE_2M, &a)))
		handles[nh++] = a.handle;
	EXPECT_EQ(-ENOSPC, ret);
	while (nh < max && !(ret = obj_alloc(self->fd, PAGE, GMEM_ACCEL_OBJ_HBM |
					      GMEM_ACCEL_OBJ_PINNED, &a)))
		handles[nh++] = a.handle;
	EXPECT_EQ(-ENOSPC, ret);
	TH_LOG("%u pinned HBM objects", nh);

	/* The first half, with no room: reached in system memory. */
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len / 2));
	EXPECT_EQ(0, memcmp(dst, want, len / 2));
	EXPECT_FALSE(page_view(self->fd, map) & GMEM_ACCEL_PAGE_HBM);
	ASSERT_EQ(0, dev_fill(self->fd, map + len / 2 - PAGE, 0x4d4d4d4d4d4d4d4dull, PAGE));
	ASSERT_EQ(0, dev_fill(self->fd, map, 0x4e4e4e4e4e4e4e4eull, PAGE));
	memset(want + len / 2 - PAGE, 0x4d, PAGE);
	memset(want, 0x4e, PAGE);
	EXPECT_EQ(0, memcmp(map, want, len));

	/* Room again: the second half, untouched so far, duplicates. */
	while (nh)
		EXPECT_EQ(0, obj_free(self->fd, handles[--nh]));
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_EQ(0, memcmp(dst, want, len));
	EXPECT_EQ(-1, not_dup(self->fd, map + len / 2, n / 2));
	EXPECT_EQ(0, memcmp(map, want, len));
	munmap(map, len);
	munmap(dst, len);
	free(want);
	free(handles);
}

/*
 * A surprise device reset with managed pages duplicated and others only in HBM: HBM keeps its
 * data across a reset (uapi.md, "surprise reset"), so every byte comes back; a batch across
 * the reset fails ECANCELED at worst, and the next works.
 */
TEST_F_TIMEOUT(attack, reset_with_pages_in_hbm, 600)
{
	const size_t n = 16, len = n * PAGE;
	uint8_t *map = managed_map(self->fd, len, MANAGED_4K);
	uint8_t *dst = map_anon(len, RW), *want = malloc(len);
	int64_t resets = stat_of("device_resets");
	int ret;

	ASSERT_NE(NULL, map);
	ASSERT_NE(NULL, dst);
	pattern(want, len, 27);
	memcpy(map, want, len);
	ASSERT_EQ(0, dev_advise(self->fd, map, len / 2, 0, RM));
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));	/* half duplicated, half moved */
	ASSERT_EQ(0, dev_fill(self->fd, map + len - PAGE, 0x7e7e7e7e7e7e7e7eull, PAGE));
	memset(want + len - PAGE, 0x7e, PAGE);
	EXPECT_EQ(-1, not_dup(self->fd, map, n / 2));
	ASSERT_EQ(0, gmem_inject(0, "reset"));
	ret = dev_copy(self->fd, dst, map, len);
	EXPECT_TRUE(ret == 0 || ret == -ECANCELED) TH_LOG("copy across the reset: %d", ret);
	EXPECT_EQ(resets + 1, gmem_wait_stat(0, "device_resets", resets + 1, 30000));
	memset(dst, 0, len);
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, len));
	EXPECT_EQ(0, memcmp(dst, want, len)) TH_LOG("the device's view after the reset");
	EXPECT_EQ(0, memcmp(map, want, len)) TH_LOG("HBM copies did not come back intact");
	ASSERT_EQ(0, dev_fill(self->fd, map + PAGE, 0x7f7f7f7f7f7f7f7full, PAGE));
	memset(want + PAGE, 0x7f, PAGE);
	EXPECT_EQ(0, memcmp(map, want, len));
	munmap(map, len);
	munmap(dst, len);
	free(want);
}

/* ADVISE's bad ranges: errnos, and a failed call changes nothing. */
TEST_F_TIMEOUT(attack, advise_bad_ranges, 240)
{
	uint8_t *area = mmap(NULL, 16 * PAGE, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *dst = map_anon(8 * PAGE, RW), *map;

	ASSERT_NE(MAP_FAILED, area);
	ASSERT_NE(NULL, dst);
	/* A managed object's mapping right before anonymous memory. */
	map = managed_map_at(self->fd, area, 4 * PAGE, MANAGED_4K);
	ASSERT_EQ(area, map);
	memset(area, 0x31, 8 * PAGE);
	EXPECT_EQ(-EOPNOTSUPP, dev_advise(self->fd, map, 8 * PAGE, 0, RM));
	EXPECT_EQ(-EOPNOTSUPP, dev_advise(self->fd, map - PAGE, 2 * PAGE, 0, RM));
	EXPECT_EQ(-EINVAL, dev_advise(self->fd, map + 1, PAGE, 0, RM));
	EXPECT_EQ(-EINVAL, dev_advise(self->fd, map, PAGE + 1, 0, RM));
	EXPECT_EQ(-EINVAL, dev_advise(self->fd, map, 0, 0, RM));
	EXPECT_EQ(-EINVAL, dev_advise(self->fd, map, -(uintptr_t)map + PAGE, 0, RM));
	EXPECT_EQ(-EFAULT, dev_advise(self->fd, (void *)(1ull << 62), PAGE, 0, RM));
	/* Nothing became read-mostly: the device's read migrates. */
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, 4 * PAGE));
	EXPECT_FALSE(page_view(self->fd, map) & GMEM_ACCEL_PAGE_DUPLICATE);
	EXPECT_EQ(-1, word_mismatch((uint64_t *)dst, 0, 4 * PAGE / 8, 0x3131313131313131ull));
	/* A location over both is fine. */
	EXPECT_EQ(0, dev_advise(self->fd, map, 8 * PAGE, GMEM_ACCEL_PREFER_SYSTEM, 0));
	EXPECT_EQ(0, page_view(self->fd, map) & GMEM_ACCEL_PAGE_HBM);
	EXPECT_EQ(-1, word_mismatch((uint64_t *)area, 0, 8 * PAGE / 8, 0x3131313131313131ull));
	/* Two objects side by side: one range covers both. */
	ASSERT_EQ(area + 4 * PAGE, managed_map_at(self->fd, area + 4 * PAGE, 4 * PAGE,
						   MANAGED_4K));
	memset(area, 0x32, 8 * PAGE);
	EXPECT_EQ(0, dev_advise(self->fd, map, 8 * PAGE, 0, RM));
	ASSERT_EQ(0, dev_copy(self->fd, dst, map, 8 * PAGE));
	EXPECT_EQ(-1, not_dup(self->fd, map, 8));
	EXPECT_EQ(0, dev_advise(self->fd, map + 2 * PAGE, 4 * PAGE, 0, NOT_RM));
	for (size_t i = 0; i < 8; i++) {
		EXPECT_EQ(i < 2 || i >= 6, IS_DUP(page_view(self->fd, map + i * PAGE)))
			TH_LOG("page %zu", i);
	}
	EXPECT_EQ(-1, word_mismatch((uint64_t *)area, 0, 8 * PAGE / 8, 0x3232323232323232ull));
	munmap(area, 16 * PAGE);
	munmap(dst, 8 * PAGE);
}

/*
 * Read-mostly on 64 KiB and 2 MiB device pages, advised by 4 KiB ranges inside them: the
 * whole device page is duplicated, its neighbour not; a window mapping of part of a 2 MiB
 * page too. A write anywhere in it collapses all of it.
 */
TEST_F_TIMEOUT(attack, large_device_pages, 300)
{
	uint8_t *m64 = managed_map(self->fd, 2 * K64, GMEM_ACCEL_OBJ_MANAGED |
				   GMEM_ACCEL_OBJ_PAGE_64K);
	uint8_t *m2 = managed_map(self->fd, 2 * M2, GMEM_ACCEL_OBJ_MANAGED |
				  GMEM_ACCEL_OBJ_PAGE_2M);
	uint8_t *dst = map_anon(2 * M2, RW), *want = malloc(2 * M2), *win;
	struct gmem_accel_obj_alloc a;

	ASSERT_NE(NULL, m64);
	ASSERT_NE(NULL, m2);
	ASSERT_NE(NULL, dst);
	pattern(want, 2 * M2, 28);
	memcpy(m64, want, 2 * K64);
	ASSERT_EQ(0, dev_advise(self->fd, m64 + K64 + 3 * PAGE, PAGE, 0, RM));
	ASSERT_EQ(0, dev_copy(self->fd, dst, m64, 2 * K64));
	EXPECT_EQ(0, memcmp(dst, want, 2 * K64));
	EXPECT_FALSE(page_view(self->fd, m64) & GMEM_ACCEL_PAGE_DUPLICATE);
	EXPECT_TRUE(IS_DUP(page_view(self->fd, m64 + K64)));
	EXPECT_TRUE(IS_DUP(page_view(self->fd, m64 + 2 * K64 - PAGE)));
	EXPECT_EQ(0, memcmp(m64, want, 2 * K64));
	m64[K64 + 15 * PAGE] ^= 1;
	want[K64 + 15 * PAGE] ^= 1;
	EXPECT_FALSE(page_view(self->fd, m64 + K64) & GMEM_ACCEL_PAGE_DUPLICATE);
	ASSERT_EQ(0, dev_copy(self->fd, dst, m64, 2 * K64));
	EXPECT_EQ(0, memcmp(dst, want, 2 * K64));

	memcpy(m2, want, 2 * M2);
	ASSERT_EQ(0, dev_advise(self->fd, m2 + M2 / 2 + PAGE, PAGE, 0, RM));
	ASSERT_EQ(0, dev_copy(self->fd, dst, m2, 2 * M2));
	EXPECT_EQ(0, memcmp(dst, want, 2 * M2));
	EXPECT_TRUE(IS_DUP(page_view(self->fd, m2)));
	EXPECT_TRUE(IS_DUP(page_view(self->fd, m2 + M2 - PAGE)));
	EXPECT_FALSE(page_view(self->fd, m2 + M2) & GMEM_ACCEL_PAGE_DUPLICATE);
	EXPECT_EQ(0, memcmp(m2, want, 2 * M2));
	ASSERT_EQ(0, dev_fill(self->fd, m2 + 5 * PAGE, 0x1234, 8));
	EXPECT_FALSE(page_view(self->fd, m2 + M2 - PAGE) & GMEM_ACCEL_PAGE_DUPLICATE);
	memcpy(want + 5 * PAGE, &(uint64_t){ 0x1234 }, 8);
	EXPECT_EQ(0, memcmp(m2, want, 2 * M2));

	/* A window [1 MiB, 2 MiB) of a fresh 2 MiB object; advice on it reaches the whole page. */
	ASSERT_EQ(0, obj_alloc(self->fd, M2, GMEM_ACCEL_OBJ_MANAGED | GMEM_ACCEL_OBJ_PAGE_2M, &a));
	win = mmap(NULL, M2 / 2, RW, MAP_SHARED, self->fd, a.mmap_offset + M2 / 2);
	ASSERT_NE(MAP_FAILED, win);
	EXPECT_EQ(0, obj_free(self->fd, a.handle));
	memset(win, 0x61, M2 / 2);
	ASSERT_EQ(0, dev_advise(self->fd, win + PAGE, PAGE, 0, RM));
	ASSERT_EQ(0, dev_copy(self->fd, dst, win, M2 / 2));
	EXPECT_EQ(-1, word_mismatch((uint64_t *)dst, 0, M2 / 16, 0x6161616161616161ull));
	EXPECT_TRUE(IS_DUP(page_view(self->fd, win + M2 / 2 - PAGE)));
	win[7] = 0x62;
	ASSERT_EQ(0, dev_copy(self->fd, dst, win, PAGE));
	EXPECT_EQ(0x62, dst[7]);
	munmap(win, M2 / 2);
	munmap(m64, 2 * K64);
	munmap(m2, 2 * M2);
	munmap(dst, 2 * M2);
	free(want);
}

TEST_HARNESS_MAIN
