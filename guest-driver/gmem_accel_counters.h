/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: the device's access counters and the policy they drive, access-counter
 * migration (gmem_accel_counters.c).
 */
#ifndef GMEM_ACCEL_COUNTERS_H
#define GMEM_ACCEL_COUNTERS_H

#include "gmem_accel_types.h"

struct seq_file;

int gmem_ac_init(struct gmem_accel *g);
void gmem_ac_start(struct gmem_accel *g);
void gmem_ac_recover(struct gmem_accel *g);
void gmem_ac_fini(struct gmem_accel *g);
void gmem_ac_irq(struct gmem_accel *g);
void gmem_ac_ctx_gone(struct gmem_accel *g, unsigned int id);
void gmem_ac_debugfs_show(struct gmem_accel *g, struct seq_file *m);

#endif /* GMEM_ACCEL_COUNTERS_H */
