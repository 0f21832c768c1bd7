#!/bin/bash
# Benchmarks: build what is missing, boot a VM per guest kernel, run the same hmm-bench against
# gmem-accel and lib/test_hmm.ko, measure host memcpy in the same run, print a table per kernel
# and write them to docs/benchmarks.md (regenerated here, never edited by hand). Every figure
# is the median over --boots VM boots per kernel (default 3: one boot's figures vary by 20-40 %
# under TCG). Installs the Debian packages it needs. No figure is asserted anywhere.
#   scripts/run-bench.sh [--no-write] [--boots N] [run-vm.sh options, e.g. --accel kvm]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
. "$repo/scripts/lib/cache.sh"
. "$repo/scripts/lib/build.sh"

write=1 accel=tcg boots=3
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--no-write) write=0 ;;
	--boots)
		[ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]?$ ]] || die "--boots needs a number of boots, 1 to 99"
		boots=$2; shift ;;
	--accel) [ $# -ge 2 ] || die "--accel needs a value: tcg or kvm"; accel=$2; args+=("$1" "$2"); shift ;;
	# (before anything is built: a run is 4-10 minutes once built)
	-h | --help) sed -n '2,7s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) args+=("$1") ;;
	esac
	shift
done
results=$(mktemp -d "${TMPDIR:-/tmp}/gmem-accel-bench.XXXXXX")
trap 'rm -rf "$results"' EXIT

gmem_build "${GMEM_KERNELS[@]}"
files=()
for k in "${GMEM_KERNELS[@]}"; do
	for b in $(seq "$boots"); do
		# The physical limit, measured beside each boot: the host's speed drifts too.
		"$GMEM_BUILD/host-tests/memcpy-bench" 64 >>"$results/memcpy-$k.log"
		step "benchmarks in the guest on Linux $k, boot $b of $boots (gmem-accel, then test_hmm.ko; 0.5-2 minutes under TCG)"
		"$repo/scripts/run-vm.sh" --no-build --prealloc --kernel "$k" "${args[@]}" \
			--run /usr/libexec/gmem-accel/bench.sh >"$results/vm-$k-$b.log" 2>&1 ||
			{ tail -n 30 "$results/vm-$k-$b.log" >&2; die "the guest benchmark on Linux $k failed (output above)"; }
	done
	{
		grep -hE '^BENCH' "$results/vm-$k"-*.log "$results/memcpy-$k.log"
		echo "BENCH-INFO boots $boots"
		echo "BENCH-INFO date $(date -u +%Y-%m-%d)"
		echo "BENCH-INFO accel $accel"
		echo "BENCH-INFO memory guest RAM and HBM allocated on the host before boot (run-vm.sh --prealloc)"
		echo "BENCH-INFO cpu $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores"
		echo "BENCH-INFO host $(. /etc/os-release && echo "$PRETTY_NAME"), Linux $(uname -r)"
		echo "BENCH-INFO qemu $("$GMEM_BUILD/qemu-system-x86_64" --version | head -n 1)"
	} >"$results/bench-$k.txt"
	files+=("$results/bench-$k.txt")
done
svg=()
[ "$write" = 0 ] || svg=(--svg-dir "$repo/docs")
table=$(/usr/bin/python3 "$repo/scripts/lib/bench_table.py" "${svg[@]}" "${files[@]}")
echo "$table"
if [ "$write" = 1 ]; then
	printf '%s\n' "$table" >"$repo/docs/benchmarks.md"
	step "written to docs/benchmarks.md"
fi
