#!/bin/bash
# Run every gmem-accel test: the host tests (device properties, script options, the result
# parser, qtests, the fuzz smoke, and VMs booted for the monitor cross-check, hotplug and HBM
# sizes on each guest kernel) and the guest suite in a booted VM on each guest kernel (7.3,
# 6.12), and on the debug variant (KASAN, lockdep, DEBUG_VM, kmemleak: any report fails the
# suite's kernel_log test) of those in GMEM_DEBUG_KERNELS (default: the default kernel; a
# debug kernel's build and suite are the longest step, so CI's 90 min hold one:
# GMEM_DEBUG_KERNELS="7.3 6.12" runs both). The debug suites run beside the rest. Installs the
# Debian packages it needs and builds what is missing. Ends with "N passed, N failed"; non-zero
# on any failure.
#   scripts/run-tests.sh [run-vm.sh options for the guest suites, e.g. --accel kvm]
set -euo pipefail
case "${1:-}" in
-h | --help) sed -n '2,11s/^# \{0,3\}//p' "$0"; exit 0 ;;
esac
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
lane=""
# An interrupted run takes the debug lane (below) down with it: its own process group.
trap '[ -z "$lane" ] || kill -- -"$lane" 2>/dev/null; rm -rf "$results"' EXIT
vm_args=("$@")

# suite K [debug]: the guest suite on kernel K (its debug variant), results in
# $results/guest-K[-debug].log. run-vm.sh's own guest-only counts are relabelled: the last line
# is the combined one. Each suite has a time limit (several times its time alone; options given to
# this script come after, and win) so that a wedged guest fails its suite, not the whole run.
suite() {
	local k=$1 debug=${2:-} label="Linux $1${2:+, debug kernel}"
	step "guest suite on $label"
	"$repo/scripts/run-vm.sh" --no-build --kernel "$k" ${debug:+--debug-kernel} \
		--timeout "$([ -n "$debug" ] && echo 3600 || echo 1800)" \
		--results "$results/guest-$k${debug:+-debug}.log" "${vm_args[@]}" 2>&1 |
		sed -E "s/^([0-9]+ passed, [0-9]+ failed.*)\$/  guest ($label) only: \1/" || true
}

gmem_build "${GMEM_KERNELS[@]}" "${debug_kernels[@]/#/debug-}" sanitize
# The debug suites (the longest) run beside the host tests and the other suites: one TCG
# guest leaves part of the host's two cores idle, so two lanes finish sooner than one
# (docs/performance.md, "Two lanes"). Every test is made to pass on a loaded
# host. The lane's output is printed when it ends.
if [ ${#debug_kernels[@]} -gt 0 ]; then
	step "starting the debug kernel's suite (${debug_kernels[*]}) beside the others; its output comes when it ends"
	set -m
	for k in "${debug_kernels[@]}"; do suite "$k" debug; done >"$results/debug-lane.out" 2>&1 &
	lane=$!
	set +m
fi
step "host tests"
/usr/bin/python3 "$repo/scripts/lib/tap_summary.py" --run-host-tests "$GMEM_BUILD" "$results/host.log"
for k in "${GMEM_KERNELS[@]}"; do suite "$k"; done
if [ -n "$lane" ]; then
	step "waiting for the debug kernel's suite"
	n=0
	while kill -0 "$lane" 2>/dev/null; do
		sleep 5
		n=$((n + 1))
		[ $((n % 12)) != 0 ] || note "debug lane: $(grep -c '^GMEM-TEST-END' \
			"$results/debug-lane.out" || true) test programs done"
	done
	wait "$lane" || true
	lane=""
	cat "$results/debug-lane.out"
fi
logs=("$results/host.log")
for k in "${GMEM_KERNELS[@]}"; do
	logs+=("$results/guest-$k.log")
	[[ " ${debug_kernels[*]} " != *" $k "* ]] || logs+=("$results/guest-$k-debug.log")
done
step "summary (host + the guest suites: ${GMEM_KERNELS[*]}; debug kernel: ${debug_kernels[*]:-none})"
/usr/bin/python3 "$repo/scripts/lib/tap_summary.py" "${logs[@]}"
