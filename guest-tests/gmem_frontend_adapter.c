// SPDX-License-Identifier: GPL-2.0
/*
 * The suite's tests on the DRM accel front end (drm_svm_suite.sh): with GMEM_FRONTEND=drm in
 * the environment, gmem_open() opens a device's /dev/accel node where the device is DRM's, and
 * every ioctl() a test makes (the tests are linked with --wrap=ioctl) goes to a DRM file by
 * its DRM number (gmem_ioc()). A /dev/gmem_accelN call with no DRM counterpart goes as it
 * is, and drm_ioctl() answers ENOTTY; gmem_ioc() names it on stdout (GMEM_ADAPTER_NO_DRM),
 * so that the script reports the case as a SKIP for a feature the front end has not, never
 * as a pass.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <sys/ioctl.h>

#include "gmem_accel_drm_uapi.h"
#include "gmem_test_util.h"

int __real_ioctl(int fd, unsigned long req, ...);

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (gmem_frontend_drm() && _IOC_TYPE(req) == GMEM_ACCEL_IOC_MAGIC)
		req = gmem_ioc(fd, req);
	return __real_ioctl(fd, req, arg);
}
