// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: PCI binding, device identification and /dev/gmem_accelN life cycle.
 */
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "gmem_accel.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_hbm.h"
#include "gmem_accel_migrate.h"
#include "gmem_accel_dmirror.h"
#include "gmem_accel_drm.h"
#include "gmem_accel_obj.h"
#define CREATE_TRACE_POINTS
#include "gmem_accel_trace.h"

static dev_t gmem_accel_devt;
static DEFINE_IDA(gmem_accel_minors);

static const struct class gmem_accel_class = {
	.name = GMEM_ACCEL_NAME,
};
/* A module parameter set at load time walks the devices before the class exists. */
static bool gmem_accel_class_registered;

/*
 * Which front end has each device, by number (gmem_accelN): "gmem" (the default,
 * /dev/gmem_accelN and /dev/gmem_dmirrorN) or "drm" (/dev/accel/accelM, on a kernel with
 * drm_gpusvm). Read when the device is bound: a device moves to the other one when unbound
 * and bound again.
 */
static char *frontend[GMEM_ACCEL_MAX_DEVICES];
module_param_array(frontend, charp, NULL, 0644);
MODULE_PARM_DESC(frontend, "front end of device N, by N: gmem (default) or drm (DRM accel, /dev/accel; kernels with CONFIG_DRM_GPUSVM)");

/* Does device @minor go to the DRM front end? 1, 0, or -EINVAL for a value not known. */
static int gmem_frontend_is_drm(struct pci_dev *pdev, int minor)
{
	int ret = 0;

	kernel_param_lock(THIS_MODULE);
	if (frontend[minor] && !strcmp(frontend[minor], "drm"))
		ret = 1;
	else if (frontend[minor] && *frontend[minor] && strcmp(frontend[minor], "gmem"))
		ret = -EINVAL;
	kernel_param_unlock(THIS_MODULE);
	if (ret < 0)
		pci_err(pdev, "frontend for device %d: give gmem or drm\n", minor);
	if (ret > 0 && !IS_ENABLED(CONFIG_DRM_GPUSVM)) {
		pci_err(pdev, "frontend=drm for device %d: this kernel has no CONFIG_DRM_GPUSVM (Linux 7.3 built from images/kernel-7.3.config has)\n",
			minor);
		ret = -EOPNOTSUPP;
	}
	return ret;
}

static void gmem_accel_release(struct device *dev)
{
	struct gmem_accel *g = to_gmem_accel(dev);

	ida_free(&gmem_accel_minors, g->info.minor);
	ida_destroy(&g->ctx_ids);
	gmem_obj_dev_fini(g);
	gmem_migration_spares_free(g);
	kfree(g);
}

static int gmem_param_range_set(const char *val, const struct kernel_param *kp)
{
	const struct gmem_param_range *r = kp->arg;
	unsigned int v;

	if (kstrtouint(val, 0, &v) || v < r->min || v > r->max)
		return -EINVAL;
	WRITE_ONCE(*r->val, v);
	if (r->changed)
		r->changed();
	return 0;
}

static int gmem_param_range_get(char *buf, const struct kernel_param *kp)
{
	const struct gmem_param_range *r = kp->arg;

	return sysfs_emit(buf, "%u\n", READ_ONCE(*r->val));
}

const struct kernel_param_ops gmem_param_range_ops = {
	.set = gmem_param_range_set,
	.get = gmem_param_range_get,
};

/* Call @fn on each gmem-accel class device (referenced meanwhile) until it returns nonzero. */
int gmem_walk_devices(void *data, gmem_device_fn fn)
{
	if (!READ_ONCE(gmem_accel_class_registered))
		return 0;
	return class_for_each_device(&gmem_accel_class, NULL, data, fn);
}

/* Check that BAR0 is a gmem-accel this driver speaks to, and read its identity. */
static int gmem_accel_identify(struct gmem_accel *g)
{
	struct pci_dev *pdev = g->pdev;
	u32 id = gmem_read(g, GMEM_REG_ID);
	u32 version = gmem_read(g, GMEM_REG_VERSION);
	u64 hbm_size;

	if (id != GMEM_ID_MAGIC) {
		pci_err(pdev, "BAR0 ID register reads %#x, expected %#x\n", id, GMEM_ID_MAGIC);
		return -ENODEV;
	}
	if (GMEM_VERSION_MAJOR_OF(version) != GMEM_VERSION_MAJOR ||
	    GMEM_VERSION_MINOR_OF(version) < 10) {
		pci_err(pdev, "hardware version %u.%u, driver speaks %u.10 and later (a doorbell that holds its faults' interrupt): use the QEMU built with this driver\n",
			GMEM_VERSION_MAJOR_OF(version), GMEM_VERSION_MINOR_OF(version),
			GMEM_VERSION_MAJOR);
		return -ENODEV;
	}
	hbm_size = gmem_read(g, GMEM_REG_HBM_SIZE_LO) |
		   (u64)gmem_read(g, GMEM_REG_HBM_SIZE_HI) << 32;
	if (hbm_size != pci_resource_len(pdev, GMEM_BAR_HBM)) {
		pci_err(pdev, "HBM_SIZE register %#llx disagrees with BAR%d size %#llx\n",
			hbm_size, GMEM_BAR_HBM,
			(u64)pci_resource_len(pdev, GMEM_BAR_HBM));
		return -ENODEV;
	}
	if (!(gmem_read(g, GMEM_REG_STATUS) & GMEM_STATUS_READY)) {
		pci_err(pdev, "device not ready (STATUS %#x)\n", gmem_read(g, GMEM_REG_STATUS));
		return -EIO;
	}

	g->info.vendor_id = pdev->vendor;
	g->info.device_id = pdev->device;
	g->info.revision = pdev->revision;
	g->info.version = version;
	g->info.caps = gmem_read(g, GMEM_REG_CAP);
	g->info.hbm_size = hbm_size;
	return 0;
}

static int gmem_accel_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct gmem_accel *g;
	int minor, nvec, ret, drm;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;

	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return -ENOMEM;
	g->pdev = pdev;
	init_rwsem(&g->lock);
	mutex_init(&g->obj_lock);
	INIT_LIST_HEAD(&g->objs);

	g->regs = pcim_iomap_region(pdev, GMEM_BAR_REGS, GMEM_ACCEL_NAME);
	if (IS_ERR(g->regs)) {
		ret = PTR_ERR(g->regs);
		pci_err(pdev, "cannot map BAR%d: %d\n", GMEM_BAR_REGS, ret);
		goto err_free;
	}
	ret = gmem_accel_identify(g);
	if (ret)
		goto err_free;

	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		goto err_free;
	/* A window's pages map as one list (gmem_map_sys_window()); a COPY takes up to 4 GiB. */
	dma_set_max_seg_size(&pdev->dev, UINT_MAX);
	pci_set_master(pdev);

	/* Managed by pcim_enable_device(): freed on unbind. */
	nvec = pci_alloc_irq_vectors(pdev, GMEM_MSIX_VECTORS, GMEM_MSIX_VECTORS, PCI_IRQ_MSIX);
	if (nvec < 0) {
		ret = nvec;
		pci_err(pdev, "cannot enable %d MSI-X vectors: %d\n", GMEM_MSIX_VECTORS, ret);
		goto err_free;
	}
	g->info.num_vectors = nvec;
	ret = gmem_hw_init(g);
	if (ret) {
		pci_err(pdev, "cannot set up the device's rings: %d\n", ret);
		goto err_free;
	}
	minor = ida_alloc_max(&gmem_accel_minors, GMEM_ACCEL_MAX_DEVICES - 1, GFP_KERNEL);
	if (minor < 0) {
		ret = minor;
		goto err_hw;
	}
	g->info.minor = minor;
	/* A device of the DRM front end has its HBM through drm_pagemap instead. */
	drm = gmem_frontend_is_drm(pdev, minor);
	g->hbm_drm = drm > 0;

	g->hbm_bar = pci_resource_start(pdev, GMEM_BAR_HBM);
	ret = gmem_hbm_init(g);
	if (ret)	/* shared virtual memory still works, in system memory */
		pci_warn(pdev, "HBM not usable as device memory, no migration: %d\n", ret);

	/* From here the struct device's refcount owns g (and the minor). */
	device_initialize(&g->dev);
	g->dev.class = &gmem_accel_class;
	g->dev.parent = &pdev->dev;
	g->dev.devt = MKDEV(MAJOR(gmem_accel_devt), minor);
	g->dev.groups = gmem_accel_groups;
	g->dev.release = gmem_accel_release;
	dev_set_drvdata(&g->dev, g);
	ret = dev_set_name(&g->dev, GMEM_ACCEL_NAME "%d", minor);
	if (ret)
		goto err_put;
	ret = gmem_obj_dev_init(g);
	if (ret)
		goto err_put;

	if (drm < 0) {
		ret = drm;
		goto err_put;
	}
	if (drm) {
		/* (the identity in sysfs and the statistics in debugfs stay gmem_accelN's) */
		g->dev.devt = 0;
		ret = device_add(&g->dev);
		if (ret)
			goto err_put;
		ret = gmem_drm_add(g);
		if (ret) {
			device_del(&g->dev);
			goto err_put;
		}
	} else {
		cdev_init(&g->cdev, &gmem_accel_fops);
		g->cdev.owner = THIS_MODULE;
		ret = cdev_device_add(&g->cdev, &g->dev);
		if (ret)
			goto err_put;
	}

	pci_set_drvdata(pdev, g);
	gmem_debugfs_add(g);
	if (!drm)
		gmem_dmirror_add(g);
	gmem_watchdog_start(g);
	pci_info(pdev, "%s: version %u.%u, HBM %llu MiB, caps %#x, %d MSI-X vectors\n",
		 dev_name(&g->dev), GMEM_VERSION_MAJOR_OF(g->info.version),
		 GMEM_VERSION_MINOR_OF(g->info.version), g->info.hbm_size >> 20,
		 g->info.caps, nvec);
	return 0;

err_put:
	gmem_hbm_fini(g);
	gmem_hw_fini(g);
	put_device(&g->dev);
	return ret;
err_hw:
	gmem_hbm_fini(g);
	gmem_hw_fini(g);
err_free:
	kfree(g);
	return ret;
}

static void gmem_accel_remove(struct pci_dev *pdev)
{
	struct gmem_accel *g = pci_get_drvdata(pdev);

	/*
	 * Processes waiting in an ioctl stop (-ENODEV) and let go of the lock, and no call
	 * starts any more: once the node is gone, an open file's calls all fail.
	 */
	WRITE_ONCE(g->unbinding, true);
	cancel_delayed_work_sync(&g->watchdog);
	for (unsigned int i = 0; i < GMEM_NUM_QUEUES; i++)
		wake_up_all(&g->queue[i].wq);
	/* No CPU or device mapping reaches its HBM objects any more. */
	gmem_obj_dev_unbind(g);
	if (g->drm) {
		gmem_drm_unplug(g);
		device_del(&g->dev);
	} else {
		gmem_dmirror_remove(g);
		cdev_device_del(&g->cdev, &g->dev);
	}
	gmem_debugfs_remove(g);
	/* Files still open keep g alive but must not touch the device any more. */
	down_write(&g->lock);
	/* No migration runs now to queue it again; it stops at the next chunk (unbinding). */
	cancel_work_sync(&g->evict_work);
	/*
	 * Processes' commands still running stop here (the device drops them), before their
	 * contexts are disabled under them; queue 0 stays for moving HBM pages home.
	 */
	for (unsigned int i = 1; i < GMEM_NUM_QUEUES; i++)
		gmem_write(g, GMEM_REG_QUEUE(i, GMEM_CQ_CTRL), 0);
	for (unsigned int i = 0; i < GMEM_NUM_CONTEXTS; i++) {
		struct gmem_ctx *ctx = g->ctx[i];

		if (ctx)
			gmem_ctx_shutdown(ctx);
	}
	gmem_managed_dev_unbind(g);	/* managed objects' HBM copies, home */
	gmem_dpm_unbind(g);	/* the DRM front end's HBM pages, home */
	gmem_hbm_evict_all(g);	/* the device copies every page out */
	gmem_hbm_fini(g);
	gmem_hw_fini(g);
	g->pdev = NULL;
	g->regs = NULL;
	up_write(&g->lock);
	put_device(&g->dev);
}

static const struct pci_device_id gmem_accel_ids[] = {
	{ PCI_DEVICE(GMEM_PCI_VENDOR_ID, GMEM_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, gmem_accel_ids);

static struct pci_driver gmem_accel_driver = {
	.name = GMEM_ACCEL_NAME,
	.id_table = gmem_accel_ids,
	.probe = gmem_accel_probe,
	.remove = gmem_accel_remove,
};

static int __init gmem_accel_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&gmem_accel_devt, 0, GMEM_ACCEL_MAX_DEVICES, GMEM_ACCEL_NAME);
	if (ret)
		return ret;
	gmem_debugfs_init();
	ret = class_register(&gmem_accel_class);
	if (ret)
		goto err_region;
	WRITE_ONCE(gmem_accel_class_registered, true);
	ret = gmem_dmirror_init();
	if (ret)
		goto err_class;
	ret = pci_register_driver(&gmem_accel_driver);
	if (ret)
		goto err_dmirror;
	return 0;

err_dmirror:
	gmem_dmirror_exit();
err_class:
	WRITE_ONCE(gmem_accel_class_registered, false);
	class_unregister(&gmem_accel_class);
err_region:
	gmem_debugfs_exit();
	unregister_chrdev_region(gmem_accel_devt, GMEM_ACCEL_MAX_DEVICES);
	return ret;
}

static void __exit gmem_accel_exit(void)
{
	pci_unregister_driver(&gmem_accel_driver);
	gmem_dpm_exit();
	gmem_dmirror_exit();
	WRITE_ONCE(gmem_accel_class_registered, false);
	class_unregister(&gmem_accel_class);
	gmem_debugfs_exit();
	unregister_chrdev_region(gmem_accel_devt, GMEM_ACCEL_MAX_DEVICES);
}

module_init(gmem_accel_init);
module_exit(gmem_accel_exit);
MODULE_DESCRIPTION("gmem-accel heterogeneous-memory accelerator");
MODULE_LICENSE("GPL");
