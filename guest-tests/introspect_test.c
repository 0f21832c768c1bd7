// SPDX-License-Identifier: GPL-2.0
/*
 * What the driver shows about itself: debugfs counters agree with the STATS ioctl, the
 * gmem_accel trace events and dynamic debug report the faults and invalidations a test
 * causes, and a context closed while its commands are still queued holds its id back until
 * they have passed. Runs before module_test (which unloads the module).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define HUGE (2ul << 20)
#define TRACEFS "/sys/kernel/tracing"
#define DRAIN_PARAM "/sys/module/gmem_accel/parameters/drain_timeout_ms"

static int submit(int fd, struct gmem_accel_cmd *c, __u64 *fence)
{
	struct gmem_accel_submit s = { .cmds = (uintptr_t)c, .count = 1 };

	if (ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &s))
		return -errno;
	*fence = s.fence;
	return 0;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

/* The debugfs "contexts" line of context @id, parsed; 0 or -errno. */
static int debugfs_context(unsigned int id, int *pid, char *comm, struct gmem_accel_stats *st)
{
	FILE *f = fopen("/sys/kernel/debug/gmem_accel/gmem_accel0/contexts", "r");
	char line[512];
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned int ctx;

		if (sscanf(line, "%u %d %15s %llu %llu %llu %llu %llu %llu %llu %llu", &ctx, pid,
			   comm, &st->faults, &st->fault_groups, &st->replays, &st->cancels,
			   &st->pages_mapped, &st->pages_zapped, &st->invalidations,
			   &st->commands) == 11 && ctx == id) {
			st->context = ctx;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* Tests that need no fixture (a timeout needs one). */
GMEM_PLAIN_FIXTURE(introspect)

/* debugfs shows each context's counters as the STATS ioctl does, and the device's totals. */
TEST_F_TIMEOUT(introspect, debugfs_matches_stats, 120)
{
	int fd = gmem_open(0, O_RDWR), pid;
	int64_t groups0, groups1, cmds0, cmds1, ctxs;
	size_t len = 64 * PAGE;
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	struct gmem_accel_stats st, dbg0, dbg;
	char comm[16];

	ASSERT_LE(0, fd);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups", &groups0));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "commands", &cmds0));
	ASSERT_EQ(0, dev_fill(fd, buf, 0x5a5a5a5a5a5a5a5aull, len));
	EXPECT_EQ(0x5a, buf[len - 1]);
	ASSERT_EQ(0, munmap(buf + 8 * PAGE, 8 * PAGE));	/* an invalidation that zaps 8 */

	/*
	 * The mm invalidates in the background too (NUMA balancing, compaction): the ioctl's
	 * counts must lie between two debugfs reads around it, for those it can change.
	 */
	st = ctx_stats(fd);
	ASSERT_EQ(0, debugfs_context(st.context, &pid, comm, &dbg0));
	st = ctx_stats(fd);
	ASSERT_EQ(0, debugfs_context(st.context, &pid, comm, &dbg));
	EXPECT_EQ(getpid(), pid);
	EXPECT_EQ(0, strncmp(comm, "introspect_test", 15));
	EXPECT_EQ(st.faults, dbg.faults);
	EXPECT_EQ(st.fault_groups, dbg.fault_groups);
	EXPECT_EQ(st.replays, dbg.replays);
	EXPECT_EQ(st.cancels, dbg.cancels);
	EXPECT_EQ(st.pages_mapped, dbg.pages_mapped);
	EXPECT_LE(dbg0.pages_zapped, st.pages_zapped);
	EXPECT_LE(st.pages_zapped, dbg.pages_zapped);
	EXPECT_LE(dbg0.invalidations, st.invalidations);
	EXPECT_LE(st.invalidations, dbg.invalidations);
	EXPECT_EQ(1, dbg.commands);
	EXPECT_LE(1, dbg.fault_groups);
	EXPECT_EQ(dbg.fault_groups, dbg.replays);
	EXPECT_LE(64, dbg.pages_mapped);
	EXPECT_LE(8, dbg.pages_zapped);

	/* Nothing else uses the device now: its totals moved by exactly this context's. */
	ASSERT_EQ(0, gmem_debugfs_stat(0, "fault_groups", &groups1));
	ASSERT_EQ(0, gmem_debugfs_stat(0, "commands", &cmds1));
	EXPECT_EQ(st.fault_groups, groups1 - groups0);
	EXPECT_EQ(1, cmds1 - cmds0);
	ASSERT_EQ(0, gmem_debugfs_stat(0, "contexts_now", &ctxs));
	EXPECT_EQ(1, ctxs);
	close(fd);
	EXPECT_EQ(0, gmem_wait_stat(0, "contexts_now", 0, 1000));
	EXPECT_EQ(-ENOENT, debugfs_context(st.context, &pid, comm, &dbg));
}

/* Some line of the trace must hold all three strings. */
#define EXPECT_TRACE(a, b, c) do {						\
	bool seen = text_has_line(trace, a, b, c, NULL);			\
	EXPECT_TRUE(seen) TH_LOG("no trace line with \"%s\", \"%s\", \"%s\"", a, b, c);	\
	all_seen &= seen;							\
} while (0)

/* The trace events name the fault, its window, the invalidation and the TLB shootdown. */
TEST_F_TIMEOUT(introspect, trace_events, 120)
{
	int fd = gmem_open(0, O_RDWR);
	uint8_t *p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	char want_ctx[32], want_va[48], want_block[48];
	bool all_seen = true;
	unsigned int ctx;
	char *trace;

	ASSERT_LE(0, fd);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, mprotect(p + PAGE, PAGE, PROT_NONE));
	ctx = ctx_stats(fd).context;
	ASSERT_EQ(0, write_file(TRACEFS "/trace", ""))
		TH_LOG("tracefs not mounted at " TRACEFS "?");
	ASSERT_EQ(0, write_file(TRACEFS "/events/gmem_accel/enable", "1"));

	EXPECT_EQ(0, dev_fill(fd, p, 1, PAGE));
	EXPECT_EQ(-EFAULT, dev_fill(fd, p + PAGE, 1, PAGE));
	EXPECT_EQ(0, munmap(p, PAGE));

	ASSERT_EQ(0, write_file(TRACEFS "/events/gmem_accel/enable", "0"));
	trace = read_whole_file(TRACEFS "/trace");
	ASSERT_NE(NULL, trace);
	snprintf(want_ctx, sizeof(want_ctx), "ctx=%u ", ctx);
	snprintf(want_va, sizeof(want_va), "va=%#lx ", (unsigned long)p);
	EXPECT_TRACE("gmem_accel_submit:", want_ctx, "commands=1");
	EXPECT_TRACE("gmem_accel_fault_group:", want_ctx, want_va);
	EXPECT_TRACE("gmem_accel_fault_group:", want_va, "replay err=0");
	EXPECT_TRACE("gmem_accel_fault_range:", want_ctx, "err=0");
	snprintf(want_va, sizeof(want_va), "va=%#lx ", (unsigned long)(p + PAGE));
	EXPECT_TRACE("gmem_accel_fault_group:", want_va, "cancel err=-14");
	snprintf(want_va, sizeof(want_va), "start=%#lx ", (unsigned long)p);
	EXPECT_TRACE("gmem_accel_invalidate:", want_va, "event=unmap zap zapped=1");
	/* A zap invalidates whole 2 MiB blocks (a huge leaf may cover the range). */
	snprintf(want_block, sizeof(want_block), "va=%#lx size=%#lx ",
		 (unsigned long)p & ~(HUGE - 1), HUGE);
	EXPECT_TRACE("gmem_accel_tlb_invalidate:", want_ctx, want_block);
	if (!all_seen)
		TH_LOG("the trace was:\n%s", trace);
	free(trace);
	close(fd);
}

/* The fault path's dev_dbg, switched on through dynamic debug, reports each group. */
TEST_F_TIMEOUT(introspect, dynamic_debug, 120)
{
	const char *control = "/sys/kernel/debug/dynamic_debug/control";
	int fd = gmem_open(0, O_RDWR), kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	uint8_t *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	char want[64], rec[1024], *sites;
	bool seen = false;
	ssize_t n;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, kmsg);
	ASSERT_NE(MAP_FAILED, p);
	sites = read_whole_file(control);
	ASSERT_NE(NULL, sites);
	EXPECT_TRUE(text_has_line(sites, "gmem_accel_fault.c", "[gmem_accel]", "fault group",
				  NULL));
	free(sites);
	lseek(kmsg, 0, SEEK_END);
	ASSERT_EQ(0, write_file(control, "module gmem_accel +p"));
	EXPECT_EQ(0, dev_fill(fd, p, 7, PAGE));
	ASSERT_EQ(0, write_file(control, "module gmem_accel -p"));
	snprintf(want, sizeof(want), "context %u, 1 pages from %#lx: replay",
		 ctx_stats(fd).context, (unsigned long)p);
	while ((n = read(kmsg, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		if (n <= 0)
			continue;
		rec[n] = 0;
		seen |= strstr(rec, want) != NULL;
	}
	EXPECT_TRUE(seen) TH_LOG("no kernel message with \"%s\"", want);
	close(kmsg);
	close(fd);
}

/* BAD_CONTEXT device errors in the kernel log. */
static int bad_context_errors(void)
{
	return gmem_kernel_log_count("device error 11,");
}

/*
 * close() while a command still runs: with no time to drain, the driver drops the context's
 * queue before it takes the context off the device, so the command never reaches a context
 * that is gone (the device's BAD_CONTEXT error, logged) and never runs later: the bytes it
 * was writing stop changing at close, the id is free at once, and every context can be
 * opened.
 */
TEST_F_TIMEOUT(introspect, close_with_queued_command, 120)
{
	size_t len = 64ul << 20;
	uint8_t *src = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	uint8_t *dst = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	uint8_t *seen = malloc(len);
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst,
				    .src = (uintptr_t)src, .size = len };
	int fd = gmem_open(0, O_RDWR), fds[63], nfds = 0, errors = bad_context_errors();
	unsigned int id;
	bool saw_id = false;
	__u64 fence;
	char *saved;

	ASSERT_LE(0, fd);
	ASSERT_NE(MAP_FAILED, src);
	ASSERT_NE(MAP_FAILED, dst);
	ASSERT_NE(NULL, seen);
	memset(src, 0x5c, len);
	saved = read_whole_file(DRAIN_PARAM);
	ASSERT_NE(NULL, saved);
	id = ctx_stats(fd).context;
	/* 16384 pages to fault on both sides: far longer than close() below takes. */
	ASSERT_EQ(0, submit(fd, &c, &fence));
	ASSERT_EQ(0, write_file(DRAIN_PARAM, "0"));
	close(fd);
	write_file(DRAIN_PARAM, saved);
	free(saved);

	/* Nothing of the command runs after close. */
	memcpy(seen, dst, len);
	usleep(500 * 1000);
	EXPECT_EQ(0, memcmp(seen, dst, len)) TH_LOG("the command went on writing after close");
	EXPECT_NE(0x5c, dst[len - 1]) TH_LOG("the command ran to its end before close");
	EXPECT_EQ(errors, bad_context_errors()) TH_LOG("the device got work for a closed context");

	/* Every context can be opened, the closed one's id among them. */
	while (nfds < 63 && (fds[nfds] = gmem_open(0, O_RDWR)) >= 0) {
		saw_id |= ctx_stats(fds[nfds]).context == id;
		nfds++;
	}
	EXPECT_EQ(63, nfds) TH_LOG("open %d: %s", nfds, strerror(errno));
	EXPECT_TRUE(saw_id);
	while (nfds)
		close(fds[--nfds]);
	EXPECT_EQ(0, gmem_wait_stat(0, "dma_mapped_pages_now", 0, 10000));
	EXPECT_EQ(0, gmem_wait_stat(0, "pt_pages_now", 0, 10000));
	free(seen);
}

TEST_HARNESS_MAIN
