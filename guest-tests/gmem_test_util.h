/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by gmem-accel's guest tests: what the host asked QEMU for (passed on the
 * kernel command line by scripts/run-vm.sh) and where each device shows up in sysfs.
 */
#ifndef GMEM_TEST_UTIL_H
#define GMEM_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "gmem_accel_uapi.h"

#define GMEM_MODULE_PATH "/lib/modules/gmem_accel.ko"
#define GMEM_MAX_TEST_DEVICES 16

/*
 * The start of every test (fixture setup): print the test's timeout as "# gmem-timeout N" (the
 * summary shows it beside the duration of every test over 10 s), then wait until every device
 * is idle again — no contexts, no pages in HBM — as a test that ran before
 * and was killed may have left its process's pages on their way home. The wait ends when the
 * devices are idle, after 30 s without progress, or after 300 s; false then.
 */
bool gmem_test_begin(int timeout_s);

/*
 * kselftest's TEST() takes no timeout, so the tests that need no fixture are TEST_F_TIMEOUT()s
 * of an empty one, defined by GMEM_PLAIN_FIXTURE(name) after kselftest_harness.h.
 */
#define GMEM_PLAIN_FIXTURE(name)					\
	FIXTURE(name) {};						\
	FIXTURE_SETUP(name) { ASSERT_TRUE(gmem_test_begin(_metadata->timeout)); } \
	FIXTURE_TEARDOWN(name) {}

/* Value of "gmemtest.<name>=" on /proc/cmdline, or @fallback if absent/unparsable. */
uint64_t gmem_expect(const char *name, uint64_t fallback);

/* PCI address ("0000:01:00.0") of /dev/gmem_accel@n in @addr; 0 or -errno. */
int gmem_pci_addr(int n, char *addr, size_t len);
/* PCI addresses ("0000:01:00.0") of all gmem-accel functions, sorted; returns the count. */
int gmem_pci_devices(char addr[][32], int max);

/* Read a sysfs file into @buf (trailing newline stripped); 0 or -errno. */
int read_sysfs(const char *path, char *buf, size_t len);
/* Read a sysfs file holding a number (any base strtoull accepts); 0 or -errno. */
int read_sysfs_u64(const char *path, uint64_t *val);
/* Write @val to a sysfs (or proc) file in one write(); 0 or -errno (the store's answer). */
int write_sysfs(const char *path, const char *val);
/* gmem_accel's module parameter @prefix@name: set to @v (0 or -errno), or its value (0 if none) */
int gmem_param_set(const char *prefix, const char *name, uint64_t v);
uint64_t gmem_param_get(const char *prefix, const char *name);

/*
 * Keep automatic NUMA balancing's scan off @p: it skips a VMA whose memory policy does not
 * ask for migrate-on-fault (an explicit MPOL_LOCAL does not). Each scan zaps the device's
 * mappings of the VMA (MMU_NOTIFY_PROTECTION_VMA) and makes the CPU's entries for HBM pages
 * read-only, so the device's next write to such a page takes it home and back: a test that
 * checks what the device maps, or counts its invalidations, must not race it. 0 or -errno.
 */
int no_numa_scan(void *p, size_t len);

/* Open /dev/gmem_accel<n>; -1 with errno on failure. */
int gmem_open(int n, int flags);

/* Device counter @name of gmem_accel<n> from debugfs "stats"; 0 or -errno. */
int gmem_debugfs_stat(int n, const char *name, int64_t *val);
/*
 * Poll gmem_accel<n>'s debugfs counter @name until it equals @want or @timeout_ms pass;
 * returns the last value read (INT64_MIN if unreadable).
 */
int64_t gmem_wait_stat(int n, const char *name, int64_t want, int timeout_ms);

/* Run @n commands on fd's context and wait for them; 0 or -errno of the batch. */
/*
 * The DRM accel front end (gmem_accel_drm_uapi.h): the ioctl number of GMEM_ACCEL_IOC_@cmd for
 * @fd, its DRM counterpart on a /dev/accel file (the helpers below all use it, so they drive
 * either front end); device @n's accel node opened (-1 and errno if it has none); device @n
 * given to @frontend ("gmem" or "drm": the module parameter, then unbound and bound again).
 * gmem_ioc() knows an fd's kind from gmem_open() and gmem_open_accel(): an accel file
 * opened or dup()ed any other way takes the DRM ioctls directly.
 */
unsigned long gmem_ioc(int fd, unsigned long cmd);
bool gmem_fd_is_accel(int fd);
/*
 * Does this run put the suite on the DRM front end (GMEM_FRONTEND=drm, drm_svm_suite.sh)?
 * gmem_open() then opens device @n's accel node where the device is DRM's.
 */
bool gmem_frontend_drm(void);
/* What gmem_frontend_adapter.c prints for a call the DRM front end has not. */
#define GMEM_ADAPTER_NO_DRM "gmem-adapter: the DRM front end has no"
int gmem_open_accel(int n, int flags);
int gmem_set_frontend(int n, const char *frontend);
int run_cmds(int fd, struct gmem_accel_cmd *c, unsigned int n);
/* The device copies or fills process memory; 0 or -errno. */
int dev_copy(int fd, void *dst, const void *src, size_t len);
int dev_fill(int fd, void *dst, uint64_t value, size_t len);
/* GMEM_ACCEL_IOC_MIGRATE of [addr, addr + len) to @target; -errno, else pages moved. */
long dev_migrate(int fd, void *addr, size_t len, unsigned int target);
/* The device's view of @addr's page (GMEM_ACCEL_PAGE_*), 0xee if SNAPSHOT failed. */
uint8_t page_view(int fd, void *addr);
/* GMEM_ACCEL_IOC_STATS of fd's context (zeroes if it failed). */
struct gmem_accel_stats ctx_stats(int fd);
/* A byte pattern that differs per @seed and per page. */
void pattern(void *buf, size_t len, unsigned int seed);
/* Private anonymous memory, NULL on failure. */
void *map_anon(size_t len, int prot);
/* Read-write anonymous memory in 4 KiB pages, no NUMA balancing scan; NULL on failure. */
void *map_small_pages(size_t len);
/* GMEM_ACCEL_IOC_ADVISE of [addr, addr + len): @location and @flags; 0 or -errno. */
int dev_advise(int fd, void *addr, size_t len, unsigned int location, unsigned int flags);

/*
 * Ask the host (scripts/lib/host-control.py, over ttyS2) to run one QMP command, @json on
 * one line; its reply line in @reply. 0, or -errno if there is no host to ask.
 */
int host_qmp(const char *json, char *reply, size_t len);
/*
 * Inject a device fault (the device's QOM 'inject', e.g. "dma-error,queue=1") into
 * /dev/gmem_accel@n; 0, or -EINVAL with the host's error printed.
 */
int gmem_inject(int n, const char *what);

/*
 * The page size of the run the QEMU monitor's dump of context @ctx of /dev/gmem_accel@n shows
 * at @va (its QOM page-table[ctx]); 0 if no run covers @va, -errno if the host cannot say.
 */
int64_t gmem_monitor_page_size(int n, unsigned int ctx, uint64_t va);

/*
 * The QEMU monitor's view of context @ctx of device @n's pages [@va, +@npages pages), as
 * SNAPSHOT gives the driver's: GMEM_ACCEL_PAGE_* of each page in @out (0: not mapped). The
 * number of runs the dump had, or -errno if the host cannot say (-E2BIG: it was truncated,
 * -EIO: it has a malformed entry).
 */
int gmem_monitor_view(int n, unsigned int ctx, uint64_t va, size_t npages, uint8_t *out);

/* One run of a context's over HBM, as the monitor's hbm-map shows it. */
struct gmem_hbm_use {
	uint64_t hbm, size, page_size, va;
	unsigned int context;
};

/*
 * The runs the QEMU monitor's hbm-map of /dev/gmem_accel@n shows over HBM offset @hbm (up to
 * @max of them in @out): how many, or -errno if the host cannot say.
 */
int gmem_monitor_hbm_users(int n, uint64_t hbm, struct gmem_hbm_use *out, int max);

/* How many times @needle occurs in the kernel log (klogctl); -1 if it cannot be read. */
int gmem_kernel_log_count(const char *needle);

/* The whole of a small text file (tracefs, sysfs), NUL-terminated (free() it), or NULL. */
char *read_whole_file(const char *path);
/* Does one line of @text hold every string of the NULL-terminated list after it? */
bool text_has_line(const char *text, ...) __attribute__((sentinel));

/* Does a path exist? */
bool path_exists(const char *path);

/* Is there swap (the guest sets up zram0)? */
bool have_swap(void);
/*
 * A memory cgroup /sys/fs/cgroup/@name with memory.max @max (made anew if it was left over):
 * 0, -errno, or -EOPNOTSUPP with *@why saying what is missing (swap, cgroup v2) to SKIP on.
 * The calling process moves into it with gmem_memcg_join(); rmdir() it when done.
 */
int gmem_memcg_create(const char *name, uint64_t max, const char **why);
int gmem_memcg_join(const char *name);
/*
 * Is this a checking kernel: the debug one (images/kernel-debug.config: it has kmemleak) or the
 * KCSAN one (images/kernel-kcsan.config)? Under TCG they run reclaim and migration
 * many times slower, so tests that only need volume use less there.
 */
bool debug_kernel(void);
/* /proc/self/pagemap's entry for @addr's page: swapped out (bit 62) or present (bit 63)? */
uint64_t pagemap(void *addr);
#define PM_SWAPPED (1ull << 62)
#define PM_PRESENT (1ull << 63)
/*
 * How many of @npages pages from @buf are swapped out (a device-private entry of HBM counts
 * too: pagemap shows any swap entry).
 */
long swapped_pages(void *buf, size_t npages);

#endif
