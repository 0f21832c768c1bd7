/* SPDX-License-Identifier: MIT */
/*
 * libgmem: the gmem-accel runtime. Devices, streams and events, unified memory (any pointer
 * works; prefetch and advise), device memory (allocate, map, query), work on a stream (copy,
 * set, the device's compute commands) and sharing between processes. Shaped after the CUDA
 * runtime: every call returns a gmemError_t, gmemGetErrorString() names it, and
 * gmemGetLastErrno() gives the driver's errno behind the last failure of the calling thread.
 * docs/libgmem.md maps each call onto the driver's ioctls.
 */
#ifndef GMEM_H
#define GMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LIBGMEM_VERSION_MAJOR 1
#define LIBGMEM_VERSION_MINOR 0

/**
 * enum gmemError - what a call returns
 * @gmemSuccess:                 done
 * @gmemErrorInvalidValue:       an argument is out of range (NULL, zero or huge size, flags)
 * @gmemErrorNoDevice:           no such gmem-accel device (or none at all)
 * @gmemErrorMemoryAllocation:   out of system memory
 * @gmemErrorOutOfDeviceMemory:  the device's HBM has no room (ENOSPC)
 * @gmemErrorInvalidHandle:      a device, stream, event or pointer the library does not know
 *                               (closed, destroyed, freed, or never its)
 * @gmemErrorIllegalAddress:     the device touched memory the process has not mapped (EFAULT)
 * @gmemErrorPermission:         a write to memory the process may only read (EPERM, EACCES)
 * @gmemErrorLaunchFailure:      the device failed a command (EIO, ECANCELED: reset)
 * @gmemErrorTimeout:            not done within the time asked for (ETIME)
 * @gmemErrorNotReady:           an event or stream has work still running (a query)
 * @gmemErrorNotSupported:       the device or kernel cannot do it (EOPNOTSUPP)
 * @gmemErrorDeviceLost:         the device was unbound under an open handle (ENODEV)
 * @gmemErrorInvalidIpcHandle:   a received handle that is no gmem-accel memory or event
 * @gmemErrorSystem:             any other errno (gmemGetLastErrno() says which)
 */
typedef enum gmemError {
	gmemSuccess = 0,
	gmemErrorInvalidValue,
	gmemErrorNoDevice,
	gmemErrorMemoryAllocation,
	gmemErrorOutOfDeviceMemory,
	gmemErrorInvalidHandle,
	gmemErrorIllegalAddress,
	gmemErrorPermission,
	gmemErrorLaunchFailure,
	gmemErrorTimeout,
	gmemErrorNotReady,
	gmemErrorNotSupported,
	gmemErrorDeviceLost,
	gmemErrorInvalidIpcHandle,
	gmemErrorSystem,
	gmemErrorCount		/* not an error: the number of values */
} gmemError_t;

/* A sentence for @err ("unknown error" for a value that is none). Never NULL. */
const char *gmemGetErrorString(gmemError_t err);
/* The value's name, "gmemErrorInvalidValue" for instance. Never NULL. */
const char *gmemGetErrorName(gmemError_t err);
/* The last error of the calling thread, which this call resets to gmemSuccess. */
gmemError_t gmemGetLastError(void);
/* The last error of the calling thread, left as it is. */
gmemError_t gmemPeekAtLastError(void);
/* The errno behind the calling thread's last error (0 if it had none: a library check). */
int gmemGetLastErrno(void);

typedef struct gmemDevice *gmemDevice_t;
typedef struct gmemStream *gmemStream_t;
typedef struct gmemEvent *gmemEvent_t;

/**
 * struct gmemDeviceProp - what gmemGetDeviceProperties() reports
 * @name:        "gmem_accelN", the device node's name
 * @pciBusId:    "0000:01:00.0"
 * @hbmBytes:    the device's memory
 * @coherent:    1 if the CPU reads and writes HBM in place (pages do not move back on access)
 * @peerToPeer:  1: other gmem-accel devices reach its HBM over PCIe and migrate to it directly
 * @pageSizes:   the device MMU's page sizes, a bit per size (4 KiB | 64 KiB | 2 MiB)
 * @versionMajor, @versionMinor: the hardware's version
 * @caps:        the hardware's capability bits (GMEM_CAP_* of gmem_accel_hw.h)
 * @minor:       N of gmem_accelN (/dev/gmem_accelN, or its accel node on the DRM front end)
 */
struct gmemDeviceProp {
	char name[32];
	char pciBusId[32];
	uint64_t hbmBytes;
	int coherent;
	int peerToPeer;
	uint64_t pageSizes;
	unsigned int versionMajor;
	unsigned int versionMinor;
	uint32_t caps;
	unsigned int minor;
};

/* How many gmem-accel devices this machine has (0, gmemSuccess, when it has none). */
gmemError_t gmemGetDeviceCount(int *count);
/* The properties of device @device (0 .. count - 1). */
gmemError_t gmemGetDeviceProperties(struct gmemDeviceProp *prop, int device);
/*
 * Open device @device for this process: its address space is mirrored on the device from now
 * on. Handles are per process; a forked child opens its own.
 */
gmemError_t gmemDeviceOpen(gmemDevice_t *dev, int device);
/* Close it: every stream, event and allocation made on it must be gone first. */
gmemError_t gmemDeviceClose(gmemDevice_t dev);
/* Wait for every stream of @dev. */
gmemError_t gmemDeviceSynchronize(gmemDevice_t dev);

/*
 * Streams: an ordered queue of work on one device (a device context of its own, so one
 * device command queue). Work on different streams may run in any order; events order it.
 */
gmemError_t gmemStreamCreate(gmemStream_t *stream, gmemDevice_t dev);
/* Waits for the stream's work, then destroys it. */
gmemError_t gmemStreamDestroy(gmemStream_t stream);
/* Wait for everything queued on @stream; the first failure of its work is returned. */
gmemError_t gmemStreamSynchronize(gmemStream_t stream);
/* gmemSuccess if the stream's work is done, gmemErrorNotReady if not. */
gmemError_t gmemStreamQuery(gmemStream_t stream);
/* Work queued on @stream from now on runs after @event (of any stream, process, device). */
gmemError_t gmemStreamWaitEvent(gmemStream_t stream, gmemEvent_t event);

/* Events: the completion of a stream's work so far (a sync_file under the hood). */
gmemError_t gmemEventCreate(gmemEvent_t *event);
gmemError_t gmemEventDestroy(gmemEvent_t event);
/* @event completes when what @stream has queued so far is done. */
gmemError_t gmemEventRecord(gmemEvent_t event, gmemStream_t stream);
gmemError_t gmemEventSynchronize(gmemEvent_t event);
/* gmemSuccess if done (or never recorded), gmemErrorNotReady if not. */
gmemError_t gmemEventQuery(gmemEvent_t event);

/*
 * Unified memory: any pointer of the process (malloc, mmap, stack, gmemMalloc) works in every
 * call; the device reaches it through its page faults. Prefetch moves the pages to the
 * device's HBM (@dst a device) or home (@dst NULL: from @stream's device) ahead of use; it
 * runs when called, and what @stream has queued sees the pages wherever they are at each
 * moment. The range is widened to whole pages.
 */
gmemError_t gmemMemPrefetchAsync(const void *ptr, size_t count, gmemDevice_t dst,
				 gmemStream_t stream);

/* Where memory should live, and who keeps it mapped (gmemMemAdvise), by CUDA's names */
typedef enum gmemMemoryAdvise {
	/* device faults on the range move it to @dev's HBM first */
	gmemMemAdviseSetPreferredLocation = 1,
	/* forget the preference (device faults map system memory) */
	gmemMemAdviseUnsetPreferredLocation = 2,
	/* the range lives in system memory; its pages in @dev's HBM come home now */
	gmemMemAdviseSetPreferredHost = 3,
	/* @dev keeps the range mapped wherever its pages are: its accesses do not fault */
	gmemMemAdviseSetAccessedBy = 4,
	/* forget that (the location advice stays) */
	gmemMemAdviseUnsetAccessedBy = 5,
	/*
	 * read duplication, on managed memory (gmemMallocManaged) only: the device reads a copy
	 * in its HBM and the CPU its own, until either writes (gmemErrorNotSupported elsewhere:
	 * the kernel cannot keep an anonymous page's CPU mapping read-only)
	 */
	gmemMemAdviseSetReadMostly = 6,
	/* no more: the duplicates collapse to system memory */
	gmemMemAdviseUnsetReadMostly = 7,
} gmemMemoryAdvise_t;

/*
 * Advice for [ptr, ptr + count) on device @dev: its streams, now and later, follow it. The
 * location and accessed-by are set independently. Read-mostly belongs to the managed
 * allocation itself (every stream sees it at once); gmemErrorNotSupported on other memory.
 */
gmemError_t gmemMemAdvise(const void *ptr, size_t count, gmemMemoryAdvise_t advice,
			  gmemDevice_t dev);

/* gmemMalloc flags: at most one placement and at most one page size */
#define gmemMemPlaceDevice	(1u << 0)	/* in HBM (gmemErrorOutOfDeviceMemory if full) */
#define gmemMemPlaceHost	(1u << 1)	/* in system memory */
#define gmemMemPage4K		(1u << 2)	/* force the device page size (else by size: */
#define gmemMemPage64K		(1u << 3)	/*  < 64 KiB: 4 KiB, < 2 MiB: 64 KiB, else */
#define gmemMemPage2M		(1u << 4)	/*  2 MiB, as NVIDIA UVM picks chunks) */
#define gmemMemPinned		(1u << 5)	/* never evicted from HBM */

/*
 * Device memory: @size bytes on @dev, zeroed, mapped into the process at *@ptr (HBM through
 * the device's BAR, write-combined; system memory as pages). The CPU and the device use the
 * same pointer. Neither placement flag: HBM if it has room, else system memory.
 */
gmemError_t gmemMalloc(gmemDevice_t dev, void **ptr, size_t size, unsigned int flags);
/*
 * Managed memory, as CUDA's cudaMallocManaged: @size bytes, zeroed, mapped at *@ptr for the CPU
 * and @dev alike. Each device page lives in system memory or in @dev's HBM and moves to the
 * side that touches it; with gmemMemAdviseSetReadMostly both keep a copy until one writes.
 * @flags: at most one page size (gmemMemPage*), nothing else. No IPC handle (as CUDA's).
 */
gmemError_t gmemMallocManaged(gmemDevice_t dev, void **ptr, size_t size, unsigned int flags);
/* Free what gmemMalloc or gmemMallocManaged gave (or unmap what gmemIpcOpenMemHandle opened). */
gmemError_t gmemFree(void *ptr);

/* Where an allocation is (gmemMemGetInfo) */
typedef enum gmemMemoryPlacement {
	gmemPlacementHost = 1,
	gmemPlacementDevice = 2,
	gmemPlacementManaged = 3,	/* page by page, where it was last used */
} gmemMemoryPlacement_t;

/**
 * struct gmemPointerAttributes - an allocation as the driver sees it
 * @base:      its first byte (the pointer gmemMalloc gave)
 * @size:      bytes (a multiple of @pageSize)
 * @placement: where it is now (an HBM allocation moves to system memory if evicted)
 * @pageSize:  the device page size: 4096, 65536 or 2097152
 * @hbmAddr:   its HBM offset, as the QEMU monitor shows it; UINT64_MAX in system memory
 * @pinned:    1 if never evicted
 * @imported:  1 if opened from another process's IPC handle
 */
struct gmemPointerAttributes {
	void *base;
	size_t size;
	gmemMemoryPlacement_t placement;
	uint64_t pageSize;
	uint64_t hbmAddr;
	int pinned;
	int imported;
};

/* What @ptr (anywhere inside an allocation) is; gmemErrorInvalidValue if no allocation. */
gmemError_t gmemPointerGetAttributes(struct gmemPointerAttributes *attr, const void *ptr);

/*
 * Work on a stream, on any pointers the process has mapped. Each call queues and returns; the
 * stream's synchronize (or an event) reports how the work went.
 */
gmemError_t gmemMemcpyAsync(void *dst, const void *src, size_t count, gmemStream_t stream);
/* Set @count bytes to @value. */
gmemError_t gmemMemsetAsync(void *dst, int value, size_t count, gmemStream_t stream);
/*
 * Synchronous forms: queue on @stream, then wait for all its work (on an idle stream, one
 * call to the driver that waits too: the faults served on this thread, no interrupt taken).
 */
gmemError_t gmemMemcpy(void *dst, const void *src, size_t count, gmemStream_t stream);
gmemError_t gmemMemset(void *dst, int value, size_t count, gmemStream_t stream);

/* Element width of the compute calls */
typedef enum gmemDataType {
	gmemUint32 = 4,
	gmemUint64 = 8,
} gmemDataType_t;

/* dst[i] += value for i < n, each add atomic (the device's ATOMIC_ADD). */
gmemError_t gmemAtomicAddAsync(void *dst, uint64_t value, size_t n, gmemDataType_t type,
			       gmemStream_t stream);
/*
 * dst[i] = src[i] * scale + add for i < n, wrapping (the device's SCALE_ADD); dst and src may
 * be the same array.
 */
gmemError_t gmemScaleAddAsync(void *dst, const void *src, uint64_t scale, uint64_t add,
			      size_t n, gmemDataType_t type, gmemStream_t stream);
/*
 * y[i] += x[i] * a for i < n, wrapping (the device's AXPY, BLAS's axpy on integers): with a = 1
 * the element-wise add c = a + b.
 */
gmemError_t gmemAxpyAsync(void *y, const void *x, uint64_t a, size_t n, gmemDataType_t type,
			  gmemStream_t stream);

/*
 * IPC: an allocation or an event as a handle another process can open. A handle holds a file
 * descriptor (a dma-buf, a sync_file): send it over a Unix socket with gmemIpcSend*(), or pass
 * it to a child across fork(). gmemIpcCloseMemHandleFd() and
 * gmemIpcCloseEventHandleFd() close the sender's copy.
 */
typedef struct gmemIpcMemHandle {
	int fd;
	uint64_t size;
} gmemIpcMemHandle_t;

typedef struct gmemIpcEventHandle {
	int fd;			/* -1: the event had completed (or was never recorded) */
} gmemIpcEventHandle_t;

gmemError_t gmemIpcGetMemHandle(gmemIpcMemHandle_t *handle, void *ptr);
/* Map a handle's memory on @dev into this process at *@ptr (any device: peer to peer). */
gmemError_t gmemIpcOpenMemHandle(gmemDevice_t dev, void **ptr, gmemIpcMemHandle_t handle);
/* Unmap what gmemIpcOpenMemHandle mapped (gmemFree does the same). */
gmemError_t gmemIpcCloseMemHandle(void *ptr);
gmemError_t gmemIpcGetEventHandle(gmemIpcEventHandle_t *handle, gmemEvent_t event);
gmemError_t gmemIpcOpenEventHandle(gmemEvent_t *event, gmemIpcEventHandle_t handle);
/* Send or receive a handle over connected Unix socket @sock (SCM_RIGHTS). */
gmemError_t gmemIpcSendMemHandle(int sock, const gmemIpcMemHandle_t *handle);
gmemError_t gmemIpcRecvMemHandle(int sock, gmemIpcMemHandle_t *handle);
gmemError_t gmemIpcSendEventHandle(int sock, const gmemIpcEventHandle_t *handle);
gmemError_t gmemIpcRecvEventHandle(int sock, gmemIpcEventHandle_t *handle);
/* Close this process's copy of a handle's descriptor (after sending it, or when unused). */
gmemError_t gmemIpcCloseMemHandleFd(gmemIpcMemHandle_t *handle);
gmemError_t gmemIpcCloseEventHandleFd(gmemIpcEventHandle_t *handle);

#ifdef __cplusplus
}
#endif

#endif /* GMEM_H */
