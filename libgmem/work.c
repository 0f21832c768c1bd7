// SPDX-License-Identifier: MIT
/* libgmem: work on a stream — copy, set and the device's compute commands. */
#include <errno.h>
#include <string.h>

#include "gmem_internal.h"

/*
 * Bytes of one COPY or FILL libgmem queues (the device takes up to 4 GiB a command): larger
 * ones are split.
 */
#define GMEM_LIB_CMD_BYTES (1ull << 30)
/* Elements of one compute command: the device's limit. */
#define GMEM_LIB_CMD_ELEMS (1ull << 24)
/* Commands per call queued at once (more: in several submissions). */
#define GMEM_CMDS_AT_ONCE 64

/*
 * Queue @count bytes of COPY (@src) or FILL (@value) as commands of at most 1 GiB each; with
 * @sync, the last of them run as gmem_stream_run() does (the stream's work all waited for).
 */
static gmemError_t gmem_bytes(struct gmemStream *s, uint32_t op, void *dst, const void *src,
			      uint64_t value, size_t count, bool sync)
{
	struct gmem_accel_cmd cmds[GMEM_CMDS_AT_ONCE];
	size_t n = 0;

	if (!gmem_live_has(GMEM_KIND_STREAM, s))
		return gmem_fail(gmemErrorInvalidHandle);
	if (!dst || (op == GMEM_ACCEL_OP_COPY && !src) || !count ||
	    (uintptr_t)dst + count < (uintptr_t)dst ||
	    (src && (uintptr_t)src + count < (uintptr_t)src))
		return gmem_fail(gmemErrorInvalidValue);
	for (size_t done = 0; done < count;) {
		size_t len = count - done < GMEM_LIB_CMD_BYTES ? count - done : GMEM_LIB_CMD_BYTES;

		cmds[n++] = (struct gmem_accel_cmd){
			.op = op,
			.dst = (uintptr_t)dst + done,
			.src = src ? (uintptr_t)src + done : 0,
			.size = len,
			.value = value,
		};
		done += len;
		if (n == GMEM_CMDS_AT_ONCE || done == count) {
			gmemError_t e = sync && done == count ? gmem_stream_run(s, cmds, n) :
								gmem_stream_submit(s, cmds, n);

			if (e)
				return e;
			n = 0;
		}
	}
	return gmem_ok();
}

/* A FILL's 64-bit pattern: the byte @value in each of its eight bytes. */
static uint64_t gmem_fill_word(int value)
{
	return 0x0101010101010101ull * (uint8_t)value;
}

gmemError_t gmemMemcpyAsync(void *dst, const void *src, size_t count, gmemStream_t s)
{
	return gmem_bytes(s, GMEM_ACCEL_OP_COPY, dst, src, 0, count, false);
}

gmemError_t gmemMemsetAsync(void *dst, int value, size_t count, gmemStream_t s)
{
	return gmem_bytes(s, GMEM_ACCEL_OP_FILL, dst, NULL, gmem_fill_word(value), count, false);
}

gmemError_t gmemMemcpy(void *dst, const void *src, size_t count, gmemStream_t s)
{
	return gmem_bytes(s, GMEM_ACCEL_OP_COPY, dst, src, 0, count, true);
}

gmemError_t gmemMemset(void *dst, int value, size_t count, gmemStream_t s)
{
	return gmem_bytes(s, GMEM_ACCEL_OP_FILL, dst, NULL, gmem_fill_word(value), count, true);
}

/* Queue a compute @op over @n elements of @type, split in commands of 2^24 elements. */
static gmemError_t gmem_compute(struct gmemStream *s, uint32_t op, void *dst, const void *src,
				uint64_t value, uint64_t value2, size_t n, gmemDataType_t type)
{
	struct gmem_accel_cmd cmds[GMEM_CMDS_AT_ONCE];
	size_t k = 0;

	if (!gmem_live_has(GMEM_KIND_STREAM, s))
		return gmem_fail(gmemErrorInvalidHandle);
	if ((type != gmemUint32 && type != gmemUint64) || !dst || !n ||
	    (op != GMEM_ACCEL_OP_ATOMIC_ADD && !src) ||
	    ((uintptr_t)dst | (uintptr_t)src) % type ||
	    n > SIZE_MAX / type || (uintptr_t)dst + n * type < (uintptr_t)dst)
		return gmem_fail(gmemErrorInvalidValue);
	for (size_t done = 0; done < n;) {
		size_t len = n - done < GMEM_LIB_CMD_ELEMS ? n - done : GMEM_LIB_CMD_ELEMS;

		cmds[k++] = (struct gmem_accel_cmd){
			.op = op,
			.flags = type == gmemUint64 ? GMEM_ACCEL_CMD_WIDE : 0,
			.dst = (uintptr_t)dst + done * type,
			.src = src ? (uintptr_t)src + done * type : 0,
			.size = len,
			.value = value,
			.value2 = value2,
			.dst_stride = type,
			.src_stride = src ? type : 0,
		};
		done += len;
		if (k == GMEM_CMDS_AT_ONCE || done == n) {
			gmemError_t e = gmem_stream_submit(s, cmds, k);

			if (e)
				return e;
			k = 0;
		}
	}
	return gmem_ok();
}

gmemError_t gmemAtomicAddAsync(void *dst, uint64_t value, size_t n, gmemDataType_t type,
			       gmemStream_t s)
{
	return gmem_compute(s, GMEM_ACCEL_OP_ATOMIC_ADD, dst, NULL, value, 0, n, type);
}

gmemError_t gmemScaleAddAsync(void *dst, const void *src, uint64_t scale, uint64_t add,
			      size_t n, gmemDataType_t type, gmemStream_t s)
{
	return gmem_compute(s, GMEM_ACCEL_OP_SCALE_ADD, dst, src, scale, add, n, type);
}

gmemError_t gmemAxpyAsync(void *y, const void *x, uint64_t a, size_t n, gmemDataType_t type,
			  gmemStream_t s)
{
	return gmem_compute(s, GMEM_ACCEL_OP_AXPY, y, x, a, 0, n, type);
}
