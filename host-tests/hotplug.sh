#!/bin/bash
# Hot-unplug of a device while a guest process has it open with a batch queued, then hot-plug
# back (QMP device_del / device_add on its pcie-root-port): the process's calls fail cleanly,
# the other device keeps working, the new device binds and works, and the kernel log stays
# clean. The guest's half is guest-tests/hotplug_hold.c.
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${GMEM_KERNEL:?set GMEM_KERNEL to a guest kernel of images/kernels}" "${REPO:?set REPO to the checkout}" "${GMEM_BUILD_DIR:?set GMEM_BUILD_DIR to the build}"

dir=$(mktemp -d)
trap 'kill "$vm" 2>/dev/null; wait; rm -rf "$dir"' EXIT
mkdir "$dir/extra"
cp "$GMEM_BUILD_DIR/guest-tests/hotplug_hold" "$dir/extra/"
"$REPO/scripts/run-vm.sh" --no-build --kernel "$GMEM_KERNEL" --devices 2 --coherent 0 --timeout 600 --extra "$dir/extra" \
	--run '/extra/hotplug_hold; s=$?; /usr/libexec/gmem-accel/kernel_log.sh; exit $s' \
	>"$dir/vm.log" 2>&1 &
vm=$!

# wait_for REGEX SECONDS: until the guest prints a line matching REGEX (or the VM ends).
wait_for() {
	for _ in $(seq $(($2 * 10))); do
		grep -aqE "$1" "$dir/vm.log" && return 0
		kill -0 "$vm" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
# qmp COMMAND-JSON...: run each on the VM's QMP socket; prints the replies.
qmp() {
	python3 - "$qmp_sock" "$@" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("r"); f.readline()
for c in ['{"execute": "qmp_capabilities"}'] + sys.argv[2:]:
    s.sendall(c.encode())
    while True:          # skip events until the command's reply
        r = json.loads(f.readline())
        if "return" in r or "error" in r:
            break
    print(json.dumps(r))
PY
}

plan 6
if ! wait_for '^HOTPLUG ready' 300; then
	not_ok "the guest opened device 1 and queued a batch"
	tail -n 20 "$dir/vm.log" | diag
	tap_done
fi
ok "the guest opened device 1 and queued a batch"
qmp_sock=$(sed -n 's/^ *QMP monitor: //p' "$dir/vm.log" | head -n 1)
hbm=$(sed -n 's/.*HBM \([0-9]*\)M\{0,1\} each.*/\1/p' "$dir/vm.log" | head -n 1)
qmp '{"execute": "device_del", "arguments": {"id": "gmem1"}}' >"$dir/del.json"
if wait_for '^HOTPLUG (unplugged|done)' 180 && grep -aq '^HOTPLUG unplugged' "$dir/vm.log"; then
	ok "unplugged under an open file: its calls fail cleanly, device 0 works"
else
	not_ok "unplugged under an open file: its calls fail cleanly, device 0 works"
	{ cat "$dir/del.json"; grep -a '^HOTPLUG\|^#' "$dir/vm.log" | tail -n 5; } | diag
fi
# The guest drops the device before QEMU has finished removing it: plug the new one only once
# QEMU's peripheral list no longer has the old one.
for _ in $(seq 1200); do
	qmp '{"execute": "qom-list", "arguments": {"path": "/machine/peripheral"}}' |
		grep -q '"name": "gmem1"' || break
	sleep 0.1
done
qmp '{"execute": "device_add", "arguments": {"driver": "gmem-accel", "id": "gmem1b",
	"bus": "gmem_rp1", "hbm-size": '$((${hbm:-256} << 20))'}}' >"$dir/add.json"
check "QEMU plugged a new device in" bash -c "tail -n 1 '$dir/add.json' | grep -q '\"return\"'"
if wait_for '^HOTPLUG done' 300; then
	check "the new device bound, copies, fills and migrates" grep -aq '^HOTPLUG done 0' "$dir/vm.log"
else
	not_ok "the new device bound, copies, fills and migrates"
fi
grep -a '^HOTPLUG' "$dir/vm.log" | tr -d '\r' | diag
wait "$vm"
status=$?
check "the guest's checks and its kernel log are clean (exit $status)" test "$status" = 0
check "the kernel log check ran" grep -aq 'no lockdep report' "$dir/vm.log"
grep -a -A8 '^not ok' "$dir/vm.log" | head -n 30 | diag
tap_done
