#!/bin/bash
# Sixteen devices in one VM (the most run-vm.sh boots; 64 MiB of HBM each, half of them
# coherent): every device probes, the load test runs on all of them at once (four processes a
# device) and with every context of one device busy, and the kernel log stays clean.
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${GMEM_KERNEL:?set GMEM_KERNEL to a guest kernel of images/kernels}" "${REPO:?set REPO to the checkout}"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
t=/tests k=/usr/libexec/gmem-accel
plan 4
"$REPO/scripts/run-vm.sh" --no-build --kernel "$GMEM_KERNEL" --devices 16 --hbm-size 64M --timeout 2400 \
	--run "ls -d /sys/class/gmem_accel/gmem_accel* | wc -l | sed 's/^/DEVICES /';
	       $t/load_test; echo LOAD_TEST \$?; $k/kernel_log.sh; echo KERNEL_LOG \$?" \
	>"$dir/vm.log" 2>&1
status=$?
tr -d '\r' <"$dir/vm.log" >"$dir/log"
check "all 16 devices probed" grep -q '^DEVICES 16$' "$dir/log"
check "load_test passes on 16 devices" grep -q '^LOAD_TEST 0$' "$dir/log"
check "the kernel log stays clean" grep -q '^KERNEL_LOG 0$' "$dir/log"
check "the VM ran to the end (exit $status)" grep -q '^KERNEL_LOG ' "$dir/log"
awk '/^# +RUN /{n=0} {b[n++]=$0} /^not ok/{for(i=0;i<n;i++)print b[i]; n=0}' "$dir/log" |
	head -n 200 | diag
tap_done
