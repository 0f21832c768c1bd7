// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: device memory objects shared as dma-bufs, the kernel's own way of
 * handing a buffer to another process (as CUDA IPC memory handles and DRM PRIME do). A
 * process exports an object as a dma-buf fd, passes it over a Unix socket (SCM_RIGHTS); the
 * other process imports it on its own file of the same device and gets a handle on the same
 * object, which it mmaps and submits commands on; on another gmem-accel device, that device
 * reaches the object over PCIe peer to peer. The dma-buf holds a reference on the
 * object, so the exporter may exit first; the memory goes with the last reference.
 */
#include <linux/dma-buf.h>
#include <linux/fcntl.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include "gmem_accel_obj.h"

GMEM_MODULE_IMPORT_NS_DMA_BUF;

/*
 * Another driver's device attaching: it would need the object's pages (or BAR2, peer to peer)
 * in a scatterlist for its own DMA. Not supported yet: it gets a clear error.
 */
static struct sg_table *gmem_dmabuf_map(struct dma_buf_attachment *attach,
					enum dma_data_direction dir)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static void gmem_dmabuf_unmap(struct dma_buf_attachment *attach, struct sg_table *sgt,
			      enum dma_data_direction dir)
{
}

static void gmem_dmabuf_release(struct dma_buf *dmabuf)
{
	gmem_obj_put(dmabuf->priv);
}

static const struct dma_buf_ops gmem_dmabuf_ops = {
	.map_dma_buf = gmem_dmabuf_map,
	.unmap_dma_buf = gmem_dmabuf_unmap,
	.release = gmem_dmabuf_release,
	/*
	 * No .mmap: an object is mapped through a device file, where eviction finds every
	 * mapping (the device's address_space); mmap() of the dma-buf fails with EINVAL.
	 */
};

/* A dma-buf of @obj, holding a reference of its own; ERR_PTR (EOPNOTSUPP: managed). */
struct dma_buf *gmem_obj_dmabuf(struct gmem_obj *obj)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct dma_buf *dmabuf;

	if (gmem_obj_is_managed(obj))	/* its pages move: no other device reaches them */
		return ERR_PTR(-EOPNOTSUPP);
	kref_get(&obj->ref);
	info.ops = &gmem_dmabuf_ops;
	info.size = obj->size;
	info.flags = O_RDWR;
	info.priv = obj;
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf))
		gmem_obj_put(obj);
	return dmabuf;
}

/*
 * The object @dmabuf shares, referenced, for device @g (another gmem-accel device's: reached
 * peer to peer); ERR_PTR (EOPNOTSUPP: another driver's buffer).
 */
struct gmem_obj *gmem_obj_from_dmabuf(struct dma_buf *dmabuf, struct gmem_accel *g)
{
	struct gmem_obj *obj = dmabuf->priv;
	int ret;

	if (dmabuf->ops != &gmem_dmabuf_ops)
		return ERR_PTR(-EOPNOTSUPP);
	if (obj->g != g) {
		ret = gmem_obj_add_peer(obj, g);
		if (ret)
			return ERR_PTR(ret);
	}
	kref_get(&obj->ref);
	return obj;
}

long gmem_obj_export(struct gmem_file *f, void __user *uarg)
{
	struct gmem_accel_obj_export e;
	struct dma_buf *dmabuf;
	struct gmem_obj *obj;
	int fd;

	if (copy_from_user(&e, uarg, sizeof(e)))
		return -EFAULT;
	if ((e.flags & ~O_CLOEXEC) || e.pad)
		return -EINVAL;
	obj = gmem_obj_lookup(f, e.handle);
	if (!obj)
		return -ENOENT;
	dmabuf = gmem_obj_dmabuf(obj);
	gmem_obj_put(obj);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	fd = dma_buf_fd(dmabuf, e.flags);
	if (fd < 0) {
		dma_buf_put(dmabuf);	/* releases the object's reference */
		return fd;
	}
	/* The fd is installed: the process owns it now, even if the copy below fails. */
	return put_user(fd, &((struct gmem_accel_obj_export __user *)uarg)->fd) ? -EFAULT : 0;
}

long gmem_obj_import(struct gmem_file *f, void __user *uarg)
{
	struct gmem_accel_obj_import im;
	struct dma_buf *dmabuf;
	struct gmem_obj *obj;
	u32 handle;
	int ret;

	if (copy_from_user(&im, uarg, sizeof(im)))
		return -EFAULT;
	if (im.flags || im.pad)
		return -EINVAL;
	dmabuf = dma_buf_get(im.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);		/* EBADF, or EINVAL: not a dma-buf */
	obj = gmem_obj_from_dmabuf(dmabuf, f->g);
	dma_buf_put(dmabuf);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	im.mmap_offset = gmem_obj_mmap_offset(obj);
	ret = gmem_obj_add_handle(f, obj, &handle);
	gmem_obj_put(obj);
	if (ret)
		return ret;
	im.handle = handle;
	if (copy_to_user(uarg, &im, sizeof(im))) {
		gmem_obj_put(xa_erase(&f->objs, handle));
		return -EFAULT;
	}
	return 0;
}
