#!/bin/sh
# The kernel's own HMM selftests (tools/testing/selftests/mm/hmm-tests.c, built from the guest
# kernel's tree) against gmem-accel's test_hmm interface (/dev/gmem_dmirrorN, docs/hmm-tests.md).
# hmm-tests opens /dev/hmm_dmirror0-1 (device-private) and 2-3 (device-coherent): they become
# links to the nodes of the first two gmem-accel devices of each kind. Its TAP is ours.
. /usr/libexec/gmem-accel/gmem_devices.sh
hmm_tests=/usr/libexec/gmem-accel/hmm-tests
set -- $(gmem_devices private)
p0=$1 p1=$2
set -- $(gmem_devices coherent)
c0=$1 c1=$2
if [ -z "$p1" ] || [ -z "$c1" ]; then
	echo "1..0 # SKIP hmm-tests needs 2 device-private and 2 coherent gmem-accel devices" \
	     "(scripts/run-vm.sh --devices 4 --coherent 2)"
	exit 0
fi
for i in 0 1 2 3; do
	if [ -e /dev/hmm_dmirror$i ] && [ ! -L /dev/hmm_dmirror$i ]; then
		echo "Bail out! /dev/hmm_dmirror$i is taken: unload lib/test_hmm.ko first"
		exit 1
	fi
done
mm_scanners_quiet	# (why: gmem_devices.sh)
hugepages=$(cat /proc/sys/vm/nr_hugepages)
trap 'rm -f /dev/hmm_dmirror0 /dev/hmm_dmirror1 /dev/hmm_dmirror2 /dev/hmm_dmirror3;
      echo "$hugepages" >/proc/sys/vm/nr_hugepages; mm_scanners_restore' EXIT
ln -sfn gmem_dmirror"$p0" /dev/hmm_dmirror0
ln -sfn gmem_dmirror"$p1" /dev/hmm_dmirror1
ln -sfn gmem_dmirror"$c0" /dev/hmm_dmirror2
ln -sfn gmem_dmirror"$c1" /dev/hmm_dmirror3
# anon_write_hugetlbfs and compound need hugetlbfs pages.
echo 8 >/proc/sys/vm/nr_hugepages
echo "# hmm_dmirror0,1 -> gmem_dmirror$p0,$p1 (device-private), hmm_dmirror2,3 ->" \
     "gmem_dmirror$c0,$c1 (device-coherent); THP $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
# What the devices do for it (debugfs counters, before and after), so that nobody mistakes
# this for CPU copies.
counters="commands fault_groups migrated_to_device migrated_to_system evictions"
stats() { cat /sys/kernel/debug/gmem_accel/gmem_accel"$1"/stats 2>/dev/null; }
for n in $p0 $p1 $c0 $c1; do stats "$n" >/tmp/hmm-tests-stats.$n; done
"$hmm_tests" $(hmm_tests_filter)
status=$?
for n in $p0 $p1 $c0 $c1; do
	line="# gmem_accel$n during hmm-tests:"
	for c in $counters; do
		before=$(grep "^$c " /tmp/hmm-tests-stats.$n | cut -d' ' -f2)
		after=$(stats "$n" | grep "^$c " | cut -d' ' -f2)
		line="$line $c $((${after:-0} - ${before:-0}))"
	done
	echo "$line"
done
exit $status
