// SPDX-License-Identifier: GPL-2.0
/*
 * The DRM accel front end (Linux 7.3) under a careless or hostile program: the device unbound
 * under an open file and a sleeping SUBMIT_WAIT, a file closed while another thread submits,
 * a forked child using its parent's file, munmap/mprotect/madvise/mremap racing the device's
 * copies, THP and 64 KiB ranges, a buffer over two VMAs of different protections, ioctl
 * abuse (flags, counts, pointers, fences, numbers the driver has not, mmap), kills at any
 * point and a memcg limit while the device copies. Each asserts what comes back: bytes,
 * errnos, and the device's gauges back at their baseline.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_drm_uapi.h"
#include "gmem_test_util.h"
#include "drm_fixture.h"

#define PAGE 4096ul
#define HUGE (2ul << 20)
#define DEV DRM_DEV

DRM_FIXTURE(drm)

static uint8_t *map_buf(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* @len bytes of read-write memory at an address aligned to @align (the rest unmapped). */
static uint8_t *map_aligned(size_t len, size_t align)
{
	uint8_t *p = map_buf(len + align), *a;

	if (!p)
		return NULL;
	a = (uint8_t *)(((uintptr_t)p + align - 1) & ~(align - 1));
	if (a > p)
		munmap(p, a - p);
	munmap(a + len, p + len + align - (a + len));
	return a;
}

static int copy_wait(int fd, void *dst, const void *src, size_t len)
{
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst,
				    .src = (uintptr_t)src, .size = len };

	return submit1(fd, &c, GMEM_ACCEL_SUBMIT_WAIT, NULL);
}

struct sleeper {
	int fd, ret;
	size_t len;
	volatile int started;
};

/* One SUBMIT_WAIT of a copy of fresh memory (it faults every page in): its errno in ret. */
static void *sleep_in_submit(void *arg)
{
	struct sleeper *s = arg;
	uint8_t *src = map_buf(s->len), *dst = map_buf(s->len);

	s->started = 1;
	s->ret = src && dst ? copy_wait(s->fd, dst, src, s->len) : -ENOMEM;
	munmap(src, s->len);
	munmap(dst, s->len);
	return NULL;
}

/*
 * Unbound under an open file, while another thread sleeps in SUBMIT_WAIT: the wait ends
 * (done, or ENODEV), every call after fails with ENODEV, close works, and bound again the
 * device serves a new file whose gauges start from nothing.
 */
TEST_F_TIMEOUT(drm, unbind_under_open_file, 600)
{
	struct gmem_accel_info info = { 0 };
	struct gmem_accel_stats st = { 0 };
	struct sleeper s = { .fd = self->fd, .len = 64ul << 20 };
	uint8_t *a = map_buf(HUGE), *b = map_buf(HUGE);
	char addr[64];
	pthread_t t;
	int fd2;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	pattern(a, HUGE, 3);
	ASSERT_EQ(0, copy_wait(self->fd, b, a, HUGE));
	ASSERT_EQ(0, memcmp(a, b, HUGE));
	fd2 = dup(self->fd);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, gmem_pci_addr(DEV, addr, sizeof(addr)));
	ASSERT_EQ(0, pthread_create(&t, NULL, sleep_in_submit, &s));
	while (!s.started)
		usleep(1000);
	usleep(20000);
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/unbind", addr));
	pthread_join(t, NULL);
	EXPECT_TRUE(s.ret == 0 || s.ret == -ENODEV) TH_LOG("SUBMIT_WAIT: %s", strerror(-s.ret));
	TH_LOG("the sleeping SUBMIT_WAIT ended with %s", s.ret ? strerror(-s.ret) : "success");
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GET_INFO, &info));
	EXPECT_EQ(ENODEV, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_STATS, &st));
	EXPECT_EQ(ENODEV, errno);
	EXPECT_EQ(-ENODEV, copy_wait(fd2, b, a, HUGE));
	EXPECT_EQ(-ENODEV, wait_fence(self->fd, 1));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd, 0));
	EXPECT_EQ(0, close(fd2));
	EXPECT_EQ(0, close(self->fd));
	self->fd = -1;
	/* The memory the device had mapped is the process's still. */
	EXPECT_EQ(0, memcmp(a, b, HUGE));
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/bind", addr));
	ASSERT_TRUE(path_exists("/sys/class/gmem_accel/gmem_accel1/device/accel"));
	for (int i = 0; i < DRM_NGAUGES; i++) {
		EXPECT_EQ(0, gmem_wait_stat(DEV, drm_gauges[i], 0, 60000))
			TH_LOG("%s", drm_gauges[i]);
	}
	self->fd = gmem_open_accel(DEV, O_RDWR);
	ASSERT_LE(0, self->fd);
	memset(b, 0, HUGE);
	EXPECT_EQ(0, copy_wait(self->fd, b, a, HUGE));
	EXPECT_EQ(0, memcmp(a, b, HUGE));
	close(self->fd);
	self->fd = -1;
	for (int i = 0; i < DRM_NGAUGES; i++) {
		EXPECT_EQ(0, gmem_wait_stat(DEV, drm_gauges[i], 0, 60000))
			TH_LOG("%s", drm_gauges[i]);
	}
	munmap(a, HUGE);
	munmap(b, HUGE);
}

/*
 * The file closed (its dup, then itself) while other threads sleep in SUBMIT_WAIT and WAIT
 * on it: their calls finish on the file they started on, with the right bytes; the next call
 * on the closed number is EBADF, and the context goes once the last call is done.
 */
TEST_F_TIMEOUT(drm, close_races_submit_and_wait, 600)
{
	for (int round = 0; round < 4; round++) {
		struct sleeper s[2] = { { .len = (16ul << 20) * (round + 1) },
					{ .len = 8ul << 20 } };
		size_t len = 8ul << 20;
		uint8_t *src = map_buf(len), *dst = map_buf(len);
		struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst,
					    .src = (uintptr_t)src, .size = len };
		uint64_t fence;
		pthread_t t[2];
		int fd, ret;

		ASSERT_NE(NULL, src);
		ASSERT_NE(NULL, dst);
		fd = gmem_open_accel(DEV, O_RDWR);
		ASSERT_LE(0, fd);
		s[0].fd = fd;
		s[1].fd = dup(fd);
		ASSERT_LE(0, s[1].fd);
		pattern(src, len, round);
		ASSERT_EQ(0, submit1(fd, &c, 0, &fence));
		for (int i = 0; i < 2; i++)
			ASSERT_EQ(0, pthread_create(&t[i], NULL, sleep_in_submit, &s[i]));
		while (!s[0].started || !s[1].started)
			usleep(1000);
		usleep(5000 * round);
		ASSERT_EQ(0, close(s[1].fd));
		ret = wait_fence(fd, fence);
		ASSERT_EQ(0, close(fd));
		EXPECT_EQ(0, ret);
		EXPECT_EQ(-EBADF, wait_fence(fd, fence));
		for (int i = 0; i < 2; i++) {
			pthread_join(t[i], NULL);
			EXPECT_TRUE(s[i].ret == 0 || s[i].ret == -EBADF)
				TH_LOG("round %d thread %d: %s", round, i, strerror(-s[i].ret));
		}
		EXPECT_EQ(0, memcmp(dst, src, len)) TH_LOG("round %d", round);
		munmap(src, len);
		munmap(dst, len);
	}
	closed_gives_back(_metadata, self);
}

/*
 * A forked child has its parent's file: every call that reaches the context is EACCES (it is
 * bound to the parent's address space), GET_INFO still answers; the parent's copies go on,
 * also after the child closed it, and when the child holds the file last.
 */
TEST_F_TIMEOUT(drm, forked_child_uses_parent_file, 300)
{
	uint8_t *src = map_buf(HUGE), *dst = map_buf(HUGE);
	int status;
	pid_t pid;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	pattern(src, HUGE, 21);
	ASSERT_EQ(0, copy_wait(self->fd, dst, src, HUGE));
	for (int round = 0; round < 2; round++) {
		int pipefd[2];
		char ch;

		ASSERT_EQ(0, pipe(pipefd));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			struct gmem_accel_info info = { 0 };
			struct gmem_accel_stats st = { 0 };
			struct gmem_accel_wait w = { .fence = 1, .timeout_ms = 10 };
			int step = 0;

			if (read(pipefd[0], &ch, 1) != 1)
				_exit(99);
			step++;
			if (ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GET_INFO, &info) || info.minor != DEV)
				_exit(step);
			step++;
			if (copy_wait(self->fd, dst, src, HUGE) != -EACCES)
				_exit(step);
			step++;
			if (!ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_WAIT, &w) || errno != EACCES)
				_exit(step);
			step++;
			if (!ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_STATS, &st) || errno != EACCES)
				_exit(step);
			/* its own context works */
			step++;
			int fd = gmem_open_accel(DEV, O_RDWR);

			memset(dst, 0x77, HUGE);
			if (fd < 0 || copy_wait(fd, dst, src, HUGE) || memcmp(dst, src, HUGE))
				_exit(step);
			close(self->fd);
			close(fd);
			_exit(0);
		}
		/* Round 1: the parent closes first, the child's exit drops the file. */
		if (round == 1) {
			close(self->fd);
			self->fd = -1;
		}
		ASSERT_EQ(1, write(pipefd[1], "g", 1));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("round %d: child status %#x", round, status);
		close(pipefd[0]);
		close(pipefd[1]);
		if (round == 0) {
			memset(dst, 0, HUGE);
			ASSERT_EQ(0, copy_wait(self->fd, dst, src, HUGE));
			EXPECT_EQ(0, memcmp(dst, src, HUGE));
		}
	}
	gauges_back(_metadata, self);
	munmap(src, HUGE);
	munmap(dst, HUGE);
}

/* The mm change a racer makes to the source (or, for mprotect, the destination). */
enum race { RACE_MUNMAP, RACE_MPROTECT, RACE_DONTNEED, RACE_MREMAP, RACE_NR };
static const char * const race_names[] = { "munmap", "mprotect", "dontneed", "mremap" };

struct racer {
	enum race kind;
	uint8_t *src, *dst, *spare;
	size_t len;
	volatile int gen, stop;
	volatile int started, finished;	/* the copier's copies */
	int rounds, failed;	/* failed: the errno of a call of the racer's own */
};

/*
 * Generation @gen of the source: each page's first word says the generation and the page
 * (one store: the device reads a page either before or after it), the rest is zeros.
 */
static void gen_fill(uint8_t *p, size_t len, int gen)
{
	for (size_t i = 0; i < len; i += PAGE)
		*(volatile uint64_t *)(p + i) = (uint64_t)gen << 32 | (i / PAGE);
}

static void *race_mm(void *arg)
{
	struct racer *r = arg;

	while (!r->stop) {
		int gen = r->gen + 1;
		uint8_t *tmp;

		r->gen = gen;
		switch (r->kind) {
		case RACE_MUNMAP:
			/* gone, then new memory (of the new generation) in its place at once */
			tmp = map_buf(r->len);
			if (!tmp) {
				r->failed = errno;
				return NULL;
			}
			gen_fill(tmp, r->len, gen);
			munmap(r->src, r->len);
			usleep(200);
			if (mremap(tmp, r->len, r->len, MREMAP_MAYMOVE | MREMAP_FIXED,
				   r->src) == MAP_FAILED) {
				r->failed = errno;
				return NULL;
			}
			break;
		case RACE_MPROTECT:
			mprotect(r->dst, r->len, PROT_READ);
			usleep(500);
			mprotect(r->dst, r->len, PROT_READ | PROT_WRITE);
			break;
		case RACE_DONTNEED:
			madvise(r->src, r->len, MADV_DONTNEED);
			gen_fill(r->src, r->len, gen);
			break;
		case RACE_MREMAP:
			if (mremap(r->src, r->len, r->len, MREMAP_MAYMOVE | MREMAP_FIXED,
				   r->spare) == MAP_FAILED ||
			    mremap(r->spare, r->len, r->len, MREMAP_MAYMOVE | MREMAP_FIXED,
				   r->src) == MAP_FAILED) {
				r->failed = errno;
				return NULL;
			}
			gen_fill(r->src, r->len, gen);
			break;
		default:
			break;
		}
		r->rounds++;
		/*
		 * The memory whole again: every other round, a copy that starts now runs
		 * alone, so that some complete however slow the machine is.
		 */
		if (r->rounds % 2) {
			int next = r->started + 1;

			while (!r->stop && r->finished < next)
				usleep(200);
		}
		usleep((r->rounds % 7) * 200);
	}
	return NULL;
}

/*
 * Is @dst a copy the device could have made of the source while generations @lo to @hi
 * were in it: each page one of theirs, or zeros (a page given back, not yet written again)?
 * A page of an older generation is one the device read through a mapping it should have
 * forgotten.
 */
static bool copy_plausible(const uint8_t *dst, size_t len, int lo, int hi, bool zeros_ok,
			   size_t *bad)
{
	for (size_t i = 0; i < len; i += PAGE) {
		uint64_t w = *(const uint64_t *)(dst + i);
		int g = (int)(w >> 32);
		bool ok = (w == 0 && zeros_ok) || ((w & 0xffffffffu) == i / PAGE && g >= lo && g <= hi);

		for (size_t b = 8; b < PAGE && ok; b++)
			ok = !dst[i + b];
		if (!ok) {
			*bad = i / PAGE;
			return false;
		}
	}
	return true;
}

/*
 * munmap, mprotect(PROT_READ) of the destination, MADV_DONTNEED and mremap away and back,
 * each racing the device's copies from another thread: a copy either completes with bytes
 * the source held while it ran, or fails cleanly (EFAULT, EPERM; EBUSY if the range kept
 * changing under it).
 */
TEST_F_TIMEOUT(drm, mm_changes_race_copies, 900)
{
	size_t len = 4 * HUGE;

	for (int kind = 0; kind < RACE_NR; kind++) {
		struct racer r = { .kind = kind, .len = len };
		int ok = 0, efault = 0, eperm = 0, ebusy = 0, other = 0, wrong = 0, last_err = 0;
		uint8_t *dst = map_buf(len);
		pthread_t t;

		r.src = map_aligned(len, HUGE);
		memset(r.src, 0, len);
		r.spare = map_aligned(len, HUGE);
		r.dst = dst;
		ASSERT_NE(NULL, r.src);
		ASSERT_NE(NULL, r.spare);
		ASSERT_NE(NULL, dst);
		gen_fill(r.src, len, 0);
		if (kind == RACE_MREMAP)
			munmap(r.spare, len);	/* the address it moves to and back from */
		ASSERT_EQ(0, pthread_create(&t, NULL, race_mm, &r));
		for (int i = 0; i < 60; i++) {
			int lo = r.gen - 1, ret, hi;
			size_t bad = 0;

			/* (the racer makes dst read-only now and then: the CPU leaves it be) */
			if (kind == RACE_MPROTECT)
				lo = 0;
			else
				memset(dst, 0xee, len);
			r.started++;
			ret = copy_wait(self->fd, dst, r.src, len);
			r.finished++;
			hi = kind == RACE_MPROTECT ? 0 : r.gen;
			if (!ret) {
				ok++;
				if (!copy_plausible(dst, len, lo < 0 ? 0 : lo, hi,
						    kind == RACE_DONTNEED, &bad)) {
					wrong++;
					TH_LOG("%s: copy %d: page %zu holds %#llx: not what the source held in generations %d to %d",
					       race_names[kind], i, bad,
					       (unsigned long long)*(uint64_t *)(dst + bad * PAGE), lo, hi);
				}
			} else if (ret == -EFAULT) {
				efault++;
			} else if (ret == -EPERM) {
				eperm++;
			} else if (ret == -EBUSY) {
				ebusy++;
			} else {
				other++;
				last_err = ret;
			}
		}
		r.stop = 1;
		pthread_join(t, NULL);
		ASSERT_EQ(0, r.failed) TH_LOG("%s: the racer's own call: %s", race_names[kind],
					      strerror(r.failed));
		TH_LOG("%s: %d racer rounds; copies: %d done, %d EFAULT, %d EPERM, %d EBUSY, %d other (%s)",
		       race_names[kind], r.rounds, ok, efault, eperm, ebusy, other,
		       other ? strerror(-last_err) : "-");
		EXPECT_EQ(0, wrong) TH_LOG("%s", race_names[kind]);
		EXPECT_EQ(0, other) TH_LOG("%s: %s", race_names[kind], strerror(-last_err));
		if (kind != RACE_MPROTECT)
			EXPECT_EQ(0, eperm) TH_LOG("%s", race_names[kind]);
		EXPECT_LT(0, ok) TH_LOG("%s", race_names[kind]);
		/* Quiet again: a copy is whole. */
		{
			size_t bad = 0;

			gen_fill(r.src, len, 200);
			EXPECT_EQ(0, copy_wait(self->fd, dst, r.src, len))
				TH_LOG("%s", race_names[kind]);
			EXPECT_TRUE(copy_plausible(dst, len, 200, 200, false, &bad))
				TH_LOG("%s: page %zu", race_names[kind], bad);
		}
		munmap(r.src, len);
		munmap(r.spare, len);
		munmap(dst, len);
	}
	closed_gives_back(_metadata, self);
}

/*
 * THP-backed 2 MiB-aligned buffers, buffers that only 64 KiB ranges fit, and a buffer
 * whose range was made before mprotect split its VMA in two: every copy's bytes are right,
 * a write is refused only where the memory is read-only.
 */
TEST_F_TIMEOUT(drm, thp_64k_and_split_vmas, 600)
{
	size_t len = 4 * HUGE, len64 = 17 * 0x10000;
	uint8_t *thp = map_aligned(len, HUGE), *dst = map_aligned(len, HUGE);
	uint8_t *b64 = map_aligned(len64 + 0x10000, 0x10000) + 0x10000;
	uint8_t *d64 = map_buf(len64), *split = map_aligned(2 * HUGE, HUGE);

	ASSERT_NE(NULL, thp);
	ASSERT_NE(NULL, dst);
	ASSERT_NE(NULL, d64);
	ASSERT_NE(NULL, split);
	ASSERT_EQ(0, madvise(thp, len, MADV_HUGEPAGE));
	ASSERT_EQ(0, madvise(dst, len, MADV_HUGEPAGE));
	for (int round = 0; round < 3; round++) {
		pattern(thp, len, 40 + round);
		memset(dst, 0, len);
		ASSERT_EQ(0, copy_wait(self->fd, dst, thp, len)) TH_LOG("round %d", round);
		EXPECT_EQ(0, memcmp(dst, thp, len)) TH_LOG("round %d", round);
		/* half of it given back: its 2 MiB pages split */
		ASSERT_EQ(0, madvise(thp + HUGE / 2, HUGE, MADV_DONTNEED));
		memset(thp + HUGE / 2, 0x3c, HUGE);
	}
	ASSERT_EQ(0, copy_wait(self->fd, dst, thp, len));
	EXPECT_EQ(0, memcmp(dst, thp, len));

	/* 64 KiB-aligned, 64 KiB-multiple, not 2 MiB: 64 KiB ranges */
	ASSERT_EQ(0, munmap(b64 - 0x10000, 0x10000));
	pattern(b64, len64, 50);
	ASSERT_EQ(0, copy_wait(self->fd, d64, b64, len64));
	EXPECT_EQ(0, memcmp(d64, b64, len64));
	pattern(d64, len64, 51);
	ASSERT_EQ(0, copy_wait(self->fd, b64 + 5 * PAGE, d64, len64 - 5 * PAGE));
	EXPECT_EQ(0, memcmp(d64, b64 + 5 * PAGE, len64 - 5 * PAGE));

	/* 2 MiB ranges made, then the first's second half made read-only */
	pattern(split, 2 * HUGE, 60);
	ASSERT_EQ(0, copy_wait(self->fd, dst, split, 2 * HUGE));
	ASSERT_EQ(0, mprotect(split + HUGE / 2, HUGE, PROT_READ));
	EXPECT_EQ(0, dev_fill(self->fd, split, 0x0101010101010101ull, HUGE / 2))
		TH_LOG("a write into the writable VMA of a range mprotect split");
	EXPECT_EQ(-EPERM, dev_fill(self->fd, split + HUGE / 2, 0x0202020202020202ull, PAGE));
	EXPECT_EQ(0, dev_fill(self->fd, split + HUGE + HUGE / 2, 0x0303030303030303ull, PAGE));
	for (size_t i = 0; i < HUGE / 2; i += PAGE) {
		ASSERT_EQ(1, split[i]) TH_LOG("byte %zu", i);
	}
	EXPECT_EQ(0x03, split[HUGE + HUGE / 2]);
	ASSERT_EQ(0, copy_wait(self->fd, dst, split, 2 * HUGE));	/* reads over both */
	EXPECT_EQ(0, memcmp(dst, split, 2 * HUGE));
	munmap(thp, len);
	munmap(dst, len);
	munmap(b64, len64);
	munmap(d64, len64);
	munmap(split, 2 * HUGE);
	closed_gives_back(_metadata, self);
}

static int drm_ioctl_errno(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? errno : 0;
}

/*
 * ioctl abuse: unknown flags, count 0 and above the maximum, bad user pointers, WAIT on a
 * fence never issued and on another file's, IN_FENCE fds that are no fence, numbers the
 * driver has not, every core DRM ioctl with zeroed arguments, mmap and read of the node:
 * each refused with its errno, and the file works as before after all of it.
 */
TEST_F_TIMEOUT(drm, ioctl_abuse, 300)
{
	struct gmem_accel_cmd cmds[GMEM_ACCEL_MAX_BATCH + 1];
	struct gmem_accel_submit s = { .cmds = (uintptr_t)cmds, .count = 1 };
	struct gmem_accel_wait w = { .timeout_ms = 10 };
	struct gmem_accel_info info = { 0 };
	uint8_t *a = map_buf(HUGE), *b = map_buf(HUGE);
	uint64_t fence, zero[64];
	struct pollfd pfd;
	char c;
	int fd2;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	for (int i = 0; i <= GMEM_ACCEL_MAX_BATCH; i++)
		cmds[i] = (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)b,
						   .size = PAGE, .value = i };
	s.flags = 1u << 7;
	EXPECT_EQ(EINVAL, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s));
	s.flags = 0;
	s.count = 0;
	EXPECT_EQ(EINVAL, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s));
	s.count = GMEM_ACCEL_MAX_BATCH + 1;
	EXPECT_EQ(E2BIG, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s));
	s.count = ~0u;
	EXPECT_EQ(E2BIG, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s));
	s.count = GMEM_ACCEL_MAX_BATCH;
	s.cmds = 0;
	EXPECT_EQ(EFAULT, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s));
	s.cmds = (uintptr_t)-4096;
	EXPECT_EQ(EFAULT, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s));
	s.cmds = 0xffff888000000000ull;
	EXPECT_EQ(EFAULT, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s));
	EXPECT_EQ(EFAULT, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, NULL));
	EXPECT_EQ(EFAULT, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_WAIT, (void *)8));
	EXPECT_EQ(EFAULT, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_STATS, NULL));
	EXPECT_EQ(EFAULT, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_GET_INFO, NULL));
	/* the last command's end beyond the cmds array's mapping */
	s.cmds = (uintptr_t)(a + HUGE - sizeof(cmds[0]) / 2);
	s.count = 1;
	EXPECT_EQ(EFAULT, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s));

	/* bad addresses in a command: the batch fails, with EFAULT */
	cmds[0] = (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)b,
					   .src = 0, .size = PAGE };
	EXPECT_EQ(-EFAULT, submit1(self->fd, &cmds[0], GMEM_ACCEL_SUBMIT_WAIT, NULL));
	cmds[0].src = 0xffff888000000000ull;
	EXPECT_EQ(-EFAULT, submit1(self->fd, &cmds[0], GMEM_ACCEL_SUBMIT_WAIT, NULL));
	cmds[0].src = (uintptr_t)a;
	cmds[0].dst = (uintptr_t)copy_wait;	/* the program's text: read-only */
	EXPECT_EQ(-EPERM, submit1(self->fd, &cmds[0], GMEM_ACCEL_SUBMIT_WAIT, NULL));
	cmds[0].op = 0x7f;
	cmds[0].dst = (uintptr_t)b;
	fence = 0;
	{
		int ret = submit1(self->fd, &cmds[0], GMEM_ACCEL_SUBMIT_WAIT, &fence);

		EXPECT_TRUE(ret == -EINVAL || ret == -EIO) TH_LOG("unknown op: %s", strerror(-ret));
	}

	/* IN_FENCE that is no fence */
	cmds[0] = (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)b,
					   .size = PAGE, .value = 7 };
	s = (struct gmem_accel_submit){ .cmds = (uintptr_t)cmds, .count = 1,
					.flags = GMEM_ACCEL_SUBMIT_IN_FENCE, .fence = 9999 };
	EXPECT_EQ(EBADF, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s));
	s.fence = 1ull << 40;
	EXPECT_EQ(EBADF, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s));
	s.fence = self->fd;
	EXPECT_EQ(EINVAL, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s));

	/* WAIT: bad flags, fence 0, one never issued, another file's */
	w.flags = 1;
	EXPECT_EQ(EINVAL, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_WAIT, &w));
	w.flags = 0;
	fd2 = gmem_open_accel(DEV, O_RDWR);
	ASSERT_LE(0, fd2);
	w.fence = 0;
	EXPECT_EQ(EINVAL, drm_ioctl_errno(fd2, DRM_IOCTL_GMEM_ACCEL_WAIT, &w));
	w.fence = ~0ull;
	EXPECT_EQ(EINVAL, drm_ioctl_errno(self->fd, DRM_IOCTL_GMEM_ACCEL_WAIT, &w));
	ASSERT_EQ(0, submit1(self->fd, &cmds[0], 0, &fence));
	ASSERT_LT(0, fence);
	w.fence = fence;
	EXPECT_EQ(EINVAL, drm_ioctl_errno(fd2, DRM_IOCTL_GMEM_ACCEL_WAIT, &w))
		TH_LOG("another file's fence");
	EXPECT_EQ(0, wait_fence(self->fd, fence));
	EXPECT_EQ(7, b[0]);
	info.flags = ~0u;
	EXPECT_EQ(EINVAL, drm_ioctl_errno(fd2, DRM_IOCTL_GMEM_ACCEL_GET_INFO, &info));
	close(fd2);

	/* Driver ioctl numbers after the driver's last; not DRM's type at all. */
	for (unsigned int nr = DRM_COMMAND_BASE + DRM_GMEM_ACCEL_QUERY_MEM_ATTRS + 1;
	     nr < DRM_COMMAND_END; nr++) {
		memset(zero, 0, sizeof(zero));
		EXPECT_EQ(EINVAL, drm_ioctl_errno(self->fd, DRM_IOWR(nr, uint64_t[8]), zero))
			TH_LOG("driver ioctl %#x", nr);
	}
	EXPECT_EQ(ENOTTY, drm_ioctl_errno(self->fd, _IOWR('g', 1, uint64_t), zero));
	EXPECT_EQ(ENOTTY, drm_ioctl_errno(self->fd, GMEM_ACCEL_IOC_SUBMIT, zero));
	/*
	 * Every core DRM ioctl, arguments all zero: VERSION, GET_CAP, SET_CLIENT_CAP,
	 * SET_CLIENT_NAME, GEM_CLOSE and PRIME's two are answered; the rest (a master's,
	 * flink's, syncobjs', ...: this node has none of them) are EACCES.
	 */
	for (unsigned int nr = 0; nr < 0x100; nr++) {
		int err;

		if (nr == DRM_COMMAND_BASE)
			nr = DRM_COMMAND_END;
		memset(zero, 0, sizeof(zero));
		err = drm_ioctl_errno(self->fd, DRM_IO(nr), zero);
		if (nr == _IOC_NR(DRM_IOCTL_VERSION)) {
			EXPECT_EQ(0, err);
		} else if (nr != _IOC_NR(DRM_IOCTL_GET_CAP) &&
			   nr != _IOC_NR(DRM_IOCTL_SET_CLIENT_CAP) &&
			   nr != _IOC_NR(DRM_IOCTL_GEM_CLOSE) &&
			   nr != _IOC_NR(DRM_IOCTL_PRIME_HANDLE_TO_FD) &&
			   nr != _IOC_NR(DRM_IOCTL_PRIME_FD_TO_HANDLE) &&
			   nr != 0xd1) {	/* DRM_IOCTL_SET_CLIENT_NAME (not in 6.12's uAPI) */
			EXPECT_EQ(EACCES, err) TH_LOG("core ioctl %#x", nr);
		}
	}
	EXPECT_EQ(ENOENT, drm_ioctl_errno(self->fd, DRM_IOCTL_PRIME_HANDLE_TO_FD,
					  &(struct drm_prime_handle){ .handle = 1 }));

	/* mmap of the node where no object is: refused (not a kernel oops) */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, self->fd, 1ull << 32));
	/* read: no events; poll: none */
	fcntl(self->fd, F_SETFL, O_NONBLOCK);
	EXPECT_EQ(-1, read(self->fd, &c, 1));
	pfd = (struct pollfd){ .fd = self->fd, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 10));
	fcntl(self->fd, F_SETFL, 0);

	/* after all that the file works */
	pattern(a, HUGE, 70);
	EXPECT_EQ(0, copy_wait(self->fd, b, a, HUGE));
	EXPECT_EQ(0, memcmp(a, b, HUGE));
	munmap(a, HUGE);
	munmap(b, HUGE);
	closed_gives_back(_metadata, self);
}

static void copy_loop_forever(int fd, int ready, int round)
{
	if (write(ready, "r", 1) != 1)
		_exit(1);
	for (unsigned int i = 0;; i++) {
		size_t len = (1 + i % 5) * HUGE + (i % 3) * PAGE;
		uint8_t *src = map_buf(len), *dst = map_buf(len);

		if (!src || !dst)
			_exit(2);
		if (i & 1)
			madvise(src, len, MADV_HUGEPAGE);
		pattern(src, len, i);
		if (copy_wait(fd, dst, src, len) || memcmp(dst, src, len))
			_exit(3);
		munmap(src, len);
		munmap(dst, len);
	}
}

static unsigned int random_delay(int round)
{
	return 1000 + rand() % 200000;
}

/*
 * A process killed at random points of a loop of SUBMIT_WAITs on fresh mappings (mmap, fill,
 * copy, check, munmap): nothing stays behind, whatever step the kill hit.
 */
TEST_F_TIMEOUT(drm, kill_at_random_points, 900)
{
	close(self->fd);
	self->fd = -1;
	srand(57);
	drm_kill_rounds(_metadata, debug_kernel() ? 8 : 16, copy_loop_forever, random_delay);
	gauges_back(_metadata, self);
}

/*
 * The device copies under a memcg limit below the working set: reclaim takes pages from
 * under the device's ranges while it works; every copy is right.
 */
TEST_F_TIMEOUT(drm, memcg_pressure_while_copying, 900)
{
	const char *cg = "/sys/fs/cgroup/gmem_drm_attack";
	const char *why;
	int ret = gmem_memcg_create("gmem_drm_attack", 16ul << 20, &why), status;
	pid_t pid;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, ret) TH_LOG("%s: %s", cg, strerror(-ret));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* 2 x 16 MiB in a 16 MiB limit */
		size_t len = 16ul << 20;
		uint8_t *src, *dst;
		int fd;

		if (gmem_memcg_join("gmem_drm_attack"))
			_exit(10);
		fd = gmem_open_accel(DEV, O_RDWR);
		src = map_buf(len);
		dst = map_buf(len);
		if (fd < 0 || !src || !dst)
			_exit(11);
		for (int pass = 0; pass < 3; pass++) {
			int ret;

			pattern(src, len, 80 + pass);
			ret = copy_wait(fd, dst, src, len);
			if (ret) {
				printf("# pass %d: %s\n", pass, strerror(-ret));
				_exit(12);
			}
			for (size_t i = 0; i < len; i += PAGE) {
				if (memcmp(dst + i, src + i, PAGE)) {
					printf("# pass %d: page %zu wrong\n", pass, i / PAGE);
					_exit(13);
				}
			}
		}
		close(fd);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("child step %d failed", WEXITSTATUS(status));
	EXPECT_EQ(0, rmdir(cg));
	closed_gives_back(_metadata, self);
}

TEST_HARNESS_MAIN
