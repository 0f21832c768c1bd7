/*
 * gmem-accel: command descriptors — decoding, validation of every field
 * the guest wrote, and splitting a command into steps the engine runs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "gmem-accel-core.h"

/* The layouts of gmem_accel_hw.h, as docs/hardware-spec.md gives them */
QEMU_BUILD_BUG_ON(sizeof(struct gmem_cmd_desc) != GMEM_CMD_SIZE);
QEMU_BUILD_BUG_ON(offsetof(struct gmem_cmd_desc, src_stride) != 52);
QEMU_BUILD_BUG_ON(sizeof(struct gmem_fault_record) != GMEM_FAULT_RECORD_SIZE);
QEMU_BUILD_BUG_ON(offsetof(struct gmem_fault_record, slot) != 28);

void gmem_cmd_decode(const uint8_t raw[GMEM_CMD_SIZE], GmemCmd *cmd)
{
    struct gmem_cmd_desc d;

    memcpy(&d, raw, sizeof(d));
    cmd->opcode = d.opcode;
    cmd->flags = d.flags;
    cmd->ctx = le16_to_cpu(d.ctx);
    cmd->status = le32_to_cpu(d.status);
    cmd->dst = le64_to_cpu(d.dst);
    cmd->src = le64_to_cpu(d.src);
    cmd->size = le64_to_cpu(d.size);
    cmd->value = le64_to_cpu(d.value);
    cmd->value2 = le64_to_cpu(d.value2);
    cmd->dst_stride = le32_to_cpu(d.dst_stride);
    cmd->src_stride = le32_to_cpu(d.src_stride);
    cmd->reserved = le64_to_cpu(d.reserved);
}

void gmem_cmd_encode(const GmemCmd *cmd, uint8_t raw[GMEM_CMD_SIZE])
{
    struct gmem_cmd_desc d = {
        .opcode = cmd->opcode,
        .flags = cmd->flags,
        .ctx = cpu_to_le16(cmd->ctx),
        .status = cpu_to_le32(cmd->status),
        .dst = cpu_to_le64(cmd->dst),
        .src = cpu_to_le64(cmd->src),
        .size = cpu_to_le64(cmd->size),
        .value = cpu_to_le64(cmd->value),
        .value2 = cpu_to_le64(cmd->value2),
        .dst_stride = cpu_to_le32(cmd->dst_stride),
        .src_stride = cpu_to_le32(cmd->src_stride),
        .reserved = cpu_to_le64(cmd->reserved),
    };

    memcpy(raw, &d, sizeof(d));
}

static const char *const gmem_op_names[] = {
    [GMEM_OP_NOP] = "nop",
    [GMEM_OP_COPY] = "copy",
    [GMEM_OP_FILL] = "fill",
    [GMEM_OP_FENCE] = "fence",
    [GMEM_OP_TLB_INV] = "tlb-inv",
    [GMEM_OP_ATOMIC_ADD] = "atomic-add",
    [GMEM_OP_SCALE_ADD] = "scale-add",
    [GMEM_OP_AXPY] = "axpy",
};

const char *gmem_op_name(unsigned opcode)
{
    return opcode < G_N_ELEMENTS(gmem_op_names) && gmem_op_names[opcode] ?
           gmem_op_names[opcode] : "unknown";
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
        return gmem_hbm_contains(hbm_size, addr, len) ?
               GMEM_CMD_ST_OK : GMEM_CMD_ST_BAD_ADDRESS;
    case GMEM_ADDR_SYS:
        return addr + len >= addr ? GMEM_CMD_ST_OK : GMEM_CMD_ST_BAD_ADDRESS;
    default:
        return GMEM_CMD_ST_BAD_FIELD;
    }
}

/* The rules of GMEM_OP_USES that need no address space: OK or BAD_*. */
static uint32_t gmem_cmd_check_fields(const GmemCmd *cmd, unsigned use)
{
    unsigned elem = GMEM_CMD_F_ELEM_SIZE(cmd->flags);
    bool src_used = use & GMEM_USE_SRC;

    if (!(use & GMEM_USE_KNOWN)) {
        return GMEM_CMD_ST_BAD_OPCODE;
    }
    if ((cmd->flags & ~GMEM_CMD_F_KNOWN) || cmd->reserved ||
        (!(use & GMEM_USE_DST) &&
         (cmd->dst || GMEM_CMD_F_DST_KIND(cmd->flags))) ||
        (!src_used && (cmd->src || GMEM_CMD_F_SRC_KIND(cmd->flags))) ||
        (!(use & GMEM_USE_SIZE) && cmd->size) ||
        (!(use & GMEM_USE_VALUE) && cmd->value) ||
        (!(use & GMEM_USE_VALUE2) && cmd->value2) ||
        (!(use & GMEM_USE_STRIDES) && cmd->dst_stride) ||
        (!(use & GMEM_USE_STRIDES && src_used) && cmd->src_stride) ||
        (!(use & GMEM_USE_WIDE) && (cmd->flags & GMEM_CMD_F_WIDE)) ||
        ((use & GMEM_USE_BYTES) && cmd->size > GMEM_CMD_MAX_BYTES) ||
        ((use & GMEM_USE_DST_ALIGN8) && (cmd->dst & 7)) ||
        GMEM_CMD_F_DST_KIND(cmd->flags) > GMEM_ADDR_SYS ||
        GMEM_CMD_F_SRC_KIND(cmd->flags) > GMEM_ADDR_SYS) {
        return GMEM_CMD_ST_BAD_FIELD;
    }
    if ((use & GMEM_USE_ELEMENTS) &&
        (cmd->size > GMEM_CMD_MAX_ELEMENTS ||
         cmd->dst_stride > GMEM_CMD_MAX_STRIDE ||
         cmd->src_stride > GMEM_CMD_MAX_STRIDE ||
         cmd->dst % elem || cmd->dst_stride % elem ||
         cmd->src % elem || cmd->src_stride % elem)) {
        return GMEM_CMD_ST_BAD_FIELD;
    }
    return GMEM_CMD_ST_OK;
}

/* Bytes an operand spans: the command's size, or its elements' extent. */
static uint64_t gmem_operand_len(const GmemCmd *cmd, unsigned use,
                                 uint32_t stride)
{
    if (use & GMEM_USE_ELEMENTS) {
        return GMEM_EXTENT(cmd->size, (uint64_t)stride,
                           GMEM_CMD_F_ELEM_SIZE(cmd->flags));
    }
    return use & GMEM_USE_SIZE ? cmd->size : 8;
}

uint32_t gmem_cmd_validate(const GmemCmd *cmd, uint64_t hbm_size)
{
    unsigned use = GMEM_OP_USES(cmd->opcode);
    unsigned dkind = GMEM_CMD_F_DST_KIND(cmd->flags);
    uint32_t st = gmem_cmd_check_fields(cmd, use);

    if (st != GMEM_CMD_ST_OK) {
        return st;
    }
    if (cmd->opcode == GMEM_OP_TLB_INV) {
        /* dst names a VA range of ctx, or of every context: nothing to map */
        if (cmd->ctx >= GMEM_NUM_CONTEXTS &&
            cmd->ctx != GMEM_INV_ALL_CONTEXTS) {
            return GMEM_CMD_ST_BAD_CONTEXT;
        }
        return dkind == GMEM_ADDR_VA ? GMEM_CMD_ST_OK : GMEM_CMD_ST_BAD_FIELD;
    }
    if (use & GMEM_USE_SRC) {
        st = gmem_check_range(cmd, GMEM_CMD_F_SRC_KIND(cmd->flags), cmd->src,
                              gmem_operand_len(cmd, use, cmd->src_stride),
                              hbm_size);
    }
    if (st == GMEM_CMD_ST_OK && (use & GMEM_USE_DST)) {
        st = gmem_check_range(cmd, dkind, cmd->dst,
                              gmem_operand_len(cmd, use, cmd->dst_stride),
                              hbm_size);
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
    case GMEM_OP_AXPY:
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

/*
 * Elements from @addr an element op's step takes: when they lie back to back
 * (@stride is their size), all of them left in @addr's page (4 KiB, whatever
 * the operand's kind), so one translation and one mapping serve them; else
 * one. Each element is still an access of its own.
 */
static uint64_t gmem_elem_run(uint64_t addr, uint32_t stride, unsigned elem,
                              uint64_t left)
{
    uint64_t room = GMEM_PAGE_SIZE - (addr & (GMEM_PAGE_SIZE - 1));

    return stride == elem ? MAX(MIN(left, room / elem), 1) : 1;
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
    unsigned elem = GMEM_CMD_F_ELEM_SIZE(cmd->flags);
    uint64_t left = cmd->size - progress, len, addr, src;

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
        addr = cmd->dst + progress * cmd->dst_stride;
        len = gmem_elem_run(addr, cmd->dst_stride, elem, left);
        gmem_set_op(&step->op[1], dkind, addr, len * elem, GMEM_ACCESS_ATOMIC);
        step->next = progress + len;
        break;
    case GMEM_OP_SCALE_ADD:
    case GMEM_OP_AXPY:
        src = cmd->src + progress * cmd->src_stride;
        addr = cmd->dst + progress * cmd->dst_stride;
        len = MIN(gmem_elem_run(src, cmd->src_stride, elem, left),
                  gmem_elem_run(addr, cmd->dst_stride, elem, left));
        gmem_set_op(&step->op[0], skind, src, len * elem, GMEM_ACCESS_READ);
        /* AXPY reads the element it writes */
        gmem_set_op(&step->op[1], dkind, addr, len * elem,
                    cmd->opcode == GMEM_OP_AXPY ?
                    GMEM_ACCESS_READ | GMEM_ACCESS_WRITE : GMEM_ACCESS_WRITE);
        step->next = progress + len;
        break;
    default:
        step->next = progress;
        break;
    }
}
