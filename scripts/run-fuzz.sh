#!/bin/bash
# Fuzz the device over qtest for SECONDS (default 600): the structure-aware fuzzer
# host-tests/qtest/qtest_fuzz.c starts QEMU (its ASan+UBSan build) case after case with random
# devices and runs random guest actions, peers and migrations on each; every case must leave
# QEMU answering, and a sanitizer report kills QEMU, which fails the case.
# Prints the seed; a failing case prints its own seed, is appended to the corpus
# ($GMEM_CACHE/fuzz/corpus, replayed first on every run) and can be run alone:
#   scripts/run-fuzz.sh SECONDS [SEED]
#   build/gmem-accel-qtest-fuzz --seed CASE_SEED --cases 1   (with QTEST_QEMU_BINARY set)
# --generic: QEMU's own coverage-guided fuzzer instead (qemu-fuzz-x86_64, generic-fuzz, clang,
# libFuzzer and ASan) on a q35 machine with one gmem-accel, its corpus in
# $GMEM_CACHE/fuzz/generic-corpus and what it finds in $GMEM_CACHE/fuzz/generic-found/:
#   scripts/run-fuzz.sh --generic SECONDS [SEED]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
. "$repo/scripts/lib/cache.sh"
. "$repo/scripts/lib/build.sh"

generic=
if [ "${1:-}" = --generic ]; then
	generic=1
	shift
fi
seconds=${1:-600} seed=${2:-}
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || die "SECONDS must be a whole number, e.g. scripts/run-fuzz.sh 600"
[ -z "$seed" ] || [[ "$seed" =~ ^[0-9]+$ ]] || die "SEED must be a number (the one a run printed)"
mkdir -p "$GMEM_CACHE/fuzz"
if [ -n "$generic" ]; then
	"$repo/scripts/setup-host.sh"
	bin=$("$repo/scripts/build-qemu.sh" --libfuzzer | tail -n 1)
	mkdir -p "$GMEM_CACHE/fuzz/generic-corpus" "$GMEM_CACHE/fuzz/generic-found"
	step "QEMU's generic-fuzz on gmem-accel for $seconds s (corpus: $GMEM_CACHE/fuzz/generic-corpus)"
	QEMU_FUZZ_ARGS="-machine q35 -nodefaults -L /usr/share/seabios -L /usr/share/qemu -device gmem-accel,hbm-size=64M" \
	QEMU_FUZZ_OBJECTS="gmem-accel*" \
	ASAN_OPTIONS=detect_leaks=0 \
		"$bin" --fuzz-target=generic-fuzz -max_total_time="$seconds" ${seed:+-seed="$seed"} \
		-artifact_prefix="$GMEM_CACHE/fuzz/generic-found/" "$GMEM_CACHE/fuzz/generic-corpus"
	exit
fi
gmem_build sanitize
step "fuzzing the device (ASan+UBSan) for $seconds s (corpus: $GMEM_CACHE/fuzz/corpus)"
QTEST_QEMU_BINARY=$(readlink -f "$GMEM_BUILD/qemu-system-x86_64-san") \
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
GMEM_FUZZ_CORPUS="$GMEM_CACHE/fuzz/corpus" \
	"$GMEM_BUILD/gmem-accel-qtest-fuzz" --tap --seconds "$seconds" ${seed:+--seed "$seed"}
