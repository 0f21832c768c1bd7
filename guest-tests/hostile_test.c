// SPDX-License-Identifier: GPL-2.0
/*
 * The driver under hostile programs: each error reaches the command that caused it, whoever
 * shares its ring; a file's fences are its own; protections hold through HBM; faults that
 * cannot make progress end their command instead of replaying forever.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
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

/* The command ring a file's context submits to (the driver spreads contexts over 1-3). */
static int ring_of(int fd)
{
	return 1 + (ctx_stats(fd).context - 1) % (GMEM_NUM_QUEUES - 1);
}

FIXTURE(hostile) {
	int fd[NFILES];
	int a, b;	/* two of them whose contexts share a ring */
};

FIXTURE_SETUP(hostile)
{
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	self->a = self->b = -1;
	for (int i = 0; i < NFILES; i++) {
		self->fd[i] = gmem_open(0, O_RDWR);
		ASSERT_LE(0, self->fd[i]) TH_LOG("open /dev/gmem_accel0: %s", strerror(errno));
	}
	for (int i = 0; i < NFILES && self->a < 0; i++) {
		for (int j = i + 1; j < NFILES; j++) {
			if (ring_of(self->fd[i]) == ring_of(self->fd[j])) {
				self->a = i;
				self->b = j;
				break;
			}
		}
	}
	ASSERT_LE(0, self->a) TH_LOG("%d contexts on 3 rings, none sharing one?", NFILES);
}

FIXTURE_TEARDOWN(hostile)
{
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
 * Two contexts on one ring fail at the same time, one with EPERM (a write to read-only
 * memory), one with EFAULT (a read of PROT_NONE memory): each gets its own errno, every time.
 */
TEST_F_TIMEOUT(hostile, errno_reaches_its_command_on_a_shared_ring, 600)
{
	uint8_t *ro = map_anon(PAGE, PROT_READ);
	uint8_t *none = map_anon(PAGE, PROT_NONE);
	uint8_t *dst = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct failer perm = {
		.fd = self->fd[self->a], .want = EPERM,
		.cmd = { .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)ro, .size = 64, .value = 1 },
	};
	struct failer fault = {
		.fd = self->fd[self->b], .want = EFAULT,
		.cmd = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst, .src = (uintptr_t)none,
			 .size = 64 },
	};
	pthread_t t;

	ASSERT_NE(MAP_FAILED, ro);
	ASSERT_NE(MAP_FAILED, none);
	ASSERT_NE(MAP_FAILED, dst);
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

	ASSERT_NE(MAP_FAILED, ro);
	ASSERT_NE(MAP_FAILED, none);
	ASSERT_NE(MAP_FAILED, dst);
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
 * WAIT takes only fences SUBMIT gave this file: another file's (on the same ring, submitted
 * before this file's) is EINVAL, as are 0 and values never handed out.
 */
TEST_F_TIMEOUT(hostile, wait_refuses_fences_of_other_files, 120)
{
	uint8_t *buf = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)buf, .size = 64,
				    .value = 7 };
	int a = self->fd[self->a], b = self->fd[self->b];
	__u64 fa[3], fb;

	ASSERT_NE(MAP_FAILED, buf);
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

TEST_HARNESS_MAIN
