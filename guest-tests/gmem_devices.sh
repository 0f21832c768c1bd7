# gmem_devices private|coherent: the N of every /dev/gmem_accelN of that kind (CAP bit 7,
# COHERENT), in order; debug_kernel: whether this is the debug kernel; hmm_tests_filter: the
# hmm-tests options both hmm-tests scripts pass; mm_scanners_quiet / mm_scanners_restore: what
# both do around hmm-tests.
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

# A checking kernel, several times slower: the debug one (KASAN, lockdep...:
# images/kernel-debug.config) has kmemleak, the KCSAN one (images/kernel-kcsan.config) KCSAN's
# debugfs file (the C tests' debug_kernel(), gmem_test_util.c, asks the same).
debug_kernel() {
	[ -e /sys/kernel/debug/kmemleak ] || [ -e /sys/kernel/debug/kcsan ]
}

# On the debug kernel every page moves several times slower, and benchmark_thp_migration's
# page-by-page half of 256 MiB, 12 moves, outlasts the 120 s it gives itself (gmem-accel's
# coherent variant moves THPs page by page too), and test_hmm.ko's own migrations there fail
# with -ENOENT now and then. Its figures mean nothing there, and what it does is covered by the
# migrate_anon_huge_* tests; it runs on the kernel as built, and run-bench.sh reports its
# figures. hmm_tests_filter prints the options that leave it out there.
hmm_tests_filter() {
	if debug_kernel; then
		echo "# benchmark_thp_migration not run: the debug kernel (its figures are run-bench.sh's)" >&2
		echo "-T benchmark_thp_migration"
	fi
}

# hmm-tests count fault rounds exactly (anon_write_prot, anon_write_child: faults == 1), and
# whatever invalidates a device mapping while the command runs adds a round. Two kernel
# scanners do that at random moments: automatic NUMA balancing's hinting scan, and khugepaged,
# collapsing the 4 KiB pages a child has just copied on write back into a THP (which zaps the
# 512 device PTEs of each window it collapses, mid-command). While hmm-tests
# run, NUMA balancing is off and khugepaged scans one page a pass, hourly; the rest of the
# suite runs with both as configured.
mm_scanners_quiet() {
	khp=/sys/kernel/mm/transparent_hugepage/khugepaged
	saved_numa=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null)
	saved_scan=$(cat $khp/pages_to_scan 2>/dev/null)
	saved_sleep=$(cat $khp/scan_sleep_millisecs 2>/dev/null)
	[ -z "$saved_numa" ] || echo 0 >/proc/sys/kernel/numa_balancing
	[ -z "$saved_scan" ] || echo 1 >$khp/pages_to_scan
	[ -z "$saved_sleep" ] || echo 3600000 >$khp/scan_sleep_millisecs
}

mm_scanners_restore() {
	[ -z "$saved_numa" ] || echo "$saved_numa" >/proc/sys/kernel/numa_balancing
	[ -z "$saved_scan" ] || echo "$saved_scan" >$khp/pages_to_scan
	[ -z "$saved_sleep" ] || echo "$saved_sleep" >$khp/scan_sleep_millisecs
}
