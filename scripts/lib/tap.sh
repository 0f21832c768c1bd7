# Minimal TAP producer (sourced): host tests (bash) and guest test scripts (busybox sh).
tap_n=0
tap_failed=0
plan() { echo "1..$1"; }
ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $*"; }
not_ok() { tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $tap_n - $*"; }
diag() { sed 's/^/# /'; }
# check DESC COMMAND...: ok if COMMAND succeeds
check() { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
# expect_fail DESC EXPECTED_STATUS PATTERN COMMAND...: COMMAND must exit EXPECTED_STATUS (or
# non-zero for "any") and print PATTERN (grep -E) on stdout or stderr.
expect_fail() {
	local d=$1 want=$2 pat=$3 out st=0
	shift 3
	out=$("$@" 2>&1) || st=$?
	if { [ "$want" = any ] && [ "$st" != 0 ]; } || [ "$st" = "$want" ]; then
		if printf '%s\n' "$out" | grep -qE -- "$pat"; then ok "$d"; return; fi
	fi
	not_ok "$d (exit $st, wanted $want and /$pat/)"
	printf '%s\n' "$out" | head -n 5 | diag
}
tap_done() { exit $((tap_failed > 0)); }
