# gmem_devices private|coherent: the N of every /dev/gmem_accelN of that kind (CAP bit 7,
# COHERENT), in order; hmm_tests_filter: the hmm-tests options both hmm-tests scripts pass.
# Sourced by the guest test and benchmark scripts (busybox sh).
gmem_devices() {
	for d in /sys/class/gmem_accel/gmem_accel*; do
		[ -e "$d" ] || continue
		if [ $(($(cat "$d/capabilities") & 0x80)) -ne 0 ]; then
			kind=coherent
		else
			kind=private
		fi
		[ "$kind" = "$1" ] && echo "${d##*gmem_accel}"
	done
	return 0
}

# On the debug kernel (KASAN, lockdep...: it has kmemleak) every page moves ~5x slower, and
# benchmark_thp_migration's page-by-page half of 256 MiB, 12 moves, outlasts the 120 s it gives
# itself (seen: gmem-accel's coherent variant), and test_hmm.ko's own migrations there fail with
# -ENOENT now and then (seen twice in a row). Its figures mean nothing there, and what it does
# is covered by the migrate_anon_huge_* tests; it runs on the kernel as built, and run-bench.sh
# reports its figures. hmm_tests_filter prints the options that leave it out there.
hmm_tests_filter() {
	if [ -e /sys/kernel/debug/kmemleak ]; then
		echo "# benchmark_thp_migration not run: the debug kernel (its figures are run-bench.sh's)" >&2
		echo "-T benchmark_thp_migration"
	fi
}
