// SPDX-License-Identifier: GPL-2.0
/*
 * Legitimate load: every context of a device busy at once (63 processes, each filling and
 * copying fresh memory, so that their fault groups crowd the fault queue together), and one
 * process on every device at once. Every byte right, no command failed, the device's gauges
 * back at their baseline, and no device error in the kernel log: contention throttles, a
 * full fault queue is flow control.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define MIB (1ul << 20)
#define CONTEXTS 63		/* every user context of a device (context 0 is the driver's) */

/* The device gauges that must come back: name, value before. */
static const char *const gauges[] = {
	"contexts_now", "pt_pages_now", "dma_mapped_pages_now", "notifiers_now",
	"hbm_pages_now",
};
#define NGAUGES (sizeof(gauges) / sizeof(gauges[0]))

static int64_t gauge(int dev, const char *name)
{
	int64_t v = INT64_MIN;

	gmem_debugfs_stat(dev, name, &v);
	return v;
}

/* gmem-accel device errors in the kernel log. */
static int device_errors(void)
{
	return gmem_kernel_log_count("device error");
}

/* A barrier for processes, in shared memory: arrive, then wait for all @n (up to 60 s). */
static void barrier_wait(volatile int *count, int n)
{
	__atomic_add_fetch(count, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 600000 && __atomic_load_n(count, __ATOMIC_SEQ_CST) < n; i++)
		usleep(100);
}

/*
 * One busy process: open device @dev, meet the others, then @rounds times FILL fresh memory
 * and COPY it to more fresh memory, both faulting every page. Exit status: 0, or the step
 * that failed.
 */
static int busy_child(int dev, volatile int *bar, int n, int rounds, size_t len)
{
	int fd = gmem_open(dev, O_RDWR);

	if (fd < 0)
		return 10;
	barrier_wait(bar, n);
	for (int r = 0; r < rounds; r++) {
		uint8_t *a = map_anon(len, PROT_READ | PROT_WRITE);
		uint8_t *b = map_anon(len, PROT_READ | PROT_WRITE);
		uint8_t v = (uint8_t)(getpid() + r);

		if (!a || !b)
			return 11;
		if (dev_fill(fd, a, 0x0101010101010101ull * v, len))
			return 12;
		if (dev_copy(fd, b, a, len))
			return 13;
		for (size_t i = 0; i < len; i += 512)
			if (a[i] != v || b[i] != v || b[len - 1] != v)
				return 14;
		munmap(a, len);
		munmap(b, len);
	}
	close(fd);
	return 0;
}

/*
 * Start @n busy children on the devices @dev_of gives, wait for them all (up to @timeout_s,
 * then kill them); how many failed, the first failure's step in *@step.
 */
static int run_busy(int n, int (*dev_of)(int), int rounds, size_t len, int timeout_s,
		    int *step)
{
	volatile int *bar = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				 -1, 0);
	pid_t pids[CONTEXTS];
	int failed = 0, status;
	time_t end = time(NULL) + timeout_s;

	*step = 0;
	if (bar == MAP_FAILED)
		return n;
	*bar = 0;
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(busy_child(dev_of(i), bar, n, rounds, len));
	}
	for (int i = 0; i < n; i++) {
		while (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == 0) {
			if (time(NULL) > end) {
				kill(pids[i], SIGKILL);
				waitpid(pids[i], &status, 0);
				break;
			}
			usleep(10000);
		}
		if (pids[i] <= 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
			failed++;
			if (!*step)
				*step = pids[i] <= 0 ? -1 :
					WIFEXITED(status) ? WEXITSTATUS(status) : 128;
		}
	}
	munmap((void *)bar, 4096);
	return failed;
}

/* Every device's gauges come back to @before within 30 s. */
static void expect_gauges_back(struct __test_metadata *_metadata, int ndev,
			       int64_t before[][NGAUGES])
{
	for (int d = 0; d < ndev; d++) {
		for (unsigned int g = 0; g < NGAUGES; g++) {
			int64_t now = gmem_wait_stat(d, gauges[g], before[d][g], 30000);

			EXPECT_EQ(before[d][g], now) TH_LOG("device %d: %s", d, gauges[g]);
		}
	}
}

static int devices(void)
{
	int n = 0;
	char path[64];

	for (; n < GMEM_MAX_TEST_DEVICES; n++) {
		snprintf(path, sizeof(path), "/sys/class/gmem_accel/gmem_accel%d", n);
		if (!path_exists(path))
			break;
	}
	return n;
}

GMEM_PLAIN_FIXTURE(load);

static int device_zero(int i)
{
	return 0;
}

TEST_F_TIMEOUT(load, every_context_of_a_device_busy_at_once, 1800)
{
	int64_t before[1][NGAUGES], overflows0 = gauge(0, "fault_queue_overflows");
	int errors0 = device_errors(), step;
	size_t len = debug_kernel() ? MIB / 4 : MIB;
	int failed;

	for (unsigned int g = 0; g < NGAUGES; g++)
		before[0][g] = gauge(0, gauges[g]);
	failed = run_busy(CONTEXTS, device_zero, 2, len, 1500, &step);
	EXPECT_EQ(0, failed) TH_LOG("%d of %d processes failed, the first at step %d", failed,
				    CONTEXTS, step);
	expect_gauges_back(_metadata, 1, before);
	EXPECT_EQ(errors0, device_errors()) TH_LOG("device errors logged under legitimate load");
	TH_LOG("%lld fault-queue overflows waited out",
	       (long long)(gauge(0, "fault_queue_overflows") - overflows0));
}

static int ndevices;

static int device_of(int i)
{
	return i % ndevices;
}

TEST_F_TIMEOUT(load, a_process_on_every_device_at_once, 1200)
{
	int64_t before[GMEM_MAX_TEST_DEVICES][NGAUGES];
	int errors0 = device_errors(), step, failed;
	size_t len = debug_kernel() ? MIB / 4 : MIB;

	ndevices = devices();
	ASSERT_LT(0, ndevices);
	for (int d = 0; d < ndevices; d++)
		for (unsigned int g = 0; g < NGAUGES; g++)
			before[d][g] = gauge(d, gauges[g]);
	/* Four processes a device, each device's engine and fault path busy at once. */
	failed = run_busy(ndevices * 4 > CONTEXTS ? CONTEXTS : ndevices * 4, device_of, 2, len,
			  1000, &step);
	EXPECT_EQ(0, failed) TH_LOG("%d processes failed, the first at step %d", failed, step);
	expect_gauges_back(_metadata, ndevices, before);
	EXPECT_EQ(errors0, device_errors()) TH_LOG("device errors logged under legitimate load");
}

TEST_HARNESS_MAIN
