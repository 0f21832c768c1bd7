// SPDX-License-Identifier: GPL-2.0
/*
 * Two devices of the DRM accel front end on one buffer (Linux 7.3): drm_pagemap peers.
 * Device A (0) and device B (1) share one pagemap owner, so a range in A's HBM is served
 * to B as the placement advice says: without advice B maps A's HBM where it is, peer to peer
 * (A's drm_peer_maps_now counts the pages B maps, SNAPSHOT on B shows system memory, A keeps
 * its pages); with PREFER_DEVICE on B the range moves from A's HBM straight into B's (A's
 * DMA engine copies into B's BAR2: A's drm_to_peer, never drm_to_ram). Every byte either
 * device or the CPU reads is checked. A unbound while B maps its pages: B's commands succeed
 * on the pages gone home or fail EFAULT, nothing is lost. Parent and child after fork()
 * writing A's HBM pages through B at once each see their own bytes only. A killed process
 * leaves nothing.
 * Every leak gauge of both devices comes back to where it was.
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

#define PAGE 4096ul
#define HUGE (2ul << 20)
#define LEN (4ul << 20)
#define A 0
#define B 1
#define RW (PROT_READ | PROT_WRITE)

static const char * const gauges[] = { "contexts_now", "drm_hbm_pages_now", "pt_pages_now",
					"dma_mapped_pages_now", "drm_peer_maps_now" };
#define NGAUGES 5

FIXTURE(peers) {
	int fd[2];
	int64_t base[2][NGAUGES];
	bool set[2];
};

/* Device @n bound again if an unbind left it so (its frontend parameter unchanged). */
static void bind_again(int n)
{
	char addr[64], path[128];

	snprintf(path, sizeof(path), "/sys/class/gmem_accel/gmem_accel%d", n);
	if (path_exists(path) || gmem_pci_addr(n, addr, sizeof(addr)))
		return;
	write_sysfs("/sys/bus/pci/drivers/gmem_accel/bind", addr);
}

FIXTURE_SETUP(peers)
{
	self->fd[A] = self->fd[B] = -1;
	if (!path_exists("/sys/class/accel"))
		SKIP(return, "no DRM accel framework: the DRM front end needs Linux 7.3 with CONFIG_DRM_GPUSVM (images/kernel-7.3.config)");
	if (!path_exists("/sys/class/gmem_accel/gmem_accel1"))
		SKIP(return, "two gmem-accel devices needed");
	for (int d = A; d <= B; d++) {
		ASSERT_EQ(0, gmem_set_frontend(d, "drm")) TH_LOG("device %d", d);
		self->set[d] = true;
	}
	for (int d = A; d <= B; d++) {
		for (int i = 0; i < NGAUGES; i++) {
			ASSERT_EQ(0, gmem_debugfs_stat(d, gauges[i], &self->base[d][i]))
				TH_LOG("device %d: %s", d, gauges[i]);
		}
		self->fd[d] = gmem_open_accel(d, O_RDWR);
		ASSERT_LE(0, self->fd[d]) TH_LOG("device %d's accel node: %s", d, strerror(errno));
	}
}

FIXTURE_TEARDOWN(peers)
{
	for (int d = B; d >= A; d--) {
		if (self->fd[d] >= 0)
			close(self->fd[d]);
		if (self->set[d]) {
			bind_again(d);
			EXPECT_EQ(0, gmem_set_frontend(d, "gmem")) TH_LOG("device %d", d);
		}
	}
}

static int64_t stat_of(int d, const char *name)
{
	int64_t v = INT64_MIN;

	gmem_debugfs_stat(d, name, &v);
	return v;
}

static int advise(int fd, void *addr, size_t len, unsigned int location)
{
	struct gmem_accel_advise a = { .addr = (uintptr_t)addr, .size = len,
				       .location = location };

	return ioctl(fd, DRM_IOCTL_GMEM_ACCEL_ADVISE, &a) ? -errno : 0;
}

/* How many of the @len / PAGE pages from @addr fd's device maps: in its HBM (@hbm) or not. */
static long mapped_pages(int fd, void *addr, size_t len, bool hbm)
{
	size_t n = len / PAGE;
	uint8_t *out = malloc(n);
	struct gmem_accel_snapshot s = { .addr = (uintptr_t)addr, .npages = n,
					 .out = (uintptr_t)out };
	long count = 0;

	if (!out)
		return -ENOMEM;
	if (ioctl(fd, DRM_IOCTL_GMEM_ACCEL_SNAPSHOT, &s)) {
		free(out);
		return -errno;
	}
	for (size_t i = 0; i < n; i++)
		count += (out[i] & GMEM_ACCEL_PAGE_READ) &&
			 !!(out[i] & GMEM_ACCEL_PAGE_HBM) == hbm;
	free(out);
	return count;
}

/* 2 MiB-aligned anonymous memory: whole drm_gpusvm ranges. */
static uint8_t *map_aligned(size_t len)
{
	uint8_t *p = mmap(NULL, len + HUGE, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (uint8_t *)(((uintptr_t)p + HUGE - 1) & ~(HUGE - 1));
	if (a > p)
		munmap(p, a - p);
	munmap(a + len, p + HUGE - a);
	return a;
}

/* The offset of the first byte from @p that is not @v; -1 if none. */
static long first_not(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return i;
	return -1;
}

/* @buf written by device A into A's HBM (PREFER_DEVICE on A), every byte @v. */
static void in_a_hbm(struct __test_metadata *_metadata, FIXTURE_DATA(peers) *self,
		     uint8_t *buf, uint8_t v)
{
	ASSERT_EQ(0, advise(self->fd[A], buf, LEN, GMEM_ACCEL_PREFER_DEVICE));
	ASSERT_EQ(0, dev_fill(self->fd[A], buf, 0x0101010101010101ull * v, LEN));
	ASSERT_EQ(LEN / PAGE, mapped_pages(self->fd[A], buf, LEN, true));
}

/* Both files closed: every gauge of both devices back where it was. */
static void gauges_back(struct __test_metadata *_metadata, FIXTURE_DATA(peers) *self)
{
	for (int d = A; d <= B; d++) {
		if (self->fd[d] >= 0)
			close(self->fd[d]);
		self->fd[d] = -1;
	}
	for (int d = A; d <= B; d++) {
		for (int i = 0; i < NGAUGES; i++) {
			EXPECT_EQ(self->base[d][i],
				  gmem_wait_stat(d, gauges[i], self->base[d][i], 120000))
				TH_LOG("device %d: %s", d, gauges[i]);
		}
	}
}

/*
 * Device-to-device access: without advice, B reads and writes the range where it is, in A's
 * HBM, peer to peer; A sees B's write; the CPU reads it back home.
 */
TEST_F_TIMEOUT(peers, b_maps_a_hbm_peer_to_peer, 600)
{
	uint8_t *buf = map_aligned(LEN), *dst = map_aligned(LEN);
	int64_t maps0 = stat_of(A, "drm_peer_maps"), out0;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, dst);
	memset(dst, 0, LEN);
	in_a_hbm(_metadata, self, buf, 0x11);
	out0 = stat_of(A, "drm_to_ram");
	/* B reads: it maps A's pages through A's BAR2, as system memory; nothing moves */
	ASSERT_EQ(0, dev_copy(self->fd[B], dst, buf, LEN));
	EXPECT_EQ(-1, first_not(dst, LEN, 0x11));
	EXPECT_EQ(LEN / PAGE, mapped_pages(self->fd[B], buf, LEN, false));
	EXPECT_EQ(0, mapped_pages(self->fd[B], buf, LEN, true));
	EXPECT_EQ(LEN / PAGE, mapped_pages(self->fd[A], buf, LEN, true));
	EXPECT_LE(maps0 + (int64_t)(LEN / PAGE), stat_of(A, "drm_peer_maps"));
	EXPECT_EQ(self->base[A][4] + (int64_t)(LEN / PAGE), stat_of(A, "drm_peer_maps_now"));
	EXPECT_EQ(self->base[A][1] + (int64_t)(LEN / PAGE), stat_of(A, "drm_hbm_pages_now"));
	EXPECT_EQ(self->base[B][1], stat_of(B, "drm_hbm_pages_now"));
	EXPECT_EQ(out0, stat_of(A, "drm_to_ram"));
	/* B writes A's HBM; A, still mapping its own HBM, reads what B wrote */
	ASSERT_EQ(0, dev_fill(self->fd[B], buf, 0x2222222222222222ull, LEN));
	EXPECT_EQ(LEN / PAGE, mapped_pages(self->fd[A], buf, LEN, true));
	ASSERT_EQ(0, dev_copy(self->fd[A], dst, buf, LEN));
	EXPECT_EQ(-1, first_not(dst, LEN, 0x22));
	EXPECT_EQ(out0, stat_of(A, "drm_to_ram"));
	/* the CPU reads it: home, and neither device maps A's HBM any more */
	EXPECT_EQ(-1, first_not(buf, LEN, 0x22));
	EXPECT_EQ(0, mapped_pages(self->fd[A], buf, LEN, true));
	EXPECT_EQ(self->base[A][4], gmem_wait_stat(A, "drm_peer_maps_now", self->base[A][4],
						   60000));
	EXPECT_EQ(self->base[A][1], gmem_wait_stat(A, "drm_hbm_pages_now", self->base[A][1],
						   60000));
	munmap(buf, LEN);
	munmap(dst, LEN);
	gauges_back(_metadata, self);
}

/*
 * Source-peer migration: PREFER_DEVICE on B moves the range from A's HBM straight into B's,
 * copied by A's DMA engine into B's BAR2 (never through system memory); then A, without
 * advice, maps it in B's HBM peer to peer.
 */
TEST_F_TIMEOUT(peers, migrates_a_to_b_source_peer, 600)
{
	uint8_t *buf = map_aligned(LEN), *dst = map_aligned(LEN);
	int64_t out0, peer0 = stat_of(A, "drm_to_peer"), in0 = stat_of(B, "drm_to_hbm");

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, dst);
	memset(dst, 0, LEN);
	in_a_hbm(_metadata, self, buf, 0x33);
	out0 = stat_of(A, "drm_to_ram");
	ASSERT_EQ(0, advise(self->fd[B], buf, LEN, GMEM_ACCEL_PREFER_DEVICE));
	ASSERT_EQ(0, dev_copy(self->fd[B], dst, buf, LEN));
	EXPECT_EQ(-1, first_not(dst, LEN, 0x33));
	EXPECT_EQ(LEN / PAGE, mapped_pages(self->fd[B], buf, LEN, true));
	EXPECT_EQ(0, mapped_pages(self->fd[A], buf, LEN, true));
	EXPECT_EQ(peer0 + (int64_t)(LEN / PAGE), stat_of(A, "drm_to_peer"));
	EXPECT_EQ(out0, stat_of(A, "drm_to_ram"));
	EXPECT_EQ(in0, stat_of(B, "drm_to_hbm"));
	EXPECT_EQ(self->base[A][1], gmem_wait_stat(A, "drm_hbm_pages_now", self->base[A][1],
						   60000));
	EXPECT_EQ(self->base[B][1] + (int64_t)(LEN / PAGE), stat_of(B, "drm_hbm_pages_now"));
	TH_LOG("A -> B: %lld pages peer to peer, %lld through system memory",
	       (long long)(stat_of(A, "drm_to_peer") - peer0),
	       (long long)(stat_of(A, "drm_to_ram") - out0));
	/* A without advice now: it maps the range in B's HBM, and writes it there */
	ASSERT_EQ(0, advise(self->fd[A], buf, LEN, GMEM_ACCEL_PREFER_NONE));
	ASSERT_EQ(0, dev_fill(self->fd[A], buf, 0x4444444444444444ull, LEN));
	EXPECT_EQ(LEN / PAGE, mapped_pages(self->fd[A], buf, LEN, false));
	EXPECT_EQ(self->base[B][4] + (int64_t)(LEN / PAGE), stat_of(B, "drm_peer_maps_now"));
	EXPECT_EQ(LEN / PAGE, mapped_pages(self->fd[B], buf, LEN, true));
	/* the CPU reads A's write, home from B's HBM */
	EXPECT_EQ(-1, first_not(buf, LEN, 0x44));
	munmap(buf, LEN);
	munmap(dst, LEN);
	gauges_back(_metadata, self);
}

struct reader {
	int fd;
	uint8_t *buf, *dst;
	int stop, started;		/* (atomic) */
	int ok, efault, other, bad;
};

/* B reads the buffer over and over: each read succeeds with every byte right, or EFAULT. */
static void *read_loop(void *arg)
{
	struct reader *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		int ret;

		memset(r->dst, 0, LEN);
		ret = dev_copy(r->fd, r->dst, r->buf, LEN);
		__atomic_store_n(&r->started, 1, __ATOMIC_RELEASE);
		if (!ret) {
			r->ok++;
			r->bad += first_not(r->dst, LEN, 0x55) >= 0;
		} else if (ret == -EFAULT || ret == -ENODEV) {
			r->efault++;
		} else {
			r->other++;
		}
	}
	return NULL;
}

/*
 * A unbound while B maps (and keeps reading) A's HBM pages: A's pages go home, B's reads
 * succeed with the right bytes or fail EFAULT, and then succeed from system memory; the
 * CPU has every byte.
 */
TEST_F_TIMEOUT(peers, unbind_a_while_b_maps_its_pages, 900)
{
	uint8_t *buf = map_aligned(LEN), *dst = map_aligned(LEN), *dst2 = map_aligned(LEN);
	struct reader r = { .fd = self->fd[B], .buf = buf, .dst = dst };
	struct gmem_accel_info info = { 0 };
	char addr[64];
	pthread_t t;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, dst);
	ASSERT_NE(NULL, dst2);
	in_a_hbm(_metadata, self, buf, 0x55);
	ASSERT_EQ(0, dev_copy(self->fd[B], dst, buf, LEN));
	EXPECT_EQ(-1, first_not(dst, LEN, 0x55));
	EXPECT_EQ(self->base[A][4] + (int64_t)(LEN / PAGE), stat_of(A, "drm_peer_maps_now"));
	ASSERT_EQ(0, pthread_create(&t, NULL, read_loop, &r));
	while (!__atomic_load_n(&r.started, __ATOMIC_ACQUIRE))
		usleep(1000);
	ASSERT_EQ(0, gmem_pci_addr(A, addr, sizeof(addr)));
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/unbind", addr));
	usleep(200000);
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	TH_LOG("B's reads across A's unbind: %d right, %d EFAULT/ENODEV, %d other, %d wrong",
	       r.ok, r.efault, r.other, r.bad);
	EXPECT_EQ(0, r.other);
	EXPECT_EQ(0, r.bad);
	EXPECT_EQ(-1, ioctl(self->fd[A], DRM_IOCTL_GMEM_ACCEL_GET_INFO, &info));
	EXPECT_EQ(ENODEV, errno);
	/* B reads it from system memory now, and the CPU has every byte */
	memset(dst2, 0, LEN);
	ASSERT_EQ(0, dev_copy(self->fd[B], dst2, buf, LEN));
	EXPECT_EQ(-1, first_not(dst2, LEN, 0x55));
	/* (not asserted: A's pages still settling after its unbind may unmap them again) */
	TH_LOG("B maps %ld of %lu pages in system memory after its copy",
	       mapped_pages(self->fd[B], buf, LEN, false), LEN / PAGE);
	EXPECT_EQ(0, mapped_pages(self->fd[B], buf, LEN, true));
	EXPECT_EQ(-1, first_not(buf, LEN, 0x55));
	close(self->fd[A]);
	self->fd[A] = -1;
	ASSERT_EQ(0, write_sysfs("/sys/module/gmem_accel/parameters/frontend", "drm,drm"));
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/bind", addr));
	ASSERT_TRUE(path_exists("/sys/class/gmem_accel/gmem_accel0/device/accel"));
	/* bound again: A's gauges start from nothing */
	for (int i = 0; i < NGAUGES; i++)
		self->base[A][i] = 0;
	munmap(buf, LEN);
	munmap(dst, LEN);
	munmap(dst2, LEN);
	gauges_back(_metadata, self);
}

/* Processes killed while both devices share their buffer (maps, moves both ways). */
TEST_F_TIMEOUT(peers, killed_while_sharing, 900)
{
	for (int d = A; d <= B; d++) {
		close(self->fd[d]);
		self->fd[d] = -1;
	}
	for (int round = 0; round < 4; round++) {
		int pipefd[2], status;
		pid_t pid;
		char c;

		ASSERT_EQ(0, pipe(pipefd));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			size_t len = 32ul << 20;
			int fa = gmem_open_accel(A, O_RDWR), fb = gmem_open_accel(B, O_RDWR);
			uint8_t *p = map_aligned(len), *q = map_aligned(len);

			if (fa < 0 || fb < 0 || !p || !q ||
			    advise(fa, p, len, GMEM_ACCEL_PREFER_DEVICE) ||
			    write(pipefd[1], "r", 1) != 1)
				_exit(1);
			for (unsigned int i = 0;; i++) {
				dev_fill(fa, p, i, len);		/* into A's HBM */
				dev_copy(fb, q, p, len);		/* B maps it there */
				advise(fb, p, len, (i & 1) ? GMEM_ACCEL_PREFER_DEVICE :
							     GMEM_ACCEL_PREFER_NONE);
				dev_copy(fb, p, q, len);		/* and moves it in */
				p[(i * PAGE * 97) % len] = i;		/* a CPU touch: home */
			}
		}
		ASSERT_EQ(1, read(pipefd[0], &c, 1));
		usleep(150000 * (round + 1));
		kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status));
		close(pipefd[0]);
		close(pipefd[1]);
	}
	gauges_back(_metadata, self);
}

/*
 * A's HBM pages shared after fork(): parent and child have device B write their copies at
 * the same time, B mapping the pages where they are (no advice on B). Each process reads
 * only its own bytes: B's write breaks the COW, as the CPU's does, and never reaches A's
 * page the other process maps.
 */
TEST_F_TIMEOUT(peers, fork_parent_and_child_write_through_b_at_once, 600)
{
	uint8_t *buf = map_aligned(LEN);
	int go[2], status;
	long bad = -1;
	pid_t pid;
	char c;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, pipe(go));
	in_a_hbm(_metadata, self, buf, 0xa0);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = gmem_open_accel(B, O_RDWR);

		if (fd < 0 || read(go[0], &c, 1) != 1)
			_exit(1);
		for (int r = 0; r < 4; r++) {
			if (dev_fill(fd, buf, 0x0101010101010101ull * (0xc0 + r), LEN))
				_exit(2);
			bad = first_not(buf, LEN, 0xc0 + r);
			if (bad != -1) {
				printf("# child, round %d: byte %ld is %#x\n", r, bad, buf[bad]);
				fflush(stdout);
				_exit(3);
			}
		}
		_exit(0);
	}
	ASSERT_EQ(1, write(go[1], "g", 1));
	for (int r = 0; r < 4 && bad == -1; r++) {
		ASSERT_EQ(0, dev_fill(self->fd[B], buf, 0x0101010101010101ull * (0xb0 + r), LEN));
		bad = first_not(buf, LEN, 0xb0 + r);
		if (bad != -1)
			TH_LOG("parent, round %d: byte %ld is %#x", r, bad, buf[bad]);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(go[0]);
	close(go[1]);
	EXPECT_EQ(-1, bad);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child status %#x", status);
	munmap(buf, LEN);
	gauges_back(_metadata, self);
}

TEST_HARNESS_MAIN
