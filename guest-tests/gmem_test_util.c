// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/mempolicy.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "gmem_accel_hw.h"
#include "gmem_accel_drm_uapi.h"
#include "gmem_test_util.h"

uint64_t gmem_expect(const char *name, uint64_t fallback)
{
	char cmdline[4096], key[64], *p, *end;
	uint64_t val;
	int fd = open("/proc/cmdline", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return fallback;
	n = read(fd, cmdline, sizeof(cmdline) - 1);
	close(fd);
	if (n <= 0)
		return fallback;
	cmdline[n] = '\0';
	snprintf(key, sizeof(key), "gmemtest.%s=", name);
	for (p = strstr(cmdline, key); p; p = strstr(p + 1, key)) {
		if (p != cmdline && p[-1] != ' ')
			continue;
		errno = 0;
		val = strtoull(p + strlen(key), &end, 0);
		if (errno || (*end && *end != ' ' && *end != '\n'))
			return fallback;
		return val;
	}
	return fallback;
}

int read_sysfs(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return 0;
}

int read_sysfs_u64(const char *path, uint64_t *val)
{
	char buf[64], *end;
	int ret = read_sysfs(path, buf, sizeof(buf));

	if (ret)
		return ret;
	errno = 0;
	*val = strtoull(buf, &end, 0);
	if (errno || end == buf || *end)
		return -EINVAL;
	return 0;
}

int write_sysfs(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		ret = -errno;
	else if (n != (ssize_t)strlen(val))
		ret = -EIO;
	close(fd);
	return ret;
}

int gmem_param_set(const char *prefix, const char *name, uint64_t v)
{
	char path[160], val[32];

	snprintf(path, sizeof(path), "/sys/module/gmem_accel/parameters/%s%s", prefix, name);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)v);
	return write_sysfs(path, val);
}

uint64_t gmem_param_get(const char *prefix, const char *name)
{
	char path[160];
	uint64_t v = 0;

	snprintf(path, sizeof(path), "/sys/module/gmem_accel/parameters/%s%s", prefix, name);
	read_sysfs_u64(path, &v);
	return v;
}

int no_numa_scan(void *p, size_t len)
{
	return syscall(SYS_mbind, p, len, MPOL_LOCAL, NULL, 0ul, 0u) ? -errno : 0;
}

static int cmp_addr(const void *a, const void *b)
{
	return strcmp(a, b);
}

int gmem_pci_devices(char addr[][32], int max)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	char path[512];
	uint64_t vendor, device;
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)) && n < max) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= 32)
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", e->d_name);
		if (read_sysfs_u64(path, &vendor) || vendor != GMEM_PCI_VENDOR_ID)
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device", e->d_name);
		if (read_sysfs_u64(path, &device) || device != GMEM_PCI_DEVICE_ID)
			continue;
		memcpy(addr[n++], e->d_name, strlen(e->d_name) + 1);
	}
	closedir(d);
	qsort(addr, n, 32, cmp_addr);
	return n;
}

/*
 * Which of the files the helpers opened are DRM accel nodes, by fd: noted at open, so that
 * gmem_ioc() costs no system call of its own (a device copy's time is its ioctls').
 */
#define GMEM_FD_KINDS 4096
static bool gmem_fd_is_drm[GMEM_FD_KINDS];

static int gmem_note_fd(int fd, bool drm)
{
	if (fd >= 0 && fd < GMEM_FD_KINDS)
		gmem_fd_is_drm[fd] = drm;
	return fd;
}

bool gmem_fd_is_accel(int fd)
{
	return fd >= 0 && fd < GMEM_FD_KINDS && gmem_fd_is_drm[fd];
}

bool gmem_frontend_drm(void)
{
	static int drm = -1;

	if (drm < 0) {
		const char *f = getenv("GMEM_FRONTEND");

		drm = f && !strcmp(f, "drm");
	}
	return drm;
}

int gmem_open(int n, int flags)
{
	char path[64];

	if (gmem_frontend_drm()) {
		int fd = gmem_open_accel(n, flags);

		if (fd >= 0 || errno != ENOENT)
			return fd;
	}

	snprintf(path, sizeof(path), "/dev/gmem_accel%d", n);
	return gmem_note_fd(open(path, flags), false);
}

bool path_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

bool have_swap(void)
{
	FILE *f = fopen("/proc/swaps", "r");
	char line[256];
	int lines = 0;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		lines++;
	fclose(f);
	return lines > 1;
}

int gmem_memcg_create(const char *name, uint64_t max, const char **why)
{
	char path[128], val[32];

	*why = NULL;
	if (!have_swap())
		*why = "no swap (the guest sets up zram0)";
	else if (access("/sys/fs/cgroup/cgroup.subtree_control", W_OK))
		*why = "no cgroup v2 at /sys/fs/cgroup";
	if (*why)
		return -EOPNOTSUPP;
	if (write_sysfs("/sys/fs/cgroup/cgroup.subtree_control", "+memory"))
		return -EIO;
	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", name);
	rmdir(path);
	if (mkdir(path, 0755))
		return -errno;
	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/memory.max", name);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)max);
	return write_sysfs(path, val);
}

int gmem_memcg_join(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/cgroup.procs", name);
	return write_sysfs(path, "0");
}

bool debug_kernel(void)
{
	return path_exists("/sys/kernel/debug/kmemleak") || path_exists("/sys/kernel/debug/kcsan");
}

uint64_t pagemap(void *addr)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd >= 0) {
		if (pread(fd, &e, sizeof(e), ((uintptr_t)addr / page) * sizeof(e)) != sizeof(e))
			e = 0;
		close(fd);
	}
	return e;
}

long swapped_pages(void *buf, size_t npages)
{
	long page = sysconf(_SC_PAGESIZE), n = 0;

	for (size_t i = 0; i < npages; i++)
		n += !!(pagemap((uint8_t *)buf + i * page) & PM_SWAPPED);
	return n;
}

int gmem_debugfs_stat(int n, const char *name, int64_t *val)
{
	char path[96], key[64];
	long long v;
	int ret = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/gmem_accel/gmem_accel%d/stats", n);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fscanf(f, "%63s %lld", key, &v) == 2) {
		if (!strcmp(key, name)) {
			*val = v;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

int64_t gmem_wait_stat(int n, const char *name, int64_t want, int timeout_ms)
{
	int64_t v = INT64_MIN;

	for (int waited = 0;; waited += 10) {
		if (gmem_debugfs_stat(n, name, &v))
			return INT64_MIN;
		if (v == want || waited >= timeout_ms)
			return v;
		usleep(10 * 1000);
	}
}

/*
 * Devices not idle (see gmem_test_begin), summed; 0 if the driver is not loaded. (Held
 * context ids are given back only at the next open: not a sign of a test still going.)
 */
static int64_t gmem_busy(void)
{
	static const char * const gauges[] = { "contexts_now", "hbm_pages_now" };
	int devices = gmem_expect("devices", 1);
	int64_t busy = 0, v;

	for (int n = 0; n < devices; n++)
		for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++)
			if (!gmem_debugfs_stat(n, gauges[i], &v) && v > 0)
				busy += v;
	return busy;
}

bool gmem_test_begin(int timeout_s)
{
	int64_t busy, last = -1;
	int quiet_ms = 0;

	printf("# gmem-timeout %d\n", timeout_s);
	fflush(stdout);
	for (int waited = 0; (busy = gmem_busy()) > 0; waited += 10) {
		quiet_ms = busy == last ? quiet_ms + 10 : 0;
		last = busy;
		if (quiet_ms >= 30000 || waited >= 300000) {
			printf("# devices not idle after %d s: %lld contexts or HBM pages\n",
			       waited / 1000, (long long)busy);
			return false;
		}
		usleep(10 * 1000);
	}
	return true;
}

unsigned long gmem_ioc(int fd, unsigned long cmd)
{
	if (!gmem_fd_is_accel(fd))
		return cmd;
	switch (cmd) {
	case GMEM_ACCEL_IOC_GET_INFO:
		return DRM_IOCTL_GMEM_ACCEL_GET_INFO;
	case GMEM_ACCEL_IOC_SUBMIT:
		return DRM_IOCTL_GMEM_ACCEL_SUBMIT;
	case GMEM_ACCEL_IOC_WAIT:
		return DRM_IOCTL_GMEM_ACCEL_WAIT;
	case GMEM_ACCEL_IOC_STATS:
		return DRM_IOCTL_GMEM_ACCEL_STATS;
	case GMEM_ACCEL_IOC_SNAPSHOT:
		return DRM_IOCTL_GMEM_ACCEL_SNAPSHOT;
	case GMEM_ACCEL_IOC_ADVISE:
		return DRM_IOCTL_GMEM_ACCEL_ADVISE;
	}
	return cmd;	/* not a DRM number: drm_ioctl() answers ENOTTY */
}

int gmem_open_accel(int n, int flags)
{
	char dir[96], path[96];
	struct dirent *e;
	DIR *d;
	int fd = -1;

	snprintf(dir, sizeof(dir), "/sys/class/gmem_accel/gmem_accel%d/device/accel", n);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "accel", 5)) {
			snprintf(path, sizeof(path), "/dev/accel/%s", e->d_name);
			fd = gmem_note_fd(open(path, flags), true);
			break;
		}
	closedir(d);
	if (!e)
		errno = ENOENT;
	return fd;
}

int gmem_set_frontend(int n, const char *frontend)
{
	char addr[64], list[256] = "";
	int ret;

	/* (the parameter is an array by device number: every entry up to @n) */
	for (int i = 0; i < n; i++)
		strcat(list, "gmem,");
	strcat(list, frontend);
	ret = gmem_pci_addr(n, addr, sizeof(addr));
	if (!ret)
		ret = write_sysfs("/sys/module/gmem_accel/parameters/frontend", list);
	if (!ret)
		ret = write_sysfs("/sys/bus/pci/drivers/gmem_accel/unbind", addr);
	if (!ret)
		ret = write_sysfs("/sys/bus/pci/drivers/gmem_accel/bind", addr);
	return ret;
}

int run_cmds(int fd, struct gmem_accel_cmd *c, unsigned int n)
{
	struct gmem_accel_submit s = { .cmds = (uintptr_t)c, .count = n };
	/* Generous: a batch that faults its pages in may take long on a slow or loaded host. */
	struct gmem_accel_wait w = { .timeout_ms = 120000 };

	if (ioctl(fd, gmem_ioc(fd, GMEM_ACCEL_IOC_SUBMIT), &s))
		return -errno;
	w.fence = s.fence;
	return ioctl(fd, gmem_ioc(fd, GMEM_ACCEL_IOC_WAIT), &w) ? -errno : 0;
}

int dev_copy(int fd, void *dst, const void *src, size_t len)
{
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_COPY, .dst = (uintptr_t)dst,
				    .src = (uintptr_t)src, .size = len };

	return run_cmds(fd, &c, 1);
}

int dev_fill(int fd, void *dst, uint64_t value, size_t len)
{
	struct gmem_accel_cmd c = { .op = GMEM_ACCEL_OP_FILL, .dst = (uintptr_t)dst,
				    .size = len, .value = value };

	return run_cmds(fd, &c, 1);
}

long dev_migrate(int fd, void *addr, size_t len, unsigned int target)
{
	struct gmem_accel_migrate m = { .addr = (uintptr_t)addr, .size = len, .target = target };

	return ioctl(fd, gmem_ioc(fd, GMEM_ACCEL_IOC_MIGRATE), &m) ? -errno : (long)m.pages;
}

uint8_t page_view(int fd, void *addr)
{
	uint8_t v = 0xff;
	struct gmem_accel_snapshot s = { .addr = (uintptr_t)addr & ~4095ul, .npages = 1,
					 .out = (uintptr_t)&v };

	if (ioctl(fd, gmem_ioc(fd, GMEM_ACCEL_IOC_SNAPSHOT), &s))
		return 0xee;
	return v;
}

struct gmem_accel_stats ctx_stats(int fd)
{
	struct gmem_accel_stats st = { 0 };

	ioctl(fd, gmem_ioc(fd, GMEM_ACCEL_IOC_STATS), &st);
	return st;
}

void pattern(void *buf, size_t len, unsigned int seed)
{
	uint8_t *b = buf;

	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 12));
}

void *map_anon(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void *map_small_pages(size_t len)
{
	void *p = map_anon(len, PROT_READ | PROT_WRITE);

	if (p && (madvise(p, len, MADV_NOHUGEPAGE) || no_numa_scan(p, len))) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

int dev_advise(int fd, void *addr, size_t len, unsigned int location, unsigned int flags)
{
	struct gmem_accel_advise a = { .addr = (uintptr_t)addr, .size = len,
				       .location = location, .flags = flags };

	return ioctl(fd, gmem_ioc(fd, GMEM_ACCEL_IOC_ADVISE), &a) ? -errno : 0;
}

char *read_whole_file(const char *path)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap), *more;
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	ssize_t n;

	if (fd < 0 || !buf) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += n;
		if (len + 1 < cap)
			continue;
		more = realloc(buf, cap *= 2);
		if (!more) {
			free(buf);
			close(fd);
			return NULL;
		}
		buf = more;
	}
	close(fd);
	buf[len] = 0;
	return buf;
}

bool text_has_line(const char *text, ...)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *needle;
		bool all = true;
		char line[512];
		va_list ap;

		snprintf(line, sizeof(line), "%.*s", (int)strcspn(l, "\n"), l);
		va_start(ap, text);
		while (all && (needle = va_arg(ap, const char *)))
			all = strstr(line, needle) != NULL;
		va_end(ap);
		if (all)
			return true;
	}
	return false;
}

int host_qmp(const char *json, char *reply, size_t len)
{
	int fd = open("/dev/ttyS2", O_RDWR | O_NOCTTY);
	struct termios t;
	size_t got = 0;
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (tcgetattr(fd, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(fd, TCSANOW, &t);
	}
	tcflush(fd, TCIOFLUSH);
	if (write(fd, json, strlen(json)) != (ssize_t)strlen(json) || write(fd, "\n", 1) != 1) {
		ret = -EIO;
		goto out;
	}
	/*
	 * A loaded host answers in milliseconds; 60 s means nobody is there. Read what the tty
	 * has, not a byte at a time: a page-table dump can be ~100 KiB, and a read() and a
	 * poll() per byte would take most of a test's time. The reply is the only line in flight.
	 */
	while (got < len - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char *nl;
		ssize_t n;

		if (poll(&p, 1, 60000) != 1) {
			ret = -ETIMEDOUT;
			break;
		}
		n = read(fd, reply + got, len - 1 - got);
		if (n <= 0) {
			ret = -EIO;
			break;
		}
		nl = memchr(reply + got, '\n', n);
		got += n;
		if (nl) {
			got = nl - reply;
			break;
		}
	}
	reply[got] = '\0';
out:
	close(fd);
	return ret;
}

int gmem_pci_addr(int n, char *addr, size_t len)
{
	char path[128], link[256], *name;
	ssize_t r;

	snprintf(path, sizeof(path), "/sys/class/gmem_accel/gmem_accel%d/device", n);
	r = readlink(path, link, sizeof(link) - 1);
	if (r < 0)
		return -errno;
	link[r] = '\0';
	name = strrchr(link, '/');
	snprintf(addr, len, "%s", name ? name + 1 : link);
	return 0;
}

/* The QEMU id (gmemI) of /dev/gmem_accel@n: its I in *@id; 0 or -errno. */
static int gmem_qemu_id(int n, unsigned int *id)
{
	char addr[64];
	unsigned int busno;
	int ret;

	/* run-vm.sh puts device gmemI behind root port I, which q35 numbers bus I + 1. */
	ret = gmem_pci_addr(n, addr, sizeof(addr));
	if (ret)
		return ret;
	if (sscanf(addr, "%*x:%x:", &busno) != 1 || busno < 1)
		return -ENODEV;
	*id = busno - 1;
	return 0;
}

/* Member "@key": N of the flat JSON object text @obj, in *@val. */
static bool gmem_json_u64(const char *obj, const char *key, unsigned long long *val)
{
	char pat[64];
	const char *q;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	q = strstr(obj, pat);
	return q && sscanf(q + strlen(pat), "%llu", val) == 1;
}

/*
 * QOM @verb ("get" or "set") of @property (with @value for a set) of the QEMU device behind
 * /dev/gmem_accel@n, over the host's QMP relay; its reply line in @reply. 0, -EINVAL if QEMU
 * answered with an error (in @reply), or -errno if there is no host to ask.
 */
static int gmem_qom(int n, const char *verb, const char *property, const char *value,
		    char *reply, size_t len)
{
	char json[512];
	unsigned int id;
	int ret;

	ret = gmem_qemu_id(n, &id);
	if (ret)
		return ret;
	snprintf(json, sizeof(json),
		 "{\"execute\": \"qom-%s\", \"arguments\": {\"path\": "
		 "\"/machine/peripheral/gmem%u\", \"property\": \"%s\"%s%s%s}}", verb, id,
		 property, value ? ", \"value\": \"" : "", value ? value : "", value ? "\"" : "");
	ret = host_qmp(json, reply, len);
	if (ret)
		return ret;
	return strstr(reply, "\"return\"") ? 0 : -EINVAL;
}

/*
 * Call @fn on each flat JSON object (no object inside it) of @reply, as text, until it
 * returns false. Every run the monitor reports is one.
 */
static void gmem_json_objects(const char *reply, bool (*fn)(const char *obj, void *opaque),
			      void *opaque)
{
	for (const char *p = strchr(reply, '{'); p; p = strchr(p + 1, '{')) {
		const char *end = strpbrk(p + 1, "{}");
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char obj[1024];

		if (!end || *end == '{' || len >= sizeof(obj))
			continue;
		memcpy(obj, p, len);
		obj[len] = '\0';
		if (!fn(obj, opaque))
			return;
	}
}

struct gmem_page_size_find {
	uint64_t va;
	int64_t result;
};

static bool gmem_page_size_of_run(const char *run, void *opaque)
{
	struct gmem_page_size_find *f = opaque;
	unsigned long long rva, rsize, ps;

	if (!gmem_json_u64(run, "va", &rva) || !gmem_json_u64(run, "size", &rsize) ||
	    f->va < rva || f->va >= rva + rsize)
		return true;
	f->result = gmem_json_u64(run, "page-size", &ps) ? (int64_t)ps : -EINVAL;
	return false;
}

int64_t gmem_monitor_page_size(int n, unsigned int ctx, uint64_t va)
{
	static char reply[1 << 20];
	struct gmem_page_size_find f = { .va = va };
	char property[32];
	int ret;

	snprintf(property, sizeof(property), "page-table[%u]", ctx);
	ret = gmem_qom(n, "get", property, NULL, reply, sizeof(reply));
	if (ret)
		return ret;
	gmem_json_objects(reply, gmem_page_size_of_run, &f);
	return f.result;
}

struct gmem_view_fill {
	uint64_t va;
	size_t npages;
	uint8_t *out;
	int runs;
};

/* One run of the monitor's page table, as SNAPSHOT's GMEM_ACCEL_PAGE_* of each of its pages. */
static bool gmem_view_of_run(const char *run, void *opaque)
{
	struct gmem_view_fill *f = opaque;
	unsigned long long rva, rsize, ps;
	uint8_t flags = 0;

	if (!gmem_json_u64(run, "va", &rva) || !gmem_json_u64(run, "size", &rsize))
		return true;
	if (strstr(run, "\"error\"") || !gmem_json_u64(run, "page-size", &ps)) {
		f->runs = -EIO;		/* a malformed entry: the test fails */
		return false;
	}
	flags |= strstr(run, "\"read\": true") ? GMEM_ACCEL_PAGE_READ : 0;
	flags |= strstr(run, "\"write\": true") ? GMEM_ACCEL_PAGE_WRITE : 0;
	flags |= ps == 2ull << 20 ? GMEM_ACCEL_PAGE_2M : 0;
	flags |= ps == 64ull << 10 ? GMEM_ACCEL_PAGE_64K : 0;
	flags |= strstr(run, "\"target-in\": \"hbm\"") ? GMEM_ACCEL_PAGE_HBM : 0;
	for (uint64_t a = rva; a < rva + rsize; a += 4096)
		if (a >= f->va && a < f->va + f->npages * 4096)
			f->out[(a - f->va) / 4096] = flags;
	f->runs++;
	return true;
}

int gmem_monitor_view(int n, unsigned int ctx, uint64_t va, size_t npages, uint8_t *out)
{
	static char reply[1 << 20];
	struct gmem_view_fill f = { .va = va, .npages = npages, .out = out };
	char property[32];
	int ret;

	memset(out, 0, npages);
	snprintf(property, sizeof(property), "page-table[%u]", ctx);
	ret = gmem_qom(n, "get", property, NULL, reply, sizeof(reply));
	if (ret)
		return ret;
	if (!strstr(reply, "\"dump\": \"complete\""))
		return -E2BIG;		/* (a truncated dump) */
	gmem_json_objects(reply, gmem_view_of_run, &f);
	return f.runs;
}

struct gmem_hbm_find {
	uint64_t hbm;
	struct gmem_hbm_use *out;
	int max, n;
};

static bool gmem_hbm_use_of(const char *m, void *opaque)
{
	struct gmem_hbm_find *f = opaque;
	unsigned long long hbm, size, ps, va, ctx;

	if (!gmem_json_u64(m, "hbm", &hbm) || !gmem_json_u64(m, "size", &size) ||
	    !gmem_json_u64(m, "page-size", &ps) || !gmem_json_u64(m, "va", &va) ||
	    !gmem_json_u64(m, "context", &ctx) || f->hbm < hbm || f->hbm >= hbm + size)
		return true;
	if (f->n < f->max)
		f->out[f->n] = (struct gmem_hbm_use) {
			.hbm = hbm, .size = size, .page_size = ps, .va = va, .context = ctx,
		};
	f->n++;
	return true;
}

int gmem_monitor_hbm_users(int n, uint64_t hbm, struct gmem_hbm_use *out, int max)
{
	static char reply[1 << 20];
	struct gmem_hbm_find f = { .hbm = hbm, .out = out, .max = max };
	int ret = gmem_qom(n, "get", "hbm-map", NULL, reply, sizeof(reply));

	if (ret)
		return ret;
	gmem_json_objects(reply, gmem_hbm_use_of, &f);
	return f.n;
}

int gmem_inject(int n, const char *what)
{
	char reply[1024];
	int ret = gmem_qom(n, "set", "inject", what, reply, sizeof(reply));

	if (ret == -EINVAL)
		fprintf(stderr, "# inject %s into gmem_accel%d: %s\n", what, n, reply);
	return ret;
}

int gmem_kernel_log_count(const char *needle)
{
	int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0), n = 0;
	char *buf = len > 0 ? malloc(len + 1) : NULL;

	if (!buf)
		return -1;
	len = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, len);
	buf[len > 0 ? len : 0] = '\0';
	for (char *p = buf; (p = strstr(p, needle)); p++)
		n++;
	free(buf);
	return n;
}
