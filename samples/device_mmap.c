// SPDX-License-Identifier: MIT
/*
 * device_mmap: device memory mapped into the process. The CPU writes it through the mapping,
 * the device reads it and writes its result back into it, the CPU reads the result — one
 * pointer for both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <gmem.h>

#define CHECK(call) do {							\
	gmemError_t e_ = (call);						\
	if (e_) {								\
		fprintf(stderr, "device_mmap: %s: %s\n", #call, gmemGetErrorString(e_)); \
		return 1;							\
	}									\
} while (0)

int main(void)
{
	size_t n = 1 << 20, bad = 0;
	struct gmemPointerAttributes at;
	uint32_t *x, *copy = malloc(n * sizeof(*x));
	gmemDevice_t dev;
	gmemStream_t s;

	if (!copy)
		return 1;
	CHECK(gmemDeviceOpen(&dev, 0));
	CHECK(gmemStreamCreate(&s, dev));
	CHECK(gmemMalloc(dev, (void **)&x, n * sizeof(*x), 0));
	CHECK(gmemPointerGetAttributes(&at, x));
	printf("device_mmap: %zu KiB in %s, %llu KiB pages\n", at.size >> 10,
	       at.placement == gmemPlacementDevice ? "HBM" : "system memory",
	       (unsigned long long)at.pageSize >> 10);

	for (size_t i = 0; i < n; i++)		/* the CPU writes through the mapping */
		x[i] = i;
	CHECK(gmemMemcpy(copy, x, n * sizeof(*x), s));		/* the device reads it */
	CHECK(gmemScaleAddAsync(x, x, 2, 5, n, gmemUint32, s));	/* and computes in place */
	CHECK(gmemStreamSynchronize(s));
	for (size_t i = 0; i < n; i++)		/* the CPU reads the device's result */
		bad += copy[i] != i || x[i] != 2 * i + 5;
	printf("device_mmap: x[1000] = %u (2 * 1000 + 5), %zu wrong\n", x[1000], bad);
	CHECK(gmemFree(x));
	CHECK(gmemStreamDestroy(s));
	CHECK(gmemDeviceClose(dev));
	free(copy);
	printf("device_mmap: %s\n", bad ? "FAIL" : "PASS");
	return bad != 0;
}
