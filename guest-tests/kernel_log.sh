#!/bin/sh
# The guest suite's last test: what the kernel reported while the suite ran. Any memory-safety
# (KASAN, UBSAN), locking (lockdep), WARN/BUG/Oops, list-corruption, hung-task, soft-lockup or
# RCU-stall report, or a region freed that was never held, fails it, whoever caused it;
# kmemleak (the debug kernel) is scanned now and fails it for objects gmem_accel allocated;
# KCSAN (the KCSAN kernel) fails it for a data race in gmem_accel's functions (the core
# kernel's own races are its maintainers'). The first lines of each report are printed.
. /usr/libexec/gmem-accel/tap.sh

log=/tmp/kernel_log.$$
dmesg >"$log.all"
# KCSAN's headers would match the BUG rule: only its own check below reads them.
grep -v 'BUG: KCSAN: ' "$log.all" >"$log"

# check_absent DESC REGEX: ok if no line of the kernel log matches REGEX.
check_absent() {
	if grep -qE -- "$2" "$log"; then
		not_ok "$1"
		grep -E -A12 -- "$2" "$log" | head -n 40 | diag
	else
		ok "$1"
	fi
}

plan 8
check_absent "no KASAN or UBSAN report" 'BUG: KASAN|UBSAN:'
check_absent "no lockdep report" \
	'possible circular locking|possible recursive locking|inconsistent lock state|bad unlock balance|lock held when returning|suspicious RCU usage|held lock freed|possible irq lock inversion|DEBUG_LOCKS_WARN_ON'
check_absent "no WARN, BUG, Oops or list corruption" \
	'WARNING: |kernel BUG|BUG: |Oops|general protection fault|list_(add|del) corruption|page dumped because|sleeping function called from invalid context'
check_absent "no hung task, soft lockup or RCU stall" \
	'blocked for more than [0-9]+ seconds|soft lockup|hard LOCKUP|rcu_.*detected stall|self-detected stall'
check_absent "no resource accounting warning" \
	'Trying to free nonexistent resource|resource sanity check'
# The device given work for a context the driver had taken down (BAD_CONTEXT): an ordering bug.
check_absent "no device work for a context taken down" 'gmem_accel.*device error 11,'
if grep -qE 'BUG: KCSAN: .*gmem_' "$log.all"; then
	not_ok "no KCSAN data race in gmem_accel"
	grep -E -A20 'BUG: KCSAN: .*gmem_' "$log.all" | head -n 60 | diag
else
	ok "no KCSAN data race in gmem_accel ($(grep -c 'BUG: KCSAN: ' "$log.all") elsewhere)"
fi

kml=/sys/kernel/debug/kmemleak
if [ -w "$kml" ]; then
	# Two scans: an object is reported once it has been unreferenced for a scan and is older
	# than kmemleak's minimum age (5 s).
	echo scan >"$kml"
	sleep 6
	echo scan >"$kml"
	cat "$kml" >"$log.leaks"
	leaks=$(grep -c '^unreferenced object' "$log.leaks")
	# A report's backtrace names the allocating functions: ours are gmem_*.
	ours=$(awk '/^unreferenced object/ { if (hit) n++; hit = 0 } /gmem_|\[gmem_accel\]/ { hit = 1 }
		    END { if (hit) n++; print n + 0 }' "$log.leaks")
	if [ "$ours" = 0 ]; then
		ok "no kmemleak report naming gmem_accel ($leaks other unreferenced objects)"
	else
		not_ok "no kmemleak report naming gmem_accel: $ours of $leaks"
		grep -B2 -A20 -E 'gmem_|\[gmem_accel\]' "$log.leaks" | head -n 60 | diag
	fi
else
	ok "no kmemleak report naming gmem_accel # SKIP no kmemleak (the debug kernel has it)"
fi
rm -f "$log" "$log.all" "$log.leaks"
tap_done
