// SPDX-License-Identifier: GPL-2.0
/*
 * An ioctl fuzzer on every gmem-accel node (/dev/gmem_accelN and /dev/gmem_dmirrorN): random
 * ioctl numbers (the real ones, the real ones with another size or direction, anything) with
 * random argument structures — sizes from 0 to ~0, pointers to nothing, to unmapped, PROT_NONE,
 * read-only and kernel memory, huge and overlapping ranges, unknown flags and ops. The device's
 * own pointers (commands, migrations) only ever aim at a scratch arena, the holes around it and
 * kernel addresses, never at the fuzzer's own memory. A bounded number of calls per node
 * (gmemtest.fuzz_count=, default 800) from a printed seed (gmemtest.fuzz_seed=, default the
 * time): the same seed gives the same calls. Afterwards the device must still move data right,
 * and the suite's kernel_log test must find the kernel log clean.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include <lib/test_hmm_uapi.h>
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define ARENA (8ul << 20)
#define STALL_S 60	/* one call taking longer than this is a hang */

/* What the fuzzing child shares with its parent: progress, and the call under way. */
struct fuzz_progress {
	volatile unsigned long calls;
	volatile unsigned long cmd;
	volatile int done;
	uint64_t arg[6];	/* the call's first argument words, for the report */
	uint64_t arena;
};

struct fuzz {
	uint64_t rng;
	uint8_t *arena;		/* RW, with a PROT_NONE guard page after it */
	uint8_t *ro, *none, *hole;
	uint8_t *arg;		/* the argument structure, a page */
	struct gmem_accel_cmd *cmds;	/* for SUBMIT: up to 256 commands */
	uint64_t fences[8];
};

static uint64_t rnd(struct fuzz *z)
{
	z->rng ^= z->rng << 13;
	z->rng ^= z->rng >> 7;
	z->rng ^= z->rng << 17;
	return z->rng;
}

static uint64_t pick(struct fuzz *z, uint64_t n)
{
	return n ? rnd(z) % n : 0;
}

/* A pointer for the device or the driver: never into the fuzzer's own memory. */
static uint64_t rand_ptr(struct fuzz *z)
{
	switch (pick(z, 9)) {
	case 0: return 0;
	case 1: case 2: return (uintptr_t)z->arena + pick(z, ARENA);
	case 3: return (uintptr_t)z->arena + (pick(z, ARENA / PAGE) * PAGE);
	case 4: return (uintptr_t)z->ro + pick(z, PAGE);
	case 5: return (uintptr_t)z->none + pick(z, PAGE);
	case 6: return (uintptr_t)z->hole + pick(z, 16 * PAGE);
	case 7: return 0xffff888000000000ull + pick(z, 1ull << 30);
	default: return (uintptr_t)z->arena + ARENA - pick(z, 2 * PAGE);	/* into the guard */
	}
}

static uint64_t rand_size(struct fuzz *z)
{
	switch (pick(z, 10)) {
	case 0: return 0;
	case 1: return 1 + pick(z, 64);
	case 2: return PAGE;
	case 3: return pick(z, ARENA);
	case 4: return 1ull << pick(z, 64);
	case 5: return ~0ull - pick(z, PAGE);
	case 6: return (1ull << 47) + pick(z, PAGE);
	case 7: return pick(z, 2 * ARENA) & ~(PAGE - 1);
	default: return pick(z, 4 * PAGE);
	}
}

/* Small values mostly, sometimes any bit pattern (unknown flags, ops, locations). */
static uint32_t rand_small(struct fuzz *z, uint32_t usual)
{
	return pick(z, 4) ? pick(z, usual + 1) : (uint32_t)rnd(z);
}

static void rand_cmd(struct fuzz *z, struct gmem_accel_cmd *c)
{
	c->op = rand_small(z, GMEM_ACCEL_OP_AXPY + 1);
	c->flags = rand_small(z, 2);
	c->dst = rand_ptr(z);
	c->src = rand_ptr(z);
	c->size = pick(z, 3) ? pick(z, 2 * PAGE) : rand_size(z);
	c->value = rnd(z);
	c->value2 = rnd(z);
	c->dst_stride = pick(z, 2) ? 8 << pick(z, 10) : (uint32_t)rnd(z);
	c->src_stride = pick(z, 2) ? 8 << pick(z, 10) : (uint32_t)rnd(z);
}

/* Fill the argument page for ioctl @cmd as the structure it names, fields at random. */
static void rand_arg(struct fuzz *z, unsigned long cmd)
{
	for (size_t i = 0; i < PAGE; i += 8)
		*(uint64_t *)(z->arg + i) = pick(z, 4) ? 0 : rnd(z);
	if (cmd == GMEM_ACCEL_IOC_SUBMIT) {
		struct gmem_accel_submit *s = (void *)z->arg;
		uint32_t n = pick(z, 256);

		for (uint32_t i = 0; i < n; i++)
			rand_cmd(z, &z->cmds[i]);
		s->cmds = pick(z, 5) ? (uintptr_t)z->cmds : rand_ptr(z);
		s->count = pick(z, 4) ? pick(z, GMEM_ACCEL_MAX_BATCH + 2) : (uint32_t)rnd(z);
		if (s->count > n && s->cmds == (uintptr_t)z->cmds)
			s->count = n;
		/* (a batch that may be waited for in the call, or not) */
		s->flags = rand_small(z, 0) | (pick(z, 4) ? 0 : GMEM_ACCEL_SUBMIT_WAIT);
	} else if (cmd == GMEM_ACCEL_IOC_WAIT) {
		struct gmem_accel_wait *w = (void *)z->arg;

		w->fence = pick(z, 2) ? z->fences[pick(z, 8)] : rnd(z);
		w->timeout_ms = pick(z, 200);	/* a wait is bounded; its fence is not */
		w->flags = rand_small(z, 0);
	} else if (cmd == GMEM_ACCEL_IOC_SNAPSHOT) {
		struct gmem_accel_snapshot *s = (void *)z->arg;

		s->addr = rand_ptr(z) & (pick(z, 4) ? ~(PAGE - 1) : ~0ull);
		s->npages = pick(z, 2) ? pick(z, ARENA / PAGE + 8) : rand_size(z);
		s->out = pick(z, 2) ? (uintptr_t)z->arena + pick(z, PAGE) : rand_ptr(z);
		s->flags = rand_small(z, 0);
	} else if (cmd == GMEM_ACCEL_IOC_MIGRATE || cmd == GMEM_ACCEL_IOC_ADVISE) {
		struct gmem_accel_migrate *m = (void *)z->arg;	/* advise: addr, size, u32 x2 */

		m->addr = rand_ptr(z) & (pick(z, 4) ? ~(PAGE - 1) : ~0ull);
		m->size = rand_size(z);
		m->target = rand_small(z, 3);
		m->flags = rand_small(z, 0);
	} else if (_IOC_TYPE(cmd) == 'H') {
		struct hmm_dmirror_cmd *h = (void *)z->arg;

		h->addr = rand_ptr(z) & (pick(z, 4) ? ~(PAGE - 1) : ~0ull);
		/* ptr receives up to npages pages of data: the arena only */
		h->ptr = (uintptr_t)z->arena + pick(z, 2) * (ARENA / 2);
		h->npages = pick(z, 3) ? pick(z, ARENA / 2 / PAGE) : rand_size(z);
		if (h->npages > ARENA / 2 / PAGE && pick(z, 2))
			h->ptr = rand_ptr(z);
	}
}

static const unsigned long accel_cmds[] = {
	GMEM_ACCEL_IOC_GET_INFO, GMEM_ACCEL_IOC_SUBMIT, GMEM_ACCEL_IOC_WAIT,
	GMEM_ACCEL_IOC_SNAPSHOT, GMEM_ACCEL_IOC_STATS, GMEM_ACCEL_IOC_MIGRATE,
	GMEM_ACCEL_IOC_ADVISE, GMEM_ACCEL_IOC_OBJ_ALLOC, GMEM_ACCEL_IOC_OBJ_FREE,
	GMEM_ACCEL_IOC_OBJ_QUERY, GMEM_ACCEL_IOC_OBJ_EXPORT, GMEM_ACCEL_IOC_OBJ_IMPORT,
	GMEM_ACCEL_IOC_FENCE_EXPORT,
};
static const unsigned long dmirror_cmds[] = {
	HMM_DMIRROR_READ, HMM_DMIRROR_WRITE, HMM_DMIRROR_MIGRATE_TO_DEV,
	HMM_DMIRROR_MIGRATE_TO_SYS, HMM_DMIRROR_SNAPSHOT, HMM_DMIRROR_EXCLUSIVE,
	HMM_DMIRROR_CHECK_EXCLUSIVE, HMM_DMIRROR_RELEASE,
};

static unsigned long rand_ioctl(struct fuzz *z, bool dmirror)
{
	const unsigned long *real = dmirror ? dmirror_cmds : accel_cmds;
	size_t n = dmirror ? sizeof(dmirror_cmds) / sizeof(*real) :
			     sizeof(accel_cmds) / sizeof(*real);
	unsigned long c = real[pick(z, n)];

	switch (pick(z, 10)) {
	case 0: /* another size or direction */
		return _IOC(pick(z, 4), _IOC_TYPE(c), _IOC_NR(c), pick(z, 256));
	case 1: /* another number of ours */
		return _IOC(_IOC_DIR(c), _IOC_TYPE(c), pick(z, 32), _IOC_SIZE(c));
	case 2: /* anything */
		return (uint32_t)rnd(z);
	default:
		return c;
	}
}

/* The child: @count calls on a fresh open of @path. */
static void fuzz_node(const char *path, bool dmirror, uint64_t seed, unsigned long count,
		      struct fuzz_progress *pr)
{
	struct fuzz z = { .rng = seed | 1 };
	int fd = open(path, O_RDWR);
	uint8_t *m;

	if (fd < 0)
		_exit(10);
	m = mmap(NULL, ARENA + 24 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	z.arg = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	z.cmds = calloc(256, sizeof(*z.cmds));
	if (m == MAP_FAILED || z.arg == MAP_FAILED || !z.cmds)
		_exit(11);
	z.arena = m;
	pr->arena = (uintptr_t)m;
	z.none = m + ARENA;		/* the guard */
	z.ro = m + ARENA + PAGE;
	z.hole = m + ARENA + 8 * PAGE;
	mprotect(z.none, PAGE, PROT_NONE);
	memset(z.ro, 0x5a, PAGE);
	mprotect(z.ro, PAGE, PROT_READ);
	munmap(z.hole, 16 * PAGE);
	memset(z.arena, 0x11, ARENA / 2);	/* half touched, half never */

	for (unsigned long i = 0; i < count; i++) {
		unsigned long cmd = rand_ioctl(&z, dmirror);
		void *arg = z.arg;

		rand_arg(&z, cmd);
		if (!pick(&z, 8))
			arg = (void *)(uintptr_t)rand_ptr(&z);
		pr->cmd = cmd;
		if (arg == z.arg)
			memcpy(pr->arg, z.arg, sizeof(pr->arg));
		else
			memset(pr->arg, 0, sizeof(pr->arg));
		if (ioctl(fd, cmd, arg) == 0 && cmd == GMEM_ACCEL_IOC_SUBMIT && arg == z.arg)
			z.fences[pick(&z, 8)] = ((struct gmem_accel_submit *)z.arg)->fence;
		pr->calls = i + 1;
	}
	close(fd);
	pr->done = 1;
	_exit(0);
}

/* Backtraces of every CPU and of blocked tasks, to the kernel log (console). */
static void gmem_sysrq_dump(void)
{
	int fd = open("/proc/sysrq-trigger", O_WRONLY);

	if (fd < 0)
		return;
	if (write(fd, "l", 1) < 0 || write(fd, "w", 1) < 0)
		perror("sysrq");
	close(fd);
}

/* The kernel stack of task @pid, as /proc shows it (CONFIG_STACKTRACE). */
static void gmem_print_stack(pid_t pid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stack", pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("#   %s", line);
	fclose(f);
}

/* Fuzz one node in a child, watched: a call that does not return within STALL_S fails. */
static int fuzz_watched(const char *path, bool dmirror, uint64_t seed, unsigned long count,
			struct __test_metadata *_metadata)
{
	struct fuzz_progress *pr = mmap(NULL, sizeof(*pr), PROT_READ | PROT_WRITE,
					MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned long last = 0;
	int status = 0, still = 0;
	pid_t pid;

	if (pr == MAP_FAILED)
		return -1;
	pid = fork();
	if (pid == 0)
		fuzz_node(path, dmirror, seed, count, pr);
	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		usleep(100 * 1000);
		still = pr->calls == last ? still + 1 : 0;
		last = pr->calls;
		if (still >= STALL_S * 10) {
			TH_LOG("%s: call %lu (ioctl %#lx) did not return in %d s", path, last + 1,
			       pr->cmd, STALL_S);
			TH_LOG("argument %#llx %#llx %#llx %#llx %#llx %#llx; arena at %#llx",
			       (unsigned long long)pr->arg[0], (unsigned long long)pr->arg[1],
			       (unsigned long long)pr->arg[2], (unsigned long long)pr->arg[3],
			       (unsigned long long)pr->arg[4], (unsigned long long)pr->arg[5],
			       (unsigned long long)pr->arena);
			gmem_print_stack(pid);	/* where the call is */
			gmem_sysrq_dump();
			kill(pid, SIGKILL);
			munmap(pr, sizeof(*pr));
			return -1;
		}
	}
	printf("# %s: %lu calls, exit %d\n", path, pr->calls,
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	munmap(pr, sizeof(*pr));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The device still moves data right: copy, fill and a round trip through HBM. */
static int device_still_works(int n)
{
	size_t len = 64 * PAGE;
	uint8_t *a = map_anon(len, PROT_READ | PROT_WRITE), *b = map_anon(len, PROT_READ | PROT_WRITE);
	int fd = gmem_open(n, O_RDWR), ret = -1;

	if (fd < 0 || !a || !b)
		goto out;
	pattern(a, len, 77);
	if (dev_copy(fd, b, a, len) || memcmp(a, b, len))
		goto out;
	if (dev_migrate(fd, b, len, GMEM_ACCEL_TO_DEVICE) < 0 ||
	    dev_fill(fd, b + PAGE, 0x6e6e6e6e6e6e6e6eull, PAGE) || b[2 * PAGE - 1] != 0x6e ||
	    memcmp(a, b, PAGE) || memcmp(a + 2 * PAGE, b + 2 * PAGE, len - 2 * PAGE))
		goto out;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	munmap(a, len);
	munmap(b, len);
	return ret;
}

GMEM_PLAIN_FIXTURE(fuzz)

TEST_F_TIMEOUT(fuzz, every_node, 1800)
{
	uint64_t seed = gmem_expect("fuzz_seed", (uint64_t)time(NULL));
	unsigned long count = gmem_expect("fuzz_count", 800);
	int devices = gmem_expect("devices", 1), only = gmem_expect("fuzz_device", -1);
	int kinds = gmem_expect("fuzz_kinds", 3);	/* 1: gmem_accel, 2: gmem_dmirror */

	printf("# seed %llu, %lu calls per node (again: run-vm.sh --append gmemtest.fuzz_seed=%llu;"
	       " gmemtest.fuzz_device=N and fuzz_kinds=1|2 narrow it down)\n",
	       (unsigned long long)seed, count, (unsigned long long)seed);
	for (int n = 0; n < devices; n++) {
		if (only >= 0 && n != only)
			continue;
		for (int dm = 0; dm < 2; dm++) {
			char path[64];

			if (!(kinds & (1 << dm)))
				continue;
			snprintf(path, sizeof(path), dm ? "/dev/gmem_dmirror%d" : "/dev/gmem_accel%d",
				 n);
			EXPECT_EQ(0, fuzz_watched(path, dm, seed + 2 * n + dm, count, _metadata))
				TH_LOG("%s, seed %llu", path, (unsigned long long)(seed + 2 * n + dm));
			/* Nothing of the fuzzing process stays behind: its context, its HBM pages. */
			EXPECT_EQ(0, gmem_wait_stat(n, "contexts_now", 0, 30000)) TH_LOG("%s", path);
			EXPECT_EQ(0, gmem_wait_stat(n, "hbm_pages_now", 0, 30000))
				TH_LOG("%s: HBM pages left behind, seed %llu", path,
				       (unsigned long long)(seed + 2 * n + dm));
		}
		EXPECT_EQ(0, device_still_works(n)) TH_LOG("gmem_accel%d after fuzzing", n);
	}
}

TEST_HARNESS_MAIN
