/*
 * gmem-accel: command descriptors — decoding, validation of every field
 * the guest wrote, and splitting a command into steps the engine runs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "gmem-accel-core.h"

static uint64_t get_le(const uint8_t *p, unsigned bytes)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < bytes; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++) {
        p[i] = v >> (8 * i);
    }
}

#define GMEM_CMD_FIELDS(X) \
    X(opcode, GMEM_CMD_OFF_OPCODE, 1) \
    X(flags, GMEM_CMD_OFF_FLAGS, 1) \
    X(ctx, GMEM_CMD_OFF_CTX, 2) \
    X(status, GMEM_CMD_OFF_STATUS, 4) \
    X(dst, GMEM_CMD_OFF_DST, 8) \
    X(src, GMEM_CMD_OFF_SRC, 8) \
    X(size, GMEM_CMD_OFF_SIZE, 8) \
    X(value, GMEM_CMD_OFF_VALUE, 8) \
    X(value2, GMEM_CMD_OFF_VALUE2, 8) \
    X(dst_stride, GMEM_CMD_OFF_DST_STRIDE, 4) \
    X(src_stride, GMEM_CMD_OFF_SRC_STRIDE, 4) \
    X(reserved, GMEM_CMD_OFF_RESERVED, 8)

void gmem_cmd_decode(const uint8_t raw[GMEM_CMD_SIZE], GmemCmd *cmd)
{
#define DECODE(f, off, bytes) cmd->f = get_le(raw + (off), bytes);
    GMEM_CMD_FIELDS(DECODE)
#undef DECODE
}

void gmem_cmd_encode(const GmemCmd *cmd, uint8_t raw[GMEM_CMD_SIZE])
{
#define ENCODE(f, off, bytes) put_le(raw + (off), cmd->f, bytes);
    GMEM_CMD_FIELDS(ENCODE)
#undef ENCODE
}

/* Which fields each opcode reads; the others must be zero. */
enum {
    USE_DST = 1 << 0, USE_SRC = 1 << 1, USE_SIZE = 1 << 2,
    USE_VALUE = 1 << 3, USE_VALUE2 = 1 << 4, USE_DST_STRIDE = 1 << 5,
    USE_SRC_STRIDE = 1 << 6, USE_CTX = 1 << 7, USE_WIDE = 1 << 8,
};

static const struct {
    const char *name;
    unsigned use;
} gmem_ops[] = {
    [GMEM_OP_NOP] = { "nop", 0 },
    [GMEM_OP_COPY] = { "copy", USE_DST | USE_SRC | USE_SIZE },
    [GMEM_OP_FILL] = { "fill", USE_DST | USE_SIZE | USE_VALUE },
    [GMEM_OP_FENCE] = { "fence", USE_DST | USE_VALUE },
    [GMEM_OP_TLB_INV] = { "tlb-inv", USE_DST | USE_SIZE | USE_CTX },
    [GMEM_OP_ATOMIC_ADD] = { "atomic-add", USE_DST | USE_SIZE | USE_VALUE |
                             USE_DST_STRIDE | USE_WIDE },
    [GMEM_OP_SCALE_ADD] = { "scale-add", USE_DST | USE_SRC | USE_SIZE |
                            USE_VALUE | USE_VALUE2 | USE_DST_STRIDE |
                            USE_SRC_STRIDE | USE_WIDE },
};

const char *gmem_op_name(unsigned opcode)
{
    return opcode < G_N_ELEMENTS(gmem_ops) && gmem_ops[opcode].name ?
           gmem_ops[opcode].name : "unknown";
}

static unsigned gmem_elem_size(const GmemCmd *cmd)
{
    return cmd->flags & GMEM_CMD_F_WIDE ? 8 : 4;
}

/* Is [addr, addr + len) usable as an operand of this kind? */
static uint32_t gmem_check_range(const GmemCmd *cmd, unsigned kind,
                                 uint64_t addr, uint64_t len,
                                 uint64_t hbm_size)
{
    switch (kind) {
    case GMEM_ADDR_VA:
        if (cmd->ctx >= GMEM_NUM_CONTEXTS) {
            return GMEM_CMD_ST_BAD_CONTEXT;
        }
        return addr < (1ull << GMEM_VA_BITS) &&
               len <= (1ull << GMEM_VA_BITS) - addr ?
               GMEM_CMD_ST_OK : GMEM_CMD_ST_BAD_ADDRESS;
    case GMEM_ADDR_HBM:
        return addr < hbm_size && len <= hbm_size - addr ?
               GMEM_CMD_ST_OK : GMEM_CMD_ST_BAD_ADDRESS;
    case GMEM_ADDR_SYS:
        return addr + len >= addr ? GMEM_CMD_ST_OK : GMEM_CMD_ST_BAD_ADDRESS;
    default:
        return GMEM_CMD_ST_BAD_FIELD;
    }
}

/* Bytes from the first element's address to the end of the last one. */
static uint64_t gmem_extent(uint64_t count, uint32_t stride, unsigned elem)
{
    return count ? (count - 1) * stride + elem : 0;
}

uint32_t gmem_cmd_validate(const GmemCmd *cmd, uint64_t hbm_size)
{
    unsigned use, elem = gmem_elem_size(cmd);
    unsigned dkind = GMEM_CMD_F_DST_KIND(cmd->flags);
    unsigned skind = GMEM_CMD_F_SRC_KIND(cmd->flags);
    uint32_t st = GMEM_CMD_ST_OK;

    if (cmd->opcode >= G_N_ELEMENTS(gmem_ops) || !gmem_ops[cmd->opcode].name) {
        return GMEM_CMD_ST_BAD_OPCODE;
    }
    use = gmem_ops[cmd->opcode].use;
    if ((cmd->flags & ~GMEM_CMD_F_KNOWN) || cmd->reserved ||
        (!(use & USE_DST) && (cmd->dst || dkind)) ||
        (!(use & USE_SRC) && (cmd->src || skind)) ||
        (!(use & USE_SIZE) && cmd->size) ||
        (!(use & USE_VALUE) && cmd->value) ||
        (!(use & USE_VALUE2) && cmd->value2) ||
        (!(use & USE_DST_STRIDE) && cmd->dst_stride) ||
        (!(use & USE_SRC_STRIDE) && cmd->src_stride) ||
        (!(use & USE_WIDE) && (cmd->flags & GMEM_CMD_F_WIDE))) {
        return GMEM_CMD_ST_BAD_FIELD;
    }

    switch (cmd->opcode) {
    case GMEM_OP_NOP:
        break;
    case GMEM_OP_COPY:
        if (cmd->size > GMEM_CMD_MAX_BYTES) {
            return GMEM_CMD_ST_BAD_FIELD;
        }
        st = gmem_check_range(cmd, skind, cmd->src, cmd->size, hbm_size);
        if (st == GMEM_CMD_ST_OK) {
            st = gmem_check_range(cmd, dkind, cmd->dst, cmd->size, hbm_size);
        }
        break;
    case GMEM_OP_FILL:
        if (cmd->size > GMEM_CMD_MAX_BYTES) {
            return GMEM_CMD_ST_BAD_FIELD;
        }
        st = gmem_check_range(cmd, dkind, cmd->dst, cmd->size, hbm_size);
        break;
    case GMEM_OP_FENCE:
        if (cmd->dst & 7) {
            return GMEM_CMD_ST_BAD_FIELD;
        }
        st = gmem_check_range(cmd, dkind, cmd->dst, 8, hbm_size);
        break;
    case GMEM_OP_TLB_INV:
        if (dkind != GMEM_ADDR_VA ||
            (cmd->ctx >= GMEM_NUM_CONTEXTS &&
             cmd->ctx != GMEM_INV_ALL_CONTEXTS)) {
            return cmd->ctx >= GMEM_NUM_CONTEXTS ? GMEM_CMD_ST_BAD_CONTEXT
                                                 : GMEM_CMD_ST_BAD_FIELD;
        }
        break;
    case GMEM_OP_SCALE_ADD:
        if (cmd->src % elem || cmd->src_stride % elem) {
            return GMEM_CMD_ST_BAD_FIELD;
        }
        /* fall through */
    case GMEM_OP_ATOMIC_ADD:
        if (cmd->size > GMEM_CMD_MAX_ELEMENTS ||
            cmd->dst_stride > GMEM_CMD_MAX_STRIDE ||
            cmd->src_stride > GMEM_CMD_MAX_STRIDE ||
            cmd->dst % elem || cmd->dst_stride % elem) {
            return GMEM_CMD_ST_BAD_FIELD;
        }
        st = gmem_check_range(cmd, dkind, cmd->dst,
                              gmem_extent(cmd->size, cmd->dst_stride, elem),
                              hbm_size);
        if (st == GMEM_CMD_ST_OK && (use & USE_SRC)) {
            st = gmem_check_range(cmd, skind, cmd->src,
                                  gmem_extent(cmd->size, cmd->src_stride,
                                              elem), hbm_size);
        }
        break;
    }
    return st;
}

uint64_t gmem_cmd_length(const GmemCmd *cmd)
{
    switch (cmd->opcode) {
    case GMEM_OP_COPY:
    case GMEM_OP_FILL:
    case GMEM_OP_ATOMIC_ADD:
    case GMEM_OP_SCALE_ADD:
        return cmd->size;
    case GMEM_OP_FENCE:
        return 1;
    default:
        return 0;   /* done without touching memory */
    }
}

/* Bytes from @addr to the end of its page (VA) or of the step limit. */
static uint64_t gmem_chunk(unsigned kind, uint64_t addr, uint64_t left)
{
    uint64_t lim = GMEM_STEP_MAX_BYTES;

    if (kind == GMEM_ADDR_VA) {
        lim = MIN(lim, GMEM_PAGE_SIZE - (addr & (GMEM_PAGE_SIZE - 1)));
    }
    return MIN(lim, left);
}

static void gmem_set_op(GmemOperand *op, unsigned kind, uint64_t addr,
                        uint32_t len, unsigned access)
{
    op->kind = kind;
    op->addr = addr;
    op->len = len;
    op->access = access;
}

void gmem_cmd_step(const GmemCmd *cmd, uint64_t progress, GmemStep *step)
{
    unsigned dkind = GMEM_CMD_F_DST_KIND(cmd->flags);
    unsigned skind = GMEM_CMD_F_SRC_KIND(cmd->flags);
    unsigned elem = gmem_elem_size(cmd);
    uint64_t left = cmd->size - progress, len;

    memset(step, 0, sizeof(*step));
    switch (cmd->opcode) {
    case GMEM_OP_COPY:
        len = gmem_chunk(skind, cmd->src + progress, left);
        len = gmem_chunk(dkind, cmd->dst + progress, len);
        gmem_set_op(&step->op[0], skind, cmd->src + progress, len,
                    GMEM_ACCESS_READ);
        gmem_set_op(&step->op[1], dkind, cmd->dst + progress, len,
                    GMEM_ACCESS_WRITE);
        step->next = progress + len;
        break;
    case GMEM_OP_FILL:
        len = gmem_chunk(dkind, cmd->dst + progress, left);
        gmem_set_op(&step->op[1], dkind, cmd->dst + progress, len,
                    GMEM_ACCESS_WRITE);
        step->next = progress + len;
        break;
    case GMEM_OP_FENCE:
        gmem_set_op(&step->op[1], dkind, cmd->dst, 8, GMEM_ACCESS_WRITE);
        step->next = 1;
        break;
    case GMEM_OP_ATOMIC_ADD:
        gmem_set_op(&step->op[1], dkind,
                    cmd->dst + progress * cmd->dst_stride, elem,
                    GMEM_ACCESS_ATOMIC);
        step->next = progress + 1;
        break;
    case GMEM_OP_SCALE_ADD:
        gmem_set_op(&step->op[0], skind,
                    cmd->src + progress * cmd->src_stride, elem,
                    GMEM_ACCESS_READ);
        gmem_set_op(&step->op[1], dkind,
                    cmd->dst + progress * cmd->dst_stride, elem,
                    GMEM_ACCESS_WRITE);
        step->next = progress + 1;
        break;
    default:
        step->next = progress;
        break;
    }
}
