// SPDX-License-Identifier: GPL-2.0
/*
 * Device memory objects shared between processes as dma-bufs (GMEM_ACCEL_IOC_OBJ_EXPORT /
 * IMPORT), passed over a Unix socket with SCM_RIGHTS: the CUDA IPC scenario (N processes map
 * one HBM object, meet at a barrier, each has the device write its slice, all check every
 * byte), an exporter that exits first, and the refusals: another driver's dma-buf (the
 * system dma-buf heap), a file that is no dma-buf, a closed fd, bad handles and flags. And a
 * batch's completion as a sync_file (GMEM_ACCEL_IOC_FENCE_EXPORT): poll() on it, and another
 * process's SUBMIT ordered after it (GMEM_ACCEL_SUBMIT_IN_FENCE). And an object of one device
 * imported on another, whose engine reaches it peer to peer.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
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
	for (int i = 0; i < NPROC; i++) {
		EXPECT_EQ(0x10 + i, map[i * slice + slice / 2]);
	}
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
	struct gmem_accel_obj_export e = { 0 };
	uint8_t *map, *m2, want[PAGE];
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
	/* The dma-buf fd itself is not mapped: objects map through a device file. */
	e.handle = im.handle;
	ASSERT_EQ(0, ioctl(fd, GMEM_ACCEL_IOC_OBJ_EXPORT, &e));
	m2 = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, e.fd, PAGE);
	EXPECT_EQ(MAP_FAILED, m2);
	EXPECT_EQ(EINVAL, errno);
	close(e.fd);
	EXPECT_EQ(0, munmap(map, 256 << 10));
	close(fd);
}

TEST_F_TIMEOUT(share, refusals_get_their_errno, 300)
{
	struct gmem_accel_obj_alloc a = { .size = PAGE };
	struct gmem_accel_obj_import im;
	struct gmem_accel_obj_export e = { 0 };
	struct dma_heap_allocation_data d = { .len = PAGE, .fd_flags = O_RDWR | O_CLOEXEC };
	struct gmem_accel_obj_query q = { 0 };
	int fd = gmem_open(0, O_RDWR), pipefd[2], heap, b;

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
	ASSERT_EQ(0, ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &d));
	EXPECT_EQ(-EOPNOTSUPP, obj_import(fd, d.fd, &im));
	close(d.fd);
	close(heap);

	/* Importing on the same file gives a second handle on the same object. */
	b = obj_export(fd, a.handle, 0);
	ASSERT_GE(b, 0);
	ASSERT_EQ(0, obj_import(fd, b, &im));
	EXPECT_NE(a.handle, im.handle);
	q.handle = im.handle;
	ASSERT_EQ(0, ioctl(fd, GMEM_ACCEL_IOC_OBJ_QUERY, &q));
	EXPECT_EQ(PAGE, q.size);
	EXPECT_EQ(self->objects + 1, stat_of("objects_now"));
	close(b);
	close(fd);
}

static int fence_export(int fd, uint64_t fence, uint32_t flags)
{
	struct gmem_accel_fence_export e = { .fence = fence, .flags = flags };

	return ioctl(fd, GMEM_ACCEL_IOC_FENCE_EXPORT, &e) ? -errno : e.fd;
}

/* Submit one command; its fence, or -errno. @in_fence >= 0: wait for that sync_file first. */
static int64_t submit_one(int fd, struct gmem_accel_cmd *c, int in_fence)
{
	struct gmem_accel_submit s = { .cmds = (uintptr_t)c, .count = 1 };

	if (in_fence >= 0) {
		s.flags = GMEM_ACCEL_SUBMIT_IN_FENCE;
		s.fence = in_fence;
	}
	return ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &s) ? -errno : (int64_t)s.fence;
}

static int wait_fence(int fd, uint64_t fence)
{
	struct gmem_accel_wait w = { .fence = fence, .timeout_ms = 300000 };

	return ioctl(fd, GMEM_ACCEL_IOC_WAIT, &w) ? -errno : 0;
}

/* A sync_file polls readable once its batch is done; one of a finished batch at once. */
TEST_F_TIMEOUT(share, fence_as_sync_file_polls, 600)
{
	const size_t len = 32ul << 20;
	int fd = gmem_open(0, O_RDWR), sync;
	uint8_t *src = map_anon(len, RW), *dst = map_anon(len, RW);
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst,
				    .src = (uintptr_t)src, .size = len };
	struct gmem_accel_submit bad = { .cmds = (uintptr_t)&c, .count = 1, .flags = 1u << 31 };
	struct pollfd p;
	int64_t fence;
	int pipefd[2];

	ASSERT_GE(fd, 0);
	ASSERT_TRUE(src && dst);
	pattern(src, len, 5);
	fence = submit_one(fd, &c, -1);
	ASSERT_GT(fence, 0);
	sync = fence_export(fd, fence, O_CLOEXEC);
	ASSERT_GE(sync, 0) TH_LOG("export: %s", strerror(-sync));
	p = (struct pollfd) { .fd = sync, .events = POLLIN };
	ASSERT_EQ(1, poll(&p, 1, 300000));
	EXPECT_TRUE(p.revents & POLLIN);
	/* Signaled means done: the bytes are there before WAIT is asked. */
	EXPECT_EQ(0, memcmp(dst, src, len));
	EXPECT_EQ(0, wait_fence(fd, fence));
	close(sync);

	/* Exported after the batch finished: readable at once. */
	sync = fence_export(fd, fence, 0);
	ASSERT_GE(sync, 0);
	p = (struct pollfd) { .fd = sync, .events = POLLIN };
	EXPECT_EQ(1, poll(&p, 1, 0));
	close(sync);

	/* Refusals. */
	EXPECT_EQ(-EINVAL, fence_export(fd, 0, 0));
	EXPECT_EQ(-EINVAL, fence_export(fd, fence + 1, 0));
	EXPECT_EQ(-EINVAL, fence_export(fd, fence, O_NONBLOCK));
	EXPECT_EQ(-EBADF, submit_one(fd, &c, 1000));
	ASSERT_EQ(0, pipe(pipefd));
	EXPECT_EQ(-EINVAL, submit_one(fd, &c, pipefd[0]));
	close(pipefd[0]);
	close(pipefd[1]);
	EXPECT_EQ(-1, ioctl(fd, GMEM_ACCEL_IOC_SUBMIT, &bad));	/* an unknown flag */
	EXPECT_EQ(EINVAL, errno);
	munmap(src, len);
	munmap(dst, len);
	close(fd);
}

/*
 * Another process's batch waits for this one's: the parent fills a shared object from memory
 * the device must fault in first (slow), the child copies the object out with the parent's
 * sync_file as its in-fence, and must see the parent's bytes, never the zeroes before them.
 */
TEST_F_TIMEOUT(share, in_fence_orders_another_process, 600)
{
	const size_t len = 32ul << 20;
	struct gmem_accel_obj_alloc a = { .size = len, .flags = GMEM_ACCEL_OBJ_HBM };
	int fd = gmem_open(0, O_RDWR), sv[2], buf, sync, status;
	uint8_t *src = map_anon(len, RW), *map;
	struct gmem_accel_cmd c;
	int64_t fence;
	pid_t pid;

	ASSERT_GE(fd, 0);
	ASSERT_NE(NULL, src);
	ASSERT_EQ(0, ioctl(fd, GMEM_ACCEL_IOC_OBJ_ALLOC, &a));
	map = mmap(NULL, len, RW, MAP_SHARED, fd, a.mmap_offset);
	ASSERT_NE(MAP_FAILED, map);
	buf = obj_export(fd, a.handle, 0);
	ASSERT_GE(buf, 0);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct gmem_accel_obj_import im;
		int cfd = gmem_open(0, O_RDWR), b = recv_fd(sv[1]), s = recv_fd(sv[1]);
		uint8_t *m, *out = map_anon(len, RW), want[PAGE];
		int64_t f;

		if (cfd < 0 || b < 0 || s < 0 || !out || obj_import(cfd, b, &im))
			_exit(1);
		m = mmap(NULL, len, PROT_READ, MAP_SHARED, cfd, im.mmap_offset);
		if (m == MAP_FAILED)
			_exit(2);
		c = (struct gmem_accel_cmd) { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)out,
					      .src = (uintptr_t)m, .size = len };
		f = submit_one(cfd, &c, s);
		if (f <= 0 || wait_fence(cfd, f))
			_exit(3);
		/* Every byte is the parent's pattern (gmem_test_util.c's, seed 9). */
		for (size_t i = 0; i < len; i += PAGE) {
			for (size_t k = 0; k < PAGE; k++)
				want[k] = (uint8_t)((i + k) * 7 + 9 * 13 + ((i + k) >> 12));
			if (memcmp(out + i, want, PAGE))
				_exit(4);
		}
		_exit(0);
	}
	close(sv[1]);
	pattern(src, len, 9);
	c = (struct gmem_accel_cmd) { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)map,
				      .src = (uintptr_t)src, .size = len };
	fence = submit_one(fd, &c, -1);
	ASSERT_GT(fence, 0);
	sync = fence_export(fd, fence, 0);
	ASSERT_GE(sync, 0);
	ASSERT_EQ(0, send_fd(sv[0], buf));
	ASSERT_EQ(0, send_fd(sv[0], sync));
	EXPECT_EQ(0, wait_fence(fd, fence));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("child: status %#x", status);
	close(sync);
	close(buf);
	close(sv[0]);
	munmap(map, len);
	munmap(src, len);
	close(fd);
}

/*
 * The QEMU monitor shows who maps an object's HBM: two contexts of this process (two files,
 * the object imported on the second) are its sharers, each at its own address with the
 * object's page size; after one unmaps, one is left.
 */
TEST_F_TIMEOUT(share, monitor_shows_sharers, 300)
{
	struct gmem_accel_obj_alloc a = { .size = M2, .flags = GMEM_ACCEL_OBJ_HBM };
	struct gmem_accel_obj_query q = { 0 };
	struct gmem_accel_obj_import im;
	int fa = gmem_open(0, O_RDWR), fb = gmem_open(0, O_RDWR), buf, n;
	unsigned int ca, cb;
	struct gmem_hbm_use use[4];
	uint8_t *ma, *mb, tmp[PAGE];

	ASSERT_TRUE(fa >= 0 && fb >= 0);
	ca = ctx_stats(fa).context;
	cb = ctx_stats(fb).context;
	ASSERT_EQ(0, ioctl(fa, GMEM_ACCEL_IOC_OBJ_ALLOC, &a));
	buf = obj_export(fa, a.handle, 0);
	ASSERT_GE(buf, 0);
	ASSERT_EQ(0, obj_import(fb, buf, &im));
	close(buf);
	q.handle = a.handle;
	ASSERT_EQ(0, ioctl(fa, GMEM_ACCEL_IOC_OBJ_QUERY, &q));
	ma = mmap(NULL, M2, RW, MAP_SHARED, fa, a.mmap_offset);
	mb = mmap(NULL, M2, PROT_READ, MAP_SHARED, fb, im.mmap_offset);
	ASSERT_TRUE(ma != MAP_FAILED && mb != MAP_FAILED);
	ASSERT_EQ(0, dev_copy(fa, tmp, ma, PAGE));	/* each context's device maps it */
	ASSERT_EQ(0, dev_copy(fb, tmp, mb, PAGE));

	n = gmem_monitor_hbm_users(0, q.hbm_addr, use, 4);
	ASSERT_EQ(2, n) TH_LOG("monitor: %d runs over HBM %#llx", n,
			      (unsigned long long)q.hbm_addr);
	/* By context number: the lower one first. */
	if (use[0].context != ca) {
		struct gmem_hbm_use t = use[0];

		use[0] = use[1];
		use[1] = t;
	}
	EXPECT_EQ(ca, use[0].context);
	EXPECT_EQ((uintptr_t)ma, use[0].va);
	EXPECT_EQ(cb, use[1].context);
	EXPECT_EQ((uintptr_t)mb, use[1].va);
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(q.hbm_addr, use[i].hbm);
		EXPECT_EQ(M2, use[i].size);
		EXPECT_EQ(M2, use[i].page_size);
	}

	EXPECT_EQ(0, munmap(mb, M2));
	n = gmem_monitor_hbm_users(0, q.hbm_addr, use, 4);
	EXPECT_EQ(1, n);
	EXPECT_EQ(ca, use[0].context);
	EXPECT_EQ(0, munmap(ma, M2));
	EXPECT_EQ(0, gmem_monitor_hbm_users(0, q.hbm_addr, use, 4));
	close(fb);
	close(fa);
}

static int64_t stat_dev(int dev, const char *name)
{
	int64_t v = INT64_MIN;

	gmem_debugfs_stat(dev, name, &v);
	return v;
}

/*
 * An HBM object of device 0 imported on device 1: device 1's engine reads and writes it over
 * PCIe peer to peer (BAR2 of device 0), no copy in system memory or in device 1's HBM.
 */
TEST_F_TIMEOUT(share, peer_to_peer_between_devices, 300)
{
	const size_t len = 2 * M2;
	struct gmem_accel_obj_alloc a = { .size = len, .flags = GMEM_ACCEL_OBJ_HBM };
	struct gmem_accel_obj_import im;
	int fd0 = gmem_open(0, O_RDWR), fd1 = gmem_open(1, O_RDWR), buf;
	uint8_t *map0, *map1, *want = map_anon(len, RW), *out = map_anon(len, RW), view;
	int64_t hbm1 = stat_dev(1, "obj_hbm_pages_now"), migrated1;

	ASSERT_GE(fd0, 0);
	if (fd1 < 0)
		SKIP(return, "no second gmem-accel device");
	ASSERT_TRUE(want && out);
	migrated1 = stat_dev(1, "migrated_to_device");
	ASSERT_EQ(0, ioctl(fd0, GMEM_ACCEL_IOC_OBJ_ALLOC, &a));
	map0 = mmap(NULL, len, RW, MAP_SHARED, fd0, a.mmap_offset);
	ASSERT_NE(MAP_FAILED, map0);
	pattern(want, len, 21);
	memcpy(map0, want, len);

	buf = obj_export(fd0, a.handle, 0);
	ASSERT_GE(buf, 0);
	ASSERT_EQ(0, obj_import(fd1, buf, &im)) TH_LOG("import on device 1: %s", strerror(errno));
	close(buf);
	map1 = mmap(NULL, len, RW, MAP_SHARED, fd1, im.mmap_offset);
	ASSERT_NE(MAP_FAILED, map1);
	EXPECT_EQ(0, memcmp(map1, want, len));

	/* Device 1 reads device 0's HBM... */
	ASSERT_EQ(0, dev_copy(fd1, out, map1, len));
	EXPECT_EQ(0, memcmp(out, want, len));
	/* ...over the bus: its page table points at a bus address, not its own HBM. */
	view = page_view(fd1, map1);
	EXPECT_TRUE(view & GMEM_ACCEL_PAGE_WRITE);
	EXPECT_FALSE(view & GMEM_ACCEL_PAGE_HBM);
	EXPECT_TRUE(page_view(fd0, map0) == 0 || (page_view(fd0, map0) & GMEM_ACCEL_PAGE_HBM));

	/* ...and writes it: device 0 and the CPU see the bytes. */
	ASSERT_EQ(0, dev_fill(fd1, map1 + M2 - PAGE, 0x5a5a5a5a5a5a5a5aull, 2 * PAGE));
	memset(want + M2 - PAGE, 0x5a, 2 * PAGE);
	EXPECT_EQ(0, memcmp(map0, want, len));
	memset(out, 0, len);
	ASSERT_EQ(0, dev_copy(fd0, out, map0, len));
	EXPECT_EQ(0, memcmp(out, want, len));

	/* Nothing moved into device 1's memory. */
	EXPECT_EQ(hbm1, stat_dev(1, "obj_hbm_pages_now"));
	EXPECT_EQ(migrated1, stat_dev(1, "migrated_to_device"));
	EXPECT_EQ(0, munmap(map1, len));
	EXPECT_EQ(0, munmap(map0, len));
	close(fd1);
	close(fd0);
	munmap(want, len);
	munmap(out, len);
}

static int obj_free_handle(int fd, uint32_t handle)
{
	struct gmem_accel_obj_free fr = { .handle = handle };

	return ioctl(fd, GMEM_ACCEL_IOC_OBJ_FREE, &fr) ? -errno : 0;
}

struct allocator {
	int fd;
	struct gmem_accel_obj_alloc a;
	int ret;
};

static void *alloc_object(void *arg)
{
	struct allocator *al = arg;

	al->ret = ioctl(al->fd, GMEM_ACCEL_IOC_OBJ_ALLOC, &al->a) ? -errno : 0;
	return NULL;
}

/* Device @fd copies @len bytes at @src (its mapping) out; do they equal @want? */
static bool device_reads(int fd, const uint8_t *src, const uint8_t *want, size_t len,
			 uint8_t *out)
{
	memset(out, 0, len);
	return !dev_copy(fd, out, src, len) && !memcmp(out, want, len);
}

/*
 * An object of device 0 is imported on device 1 while an allocation on device 0 evicts it to
 * make room: the peer's view and the object's placement change together, so device 1's
 * writes land in the object wherever it ended up (it stays in HBM once it has a peer), never
 * in the HBM the eviction handed to the new object.
 */
TEST_F_TIMEOUT(share, peer_import_races_eviction, 900)
{
	const size_t len = 32ul << 20, blen = 4ul << 20;
	uint64_t hbm = gmem_expect("hbm_size", 256ul << 20);
	int fd0 = gmem_open(0, O_RDWR), fd1 = gmem_open(1, O_RDWR);
	uint8_t *want = map_anon(len, RW), *out = map_anon(len, RW), *zero = map_anon(len, RW);
	int rounds = 12, evicted = 0, blocked = 0;
	long span_us = 0;	/* how long B's allocation takes: the import lands inside it */

	ASSERT_GE(fd0, 0);
	if (fd1 < 0)
		SKIP(return, "no second gmem-accel device");
	ASSERT_TRUE(want && out && zero);
	memset(want, 0x6b, len);
	srand(55);
	for (int r = -1; r < rounds; r++) {
		/* HBM held but for A and one chunk: B's allocation must evict A. */
		struct gmem_accel_obj_alloc p = {
			.size = hbm - len - M2,
			.flags = GMEM_ACCEL_OBJ_HBM | GMEM_ACCEL_OBJ_PINNED };
		struct gmem_accel_obj_alloc a = {
			.size = len, .flags = GMEM_ACCEL_OBJ_HBM | GMEM_ACCEL_OBJ_PAGE_4K };
		struct allocator b = { .fd = fd0, .a = { .size = blen,
							 .flags = GMEM_ACCEL_OBJ_HBM } };
		struct gmem_accel_obj_import im;
		uint8_t *map0, *map1, *mapb;
		pthread_t t;
		int buf;

		ASSERT_EQ(0, ioctl(fd0, GMEM_ACCEL_IOC_OBJ_ALLOC, &p)) TH_LOG("filler: %s",
									  strerror(errno));
		ASSERT_EQ(0, ioctl(fd0, GMEM_ACCEL_IOC_OBJ_ALLOC, &a));
		map0 = mmap(NULL, len, RW, MAP_SHARED, fd0, a.mmap_offset);
		ASSERT_NE(MAP_FAILED, map0);
		ASSERT_EQ(0, dev_fill(fd0, map0, 0x1111111111111111ull, len));
		buf = obj_export(fd0, a.handle, 0);
		ASSERT_GE(buf, 0);

		if (r < 0) {
			/* Round -1 measures B's allocation, which evicts A, without a peer. */
			struct timespec t0, t1;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			alloc_object(&b);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			ASSERT_EQ(0, b.ret);
			span_us = (t1.tv_sec - t0.tv_sec) * 1000000 +
				  (t1.tv_nsec - t0.tv_nsec) / 1000 + 1;
			EXPECT_EQ(0, obj_free_handle(fd0, b.a.handle));
			EXPECT_EQ(0, obj_free_handle(fd0, a.handle));
			EXPECT_EQ(0, obj_free_handle(fd0, p.handle));
			EXPECT_EQ(0, munmap(map0, len));
			close(buf);
			continue;
		}
		ASSERT_EQ(0, pthread_create(&t, NULL, alloc_object, &b));
		usleep(rand() % span_us);
		ASSERT_EQ(0, obj_import(fd1, buf, &im)) TH_LOG("import: %s", strerror(errno));
		map1 = mmap(NULL, len, RW, MAP_SHARED, fd1, im.mmap_offset);
		ASSERT_NE(MAP_FAILED, map1);
		EXPECT_EQ(0, dev_fill(fd1, map1, 0x6b6b6b6b6b6b6b6bull, len));
		ASSERT_EQ(0, pthread_join(t, NULL));

		/* A holds device 1's bytes, read by device 0 wherever A is now. */
		EXPECT_TRUE(device_reads(fd0, map0, want, len, out))
			TH_LOG("round %d: device 1's FILL did not reach the object", r);
		if (b.ret == 0) {
			evicted++;
			mapb = mmap(NULL, blen, RW, MAP_SHARED, fd0, b.a.mmap_offset);
			ASSERT_NE(MAP_FAILED, mapb);
			EXPECT_TRUE(device_reads(fd0, mapb, zero, blen, out))
				TH_LOG("round %d: the new object holds another's bytes", r);
			EXPECT_EQ(0, munmap(mapb, blen));
			EXPECT_EQ(0, obj_free_handle(fd0, b.a.handle));
		} else {
			/* A got its peer first: it stays in HBM, and B finds no room. */
			EXPECT_EQ(-ENOSPC, b.ret);
			blocked++;
		}
		EXPECT_EQ(0, munmap(map1, len));
		EXPECT_EQ(0, munmap(map0, len));
		EXPECT_EQ(0, obj_free_handle(fd1, im.handle));
		EXPECT_EQ(0, obj_free_handle(fd0, a.handle));
		EXPECT_EQ(0, obj_free_handle(fd0, p.handle));
		close(buf);
	}
	TH_LOG("%d rounds: the object evicted first in %d, its peer first in %d (eviction %ld us)",
	       rounds, evicted, blocked, span_us);
	close(fd1);
	close(fd0);
	munmap(want, len);
	munmap(out, len);
	munmap(zero, len);
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	siglongjmp(bus_jmp, 1);
}

/* Read @p's first byte: 0 if it reads, 1 on SIGBUS. */
static int reads_or_sigbus(const volatile uint8_t *p)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	int bus;

	sigaction(SIGBUS, &sa, &old);
	bus = sigsetjmp(bus_jmp, 1);
	if (!bus)
		(void)*p;
	sigaction(SIGBUS, &old, NULL);
	return bus;
}

/* Wait (60 s at most) until @n gmem-accel devices have their nodes again. */
static bool devices_back(int n)
{
	char path[64];

	for (int i = 0; i < 6000; i++) {
		int k = 0;

		for (; k < n; k++) {
			snprintf(path, sizeof(path), "/dev/gmem_accel%d", k);
			if (!path_exists(path))
				break;
		}
		if (k == n)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * The device that holds an HBM object is unbound while another device reaches the object peer
 * to peer and processes map it: the peer's commands on it fail with EFAULT and the CPU's
 * touch gets SIGBUS, through either device's mapping; nothing reaches the unbound device's
 * HBM any more, which its next binding hands to others.
 */
TEST_F_TIMEOUT(share, exporter_unbound_under_its_peer, 300)
{
	const size_t len = M2;
	char addr[GMEM_MAX_TEST_DEVICES][32];
	int n = gmem_pci_devices(addr, GMEM_MAX_TEST_DEVICES);
	struct gmem_accel_obj_alloc a = { .size = len, .flags = GMEM_ACCEL_OBJ_HBM };
	struct gmem_accel_obj_import im;
	int fd0 = gmem_open(0, O_RDWR), fd1 = gmem_open(1, O_RDWR), buf;
	uint8_t *map0, *map1;

	ASSERT_GE(fd0, 0);
	if (fd1 < 0)
		SKIP(return, "no second gmem-accel device");
	ASSERT_LT(1, n);
	ASSERT_EQ(0, ioctl(fd0, GMEM_ACCEL_IOC_OBJ_ALLOC, &a));
	map0 = mmap(NULL, len, RW, MAP_SHARED, fd0, a.mmap_offset);
	ASSERT_NE(MAP_FAILED, map0);
	buf = obj_export(fd0, a.handle, 0);
	ASSERT_GE(buf, 0);
	ASSERT_EQ(0, obj_import(fd1, buf, &im));
	map1 = mmap(NULL, len, RW, MAP_SHARED, fd1, im.mmap_offset);
	ASSERT_NE(MAP_FAILED, map1);
	ASSERT_EQ(0, dev_fill(fd1, map1, 0x3333333333333333ull, len));
	EXPECT_EQ(0x33, map0[0]);
	EXPECT_EQ(0x33, map1[len - 1]);

	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/unbind", addr[0]));
	EXPECT_EQ(-EFAULT, dev_fill(fd1, map1, 0x4444444444444444ull, len))
		TH_LOG("device 1 still reached the unbound device's HBM");
	EXPECT_EQ(1, reads_or_sigbus(map1)) TH_LOG("the CPU still reads it through device 1");
	EXPECT_EQ(1, reads_or_sigbus(map0 + PAGE)) TH_LOG("the CPU still reads it through device 0");

	EXPECT_EQ(0, munmap(map1, len));
	EXPECT_EQ(0, munmap(map0, len));
	close(buf);
	close(fd1);
	close(fd0);
	ASSERT_EQ(0, write_sysfs("/sys/bus/pci/drivers/gmem_accel/bind", addr[0]));
	EXPECT_TRUE(devices_back(n));
}

TEST_HARNESS_MAIN
