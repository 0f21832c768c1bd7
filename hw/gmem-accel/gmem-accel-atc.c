/*
 * gmem-accel: the address-translation cache (ATC) of a device behind an
 * IOMMU. Each system-memory access of the engines is otherwise a
 * translation by the IOMMU (intel-iommu: a lock and two hash lookups), nine
 * of them in a one-page copy; the ATC keeps the last translations, as a PCIe
 * device keeps those ATS gave it, and drops them when the IOMMU says a
 * mapping went away: its unmap notifications, which an IOTLB invalidation of
 * the guest sends, as vhost keeps its device IOTLB. A MemoryListener on the device's
 * bus-master address space registers the notifiers where an IOMMU region
 * is, and its changes (translation off, bus mastering off) empty the cache.
 *
 * All of it runs under the BQL: the engines (vCPU and main-loop threads),
 * the IOMMU's invalidations (its registers), the listener.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/log.h"
#include "qemu/rcu.h"
#include "exec/memory.h"
#include "gmem-accel.h"
#include "trace.h"

struct GmemAtcIommu {
    IOMMUNotifier n;
    MemoryRegion *mr;
    GmemAccelState *s;
    QLIST_ENTRY(GmemAtcIommu) next;
};

static void gmem_atc_flush(GmemAccelState *s, const char *why)
{
    memset(s->atc, 0, sizeof(s->atc));
    s->atc_flushes++;
    trace_gmem_accel_atc_flush(why);
}

static void gmem_atc_unmap_notify(IOMMUNotifier *n, IOMMUTLBEntry *entry)
{
    GmemAtcIommu *iommu = container_of(n, GmemAtcIommu, n);

    gmem_atc_flush(iommu->s, "unmap");
}

static void gmem_atc_region_add(MemoryListener *listener,
                                MemoryRegionSection *section)
{
    GmemAccelState *s = container_of(listener, GmemAccelState, atc_listener);
    IOMMUMemoryRegion *iommu_mr;
    GmemAtcIommu *iommu;
    Error *err = NULL;
    Int128 end;

    if (!memory_region_is_iommu(section->mr)) {
        return;
    }
    iommu_mr = IOMMU_MEMORY_REGION(section->mr);
    end = int128_sub(int128_add(int128_make64(section->offset_within_region),
                                section->size), int128_one());
    iommu = g_new0(GmemAtcIommu, 1);
    iommu->mr = section->mr;
    iommu->s = s;
    iommu_notifier_init(&iommu->n, gmem_atc_unmap_notify,
                        IOMMU_NOTIFIER_UNMAP, section->offset_within_region,
                        int128_get64(end),
                        memory_region_iommu_attrs_to_index(
                            iommu_mr, MEMTXATTRS_UNSPECIFIED));
    if (memory_region_register_iommu_notifier(section->mr, &iommu->n,
                                              &err)) {
        /* No word when a mapping goes: never cache (see gmem_atc_lookup) */
        warn_report_err(err);
        g_free(iommu);
        s->atc_unusable = true;
        return;
    }
    QLIST_INSERT_HEAD(&s->atc_iommus, iommu, next);
    gmem_atc_flush(s, "iommu region added");
}

static void gmem_atc_region_del(MemoryListener *listener,
                                MemoryRegionSection *section)
{
    GmemAccelState *s = container_of(listener, GmemAccelState, atc_listener);
    GmemAtcIommu *iommu;

    if (!memory_region_is_iommu(section->mr)) {
        return;
    }
    QLIST_FOREACH(iommu, &s->atc_iommus, next) {
        if (iommu->mr == section->mr &&
            iommu->n.start == section->offset_within_region) {
            memory_region_unregister_iommu_notifier(iommu->mr, &iommu->n);
            QLIST_REMOVE(iommu, next);
            g_free(iommu);
            break;
        }
    }
    gmem_atc_flush(s, "iommu region removed");
}

/*
 * Listen from the first access on: a cold-plugged device's bus-master
 * address space is set up after realize, when the machine is done.
 */
static void gmem_atc_listen(GmemAccelState *s)
{
    s->atc_listener = (MemoryListener) {
        .name = "gmem-accel-atc",
        .region_add = gmem_atc_region_add,
        .region_del = gmem_atc_region_del,
    };
    QLIST_INIT(&s->atc_iommus);
    s->atc_listening = true;
    memory_listener_register(&s->atc_listener,
                             pci_get_address_space(PCI_DEVICE(s)));
}

void gmem_atc_unrealize(GmemAccelState *s)
{
    if (s->atc_listening) {
        memory_listener_unregister(&s->atc_listener);   /* region_del each */
        s->atc_listening = false;
    }
}

void gmem_atc_reset(GmemAccelState *s)
{
    gmem_atc_flush(s, "reset");
}

/*
 * The entry of @addr's 4 KiB page: a multiplicative hash, so that the
 * page-aligned rings, tables and buffers a command touches do not all fall
 * on one entry (page numbers modulo 64 did).
 */
static unsigned gmem_atc_index(uint64_t addr)
{
    QEMU_BUILD_BUG_ON(GMEM_ATC_ENTRIES != 64);
    return ((addr >> 12) * 0x9e3779b97f4a7c15ull) >> 58;
}

/*
 * Where the device's access to [@addr, + @len) of system memory (bus
 * addresses) lands: the address space and address the IOMMU's translation
 * gives, from the cache if it has it. Without an IOMMU, for an access that
 * crosses the translation's page, or one the IOMMU refuses: the device's
 * bus-master address space and @addr, which translate (and fail) as the
 * IOMMU says.
 */
AddressSpace *gmem_atc_lookup(GmemAccelState *s, uint64_t addr, uint64_t len,
                              bool write, hwaddr *xaddr)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    GmemAtcEntry *e = &s->atc[gmem_atc_index(addr)];
    IOMMUTLBEntry t;

    *xaddr = addr;
    if (!s->atc_on) {
        return as;
    }
    if (!s->atc_listening) {
        gmem_atc_listen(s);
    }
    if (QLIST_EMPTY(&s->atc_iommus) || s->atc_unusable || !len ||
        addr + len - 1 < addr) {
        return as;
    }
    if (e->valid && (addr & ~e->mask) == e->iova &&
        ((addr + len - 1) & ~e->mask) == e->iova && (!write || e->write)) {
        s->atc_hits++;
        *xaddr = e->target + (addr & e->mask);
        return e->as;
    }
    s->atc_misses++;
    WITH_RCU_READ_LOCK_GUARD() {
        t = address_space_get_iotlb_entry(as, addr, write,
                                          MEMTXATTRS_UNSPECIFIED);
    }
    if (t.perm == IOMMU_NONE || !t.target_as ||
        ((addr + len - 1) & ~t.addr_mask) != (addr & ~t.addr_mask)) {
        return as;
    }
    *e = (GmemAtcEntry) {
        .valid = true,
        .write = write,
        .iova = addr & ~t.addr_mask,
        .mask = t.addr_mask,
        .target = t.translated_addr & ~t.addr_mask,
        .as = t.target_as,
    };
    *xaddr = e->target + (addr & e->mask);
    return e->as;
}
