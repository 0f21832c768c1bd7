// SPDX-License-Identifier: MIT
/* libgmem: devices (/dev/gmem_accelN or /dev/accel/accelM), their properties, open and close. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmem_accel_hw.h"
#include "gmem_internal.h"

/*
 * The minors of the devices present (of the front end GMEM_BACKEND allows), ascending: device
 * i is the i-th. -EINVAL for a bad GMEM_BACKEND.
 */
static int gmem_minors(unsigned int *minors, int max)
{
	enum gmem_backend b = gmem_backend();
	DIR *d;
	struct dirent *e;
	int n = 0;

	if (b == GMEM_BACKEND_INVALID)
		return -EINVAL;
	d = opendir(GMEM_SYSFS_CLASS);
	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max) {
		char path[64];
		unsigned int m;
		bool drm;
		char tail;

		if (sscanf(e->d_name, "gmem_accel%u%c", &m, &tail) == 1 && m < GMEM_MAX_DEVICES &&
		    gmem_node_of(m, b, path, sizeof(path), &drm))
			minors[n++] = m;
	}
	closedir(d);
	for (int i = 1; i < n; i++)	/* insertion sort: a few entries */
		for (int j = i; j > 0 && minors[j - 1] > minors[j]; j--) {
			unsigned int t = minors[j];

			minors[j] = minors[j - 1];
			minors[j - 1] = t;
		}
	return n;
}

gmemError_t gmemGetDeviceCount(int *count)
{
	unsigned int minors[GMEM_MAX_DEVICES];

	int n;

	if (!count)
		return gmem_fail(gmemErrorInvalidValue);
	n = gmem_minors(minors, GMEM_MAX_DEVICES);
	if (n < 0)
		return gmem_fail(gmemErrorInvalidValue);	/* GMEM_BACKEND */
	*count = n;
	return gmem_ok();
}

/*
 * Open the node of device ordinal @device: its minor, front end and node in @dev. -errno on
 * failure (-EINVAL: a bad GMEM_BACKEND).
 */
static int gmem_open_ordinal(int device, struct gmemDevice *dev)
{
	unsigned int minors[GMEM_MAX_DEVICES];
	int n = gmem_minors(minors, GMEM_MAX_DEVICES), fd;

	if (n < 0)
		return n;
	if (device < 0 || device >= n)
		return -ENODEV;
	dev->minor = minors[device];
	if (!gmem_node_of(dev->minor, gmem_backend(), dev->path, sizeof(dev->path), &dev->drm))
		return -ENODEV;		/* gone meanwhile (unbound) */
	fd = open(dev->path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static void gmem_fill_prop(struct gmemDeviceProp *prop, unsigned int minor,
			   const struct gmem_accel_info *info)
{
	char link[PATH_MAX], path[96];
	ssize_t len;

	memset(prop, 0, sizeof(*prop));
	snprintf(prop->name, sizeof(prop->name), "gmem_accel%u", minor);
	snprintf(path, sizeof(path), GMEM_SYSFS_CLASS "/gmem_accel%u/device", minor);
	len = readlink(path, link, sizeof(link) - 1);
	if (len > 0) {
		link[len] = 0;
		snprintf(prop->pciBusId, sizeof(prop->pciBusId), "%.31s",
			 strrchr(link, '/') ? strrchr(link, '/') + 1 : link);
	}
	prop->hbmBytes = info->hbm_size;
	prop->coherent = !!(info->caps & GMEM_CAP_COHERENT);
	prop->peerToPeer = 1;		/* any gmem-accel reaches another's BAR2 */
	prop->pageSizes = 4096 | (2u << 20);
	if (info->caps & GMEM_CAP_PAGE_64K)
		prop->pageSizes |= 65536;
	prop->versionMajor = GMEM_VERSION_MAJOR_OF(info->version);
	prop->versionMinor = GMEM_VERSION_MINOR_OF(info->version);
	prop->caps = info->caps;
	prop->minor = minor;
}

gmemError_t gmemGetDeviceProperties(struct gmemDeviceProp *prop, int device)
{
	struct gmem_accel_info info = { 0 };
	struct gmemDevice dev = { 0 };
	int fd, ret;

	if (!prop)
		return gmem_fail(gmemErrorInvalidValue);
	fd = gmem_open_ordinal(device, &dev);
	if (fd == -ENODEV)
		return gmem_fail(gmemErrorNoDevice);
	if (fd < 0)
		return gmem_fail_errno(-fd);
	ret = gmem_dev_ioctl(&dev, fd, GMEM_ACCEL_IOC_GET_INFO, &info);
	close(fd);
	if (ret)
		return gmem_fail_errno(-ret);
	gmem_fill_prop(prop, dev.minor, &info);
	return gmem_ok();
}

gmemError_t gmemDeviceOpen(gmemDevice_t *out, int device)
{
	struct gmemDevice *dev;
	int ret;

	if (!out)
		return gmem_fail(gmemErrorInvalidValue);
	*out = NULL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return gmem_fail_errno(ENOMEM);
	dev->fd = gmem_open_ordinal(device, dev);
	if (dev->fd < 0) {
		ret = -dev->fd;
		free(dev);
		return ret == ENODEV ? gmem_fail(gmemErrorNoDevice) : gmem_fail_errno(ret);
	}
	ret = gmem_dev_ioctl(dev, dev->fd, GMEM_ACCEL_IOC_GET_INFO, &dev->info);
	if (ret || !gmem_live_add(GMEM_KIND_DEVICE, dev)) {
		close(dev->fd);
		free(dev);
		return gmem_fail_errno(ret ? -ret : ENOMEM);
	}
	*out = dev;
	return gmem_ok();
}

gmemError_t gmemDeviceClose(gmemDevice_t dev)
{
	bool busy;

	if (!gmem_live_has(GMEM_KIND_DEVICE, dev))
		return gmem_fail(gmemErrorInvalidHandle);
	pthread_mutex_lock(&gmem_lock);
	busy = dev->streams || dev->allocations;
	pthread_mutex_unlock(&gmem_lock);
	if (busy)	/* their files and mappings need the device: destroy and free them first */
		return gmem_fail_errno(EBUSY);
	gmem_live_del(GMEM_KIND_DEVICE, dev);
	gmem_advice_forget(dev);
	close(dev->fd);
	free(dev);
	return gmem_ok();
}
