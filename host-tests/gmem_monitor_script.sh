#!/bin/bash
# scripts/gmem-monitor against a QEMU with two devices (paused, no guest): text from HMP, JSON
# from QOM, and clear errors for a missing VM, device or context.
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${QEMU:?set QEMU to qemu-system-x86_64}" "${REPO:?set REPO to the checkout}"

dir=$(mktemp -d)
trap 'kill "$qemu_pid" 2>/dev/null; wait; rm -rf "$dir"' EXIT
"$QEMU" -machine q35 -accel tcg -nodefaults -display none -S \
	-L /usr/share/seabios -L /usr/share/qemu -qmp "unix:$dir/qmp.sock,server=on,wait=off" \
	-device pcie-root-port,id=rp0,chassis=1 -device gmem-accel,id=gmem0,bus=rp0,hbm-size=64M \
	-device pcie-root-port,id=rp1,chassis=2 -device gmem-accel,bus=rp1 2>"$dir/qemu.log" &
qemu_pid=$!
for _ in $(seq 100); do [ -S "$dir/qmp.sock" ] && break; sleep 0.1; done

mon() { "$REPO/scripts/gmem-monitor" --socket "$dir/qmp.sock" "$@"; }
plan 9
text=$(mon)
check "lists the device with an id" grep -q '^gmem0 (/machine/peripheral/gmem0), PCI' <<<"$text"
check "lists the device without an id by its QOM path" \
	grep -q '^(no id) (/machine/peripheral-anon/device\[[0-9]*\])' <<<"$text"
check "shows counters, and no queue before a driver programs one" \
	bash -c '! grep -q "^  queue " <<<"$1" && [ "$(grep -c "counters: faults 0" <<<"$1")" = 2 ]' _ "$text"
pt=$(mon gmem0 5)
check "dumps a context's page table" \
	grep -q '^  context 5 (disabled, root 0x0 in system memory): 0 runs, dump complete' <<<"$pt"
json=$(mon --json)
check "--json: each device's state from QOM, HBM sizes as configured" \
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["gmem0"]["hbm-size"]==64<<20 and len(d)==2 and d["gmem0"]["queues"]==[]' <<<"$json"
pt_json=$(mon --json gmem0 63)
check "--json with a context: its page table" \
	python3 -c 'import json,sys; d=json.load(sys.stdin)["gmem0"]; assert d["id"]==63 and d["runs"]==[] and d["dump"]=="complete"' <<<"$pt_json"
expect_fail "an unknown device id is an error" 1 "no gmem-accel device with id 'gmem7'" mon gmem7
expect_fail "context 64 is refused" 2 "context 64 does not exist: give 0-63" mon gmem0 64
expect_fail "no VM at the socket says how to fix it" 2 "is the VM running\\? Give its QMP socket with --socket" \
	"$REPO/scripts/gmem-monitor" --socket "$dir/none.sock"
tap_done
