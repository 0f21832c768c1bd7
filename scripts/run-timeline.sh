#!/bin/bash
# Run a command in the VM and turn what the device and the driver did meanwhile into a timeline:
# a Perfetto / Chrome trace-event JSON file (open it in ui.perfetto.dev). The device's side
# (commands, fault groups and their answers, access-counter notifications) comes from QEMU's
# trace events, the driver's (fault service, migrations, evictions, policy decisions) from its
# tracepoints, lined up on one clock. Builds what is missing; the command's exit status.
#   scripts/run-timeline.sh [--out FILE (default timeline.json)] [run-vm.sh options] -- CMD...
# e.g. scripts/run-timeline.sh --out fault.json -- hbm_test -t explicit_round_trip
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
out=timeline.json
vm_args=()
while [ $# -gt 0 ]; do
	case "$1" in
	-h | --help) sed -n '2,8s/^# \{0,1\}//p' "$0"; exit 0 ;;
	--out) [ $# -ge 2 ] || die "--out needs a file name"; out=$2; shift ;;
	--run | --shell | --results | --qemu-args)
		die "$1 is run-timeline.sh's own business: give the command after --" ;;
	--) shift; break ;;
	*) vm_args+=("$1") ;;
	esac
	shift
done
[ $# -gt 0 ] || die "give the command to run in the guest after --, e.g. -- hbm_test -t explicit_round_trip"
touch "$out" 2>/dev/null || die "--out $out: cannot write there"

work=$(mktemp -d "${TMPDIR:-/tmp}/gmem-accel-timeline.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The device's events the timeline shows; mmio_read for trace_sync's points.
printf 'gmem_accel_%s\n' cmd_start cmd_done fault fault_response ac_notify ac_drop ac_clear \
	tlb_invalidate reset error mmio_read >"$work/events"
cmd=$(printf '%s ' "$@")
quoted="'${cmd//\'/\'\\\'\'}'"
status=0
"$repo/scripts/run-vm.sh" "${vm_args[@]}" --results "$work/results.log" \
	--qemu-args "-msg timestamp=on -D $work/qemu-trace.log -trace events=$work/events" \
	--run "/usr/libexec/gmem-accel/trace_run.sh $quoted" || status=$?
[ -s "$work/results.log" ] || die "the guest wrote no results (it did not boot, or crashed: see above)"
sed -n '/^GMEM-TRACE-BEGIN/,/^GMEM-TRACE-END/p' "$work/results.log" >"$work/guest.trace"
[ -s "$work/guest.trace" ] || die "the guest printed no trace (the command's output above says why)"
step "laying out the timeline"
/usr/bin/python3 "$repo/scripts/lib/timeline.py" --qemu-log "$work/qemu-trace.log" \
	--guest-trace "$work/guest.trace" --out "$out" || die "no timeline made (messages above)"
exit "$status"
