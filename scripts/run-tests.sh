#!/bin/bash
# Run every gmem-accel test: the host tests (no guest kernel: device properties, script
# options, the result parser) and the guest suite in a booted VM. Installs the Debian packages
# it needs and builds what is missing. Ends with "N passed, N failed"; non-zero on any failure.
#   scripts/run-tests.sh [run-vm.sh options for the guest suite, e.g. --accel kvm]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
. "$repo/scripts/lib/cache.sh"
. "$repo/scripts/lib/build.sh"

results=$(mktemp -d "${TMPDIR:-/tmp}/gmem-accel-tests.XXXXXX")
trap 'rm -rf "$results"' EXIT

gmem_build
step "host tests"
/usr/bin/python3 "$repo/scripts/lib/tap_summary.py" --run-host-tests "$GMEM_BUILD" "$results/host.log"
step "guest suite"
# run-vm.sh's own guest-only count is relabelled: the last line is the combined one.
"$repo/scripts/run-vm.sh" --no-build --results "$results/guest.log" "$@" 2>&1 |
	sed -E 's/^([0-9]+ passed, [0-9]+ failed.*)$/  guest only: \1/' || true
step "summary (host + guest)"
/usr/bin/python3 "$repo/scripts/lib/tap_summary.py" "$results/host.log" "$results/guest.log"
