// SPDX-License-Identifier: GPL-2.0
/*
 * The devices QEMU was given are found, bound and described truthfully: PCI identity, config
 * space capabilities, BARs, MSI-X, and the driver's ioctl and sysfs views of the registers.
 * Expected values come from the host (scripts/run-vm.sh puts them on the kernel command line).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <dirent.h>

#include "kselftest_harness.h"
#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"
#include "gmem_test_util.h"

#define PCI_EXT_CAP_ID_ATS   0x0f
#define PCI_EXT_CAP_ID_PRI   0x13
#define PCI_EXT_CAP_ID_PASID 0x1b
#define IORESOURCE_PREFETCH  0x00002000
#define IORESOURCE_MEM_64    0x00100000

static unsigned int char_major(const char *name)
{
	char line[128], dev[64];
	unsigned int major = 0, m;
	FILE *f = fopen("/proc/devices", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%u %63s", &m, dev) == 2 && !strcmp(dev, name)) {
			major = m;
			break;
		}
	fclose(f);
	return major;
}

/* Offset of extended capability @id in a 4 KiB config space dump, or 0. */
static unsigned int find_ext_cap(const uint8_t *cfg, unsigned int id)
{
	unsigned int off = 0x100, hops = 0;

	while (off >= 0x100 && off < 4096 - 4 && hops++ < 64) {
		uint32_t hdr;

		memcpy(&hdr, cfg + off, 4);
		if ((hdr & 0xffff) == id)
			return off;
		off = hdr >> 20;
	}
	return 0;
}

static int read_config(const char *addr, uint8_t *cfg)
{
	char path[PATH_MAX];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", addr);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = pread(fd, cfg, 4096, 0);
	close(fd);
	return n == 4096 ? 0 : -EIO;
}

static int get_info(int n, struct gmem_accel_info *info)
{
	int fd = gmem_open(n, O_RDWR), ret;

	if (fd < 0)
		return -errno;
	memset(info, 0, sizeof(*info));
	ret = ioctl(fd, GMEM_ACCEL_IOC_GET_INFO, info) ? -errno : 0;
	close(fd);
	return ret;
}

/* Tests that need no fixture (a timeout needs one). */
GMEM_PLAIN_FIXTURE(device)

TEST_F_TIMEOUT(device, every_device_bound_with_a_node, 60)
{
	char addr[GMEM_MAX_TEST_DEVICES][32], path[PATH_MAX], link[PATH_MAX], pci[32];
	int expected = gmem_expect("devices", 1);
	unsigned int major = char_major("gmem_accel");
	int n = gmem_pci_devices(addr, GMEM_MAX_TEST_DEVICES);
	struct stat st;

	ASSERT_EQ(expected, n) TH_LOG("QEMU was given %d devices, PCI shows %d", expected, n);
	ASSERT_NE(0, major) TH_LOG("no gmem_accel in /proc/devices");
	for (int i = 0; i < n; i++) {
		ssize_t r;

		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", addr[i]);
		r = readlink(path, link, sizeof(link) - 1);
		ASSERT_LT(0, r) TH_LOG("%s has no driver bound", addr[i]);
		link[r] = '\0';
		EXPECT_STREQ("gmem_accel", basename(link));

		snprintf(path, sizeof(path), "/dev/gmem_accel%d", i);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s: %s", path, strerror(errno));
		EXPECT_TRUE(S_ISCHR(st.st_mode));
		EXPECT_EQ(major, major(st.st_rdev));
		EXPECT_EQ(i, (int)minor(st.st_rdev));
		/* Minors follow PCI order because devices probe in bus order. */
		ASSERT_EQ(0, gmem_pci_addr(i, pci, sizeof(pci)));
		EXPECT_STREQ(addr[i], pci);
	}
	snprintf(path, sizeof(path), "/dev/gmem_accel%d", n);
	EXPECT_FALSE(path_exists(path));
}

TEST_F_TIMEOUT(device, ioctl_info_matches_qemu, 60)
{
	uint64_t hbm = gmem_expect("hbm_size", 256ull << 20);
	int n = gmem_expect("devices", 1);

	for (int i = 0; i < n; i++) {
		struct gmem_accel_info info;

		ASSERT_EQ(0, get_info(i, &info));
		EXPECT_EQ(GMEM_PCI_VENDOR_ID, info.vendor_id);
		EXPECT_EQ(GMEM_PCI_DEVICE_ID, info.device_id);
		EXPECT_EQ(GMEM_PCI_REVISION, info.revision);
		EXPECT_EQ(i, (int)info.minor);
		EXPECT_EQ(GMEM_VERSION, info.version);
		EXPECT_EQ(hbm, info.hbm_size);
		EXPECT_EQ(GMEM_MSIX_VECTORS, info.num_vectors);
		EXPECT_EQ(0, info.flags);
		EXPECT_EQ(GMEM_CAP_HBM, info.caps & GMEM_CAP_HBM);
		EXPECT_EQ(0, info.caps & ~GMEM_CAP_KNOWN_MASK);
	}
}

TEST_F_TIMEOUT(device, sysfs_matches_ioctl, 60)
{
	int n = gmem_expect("devices", 1);

	for (int i = 0; i < n; i++) {
		struct gmem_accel_info info;
		char path[PATH_MAX], buf[64], want[64];
		uint64_t v;

		ASSERT_EQ(0, get_info(i, &info));
		snprintf(path, sizeof(path), "/sys/class/gmem_accel/gmem_accel%d/hbm_size", i);
		ASSERT_EQ(0, read_sysfs_u64(path, &v));
		EXPECT_EQ(info.hbm_size, v);
		snprintf(path, sizeof(path), "/sys/class/gmem_accel/gmem_accel%d/capabilities", i);
		ASSERT_EQ(0, read_sysfs_u64(path, &v));
		EXPECT_EQ(info.caps, v);
		snprintf(path, sizeof(path), "/sys/class/gmem_accel/gmem_accel%d/num_vectors", i);
		ASSERT_EQ(0, read_sysfs_u64(path, &v));
		EXPECT_EQ(info.num_vectors, v);
		snprintf(path, sizeof(path), "/sys/class/gmem_accel/gmem_accel%d/version", i);
		ASSERT_EQ(0, read_sysfs(path, buf, sizeof(buf)));
		snprintf(want, sizeof(want), "%u.%u", GMEM_VERSION_MAJOR, GMEM_VERSION_MINOR);
		EXPECT_STREQ(want, buf);
	}
}

TEST_F_TIMEOUT(device, pci_config_space, 60)
{
	char addr[GMEM_MAX_TEST_DEVICES][32];
	int n = gmem_pci_devices(addr, GMEM_MAX_TEST_DEVICES);
	uint8_t cfg[4096];

	ASSERT_LT(0, n);
	for (int i = 0; i < n; i++) {
		struct gmem_accel_info info;
		unsigned int ats, pasid, pri;
		uint32_t class = 0, max_req;
		uint16_t pasid_cap, msix_ctrl;

		ASSERT_EQ(0, read_config(addr[i], cfg))
			TH_LOG("%s: extended config space not readable (MMCONFIG?)", addr[i]);
		ASSERT_EQ(0, get_info(i, &info));
		memcpy(&class, cfg + 0x09, 3);
		EXPECT_EQ(GMEM_PCI_CLASS_CODE << 8, class);

		ats = find_ext_cap(cfg, PCI_EXT_CAP_ID_ATS);
		pasid = find_ext_cap(cfg, PCI_EXT_CAP_ID_PASID);
		pri = find_ext_cap(cfg, PCI_EXT_CAP_ID_PRI);
		/* The CAP register tells the driver the same story as config space... */
		EXPECT_EQ(!!ats, !!(info.caps & GMEM_CAP_ATS));
		EXPECT_EQ(!!pasid, !!(info.caps & GMEM_CAP_PASID));
		EXPECT_EQ(!!pri, !!(info.caps & GMEM_CAP_PRI));
		/* ...and they sit where the spec packs them (run-vm.sh enables all three). */
		EXPECT_EQ(GMEM_CFG_EXT_CAP_BASE, ats);
		EXPECT_EQ(GMEM_CFG_EXT_CAP_BASE + GMEM_CFG_EXT_CAP_STRIDE, pasid);
		EXPECT_EQ(GMEM_CFG_EXT_CAP_BASE + 2 * GMEM_CFG_EXT_CAP_STRIDE, pri);
		if (pasid) {
			memcpy(&pasid_cap, cfg + pasid + 4, 2);
			EXPECT_EQ(GMEM_PASID_WIDTH, (pasid_cap >> 8) & 0x1f);
		}
		if (pri) {
			memcpy(&max_req, cfg + pri + 8, 4);
			EXPECT_EQ(GMEM_PRI_MAX_REQUESTS, max_req);
		}
		/* MSI-X enabled by the driver (Message Control bit 15). */
		memcpy(&msix_ctrl, cfg + GMEM_CFG_MSIX_OFFSET + 2, 2);
		EXPECT_EQ(0x11, cfg[GMEM_CFG_MSIX_OFFSET]);
		EXPECT_EQ(GMEM_MSIX_VECTORS - 1, msix_ctrl & 0x7ff);
		EXPECT_TRUE(msix_ctrl & 0x8000);
	}
}

TEST_F_TIMEOUT(device, hbm_bar_is_64bit_prefetchable, 60)
{
	char addr[GMEM_MAX_TEST_DEVICES][32], path[PATH_MAX], line[256];
	uint64_t hbm = gmem_expect("hbm_size", 256ull << 20);
	int n = gmem_pci_devices(addr, GMEM_MAX_TEST_DEVICES);

	ASSERT_LT(0, n);
	for (int i = 0; i < n; i++) {
		unsigned long long start, end, flags;
		FILE *f;

		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", addr[i]);
		f = fopen(path, "r");
		ASSERT_NE(NULL, f);
		for (int bar = 0; bar <= GMEM_BAR_HBM; bar++)
			ASSERT_NE(NULL, fgets(line, sizeof(line), f));
		fclose(f);
		ASSERT_EQ(3, sscanf(line, "%llx %llx %llx", &start, &end, &flags));
		EXPECT_NE(0, start) TH_LOG("BAR%d of %s is unassigned", GMEM_BAR_HBM, addr[i]);
		EXPECT_EQ(hbm, end - start + 1);
		EXPECT_TRUE(flags & IORESOURCE_PREFETCH);
		EXPECT_TRUE(flags & IORESOURCE_MEM_64);
	}
}

TEST_F_TIMEOUT(device, msix_vectors_allocated, 60)
{
	char addr[GMEM_MAX_TEST_DEVICES][32], path[PATH_MAX];
	int n = gmem_pci_devices(addr, GMEM_MAX_TEST_DEVICES);

	ASSERT_LT(0, n);
	for (int i = 0; i < n; i++) {
		struct dirent *e;
		int count = 0;
		DIR *d;

		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/msi_irqs", addr[i]);
		d = opendir(path);
		ASSERT_NE(NULL, d) TH_LOG("%s: %s", path, strerror(errno));
		while ((e = readdir(d)))
			count += e->d_name[0] != '.';
		closedir(d);
		EXPECT_EQ(GMEM_MSIX_VECTORS, count);
	}
}

/*
 * With run-vm.sh's IOMMU (the default), every device sits behind it: an IOMMU group and a DMA
 * domain that translates, so each DMA mapping of the driver goes through the IOMMU.
 */
TEST_F_TIMEOUT(device, behind_the_iommu, 60)
{
	char addr[GMEM_MAX_TEST_DEVICES][32], path[PATH_MAX], type[32];
	int n = gmem_pci_devices(addr, GMEM_MAX_TEST_DEVICES);

	if (!gmem_expect("iommu", 0))
		SKIP(return, "no IOMMU asked for (run-vm.sh --no-iommu)");
	ASSERT_LT(0, n);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group/type", addr[i]);
		ASSERT_EQ(0, read_sysfs(path, type, sizeof(type))) TH_LOG("%s: no IOMMU group", addr[i]);
		EXPECT_TRUE(!strcmp(type, "DMA") || !strcmp(type, "DMA-FQ"))
			TH_LOG("%s: domain type %s", addr[i], type);
	}
}

TEST_F_TIMEOUT(device, bad_ioctls_get_clear_errnos, 60)
{
	struct gmem_accel_info info;
	int fd = gmem_open(0, O_RDWR);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, ioctl(fd, _IO(GMEM_ACCEL_IOC_MAGIC, 0x7f)));
	EXPECT_EQ(ENOTTY, errno);
	/* Same number, wrong size: a different command. */
	EXPECT_EQ(-1, ioctl(fd, _IOWR(GMEM_ACCEL_IOC_MAGIC, 0x00, uint32_t), &info));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(fd, GMEM_ACCEL_IOC_GET_INFO, NULL));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(fd, GMEM_ACCEL_IOC_GET_INFO, (void *)1));
	EXPECT_EQ(EFAULT, errno);
	memset(&info, 0, sizeof(info));
	info.flags = 1;
	EXPECT_EQ(-1, ioctl(fd, GMEM_ACCEL_IOC_GET_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
	close(fd);
}

TEST_HARNESS_MAIN
