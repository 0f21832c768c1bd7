/*
 * gmem-accel: the device's logic that needs no QEMU object — page-table
 * walker, TLB, command decoding. The device (gmem-accel-*.c) and the host
 * unit tests (host-tests/unit_core.c) both build it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_GMEM_ACCEL_CORE_H
#define HW_GMEM_ACCEL_CORE_H

#include "gmem_accel_hw.h"

/* Is [addr, addr + len) inside HBM of @hbm_size bytes? (no overflow) */
static inline bool gmem_hbm_contains(uint64_t hbm_size, uint64_t addr,
                                     uint64_t len)
{
    return addr < hbm_size && len <= hbm_size - addr;
}

/* ---- page-table walker (gmem-accel-pt.c) ---- */

typedef enum GmemWalkStatus {
    GMEM_WALK_OK,
    GMEM_WALK_NOT_PRESENT,      /* a recoverable fault */
    GMEM_WALK_PERMISSION,       /* a recoverable fault */
    GMEM_WALK_RESERVED,         /* malformed entry: an error */
    GMEM_WALK_BAD_ADDRESS,      /* table/page not backed: an error */
    GMEM_WALK_LOOP,             /* a table points back at itself: error */
} GmemWalkStatus;

/* A translation, or where and why the walk stopped. */
typedef struct GmemTranslation {
    uint64_t va_base;       /* VA of the page (aligned to its size) */
    uint64_t page_size;     /* GMEM_PAGE_SIZE, GMEM_CONT_SIZE, HUGE_SIZE */
    uint64_t target;        /* page's HBM offset or bus address */
    bool target_hbm;
    uint8_t perms;          /* GMEM_ACCESS_* the leaf allows */
    int level;              /* level of the entry that ended the walk */
    uint64_t pte;           /* that entry (a CONT group's: its first) */
    uint64_t pte_addr;      /* and where it lives */
    unsigned ptes;          /* entries the page takes: CONT_ENTRIES or 1 */
    bool pte_hbm;
} GmemTranslation;

/*
 * Read @n consecutive little-endian PTEs from @addr of HBM or system memory,
 * in one access: a 64 KiB group's 16 entries are one 128-byte read, as a
 * walker reads a cache line, not 16.
 */
typedef bool (*GmemPteReader)(void *opaque, bool hbm, uint64_t addr,
                              uint64_t *pte, unsigned n);

GmemWalkStatus gmem_pt_walk(GmemPteReader read_pte, void *opaque,
                            uint64_t root, bool root_hbm, uint64_t hbm_size,
                            uint64_t va, GmemTranslation *t);
/* The walk from @table, a table of level @level (the walk cache's start). */
GmemWalkStatus gmem_pt_walk_from(GmemPteReader read_pte, void *opaque,
                                 uint64_t table, bool table_hbm, int level,
                                 uint64_t hbm_size, uint64_t va,
                                 GmemTranslation *t);
/* GMEM_WALK_OK or GMEM_WALK_PERMISSION for @access on translation @t. */
GmemWalkStatus gmem_pt_check(const GmemTranslation *t, unsigned access);
uint8_t gmem_pte_perms(uint64_t pte);

/*
 * One run of a context's page table: leaves mapping contiguous VA onto
 * contiguous targets with identical attributes, whose PTEs sit in
 * consecutive slots of one table (first.pte_addr + 8 * i); or, when status
 * is not OK, one malformed entry or unreadable/looping table and the VA
 * span it covers.
 */
typedef struct GmemPtRange {
    GmemWalkStatus status;      /* OK, RESERVED, BAD_ADDRESS or LOOP */
    uint64_t va;
    uint64_t size;              /* bytes of VA */
    uint64_t pages;             /* PTEs in the run */
    GmemTranslation first;      /* the first page, its PTE and slot */
} GmemPtRange;

/* Receives each run in VA order; returns false to stop the dump. */
typedef bool (*GmemPtRangeFn)(void *opaque, const GmemPtRange *r);

typedef enum GmemPtDumpResult {
    GMEM_DUMP_COMPLETE,
    GMEM_DUMP_STOPPED,          /* the callback said stop */
    GMEM_DUMP_TOO_MANY_TABLES,  /* more than max_tables tables */
} GmemPtDumpResult;

/* Report the runs of the table at @root overlapping [va_start, va_end). */
GmemPtDumpResult gmem_pt_dump(GmemPteReader read_pte, void *opaque,
                              uint64_t root, bool root_hbm, uint64_t hbm_size,
                              uint64_t va_start, uint64_t va_end,
                              unsigned max_tables, GmemPtRangeFn fn,
                              void *fn_opaque);
const char *gmem_walk_status_name(GmemWalkStatus st);

/*
 * ---- device TLB (gmem-accel-tlb.c): direct-mapped, 4K, 64K, 2M entries,
 * and a walk cache: the level-1 table a walk reached, by 2 MiB of VA ----
 */

typedef struct GmemTlbEntry {
    bool valid;
    uint16_t ctx;
    GmemTranslation t;
} GmemTlbEntry;

typedef struct GmemWalkEntry {
    bool valid;
    bool table_hbm;
    uint16_t ctx;
    uint64_t va;            /* 2 MiB aligned */
    uint64_t table;         /* the level-1 table mapping it */
} GmemWalkEntry;

typedef struct GmemTlb {
    GmemTlbEntry *entries;
    uint32_t size;          /* a power of two */
    GmemWalkEntry *walk;
    uint32_t walk_size;     /* a power of two, or 0: no walk cache */
} GmemTlb;

void gmem_tlb_init(GmemTlb *tlb, uint32_t size, uint32_t walk_size);
void gmem_tlb_free(GmemTlb *tlb);
const GmemTlbEntry *gmem_tlb_lookup(const GmemTlb *tlb, uint16_t ctx,
                                    uint64_t va);
void gmem_tlb_insert(GmemTlb *tlb, uint16_t ctx, const GmemTranslation *t);
/* The level-1 table that maps @va in @ctx, if the walk cache has it */
const GmemWalkEntry *gmem_walk_lookup(const GmemTlb *tlb, uint16_t ctx,
                                      uint64_t va);
void gmem_walk_insert(GmemTlb *tlb, uint16_t ctx, uint64_t va,
                      uint64_t table, bool table_hbm);
/*
 * Drop entries of @ctx (or every context) overlapping [va, va + size), the
 * walk cache's too; returns the TLB entries dropped.
 */
unsigned gmem_tlb_invalidate(GmemTlb *tlb, uint16_t ctx, uint64_t va,
                             uint64_t size);
unsigned gmem_tlb_count(const GmemTlb *tlb);

/* ---- command descriptors (gmem-accel-cmd.c) ---- */

typedef struct GmemCmd {
    uint8_t opcode;
    uint8_t flags;
    uint16_t ctx;
    uint32_t status;
    uint64_t dst;
    uint64_t src;
    uint64_t size;
    uint64_t value;
    uint64_t value2;
    uint32_t dst_stride;
    uint32_t src_stride;
    uint64_t reserved;
} GmemCmd;

/* One operand a command step touches. */
typedef struct GmemOperand {
    unsigned kind;          /* GMEM_ADDR_* */
    uint64_t addr;
    uint32_t len;
    unsigned access;        /* GMEM_ACCESS_* */
} GmemOperand;

/* One step of a command, done as a unit once both operands translate. */
typedef struct GmemStep {
    GmemOperand op[2];      /* op[0] source (len 0: none), op[1] dest */
    uint64_t next;          /* progress after this step */
} GmemStep;

#define GMEM_STEP_MAX_BYTES (64 * 1024)

void gmem_cmd_decode(const uint8_t raw[GMEM_CMD_SIZE], GmemCmd *cmd);
void gmem_cmd_encode(const GmemCmd *cmd, uint8_t raw[GMEM_CMD_SIZE]);
/* GMEM_CMD_ST_OK, or the status a malformed descriptor completes with. */
uint32_t gmem_cmd_validate(const GmemCmd *cmd, uint64_t hbm_size);
/* Progress is bytes (COPY, FILL) or elements; done at gmem_cmd_length(). */
uint64_t gmem_cmd_length(const GmemCmd *cmd);
/* The operands of the step starting at @progress (< gmem_cmd_length). */
void gmem_cmd_step(const GmemCmd *cmd, uint64_t progress, GmemStep *step);
const char *gmem_op_name(unsigned opcode);

#endif
