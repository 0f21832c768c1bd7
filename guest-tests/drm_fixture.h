/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fixture the DRM accel front end's tests share (include after kselftest_harness.h):
 * device DRM_DEV given to the DRM front end for the test and back to gmem after it, the
 * device's leak gauges read before the test's file is opened and checked back at that
 * baseline, and a loop of processes killed while they use the device.
 */
#ifndef DRM_FIXTURE_H
#define DRM_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gmem_accel_drm_uapi.h"
#include "gmem_test_util.h"

#define DRM_DEV 1
#define DRM_NO_ACCEL "no DRM accel framework: the DRM front end needs Linux 7.3 with CONFIG_DRM_GPUSVM (images/kernel-7.3.config)"

/* What a context holds while it lives: each back at its baseline once the files are gone. */
static const char * const drm_gauges[] = { "contexts_now", "pt_pages_now",
					   "dma_mapped_pages_now", "notifiers_now",
					   "drm_hbm_pages_now" };
enum { DRM_G_CONTEXTS, DRM_G_PT, DRM_G_DMA, DRM_G_NOTIFIERS, DRM_G_HBM, DRM_NGAUGES };

/*
 * FIXTURE(@name): a file of DRM_DEV's accel node in self->fd, the gauges' baseline in
 * self->base, the device's HBM size in self->hbm_size. SKIPs where there is no DRM accel.
 */
#define DRM_FIXTURE(name)						\
	FIXTURE(name) {							\
		int fd;							\
		int64_t base[DRM_NGAUGES];				\
		uint64_t hbm_size;					\
	};								\
	FIXTURE_SETUP(name)						\
	{								\
		drm_fixture_setup(_metadata, &self->fd, self->base, &self->hbm_size); \
	}								\
	FIXTURE_TEARDOWN(name)						\
	{								\
		drm_fixture_teardown(_metadata, self->fd);		\
	}

static inline void drm_fixture_setup(struct __test_metadata *_metadata, int *fd, int64_t *base,
				     uint64_t *hbm_size)
{
	struct gmem_accel_info info = { 0 };

	*fd = -1;
	if (!path_exists("/sys/class/accel"))
		SKIP(return, DRM_NO_ACCEL);
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	ASSERT_EQ(0, gmem_set_frontend(DRM_DEV, "drm"));
	for (int i = 0; i < DRM_NGAUGES; i++) {
		ASSERT_EQ(0, gmem_debugfs_stat(DRM_DEV, drm_gauges[i], &base[i]))
			TH_LOG("%s", drm_gauges[i]);
	}
	*fd = gmem_open_accel(DRM_DEV, O_RDWR);
	ASSERT_LE(0, *fd) TH_LOG("device %d's accel node: %s", DRM_DEV, strerror(errno));
	ASSERT_EQ(0, ioctl(*fd, DRM_IOCTL_GMEM_ACCEL_GET_INFO, &info));
	*hbm_size = info.hbm_size;
}

static inline void drm_fixture_teardown(struct __test_metadata *_metadata, int fd)
{
	char addr[64];

	if (fd >= 0)
		close(fd);
	if (!path_exists("/sys/class/accel"))
		return;
	/* (a case that unbound the device may have left it so: bind what is not bound) */
	if (gmem_pci_addr(DRM_DEV, addr, sizeof(addr))) {
		char a[GMEM_MAX_TEST_DEVICES][32];
		int n = gmem_pci_devices(a, GMEM_MAX_TEST_DEVICES);

		for (int i = 0; i < n; i++)
			write_sysfs("/sys/bus/pci/drivers/gmem_accel/bind", a[i]);
	}
	EXPECT_EQ(0, gmem_set_frontend(DRM_DEV, "gmem"));
}

/* Every gauge of the device back at @base (the context's pages may still be going home). */
static inline void drm_gauges_back(struct __test_metadata *_metadata, const int64_t *base)
{
	for (int i = 0; i < DRM_NGAUGES; i++) {
		EXPECT_EQ(base[i], gmem_wait_stat(DRM_DEV, drm_gauges[i], base[i], 120000))
			TH_LOG("%s", drm_gauges[i]);
	}
}

/* The fixture's file closed: everything it held given back. */
#define closed_gives_back(_metadata, self) do {				\
		close((self)->fd);					\
		(self)->fd = -1;					\
		drm_gauges_back(_metadata, (self)->base);		\
	} while (0)
#define gauges_back(_metadata, self) drm_gauges_back(_metadata, (self)->base)

/*
 * @rounds processes, each with its own file of DRM_DEV, run @body(fd, ready, round) (which
 * never returns; it writes a byte to @ready once it is under way, or _exit()s non-zero) and
 * are killed @delay_us(round) after that byte: each must die of the kill.
 */
static inline void drm_kill_rounds(struct __test_metadata *_metadata, int rounds,
				   void (*body)(int fd, int ready, int round),
				   unsigned int (*delay_us)(int round))
{
	for (int round = 0; round < rounds; round++) {
		int pipefd[2], status;
		pid_t pid;
		char c;

		ASSERT_EQ(0, pipe(pipefd));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			int fd = gmem_open_accel(DRM_DEV, O_RDWR);

			if (fd < 0)
				_exit(1);
			body(fd, pipefd[1], round);
			_exit(1);
		}
		ASSERT_EQ(1, read(pipefd[0], &c, 1));
		usleep(delay_us(round));
		kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("round %d: status %#x", round, status);
		close(pipefd[0]);
		close(pipefd[1]);
	}
}

/* Helpers of the DRM front end's tests. */
#define DRM_PAGE 4096ul
#define DRM_HUGE (2ul << 20)

/* Device DRM_DEV's debugfs counter @name (INT64_MIN if unreadable). */
static inline int64_t stat_of(const char *name)
{
	int64_t v = INT64_MIN;

	gmem_debugfs_stat(DRM_DEV, name, &v);
	return v;
}

/* How many of the @len / 4 KiB pages from @addr the device maps in HBM; -errno. */
static inline long hbm_pages(int fd, void *addr, size_t len)
{
	size_t n = len / DRM_PAGE;
	uint8_t *out = malloc(n);
	struct gmem_accel_snapshot s = { .addr = (uintptr_t)addr, .npages = n,
					 .out = (uintptr_t)out };
	long hbm = 0;

	if (!out)
		return -ENOMEM;
	if (ioctl(fd, DRM_IOCTL_GMEM_ACCEL_SNAPSHOT, &s)) {
		free(out);
		return -errno;
	}
	for (size_t i = 0; i < n; i++)
		hbm += !!(out[i] & GMEM_ACCEL_PAGE_HBM);
	free(out);
	return hbm;
}

/* 2 MiB-aligned anonymous memory: whole drm_gpusvm ranges. */
static inline uint8_t *map_2m(size_t len)
{
	uint8_t *p = mmap(NULL, len + DRM_HUGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (uint8_t *)(((uintptr_t)p + DRM_HUGE - 1) & ~(DRM_HUGE - 1));
	if (a > p)
		munmap(p, a - p);
	munmap(a + len, p + DRM_HUGE - a);
	return a;
}

/* The offset of the first byte from @p that is not @v; -1 if none. */
static inline long first_not(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return i;
	return -1;
}

/* A new GEM object: its handle (0 on failure, errno set) and mmap offset. */
static inline uint32_t gem_create(int fd, uint64_t size, uint32_t flags, uint64_t *offset)
{
	struct gmem_accel_obj_alloc a = { .size = size, .flags = flags };

	if (ioctl(fd, DRM_IOCTL_GMEM_ACCEL_GEM_CREATE, &a))
		return 0;
	if (offset)
		*offset = a.mmap_offset;
	return a.handle;
}

static inline int gem_close(int fd, uint32_t handle)
{
	struct drm_gem_close c = { .handle = handle };

	return ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c) ? -errno : 0;
}

/* GEM object @handle of @fd mapped read-write, shared, at its offset; NULL (errno) if not. */
static inline uint8_t *gem_map(int fd, uint32_t handle, size_t len)
{
	struct drm_gmem_accel_gem_mmap_offset mo = { .handle = handle };
	void *p;

	if (ioctl(fd, DRM_IOCTL_GMEM_ACCEL_GEM_MMAP_OFFSET, &mo))
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, mo.offset);
	return p == MAP_FAILED ? NULL : p;
}

/* MADVISE of one attribute (@type, @value) of [addr, addr + len); 0 or -errno. */
static inline int madvise_attr(int fd, void *addr, size_t len, unsigned int type,
			       unsigned int value)
{
	struct gmem_accel_drm_madvise m = { .addr = (uintptr_t)addr, .size = len, .type = type,
					    .value = value };

	return ioctl(fd, DRM_IOCTL_GMEM_ACCEL_MADVISE, &m) ? -errno : 0;
}

/* SUBMIT of one command with @flags; the fence (as the call left it) to *@fence. 0 or -errno. */
static inline int submit1(int fd, struct gmem_accel_cmd *c, unsigned int flags, uint64_t *fence)
{
	struct gmem_accel_submit s = { .cmds = (uintptr_t)c, .count = 1, .flags = flags };
	int ret = ioctl(fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s) ? -errno : 0;

	if (fence)
		*fence = s.fence;
	return ret;
}

/* WAIT for batch @fence (up to two minutes); 0 or -errno (the batch's, or the wait's). */
static inline int wait_fence(int fd, uint64_t fence)
{
	struct gmem_accel_wait w = { .fence = fence, .timeout_ms = 120000 };

	return ioctl(fd, DRM_IOCTL_GMEM_ACCEL_WAIT, &w) ? -errno : 0;
}

#endif
