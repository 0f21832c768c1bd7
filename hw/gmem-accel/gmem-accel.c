/*
 * gmem-accel: emulated PCIe accelerator with its own HBM
 *
 * PCIe endpoint: BAR0 = registers + MSI-X, BAR2 = HBM (RAM-backed, 64-bit
 * prefetchable), ATS, PASID and PRI extended capabilities. The register
 * layout is the shared contract in gmem_accel_hw.h; docs/hardware-spec.md
 * describes it.
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

static void gmem_accel_set_error(GmemAccelState *s, uint32_t code,
                                 uint64_t info, const char *what)
{
    qemu_log_mask(LOG_GUEST_ERROR, "%s: %s (offset/value 0x%" PRIx64 ")\n",
                  TYPE_GMEM_ACCEL, what, info);
    trace_gmem_accel_error(code, info);
    s->status |= GMEM_STATUS_ERROR;
    s->error_code = code;
    s->error_info = info;
}

static uint32_t gmem_accel_caps(GmemAccelState *s)
{
    return GMEM_CAP_HBM |
           (s->ats ? GMEM_CAP_ATS : 0) |
           (s->pasid ? GMEM_CAP_PASID : 0) |
           (s->pri ? GMEM_CAP_PRI : 0);
}

/* Device-level reset: the registers and engines, not PCI config space. */
static void gmem_accel_reset_state(GmemAccelState *s, const char *why)
{
    trace_gmem_accel_reset(why);
    s->status = GMEM_STATUS_READY;
    s->error_code = GMEM_ERR_NONE;
    s->error_info = 0;
    s->scratch = 0;
}

static uint64_t gmem_accel_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    GmemAccelState *s = opaque;
    uint64_t val = 0;

    switch (addr) {
    case GMEM_REG_ID:
        val = GMEM_ID_MAGIC;
        break;
    case GMEM_REG_VERSION:
        val = GMEM_VERSION;
        break;
    case GMEM_REG_CAP:
        val = gmem_accel_caps(s);
        break;
    case GMEM_REG_NUM_VECTORS:
        val = GMEM_MSIX_VECTORS;
        break;
    case GMEM_REG_HBM_SIZE_LO:
        val = extract64(s->hbm_size, 0, 32);
        break;
    case GMEM_REG_HBM_SIZE_HI:
        val = extract64(s->hbm_size, 32, 32);
        break;
    case GMEM_REG_STATUS:
        val = s->status;
        break;
    case GMEM_REG_ERROR_CODE:
        val = s->error_code;
        break;
    case GMEM_REG_ERROR_INFO:
        val = s->error_info;
        break;
    case GMEM_REG_SCRATCH:
        val = s->scratch;
        break;
    case GMEM_REG_RESET:
        break; /* write-only, reads as zero */
    default:
        gmem_accel_set_error(s, GMEM_ERR_BAD_REG, addr,
                             "read of unknown register");
        break;
    }
    trace_gmem_accel_mmio_read(addr, val);
    return val;
}

static void gmem_accel_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                                  unsigned size)
{
    GmemAccelState *s = opaque;

    trace_gmem_accel_mmio_write(addr, val);
    switch (addr) {
    case GMEM_REG_SCRATCH:
        s->scratch = val;
        break;
    case GMEM_REG_ERROR_CODE:
        s->error_code = GMEM_ERR_NONE;
        s->error_info = 0;
        s->status &= ~GMEM_STATUS_ERROR;
        break;
    case GMEM_REG_RESET:
        if (val == GMEM_RESET_MAGIC) {
            gmem_accel_reset_state(s, "register");
        } else {
            gmem_accel_set_error(s, GMEM_ERR_BAD_RESET, val,
                                 "RESET written without GMEM_RESET_MAGIC");
        }
        break;
    case GMEM_REG_ID:
    case GMEM_REG_VERSION:
    case GMEM_REG_CAP:
    case GMEM_REG_NUM_VECTORS:
    case GMEM_REG_HBM_SIZE_LO:
    case GMEM_REG_HBM_SIZE_HI:
    case GMEM_REG_STATUS:
    case GMEM_REG_ERROR_INFO:
        gmem_accel_set_error(s, GMEM_ERR_READ_ONLY, addr,
                             "write to read-only register");
        break;
    default:
        gmem_accel_set_error(s, GMEM_ERR_BAD_REG, addr,
                             "write to unknown register");
        break;
    }
}

static bool gmem_accel_mmio_accepts(void *opaque, hwaddr addr, unsigned size,
                                    bool is_write, MemTxAttrs attrs)
{
    GmemAccelState *s = opaque;

    /* .impl splits 8-byte accesses; anything narrower is a guest error */
    if (size < 4 || (addr & 3)) {
        gmem_accel_set_error(s, GMEM_ERR_BAD_ACCESS, addr,
                             "register access not 4/8 bytes, aligned");
        return false;
    }
    return true;
}

static const MemoryRegionOps gmem_accel_mmio_ops = {
    .read = gmem_accel_mmio_read,
    .write = gmem_accel_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .accepts = gmem_accel_mmio_accepts,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

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
    memory_region_init_io(&s->regs, OBJECT(s), &gmem_accel_mmio_ops, s,
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

    gmem_accel_reset_state(s, "realize");
    trace_gmem_accel_realize(DEVICE(s)->id ?: "", s->hbm_size,
                             GMEM_MSIX_VECTORS);
}

static void gmem_accel_exit(PCIDevice *pdev)
{
    GmemAccelState *s = GMEM_ACCEL(pdev);

    msix_uninit(pdev, &s->bar0, &s->bar0);
}

static void gmem_accel_reset_hold(Object *obj, ResetType type)
{
    gmem_accel_reset_state(GMEM_ACCEL(obj), "bus");
}

static const VMStateDescription gmem_accel_vmstate = {
    .name = TYPE_GMEM_ACCEL,
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, GmemAccelState),
        VMSTATE_MSIX(parent_obj, GmemAccelState),
        VMSTATE_UINT32(status, GmemAccelState),
        VMSTATE_UINT32(error_code, GmemAccelState),
        VMSTATE_UINT32(error_info, GmemAccelState),
        VMSTATE_UINT32(scratch, GmemAccelState),
        VMSTATE_END_OF_LIST()
    },
};

static const Property gmem_accel_props[] = {
    DEFINE_PROP_SIZE("hbm-size", GmemAccelState, hbm_size, 256 * MiB),
    DEFINE_PROP_BOOL("ats", GmemAccelState, ats, true),
    DEFINE_PROP_BOOL("pasid", GmemAccelState, pasid, true),
    DEFINE_PROP_BOOL("pri", GmemAccelState, pri, true),
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
    object_class_property_set_description(klass, "ats",
        "ATS extended capability");
    object_class_property_set_description(klass, "pasid",
        "PASID extended capability");
    object_class_property_set_description(klass, "pri",
        "PRI (page request) extended capability, needs ats=on");
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
}

type_init(gmem_accel_register_types)
