#!/bin/bash
# Run every gmem-accel test: the host tests (no guest kernel: device properties, script
# options, the result parser) and the guest suite in a booted VM, once on the guest kernel and
# once on its debug variant (KASAN, lockdep, DEBUG_VM, kmemleak: any report fails the suite's
# kernel_log test). Installs the Debian packages it needs and builds what is missing. Ends
# with "N passed, N failed"; non-zero on any failure.
#   scripts/run-tests.sh [run-vm.sh options for the guest suites, e.g. --accel kvm]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
. "$repo/scripts/lib/cache.sh"
. "$repo/scripts/lib/build.sh"

results=$(mktemp -d "${TMPDIR:-/tmp}/gmem-accel-tests.XXXXXX")
trap 'rm -rf "$results"' EXIT

gmem_build debug sanitize
step "host tests"
/usr/bin/python3 "$repo/scripts/lib/tap_summary.py" --run-host-tests "$GMEM_BUILD" "$results/host.log"
# run-vm.sh's own guest-only counts are relabelled: the last line is the combined one.
step "guest suite"
"$repo/scripts/run-vm.sh" --no-build --results "$results/guest.log" "$@" 2>&1 |
	sed -E 's/^([0-9]+ passed, [0-9]+ failed.*)$/  guest only: \1/' || true
step "guest suite on the debug kernel"
"$repo/scripts/run-vm.sh" --no-build --debug-kernel --results "$results/guest-debug.log" "$@" 2>&1 |
	sed -E 's/^([0-9]+ passed, [0-9]+ failed.*)$/  guest (debug kernel) only: \1/' || true
step "summary (host + guest + guest on the debug kernel)"
/usr/bin/python3 "$repo/scripts/lib/tap_summary.py" "$results/host.log" "$results/guest.log" \
	"$results/guest-debug.log"
