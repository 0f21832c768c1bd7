// SPDX-License-Identifier: GPL-2.0
/*
 * For host-tests/monitor_crosscheck.sh (not a suite test): map a pattern of pages for the
 * device — written, read-only, untouched, in HBM, a THP, a THP moved to HBM (whole where the
 * kernel allows: one 2 MiB HBM leaf) — print the driver's view of them, then hold
 * still until the host has read the same context's page table over the QEMU monitor. The
 * kernel may still change the pages (khugepaged, compaction): the view is printed again
 * whenever it changes, so the host can tell whether it was current during its read.
 *   XCHECK ctx=<context> va=<hex> npages=<n> view=<one hex byte per page>
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define HUGE (2ul << 20)
#define NPAGES 1536	/* 6 MiB: a 4 KiB block, a THP, a THP in HBM */

static void run(int fd, struct gmem_accel_cmd c)
{
	struct gmem_accel_submit s = { .cmds = (uintptr_t)&c, .count = 1 };
	struct gmem_accel_wait w = { .timeout_ms = 20000 };

	if (ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &s))
		exit(2);
	w.fence = s.fence;
	if (ioctl(fd, GMEM_ACCEL_IOC_WAIT, &w))
		exit(3);
}

int main(void)
{
	int fd = gmem_open(0, O_RDWR);
	uint8_t *raw = mmap(NULL, NPAGES * PAGE + HUGE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *buf, *scratch = malloc(64 * PAGE), *whole = malloc(HUGE), view[NPAGES];
	struct gmem_accel_snapshot snap = { .npages = NPAGES };
	struct gmem_accel_stats st = { 0 };

	if (fd < 0 || raw == MAP_FAILED)
		return 1;
	buf = (uint8_t *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1));
	madvise(buf, HUGE, MADV_NOHUGEPAGE);
	madvise(buf + HUGE, 2 * HUGE, MADV_HUGEPAGE);
	/* Pages 16-40 read-only first (a later mprotect would zap what the device has). */
	memset(buf + 16 * PAGE, 1, 25 * PAGE);
	mprotect(buf + 16 * PAGE, 25 * PAGE, PROT_READ);
	/* Pages 0-9: device writes (writable); 16-19 and 40: device reads of read-only pages. */
	run(fd, (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)buf,
					 .size = 10 * PAGE, .value = 0x5a });
	run(fd, (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)scratch,
					 .src = (uintptr_t)buf + 16 * PAGE, .size = 4 * PAGE });
	run(fd, (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)scratch,
					 .src = (uintptr_t)buf + 40 * PAGE, .size = 8 });
	/* Pages 48-63: migrated to HBM, which maps them for the device. */
	memset(buf + 48 * PAGE, 3, 16 * PAGE);
	if (dev_migrate(fd, buf + 48 * PAGE, 16 * PAGE, GMEM_ACCEL_TO_DEVICE) != 16)
		return 5;
	/* The second 2 MiB: a THP, read by the device. */
	memset(buf + HUGE, 2, HUGE);
	run(fd, (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)scratch,
					 .src = (uintptr_t)buf + HUGE + 5 * PAGE, .size = PAGE });
	/* The third: a THP, moved to HBM. */
	memset(buf + 2 * HUGE, 4, HUGE);
	if (dev_migrate(fd, buf + 2 * HUGE, HUGE, GMEM_ACCEL_TO_DEVICE) != HUGE / PAGE)
		return 6;
	/* Read by the device: mapped even where the move left the mapping to the next fault. */
	run(fd, (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)whole,
					 .src = (uintptr_t)buf + 2 * HUGE, .size = HUGE });
	snap.addr = (uintptr_t)buf;
	if (ioctl(fd, GMEM_ACCEL_IOC_STATS, &st))
		return 4;
	/* The host quits the VM when it is done. */
	for (int printed = 0; printed < 1000; usleep(100 * 1000)) {
		uint8_t now[NPAGES];

		snap.out = (uintptr_t)now;
		if (ioctl(fd, GMEM_ACCEL_IOC_SNAPSHOT, &snap))
			return 4;
		if (printed && !memcmp(now, view, NPAGES))
			continue;
		memcpy(view, now, NPAGES);
		printf("XCHECK ctx=%u va=%#lx npages=%d view=", st.context, (unsigned long)buf,
		       NPAGES);
		for (int i = 0; i < NPAGES; i++)
			printf("%02x", view[i]);
		printf("\n");
		fflush(stdout);
		printed++;
	}
	return 0;
}
