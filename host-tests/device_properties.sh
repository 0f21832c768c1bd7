#!/bin/bash
# -device gmem-accel: properties are listed, bad ones are refused with a clear error, good ones
# start. QEMU runs without a guest (-S, QMP on stdio) so each case takes a fraction of a second.
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${QEMU:?set QEMU to qemu-system-x86_64}"

# Start QEMU paused with the given -device arguments and quit over QMP.
qemu_try() {
	printf '%s\n' '{"execute":"qmp_capabilities"}' '{"execute":"quit"}' |
		timeout 60 "$QEMU" -machine q35 -accel tcg -nodefaults -display none -S \
			-L /usr/share/seabios -L /usr/share/qemu -qmp stdio \
			-device pcie-root-port,id=rp0,chassis=1 "$@"
}

plan 20
help=$("$QEMU" -device gmem-accel,help 2>&1)
for p in hbm-size tlb-entries walk-cache-entries movers ats pasid pri coherent atc; do
	check "-device gmem-accel,help lists $p" grep -q "^  $p=" <<<"$help"
done
expect_fail "hbm-size=3M is refused (not a power of two)" 1 "hbm-size=3 MiB is invalid: it must be a power of two" \
	qemu_try -device gmem-accel,bus=rp0,hbm-size=3M
expect_fail "hbm-size=1M is refused (below 2 MiB)" 1 "hbm-size=1 MiB is invalid" \
	qemu_try -device gmem-accel,bus=rp0,hbm-size=1M
expect_fail "hbm-size=128G is refused (above 64 GiB)" 1 "hbm-size=128 GiB is invalid" \
	qemu_try -device gmem-accel,bus=rp0,hbm-size=128G
expect_fail "hbm-size=lots is refused by the size parser" 1 "hbm-size" \
	qemu_try -device gmem-accel,bus=rp0,hbm-size=lots
expect_fail "tlb-entries=3 is refused (not a power of two)" 1 "tlb-entries=3 is invalid: it must be a power of two" \
	qemu_try -device gmem-accel,bus=rp0,tlb-entries=3
expect_fail "tlb-entries=0 is refused" 1 "tlb-entries=0 is invalid" \
	qemu_try -device gmem-accel,bus=rp0,tlb-entries=0
expect_fail "walk-cache-entries=48 is refused (not a power of two)" 1 \
	"walk-cache-entries=48 is invalid: it must be 0 \(no walk cache\) or a power of two up to 4096" \
	qemu_try -device gmem-accel,bus=rp0,walk-cache-entries=48
expect_fail "walk-cache-entries=8192 is refused (above 4096)" 1 "walk-cache-entries=8192 is invalid" \
	qemu_try -device gmem-accel,bus=rp0,walk-cache-entries=8192
expect_fail "movers=9 is refused (above 8)" 1 \
	"movers=9 is invalid: it must be 0 \(the engines copy themselves\) to 8 threads" \
	qemu_try -device gmem-accel,bus=rp0,movers=9
expect_fail "pri=on with ats=off is refused" 1 "pri=on needs ats=on" \
	qemu_try -device gmem-accel,bus=rp0,ats=off
qemu_quiet() { qemu_try "$@" >/dev/null 2>&1; }
check "hbm-size=64M and an ats=off,pri=off,walk-cache-entries=0,movers=0 device start and quit cleanly" \
	qemu_quiet -device gmem-accel,bus=rp0,hbm-size=64M -device pcie-root-port,id=rp1,chassis=2 \
		-device gmem-accel,bus=rp1,ats=off,pri=off,walk-cache-entries=0,movers=0
tap_done
