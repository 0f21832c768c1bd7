// SPDX-License-Identifier: GPL-2.0
/*
 * The driver under hostile programs: each error reaches the batch that caused it, whatever
 * else its context's ring holds; a file's fences are its own; protections hold through HBM; faults that
 * cannot make progress end their command instead of replaying forever.
 */
#define _GNU_SOURCE	/* mremap */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include <lib/test_hmm_uapi.h>
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define HUGE (2ul << 20)
#define NFILES 4
#define ROUNDS 200

static int submit(int fd, struct gmem_accel_cmd *c, unsigned int n, __u64 *fence)
{
	struct gmem_accel_submit s = { .cmds = (uintptr_t)c, .count = n };

	if (ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &s))
		return -errno;
	*fence = s.fence;
	return 0;
}

static int wait_fence(int fd, __u64 fence)
{
	struct gmem_accel_wait w = { .fence = fence, .timeout_ms = 120000 };

	return ioctl(fd, GMEM_ACCEL_IOC_WAIT, &w) ? -errno : 0;
}

static int write_int(const char *path, long v)
{
	char s[32];
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	snprintf(s, sizeof(s), "%ld", v);
	if (write(fd, s, strlen(s)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

FIXTURE(hostile) {
	int fd[NFILES];
};

FIXTURE_SETUP(hostile)
{
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	for (int i = 0; i < NFILES; i++) {
		self->fd[i] = gmem_open(0, O_RDWR);
		ASSERT_LE(0, self->fd[i]) TH_LOG("open /dev/gmem_accel0: %s", strerror(errno));
	}
}

FIXTURE_TEARDOWN(hostile)
{
	write_int("/sys/kernel/debug/gmem_accel/gmem_accel0/inject_fault_hold", 0);
	write_int("/sys/kernel/debug/gmem_accel/gmem_accel0/inject_map_delay_ms", 0);
	for (int i = 0; i < NFILES; i++)
		close(self->fd[i]);
}

struct failer {
	int fd;
	struct gmem_accel_cmd cmd;
	int want;		/* the errno every round must end with */
	int wrong, last_wrong;
};

static void *fail_rounds(void *arg)
{
	struct failer *f = arg;

	for (int r = 0; r < ROUNDS; r++) {
		int ret = run_cmds(f->fd, &f->cmd, 1);

		if (ret != -f->want) {
			f->wrong++;
			f->last_wrong = ret;
		}
	}
	return NULL;
}

/*
 * Two threads of one file, so batches on one ring, fail at the same time, one with EPERM (a
 * write to read-only memory), one with EFAULT (a read of PROT_NONE memory): each gets its own
 * errno, every time. (Each context has a ring of its own: only its batches share it.)
 */
TEST_F_TIMEOUT(hostile, errno_reaches_its_batch_on_a_shared_ring, 600)
{
	uint8_t *ro = map_anon(PAGE, PROT_READ);
	uint8_t *none = map_anon(PAGE, PROT_NONE);
	uint8_t *dst = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct failer perm = {
		.fd = self->fd[0], .want = EPERM,
		.cmd = { .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)ro, .size = 64, .value = 1 },
	};
	struct failer fault = {
		.fd = self->fd[0], .want = EFAULT,
		.cmd = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst, .src = (uintptr_t)none,
			 .size = 64 },
	};
	pthread_t t;

	ASSERT_NE(NULL, ro);
	ASSERT_NE(NULL, none);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, pthread_create(&t, NULL, fail_rounds, &perm));
	fail_rounds(&fault);
	pthread_join(t, NULL);
	EXPECT_EQ(0, perm.wrong) TH_LOG("%d of %d EPERM failures ended otherwise (last %d)",
					perm.wrong, ROUNDS, perm.last_wrong);
	EXPECT_EQ(0, fault.wrong) TH_LOG("%d of %d EFAULT failures ended otherwise (last %d)",
					 fault.wrong, ROUNDS, fault.last_wrong);
	/* The bytes stayed as they were: nothing was written through either failure. */
	EXPECT_EQ(0, ro[0]);
	munmap(ro, PAGE);
	munmap(none, PAGE);
	munmap(dst, PAGE);
}

/* A batch reports its first failure, not its last. */
TEST_F_TIMEOUT(hostile, batch_reports_its_first_failure, 120)
{
	uint8_t *ro = map_anon(PAGE, PROT_READ);
	uint8_t *none = map_anon(PAGE, PROT_NONE);
	uint8_t *dst = map_anon(PAGE, PROT_READ | PROT_WRITE);
	int fd = self->fd[0];
	struct gmem_accel_cmd c[2] = {
		{ .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)ro, .size = 64, .value = 1 },
		{ .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst, .src = (uintptr_t)none,
		  .size = 64 },
	};

	ASSERT_NE(NULL, ro);
	ASSERT_NE(NULL, none);
	ASSERT_NE(NULL, dst);
	EXPECT_EQ(-EPERM, run_cmds(fd, c, 2));
	/* And the other way round. */
	c[1] = c[0];
	c[0] = (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst,
					.src = (uintptr_t)none, .size = 64 };
	EXPECT_EQ(-EFAULT, run_cmds(fd, c, 2));
	munmap(ro, PAGE);
	munmap(none, PAGE);
	munmap(dst, PAGE);
}

/*
 * WAIT takes only fences SUBMIT gave this file: another file's (submitted before this
 * file's) is EINVAL, as are 0 and values never handed out.
 */
TEST_F_TIMEOUT(hostile, wait_refuses_fences_of_other_files, 120)
{
	uint8_t *buf = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)buf, .size = 64,
				    .value = 7 };
	int a = self->fd[0], b = self->fd[1];
	__u64 fa[3], fb = 0;

	ASSERT_NE(NULL, buf);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, submit(a, &c, 1, &fa[i]));
	ASSERT_EQ(0, submit(b, &c, 1, &fb));
	ASSERT_EQ(0, wait_fence(b, fb));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, wait_fence(a, fa[i]));
		if (fa[i] != fb)
			EXPECT_EQ(-EINVAL, wait_fence(b, fa[i])) TH_LOG("fence %llu", fa[i]);
	}
	EXPECT_EQ(-EINVAL, wait_fence(b, 0));
	EXPECT_EQ(-EINVAL, wait_fence(b, fb + 1));
	EXPECT_EQ(-EINVAL, wait_fence(b, ~0ull));
	EXPECT_EQ(-EINVAL, wait_fence(b, 1ull << 56 | fb));
	/* A fence already waited for waits no more: 0, its error reported once. */
	EXPECT_EQ(0, wait_fence(b, fb));
	EXPECT_EQ(7, *(uint64_t *)buf);
	munmap(buf, PAGE);
}

/*
 * Memory the process cannot read stays out of the device's reach through HBM: MIGRATE refuses
 * it (written or never touched), and in a PREFER_DEVICE range a device fault does not move it
 * to HBM (where it would be mapped) before the access is checked.
 */
TEST_F_TIMEOUT(hostile, prot_none_stays_unreadable_through_hbm, 120)
{
	size_t len = 16 * PAGE;
	int fd = self->fd[0];
	uint8_t *data = map_anon(len, PROT_READ | PROT_WRITE);
	uint8_t *fresh = map_anon(len, PROT_NONE);
	uint8_t *out = map_anon(len, PROT_READ | PROT_WRITE);

	ASSERT_NE(NULL, data);
	ASSERT_NE(NULL, fresh);
	ASSERT_NE(NULL, out);
	memset(data, 0x5a, len);
	ASSERT_EQ(0, mprotect(data, len, PROT_NONE));
	EXPECT_EQ(-EFAULT, dev_migrate(fd, data, len, GMEM_ACCEL_TO_DEVICE));
	EXPECT_EQ(-EFAULT, dev_migrate(fd, fresh, len, GMEM_ACCEL_TO_DEVICE));
	EXPECT_EQ(0, page_view(fd, data));
	EXPECT_EQ(0, page_view(fd, fresh));
	EXPECT_EQ(-EFAULT, dev_copy(fd, out, data, len));
	EXPECT_EQ(-EFAULT, dev_copy(fd, out, fresh, len));

	ASSERT_EQ(0, dev_advise(fd, data, len, GMEM_ACCEL_PREFER_DEVICE, 0));
	ASSERT_EQ(0, dev_advise(fd, fresh, len, GMEM_ACCEL_PREFER_DEVICE, 0));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(-EFAULT, dev_copy(fd, out, data, len)) TH_LOG("read %d", i);
		EXPECT_EQ(-EFAULT, dev_copy(fd, out, fresh, len)) TH_LOG("read %d", i);
	}
	EXPECT_EQ(0, page_view(fd, data));
	EXPECT_EQ(0, ctx_stats(fd).migrated_to_device);
	for (size_t i = 0; i < len; i++) {
		ASSERT_EQ(0, out[i]) TH_LOG("byte %zu reached the device's output", i);
	}

	/* Readable again: it moves and the device reads it. */
	ASSERT_EQ(0, mprotect(data, len, PROT_READ));
	EXPECT_EQ((long)(len / PAGE), dev_migrate(fd, data, len, GMEM_ACCEL_TO_DEVICE));
	EXPECT_EQ(0, dev_copy(fd, out, data, len));
	for (size_t i = 0; i < len; i++) {
		ASSERT_EQ(0x5a, out[i]) TH_LOG("byte %zu", i);
	}
	munmap(data, len);
	munmap(fresh, len);
	munmap(out, len);
}

static int dmirror(int fd, unsigned long req, void *addr, void *ptr, unsigned long npages,
		   struct hmm_dmirror_cmd *c)
{
	*c = (struct hmm_dmirror_cmd){ .addr = (uintptr_t)addr, .ptr = (uintptr_t)ptr,
				       .npages = npages };
	return ioctl(fd, req, c) ? -errno : 0;
}

/*
 * test_hmm's READ into a destination that is not page aligned and overlaps the source: the
 * device's write fault lands in the source's read-only range, and in the destination's
 * partial first page. Both must be faulted in writable, not replayed forever.
 */
TEST_F_TIMEOUT(hostile, dmirror_read_into_unaligned_overlapping_buffer, 120)
{
	int fd = open("/dev/gmem_dmirror0", O_RDWR);
	uint8_t *a = map_anon(32 * PAGE, PROT_READ | PROT_WRITE);
	uint8_t *b = map_anon(16 * PAGE, PROT_READ | PROT_WRITE);
	struct hmm_dmirror_cmd c;
	size_t offs[] = { 0x1010, 0x10, 0x3ff8 };

	ASSERT_LE(0, fd) TH_LOG("open /dev/gmem_dmirror0: %s", strerror(errno));
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	/* Never touched: zeros read over zeros, whatever the overlap. */
	for (unsigned int k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
		uint8_t *src = a + 8 * PAGE * (k & 1);

		ASSERT_EQ(0, dmirror(fd, HMM_DMIRROR_READ, src, src + offs[k], 8, &c))
			TH_LOG("offset %#zx", offs[k]);
		EXPECT_EQ(8, c.cpages);
		for (size_t i = 0; i < 8 * PAGE; i++) {
			ASSERT_EQ(0, src[offs[k] + i]) TH_LOG("offset %#zx byte %zu", offs[k], i);
		}
	}
	/* Data into an unaligned buffer elsewhere: byte for byte. */
	pattern(a + 16 * PAGE, 4 * PAGE, 9);
	ASSERT_EQ(0, dmirror(fd, HMM_DMIRROR_READ, a + 16 * PAGE, b + 0x10, 4, &c));
	EXPECT_EQ(0, memcmp(a + 16 * PAGE, b + 0x10, 4 * PAGE));
	EXPECT_EQ(0, b[0]);
	close(fd);
	munmap(a, 32 * PAGE);
	munmap(b, 16 * PAGE);
}

#define INJECT "/sys/kernel/debug/gmem_accel/gmem_accel0/inject_stalled_faults"

#define HOLD "/sys/kernel/debug/gmem_accel/gmem_accel0/inject_fault_hold"

struct held_fill {
	int fd;
	uint8_t *buf;
	int ret;
};

static void *held_fill(void *arg)
{
	struct held_fill *h = arg;

	h->ret = dev_fill(h->fd, h->buf, 0x1111111111111111ull, PAGE);
	return NULL;
}

static uint64_t hold_state(void)
{
	uint64_t v = ~0ull;

	read_sysfs_u64(HOLD, &v);
	return v;
}

/*
 * One context's slow fault group (fault injection holds it, as a page the kernel must read
 * in would) does not hold up another context's: groups are serviced by as many threads as
 * there are contexts waiting, and each context's commands run on a ring of their own. Before,
 * one thread served the queue at a time, and the second command waited for the first one's
 * pages.
 */
TEST_F_TIMEOUT(hostile, slow_fault_group_does_not_stall_other_contexts, 120)
{
	uint8_t *a = map_anon(PAGE, PROT_READ | PROT_WRITE);
	uint8_t *b = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct held_fill h = { .buf = a, .ret = 1 };
	int x = 0, y = 1;
	pthread_t t;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	/* Each context on the ring of its id (hardware 0.9): one ring stalls on one group. */
	for (int i = 0; i < NFILES; i++) {
		struct gmem_accel_stats st = ctx_stats(self->fd[i]);

		EXPECT_EQ(st.context, st.queue) TH_LOG("file %d", i);
	}
	a[0] = b[0] = 1;
	h.fd = self->fd[x];
	ASSERT_EQ(0, write_int(HOLD, 1));
	ASSERT_EQ(0, pthread_create(&t, NULL, held_fill, &h));
	for (int i = 0; i < 6000 && hold_state() != 2; i++)
		usleep(10000);
	EXPECT_EQ(2, hold_state()) TH_LOG("the first context's fault group was never held");
	/* The other context's fault is serviced while the first one's is held. */
	EXPECT_EQ(0, dev_fill(self->fd[y], b, 0x2222222222222222ull, PAGE));
	EXPECT_EQ(0x22, b[0]);
	EXPECT_EQ(2, hold_state()) TH_LOG("released before the second command ended");
	EXPECT_EQ(1, h.ret) TH_LOG("the held command ended while held");
	ASSERT_EQ(0, write_int(HOLD, 0));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, h.ret);
	EXPECT_EQ(0x11, a[0]);
	munmap(a, PAGE);
	munmap(b, PAGE);
}

/*
 * A fault whose pages are gone again each time before the replay (fault injection: the driver
 * zaps them, as a racing CPU change would) makes no progress: after GMEM_FAULT_STALLS replays
 * in a row its command fails with EBUSY, in bounded time, and nothing is written. Fewer
 * stalls than that are replayed through.
 */
TEST_F_TIMEOUT(hostile, fault_without_progress_ends_its_command, 120)
{
	uint8_t *buf = map_anon(PAGE, PROT_READ | PROT_WRITE);
	int fd = self->fd[0];
	struct gmem_accel_stats st0, st;

	ASSERT_NE(NULL, buf);
	buf[0] = 1;
	st0 = ctx_stats(fd);
	ASSERT_EQ(0, write_int(INJECT, 1000000));
	EXPECT_EQ(-EBUSY, dev_fill(fd, buf, 0x5555555555555555ull, PAGE));
	ASSERT_EQ(0, write_int(INJECT, 0));
	st = ctx_stats(fd);
	EXPECT_EQ(16, st.fault_groups - st0.fault_groups);	/* GMEM_FAULT_STALLS */
	EXPECT_EQ(15, st.replays - st0.replays);
	EXPECT_EQ(1, st.cancels - st0.cancels);
	EXPECT_EQ(1, buf[0]);

	/* Five stalls, then the mapping holds: replayed through, the data lands. */
	munmap(buf, PAGE);
	buf = map_anon(PAGE, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, buf);
	st0 = ctx_stats(fd);
	ASSERT_EQ(0, write_int(INJECT, 5));
	EXPECT_EQ(0, dev_fill(fd, buf, 0x5555555555555555ull, PAGE));
	ASSERT_EQ(0, write_int(INJECT, 0));
	st = ctx_stats(fd);
	EXPECT_EQ(6, st.fault_groups - st0.fault_groups);
	EXPECT_EQ(0, st.cancels - st0.cancels);
	EXPECT_EQ(0x55, buf[PAGE - 1]);
	munmap(buf, PAGE);
}

struct unmapper {
	int fd;
	int rounds;
	volatile int stop;
	int migrated;		/* rounds whose pages reached HBM */
};

/*
 * Another thread of the process: map 2 MiB, write it, move it to HBM, then take it away
 * again, by munmap, by mapping over it (MAP_FIXED) or by mremap and munmap, while the device
 * evicts HBM.
 */
static void *unmap_rounds(void *arg)
{
	struct unmapper *u = arg;

	for (int r = 0; r < u->rounds && !u->stop; r++) {
		uint8_t *p = map_anon(HUGE, PROT_READ | PROT_WRITE);

		if (!p)
			break;
		memset(p, r, HUGE);
		if (dev_migrate(u->fd, p, HUGE, GMEM_ACCEL_TO_DEVICE) > 0)
			u->migrated++;
		if (r % 3 == 0) {
			munmap(p, HUGE);
		} else if (r % 3 == 1) {
			if (mmap(p, HUGE, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == p)
				munmap(p, HUGE);
		} else {
			/* moved elsewhere, then gone */
			uint8_t *q = mremap(p, HUGE, HUGE, MREMAP_MAYMOVE);

			munmap(q == MAP_FAILED ? p : q, HUGE);
		}
	}
	return NULL;
}

/*
 * Evicting HBM pages (test_hmm's RELEASE: every page; HBM full: the least recently used
 * chunk) while the process's other thread unmaps them: the eviction must not walk the
 * process's freed VMAs (the debug kernel's KASAN saw a use-after-free in rmap_walk_anon from
 * migrate_device_finalize). The kernel_log test reads the verdict; here, HBM comes back
 * empty and the data that stays mapped is intact.
 */
TEST_F_TIMEOUT(hostile, release_races_munmap, 600)
{
	int dm = open("/dev/gmem_dmirror0", O_RDWR);
	struct unmapper u = { .fd = self->fd[0], .rounds = 1000 };
	uint8_t *keep = map_anon(HUGE, PROT_READ | PROT_WRITE), *want = malloc(HUGE);
	int64_t pages;
	pthread_t t;

	ASSERT_LE(0, dm) TH_LOG("open /dev/gmem_dmirror0: %s", strerror(errno));
	ASSERT_NE(NULL, keep);
	pattern(keep, HUGE, 11);
	ASSERT_EQ(0, pthread_create(&t, NULL, unmap_rounds, &u));
	for (int r = 0; r < 4000 && u.migrated < u.rounds; r++) {
		struct hmm_dmirror_cmd c = { .addr = (uintptr_t)keep, .npages = 1 };

		if (!(r % 64))
			dev_migrate(self->fd[0], keep, HUGE, GMEM_ACCEL_TO_DEVICE);
		ASSERT_EQ(0, ioctl(dm, HMM_DMIRROR_RELEASE, &c));
		if (!__atomic_load_n(&u.migrated, __ATOMIC_RELAXED))
			usleep(1000);
	}
	u.stop = 1;
	pthread_join(t, NULL);
	EXPECT_LT(0, u.migrated);
	ASSERT_EQ(0, ioctl(dm, HMM_DMIRROR_RELEASE,
			   &(struct hmm_dmirror_cmd){ .addr = (uintptr_t)keep, .npages = 1 }));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "hbm_pages_now", &pages));
	EXPECT_EQ(0, pages);
	pattern(want, HUGE, 11);
	EXPECT_EQ(0, memcmp(keep, want, HUGE));
	free(want);
	close(dm);
	munmap(keep, HUGE);
}

/*
 * The same race through eviction: this thread moves two buffers as large as HBM in by turns,
 * each evicting every chunk in use, the other thread's too, while it unmaps it. (The eviction
 * runs under the mmap lock of the same process, and only a munmap() past its downgrade can
 * overlap it, so the race is narrower than release_races_munmap's. It keeps the eviction's
 * locking honest: lockdep, and data intact.)
 */
TEST_F_TIMEOUT(hostile, eviction_races_munmap, 1200)
{
	struct unmapper u = { .fd = self->fd[0], .rounds = 100000 };
	struct gmem_accel_info info = { 0 };
	uint8_t *buf[2], *want;
	size_t blen;
	pthread_t t;

	ASSERT_EQ(0, ioctl(self->fd[0], GMEM_ACCEL_IOC_GET_INFO, &info));
	blen = info.hbm_size;
	want = malloc(blen);
	ASSERT_NE(NULL, want);
	pattern(want, blen, 12);
	for (int i = 0; i < 2; i++) {
		buf[i] = map_anon(blen, PROT_READ | PROT_WRITE);
		ASSERT_NE(NULL, buf[i]);
		memcpy(buf[i], want, blen);
	}
	ASSERT_EQ(0, pthread_create(&t, NULL, unmap_rounds, &u));
	for (int r = 0; r < 4; r++)
		EXPECT_LT(0, dev_migrate(self->fd[0], buf[r & 1], blen, GMEM_ACCEL_TO_DEVICE));
	u.stop = 1;
	pthread_join(t, NULL);
	EXPECT_LT(0, u.migrated);
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(0, memcmp(buf[i], want, blen));
		munmap(buf[i], blen);
	}
	free(want);
}

/*
 * The neighbours of PROT_NONE: execute-only memory is not readable (EFAULT, and MIGRATE
 * refuses it); a MAP_PRIVATE file page mapped read-only and a write-sealed memfd are read
 * byte for byte and never written (EPERM); mlock()ed memory moves to HBM and back intact.
 */
TEST_F_TIMEOUT(hostile, other_protections, 120)
{
	int fd = self->fd[0], mfd;
	uint8_t *out = map_anon(4 * PAGE, PROT_READ | PROT_WRITE), *x, *priv, *sealed, *locked;
	uint8_t want[PAGE], *lwant;

	ASSERT_NE(NULL, out);
	x = map_anon(4 * PAGE, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, x);
	memset(x, 0x3c, 4 * PAGE);
	ASSERT_EQ(0, mprotect(x, 4 * PAGE, PROT_EXEC));
	EXPECT_EQ(-EFAULT, dev_copy(fd, out, x, PAGE));
	EXPECT_EQ(-EFAULT, dev_migrate(fd, x, 4 * PAGE, GMEM_ACCEL_TO_DEVICE));
	EXPECT_EQ(0, out[0]);

	/* A file's page, privately and read-only: readable, not writable. */
	mfd = syscall(SYS_memfd_create, "hostile", 2 /* MFD_ALLOW_SEALING */);
	ASSERT_LE(0, mfd);
	pattern(want, PAGE, 13);
	ASSERT_EQ(PAGE, pwrite(mfd, want, PAGE, 0));
	priv = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, mfd, 0);
	ASSERT_NE(MAP_FAILED, priv);
	EXPECT_EQ(0, dev_copy(fd, out, priv, PAGE));
	EXPECT_EQ(0, memcmp(out, want, PAGE));
	EXPECT_EQ(-EPERM, dev_fill(fd, priv, 0, 64));
	EXPECT_EQ(0, memcmp(priv, want, PAGE));

	/* Sealed against writes: a shared read-only mapping, read but never written. */
	ASSERT_EQ(0, fcntl(mfd, 1033 /* F_ADD_SEALS */, 0x0008 /* F_SEAL_WRITE */));
	sealed = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, sealed);
	memset(out, 0, PAGE);
	EXPECT_EQ(0, dev_copy(fd, out, sealed, PAGE));
	EXPECT_EQ(0, memcmp(out, want, PAGE));
	EXPECT_EQ(-EPERM, dev_fill(fd, sealed, 0, 64));
	EXPECT_EQ(0, pread(mfd, out, PAGE, 0) == PAGE ? memcmp(out, want, PAGE) : -1);

	/* mlock()ed: it moves (locking keeps it in memory, not in place) and comes back. */
	locked = map_anon(4 * PAGE, PROT_READ | PROT_WRITE);
	lwant = malloc(4 * PAGE);
	ASSERT_NE(NULL, locked);
	ASSERT_NE(NULL, lwant);
	pattern(lwant, 4 * PAGE, 14);
	memcpy(locked, lwant, 4 * PAGE);
	ASSERT_EQ(0, mlock(locked, 4 * PAGE));
	EXPECT_LE(0, dev_migrate(fd, locked, 4 * PAGE, GMEM_ACCEL_TO_DEVICE));
	EXPECT_EQ(0, dev_copy(fd, out, locked, 4 * PAGE));
	EXPECT_EQ(0, memcmp(out, lwant, 4 * PAGE));
	EXPECT_EQ(0, memcmp(locked, lwant, 4 * PAGE));	/* the CPU's view, brought home */
	free(lwant);
	munlock(locked, 4 * PAGE);
	munmap(locked, 4 * PAGE);
	munmap(sealed, PAGE);
	munmap(priv, PAGE);
	close(mfd);
	munmap(x, 4 * PAGE);
	munmap(out, 4 * PAGE);
}

/*
 * Two contexts on one process: pages one moved to HBM are read by the other byte for byte;
 * when the first closes, its pages go home and the second still reads them.
 */
TEST_F_TIMEOUT(hostile, two_contexts_one_process, 120)
{
	size_t len = 16 * PAGE;
	uint8_t *buf = map_anon(len, PROT_READ | PROT_WRITE), *out = malloc(len);
	uint8_t *want = malloc(len);
	int a = gmem_open(0, O_RDWR), b = self->fd[0];

	ASSERT_LE(0, a);
	ASSERT_NE(NULL, buf);
	pattern(buf, len, 15);
	memcpy(want, buf, len);
	EXPECT_EQ((long)(len / PAGE), dev_migrate(a, buf, len, GMEM_ACCEL_TO_DEVICE));
	memset(out, 0, len);
	EXPECT_EQ(0, dev_copy(b, out, buf, len));
	EXPECT_EQ(0, memcmp(out, want, len));
	EXPECT_EQ(GMEM_ACCEL_PAGE_HBM, page_view(b, buf) & GMEM_ACCEL_PAGE_HBM);
	close(a);
	EXPECT_EQ(0, page_view(b, buf) & GMEM_ACCEL_PAGE_HBM);
	memset(out, 0, len);
	EXPECT_EQ(0, dev_copy(b, out, buf, len));
	EXPECT_EQ(0, memcmp(out, want, len));
	EXPECT_EQ(0, memcmp(buf, want, len));
	free(want);
	free(out);
	munmap(buf, len);
}

struct copier {
	int fd;
	int bad;
	bool submit_wait;	/* SUBMIT with GMEM_ACCEL_SUBMIT_WAIT, not SUBMIT then WAIT */
};

static int copier_copy(struct copier *c, void *dst, const void *src, size_t len)
{
	struct gmem_accel_cmd cmd = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst,
				      .src = (uintptr_t)src, .size = len };
	struct gmem_accel_submit sub = { .cmds = (uintptr_t)&cmd, .count = 1,
					 .flags = GMEM_ACCEL_SUBMIT_WAIT };

	if (!c->submit_wait)
		return dev_copy(c->fd, dst, src, len);
	return ioctl(c->fd, GMEM_ACCEL_IOC_SUBMIT, &sub) ? -errno : 0;
}

static void *copy_rounds(void *arg)
{
	struct copier *c = arg;
	uint8_t *src = map_anon(8 * PAGE, PROT_READ | PROT_WRITE);
	uint8_t *dst = map_anon(8 * PAGE, PROT_READ | PROT_WRITE);

	if (!src || !dst) {
		c->bad = -1;
		return NULL;
	}
	for (int r = 0; r < 100; r++) {
		pattern(src, 8 * PAGE, r + (c->fd << 8));
		if (copier_copy(c, dst, src, 8 * PAGE) || memcmp(dst, src, 8 * PAGE))
			c->bad++;
		if (r % 10 == 9) {	/* new memory now and then: faults again */
			munmap(src, 8 * PAGE);
			src = map_anon(8 * PAGE, PROT_READ | PROT_WRITE);
			if (!src)
				return NULL;
		}
	}
	munmap(src, 8 * PAGE);
	munmap(dst, 8 * PAGE);
	return NULL;
}

static void run_copiers(struct __test_metadata *_metadata, int fd, bool submit_wait)
{
	struct copier c[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		c[i] = (struct copier){ .fd = fd, .submit_wait = submit_wait };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, copy_rounds, &c[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, c[i].bad) TH_LOG("thread %d", i);
	}
}

/* Four threads on one file, each its own buffers: every copy lands, byte for byte. */
TEST_F_TIMEOUT(hostile, threads_on_one_file, 300)
{
	run_copiers(_metadata, self->fd[0], false);
}

/*
 * The same with SUBMIT_WAIT: each thread's doorbell holds the fault interrupt for the one
 * queue they share, and a thread that finds another serving the context leaves its faults
 * to it, releasing the hold as it goes to sleep. None is lost: every copy lands.
 */
TEST_F_TIMEOUT(hostile, threads_waiting_on_one_file, 300)
{
	int64_t groups0, groups;

	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups", &groups0));
	run_copiers(_metadata, self->fd[0], true);
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups", &groups));
	/*
	 * Faults were served. (Not one a remap each: a thread's fault maps the pages around
	 * it, which may be another thread's new buffer, so a few remaps fault nothing.)
	 */
	EXPECT_LT(groups0, groups);
}

static const char * const gauges[] = { "contexts_now", "hbm_pages_now", "pt_pages_now",
					"dma_mapped_pages_now", "notifiers_now" };
#define NGAUGES 5

/* Every gauge of device 0 back at @before (waiting up to 60 s for closes to finish). */
static void expect_baseline(struct __test_metadata *_metadata, const int64_t *before)
{
	for (int i = 0; i < NGAUGES; i++) {
		EXPECT_EQ(before[i], gmem_wait_stat(0, gauges[i], before[i], 60000))
			TH_LOG("%s", gauges[i]);
	}
}

/*
 * A process killed at every step of a migration (to HBM and back, in a loop, killed after a
 * different delay each time): nothing is left behind, and the device works.
 */
TEST_F_TIMEOUT(hostile, killed_at_every_step_of_a_migration, 600)
{
	size_t len = 16ul << 20;
	int64_t before[NGAUGES];
	uint8_t *a = map_anon(PAGE, PROT_READ | PROT_WRITE), *b = map_anon(PAGE, PROT_READ | PROT_WRITE);

	for (int i = 0; i < NGAUGES; i++) {
		ASSERT_EQ(0, gmem_debugfs_stat(0, gauges[i], &before[i])) TH_LOG("%s", gauges[i]);
	}
	for (int k = 0; k < 12; k++) {
		int status;
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0) {
			int cfd = gmem_open(0, O_RDWR);
			uint8_t *big = map_anon(len, PROT_READ | PROT_WRITE);

			if (cfd < 0 || !big)
				_exit(1);
			memset(big, k, len);
			for (;;) {
				dev_migrate(cfd, big, len, GMEM_ACCEL_TO_DEVICE);
				dev_migrate(cfd, big, len, GMEM_ACCEL_TO_SYSTEM);
			}
		}
		usleep(20000 + k * 37000);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("round %d: the child ended by itself", k);
	}
	expect_baseline(_metadata, before);
	ASSERT_NE(NULL, a);
	pattern(a, PAGE, 16);
	EXPECT_EQ(0, dev_copy(self->fd[0], b, a, PAGE));
	EXPECT_EQ(0, memcmp(a, b, PAGE));
}

struct migrator {
	int fd;
	uint8_t *buf;
	size_t len;
	volatile int stop;
	int rounds;
};

static void *migrate_rounds(void *arg)
{
	struct migrator *m = arg;

	while (!m->stop) {
		dev_migrate(m->fd, m->buf, m->len, GMEM_ACCEL_TO_DEVICE);
		dev_migrate(m->fd, m->buf, m->len, GMEM_ACCEL_TO_SYSTEM);
		m->rounds++;
	}
	return NULL;
}

/*
 * fork(), exec() and exit() while another thread moves the memory to HBM and back: the
 * children read their copy (COW-shared, in HBM or not) byte for byte, some write theirs,
 * some exec at once; the parent's data stays as it was, and nothing is left behind.
 */
TEST_F_TIMEOUT(hostile, fork_exec_exit_during_migration, 600)
{
	struct migrator m = { .fd = self->fd[0], .len = 8ul << 20 };
	uint8_t *want = malloc(m.len);
	int64_t before[NGAUGES];
	int bad = 0;
	pthread_t t;

	for (int i = 0; i < NGAUGES; i++) {
		ASSERT_EQ(0, gmem_debugfs_stat(0, gauges[i], &before[i])) TH_LOG("%s", gauges[i]);
	}
	m.buf = map_anon(m.len, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, m.buf);
	ASSERT_NE(NULL, want);
	pattern(want, m.len, 17);
	memcpy(m.buf, want, m.len);
	ASSERT_EQ(0, pthread_create(&t, NULL, migrate_rounds, &m));
	for (int k = 0; k < 60; k++) {
		int status;
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0) {
			size_t off = (k * 131 * PAGE) % m.len;

			if (k % 3 == 2)
				execl("/bin/busybox", "busybox", "true", (char *)NULL);
			if (memcmp(m.buf + off, want + off, PAGE))
				_exit(2);
			if (k % 3 == 1)
				memset(m.buf + off, 0xff, PAGE);	/* its own copy */
			_exit(0);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	}
	m.stop = 1;
	pthread_join(t, NULL);
	EXPECT_EQ(0, bad);
	EXPECT_LT(0, m.rounds);
	EXPECT_EQ(0, memcmp(m.buf, want, m.len));
	munmap(m.buf, m.len);
	free(want);
	/* The fixture's files are still open: only the HBM pages must be gone. */
	EXPECT_EQ(before[1], gmem_wait_stat(0, "hbm_pages_now", before[1], 60000));
}

struct own_copy {
	int fd, ret;
	uint8_t *dst, *src;
	size_t len;
};

static void *copy_once(void *arg)
{
	struct own_copy *c = arg;

	c->ret = dev_copy(c->fd, c->dst, c->src, c->len);
	return NULL;
}

#define MAP_DELAY "/sys/kernel/debug/gmem_accel/gmem_accel0/inject_map_delay_ms"

/*
 * A context's own migration to HBM, which its MMU notifier leaves to the migration, lands
 * while a fault pass of the same context that found the pages in system memory is between its
 * hmm_range_fault() and its mapping (held there by inject_map_delay_ms): the pass must see
 * the move and map the pages where they are now, in HBM, never the system pages the migration
 * freed (the device would read freed memory; the debug kernel's page allocator would find a
 * free page marked dirty). Every page the device maps afterwards is in HBM, and the copy
 * reads the right bytes.
 */
TEST_F_TIMEOUT(hostile, own_migration_races_its_faults, 600)
{
	size_t npages = 64, len = npages * PAGE;
	struct own_copy c = { .fd = self->fd[0], .len = len };
	uint8_t *want = malloc(len);
	int64_t held0, held = 0;
	uint8_t *win;
	pthread_t t;
	time_t t0;

	/* One 2 MiB window: the destination first, then the source (64 KiB blocks of its own). */
	win = map_small_pages(2 * HUGE);
	ASSERT_NE(NULL, win);
	ASSERT_NE(NULL, want);
	c.dst = (uint8_t *)(((uintptr_t)win + HUGE - 1) & ~(HUGE - 1));
	c.src = c.dst + len;
	pattern(want, len, 23);
	memcpy(c.src, want, len);
	ASSERT_EQ(0, dev_fill(c.fd, c.dst, 0, len));	/* mapped: only the source faults */
	ASSERT_EQ(0, gmem_debugfs_stat(0, "injected_map_delays", &held0));
	ASSERT_EQ(0, write_int(MAP_DELAY, 1000));
	ASSERT_EQ(0, pthread_create(&t, NULL, copy_once, &c));
	/* Once the pass has found the system pages and sleeps, move them to HBM. */
	for (int ms = 0; ms < 120000; ms++) {
		ASSERT_EQ(0, gmem_debugfs_stat(0, "injected_map_delays", &held));
		if (held > held0)
			break;
		usleep(1000);
	}
	EXPECT_LT(held0, held);
	t0 = time(NULL);
	EXPECT_EQ((long)npages, dev_migrate(c.fd, c.src, len, GMEM_ACCEL_TO_DEVICE));
	/* (the migration must end while the pass sleeps: its injected delay is generous) */
	ASSERT_EQ(0, gmem_debugfs_stat(0, "injected_map_delays", &held));
	TH_LOG("passes held: %lld, migrate %lds, view %#x %#x", (long long)(held - held0),
	       (long)(time(NULL) - t0), page_view(c.fd, c.src), page_view(c.fd, c.src + len - PAGE));
	pthread_join(t, NULL);
	ASSERT_EQ(0, write_int(MAP_DELAY, 0));
	EXPECT_EQ(0, c.ret);
	EXPECT_EQ(0, memcmp(c.dst, want, len));
	for (size_t i = 0; i < npages; i++) {
		uint8_t v = page_view(c.fd, c.src + i * PAGE);

		EXPECT_TRUE(!v || (v & GMEM_ACCEL_PAGE_HBM)) TH_LOG("page %zu: %#x", i, v);
	}
	EXPECT_EQ(0, memcmp(c.src, want, len));
	munmap(win, 2 * HUGE);
	free(want);
}

/*
 * The copy-on-write neighbours of a device write to read-only HBM-resident memory: the child
 * that shared the pages exits at once, or writes its own copy on the CPU first; either way
 * the parent's device write lands (its pages are its own again), byte for byte, in bounded
 * time. Memory mapped read-only from the start, migrated untouched: EPERM, zeros stay.
 */
TEST_F_TIMEOUT(hostile, device_write_after_fork_variants, 120)
{
	size_t len = 16 * PAGE;
	int fd = self->fd[0];

	for (int v = 0; v < 2; v++) {
		uint8_t *buf = map_anon(len, PROT_READ | PROT_WRITE), *want = malloc(len);
		int status;
		pid_t pid;

		ASSERT_NE(NULL, buf);
		pattern(want, len, 18 + v);
		memcpy(buf, want, len);
		ASSERT_LT(0, dev_migrate(fd, buf, len, GMEM_ACCEL_TO_DEVICE));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			if (v == 1)
				memset(buf + 2 * PAGE, 0xee, PAGE);	/* its own copy, on the CPU */
			_exit(0);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_EQ(0, dev_fill(fd, buf + 2 * PAGE, 0x5656565656565656ull, PAGE))
			TH_LOG("variant %d", v);
		memset(want + 2 * PAGE, 0x56, PAGE);
		EXPECT_EQ(0, memcmp(buf, want, len)) TH_LOG("variant %d", v);
		munmap(buf, len);
		free(want);
	}

	uint8_t *ro = map_anon(len, PROT_READ);

	ASSERT_NE(NULL, ro);
	EXPECT_LE(0, dev_migrate(fd, ro, len, GMEM_ACCEL_TO_DEVICE));
	EXPECT_EQ(-EPERM, dev_fill(fd, ro, 0x1111111111111111ull, PAGE));
	for (size_t i = 0; i < len; i++) {
		ASSERT_EQ(0, ro[i]) TH_LOG("byte %zu", i);
	}
	munmap(ro, len);
}

/*
 * test_hmm's READ over 64 GiB of memory that reserves nothing, its process killed a moment
 * later: the fault-ahead brings whole ranges in, and must stop for a process that is gone,
 * not fault on for it; the process ends and nothing is left behind.
 */
TEST_F_TIMEOUT(hostile, killed_during_a_huge_fault_ahead, 600)
{
	size_t len = 64ul << 30;
	int64_t before[NGAUGES];
	int status;
	pid_t pid;

	for (int i = 0; i < NGAUGES; i++) {
		ASSERT_EQ(0, gmem_debugfs_stat(0, gauges[i], &before[i])) TH_LOG("%s", gauges[i]);
	}
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int dm = open("/dev/gmem_dmirror0", O_RDWR);
		uint8_t *p = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		struct hmm_dmirror_cmd c;

		if (dm < 0 || p == MAP_FAILED)
			_exit(1);
		dmirror(dm, HMM_DMIRROR_READ, p, p + len, len / PAGE, &c);
		_exit(2);
	}
	sleep(2);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("status %#x", status);
	expect_baseline(_metadata, before);
}

/*
 * test_hmm's SNAPSHOT of 64 GiB where nothing is mapped: every page reads back as an error
 * (hmm_range_fault's HMM_PFN_ERROR for a hole, as test_hmm reports it), no page table is
 * built for the holes, and the CPU is not held: every 2 MiB window goes through the mirror
 * path, so the walk must reschedule between windows, or the debug kernel reports a soft
 * lockup (which fails the kernel_log test). The normal kernel is fast enough that only the
 * debug kernel shows it.
 */
TEST_F_TIMEOUT(hostile, dmirror_snapshot_of_a_huge_hole, 300)
{
	size_t len = 64ul << 30, npages = len / PAGE;
	int dm = open("/dev/gmem_dmirror0", O_RDWR);
	uint8_t *hole = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			     -1, 0);
	uint8_t *out = mmap(NULL, npages, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int64_t pt0, pt;
	struct hmm_dmirror_cmd c;

	ASSERT_LE(0, dm);
	ASSERT_NE(MAP_FAILED, hole);
	ASSERT_NE(MAP_FAILED, out);
	ASSERT_EQ(0, munmap(hole, len));	/* an address range known to be free */
	memset(out, 0xaa, npages);
	ASSERT_EQ(0, gmem_debugfs_stat(0, "pt_pages_now", &pt0));
	ASSERT_EQ(0, dmirror(dm, HMM_DMIRROR_SNAPSHOT, hole, out, npages, &c));
	EXPECT_EQ(npages, c.cpages);
	ASSERT_EQ(0, gmem_debugfs_stat(0, "pt_pages_now", &pt));
	EXPECT_GE(pt0 + 4, pt) TH_LOG("%lld page-table pages for a hole", (long long)(pt - pt0));
	for (size_t i = 0; i < npages; i += PAGE / 8) {
		ASSERT_EQ(HMM_DMIRROR_PROT_ERROR, out[i]) TH_LOG("page %zu", i);
	}
	munmap(out, npages);
	close(dm);
}

/*
 * test_hmm's SNAPSHOT with no buffer (ptr 0) over 128 TiB: EFAULT at once, as test_hmm's
 * first copy_to_user() fails. A NULL buffer is not "no output": taken so, the call would walk
 * 2^26 windows before it returned.
 */
TEST_F_TIMEOUT(hostile, dmirror_snapshot_without_buffer, 120)
{
	int dm = open("/dev/gmem_dmirror0", O_RDWR);
	uint8_t *a = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct hmm_dmirror_cmd c;
	int ret;

	ASSERT_LE(0, dm);
	ASSERT_NE(NULL, a);
	a[0] = 1;
	/* EINVAL where the range passes the end of a 47-bit address space (no LA57) */
	ret = dmirror(dm, HMM_DMIRROR_SNAPSHOT, a, NULL, 1ul << 35, &c);
	EXPECT_TRUE(ret == -EFAULT || ret == -EINVAL) TH_LOG("%s", strerror(-ret));
	EXPECT_EQ(-EFAULT, dmirror(dm, HMM_DMIRROR_SNAPSHOT, a, NULL, 1, &c));
	munmap(a, PAGE);
	close(dm);
}

#define CONTENDERS 4
#define SHARE (1ul << 20)

struct contender {
	uint8_t *part;		/* its 1 MiB of the shared buffer */
	uint8_t *out;
	int fd[GMEM_MAX_TEST_DEVICES], ndev;
	int rounds;
	unsigned int seed;
	/* results */
	int failed_round, err, wrong_round;
};

/*
 * Round after round: move the part to a random device (or home), have a random device FILL a
 * random piece of it, and another copy it out; every command must succeed and every byte be
 * right, while the thread sharing its 2 MiB window does the same to the other half.
 */
static void *contend(void *arg)
{
	struct contender *c = arg;

	for (int r = 0; r < c->rounds && !c->failed_round && !c->wrong_round; r++) {
		int d = rand_r(&c->seed) % c->ndev, e = rand_r(&c->seed) % c->ndev;
		int x = rand_r(&c->seed) % c->ndev;
		size_t off = (rand_r(&c->seed) % 64) * PAGE * 4, len = 64 * PAGE;
		uint64_t v = 0x0101010101010101ull * (uint8_t)(r * 7 + 1);
		long moved = dev_migrate(c->fd[d], c->part, SHARE,
					 rand_r(&c->seed) % 4 ? GMEM_ACCEL_TO_DEVICE :
								GMEM_ACCEL_TO_SYSTEM);
		int ret;

		if (moved < 0 && moved != -ENOSPC) {
			c->err = (int)moved;
			c->failed_round = r + 1;
			break;
		}
		if (off + len > SHARE)
			off = SHARE - len;
		ret = dev_fill(c->fd[e], c->part + off, v, len);
		if (!ret)
			ret = dev_copy(c->fd[x], c->out, c->part + off, len);
		if (ret) {
			c->err = ret;
			c->failed_round = r + 1;
			break;
		}
		for (size_t i = 0; i < len; i++)
			if (c->out[i] != (uint8_t)v || c->part[off + i] != (uint8_t)v) {
				c->wrong_round = r + 1;
				break;
			}
	}
	return NULL;
}

/*
 * Four threads, each owning 1 MiB of one 4 MiB buffer (two share each 2 MiB window), each with
 * files on every device: their migrations keep taking each other's pages away under the
 * faults. That is contention between legitimate users: it throttles the faults (naps), it
 * never fails a command (EBUSY), and no byte is lost.
 */
TEST_F_TIMEOUT(hostile, contention_on_shared_windows_throttles, 1200)
{
	uint8_t *buf = mmap(NULL, CONTENDERS * SHARE + HUGE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct contender c[CONTENDERS];
	pthread_t t[CONTENDERS];
	int ndev = 0;
	int64_t throttles = 0, after = 0;
	uint8_t *base;

	ASSERT_NE(MAP_FAILED, buf);
	base = (uint8_t *)(((uintptr_t)buf + HUGE - 1) & ~(HUGE - 1));
	memset(base, 0, CONTENDERS * SHARE);
	for (int i = 0; i < CONTENDERS; i++) {
		c[i] = (struct contender) { .part = base + i * SHARE, .seed = 55 + i,
					    .rounds = debug_kernel() ? 30 : 40 };
		c[i].out = map_anon(64 * PAGE, PROT_READ | PROT_WRITE);
		ASSERT_NE(NULL, c[i].out);
		for (int d = 0; d < GMEM_MAX_TEST_DEVICES; d++) {
			int fd = gmem_open(d, O_RDWR);

			if (fd < 0)
				break;
			c[i].fd[c[i].ndev++] = fd;
		}
		ASSERT_LT(0, c[i].ndev);
		ndev = c[i].ndev;
	}
	for (int d = 0; d < ndev; d++) {
		int64_t v = 0;

		gmem_debugfs_stat(d, "fault_throttles", &v);
		throttles += v;
	}
	for (int i = 0; i < CONTENDERS; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, contend, &c[i]));
	for (int i = 0; i < CONTENDERS; i++)
		ASSERT_EQ(0, pthread_join(t[i], NULL));
	for (int i = 0; i < CONTENDERS; i++) {
		EXPECT_EQ(0, c[i].failed_round) TH_LOG("thread %d, round %d: %s", i,
						       c[i].failed_round - 1, strerror(-c[i].err));
		EXPECT_EQ(0, c[i].wrong_round) TH_LOG("thread %d, round %d: wrong bytes", i,
						      c[i].wrong_round - 1);
		for (int d = 0; d < c[i].ndev; d++)
			close(c[i].fd[d]);
		munmap(c[i].out, 64 * PAGE);
	}
	for (int d = 0; d < ndev; d++) {
		int64_t v = 0;

		gmem_debugfs_stat(d, "fault_throttles", &v);
		after += v;
	}
	TH_LOG("%d devices, %lld throttled replays", ndev, (long long)(after - throttles));
	munmap(buf, CONTENDERS * SHARE + HUGE);
}

TEST_HARNESS_MAIN
