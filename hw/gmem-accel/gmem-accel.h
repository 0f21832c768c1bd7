/*
 * gmem-accel: emulated PCIe accelerator with its own HBM (device state)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_GMEM_ACCEL_H
#define HW_GMEM_ACCEL_H

#include "hw/pci/pci_device.h"
#include "qom/object.h"
#include "gmem_accel_hw.h"

#define TYPE_GMEM_ACCEL "gmem-accel"
OBJECT_DECLARE_SIMPLE_TYPE(GmemAccelState, GMEM_ACCEL)

struct GmemAccelState {
    PCIDevice parent_obj;

    MemoryRegion bar0;          /* registers + MSI-X table/PBA */
    MemoryRegion regs;
    MemoryRegion hbm;           /* BAR2, RAM-backed */

    /* registers */
    uint32_t status;
    uint32_t error_code;
    uint32_t error_info;
    uint32_t scratch;

    /* properties */
    uint64_t hbm_size;
    bool ats;
    bool pasid;
    bool pri;
};

#endif
