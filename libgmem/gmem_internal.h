/* SPDX-License-Identifier: MIT */
/* libgmem internals: the objects behind the public handles, and what the files share. */
#ifndef GMEM_INTERNAL_H
#define GMEM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "gmem.h"
#include "gmem_accel_uapi.h"

#define GMEM_DEV_DIR "/dev"
#define GMEM_SYSFS_CLASS "/sys/class/gmem_accel"
#define GMEM_MAX_DEVICES 64

/* An open device: its file (a device context of its own, used for allocations and advice). */
struct gmemDevice {
	int fd;
	unsigned int minor;
	bool drm;			/* a DRM accel node (backend.c), else /dev/gmem_accelN */
	char path[64];			/* its node, which streams open too */
	struct gmem_accel_info info;
	int streams;			/* alive, under gmem_lock */
	int allocations;
};

/*
 * A stream: a file of its own on the device, so a context and a command queue of its own.
 * @fences: batches queued and not yet waited for, oldest first.
 * @wait_fd: a sync_file the next batch waits for (gmemStreamWaitEvent), or -1.
 */
struct gmemStream {
	struct gmemDevice *dev;
	int fd;
	pthread_mutex_t lock;
	uint64_t *fences;
	size_t nfences, cap;
	uint64_t last_fence;		/* 0: nothing queued yet */
	int wait_fd;
};

/* An event: a sync_file, or -1 when complete (never recorded, or recorded on an idle stream) */
struct gmemEvent {
	int fd;
};

/* One gmemMalloc / gmemIpcOpenMemHandle mapping. */
struct gmem_alloc {
	struct gmem_alloc *next;
	struct gmemDevice *dev;
	void *base;
	size_t size;
	uint32_t handle;
	bool imported;
	bool managed;
};

/* The registry of live handles: a handle is checked here before it is used. */
enum gmem_kind { GMEM_KIND_DEVICE, GMEM_KIND_STREAM, GMEM_KIND_EVENT };
extern pthread_mutex_t gmem_lock;
bool gmem_live_add(enum gmem_kind kind, void *obj);
bool gmem_live_has(enum gmem_kind kind, const void *obj);
void gmem_live_del(enum gmem_kind kind, void *obj);

/* Record an error for the calling thread and return it: from an errno, or a library check. */
gmemError_t gmem_fail_errno(int err);
gmemError_t gmem_fail(gmemError_t e);
gmemError_t gmem_fail_as(gmemError_t e, int err);
static inline gmemError_t gmem_ok(void) { return gmemSuccess; }

/* ioctl() retried on EINTR; -errno or 0 */
int gmem_ioctl(int fd, unsigned long req, void *arg);

/* backend.c: the front end a device is on (GMEM_BACKEND restricts which are used) */
enum gmem_backend { GMEM_BACKEND_ANY, GMEM_BACKEND_GMEM, GMEM_BACKEND_DRM, GMEM_BACKEND_INVALID };
enum gmem_backend gmem_backend(void);
bool gmem_node_of(unsigned int minor, enum gmem_backend b, char *path, size_t len, bool *drm);
/* GMEM_ACCEL_IOC_* @cmd on @fd, a file of @dev, as its front end takes it; -errno or 0 */
int gmem_dev_ioctl(const struct gmemDevice *dev, int fd, unsigned long cmd, void *arg);
/* the same, not retried on EINTR (a SUBMIT that may have queued) */
int gmem_dev_ioctl_once(const struct gmemDevice *dev, int fd, unsigned long cmd, void *arg);

/* Allocation lookup (gmem_lock held) */
struct gmem_alloc *gmem_alloc_find(const void *ptr);
extern struct gmem_alloc *gmem_allocs;

/* Import dma-buf @fd on @dev and map it (gmemIpcOpenMemHandle) */
gmemError_t gmem_ipc_open(struct gmemDevice *dev, int fd, void **ptr);

/* Streams: queue @n commands (any number) on @s. */
gmemError_t gmem_stream_submit(struct gmemStream *s, struct gmem_accel_cmd *cmds, size_t n);
gmemError_t gmem_stream_run(struct gmemStream *s, struct gmem_accel_cmd *cmds, size_t n);
/* Apply the device's recorded advice to a new stream's file. */
gmemError_t gmem_advice_replay(struct gmemDevice *dev, int fd);
void gmem_advice_forget(struct gmemDevice *dev);
/* The live streams of @dev, at most @max (gmem_lock held). */
#define GMEM_MAX_STREAMS 256
int gmem_device_streams(struct gmemDevice *dev, struct gmemStream **out, int max);

#endif
