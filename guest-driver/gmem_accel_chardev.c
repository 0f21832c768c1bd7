// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: /dev/gmem_accelN file operations and ioctls.
 */
#include <linux/fs.h>
#include <linux/uaccess.h>

#include "gmem_accel.h"

static int gmem_accel_open(struct inode *inode, struct file *file)
{
	struct gmem_accel *g = container_of(inode->i_cdev, struct gmem_accel, cdev);

	get_device(&g->dev);
	file->private_data = g;
	return 0;
}

static int gmem_accel_release_file(struct inode *inode, struct file *file)
{
	struct gmem_accel *g = file->private_data;

	put_device(&g->dev);
	return 0;
}

static long gmem_accel_get_info(struct gmem_accel *g, void __user *uarg)
{
	struct gmem_accel_info info;

	if (copy_from_user(&info, uarg, sizeof(info)))
		return -EFAULT;
	if (info.flags)
		return -EINVAL;
	info = g->info;
	if (copy_to_user(uarg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static long gmem_accel_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct gmem_accel *g = file->private_data;
	void __user *uarg = (void __user *)arg;
	long ret;

	down_read(&g->lock);
	if (!g->pdev) {
		ret = -ENODEV;	/* unbound while open */
		goto out;
	}
	switch (cmd) {
	case GMEM_ACCEL_IOC_GET_INFO:
		ret = gmem_accel_get_info(g, uarg);
		break;
	default:
		ret = -ENOTTY;
		break;
	}
out:
	up_read(&g->lock);
	return ret;
}

const struct file_operations gmem_accel_fops = {
	.owner = THIS_MODULE,
	.open = gmem_accel_open,
	.release = gmem_accel_release_file,
	.unlocked_ioctl = gmem_accel_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};
