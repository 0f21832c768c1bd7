#!/bin/sh
# The soak (scripts/run-soak.sh): for MINUTES (default 30), round after round, the ioctl
# fuzzer (a new seed each round, printed) and the multi-process and race tests; then every
# device back at baseline (no context, no HBM page in use) and the kernel log clean (KASAN,
# lockdep, soft lockups, RCU stalls, resource warnings: kernel_log.sh).
. /usr/libexec/gmem-accel/tap.sh

minutes=${1:-30}
end=$(($(date +%s) + minutes * 60))
round=0 failed=0
log=/tmp/soak.$$

# stat N NAME: a counter of device N (debugfs).
stat() {
	awk -v k="$2" '$1 == k { print $2 }' "/sys/kernel/debug/gmem_accel/gmem_accel$1/stats"
}

echo "# soak: $minutes minutes"
while [ "$(date +%s)" -lt "$end" ]; do
	round=$((round + 1))
	for t in "/tests/ioctl_fuzz_test" \
		 "/tests/hostile_test -t release_races_munmap -t eviction_races_munmap -t errno_reaches_its_command_on_a_shared_ring -t threads_on_one_file -t killed_at_every_step_of_a_migration -t fork_exec_exit_during_migration" \
		 "/tests/mirror_test -t many_processes -t killed_while_faulting" \
		 "/tests/hbm_test -t two_processes -t random_interleavings"; do
		if ! $t >"$log" 2>&1; then
			failed=$((failed + 1))
			echo "# round $round: $t failed:"
			grep -E '^not ok|Expected|seed|terminated' "$log" | head -n 20 | diag
		fi
		grep -E '^# seed' "$log" | sed "s/^/# round $round: /"
	done
	echo "# soak round $round done: $failed failures, $((end - $(date +%s))) s left"
done
rm -f "$log"

plan 2
check "$round rounds of the fuzzer and the race tests, none failed ($failed)" [ "$failed" = 0 ]
ok=1
for d in /sys/kernel/debug/gmem_accel/gmem_accel*; do
	n=${d##*gmem_accel}
	for k in contexts_now hbm_pages_now; do
		v=$(stat "$n" "$k")
		[ "$v" = 0 ] || { ok=0; echo "# device $n: $k $v"; }
	done
done
check "every device back at baseline: no context, no HBM page in use" [ "$ok" = 1 ]
s=$tap_failed
/usr/libexec/gmem-accel/kernel_log.sh || s=1
exit $((s > 0))
