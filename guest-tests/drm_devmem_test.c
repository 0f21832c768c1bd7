// SPDX-License-Identifier: GPL-2.0
/*
 * Device memory for the DRM accel front end (Linux 7.3): the device's HBM as the kernel's
 * drm_pagemap pages. A PREFER_DEVICE range (DRM ADVISE) moves into HBM on a device fault
 * (SNAPSHOT shows the device mapping it there, the drm_to_hbm counter the pages the DMA
 * engine copied) and home when the CPU touches it; without advice nothing moves. A working
 * set 4x the HBM evicts (drm_evictions) until HBM is found oversubscribed, then is mapped
 * where it is (oversub_remote_maps), or with that policy off evicts all the way, and ends
 * byte-exact either way; PREFER_SYSTEM, close and an
 * unbind racing the CPU's faults bring pages home; a process killed while its ranges move
 * leaves nothing behind. Every device
 * write is checked byte by byte, and HBM pages count back to where they were.
 */
#define _GNU_SOURCE
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
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_drm_uapi.h"
#include "gmem_test_util.h"
#include "drm_fixture.h"

#define PAGE 4096ul
#define HUGE (2ul << 20)
#define DEV DRM_DEV
#define RW (PROT_READ | PROT_WRITE)

DRM_FIXTURE(devmem)

static int advise(int fd, void *addr, size_t len, unsigned int location, unsigned int flags)
{
	struct gmem_accel_advise a = { .addr = (uintptr_t)addr, .size = len,
				       .location = location, .flags = flags };

	return ioctl(fd, DRM_IOCTL_GMEM_ACCEL_ADVISE, &a) ? -errno : 0;
}

/*
 * PREFER_DEVICE: the device's faults move both buffers into HBM (the source's bytes copied,
 * the untouched destination's zeroed), the device maps them there; the CPU's reads bring
 * them home, byte-exact, and the device maps HBM no more.
 */
TEST_F_TIMEOUT(devmem, moves_in_on_device_fault_and_home_on_cpu_touch, 600)
{
	size_t len = 4ul << 20;
	uint8_t *src = map_2m(len), *dst = map_2m(len), *ref = malloc(len);
	int64_t in0 = stat_of("drm_to_hbm"), out0 = stat_of("drm_to_ram");

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_NE(NULL, ref);
	pattern(src, len, 7);
	memcpy(ref, src, len);
	ASSERT_EQ(0, advise(self->fd, src, len, GMEM_ACCEL_PREFER_DEVICE, 0));
	ASSERT_EQ(0, advise(self->fd, dst, len, GMEM_ACCEL_PREFER_DEVICE, 0));
	ASSERT_EQ(0, dev_copy(self->fd, dst, src, len));
	EXPECT_EQ(len / PAGE, hbm_pages(self->fd, src, len));
	EXPECT_EQ(len / PAGE, hbm_pages(self->fd, dst, len));
	EXPECT_LE(in0 + 2 * (int64_t)(len / PAGE), stat_of("drm_to_hbm"));
	EXPECT_EQ(self->base[DRM_G_HBM] + 2 * (int64_t)(len / PAGE), stat_of("drm_hbm_pages_now"));
	EXPECT_EQ(0, memcmp(dst, ref, len));
	EXPECT_EQ(0, memcmp(src, ref, len));
	EXPECT_LE(out0 + 2 * (int64_t)(len / PAGE), stat_of("drm_to_ram"));
	EXPECT_EQ(0, hbm_pages(self->fd, src, len));
	EXPECT_EQ(0, hbm_pages(self->fd, dst, len));
	EXPECT_EQ(self->base[DRM_G_HBM], gmem_wait_stat(DEV, "drm_hbm_pages_now", self->base[DRM_G_HBM], 60000));

	/* and in again: the device writes HBM, the CPU reads what it wrote */
	ASSERT_EQ(0, dev_fill(self->fd, dst, 0x5a5a5a5a5a5a5a5aull, len));
	EXPECT_EQ(len / PAGE, hbm_pages(self->fd, dst, len));
	EXPECT_EQ(-1, first_not(dst, len, 0x5a));
	free(ref);
	munmap(src, len);
	munmap(dst, len);
	closed_gives_back(_metadata, self);
}

/* Without advice (and with PREFER_NONE) nothing moves: the device maps system memory. */
TEST_F_TIMEOUT(devmem, without_advice_nothing_moves, 300)
{
	size_t len = 4ul << 20;
	uint8_t *src = map_2m(len), *dst = map_2m(len);
	int64_t in0 = stat_of("drm_to_hbm");

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	pattern(src, len, 3);
	ASSERT_EQ(0, advise(self->fd, dst, len, GMEM_ACCEL_PREFER_DEVICE, 0));
	ASSERT_EQ(0, advise(self->fd, dst, len, GMEM_ACCEL_PREFER_NONE, 0));
	ASSERT_EQ(0, dev_copy(self->fd, dst, src, len));
	EXPECT_EQ(0, hbm_pages(self->fd, src, len));
	EXPECT_EQ(0, hbm_pages(self->fd, dst, len));
	EXPECT_EQ(in0, stat_of("drm_to_hbm"));
	EXPECT_EQ(self->base[DRM_G_HBM], stat_of("drm_hbm_pages_now"));
	EXPECT_EQ(0, memcmp(dst, src, len));
	munmap(src, len);
	munmap(dst, len);
	closed_gives_back(_metadata, self);
}

/* PREFER_SYSTEM brings a range's HBM pages home at once, without a CPU touch. */
TEST_F_TIMEOUT(devmem, prefer_system_brings_pages_home, 300)
{
	size_t len = 4ul << 20;
	uint8_t *p = map_2m(len);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, advise(self->fd, p, len, GMEM_ACCEL_PREFER_DEVICE, 0));
	ASSERT_EQ(0, dev_fill(self->fd, p, 0x1111111111111111ull, len));
	EXPECT_EQ(len / PAGE, hbm_pages(self->fd, p, len));
	ASSERT_EQ(0, advise(self->fd, p, len, GMEM_ACCEL_PREFER_SYSTEM, 0));
	EXPECT_EQ(0, hbm_pages(self->fd, p, len));
	EXPECT_EQ(self->base[DRM_G_HBM], gmem_wait_stat(DEV, "drm_hbm_pages_now", self->base[DRM_G_HBM], 60000));
	/* a device fault there now maps system memory */
	ASSERT_EQ(0, dev_fill(self->fd, p, 0x2222222222222222ull, len));
	EXPECT_EQ(0, hbm_pages(self->fd, p, len));
	EXPECT_EQ(-1, first_not(p, len, 0x22));
	munmap(p, len);
	closed_gives_back(_metadata, self);
}

/*
 * The 4x working sets: the oversubscription policy's parameters (gmem_perf_oversub_*, which
 * the DRM front end's faults follow as the own front end's do) set by the test and restored
 * after it. The epoch is made long, so that TCG's slow moves do not end an episode early,
 * once an earlier test's episode has ended.
 */
#define OVERSUB "gmem_perf_oversub_"
static const char * const oversub_params[] = { "enable", "epoch_msec" };

FIXTURE(devmem_4x) {
	int fd;
	int64_t base[DRM_NGAUGES];
	uint64_t hbm_size;
	uint64_t saved[2];
};

FIXTURE_SETUP(devmem_4x)
{
	uint8_t *p;

	for (int i = 0; i < 2; i++)
		self->saved[i] = gmem_param_get(OVERSUB, oversub_params[i]);
	drm_fixture_setup(_metadata, &self->fd, self->base, &self->hbm_size);
	if (self->fd < 0)	/* (skipped: no DRM accel framework) */
		return;
	/* (a PREFER_DEVICE fault after a short epoch ends any episode) */
	ASSERT_EQ(0, gmem_param_set(OVERSUB, "epoch_msec", 1));
	usleep(20000);
	p = map_2m(HUGE);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, advise(self->fd, p, HUGE, GMEM_ACCEL_PREFER_DEVICE, 0));
	ASSERT_EQ(0, dev_fill(self->fd, p, 0, HUGE));
	munmap(p, HUGE);
	ASSERT_EQ(0, gmem_param_set(OVERSUB, "epoch_msec", 600000));
}

FIXTURE_TEARDOWN(devmem_4x)
{
	for (int i = 0; i < 2; i++)
		gmem_param_set(OVERSUB, oversub_params[i], self->saved[i]);
	drm_fixture_teardown(_metadata, self->fd);
}

/* The device writes @len at @p 2 MiB at a time, PREFER_DEVICE; the bytes wrong after. */
static size_t write_4x(struct __test_metadata *_metadata, int fd, uint64_t *p, size_t len)
{
	size_t bad = 0;

	EXPECT_EQ(0, advise(fd, p, len, GMEM_ACCEL_PREFER_DEVICE, 0));
	for (size_t off = 0; off < len; off += HUGE) {
		EXPECT_EQ(0, dev_fill(fd, (uint8_t *)p + off, 0xa5a5000000000000ull | off, HUGE))
			TH_LOG("at %zu MiB", off >> 20);
	}
	for (size_t i = 0; i < len / 8; i++)
		if (p[i] != (0xa5a5000000000000ull | ((i * 8) & ~(HUGE - 1))))
			bad++;
	return bad;
}

/*
 * A working set 4x the HBM, written by the device 2 MiB at a time: once HBM is full, the
 * oldest allocation is evicted to make room; that finds HBM oversubscribed (what this burst
 * of use filled goes), and from then on a fault that finds no room maps the range where it
 * is. Every byte reads back as the device wrote it.
 */
TEST_F_TIMEOUT(devmem_4x, oversubscribed_4x_maps_remotely_ends_byte_exact, 1800)
{
	size_t len = 4 * self->hbm_size;
	uint64_t *p = (uint64_t *)map_2m(len);
	int64_t ev0 = stat_of("drm_evictions"), remote0 = stat_of("oversub_remote_maps");
	int64_t in0 = stat_of("drm_to_hbm");

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, gmem_param_set(OVERSUB, "enable", 1));
	EXPECT_EQ(0, write_4x(_metadata, self->fd, p, len));
	TH_LOG("%zu MiB over %lu MiB of HBM: %lld evictions, %lld ranges mapped remotely, %lld pages in",
	       len >> 20, (unsigned long)(self->hbm_size >> 20),
	       (long long)(stat_of("drm_evictions") - ev0),
	       (long long)(stat_of("oversub_remote_maps") - remote0),
	       (long long)(stat_of("drm_to_hbm") - in0));
	EXPECT_LT(ev0, stat_of("drm_evictions"));
	/* (each remote map is a range of HBM's worth not moved in: 3 of 4, less what raced) */
	EXPECT_LE(remote0 + (int64_t)(2 * self->hbm_size / HUGE), stat_of("oversub_remote_maps"));
	EXPECT_GE(self->hbm_size / PAGE, stat_of("drm_hbm_pages_now") - self->base[DRM_G_HBM]);
	munmap(p, len);
	closed_gives_back(_metadata, self);
}

/* The same with the policy off: every range moves in, the oldest evicted for it. */
TEST_F_TIMEOUT(devmem_4x, oversubscribed_4x_without_the_policy_evicts, 1800)
{
	size_t len = 4 * self->hbm_size;
	uint64_t *p = (uint64_t *)map_2m(len);
	int64_t ev0 = stat_of("drm_evictions"), remote0 = stat_of("oversub_remote_maps");

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, gmem_param_set(OVERSUB, "enable", 0));
	EXPECT_EQ(0, write_4x(_metadata, self->fd, p, len));
	TH_LOG("%zu MiB over %lu MiB of HBM: %lld evictions",
	       len >> 20, (unsigned long)(self->hbm_size >> 20),
	       (long long)(stat_of("drm_evictions") - ev0));
	EXPECT_LE(ev0 + (int64_t)(2 * self->hbm_size / HUGE), stat_of("drm_evictions"));
	EXPECT_EQ(remote0, stat_of("oversub_remote_maps"));
	EXPECT_GE(self->hbm_size / PAGE, stat_of("drm_hbm_pages_now") - self->base[DRM_G_HBM]);
	munmap(p, len);
	closed_gives_back(_metadata, self);
}

/* Close: the file's HBM pages go home with their bytes; the process still has them. */
TEST_F_TIMEOUT(devmem, close_brings_pages_home, 300)
{
	size_t len = 8ul << 20;
	uint8_t *p = map_2m(len);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, advise(self->fd, p, len, GMEM_ACCEL_PREFER_DEVICE, 0));
	ASSERT_EQ(0, dev_fill(self->fd, p, 0x3c3c3c3c3c3c3c3cull, len));
	EXPECT_EQ(len / PAGE, hbm_pages(self->fd, p, len));
	closed_gives_back(_metadata, self);
	EXPECT_EQ(-1, first_not(p, len, 0x3c));
	munmap(p, len);
}

static void migrate_forever(int fd, int ready, int round)
{
	size_t len = 64ul << 20;
	uint8_t *src = map_2m(len), *dst = map_2m(len);

	if (!src || !dst || advise(fd, src, len, GMEM_ACCEL_PREFER_DEVICE, 0) ||
	    advise(fd, dst, len, GMEM_ACCEL_PREFER_DEVICE, 0) || write(ready, "r", 1) != 1)
		_exit(1);
	for (unsigned int i = 0;; i++) {
		dev_copy(fd, dst, src, len);
		src[(i * PAGE * 97) % len] = i;	/* a CPU touch: home */
	}
}

static unsigned int later_each_round(int round)
{
	return 100000 * (round + 1);
}

/* A process killed while its ranges move in and out of HBM leaves nothing behind. */
TEST_F_TIMEOUT(devmem, killed_during_migration, 900)
{
	close(self->fd);
	self->fd = -1;
	drm_kill_rounds(_metadata, 4, migrate_forever, later_each_round);
	gauges_back(_metadata, self);
}

/* ADVISE's arguments are checked; the other front end's attributes are not offered here. */
TEST_F_TIMEOUT(devmem, advise_checks_its_arguments, 60)
{
	uint8_t *p = map_2m(HUGE);

	ASSERT_NE(NULL, p);
	EXPECT_EQ(-EINVAL, advise(self->fd, p + 1, PAGE, GMEM_ACCEL_PREFER_DEVICE, 0));
	EXPECT_EQ(-EINVAL, advise(self->fd, p, PAGE + 1, GMEM_ACCEL_PREFER_DEVICE, 0));
	EXPECT_EQ(-EINVAL, advise(self->fd, p, 0, GMEM_ACCEL_PREFER_DEVICE, 0));
	EXPECT_EQ(-EINVAL, advise(self->fd, p, PAGE, 7, 0));
	EXPECT_EQ(-EINVAL, advise(self->fd, p, PAGE, GMEM_ACCEL_PREFER_DEVICE, 1u << 30));
	EXPECT_EQ(-EINVAL, advise(self->fd, (void *)-PAGE, PAGE, GMEM_ACCEL_PREFER_DEVICE, 0));
	EXPECT_EQ(-EOPNOTSUPP, advise(self->fd, p, PAGE, GMEM_ACCEL_PREFER_DEVICE,
				      GMEM_ACCEL_ADVISE_ACCESSED_BY));
	EXPECT_EQ(0, advise(self->fd, p, HUGE, GMEM_ACCEL_PREFER_SYSTEM, 0));
	munmap(p, HUGE);
	closed_gives_back(_metadata, self);
}

struct toucher {
	const uint8_t *p, *ref;
	size_t len;
	bool backwards;
	volatile bool *go;
	size_t bad;
	volatile size_t done;	/* pages read */
};

/* The CPU reads one byte of each page (a fault home for a page in HBM), checking it. */
static void *touch_pages(void *arg)
{
	struct toucher *t = arg;
	size_t n = t->len / PAGE;

	while (!*t->go)
		;
	for (size_t k = 0; k < n; k++) {
		size_t i = (t->backwards ? n - 1 - k : k) * PAGE + k % PAGE;

		t->bad += t->p[i] != t->ref[i];
		t->done = k + 1;
	}
	return NULL;
}

/*
 * The device unbound while the CPU faults its pages home from HBM, from two threads: unbind
 * and the CPU's faults race to bring each page home, and every byte arrives. Bound again,
 * the device has no HBM page in use.
 */
TEST_F_TIMEOUT(devmem, unbind_races_cpu_faults_on_hbm, 900)
{
	size_t len = 128ul << 20;
	uint8_t *p = map_2m(len), *ref = malloc(len);
	volatile bool go = false;
	struct toucher t[2];
	pthread_t th[2];
	char addr[64];
	size_t at_unbind;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, ref);
	pattern(ref, len, 11);
	ASSERT_EQ(0, advise(self->fd, p, len, GMEM_ACCEL_PREFER_DEVICE, 0));
	ASSERT_EQ(0, dev_copy(self->fd, p, ref, len));
	ASSERT_EQ(len / PAGE, hbm_pages(self->fd, p, len));
	ASSERT_EQ(0, gmem_pci_addr(DEV, addr, sizeof(addr)));
	for (int i = 0; i < 2; i++) {
		t[i] = (struct toucher){ .p = p, .ref = ref, .len = len, .backwards = i,
					 .go = &go };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, touch_pages, &t[i]));
	}
	go = true;
	usleep(1000);
	at_unbind = t[0].done + t[1].done;
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/unbind", addr));
	TH_LOG("%zu, then %zu of %zu pages read by the CPU when unbind began and returned",
	       at_unbind, t[0].done + t[1].done, 2 * len / PAGE);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, t[i].bad) TH_LOG("thread %d", i);
	}
	EXPECT_EQ(0, memcmp(p, ref, len));
	EXPECT_EQ(0, close(self->fd));
	self->fd = -1;
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/bind", addr));
	EXPECT_EQ(0, gmem_wait_stat(DEV, "drm_hbm_pages_now", 0, 60000));
	EXPECT_EQ(0, gmem_wait_stat(DEV, "contexts_now", 0, 60000));
	EXPECT_EQ(0, memcmp(p, ref, len));
	free(ref);
	munmap(p, len);
}

TEST_HARNESS_MAIN
