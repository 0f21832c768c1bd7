#!/bin/sh
# For the record: the same hmm-tests build against lib/test_hmm.ko, the kernel's software
# reference, in the same VM. Its own results are kept as comments ("# ref: ..."); what is
# checked is what docs/hmm-tests.md says about them. On 6.12:
#   1. every test passes except exclusive, exclusive_mprotect and exclusive_cow (the
#      coherent variants skip: test_hmm needs reserved SPM memory for them);
#   2. those three fail with -EBUSY while THP is "always" (their buffers are THP-backed);
#   3. they pass with THP "never": make_device_exclusive_range() of 6.12 refuses the tail
#      pages of a large folio, which is the whole cause.
# On 7.3 (make_device_exclusive() takes pages of large folios): every test passes or skips
# (on the debug kernel, less benchmark_thp_migration: hmm_tests_filter, gmem_devices.sh).
. /usr/libexec/gmem-accel/tap.sh
. /usr/libexec/gmem-accel/gmem_devices.sh
hmm_tests=/usr/libexec/gmem-accel/hmm-tests
exclusive="exclusive exclusive_mprotect exclusive_cow"
thp=/sys/kernel/mm/transparent_hugepage/enabled
out=/tmp/hmm-tests-reference.tap

case "$(uname -r)" in
6.12*) lts=1; plan 3 ;;
*) lts=0; exclusive="-"; plan 1 ;;
esac
if ! insmod /lib/modules/test_hmm.ko; then
	echo "Bail out! cannot load test_hmm.ko"
	exit 1
fi
mm_scanners_quiet	# (why: gmem_devices.sh)
hugepages=$(cat /proc/sys/vm/nr_hugepages)
trap 'echo always >$thp; echo "$hugepages" >/proc/sys/vm/nr_hugepages; mm_scanners_restore
      rmmod test_hmm' EXIT
echo always >$thp
echo 8 >/proc/sys/vm/nr_hugepages	# as for gmem-accel: the hugetlbfs tests run
"$hmm_tests" $(hmm_tests_filter) >$out 2>&1
sed 's/^/# ref: /' $out

others=$(grep '^not ok' $out | grep -vE "\.($(echo $exclusive | tr ' ' '|'))\$")
passed=$(grep -c '^ok' $out)
# The reference is not ours to fix: a test of it that fails once (test_hmm's migrations fail
# with -ENOENT now and then on the debug kernel) runs once more, alone, and counts if it fails
# again. Both runs are printed. A test that outlasts the harness's fixed timeout both times
# does not count: test_hmm copies on the CPU, so its time grows with the host's load, and
# tests with a fixed timeout (migrate_remap_fault's 30 s, benchmark_thp_migration's 120 s)
# can outlast it where gmem-accel's device copies stay well inside.
slow=""
if [ -n "$others" ]; then
	again=""
	for t in $(echo "$others" | sed -E 's/^not ok [0-9]+ //'); do
		"$hmm_tests" -r "$t" >$out.again 2>&1
		sed "s/^/# ref, $t once more: /" $out.again
		grep -q '^ok' $out.again && continue
		timed_out="# ${t##*.}: Test terminated by timeout"
		if grep -q "^$timed_out" $out && grep -q "^$timed_out" $out.again; then
			echo "# ref: $t outlasted hmm-tests' timeout twice: not counted"
			slow="$slow ${t##*.}"
			continue
		fi
		again="$again
not ok (twice) $t"
	done
	others=$(echo "$again" | sed '/^$/d')
fi
if [ -z "$others" ] && [ "$passed" -gt 0 ]; then
	ok "reference: all $passed $([ $lts = 1 ] && echo "other ")tests pass or skip${slow:+ (too slow here:$slow)}"
else
	not_ok "reference: tests $([ $lts = 1 ] && echo "other than exclusive* ")failed:"
	echo "$others" | diag
fi
[ $lts = 1 ] || { tap_done; exit; }

ebusy=0
for t in $exclusive; do
	grep -q "^not ok .* hmm\.hmm_device_private\.$t\$" $out &&
		grep -q ":$t:Expected ret (-16) == 0" $out && ebusy=$((ebusy + 1))
done
check "reference: $exclusive fail with -EBUSY on THP-backed memory ($ebusy of 3)" [ $ebusy = 3 ]

echo never >$thp
args=""
for t in $exclusive; do args="$args -r hmm.hmm_device_private.$t"; done
"$hmm_tests" $args >$out 2>&1
sed 's/^/# ref, THP never: /' $out
check "reference: the same three pass with THP never" [ "$(grep -c '^ok' $out)" = 3 ]
tap_done
