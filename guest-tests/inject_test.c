// SPDX-License-Identifier: GPL-2.0
/*
 * Device faults injected from the host (the device's QOM 'inject', relayed by
 * scripts/lib/host-control.py): the work they hit fails with a clear errno, every other
 * process goes on with byte-exact data, and the driver goes on after.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
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
 * each; says "ready" on @ready after its first copy. A copy that fails with @retry (a reset
 * cancelled it; 0: none may) is done again, at most 3 times a round. Exits with the number of
 * failures.
 */
static void copy_loop(int rounds, unsigned int avoid, int ready, int retry)
{
	uint8_t *src = map_anon(LEN, PROT_READ | PROT_WRITE);
	uint8_t *dst = map_anon(LEN, PROT_READ | PROT_WRITE);
	int fd[4], n = 0, bad = 0;

	if (!src || !dst)
		_exit(100);
	/* Each context has the queue of its id: the first will do, the test's own one still open. */
	do
		fd[n] = gmem_open(0, O_RDWR);
	while (fd[n] >= 0 && ctx_stats(fd[n]).queue == avoid && ++n < 4);
	if (n == 4 || fd[n] < 0)
		_exit(101);
	for (int r = 0; r < rounds; r++) {
		int ret, tries = 0;

		pattern(src, LEN, 100 + r);
		do {
			memset(dst, 0, LEN);
			ret = dev_copy(fd[n], dst, src, LEN);
		} while (retry && ret == retry && ++tries < 3);
		bad += ret != 0 || memcmp(dst, src, LEN) != 0;
		if (r == 0 && write(ready, "r", 1) != 1)
			_exit(102);
	}
	_exit(bad);
}

/* Start copy_loop() in a child on a queue other than @avoid; its pid once it has copied. */
static pid_t start_copier(unsigned int avoid, int retry)
{
	int ready[2];
	pid_t pid;
	char c;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		copy_loop(ROUNDS, avoid, ready[1], retry);
	}
	close(ready[1]);
	if (pid > 0 && read(ready[0], &c, 1) != 1)
		pid = -1;
	close(ready[0]);
	return pid;
}

/*
 * A DMA error on a process's queue fails that process's next command with EIO (and only
 * it: the next works), while another process on another queue copies on, byte-exact.
 */
TEST_F_TIMEOUT(inject, dma_error_fails_one_command, 600)
{
	uint8_t *src = map_anon(LEN, PROT_READ | PROT_WRITE);
	uint8_t *dst = map_anon(LEN, PROT_READ | PROT_WRITE);
	int fd = gmem_open(0, O_RDWR), status;
	struct gmem_accel_stats mine;
	char what[64];
	pid_t pid;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_LE(0, fd);
	/* Bad requests are refused, and inject nothing. */
	EXPECT_EQ(-EINVAL, gmem_inject(0, "no-such-fault"));
	EXPECT_EQ(-EINVAL, gmem_inject(0, "dma-error,queue=64"));
	EXPECT_EQ(-EINVAL, gmem_inject(0, "hang"));
	EXPECT_EQ(-EINVAL, gmem_inject(0, "reset,queue=1"));
	EXPECT_EQ(-EINVAL, gmem_inject(0, "inv-stuck,queue=1"));
	EXPECT_EQ(-EINVAL, gmem_inject(0, "fq-full,queue=1"));
	pattern(src, LEN, 7);
	ASSERT_EQ(0, dev_copy(fd, dst, src, LEN));

	mine = ctx_stats(fd);
	ASSERT_LE(1, mine.queue);
	pid = start_copier(mine.queue, 0);
	ASSERT_LT(0, pid) TH_LOG("the other process did not start");

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

/*
 * An engine that hangs is found by the driver's watchdog (no step for hang_timeout_ms) and
 * reset: the batch on it fails with ECANCELED, the next one works, and another process on
 * another queue copies on, byte-exact, never cancelled.
 */
TEST_F_TIMEOUT(inject, engine_hang_is_reset, 600)
{
	uint8_t *src = map_anon(LEN, PROT_READ | PROT_WRITE);
	uint8_t *dst = map_anon(LEN, PROT_READ | PROT_WRITE);
	int fd = gmem_open(0, O_RDWR), status;
	int64_t resets;
	char what[64];
	pid_t pid;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, gmem_debugfs_stat(0, "engine_resets", &resets));
	pattern(src, LEN, 9);
	pid = start_copier(ctx_stats(fd).queue, 0);
	ASSERT_LT(0, pid) TH_LOG("the other process did not start");

	snprintf(what, sizeof(what), "hang,queue=%u", ctx_stats(fd).queue);
	ASSERT_EQ(0, gmem_inject(0, what));
	memset(dst, 0, LEN);
	EXPECT_EQ(-ECANCELED, dev_copy(fd, dst, src, LEN));
	EXPECT_EQ(resets + 1, gmem_wait_stat(0, "engine_resets", resets + 1, 10000));
	memset(dst, 0, LEN);
	EXPECT_EQ(0, dev_copy(fd, dst, src, LEN));
	EXPECT_EQ(0, memcmp(dst, src, LEN));

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("the other process: failures or setup error");
	close(fd);
}

/*
 * A reset the driver did not ask for: its watchdog sees SCRATCH lose the driver's cookie and
 * sets the device up again. Work in flight fails with ECANCELED (and may be submitted again),
 * data already in HBM comes back byte-exact, and every process goes on working.
 */
TEST_F_TIMEOUT(inject, surprise_reset_recovers, 600)
{
	uint8_t *src = map_anon(LEN, PROT_READ | PROT_WRITE);
	uint8_t *dst = map_anon(LEN, PROT_READ | PROT_WRITE);
	uint8_t *hbm = map_anon(LEN, PROT_READ | PROT_WRITE);
	uint8_t *want = map_anon(LEN, PROT_READ | PROT_WRITE);
	int fd = gmem_open(0, O_RDWR), status, ret;
	int64_t resets;
	pid_t pid;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_NE(NULL, hbm);
	ASSERT_NE(NULL, want);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, gmem_debugfs_stat(0, "device_resets", &resets));
	pattern(want, LEN, 11);
	memcpy(hbm, want, LEN);
	ASSERT_EQ((long)(LEN / getpagesize()),
		  dev_migrate(fd, hbm, LEN, GMEM_ACCEL_TO_DEVICE));
	pattern(src, LEN, 12);
	pid = start_copier(ctx_stats(fd).queue, -ECANCELED);
	ASSERT_LT(0, pid) TH_LOG("the other process did not start");

	ASSERT_EQ(0, gmem_inject(0, "reset"));
	ret = dev_copy(fd, dst, src, LEN);	/* before or after the driver noticed */
	EXPECT_TRUE(ret == 0 || ret == -ECANCELED) TH_LOG("copy across the reset: %d", ret);
	EXPECT_EQ(resets + 1, gmem_wait_stat(0, "device_resets", resets + 1, 30000));
	memset(dst, 0, LEN);
	EXPECT_EQ(0, dev_copy(fd, dst, src, LEN));
	EXPECT_EQ(0, memcmp(dst, src, LEN));
	EXPECT_EQ(0, memcmp(hbm, want, LEN)) TH_LOG("HBM pages did not come back intact");

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("the other process: failures or setup error");
	close(fd);
}

/*
 * A TLB invalidation that never completes: the driver cannot know that the device dropped the
 * translation, so it resets the device before the CPU lets the page go. The device never
 * reads the old page: after MADV_DONTNEED it copies zeros, not the old data.
 */
TEST_F_TIMEOUT(inject, lost_tlb_invalidation_resets_device, 600)
{
	uint8_t *src = map_anon(LEN, PROT_READ | PROT_WRITE);
	uint8_t *dst = map_anon(LEN, PROT_READ | PROT_WRITE);
	int fd = gmem_open(0, O_RDWR), status;
	int64_t resets, timeouts;
	size_t nonzero = 0;
	pid_t pid;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, gmem_debugfs_stat(0, "device_resets", &resets));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "tlb_invalidation_timeouts", &timeouts));
	pattern(src, LEN, 13);
	ASSERT_EQ(0, dev_copy(fd, dst, src, LEN));	/* the device TLB now maps src */
	pid = start_copier(ctx_stats(fd).queue, -ECANCELED);
	ASSERT_LT(0, pid) TH_LOG("the other process did not start");

	ASSERT_EQ(0, gmem_inject(0, "inv-stuck"));
	ASSERT_EQ(0, madvise(src, LEN, MADV_DONTNEED));
	EXPECT_EQ(timeouts + 1, gmem_wait_stat(0, "tlb_invalidation_timeouts", timeouts + 1,
						 10000));
	EXPECT_EQ(resets + 1, gmem_wait_stat(0, "device_resets", resets + 1, 30000));
	memset(dst, 0xff, LEN);
	EXPECT_EQ(0, dev_copy(fd, dst, src, LEN));
	for (size_t i = 0; i < LEN; i++)
		nonzero += dst[i] != 0;
	EXPECT_EQ(0, nonzero) TH_LOG("the device read the page the CPU had dropped");

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("the other process: failures or setup error");
	close(fd);
}

/*
 * A fault queue with no room: the device holds the group back (FAULT_OVERFLOW) until the
 * driver writes FQ_HEAD, which its error interrupt (or watchdog) makes it do. The faulting
 * copy completes byte-exact, and so does another process's on another queue.
 */
TEST_F_TIMEOUT(inject, fault_queue_overflow_is_drained, 600)
{
	uint8_t *src = map_anon(LEN, PROT_READ | PROT_WRITE);
	uint8_t *dst = map_anon(LEN, PROT_READ | PROT_WRITE);
	int fd = gmem_open(0, O_RDWR), status;
	int64_t overflows;
	pid_t pid;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_queue_overflows", &overflows));
	pattern(src, LEN, 14);
	pid = start_copier(ctx_stats(fd).queue, 0);
	ASSERT_LT(0, pid) TH_LOG("the other process did not start");

	ASSERT_EQ(0, gmem_inject(0, "fq-full"));
	memset(dst, 0, LEN);		/* the copy faults: none of it is mapped on the device */
	EXPECT_EQ(0, dev_copy(fd, dst, src, LEN));
	EXPECT_EQ(0, memcmp(dst, src, LEN));
	EXPECT_LE(overflows + 1, gmem_wait_stat(0, "fault_queue_overflows", overflows + 1,
						10000));

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("the other process: failures or setup error");
	close(fd);
}

static sigjmp_buf sigbus_jmp;
static siginfo_t sigbus_info;

static void on_sigbus(int sig, siginfo_t *info, void *ctx)
{
	sigbus_info = *info;
	siglongjmp(sigbus_jmp, 1);
}

/* Read @p's first byte; 0 if it reads, else the SIGBUS si_code (address in sigbus_info). */
static int read_or_sigbus(const volatile uint8_t *p, uint8_t *val)
{
	if (sigsetjmp(sigbus_jmp, 1))
		return sigbus_info.si_code;
	*val = *p;
	return 0;
}

/*
 * A poisoned HBM page, on gmem_accel1 (no other test here uses it): the device cannot read it
 * any more. A device command on it fails with EHWPOISON, its owner gets SIGBUS (BUS_MCEERR_AR,
 * as memory_failure() gives) at that page and at no other, every other page comes home
 * byte-exact, and the page is never handed out again: HBM filled anew takes device commands
 * everywhere. A page poisoned while free fails the copy into it: that page's data stays in
 * system memory, the rest moves.
 */
TEST_F_TIMEOUT(inject, poisoned_hbm_page_sigbus, 900)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	struct gmem_accel_info info = { 0 };
	int fd = gmem_open(1, O_RDWR), bad_piece = -1, npoisoned = 0, code;
	uint8_t *buf, *piece = map_anon(LEN, PROT_READ | PROT_WRITE), *want, v;
	uint8_t *poisoned_page = NULL;
	int64_t poisoned0, poisoned;
	size_t len, pages_wrong = 0;

	ASSERT_LE(0, fd) TH_LOG("needs gmem_accel1 with HBM");
	ASSERT_EQ(0, ioctl(fd, GMEM_ACCEL_IOC_GET_INFO, &info));
	len = info.hbm_size;		/* all of HBM: the poisoned page is sure to be ours */
	buf = map_anon(len, PROT_READ | PROT_WRITE);
	want = map_anon(LEN, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, piece);
	ASSERT_NE(NULL, want);
	ASSERT_EQ(0, gmem_debugfs_stat(1, "hbm_pages_poisoned", &poisoned0));
	for (size_t off = 0; off < len; off += LEN)
		pattern(buf + off, LEN, 20 + off / LEN);
	ASSERT_EQ((long)(len / getpagesize()),
		  dev_migrate(fd, buf, len, GMEM_ACCEL_TO_DEVICE));
	ASSERT_EQ(0, gmem_inject(1, "poison,offset=0x123456"));

	/* The device reads it all: one piece, the poisoned page's, fails. */
	for (size_t off = 0; off < len; off += LEN) {
		int ret = dev_copy(fd, piece, buf + off, LEN);

		if (ret == -EHWPOISON && bad_piece < 0)
			bad_piece = off / LEN;
		else
			EXPECT_EQ(0, ret) TH_LOG("piece %zu", off / LEN);
	}
	ASSERT_LE(0, bad_piece) TH_LOG("no device command met the poisoned page");

	/* The CPU: SIGBUS at that one page, its other pages come home byte-exact. */
	ASSERT_EQ(0, sigaction(SIGBUS, &sa, NULL));
	pattern(want, LEN, 20 + bad_piece);
	for (size_t off = 0; off < LEN; off += getpagesize()) {
		uint8_t *p = buf + (size_t)bad_piece * LEN + off;

		code = read_or_sigbus(p, &v);
		if (code) {
			EXPECT_EQ(BUS_MCEERR_AR, code);
			EXPECT_EQ((void *)p, sigbus_info.si_addr);
			poisoned_page = p;
			npoisoned++;
			continue;
		}
		pages_wrong += memcmp(p, want + off, getpagesize()) != 0;
	}
	EXPECT_EQ(1, npoisoned);
	EXPECT_EQ(0, pages_wrong);
	ASSERT_NE(NULL, poisoned_page);
	code = read_or_sigbus(poisoned_page, &v);
	signal(SIGBUS, SIG_DFL);
	EXPECT_EQ(BUS_MCEERR_AR, code) TH_LOG("a second touch must fail the same way");
	ASSERT_EQ(0, gmem_debugfs_stat(1, "hbm_pages_poisoned", &poisoned));
	EXPECT_EQ(poisoned0 + 1, poisoned);
	for (size_t off = 0; off < len; off += LEN) {
		if (off / LEN == bad_piece)
			continue;
		pattern(want, LEN, 20 + off / LEN);
		pages_wrong += memcmp(buf + off, want, LEN) != 0;
	}
	EXPECT_EQ(0, pages_wrong) TH_LOG("pieces not byte-exact after coming home");

	/* Freed, the page stays out of use: all of HBM again, and no command meets poison. */
	ASSERT_EQ(0, munmap(buf, len));
	buf = map_anon(len, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, buf);
	memset(buf, 0x5a, len);
	/* (one page short: a chunk may stay behind, or be evicted to make room) */
	EXPECT_LE((long)((len - (2ul << 20)) / getpagesize()),
		  dev_migrate(fd, buf, len, GMEM_ACCEL_TO_DEVICE));
	for (size_t off = 0; off < len; off += LEN) {
		int ret = dev_copy(fd, piece, buf + off, LEN);

		EXPECT_EQ(0, ret) TH_LOG("piece %zu", off / LEN);
	}
	ASSERT_EQ(0, gmem_debugfs_stat(1, "hbm_pages_poisoned", &poisoned));
	EXPECT_EQ(poisoned0 + 1, poisoned);

	/* A page poisoned while free: the copy into it fails, its data stays home. */
	ASSERT_EQ(0, munmap(buf, len));
	buf = map_anon(len, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, gmem_inject(1, "poison,offset=0x456000"));
	memset(buf, 0x6b, len);
	EXPECT_LE((long)((len - (2ul << 20)) / getpagesize()),
		  dev_migrate(fd, buf, len, GMEM_ACCEL_TO_DEVICE));
	ASSERT_EQ(0, gmem_debugfs_stat(1, "hbm_pages_poisoned", &poisoned));
	EXPECT_EQ(poisoned0 + 2, poisoned);
	for (size_t off = 0; off < len; off += LEN) {
		int ret = dev_copy(fd, piece, buf + off, LEN);

		EXPECT_EQ(0, ret) TH_LOG("piece %zu", off / LEN);
		EXPECT_EQ(0x6b6b6b6b6b6b6b6bull, *(uint64_t *)(piece + LEN - 8));
	}
	munmap(buf, len);
	close(fd);
}

TEST_HARNESS_MAIN
