#!/bin/sh
# Guest half of scripts/run-bench.sh: the same hmm-bench against gmem-accel's first
# device-private device and against lib/test_hmm.ko's first device, one after the other.
. /usr/libexec/gmem-accel/gmem_devices.sh
bench=/usr/libexec/gmem-accel/hmm-bench
set -- $(gmem_devices private)
dev=$1
[ -n "$dev" ] || { echo "bench: no device-private gmem-accel device"; exit 1; }
echo "BENCH-INFO guest_kernel $(uname -r)"
# The guest CPU as booted: under TCG, run-vm.sh's -cpu max without ERMS and FSRM.
flags=" $(sed -n 's/^flags[[:space:]]*: //p' /proc/cpuinfo | head -n 1) "
case $flags in *" erms "*) strings=ERMS ;; *) strings="no ERMS" ;; esac
echo "BENCH-INFO guest_cpu $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $strings"
echo "BENCH-INFO guest_clock $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
echo "BENCH-INFO thp $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled)"
# As around hmm-tests: a NUMA balancing scan or a khugepaged collapse in the middle of a timed
# run moves either driver's figures. test_hmm's MIGRATE_TO_DEV failed with ENOENT once with
# them on (6.12, one boot of three: a page migrate_vma_setup() skipped, as one they hold is).
mm_scanners_quiet
trap mm_scanners_restore EXIT
echo "BENCH-INFO scanners NUMA balancing off, khugepaged idle"
# hmm-tests' own benchmark_thp_migration (7.3's tree has it): its table as lines
#   BENCH-THP <who> <MiB> <to device THP ms> <to device 4K ms> <to system THP ms> <to system 4K ms>
thp_bench() {
	/usr/libexec/gmem-accel/hmm-tests -r hmm.hmm_device_private.benchmark_thp_migration 2>&1 |
		awk -v who="$1" '
			/^=== .* MB\) ===/ { gsub(/.*\(|MB\).*/, ""); mib = $0 }
			/^Sys->Dev Migration/ { split($0, f, "|"); s_thp = f[2] + 0; s_4k = f[3] + 0 }
			/^Dev->Sys Migration/ { split($0, f, "|");
				printf "BENCH-THP %s %s %s %s %s %s\n", who, mib, s_thp, s_4k, f[2] + 0, f[3] + 0 }'
}
# (the harness lists its tests on standard error)
has_thp_bench() {
	/usr/libexec/gmem-accel/hmm-tests -l 2>&1 | grep -q benchmark_thp_migration
}
most="faults migration concurrent device-faults dma oversubscription"
# The test_hmm workloads on the device's own commands, run the same on either front end.
device="device-concurrent device-migration device-oversubscription"
"$bench" gmem-accel /dev/gmem_dmirror"$dev" "$dev" $most $device || exit 1
# The same device's own commands on its DRM accel front end (Linux 7.3: drm_gpusvm).
drm=""
[ ! -d /sys/class/accel ] || drm=1
[ -z "$drm" ] || "$bench" gmem-drm accel "$dev" device-faults $device || exit 1
if has_thp_bench; then
	ln -sfn gmem_dmirror"$dev" /dev/hmm_dmirror0
	thp_bench gmem-accel
	rm -f /dev/hmm_dmirror0
fi
# The memory policies, each on and off (gmem-accel's own: test_hmm has none).
/usr/libexec/gmem-accel/policy-bench "$dev" || exit 1
insmod /lib/modules/test_hmm.ko || exit 1
trap 'rmmod test_hmm; mm_scanners_restore' EXIT
"$bench" test_hmm /dev/hmm_dmirror0 - $most || exit 1
has_thp_bench && thp_bench test_hmm
# The single-page latencies last, the two drivers' runs taking turns: under TCG a stretch of
# a second or more runs every guest path about twice as slow (both drivers, pinned to a vCPU
# or not; docs/performance.md, "The machine the figures come from"), and one run of each,
# minutes apart, would compare whichever stretch each hit.
for round in 1 2 3 4 5 6 7; do
	"$bench" gmem-accel /dev/gmem_dmirror"$dev" "$dev" latency device-latency || exit 1
	"$bench" test_hmm /dev/hmm_dmirror0 - latency || exit 1
	[ -z "$drm" ] || "$bench" gmem-drm accel "$dev" device-latency || exit 1
done
