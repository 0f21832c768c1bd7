// SPDX-License-Identifier: GPL-2.0
/*
 * The suite's tests on the DRM accel front end (drm_svm_suite.sh): with GMEM_FRONTEND=drm in
 * the environment, gmem_open() opens a device's /dev/accel node where the device is DRM's, and
 * every ioctl() a test makes (the tests are linked with --wrap=ioctl) goes to a DRM file as its
 * DRM counterpart: the calls the helpers make by their DRM number (gmem_ioc()), the others by
 * the table below. Every /dev/gmem_accelN call has one; a number that is none of them goes as
 * it is, and drm_ioctl() answers ENOTTY; the adapter names it on stdout (GMEM_ADAPTER_NO_DRM),
 * so that the script reports the case as a SKIP for a call the front end has not, never as a
 * pass. Where a call's meaning differs between the front ends (docs/uapi.md), the cases that
 * depend on it are in drm_svm_suite.sh's table.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>

#include "gmem_accel_drm_uapi.h"
#include "gmem_test_util.h"

int __real_ioctl(int fd, unsigned long req, ...);

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

/*
 * MIGRATE as PREFETCH, which moves the range the same way but counts nothing (pages 0 in and
 * out): the pages that moved are those the context's STATS counted as moved meanwhile, on
 * failure too, as MIGRATE gives the pages moved before the failure. (PREFETCH TO_SYSTEM
 * brings whole drm_gpusvm ranges home: their pages count.)
 */
static int adapter_migrate(int fd, unsigned long req, void *arg)
{
	struct gmem_accel_stats before = { 0 }, after = { 0 };
	struct gmem_accel_migrate *m = arg, p;
	int ret, err;

	if (!m)
		return __real_ioctl(fd, req, m);
	p = *m;
	p.pages = 0;
	__real_ioctl(fd, DRM_IOCTL_GMEM_ACCEL_STATS, &before);
	ret = __real_ioctl(fd, req, &p);
	err = errno;
	__real_ioctl(fd, DRM_IOCTL_GMEM_ACCEL_STATS, &after);
	m->pages = p.target == GMEM_ACCEL_TO_DEVICE ?
		   after.migrated_to_device - before.migrated_to_device :
		   after.migrated_to_system - before.migrated_to_system;
	errno = err;
	return ret;
}

/* OBJ_IMPORT as PRIME's FD_TO_HANDLE, then the handle's mmap offset (GEM_MMAP_OFFSET). */
static int adapter_import(int fd, unsigned long req, void *arg)
{
	struct gmem_accel_obj_import *im = arg;
	struct drm_gmem_accel_gem_mmap_offset mo = { 0 };
	struct drm_prime_handle ph = { 0 };

	if (!im)
		return __real_ioctl(fd, req, im);
	if (im->flags || im->pad) {
		errno = EINVAL;
		return -1;
	}
	ph.fd = im->fd;
	if (__real_ioctl(fd, req, &ph))
		return -1;
	mo.handle = ph.handle;
	if (__real_ioctl(fd, DRM_IOCTL_GMEM_ACCEL_GEM_MMAP_OFFSET, &mo)) {
		struct drm_gem_close c = { .handle = ph.handle };
		int err = errno;

		__real_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c);
		errno = err;
		return -1;
	}
	im->handle = ph.handle;
	im->mmap_offset = mo.offset;
	return 0;
}

/*
 * The calls with a DRM counterpart of the same meaning beyond those the helpers make by DRM
 * number (gmem_ioc()): @call NULL where the DRM call takes the same structure (GEM_CLOSE's
 * and PRIME HANDLE_TO_FD's begin as OBJ_FREE's and OBJ_EXPORT's do, O_CLOEXEC alike), else
 * how it is made of DRM calls.
 */
static const struct {
	unsigned long own, drm;
	int (*call)(int fd, unsigned long drm, void *arg);
} adapter_calls[] = {
	{ GMEM_ACCEL_IOC_MIGRATE, DRM_IOCTL_GMEM_ACCEL_PREFETCH, adapter_migrate },
	{ GMEM_ACCEL_IOC_OBJ_ALLOC, DRM_IOCTL_GMEM_ACCEL_GEM_CREATE, NULL },
	{ GMEM_ACCEL_IOC_OBJ_QUERY, DRM_IOCTL_GMEM_ACCEL_GEM_QUERY, NULL },
	{ GMEM_ACCEL_IOC_OBJ_FREE, DRM_IOCTL_GEM_CLOSE, NULL },
	{ GMEM_ACCEL_IOC_OBJ_EXPORT, DRM_IOCTL_PRIME_HANDLE_TO_FD, NULL },
	{ GMEM_ACCEL_IOC_OBJ_IMPORT, DRM_IOCTL_PRIME_FD_TO_HANDLE, adapter_import },
	{ GMEM_ACCEL_IOC_FENCE_EXPORT, DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT, NULL },
};

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!gmem_frontend_drm() || _IOC_TYPE(req) != GMEM_ACCEL_IOC_MAGIC ||
	    !gmem_fd_is_accel(fd))
		return __real_ioctl(fd, req, arg);
	for (size_t i = 0; i < ARRAY_SIZE(adapter_calls); i++) {
		if (adapter_calls[i].own != req)
			continue;
		if (!adapter_calls[i].call)
			return __real_ioctl(fd, adapter_calls[i].drm, arg);
		return adapter_calls[i].call(fd, adapter_calls[i].drm, arg);
	}
	req = gmem_ioc(fd, req);
	if (_IOC_TYPE(req) == GMEM_ACCEL_IOC_MAGIC)
		printf("# " GMEM_ADAPTER_NO_DRM " ioctl_0x%lx\n", req);
	return __real_ioctl(fd, req, arg);
}
