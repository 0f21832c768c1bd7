// SPDX-License-Identifier: MIT
/*
 * libgmem: unified memory (prefetch, advice) and device memory objects (allocate, map,
 * query, free).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gmem_internal.h"

_Static_assert(gmemMemPlaceDevice == GMEM_ACCEL_OBJ_HBM &&
	       gmemMemPlaceHost == GMEM_ACCEL_OBJ_SYSTEM &&
	       gmemMemPage4K == GMEM_ACCEL_OBJ_PAGE_4K &&
	       gmemMemPage64K == GMEM_ACCEL_OBJ_PAGE_64K &&
	       gmemMemPage2M == GMEM_ACCEL_OBJ_PAGE_2M &&
	       gmemMemPinned == GMEM_ACCEL_OBJ_PINNED, "gmemMalloc flags are the driver's");

struct gmem_alloc *gmem_allocs;

struct gmem_alloc *gmem_alloc_find(const void *ptr)
{
	for (struct gmem_alloc *a = gmem_allocs; a; a = a->next)
		if ((const char *)ptr >= (char *)a->base &&
		    (const char *)ptr < (char *)a->base + a->size)
			return a;
	return NULL;
}

/* [ptr, ptr + count) widened to whole pages; false if empty or wrapping. */
static bool gmem_page_range(const void *ptr, size_t count, __u64 *addr, __u64 *size)
{
	uint64_t page = sysconf(_SC_PAGESIZE), start = (uintptr_t)ptr, end;

	if (!ptr || !count || start + count < start)
		return false;
	end = (start + count + page - 1) & ~(page - 1);
	*addr = start & ~(page - 1);
	*size = end - *addr;
	return end > *addr;
}

gmemError_t gmemMemPrefetchAsync(const void *ptr, size_t count, gmemDevice_t dst,
				 gmemStream_t stream)
{
	struct gmem_accel_migrate m = { .target = GMEM_ACCEL_TO_DEVICE };
	int ret;

	if (!gmem_live_has(GMEM_KIND_STREAM, stream) ||
	    (dst && !gmem_live_has(GMEM_KIND_DEVICE, dst)))
		return gmem_fail(gmemErrorInvalidHandle);
	if (!gmem_page_range(ptr, count, &m.addr, &m.size))
		return gmem_fail(gmemErrorInvalidValue);
	if (!dst)
		m.target = GMEM_ACCEL_TO_SYSTEM;
	else if (dst != stream->dev)	/* a device's HBM is reached through its own file */
		return gmem_fail(gmemErrorInvalidValue);
	ret = gmem_dev_ioctl(stream->dev, stream->fd, GMEM_ACCEL_IOC_MIGRATE, &m);
	return ret ? gmem_fail_errno(-ret) : gmem_ok();
}

/*
 * Advice is the driver's per file (a device context each): what a device was advised is kept
 * here and given to each stream it opens later too.
 */
struct gmem_advice {
	struct gmem_advice *next;
	struct gmemDevice *dev;
	__u64 addr, size;
	uint32_t location, flags;
};
static struct gmem_advice *advice;

static int gmem_advise_fd(int fd, const struct gmem_advice *a)
{
	struct gmem_accel_advise arg = {
		.addr = a->addr, .size = a->size, .location = a->location, .flags = a->flags,
	};

	return gmem_dev_ioctl(a->dev, fd, GMEM_ACCEL_IOC_ADVISE, &arg);
}

gmemError_t gmem_advice_replay(struct gmemDevice *dev, int fd)
{
	int ret = 0;

	pthread_mutex_lock(&gmem_lock);
	for (struct gmem_advice *a = advice; a && !ret; a = a->next)
		if (a->dev == dev)
			ret = gmem_advise_fd(fd, a);
	pthread_mutex_unlock(&gmem_lock);
	return ret ? gmem_fail_errno(-ret) : gmem_ok();
}

void gmem_advice_forget(struct gmemDevice *dev)
{
	pthread_mutex_lock(&gmem_lock);
	for (struct gmem_advice **p = &advice; *p;) {
		struct gmem_advice *a = *p;

		if (a->dev == dev) {
			*p = a->next;
			free(a);
		} else {
			p = &a->next;
		}
	}
	pthread_mutex_unlock(&gmem_lock);
}

/*
 * Read-mostly is the managed allocation's own state, not a context's: one ADVISE on the
 * device's file sets it for every stream, and nothing is kept to give to later ones.
 */
static gmemError_t gmem_advise_read_mostly(const void *ptr, size_t count, bool set,
					   gmemDevice_t dev)
{
	struct gmem_advice a = {
		.dev = dev,
		.flags = GMEM_ACCEL_ADVISE_KEEP_LOCATION |
			 (set ? GMEM_ACCEL_ADVISE_READ_MOSTLY : GMEM_ACCEL_ADVISE_NOT_READ_MOSTLY),
	};
	const struct gmem_alloc *al;
	bool managed;
	int ret;

	pthread_mutex_lock(&gmem_lock);
	al = gmem_alloc_find(ptr);
	managed = al && al->managed && count &&
		  count <= al->size - (size_t)((const char *)ptr - (const char *)al->base);
	pthread_mutex_unlock(&gmem_lock);
	if (!managed)		/* malloc'd, mmap'd or device memory: no duplication there */
		return gmem_fail(gmemErrorNotSupported);
	if (!gmem_live_has(GMEM_KIND_DEVICE, dev))
		return gmem_fail(gmemErrorInvalidHandle);
	if (!gmem_page_range(ptr, count, &a.addr, &a.size))
		return gmem_fail(gmemErrorInvalidValue);
	ret = gmem_advise_fd(dev->fd, &a);
	return ret ? gmem_fail_errno(-ret) : gmem_ok();
}

gmemError_t gmemMemAdvise(const void *ptr, size_t count, gmemMemoryAdvise_t how,
			  gmemDevice_t dev)
{
	struct gmemStream *streams[GMEM_MAX_STREAMS];
	struct gmem_advice *a;
	int ret, n;

	if (how == gmemMemAdviseSetReadMostly || how == gmemMemAdviseUnsetReadMostly)
		return gmem_advise_read_mostly(ptr, count, how == gmemMemAdviseSetReadMostly, dev);
	if (!gmem_live_has(GMEM_KIND_DEVICE, dev))
		return gmem_fail(gmemErrorInvalidHandle);
	a = calloc(1, sizeof(*a));
	if (!a)
		return gmem_fail_errno(ENOMEM);
	a->dev = dev;
	switch (how) {
	case gmemMemAdviseSetPreferredLocation:
		a->location = GMEM_ACCEL_PREFER_DEVICE;
		break;
	case gmemMemAdviseUnsetPreferredLocation:
		a->location = GMEM_ACCEL_PREFER_NONE;
		break;
	case gmemMemAdviseSetPreferredHost:
		a->location = GMEM_ACCEL_PREFER_SYSTEM;
		break;
	case gmemMemAdviseSetAccessedBy:
		a->flags = GMEM_ACCEL_ADVISE_ACCESSED_BY | GMEM_ACCEL_ADVISE_KEEP_LOCATION;
		break;
	case gmemMemAdviseUnsetAccessedBy:
		a->flags = GMEM_ACCEL_ADVISE_NOT_ACCESSED_BY | GMEM_ACCEL_ADVISE_KEEP_LOCATION;
		break;
	default:
		free(a);
		return gmem_fail(gmemErrorInvalidValue);
	}
	if (!gmem_page_range(ptr, count, &a->addr, &a->size)) {
		free(a);
		return gmem_fail(gmemErrorInvalidValue);
	}
	pthread_mutex_lock(&gmem_lock);
	ret = gmem_advise_fd(dev->fd, a);
	n = ret ? 0 : gmem_device_streams(dev, streams, GMEM_MAX_STREAMS);
	for (int i = 0; i < n && !ret; i++)
		ret = gmem_advise_fd(streams[i]->fd, a);
	if (!ret) {	/* later advice on the range replaces it: replayed in order */
		struct gmem_advice **p = &advice;

		while (*p)
			p = &(*p)->next;
		*p = a;
	}
	pthread_mutex_unlock(&gmem_lock);
	if (ret) {
		free(a);
		return gmem_fail_errno(-ret);
	}
	return gmem_ok();
}

/*
 * Map object @handle of @dev's file (at @offset; its size as the driver reports it) and
 * record it. On failure the handle is dropped.
 */
static gmemError_t gmem_map_object(struct gmemDevice *dev, uint32_t handle, uint64_t offset,
				   bool imported, void **ptr)
{
	struct gmem_accel_obj_query q = { .handle = handle };
	struct gmem_accel_obj_free fr = { .handle = handle };
	struct gmem_alloc *a = NULL;
	void *p = MAP_FAILED;
	int err = -gmem_dev_ioctl(dev, dev->fd, GMEM_ACCEL_IOC_OBJ_QUERY, &q);

	if (!err) {
		a = calloc(1, sizeof(*a));
		err = a ? 0 : ENOMEM;
	}
	if (!err) {
		p = mmap(NULL, q.size, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd, offset);
		err = p == MAP_FAILED ? errno : 0;
	}
	if (err) {
		free(a);
		gmem_dev_ioctl(dev, dev->fd, GMEM_ACCEL_IOC_OBJ_FREE, &fr);
		return gmem_fail_errno(err);
	}
	*a = (struct gmem_alloc){ .dev = dev, .base = p, .size = q.size, .handle = handle,
				  .imported = imported,
				  .managed = q.flags & GMEM_ACCEL_OBJ_MANAGED };
	pthread_mutex_lock(&gmem_lock);
	a->next = gmem_allocs;
	gmem_allocs = a;
	dev->allocations++;
	pthread_mutex_unlock(&gmem_lock);
	*ptr = p;
	return gmem_ok();
}

/* gmemMalloc's flags, which are the driver's bit for bit (asserted above) */
#define GMEM_MALLOC_FLAGS	(gmemMemPlaceDevice | gmemMemPlaceHost | gmemMemPage4K | \
				 gmemMemPage64K | gmemMemPage2M | gmemMemPinned)
#define GMEM_MALLOC_PAGE_SIZES	(gmemMemPage4K | gmemMemPage64K | gmemMemPage2M)

/* Allocate an object of @flags (of @allowed) and @kind (the driver's flags), and map it. */
static gmemError_t gmem_malloc(gmemDevice_t dev, void **ptr, size_t size, unsigned int flags,
			       unsigned int allowed, unsigned int kind)
{
	struct gmem_accel_obj_alloc al = { .size = size, .flags = flags | kind };
	int ret;

	if (!ptr)
		return gmem_fail(gmemErrorInvalidValue);
	*ptr = NULL;
	if (!gmem_live_has(GMEM_KIND_DEVICE, dev))
		return gmem_fail(gmemErrorInvalidHandle);
	if (!size || size > GMEM_ACCEL_OBJ_MAX_SIZE || (flags & ~allowed))
		return gmem_fail(gmemErrorInvalidValue);
	ret = gmem_dev_ioctl(dev, dev->fd, GMEM_ACCEL_IOC_OBJ_ALLOC, &al);
	if (ret)
		return gmem_fail_errno(-ret);
	return gmem_map_object(dev, al.handle, al.mmap_offset, false, ptr);
}

gmemError_t gmemMalloc(gmemDevice_t dev, void **ptr, size_t size, unsigned int flags)
{
	return gmem_malloc(dev, ptr, size, flags, GMEM_MALLOC_FLAGS, 0);
}

/* Placement is each page's own, and managed pages are never pinned: a page size only. */
gmemError_t gmemMallocManaged(gmemDevice_t dev, void **ptr, size_t size, unsigned int flags)
{
	return gmem_malloc(dev, ptr, size, flags, GMEM_MALLOC_PAGE_SIZES, GMEM_ACCEL_OBJ_MANAGED);
}

gmemError_t gmem_ipc_open(struct gmemDevice *dev, int fd, void **ptr)
{
	struct gmem_accel_obj_import im = { .fd = fd };
	int ret;

	ret = gmem_dev_ioctl(dev, dev->fd, GMEM_ACCEL_IOC_OBJ_IMPORT, &im);
	if (ret == -EBADF || ret == -EINVAL || ret == -EOPNOTSUPP)
		return gmem_fail_as(gmemErrorInvalidIpcHandle, -ret);
	if (ret)
		return gmem_fail_errno(-ret);
	return gmem_map_object(dev, im.handle, im.mmap_offset, true, ptr);
}

gmemError_t gmemFree(void *ptr)
{
	struct gmem_accel_obj_free fr = { 0 };
	struct gmem_alloc *a, **p;
	int ret;

	if (!ptr)
		return gmem_ok();	/* as free(NULL) */
	pthread_mutex_lock(&gmem_lock);
	for (p = &gmem_allocs; *p && (*p)->base != ptr; p = &(*p)->next)
		;
	a = *p;
	if (a) {
		*p = a->next;
		a->dev->allocations--;
	}
	pthread_mutex_unlock(&gmem_lock);
	if (!a)		/* not the start of an allocation of ours (or freed already) */
		return gmem_fail(gmemErrorInvalidValue);
	munmap(a->base, a->size);
	fr.handle = a->handle;
	ret = gmem_dev_ioctl(a->dev, a->dev->fd, GMEM_ACCEL_IOC_OBJ_FREE, &fr);
	free(a);
	return ret ? gmem_fail_errno(-ret) : gmem_ok();
}

gmemError_t gmemPointerGetAttributes(struct gmemPointerAttributes *attr, const void *ptr)
{
	struct gmem_accel_obj_query q = { 0 };
	struct gmemDevice *dev = NULL;
	struct gmem_alloc *a;
	int ret, fd = -1;

	if (!attr || !ptr)
		return gmem_fail(gmemErrorInvalidValue);
	pthread_mutex_lock(&gmem_lock);
	a = gmem_alloc_find(ptr);
	if (a) {
		attr->base = a->base;
		attr->imported = a->imported;
		q.handle = a->handle;
		fd = a->dev->fd;
		dev = a->dev;
	}
	pthread_mutex_unlock(&gmem_lock);
	if (!a)
		return gmem_fail(gmemErrorInvalidValue);
	ret = gmem_dev_ioctl(dev, fd, GMEM_ACCEL_IOC_OBJ_QUERY, &q);
	if (ret)
		return gmem_fail_errno(-ret);
	attr->size = q.size;
	if (q.flags & GMEM_ACCEL_OBJ_MANAGED)
		attr->placement = gmemPlacementManaged;
	else if (q.flags & GMEM_ACCEL_OBJ_HBM)
		attr->placement = gmemPlacementDevice;
	else
		attr->placement = gmemPlacementHost;
	attr->pageSize = q.page_size;
	attr->hbmAddr = q.hbm_addr;
	attr->pinned = !!(q.flags & GMEM_ACCEL_OBJ_PINNED);
	return gmem_ok();
}
