/*
 * gmem-accel: access counters, modelled on a GPU's (NVIDIA's, as UVM
 * drives them): per context, the engines' accesses to each region of VA are
 * counted apart for HBM (local) and system memory (remote); a region whose
 * count reaches the threshold gets a record in the notification ring and
 * starts again from 0. The table is fixed: GMEM_AC_SETS sets of GMEM_AC_WAYS
 * regions, so counting an access, clearing a region and clearing them all
 * cost at most GMEM_AC_MAX_REGIONS steps, whatever the guest writes.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "gmem-accel.h"
#include "trace.h"

QEMU_BUILD_BUG_ON(sizeof(struct gmem_access_record) !=
                  GMEM_ACCESS_RECORD_SIZE);
QEMU_BUILD_BUG_ON(GMEM_AC_MAX_REGIONS % GMEM_AC_WAYS);

static bool gmem_ac_enabled(GmemAccelState *s)
{
    return s->ac.ctrl & GMEM_AC_CTRL_ENABLE;
}

/* The first way of the set region (@ctx, @aperture, @va) belongs to */
static unsigned gmem_ac_set(GmemAccelState *s, uint16_t ctx,
                            uint8_t aperture, uint64_t va)
{
    uint64_t h = (va >> s->ac.granularity) ^ ((uint64_t)ctx << 40) ^
                 ((uint64_t)aperture << 56);

    h *= 0x9e3779b97f4a7c15ull;
    return (h >> 32) % GMEM_AC_SETS * GMEM_AC_WAYS;
}

/* The tracked region (@ctx, @aperture, @va), or NULL */
static GmemAcRegion *gmem_ac_find(GmemAccelState *s, uint16_t ctx,
                                  uint8_t aperture, uint64_t va)
{
    unsigned set = gmem_ac_set(s, ctx, aperture, va);

    for (unsigned w = 0; w < GMEM_AC_WAYS; w++) {
        GmemAcRegion *r = &s->ac.region[set + w];

        if (r->used && r->ctx == ctx && r->aperture == aperture &&
            r->va == va) {
            return r;
        }
    }
    return NULL;
}

/* Track the region: a free way of its set, or the least recently used */
static GmemAcRegion *gmem_ac_take(GmemAccelState *s, uint16_t ctx,
                                  uint8_t aperture, uint64_t va)
{
    unsigned set = gmem_ac_set(s, ctx, aperture, va);
    GmemAcRegion *victim = &s->ac.region[set];

    for (unsigned w = 0; w < GMEM_AC_WAYS; w++) {
        GmemAcRegion *r = &s->ac.region[set + w];

        if (!r->used) {
            victim = r;
            s->ac.tracked++;
            break;
        }
        if (r->used < victim->used) {
            victim = r;
        }
    }
    *victim = (GmemAcRegion) { .va = va, .ctx = ctx, .aperture = aperture };
    return victim;
}

static void gmem_ac_clear_all(GmemAccelState *s)
{
    memset(s->ac.region, 0, sizeof(s->ac.region));
    s->ac.tracked = 0;
}

/* Write @r's record at TAIL, or drop it if the ring is full */
static void gmem_ac_notify(GmemAccelState *s, GmemAcRegion *r)
{
    uint32_t mask = gmem_ring_mask(s->ac.entries_log2);
    uint64_t addr = s->ac.base + (uint64_t)s->ac.tail *
                    GMEM_ACCESS_RECORD_SIZE;
    struct gmem_access_record rec = {
        .va = cpu_to_le64(r->va),
        .count = cpu_to_le32(r->count),
        .ctx = cpu_to_le16(r->ctx),
        .aperture = r->aperture,
        .granularity = s->ac.granularity,
        .seq = cpu_to_le32(s->ac.seq),
    };

    if (((s->ac.tail + 1) & mask) == s->ac.head) {
        trace_gmem_accel_ac_drop(r->ctx, r->va, r->aperture, r->count,
                                 "ring full");
        s->ac.dropped++;
        return;
    }
    if (!gmem_sys_rw(s, addr, &rec, sizeof(rec), true)) {
        trace_gmem_accel_ac_drop(r->ctx, r->va, r->aperture, r->count,
                                 "record write failed");
        s->ac.dropped++;
        gmem_accel_set_error(s, GMEM_ERR_AC_DMA, r->ctx, addr,
                             "cannot write an access-counter record at "
                             "0x%" PRIx64 "; dropped", addr);
        return;
    }
    trace_gmem_accel_ac_notify(r->ctx, r->va, r->aperture, r->count,
                               s->ac.seq, s->ac.tail);
    s->ac.seq++;
    s->ac.notified++;
    s->ac.tail = (s->ac.tail + 1) & mask;
    gmem_notify(s, GMEM_VEC_ACCESS);
}

/* Count @pages accesses to the region at @va */
static void gmem_ac_add(GmemAccelState *s, uint16_t ctx, uint8_t aperture,
                        uint64_t va, uint32_t pages)
{
    GmemAcRegion *r = gmem_ac_find(s, ctx, aperture, va) ?:
                      gmem_ac_take(s, ctx, aperture, va);

    r->used = ++s->ac.tick;
    r->count += pages;      /* < threshold + a step's pages: no overflow */
    if (r->count >= s->ac.threshold) {
        gmem_ac_notify(s, r);
        r->count = 0;
    }
}

void gmem_ac_count(GmemAccelState *s, uint16_t ctx, uint64_t va,
                   uint64_t len, bool hbm)
{
    uint64_t size = 1ull << s->ac.granularity, end = va + len;
    uint8_t aperture = hbm ? GMEM_AC_APERTURE_LOCAL : GMEM_AC_APERTURE_REMOTE;

    if (!gmem_ac_enabled(s) || !len || end < va) {
        return;
    }
    /* a step is at most GMEM_STEP_MAX_BYTES: two regions at most */
    for (uint64_t r = va & ~(size - 1); r < end && r >= (va & ~(size - 1));
         r += size) {
        uint64_t lo = MAX(va, r), hi = MIN(end, r + size);

        gmem_ac_add(s, ctx, aperture, r,
                    ((hi - 1) >> GMEM_PAGE_SHIFT) - (lo >> GMEM_PAGE_SHIFT) +
                    1);
    }
}

static void gmem_ac_clear(GmemAccelState *s, hwaddr addr, uint64_t val)
{
    uint64_t va = s->ac.clear_va & ~((1ull << s->ac.granularity) - 1);

    switch (val) {
    case GMEM_AC_CLEAR_ALL:
        trace_gmem_accel_ac_clear(GMEM_INV_ALL_CONTEXTS, 0, s->ac.tracked);
        gmem_ac_clear_all(s);
        break;
    case GMEM_AC_CLEAR_REGION:
        trace_gmem_accel_ac_clear(s->ac.clear_ctx, va, s->ac.tracked);
        for (uint8_t ap = 0; ap <= GMEM_AC_APERTURE_REMOTE; ap++) {
            GmemAcRegion *r = gmem_ac_find(s, s->ac.clear_ctx, ap, va);

            if (r) {
                *r = (GmemAcRegion) { 0 };
                s->ac.tracked--;
            }
        }
        break;
    default:
        gmem_bad_value(s, addr, val, "AC_CLEAR is 1 (region) or 2 (all)");
        break;
    }
}

static void gmem_ac_enable(GmemAccelState *s, hwaddr addr, uint64_t val)
{
    if (val & ~GMEM_AC_CTRL_ENABLE) {
        gmem_bad_value(s, addr, val, "unknown AC_CTRL bits");
        return;
    }
    if (val == s->ac.ctrl) {
        return;
    }
    if (val && (s->ac.base % GMEM_ACCESS_RECORD_SIZE ||
                s->ac.entries_log2 < 1 ||
                s->ac.entries_log2 > GMEM_RING_MAX_LOG2)) {
        gmem_bad_value(s, addr, val, "enable needs AC_BASE aligned to 32 "
                       "bytes and AC_ENTRIES_LOG2 in 1..16");
        return;
    }
    s->ac.ctrl = val;
    if (val) {
        s->ac.head = s->ac.tail = 0;
        s->ac.notified = s->ac.dropped = 0;
        gmem_ac_clear_all(s);
    }
}

uint32_t gmem_ac_read(GmemAccelState *s, hwaddr reg)
{
    switch (reg) {
    case GMEM_REG_AC_BASE_LO:
        return s->ac.base;
    case GMEM_REG_AC_BASE_HI:
        return s->ac.base >> 32;
    case GMEM_REG_AC_ENTRIES_LOG2:
        return s->ac.entries_log2;
    case GMEM_REG_AC_CTRL:
        return s->ac.ctrl;
    case GMEM_REG_AC_HEAD:
        return s->ac.head;
    case GMEM_REG_AC_TAIL:
        return s->ac.tail;
    case GMEM_REG_AC_GRANULARITY:
        return s->ac.granularity;
    case GMEM_REG_AC_THRESHOLD:
        return s->ac.threshold;
    case GMEM_REG_AC_CLEAR_VA_LO:
        return s->ac.clear_va;
    case GMEM_REG_AC_CLEAR_VA_HI:
        return s->ac.clear_va >> 32;
    case GMEM_REG_AC_CLEAR_CTX:
        return s->ac.clear_ctx;
    case GMEM_REG_AC_TRACKED:
        return s->ac.tracked;
    case GMEM_REG_AC_NOTIFIED:
        return s->ac.notified;
    case GMEM_REG_AC_DROPPED:
        return s->ac.dropped;
    case GMEM_REG_AC_CAPACITY:
        return GMEM_AC_MAX_REGIONS;
    }
    return 0;
}

void gmem_ac_write(GmemAccelState *s, hwaddr reg, uint64_t val)
{
    bool enabled = gmem_ac_enabled(s);

    switch (reg) {
    case GMEM_REG_AC_BASE_LO:
    case GMEM_REG_AC_BASE_HI:
    case GMEM_REG_AC_ENTRIES_LOG2:
    case GMEM_REG_AC_GRANULARITY:
        if (enabled) {
            gmem_bad_value(s, reg, val, "access counters are enabled; "
                           "disable them before changing their ring or "
                           "granularity");
        } else if (reg == GMEM_REG_AC_BASE_LO) {
            gmem_set_lo(&s->ac.base, val);
        } else if (reg == GMEM_REG_AC_BASE_HI) {
            gmem_set_hi(&s->ac.base, val);
        } else if (reg == GMEM_REG_AC_ENTRIES_LOG2) {
            if (val < 1 || val > GMEM_RING_MAX_LOG2) {
                gmem_bad_value(s, reg, val, "AC_ENTRIES_LOG2 is 1..16");
            } else {
                s->ac.entries_log2 = val;
            }
        } else if (val != GMEM_AC_GRAN_64K && val != GMEM_AC_GRAN_2M) {
            gmem_bad_value(s, reg, val, "AC_GRANULARITY is 16 (64 KiB) or "
                           "21 (2 MiB)");
        } else if (val != s->ac.granularity) {
            s->ac.granularity = val;
            gmem_ac_clear_all(s);   /* its regions are another size */
        }
        break;
    case GMEM_REG_AC_CTRL:
        gmem_ac_enable(s, reg, val);
        break;
    case GMEM_REG_AC_HEAD:
        if (!enabled || val > gmem_ring_mask(s->ac.entries_log2)) {
            gmem_bad_value(s, reg, val, "AC_HEAD needs enabled access "
                           "counters and an index inside their ring");
        } else {
            s->ac.head = val;
        }
        break;
    case GMEM_REG_AC_THRESHOLD:
        if (val < 1 || val > GMEM_AC_THRESHOLD_MAX) {
            gmem_bad_value(s, reg, val, "AC_THRESHOLD is 1..65535");
        } else {
            s->ac.threshold = val;
        }
        break;
    case GMEM_REG_AC_CLEAR_VA_LO:
        gmem_set_lo(&s->ac.clear_va, val);
        break;
    case GMEM_REG_AC_CLEAR_VA_HI:
        gmem_set_hi(&s->ac.clear_va, val);
        break;
    case GMEM_REG_AC_CLEAR_CTX:
        if (val >= GMEM_NUM_CONTEXTS) {
            gmem_bad_value(s, reg, val, "AC_CLEAR_CTX is a context, 0..63");
        } else {
            s->ac.clear_ctx = val;
        }
        break;
    case GMEM_REG_AC_CLEAR:
        gmem_ac_clear(s, reg, val);
        break;
    }
}

void gmem_ac_reset(GmemAccelState *s)
{
    memset(&s->ac, 0, sizeof(s->ac));
    s->ac.granularity = GMEM_AC_GRAN_64K;
    s->ac.threshold = GMEM_AC_THRESHOLD_DEFAULT;
}

const char *gmem_ac_check(GmemAccelState *s)
{
    GmemAc *ac = &s->ac;
    uint32_t mask = gmem_ring_mask(ac->entries_log2), tracked = 0;

    if (ac->ctrl & ~GMEM_AC_CTRL_ENABLE ||
        ac->entries_log2 > GMEM_RING_MAX_LOG2 ||
        (ac->granularity != GMEM_AC_GRAN_64K &&
         ac->granularity != GMEM_AC_GRAN_2M) ||
        ac->threshold < 1 || ac->threshold > GMEM_AC_THRESHOLD_MAX ||
        ac->clear_ctx >= GMEM_NUM_CONTEXTS) {
        return "the access counters' CTRL, ENTRIES_LOG2, GRANULARITY, "
               "THRESHOLD or CLEAR_CTX";
    }
    if (gmem_ac_enabled(s) &&
        (ac->base % GMEM_ACCESS_RECORD_SIZE || ac->entries_log2 < 1 ||
         ac->head > mask || ac->tail > mask)) {
        return "the access-counter ring";
    }
    for (unsigned i = 0; i < GMEM_AC_MAX_REGIONS; i++) {
        GmemAcRegion *r = &ac->region[i];

        if (!r->used) {
            if (r->count || r->va || r->ctx || r->aperture) {
                return "a free access-counter way";
            }
            continue;
        }
        tracked++;
        if (r->used > ac->tick || r->ctx >= GMEM_NUM_CONTEXTS ||
            r->aperture > GMEM_AC_APERTURE_REMOTE ||
            r->va & ((1ull << ac->granularity) - 1) ||
            r->va >> GMEM_VA_BITS || r->count > GMEM_AC_THRESHOLD_MAX ||
            gmem_ac_set(s, r->ctx, r->aperture, r->va) !=
            i / GMEM_AC_WAYS * GMEM_AC_WAYS ||
            gmem_ac_find(s, r->ctx, r->aperture, r->va) != r) {
            return "an access-counter region";
        }
    }
    return tracked == ac->tracked ? NULL : "AC_TRACKED";
}
