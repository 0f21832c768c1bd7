/*
 * gmem-accel: the engines' memory access: HBM through its host pointer,
 * system memory through PCI DMA, RAM only (mapped directly where it can be).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/bswap.h"
#include "qemu/rcu.h"
#include "system/dma.h"
#include "gmem-accel.h"
#include "trace.h"

/*
 * Is all of [@at, + @len) of @as RAM the device may access directly: guest
 * RAM or a RAM-backed BAR such as a peer gmem-accel's HBM (for a write, not
 * ROM)? The device's accesses to system memory reach nothing else. A register
 * region would let one command make an access per element to another device
 * (a reset or a whole-TLB scan each), or write it with a size its model does
 * not take (intel-iommu asserts on it); a hole fails anyway. Call with the
 * RCU read lock held.
 */
static bool gmem_sys_is_ram(AddressSpace *as, hwaddr at, hwaddr len,
                            bool write)
{
    if (!len || at + len - 1 < at) {
        return false;
    }
    while (len) {
        hwaddr xlat, l = len;
        MemoryRegion *mr = address_space_translate(as, at, &xlat, &l, write,
                                                   MEMTXATTRS_UNSPECIFIED);

        if (!l || !memory_access_is_direct(mr, write,
                                           MEMTXATTRS_UNSPECIFIED)) {
            return false;
        }
        at += l;
        len -= l;
    }
    return true;
}

/*
 * @n consecutive PTEs of system memory, RAM only. One (IOMMU) translation
 * for all of them where it covers them — a walk of 4 KiB pages spent most of
 * its time translating PTE addresses — else one per entry; each entry one
 * 8-byte load, so an entry software rewrites is never torn.
 */
static bool gmem_sys_read_ptes(GmemAccelState *s, uint64_t addr,
                               uint64_t *pte, unsigned n)
{
    hwaddr at;
    AddressSpace *as = gmem_atc_lookup(s, addr, n * sizeof(*pte), false, &at);
    MemoryRegion *mr;
    hwaddr xlat, len;

    RCU_READ_LOCK_GUARD();
    len = n * sizeof(*pte);
    mr = address_space_translate(as, at, &xlat, &len, false,
                                 MEMTXATTRS_UNSPECIFIED);
    if (len == n * sizeof(*pte) &&
        memory_access_is_direct(mr, false, MEMTXATTRS_UNSPECIFIED)) {
        const uint8_t *p = qemu_map_ram_ptr(mr->ram_block, xlat);

        for (unsigned i = 0; i < n; i++) {
            pte[i] = ldq_le_p(p + i * sizeof(*pte));
        }
        return true;
    }
    for (unsigned i = 0; i < n; i++) {
        len = sizeof(*pte);
        mr = address_space_translate(as, at + i * sizeof(*pte), &xlat, &len,
                                     false, MEMTXATTRS_UNSPECIFIED);
        if (len != sizeof(*pte) ||
            !memory_access_is_direct(mr, false, MEMTXATTRS_UNSPECIFIED)) {
            trace_gmem_accel_dma_not_ram(addr + i * sizeof(*pte),
                                         sizeof(*pte), false);
            return false;
        }
        pte[i] = ldq_le_p(qemu_map_ram_ptr(mr->ram_block, xlat));
    }
    return true;
}

/*
 * Until gmem_pte_lines_end(), a system-memory PTE is read with the rest of
 * its line of GMEM_PTE_LINE_ENTRIES, and the line serves the reads after
 * it: a step merged over 16 pages of 4 KiB then reads their entries once,
 * not 16 times. The window holds no event software could act on (no
 * completion, no interrupt, no register access: the BQL is held), so the
 * entries read early are what reading each in turn would have found.
 */
void gmem_pte_lines_begin(GmemAccelState *s)
{
    s->pte_line.on = true;
    s->pte_line.valid = false;
}

void gmem_pte_lines_end(GmemAccelState *s)
{
    s->pte_line.on = false;
    s->pte_line.valid = false;
}

/* Entries [@addr, + @n) from the line, read first if it is another one */
static bool gmem_pte_line_read(GmemAccelState *s, uint64_t addr,
                               uint64_t *pte, unsigned n)
{
    GmemPteLine *l = &s->pte_line;
    uint64_t base = addr & ~(uint64_t)(sizeof(l->pte) - 1);
    uint64_t first = (addr - base) / sizeof(*pte);

    if (addr & (sizeof(*pte) - 1) || first + n > GMEM_PTE_LINE_ENTRIES) {
        return false;
    }
    if (!l->valid || l->addr != base) {
        l->addr = base;
        l->valid = gmem_sys_read_ptes(s, base, l->pte, GMEM_PTE_LINE_ENTRIES);
        s->pte_reads++;
    }
    if (!l->valid) {
        return false;
    }
    memcpy(pte, &l->pte[first], n * sizeof(*pte));
    return true;
}

/* @n consecutive PTEs at @addr, one access to HBM or system memory */
static bool gmem_read_ptes(GmemAccelState *s, bool hbm, uint64_t addr,
                           uint64_t *pte, unsigned n)
{
    if (!hbm) {
        return gmem_sys_read_ptes(s, addr, pte, n);
    }
    if (!gmem_hbm_contains(s->hbm_size, addr, n * sizeof(*pte))) {
        return false;
    }
    for (unsigned i = 0; i < n; i++) {
        pte[i] = ldq_le_p(s->hbm_ptr + addr + i * sizeof(*pte));
    }
    return true;
}

/* The walker's reads: counted (QOM state pte-reads), served by a line */
bool gmem_read_pte(void *opaque, bool hbm, uint64_t addr, uint64_t *pte,
                   unsigned n)
{
    GmemAccelState *s = opaque;

    if (!hbm && s->pte_line.on && gmem_pte_line_read(s, addr, pte, n)) {
        return true;
    }
    s->pte_reads++;
    return gmem_read_ptes(s, hbm, addr, pte, n);
}

/* The monitor's: the tables as they are now, not counted */
bool gmem_peek_pte(void *opaque, bool hbm, uint64_t addr, uint64_t *pte,
                   unsigned n)
{
    return gmem_read_ptes(opaque, hbm, addr, pte, n);
}

bool gmem_mem_rw(GmemAccelState *s, bool hbm, uint64_t addr,
                        void *buf, uint64_t len, bool write)
{
    if (hbm) {
        if (!gmem_hbm_contains(s->hbm_size, addr, len)) {
            return false;
        }
        if (write) {
            memcpy(s->hbm_ptr + addr, buf, len);
            memory_region_set_dirty(&s->hbm, addr, len);
        } else {
            memcpy(buf, s->hbm_ptr + addr, len);
        }
        return true;
    }
    return gmem_sys_rw(s, addr, buf, len, write);
}

/*
 * System memory at bus address @addr, as pci_dma_rw(), through the ATC; false,
 * with nothing accessed, unless all of it is RAM (gmem_sys_is_ram()).
 */
bool gmem_sys_rw(GmemAccelState *s, uint64_t addr, void *buf, uint64_t len,
                 bool write)
{
    hwaddr at;
    AddressSpace *as = gmem_atc_lookup(s, addr, len, write, &at);
    bool ram;

    WITH_RCU_READ_LOCK_GUARD() {
        ram = gmem_sys_is_ram(as, at, len, write);
    }
    if (!ram) {
        trace_gmem_accel_dma_not_ram(addr, len, write);
    }
    return ram && dma_memory_rw(as, at, buf, len,
                                write ? DMA_DIRECTION_FROM_DEVICE
                                      : DMA_DIRECTION_TO_DEVICE,
                                MEMTXATTRS_UNSPECIFIED) == MEMTX_OK;
}

/*
 * A host pointer to @len bytes of system memory at bus address @addr, mapped
 * with pci_dma_map(), if all of them are one RAM region the device may access
 * directly; NULL for anything else (MMIO, holes, ROM for writes, bus mastering
 * off, RAM in more than one piece), which then goes through gmem_sys_rw(): RAM
 * in pieces works there, the rest fails.
 */
static void *gmem_sys_map(GmemAccelState *s, uint64_t addr, uint64_t len,
                          bool write)
{
    DMADirection dir = write ? DMA_DIRECTION_FROM_DEVICE
                             : DMA_DIRECTION_TO_DEVICE;
    hwaddr xlat, at, l = len;
    AddressSpace *as = gmem_atc_lookup(s, addr, len, write, &at);
    bool direct;
    void *p;

    WITH_RCU_READ_LOCK_GUARD() {
        MemoryRegion *mr = address_space_translate(as, at, &xlat, &l, write,
                                                   MEMTXATTRS_UNSPECIFIED);

        direct = l == len &&
                 memory_access_is_direct(mr, write, MEMTXATTRS_UNSPECIFIED);
    }
    if (!direct) {
        return NULL;
    }
    l = len;
    p = dma_memory_map(as, at, &l, dir, MEMTXATTRS_UNSPECIFIED);
    if (p && l < len) {
        dma_memory_unmap(as, p, l, dir, 0);
        return NULL;
    }
    return p;
}

/* A host pointer to @len bytes of HBM or system RAM, or NULL (see above). */
void *gmem_mem_map(GmemAccelState *s, bool hbm, uint64_t addr,
                          uint64_t len, bool write)
{
    if (hbm) {
        return gmem_hbm_contains(s->hbm_size, addr, len) ? s->hbm_ptr + addr
                                                          : NULL;
    }
    return gmem_sys_map(s, addr, len, write);
}

/* Done with gmem_mem_map()'s @p: mark what was @written dirty. */
void gmem_mem_unmap(GmemAccelState *s, bool hbm, uint64_t addr,
                           void *p, uint64_t len, bool write, bool written)
{
    if (hbm) {
        if (written) {
            memory_region_set_dirty(&s->hbm, addr, len);
        }
        return;
    }
    /* (RAM only: which address space mapped it does not matter) */
    pci_dma_unmap(PCI_DEVICE(s), p, len,
                  write ? DMA_DIRECTION_FROM_DEVICE : DMA_DIRECTION_TO_DEVICE,
                  written ? len : 0);
}

/*
 * Map a COPY's two sides, @len bytes each: @tgt[0] to read, @tgt[1] to
 * write. True with both in @p; false with neither (one is not RAM).
 */
bool gmem_copy_map(GmemAccelState *s, const GmemTarget *tgt, uint64_t len,
                   uint8_t **p)
{
    p[0] = gmem_mem_map(s, tgt[0].hbm, tgt[0].addr, len, false);
    p[1] = p[0] ? gmem_mem_map(s, tgt[1].hbm, tgt[1].addr, len, true) : NULL;
    if (p[0] && !p[1]) {
        gmem_mem_unmap(s, tgt[0].hbm, tgt[0].addr, p[0], len, false, false);
    }
    return p[1];
}

/* Done with gmem_copy_map()'s @p: the destination dirty if @written */
void gmem_copy_unmap(GmemAccelState *s, const GmemTarget *tgt, uint64_t len,
                     uint8_t *const *p, bool written)
{
    gmem_mem_unmap(s, tgt[1].hbm, tgt[1].addr, p[1], len, true, written);
    gmem_mem_unmap(s, tgt[0].hbm, tgt[0].addr, p[0], len, false, false);
}

uint64_t gmem_load_elem(const void *p, unsigned width)
{
    return width == 8 ? ldq_le_p(p) : ldl_le_p(p);
}

void gmem_store_elem(void *p, unsigned width, uint64_t v)
{
    if (width == 8) {
        stq_le_p(p, v);
    } else {
        stl_le_p(p, v);
    }
}

/* Add to a naturally aligned element, atomically against the guest CPUs. */
static void gmem_atomic_add_host(void *p, unsigned width, uint64_t add)
{
    if (width == 8) {
        uint64_t *p64 = p, old = qatomic_read(p64), seen;

        while ((seen = qatomic_cmpxchg(p64, old,
                    cpu_to_le64(le64_to_cpu(old) + add))) != old) {
            old = seen;
        }
    } else {
        uint32_t *p32 = p, old = qatomic_read(p32), seen;

        while ((seen = qatomic_cmpxchg(p32, old,
                    cpu_to_le32(le32_to_cpu(old) + (uint32_t)add))) != old) {
            old = seen;
        }
    }
}

/*
 * An atomic add to each of the @len bytes' elements at @addr, to RAM only:
 * anything else (a hole, another device's registers) would be a read and a
 * write, not one atomic access, and address_space_map() hands back a bounce
 * buffer for it. false then, with nothing added, and the command fails with
 * BAD_ADDRESS, as a COPY there does.
 */
bool gmem_mem_atomic_add(GmemAccelState *s, bool hbm, uint64_t addr,
                         uint64_t len, unsigned width, uint64_t add)
{
    uint8_t *p = gmem_mem_map(s, hbm, addr, len, true);

    if (!p) {
        return false;
    }
    for (uint64_t i = 0; i < len; i += width) {
        gmem_atomic_add_host(p + i, width, add);
    }
    gmem_mem_unmap(s, hbm, addr, p, len, true, true);
    return true;
}

