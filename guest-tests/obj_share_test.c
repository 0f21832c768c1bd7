// SPDX-License-Identifier: GPL-2.0
/*
 * Device memory objects shared between processes as dma-bufs (GMEM_ACCEL_IOC_OBJ_EXPORT /
 * IMPORT), passed over a Unix socket with SCM_RIGHTS: the CUDA IPC scenario (N processes map
 * one HBM object, meet at a barrier, each has the device write its slice, all check every
 * byte), an exporter that exits first, and the refusals: another driver's dma-buf (the
 * system dma-buf heap), a file that is no dma-buf, a closed fd, bad handles and flags.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/dma-heap.h>

#include "kselftest_harness.h"
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PAGE 4096ul
#define M2 (2ul << 20)
#define RW (PROT_READ | PROT_WRITE)
#define NPROC 4

static int64_t stat_of(const char *name)
{
	int64_t v = INT64_MIN;

	gmem_debugfs_stat(0, name, &v);
	return v;
}

static int send_fd(int sock, int fd)
{
	char data = 'F', cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -errno;
}

static int recv_fd(int sock)
{
	char data, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -errno;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -EPROTO;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

static int obj_export(int fd, uint32_t handle, uint32_t flags)
{
	struct gmem_accel_obj_export e = { .handle = handle, .flags = flags };

	return ioctl(fd, GMEM_ACCEL_IOC_OBJ_EXPORT, &e) ? -errno : e.fd;
}

static int obj_import(int fd, int buf, struct gmem_accel_obj_import *im)
{
	*im = (struct gmem_accel_obj_import) { .fd = buf };
	return ioctl(fd, GMEM_ACCEL_IOC_OBJ_IMPORT, im) ? -errno : 0;
}

/* A barrier for processes, in shared memory: arrive, then wait for all @n. */
static void barrier_wait(volatile int *count, int n)
{
	__atomic_add_fetch(count, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 600000 && __atomic_load_n(count, __ATOMIC_SEQ_CST) < n; i++)
		usleep(100);
}

FIXTURE(share) {
	int64_t objects, hbm_pages;
};

FIXTURE_SETUP(share)
{
	ASSERT_TRUE(gmem_test_begin(_metadata->timeout));
	self->objects = stat_of("objects_now");
	self->hbm_pages = stat_of("obj_hbm_pages_now");
	ASSERT_GE(self->objects, 0);
}

FIXTURE_TEARDOWN(share)
{
	EXPECT_EQ(self->objects, stat_of("objects_now"));
	EXPECT_EQ(self->hbm_pages, stat_of("obj_hbm_pages_now"));
}

/*
 * One child of the IPC scenario: receive the dma-buf, import it on its own file, map it, meet
 * the others, have the device write slice @me, meet again, check every slice both through
 * the mapping and through the device. Exit status: 0, or the step that failed.
 */
static int ipc_child(int sock, int me, volatile int *bar, size_t slice)
{
	struct gmem_accel_obj_import im;
	int fd = gmem_open(0, O_RDWR), buf = recv_fd(sock);
	uint8_t *map, *copy;

	if (fd < 0 || buf < 0)
		return 10;
	if (obj_import(fd, buf, &im))
		return 11;
	close(buf);
	map = mmap(NULL, NPROC * slice, RW, MAP_SHARED, fd, im.mmap_offset);
	if (map == MAP_FAILED)
		return 12;
	barrier_wait(&bar[0], NPROC);
	if (dev_fill(fd, map + me * slice, 0x0101010101010101ull * (uint64_t)(0x10 + me), slice))
		return 13;
	barrier_wait(&bar[1], NPROC);
	copy = malloc(NPROC * slice);
	if (!copy || dev_copy(fd, copy, map, NPROC * slice))
		return 14;
	for (size_t i = 0; i < NPROC * slice; i++)
		if (map[i] != 0x10 + i / slice || copy[i] != map[i])
			return 15;
	munmap(map, NPROC * slice);
	close(fd);
	return 0;
}

/* CUDA's simpleIPC, on gmem-accel: one HBM object, NPROC processes, a slice each. */
TEST_F_TIMEOUT(share, ipc_processes_share_one_hbm_object, 600)
{
	const size_t slice = M2;
	struct gmem_accel_obj_alloc a = { .size = NPROC * slice, .flags = GMEM_ACCEL_OBJ_HBM };
	volatile int *bar = mmap(NULL, PAGE, RW, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int fd = gmem_open(0, O_RDWR), sv[NPROC][2], buf, status;
	pid_t pid[NPROC];
	uint8_t *map;

	ASSERT_GE(fd, 0);
	ASSERT_NE(MAP_FAILED, (void *)bar);
	ASSERT_EQ(0, ioctl(fd, GMEM_ACCEL_IOC_OBJ_ALLOC, &a));
	buf = obj_export(fd, a.handle, O_CLOEXEC);
	ASSERT_GE(buf, 0) TH_LOG("export: %s", strerror(-buf));
	for (int i = 0; i < NPROC; i++) {
		ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]));
		pid[i] = fork();
		ASSERT_GE(pid[i], 0);
		if (pid[i] == 0) {
			close(fd);
			close(buf);
			close(sv[i][0]);
			_exit(ipc_child(sv[i][1], i, bar, slice));
		}
		close(sv[i][1]);
		ASSERT_EQ(0, send_fd(sv[i][0], buf));
	}
	for (int i = 0; i < NPROC; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
			TH_LOG("process %d: status %#x", i, status);
		close(sv[i][0]);
	}
	/* The exporter sees what they wrote, too. */
	map = mmap(NULL, NPROC * slice, PROT_READ, MAP_SHARED, fd, a.mmap_offset);
	ASSERT_NE(MAP_FAILED, map);
	for (int i = 0; i < NPROC; i++)
		EXPECT_EQ(0x10 + i, map[i * slice + slice / 2]);
	EXPECT_EQ(0, munmap(map, NPROC * slice));
	EXPECT_EQ(self->objects + 1, stat_of("objects_now"));
	close(buf);
	close(fd);
	munmap((void *)bar, PAGE);
}

/* The exporter goes away before anyone imports: the dma-buf keeps the object and its bytes. */
TEST_F_TIMEOUT(share, exporter_exits_first, 300)
{
	int sv[2], status, fd, buf;
	struct gmem_accel_obj_import im;
	uint8_t *map, want[PAGE];
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct gmem_accel_obj_alloc a = { .size = 256 << 10 };
		int cfd = gmem_open(0, O_RDWR), b;
		uint8_t *m;

		if (cfd < 0 || ioctl(cfd, GMEM_ACCEL_IOC_OBJ_ALLOC, &a))
			_exit(1);
		m = mmap(NULL, a.size, RW, MAP_SHARED, cfd, a.mmap_offset);
		if (m == MAP_FAILED)
			_exit(2);
		pattern(m + PAGE, PAGE, 42);
		b = obj_export(cfd, a.handle, 0);
		if (b < 0 || send_fd(sv[1], b))
			_exit(3);
		_exit(0);	/* everything of the exporter's goes, but the dma-buf in flight */
	}
	close(sv[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	buf = recv_fd(sv[0]);
	ASSERT_GE(buf, 0);
	close(sv[0]);
	EXPECT_EQ(self->objects + 1, stat_of("objects_now"));

	fd = gmem_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, obj_import(fd, buf, &im));
	close(buf);
	map = mmap(NULL, 256 << 10, RW, MAP_SHARED, fd, im.mmap_offset);
	ASSERT_NE(MAP_FAILED, map);
	pattern(want, PAGE, 42);
	EXPECT_EQ(0, memcmp(map + PAGE, want, PAGE));
	/* The mmap of the dma-buf fd itself is the same memory. */
	{
		struct gmem_accel_obj_export e = { .handle = im.handle };
		uint8_t *m2;

		ASSERT_EQ(0, ioctl(fd, GMEM_ACCEL_IOC_OBJ_EXPORT, &e));
		m2 = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, e.fd, PAGE);
		ASSERT_NE(MAP_FAILED, m2);
		EXPECT_EQ(0, memcmp(m2, want, PAGE));
		EXPECT_EQ(0, munmap(m2, PAGE));
		close(e.fd);
	}
	EXPECT_EQ(0, munmap(map, 256 << 10));
	close(fd);
}

TEST_F_TIMEOUT(share, refusals_get_their_errno, 300)
{
	struct gmem_accel_obj_alloc a = { .size = PAGE };
	struct gmem_accel_obj_import im;
	struct gmem_accel_obj_export e = { 0 };
	int fd = gmem_open(0, O_RDWR), pipefd[2], heap;

	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, ioctl(fd, GMEM_ACCEL_IOC_OBJ_ALLOC, &a));
	EXPECT_EQ(-ENOENT, obj_export(fd, a.handle + 1, 0));
	EXPECT_EQ(-EINVAL, obj_export(fd, a.handle, O_NONBLOCK));
	e.handle = a.handle;
	e.pad = 1;
	EXPECT_EQ(-1, ioctl(fd, GMEM_ACCEL_IOC_OBJ_EXPORT, &e));
	EXPECT_EQ(EINVAL, errno);

	/* Not a file at all, closed, not a dma-buf. */
	EXPECT_EQ(-EBADF, obj_import(fd, -1, &im));
	ASSERT_EQ(0, pipe(pipefd));
	close(pipefd[1]);
	EXPECT_EQ(-EINVAL, obj_import(fd, pipefd[0], &im));
	close(pipefd[0]);
	EXPECT_EQ(-EBADF, obj_import(fd, pipefd[0], &im));
	im = (struct gmem_accel_obj_import) { .fd = fd, .flags = 1 };
	EXPECT_EQ(-1, ioctl(fd, GMEM_ACCEL_IOC_OBJ_IMPORT, &im));
	EXPECT_EQ(EINVAL, errno);

	/* Another driver's dma-buf: the system heap's. */
	heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(heap, 0) TH_LOG("no system dma-buf heap: CONFIG_DMABUF_HEAPS_SYSTEM");
	{
		struct dma_heap_allocation_data d = { .len = PAGE, .fd_flags = O_RDWR | O_CLOEXEC };

		ASSERT_EQ(0, ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &d));
		EXPECT_EQ(-EOPNOTSUPP, obj_import(fd, d.fd, &im));
		close(d.fd);
	}
	close(heap);

	/* Importing on the same file gives a second handle on the same object. */
	{
		int b = obj_export(fd, a.handle, 0);
		struct gmem_accel_obj_query q = { 0 };

		ASSERT_GE(b, 0);
		ASSERT_EQ(0, obj_import(fd, b, &im));
		EXPECT_NE(a.handle, im.handle);
		q.handle = im.handle;
		ASSERT_EQ(0, ioctl(fd, GMEM_ACCEL_IOC_OBJ_QUERY, &q));
		EXPECT_EQ(PAGE, q.size);
		EXPECT_EQ(self->objects + 1, stat_of("objects_now"));
		close(b);
	}
	close(fd);
}

TEST_HARNESS_MAIN
