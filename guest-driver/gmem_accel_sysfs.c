// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: device identity in sysfs, /sys/class/gmem_accel/gmem_accelN/.
 */
#include <linux/sysfs.h>

#include "gmem_accel.h"
#include "gmem_accel_migrate.h"

static ssize_t hbm_size_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", to_gmem_accel(dev)->info.hbm_size);
}
static DEVICE_ATTR_RO(hbm_size);

static ssize_t version_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	u32 v = to_gmem_accel(dev)->info.version;

	return sysfs_emit(buf, "%u.%u\n", GMEM_VERSION_MAJOR_OF(v), GMEM_VERSION_MINOR_OF(v));
}
static DEVICE_ATTR_RO(version);

static ssize_t capabilities_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%#x\n", to_gmem_accel(dev)->info.caps);
}
static DEVICE_ATTR_RO(capabilities);

static ssize_t num_vectors_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_gmem_accel(dev)->info.num_vectors);
}
static DEVICE_ATTR_RO(num_vectors);

/*
 * 1 if a THP moves to HBM and back whole, as one 2 MiB folio: the kernel allows it (7.3), into
 * device-private HBM (gmem_thp_migration_possible()), and it was not turned off here (0: page
 * by page, as on 6.12; for an unpatched 7.3.4, docs/architecture.md "Two kernels").
 */
static ssize_t thp_migration_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct gmem_accel *g = to_gmem_accel(dev);

	return sysfs_emit(buf, "%d\n", gmem_thp_migration_possible(g) &&
			  !READ_ONCE(g->thp_migration_off));
}

static ssize_t thp_migration_store(struct device *dev, struct device_attribute *attr,
				   const char *buf, size_t count)
{
	struct gmem_accel *g = to_gmem_accel(dev);
	bool on;
	int ret = kstrtobool(buf, &on);

	if (ret)
		return ret;
	if (on && !gmem_thp_migration_possible(g))
		return -EOPNOTSUPP;	/* 6.12, or coherent HBM */
	WRITE_ONCE(g->thp_migration_off, !on);
	return count;
}
static DEVICE_ATTR_RW(thp_migration);

static struct attribute *gmem_accel_attrs[] = {
	&dev_attr_hbm_size.attr,
	&dev_attr_version.attr,
	&dev_attr_capabilities.attr,
	&dev_attr_num_vectors.attr,
	&dev_attr_thp_migration.attr,
	NULL,
};

static const struct attribute_group gmem_accel_group = {
	.attrs = gmem_accel_attrs,
};

const struct attribute_group *gmem_accel_groups[] = {
	&gmem_accel_group,
	NULL,
};
