#!/bin/bash
# Pack the guest initramfs (newc cpio, uncompressed):
#   mkinitramfs.sh OUTPUT INIT BUSYBOX -KERNEL MODULE... -- TEST... [-- HELPER...]
# Every file loses the kernel's suffix (-7.3, -7.3-debug, -7.3-kcsan: the build names one file
# per kernel and variant):
# modules go to /lib/modules, tests to /tests (the suite runs every one of them), helpers
# (programs the tests run) to /usr/libexec/gmem-accel.
set -euo pipefail
out=$1 init=$2 busybox=$3 ksfx=$4
shift 4
modules=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do modules+=("$1"); shift; done
[ $# -gt 0 ] && shift
tests=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do tests+=("$1"); shift; done
[ $# -gt 0 ] && shift
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,usr/libexec/gmem-accel,dev,proc,sys,tmp,etc,root}
mkdir -p "$stage"/{lib/modules,tests,extra}
install -m 0755 "$init" "$stage/init"
install -m 0755 "$busybox" "$stage/bin/busybox"
# NAME-7.3-debug.ko, NAME-7.3-kcsan.ko, NAME-7.3.ko, NAME-7.3 -> NAME.ko, NAME.ko, NAME.ko, NAME
plain() {
	local n=${1##*/} ext=""
	case "$n" in *.ko) n=${n%.ko} ext=.ko ;; esac
	n=${n%-debug}
	n=${n%-kcsan}
	echo "${n%"$ksfx"}$ext"
}
for m in "${modules[@]}"; do install -m 0644 "$m" "$stage/lib/modules/$(plain "$m")"; done
for t in "${tests[@]}"; do install -m 0755 "$t" "$stage/tests/$(plain "$t")"; done
for h in "$@"; do install -m 0755 "$h" "$stage/usr/libexec/gmem-accel/$(plain "$h")"; done
echo 'root:x:0:0:root:/root:/bin/sh' >"$stage/etc/passwd"
echo 'export PS1="gmem-guest# "' >"$stage/etc/profile"
(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) >"$out.tmp"
mv "$out.tmp" "$out"
