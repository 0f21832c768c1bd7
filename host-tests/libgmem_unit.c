// SPDX-License-Identifier: GPL-2.0
/*
 * libgmem's argument checks and device-free paths on the host, which has no gmem-accel: no
 * device is a clear error, every error value has its string, handles the library does not
 * know are refused without being touched, events and IPC handles round-trip over a socket.
 * TAP output.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gmem.h"

static int n_test, n_fail;

static void ok(int cond, const char *what)
{
	n_test++;
	if (!cond)
		n_fail++;
	printf("%sok %d - %s\n", cond ? "" : "not ", n_test, what);
}

static void errors(void)
{
	int distinct = 1;

	for (int i = 0; i < gmemErrorCount; i++) {
		const char *s = gmemGetErrorString(i), *n = gmemGetErrorName(i);

		if (!s || !*s || !n || strncmp(n, "gmem", 4) || !strcmp(s, "unknown error"))
			distinct = 0;
		for (int j = 0; j < i; j++)
			if (!strcmp(s, gmemGetErrorString(j)) || !strcmp(n, gmemGetErrorName(j)))
				distinct = 0;
	}
	ok(distinct, "every error value has its own name and string");
	ok(!strcmp(gmemGetErrorString(gmemErrorCount), "unknown error") &&
	   !strcmp(gmemGetErrorString(-1), "unknown error"), "a value that is none: unknown error");
	ok(!strcmp(gmemGetErrorName(gmemErrorInvalidValue), "gmemErrorInvalidValue"),
	   "names are the enum's");
}

static void devices(void)
{
	struct gmemDeviceProp prop;
	gmemDevice_t dev = (gmemDevice_t)&prop;
	int count = -1;

	ok(gmemGetDeviceCount(&count) == gmemSuccess && count == 0, "no device: count 0");
	ok(gmemGetDeviceCount(NULL) == gmemErrorInvalidValue, "count into NULL: InvalidValue");
	ok(gmemDeviceOpen(&dev, 0) == gmemErrorNoDevice && dev == NULL,
	   "open device 0: NoDevice, handle NULL");
	ok(gmemGetLastError() == gmemErrorNoDevice && gmemGetLastError() == gmemSuccess,
	   "GetLastError returns the last error, then resets it");
	ok(gmemDeviceOpen(&dev, -1) == gmemErrorNoDevice, "open device -1: NoDevice");
	ok(gmemDeviceOpen(NULL, 0) == gmemErrorInvalidValue && gmemGetLastErrno() == 0,
	   "open into NULL: InvalidValue, no errno (a library check)");
	ok(gmemGetDeviceProperties(&prop, 0) == gmemErrorNoDevice, "properties of 0: NoDevice");
	ok(gmemGetDeviceProperties(NULL, 0) == gmemErrorInvalidValue, "properties into NULL");
	ok(gmemDeviceClose(NULL) == gmemErrorInvalidHandle &&
	   gmemDeviceClose((gmemDevice_t)&prop) == gmemErrorInvalidHandle,
	   "close of NULL or of a pointer that is no device: InvalidHandle");
	ok(gmemDeviceSynchronize((gmemDevice_t)&prop) == gmemErrorInvalidHandle,
	   "synchronize a device that is none");
}

static void streams_and_work(void)
{
	char junk[64], buf[64];
	gmemStream_t s = (gmemStream_t)junk, bogus = (gmemStream_t)junk;

	ok(gmemStreamCreate(&s, (gmemDevice_t)junk) == gmemErrorInvalidHandle && s == NULL,
	   "stream on a device that is none: InvalidHandle");
	ok(gmemStreamCreate(NULL, NULL) == gmemErrorInvalidValue, "stream into NULL");
	ok(gmemStreamSynchronize(bogus) == gmemErrorInvalidHandle &&
	   gmemStreamQuery(bogus) == gmemErrorInvalidHandle &&
	   gmemStreamDestroy(bogus) == gmemErrorInvalidHandle, "stream calls on a non-stream");
	ok(gmemMemcpyAsync(buf, buf + 32, 32, bogus) == gmemErrorInvalidHandle &&
	   gmemMemsetAsync(buf, 0, 32, NULL) == gmemErrorInvalidHandle &&
	   gmemAtomicAddAsync(buf, 1, 1, gmemUint64, bogus) == gmemErrorInvalidHandle &&
	   gmemScaleAddAsync(buf, buf, 2, 1, 1, gmemUint32, bogus) == gmemErrorInvalidHandle &&
	   gmemAxpyAsync(buf, buf, 2, 1, gmemUint32, bogus) == gmemErrorInvalidHandle,
	   "work on a non-stream: InvalidHandle");
	ok(gmemMemPrefetchAsync(buf, 64, NULL, bogus) == gmemErrorInvalidHandle &&
	   gmemMemAdvise(buf, 64, gmemMemAdviseSetPreferredLocation, NULL) ==
	   gmemErrorInvalidHandle, "prefetch and advise without a live stream or device");
	ok(gmemMemAdvise(buf, 64, gmemMemAdviseSetReadMostly, NULL) == gmemErrorNotSupported &&
	   gmemMemAdvise(buf, 64, gmemMemAdviseUnsetReadMostly, NULL) == gmemErrorNotSupported &&
	   gmemMemAdvise(buf, 64, gmemMemAdviseSetAccessedBy, NULL) == gmemErrorInvalidHandle,
	   "read-mostly advice on memory that is no managed allocation: NotSupported; "
	   "accessed-by checks the device");
}

static void memory(void)
{
	struct gmemPointerAttributes attr;
	char buf[16];
	void *p = buf;

	ok(gmemMalloc(NULL, &p, 4096, 0) == gmemErrorInvalidHandle && p == NULL,
	   "malloc on no device: InvalidHandle, pointer NULL");
	ok(gmemMalloc(NULL, NULL, 4096, 0) == gmemErrorInvalidValue, "malloc into NULL");
	p = buf;
	ok(gmemMallocManaged(NULL, &p, 4096, 0) == gmemErrorInvalidHandle && p == NULL &&
	   gmemMallocManaged(NULL, NULL, 4096, 0) == gmemErrorInvalidValue,
	   "managed malloc on no device: InvalidHandle, pointer NULL; into NULL: InvalidValue");
	ok(gmemFree(NULL) == gmemSuccess, "free(NULL) is fine, as free's");
	ok(gmemFree(buf) == gmemErrorInvalidValue, "free of memory that is no allocation");
	ok(gmemPointerGetAttributes(&attr, buf) == gmemErrorInvalidValue &&
	   gmemPointerGetAttributes(NULL, buf) == gmemErrorInvalidValue,
	   "attributes of memory that is no allocation");
}

static void events_and_ipc(void)
{
	gmemIpcEventHandle_t eh = { .fd = 99 }, got = { .fd = 99 };
	gmemIpcMemHandle_t mh = { .fd = -1 }, mgot;
	gmemEvent_t ev, opened;
	int sv[2], pipefd[2];
	char junk[16];
	void *p = junk;

	ok(gmemEventCreate(&ev) == gmemSuccess, "event create");
	ok(gmemEventQuery(ev) == gmemSuccess && gmemEventSynchronize(ev) == gmemSuccess,
	   "an event never recorded is complete");
	ok(gmemEventRecord(ev, (gmemStream_t)junk) == gmemErrorInvalidHandle,
	   "record on a non-stream: InvalidHandle");
	ok(gmemIpcGetEventHandle(&eh, ev) == gmemSuccess && eh.fd == -1,
	   "a complete event's handle carries no descriptor");
	ok(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0, "socketpair");
	ok(gmemIpcSendEventHandle(sv[0], &eh) == gmemSuccess &&
	   gmemIpcRecvEventHandle(sv[1], &got) == gmemSuccess && got.fd == -1,
	   "an event handle crosses a socket");
	ok(gmemIpcOpenEventHandle(&opened, got) == gmemSuccess &&
	   gmemEventQuery(opened) == gmemSuccess && gmemEventDestroy(opened) == gmemSuccess,
	   "an opened complete event is complete");
	ok(gmemIpcSendMemHandle(sv[0], &mh) == gmemErrorInvalidValue,
	   "sending a memory handle without a descriptor: InvalidValue");
	ok(pipe(pipefd) == 0, "pipe");
	mh.fd = pipefd[0];
	mh.size = 8192;
	ok(gmemIpcSendMemHandle(sv[0], &mh) == gmemSuccess &&
	   gmemIpcRecvMemHandle(sv[1], &mgot) == gmemSuccess && mgot.fd >= 0 &&
	   mgot.size == 8192, "a memory handle crosses a socket with its size and descriptor");
	ok(gmemIpcSendMemHandle(sv[0], &mh) == gmemSuccess &&
	   gmemIpcRecvEventHandle(sv[1], &got) == gmemErrorInvalidIpcHandle && got.fd == -1,
	   "a memory handle received as an event: InvalidIpcHandle, no descriptor left open");
	ok(write(sv[0], "hello", 5) == 5 &&
	   gmemIpcRecvMemHandle(sv[1], &mgot) == gmemErrorInvalidIpcHandle,
	   "a message that is no handle: InvalidIpcHandle");
	ok(gmemIpcOpenMemHandle((gmemDevice_t)junk, &p, mh) == gmemErrorInvalidHandle && !p,
	   "open a memory handle on a device that is none: InvalidHandle");
	ok(gmemIpcCloseMemHandleFd(&mh) == gmemSuccess && mh.fd == -1, "close a handle's fd");
	ok(gmemEventDestroy(ev) == gmemSuccess && gmemEventDestroy(ev) == gmemErrorInvalidHandle,
	   "an event destroyed twice: InvalidHandle the second time");
	close(pipefd[1]);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	errors();
	devices();
	streams_and_work();
	memory();
	events_and_ipc();
	printf("1..%d\n", n_test);
	return n_fail != 0;
}
