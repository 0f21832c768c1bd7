#!/bin/bash
# scripts/run-timeline.sh turns a known workload into a timeline that loads as trace-event JSON
# and holds what the workload did: commands on the device's queues, fault groups answered
# REPLAY and CANCEL, migrations both ways, an eviction, a track per context, the driver's
# answers lined up with the device's on one clock. And timeline.py refuses traces whose clock
# sync points do not pair up.
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${GMEM_KERNEL:?set GMEM_KERNEL to a guest kernel of images/kernels}" "${REPO:?set REPO to the checkout}" "${GMEM_BUILD_DIR:?set GMEM_BUILD_DIR to the build}"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
plan 8
# One device, so that the device's tracks are its own; a small HBM, so that it evicts.
workload="mirror_test -t bad_access_errnos && hbm_test -t explicit_round_trip \
-t to_device_then_cpu_access -t eviction_spares_recently_used_chunk"
GMEM_BUILD_DIR=$GMEM_BUILD_DIR "$REPO/scripts/run-timeline.sh" --out "$dir/t.json" --no-build \
	--kernel "$GMEM_KERNEL" --devices 1 --hbm-size 64M --timeout 900 -- "$workload" \
	>"$dir/run.log" 2>&1
rc=$?
check_ok() { if [ "$1" = 0 ]; then ok "$2"; else not_ok "$2"; fi; }
check_ok "$rc" "the workload ran and the timeline was written"
[ "$rc" = 0 ] || tail -n 30 "$dir/run.log" | diag

python3 - "$dir/t.json" >"$dir/checks" 2>&1 <<'PY'
import json, statistics, sys
try:
    ev = json.load(open(sys.argv[1]))["traceEvents"]
except Exception as e:
    ev = []
    print(f"# not trace-event JSON: {e}")
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
         if e["ph"] == "M" and e["name"] == "thread_name"}
track = lambda e: names.get((e["pid"], e["tid"]), "")
X = [e for e in ev if e["ph"] == "X"]
I = [e for e in ev if e["ph"] == "i"]

def result(ok, what, why=""):
    print(("ok" if ok else "not ok") + " " + what + (f"\n# {why}" if why and not ok else ""))

cmds = [e for e in X if e["cat"] == "command" and track(e).startswith("queue ")]
result(any(e["name"] == "copy" for e in cmds) and any(e["name"] == "fill" for e in cmds) and
       all("ctx" in e["args"] and e["dur"] > 0 for e in cmds),
       "the device's copy and fill commands are slices on its queues' tracks",
       f"{len(cmds)} command slices: {sorted({e['name'] for e in cmds})}")
groups = [e for e in X if e["cat"] == "fault" and track(e).endswith(" faults")]
answers = {e["args"]["response"] for e in groups}
result(sum(e["args"]["response"] == "cancel" for e in groups) >= 4 and "replay" in answers and
       all(e["args"]["pages"] >= 1 for e in groups),
       "fault groups with their pages, answered replay, and cancel for each bad access",
       f"{len(groups)} groups: {[(e['args']['response'], e['args']['pages']) for e in groups][:8]}")
migr = [e for e in X if e["cat"] == "migration"]
result(any(e["name"] == "to device" and e["args"]["pages"] > 0 for e in migr) and
       any(e["name"] == "to system" and e["args"]["pages"] > 0 for e in migr) and
       all(e["dur"] > 0 for e in migr),
       "migrations to HBM and back, as slices with their pages",
       f"{[(e['name'], e['args']['pages']) for e in migr][:8]}")
result(any(e["cat"] == "eviction" for e in X), "the eviction the small HBM forced",
       f"categories: {sorted({e['cat'] for e in X + I})}")
ctxs = {track(e) for e in I if track(e).startswith("ctx ")}
result(len(ctxs) >= 2, "a track per context (each test program's own)", f"{sorted(ctxs)}")
# The driver traces its answer just before it writes FAULT_RESPONSE: once lined up, it lies at
# the end of the device's group slice with the same group number.
ends = {}
for e in groups:
    ends.setdefault(e["args"]["group"], []).append(e["ts"] + e["dur"])
deltas = [min(abs(a["ts"] - t) for t in ends[a["args"]["group"]])
          for a in I if a["name"].startswith("fault group") and a["args"]["group"] in ends]
result(len(deltas) >= 4 and statistics.median(deltas) < 1000,
       "the driver's answers line up with the device's responses (median within 1 ms)",
       f"{len(deltas)} answers, median {statistics.median(deltas) if deltas else None} us")
PY
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok }" ;;
	"not ok "*) not_ok "${line#not ok }" ;;
	*) echo "${line#\# }" | diag ;;
	esac
done <"$dir/checks"

# Sync points that do not pair up (QEMU's trace cut short) are refused, with a reason.
printf '1@100.000000:gmem_accel_mmio_read addr 0x1c val 0x0\n' >"$dir/q.log"
printf '%s\n' "  sh-1 [000] ..... 5.000000: tracing_mark_write: gmem-sync begin 0" \
	"  sh-1 [000] ..... 5.100000: tracing_mark_write: gmem-sync begin 1" >"$dir/g.trace"
out=$(python3 "$REPO/scripts/lib/timeline.py" --qemu-log "$dir/q.log" --guest-trace "$dir/g.trace" \
	--out "$dir/bad.json" 2>&1)
check "sync points that do not pair up are refused, saying so" \
	grep -q "2 sync points in the guest trace, 1 in QEMU's" <<<"$out"
tap_done
