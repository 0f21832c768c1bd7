// SPDX-License-Identifier: GPL-2.0
/*
 * For scripts/run-bench.sh (not a suite test): the driver's memory policies (docs/uapi.md,
 * "Memory policy"), each on and off, on the workload it is for: a device streaming through
 * CPU-written memory a page per command (density prefetch; and each replay policy), the same
 * pages in random order, a CPU/device ping-pong on one page set (thrashing mitigation), a
 * device reading one remote range over and over (access-counter migration), and a working set
 * 4x the HBM that the device streams through twice with PREFER_DEVICE advice (every policy at
 * its default, against every policy off; and at the defaults in THPs), and managed memory the device and the CPU read in
 * turns (read duplication). One line a run:
 *   BENCH-POLICY <workload> <setting> <ms> <fault groups> <pages migrated> <evictions> <MiB/s>
 * A policy whose parameter the driver lacks is skipped (BENCH-POLICY-SKIP). Every run checks
 * its bytes. Parameters are restored at the end. WORKLOAD names the only ones to run (to
 * profile one): prefetch, replay, thrashing, access-counters, readdup, oversub (every policy
 * at its default, in 4 KiB pages and in THPs), oversub-off (every one off).
 *   policy-bench GMEM_DEVICE [WORKLOAD...]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define MiB (1ul << 20)
#define PARAMS "/sys/module/gmem_accel/parameters/"

#define SCRATCH (64 * 1024ul)

static int dev;
static char **only;	/* the workloads named on the command line; NULL: all */
/* Where the device's reads land: a mapping of its own, away from the program's data. */
static char *scratch;

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "policy-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int64_t stat_of(const char *name)
{
	int64_t v;

	if (gmem_debugfs_stat(dev, name, &v))
		die(name);
	return v;
}

/* The parameters this run changed, to restore at exit. */
static struct { char name[64], value[32]; } saved[16];
static int nsaved;

/* Set driver parameter @name to @value; false if the driver has no such parameter. */
static bool param_set(const char *name, const char *value)
{
	char path[160], old[32];
	int i;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	if (read_sysfs(path, old, sizeof(old)))
		return false;
	for (i = 0; i < nsaved && strcmp(saved[i].name, name); i++)
		;
	if (i == nsaved && nsaved < 16) {
		snprintf(saved[i].name, sizeof(saved[i].name), "%s", name);
		snprintf(saved[i].value, sizeof(saved[i].value), "%s", old);
		nsaved++;
	}
	if (write_sysfs(path, value))
		die(path);
	return true;
}

static void params_restore(void)
{
	for (int i = 0; i < nsaved; i++) {
		char path[160];

		snprintf(path, sizeof(path), PARAMS "%.63s", saved[i].name);
		write_sysfs(path, saved[i].value);
	}
}

/* Every policy off, or every one back at its default (as the module was loaded). */
static bool policies_off(bool off)
{
	static const char *const names[] = { "uvm_perf_prefetch_enable",
					     "uvm_perf_thrashing_enable",
					     "uvm_perf_access_counter_migration_enable",
					     "gmem_perf_oversub_enable" };
	bool all = true;

	for (unsigned int i = 0; i < 4; i++) {
		if (off) {
			all &= param_set(names[i], "0");
			continue;
		}
		for (int j = 0; j < nsaved; j++) {
			char path[160];

			if (strcmp(saved[j].name, names[i]))
				continue;
			snprintf(path, sizeof(path), PARAMS "%s", names[i]);
			write_sysfs(path, saved[j].value);
		}
	}
	return all;
}

/* Pages moved between system memory and HBM, managed objects' (in 4 KiB device pages) too. */
static int64_t pages_moved(void)
{
	return stat_of("migrated_to_device") + stat_of("migrated_to_system") +
	       stat_of("managed_to_hbm") + stat_of("managed_to_sys");
}

struct run {
	double t0;
	int64_t groups, migrated, evictions;
};

static void run_begin(struct run *r)
{
	r->groups = stat_of("fault_groups");
	r->migrated = pages_moved();
	r->evictions = stat_of("evictions");
	r->t0 = now_ms();
}

static void run_end(struct run *r, const char *workload, const char *setting, size_t bytes)
{
	double ms = now_ms() - r->t0;

	printf("BENCH-POLICY %s %s %.1f %lld %lld %lld %.1f\n", workload, setting, ms,
	       (long long)(stat_of("fault_groups") - r->groups),
	       (long long)(pages_moved() - r->migrated),
	       (long long)(stat_of("evictions") - r->evictions), bytes / MiB / (ms / 1e3));
	fflush(stdout);
}

static char *fresh(size_t len, bool populate)
{
	char *p = map_anon(len, PROT_READ | PROT_WRITE);

	/* 4 KiB pages: a THP is mapped a window at once, which no policy would change. */
	if (!p || madvise(p, len, MADV_NOHUGEPAGE))
		die("mmap");
	if (populate)
		pattern(p, len, 7);
	return p;
}

/* The device reads @npages pages of @buf, one COPY a page, in the order @order gives. */
static void read_pages(int fd, char *buf, const unsigned int *order, unsigned int npages)
{
	struct gmem_accel_cmd c[GMEM_ACCEL_MAX_BATCH];

	for (unsigned int i = 0; i < npages; i += GMEM_ACCEL_MAX_BATCH) {
		unsigned int n = npages - i < GMEM_ACCEL_MAX_BATCH ? npages - i :
								   GMEM_ACCEL_MAX_BATCH;

		for (unsigned int k = 0; k < n; k++)
			c[k] = (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_COPY,
				.dst = (uintptr_t)scratch + (k % 16) * PAGE,
				.src = (uintptr_t)buf + (size_t)order[i + k] * PAGE, .size = PAGE };
		if (run_cmds(fd, c, n))
			die("device read");
	}
}

/* A page at a time, in order or not: 64 MiB of CPU-written memory the device reads. */
static void bench_touch(int fd, const char *workload, const char *setting, bool random)
{
	unsigned int npages = 64 * MiB / PAGE, *order = malloc(npages * sizeof(*order));
	char *buf = fresh(64 * MiB, true);
	unsigned int seed = 1;
	struct run r;

	if (!order)
		die("malloc");
	for (unsigned int i = 0; i < npages; i++)
		order[i] = i;
	for (unsigned int i = npages - 1; random && i > 0; i--) {
		unsigned int j, t;

		seed = seed * 1103515245 + 12345;
		j = seed % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	run_begin(&r);
	read_pages(fd, buf, order, npages);
	run_end(&r, workload, setting, 64 * MiB);
	/* The last page read is in scratch: the bytes came through. */
	if (memcmp(scratch + ((npages - 1) % 16) * PAGE, buf + (size_t)order[npages - 1] * PAGE,
		   PAGE)) {
		errno = EIO;
		die("device read: wrong bytes");
	}
	munmap(buf, 64 * MiB);
	free(order);
}

/*
 * The CPU and the device take turns writing the same 64 pages, which prefer HBM: the CPU the
 * first byte of each, the device the second half of each.
 */
static void bench_pingpong(int fd, const char *setting)
{
	const size_t len = GMEM_ACCEL_MAX_BATCH * PAGE;
	const unsigned int rounds = 200;
	struct gmem_accel_cmd c[GMEM_ACCEL_MAX_BATCH];
	char *buf = fresh(len, true);
	struct run r;

	for (unsigned int k = 0; k < GMEM_ACCEL_MAX_BATCH; k++)
		c[k] = (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_FILL,
			.dst = (uintptr_t)buf + k * PAGE + PAGE / 2, .size = PAGE / 2,
			.value = 0x5a5a5a5a5a5a5a5aull };
	if (dev_advise(fd, buf, len, GMEM_ACCEL_PREFER_DEVICE, 0))
		die("advise");
	run_begin(&r);
	for (unsigned int i = 0; i < rounds; i++) {
		for (size_t off = 0; off < len; off += PAGE)
			buf[off] = (char)i;
		if (run_cmds(fd, c, GMEM_ACCEL_MAX_BATCH))
			die("ping-pong: device write");
	}
	run_end(&r, "pingpong", setting, 2 * rounds * len);
	for (size_t off = 0; off < len; off += PAGE)
		if (buf[off] != (char)(rounds - 1) || buf[off + PAGE / 2] != 0x5a) {
			errno = EIO;
			die("ping-pong: wrong bytes");
		}
	munmap(buf, len);
}

/* The device reads @buf (@len bytes) through @passes times, 64 KiB a command into the scratch. */
static void read_all(int fd, const char *buf, size_t len, unsigned int passes, const char *what)
{
	struct gmem_accel_cmd c[GMEM_ACCEL_MAX_BATCH];
	unsigned int n = 0;

	for (unsigned int p = 0; p < passes; p++) {
		for (size_t off = 0; off < len; off += SCRATCH) {
			c[n++] = (struct gmem_accel_cmd){ .op = GMEM_ACCEL_OP_COPY,
				.dst = (uintptr_t)scratch, .src = (uintptr_t)buf + off,
				.size = SCRATCH };
			if (n == GMEM_ACCEL_MAX_BATCH || (p == passes - 1 && off + SCRATCH >= len)) {
				if (run_cmds(fd, c, n))
					die(what);
				n = 0;
			}
		}
	}
}

/* read_all() as one run of @workload; the bytes of the last read are checked. */
static void read_through(int fd, char *buf, size_t len, unsigned int passes,
			 const char *workload, const char *setting)
{
	struct run r;

	run_begin(&r);
	read_all(fd, buf, len, passes, workload);
	run_end(&r, workload, setting, passes * len);
	if (memcmp(scratch, buf + len - SCRATCH, SCRATCH)) {
		errno = EIO;
		die(workload);
	}
}

/* The device reads the same 2 MiB of system memory over and over. */
static void bench_hammer(int fd, const char *setting)
{
	char *buf = fresh(2 * MiB, true);

	read_through(fd, buf, 2 * MiB, 64, "hammer", setting);
	munmap(buf, 2 * MiB);
}

/*
 * A working set 4x the HBM, preferring it, that the device reads through twice: in 4 KiB
 * pages, or (@thp) in THPs, as anonymous memory comes where THP is on, which the device
 * maps and migrates 2 MiB at a time.
 */
static void bench_oversub(int fd, const char *setting, bool thp)
{
	struct gmem_accel_info info = { 0 };
	size_t len;
	char *map, *buf;

	if (ioctl(fd, GMEM_ACCEL_IOC_GET_INFO, &info))
		die("info");
	len = 4 * (info.hbm_size & ~(2 * MiB - 1));
	/* (2 MiB more, for a start on a THP boundary) */
	map = map_anon(len + 2 * MiB, PROT_READ | PROT_WRITE);
	if (!map)
		die("mmap");
	buf = (char *)(((uintptr_t)map + 2 * MiB - 1) & ~(2 * MiB - 1));
	if (madvise(buf, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		die("madvise");
	pattern(buf, len, 7);
	if (dev_advise(fd, buf, len, GMEM_ACCEL_PREFER_DEVICE, 0))
		die("advise");
	read_through(fd, buf, len, 2, "oversub4x", setting);
	munmap(map, len + 2 * MiB);
}

/*
 * 16 MiB of managed memory the CPU wrote, read by the device and then by the CPU, in turns:
 * with read-mostly each side keeps a copy after the first round; without, every round moves
 * every page to HBM and back.
 */
static void bench_readdup(int fd, bool read_mostly)
{
	struct gmem_accel_obj_alloc al = { .size = 16 * MiB,
		.flags = GMEM_ACCEL_OBJ_MANAGED | GMEM_ACCEL_OBJ_PAGE_4K };
	struct gmem_accel_obj_free fr = { 0 };
	const unsigned int rounds = 10;
	unsigned long sum = 0, want = 0;
	const char *setting = read_mostly ? "read-mostly" : "no-read-mostly";
	struct run r;
	char *buf;

	if (ioctl(fd, GMEM_ACCEL_IOC_OBJ_ALLOC, &al))
		die("managed object");
	buf = mmap(NULL, al.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, al.mmap_offset);
	if (buf == MAP_FAILED)
		die("mmap of the managed object");
	pattern(buf, al.size, 9);
	for (size_t off = 0; off < al.size; off += 64)
		want += (unsigned char)buf[off];
	if (read_mostly &&
	    dev_advise(fd, buf, al.size, 0, GMEM_ACCEL_ADVISE_READ_MOSTLY |
					    GMEM_ACCEL_ADVISE_KEEP_LOCATION))
		die("advise read-mostly");
	run_begin(&r);
	for (unsigned int i = 0; i < rounds; i++) {
		read_all(fd, buf, al.size, 1, "readdup");
		sum = 0;
		for (size_t off = 0; off < al.size; off += 64)
			sum += (unsigned char)buf[off];
	}
	run_end(&r, "readdup", setting, 2 * rounds * al.size);
	if (sum != want || memcmp(scratch, buf + al.size - SCRATCH, SCRATCH)) {
		errno = EIO;
		die("readdup: wrong bytes");
	}
	munmap(buf, al.size);
	fr.handle = al.handle;
	if (ioctl(fd, GMEM_ACCEL_IOC_OBJ_FREE, &fr))
		die("free the managed object");
}

/* Is workload @what to run? */
static bool wanted(const char *what)
{
	for (char **w = only; w && *w; w++)
		if (!strcmp(*w, what))
			return true;
	return !only;
}

int main(int argc, char **argv)
{
	static const char *const replay[] = { "block", "batch", "batch_flush", "once" };
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: policy-bench GMEM_DEVICE [WORKLOAD...]\n");
		return 2;
	}
	dev = atoi(argv[1]);
	if (argc > 2)
		only = argv + 2;
	fd = gmem_open(dev, O_RDWR);
	if (fd < 0)
		die("open /dev/gmem_accelN");
	atexit(params_restore);
	scratch = fresh(SCRATCH, true);

	for (int on = 1; on >= 0 && wanted("prefetch"); on--) {
		if (!param_set("uvm_perf_prefetch_enable", on ? "1" : "0")) {
			printf("BENCH-POLICY-SKIP prefetch\n");
			break;
		}
		bench_touch(fd, "stream", on ? "prefetch" : "no-prefetch", false);
		bench_touch(fd, "random", on ? "prefetch" : "no-prefetch", true);
	}
	params_restore();
	for (unsigned int i = 0; i < 4 && wanted("replay"); i++) {
		char v[4];

		snprintf(v, sizeof(v), "%u", i);
		if (!param_set("uvm_perf_fault_replay_policy", v)) {
			printf("BENCH-POLICY-SKIP replay\n");
			break;
		}
		bench_touch(fd, "stream", replay[i], false);
	}
	params_restore();
	for (int on = 1; on >= 0 && wanted("thrashing"); on--) {
		if (!param_set("uvm_perf_thrashing_enable", on ? "1" : "0")) {
			printf("BENCH-POLICY-SKIP thrashing\n");
			break;
		}
		/* A round under TCG takes milliseconds, not a GPU's microseconds: 20x the lapse. */
		param_set("uvm_perf_thrashing_lapse_usec", "10000");
		bench_pingpong(fd, on ? "thrashing" : "no-thrashing");
	}
	params_restore();
	for (int on = 1; on >= 0 && wanted("access-counters"); on--) {
		if (!param_set("uvm_perf_access_counter_migration_enable", on ? "1" : "0")) {
			printf("BENCH-POLICY-SKIP access-counters\n");
			break;
		}
		bench_hammer(fd, on ? "access-counters" : "no-access-counters");
	}
	params_restore();
	if (wanted("readdup")) {
		bench_readdup(fd, true);
		bench_readdup(fd, false);
	}
	if (wanted("oversub")) {
		bench_oversub(fd, "defaults", false);
		bench_oversub(fd, "defaults-thp", true);
	}
	if (wanted("oversub-off")) {
		if (policies_off(true))
			bench_oversub(fd, "all-off", false);
		else
			printf("BENCH-POLICY-SKIP all-off\n");
		policies_off(false);
	}
	close(fd);
	return 0;
}
