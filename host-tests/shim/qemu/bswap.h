/*
 * Stand-in for QEMU's qemu/bswap.h in host unit tests (see osdep.h here).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef GMEM_TEST_SHIM_BSWAP_H
#define GMEM_TEST_SHIM_BSWAP_H

#define le16_to_cpu(x) GUINT16_FROM_LE(x)
#define le32_to_cpu(x) GUINT32_FROM_LE(x)
#define le64_to_cpu(x) GUINT64_FROM_LE(x)
#define cpu_to_le16(x) GUINT16_TO_LE(x)
#define cpu_to_le32(x) GUINT32_TO_LE(x)
#define cpu_to_le64(x) GUINT64_TO_LE(x)

#endif
