// SPDX-License-Identifier: GPL-2.0
/*
 * GEM objects of the DRM accel front end (Linux 7.3): device 1 given to DRM. An object made
 * with GEM_CREATE (HBM, from the device's drm_pagemap, or system memory), mapped at its
 * GEM_MMAP_OFFSET, is the CPU's and the device's at the same address; GEM_CLOSE frees it; PRIME shares it with another process and
 * with a /dev/gmem_accelN file. Bad input gets its errno; a close racing a submit, a kill
 * while mapped and an unbind leave the device's gauges where they were.
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
#define DEV 1

static const char * const gauges[] = { "contexts_now", "objects_now", "obj_hbm_pages_now",
					"obj_system_pages_now", "pt_pages_now" };
#define NGAUGES 5

FIXTURE(gem) {
	int fd;
	int64_t base[NGAUGES];
};

FIXTURE_SETUP(gem)
{
	self->fd = -1;
	if (!path_exists("/sys/class/accel"))
		SKIP(return, "no DRM accel framework: the DRM front end needs Linux 7.3 with CONFIG_DRM_GPUSVM (images/kernel-7.3.config)");
	ASSERT_EQ(0, gmem_set_frontend(DEV, "drm"));
	for (int i = 0; i < NGAUGES; i++) {
		ASSERT_EQ(0, gmem_debugfs_stat(DEV, gauges[i], &self->base[i])) TH_LOG("%s", gauges[i]);
	}
	self->fd = gmem_open_accel(DEV, O_RDWR);
	ASSERT_LE(0, self->fd) TH_LOG("device %d's accel node: %s", DEV, strerror(errno));
}

FIXTURE_TEARDOWN(gem)
{
	if (self->fd >= 0)
		close(self->fd);
	if (path_exists("/sys/class/accel"))
		EXPECT_EQ(0, gmem_set_frontend(DEV, "gmem"));
}

static void gem_gives_back(struct __test_metadata *_metadata, FIXTURE_DATA(gem) *self)
{
	if (self->fd >= 0)
		close(self->fd);
	self->fd = -1;
	for (int i = 0; i < NGAUGES; i++) {
		EXPECT_EQ(self->base[i], gmem_wait_stat(DEV, gauges[i], self->base[i], 60000))
			TH_LOG("%s", gauges[i]);
	}
}

static size_t count_wrong(const uint8_t *a, const uint8_t *b, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += a[i] != b[i];
	return n;
}

/* HBM and system memory objects: the CPU writes, the device copies, the CPU reads it back. */
TEST_F_TIMEOUT(gem, create_mmap_submit_readback, 300)
{
	size_t len = 3ul << 20;
	struct gmem_accel_obj_query q = { 0 };
	uint32_t hbm, sys;
	uint8_t *h, *s, *ref = malloc(len);
	int64_t objs;

	ASSERT_NE(NULL, ref);
	int64_t hbm0, hbm_pages;

	ASSERT_EQ(0, gmem_debugfs_stat(DEV, "obj_hbm_pages_now", &hbm0));
	hbm = gem_create(self->fd, len, GMEM_ACCEL_OBJ_HBM, NULL);
	ASSERT_NE(0, hbm) TH_LOG("GEM_CREATE HBM: %s", strerror(errno));
	ASSERT_EQ(0, gmem_debugfs_stat(DEV, "obj_hbm_pages_now", &hbm_pages));
	EXPECT_EQ(hbm0 + (4l << 20) / (int64_t)PAGE, hbm_pages);
	sys = gem_create(self->fd, len + 5 * PAGE, GMEM_ACCEL_OBJ_SYSTEM | GMEM_ACCEL_OBJ_PAGE_64K,
			 NULL);
	ASSERT_NE(0, sys) TH_LOG("GEM_CREATE SYSTEM: %s", strerror(errno));
	ASSERT_EQ(0, gmem_debugfs_stat(DEV, "objects_now", &objs));
	EXPECT_EQ(self->base[1] + 2, objs);
	q.handle = hbm;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_QUERY, &q));
	EXPECT_TRUE(q.flags & GMEM_ACCEL_OBJ_HBM);
	EXPECT_EQ(4ul << 20, q.size);	/* whole 2 MiB pages */
	EXPECT_EQ(2ul << 20, q.page_size);
	EXPECT_NE(~0ull, q.hbm_addr);
	q.handle = sys;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_QUERY, &q));
	EXPECT_TRUE(q.flags & GMEM_ACCEL_OBJ_SYSTEM);
	EXPECT_EQ(65536, q.page_size);
	EXPECT_EQ(len + 64 * 1024, q.size);
	h = gem_map(self->fd, hbm, len);
	s = gem_map(self->fd, sys, len);
	ASSERT_NE(NULL, h);
	ASSERT_NE(NULL, s);
	/* zeroed at creation */
	EXPECT_EQ(0, h[12345] | s[len - 1]);
	pattern(ref, len, 7);
	memcpy(h, ref, len);
	ASSERT_EQ(0, dev_copy(self->fd, s, h, len));
	EXPECT_EQ(0, count_wrong(s, ref, len));
	ASSERT_EQ(0, dev_fill(self->fd, h + PAGE, 0x5a5a5a5a5a5a5a5aull, 8 * PAGE));
	EXPECT_EQ(0x5a, h[PAGE]);
	EXPECT_EQ(0x5a, h[9 * PAGE - 1]);
	EXPECT_EQ(ref[9 * PAGE], h[9 * PAGE]);
	EXPECT_LT(0, ctx_stats(self->fd).faults);
	/* closed with its mapping alive: the mapping keeps it until munmap() */
	EXPECT_EQ(0, gem_close(self->fd, sys));
	EXPECT_EQ(-EINVAL, gem_close(self->fd, sys));
	EXPECT_EQ(0, count_wrong(s, ref, len));
	ASSERT_EQ(0, munmap(s, len));
	EXPECT_EQ(self->base[1] + 1, gmem_wait_stat(DEV, "objects_now", self->base[1] + 1, 60000));
	ASSERT_EQ(0, munmap(h, len));
	free(ref);
	/* the file's close frees the handles it still has */
	gem_gives_back(_metadata, self);
}

/* Every field checked: unknown flags, sizes, handles, offsets; legacy names stay refused. */
TEST_F_TIMEOUT(gem, bad_input, 120)
{
	struct gmem_accel_obj_alloc a = { .size = PAGE };
	struct drm_gmem_accel_gem_mmap_offset mo = { 0 };
	struct gmem_accel_obj_query q = { .handle = 77 };
	struct drm_prime_handle ph = { 0 };
	struct drm_gem_flink fl = { 0 };
	uint64_t off;
	uint32_t h;

	EXPECT_EQ(0, gem_create(self->fd, PAGE, 1u << 31, NULL));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, gem_create(self->fd, PAGE, GMEM_ACCEL_OBJ_HBM | GMEM_ACCEL_OBJ_SYSTEM, NULL));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, gem_create(self->fd, PAGE, GMEM_ACCEL_OBJ_PAGE_4K | GMEM_ACCEL_OBJ_PAGE_2M,
				NULL));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, gem_create(self->fd, 0, 0, NULL));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, gem_create(self->fd, GMEM_ACCEL_OBJ_MAX_SIZE + 1, 0, NULL));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, gem_create(self->fd, PAGE, GMEM_ACCEL_OBJ_MANAGED | GMEM_ACCEL_OBJ_HBM, NULL));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, gem_create(self->fd, PAGE, GMEM_ACCEL_OBJ_MANAGED, NULL));
	EXPECT_EQ(EOPNOTSUPP, errno);
	a.handle = 3;		/* an out field, given */
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_CREATE, &a));
	EXPECT_EQ(EINVAL, errno);
	a.handle = 0;
	a.mmap_offset = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_CREATE, &a));
	EXPECT_EQ(EINVAL, errno);

	h = gem_create(self->fd, 2 * PAGE, GMEM_ACCEL_OBJ_SYSTEM, &off);
	ASSERT_NE(0, h);
	mo.handle = h + 100;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_MMAP_OFFSET, &mo));
	EXPECT_EQ(ENOENT, errno);
	mo.handle = h;
	mo.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_MMAP_OFFSET, &mo));
	EXPECT_EQ(EINVAL, errno);
	mo.flags = 0;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_MMAP_OFFSET, &mo));
	EXPECT_EQ(off, mo.offset);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_QUERY, &q));
	EXPECT_EQ(ENOENT, errno);
	/* private, beyond the object, at no object's offset */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * PAGE, PROT_READ, MAP_PRIVATE, self->fd, off));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 3 * PAGE, PROT_READ, MAP_SHARED, self->fd, off));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd, off + (1ull << 36)));
	EXPECT_EQ(EINVAL, errno);
	/* PRIME: no such handle; not a dma-buf; flink names never */
	ph.handle = h + 100;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph));
	EXPECT_EQ(ENOENT, errno);
	ph.handle = 0;
	ph.fd = self->fd;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph));
	EXPECT_EQ(EINVAL, errno);
	fl.handle = h;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GEM_FLINK, &fl));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-EINVAL, gem_close(self->fd, h + 100));
	EXPECT_EQ(0, gem_close(self->fd, h));
	gem_gives_back(_metadata, self);
}

/* Shared with a child process by PRIME: both read each other's bytes, the device's too. */
TEST_F_TIMEOUT(gem, prime_share_between_processes, 300)
{
	size_t len = 1ul << 20;
	struct drm_prime_handle ph = { .flags = DRM_CLOEXEC | DRM_RDWR };
	uint8_t *p, *ref = malloc(len);
	uint32_t h;
	pid_t pid;
	int st;

	ASSERT_NE(NULL, ref);
	h = gem_create(self->fd, len, GMEM_ACCEL_OBJ_HBM, NULL);
	ASSERT_NE(0, h);
	p = gem_map(self->fd, h, len);
	ASSERT_NE(NULL, p);
	pattern(ref, len, 3);
	memcpy(p, ref, len);
	ph.handle = h;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph));
	ASSERT_LE(0, ph.fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* its own context: a file opened by this process */
		struct drm_prime_handle im = { .fd = ph.fd };
		int fd = gmem_open_accel(DEV, O_RDWR);
		uint8_t *c, *tmp = malloc(len);

		if (fd < 0 || !tmp || ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &im))
			_exit(10);
		c = gem_map(fd, im.handle, len);
		if (!c || count_wrong(c, ref, len))
			_exit(11);
		/* the device reads it into malloc'd memory, then writes it */
		if (dev_copy(fd, tmp, c, len) || count_wrong(tmp, ref, len))
			_exit(12);
		if (dev_fill(fd, c, 0x1111111111111111ull, len / 2))
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("child status %#x", st);
	EXPECT_EQ(0x11, p[0]);
	EXPECT_EQ(0x11, p[len / 2 - 1]);
	EXPECT_EQ(0, count_wrong(p + len / 2, ref + len / 2, len / 2));
	/* imported back on its own file: the same handle (DRM's PRIME cache) */
	{
		struct drm_prime_handle im = { .fd = ph.fd };

		ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &im));
		EXPECT_EQ(h, im.handle);
	}
	close(ph.fd);
	EXPECT_EQ(0, gem_close(self->fd, h));
	ASSERT_EQ(0, munmap(p, len));
	free(ref);
	gem_gives_back(_metadata, self);
}

/* Exported by DRM PRIME, imported on device 0's /dev/gmem_accel0: the other front end. */
TEST_F_TIMEOUT(gem, prime_to_gmem_node, 300)
{
	struct drm_prime_handle ph = { .flags = DRM_CLOEXEC };
	struct gmem_accel_obj_import im = { 0 };
	struct gmem_accel_obj_free fr = { 0 };
	size_t len = 64 * 1024;
	uint8_t *p, *q;
	uint32_t h;
	int g0;

	g0 = gmem_open(0, O_RDWR);
	if (g0 < 0)
		SKIP(goto out, "device 0 has no /dev/gmem_accel0: %s", strerror(errno));
	h = gem_create(self->fd, len, GMEM_ACCEL_OBJ_SYSTEM, NULL);
	ASSERT_NE(0, h);
	p = gem_map(self->fd, h, len);
	ASSERT_NE(NULL, p);
	pattern(p, len, 9);
	ph.handle = h;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph));
	im.fd = ph.fd;
	ASSERT_EQ(0, ioctl(g0, GMEM_ACCEL_IOC_OBJ_IMPORT, &im)) TH_LOG("%s", strerror(errno));
	q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, g0, im.mmap_offset);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, count_wrong(p, q, len));
	/* device 0 writes it, peer to peer: device 1's mapping sees it */
	ASSERT_EQ(0, dev_fill(g0, q, 0x2222222222222222ull, PAGE));
	EXPECT_EQ(0x22, p[PAGE - 1]);
	munmap(q, len);
	fr.handle = im.handle;
	EXPECT_EQ(0, ioctl(g0, GMEM_ACCEL_IOC_OBJ_FREE, &fr));
	close(ph.fd);
	close(g0);
	EXPECT_EQ(0, gem_close(self->fd, h));
	munmap(p, len);
out:
	gem_gives_back(_metadata, self);
}

struct racer {
	int fd;
	uint8_t *dst, *src;
	size_t len;
	volatile int stop;
	int ok, efault, other;
};

static void *submit_loop(void *arg)
{
	struct racer *r = arg;

	while (!r->stop) {
		int ret = dev_copy(r->fd, r->dst, r->src, r->len);

		if (!ret)
			r->ok++;
		else if (ret == -EFAULT)
			r->efault++;
		else
			r->other++;
	}
	return NULL;
}

/* GEM_CLOSE and munmap() while the device copies out of the object: done, or EFAULT. */
TEST_F_TIMEOUT(gem, close_racing_submit, 600)
{
	size_t len = 2ul << 20;
	uint8_t *dst = malloc(len);
	struct racer r = { .fd = self->fd, .dst = dst, .len = len };
	pthread_t t;

	ASSERT_NE(NULL, dst);
	for (int round = 0; round < 6; round++) {
		uint32_t h = gem_create(self->fd, len, round & 1 ? GMEM_ACCEL_OBJ_SYSTEM :
					GMEM_ACCEL_OBJ_HBM, NULL);
		uint8_t *p;

		ASSERT_NE(0, h);
		p = gem_map(self->fd, h, len);
		ASSERT_NE(NULL, p);
		memset(p, round + 1, len);
		r.src = p;
		r.stop = 0;
		ASSERT_EQ(0, pthread_create(&t, NULL, submit_loop, &r));
		while (!r.ok && !r.other)
			usleep(1000);
		EXPECT_EQ(0, gem_close(self->fd, h));
		usleep(2000 * round);
		ASSERT_EQ(0, munmap(p, len));
		usleep(2000);
		r.stop = 1;
		pthread_join(t, NULL);
	}
	TH_LOG("copies done %d, EFAULT %d", r.ok, r.efault);
	EXPECT_EQ(0, r.other);
	EXPECT_LT(0, r.ok);
	free(dst);
	gem_gives_back(_metadata, self);
}

/* Killed with objects mapped and a copy in flight: everything given back. */
TEST_F_TIMEOUT(gem, kill_while_mapped, 300)
{
	int pfd[2];
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		size_t len = 8ul << 20;
		int fd = gmem_open_accel(DEV, O_RDWR);
		uint32_t a = fd < 0 ? 0 : gem_create(fd, len, GMEM_ACCEL_OBJ_HBM, NULL);
		uint32_t b = fd < 0 ? 0 : gem_create(fd, len, GMEM_ACCEL_OBJ_SYSTEM, NULL);
		uint8_t *pa = a ? gem_map(fd, a, len) : NULL, *pb = b ? gem_map(fd, b, len) : NULL;

		if (!pa || !pb)
			_exit(1);
		memset(pa, 1, len);
		if (write(pfd[1], "r", 1) != 1)
			_exit(2);
		for (;;)
			dev_copy(fd, pb, pa, len);
	}
	close(pfd[1]);
	ASSERT_EQ(1, read(pfd[0], &c, 1));
	usleep(20000);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	close(pfd[0]);
	gem_gives_back(_metadata, self);
}

/* Unbound with an object mapped: calls fail ENODEV; at close everything is given back. */
TEST_F_TIMEOUT(gem, unbind_while_mapped, 300)
{
	struct gmem_accel_obj_query q = { 0 };
	char addr[64];
	uint8_t *p;
	uint32_t h;

	h = gem_create(self->fd, 64 * 1024, GMEM_ACCEL_OBJ_SYSTEM, NULL);
	ASSERT_NE(0, h);
	p = gem_map(self->fd, h, 64 * 1024);
	ASSERT_NE(NULL, p);
	p[5] = 5;
	ASSERT_EQ(0, dev_fill(self->fd, p + PAGE, 0x0303030303030303ull, PAGE));
	ASSERT_EQ(0, gmem_pci_addr(DEV, addr, sizeof(addr)));
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/unbind", addr));
	q.handle = h;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_QUERY, &q));
	EXPECT_EQ(ENODEV, errno);
	EXPECT_EQ(-ENODEV, dev_fill(self->fd, p, 0, PAGE));
	EXPECT_EQ(0, gem_create(self->fd, PAGE, 0, NULL));
	EXPECT_EQ(ENODEV, errno);
	/* system memory: still the process's bytes, the device's fill among them */
	EXPECT_EQ(5, p[5]);
	EXPECT_EQ(3, p[PAGE]);
	munmap(p, 64 * 1024);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/bind", addr));
	/* bound again: none of the old binding's objects or contexts held */
	for (int i = 0; i < NGAUGES; i++) {
		EXPECT_EQ(self->base[i], gmem_wait_stat(DEV, gauges[i], self->base[i], 60000))
			TH_LOG("%s", gauges[i]);
	}
}

TEST_HARNESS_MAIN
