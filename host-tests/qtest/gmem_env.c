/*
 * gmem-accel test environment over qtest; see gmem_env.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "gmem_env.h"

uint64_t pt_alloc(Env *e)
{
    static const uint8_t zero[4096];
    uint64_t t = e->pt_next;

    e->pt_next += 4096;
    qtest_memwrite(e->qt, t, zero, sizeof(zero));
    return t;
}

void queue_setup(Env *e, unsigned q)
{
    gq_set_reg64(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_BASE_LO), CQ_RING(q));
    gq_set_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_ENTRIES_LOG2), CQ_LOG2);
    gq_set_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_CTRL), GMEM_CQ_CTRL_ENABLE);
    e->tail[q] = 0;
}

void fq_setup(Env *e, unsigned log2)
{
    gq_set_reg64(e->g, GMEM_REG_FQ_BASE_LO, FQ_RING);
    gq_set_reg(e->g, GMEM_REG_FQ_ENTRIES_LOG2, log2);
    gq_set_reg(e->g, GMEM_REG_FQ_CTRL, GMEM_FQ_CTRL_ENABLE);
    e->fq_head = 0;
}

/* Device with context CTX enabled over an empty table, queues, fault queue */
Env *env_start(const char *props)
{
    return env_start_with(props, NULL);
}

Env *env_start_with(const char *props, const char *extra)
{
    return env_start_after(NULL, props, extra);
}

Env *env_start_after(const char *pre, const char *props, const char *extra)
{
    g_autofree char *all = g_strdup_printf("hbm-size=64M%s%s",
                                           props ? "," : "",
                                           props ? props : "");
    Env *e = g_new0(Env, 1);

    e->g = gq_start_after(pre, all, extra);
    e->qt = e->g->qt;
    e->pt_next = PT_POOL;
    e->root = pt_alloc(e);
    gq_set_reg64(e->g, GMEM_REG_CTX(CTX, GMEM_CTX_ROOT_LO), e->root);
    gq_set_reg(e->g, GMEM_REG_CTX(CTX, GMEM_CTX_CTRL), GMEM_CTX_CTRL_ENABLE);
    for (unsigned q = 0; q < ENV_QUEUES; q++) {
        queue_setup(e, q);
    }
    fq_setup(e, FQ_LOG2);
    g_assert_cmphex(gq_reg(e->g, GMEM_REG_STATUS), ==, GMEM_STATUS_READY);
    return e;
}

void env_quit(Env *e)
{
    /* Whatever the test did, QEMU is still alive and answering. */
    g_assert_cmphex(gq_reg(e->g, GMEM_REG_ID), ==, GMEM_ID_MAGIC);
    gq_quit(e->g);
    g_free(e);
}

/* Address of the entry for @va at @level, creating tables above it. */
uint64_t pte_slot(Env *e, uint64_t va, int level)
{
    uint64_t table = e->root;

    for (int l = GMEM_PT_LEVELS; l > level; l--) {
        uint64_t slot = table + GMEM_PT_INDEX(va, l) * 8;
        uint64_t pte = qtest_readq(e->qt, slot);

        if (!(pte & GMEM_PTE_VALID)) {
            pte = pt_alloc(e) | GMEM_PTE_VALID;
            qtest_writeq(e->qt, slot, pte);
        }
        table = pte & GMEM_PTE_ADDR_MASK;
    }
    return table + GMEM_PT_INDEX(va, level) * 8;
}

void map4k(Env *e, uint64_t va, uint64_t target, uint64_t bits)
{
    qtest_writeq(e->qt, pte_slot(e, va, 1), target | bits);
}

/* A CONT group: 16 entries, each its 4 KiB of the 64 KiB @target. */
void map64k(Env *e, uint64_t va, uint64_t target, uint64_t bits)
{
    for (unsigned i = 0; i < GMEM_CONT_ENTRIES; i++) {
        map4k(e, va + i * GMEM_PAGE_SIZE, target + i * GMEM_PAGE_SIZE,
              bits | GMEM_PTE_CONT);
    }
}

void map2m(Env *e, uint64_t va, uint64_t target, uint64_t bits)
{
    qtest_writeq(e->qt, pte_slot(e, va, 2), target | bits | GMEM_PTE_HUGE);
}

uint64_t counter(Env *e, unsigned i)
{
    return gq_reg64(e->g, GMEM_REG_COUNTER(i));
}

uint32_t submit_bits(Env *e, unsigned q, GmemCmd c, uint32_t bits)
{
    uint8_t raw[GMEM_CMD_SIZE];
    uint32_t idx = e->tail[q];

    gmem_cmd_encode(&c, raw);
    qtest_memwrite(e->qt, CQ_RING(q) + idx * GMEM_CMD_SIZE, raw, sizeof(raw));
    e->tail[q] = (idx + 1) & ((1u << CQ_LOG2) - 1);
    gq_set_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_TAIL), e->tail[q] | bits);
    return idx;
}

uint32_t submit(Env *e, unsigned q, GmemCmd c)
{
    return submit_bits(e, q, c, 0);
}

uint32_t status_of(Env *e, unsigned q, uint32_t idx)
{
    return qtest_readl(e->qt, CQ_RING(q) + idx * GMEM_CMD_SIZE +
                    offsetof(struct gmem_cmd_desc, status));
}

/* Poll (each qtest command lets the main loop run the engines). */
uint32_t wait_done(Env *e, unsigned q, uint32_t idx)
{
    for (int i = 0; i < 200000; i++) {
        uint32_t st = status_of(e, q, idx);

        if (st != GMEM_CMD_ST_PENDING) {
            return st;
        }
    }
    g_error("queue %u command %u never completed", q, idx);
}

void wait_state(Env *e, unsigned q, uint32_t state)
{
    for (int i = 0; i < 200000; i++) {
        if (gq_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_STATE)) == state) {
            return;
        }
    }
    g_error("queue %u never reached state %u (is %u)", q, state,
            gq_reg(e->g, GMEM_REG_QUEUE(q, GMEM_CQ_STATE)));
}

uint32_t run(Env *e, unsigned q, GmemCmd c)
{
    return wait_done(e, q, submit(e, q, c));
}

Rec fault_record(Env *e, uint32_t i)
{
    struct gmem_fault_record raw;
    Rec r;

    qtest_memread(e->qt, FQ_RING + i * GMEM_FAULT_RECORD_SIZE, &raw,
                  sizeof(raw));
    r.va = le64_to_cpu(raw.va);
    r.ctx = le16_to_cpu(raw.ctx);
    r.group = le16_to_cpu(raw.group);
    r.access = raw.access;
    r.reason = raw.reason;
    r.engine = raw.engine;
    r.flags = raw.flags;
    r.pte = le64_to_cpu(raw.pte);
    r.seq = le32_to_cpu(raw.seq);
    r.slot = le16_to_cpu(raw.slot);
    g_assert_cmpuint(raw.reserved, ==, 0);
    return r;
}

/* Consume every posted record (moving FQ_HEAD); returns how many. */
uint32_t fq_take(Env *e, Rec *out, uint32_t max)
{
    uint32_t tail = gq_reg(e->g, GMEM_REG_FQ_TAIL), n = 0;
    uint32_t mask = (1u << gq_reg(e->g, GMEM_REG_FQ_ENTRIES_LOG2)) - 1;

    while (e->fq_head != tail) {
        g_assert_cmpuint(n, <, max);
        out[n++] = fault_record(e, e->fq_head);
        e->fq_head = (e->fq_head + 1) & mask;
    }
    gq_set_reg(e->g, GMEM_REG_FQ_HEAD, e->fq_head);
    return n;
}

void respond(Env *e, uint16_t group, uint32_t code)
{
    gq_set_reg(e->g, GMEM_REG_FAULT_RESPONSE,
               group | code << GMEM_RESP_SHIFT);
}

void pattern(uint8_t *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = (uint8_t)(i * 31 + seed * 17 + (i >> 8));
    }
}

GmemCmd copy_cmd(unsigned dk, uint64_t dst, unsigned sk, uint64_t src,
                        uint64_t size)
{
    return (GmemCmd) {
        .opcode = GMEM_OP_COPY, .ctx = CTX,
        .flags = GMEM_CMD_F_DST(dk) | GMEM_CMD_F_SRC(sk),
        .dst = dst, .src = src, .size = size,
    };
}

