// SPDX-License-Identifier: GPL-2.0
/*
 * Thrashing mitigation (guest-driver/gmem_accel_thrashing.c): a PREFER_DEVICE page set the
 * CPU and the device write in turn moves between system memory and HBM each time; the driver
 * detects it, throttles the side about to move it, then pins the pages in system memory,
 * where the device maps them, until pin x lapse has passed. Every test checks the bytes and
 * that no command fails; the device counters show each step (and its absence when the
 * policy is off). TCG's round trips are slow: the fixture sets the lapse to 200 ms.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

#define PAGE 4096ul
#define NPAGES 4
#define LEN (NPAGES * PAGE)
#define RW (PROT_READ | PROT_WRITE)
#define PARAM_PREFIX "uvm_perf_thrashing_"

/* The parameters a test may change; the teardown restores each. */
static const char *const params[] = { "enable", "lapse_usec", "pin", "pin_threshold" };

static int64_t stat_of(int dev, const char *name)
{
	int64_t v = INT64_MIN;

	gmem_debugfs_stat(dev, name, &v);
	return v;
}

/* A fill by the device, waited for through signals (EINTR: the batch goes on). */
static int dev_fill_patiently(int fd, void *dst, uint64_t value, size_t len)
{
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)dst,
				    .size = len, .value = value };
	struct gmem_accel_submit s = { .cmds = (uintptr_t)&c, .count = 1 };
	struct gmem_accel_wait w = { .timeout_ms = 120000 };
	int ret;

	while ((ret = ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &s)) && errno == EINTR)
		;
	if (ret)
		return -errno;
	w.fence = s.fence;
	while ((ret = ioctl(fd, GMEM_ACCEL_IOC_WAIT, &w)) && errno == EINTR)
		;
	return ret ? -errno : 0;
}

/*
 * One round of the ping-pong on @buf: the CPU checks the device's last value and writes its
 * own, the device writes over it. 0, or the first wrong word's index + 1, or -errno.
 */
static long ping_pong_round(int fd, uint64_t *buf, unsigned int round)
{
	uint64_t dev_val = 0xd0000000ull + round, cpu_val = 0xc0000000ull + round;
	int ret;

	for (unsigned long i = 0; i < LEN / 8; i++) {
		if (round && buf[i] != 0xd0000000ull + round - 1)
			return i + 1;
		buf[i] = cpu_val;
	}
	ret = dev_fill_patiently(fd, buf, dev_val, LEN);
	if (ret)
		return ret;
	for (unsigned long i = 0; i < LEN / 8; i++)
		if (buf[i] != dev_val)
			return i + 1;
	return 0;
}

/* Rounds until counter @name has grown past @base (or @max rounds); the rounds run, or -err. */
static long ping_pong_until(int fd, int dev, uint64_t *buf, unsigned int *round,
			    const char *name, int64_t base, unsigned int max)
{
	for (unsigned int n = 0; n < max; n++) {
		long ret = ping_pong_round(fd, buf, (*round)++);

		if (ret)
			return ret < 0 ? ret : -EILSEQ;
		if (name && stat_of(dev, name) > base)
			return n + 1;
	}
	return max;
}

/* Wait until counter @name is above @base (or @timeout_ms passed); its last value. */
static int64_t wait_stat_above(int dev, const char *name, int64_t base, int timeout_ms)
{
	int64_t v = stat_of(dev, name);

	for (int ms = 0; v <= base && ms < timeout_ms; ms += 50) {
		usleep(50000);
		v = stat_of(dev, name);
	}
	return v;
}

static unsigned long pages_in_hbm(int fd, void *addr)
{
	unsigned long n = 0;

	for (unsigned long i = 0; i < NPAGES; i++)
		n += !!(page_view(fd, (char *)addr + i * PAGE) & GMEM_ACCEL_PAGE_HBM);
	return n;
}

/*
 * Where the device's write of a round leaves the pages: it writes the last round's value
 * again (the next round checks it) and the pages in HBM are counted before the CPU looks.
 */
static long hbm_after_device_write(int fd, uint64_t *buf, unsigned int round)
{
	int ret = dev_fill_patiently(fd, buf, 0xd0000000ull + round - 1, LEN);

	return ret ? ret : (long)pages_in_hbm(fd, buf);
}

FIXTURE(thrash) {
	int fd;
	int dev;
	uint64_t saved[4];
	uint64_t *buf;
	unsigned int round;
	int64_t detected0, throttles0, pins0, pinned0, hbm0;
};

FIXTURE_SETUP(thrash)
{
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	self->dev = 0;
	for (int i = 0; i < 4; i++)
		self->saved[i] = gmem_param_get(PARAM_PREFIX, params[i]);
	ASSERT_EQ(0, gmem_param_set(PARAM_PREFIX, "enable", 1));
	/* TCG's round trips are far slower than a GPU's: a lapse they fit in. */
	ASSERT_EQ(0, gmem_param_set(PARAM_PREFIX, "lapse_usec", 200000));
	self->fd = gmem_open(self->dev, O_RDWR);
	ASSERT_LE(0, self->fd);
	self->buf = map_small_pages(LEN);
	ASSERT_NE(NULL, self->buf);
	ASSERT_EQ(0, dev_advise(self->fd, self->buf, LEN, GMEM_ACCEL_PREFER_DEVICE, 0));
	self->detected0 = stat_of(self->dev, "thrashing_detected");
	self->throttles0 = stat_of(self->dev, "thrashing_throttles");
	self->pins0 = stat_of(self->dev, "thrashing_pins");
	self->pinned0 = stat_of(self->dev, "thrashing_pinned_pages_now");
	self->hbm0 = stat_of(self->dev, "hbm_pages_now");
}

FIXTURE_TEARDOWN(thrash)
{
	if (self->fd >= 0)
		close(self->fd);
	for (int i = 0; i < 4; i++)
		gmem_param_set(PARAM_PREFIX, params[i], self->saved[i]);
}

/*
 * The ping-pong is detected, throttled, then pinned: from then on the device writes the
 * pages in system memory and nothing moves; every byte is right and no command fails.
 */
TEST_F_TIMEOUT(thrash, ping_pong_is_throttled_then_pinned, 900)
{
	long n;
	int64_t cpu_faults;

	ASSERT_EQ(0, gmem_param_set(PARAM_PREFIX, "pin", 100000));	/* pinned for the whole test */
	n = ping_pong_until(self->fd, self->dev, self->buf, &self->round, "thrashing_pins",
			    self->pins0, 300);
	ASSERT_LT(0, n) TH_LOG("round %u: %ld", self->round, n);
	EXPECT_LT(self->detected0, stat_of(self->dev, "thrashing_detected"));
	EXPECT_LT(self->throttles0, stat_of(self->dev, "thrashing_throttles"));
	ASSERT_LT(self->pins0, stat_of(self->dev, "thrashing_pins"))
		TH_LOG("%ld rounds and no pin", n);
	EXPECT_LT(self->pinned0, stat_of(self->dev, "thrashing_pinned_pages_now"));
	/* Pinned: the rounds go on in system memory, the CPU faulting no page home. */
	ASSERT_EQ(3, ping_pong_until(self->fd, self->dev, self->buf, &self->round, NULL, 0, 3));
	cpu_faults = stat_of(self->dev, "cpu_faults");
	ASSERT_EQ(5, ping_pong_until(self->fd, self->dev, self->buf, &self->round, NULL, 0, 5));
	EXPECT_EQ(cpu_faults, stat_of(self->dev, "cpu_faults"));
	EXPECT_EQ(0, hbm_after_device_write(self->fd, self->buf, self->round));
	TH_LOG("pinned after %ld rounds: %lld detected, %lld throttles", n,
	       (long long)(stat_of(self->dev, "thrashing_detected") - self->detected0),
	       (long long)(stat_of(self->dev, "thrashing_throttles") - self->throttles0));
	close(self->fd);
	self->fd = -1;
	/* Closed: nothing stays pinned, nothing in HBM. */
	EXPECT_EQ(self->pinned0, gmem_wait_stat(self->dev, "thrashing_pinned_pages_now",
						self->pinned0, 60000));
	EXPECT_EQ(self->hbm0, gmem_wait_stat(self->dev, "hbm_pages_now", self->hbm0, 60000));
}

/* Switched off: the same ping-pong moves the pages every round, and still ends right. */
TEST_F_TIMEOUT(thrash, ping_pong_without_detection, 900)
{
	int64_t cpu_faults = stat_of(self->dev, "cpu_faults");

	ASSERT_EQ(0, gmem_param_set(PARAM_PREFIX, "enable", 0));
	ASSERT_EQ(40, ping_pong_until(self->fd, self->dev, self->buf, &self->round, NULL, 0, 40));
	EXPECT_EQ(self->detected0, stat_of(self->dev, "thrashing_detected"));
	EXPECT_EQ(self->throttles0, stat_of(self->dev, "thrashing_throttles"));
	EXPECT_EQ(self->pins0, stat_of(self->dev, "thrashing_pins"));
	/* Every round moved them: the CPU faulted them home each time, the device's write in. */
	EXPECT_LE(cpu_faults + 39, stat_of(self->dev, "cpu_faults"));
	EXPECT_EQ(NPAGES, hbm_after_device_write(self->fd, self->buf, self->round));
}

/* Pinned pages unpin after pin x lapse; the device's next write moves them to HBM again. */
TEST_F_TIMEOUT(thrash, pinned_pages_unpin_after_pin_time, 900)
{
	long n;

	ASSERT_EQ(0, gmem_param_set(PARAM_PREFIX, "pin", 10));	/* 2 s */
	n = ping_pong_until(self->fd, self->dev, self->buf, &self->round, "thrashing_pins",
			    self->pins0, 300);
	ASSERT_LT(0, n);
	ASSERT_LT(self->pins0, stat_of(self->dev, "thrashing_pins"));
	EXPECT_EQ(self->pinned0, gmem_wait_stat(self->dev, "thrashing_pinned_pages_now",
						self->pinned0, 120000));
	/* Unpinned and unmapped: the device faults again, and its fault migrates them. */
	sleep(1);	/* (past the lapse: no longer thrashing) */
	ASSERT_EQ(0, dev_fill_patiently(self->fd, self->buf, 7, LEN));
	EXPECT_EQ(NPAGES, pages_in_hbm(self->fd, self->buf));
	for (unsigned long i = 0; i < LEN / 8; i++)
		ASSERT_EQ(7, self->buf[i]);
}

static void on_alarm(int sig)
{
}

/* Signals all through the throttle naps: every command still completes, bytes exact. */
TEST_F_TIMEOUT(thrash, signals_during_throttle_naps, 900)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { { 0, 5000 }, { 0, 5000 } };
	long n;

	ASSERT_EQ(0, gmem_param_set(PARAM_PREFIX, "pin", 100000));
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));	/* no SA_RESTART: calls see EINTR */
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	n = ping_pong_until(self->fd, self->dev, self->buf, &self->round, "thrashing_pins",
			    self->pins0, 300);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	ASSERT_LT(0, n) TH_LOG("round %u: %ld", self->round, n);
	EXPECT_LT(self->throttles0, stat_of(self->dev, "thrashing_throttles"));
}

/* A process killed in a pinned ping-pong leaves nothing pinned and nothing in HBM. */
TEST_F_TIMEOUT(thrash, kill_during_pinned_ping_pong, 900)
{
	int status;
	pid_t pid;

	ASSERT_EQ(0, gmem_param_set(PARAM_PREFIX, "pin", 100000));
	close(self->fd);
	self->fd = -1;
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = gmem_open(self->dev, O_RDWR);
		uint64_t *buf = map_small_pages(LEN);
		unsigned int round = 0;

		if (fd < 0 || !buf || dev_advise(fd, buf, LEN, GMEM_ACCEL_PREFER_DEVICE, 0))
			_exit(2);
		for (;;)
			if (ping_pong_round(fd, buf, round++))
				_exit(1);
	}
	/* Pinned, and going on (a few throttles more are not needed: kill it in its rounds). */
	EXPECT_LT(self->pins0, wait_stat_above(self->dev, "thrashing_pins", self->pins0, 300000));
	usleep(300000);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("child exited %d", WEXITSTATUS(status));
	EXPECT_EQ(self->pinned0, gmem_wait_stat(self->dev, "thrashing_pinned_pages_now",
						self->pinned0, 60000));
	EXPECT_EQ(self->hbm0, gmem_wait_stat(self->dev, "hbm_pages_now", self->hbm0, 60000));
}

/*
 * munmap of pinned pages, with their unpin due (pin x lapse is short): their state goes with
 * the window, nothing stays counted pinned, and the memory mapped again there starts afresh.
 */
TEST_F_TIMEOUT(thrash, munmap_races_pin_and_unpin, 900)
{
	ASSERT_EQ(0, gmem_param_set(PARAM_PREFIX, "pin", 1));	/* unpinned one lapse after the pin */
	for (int i = 0; i < 3; i++) {
		unsigned int round = 0;
		int64_t pins = stat_of(self->dev, "thrashing_pins");
		long n = ping_pong_until(self->fd, self->dev, self->buf, &round, "thrashing_pins",
					 pins, 300);

		ASSERT_LT(0, n) TH_LOG("pass %d: %ld", i, n);
		ASSERT_EQ(0, munmap(self->buf, LEN));
		self->buf = map_small_pages(LEN);
		ASSERT_NE(NULL, self->buf);
		ASSERT_EQ(0, dev_advise(self->fd, self->buf, LEN, GMEM_ACCEL_PREFER_DEVICE, 0));
	}
	EXPECT_EQ(self->pinned0, gmem_wait_stat(self->dev, "thrashing_pinned_pages_now",
						self->pinned0, 60000));
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(self->hbm0, gmem_wait_stat(self->dev, "hbm_pages_now", self->hbm0, 60000));
}

/* Out-of-range writes to the parameters are refused and change nothing. */
TEST_F_TIMEOUT(thrash, parameters_are_checked, 60)
{
	EXPECT_EQ(-EINVAL, gmem_param_set(PARAM_PREFIX, "threshold", 0));
	EXPECT_EQ(-EINVAL, gmem_param_set(PARAM_PREFIX, "threshold", 8));
	EXPECT_EQ(3, gmem_param_get(PARAM_PREFIX, "threshold"));
	EXPECT_EQ(-EINVAL, gmem_param_set(PARAM_PREFIX, "pin_threshold", 256));
	EXPECT_EQ(-EINVAL, gmem_param_set(PARAM_PREFIX, "nap", 0));
	EXPECT_EQ(-EINVAL, gmem_param_set(PARAM_PREFIX, "enable", 2));
	EXPECT_EQ(-EINVAL, gmem_param_set(PARAM_PREFIX, "lapse_usec", 0));
	EXPECT_EQ(200000, gmem_param_get(PARAM_PREFIX, "lapse_usec"));
	EXPECT_EQ(1, gmem_param_get(PARAM_PREFIX, "nap"));
	EXPECT_EQ(2000, gmem_param_get(PARAM_PREFIX, "epoch"));
	EXPECT_EQ(4, gmem_param_get(PARAM_PREFIX, "max_resets"));
}

TEST_HARNESS_MAIN
