// SPDX-License-Identifier: MIT
/* libgmem: errors (a value per failure, its string, the driver's errno) and live handles. */
#include <errno.h>
#include <stdlib.h>
#include <sys/ioctl.h>

#include "gmem_internal.h"

static __thread gmemError_t last_error;
static __thread int last_errno;

static const struct {
	const char *name;
	const char *text;
} errors[gmemErrorCount] = {
	[gmemSuccess] = { "gmemSuccess", "no error" },
	[gmemErrorInvalidValue] = { "gmemErrorInvalidValue",
		"invalid argument (NULL pointer, zero or too large size, unknown flags)" },
	[gmemErrorNoDevice] = { "gmemErrorNoDevice",
		"no such gmem-accel device (is the gmem_accel driver loaded? see /dev/gmem_accel*)" },
	[gmemErrorMemoryAllocation] = { "gmemErrorMemoryAllocation", "out of system memory" },
	[gmemErrorOutOfDeviceMemory] = { "gmemErrorOutOfDeviceMemory",
		"the device's HBM has no room (free some, or allocate without gmemMemPlaceDevice)" },
	[gmemErrorInvalidHandle] = { "gmemErrorInvalidHandle",
		"not a live device, stream or event of this process (closed or destroyed?)" },
	[gmemErrorIllegalAddress] = { "gmemErrorIllegalAddress",
		"the device accessed memory the process has not mapped (or PROT_NONE)" },
	[gmemErrorPermission] = { "gmemErrorPermission",
		"a write to memory the process may only read, or no permission to open the device" },
	[gmemErrorLaunchFailure] = { "gmemErrorLaunchFailure",
		"the device failed the command (I/O error, or the device was reset)" },
	[gmemErrorTimeout] = { "gmemErrorTimeout", "not done within the time allowed" },
	[gmemErrorNotReady] = { "gmemErrorNotReady", "work is still running" },
	[gmemErrorNotSupported] = { "gmemErrorNotSupported",
		"not supported by this device or kernel" },
	[gmemErrorDeviceLost] = { "gmemErrorDeviceLost",
		"the device was unbound or removed; close its handles" },
	[gmemErrorInvalidIpcHandle] = { "gmemErrorInvalidIpcHandle",
		"not a gmem-accel memory or event handle (a closed or foreign descriptor)" },
	[gmemErrorSystem] = { "gmemErrorSystem", "system error (gmemGetLastErrno() says which)" },
};

const char *gmemGetErrorString(gmemError_t err)
{
	return (unsigned int)err < gmemErrorCount ? errors[err].text : "unknown error";
}

const char *gmemGetErrorName(gmemError_t err)
{
	return (unsigned int)err < gmemErrorCount ? errors[err].name : "gmemErrorUnknown";
}

gmemError_t gmemGetLastError(void)
{
	gmemError_t e = last_error;

	last_error = gmemSuccess;
	return e;
}

gmemError_t gmemPeekAtLastError(void)
{
	return last_error;
}

int gmemGetLastErrno(void)
{
	return last_errno;
}

gmemError_t gmem_fail(gmemError_t e)
{
	last_error = e;
	last_errno = 0;
	return e;
}

gmemError_t gmem_fail_as(gmemError_t e, int err)
{
	last_error = e;
	last_errno = err;
	return e;
}

gmemError_t gmem_fail_errno(int err)
{
	gmemError_t e;

	switch (err) {
	case EINVAL: case ERANGE: case EOVERFLOW: e = gmemErrorInvalidValue; break;
	case ENOENT: case ENXIO: e = gmemErrorNoDevice; break;
	case ENOMEM: e = gmemErrorMemoryAllocation; break;
	case ENOSPC: e = gmemErrorOutOfDeviceMemory; break;
	case EFAULT: e = gmemErrorIllegalAddress; break;
	case EPERM: case EACCES: e = gmemErrorPermission; break;
	case EIO: case ECANCELED: case EHWPOISON: e = gmemErrorLaunchFailure; break;
	case ETIME: case ETIMEDOUT: e = gmemErrorTimeout; break;
	case EAGAIN: case EBUSY: e = gmemErrorNotReady; break;
	case EOPNOTSUPP: e = gmemErrorNotSupported; break;
	case ENODEV: e = gmemErrorDeviceLost; break;
	case EBADF: e = gmemErrorInvalidHandle; break;
	default: e = gmemErrorSystem; break;
	}
	last_error = e;
	last_errno = err;
	return e;
}

int gmem_ioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do
		ret = ioctl(fd, req, arg);
	while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : 0;
}

/* Live handles: few, so a small array searched under gmem_lock. */
pthread_mutex_t gmem_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static struct {
	enum gmem_kind kind;
	void *obj;
} *live;
static size_t nlive, cap;

bool gmem_live_add(enum gmem_kind kind, void *obj)
{
	bool ok = true;

	pthread_mutex_lock(&gmem_lock);
	if (nlive == cap) {
		size_t n = cap ? 2 * cap : 16;
		void *p = realloc(live, n * sizeof(*live));

		if (p) {
			live = p;
			cap = n;
		}
		ok = p != NULL;
	}
	if (ok) {
		live[nlive].kind = kind;
		live[nlive++].obj = obj;
	}
	pthread_mutex_unlock(&gmem_lock);
	return ok;
}

bool gmem_live_has(enum gmem_kind kind, const void *obj)
{
	bool has = false;

	if (!obj)
		return false;
	pthread_mutex_lock(&gmem_lock);
	for (size_t i = 0; i < nlive && !has; i++)
		has = live[i].kind == kind && live[i].obj == obj;
	pthread_mutex_unlock(&gmem_lock);
	return has;
}

void gmem_live_del(enum gmem_kind kind, void *obj)
{
	pthread_mutex_lock(&gmem_lock);
	for (size_t i = 0; i < nlive; i++) {
		if (live[i].kind == kind && live[i].obj == obj) {
			live[i] = live[--nlive];
			break;
		}
	}
	pthread_mutex_unlock(&gmem_lock);
}

int gmem_device_streams(struct gmemDevice *dev, struct gmemStream **out, int max)
{
	int n = 0;

	for (size_t i = 0; i < nlive && n < max; i++) {
		struct gmemStream *s = live[i].obj;

		if (live[i].kind == GMEM_KIND_STREAM && s->dev == dev)
			out[n++] = s;
	}
	return n;
}
