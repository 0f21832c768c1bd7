#!/bin/bash
# Build guest-driver/ as an out-of-tree module against the guest kernel's build directory.
#   build-driver.sh OUTPUT.ko KERNEL_BUILD_DIR_FILE [DEPFILE]
# DEPFILE (for meson/ninja) names every file of the module and guest-driver/ itself, so an
# edit, a new file or a removed one rebuilds it: no list of the driver's files is kept.
# Kbuild writes objects next to the sources, so it builds in a directory of symlinks inside
# the meson build tree and the checkout stays clean.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
out=$1
kdir=$(cat "$2")
depfile=${3:-}
work="$(cd "$(dirname "$out")" && pwd)/$(basename "$out" .ko).build"

mkdir -p "$work"
find "$work" -maxdepth 1 -type l -delete
for f in "$repo"/guest-driver/Kbuild "$repo"/guest-driver/*.[ch]; do
	ln -sfn "$f" "$work/$(basename "$f")"
done
step "building the gmem_accel module against $kdir"
make -s -C "$kdir" M="$work" GMEM_HW_INCLUDE="$repo/hw/gmem-accel" W=1 -j"$(nproc)" modules \
	>"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; die "module build failed (log: $work/build.log)"; }
grep -E 'warning:' "$work/build.log" >&2 || true
cp "$work/gmem_accel.ko" "$out"
if [ -n "$depfile" ]; then
	printf '%s:' "$out" >"$depfile.tmp"
	printf ' \\\n %s' "$repo/guest-driver" "$repo"/guest-driver/Kbuild "$repo"/guest-driver/*.[ch] \
		"$repo/hw/gmem-accel/gmem_accel_hw.h" >>"$depfile.tmp"
	echo >>"$depfile.tmp"
	mv "$depfile.tmp" "$depfile"
fi
