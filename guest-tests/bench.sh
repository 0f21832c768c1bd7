#!/bin/sh
# Guest half of scripts/run-bench.sh: the same hmm-bench against gmem-accel's first
# device-private device and against lib/test_hmm.ko's first device, one after the other.
. /usr/libexec/gmem-accel/gmem_devices.sh
bench=/usr/libexec/gmem-accel/hmm-bench
set -- $(gmem_devices private)
dev=$1
[ -n "$dev" ] || { echo "bench: no device-private gmem-accel device"; exit 1; }
echo "BENCH-INFO guest_kernel $(uname -r)"
echo "BENCH-INFO thp $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled)"
"$bench" gmem-accel /dev/gmem_dmirror"$dev" "$dev" || exit 1
insmod /lib/modules/test_hmm.ko || exit 1
"$bench" test_hmm /dev/hmm_dmirror0
status=$?
rmmod test_hmm
exit $status
