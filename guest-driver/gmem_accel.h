/* SPDX-License-Identifier: GPL-2.0 */
/* gmem-accel driver: state shared by the driver's files. */
#ifndef GMEM_ACCEL_H
#define GMEM_ACCEL_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/pci.h>
#include <linux/rwsem.h>

#include "gmem_accel_hw.h"
#include "gmem_accel_uapi.h"

#define GMEM_ACCEL_NAME "gmem_accel"
#define GMEM_ACCEL_MAX_DEVICES 64

/**
 * struct gmem_accel - one bound device
 * @dev:        the class device behind /dev/gmem_accelN; its refcount owns this struct
 * @cdev:       character device
 * @pdev:       PCI device, NULL once unbound (open files then get -ENODEV)
 * @regs:       BAR0 registers, valid while @pdev is set
 * @lock:       taken for read by file operations, for write by unbind
 * @info:       identity read from the registers at probe
 */
struct gmem_accel {
	struct device dev;
	struct cdev cdev;
	struct pci_dev *pdev;
	void __iomem *regs;
	struct rw_semaphore lock;
	struct gmem_accel_info info;
};

static inline struct gmem_accel *to_gmem_accel(struct device *dev)
{
	return container_of(dev, struct gmem_accel, dev);
}

static inline u32 gmem_read(struct gmem_accel *g, u32 reg)
{
	return readl(g->regs + reg);
}

static inline void gmem_write(struct gmem_accel *g, u32 reg, u32 val)
{
	writel(val, g->regs + reg);
}

extern const struct file_operations gmem_accel_fops;
extern const struct attribute_group *gmem_accel_groups[];

#endif /* GMEM_ACCEL_H */
