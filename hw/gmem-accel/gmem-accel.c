/*
 * gmem-accel: emulated PCIe accelerator with its own HBM
 *
 * PCIe endpoint: BAR0 = registers + MSI-X, BAR2 = HBM (RAM-backed, 64-bit
 * prefetchable), ATS, PASID and PRI extended capabilities. This file holds
 * the QOM device: properties, realize, reset and migration. The register
 * layout is the shared contract in gmem_accel_hw.h; docs/hardware-spec.md
 * describes it; gmem-accel.h lists the files, each calling only the ones
 * below it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "qemu/cutils.h"
#include "qapi/error.h"
#include "hw/pci/msix.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "gmem-accel.h"
#include "trace.h"

static void gmem_accel_init_pasid(PCIDevice *pdev, uint16_t offset)
{
    pcie_add_capability(pdev, PCI_EXT_CAP_ID_PASID, 1, offset,
                        PCI_EXT_CAP_PASID_SIZEOF);
    pci_set_word(pdev->config + offset + PCI_PASID_CAP,
                 (GMEM_PASID_WIDTH << 8) & PCI_PASID_CAP_WIDTH);
    pci_set_word(pdev->wmask + offset + PCI_PASID_CTRL, PCI_PASID_CTRL_ENABLE);
}

static void gmem_accel_init_pri(PCIDevice *pdev, uint16_t offset)
{
    pcie_add_capability(pdev, PCI_EXT_CAP_ID_PRI, 1, offset,
                        PCI_EXT_CAP_PRI_SIZEOF);
    pci_set_word(pdev->wmask + offset + PCI_PRI_CTRL, PCI_PRI_CTRL_ENABLE);
    /* Stopped while disabled with nothing outstanding, as PCIe says */
    pci_set_word(pdev->config + offset + PCI_PRI_STATUS,
                 PCI_PRI_STATUS_STOPPED);
    pci_set_long(pdev->config + offset + PCI_PRI_MAX_REQ,
                 GMEM_PRI_MAX_REQUESTS);
    pci_set_long(pdev->wmask + offset + PCI_PRI_ALLOC_REQ, UINT32_MAX);
}

static bool gmem_accel_check_props(GmemAccelState *s, Error **errp)
{
    if (!is_power_of_2(s->hbm_size) || s->hbm_size < GMEM_HBM_MIN_SIZE ||
        s->hbm_size > GMEM_HBM_MAX_SIZE) {
        g_autofree char *given = size_to_str(s->hbm_size);

        error_setg(errp, "hbm-size=%s is invalid: it must be a power of two "
                   "between 2 MiB and 64 GiB (e.g. hbm-size=256M)", given);
        return false;
    }
    if (!is_power_of_2(s->tlb_entries) || s->tlb_entries < 1 ||
        s->tlb_entries > GMEM_TLB_MAX_ENTRIES) {
        error_setg(errp, "tlb-entries=%u is invalid: it must be a power of "
                   "two from 1 to %u (e.g. tlb-entries=256)", s->tlb_entries,
                   GMEM_TLB_MAX_ENTRIES);
        return false;
    }
    if (s->walk_cache_entries &&
        (!is_power_of_2(s->walk_cache_entries) ||
         s->walk_cache_entries > GMEM_WALK_CACHE_MAX_ENTRIES)) {
        error_setg(errp, "walk-cache-entries=%u is invalid: it must be 0 (no "
                   "walk cache) or a power of two up to %u (e.g. "
                   "walk-cache-entries=64)", s->walk_cache_entries,
                   GMEM_WALK_CACHE_MAX_ENTRIES);
        return false;
    }
    if (s->movers > GMEM_MOVER_MAX_THREADS) {
        error_setg(errp, "movers=%u is invalid: it must be 0 (the engines "
                   "copy themselves) to %u threads (e.g. movers=2)",
                   s->movers, GMEM_MOVER_MAX_THREADS);
        return false;
    }
    if (s->pri && !s->ats) {
        error_setg(errp, "pri=on needs ats=on: page requests are part of ATS");
        return false;
    }
    return true;
}

static void gmem_accel_realize(PCIDevice *pdev, Error **errp)
{
    GmemAccelState *s = GMEM_ACCEL(pdev);
    uint16_t ext_cap;

    if (!gmem_accel_check_props(s, errp)) {
        return;
    }

    pdev->config[PCI_INTERRUPT_PIN] = 1;
    if (pcie_endpoint_cap_init(pdev, GMEM_CFG_EXP_OFFSET) < 0) {
        error_setg(errp, "cannot add the PCI Express capability");
        return;
    }

    memory_region_init(&s->bar0, OBJECT(s), "gmem-accel-bar0", GMEM_BAR0_SIZE);
    memory_region_init_io(&s->regs, OBJECT(s), &gmem_regs_ops, s,
                          "gmem-accel-regs", GMEM_REGS_SIZE);
    memory_region_add_subregion(&s->bar0, 0, &s->regs);
    pci_register_bar(pdev, GMEM_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->bar0);
    if (msix_init(pdev, GMEM_MSIX_VECTORS, &s->bar0, GMEM_BAR_REGS,
                  GMEM_MSIX_TABLE_OFFSET, &s->bar0, GMEM_BAR_REGS,
                  GMEM_MSIX_PBA_OFFSET, GMEM_CFG_MSIX_OFFSET, errp) < 0) {
        return;
    }
    for (unsigned i = 0; i < GMEM_MSIX_VECTORS; i++) {
        msix_vector_use(pdev, i);
    }

    if (!memory_region_init_ram(&s->hbm, OBJECT(s), "gmem-accel-hbm",
                                s->hbm_size, errp)) {
        msix_uninit(pdev, &s->bar0, &s->bar0);
        return;
    }
    /*
     * A real device's HBM is there from the start; QEMU's RAM is allocated
     * as it is first written, a host page fault per 2 MiB that the first
     * migrations into fresh HBM would pay.
     */
    if (s->hbm_prealloc &&
        !qemu_prealloc_mem(-1, memory_region_get_ram_ptr(&s->hbm), s->hbm_size,
                           1, NULL, false, errp)) {
        vmstate_unregister_ram(&s->hbm, DEVICE(s));
        msix_uninit(pdev, &s->bar0, &s->bar0);
        return;
    }
    pci_register_bar(pdev, GMEM_BAR_HBM, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &s->hbm);

    /* pcie_add_capability() wants the first one at 0x100: pack them */
    ext_cap = GMEM_CFG_EXT_CAP_BASE;
    if (s->ats) {
        pcie_ats_init(pdev, ext_cap, true);
        ext_cap += GMEM_CFG_EXT_CAP_STRIDE;
    }
    if (s->pasid) {
        gmem_accel_init_pasid(pdev, ext_cap);
        ext_cap += GMEM_CFG_EXT_CAP_STRIDE;
    }
    if (s->pri) {
        gmem_accel_init_pri(pdev, ext_cap);
    }

    gmem_engine_realize(s);
    gmem_accel_reset_state(s, "realize");
    trace_gmem_accel_realize(DEVICE(s)->id ?: "", s->hbm_size,
                             GMEM_MSIX_VECTORS);
}

static void gmem_accel_exit(PCIDevice *pdev)
{
    GmemAccelState *s = GMEM_ACCEL(pdev);

    gmem_engine_unrealize(s);
    gmem_atc_unrealize(s);
    msix_uninit(pdev, &s->bar0, &s->bar0);
    /*
     * The HBM's RAMBlock name is its PCI path: a device plugged into the same
     * slot before this one is finalized must be able to take it (as
     * pci_del_option_rom() does).
     */
    vmstate_unregister_ram(&s->hbm, DEVICE(s));
}

static void gmem_accel_reset_hold(Object *obj, ResetType type)
{
    gmem_accel_reset_state(GMEM_ACCEL(obj), "bus");
}

static const Property gmem_accel_props[] = {
    DEFINE_PROP_SIZE("hbm-size", GmemAccelState, hbm_size, 256 * MiB),
    DEFINE_PROP_UINT32("tlb-entries", GmemAccelState, tlb_entries, 256),
    DEFINE_PROP_UINT32("walk-cache-entries", GmemAccelState,
                       walk_cache_entries, 64),
    DEFINE_PROP_UINT32("movers", GmemAccelState, movers, 2),
    DEFINE_PROP_BOOL("ats", GmemAccelState, ats, true),
    DEFINE_PROP_BOOL("pasid", GmemAccelState, pasid, true),
    DEFINE_PROP_BOOL("pri", GmemAccelState, pri, true),
    DEFINE_PROP_BOOL("coherent", GmemAccelState, coherent, false),
    DEFINE_PROP_BOOL("hbm-prealloc", GmemAccelState, hbm_prealloc, false),
    DEFINE_PROP_BOOL("atc", GmemAccelState, atc_on, true),
};

static void gmem_accel_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = gmem_accel_realize;
    k->exit = gmem_accel_exit;
    k->vendor_id = GMEM_PCI_VENDOR_ID;
    k->device_id = GMEM_PCI_DEVICE_ID;
    k->revision = GMEM_PCI_REVISION;
    k->class_id = GMEM_PCI_CLASS_CODE;
    rc->phases.hold = gmem_accel_reset_hold;

    dc->desc = "gmem-accel heterogeneous-memory accelerator with HBM";
    dc->vmsd = &gmem_accel_vmstate;
    device_class_set_props(dc, gmem_accel_props);
    object_class_property_set_description(klass, "hbm-size",
        "device memory (BAR2) size, a power of two from 2M to 64G");
    object_class_property_set_description(klass, "tlb-entries",
        "device TLB size in translations, a power of two");
    object_class_property_set_description(klass, "walk-cache-entries",
        "page-walk cache size in 2 MiB regions, a power of two (0: none)");
    object_class_property_set_description(klass, "ats",
        "ATS extended capability");
    object_class_property_set_description(klass, "pasid",
        "PASID extended capability");
    object_class_property_set_description(klass, "pri",
        "PRI (page request) extended capability, needs ats=on");
    object_class_property_set_description(klass, "hbm-prealloc",
        "allocate the HBM's host memory at realize, not as it is first written");
    gmem_monitor_class_init(klass);
    gmem_inject_class_init(klass);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo gmem_accel_info = {
    .name = TYPE_GMEM_ACCEL,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(GmemAccelState),
    .class_init = gmem_accel_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void gmem_accel_register_types(void)
{
    type_register_static(&gmem_accel_info);
    gmem_monitor_register();
}

type_init(gmem_accel_register_types)
