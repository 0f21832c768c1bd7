#!/bin/bash
# The soak: build what is missing, boot the VM (the debug kernel unless --normal-kernel) and
# run the ioctl fuzzer and the multi-process and race tests round after round for MINUTES,
# then check every device is back at baseline and the kernel log is clean. Not part of the
# test command (it takes as long as it is told); issue 16's "Done when" is a 30-minute run.
#   scripts/run-soak.sh [--minutes N] [--normal-kernel] [--kernel 7.3|6.12] [run-vm.sh options]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
. "$repo/scripts/lib/cache.sh"
. "$repo/scripts/lib/build.sh"

minutes=30 debug=1 kver=7.3
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--minutes)
		[ $# -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]] ||
			die "--minutes needs a whole number of minutes, e.g. --minutes 30"
		minutes=$2; shift ;;
	--normal-kernel) debug=0 ;;
	--kernel) [ $# -ge 2 ] || die "--kernel needs a value: 7.3 or 6.12"; kver=$2; args+=("$1" "$2"); shift ;;
	*) args+=("$1") ;;
	esac
	shift
done
if [ "$debug" = 1 ]; then
	gmem_build "$kver" debug
	args+=(--debug-kernel)
else
	gmem_build "$kver"
fi
step "soak: $minutes minutes of the fuzzer and the race tests$([ "$debug" = 1 ] && echo " on the debug kernel")"
"$repo/scripts/run-vm.sh" --no-build --timeout $((minutes * 60 + 3600)) "${args[@]}" \
	--run "/usr/libexec/gmem-accel/soak.sh $minutes"
