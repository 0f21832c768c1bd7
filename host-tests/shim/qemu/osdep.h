/*
 * Stand-in for QEMU's qemu/osdep.h when the device's QEMU-free core
 * (hw/gmem-accel/gmem-accel-{pt,tlb,cmd}.c) is built into host unit tests.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef GMEM_TEST_SHIM_OSDEP_H
#define GMEM_TEST_SHIM_OSDEP_H

#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#endif
