#!/bin/bash
# The device's and the driver's sources stay readable: no .c file over 800 lines, and each
# opens with a comment saying what it owns (docs/architecture.md, "Files", maps them).
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${REPO:?set REPO to the checkout}"

MAX_LINES=800
plan 2
long=() bare=()
for f in "$REPO"/hw/gmem-accel/*.c "$REPO"/guest-driver/*.c; do
	rel=${f#"$REPO"/}
	n=$(wc -l <"$f")
	[ "$n" -le "$MAX_LINES" ] || long+=("$rel ($n)")
	# The opening comment, after the SPDX line: "gmem-accel...: what it owns".
	head -n 6 "$f" | grep -qE '^(/\*| \*) gmem-accel[^:]*: [^ ]' || bare+=("$rel")
done
check "no device or driver .c file over $MAX_LINES lines${long:+ (${long[*]})}" [ ${#long[@]} = 0 ]
check "every device and driver .c file opens saying what it owns${bare:+ (${bare[*]})}" [ ${#bare[@]} = 0 ]
tap_done
