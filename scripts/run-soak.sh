#!/bin/bash
# The soak: build what is missing, boot the VM (the debug kernel unless --normal-kernel, or the
# KCSAN kernel with --kcsan: the data-race detector, for changes that touch locking) and run
# the ioctl fuzzer and the multi-process and race tests round after round for MINUTES, then
# check every device is back at baseline and the kernel log is clean. Not part of the test
# command (it takes as long as it is told).
#   scripts/run-soak.sh [--minutes N] [--normal-kernel|--kcsan] [--kernel VERSION]
#                       [run-vm.sh options]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
. "$repo/scripts/lib/cache.sh"
. "$repo/scripts/lib/build.sh"

minutes=30 variant=debug kver=${GMEM_KERNELS[0]}
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--minutes)
		[ $# -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]] ||
			die "--minutes needs a whole number of minutes, e.g. --minutes 30"
		minutes=$2; shift ;;
	--normal-kernel) variant="" ;;
	--kcsan) variant=kcsan ;;
	-h | --help) sed -n '2,8s/^# \{0,1\}//p' "$0"; exit 0 ;;
	--kernel) [ $# -ge 2 ] || die "--kernel needs a value: $GMEM_KERNEL_CHOICES"; kver=$2; args+=("$1" "$2"); shift ;;
	*) args+=("$1") ;;
	esac
	shift
done
gmem_build "$kver" $variant
[ -z "$variant" ] || args+=("--$variant-kernel")
step "soak: $minutes minutes of the fuzzer and the race tests${variant:+ on the $variant kernel}"
"$repo/scripts/run-vm.sh" --no-build --timeout $((minutes * 60 + 3600)) "${args[@]}" \
	--run "/usr/libexec/gmem-accel/soak.sh $minutes"
