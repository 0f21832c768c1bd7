// SPDX-License-Identifier: MIT
/*
 * libgmem: sharing between processes. A memory handle is the object's dma-buf, an event
 * handle its sync_file; both travel over Unix sockets as SCM_RIGHTS, with a small header
 * saying what they are.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gmem_internal.h"

#define GMEM_IPC_MAGIC 0x474d454du	/* "GMEM" */
enum { GMEM_IPC_MEM = 1, GMEM_IPC_EVENT = 2 };

struct gmem_ipc_msg {
	uint32_t magic;
	uint32_t kind;
	uint64_t size;		/* memory: bytes */
	int32_t has_fd;		/* event: 0 when complete */
	uint32_t pad;
};

gmemError_t gmemIpcGetMemHandle(gmemIpcMemHandle_t *h, void *ptr)
{
	struct gmem_accel_obj_export ex = { .flags = O_CLOEXEC };
	struct gmemDevice *dev = NULL;
	struct gmem_alloc *a;
	int ret, fd = -1;

	if (!h || !ptr)
		return gmem_fail(gmemErrorInvalidValue);
	h->fd = -1;
	pthread_mutex_lock(&gmem_lock);
	a = gmem_alloc_find(ptr);
	if (a && a->base == ptr) {
		ex.handle = a->handle;
		fd = a->dev->fd;
		dev = a->dev;
		h->size = a->size;
	}
	pthread_mutex_unlock(&gmem_lock);
	if (fd < 0)	/* only whole allocations are shared, as CUDA's handles are */
		return gmem_fail(gmemErrorInvalidValue);
	ret = gmem_dev_ioctl(dev, fd, GMEM_ACCEL_IOC_OBJ_EXPORT, &ex);
	if (ret)
		return gmem_fail_errno(-ret);
	h->fd = ex.fd;
	return gmem_ok();
}

gmemError_t gmemIpcOpenMemHandle(gmemDevice_t dev, void **ptr, gmemIpcMemHandle_t h)
{
	if (!ptr)
		return gmem_fail(gmemErrorInvalidValue);
	*ptr = NULL;
	if (!gmem_live_has(GMEM_KIND_DEVICE, dev))
		return gmem_fail(gmemErrorInvalidHandle);
	if (h.fd < 0)
		return gmem_fail(gmemErrorInvalidIpcHandle);
	return gmem_ipc_open(dev, h.fd, ptr);
}

gmemError_t gmemIpcCloseMemHandle(void *ptr)
{
	struct gmemPointerAttributes attr;
	gmemError_t e = gmemPointerGetAttributes(&attr, ptr);

	if (e)
		return e;
	if (!attr.imported || attr.base != ptr)
		return gmem_fail(gmemErrorInvalidValue);
	return gmemFree(ptr);
}

gmemError_t gmemIpcGetEventHandle(gmemIpcEventHandle_t *h, gmemEvent_t ev)
{
	if (!h)
		return gmem_fail(gmemErrorInvalidValue);
	h->fd = -1;
	if (!gmem_live_has(GMEM_KIND_EVENT, ev))
		return gmem_fail(gmemErrorInvalidHandle);
	if (ev->fd >= 0) {
		h->fd = fcntl(ev->fd, F_DUPFD_CLOEXEC, 0);
		if (h->fd < 0)
			return gmem_fail_errno(errno);
	}
	return gmem_ok();
}

gmemError_t gmemIpcOpenEventHandle(gmemEvent_t *out, gmemIpcEventHandle_t h)
{
	gmemEvent_t ev;
	gmemError_t e;

	if (!out)
		return gmem_fail(gmemErrorInvalidValue);
	*out = NULL;
	e = gmemEventCreate(&ev);
	if (e)
		return e;
	if (h.fd >= 0) {
		ev->fd = fcntl(h.fd, F_DUPFD_CLOEXEC, 0);
		if (ev->fd < 0) {
			int err = errno;

			gmemEventDestroy(ev);
			return err == EBADF ? gmem_fail_as(gmemErrorInvalidIpcHandle, err) :
					      gmem_fail_errno(err);
		}
	}
	*out = ev;
	return gmem_ok();
}

static gmemError_t gmem_ipc_send(int sock, const struct gmem_ipc_msg *msg, int fd)
{
	char ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = sizeof(*msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *c;

		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return gmem_fail_errno(errno);
	return n == sizeof(*msg) ? gmem_ok() : gmem_fail_errno(EPIPE);
}

/* Receive a message of @kind; *@fd the descriptor it carried, or -1. */
static gmemError_t gmem_ipc_recv(int sock, uint32_t kind, struct gmem_ipc_msg *msg, int *fd)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(*msg) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl),
	};
	struct cmsghdr *c;
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return gmem_fail_errno(errno);
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	if (n != sizeof(*msg) || msg->magic != GMEM_IPC_MAGIC || msg->kind != kind ||
	    (mh.msg_flags & MSG_CTRUNC) || (msg->has_fd != 0) != (*fd >= 0)) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return n == 0 ? gmem_fail_errno(EPIPE) : gmem_fail(gmemErrorInvalidIpcHandle);
	}
	return gmem_ok();
}

gmemError_t gmemIpcSendMemHandle(int sock, const gmemIpcMemHandle_t *h)
{
	struct gmem_ipc_msg msg = { .magic = GMEM_IPC_MAGIC, .kind = GMEM_IPC_MEM, .has_fd = 1 };

	if (!h || h->fd < 0)
		return gmem_fail(gmemErrorInvalidValue);
	msg.size = h->size;
	return gmem_ipc_send(sock, &msg, h->fd);
}

gmemError_t gmemIpcRecvMemHandle(int sock, gmemIpcMemHandle_t *h)
{
	struct gmem_ipc_msg msg;
	gmemError_t e;

	if (!h)
		return gmem_fail(gmemErrorInvalidValue);
	e = gmem_ipc_recv(sock, GMEM_IPC_MEM, &msg, &h->fd);
	h->size = e ? 0 : msg.size;
	return e;
}

gmemError_t gmemIpcSendEventHandle(int sock, const gmemIpcEventHandle_t *h)
{
	struct gmem_ipc_msg msg = { .magic = GMEM_IPC_MAGIC, .kind = GMEM_IPC_EVENT };

	if (!h)
		return gmem_fail(gmemErrorInvalidValue);
	msg.has_fd = h->fd >= 0;
	return gmem_ipc_send(sock, &msg, h->fd);
}

gmemError_t gmemIpcRecvEventHandle(int sock, gmemIpcEventHandle_t *h)
{
	struct gmem_ipc_msg msg;

	if (!h)
		return gmem_fail(gmemErrorInvalidValue);
	return gmem_ipc_recv(sock, GMEM_IPC_EVENT, &msg, &h->fd);
}

static gmemError_t gmem_close_handle_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return gmem_ok();
}

gmemError_t gmemIpcCloseMemHandleFd(gmemIpcMemHandle_t *h)
{
	return h ? gmem_close_handle_fd(&h->fd) : gmem_fail(gmemErrorInvalidValue);
}

gmemError_t gmemIpcCloseEventHandleFd(gmemIpcEventHandle_t *h)
{
	return h ? gmem_close_handle_fd(&h->fd) : gmem_fail(gmemErrorInvalidValue);
}
