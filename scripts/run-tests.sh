#!/bin/bash
# Run every gmem-accel test: the host tests (device properties, script options, the result
# parser, qtests, the fuzz smoke, and VMs booted for the monitor cross-check, hotplug and HBM
# sizes on each guest kernel) and the guest suite in a booted VM on each guest kernel (7.3,
# 6.12), and on the debug variant (KASAN, lockdep, DEBUG_VM, kmemleak: any report fails the
# suite's kernel_log test) of those in GMEM_DEBUG_KERNELS (default: 7.3, the default kernel; a
# cold build of a debug kernel and its suite cost ~17 min each, so CI's 90 min hold one:
# GMEM_DEBUG_KERNELS="7.3 6.12" runs both). Installs the Debian packages it needs and builds
# what is missing. Ends with "N passed, N failed"; non-zero on any failure.
#   scripts/run-tests.sh [run-vm.sh options for the guest suites, e.g. --accel kvm]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
. "$repo/scripts/lib/cache.sh"
. "$repo/scripts/lib/build.sh"

read -r -a debug_kernels <<<"${GMEM_DEBUG_KERNELS-${GMEM_KERNELS[0]}}"
for k in "${debug_kernels[@]}"; do
	[[ " ${GMEM_KERNELS[*]} " == *" $k "* ]] ||
		die "GMEM_DEBUG_KERNELS='${GMEM_DEBUG_KERNELS:-}': '$k' is none of the guest kernels (${GMEM_KERNELS[*]})"
done
results=$(mktemp -d "${TMPDIR:-/tmp}/gmem-accel-tests.XXXXXX")
trap 'rm -rf "$results"' EXIT

gmem_build "${GMEM_KERNELS[@]}" "${debug_kernels[@]/#/debug-}" sanitize
step "host tests"
/usr/bin/python3 "$repo/scripts/lib/tap_summary.py" --run-host-tests "$GMEM_BUILD" "$results/host.log"
# run-vm.sh's own guest-only counts are relabelled: the last line is the combined one. Each
# suite has a time limit (~8x its time here; options given to this script come after, and win)
# so that a wedged guest fails its suite rather than the whole run.
logs=("$results/host.log")
for k in "${GMEM_KERNELS[@]}"; do
	step "guest suite on Linux $k"
	"$repo/scripts/run-vm.sh" --no-build --kernel "$k" --timeout 900 \
		--results "$results/guest-$k.log" "$@" 2>&1 |
		sed -E "s/^([0-9]+ passed, [0-9]+ failed.*)\$/  guest (Linux $k) only: \1/" || true
	logs+=("$results/guest-$k.log")
	[[ " ${debug_kernels[*]} " == *" $k "* ]] || continue
	step "guest suite on Linux $k, debug kernel"
	"$repo/scripts/run-vm.sh" --no-build --kernel "$k" --debug-kernel --timeout 3000 \
		--results "$results/guest-$k-debug.log" "$@" 2>&1 |
		sed -E "s/^([0-9]+ passed, [0-9]+ failed.*)\$/  guest (Linux $k, debug kernel) only: \1/" || true
	logs+=("$results/guest-$k-debug.log")
done
step "summary (host + the guest suites: ${GMEM_KERNELS[*]}; debug kernel: ${debug_kernels[*]:-none})"
/usr/bin/python3 "$repo/scripts/lib/tap_summary.py" "${logs[@]}"
