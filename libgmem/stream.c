// SPDX-License-Identifier: MIT
/* libgmem: streams (a device context and command queue each) and events (sync_files). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "gmem_internal.h"

/* How long one WAIT may take before it is asked again (a fatal signal ends it sooner). */
#define GMEM_WAIT_MS 10000

gmemError_t gmemStreamCreate(gmemStream_t *out, gmemDevice_t dev)
{
	struct gmemStream *s;
	gmemError_t e;

	if (!out)
		return gmem_fail(gmemErrorInvalidValue);
	*out = NULL;
	if (!gmem_live_has(GMEM_KIND_DEVICE, dev))
		return gmem_fail(gmemErrorInvalidHandle);
	s = calloc(1, sizeof(*s));
	if (!s)
		return gmem_fail_errno(ENOMEM);
	s->dev = dev;
	s->wait_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	s->fd = open(dev->path, O_RDWR | O_CLOEXEC);
	if (s->fd < 0) {
		e = gmem_fail_errno(errno == ENOENT ? ENODEV : errno);
		free(s);
		return e;
	}
	e = gmem_advice_replay(dev, s->fd);
	if (e || !gmem_live_add(GMEM_KIND_STREAM, s)) {
		close(s->fd);
		free(s);
		return e ? e : gmem_fail_errno(ENOMEM);
	}
	pthread_mutex_lock(&gmem_lock);
	dev->streams++;
	pthread_mutex_unlock(&gmem_lock);
	*out = s;
	return gmem_ok();
}

/* Wait for batch @fence of @s: 0 or the batch's -errno. */
static int gmem_stream_wait_fence(struct gmemStream *s, uint64_t fence, uint32_t timeout_ms)
{
	struct gmem_accel_wait w = { .fence = fence, .timeout_ms = timeout_ms };
	int ret;

	do
		ret = gmem_dev_ioctl(s->dev, s->fd, GMEM_ACCEL_IOC_WAIT, &w);
	while (ret == -ETIME && timeout_ms);
	return ret;
}

/* Wait for every batch queued; the first failure's errno (all are waited for anyway). */
static int gmem_stream_drain(struct gmemStream *s)
{
	int first = 0;

	for (size_t i = 0; i < s->nfences; i++) {
		int ret = gmem_stream_wait_fence(s, s->fences[i], GMEM_WAIT_MS);

		if (ret && !first)
			first = ret;
	}
	s->nfences = 0;
	return first;
}

gmemError_t gmemStreamSynchronize(gmemStream_t s)
{
	int ret;

	if (!gmem_live_has(GMEM_KIND_STREAM, s))
		return gmem_fail(gmemErrorInvalidHandle);
	pthread_mutex_lock(&s->lock);
	ret = gmem_stream_drain(s);
	pthread_mutex_unlock(&s->lock);
	return ret ? gmem_fail_errno(-ret) : gmem_ok();
}

gmemError_t gmemStreamQuery(gmemStream_t s)
{
	int ret = 0;

	if (!gmem_live_has(GMEM_KIND_STREAM, s))
		return gmem_fail(gmemErrorInvalidHandle);
	pthread_mutex_lock(&s->lock);
	if (s->nfences)
		ret = gmem_stream_wait_fence(s, s->last_fence, 0);
	pthread_mutex_unlock(&s->lock);
	if (ret == -ETIME)
		return gmem_fail(gmemErrorNotReady);
	return ret ? gmem_fail_errno(-ret) : gmem_ok();
}

gmemError_t gmemStreamDestroy(gmemStream_t s)
{
	int ret;

	if (!gmem_live_has(GMEM_KIND_STREAM, s))
		return gmem_fail(gmemErrorInvalidHandle);
	gmem_live_del(GMEM_KIND_STREAM, s);
	pthread_mutex_lock(&s->lock);
	ret = gmem_stream_drain(s);
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&gmem_lock);
	s->dev->streams--;
	pthread_mutex_unlock(&gmem_lock);
	if (s->wait_fd >= 0)
		close(s->wait_fd);
	close(s->fd);
	pthread_mutex_destroy(&s->lock);
	free(s->fences);
	free(s);
	return ret ? gmem_fail_errno(-ret) : gmem_ok();
}

/* Queue @n commands on @s, GMEM_ACCEL_MAX_BATCH at a time; @s->lock held. */
static gmemError_t gmem_stream_submit_locked(struct gmemStream *s, struct gmem_accel_cmd *cmds,
					     size_t n)
{
	for (size_t done = 0; done < n;) {
		size_t count = n - done < GMEM_ACCEL_MAX_BATCH ? n - done : GMEM_ACCEL_MAX_BATCH;
		struct gmem_accel_submit sub = {
			.cmds = (uintptr_t)(cmds + done),
			.count = count,
		};
		int ret;

		if (s->nfences == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 16;
			uint64_t *f = realloc(s->fences, cap * sizeof(*f));

			if (!f)
				return gmem_fail_errno(ENOMEM);
			s->fences = f;
			s->cap = cap;
		}
		if (s->wait_fd >= 0) {
			sub.flags = GMEM_ACCEL_SUBMIT_IN_FENCE;
			sub.fence = s->wait_fd;
		}
		ret = gmem_dev_ioctl(s->dev, s->fd, GMEM_ACCEL_IOC_SUBMIT, &sub);
		if (ret)
			return gmem_fail_errno(-ret);
		if (s->wait_fd >= 0) {	/* the batch waits for it: later ones follow the batch */
			close(s->wait_fd);
			s->wait_fd = -1;
		}
		s->fences[s->nfences++] = sub.fence;
		s->last_fence = sub.fence;
		done += count;
	}
	return gmem_ok();
}

gmemError_t gmem_stream_submit(struct gmemStream *s, struct gmem_accel_cmd *cmds, size_t n)
{
	gmemError_t e;

	if (!gmem_live_has(GMEM_KIND_STREAM, s))
		return gmem_fail(gmemErrorInvalidHandle);
	pthread_mutex_lock(&s->lock);
	e = gmem_stream_submit_locked(s, cmds, n);
	pthread_mutex_unlock(&s->lock);
	return e;
}

/*
 * Queue @n commands on @s and wait for all its work (gmemMemcpy(), gmemMemset()). With nothing
 * else queued or awaited, one SUBMIT that waits too (GMEM_ACCEL_SUBMIT_WAIT): the batch's
 * faults are served on this thread and no interrupt is taken for it unless the wait sleeps.
 * Otherwise, or if the driver refuses the flag (EINVAL, as for a bad command: the way below
 * then says which), queued and drained as gmemStreamSynchronize() does.
 */
gmemError_t gmem_stream_run(struct gmemStream *s, struct gmem_accel_cmd *cmds, size_t n)
{
	struct gmem_accel_submit sub = {
		.cmds = (uintptr_t)cmds,
		.count = n,
		.flags = GMEM_ACCEL_SUBMIT_WAIT,
	};
	gmemError_t e;
	int ret;

	if (!gmem_live_has(GMEM_KIND_STREAM, s))
		return gmem_fail(gmemErrorInvalidHandle);
	pthread_mutex_lock(&s->lock);
	if (!s->nfences && s->wait_fd < 0 && n <= GMEM_ACCEL_MAX_BATCH) {
		/* (not gmem_ioctl(): a call interrupted after queueing must not queue again) */
		ret = gmem_dev_ioctl_once(s->dev, s->fd, GMEM_ACCEL_IOC_SUBMIT, &sub);
		if (ret != -EINVAL) {
			if (sub.fence)
				s->last_fence = sub.fence;
			/* A signal ended the wait, the batch queued: wait for it as WAIT does. */
			if (ret == -EINTR && sub.fence)
				ret = gmem_stream_wait_fence(s, sub.fence, GMEM_WAIT_MS);
			pthread_mutex_unlock(&s->lock);
			return ret ? gmem_fail_errno(-ret) : gmem_ok();
		}
	}
	e = gmem_stream_submit_locked(s, cmds, n);
	ret = gmem_stream_drain(s);
	pthread_mutex_unlock(&s->lock);
	if (e)
		return e;
	return ret ? gmem_fail_errno(-ret) : gmem_ok();
}

gmemError_t gmemStreamWaitEvent(gmemStream_t s, gmemEvent_t ev)
{
	int fd;

	if (!gmem_live_has(GMEM_KIND_STREAM, s) || !gmem_live_has(GMEM_KIND_EVENT, ev))
		return gmem_fail(gmemErrorInvalidHandle);
	if (ev->fd < 0)
		return gmem_ok();	/* complete: nothing to wait for */
	fd = fcntl(ev->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return gmem_fail_errno(errno);
	pthread_mutex_lock(&s->lock);
	if (s->wait_fd >= 0) {
		/* One in-fence per batch: the earlier one is waited for here. */
		struct pollfd p = { .fd = s->wait_fd, .events = POLLIN };

		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		close(s->wait_fd);
	}
	s->wait_fd = fd;
	pthread_mutex_unlock(&s->lock);
	return gmem_ok();
}

gmemError_t gmemEventCreate(gmemEvent_t *out)
{
	struct gmemEvent *ev;

	if (!out)
		return gmem_fail(gmemErrorInvalidValue);
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return gmem_fail_errno(ENOMEM);
	ev->fd = -1;
	if (!gmem_live_add(GMEM_KIND_EVENT, ev)) {
		free(ev);
		return gmem_fail_errno(ENOMEM);
	}
	*out = ev;
	return gmem_ok();
}

gmemError_t gmemEventDestroy(gmemEvent_t ev)
{
	if (!gmem_live_has(GMEM_KIND_EVENT, ev))
		return gmem_fail(gmemErrorInvalidHandle);
	gmem_live_del(GMEM_KIND_EVENT, ev);
	if (ev->fd >= 0)
		close(ev->fd);
	free(ev);
	return gmem_ok();
}

gmemError_t gmemEventRecord(gmemEvent_t ev, gmemStream_t s)
{
	struct gmem_accel_fence_export fe = { .flags = O_CLOEXEC };
	int ret = 0;

	if (!gmem_live_has(GMEM_KIND_EVENT, ev) || !gmem_live_has(GMEM_KIND_STREAM, s))
		return gmem_fail(gmemErrorInvalidHandle);
	pthread_mutex_lock(&s->lock);
	fe.fence = s->last_fence;
	fe.fd = -1;
	if (s->last_fence)
		ret = gmem_dev_ioctl(s->dev, s->fd, GMEM_ACCEL_IOC_FENCE_EXPORT, &fe);
	pthread_mutex_unlock(&s->lock);
	if (ret)
		return gmem_fail_errno(-ret);
	if (ev->fd >= 0)
		close(ev->fd);
	ev->fd = fe.fd;		/* -1: nothing queued, complete */
	return gmem_ok();
}

/* Wait up to @timeout_ms (-1: for ever) for @ev; gmemErrorNotReady if it did not complete. */
static gmemError_t gmem_event_wait(struct gmemEvent *ev, int timeout_ms)
{
	struct pollfd p = { .fd = ev->fd, .events = POLLIN };
	int n;

	if (ev->fd < 0)
		return gmem_ok();
	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return gmem_fail_errno(errno);
	if (p.revents & (POLLERR | POLLNVAL))
		return gmem_fail(gmemErrorInvalidIpcHandle);
	return n ? gmem_ok() : gmem_fail(gmemErrorNotReady);
}

gmemError_t gmemEventSynchronize(gmemEvent_t ev)
{
	if (!gmem_live_has(GMEM_KIND_EVENT, ev))
		return gmem_fail(gmemErrorInvalidHandle);
	return gmem_event_wait(ev, -1);
}

gmemError_t gmemEventQuery(gmemEvent_t ev)
{
	if (!gmem_live_has(GMEM_KIND_EVENT, ev))
		return gmem_fail(gmemErrorInvalidHandle);
	return gmem_event_wait(ev, 0);
}

gmemError_t gmemDeviceSynchronize(gmemDevice_t dev)
{
	struct gmemStream *streams[GMEM_MAX_STREAMS];
	gmemError_t first = gmemSuccess;
	int n;

	if (!gmem_live_has(GMEM_KIND_DEVICE, dev))
		return gmem_fail(gmemErrorInvalidHandle);
	pthread_mutex_lock(&gmem_lock);
	n = gmem_device_streams(dev, streams, GMEM_MAX_STREAMS);
	pthread_mutex_unlock(&gmem_lock);
	for (int i = 0; i < n; i++) {
		/* (one destroyed meanwhile is InvalidHandle: not this call's failure) */
		gmemError_t e = gmem_live_has(GMEM_KIND_STREAM, streams[i]) ?
				gmemStreamSynchronize(streams[i]) : gmemSuccess;

		if (e && !first)
			first = e;
	}
	return first;
}
