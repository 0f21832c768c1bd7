/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: the replay policy (gmem_accel_replay.c): when the fault workers answer
 * the groups they serviced.
 */
#ifndef GMEM_ACCEL_REPLAY_H
#define GMEM_ACCEL_REPLAY_H

#include "gmem_accel_types.h"

struct gmem_answer;

bool gmem_replay_batching(void);
unsigned int gmem_replay_drain(struct gmem_accel *g, struct gmem_fault *group,
			       struct gmem_answer *answers);

#endif /* GMEM_ACCEL_REPLAY_H */
