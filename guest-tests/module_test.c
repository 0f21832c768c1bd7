// SPDX-License-Identifier: GPL-2.0
/*
 * Driver life cycle: unload and reload the module, refuse to unload while a file is open,
 * unbind a device under an open file and bind it again.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

static int unload(void)
{
	return syscall(SYS_delete_module, "gmem_accel", O_NONBLOCK) ? -errno : 0;
}

static int load(void)
{
	int fd = open(GMEM_MODULE_PATH, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return ret;
}

/*
 * The physical address ranges the driver holds for device-private HBM ("gmem_accel hbm" in
 * /proc/iomem): how many, and their total size.
 */
static int hbm_regions(uint64_t *bytes)
{
	FILE *f = fopen("/proc/iomem", "r");
	unsigned long long start, end;
	char line[256];
	int n = 0;

	*bytes = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "gmem_accel hbm") ||
		    sscanf(line, " %llx-%llx", &start, &end) != 2)
			continue;
		n++;
		*bytes += end - start + 1;
	}
	fclose(f);
	return n;
}

static void expect_devices(struct __test_metadata *_metadata, int n, uint64_t hbm)
{
	char path[64];

	for (int i = 0; i < n; i++) {
		struct gmem_accel_info info = { 0 };
		int fd = gmem_open(i, O_RDWR);

		ASSERT_LE(0, fd) TH_LOG("/dev/gmem_accel%d: %s", i, strerror(errno));
		ASSERT_EQ(0, ioctl(fd, GMEM_ACCEL_IOC_GET_INFO, &info));
		EXPECT_EQ(hbm, info.hbm_size);
		EXPECT_EQ(GMEM_VERSION, info.version);
		close(fd);
	}
	snprintf(path, sizeof(path), "/dev/gmem_accel%d", n);
	EXPECT_FALSE(path_exists(path));
}

/* Tests that need no fixture (a timeout needs one). */
GMEM_PLAIN_FIXTURE(module)

TEST_F_TIMEOUT(module, unload_and_reload, 120)
{
	int n = gmem_expect("devices", 1);
	uint64_t hbm = gmem_expect("hbm_size", 256ull << 20);

	ASSERT_EQ(0, unload());
	EXPECT_FALSE(path_exists("/sys/module/gmem_accel"));
	EXPECT_FALSE(path_exists("/dev/gmem_accel0"));
	EXPECT_FALSE(path_exists("/sys/class/gmem_accel"));
	ASSERT_EQ(0, load());
	expect_devices(_metadata, n, hbm);
	/* Twice more: nothing leaks across cycles (minors, regions, class). */
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, unload());
		ASSERT_EQ(0, load());
	}
	expect_devices(_metadata, n, hbm);
}

TEST_F_TIMEOUT(module, load_twice_is_eexist, 120)
{
	EXPECT_EQ(-EEXIST, load());
}

TEST_F_TIMEOUT(module, unload_refused_while_open, 120)
{
	int fd = gmem_open(0, O_RDWR);
	int ret;

	ASSERT_LE(0, fd);
	ret = unload();
	EXPECT_TRUE(ret == -EWOULDBLOCK || ret == -EBUSY) TH_LOG("unload returned %d", ret);
	close(fd);
	EXPECT_TRUE(path_exists("/sys/module/gmem_accel"));
}

TEST_F_TIMEOUT(module, unbind_under_open_file_then_rebind, 120)
{
	char addr[GMEM_MAX_TEST_DEVICES][32];
	struct gmem_accel_info info = { 0 };
	int n = gmem_pci_devices(addr, GMEM_MAX_TEST_DEVICES);
	uint64_t bytes0, bytes;
	int fd, regions0;

	ASSERT_LT(0, n);
	regions0 = hbm_regions(&bytes0);
	ASSERT_LE(0, regions0);
	fd = gmem_open(0, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/unbind", addr[0]));
	EXPECT_FALSE(path_exists("/dev/gmem_accel0"));
	/* The open file outlives the device and says so. */
	EXPECT_EQ(-1, ioctl(fd, GMEM_ACCEL_IOC_GET_INFO, &info));
	EXPECT_EQ(ENODEV, errno);
	close(fd);
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/bind", addr[0]));
	expect_devices(_metadata, n, gmem_expect("hbm_size", 256ull << 20));
	/* Unbind gave its HBM address range back whole (a 64 MiB HBM holds a 128 MiB region). */
	EXPECT_EQ(regions0, hbm_regions(&bytes));
	EXPECT_EQ(bytes0, bytes);
}

struct waiter {
	int fd;
	__u64 fence;
	pid_t tid;
	int ret;
};

static void *wait_long(void *arg)
{
	struct waiter *w = arg;
	struct gmem_accel_wait wt = { .fence = w->fence, .timeout_ms = 600000 };

	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	w->ret = ioctl(w->fd, GMEM_ACCEL_IOC_WAIT, &wt) ? -errno : 0;
	return NULL;
}

/* Is thread @tid asleep (state S)? */
static bool sleeping(pid_t tid)
{
	char path[64], buf[256], *p;
	int fd, n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/*
 * Unbind while a thread sleeps in WAIT for a long batch (a billion atomic adds, minutes of
 * device time): its WAIT ends with ENODEV, without waiting for the batch or the sleep, and the
 * device binds again and works: unbind must not wait for the whole batch, nor the WAIT
 * return 0. (The device leaves the guest the BQL between its turns, so the guest reaches its
 * unbind while the batch runs.)
 */
TEST_F_TIMEOUT(module, unbind_ends_a_sleeping_wait, 600)
{
	char addr[GMEM_MAX_TEST_DEVICES][32];
	int n = gmem_pci_devices(addr, GMEM_MAX_TEST_DEVICES);
	struct gmem_accel_cmd c[64];
	struct gmem_accel_submit sub = { .cmds = (uintptr_t)c, .count = 64 };
	struct gmem_accel_wait now = { .timeout_ms = 0 };
	static uint32_t counter[16];
	struct waiter w = { .ret = 1 };
	pthread_t t;

	ASSERT_LT(0, n);
	for (int i = 0; i < 64; i++)
		c[i] = (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_ATOMIC_ADD,
						.dst = (uintptr_t)&counter[0],
						.size = GMEM_CMD_MAX_ELEMENTS, .value = 1 };
	w.fd = gmem_open(0, O_RDWR);
	ASSERT_LE(0, w.fd);
	ASSERT_EQ(0, ioctl(w.fd, GMEM_ACCEL_IOC_SUBMIT, &sub));
	w.fence = now.fence = sub.fence;
	/* Still running (it takes minutes): */
	EXPECT_EQ(-1, ioctl(w.fd, GMEM_ACCEL_IOC_WAIT, &now));
	EXPECT_EQ(ETIME, errno);
	ASSERT_EQ(0, pthread_create(&t, NULL, wait_long, &w));
	for (int i = 0; i < 1000; i++) {
		pid_t tid = __atomic_load_n(&w.tid, __ATOMIC_SEQ_CST);

		if (tid && sleeping(tid))
			break;
		usleep(10000);
	}
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/unbind", addr[0]));
	pthread_join(t, NULL);
	EXPECT_EQ(-ENODEV, w.ret) TH_LOG("the batch ended first: %u of 2^30 adds", counter[0]);
	EXPECT_EQ(-1, ioctl(w.fd, GMEM_ACCEL_IOC_WAIT, &now));
	EXPECT_EQ(ENODEV, errno);
	close(w.fd);
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/bind", addr[0]));
	expect_devices(_metadata, n, gmem_expect("hbm_size", 256ull << 20));
	/* The new binding works. */
	w.fd = gmem_open(0, O_RDWR);
	ASSERT_LE(0, w.fd);
	counter[1] = 5;
	c[0].dst = (uintptr_t)&counter[1];
	c[0].size = 10;
	sub.count = 1;
	ASSERT_EQ(0, ioctl(w.fd, GMEM_ACCEL_IOC_SUBMIT, &sub));
	now.fence = sub.fence;
	now.timeout_ms = 120000;
	EXPECT_EQ(0, ioctl(w.fd, GMEM_ACCEL_IOC_WAIT, &now));
	EXPECT_EQ(15, counter[1]);
	close(w.fd);
}

struct load {
	volatile int stop;
	int ok, enodev, other, last_other;
};

/* Copy 64 KiB on device @dev over and over, reopening it after ENODEV, until told to stop. */
static void load_loop(int dev, struct load *l)
{
	uint8_t *src = malloc(1 << 16), *dst = malloc(1 << 16);

	memset(src, dev + 1, 1 << 16);
	while (!l->stop) {
		int fd = gmem_open(dev, O_RDWR);

		if (fd < 0) {
			usleep(10000);	/* unbound just now */
			continue;
		}
		for (int i = 0; i < 50 && !l->stop; i++) {
			int ret = dev_copy(fd, dst, src, 1 << 16);

			if (!ret && !memcmp(dst, src, 1 << 16)) {
				l->ok++;
			} else if (ret == -ENODEV) {
				l->enodev++;
				break;
			} else {
				l->other++;
				l->last_other = ret;
			}
		}
		close(fd);
	}
	_exit(0);
}

/*
 * Unbind and bind device 0 five times while one process works on it and another on device 1:
 * the first's calls succeed or end with ENODEV, nothing else; the second never notices; then
 * every device works and the HBM address ranges are as they were.
 */
TEST_F_TIMEOUT(module, unbind_bind_loop_under_load, 600)
{
	char addr[GMEM_MAX_TEST_DEVICES][32];
	int n = gmem_pci_devices(addr, GMEM_MAX_TEST_DEVICES), regions0, status;
	struct load *l = mmap(NULL, 2 * sizeof(*l), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t bytes0, bytes;
	pid_t pid[2];

	ASSERT_LT(1, n) TH_LOG("needs two devices");
	ASSERT_NE(MAP_FAILED, l);
	memset(l, 0, 2 * sizeof(*l));
	regions0 = hbm_regions(&bytes0);
	for (int d = 0; d < 2; d++) {
		pid[d] = fork();
		ASSERT_LE(0, pid[d]);
		if (!pid[d])
			load_loop(d, &l[d]);
	}
	for (int r = 0; r < 5; r++) {
		usleep(300000);
		ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/unbind", addr[0]));
		usleep(100000);
		ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/bind", addr[0]));
	}
	usleep(300000);
	l[0].stop = l[1].stop = 1;
	for (int d = 0; d < 2; d++) {
		ASSERT_EQ(pid[d], waitpid(pid[d], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("worker %d", d);
		EXPECT_LT(0, l[d].ok) TH_LOG("worker %d", d);
		EXPECT_EQ(0, l[d].other) TH_LOG("worker %d: %d calls failed otherwise (last %d)",
						d, l[d].other, l[d].last_other);
	}
	EXPECT_EQ(0, l[1].enodev);
	expect_devices(_metadata, n, gmem_expect("hbm_size", 256ull << 20));
	EXPECT_EQ(regions0, hbm_regions(&bytes));
	EXPECT_EQ(bytes0, bytes);
	munmap(l, 2 * sizeof(*l));
}

TEST_HARNESS_MAIN
