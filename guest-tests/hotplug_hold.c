// SPDX-License-Identifier: GPL-2.0
/*
 * For host-tests/hotplug.sh (not a suite test): the guest's half of a hot-unplug and re-plug of
 * device 1 while a process has it open with work queued. Prints one line per step for the host:
 *   HOTPLUG ready              device 1 open, data on it, a batch queued: unplug it now
 *   HOTPLUG unplugged <what>   the calls on the old file fail cleanly, device 0 works: plug
 *                              it back
 *   HOTPLUG replugged <what>   the new device bound, moves data, takes HBM pages
 *   HOTPLUG done <status>      0 when every check passed, else the step that failed
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define LEN (256 * PAGE)

static int done(int status)
{
	printf("HOTPLUG done %d\n", status);
	fflush(stdout);
	return status;
}

/* Wait up to @secs for /dev/gmem_accel1 to exist (@present) or not. */
static bool wait_node(bool present, int secs)
{
	for (int i = 0; i < secs * 10; i++) {
		if (path_exists("/dev/gmem_accel1") == present)
			return true;
		usleep(100 * 1000);
	}
	return false;
}

/* The device copies and fills through @fd, and takes pages into HBM: 0 or the failing step. */
static int device_works(int fd, int step)
{
	uint8_t *a = map_anon(LEN, PROT_READ | PROT_WRITE), *b = map_anon(LEN, PROT_READ | PROT_WRITE);
	int ret = 0;

	if (!a || !b)
		return step;
	pattern(a, LEN, step);
	if (dev_copy(fd, b, a, LEN) || memcmp(a, b, LEN))
		ret = step;
	else if (dev_migrate(fd, b, LEN, GMEM_ACCEL_TO_DEVICE) != (long)(LEN / PAGE))
		ret = step + 1;
	else if (dev_fill(fd, b, 0x5151515151515151ull, PAGE) || b[PAGE - 1] != 0x51 ||
		 memcmp(a + PAGE, b + PAGE, LEN - PAGE))
		ret = step + 2;
	munmap(a, LEN);
	munmap(b, LEN);
	return ret;
}

int main(void)
{
	struct gmem_accel_cmd c[GMEM_ACCEL_MAX_BATCH];
	struct gmem_accel_submit s = { .cmds = (uintptr_t)c, .count = GMEM_ACCEL_MAX_BATCH };
	struct gmem_accel_wait w = { .timeout_ms = 30000 };
	struct gmem_accel_info info;
	uint8_t *buf = map_anon(16 << 20, PROT_READ | PROT_WRITE);
	int fd0 = gmem_open(0, O_RDWR), fd1 = gmem_open(1, O_RDWR), ret, wait_ret;

	if (fd0 < 0 || fd1 < 0 || !buf)
		return done(1);
	if (device_works(fd1, 10))
		return done(2);
	/* A batch of fills over 16 MiB, every page a fault: still queued when the unplug comes. */
	for (int i = 0; i < GMEM_ACCEL_MAX_BATCH; i++)
		c[i] = (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_FILL, .value = i,
			.dst = (uintptr_t)buf + i * (256 * PAGE), .size = 256 * PAGE };
	if (ioctl(fd1, GMEM_ACCEL_IOC_SUBMIT, &s))
		return done(3);
	printf("HOTPLUG ready\n");
	fflush(stdout);

	if (!wait_node(false, 120))
		return done(4);
	/* The old file: its wait returns (done or ENODEV), every other call is ENODEV. */
	w.fence = s.fence;
	wait_ret = ioctl(fd1, GMEM_ACCEL_IOC_WAIT, &w) ? errno : 0;
	ret = ioctl(fd1, GMEM_ACCEL_IOC_GET_INFO, &info) ? errno : 0;
	if (ret != ENODEV) {
		printf("# GET_INFO after unplug: %s\n", strerror(ret));
		return done(5);
	}
	ret = ioctl(fd1, GMEM_ACCEL_IOC_SUBMIT, &s) ? errno : 0;
	if (ret != ENODEV)
		return done(6);
	if (close(fd1))
		return done(7);
	if (device_works(fd0, 20))
		return done(20);
	printf("HOTPLUG unplugged: the queued batch's wait gave %s, later calls ENODEV,"
	       " device 0 works\n", wait_ret ? strerror(wait_ret) : "success");
	fflush(stdout);

	if (!wait_node(true, 120))
		return done(8);
	for (int i = 0; i < 100 && (fd1 = gmem_open(1, O_RDWR)) < 0; i++)
		usleep(100 * 1000);
	if (fd1 < 0)
		return done(9);
	if (device_works(fd1, 30))
		return done(30);
	close(fd1);
	printf("HOTPLUG replugged: gmem_accel1 bound again, copies, fills and migrates\n");
	return done(0);
}
