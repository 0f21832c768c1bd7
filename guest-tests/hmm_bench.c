// SPDX-License-Identifier: GPL-2.0
/*
 * Fault, migration and DMA figures of an HMM device, through lib/test_hmm's uAPI so that
 * gmem-accel (/dev/gmem_dmirrorN) and lib/test_hmm.ko (/dev/hmm_dmirrorN) run the very same
 * code:
 *   hmm-bench NAME NODE [GMEM_DEVICE [BENCH...]]
 * prints "BENCH NAME METRIC VALUE UNIT" lines (scripts/run-bench.sh makes the table). With
 * GMEM_DEVICE (the N of /dev/gmem_accelN behind NODE; "-" for none) it also times the
 * device's own commands faulting over fresh memory, the DMA engine copying between HBM and
 * system memory and a working set 4x the HBM (test_hmm has no fixed device memory to
 * oversubscribe). NODE "accel" runs only the device's own commands, on its DRM accel front
 * end (given to it for the run). The device-* workloads are the test_hmm ones run through the
 * device's own commands, the same on either front end (metrics named device_*): one-page
 * faults from 1-32 processes, moves by advice (PREFER_DEVICE and a device read in,
 * PREFER_SYSTEM home), the 4x working set by advice. BENCH names the only benchmarks to run
 * (to profile one): latency, faults, migration, concurrent, device-faults, device-latency,
 * dma, oversubscription, device-concurrent, device-migration, device-oversubscription. Every
 * figure is a median of
 * REPS runs (latencies: of LAT_SAMPLES samples); a run whose result is wrong (bytes, cpages,
 * faults) aborts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <lib/test_hmm_uapi.h>

#include "gmem_test_util.h"

#define PAGE		4096ul
#define MiB		(1ul << 20)
#define TWO_MiB		(2 * MiB)
#define REPS		5
#define LAT_SAMPLES	256

static const char *name;
/* NODE "accel": the device's DRM accel front end (its own commands only) */
static bool accel;
/* Put before every metric's name: "device_" while a test_hmm workload runs on device commands */
static const char *prefix = "";

/*
 * What a workload drives: a test_hmm node (its dmirror commands), or with @path NULL device
 * @dev's own commands, on whichever front end has the device (accel).
 */
struct node {
	const char *path;
	int dev;
};

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The @pct percentile of @n samples (sorts them). */
static double percentile(double *v, int n, int pct)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(n - 1) * pct / 100];
}

static void report(const char *metric, double value, const char *unit)
{
	printf("BENCH %s %s%s %.3f %s\n", name, prefix, metric, value, unit);
	fflush(stdout);
}

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "hmm-bench %s: %s: %s\n", name, what, strerror(errno));
	exit(1);
}

/*
 * One test_hmm command; the run is void (exit) unless it did all @npages. A migration may
 * say fewer: 7.3's test_hmm counts a THP it moves whole as one (its migrate_vma entries); the
 * migration benchmark checks the bytes instead.
 */
static struct hmm_dmirror_cmd dmirror(int fd, unsigned long req, void *addr, void *ptr,
				      unsigned long npages)
{
	struct hmm_dmirror_cmd cmd = {
		.addr = (uintptr_t)addr, .ptr = (uintptr_t)ptr, .npages = npages,
	};
	bool migration = req == HMM_DMIRROR_MIGRATE_TO_DEV || req == HMM_DMIRROR_MIGRATE_TO_SYS;

	while (ioctl(fd, req, &cmd)) {
		if (errno != EINTR)
			die("ioctl");
	}
	if (migration ? !cmd.cpages || cmd.cpages > npages : cmd.cpages != npages) {
		fprintf(stderr, "hmm-bench %s: ioctl 0x%lx on %lu pages at %p did %llu\n", name, req,
			npages, addr, (unsigned long long)cmd.cpages);
		errno = EIO;
		die("cpages short");
	}
	return cmd;
}

static void *map_touched(size_t size, unsigned char byte)
{
	void *p = map_anon(size, PROT_READ | PROT_WRITE);

	if (!p)
		die("mmap");
	memset(p, byte, size);
	return p;
}

static double mibps(size_t bytes, double us)
{
	return bytes / (double)MiB / (us / 1e6);
}

/*
 * A 2 MiB block of small pages nobody touched but its last, which the CPU wrote: its page
 * table exists, so a device fault on one page faults in that page alone (hmm_range_fault()
 * faults in every page of a range whose page table does not exist yet). *@map: the mapping
 * to munmap, 4 MiB.
 */
static char *fresh_block(char **map)
{
	char *buf;

	*map = map_anon(2 * TWO_MiB, PROT_READ | PROT_WRITE);
	if (!*map)
		die("mmap");
	buf = (char *)(((uintptr_t)*map + TWO_MiB - 1) & ~(TWO_MiB - 1));
	if (madvise(buf, TWO_MiB, MADV_NOHUGEPAGE))
		die("madvise");
	buf[TWO_MiB - 1] = 1;
	return buf;
}

/* The device reads fresh page @page into @mirror: one fault; its round trip in us. */
static double timed_fault(int fd, char *page, char *mirror)
{
	struct hmm_dmirror_cmd c;
	double t0 = now_us(), us;

	c = dmirror(fd, HMM_DMIRROR_READ, page, mirror, 1);
	us = now_us() - t0;
	if (c.faults != 1 || mirror[0] != 0) {
		errno = EIO;
		die("fault round trip: not one fault, or wrong data");
	}
	return us;
}

/*
 * Device fault round trip: the device reads one page of memory nobody touched yet (one
 * fault, replayed); then the same page again (mapped, no fault).
 */
static void bench_fault_latency(int fd)
{
	double fault[LAT_SAMPLES], mapped[LAT_SAMPLES];
	char *map, *buf = fresh_block(&map);
	char *mirror = map_touched(PAGE, 0x5a);

	for (int i = 0; i < LAT_SAMPLES; i++) {
		struct hmm_dmirror_cmd c;
		double t0;

		fault[i] = timed_fault(fd, buf + i * PAGE, mirror);
		t0 = now_us();
		c = dmirror(fd, HMM_DMIRROR_READ, buf + i * PAGE, mirror, 1);
		mapped[i] = now_us() - t0;
		if (c.faults != 0) {
			errno = EIO;
			die("mapped access faulted");
		}
	}
	report("fault_rt_p50", percentile(fault, LAT_SAMPLES, 50), "us");
	report("fault_rt_p99", percentile(fault, LAT_SAMPLES, 99), "us");
	report("mapped_access_p50", percentile(mapped, LAT_SAMPLES, 50), "us");
	munmap(map, 2 * TWO_MiB);
	munmap(mirror, PAGE);
}

/*
 * The device reads (or writes) @size of fresh anonymous memory: every page faults. With
 * @small, the memory is 4 KiB pages (MADV_NOHUGEPAGE), which a driver maps a fault batch at
 * a time rather than 2 MiB at a time.
 */
static void bench_fault_throughput(int fd, size_t size, bool write, bool small)
{
	double runs[REPS];
	char metric[64];

	for (int r = 0; r < REPS; r++) {
		char *mirror = map_touched(size, 0x33);
		char *buf = map_anon(size, PROT_READ | PROT_WRITE);
		double t0;

		if (!buf)
			die("mmap");
		if (small && madvise(buf, size, MADV_NOHUGEPAGE))
			die("madvise");
		t0 = now_us();
		dmirror(fd, write ? HMM_DMIRROR_WRITE : HMM_DMIRROR_READ, buf, mirror,
			size / PAGE);
		runs[r] = mibps(size, now_us() - t0);
		if ((write ? buf[size - 1] : mirror[size - 1]) != (write ? 0x33 : 0)) {
			errno = EIO;
			die("fault throughput: wrong data");
		}
		munmap(buf, size);
		munmap(mirror, size);
	}
	snprintf(metric, sizeof(metric), "%s_fault_%s%zuM", write ? "write" : "read",
		 small ? "4k_" : "", size / MiB);
	report(metric, percentile(runs, REPS, 50), "MiB/s");
}

/* Device @dev's node for its own commands: /dev/gmem_accelN, or its accel node. */
static int open_device(int dev)
{
	return accel ? gmem_open_accel(dev, O_RDWR) : gmem_open(dev, O_RDWR);
}

static int node_open(const struct node *nd)
{
	return nd->path ? open(nd->path, O_RDWR) : open_device(nd->dev);
}

/* ADVISE on either front end's file: [@addr, +@size)'s preferred @location. */
static void advise(int fd, void *addr, size_t size, unsigned int location)
{
	struct gmem_accel_advise a = { .addr = (uintptr_t)addr, .size = size,
				       .location = location };

	if (ioctl(fd, gmem_ioc(fd, GMEM_ACCEL_IOC_ADVISE), &a))
		die("advise");
}

/* Does the device map the page at @addr in HBM (SNAPSHOT, on either front end)? */
static bool in_hbm(int fd, void *addr)
{
	uint8_t v = 0;
	struct gmem_accel_snapshot s = { .addr = (uintptr_t)addr & ~(PAGE - 1), .npages = 1,
					 .out = (uintptr_t)&v };

	if (ioctl(fd, gmem_ioc(fd, GMEM_ACCEL_IOC_SNAPSHOT), &s))
		die("snapshot");
	return v & GMEM_ACCEL_PAGE_HBM;
}

/*
 * Move @size of @buf to device memory, reading it into @mirror (test_hmm's MIGRATE_TO_DEV;
 * on device commands: PREFER_DEVICE, then the device reads it), or home (MIGRATE_TO_SYS;
 * PREFER_SYSTEM, which brings the range's HBM pages home at once).
 */
static void node_move(const struct node *nd, int fd, char *buf, char *mirror, size_t size,
		      bool to_device)
{
	if (nd->path) {
		dmirror(fd, to_device ? HMM_DMIRROR_MIGRATE_TO_DEV : HMM_DMIRROR_MIGRATE_TO_SYS,
			buf, mirror, size / PAGE);
		return;
	}
	advise(fd, buf, size, to_device ? GMEM_ACCEL_PREFER_DEVICE : GMEM_ACCEL_PREFER_SYSTEM);
	if (to_device && dev_copy(fd, mirror, buf, size))
		die("device read of a PREFER_DEVICE range");
	if (in_hbm(fd, buf + size / 2) != to_device) {
		errno = EIO;
		die(to_device ? "the device read moved nothing to HBM" :
				"PREFER_SYSTEM left the pages in HBM");
	}
}

/*
 * @size of CPU-written memory to device memory (test_hmm's MIGRATE_TO_DEV, which also reads
 * it back to the mirror), back by CPU faults (a load per page), and to device memory and
 * back again (MIGRATE_TO_SYS); node_move() says how on the device's own commands.
 */
static void bench_migration(const struct node *nd, size_t size)
{
	double to_dev[REPS], cpu_back[REPS], to_sys[REPS];
	int fd = node_open(nd);

	if (fd < 0)
		die("migration: open");
	for (int r = 0; r < REPS; r++) {
		char *buf = map_touched(size, 0x77), *mirror = map_touched(size, 0);
		volatile char *v = buf;
		unsigned int sum = 0;
		double t0 = now_us();

		node_move(nd, fd, buf, mirror, size, true);
		to_dev[r] = mibps(size, now_us() - t0);
		t0 = now_us();
		for (size_t off = 0; off < size; off += PAGE)
			sum += v[off];
		cpu_back[r] = mibps(size, now_us() - t0);
		if (sum != 0x77u * (size / PAGE) || mirror[size - 1] != 0x77) {
			errno = EIO;
			die("migration: wrong data");
		}
		node_move(nd, fd, buf, mirror, size, true);
		t0 = now_us();
		node_move(nd, fd, buf, mirror, size, false);
		to_sys[r] = mibps(size, now_us() - t0);
		sum = 0;
		for (size_t off = 0; off < size; off += PAGE)
			sum += v[off];
		if (sum != 0x77u * (size / PAGE)) {
			errno = EIO;
			die("migration back: wrong data");
		}
		munmap(buf, size);
		munmap(mirror, size);
	}
	report("migrate_to_device", percentile(to_dev, REPS, 50), "MiB/s");
	report("cpu_fault_back", percentile(cpu_back, REPS, 50), "MiB/s");
	report("migrate_to_system", percentile(to_sys, REPS, 50), "MiB/s");
	close(fd);
}

/* gmem-accel's DMA engine: @size between a buffer in HBM and one in system memory. */
static void bench_dma(int dev, size_t size)
{
	double to_sys[REPS], to_hbm[REPS];
	int fd = gmem_open(dev, O_RDWR);
	char *hbm, *sys;

	if (fd < 0)
		die("open /dev/gmem_accelN");
	hbm = map_touched(size, 0x11);
	sys = map_touched(size, 0x22);
	if (dev_migrate(fd, hbm, size, GMEM_ACCEL_TO_DEVICE) != (long)(size / PAGE))
		die("migrate to HBM");
	if (dev_copy(fd, sys, hbm, size))	/* maps both: the runs below do not fault */
		die("warm-up copy");
	if (!(page_view(fd, hbm) & GMEM_ACCEL_PAGE_HBM) || sys[size - 1] != 0x11) {
		errno = EIO;
		die("DMA: source not in HBM, or wrong data");
	}
	for (int r = 0; r < REPS; r++) {
		double t0 = now_us();

		if (dev_copy(fd, sys, hbm, size))
			die("copy HBM to system");
		to_sys[r] = mibps(size, now_us() - t0) / 1024;
		t0 = now_us();
		if (dev_copy(fd, hbm, sys, size))
			die("copy system to HBM");
		to_hbm[r] = mibps(size, now_us() - t0) / 1024;
	}
	report("dma_hbm_to_system", percentile(to_sys, REPS, 50), "GiB/s");
	report("dma_system_to_hbm", percentile(to_hbm, REPS, 50), "GiB/s");
	munmap(hbm, size);
	munmap(sys, size);
	close(fd);
}


/*
 * gmem-accel's own commands over fresh 4 KiB pages (no dmirror hook faulting the whole range
 * ahead): the device copies @size into fresh memory (write faults) and out of fresh memory
 * (read faults), so each fault group the device posts is one round of servicing. Also the
 * faults per group those took.
 */
static void bench_device_faults(int dev, size_t size)
{
	double wr[REPS], rd[REPS], per_group = 0;
	int fd = open_device(dev);

	if (fd < 0)
		die("open the device");
	for (int r = 0; r < REPS; r++) {
		struct gmem_accel_stats st0 = ctx_stats(fd), st;
		char *src = map_touched(size, 0x44), *dst = map_anon(size, PROT_READ | PROT_WRITE);
		char *fresh = map_anon(size, PROT_READ | PROT_WRITE);
		double t0;

		if (!dst || !fresh || madvise(dst, size, MADV_NOHUGEPAGE) ||
		    madvise(fresh, size, MADV_NOHUGEPAGE))
			die("device faults: mmap");
		t0 = now_us();
		if (dev_copy(fd, dst, src, size))
			die("device faults: copy into fresh memory");
		wr[r] = mibps(size, now_us() - t0);
		t0 = now_us();
		if (dev_copy(fd, src, fresh, size))
			die("device faults: copy out of fresh memory");
		rd[r] = mibps(size, now_us() - t0);
		st = ctx_stats(fd);
		if (dst[size - 1] != 0x44 || src[size - 1] != 0 || st.fault_groups == st0.fault_groups) {
			errno = EIO;
			die("device faults: wrong data, or no fault");
		}
		per_group += (double)(st.faults - st0.faults) / (st.fault_groups - st0.fault_groups);
		munmap(src, size);
		munmap(dst, size);
		munmap(fresh, size);
	}
	report("device_write_fault_4k_64M", percentile(wr, REPS, 50), "MiB/s");
	report("device_read_fault_4k_64M", percentile(rd, REPS, 50), "MiB/s");
	report("device_faults_per_group", per_group / REPS, "faults");
	close(fd);
}

/*
 * A device fault's round trip through the device's own commands, the same on either front
 * end: a one-page copy out of a page the CPU just wrote in a mapping of its own (so each
 * sample faults it in), into a page the device maps already. p50 and p99 of LAT_SAMPLES.
 */
static void bench_device_latency(int dev)
{
	double lat[LAT_SAMPLES];
	int fd = open_device(dev);
	char *dst = map_touched(PAGE, 0x7f);

	if (fd < 0)
		die("open the device");
	if (dev_copy(fd, dst, dst + PAGE / 2, PAGE / 2))	/* mapped from now on */
		die("device latency: warm-up copy");
	for (int i = 0; i < LAT_SAMPLES; i++) {
		char *src = map_touched(PAGE, (char)i);
		double t0 = now_us();

		if (dev_copy(fd, dst, src, PAGE))
			die("device latency: copy");
		lat[i] = now_us() - t0;
		if (dst[PAGE - 1] != (char)i) {
			errno = EIO;
			die("device latency: wrong data");
		}
		munmap(src, PAGE);
	}
	report("device_fault_rt_p50", percentile(lat, LAT_SAMPLES, 50), "us");
	report("device_fault_rt_p99", percentile(lat, LAT_SAMPLES, 99), "us");
	munmap(dst, PAGE);
	close(fd);
}

/* Faults each process of bench_concurrent_faults() times, one page each. */
#define CONC_FAULTS	64

/*
 * @n pages for one-page faults, every @stride bytes from the return: for test_hmm's commands
 * the small pages of fresh_block(); for the device's own commands @n one-page VMAs the CPU
 * wrote (@n, so that none is faulted in with another: a drm_gpusvm range is as large as its
 * VMA allows and faults in whole). *@map, *@len: what to munmap.
 */
static char *fault_pages(const struct node *nd, int n, size_t *stride, char **map, size_t *len)
{
	if (nd->path) {
		*stride = PAGE;
		*len = 2 * TWO_MiB;
		return fresh_block(map);
	}
	*stride = 2 * PAGE;
	*len = n * 2 * PAGE;
	*map = map_touched(*len, 0);
	for (int i = 0; i < n; i++) {	/* (PROT_NONE between: no two pages merge into a VMA) */
		memset(*map + i * 2 * PAGE, i + 1, PAGE);
		if (mprotect(*map + i * 2 * PAGE + PAGE, PAGE, PROT_NONE))
			die("mprotect");
	}
	return *map;
}

/* A one-page device fault on @page into @mirror; its round trip in us. */
static double node_fault(const struct node *nd, int fd, char *page, char *mirror)
{
	double t0, us;

	if (nd->path)
		return timed_fault(fd, page, mirror);
	t0 = now_us();
	if (dev_copy(fd, mirror, page, PAGE))
		die("device fault: copy");
	us = now_us() - t0;
	if (mirror[PAGE - 1] != page[PAGE - 1]) {
		errno = EIO;
		die("device fault: wrong data");
	}
	return us;
}

/*
 * One process of bench_concurrent_faults(): its own mirror (a context of its own on
 * gmem-accel), CONC_FAULTS single-page device faults on fresh memory once @go closes, each
 * timed into @lat.
 */
static void __attribute__((noreturn)) concurrent_child(const struct node *nd, int ready, int go,
							double *lat)
{
	size_t stride, len;
	char *map, *buf = fault_pages(nd, CONC_FAULTS, &stride, &map, &len);
	char *mirror = map_touched(PAGE, 0x5a);
	int fd = node_open(nd);

	if (fd < 0)
		die("concurrent faults: open");
	/* (the device maps the mirror from now on) */
	if (!nd->path && dev_copy(fd, mirror, mirror + PAGE / 2, PAGE / 2))
		die("concurrent faults: warm-up copy");
	if (write(ready, "r", 1) != 1 || read(go, mirror, 1) != 0)
		die("concurrent faults: start");
	for (int i = 0; i < CONC_FAULTS; i++)
		lat[i] = node_fault(nd, fd, buf + i * stride, mirror);
	_exit(0);
}

/* The guest's context switches so far (/proc/stat's ctxt). */
static unsigned long long context_switches(void)
{
	unsigned long long n = 0;
	char line[256];
	FILE *f = fopen("/proc/stat", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "ctxt %llu", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/*
 * @nproc processes fault at once, each in its own address space and context: the faults
 * per second of all of them together, the p99 of every fault's round trip, and the guest's
 * context switches per fault (a fault that sleeps costs two).
 */
static void bench_concurrent_faults(const struct node *nd, int nproc)
{
	unsigned long long ctxt;
	size_t n = (size_t)nproc * CONC_FAULTS;
	double *lat = mmap(NULL, n * sizeof(*lat), PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int ready[2], go[2], status, failed = 0;
	char metric[64], c;
	double t0;

	if (lat == MAP_FAILED || pipe(ready) || pipe(go))
		die("concurrent faults: setup");
	for (int i = 0; i < nproc; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (!pid) {
			close(ready[0]);
			close(go[1]);
			concurrent_child(nd, ready[1], go[0], lat + (size_t)i * CONC_FAULTS);
		}
	}
	close(ready[1]);
	close(go[0]);
	for (int i = 0; i < nproc; i++)
		if (read(ready[0], &c, 1) != 1)
			die("concurrent faults: a process did not get ready");
	ctxt = context_switches();
	t0 = now_us();
	close(go[1]);	/* every process starts */
	while (wait(&status) > 0)
		failed |= !WIFEXITED(status) || WEXITSTATUS(status);
	t0 = now_us() - t0;
	ctxt = context_switches() - ctxt;
	close(ready[0]);
	if (failed) {
		errno = EIO;
		die("concurrent faults: a process failed");
	}
	snprintf(metric, sizeof(metric), "faults_%dproc", nproc);
	report(metric, n / (t0 / 1e6), "faults/s");
	snprintf(metric, sizeof(metric), "fault_p99_%dproc", nproc);
	report(metric, percentile(lat, n, 99), "us");
	snprintf(metric, sizeof(metric), "ctxsw_per_fault_%dproc", nproc);
	report(metric, (double)ctxt / n, "switches");
	munmap(lat, n * sizeof(*lat));
}

static int64_t dev_stat(int dev, const char *stat)
{
	int64_t v;

	if (gmem_debugfs_stat(dev, stat, &v))
		die(stat);
	return v;
}

/*
 * A working set 4x gmem-accel's HBM, moved to the device a sixteenth at a time: each move
 * evicts the least recently used chunks, then the CPU reads it all back. The figures: the
 * moves' MiB/s, the read-back's, and the device's MMU-notifier invalidations per page moved
 * either way (what makes room costs; see docs/performance.md). The moves are MIGRATE, or
 * with @advice (the device's own commands, on either front end) PREFER_DEVICE and a device
 * read of each sixteenth.
 */
static void bench_oversubscription(int dev, bool advice)
{
	/* The front end's counters of pages moved each way */
	const char *to_dev = accel ? "drm_to_hbm" : "migrated_to_device";
	const char *to_sys = accel ? "drm_to_ram" : "migrated_to_system";
	struct gmem_accel_info info = { 0 };
	int64_t inv, moved, moved_in, evicted;
	int fd = advice ? open_device(dev) : gmem_open(dev, O_RDWR);
	size_t len, step;
	volatile char *v;
	unsigned long sum = 0;
	char *buf, *mirror;
	double t0;

	if (fd < 0 || ioctl(fd, gmem_ioc(fd, GMEM_ACCEL_IOC_GET_INFO), &info))
		die("open the device");
	len = 4 * (info.hbm_size & ~(TWO_MiB - 1));
	step = len / 16;
	buf = map_anon(len, PROT_READ | PROT_WRITE);
	if (!buf || madvise(buf, len, MADV_NOHUGEPAGE))
		die("mmap");
	mirror = map_touched(step, 0);
	for (size_t off = 0; off < len; off += PAGE)
		buf[off] = (char)(off / PAGE);
	if (advice)
		advise(fd, buf, len, GMEM_ACCEL_PREFER_DEVICE);
	inv = dev_stat(dev, "invalidations");
	moved = dev_stat(dev, to_dev) + dev_stat(dev, to_sys);
	evicted = dev_stat(dev, "evictions");
	moved_in = dev_stat(dev, to_dev);
	t0 = now_us();
	for (size_t off = 0; off < len; off += step) {
		if (advice ? dev_copy(fd, mirror, buf + off, step) :
			     dev_migrate(fd, buf + off, step, GMEM_ACCEL_TO_DEVICE) != (long)(step / PAGE))
			die("oversubscription: move");
	}
	report("oversub_migrate", mibps(len, now_us() - t0), "MiB/s");
	v = buf;
	t0 = now_us();
	for (size_t off = 0; off < len; off += PAGE)
		sum += (unsigned char)v[off] == (unsigned char)(off / PAGE);
	report("oversub_cpu_back", mibps(len, now_us() - t0), "MiB/s");
	if (sum != len / PAGE ||
	    (advice && mirror[step - PAGE] != (char)((len - PAGE) / PAGE))) {
		errno = EIO;
		die("oversubscription: wrong data");
	}
	/*
	 * MIGRATE evicts what it makes room with; a fault under advice may instead map the
	 * page where it is (the own front end's remote mapping while HBM is oversubscribed).
	 */
	evicted = dev_stat(dev, "evictions") - evicted;
	if (!advice && evicted < (int64_t)(3 * (info.hbm_size / TWO_MiB))) {
		errno = EIO;
		die("oversubscription: fewer evictions than the working set needs");
	}
	report("oversub_moved_in_per_page", (double)(dev_stat(dev, to_dev) - moved_in) / (len / PAGE),
	       "per-page");
	moved = dev_stat(dev, to_dev) + dev_stat(dev, to_sys) - moved;
	inv = dev_stat(dev, "invalidations") - inv;
	report("oversub_invalidations_per_page", moved ? (double)inv / moved : 0, "per-page");
	munmap(buf, len);
	munmap(mirror, step);
	close(fd);
}

/* Is benchmark @what to run: all are, unless argv[4...] name some. */
static bool wanted(int argc, char **argv, const char *what)
{
	if (argc <= 4)
		return true;
	for (int i = 4; i < argc; i++)
		if (!strcmp(argv[i], what))
			return true;
	return false;
}

/*
 * The test_hmm workloads through device @dev's own commands, on the front end that has it:
 * metrics device_*, so that the two front ends compare on the same work.
 */
static void device_workloads(int dev, int argc, char **argv)
{
	struct node nd = { .dev = dev };

	prefix = "device_";
	for (int n = 1; n <= 32 && wanted(argc, argv, "device-concurrent"); n *= n < 2 ? 2 : 4)
		bench_concurrent_faults(&nd, n);
	if (wanted(argc, argv, "device-migration"))
		bench_migration(&nd, 64 * MiB);
	if (wanted(argc, argv, "device-oversubscription"))
		bench_oversubscription(dev, true);
	prefix = "";
}

int main(int argc, char **argv)
{
	bool gmem = argc > 3 && strcmp(argv[3], "-");
	struct node nd = { .path = argv[2], .dev = -1 };
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: hmm-bench NAME NODE [GMEM_DEVICE [BENCH...]]\n");
		return 2;
	}
	name = argv[1];
	if (!strcmp(argv[2], "accel")) {
		/* The device's own commands on its DRM front end, given to it meanwhile. */
		int dev = gmem ? atoi(argv[3]) : -1;

		accel = true;
		if (dev < 0 || gmem_set_frontend(dev, "drm"))
			die("give the device to the DRM front end");
		if (wanted(argc, argv, "device-faults"))
			bench_device_faults(dev, 64 * MiB);
		if (wanted(argc, argv, "device-latency"))
			bench_device_latency(dev);
		device_workloads(dev, argc, argv);
		if (gmem_set_frontend(dev, "gmem"))
			die("give the device back");
		return 0;
	}
	fd = open(argv[2], O_RDWR);
	if (fd < 0)
		die(argv[2]);
	if (wanted(argc, argv, "latency"))
		bench_fault_latency(fd);
	if (wanted(argc, argv, "faults")) {
		bench_fault_throughput(fd, 64 * MiB, false, false);
		bench_fault_throughput(fd, 256 * MiB, false, false);
		bench_fault_throughput(fd, 64 * MiB, true, false);
		bench_fault_throughput(fd, 256 * MiB, true, false);
		bench_fault_throughput(fd, 64 * MiB, false, true);
		bench_fault_throughput(fd, 64 * MiB, true, true);
	}
	close(fd);
	if (wanted(argc, argv, "migration"))
		bench_migration(&nd, 64 * MiB);
	for (int n = 1; n <= 32 && wanted(argc, argv, "concurrent"); n *= n < 2 ? 2 : 4)
		bench_concurrent_faults(&nd, n);
	if (gmem && wanted(argc, argv, "device-faults"))
		bench_device_faults(atoi(argv[3]), 64 * MiB);
	if (gmem && wanted(argc, argv, "device-latency"))
		bench_device_latency(atoi(argv[3]));
	if (gmem && wanted(argc, argv, "dma"))
		bench_dma(atoi(argv[3]), 64 * MiB);
	if (gmem && wanted(argc, argv, "oversubscription"))
		bench_oversubscription(atoi(argv[3]), false);
	if (gmem)
		device_workloads(atoi(argv[3]), argc, argv);
	return 0;
}
