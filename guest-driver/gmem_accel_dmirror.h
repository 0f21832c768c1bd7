/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: lib/test_hmm's uAPI on gmem-accel, /dev/gmem_dmirrorN
 * (gmem_accel_dmirror.c), and its device page-table side (gmem_accel_dmirror_pt.c).
 */
#ifndef GMEM_ACCEL_DMIRROR_H
#define GMEM_ACCEL_DMIRROR_H

#include "gmem_accel_types.h"

/* gmem_accel_dmirror.c: lib/test_hmm's uAPI on gmem-accel (/dev/gmem_dmirrorN) */
int gmem_dmirror_init(void);
void gmem_dmirror_exit(void);
void gmem_dmirror_add(struct gmem_accel *g);
void gmem_dmirror_remove(struct gmem_accel *g);

/* gmem_accel_dmirror_pt.c: its device page-table side; the software bit of EXCLUSIVE pages */
#define GMEM_PTE_SW_EXCLUSIVE	(1ull << 9)
int gmem_dmirror_mirror(struct gmem_ctx *ctx, u64 start, u64 end, u8 __user *out, u64 *local);
int gmem_dmirror_take_exclusive(struct gmem_ctx *ctx, u64 start, u64 end);

#endif /* GMEM_ACCEL_DMIRROR_H */
