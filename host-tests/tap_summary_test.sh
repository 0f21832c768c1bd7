#!/bin/bash
# The summary counts what the tests said and treats everything that went missing as a failure.
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${REPO:?set REPO to the source tree}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
summary() { /usr/bin/python3 "$REPO/scripts/lib/tap_summary.py" --name t "$1" | tail -n 1; }

plan 11
printf '%s\n' GMEM-SUITE-BEGIN "GMEM-TEST-BEGIN a" "TAP version 13" "1..3" "ok 1 x" \
	"ok 2 y # SKIP no device" "ok 3 z" "GMEM-TEST-END a 0" GMEM-SUITE-END >"$tmp/good"
check "all passing, one skipped" test "$(summary "$tmp/good")" = "2 passed, 0 failed, 1 skipped"

printf '%s\n' GMEM-SUITE-BEGIN "GMEM-TEST-BEGIN a" "1..2" "ok 1 x" "not ok 2 y" \
	"GMEM-TEST-END a 1" GMEM-SUITE-END >"$tmp/fail"
check "a failing result" test "$(summary "$tmp/fail")" = "1 passed, 1 failed"

printf '%s\n' GMEM-SUITE-BEGIN "GMEM-TEST-BEGIN a" "1..4" "ok 1 x" >"$tmp/crash"
check "a crash mid-program: 3 missing results, unfinished program and suite" \
	test "$(summary "$tmp/crash")" = "1 passed, 5 failed"

printf '%s\n' GMEM-SUITE-BEGIN "GMEM-TEST-BEGIN a" "1..1" "ok 1 x" "GMEM-TEST-END a 139" \
	GMEM-SUITE-END >"$tmp/status"
check "non-zero exit with all results passing" test "$(summary "$tmp/status")" = "1 passed, 1 failed"

printf '%s\n' GMEM-SUITE-BEGIN "GMEM-TEST-BEGIN a" "1..1" "ok 1 x" "ok 2 y" "GMEM-TEST-END a 0" \
	GMEM-SUITE-END >"$tmp/extra"
check "results beyond the plan: a failure (meson calls it an error)" \
	test "$(summary "$tmp/extra")" = "2 passed, 1 failed"

printf 'kernel panic\n' >"$tmp/none"
check "a suite that never started" test "$(summary "$tmp/none")" = "0 passed, 1 failed"
printf '%s\n' GMEM-SUITE-BEGIN "GMEM-TEST-BEGIN a" "1..2" "not ok 1 x" "# why x" "ok 2 y" \
	"# about y" "GMEM-TEST-END a 1" GMEM-SUITE-END >"$tmp/diag"
check "a failure is listed with the diagnostics after it, and only those" \
	test "$(/usr/bin/python3 "$REPO/scripts/lib/tap_summary.py" --name t "$tmp/diag" | sed -n '2,3p')" = \
	"$(printf '  FAILED a: x\n      # why x')"
printf '%s\n' GMEM-SUITE-BEGIN "GMEM-TEST-BEGIN a" "1..2" "#  RUN           f.x ..." \
	"# gmem-timeout 180" "# t.c:9:x:Expected 0 (0) == n (1)" "# x: Test failed" \
	"#          FAIL  f.x" "not ok 1 f.x" "# gmem-time 0.08" "#  RUN           f.y ..." \
	"# about y" "#            OK  f.y" "ok 2 f.y" "GMEM-TEST-END a 1" GMEM-SUITE-END >"$tmp/ksft"
check "a kselftest failure is listed with its own EXPECT lines, not the next test's" \
	test "$(/usr/bin/python3 "$REPO/scripts/lib/tap_summary.py" --name t "$tmp/ksft" | sed -n '2,4p')" = \
	"$(printf '  FAILED a: f.x\n      # t.c:9:x:Expected 0 (0) == n (1)\n      # x: Test failed')"
printf '%s\n' GMEM-SUITE-BEGIN "GMEM-TEST-BEGIN a" "1..3" "#  RUN  f.x ..." "# gmem-timeout 900" \
	"ok 1 f.x" "# gmem-time 27.31" "ok 2 f.y" "# gmem-time 3.00" "#  RUN  f.z ..." \
	"# gmem-timeout 60" "not ok 3 f.z" "# gmem-time 60.02" "GMEM-TEST-END a 1" \
	GMEM-SUITE-END >"$tmp/slow"
slow=$(/usr/bin/python3 "$REPO/scripts/lib/tap_summary.py" --name t "$tmp/slow" | grep slow:)
check "tests over 10 s are listed with their duration and timeout" test "$slow" = \
	"$(printf '  slow: a: f.x took 27.3 s (timeout 900 s)\n  slow: a: f.z took 60.0 s (timeout 60 s)')"
check "timing lines are not a failure's diagnostics" \
	bash -c "! /usr/bin/python3 '$REPO/scripts/lib/tap_summary.py' '$tmp/slow' | grep -q '      # gmem-time'"
check "exit status 1 on failure" bash -c "! /usr/bin/python3 '$REPO/scripts/lib/tap_summary.py' '$tmp/fail' >/dev/null"
tap_done
