#!/bin/bash
# libgmem as a user gets it: installed (meson install --destdir), then docs/libgmem.md's first
# program compiled with nothing but `pkg-config --cflags --libs gmem`, linked against the
# installed libgmem.so.1, and run: on a host without the device it must say so and fail. So
# are the samples (samples/*.c).
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${REPO:?set REPO to the source tree}" "${GMEM_BUILD_DIR:?set GMEM_BUILD_DIR}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plan 7

meson install -C "$GMEM_BUILD_DIR" --destdir "$tmp/root" --no-rebuild --quiet >"$tmp/install.log" 2>&1
pc=$(find "$tmp/root" -name gmem.pc | head -1)
so=$(find "$tmp/root" -name libgmem.so.1 | head -1)
check "meson install puts gmem.h, libgmem.so.1 and gmem.pc under DESTDIR" \
	test -f "$tmp/root/usr/local/include/gmem.h" -a -n "$pc" -a -n "$so"
[ -n "$pc" ] || diag <"$tmp/install.log"

export PKG_CONFIG_PATH=${pc%/*} PKG_CONFIG_SYSROOT_DIR=$tmp/root
flags=$(pkg-config --cflags --libs gmem 2>&1)
check "pkg-config --cflags --libs gmem: $flags" pkg-config --exists gmem

# The first fenced C block of docs/libgmem.md.
awk '/^```c$/ { on = 1; next } on && /^```$/ { exit } on' "$REPO/docs/libgmem.md" >"$tmp/prog.c"
# shellcheck disable=SC2086  # the flags are words
check "docs/libgmem.md's first program compiles with those flags alone" \
	cc -Wall -Werror -o "$tmp/prog" "$tmp/prog.c" $flags
LD_LIBRARY_PATH=${so%/*} expect_fail "it runs against the installed libgmem.so.1: no device, exit 1" \
	1 "" "$tmp/prog"
LD_LIBRARY_PATH=${so%/*} expect_fail "and its message names the fix" \
	1 "is the gmem_accel driver loaded" "$tmp/prog"
bad=
for s in "$REPO"/samples/*.c; do
	# shellcheck disable=SC2086
	cc -Wall -Werror -o "$tmp/sample" "$s" $flags 2>"$tmp/cc.log" || { bad="$bad ${s##*/}"; diag <"$tmp/cc.log"; }
done
check "every sample (samples/*.c) compiles with those flags alone:${bad:- all}" test -z "$bad"
LD_LIBRARY_PATH=${so%/*} expect_fail "vector_add_managed runs against it: no device, exit 1, names the fix" \
	1 "is the gmem_accel driver loaded" sh -c "cc -o '$tmp/vam' '$REPO/samples/vector_add_managed.c' $flags && '$tmp/vam'"
tap_done
