// SPDX-License-Identifier: GPL-2.0
/*
 * The DRM accel front end (Linux 7.3): device 1 given to it (the frontend parameter, then
 * unbound and bound again) is /dev/accel/accelN, whose files are contexts whose shared virtual
 * memory is drm_gpusvm's. Malloc'd and mmap'd memory, freed and reused; partial munmap; fork;
 * threads; read-only and inaccessible memory; a signal during a wait, a kill during a copy;
 * everything given back at close. The test helpers drive it through their DRM ioctl mapping
 * (gmem_ioc()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
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

/* The device is DRM's now: an accel node, a context per file, and no /dev/gmem_accelN. */
TEST_F_TIMEOUT(drm, a_file_is_a_context, 120)
{
	struct gmem_accel_info info = { 0 };
	struct gmem_accel_stats st = { 0 };
	char node[32];
	int64_t ctxs;
	int fd2;

	snprintf(node, sizeof(node), "/dev/gmem_accel%d", DEV);
	EXPECT_FALSE(path_exists(node));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GET_INFO, &info));
	EXPECT_LT(0, info.hbm_size);
	EXPECT_EQ(DEV, info.minor);
	info.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GET_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_STATS, &st));
	ASSERT_EQ(0, gmem_debugfs_stat(DEV, "contexts_now", &ctxs));
	EXPECT_EQ(self->base[0] + 1, ctxs);
	fd2 = gmem_open_accel(DEV, O_RDWR);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, gmem_debugfs_stat(DEV, "contexts_now", &ctxs));
	EXPECT_EQ(self->base[0] + 2, ctxs);
	close(fd2);
	closed_gives_back(_metadata, self);
}

/* Malloc'd buffers copied by the device, freed, allocated again and copied again. */
TEST_F_TIMEOUT(drm, malloc_free_reuse, 300)
{
	for (int round = 0; round < 4; round++) {
		size_t len = (3ul << 20) + round * 5 * PAGE;
		uint8_t *src = malloc(len), *dst = malloc(len);

		ASSERT_NE(NULL, src);
		ASSERT_NE(NULL, dst);
		pattern(src, len, round + 1);
		memset(dst, 0, len);
		ASSERT_EQ(0, dev_copy(self->fd, dst, src, len)) TH_LOG("round %d", round);
		EXPECT_EQ(0, memcmp(dst, src, len)) TH_LOG("round %d", round);
		free(src);
		free(dst);
	}
	EXPECT_LT(0, ctx_stats(self->fd).faults);
	closed_gives_back(_metadata, self);
}

/*
 * drm_gpusvm's notifiers cover what the device reaches outside GEM mappings: the core's own
 * notifier windows stay out of it, so a CPU change is invalidated once, not twice.
 */
TEST_F_TIMEOUT(drm, svm_faults_insert_no_core_notifier, 300)
{
	size_t len = 8ul << 20;
	uint8_t *src = map_buf(len), *dst = map_buf(len);

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	pattern(src, len, 9);
	memset(dst, 0, len);
	ASSERT_EQ(0, dev_copy(self->fd, dst, src, len));
	EXPECT_EQ(0, memcmp(dst, src, len));
	EXPECT_LT(0, ctx_stats(self->fd).faults);
	EXPECT_EQ(self->base[DRM_G_NOTIFIERS], stat_of("notifiers_now"));
	munmap(src, len);
	munmap(dst, len);
	closed_gives_back(_metadata, self);
}

/* Unmapped and mapped again at the same address: the device reads the new memory. */
TEST_F_TIMEOUT(drm, munmap_then_map_again, 300)
{
	size_t len = 4ul << 20;
	uint8_t *src = map_buf(len), *dst = map_buf(len), *again;
	uint64_t inval0;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	pattern(src, len, 5);
	ASSERT_EQ(0, dev_copy(self->fd, dst, src, len));
	EXPECT_EQ(0, memcmp(dst, src, len));
	inval0 = ctx_stats(self->fd).invalidations;
	ASSERT_EQ(0, munmap(src, len));
	EXPECT_LT(inval0, ctx_stats(self->fd).invalidations);
	again = mmap(src, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		     -1, 0);
	ASSERT_EQ(src, again);
	pattern(again, len, 6);
	ASSERT_EQ(0, dev_copy(self->fd, dst, again, len));
	EXPECT_EQ(0, memcmp(dst, again, len));
	munmap(again, len);
	munmap(dst, len);
	closed_gives_back(_metadata, self);
}

/* A hole punched in a mapped range: the rest still copies, the hole is EFAULT. */
TEST_F_TIMEOUT(drm, partial_munmap, 300)
{
	size_t len = 2 * HUGE;
	uint8_t *src = map_buf(len), *dst = map_buf(len), *ref = malloc(len);

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_NE(NULL, ref);
	pattern(src, len, 9);
	memcpy(ref, src, len);
	ASSERT_EQ(0, dev_copy(self->fd, dst, src, len));
	ASSERT_EQ(0, munmap(src + HUGE - 16 * PAGE, 32 * PAGE));
	memset(dst, 0, len);
	ASSERT_EQ(0, dev_copy(self->fd, dst, src, HUGE - 16 * PAGE));
	ASSERT_EQ(0, dev_copy(self->fd, dst + HUGE + 16 * PAGE, src + HUGE + 16 * PAGE,
			      HUGE - 16 * PAGE));
	EXPECT_EQ(0, memcmp(dst, ref, HUGE - 16 * PAGE));
	EXPECT_EQ(0, memcmp(dst + HUGE + 16 * PAGE, ref + HUGE + 16 * PAGE, HUGE - 16 * PAGE));
	EXPECT_EQ(-EFAULT, dev_copy(self->fd, dst, src + HUGE - 8 * PAGE, PAGE));
	munmap(src, len);
	munmap(dst, len);
	free(ref);
	closed_gives_back(_metadata, self);
}

/* A forked child writes its copy of mapped memory: the parent's device reads the parent's. */
TEST_F_TIMEOUT(drm, fork_child_writes_its_copy, 300)
{
	size_t len = HUGE;
	uint8_t *src = map_buf(len), *dst = map_buf(len), *ref = malloc(len);
	int status;
	pid_t pid;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_NE(NULL, ref);
	pattern(src, len, 11);
	memcpy(ref, src, len);
	ASSERT_EQ(0, dev_copy(self->fd, dst, src, len));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = gmem_open_accel(DEV, O_RDWR);

		memset(src, 0x5a, len);		/* its own copy now */
		if (fd < 0 || dev_copy(fd, dst, src, len))
			_exit(1);
		for (size_t i = 0; i < len; i++)
			if (dst[i] != 0x5a)
				_exit(2);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child status %#x", status);
	memset(dst, 0, len);
	ASSERT_EQ(0, dev_copy(self->fd, dst, src, len));
	EXPECT_EQ(0, memcmp(dst, ref, len));
	EXPECT_EQ(0, memcmp(src, ref, len));
	munmap(src, len);
	munmap(dst, len);
	free(ref);
	closed_gives_back(_metadata, self);
}

/* Read-only memory refuses the device's writes (EPERM); inaccessible memory its reads. */
TEST_F_TIMEOUT(drm, protections_hold, 120)
{
	uint8_t *ro = mmap(NULL, HUGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *none = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *dst = map_buf(HUGE);

	ASSERT_NE(MAP_FAILED, ro);
	ASSERT_NE(MAP_FAILED, none);
	ASSERT_NE(NULL, dst);
	EXPECT_EQ(-EPERM, dev_fill(self->fd, ro, 0x1111111111111111ull, PAGE));
	for (size_t i = 0; i < PAGE; i++)
		ASSERT_EQ(0, ro[i]);
	EXPECT_EQ(0, dev_copy(self->fd, dst, ro, HUGE));	/* reading it is fine */
	EXPECT_EQ(-EFAULT, dev_copy(self->fd, dst, none, PAGE));
	munmap(ro, HUGE);
	munmap(none, PAGE);
	munmap(dst, HUGE);
	closed_gives_back(_metadata, self);
}

struct copier {
	int fd, bad, seed;
};

static void *copy_rounds(void *arg)
{
	struct copier *c = arg;
	size_t len = 16 * PAGE;

	for (int r = 0; r < 40; r++) {
		uint8_t *src = map_buf(len), *dst = map_buf(len);

		if (!src || !dst) {
			c->bad++;
			break;
		}
		pattern(src, len, c->seed * 100 + r);
		if (dev_copy(c->fd, dst, src, len) || memcmp(dst, src, len))
			c->bad++;
		munmap(src, len);
		munmap(dst, len);
	}
	return NULL;
}

/* Four threads of one file, each mapping and unmapping its own buffers: every copy lands. */
TEST_F_TIMEOUT(drm, threads_on_one_file, 600)
{
	struct copier c[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		c[i] = (struct copier){ .fd = self->fd, .seed = i + 1 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, copy_rounds, &c[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, c[i].bad) TH_LOG("thread %d", i);
	}
	closed_gives_back(_metadata, self);
}

static void on_signal(int sig)
{
}

struct signaller {
	pthread_t target;
	volatile int stop;
	int sent;
};

static void *signal_rounds(void *arg)
{
	struct signaller *s = arg;

	while (!s->stop) {
		pthread_kill(s->target, SIGUSR1);
		s->sent++;
		usleep(2000);
	}
	return NULL;
}

/*
 * Signals during SUBMIT_WAIT: the wait may end (EINTR) with the fence filled in, WAIT takes it
 * up again, and every copy lands whole.
 */
TEST_F_TIMEOUT(drm, signal_during_submit_wait, 600)
{
	struct sigaction sa = { .sa_handler = on_signal };	/* no SA_RESTART */
	struct signaller s = { .target = pthread_self() };
	size_t len = 16ul << 20;
	uint8_t *src = map_buf(len), *dst = map_buf(len);
	int eintr = 0;
	pthread_t t;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_create(&t, NULL, signal_rounds, &s));
	for (int r = 0; r < 6; r++) {
		struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst,
					    .src = (uintptr_t)src, .size = len };
		struct gmem_accel_submit sub = { .cmds = (uintptr_t)&c, .count = 1,
						 .flags = GMEM_ACCEL_SUBMIT_WAIT };
		int ret;

		pattern(src, len, 20 + r);
		ret = ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &sub);
		if (ret) {
			struct gmem_accel_wait w = { .fence = sub.fence, .timeout_ms = 120000 };

			ASSERT_EQ(EINTR, errno);
			ASSERT_NE(0, sub.fence);
			eintr++;
			do
				ret = ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_WAIT, &w);
			while (ret && errno == EINTR);
			ASSERT_EQ(0, ret) TH_LOG("round %d: %s", r, strerror(errno));
		}
		EXPECT_EQ(0, memcmp(dst, src, len)) TH_LOG("round %d", r);
		munmap(src, len);	/* new memory each round: faults again */
		src = map_buf(len);
		ASSERT_NE(NULL, src);
	}
	s.stop = 1;
	pthread_join(t, NULL);
	signal(SIGUSR1, SIG_DFL);
	TH_LOG("%d signals, %d waits interrupted", s.sent, eintr);
	EXPECT_LT(0, s.sent);
	munmap(src, len);
	munmap(dst, len);
	closed_gives_back(_metadata, self);
}

static void copy_forever(int fd, int ready, int round)
{
	size_t len = 32ul << 20;
	uint8_t *src = map_buf(len), *dst = map_buf(len);

	if (!src || !dst || write(ready, "r", 1) != 1)
		_exit(1);
	for (;;)
		dev_copy(fd, dst, src, len);
}

static unsigned int later_each_round(int round)
{
	return 20000 * (round + 1);
}

/* A process killed while its copies fault their pages in: nothing is left behind. */
TEST_F_TIMEOUT(drm, killed_during_a_copy, 600)
{
	close(self->fd);
	self->fd = -1;
	drm_kill_rounds(_metadata, 4, copy_forever, later_each_round);
	gauges_back(_metadata, self);
}

/* (no file of its own: only for the time an unbind may take on a loaded debug kernel) */
FIXTURE(bind) {};
FIXTURE_SETUP(bind) {}
FIXTURE_TEARDOWN(bind) {}

/* A front end not known, or drm on a kernel without drm_gpusvm: the bind fails, saying why. */
TEST_F_TIMEOUT(bind, frontend_refused, 300)
{
	const char *param = "/sys/module/gmem_accel/parameters/frontend";
	const char *bind = "/sys/bus/pci/drivers/gmem_accel/bind";
	const char *bad = "frontend for device 1: give gmem or drm";
	int before = gmem_kernel_log_count(bad);
	char addr[64];

	ASSERT_EQ(0, gmem_pci_addr(DEV, addr, sizeof(addr)));
	ASSERT_EQ(0, write_sysfs(param, "gmem,nvidia"));
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/unbind", addr));
	EXPECT_EQ(-EINVAL, write_sysfs(bind, addr));
	EXPECT_EQ(before + 1, gmem_kernel_log_count(bad));
	if (!path_exists("/sys/class/accel")) {
		ASSERT_EQ(0, write_sysfs(param, "gmem,drm"));
		EXPECT_EQ(-EOPNOTSUPP, write_sysfs(bind, addr));
		EXPECT_LT(0, gmem_kernel_log_count("this kernel has no CONFIG_DRM_GPUSVM"));
	}
	ASSERT_EQ(0, write_sysfs(param, "gmem,gmem"));
	ASSERT_EQ(0, write_sysfs(bind, addr));
	EXPECT_TRUE(path_exists("/dev/gmem_accel1"));
}

TEST_HARNESS_MAIN
