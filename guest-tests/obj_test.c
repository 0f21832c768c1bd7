// SPDX-License-Identifier: GPL-2.0
/*
 * Device memory objects: GMEM_ACCEL_IOC_OBJ_ALLOC / QUERY / FREE and mmap. Every size class
 * gets its page size (UVM's rule), in HBM or system memory; the CPU writes through the
 * mapping and the device reads the same bytes at the same address, and back; the QEMU
 * monitor's dump of the device page table shows the object's 4K / 64K / 2M leaves; a mapping
 * outlives its handle and is shared by fork and moved by mremap; bad input gets its errno.
 * Every test ends with the driver's object counters back where they started.
 */
#define _GNU_SOURCE	/* mremap */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define K64 (64ul << 10)
#define M2 (2ul << 20)
#define RW (PROT_READ | PROT_WRITE)

static int64_t stat_of(const char *name)
{
	int64_t v = INT64_MIN;

	gmem_debugfs_stat(0, name, &v);
	return v;
}

/* The driver's object counters, to compare before and after a test. */
struct obj_counters {
	int64_t objects, hbm_pages, system_pages;
};

static struct obj_counters obj_counters(void)
{
	return (struct obj_counters) {
		.objects = stat_of("objects_now"),
		.hbm_pages = stat_of("obj_hbm_pages_now"),
		.system_pages = stat_of("obj_system_pages_now"),
	};
}

#define EXPECT_COUNTERS_BACK(before) do {					\
	struct obj_counters _now = obj_counters();				\
	EXPECT_EQ((before).objects, _now.objects);				\
	EXPECT_EQ((before).hbm_pages, _now.hbm_pages);				\
	EXPECT_EQ((before).system_pages, _now.system_pages);			\
} while (0)

static int obj_alloc(int fd, uint64_t size, uint32_t flags, struct gmem_accel_obj_alloc *a)
{
	*a = (struct gmem_accel_obj_alloc) { .size = size, .flags = flags };
	return ioctl(fd, GMEM_ACCEL_IOC_OBJ_ALLOC, a) ? -errno : 0;
}

static int obj_query(int fd, uint32_t handle, struct gmem_accel_obj_query *q)
{
	*q = (struct gmem_accel_obj_query) { .handle = handle };
	return ioctl(fd, GMEM_ACCEL_IOC_OBJ_QUERY, q) ? -errno : 0;
}

static int obj_free(int fd, uint32_t handle)
{
	struct gmem_accel_obj_free fr = { .handle = handle };

	return ioctl(fd, GMEM_ACCEL_IOC_OBJ_FREE, &fr) ? -errno : 0;
}

static uint8_t *obj_map(int fd, const struct gmem_accel_obj_alloc *a, size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, a->mmap_offset);

	return p == MAP_FAILED ? NULL : p;
}

FIXTURE(obj) {
	int fd;
	struct obj_counters before;
};

FIXTURE_SETUP(obj)
{
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	self->fd = gmem_open(0, O_RDWR);
	ASSERT_GE(self->fd, 0);
	self->before = obj_counters();
	ASSERT_GE(self->before.objects, 0) TH_LOG("no debugfs object counters");
}

FIXTURE_TEARDOWN(obj)
{
	close(self->fd);
	EXPECT_COUNTERS_BACK(self->before);
}

/*
 * One object of @size with @flags: the page size and placement it got, the bytes both ways
 * through its mapping, the device's view of its pages, and the monitor's.
 */
static void check_object(struct __test_metadata *_metadata, int fd, uint64_t size,
			 uint32_t flags, uint64_t want_page, bool want_hbm)
{
	struct gmem_accel_obj_alloc a;
	struct gmem_accel_obj_query q;
	uint64_t rounded = (size + want_page - 1) / want_page * want_page;
	uint8_t *map, *buf, *want;
	unsigned int ctx = ctx_stats(fd).context;
	int64_t hbm0 = stat_of("obj_hbm_pages_now"), sys0 = stat_of("obj_system_pages_now");
	uint8_t view;

	ASSERT_EQ(0, obj_alloc(fd, size, flags, &a));
	ASSERT_EQ(0, obj_query(fd, a.handle, &q));
	EXPECT_EQ(want_page, q.page_size);
	EXPECT_EQ(rounded, q.size);
	EXPECT_EQ(a.mmap_offset, q.mmap_offset);
	EXPECT_EQ(want_hbm, !!(q.flags & GMEM_ACCEL_OBJ_HBM));
	EXPECT_EQ(!want_hbm, !!(q.flags & GMEM_ACCEL_OBJ_SYSTEM));
	if (want_hbm) {
		EXPECT_EQ(0, q.hbm_addr % want_page);
		EXPECT_EQ(hbm0 + (int64_t)(rounded / PAGE), stat_of("obj_hbm_pages_now"));
	} else {
		EXPECT_EQ(~0ull, q.hbm_addr);
		EXPECT_EQ(sys0 + (int64_t)(rounded / PAGE), stat_of("obj_system_pages_now"));
	}

	map = obj_map(fd, &a, q.size, RW);
	ASSERT_NE(NULL, map) TH_LOG("mmap: %s", strerror(errno));
	EXPECT_EQ(0, (uintptr_t)map % want_page) TH_LOG("the mapping is not page-size aligned");
	buf = map_anon(q.size, RW);
	want = map_anon(q.size, RW);
	ASSERT_TRUE(buf && want);

	/* Zeroed, as the device sees it and as the CPU does. */
	memset(buf, 0xa5, q.size);
	ASSERT_EQ(0, dev_copy(fd, buf, map, q.size));
	for (uint64_t i = 0; i < q.size; i++) {
		ASSERT_EQ(0, buf[i]) TH_LOG("byte %llu not zeroed", (unsigned long long)i);
	}
	EXPECT_EQ(0, map[q.size - 1]);

	/* CPU writes, the device reads the same bytes at the same address. */
	pattern(want, q.size, (unsigned int)size);
	memcpy(map, want, q.size);
	memset(buf, 0, q.size);
	ASSERT_EQ(0, dev_copy(fd, buf, map, q.size));
	EXPECT_EQ(0, memcmp(buf, want, q.size));

	/* The device writes, the CPU reads it through the mapping. */
	pattern(want, q.size, (unsigned int)size + 1);
	ASSERT_EQ(0, dev_copy(fd, map, want, q.size));
	EXPECT_EQ(0, memcmp(map, want, q.size));
	/* Gone before the monitor's dump, which would list each of their 4 KiB pages. */
	munmap(buf, q.size);
	munmap(want, q.size);

	/* The device's page table: its placement and page size. */
	view = page_view(fd, map);
	EXPECT_TRUE(view & GMEM_ACCEL_PAGE_WRITE);
	EXPECT_EQ(want_hbm, !!(view & GMEM_ACCEL_PAGE_HBM));
	EXPECT_EQ(want_page == M2, !!(view & GMEM_ACCEL_PAGE_2M));
	EXPECT_EQ(want_page == K64, !!(view & GMEM_ACCEL_PAGE_64K));
	/* And as the device walks it, from the QEMU monitor. */
	EXPECT_EQ((int64_t)want_page, gmem_monitor_page_size(0, ctx, (uintptr_t)map))
		TH_LOG("the monitor's page size at %p", map);

	EXPECT_EQ(0, munmap(map, q.size));
	EXPECT_EQ(0, obj_free(fd, a.handle));
	EXPECT_EQ(hbm0, stat_of("obj_hbm_pages_now"));
	EXPECT_EQ(sys0, stat_of("obj_system_pages_now"));
}

/* NVIDIA UVM's rule: < 64 KiB -> 4 KiB pages, < 2 MiB -> 64 KiB, else 2 MiB. */
TEST_F_TIMEOUT(obj, page_size_by_size_in_hbm, 600)
{
	static const struct { uint64_t size, page; } c[] = {
		{ PAGE, PAGE }, { 5000, PAGE }, { K64 - PAGE, PAGE }, { K64, K64 },
		{ 1ul << 20, K64 }, { M2 - PAGE, K64 }, { M2, M2 }, { 3 * M2 + 1, M2 },
	};

	for (unsigned int i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		TH_LOG("%llu bytes", (unsigned long long)c[i].size);
		check_object(_metadata, self->fd, c[i].size, GMEM_ACCEL_OBJ_HBM, c[i].page, true);
	}
}

TEST_F_TIMEOUT(obj, system_memory_objects, 600)
{
	check_object(_metadata, self->fd, 3 * PAGE, GMEM_ACCEL_OBJ_SYSTEM, PAGE, false);
	check_object(_metadata, self->fd, 4 * K64, GMEM_ACCEL_OBJ_SYSTEM, K64, false);
	check_object(_metadata, self->fd, M2, GMEM_ACCEL_OBJ_SYSTEM, M2, false);
}

/* A page size can be forced either way; the default placement is HBM while it has room. */
TEST_F_TIMEOUT(obj, forced_page_size_and_default_placement, 600)
{
	check_object(_metadata, self->fd, M2, GMEM_ACCEL_OBJ_PAGE_4K, PAGE, true);
	check_object(_metadata, self->fd, PAGE, GMEM_ACCEL_OBJ_PAGE_2M, M2, true);
	check_object(_metadata, self->fd, M2, GMEM_ACCEL_OBJ_HBM | GMEM_ACCEL_OBJ_PAGE_64K, K64,
		     true);
}

/* The mapping keeps the object after FREE and after close; munmap then frees the memory. */
TEST_F_TIMEOUT(obj, mapping_outlives_handle_and_file, 300)
{
	struct gmem_accel_obj_alloc a;
	struct gmem_accel_obj_query q;
	uint8_t *map, want[PAGE];
	int fd2;

	fd2 = gmem_open(0, O_RDWR);
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, obj_alloc(fd2, M2, 0, &a));
	map = obj_map(fd2, &a, M2, RW);
	ASSERT_NE(NULL, map);
	pattern(want, PAGE, 7);
	memcpy(map + M2 - PAGE, want, PAGE);
	EXPECT_EQ(0, obj_free(fd2, a.handle));
	EXPECT_EQ(-ENOENT, obj_free(fd2, a.handle));	/* double free */
	EXPECT_EQ(-ENOENT, obj_query(fd2, a.handle, &q));
	EXPECT_EQ(self->before.objects + 1, stat_of("objects_now"));
	close(fd2);
	EXPECT_EQ(0, memcmp(map + M2 - PAGE, want, PAGE));
	EXPECT_EQ(self->before.objects + 1, stat_of("objects_now"));
	EXPECT_EQ(0, munmap(map, M2));
}

/* Objects are shared memory: a forked child's writes are the parent's, not a copy. */
TEST_F_TIMEOUT(obj, fork_shares_the_object, 300)
{
	struct gmem_accel_obj_alloc a;
	uint8_t *map, *buf;
	int status;
	pid_t pid;

	ASSERT_EQ(0, obj_alloc(self->fd, K64, GMEM_ACCEL_OBJ_HBM, &a));
	map = obj_map(self->fd, &a, K64, RW);
	ASSERT_NE(NULL, map);
	memset(map, 1, K64);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		memset(map + PAGE, 2, PAGE);
		_exit(map[0] == 1 ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	buf = malloc(K64);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, dev_copy(self->fd, buf, map, K64));
	EXPECT_EQ(1, buf[0]);
	EXPECT_EQ(2, buf[PAGE]);
	EXPECT_EQ(2, buf[2 * PAGE - 1]);
	EXPECT_EQ(1, buf[2 * PAGE]);
	free(buf);
	EXPECT_EQ(0, munmap(map, K64));
	EXPECT_EQ(0, obj_free(self->fd, a.handle));
}

/* munmap takes the object off the device too; mremap moves it, for the device as well. */
TEST_F_TIMEOUT(obj, munmap_and_mremap_follow_the_cpu, 300)
{
	struct gmem_accel_obj_alloc a;
	uint8_t *map, *moved, *hole, buf[PAGE];

	ASSERT_EQ(0, obj_alloc(self->fd, 4 * K64, 0, &a));
	map = obj_map(self->fd, &a, 4 * K64, RW);
	ASSERT_NE(NULL, map);
	memset(map, 0x33, 4 * K64);
	ASSERT_EQ(0, dev_copy(self->fd, buf, map + K64, PAGE));
	EXPECT_EQ(0x33, buf[0]);

	/* A hole in the middle of a 64 KiB page: the device faults there, nowhere else. */
	hole = map + K64;
	ASSERT_EQ(0, munmap(hole, PAGE));
	EXPECT_EQ(-EFAULT, dev_copy(self->fd, buf, hole, PAGE));
	ASSERT_EQ(0, dev_copy(self->fd, buf, hole + PAGE, PAGE));
	EXPECT_EQ(0x33, buf[PAGE - 1]);

	/* The last two 64 KiB pages move elsewhere. */
	moved = mremap(map + 2 * K64, 2 * K64, 2 * K64, MREMAP_MAYMOVE | MREMAP_FIXED,
		       (uint8_t *)mmap(NULL, 2 * K64, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
				       0));
	ASSERT_NE(MAP_FAILED, moved);
	memset(moved + K64, 0x44, PAGE);
	ASSERT_EQ(0, dev_copy(self->fd, buf, moved + K64, PAGE));
	EXPECT_EQ(0x44, buf[0]);
	EXPECT_EQ(-EFAULT, dev_copy(self->fd, buf, map + 3 * K64, PAGE));

	EXPECT_EQ(0, munmap(map, K64));
	EXPECT_EQ(0, munmap(hole + PAGE, K64 - PAGE));
	EXPECT_EQ(0, munmap(moved, 2 * K64));
	EXPECT_EQ(0, obj_free(self->fd, a.handle));
}

/* A read-only mapping: the device may read it, not write it (EPERM, as for any memory). */
TEST_F_TIMEOUT(obj, read_only_mapping_refuses_device_writes, 300)
{
	struct gmem_accel_obj_alloc a;
	uint8_t *map, buf[PAGE];

	ASSERT_EQ(0, obj_alloc(self->fd, PAGE, 0, &a));
	map = obj_map(self->fd, &a, PAGE, PROT_READ);
	ASSERT_NE(NULL, map);
	EXPECT_EQ(0, dev_copy(self->fd, buf, map, PAGE));
	EXPECT_EQ(-EPERM, dev_fill(self->fd, map, 1, PAGE));
	EXPECT_EQ(0, map[0]);
	EXPECT_EQ(0, munmap(map, PAGE));
	EXPECT_EQ(0, obj_free(self->fd, a.handle));
}

/*
 * A device file open for reading only maps an object read-only and shared (the kernel keeps
 * VM_MAYSHARE, not VM_SHARED, for such a file): the bytes written through a writable file's
 * mapping read back through it; a writable or private mapping of it is refused.
 */
TEST_F_TIMEOUT(obj, read_only_file_maps_read_only_shared, 300)
{
	struct gmem_accel_obj_export e = { .flags = O_CLOEXEC };
	struct gmem_accel_obj_import im = { 0 };
	struct gmem_accel_obj_alloc a;
	int ro = gmem_open(0, O_RDONLY);
	uint8_t *rw, *map;

	ASSERT_LE(0, ro);
	ASSERT_EQ(0, obj_alloc(self->fd, K64, 0, &a));
	rw = obj_map(self->fd, &a, K64, RW);
	ASSERT_NE(NULL, rw);
	pattern(rw, K64, 11);
	e.handle = a.handle;
	ASSERT_EQ(0, ioctl(self->fd, GMEM_ACCEL_IOC_OBJ_EXPORT, &e));
	im.fd = e.fd;
	ASSERT_EQ(0, ioctl(ro, GMEM_ACCEL_IOC_OBJ_IMPORT, &im));
	map = mmap(NULL, K64, PROT_READ, MAP_SHARED, ro, im.mmap_offset);
	ASSERT_NE(MAP_FAILED, map) TH_LOG("PROT_READ, MAP_SHARED on O_RDONLY: %s", strerror(errno));
	EXPECT_EQ(0, memcmp(map, rw, K64));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, K64, RW, MAP_SHARED, ro, im.mmap_offset));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, K64, PROT_READ, MAP_PRIVATE, ro, im.mmap_offset));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, munmap(map, K64));
	EXPECT_EQ(0, munmap(rw, K64));
	EXPECT_EQ(0, obj_free(ro, im.handle));
	EXPECT_EQ(0, obj_free(self->fd, a.handle));
	close(e.fd);
	close(ro);
}

/* An object of @size bytes with @flags, mapped, filled with pattern @seed by the CPU. */
static uint8_t *obj_filled(struct __test_metadata *_metadata, int fd, uint64_t size,
			   uint32_t flags, unsigned int seed, struct gmem_accel_obj_alloc *a)
{
	uint8_t *map;

	if (obj_alloc(fd, size, flags, a))
		return NULL;
	map = obj_map(fd, a, size, RW);
	if (map)
		pattern(map, size, seed);
	return map;
}

/* Are the @size bytes at @map pattern @seed, for the CPU and for the device? */
static bool obj_holds(int fd, uint8_t *map, uint64_t size, unsigned int seed)
{
	uint8_t *want = malloc(size), *buf = malloc(size);
	bool ok = want && buf;

	if (ok) {
		pattern(want, size, seed);
		ok = !memcmp(map, want, size) && !dev_copy(fd, buf, map, size) &&
		     !memcmp(buf, want, size);
	}
	free(want);
	free(buf);
	return ok;
}

static uint32_t obj_flags(int fd, uint32_t handle)
{
	struct gmem_accel_obj_query q;

	return obj_query(fd, handle, &q) ? 0 : q.flags;
}

/* MemAvailable of /proc/meminfo, in bytes; 0 if unreadable. */
static uint64_t mem_available(void)
{
	char line[128];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kb << 10;
}

/* Does the device read @len bytes of @value (every byte) at @map? */
static bool obj_holds_value(int fd, uint8_t *map, uint64_t len, uint8_t value)
{
	uint8_t *buf = malloc(len);
	bool ok = buf && !dev_copy(fd, buf, map, len);

	for (uint64_t i = 0; ok && i < len; i++)
		ok = buf[i] == value;
	free(buf);
	return ok;
}

/*
 * More objects than HBM holds: the oldest unpinned one moves to system memory with its bytes
 * (for the CPU and the device, at the same addresses); pinned ones never move; when only
 * pinned ones are left, an HBM allocation gets ENOSPC. The objects are sized by what RAM can
 * take as well as by HBM (HBM may be larger than RAM): at most four of them are in RAM at once
 * (two evicted, two buffers to check one), an eighth of the memory available each.
 */
TEST_F_TIMEOUT(obj, unpinned_objects_evicted_under_oversubscription, 900)
{
	struct gmem_accel_info info = { 0 };
	struct gmem_accel_obj_alloc p, a, b, c, d;
	uint64_t unit, fill, check;
	int64_t ev0 = stat_of("obj_evictions");
	uint8_t *mp, *ma, *mb, *mc;

	ASSERT_EQ(0, ioctl(self->fd, GMEM_ACCEL_IOC_GET_INFO, &info));
	unit = info.hbm_size * 3 / 8;
	if (mem_available() / 8 < unit)
		unit = mem_available() / 8;
	unit = unit / M2 * M2;
	ASSERT_LE(M2, unit) TH_LOG("%llu bytes of RAM available", (unsigned long long)mem_available());
	/* P, pinned, leaves room for A and half of another: a third unit evicts. */
	fill = (info.hbm_size - unit - unit / 2) / M2 * M2;
	check = fill < unit ? fill : unit;
	ASSERT_EQ(0, obj_alloc(self->fd, fill, GMEM_ACCEL_OBJ_HBM | GMEM_ACCEL_OBJ_PINNED, &p));
	mp = obj_map(self->fd, &p, fill, RW);
	ASSERT_NE(NULL, mp);
	ASSERT_EQ(0, dev_fill(self->fd, mp, 0x3131313131313131ull, fill));
	ma = obj_filled(_metadata, self->fd, unit, GMEM_ACCEL_OBJ_HBM, 2, &a);
	ASSERT_NE(NULL, ma);
	ASSERT_TRUE(obj_holds(self->fd, ma, unit, 2));	/* the device maps it too */

	/* A third: A (unpinned, older than B) goes to system memory, P stays. */
	mb = obj_filled(_metadata, self->fd, unit, GMEM_ACCEL_OBJ_HBM, 3, &b);
	ASSERT_NE(NULL, mb) TH_LOG("HBM object beyond HBM: %s", strerror(errno));
	EXPECT_EQ(ev0 + 1, stat_of("obj_evictions"));
	EXPECT_TRUE(obj_flags(self->fd, a.handle) & GMEM_ACCEL_OBJ_SYSTEM);
	EXPECT_TRUE(obj_flags(self->fd, p.handle) & GMEM_ACCEL_OBJ_HBM);
	EXPECT_TRUE(obj_holds(self->fd, ma, unit, 2));
	EXPECT_FALSE(page_view(self->fd, ma) & GMEM_ACCEL_PAGE_HBM);
	EXPECT_TRUE(obj_holds_value(self->fd, mp, check, 0x31));
	EXPECT_TRUE(obj_holds(self->fd, mb, unit, 3));

	/* A pinned one now: B goes. Then nothing unpinned is left in HBM: ENOSPC. */
	mc = obj_filled(_metadata, self->fd, unit, GMEM_ACCEL_OBJ_HBM | GMEM_ACCEL_OBJ_PINNED, 4,
			&c);
	ASSERT_NE(NULL, mc);
	EXPECT_TRUE(obj_flags(self->fd, b.handle) & GMEM_ACCEL_OBJ_SYSTEM);
	EXPECT_TRUE(obj_holds(self->fd, mb, unit, 3));
	EXPECT_EQ(-ENOSPC, obj_alloc(self->fd, unit, GMEM_ACCEL_OBJ_HBM, &d));
	EXPECT_EQ(ev0 + 2, stat_of("obj_evictions"));
	EXPECT_TRUE(obj_holds_value(self->fd, mp, check, 0x31));
	EXPECT_TRUE(obj_holds(self->fd, mc, unit, 4));

	EXPECT_EQ(0, munmap(mp, fill));
	EXPECT_EQ(0, munmap(ma, unit));
	EXPECT_EQ(0, munmap(mb, unit));
	EXPECT_EQ(0, munmap(mc, unit));
	EXPECT_EQ(0, obj_free(self->fd, p.handle));
	EXPECT_EQ(0, obj_free(self->fd, a.handle));
	EXPECT_EQ(0, obj_free(self->fd, b.handle));
	EXPECT_EQ(0, obj_free(self->fd, c.handle));
}

struct obj_user {
	int fd;
	uint8_t *map;
	size_t len;
	volatile bool stop;
	volatile int ok, efault, other;
	int last_other;
};

/* FILL the mapping round after round until told to stop; count how each command ended. */
static void *fill_rounds(void *arg)
{
	struct obj_user *u = arg;

	for (unsigned int r = 1; !u->stop; r++) {
		int ret = dev_fill(u->fd, u->map, 0x0101010101010101ull * (uint8_t)r, u->len);

		if (!ret) {
			u->ok++;
		} else if (ret == -EFAULT) {
			u->efault++;
		} else {
			u->other++;
			u->last_other = ret;
		}
	}
	return NULL;
}

/*
 * An object's handle freed and its mapping unmapped by one thread while another has the device
 * write it: the device's commands succeed while the mapping is there and fail with EFAULT once
 * it is gone (nothing else, nothing written elsewhere), and the object goes with its last
 * reference: the counters are back where they started.
 */
TEST_F_TIMEOUT(obj, free_and_munmap_race_device_use, 300)
{
	struct gmem_accel_obj_alloc a;
	struct obj_user u = { .fd = self->fd, .len = K64 };
	pthread_t t;
	int before;

	for (int round = 0; round < 8; round++) {
		u.stop = false;
		ASSERT_EQ(0, obj_alloc(self->fd, K64, round % 2 ? GMEM_ACCEL_OBJ_SYSTEM : 0, &a));
		u.map = obj_map(self->fd, &a, K64, RW);
		ASSERT_NE(NULL, u.map);
		ASSERT_EQ(0, pthread_create(&t, NULL, fill_rounds, &u));
		usleep(1000 * (round + 1));
		EXPECT_EQ(0, obj_free(self->fd, a.handle));
		usleep(1000 * (round + 1));
		before = u.efault;
		EXPECT_EQ(0, munmap(u.map, K64));
		/* Until a command has found the mapping gone (10 s at most). */
		for (int i = 0; i < 1000 && u.efault == before && !u.other; i++)
			usleep(10000);
		u.stop = true;
		ASSERT_EQ(0, pthread_join(t, NULL));
		EXPECT_LT(before, u.efault) TH_LOG("round %d: no command ran after munmap", round);
	}
	EXPECT_EQ(0, u.other) TH_LOG("a command ended with %s", strerror(-u.last_other));
	TH_LOG("%d commands ran, %d found the mapping gone", u.ok, u.efault);
}

TEST_F_TIMEOUT(obj, bad_input_gets_its_errno, 300)
{
	struct gmem_accel_info info = { 0 };
	struct gmem_accel_obj_alloc a;
	struct gmem_accel_obj_free fr = { .handle = 1, .flags = 1 };
	struct gmem_accel_obj_query q;
	void *p;

	ASSERT_EQ(0, ioctl(self->fd, GMEM_ACCEL_IOC_GET_INFO, &info));
	EXPECT_EQ(-EINVAL, obj_alloc(self->fd, 0, 0, &a));
	EXPECT_EQ(-EINVAL, obj_alloc(self->fd, GMEM_ACCEL_OBJ_MAX_SIZE + 1, 0, &a));
	EXPECT_EQ(-EINVAL, obj_alloc(self->fd, ~0ull, 0, &a));
	EXPECT_EQ(-EINVAL, obj_alloc(self->fd, PAGE, 1u << 31, &a));
	EXPECT_EQ(-EINVAL, obj_alloc(self->fd, PAGE, GMEM_ACCEL_OBJ_KNOWN + 1, &a));
	EXPECT_EQ(-EINVAL, obj_alloc(self->fd, PAGE,
				     GMEM_ACCEL_OBJ_HBM | GMEM_ACCEL_OBJ_SYSTEM, &a));
	EXPECT_EQ(-EINVAL, obj_alloc(self->fd, PAGE,
				     GMEM_ACCEL_OBJ_PAGE_4K | GMEM_ACCEL_OBJ_PAGE_2M, &a));
	/* More HBM than the device has: no room, nothing left behind. */
	EXPECT_EQ(-ENOSPC, obj_alloc(self->fd, info.hbm_size + M2, GMEM_ACCEL_OBJ_HBM, &a));
	EXPECT_EQ(-ENOENT, obj_free(self->fd, 12345));
	EXPECT_EQ(-1, ioctl(self->fd, GMEM_ACCEL_IOC_OBJ_FREE, &fr));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-ENOENT, obj_query(self->fd, 0, &q));
	EXPECT_EQ(-ENOENT, obj_query(self->fd, ~0u, &q));

	/* mmap: no object there, beyond the object, private. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, RW, MAP_SHARED, self->fd, 7ull << 36));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, obj_alloc(self->fd, 5000, 0, &a));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 3 * PAGE, RW, MAP_SHARED, self->fd, a.mmap_offset));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, RW, MAP_SHARED, self->fd, a.mmap_offset + 2 * PAGE));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, RW, MAP_PRIVATE, self->fd, a.mmap_offset));
	EXPECT_EQ(EINVAL, errno);
	/* The second page alone is fine. */
	p = mmap(NULL, PAGE, RW, MAP_SHARED, self->fd, a.mmap_offset + PAGE);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, munmap(p, PAGE));
	EXPECT_EQ(0, obj_free(self->fd, a.handle));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, RW, MAP_SHARED, self->fd, a.mmap_offset));
	EXPECT_EQ(EINVAL, errno);
}

TEST_HARNESS_MAIN
