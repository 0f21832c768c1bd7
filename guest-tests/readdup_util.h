/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What readdup_test and readdup_attack_test share: managed objects mapped, the device's view
 * of a page, and the counters every case brings back to where it found them. Include after
 * kselftest_harness.h and gmem_test_util.h.
 */
#ifndef READDUP_UTIL_H
#define READDUP_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "gmem_accel_uapi.h"

#define PAGE 4096ul
#define M2 (2ul << 20)
#define RW (PROT_READ | PROT_WRITE)
#define MANAGED_4K (GMEM_ACCEL_OBJ_MANAGED | GMEM_ACCEL_OBJ_PAGE_4K)
#define RM (GMEM_ACCEL_ADVISE_READ_MOSTLY | GMEM_ACCEL_ADVISE_KEEP_LOCATION)
#define NOT_RM (GMEM_ACCEL_ADVISE_NOT_READ_MOSTLY | GMEM_ACCEL_ADVISE_KEEP_LOCATION)
#define DUP_VIEW (GMEM_ACCEL_PAGE_READ | GMEM_ACCEL_PAGE_HBM | GMEM_ACCEL_PAGE_DUPLICATE)

static inline int64_t stat_of(const char *name)
{
	int64_t v = INT64_MIN;

	gmem_debugfs_stat(0, name, &v);
	return v;
}

struct leak_counters {
	int64_t objects, hbm_pages, system_pages, dup_pages, contexts;
};

static inline struct leak_counters leak_counters(void)
{
	return (struct leak_counters) {
		.objects = stat_of("objects_now"),
		.hbm_pages = stat_of("obj_hbm_pages_now"),
		.system_pages = stat_of("obj_system_pages_now"),
		.dup_pages = stat_of("readdup_pages_now"),
		.contexts = stat_of("contexts_now"),
	};
}

#define EXPECT_STAT_BACK(name, v) \
	EXPECT_EQ((v), gmem_wait_stat(0, name, (v), 60000)) TH_LOG("%s", name)

/* The counters back at @before, waiting for a killed process's last mapping to go. */
#define EXPECT_COUNTERS_BACK(before) do {				\
	EXPECT_STAT_BACK("objects_now", (before).objects);		\
	EXPECT_STAT_BACK("obj_hbm_pages_now", (before).hbm_pages);	\
	EXPECT_STAT_BACK("obj_system_pages_now", (before).system_pages); \
	EXPECT_STAT_BACK("readdup_pages_now", (before).dup_pages);	\
	EXPECT_STAT_BACK("contexts_now", (before).contexts);		\
} while (0)

static inline int obj_alloc(int fd, uint64_t size, uint32_t flags,
			    struct gmem_accel_obj_alloc *a)
{
	*a = (struct gmem_accel_obj_alloc) { .size = size, .flags = flags };
	return ioctl(fd, GMEM_ACCEL_IOC_OBJ_ALLOC, a) ? -errno : 0;
}

static inline int obj_free(int fd, uint32_t handle)
{
	struct gmem_accel_obj_free fr = { .handle = handle };

	return ioctl(fd, GMEM_ACCEL_IOC_OBJ_FREE, &fr) ? -errno : 0;
}

/* A managed object of @size mapped shared (at @at if not NULL) and its handle dropped. */
static inline uint8_t *managed_map_at(int fd, void *at, size_t size, uint32_t flags)
{
	struct gmem_accel_obj_alloc a;
	void *p;

	if (obj_alloc(fd, size, flags, &a))
		return NULL;
	p = mmap(at, size, RW, MAP_SHARED | (at ? MAP_FIXED : 0), fd, a.mmap_offset);
	obj_free(fd, a.handle);
	return p == MAP_FAILED ? NULL : p;
}

static inline uint8_t *managed_map(int fd, size_t size, uint32_t flags)
{
	return managed_map_at(fd, NULL, size, flags);
}

/* The first of words [first, last) of @w that is not @want; -1 if none. */
static inline long word_mismatch(const uint64_t *w, size_t first, size_t last, uint64_t want)
{
	for (size_t i = first; i < last; i++)
		if (w[i] != want)
			return i;
	return -1;
}

#endif
