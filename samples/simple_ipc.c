// SPDX-License-Identifier: MIT
/*
 * simple_ipc: N processes share one device allocation and its event through IPC handles (as
 * CUDA's simpleIPC does): the parent allocates HBM, fills it on the device and records an
 * event; each child receives both over a Unix socket, waits for the event, meets the others
 * at a barrier in shared memory, has the device write its slice, meets them again, and checks
 * every byte of every slice.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gmem.h>

#define NPROC 4
#define SLICE (1u << 20)

static int child(int id, int sock, pthread_barrier_t *barrier)
{
	gmemIpcMemHandle_t mh;
	gmemIpcEventHandle_t eh;
	gmemDevice_t dev;
	gmemStream_t s;
	gmemEvent_t ev;
	uint8_t *buf;
	size_t bad = 0;

	if (gmemDeviceOpen(&dev, 0) || gmemStreamCreate(&s, dev) ||
	    gmemIpcRecvMemHandle(sock, &mh) || gmemIpcRecvEventHandle(sock, &eh) ||
	    gmemIpcOpenMemHandle(dev, (void **)&buf, mh) || gmemIpcOpenEventHandle(&ev, eh) ||
	    gmemEventSynchronize(ev)) {
		fprintf(stderr, "simple_ipc: process %d: %s\n", id,
			gmemGetErrorString(gmemGetLastError()));
		return 1;
	}
	pthread_barrier_wait(barrier);
	if (gmemMemset(buf + id * SLICE, 'A' + id, SLICE, s))	/* the device writes my slice */
		return 2;
	pthread_barrier_wait(barrier);
	for (size_t i = 0; i < NPROC * SLICE; i++)
		bad += buf[i] != 'A' + i / SLICE;
	printf("simple_ipc: process %d wrote slice %d, checked %u slices: %zu bytes wrong\n",
	       id, id, NPROC, bad);
	fflush(stdout);		/* (the child ends with _exit(), which flushes nothing) */
	gmemIpcCloseMemHandle(buf);
	gmemEventDestroy(ev);
	gmemStreamDestroy(s);
	gmemDeviceClose(dev);
	return bad ? 3 : 0;
}

int main(void)
{
	pthread_barrierattr_t attr;
	pthread_barrier_t *barrier;
	gmemIpcMemHandle_t mh;
	gmemIpcEventHandle_t eh;
	int socks[NPROC][2], failed = 0;
	gmemDevice_t dev;
	gmemStream_t s;
	gmemEvent_t ev;
	uint8_t *buf;
	pid_t pid[NPROC];

	barrier = mmap(NULL, sizeof(*barrier), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (barrier == MAP_FAILED)
		return 1;
	pthread_barrierattr_init(&attr);
	pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(barrier, &attr, NPROC);
	for (int i = 0; i < NPROC; i++) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, socks[i]))
			return 1;
		pid[i] = fork();
		if (pid[i] == 0)
			_exit(child(i, socks[i][1], barrier));
		close(socks[i][1]);
	}
	if (gmemDeviceOpen(&dev, 0) || gmemStreamCreate(&s, dev) || gmemEventCreate(&ev) ||
	    gmemMalloc(dev, (void **)&buf, NPROC * SLICE, gmemMemPlaceDevice) ||
	    gmemMemsetAsync(buf, 0, NPROC * SLICE, s) || gmemEventRecord(ev, s) ||
	    gmemIpcGetMemHandle(&mh, buf) || gmemIpcGetEventHandle(&eh, ev)) {
		fprintf(stderr, "simple_ipc: %s\n", gmemGetErrorString(gmemGetLastError()));
		return 1;
	}
	for (int i = 0; i < NPROC; i++)
		if (gmemIpcSendMemHandle(socks[i][0], &mh) || gmemIpcSendEventHandle(socks[i][0], &eh))
			return 1;
	gmemIpcCloseMemHandleFd(&mh);
	gmemIpcCloseEventHandleFd(&eh);
	for (int i = 0; i < NPROC; i++) {
		int st;

		waitpid(pid[i], &st, 0);
		failed += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	for (size_t i = 0; i < NPROC * SLICE; i++)	/* and the parent sees their writes */
		failed += buf[i] != 'A' + i / SLICE;
	gmemFree(buf);
	gmemEventDestroy(ev);
	gmemStreamDestroy(s);
	gmemDeviceClose(dev);
	printf("simple_ipc: %d processes, %s\n", NPROC, failed ? "FAIL" : "PASS");
	return failed != 0;
}
