// SPDX-License-Identifier: GPL-2.0
/*
 * For scripts/run-timeline.sh (not a suite test): points where the guest's trace clock and
 * QEMU's trace clock can be lined up. Each point is a trace_marker line "gmem-sync TAG N"
 * followed at once by a read of RESET through BAR0 of gmem_accel0, which QEMU traces
 * (gmem_accel_mmio_read). RESET reads 0 and does nothing on a read; the driver only writes it,
 * so every read of it in QEMU's trace is one of these points, in order.
 *   trace_sync TAG [POINTS]
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gmem_accel_hw.h"

#define BAR0 "/sys/class/gmem_accel/gmem_accel0/device/resource0"
#define MARKER "/sys/kernel/tracing/trace_marker"

int main(int argc, char **argv)
{
	int points = argc > 2 ? atoi(argv[2]) : 8;
	volatile uint32_t *regs;
	int bar, marker;

	if (argc < 2 || points < 1 || points > 64) {
		fprintf(stderr, "usage: trace_sync TAG [POINTS (1-64, default 8)]\n");
		return 2;
	}
	bar = open(BAR0, O_RDONLY | O_SYNC);
	marker = open(MARKER, O_WRONLY);
	if (bar < 0 || marker < 0) {
		perror(bar < 0 ? BAR0 : MARKER);
		return 1;
	}
	regs = mmap(NULL, 4096, PROT_READ, MAP_SHARED, bar, 0);
	if (regs == MAP_FAILED) {
		perror("mmap " BAR0);
		return 1;
	}
	for (int i = 0; i < points; i++) {
		char line[96];
		int n = snprintf(line, sizeof(line), "gmem-sync %s %d\n", argv[1], i);

		if (write(marker, line, n) != n) {
			perror(MARKER);
			return 1;
		}
		(void)regs[GMEM_REG_RESET / 4];
		usleep(2000);
	}
	return 0;
}
