// SPDX-License-Identifier: GPL-2.0
/*
 * Host memcpy bandwidth, the physical limit next to which scripts/run-bench.sh puts the
 * device's DMA figures: "BENCH host memcpy_<N>M <GiB/s> GiB/s", median of 5 copies of N MiB
 * between two buffers already faulted in.
 *   memcpy-bench [MIB]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 64, size = mib << 20;
	char *src = malloc(size), *dst = malloc(size);
	double gibps[5];

	if (!mib || !src || !dst) {
		fprintf(stderr, "memcpy-bench: cannot allocate 2 x %zu MiB\n", mib);
		return 1;
	}
	memset(src, 1, size);
	memset(dst, 2, size);
	for (int r = 0; r < 5; r++) {
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		memcpy(dst, src, size);
		clock_gettime(CLOCK_MONOTONIC, &b);
		gibps[r] = mib / 1024.0 / ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
		src[r] ^= dst[size - 1 - r];	/* keep the copies observable */
	}
	qsort(gibps, 5, sizeof(*gibps), cmp);
	printf("BENCH host memcpy_%zuM %.3f GiB/s\n", mib, gibps[2]);
	return 0;
}
