// SPDX-License-Identifier: MIT
/*
 * libgmem: the two front ends of the driver. A device is either /dev/gmem_accelN or, given to
 * the DRM accel front end, /dev/accel/accelM (its sysfs device says which); GMEM_BACKEND
 * (gmem, drm or auto) restricts the library to one. The library speaks the gmem node's
 * ioctls; on a DRM device each becomes its DRM counterpart here, and what the DRM front end
 * lacks fails with EOPNOTSUPP (gmemErrorNotSupported).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <drm/drm.h>

#include "gmem_accel_drm_uapi.h"
#include "gmem_internal.h"

enum gmem_backend gmem_backend(void)
{
	const char *b = getenv("GMEM_BACKEND");
	static int warned;

	if (!b || !*b || !strcmp(b, "auto"))
		return GMEM_BACKEND_ANY;
	if (!strcmp(b, "gmem"))
		return GMEM_BACKEND_GMEM;
	if (!strcmp(b, "drm"))
		return GMEM_BACKEND_DRM;
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "libgmem: GMEM_BACKEND=%s: give gmem, drm or auto\n", b);
	return GMEM_BACKEND_INVALID;
}

/*
 * The node of device @minor the backend @b allows: its path and front end (*@drm); false if
 * it has none (or not of that front end).
 */
bool gmem_node_of(unsigned int minor, enum gmem_backend b, char *path, size_t len, bool *drm)
{
	char dir[96];
	struct dirent *e;
	DIR *d;

	snprintf(path, len, GMEM_DEV_DIR "/gmem_accel%u", minor);
	if (access(path, F_OK) == 0) {
		*drm = false;
		return b != GMEM_BACKEND_DRM;
	}
	if (b == GMEM_BACKEND_GMEM)
		return false;
	snprintf(dir, sizeof(dir), GMEM_SYSFS_CLASS "/gmem_accel%u/device/accel", minor);
	d = opendir(dir);
	if (!d)
		return false;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "accel", 5))
			break;
	if (e)
		snprintf(path, len, GMEM_DEV_DIR "/accel/%s", e->d_name);
	closedir(d);
	*drm = true;
	return e;
}

/* The gmem node's object calls, on a DRM file: GEM handles and PRIME. */
static int gmem_drm_obj(int fd, unsigned long cmd, void *arg)
{
	switch (cmd) {
	case GMEM_ACCEL_IOC_OBJ_FREE: {
		struct gmem_accel_obj_free *fr = arg;
		struct drm_gem_close c = { .handle = fr->handle };
		int ret = fr->flags ? -EINVAL : gmem_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c);

		return ret == -EINVAL && !fr->flags ? -ENOENT : ret;	/* no such handle */
	}
	case GMEM_ACCEL_IOC_OBJ_EXPORT: {
		struct gmem_accel_obj_export *ex = arg;
		struct drm_prime_handle ph = { .handle = ex->handle, .flags = DRM_RDWR };
		int ret;

		if ((ex->flags & ~O_CLOEXEC) || ex->pad)
			return -EINVAL;
		if (ex->flags & O_CLOEXEC)
			ph.flags |= DRM_CLOEXEC;
		ret = gmem_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph);
		ex->fd = ph.fd;
		return ret;
	}
	case GMEM_ACCEL_IOC_OBJ_IMPORT: {
		struct gmem_accel_obj_import *im = arg;
		struct drm_prime_handle ph = { .fd = im->fd };
		struct drm_gmem_accel_gem_mmap_offset mo = { 0 };
		int ret;

		if (im->flags || im->pad)
			return -EINVAL;
		ret = gmem_ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph);
		if (ret)
			return ret;
		mo.handle = ph.handle;
		ret = gmem_ioctl(fd, DRM_IOCTL_GMEM_ACCEL_GEM_MMAP_OFFSET, &mo);
		if (ret) {
			struct drm_gem_close c = { .handle = ph.handle };

			gmem_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c);
			return ret;
		}
		im->handle = ph.handle;
		im->mmap_offset = mo.offset;
		return 0;
	}
	}
	return -EOPNOTSUPP;
}

/* The DRM request for @cmd (@arg: its argument), 0 if it has none: see gmem_drm_obj(). */
static unsigned long gmem_drm_req(unsigned long cmd, const void *arg)
{
	switch (cmd) {
	case GMEM_ACCEL_IOC_GET_INFO: return DRM_IOCTL_GMEM_ACCEL_GET_INFO;
	case GMEM_ACCEL_IOC_SUBMIT: return DRM_IOCTL_GMEM_ACCEL_SUBMIT;
	case GMEM_ACCEL_IOC_WAIT: return DRM_IOCTL_GMEM_ACCEL_WAIT;
	case GMEM_ACCEL_IOC_STATS: return DRM_IOCTL_GMEM_ACCEL_STATS;
	case GMEM_ACCEL_IOC_SNAPSHOT: return DRM_IOCTL_GMEM_ACCEL_SNAPSHOT;
	case GMEM_ACCEL_IOC_FENCE_EXPORT: return DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT;
	case GMEM_ACCEL_IOC_MIGRATE: return DRM_IOCTL_GMEM_ACCEL_PREFETCH;
	case GMEM_ACCEL_IOC_OBJ_ALLOC: return DRM_IOCTL_GMEM_ACCEL_GEM_CREATE;
	case GMEM_ACCEL_IOC_OBJ_QUERY: return DRM_IOCTL_GMEM_ACCEL_GEM_QUERY;
	case GMEM_ACCEL_IOC_ADVISE:
		/* the DRM front end takes a location alone: no read-mostly, no accessed-by */
		return ((const struct gmem_accel_advise *)arg)->flags ? 0 :
		       DRM_IOCTL_GMEM_ACCEL_ADVISE;
	}
	return 0;
}

int gmem_dev_ioctl(const struct gmemDevice *dev, int fd, unsigned long cmd, void *arg)
{
	unsigned long req;

	if (!dev->drm)
		return gmem_ioctl(fd, cmd, arg);
	req = gmem_drm_req(cmd, arg);
	return req ? gmem_ioctl(fd, req, arg) : gmem_drm_obj(fd, cmd, arg);
}

int gmem_dev_ioctl_once(const struct gmemDevice *dev, int fd, unsigned long cmd, void *arg)
{
	unsigned long req = dev->drm ? gmem_drm_req(cmd, arg) : cmd;

	if (!req)
		return -EOPNOTSUPP;
	return ioctl(fd, req, arg) < 0 ? -errno : 0;
}
