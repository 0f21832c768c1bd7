/*
 * Stand-in for QEMU's qemu/osdep.h when the device's QEMU-free core
 * (hw/gmem-accel/gmem-accel-{pt,tlb,cmd}.c) is built into host unit tests.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QEMU_OSDEP_H
#define QEMU_OSDEP_H

#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#define QEMU_BUILD_BUG_ON(x) G_STATIC_ASSERT(!(x))

#endif
