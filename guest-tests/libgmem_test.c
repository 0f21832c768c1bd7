// SPDX-License-Identifier: GPL-2.0
/*
 * libgmem on the device: every call of the runtime, with the bytes, the driver's counters and
 * the errors it gives for bad input (no device, closed stream, foreign handle, bad sizes).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define M2 (2ul << 20)

FIXTURE(lib) {
	gmemDevice_t dev;
	gmemStream_t s;
};

FIXTURE_SETUP(lib)
{
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	ASSERT_EQ(gmemSuccess, gmemDeviceOpen(&self->dev, 0));
	ASSERT_EQ(gmemSuccess, gmemStreamCreate(&self->s, self->dev));
}

FIXTURE_TEARDOWN(lib)
{
	EXPECT_EQ(gmemSuccess, gmemStreamDestroy(self->s));
	EXPECT_EQ(gmemSuccess, gmemDeviceClose(self->dev));
}

static void *anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int64_t stat0(const char *name)
{
	int64_t v = INT64_MIN;

	gmem_debugfs_stat(0, name, &v);
	return v;
}

/*
 * Device 0's queue interrupts once those already asked for have come: the count held still
 * for 200 ms (10 s at most). A call that had to sleep queued a fence that interrupts after
 * its batch, and may have seen the batch done and returned before that interrupt was taken.
 */
static int64_t settled_queue_irqs(void)
{
	int64_t v = stat0("queue_irqs"), last;
	int still = 0;

	for (int i = 0; i < 200 && still < 4; i++) {
		usleep(50 * 1000);
		last = v;
		v = stat0("queue_irqs");
		still = v == last ? still + 1 : 0;
	}
	return v;
}

/* The devices run-vm.sh made, with the HBM size and coherence it asked for. */
TEST_F_TIMEOUT(lib, devices_and_properties, 120)
{
	int count = -1, ndev = gmem_expect("devices", 1), coherent = gmem_expect("coherent", 0);
	struct gmemDeviceProp prop;
	gmemDevice_t d = NULL;

	ASSERT_EQ(gmemSuccess, gmemGetDeviceCount(&count));
	EXPECT_EQ(ndev, count);
	for (int i = 0; i < count; i++) {
		char pci[32];

		ASSERT_EQ(gmemSuccess, gmemGetDeviceProperties(&prop, i));
		EXPECT_EQ(gmem_expect("hbm_size", 0), prop.hbmBytes);
		EXPECT_EQ(i >= count - coherent, prop.coherent) TH_LOG("device %d", i);
		EXPECT_EQ(0, gmem_pci_addr(i, pci, sizeof(pci)));
		EXPECT_STREQ(pci, prop.pciBusId);
		EXPECT_TRUE(prop.pageSizes & 65536);
		EXPECT_EQ(0u, prop.versionMajor);
	}
	EXPECT_EQ(gmemErrorNoDevice, gmemGetDeviceProperties(&prop, count));
	EXPECT_EQ(gmemErrorNoDevice, gmemDeviceOpen(&d, count));
	EXPECT_EQ(NULL, d);
	/* A device with a live stream is not closed under it. */
	EXPECT_EQ(gmemErrorNotReady, gmemDeviceClose(self->dev));
	EXPECT_EQ(EBUSY, gmemGetLastErrno());
}

/* Copy, set, atomic add and scale-add on plain malloc'd memory, checked byte by byte. */
TEST_F_TIMEOUT(lib, work_on_a_stream, 300)
{
	size_t n = 1 << 16, len = n * sizeof(uint32_t);
	uint32_t *a = malloc(len), *b = malloc(len);
	uint64_t *w = malloc(n * sizeof(uint64_t));
	uint8_t *bytes = malloc(len);

	ASSERT_TRUE(a && b && w && bytes);
	for (size_t i = 0; i < n; i++) {
		a[i] = i;
		w[i] = (uint64_t)i << 32;
	}
	ASSERT_EQ(gmemSuccess, gmemMemcpyAsync(b, a, len, self->s));
	ASSERT_EQ(gmemSuccess, gmemScaleAddAsync(b, b, 3, 7, n, gmemUint32, self->s));
	ASSERT_EQ(gmemSuccess, gmemAtomicAddAsync(b, 1, n, gmemUint32, self->s));
	ASSERT_EQ(gmemSuccess, gmemAtomicAddAsync(w, 5, n, gmemUint64, self->s));
	ASSERT_EQ(gmemSuccess, gmemMemsetAsync(bytes, 0xa5, len, self->s));
	ASSERT_EQ(gmemSuccess, gmemStreamSynchronize(self->s));
	EXPECT_EQ(gmemSuccess, gmemStreamQuery(self->s));
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ((uint32_t)(i * 3 + 8), b[i]) TH_LOG("b[%zu]", i);
		ASSERT_EQ(((uint64_t)i << 32) + 5, w[i]) TH_LOG("w[%zu]", i);
		ASSERT_EQ(0xa5a5a5a5u, ((uint32_t *)bytes)[i]);
	}
	/* b += a * 2, element-wise (AXPY) */
	ASSERT_EQ(gmemSuccess, gmemAxpyAsync(b, a, 2, n, gmemUint32, self->s));
	ASSERT_EQ(gmemSuccess, gmemStreamSynchronize(self->s));
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ((uint32_t)(i * 5 + 8), b[i]) TH_LOG("b[%zu] after axpy", i);
	}
	/* Synchronous forms */
	ASSERT_EQ(gmemSuccess, gmemMemset(a, 0, len, self->s));
	ASSERT_EQ(gmemSuccess, gmemMemcpy(bytes, a, len, self->s));
	EXPECT_EQ(0, bytes[len - 1]);
	/* Bad arguments are refused before anything is queued. */
	EXPECT_EQ(gmemErrorInvalidValue, gmemMemcpyAsync(b, a, 0, self->s));
	EXPECT_EQ(gmemErrorInvalidValue, gmemMemcpyAsync(NULL, a, 8, self->s));
	EXPECT_EQ(gmemErrorInvalidValue, gmemAtomicAddAsync((char *)b + 1, 1, 1, gmemUint32,
							    self->s));
	EXPECT_EQ(gmemErrorInvalidValue, gmemAtomicAddAsync(b, 1, 1, 3, self->s));
	EXPECT_EQ(gmemErrorInvalidValue, gmemAxpyAsync(b, NULL, 1, 1, gmemUint32, self->s));
	EXPECT_EQ(gmemErrorInvalidValue, gmemAxpyAsync(b, (char *)a + 2, 1, 1, gmemUint32,
						       self->s));
	EXPECT_EQ(gmemErrorInvalidValue, gmemMemcpyAsync((void *)-8ul, a, 64, self->s));
	free(a);
	free(b);
	free(w);
	free(bytes);
}

/* The device touching memory the process has not mapped: the stream reports it, with EFAULT. */
TEST_F_TIMEOUT(lib, illegal_address, 120)
{
	uint8_t *hole = anon(PAGE), *buf = malloc(PAGE);

	ASSERT_TRUE(hole && buf);
	ASSERT_EQ(0, munmap(hole, PAGE));
	ASSERT_EQ(gmemSuccess, gmemMemcpyAsync(buf, hole, PAGE, self->s));
	EXPECT_EQ(gmemErrorIllegalAddress, gmemStreamSynchronize(self->s));
	EXPECT_EQ(EFAULT, gmemGetLastErrno());
	EXPECT_STRNE("unknown error", gmemGetErrorString(gmemGetLastError()));
	/* The stream goes on. */
	EXPECT_EQ(gmemSuccess, gmemMemset(buf, 1, PAGE, self->s));
	EXPECT_EQ(1, buf[PAGE - 1]);
	free(buf);
}

/*
 * gmemMemcpy() and gmemMemset() on an idle stream: one SUBMIT that waits too, its faults
 * served on the calling thread and no queue interrupt taken for memory the device maps.
 * Behind queued work they wait for all of it, as gmemStreamSynchronize() does; a failure is
 * theirs, and the stream goes on.
 */
TEST_F_TIMEOUT(lib, synchronous_work_takes_no_interrupt, 300)
{
	size_t len = 64 * PAGE;
	uint8_t *src = anon(len), *dst = anon(len), *hole = anon(PAGE);
	int64_t irqs0, irqs, wakes0;

	ASSERT_TRUE(src && dst && hole);
	ASSERT_EQ(0, munmap(hole, PAGE));
	/* (a NUMA balancing scan would zap the pages: the copies would fault again) */
	ASSERT_EQ(0, no_numa_scan(src, len));
	ASSERT_EQ(0, no_numa_scan(dst, len));
	memset(src, 0x3c, len);
	ASSERT_EQ(gmemSuccess, gmemMemcpy(dst, src, len, self->s));	/* faults, served here */
	EXPECT_EQ(0, memcmp(dst, src, len));
	irqs0 = settled_queue_irqs();
	wakes0 = stat0("wake_fences");
	for (int i = 0; i < 50; i++) {
		src[i] = i;
		ASSERT_EQ(gmemSuccess, gmemMemcpy(dst + i, src + i, 1, self->s));
		ASSERT_EQ(i, dst[i]);
		ASSERT_EQ(gmemSuccess, gmemMemset(dst + PAGE + i, i, 1, self->s));
		ASSERT_EQ(i, dst[PAGE + i]);
	}
	/* none of them slept, so none asked for an interrupt, and none came */
	EXPECT_EQ(wakes0, stat0("wake_fences"));
	irqs = stat0("queue_irqs");
	EXPECT_EQ(irqs0, irqs) TH_LOG("queue interrupts for 100 synchronous calls");
	/* Behind queued work: that is waited for too. */
	ASSERT_EQ(gmemSuccess, gmemMemsetAsync(dst, 0x11, len, self->s));
	ASSERT_EQ(gmemSuccess, gmemMemcpy(src, dst, PAGE, self->s));
	EXPECT_EQ(0x11, src[PAGE - 1]);
	EXPECT_EQ(0x11, dst[len - 1]);
	EXPECT_EQ(gmemSuccess, gmemStreamQuery(self->s));
	/* Memory the process has not mapped: the call's error; the stream goes on. */
	EXPECT_EQ(gmemErrorIllegalAddress, gmemMemcpy(dst, hole, PAGE, self->s));
	EXPECT_EQ(EFAULT, gmemGetLastErrno());
	EXPECT_EQ(gmemSuccess, gmemMemset(dst, 2, PAGE, self->s));
	EXPECT_EQ(2, dst[PAGE - 1]);
	EXPECT_EQ(gmemSuccess, gmemStreamSynchronize(self->s));
	munmap(src, len);
	munmap(dst, len);
}

/* An event of one stream orders another's work; destroyed handles are refused. */
TEST_F_TIMEOUT(lib, events_and_streams, 300)
{
	size_t len = 8 * M2;
	uint8_t *x = anon(len), *y = anon(len);
	gmemStream_t s2, dead;
	gmemEvent_t ev;

	ASSERT_TRUE(x && y);
	ASSERT_EQ(gmemSuccess, gmemStreamCreate(&s2, self->dev));
	ASSERT_EQ(gmemSuccess, gmemEventCreate(&ev));
	ASSERT_EQ(gmemSuccess, gmemMemsetAsync(x, 0x3c, len, self->s));
	ASSERT_EQ(gmemSuccess, gmemEventRecord(ev, self->s));
	ASSERT_EQ(gmemSuccess, gmemStreamWaitEvent(s2, ev));
	ASSERT_EQ(gmemSuccess, gmemMemcpyAsync(y, x, len, s2));
	ASSERT_EQ(gmemSuccess, gmemStreamSynchronize(s2));
	EXPECT_EQ(gmemSuccess, gmemEventQuery(ev));
	for (size_t i = 0; i < len; i += PAGE / 2) {
		ASSERT_EQ(0x3c, y[i]) TH_LOG("offset %zu: the copy ran before the fill", i);
	}
	EXPECT_EQ(gmemSuccess, gmemEventSynchronize(ev));

	ASSERT_EQ(gmemSuccess, gmemStreamCreate(&dead, self->dev));
	ASSERT_EQ(gmemSuccess, gmemStreamDestroy(dead));
	EXPECT_EQ(gmemErrorInvalidHandle, gmemMemcpyAsync(y, x, PAGE, dead));
	EXPECT_EQ(gmemErrorInvalidHandle, gmemStreamSynchronize(dead));
	EXPECT_EQ(gmemErrorInvalidHandle, gmemEventRecord(ev, dead));
	EXPECT_EQ(gmemSuccess, gmemEventDestroy(ev));
	EXPECT_EQ(gmemErrorInvalidHandle, gmemEventQuery(ev));
	EXPECT_EQ(gmemSuccess, gmemStreamDestroy(s2));
	munmap(x, len);
	munmap(y, len);
}

/* Prefetch moves pages into HBM and back; advice makes the device's faults move them. */
TEST_F_TIMEOUT(lib, prefetch_and_advise, 300)
{
	size_t len = 2 * M2;
	uint8_t *buf = anon(len), *fresh = anon(len), *out = anon(len);
	int64_t pages0 = stat0("hbm_pages_now");

	ASSERT_TRUE(buf && fresh && out);
	memset(buf, 0x77, len);
	ASSERT_EQ(gmemSuccess, gmemMemPrefetchAsync(buf + 1, len - 2, self->dev, self->s));
	EXPECT_EQ(pages0 + (int64_t)(len / PAGE), stat0("hbm_pages_now"));
	ASSERT_EQ(gmemSuccess, gmemMemcpy(out, buf, len, self->s));
	EXPECT_EQ(0x77, out[len - 1]);
	ASSERT_EQ(gmemSuccess, gmemMemPrefetchAsync(buf, len, NULL, self->s));
	EXPECT_EQ(pages0, stat0("hbm_pages_now"));
	EXPECT_EQ(0x77, buf[len / 2]);

	/* Advice on the device reaches its streams, the ones opened later too. */
	ASSERT_EQ(gmemSuccess, gmemMemAdvise(fresh, len, gmemMemAdviseSetPreferredLocation,
					     self->dev));
	gmemStream_t later;

	ASSERT_EQ(gmemSuccess, gmemStreamCreate(&later, self->dev));
	ASSERT_EQ(gmemSuccess, gmemMemset(fresh, 0x12, len, later));
	EXPECT_EQ(pages0 + (int64_t)(len / PAGE), stat0("hbm_pages_now"));
	EXPECT_EQ(0x12, fresh[len - 1]);	/* (the CPU's read brings them home) */
	ASSERT_EQ(gmemSuccess, gmemMemAdvise(fresh, len, gmemMemAdviseSetPreferredHost,
					     self->dev));
	EXPECT_EQ(gmemSuccess, gmemStreamDestroy(later));
	EXPECT_EQ(pages0, gmem_wait_stat(0, "hbm_pages_now", pages0, 10000));

	EXPECT_EQ(gmemErrorInvalidValue, gmemMemAdvise(fresh, len, 99, self->dev));
	EXPECT_EQ(gmemErrorInvalidValue, gmemMemPrefetchAsync(NULL, len, self->dev, self->s));
	EXPECT_EQ(gmemErrorIllegalAddress, gmemMemPrefetchAsync((void *)4096, PAGE, self->dev,
								self->s));
	munmap(buf, len);
	munmap(fresh, len);
	munmap(out, len);
}

/* Device memory: the page size by size class, CPU and device on one pointer, bad input. */
TEST_F_TIMEOUT(lib, device_memory, 300)
{
	static const struct { size_t size; uint64_t page; } classes[] = {
		{ 4096, 4096 }, { 100 << 10, 65536 }, { 4 << 20, 2 << 20 },
	};
	int64_t obj0 = stat0("objects_now");
	struct gmemPointerAttributes at;

	for (size_t c = 0; c < sizeof(classes) / sizeof(classes[0]); c++) {
		size_t size = classes[c].size;
		uint8_t *p, *out = malloc(size);

		ASSERT_EQ(gmemSuccess, gmemMalloc(self->dev, (void **)&p, size, 0));
		ASSERT_EQ(gmemSuccess, gmemPointerGetAttributes(&at, p + size - 1));
		EXPECT_EQ(p, at.base);
		EXPECT_EQ(classes[c].page, at.pageSize);
		EXPECT_EQ(gmemPlacementDevice, at.placement);
		EXPECT_NE(UINT64_MAX, at.hbmAddr);
		EXPECT_EQ(0, at.imported);
		EXPECT_EQ(0, p[size / 2]);		/* zeroed */
		memset(p, 0x40 + c, size);		/* the CPU writes through BAR2... */
		ASSERT_EQ(gmemSuccess, gmemMemcpy(out, p, size, self->s));	/* device reads */
		EXPECT_EQ(0x40 + c, out[size - 1]);
		/* The QEMU monitor sees the device map that HBM at p, in pages of that size. */
		struct gmem_hbm_use use[2];

		ASSERT_EQ(1, gmem_monitor_hbm_users(0, at.hbmAddr, use, 2))
			TH_LOG("%zu bytes: the monitor's users of HBM %#llx", size,
			       (unsigned long long)at.hbmAddr);
		EXPECT_EQ((uintptr_t)p, use[0].va - (use[0].hbm - at.hbmAddr));
		EXPECT_EQ(classes[c].page, use[0].page_size);
		ASSERT_EQ(gmemSuccess, gmemMemset(p, 0x21, PAGE, self->s));	/* and writes */
		EXPECT_EQ(0x21, p[PAGE - 1]);
		EXPECT_EQ(gmemSuccess, gmemFree(p));
		EXPECT_EQ(gmemErrorInvalidValue, gmemFree(p));	/* double free */
		free(out);
	}
	uint8_t *sys;

	ASSERT_EQ(gmemSuccess, gmemMalloc(self->dev, (void **)&sys, M2,
					  gmemMemPlaceHost | gmemMemPage4K | gmemMemPinned));
	ASSERT_EQ(gmemSuccess, gmemPointerGetAttributes(&at, sys));
	EXPECT_EQ(gmemPlacementHost, at.placement);
	EXPECT_EQ(4096u, at.pageSize);
	EXPECT_EQ(1, at.pinned);
	EXPECT_EQ(gmemSuccess, gmemFree(sys));

	void *p = &at;

	EXPECT_EQ(gmemErrorInvalidValue, gmemMalloc(self->dev, &p, 0, 0));
	EXPECT_EQ(NULL, p);
	EXPECT_EQ(gmemErrorInvalidValue, gmemMalloc(self->dev, &p, 4096, 1u << 20));
	EXPECT_EQ(gmemErrorInvalidValue, gmemMalloc(self->dev, &p, 4096,
						    gmemMemPage4K | gmemMemPage2M));
	EXPECT_EQ(EINVAL, gmemGetLastErrno());	/* that one the driver refused */
	EXPECT_EQ(gmemErrorInvalidValue, gmemMalloc(self->dev, &p, SIZE_MAX, 0));
	EXPECT_EQ(gmemErrorOutOfDeviceMemory,
		  gmemMalloc(self->dev, &p, gmem_expect("hbm_size", 0) * 2, gmemMemPlaceDevice));
	EXPECT_EQ(ENOSPC, gmemGetLastErrno());
	EXPECT_EQ(obj0, stat0("objects_now"));
}

/*
 * Managed memory: pages move to the side that touches them; read-mostly keeps a copy on each
 * side until one writes; no IPC handle; read-mostly elsewhere is NotSupported.
 */
TEST_F_TIMEOUT(lib, managed_memory, 300)
{
	int64_t obj0 = stat0("objects_now"), hbm0 = stat0("hbm_pages_now");
	size_t len = 64 * PAGE;
	struct gmemPointerAttributes at;
	uint8_t *p, *out = anon(len), *plain = anon(PAGE);
	gmemIpcMemHandle_t h;

	ASSERT_TRUE(out && plain);
	ASSERT_EQ(gmemSuccess, gmemMallocManaged(self->dev, (void **)&p, len, gmemMemPage4K));
	ASSERT_EQ(gmemSuccess, gmemPointerGetAttributes(&at, p + len - 1));
	EXPECT_EQ(gmemPlacementManaged, at.placement);
	EXPECT_EQ(4096u, at.pageSize);
	EXPECT_EQ(0, p[len - 1]);			/* zeroed */
	memset(p, 0x5a, len);
	ASSERT_EQ(gmemSuccess, gmemMemcpy(out, p, len, self->s));	/* device reads */
	EXPECT_EQ(0x5a, out[len - 1]);

	/* Read-mostly: the device's next read makes copies in HBM, the CPU keeps its own. */
	ASSERT_EQ(gmemSuccess, gmemMemAdvise(p, len, gmemMemAdviseSetReadMostly, self->dev));
	memset(p, 0x6b, len);				/* (brings every page home) */
	ASSERT_EQ(gmemSuccess, gmemMemcpy(out, p, len, self->s));
	EXPECT_EQ(0x6b, out[0]);
	EXPECT_EQ((int64_t)(len / PAGE), stat0("readdup_pages_now"));
	EXPECT_EQ(0x6b, p[len / 2]);			/* the CPU reads its copy */
	EXPECT_EQ((int64_t)(len / PAGE), stat0("readdup_pages_now"));
	p[0] = 0x11;					/* a write collapses that page */
	EXPECT_EQ((int64_t)(len / PAGE) - 1, stat0("readdup_pages_now"));
	ASSERT_EQ(gmemSuccess, gmemMemcpy(out, p, PAGE, self->s));
	EXPECT_EQ(0x11, out[0]);
	ASSERT_EQ(gmemSuccess, gmemMemAdvise(p, len, gmemMemAdviseUnsetReadMostly, self->dev));
	EXPECT_EQ(0, stat0("readdup_pages_now"));

	EXPECT_EQ(gmemErrorNotSupported, gmemIpcGetMemHandle(&h, p));
	EXPECT_EQ(gmemErrorNotSupported,
		  gmemMemAdvise(plain, PAGE, gmemMemAdviseSetReadMostly, self->dev));
	EXPECT_EQ(0, gmemGetLastErrno());		/* the library's own check */
	EXPECT_EQ(gmemErrorNotSupported,
		  gmemMemAdvise(p, len + PAGE, gmemMemAdviseSetReadMostly, self->dev));
	void *q = &at;

	EXPECT_EQ(gmemErrorInvalidValue, gmemMallocManaged(self->dev, &q, PAGE,
							   gmemMemPlaceDevice));
	EXPECT_EQ(NULL, q);
	EXPECT_EQ(gmemErrorInvalidValue, gmemMallocManaged(self->dev, &q, PAGE, gmemMemPinned));
	EXPECT_EQ(gmemSuccess, gmemFree(p));
	EXPECT_EQ(obj0, stat0("objects_now"));
	EXPECT_EQ(hbm0, gmem_wait_stat(0, "hbm_pages_now", hbm0, 10000));
	munmap(out, len);
	munmap(plain, PAGE);
}

/*
 * IPC: a child receives an allocation and an event over a Unix socket, waits for the event,
 * checks every byte, has the device write its half, and the parent sees it; a descriptor
 * that is no gmem-accel memory is refused.
 */
TEST_F_TIMEOUT(lib, ipc_between_processes, 600)
{
	size_t len = 4 * M2;
	int sv[2], status, pipefd[2];
	gmemIpcMemHandle_t mh;
	gmemIpcEventHandle_t eh;
	gmemEvent_t ev;
	uint8_t *p;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		gmemIpcMemHandle_t got;
		gmemIpcEventHandle_t ge;
		gmemDevice_t d;
		gmemStream_t s;
		gmemEvent_t e;
		uint8_t *q;

		close(sv[0]);
		if (gmemDeviceOpen(&d, gmem_expect("devices", 1) - 1) ||	/* another device */
		    gmemStreamCreate(&s, d) || gmemIpcRecvMemHandle(sv[1], &got) ||
		    gmemIpcRecvEventHandle(sv[1], &ge))
			_exit(1);
		if (gmemIpcOpenMemHandle(d, (void **)&q, got) || gmemIpcOpenEventHandle(&e, ge))
			_exit(2);
		if (gmemEventSynchronize(e))
			_exit(3);
		for (size_t i = 0; i < len; i++)
			if (q[i] != (uint8_t)(i * 7))
				_exit(4);
		if (gmemMemset(q + len / 2, 0xee, len / 2, s))
			_exit(5);
		if (gmemIpcCloseMemHandle(q) || gmemEventDestroy(e) || gmemStreamDestroy(s) ||
		    gmemDeviceClose(d))
			_exit(6);
		_exit(0);
	}
	close(sv[1]);
	ASSERT_EQ(gmemSuccess, gmemMalloc(self->dev, (void **)&p, len, gmemMemPlaceDevice));
	uint8_t *src = malloc(len);

	ASSERT_NE(NULL, src);
	for (size_t i = 0; i < len; i++)
		src[i] = i * 7;
	ASSERT_EQ(gmemSuccess, gmemEventCreate(&ev));
	ASSERT_EQ(gmemSuccess, gmemMemcpyAsync(p, src, len, self->s));
	ASSERT_EQ(gmemSuccess, gmemEventRecord(ev, self->s));
	ASSERT_EQ(gmemSuccess, gmemIpcGetMemHandle(&mh, p));
	ASSERT_EQ(gmemSuccess, gmemIpcGetEventHandle(&eh, ev));
	ASSERT_EQ(gmemSuccess, gmemIpcSendMemHandle(sv[0], &mh));
	ASSERT_EQ(gmemSuccess, gmemIpcSendEventHandle(sv[0], &eh));
	EXPECT_EQ(gmemSuccess, gmemIpcCloseMemHandleFd(&mh));
	EXPECT_EQ(gmemSuccess, gmemIpcCloseEventHandleFd(&eh));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("the child's step that failed");
	for (size_t i = 0; i < len; i++) {
		ASSERT_EQ(i < len / 2 ? (uint8_t)(i * 7) : 0xee, p[i]) TH_LOG("offset %zu", i);
	}
	EXPECT_EQ(gmemErrorInvalidValue, gmemIpcGetMemHandle(&mh, p + 1));

	/* A pipe is no dma-buf: refused with the driver's errno. */
	ASSERT_EQ(0, pipe(pipefd));
	mh = (gmemIpcMemHandle_t){ .fd = pipefd[0], .size = PAGE };
	void *q = &mh;

	EXPECT_EQ(gmemErrorInvalidIpcHandle, gmemIpcOpenMemHandle(self->dev, &q, mh));
	EXPECT_EQ(NULL, q);
	EXPECT_NE(0, gmemGetLastErrno());
	close(pipefd[0]);
	close(pipefd[1]);
	EXPECT_EQ(gmemSuccess, gmemEventDestroy(ev));
	EXPECT_EQ(gmemSuccess, gmemFree(p));
	free(src);
	close(sv[0]);
}

TEST_HARNESS_MAIN
