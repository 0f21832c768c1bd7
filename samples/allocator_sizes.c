// SPDX-License-Identifier: MIT
/*
 * allocator_sizes: allocations of 4 KiB to 64 MiB and where each lands — placement and the
 * device page size the driver picked by size, as NVIDIA UVM picks chunks (< 64 KiB: 4 KiB,
 * < 2 MiB: 64 KiB, else 2 MiB) — after the device has touched each (so the QEMU monitor's
 * `info gmem-accel-hbm` lists it while it lives).
 */
#include <stdio.h>
#include <gmem.h>

static uint64_t uvm_page(size_t size)
{
	return size < (64 << 10) ? 4096 : size < (2 << 20) ? 65536 : 2 << 20;
}

int main(void)
{
	gmemDevice_t dev;
	gmemStream_t s;
	int bad = 0;

	if (gmemDeviceOpen(&dev, 0) || gmemStreamCreate(&s, dev)) {
		fprintf(stderr, "allocator_sizes: %s\n", gmemGetErrorString(gmemGetLastError()));
		return 1;
	}
	printf("allocator_sizes: %10s %-6s %9s %12s\n", "bytes", "where", "page", "hbm address");
	for (size_t size = 4096; size <= (64u << 20); size *= 4) {
		struct gmemPointerAttributes at;
		void *p;

		if (gmemMalloc(dev, &p, size, 0) || gmemMemset(p, 0x5a, size, s) ||
		    gmemPointerGetAttributes(&at, p)) {
			fprintf(stderr, "allocator_sizes: %zu bytes: %s\n", size,
				gmemGetErrorString(gmemGetLastError()));
			return 1;
		}
		bad += at.pageSize != uvm_page(size) || at.placement != gmemPlacementDevice;
		printf("allocator_sizes: %10zu %-6s %8lluK %#12llx\n", size,
		       at.placement == gmemPlacementDevice ? "HBM" : "system",
		       (unsigned long long)at.pageSize >> 10, (unsigned long long)at.hbmAddr);
		gmemFree(p);
	}
	gmemStreamDestroy(s);
	gmemDeviceClose(dev);
	printf("allocator_sizes: %s\n", bad ? "FAIL" : "PASS");
	return bad != 0;
}
