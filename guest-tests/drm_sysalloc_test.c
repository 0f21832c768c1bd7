// SPDX-License-Identifier: GPL-2.0
/*
 * The system allocator on the DRM accel front end (Linux 7.3), in the scenarios of IGT's
 * xe_exec_system_allocator: memory from malloc() and mmap() that the device writes, freed
 * and allocated again at the same address (the device sees the new memory, never the old);
 * file-backed and shared mappings; mremap of device-written memory; partial munmap of
 * memory in HBM; fork with a file in parent and child; threads submitting on one file over
 * one buffer; a munmap racing a copy in flight; eviction, PREFER_DEVICE buffers larger
 * together than HBM; and a device write after MADV_FREE through reclaim. Each checks the
 * bytes, the errnos and the device's gauges back at their baseline.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "gmem_accel_drm_uapi.h"
#include "gmem_test_util.h"
#include "drm_fixture.h"

#define PAGE 4096ul
#define HUGE (2ul << 20)
#define DEV DRM_DEV
#define RW (PROT_READ | PROT_WRITE)

DRM_FIXTURE(sysalloc)

static uint64_t word_of(uint8_t v)
{
	return 0x0101010101010101ull * v;
}

/*
 * The device writes malloc'd memory, the program frees it and mallocs again (the heap's
 * chunk sizes, which come back at the same address, and sizes malloc maps): the device's
 * bytes are the CPU's, and the device reads what the CPU wrote into the new allocation.
 */
TEST_F_TIMEOUT(sysalloc, malloc_free_malloc_again, 300)
{
	static const size_t sizes[] = { 3 * PAGE + 96, 64 * PAGE, 5ul << 20 };
	int same_va = 0;

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t len = sizes[s] & ~7ul;
		uint8_t *ref = malloc(len);

		ASSERT_NE(NULL, ref);
		for (int round = 0; round < 3; round++) {
			uint8_t *p = malloc(len), *q;
			uint8_t v = 0x10 + s * 16 + round;

			ASSERT_NE(NULL, p);
			memset(p, 0, len);
			ASSERT_EQ(0, dev_fill(self->fd, p, word_of(v), len));
			EXPECT_EQ(-1, first_not(p, len, v)) TH_LOG("size %zu round %d", len, round);
			free(p);
			q = malloc(len);
			ASSERT_NE(NULL, q);
			same_va += q == p;
			pattern(q, len, v);
			memset(ref, 0, len);
			ASSERT_EQ(0, dev_copy(self->fd, ref, q, len));
			EXPECT_EQ(0, memcmp(ref, q, len)) TH_LOG("size %zu round %d", len, round);
			free(q);
		}
		free(ref);
	}
	TH_LOG("%d of 9 allocations came back at the freed address", same_va);
	EXPECT_LT(0, same_va);
	closed_gives_back(_metadata, self);
}

/*
 * A PREFER_DEVICE mapping the device wrote (its pages in HBM) unmapped and mapped again at
 * the same address: the old HBM pages are given back at munmap, the new memory is zeros to
 * the device and the CPU, and the device's writes to it land (in HBM again: the advice is
 * the address range's, docs/uapi.md).
 */
TEST_F_TIMEOUT(sysalloc, mmap_in_hbm_unmapped_and_mapped_again, 300)
{
	size_t len = 4ul << 20;
	uint8_t *p = map_2m(len), *dst = map_2m(len), *again;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, dev_advise(self->fd, p, len, GMEM_ACCEL_PREFER_DEVICE, 0));
	ASSERT_EQ(0, dev_fill(self->fd, p, word_of(0x77), len));
	EXPECT_EQ(len / PAGE, hbm_pages(self->fd, p, len));
	ASSERT_EQ(0, munmap(p, len));
	EXPECT_EQ(self->base[DRM_G_HBM],
		  gmem_wait_stat(DEV, "drm_hbm_pages_now", self->base[DRM_G_HBM], 60000));
	again = mmap(p, len, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(p, again);
	memset(dst, 0x5a, len);
	ASSERT_EQ(0, dev_copy(self->fd, dst, again, len));
	EXPECT_EQ(-1, first_not(dst, len, 0));
	EXPECT_EQ(-1, first_not(again, len, 0));
	ASSERT_EQ(0, dev_fill(self->fd, again, word_of(0x78), len));
	EXPECT_EQ(len / PAGE, hbm_pages(self->fd, again, len));
	EXPECT_EQ(-1, first_not(again, len, 0x78));
	munmap(again, len);
	munmap(dst, len);
	closed_gives_back(_metadata, self);
}

/*
 * File-backed and shared memory: the device writes a MAP_SHARED mapping of a memfd, which
 * another mapping of the file and pread() see; the CPU writes through the other mapping
 * and the device reads that; a forked child's writes to shared anonymous memory reach the
 * parent's device.
 */
TEST_F_TIMEOUT(sysalloc, file_backed_and_shared_memory, 300)
{
	size_t len = 4ul << 20;
	int mfd = memfd_create("drm_sysalloc", 0), status;
	uint8_t *a, *b, *dst = map_2m(len), *shared, *got = malloc(PAGE);
	pid_t pid;

	ASSERT_LE(0, mfd);
	ASSERT_NE(NULL, dst);
	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, ftruncate(mfd, len));
	a = mmap(NULL, len, RW, MAP_SHARED, mfd, 0);
	b = mmap(NULL, len, RW, MAP_SHARED, mfd, 0);
	ASSERT_NE(MAP_FAILED, a);
	ASSERT_NE(MAP_FAILED, b);
	ASSERT_EQ(0, dev_fill(self->fd, a, word_of(0x3c), len));
	EXPECT_EQ(-1, first_not(b, len, 0x3c));
	ASSERT_EQ(PAGE, pread(mfd, got, PAGE, len - PAGE));
	EXPECT_EQ(-1, first_not(got, PAGE, 0x3c));
	pattern(b, len, 41);
	ASSERT_EQ(0, dev_copy(self->fd, dst, a, len));
	EXPECT_EQ(0, memcmp(dst, b, len));

	shared = mmap(NULL, len, RW, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, shared);
	ASSERT_EQ(0, dev_fill(self->fd, shared, word_of(0x01), len));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		memset(shared, 0x02, len);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	ASSERT_EQ(0, dev_copy(self->fd, dst, shared, len));
	EXPECT_EQ(-1, first_not(dst, len, 0x02));
	munmap(shared, len);
	munmap(a, len);
	munmap(b, len);
	munmap(dst, len);
	close(mfd);
	free(got);
	closed_gives_back(_metadata, self);
}

/*
 * mremap() of memory the device wrote, in HBM and not: the bytes move with it (the CPU and
 * the device read them at the new address), the old address is EFAULT to the device.
 */
TEST_F_TIMEOUT(sysalloc, mremap_moves_device_memory, 300)
{
	size_t len = 4ul << 20;

	for (int hbm = 0; hbm < 2; hbm++) {
		uint8_t *p = map_2m(len), *to = map_2m(len), *dst = map_2m(len), *m;
		uint8_t v = 0x41 + hbm;

		ASSERT_NE(NULL, p);
		ASSERT_NE(NULL, to);
		ASSERT_NE(NULL, dst);
		if (hbm)
			ASSERT_EQ(0, dev_advise(self->fd, p, len, GMEM_ACCEL_PREFER_DEVICE, 0));
		ASSERT_EQ(0, dev_fill(self->fd, p, word_of(v), len));
		m = mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
		ASSERT_EQ(to, m);
		ASSERT_EQ(0, dev_copy(self->fd, dst, m, len));
		EXPECT_EQ(-1, first_not(dst, len, v)) TH_LOG("hbm %d", hbm);
		EXPECT_EQ(-1, first_not(m, len, v)) TH_LOG("hbm %d", hbm);
		EXPECT_EQ(-EFAULT, dev_copy(self->fd, dst, p, PAGE)) TH_LOG("hbm %d", hbm);
		munmap(m, len);
		munmap(dst, len);
	}
	closed_gives_back(_metadata, self);
}

/*
 * Partial munmap of PREFER_DEVICE memory the device wrote (in HBM): a hole in the middle of
 * a 2 MiB range and one page at another range's end. The rest keeps the device's bytes for
 * the device and the CPU; the holes are EFAULT; the device writes around them again.
 */
TEST_F_TIMEOUT(sysalloc, partial_munmap_of_hbm_memory, 300)
{
	size_t len = 8ul << 20, hole = HUGE + HUGE / 4, hole_len = HUGE / 2;
	size_t edge = 2 * HUGE - PAGE;
	uint8_t *p = map_2m(len), *dst = map_2m(len);

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, dev_advise(self->fd, p, len, GMEM_ACCEL_PREFER_DEVICE, 0));
	ASSERT_EQ(0, dev_fill(self->fd, p, word_of(0x99), len));
	EXPECT_EQ(len / PAGE, hbm_pages(self->fd, p, len));
	ASSERT_EQ(0, munmap(p + hole, hole_len));
	ASSERT_EQ(0, munmap(p + edge, PAGE));
	EXPECT_EQ(-EFAULT, dev_copy(self->fd, dst, p + hole + PAGE, PAGE));
	EXPECT_EQ(-EFAULT, dev_fill(self->fd, p + edge, 1, PAGE));
	/* the device reads what is left, then writes it again */
	ASSERT_EQ(0, dev_copy(self->fd, dst, p, hole));
	ASSERT_EQ(0, dev_copy(self->fd, dst + hole + hole_len, p + hole + hole_len,
			      edge - hole - hole_len));
	ASSERT_EQ(0, dev_copy(self->fd, dst + 2 * HUGE, p + 2 * HUGE, len - 2 * HUGE));
	EXPECT_EQ(-1, first_not(dst, hole, 0x99));
	EXPECT_EQ(-1, first_not(dst + hole + hole_len, edge - hole - hole_len, 0x99));
	EXPECT_EQ(-1, first_not(dst + 2 * HUGE, len - 2 * HUGE, 0x99));
	ASSERT_EQ(0, dev_fill(self->fd, p, word_of(0x9a), hole));
	ASSERT_EQ(0, dev_fill(self->fd, p + 2 * HUGE, word_of(0x9a), len - 2 * HUGE));
	EXPECT_EQ(-1, first_not(p, hole, 0x9a));
	EXPECT_EQ(-1, first_not(p + hole + hole_len, edge - hole - hole_len, 0x99));
	EXPECT_EQ(-1, first_not(p + 2 * HUGE, len - 2 * HUGE, 0x9a));
	munmap(p, len);
	munmap(dst, len);
	closed_gives_back(_metadata, self);
}

/*
 * fork() of a process whose device wrote PREFER_DEVICE memory (in HBM): the child, with a
 * file of its own, reads the parent's bytes, then has its device write its copy; the
 * parent's copy keeps the parent's bytes, and the parent's device writes it after.
 */
TEST_F_TIMEOUT(sysalloc, fork_child_reads_then_writes_its_copy, 300)
{
	size_t len = 4ul << 20;
	uint8_t *p = map_2m(len);
	int status;
	pid_t pid;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, dev_advise(self->fd, p, len, GMEM_ACCEL_PREFER_DEVICE, 0));
	ASSERT_EQ(0, dev_fill(self->fd, p, word_of(0xa0), len));
	EXPECT_EQ(len / PAGE, hbm_pages(self->fd, p, len));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = gmem_open_accel(DEV, O_RDWR);

		if (fd < 0)
			_exit(1);
		if (first_not(p, len, 0xa0) != -1)
			_exit(2);
		for (int r = 0; r < 4; r++)
			if (dev_fill(fd, p, word_of(0xc0 + r), len) ||
			    first_not(p, len, 0xc0 + r) != -1)
				_exit(3);
		close(fd);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child status %#x", status);
	EXPECT_EQ(-1, first_not(p, len, 0xa0));
	ASSERT_EQ(0, dev_fill(self->fd, p, word_of(0xb0), len));
	EXPECT_EQ(-1, first_not(p, len, 0xb0));
	munmap(p, len);
	closed_gives_back(_metadata, self);
}

/*
 * As above, but parent and child have their devices write their copies at the same time:
 * neither may see the other's bytes (a byte of the other's: the COW break lost, both
 * processes' device writes reaching one HBM page).
 */
TEST_F_TIMEOUT(sysalloc, fork_parent_and_child_write_at_once, 300)
{
	size_t len = 4ul << 20;
	uint8_t *p = map_2m(len);
	int go[2], status;
	long bad = -1;
	pid_t pid;
	char c;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, dev_advise(self->fd, p, len, GMEM_ACCEL_PREFER_DEVICE, 0));
	ASSERT_EQ(0, dev_fill(self->fd, p, word_of(0xa0), len));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = gmem_open_accel(DEV, O_RDWR);

		if (fd < 0 || read(go[0], &c, 1) != 1)
			_exit(1);
		for (int r = 0; r < 4; r++) {
			if (dev_fill(fd, p, word_of(0xc0 + r), len))
				_exit(2);
			bad = first_not(p, len, 0xc0 + r);
			if (bad != -1) {
				printf("# child, round %d: byte %ld is %#x\n", r, bad, p[bad]);
				fflush(stdout);
				_exit(3);
			}
		}
		_exit(0);
	}
	ASSERT_EQ(1, write(go[1], "g", 1));
	for (int r = 0; r < 4 && bad == -1; r++) {
		ASSERT_EQ(0, dev_fill(self->fd, p, word_of(0xb0 + r), len));
		bad = first_not(p, len, 0xb0 + r);
		if (bad != -1)
			TH_LOG("parent, round %d: byte %ld is %#x", r, bad, p[bad]);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(go[0]);
	close(go[1]);
	EXPECT_EQ(-1, bad);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child status %#x", status);
	munmap(p, len);
	closed_gives_back(_metadata, self);
}

struct slice {
	int fd, id, bad;
	uint8_t *p;
	size_t len;
};

/* A thread's rounds on its own slice: device fill, CPU check, CPU write, device copy out. */
static void *slice_rounds(void *arg)
{
	struct slice *s = arg;
	uint8_t *out = malloc(s->len);

	if (!out || (s->id & 1 &&
		     dev_advise(s->fd, s->p, s->len, GMEM_ACCEL_PREFER_DEVICE, 0))) {
		s->bad++;
		free(out);
		return NULL;
	}
	for (int r = 0; r < 12; r++) {
		uint8_t v = s->id * 32 + r;

		if (dev_fill(s->fd, s->p, word_of(v), s->len) || first_not(s->p, s->len, v) != -1)
			s->bad++;
		pattern(s->p, s->len, v);
		if (dev_copy(s->fd, out, s->p, s->len) || memcmp(out, s->p, s->len))
			s->bad++;
	}
	free(out);
	return NULL;
}

/*
 * Four threads submit on one file, each on its own slice of one buffer, every other slice
 * PREFER_DEVICE: neighbouring slices move between HBM and system memory while the others
 * are written. Every byte is right.
 */
TEST_F_TIMEOUT(sysalloc, threads_on_one_file_share_a_buffer, 600)
{
	size_t slice = HUGE, len = 4 * slice;
	uint8_t *p = map_2m(len);
	struct slice s[4];
	pthread_t t[4];

	ASSERT_NE(NULL, p);
	for (int i = 0; i < 4; i++) {
		s[i] = (struct slice){ .fd = self->fd, .id = i, .p = p + i * slice, .len = slice };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, slice_rounds, &s[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, s[i].bad) TH_LOG("thread %d", i);
	}
	munmap(p, len);
	closed_gives_back(_metadata, self);
}

/*
 * munmap() of a copy's source while the copy is in flight (SUBMIT without wait): the copy
 * ends whole or with EFAULT, never otherwise; the file works after; nothing leaks.
 */
TEST_F_TIMEOUT(sysalloc, munmap_races_a_copy_in_flight, 600)
{
	size_t len = 16ul << 20;
	uint8_t *dst = map_2m(len);
	int done = 0, faulted = 0;

	ASSERT_NE(NULL, dst);
	for (int r = 0; r < 8; r++) {
		uint8_t *src = map_2m(len);
		struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst,
					    .src = (uintptr_t)src, .size = len };
		struct gmem_accel_submit sub = { .cmds = (uintptr_t)&c, .count = 1 };
		struct gmem_accel_wait w = { .timeout_ms = 120000 };
		int ret;

		ASSERT_NE(NULL, src);
		if (r & 1)
			ASSERT_EQ(0, dev_advise(self->fd, src, len, GMEM_ACCEL_PREFER_DEVICE, 0));
		memset(src, 0x60 + r, len);
		ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_SUBMIT, &sub));
		usleep(r * 20000);
		ASSERT_EQ(0, munmap(src, len));
		w.fence = sub.fence;
		ret = ioctl(self->fd, DRM_IOCTL_GMEM_ACCEL_WAIT, &w) ? errno : 0;
		EXPECT_TRUE(ret == 0 || ret == EFAULT) TH_LOG("round %d: %s", r, strerror(ret));
		if (!ret) {
			EXPECT_EQ(-1, first_not(dst, len, 0x60 + r)) TH_LOG("round %d", r);
			done++;
		} else {
			faulted++;
		}
	}
	TH_LOG("%d copies done, %d ended with EFAULT", done, faulted);
	ASSERT_EQ(0, dev_fill(self->fd, dst, word_of(0x6f), len));
	EXPECT_EQ(-1, first_not(dst, len, 0x6f));
	munmap(dst, len);
	closed_gives_back(_metadata, self);
}

/*
 * Eviction under pressure: PREFER_DEVICE buffers 1.5x the HBM together, each written by
 * the device in turn: the device evicts older buffers to make room (drm_evictions; once
 * that finds HBM oversubscribed, the rest is mapped where it is, gmem_accel_oversub.c), HBM use
 * never passes its size, and every buffer reads back as the device wrote it, first by the
 * device (copying it out) and then by the CPU.
 */
TEST_F_TIMEOUT(sysalloc, eviction_under_pressure, 1800)
{
	size_t blen = 8ul << 20, n = (self->hbm_size + self->hbm_size / 2) / blen;
	uint8_t **b = calloc(n, sizeof(*b)), *out = map_2m(blen);
	int64_t ev0 = stat_of("drm_evictions"), peak = 0;

	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, out);
	for (size_t i = 0; i < n; i++) {
		b[i] = map_2m(blen);
		ASSERT_NE(NULL, b[i]);
		ASSERT_EQ(0, dev_advise(self->fd, b[i], blen, GMEM_ACCEL_PREFER_DEVICE, 0));
		ASSERT_EQ(0, dev_fill(self->fd, b[i], word_of(i + 1), blen)) TH_LOG("buffer %zu", i);
		if (stat_of("drm_hbm_pages_now") > peak)
			peak = stat_of("drm_hbm_pages_now");
	}
	TH_LOG("%zu buffers of %zu MiB over %lu MiB of HBM: %lld evictions, peak %lld HBM pages",
	       n, blen >> 20, (unsigned long)(self->hbm_size >> 20),
	       (long long)(stat_of("drm_evictions") - ev0), (long long)peak);
	EXPECT_LT(ev0, stat_of("drm_evictions"));
	EXPECT_GE((int64_t)(self->hbm_size / PAGE), peak - self->base[DRM_G_HBM]);
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(0, dev_copy(self->fd, out, b[i], blen)) TH_LOG("buffer %zu", i);
		EXPECT_EQ(-1, first_not(out, blen, i + 1)) TH_LOG("buffer %zu (device)", i);
	}
	for (size_t i = 0; i < n; i++) {
		EXPECT_EQ(-1, first_not(b[i], blen, i + 1)) TH_LOG("buffer %zu (CPU)", i);
		munmap(b[i], blen);
	}
	free(b);
	munmap(out, blen);
	closed_gives_back(_metadata, self);
}

/*
 * A device write after MADV_FREE keeps the page, as a CPU write does: the device fills
 * every other page of a range freed lazily, reclaim (MADV_PAGEOUT, until it has freed some
 * of the pages the device did not write again) leaves the written ones, and the CPU and
 * the device read the device's bytes there. drm_gpusvm must dirty the pages it maps for
 * writing: the device sets no dirty bit in the CPU's page table.
 */
TEST_F_TIMEOUT(sysalloc, device_write_after_madv_free_survives_reclaim, 300)
{
	size_t npages = 64, len = npages * PAGE, freed = 0, lost = 0;
	uint8_t *buf = map_2m(len), *out = map_2m(len);
	unsigned char vec[64];
	int tries;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, out);
	/* (4 KiB folios: a partly written 2 MiB folio would be split or kept whole) */
	ASSERT_EQ(0, madvise(buf, len, MADV_NOHUGEPAGE));
	memset(buf, 0x11, len);
	ASSERT_EQ(0, dev_fill(self->fd, buf, word_of(0x22), len));
	ASSERT_EQ(-1, first_not(buf, len, 0x22));

	ASSERT_EQ(0, madvise(buf, len, MADV_FREE));
	for (size_t i = 1; i < npages; i += 2) {
		ASSERT_EQ(0, dev_fill(self->fd, buf + i * PAGE, word_of(0x33), PAGE))
			TH_LOG("page %zu", i);
	}
	/* Reclaim: a freed page is no longer resident (mincore), without touching it. */
	for (tries = 0; tries < 100 && !freed; tries++) {
		if (tries)
			usleep(20 * 1000);
		ASSERT_EQ(0, madvise(buf, len, MADV_PAGEOUT));
		ASSERT_EQ(0, mincore(buf, len, vec));
		for (size_t i = 0; i < npages; i += 2)
			freed += !(vec[i] & 1);
	}
	TH_LOG("reclaim freed %zu of the %zu pages not written again, after %d MADV_PAGEOUT",
	       freed, npages / 2, tries);
	ASSERT_LT(0, freed) TH_LOG("reclaim freed no page: the case proves nothing");

	for (size_t i = 1; i < npages; i += 2)
		lost += first_not(buf + i * PAGE, PAGE, 0x33) != -1;
	EXPECT_EQ(0, lost) TH_LOG("the device's write after MADV_FREE lost in %zu of %zu pages",
				  lost, npages / 2);
	/* The others: the device's first bytes, or zeros where reclaim freed them. */
	for (size_t i = 0; i < npages; i += 2) {
		uint8_t want = buf[i * PAGE] ? 0x22 : 0;

		EXPECT_EQ(-1, first_not(buf + i * PAGE, PAGE, want)) TH_LOG("page %zu", i);
	}
	ASSERT_EQ(0, dev_copy(self->fd, out, buf, len));
	EXPECT_EQ(0, memcmp(out, buf, len)) TH_LOG("the device reads other bytes than the CPU");
	munmap(buf, len);
	munmap(out, len);
	closed_gives_back(_metadata, self);
}

TEST_HARNESS_MAIN
