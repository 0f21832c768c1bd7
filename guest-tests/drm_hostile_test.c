// SPDX-License-Identifier: GPL-2.0
/*
 * The DRM accel front end's own objects and calls (Linux 7.3) under a careless or hostile
 * program: a timer's signal during every call that blocks (PREFETCH, SUBMIT_WAIT on GEM
 * memory, WAIT, poll() of a FENCE_EXPORT sync_file), SIGKILL at any step of PREFETCH, of GEM
 * object use and of MADVISE churn, frees racing use (GEM_CLOSE against MMAP_OFFSET, mmap and
 * PREFETCH; munmap against PREFETCH; the file closed under a PREFETCH; a PRIME fd outliving
 * its handle and file; a forked child with its parent's handles), PREFETCH racing another
 * process's eviction of HBM, and ioctl abuse of the new calls. Each asserts bytes, errnos and
 * the device's gauges back at their baseline.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sync_file.h>

#include "kselftest_harness.h"
#include "drm_fixture.h"

#define PAGE DRM_PAGE
#define HUGE DRM_HUGE
#define MiB (1ul << 20)

DRM_FIXTURE(hostile);

/* Objects' gauges: DRM_FIXTURE's gauges do not count GEM objects. */
static const char * const obj_gauges[] = { "objects_now", "obj_hbm_pages_now" };

static void obj_base(int64_t *base)
{
	for (int i = 0; i < 2; i++)
		base[i] = stat_of(obj_gauges[i]);
}

static void objs_back(struct __test_metadata *_metadata, const int64_t *base)
{
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(base[i], gmem_wait_stat(DRM_DEV, obj_gauges[i], base[i], 60000))
			TH_LOG("%s", obj_gauges[i]);
	}
}

static int prefetch(int fd, void *addr, size_t len, unsigned int target)
{
	struct gmem_accel_migrate m = { .addr = (uintptr_t)addr, .size = len, .target = target };

	return ioctl(fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH, &m) ? -errno : 0;
}

/* A timer's SIGALRM every @usec (0: off), its handler without SA_RESTART. */
static atomic_int signals;

static void on_alarm(int sig)
{
	atomic_fetch_add(&signals, 1);
}

static void signal_storm(unsigned int usec)
{
	struct itimerval it = { .it_interval = { 0, usec }, .it_value = { 0, usec } };
	struct sigaction sa = { .sa_handler = on_alarm };

	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

/*
 * PREFETCH of 96 MiB (48 ranges) into HBM and back, a signal every millisecond: each call
 * runs to its end or is taken up again after EINTR, and at the end every page is in HBM,
 * then home, with its bytes.
 */
TEST_F_TIMEOUT(hostile, signal_during_prefetch, 600)
{
	size_t len = (debug_kernel() ? 32 : 96) * MiB;
	uint8_t *buf = map_2m(len), *ref = malloc(len);
	int eintr = 0, ret;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, ref);
	pattern(ref, len, 1);
	memcpy(buf, ref, len);
	signal_storm(1000);
	while ((ret = prefetch(self->fd, buf, len, GMEM_ACCEL_TO_DEVICE)) == -EINTR)
		eintr++;
	signal_storm(0);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(len / PAGE, hbm_pages(self->fd, buf, len));
	signal_storm(1000);
	while ((ret = prefetch(self->fd, buf, len, GMEM_ACCEL_TO_SYSTEM)) == -EINTR)
		eintr++;
	signal_storm(0);
	ASSERT_EQ(0, ret);
	EXPECT_EQ(0, hbm_pages(self->fd, buf, len));
	EXPECT_EQ(0, memcmp(buf, ref, len));
	TH_LOG("%d signals, %d EINTR", atomic_load(&signals), eintr);
	EXPECT_LT(0, atomic_load(&signals));
	munmap(buf, len);
	free(ref);
	closed_gives_back(_metadata, self);
}

/* WAIT for @fence, taken up again after each EINTR; its result. */
static int wait_through_signals(int fd, uint64_t fence, int *eintr)
{
	int ret;

	while ((ret = wait_fence(fd, fence)) == -EINTR)
		(*eintr)++;
	return ret;
}

/*
 * SUBMIT_WAIT and SUBMIT + WAIT of batches on GEM memory (an HBM object: a copy out of it
 * into fresh memory, whose every page faults, and an atomic add on it), a signal every
 * millisecond: a wait a signal ends comes back with EINTR and the fence, WAIT takes it up.
 * Each batch ran once (every sum is the count of batches), a failing batch's EFAULT comes
 * back through the interrupted wait (no error lost), and the objects go at the end.
 */
TEST_F_TIMEOUT(hostile, signal_during_submit_wait_on_gem, 600)
{
	size_t len = 8 * MiB;
	int rounds = debug_kernel() ? 6 : 16, eintr = 0;
	uint8_t *obj, *dst, *ref = malloc(len);
	int64_t ob[2];
	uint32_t h;

	obj_base(ob);
	ASSERT_NE(NULL, ref);
	h = gem_create(self->fd, len, GMEM_ACCEL_OBJ_HBM, NULL);
	ASSERT_NE(0, h) TH_LOG("GEM_CREATE: %s", strerror(errno));
	obj = gem_map(self->fd, h, len);
	ASSERT_NE(NULL, obj);
	pattern(ref, len, 2);
	memcpy(obj, ref, len);
	for (int i = 0; i < rounds; i++) {
		struct gmem_accel_cmd c[2] = {
			{ .op = GMEM_ACCEL_OP_COPY, .size = len, .src = (uintptr_t)obj },
			/* one u32 at the start of each of the object's last 64 pages */
			{ .op = GMEM_ACCEL_OP_ATOMIC_ADD, .dst = (uintptr_t)(obj + len - 64 * PAGE),
			  .size = 64, .value = 1, .dst_stride = PAGE },
		};
		struct gmem_accel_submit s = { .cmds = (uintptr_t)c, .count = 2,
					       .flags = i & 1 ? 0 : GMEM_ACCEL_SUBMIT_WAIT };
		int ret;

		dst = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, dst);
		c[0].dst = (uintptr_t)dst;
		signal_storm(1000);
		ret = ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s) ? -errno : 0;
		if (ret == -EINTR)
			eintr++;
		if (!(s.flags & GMEM_ACCEL_SUBMIT_WAIT) || ret == -EINTR) {
			ASSERT_TRUE(ret == 0 || ret == -EINTR) TH_LOG("round %d: %s", i, strerror(-ret));
			ASSERT_NE(0, s.fence) TH_LOG("round %d: no fence", i);
			ret = wait_through_signals(self->fd, s.fence, &eintr);
		}
		signal_storm(0);
		ASSERT_EQ(0, ret) TH_LOG("round %d: %s", i, strerror(-ret));
		/* the copy read the object before the add: the bytes of that moment */
		ASSERT_EQ(0, memcmp(dst, ref, len - 64 * PAGE)) TH_LOG("round %d", i);
		for (int p = 0; p < 64; p++)
			*(uint32_t *)(ref + len - (64 - p) * PAGE) += 1;
		munmap(dst, len);
	}
	EXPECT_EQ(0, memcmp(obj, ref, len)) TH_LOG("each batch's add done once");
	/* a failing batch: its EFAULT comes back however often the wait is interrupted */
	{
		struct gmem_accel_cmd c[2] = {
			{ .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)ref, .src = (uintptr_t)obj,
			  .size = len },
			{ .op = GMEM_ACCEL_OP_FILL, .dst = 0x10000, .size = PAGE, .value = 1 },
		};
		struct gmem_accel_submit s = { .cmds = (uintptr_t)c, .count = 2,
					       .flags = GMEM_ACCEL_SUBMIT_WAIT };
		int ret;

		signal_storm(500);
		ret = ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &s) ? -errno : 0;
		if (ret == -EINTR)
			ret = wait_through_signals(self->fd, s.fence, &eintr);
		signal_storm(0);
		EXPECT_EQ(-EFAULT, ret);
	}
	TH_LOG("%d signals, %d EINTR", atomic_load(&signals), eintr);
	EXPECT_EQ(0, gem_close(self->fd, h));
	munmap(obj, len);
	free(ref);
	closed_gives_back(_metadata, self);
	objs_back(_metadata, ob);
}

/*
 * poll() of FENCE_EXPORT's sync_file, a signal every half millisecond: EINTR, polled again,
 * until POLLIN; then WAIT gives the batch's result (once), and the bytes are the copy's.
 * Also once the file that made it is closed under the batch.
 */
TEST_F_TIMEOUT(hostile, signal_during_sync_file_poll, 600)
{
	size_t len = 16 * MiB;
	uint8_t *src = map_2m(len), *dst = map_2m(len);
	int eintr = 0;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	for (int i = 0; i < 4; i++) {
		struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst,
					    .src = (uintptr_t)src, .size = len };
		struct gmem_accel_fence_export e = { .flags = O_CLOEXEC };
		struct pollfd pfd;
		uint64_t fence;
		int ret;

		pattern(src, len, 10 + i);
		/* (fresh destination pages: the batch faults for a while) */
		madvise(dst, len, MADV_DONTNEED);
		ASSERT_EQ(0, submit1(self->fd, &c, 0, &fence));
		e.fence = fence;
		ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT, &e));
		ASSERT_LE(0, e.fd);
		EXPECT_EQ(FD_CLOEXEC, fcntl(e.fd, F_GETFD));
		signal_storm(500);
		do {
			pfd = (struct pollfd){ .fd = e.fd, .events = POLLIN };
			ret = poll(&pfd, 1, 120000);
			if (ret < 0 && errno == EINTR)
				eintr++;
		} while (ret < 0 && errno == EINTR);
		signal_storm(0);
		ASSERT_EQ(1, ret) TH_LOG("round %d: %s", i, strerror(errno));
		EXPECT_TRUE(pfd.revents & POLLIN);
		EXPECT_EQ(0, wait_fence(self->fd, e.fence));
		EXPECT_EQ(0, memcmp(dst, src, len)) TH_LOG("round %d", i);
		close(e.fd);
	}
	/* The file closed while its batch runs: the sync_file signals, and tells its fence. */
	{
		struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst,
					    .src = (uintptr_t)src, .size = len };
		struct gmem_accel_fence_export e = { 0 };
		struct sync_file_info info = { 0 };
		struct pollfd pfd = { .events = POLLIN };
		uint64_t fence;
		int fd = gmem_open_accel(DRM_DEV, O_RDWR), ret;

		ASSERT_LE(0, fd);
		pattern(src, len, 20);
		madvise(dst, len, MADV_DONTNEED);
		ASSERT_EQ(0, submit1(fd, &c, 0, &fence));
		e.fence = fence;
		ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT, &e));
		ASSERT_EQ(0, close(fd));
		pfd.fd = e.fd;
		signal_storm(500);
		while ((ret = poll(&pfd, 1, 120000)) < 0 && errno == EINTR)
			eintr++;
		signal_storm(0);
		EXPECT_EQ(1, ret);
		ASSERT_EQ(0, ioctl(e.fd, SYNC_IOC_FILE_INFO, &info));
		EXPECT_EQ(1, info.status);
		EXPECT_EQ(1, info.num_fences);
		EXPECT_EQ(0, memcmp(dst, src, len));
		close(e.fd);
	}
	TH_LOG("%d signals, %d EINTR", atomic_load(&signals), eintr);
	munmap(src, len);
	munmap(dst, len);
	closed_gives_back(_metadata, self);
}

static unsigned int step_delay(int round)
{
	/* from the first call on, through the later steps */
	return (round % 8) * 7000 + (round / 8) * 1500;
}

/* PREFETCH in and out of a 32 MiB buffer, the CPU checking and rewriting it between. */
static void prefetch_forever(int fd, int ready, int round)
{
	size_t len = 32 * MiB;
	uint8_t *buf = map_2m(len);

	if (!buf || write(ready, "r", 1) != 1)
		_exit(2);
	for (unsigned int i = 0;; i++) {
		memset(buf, i, len);
		if (prefetch(fd, buf, len, GMEM_ACCEL_TO_DEVICE))
			_exit(3);
		if (i & 1 && prefetch(fd, buf, len, GMEM_ACCEL_TO_SYSTEM))
			_exit(4);
		if (first_not(buf, len, (uint8_t)i) >= 0)
			_exit(5);
	}
}

/* Killed at each step of PREFETCHes (range made, moved, mapped, brought home): nothing stays. */
TEST_F_TIMEOUT(hostile, kill_during_prefetch, 600)
{
	close(self->fd);
	self->fd = -1;
	drm_kill_rounds(_metadata, debug_kernel() ? 8 : 16, prefetch_forever, step_delay);
	gauges_back(_metadata, self);
}

/* GEM objects made, mapped, used by the device, shared by PRIME and freed, in a loop. */
static void gem_use_forever(int fd, int ready, int round)
{
	size_t len = 4 * MiB;
	uint8_t *tmp = map_2m(len);

	if (!tmp || write(ready, "r", 1) != 1)
		_exit(2);
	for (unsigned int i = 0;; i++) {
		uint32_t h = gem_create(fd, len, i & 1 ? GMEM_ACCEL_OBJ_SYSTEM : 0, NULL);
		struct drm_prime_handle ph = { .flags = DRM_CLOEXEC | DRM_RDWR };
		struct drm_prime_handle im = { 0 };
		uint8_t *p = h ? gem_map(fd, h, len) : NULL;

		if (!p)
			_exit(3);
		memset(p, i, len);
		ph.handle = h;
		if (dev_copy(fd, tmp, p, len) || first_not(tmp, len, (uint8_t)i) >= 0 ||
		    ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph))
			_exit(4);
		im.fd = ph.fd;
		if (ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &im) || im.handle != h ||
		    dev_fill(fd, p, 0x0101010101010101ull * (uint8_t)~i, len))
			_exit(5);
		if (i % 3)
			close(ph.fd);	/* else the process's exit closes it */
		if (gem_close(fd, h) || munmap(p, len))
			_exit(6);
	}
}

/* Killed at each step of GEM object use: objects, their HBM and the context all go. */
TEST_F_TIMEOUT(hostile, kill_during_gem_use, 600)
{
	int64_t ob[2];

	obj_base(ob);
	close(self->fd);
	self->fd = -1;
	drm_kill_rounds(_metadata, debug_kernel() ? 8 : 16, gem_use_forever, step_delay);
	gauges_back(_metadata, self);
	objs_back(_metadata, ob);
}

struct churn {
	int fd;
	uint8_t *buf;
	size_t len;
	atomic_bool stop;
};

/* Both attributes of parts of the buffer, changing all the time. */
static void *madvise_churn(void *arg)
{
	struct churn *c = arg;

	for (unsigned int i = 0; !atomic_load(&c->stop); i++) {
		size_t off = (i % 7) * HUGE / 2, len = c->len - off;

		madvise_attr(c->fd, c->buf + off, len, GMEM_ACCEL_DRM_ATTR_ATOMIC, i % 4);
		madvise_attr(c->fd, c->buf + off / 2, len, GMEM_ACCEL_DRM_ATTR_PREFERRED_LOC,
			     i % 3);
	}
	return NULL;
}

/* MADVISE churn in one thread, atomics, fills and CPU writes in another. */
static void madvise_forever(int fd, int ready, int round)
{
	struct churn c = { .fd = fd, .len = 8 * MiB };
	pthread_t t;

	c.buf = map_2m(c.len);
	if (!c.buf || pthread_create(&t, NULL, madvise_churn, &c) || write(ready, "r", 1) != 1)
		_exit(2);
	for (unsigned int i = 0;; i++) {
		struct gmem_accel_cmd cmd = { .op = GMEM_ACCEL_OP_ATOMIC_ADD,
					      .dst = (uintptr_t)c.buf + (i % 4) * HUGE,
					      .size = 512, .value = 1, .dst_stride = PAGE };
		int ret = run_cmds(fd, &cmd, 1);

		/* (CPU: EPERM; GLOBAL without room: ENOSPC; contended: EBUSY) */
		if (ret && ret != -EPERM && ret != -ENOSPC && ret != -EBUSY)
			_exit(3);
		if (dev_fill(fd, c.buf + HUGE, i, HUGE))
			_exit(4);
		c.buf[(i % 2048) * PAGE + 8]++;
	}
}

/* Killed during MADVISE churn racing the device: nothing stays. */
TEST_F_TIMEOUT(hostile, kill_during_madvise_churn, 600)
{
	close(self->fd);
	self->fd = -1;
	drm_kill_rounds(_metadata, debug_kernel() ? 6 : 12, madvise_forever, step_delay);
	gauges_back(_metadata, self);
}

struct gem_racer {
	int fd;
	size_t len;
	_Atomic uint32_t handle;
	atomic_bool stop;
	int maps, enoent, einval, other, last_err;
};

/* MMAP_OFFSET, mmap, a write, PREFETCH and munmap of whatever handle is current. */
static void *use_handle(void *arg)
{
	struct gem_racer *r = arg;

	while (!atomic_load(&r->stop)) {
		struct drm_gmem_accel_gem_mmap_offset mo = { .handle = atomic_load(&r->handle) };
		uint8_t *p;
		int ret;

		if (ioctl(r->fd, DRM_IOCTL_GMEM_ACCEL_GEM_MMAP_OFFSET, &mo)) {
			if (errno == ENOENT)
				r->enoent++;
			else
				r->other++, r->last_err = errno;
			continue;
		}
		p = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, mo.offset);
		if (p == MAP_FAILED) {
			if (errno == EINVAL)
				r->einval++;
			else
				r->other++, r->last_err = errno;
			continue;
		}
		r->maps++;
		p[r->len - 1] = 1;	/* the mapping keeps its object */
		/* an object's pages stay where they are: not an error */
		ret = prefetch(r->fd, p, r->len, r->maps & 1 ? GMEM_ACCEL_TO_DEVICE :
			       GMEM_ACCEL_TO_SYSTEM);
		if (ret)
			r->other++, r->last_err = -ret;
		if (p[r->len - 1] != 1)
			r->other++, r->last_err = EIO;
		munmap(p, r->len);
	}
	return NULL;
}

/*
 * GEM_CLOSE racing MMAP_OFFSET, mmap and PREFETCH of the object from another thread: each
 * call works on the object or finds it gone (ENOENT, EINVAL), a mapping made keeps its
 * object, and every object goes once its handle and mappings are gone.
 */
TEST_F_TIMEOUT(hostile, gem_close_races_mmap_and_prefetch, 600)
{
	struct gem_racer r = { .fd = self->fd, .len = 2 * MiB };
	int64_t ob[2];
	pthread_t t;

	obj_base(ob);
	ASSERT_EQ(0, pthread_create(&t, NULL, use_handle, &r));
	for (int i = 0; i < (debug_kernel() ? 100 : 300); i++) {
		uint32_t h = gem_create(self->fd, r.len, i & 1 ? GMEM_ACCEL_OBJ_SYSTEM : 0, NULL);

		ASSERT_NE(0, h) TH_LOG("GEM_CREATE %d: %s", i, strerror(errno));
		atomic_store(&r.handle, h);
		usleep(i % 5 * 300);
		ASSERT_EQ(0, gem_close(self->fd, h));
	}
	atomic_store(&r.stop, true);
	pthread_join(t, NULL);
	TH_LOG("%d mapped, %d ENOENT, %d EINVAL, %d other (%s)", r.maps, r.enoent, r.einval,
	       r.other, strerror(r.last_err));
	EXPECT_EQ(0, r.other) TH_LOG("%s", strerror(r.last_err));
	EXPECT_LT(0, r.maps);
	closed_gives_back(_metadata, self);
	objs_back(_metadata, ob);
}

struct unmapper {
	uint8_t *buf;
	size_t len;
	atomic_bool stop;
	int rounds, failed;
};

/* The buffer's second half unmapped and mapped again (with its bytes), over and over. */
static void *unmap_loop(void *arg)
{
	struct unmapper *u = arg;
	size_t half = u->len / 2;

	while (!atomic_load(&u->stop)) {
		uint8_t *tmp = mmap(NULL, half, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (tmp == MAP_FAILED) {
			u->failed = errno;
			return NULL;
		}
		memset(tmp, 0x5a, half);
		munmap(u->buf + half, half);
		usleep(300);
		if (mremap(tmp, half, half, MREMAP_MAYMOVE | MREMAP_FIXED,
			   u->buf + half) == MAP_FAILED) {
			u->failed = errno;
			return NULL;
		}
		u->rounds++;
		usleep(u->rounds % 5 * 500);
	}
	return NULL;
}

/*
 * munmap of half the buffer racing PREFETCHes of all of it: each completes or fails with
 * EFAULT (a hole), the first half's bytes stay right, and once quiet a PREFETCH moves all.
 */
TEST_F_TIMEOUT(hostile, munmap_races_prefetch, 600)
{
	struct unmapper u = { .len = 16 * MiB };
	int ok = 0, efault = 0, other = 0, last = 0;
	pthread_t t;

	u.buf = map_2m(u.len);
	ASSERT_NE(NULL, u.buf);
	memset(u.buf, 0xa5, u.len / 2);
	memset(u.buf + u.len / 2, 0x5a, u.len / 2);
	ASSERT_EQ(0, pthread_create(&t, NULL, unmap_loop, &u));
	for (int i = 0; i < (debug_kernel() ? 10 : 30); i++) {
		int ret = prefetch(self->fd, u.buf, u.len,
				   i % 3 ? GMEM_ACCEL_TO_DEVICE : GMEM_ACCEL_TO_SYSTEM);

		if (!ret)
			ok++;
		else if (ret == -EFAULT)
			efault++;
		else
			other++, last = ret;
	}
	atomic_store(&u.stop, true);
	pthread_join(t, NULL);
	ASSERT_EQ(0, u.failed) TH_LOG("the racer's own call: %s", strerror(u.failed));
	TH_LOG("%d racer rounds; PREFETCH: %d done, %d EFAULT, %d other (%s)", u.rounds, ok,
	       efault, other, other ? strerror(-last) : "-");
	EXPECT_EQ(0, other);
	ASSERT_EQ(0, prefetch(self->fd, u.buf, u.len, GMEM_ACCEL_TO_DEVICE));
	EXPECT_EQ(u.len / PAGE, hbm_pages(self->fd, u.buf, u.len));
	EXPECT_EQ(-1, first_not(u.buf, u.len / 2, 0xa5));
	EXPECT_EQ(-1, first_not(u.buf + u.len / 2, u.len / 2, 0x5a));
	munmap(u.buf, u.len);
	closed_gives_back(_metadata, self);
}

struct prefetcher {
	int fd, ret;
	uint8_t *buf;
	size_t len;
	atomic_bool started;
};

static void *prefetch_thread(void *arg)
{
	struct prefetcher *p = arg;

	atomic_store(&p->started, true);
	p->ret = prefetch(p->fd, p->buf, p->len, GMEM_ACCEL_TO_DEVICE);
	return NULL;
}

/*
 * The file closed (both its numbers) while another thread is in PREFETCH on it: the call
 * finishes on the file it started on, the next call on the number is EBADF, the context goes
 * after the call, and the buffer's bytes are all there.
 */
TEST_F_TIMEOUT(hostile, close_file_during_prefetch, 600)
{
	for (int round = 0; round < 3; round++) {
		struct prefetcher p = { .len = 64 * MiB };
		pthread_t t;
		int fd = gmem_open_accel(DRM_DEV, O_RDWR), fd2;

		ASSERT_LE(0, fd);
		fd2 = dup(fd);
		ASSERT_LE(0, fd2);
		p.fd = fd2;
		p.buf = map_2m(p.len);
		ASSERT_NE(NULL, p.buf);
		memset(p.buf, round + 1, p.len);
		ASSERT_EQ(0, pthread_create(&t, NULL, prefetch_thread, &p));
		while (!atomic_load(&p.started))
			usleep(100);
		usleep(round * 20000);
		ASSERT_EQ(0, close(fd));
		ASSERT_EQ(0, close(fd2));
		EXPECT_EQ(-EBADF, prefetch(fd2, p.buf, PAGE, GMEM_ACCEL_TO_DEVICE));
		pthread_join(t, NULL);
		/* (EBADF: the thread came to the call after the close) */
		EXPECT_TRUE(p.ret == 0 || p.ret == -EBADF) TH_LOG("round %d: %s", round,
								    strerror(-p.ret));
		EXPECT_EQ(-1, first_not(p.buf, p.len, round + 1)) TH_LOG("round %d", round);
		munmap(p.buf, p.len);
	}
	closed_gives_back(_metadata, self);
}

/*
 * A PRIME fd used after its GEM handle and the file that made it are closed: the dma-buf
 * keeps the object, which a new file imports with its bytes and uses; it goes with the
 * dma-buf's last reference.
 */
TEST_F_TIMEOUT(hostile, prime_fd_outlives_handle_and_file, 300)
{
	struct drm_prime_handle ph = { .flags = DRM_CLOEXEC | DRM_RDWR }, im = { 0 };
	size_t len = 2 * MiB;
	uint8_t *p, *tmp = map_2m(len), *ref = malloc(len);
	int64_t ob[2];
	uint32_t h;

	obj_base(ob);
	ASSERT_NE(NULL, tmp);
	ASSERT_NE(NULL, ref);
	for (int kind = 0; kind < 2; kind++) {
		h = gem_create(self->fd, len, kind ? GMEM_ACCEL_OBJ_SYSTEM : GMEM_ACCEL_OBJ_HBM,
			       NULL);
		ASSERT_NE(0, h);
		p = gem_map(self->fd, h, len);
		ASSERT_NE(NULL, p);
		pattern(ref, len, 30 + kind);
		memcpy(p, ref, len);
		ASSERT_EQ(0, munmap(p, len));
		ph.handle = h;
		ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph));
		ASSERT_EQ(0, gem_close(self->fd, h));
		close(self->fd);
		self->fd = gmem_open_accel(DRM_DEV, O_RDWR);
		ASSERT_LE(0, self->fd);
		EXPECT_EQ(ob[0] + 1, stat_of("objects_now")) TH_LOG("the dma-buf holds it");
		/* the old handle means nothing on the new file */
		EXPECT_EQ(-EINVAL, gem_close(self->fd, h));
		im.fd = ph.fd;
		ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &im));
		p = gem_map(self->fd, im.handle, len);
		ASSERT_NE(NULL, p);
		EXPECT_EQ(0, memcmp(p, ref, len));
		ASSERT_EQ(0, dev_copy(self->fd, tmp, p, len));
		EXPECT_EQ(0, memcmp(tmp, ref, len));
		ASSERT_EQ(0, dev_fill(self->fd, p, 0x4242424242424242ull, PAGE));
		EXPECT_EQ(0x42, p[PAGE - 1]);
		/* handle, mapping, file, and last the dma-buf */
		EXPECT_EQ(0, gem_close(self->fd, im.handle));
		EXPECT_EQ(0x42, p[0]);
		ASSERT_EQ(0, munmap(p, len));
		close(self->fd);
		self->fd = gmem_open_accel(DRM_DEV, O_RDWR);
		ASSERT_LE(0, self->fd);
		EXPECT_EQ(ob[0] + 1, stat_of("objects_now"));
		close(ph.fd);
		objs_back(_metadata, ob);
	}
	munmap(tmp, len);
	free(ref);
	closed_gives_back(_metadata, self);
}

/*
 * A forked child with its parent's file, handles and mappings: calls that reach the context
 * (GEM_CREATE, PREFETCH, MADVISE, QUERY_MEM_ATTRS, FENCE_EXPORT) are EACCES; the handles are
 * the file's, so GEM_QUERY, GEM_MMAP_OFFSET and PRIME answer, and the child's own file
 * imports the object and its device writes it. The parent's object and file work on.
 */
TEST_F_TIMEOUT(hostile, fork_child_uses_parent_handles, 300)
{
	size_t len = 2 * MiB;
	uint8_t *p, *buf = map_2m(len);
	int64_t ob[2];
	uint64_t off;
	uint32_t h;
	int status;
	pid_t pid;

	obj_base(ob);
	ASSERT_NE(NULL, buf);
	memset(buf, 3, len);
	h = gem_create(self->fd, len, GMEM_ACCEL_OBJ_HBM, &off);
	ASSERT_NE(0, h);
	p = gem_map(self->fd, h, len);
	ASSERT_NE(NULL, p);
	memset(p, 7, len);
	ASSERT_EQ(0, dev_fill(self->fd, buf, 0x0909090909090909ull, PAGE));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct gmem_accel_obj_query q = { .handle = h };
		struct drm_gmem_accel_gem_mmap_offset mo = { .handle = h };
		struct gmem_accel_drm_mem_attrs qa = { .addr = (uintptr_t)buf };
		struct gmem_accel_fence_export e = { .fence = 1 };
		struct drm_prime_handle ph = { .handle = h, .flags = DRM_CLOEXEC }, im = { 0 };
		uint8_t *c;
		int fd, step = 10;

		if (gem_create(self->fd, PAGE, 0, NULL) || errno != EACCES)
			_exit(step);
		step++;
		if (prefetch(self->fd, buf, len, GMEM_ACCEL_TO_DEVICE) != -EACCES)
			_exit(step);
		step++;
		if (madvise_attr(self->fd, buf, len, GMEM_ACCEL_DRM_ATTR_ATOMIC, 1) != -EACCES)
			_exit(step);
		step++;
		if (!ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_QUERY_MEM_ATTRS, &qa) || errno != EACCES)
			_exit(step);
		step++;
		if (!ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT, &e) || errno != EACCES)
			_exit(step);
		step++;
		if (ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_QUERY, &q) || q.size != len ||
		    ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_MMAP_OFFSET, &mo) || mo.offset != off)
			_exit(step);
		step++;
		/* the inherited mapping is the object */
		if (first_not(p, len, 7) >= 0)
			_exit(step);
		step++;
		fd = gmem_open_accel(DRM_DEV, O_RDWR);
		if (fd < 0 || ioctl(self->fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph))
			_exit(step);
		step++;
		im.fd = ph.fd;
		if (ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &im))
			_exit(step);
		step++;
		c = gem_map(fd, im.handle, len);
		if (!c || dev_fill(fd, c, 0x0b0b0b0b0b0b0b0bull, len / 2) || p[0] != 0x0b)
			_exit(step);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("child failed at step %d (status %#x)", WEXITSTATUS(status), status);
	EXPECT_EQ(-1, first_not(p, len / 2, 0x0b));
	EXPECT_EQ(-1, first_not(p + len / 2, len / 2, 7));
	ASSERT_EQ(0, prefetch(self->fd, buf, len, GMEM_ACCEL_TO_DEVICE));
	EXPECT_EQ(len / PAGE, hbm_pages(self->fd, buf, len));
	EXPECT_EQ(9, buf[0]);
	EXPECT_EQ(3, buf[len - 1]);
	EXPECT_EQ(0, gem_close(self->fd, h));
	munmap(p, len);
	munmap(buf, len);
	closed_gives_back(_metadata, self);
	objs_back(_metadata, ob);
}

/*
 * A GEM mapping the device has used, moved by mremap() and then unmapped, its handle closed:
 * the device reaches the object at its new address only, nothing at the old one (EFAULT),
 * and once the object is gone its HBM, taken by a new object, stays that one's.
 */
TEST_F_TIMEOUT(hostile, stale_gem_mapping_after_mremap_and_munmap, 300)
{
	size_t len = 2 * MiB;
	int64_t ob[2];

	obj_base(ob);
	for (int kind = 0; kind < 2; kind++) {
		uint32_t flags = kind ? GMEM_ACCEL_OBJ_SYSTEM : GMEM_ACCEL_OBJ_HBM;
		uint32_t h = gem_create(self->fd, len, flags, NULL), h2;
		uint8_t *p, *moved, *spare = map_2m(len), *p2;

		ASSERT_NE(0, h);
		ASSERT_NE(NULL, spare);
		p = gem_map(self->fd, h, len);
		ASSERT_NE(NULL, p);
		ASSERT_EQ(0, dev_fill(self->fd, p, 0x0101010101010101ull, len));
		EXPECT_EQ(1, p[len - 1]);
		moved = mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, spare);
		ASSERT_EQ(spare, moved);
		EXPECT_EQ(-EFAULT, dev_fill(self->fd, p, 0x0202020202020202ull, len))
			TH_LOG("the old address of a moved object mapping");
		EXPECT_EQ(1, moved[0]);
		ASSERT_EQ(0, dev_fill(self->fd, moved, 0x0303030303030303ull, PAGE));
		EXPECT_EQ(3, moved[PAGE - 1]);
		EXPECT_EQ(1, moved[PAGE]);
		ASSERT_EQ(0, gem_close(self->fd, h));
		ASSERT_EQ(0, munmap(moved, len));
		objs_back(_metadata, ob);
		/* a new object, maybe in the same memory: the old addresses reach none of it */
		h2 = gem_create(self->fd, len, flags, NULL);
		ASSERT_NE(0, h2);
		p2 = gem_map(self->fd, h2, len);
		ASSERT_NE(NULL, p2);
		if (p2 != moved)
			EXPECT_EQ(-EFAULT, dev_fill(self->fd, moved, 0x0404040404040404ull, len));
		if (p2 != p)
			EXPECT_EQ(-EFAULT, dev_fill(self->fd, p, 0x0505050505050505ull, len));
		EXPECT_EQ(-1, first_not(p2, len, 0)) TH_LOG("kind %d", kind);
		EXPECT_EQ(0, gem_close(self->fd, h2));
		munmap(p2, len);
	}
	closed_gives_back(_metadata, self);
	objs_back(_metadata, ob);
}

/* The device adds @v to the u32 at the start of each of @n pages from @p: 0 or -errno. */
static int dev_atomic_add(int fd, void *p, unsigned int n, uint32_t v)
{
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_ATOMIC_ADD, .dst = (uintptr_t)p,
				    .size = n, .value = v, .dst_stride = PAGE };

	return run_cmds(fd, &c, 1);
}

/*
 * MADVISE's atomic access over a GEM object's mapping, as over any memory of the process
 * (xe's atomic attribute holds for its buffer objects' VMAs too): CPU refuses the device's
 * atomics with EPERM and changes nothing, also where the device maps the object already;
 * GLOBAL has them in HBM only (a system-memory object: ENOSPC); DEVICE gives them back.
 */
TEST_F_TIMEOUT(hostile, atomic_attribute_on_gem_mapping, 300)
{
	size_t len = 2 * MiB;
	int64_t ob[2];

	obj_base(ob);
	for (int kind = 0; kind < 2; kind++) {
		uint32_t h = gem_create(self->fd, len, kind ? GMEM_ACCEL_OBJ_SYSTEM :
					GMEM_ACCEL_OBJ_HBM, NULL);
		uint8_t *p = h ? gem_map(self->fd, h, len) : NULL;

		ASSERT_NE(NULL, p);
		ASSERT_EQ(0, dev_atomic_add(self->fd, p, 8, 2));
		EXPECT_EQ(2, *(uint32_t *)(p + 7 * PAGE));
		ASSERT_EQ(0, madvise_attr(self->fd, p, len, GMEM_ACCEL_DRM_ATTR_ATOMIC,
					  GMEM_ACCEL_DRM_ATOMIC_CPU));
		EXPECT_EQ(-EPERM, dev_atomic_add(self->fd, p, 8, 2)) TH_LOG("kind %d", kind);
		EXPECT_EQ(2, *(uint32_t *)(p + 7 * PAGE));
		/* a write maps the page again, and is no atomic */
		ASSERT_EQ(0, dev_fill(self->fd, p + 16 * PAGE, 0, PAGE));
		EXPECT_EQ(-EPERM, dev_atomic_add(self->fd, p + 16 * PAGE, 1, 2));
		EXPECT_EQ(0, *(uint32_t *)(p + 16 * PAGE)) TH_LOG("kind %d", kind);
		/* GLOBAL: in HBM, or ENOSPC (an object never moves) */
		ASSERT_EQ(0, madvise_attr(self->fd, p, len, GMEM_ACCEL_DRM_ATTR_ATOMIC,
					  GMEM_ACCEL_DRM_ATOMIC_GLOBAL));
		EXPECT_EQ(kind ? -ENOSPC : 0, dev_atomic_add(self->fd, p, 8, 2));
		EXPECT_EQ(kind ? 2 : 4, *(uint32_t *)(p + 7 * PAGE));
		ASSERT_EQ(0, madvise_attr(self->fd, p, len, GMEM_ACCEL_DRM_ATTR_ATOMIC,
					  GMEM_ACCEL_DRM_ATOMIC_DEVICE));
		EXPECT_EQ(0, dev_atomic_add(self->fd, p, 8, 2));
		EXPECT_EQ(kind ? 4 : 6, *(uint32_t *)(p + 7 * PAGE));
		EXPECT_EQ(0, gem_close(self->fd, h));
		munmap(p, len);
	}
	closed_gives_back(_metadata, self);
	objs_back(_metadata, ob);
}

/* A working set of @len bytes moved into HBM and checked, over and over, until killed. */
static void evict_forever(int fd, size_t len, int ready)
{
	uint8_t *buf = map_2m(len);

	if (!buf)
		_exit(2);
	for (unsigned int i = 0;; i++) {
		memset(buf, 0x80 | i, len);
		if (prefetch(fd, buf, len, GMEM_ACCEL_TO_DEVICE))
			_exit(3);
		if (!i && write(ready, "r", 1) != 1)
			_exit(4);
		if (dev_fill(fd, buf, 0x1111111111111111ull * (i & 0xf), len))
			_exit(5);
		if (first_not(buf, len, 0x11 * (i & 0xf)) >= 0)
			_exit(6);
	}
}

/*
 * PREFETCH into HBM while another process's working set (3/4 of HBM) evicts it: each
 * PREFETCH completes, its bytes are right after the device writes them, and HBM evictions
 * happened; both processes' pages and contexts go at the end.
 */
TEST_F_TIMEOUT(hostile, prefetch_races_eviction, 900)
{
	size_t other = self->hbm_size / 4 * 3, len = self->hbm_size / 2;
	int64_t ev0 = stat_of("drm_evictions");
	uint8_t *buf = map_2m(len);
	int pipefd[2], status;
	pid_t pid;
	char c;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = gmem_open_accel(DRM_DEV, O_RDWR);

		if (fd < 0)
			_exit(1);
		evict_forever(fd, other, pipefd[1]);
	}
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	for (int i = 0; i < (debug_kernel() ? 2 : 4); i++) {
		memset(buf, i + 1, len);
		ASSERT_EQ(0, prefetch(self->fd, buf, len, GMEM_ACCEL_TO_DEVICE)) TH_LOG("%d", i);
		ASSERT_EQ(0, dev_fill(self->fd, buf + PAGE, 0x2222222222222222ull * (i + 1),
				      len - 2 * PAGE));
		EXPECT_EQ(i + 1, buf[0]);
		EXPECT_EQ(-1, first_not(buf + PAGE, len - 2 * PAGE, 0x22 * (i + 1)));
		EXPECT_EQ(i + 1, buf[len - 1]);
	}
	ASSERT_EQ(0, waitpid(pid, &status, WNOHANG)) TH_LOG("the evicting process ended: %#x",
							     status);
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("status %#x", status);
	close(pipefd[0]);
	close(pipefd[1]);
	TH_LOG("%lld HBM evictions", (long long)(stat_of("drm_evictions") - ev0));
	EXPECT_LT(ev0, stat_of("drm_evictions"));
	munmap(buf, len);
	closed_gives_back(_metadata, self);
}

static int err_of(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? errno : 0;
}

/*
 * The new calls abused: every unknown flag and target, nonzero out and pad fields, empty,
 * unaligned, wrapping and too-high ranges, unmapped and PROT_NONE memory, bad handles, fds
 * and fences, NULL arguments: each gets its errno from docs/uapi.md, changes nothing, and
 * the file works after all of it.
 */
TEST_F_TIMEOUT(hostile, ioctl_abuse_of_new_calls, 300)
{
	uint8_t *buf = map_2m(4 * HUGE), *hole = buf + 2 * HUGE;
	struct gmem_accel_migrate m;
	struct gmem_accel_fence_export e;
	struct gmem_accel_drm_madvise ma;
	struct gmem_accel_drm_mem_attrs q;
	struct gmem_accel_obj_query oq = { 0 };
	struct drm_gmem_accel_gem_mmap_offset mo;
	struct drm_prime_handle ph;
	struct gmem_accel_cmd fill = { .op = GMEM_ACCEL_OP_FILL, .size = PAGE, .value = 5 };
	/* x86-64's TASK_SIZE: 4-level paging's, unless an address above it is one (5-level) */
	struct gmem_accel_drm_mem_attrs la57 = { .addr = 1ull << 47 };
	const uint64_t top = (ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_QUERY_MEM_ATTRS, &la57) ?
			      1ull << 47 : 1ull << 56) - PAGE;
	unsigned long nr[] = { DRM_IOCTL_GMEM_ACCEL_PREFETCH, DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT,
			       DRM_IOCTL_GMEM_ACCEL_MADVISE, DRM_IOCTL_GMEM_ACCEL_QUERY_MEM_ATTRS,
			       DRM_IOCTL_GMEM_ACCEL_GEM_CREATE,
			       DRM_IOCTL_GMEM_ACCEL_GEM_MMAP_OFFSET,
			       DRM_IOCTL_GMEM_ACCEL_GEM_QUERY, DRM_IOCTL_GEM_CLOSE,
			       DRM_IOCTL_PRIME_HANDLE_TO_FD, DRM_IOCTL_PRIME_FD_TO_HANDLE };
	int64_t ob[2];
	uint64_t fence;
	uint32_t h;
	int fd2, memfd;

	obj_base(ob);
	ASSERT_NE(NULL, buf);
	memset(buf, 1, 4 * HUGE);
	ASSERT_EQ(0, munmap(hole, HUGE));
	ASSERT_EQ(0, mprotect(buf + 3 * HUGE, HUGE, PROT_NONE));

	/* PREFETCH */
#define M(...) (m = (struct gmem_accel_migrate){ .addr = (uintptr_t)buf, .size = HUGE }, \
		__VA_ARGS__, &m)
	for (int bit = 0; bit < 32; bit++) {
		EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH,
					 M(m.flags = 1u << bit))) TH_LOG("flag bit %d", bit);
	}
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH, M(m.target = 2)));
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH, M(m.target = ~0u)));
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH, M(m.pages = 1)));
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH, M(m.size = 0)));
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH, M(m.size = PAGE + 1)));
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH,
				 M(m.addr = (uintptr_t)buf + 1)));
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH,
				 M(m.size = -(uint64_t)(uintptr_t)buf)));	/* wraps to 0 */
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH,
				 M(m.size = ~0ull & ~(PAGE - 1))));		/* wraps */
	EXPECT_EQ(EFAULT, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH,
				 M(m.addr = top - PAGE, m.size = 2 * PAGE)));
	EXPECT_EQ(EFAULT, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH,
				 M(m.addr = 1ull << 60)));
	EXPECT_EQ(EFAULT, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH, M(m.addr = 0)));
	/* a hole, PROT_NONE, a huge size over them: EFAULT, the pages before it moved */
	EXPECT_EQ(EFAULT, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH,
				 M(m.addr = (uintptr_t)hole)));
	EXPECT_EQ(EFAULT, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH,
				 M(m.addr = (uintptr_t)buf + 3 * HUGE)));
	EXPECT_EQ(0, hbm_pages(self->fd, buf, 2 * HUGE));
	EXPECT_EQ(EFAULT, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH, M(m.size = 4 * HUGE)));
	EXPECT_EQ(EFAULT, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH,
				 M(m.size = 1ull << 46)));
	EXPECT_EQ(2 * HUGE / PAGE, hbm_pages(self->fd, buf, 2 * HUGE));
	EXPECT_EQ(0, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_PREFETCH,
			    M(m.size = 4 * HUGE, m.target = GMEM_ACCEL_TO_SYSTEM)));
	EXPECT_EQ(0, hbm_pages(self->fd, buf, 2 * HUGE));
	EXPECT_EQ(-1, first_not(buf, 2 * HUGE, 1));
#undef M

	/* FENCE_EXPORT */
	fill.dst = (uintptr_t)buf;
	ASSERT_EQ(0, submit1(self->fd, &fill, GMEM_ACCEL_SUBMIT_WAIT, &fence));
#define E(...) (e = (struct gmem_accel_fence_export){ .fence = fence }, __VA_ARGS__, &e)
	for (int bit = 0; bit < 32; bit++) {
		if ((1u << bit) == O_CLOEXEC)
			continue;
		EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT,
					 E(e.flags = 1u << bit))) TH_LOG("flag bit %d", bit);
	}
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT, E(e.pad = 1)));
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT, E(e.fence = 0)));
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT,
				 E(e.fence = fence + 1)));
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT, E(e.fence = ~0ull)));
	fd2 = gmem_open_accel(DRM_DEV, O_RDWR);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(EINVAL, err_of(fd2, DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT, E(e.fd = 0)))
		TH_LOG("another file's fence");
	ASSERT_EQ(0, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_FENCE_EXPORT, E(e.fd = 12345)));
	EXPECT_EQ(0, fcntl(e.fd, F_GETFD)) TH_LOG("no O_CLOEXEC asked");
	/* a sync_file is no dma-buf */
	ph = (struct drm_prime_handle){ .fd = e.fd };
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph));
	close(e.fd);
#undef E

	/* MADVISE and QUERY_MEM_ATTRS: ranges at and over the top, out-of-range values */
#define MA(...) (ma = (struct gmem_accel_drm_madvise){ .addr = (uintptr_t)buf, .size = HUGE }, \
		 __VA_ARGS__, &ma)
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_MADVISE, MA(ma.reserved[0] = 1)));
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_MADVISE, MA(ma.type = ~0u)));
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_MADVISE,
				 MA(ma.type = GMEM_ACCEL_DRM_ATTR_PREFERRED_LOC, ma.value = ~0u)));
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_MADVISE,
				 MA(ma.size = ~0ull & ~(PAGE - 1))));
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_MADVISE,
				 MA(ma.addr = top - PAGE, ma.size = 2 * PAGE)));
	/* the last page below the top, a hole, PROT_NONE: attributes are the address range's */
	EXPECT_EQ(0, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_MADVISE,
			    MA(ma.addr = top - PAGE, ma.size = PAGE,
			       ma.type = GMEM_ACCEL_DRM_ATTR_ATOMIC, ma.value = 3)));
	EXPECT_EQ(0, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_MADVISE,
			    MA(ma.addr = (uintptr_t)hole, ma.size = 2 * HUGE,
			       ma.type = GMEM_ACCEL_DRM_ATTR_ATOMIC, ma.value = 3)));
	q = (struct gmem_accel_drm_mem_attrs){ .addr = top - 1 };
	ASSERT_EQ(0, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_QUERY_MEM_ATTRS, &q));
	EXPECT_EQ(GMEM_ACCEL_DRM_ATOMIC_CPU, q.atomic);
	EXPECT_EQ(top - PAGE, q.start);
	EXPECT_EQ(top, q.end);
	q = (struct gmem_accel_drm_mem_attrs){ .addr = (uintptr_t)hole + 5 };
	ASSERT_EQ(0, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_QUERY_MEM_ATTRS, &q));
	EXPECT_EQ(GMEM_ACCEL_DRM_ATOMIC_CPU, q.atomic);
	EXPECT_EQ((uintptr_t)hole, q.start);
	EXPECT_EQ((uintptr_t)hole + 2 * HUGE, q.end);
	q = (struct gmem_accel_drm_mem_attrs){ .addr = top };
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_QUERY_MEM_ATTRS, &q));
	q = (struct gmem_accel_drm_mem_attrs){ .addr = ~0ull };
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_QUERY_MEM_ATTRS, &q));
#undef MA

	/* GEM: sizes, flags, handles */
	EXPECT_EQ(0, gem_create(self->fd, ~0ull, 0, NULL));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, gem_create(self->fd, ~0ull - PAGE + 2, GMEM_ACCEL_OBJ_SYSTEM, NULL));
	EXPECT_EQ(EINVAL, errno);
	for (int bit = 7; bit < 32; bit++) {	/* (past GMEM_ACCEL_OBJ_KNOWN) */
		EXPECT_EQ(0, gem_create(self->fd, PAGE, 1u << bit, NULL)) TH_LOG("bit %d", bit);
		EXPECT_EQ(EINVAL, errno) TH_LOG("flag bit %d", bit);
	}
	h = gem_create(self->fd, 1, GMEM_ACCEL_OBJ_SYSTEM, NULL);
	ASSERT_NE(0, h);
	oq.handle = h;
	ASSERT_EQ(0, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_QUERY, &oq));
	EXPECT_EQ(PAGE, oq.size);
	for (uint32_t bad = 0; bad < 4; bad++) {
		uint32_t hb = bad == 3 ? ~0u : bad == 2 ? 1u << 31 : bad ? h + 1 : 0;

		oq = (struct gmem_accel_obj_query){ .handle = hb };
		EXPECT_EQ(ENOENT, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_QUERY, &oq));
		mo = (struct drm_gmem_accel_gem_mmap_offset){ .handle = hb };
		EXPECT_EQ(ENOENT, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_MMAP_OFFSET, &mo));
		EXPECT_EQ(-EINVAL, gem_close(self->fd, hb)) TH_LOG("handle %#x", hb);
		ph = (struct drm_prime_handle){ .handle = hb };
		EXPECT_EQ(ENOENT, err_of(self->fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph));
		/* another file's handle is none of this one's */
		oq.handle = h;
		EXPECT_EQ(ENOENT, err_of(fd2, DRM_IOCTL_GMEM_ACCEL_GEM_QUERY, &oq));
	}
	for (int bit = 0; bit < 32; bit++) {
		mo = (struct drm_gmem_accel_gem_mmap_offset){ .handle = h, .flags = 1u << bit };
		EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_MMAP_OFFSET, &mo));
	}
	mo = (struct drm_gmem_accel_gem_mmap_offset){ .handle = h, .offset = 1 };
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_GMEM_ACCEL_GEM_MMAP_OFFSET, &mo));
	ph = (struct drm_prime_handle){ .handle = h, .flags = 1u << 20 };
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph));
	ph = (struct drm_prime_handle){ .fd = -1 };
	EXPECT_EQ(EBADF, err_of(self->fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph));
	ph = (struct drm_prime_handle){ .fd = 99999 };
	EXPECT_EQ(EBADF, err_of(self->fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph));
	memfd = memfd_create("not-a-dma-buf", 0);
	ASSERT_LE(0, memfd);
	ph = (struct drm_prime_handle){ .fd = memfd };
	EXPECT_EQ(EINVAL, err_of(self->fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph));
	close(memfd);
	EXPECT_EQ(0, gem_close(self->fd, h));
	EXPECT_EQ(-EINVAL, gem_close(self->fd, h));

	/* NULL and kernel-address arguments */
	for (unsigned int i = 0; i < sizeof(nr) / sizeof(nr[0]); i++) {
		EXPECT_EQ(EFAULT, err_of(self->fd, nr[i], NULL)) TH_LOG("ioctl %#lx", nr[i]);
		EXPECT_EQ(EFAULT, err_of(self->fd, nr[i], (void *)0xffff888000000000ull))
			TH_LOG("ioctl %#lx", nr[i]);
	}

	/* after all of it: nothing made, and the file works */
	EXPECT_EQ(ob[0], stat_of("objects_now"));
	fill.dst = (uintptr_t)buf + PAGE;
	EXPECT_EQ(0, submit1(self->fd, &fill, GMEM_ACCEL_SUBMIT_WAIT, NULL));
	EXPECT_EQ(5, buf[PAGE]);
	EXPECT_EQ(0, prefetch(self->fd, buf, 2 * HUGE, GMEM_ACCEL_TO_DEVICE));
	EXPECT_EQ(2 * HUGE / PAGE, hbm_pages(self->fd, buf, 2 * HUGE));
	close(fd2);
	munmap(buf, 4 * HUGE);
	closed_gives_back(_metadata, self);
	objs_back(_metadata, ob);
}

TEST_HARNESS_MAIN
