// SPDX-License-Identifier: MIT
/*
 * vector_add_managed: unified memory. Three arrays from plain malloc, no device allocation and
 * no copies to write: they are prefetched into the device's HBM, the device computes
 * c = a + b in c (a COPY, then an AXPY adding b once), c is prefetched home once the stream is
 * done (prefetch runs when called, not in stream order) and the CPU checks every element.
 */
#include <stdio.h>
#include <stdlib.h>
#include <gmem.h>

#define CHECK(call) do {							\
	gmemError_t e_ = (call);						\
	if (e_) {								\
		fprintf(stderr, "vector_add_managed: %s: %s\n", #call,		\
			gmemGetErrorString(e_));				\
		return 1;							\
	}									\
} while (0)

int main(void)
{
	size_t n = 1 << 20, len = n * sizeof(uint32_t), bad = 0;
	uint32_t *a = malloc(len), *b = malloc(len), *c = malloc(len);
	gmemDevice_t dev;
	gmemStream_t s;

	if (!a || !b || !c)
		return 1;
	for (size_t i = 0; i < n; i++) {
		a[i] = i;
		b[i] = 0x10000000u + 3 * i;
	}
	CHECK(gmemDeviceOpen(&dev, 0));
	CHECK(gmemStreamCreate(&s, dev));
	CHECK(gmemMemPrefetchAsync(a, len, dev, s));
	CHECK(gmemMemPrefetchAsync(b, len, dev, s));
	CHECK(gmemMemPrefetchAsync(c, len, dev, s));
	CHECK(gmemMemcpyAsync(c, a, len, s));			/* c = a */
	CHECK(gmemAxpyAsync(c, b, 1, n, gmemUint32, s));	/* c += b * 1 */
	CHECK(gmemStreamSynchronize(s));
	CHECK(gmemMemPrefetchAsync(c, len, NULL, s));		/* home for the CPU */
	for (size_t i = 0; i < n; i++)
		bad += c[i] != a[i] + b[i];
	printf("vector_add_managed: c = a + b over %zu elements (%zu KiB each), c[1000] = %#x, "
	       "%zu wrong\n", n, len >> 10, c[1000], bad);
	CHECK(gmemStreamDestroy(s));
	CHECK(gmemDeviceClose(dev));
	free(a);
	free(b);
	free(c);
	printf("vector_add_managed: %s\n", bad ? "FAIL" : "PASS");
	return bad != 0;
}
