#!/bin/bash
# An HBM size that is not a whole number of memory sections (64 MiB; x86 sections are 128 MiB):
# the driver's life cycle (unbind/rebind gives the whole address range back), migration,
# eviction and the kernel log, on a device-private and a coherent device of that size. The
# suite's own VM uses 256 MiB, where a range released short by the rounding still matches.
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${GMEM_KERNEL:?set GMEM_KERNEL to a guest kernel of images/kernels}" "${REPO:?set REPO to the checkout}"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
t=/tests k=/usr/libexec/gmem-accel
plan 4
"$REPO/scripts/run-vm.sh" --no-build --kernel "$GMEM_KERNEL" --devices 2 --coherent 1 --hbm-size 64M --timeout 1800 \
	--run "$t/module_test; echo MODULE_TEST \$?; $t/hbm_test; echo HBM_TEST \$?;
	       $k/kernel_log.sh; echo KERNEL_LOG \$?" >"$dir/vm.log" 2>&1
status=$?
tr -d '\r' <"$dir/vm.log" >"$dir/log"
check "module_test passes with 64 MiB of HBM" grep -q '^MODULE_TEST 0$' "$dir/log"
check "hbm_test passes with 64 MiB of HBM" grep -q '^HBM_TEST 0$' "$dir/log"
check "the kernel log stays clean (no resource freed short)" grep -q '^KERNEL_LOG 0$' "$dir/log"
check "the VM ran to the end (exit $status)" grep -q '^KERNEL_LOG ' "$dir/log"
# A failing test's whole output, from its RUN line (its EXPECT lines come before "not ok").
awk '/^# +RUN /{n=0} {b[n++]=$0} /^not ok/{for(i=0;i<n;i++)print b[i]; n=0}' "$dir/log" |
	head -n 200 | diag
tap_done
