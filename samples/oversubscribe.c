// SPDX-License-Identifier: MIT
/*
 * oversubscribe: a working set 4x the device's HBM, processed in passes (as openEuler GMEM's
 * overcommit example): each pass prefetches one HBM-sized quarter after another and has the
 * device add to it in place; the driver evicts the previous quarter to make room. Every
 * element is checked at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <gmem.h>

#define PASSES 2

int main(void)
{
	struct gmemDeviceProp prop;
	gmemDevice_t dev;
	gmemStream_t s;
	size_t total, part, n, bad = 0;
	uint32_t *x;

	if (gmemGetDeviceProperties(&prop, 0) || gmemDeviceOpen(&dev, 0) ||
	    gmemStreamCreate(&s, dev)) {
		fprintf(stderr, "oversubscribe: %s\n", gmemGetErrorString(gmemGetLastError()));
		return 1;
	}
	total = 4 * prop.hbmBytes;
	part = prop.hbmBytes / 2;	/* leaves room for what the previous part still holds */
	n = total / sizeof(*x);
	x = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < n; i++)
		x[i] = i;
	printf("oversubscribe: %zu MiB through %llu MiB of HBM, %d passes\n", total >> 20,
	       (unsigned long long)prop.hbmBytes >> 20, PASSES);
	for (int pass = 0; pass < PASSES; pass++) {
		for (size_t off = 0; off < total; off += part) {
			uint32_t *p = (uint32_t *)((char *)x + off);

			if (gmemMemPrefetchAsync(p, part, dev, s) ||
			    gmemAtomicAddAsync(p, 1, part / sizeof(*x), gmemUint32, s) ||
			    gmemStreamSynchronize(s)) {
				fprintf(stderr, "oversubscribe: pass %d at %zu MiB: %s\n", pass,
					off >> 20, gmemGetErrorString(gmemGetLastError()));
				return 1;
			}
		}
		printf("oversubscribe: pass %d done\n", pass);
	}
	for (size_t i = 0; i < n; i++)
		bad += x[i] != (uint32_t)(i + PASSES);
	printf("oversubscribe: %zu of %zu elements wrong\n", bad, n);
	munmap(x, total);
	gmemStreamDestroy(s);
	gmemDeviceClose(dev);
	printf("oversubscribe: %s\n", bad ? "FAIL" : "PASS");
	return bad != 0;
}
