// SPDX-License-Identifier: GPL-2.0
/*
 * libgmem on the DRM accel front end (Linux 7.3): device 1 given to DRM, GMEM_BACKEND
 * choosing which devices the library sees; allocations (GEM objects), work on streams,
 * events, prefetch into HBM through drm_gpusvm, IPC over PRIME, and a clear
 * gmemErrorNotSupported for what the front end lacks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define M2 (2ul << 20)
#define DEV 1

FIXTURE(libdrm) {
	gmemDevice_t dev;
	gmemStream_t s;
	int64_t objs0;
};

FIXTURE_SETUP(libdrm)
{
	self->dev = NULL;
	self->s = NULL;
	if (!path_exists("/sys/class/accel"))
		SKIP(return, "no DRM accel framework: the DRM front end needs Linux 7.3 with CONFIG_DRM_GPUSVM (images/kernel-7.3.config)");
	ASSERT_EQ(0, gmem_set_frontend(DEV, "drm"));
	ASSERT_EQ(0, gmem_debugfs_stat(DEV, "objects_now", &self->objs0));
	setenv("GMEM_BACKEND", "drm", 1);
	ASSERT_EQ(gmemSuccess, gmemDeviceOpen(&self->dev, 0));
	ASSERT_EQ(gmemSuccess, gmemStreamCreate(&self->s, self->dev));
}

FIXTURE_TEARDOWN(libdrm)
{
	if (self->s)
		EXPECT_EQ(gmemSuccess, gmemStreamDestroy(self->s));
	if (self->dev)
		EXPECT_EQ(gmemSuccess, gmemDeviceClose(self->dev));
	unsetenv("GMEM_BACKEND");
	if (path_exists("/sys/class/accel"))
		EXPECT_EQ(0, gmem_set_frontend(DEV, "gmem"));
}

/* GMEM_BACKEND: which devices the library numbers; a bad value is an error, not a guess. */
TEST_F_TIMEOUT(libdrm, backend_switch, 120)
{
	struct gmemDeviceProp prop;
	int all, gmem, drm;
	gmemDevice_t d;

	ASSERT_EQ(gmemSuccess, gmemGetDeviceCount(&drm));
	EXPECT_EQ(1, drm);
	ASSERT_EQ(gmemSuccess, gmemGetDeviceProperties(&prop, 0));
	EXPECT_EQ(DEV, prop.minor);
	EXPECT_LT(0, prop.hbmBytes);
	setenv("GMEM_BACKEND", "gmem", 1);
	ASSERT_EQ(gmemSuccess, gmemGetDeviceCount(&gmem));
	setenv("GMEM_BACKEND", "auto", 1);
	ASSERT_EQ(gmemSuccess, gmemGetDeviceCount(&all));
	EXPECT_EQ(all, gmem + drm);
	EXPECT_EQ(gmem_expect("devices", all), all);
	setenv("GMEM_BACKEND", "cuda", 1);
	EXPECT_EQ(gmemErrorInvalidValue, gmemGetDeviceCount(&all));
	EXPECT_EQ(gmemErrorInvalidValue, gmemDeviceOpen(&d, 0));
	EXPECT_EQ(gmemErrorInvalidValue, gmemGetDeviceProperties(&prop, 0));
	setenv("GMEM_BACKEND", "drm", 1);
	EXPECT_EQ(gmemErrorNoDevice, gmemDeviceOpen(&d, 1));
}

/* A GEM object: CPU and device on one pointer; what the front end lacks says so. */
TEST_F_TIMEOUT(libdrm, allocations, 300)
{
	struct gmemPointerAttributes attr;
	size_t len = 3 * M2 + 5 * PAGE;
	uint8_t *p, *q, *p2;
	int64_t objs;

	ASSERT_EQ(gmemSuccess, gmemMalloc(self->dev, (void **)&p, len, 0));
	ASSERT_EQ(0, gmem_debugfs_stat(DEV, "objects_now", &objs));
	EXPECT_EQ(self->objs0 + 1, objs);
	ASSERT_EQ(gmemSuccess, gmemPointerGetAttributes(&attr, p + 100));
	EXPECT_EQ(p, attr.base);
	EXPECT_EQ(gmemPlacementDevice, attr.placement);	/* HBM while it has room */
	EXPECT_EQ(M2, attr.pageSize);
	memset(p, 0x33, len);
	ASSERT_EQ(gmemSuccess, gmemMemsetAsync(p + PAGE, 0x44, 2 * PAGE, self->s));
	ASSERT_EQ(gmemSuccess, gmemStreamSynchronize(self->s));
	EXPECT_EQ(0x33, p[PAGE - 1]);
	EXPECT_EQ(0x44, p[PAGE]);
	EXPECT_EQ(0x44, p[3 * PAGE - 1]);
	EXPECT_EQ(0x33, p[3 * PAGE]);
	ASSERT_EQ(gmemSuccess, gmemMalloc(self->dev, (void **)&q, PAGE, gmemMemPlaceHost));
	ASSERT_EQ(gmemSuccess, gmemMemcpy(q, p + PAGE, PAGE, self->s));
	EXPECT_EQ(0x44, q[PAGE - 1]);

	ASSERT_EQ(gmemSuccess, gmemPointerGetAttributes(&attr, q));
	EXPECT_EQ(gmemPlacementHost, attr.placement);
	EXPECT_EQ(gmemSuccess, gmemFree(q));
	ASSERT_EQ(gmemSuccess, gmemMalloc(self->dev, (void **)&q, PAGE, gmemMemPlaceDevice));
	ASSERT_EQ(gmemSuccess, gmemPointerGetAttributes(&attr, q));
	EXPECT_EQ(gmemPlacementDevice, attr.placement);
	EXPECT_NE(~0ull, attr.hbmAddr);
	EXPECT_EQ(gmemErrorNotSupported, gmemMallocManaged(self->dev, (void **)&p2, PAGE, 0));
	EXPECT_EQ(NULL, p2);
	EXPECT_EQ(gmemErrorNotSupported, gmemMemAdvise(p, PAGE, gmemMemAdviseSetReadMostly,
						       self->dev));
	EXPECT_EQ(gmemSuccess, gmemFree(p));
	EXPECT_EQ(gmemSuccess, gmemFree(q));
	EXPECT_EQ(self->objs0, gmem_wait_stat(DEV, "objects_now", self->objs0, 60000));
}

/* Prefetch moves malloc'd memory into HBM (drm_pagemap) and home; events order two streams. */
TEST_F_TIMEOUT(libdrm, prefetch_and_events, 300)
{
	size_t len = 2 * M2;
	uint8_t *buf = aligned_alloc(M2, len), *out = aligned_alloc(M2, len);
	int64_t pages0, pages;
	gmemStream_t s2;
	gmemEvent_t ev;

	ASSERT_TRUE(buf && out);
	ASSERT_EQ(0, gmem_debugfs_stat(DEV, "drm_hbm_pages_now", &pages0));
	memset(buf, 0x77, len);
	ASSERT_EQ(gmemSuccess, gmemMemPrefetchAsync(buf, len, self->dev, self->s));
	ASSERT_EQ(0, gmem_debugfs_stat(DEV, "drm_hbm_pages_now", &pages));
	EXPECT_LE(pages0 + (int64_t)(len / PAGE), pages);
	ASSERT_EQ(gmemSuccess, gmemEventCreate(&ev));
	ASSERT_EQ(gmemSuccess, gmemStreamCreate(&s2, self->dev));
	ASSERT_EQ(gmemSuccess, gmemMemsetAsync(buf, 0x12, len, self->s));
	ASSERT_EQ(gmemSuccess, gmemEventRecord(ev, self->s));
	ASSERT_EQ(gmemSuccess, gmemStreamWaitEvent(s2, ev));
	ASSERT_EQ(gmemSuccess, gmemMemcpyAsync(out, buf, len, s2));
	ASSERT_EQ(gmemSuccess, gmemStreamSynchronize(s2));
	EXPECT_EQ(0x12, out[0]);
	EXPECT_EQ(0x12, out[len - 1]);
	ASSERT_EQ(gmemSuccess, gmemMemPrefetchAsync(buf, len, NULL, self->s));
	EXPECT_EQ(0x12, buf[len / 2]);
	EXPECT_EQ(gmemErrorIllegalAddress, gmemMemPrefetchAsync((void *)4096, PAGE, self->dev,
								self->s));
	EXPECT_EQ(gmemSuccess, gmemEventDestroy(ev));
	EXPECT_EQ(gmemSuccess, gmemStreamDestroy(s2));
	free(buf);
	free(out);
}

/* An allocation shared with a child over PRIME: each sees the other's bytes. */
TEST_F_TIMEOUT(libdrm, ipc_between_processes, 300)
{
	gmemIpcMemHandle_t h;
	size_t len = 64 * 1024;
	uint8_t *p;
	pid_t pid;
	int st;

	ASSERT_EQ(gmemSuccess, gmemMalloc(self->dev, (void **)&p, len, 0));
	memset(p, 0x21, len);
	ASSERT_EQ(gmemSuccess, gmemIpcGetMemHandle(&h, p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		gmemDevice_t d;
		gmemStream_t s;
		uint8_t *c;

		if (gmemDeviceOpen(&d, 0) || gmemStreamCreate(&s, d) ||
		    gmemIpcOpenMemHandle(d, (void **)&c, h))
			_exit(10);
		if (c[0] != 0x21 || c[len - 1] != 0x21)
			_exit(11);
		if (gmemMemset(c, 0x5e, PAGE, s))
			_exit(12);
		_exit(gmemIpcCloseMemHandle(c) ? 13 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("child status %#x", st);
	EXPECT_EQ(0x5e, p[PAGE - 1]);
	EXPECT_EQ(0x21, p[PAGE]);
	EXPECT_EQ(gmemSuccess, gmemIpcCloseMemHandleFd(&h));
	EXPECT_EQ(gmemSuccess, gmemFree(p));
	EXPECT_EQ(self->objs0, gmem_wait_stat(DEV, "objects_now", self->objs0, 60000));
}

TEST_HARNESS_MAIN
