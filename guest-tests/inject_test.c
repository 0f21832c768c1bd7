// SPDX-License-Identifier: GPL-2.0
/*
 * Device faults injected from the host (the device's QOM 'inject', relayed by
 * scripts/lib/host-control.py): the work they hit fails with a clear errno, every other
 * process goes on with byte-exact data, and the driver goes on after.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define LEN (1ul << 20)
#define ROUNDS 100

GMEM_PLAIN_FIXTURE(inject);

/*
 * In a child: copy LEN bytes @rounds times on a context whose queue is not @avoid, checking
 * each; says "ready" on @ready after its first copy. Exits with the number of failures.
 */
static void copy_loop(int rounds, unsigned int avoid, int ready)
{
	uint8_t *src = map_anon(LEN, PROT_READ | PROT_WRITE);
	uint8_t *dst = map_anon(LEN, PROT_READ | PROT_WRITE);
	int fd[4], n = 0, bad = 0;

	if (!src || !dst)
		_exit(100);
	/* Contexts take the lowest free id, and ids go round the queues: one of 3 will do. */
	do
		fd[n] = gmem_open(0, O_RDWR);
	while (fd[n] >= 0 && ctx_stats(fd[n]).queue == avoid && ++n < 4);
	if (n == 4 || fd[n] < 0)
		_exit(101);
	for (int r = 0; r < rounds; r++) {
		pattern(src, LEN, 100 + r);
		memset(dst, 0, LEN);
		bad += dev_copy(fd[n], dst, src, LEN) != 0 || memcmp(dst, src, LEN) != 0;
		if (r == 0 && write(ready, "r", 1) != 1)
			_exit(102);
	}
	_exit(bad);
}

/*
 * A DMA error on a process's queue fails that process's next command with EIO (and only
 * it: the next works), while another process on another queue copies on, byte-exact.
 */
TEST_F_TIMEOUT(inject, dma_error_fails_one_command, 600)
{
	uint8_t *src = map_anon(LEN, PROT_READ | PROT_WRITE);
	uint8_t *dst = map_anon(LEN, PROT_READ | PROT_WRITE);
	int fd = gmem_open(0, O_RDWR), ready[2], status;
	struct gmem_accel_stats mine;
	char what[64], c;
	pid_t pid;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_LE(0, fd);
	/* Bad requests are refused, and inject nothing. */
	EXPECT_EQ(-EINVAL, gmem_inject(0, "no-such-fault"));
	EXPECT_EQ(-EINVAL, gmem_inject(0, "dma-error,queue=9"));
	pattern(src, LEN, 7);
	ASSERT_EQ(0, dev_copy(fd, dst, src, LEN));

	mine = ctx_stats(fd);
	ASSERT_LE(1, mine.queue);
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(fd);
		copy_loop(ROUNDS, mine.queue, ready[1]);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &c, 1)) TH_LOG("the other process did not start");
	close(ready[0]);

	snprintf(what, sizeof(what), "dma-error,queue=%u", mine.queue);
	ASSERT_EQ(0, gmem_inject(0, what));
	memset(dst, 0, LEN);
	EXPECT_EQ(-EIO, dev_copy(fd, dst, src, LEN));
	memset(dst, 0, LEN);
	EXPECT_EQ(0, dev_copy(fd, dst, src, LEN));
	EXPECT_EQ(0, memcmp(dst, src, LEN));

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("the other process: failures or setup error");
	close(fd);
}

TEST_HARNESS_MAIN
