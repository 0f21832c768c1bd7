#!/bin/bash
# The driver's and the device's views of one process's pages agree, page by page: a guest
# program maps a pattern for the device (written, read-only, untouched, a THP) and prints the
# driver's SNAPSHOT; this script reads the same context's page table over the VM's QMP socket
# with scripts/gmem-monitor and compares.
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${GMEM_KERNEL:?set GMEM_KERNEL to a guest kernel of images/kernels}" "${REPO:?set REPO to the checkout}" "${GMEM_BUILD_DIR:?set GMEM_BUILD_DIR to the build}"

dir=$(mktemp -d)
trap 'kill "$vm" 2>/dev/null; wait; rm -rf "$dir"' EXIT
mkdir "$dir/extra"
cp "$GMEM_BUILD_DIR/guest-tests/xcheck_hold" "$dir/extra/"
"$REPO/scripts/run-vm.sh" --no-build --kernel "$GMEM_KERNEL" --devices 1 --timeout 540 --extra "$dir/extra" \
	--run /extra/xcheck_hold >"$dir/vm.log" 2>&1 &
vm=$!

plan 4
# Until the guest prints its view or the VM ends, not a fixed 120 s: on a loaded host a CI run's
# 6.12 guest had printed nothing by then (run-vm's --timeout and meson's bound the wait).
line="" qmp=""
deadline=$((SECONDS + 520))
while [ "$SECONDS" -lt "$deadline" ]; do
	line=$(grep -a -m1 '^XCHECK ' "$dir/vm.log" | tr -d '\r')
	[ -n "$line" ] && break
	kill -0 "$vm" 2>/dev/null || break
	sleep 0.1
done
qmp=$(sed -n 's/^ *QMP monitor: //p' "$dir/vm.log" | head -n 1)
if [ -z "$line" ] || [ -z "$qmp" ]; then
	not_ok "the guest program printed its view"
	{ echo "after $SECONDS s; the VM $(kill -0 "$vm" 2>/dev/null && echo "still runs" || echo "has ended")"
	  tail -n 20 "$dir/vm.log"; } | diag
	not_ok "the monitor's page table matches it page by page"
	not_ok "the pattern has writable, read-only, 2 MiB and HBM pages (a 64 KiB group)"
	not_ok "the THP moved to HBM is mapped as the kernel moved it"
	tap_done
fi
ok "the guest program printed its view"
# Read the device's table while the driver's view stays put (it is reprinted on any change).
latest() { grep -a '^XCHECK ' "$dir/vm.log" | tr -d '\r' | tail -n 1; }
for attempt in 1 2 3 4 5; do
	sleep 0.5
	line=$(latest)
	read -r ctx va npages view < <(sed -E 's/^XCHECK ctx=([0-9]+) va=(0x[0-9a-f]+) npages=([0-9]+) view=([0-9a-f]+)$/\1 \2 \3 \4/' <<<"$line")
	"$REPO/scripts/gmem-monitor" --socket "$qmp" --json gmem0 "$ctx" "$va" $((npages * 4096)) >"$dir/pt.json"
	sleep 0.5
	[ "$(latest)" = "$line" ] && break
	echo "the driver's view changed during the monitor read (attempt $attempt); again" | diag
done
result=$(python3 - "$dir/pt.json" "$va" "$npages" "$view" <<'PY'
import json, sys
pt = json.load(open(sys.argv[1]))["gmem0"]
va, n, view = int(sys.argv[2], 16), int(sys.argv[3]), bytes.fromhex(sys.argv[4])
READ, WRITE, HUGE, HBM, K64 = 1, 2, 4, 8, 16  # GMEM_ACCEL_PAGE_*
dev = [0] * n
for r in pt["runs"]:
    if "error" in r:
        print(f"malformed entry at {r['va']:#x}: {r['error']}"); continue
    for p in range(r["size"] // 4096):
        i = (r["va"] - va) // 4096 + p
        if 0 <= i < n:
            dev[i] = (READ if r["read"] else 0) | (WRITE if r["write"] else 0) | \
                     (HUGE if r["page-size"] == 2 << 20 else 0) | (HBM if r["target-in"] == "hbm" else 0) | \
                     (K64 if r["page-size"] == 64 << 10 else 0)
bad = [i for i in range(n) if dev[i] != view[i]]
for i in bad[:5]:
    print(f"page {i}: driver {view[i]:#x}, device {dev[i]:#x}")
kinds = set(view)
print(f"{len(bad)} differ; kinds {sorted(kinds)}")
if {READ, READ | WRITE, READ | WRITE | HUGE, READ | WRITE | HBM | K64} <= kinds:
    print("has read-only, writable, 2 MiB and HBM pages (a 64 KiB group)")
thp = set(dev[1024:1536])                    # the third 2 MiB: a THP moved to HBM
print("HBM THP: " + ("one 2 MiB leaf" if thp == {READ | WRITE | HUGE | HBM} else
                     "32 64 KiB groups" if thp == {READ | WRITE | HBM | K64} else
                     "512 4 KiB leaves" if thp == {READ | WRITE | HBM} else f"{sorted(thp)}"))
PY
)
check "the monitor's page table matches it page by page" grep -q '^0 differ' <<<"$result"
check "the pattern has writable, read-only, 2 MiB and HBM pages (a 64 KiB group)" \
	grep -q 'has read-only, writable, 2 MiB and HBM pages (a 64 KiB group)' <<<"$result"
# Linux 7.3 moves a THP whole (the driver's thp_migration), 6.12 page by page, into HBM pages
# in a row: 64 KiB groups.
case "$GMEM_KERNEL" in
6.12) thp_leaf="32 64 KiB groups" ;;
*) thp_leaf="one 2 MiB leaf" ;;
esac
check "the THP moved to HBM is mapped as the kernel moved it: $thp_leaf" \
	grep -q "^HBM THP: $thp_leaf\$" <<<"$result"
printf '%s\n' "$result" | diag
python3 -c 'import json,socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f=s.makefile("r"); f.readline()
for c in ("qmp_capabilities", "quit"): s.sendall(json.dumps({"execute": c}).encode()); f.readline()' "$qmp" || true
tap_done
