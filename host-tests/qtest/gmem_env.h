/*
 * A gmem-accel device ready for work over qtest: context CTX enabled over
 * page tables built in guest RAM, four command rings, a fault queue, and
 * helpers to map pages, submit commands and take fault records.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef GMEM_ENV_H
#define GMEM_ENV_H

#include "gmem-accel-core.h"
#include "gmem_qtest.h"

#define PT_POOL     0x00100000ull   /* page tables, 4 KiB each */
/* Queues 0..ENV_QUEUES-1 have rings here; so may the last one (at 0x23f000). */
#define CQ_RING(q)  (0x00200000ull + (q) * 0x1000)
#define ENV_QUEUES  4
#define CQ_LOG2     4
#define FQ_RING     0x00210000ull
#define FQ_LOG2     6
#define FENCE_ADDR  0x00220000ull
#define SYS_DATA    0x00400000ull   /* data pages in system memory */
#define HBM_SIZE    (64ull << 20)
#define CTX         1
#define UNBACKED    0x7000000000ull /* no RAM or device there */

#define RW  (GMEM_PTE_VALID | GMEM_PTE_READ | GMEM_PTE_WRITE)
#define RWA (RW | GMEM_PTE_ATOMIC)
#define RO  (GMEM_PTE_VALID | GMEM_PTE_READ)

typedef struct Env {
    GmemQTest *g;
    QTestState *qt;
    uint64_t pt_next;
    uint64_t root;
    uint32_t tail[GMEM_NUM_QUEUES];
    uint32_t fq_head;
} Env;

typedef struct Rec {
    uint64_t va, pte;
    uint16_t ctx, group, slot;
    uint8_t access, reason, engine, flags;
    uint32_t seq;
} Rec;


/* Device with context CTX enabled over an empty table, queues, fault queue */
Env *env_start(const char *props);
/* The same, with more QEMU arguments (e.g. a second device) */
Env *env_start_with(const char *props, const char *extra);
/* The same with @pre before the device's arguments (an IOMMU it is behind) */
Env *env_start_after(const char *pre, const char *props, const char *extra);
/* Checks QEMU still answers, then quits it. */
void env_quit(Env *e);
void queue_setup(Env *e, unsigned q);
void fq_setup(Env *e, unsigned log2);

/* A zeroed 4 KiB table from the pool. */
uint64_t pt_alloc(Env *e);
/* Address of the entry for @va at @level, creating tables above it. */
uint64_t pte_slot(Env *e, uint64_t va, int level);
void map4k(Env *e, uint64_t va, uint64_t target, uint64_t bits);
void map64k(Env *e, uint64_t va, uint64_t target, uint64_t bits);
void map2m(Env *e, uint64_t va, uint64_t target, uint64_t bits);

uint64_t counter(Env *e, unsigned i);
/* Put @c on ring @q and ring the doorbell; returns its slot. */
uint32_t submit(Env *e, unsigned q, GmemCmd c);
/* The same, @bits (GMEM_CQ_TAIL_FAULT_HOLD) in the doorbell's value. */
uint32_t submit_bits(Env *e, unsigned q, GmemCmd c, uint32_t bits);
uint32_t status_of(Env *e, unsigned q, uint32_t idx);
uint32_t wait_done(Env *e, unsigned q, uint32_t idx);
void wait_state(Env *e, unsigned q, uint32_t state);
uint32_t run(Env *e, unsigned q, GmemCmd c);
GmemCmd copy_cmd(unsigned dk, uint64_t dst, unsigned sk, uint64_t src,
                 uint64_t size);

Rec fault_record(Env *e, uint32_t i);
/* Consume every posted record (moving FQ_HEAD); returns how many. */
uint32_t fq_take(Env *e, Rec *out, uint32_t max);
void respond(Env *e, uint16_t group, uint32_t code);

void pattern(uint8_t *buf, size_t len, unsigned seed);

#endif
