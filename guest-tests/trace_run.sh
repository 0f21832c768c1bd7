#!/bin/sh
# For scripts/run-timeline.sh (not a suite test): run a command with the driver's trace events
# on, between two sets of clock sync points (trace_sync), then print the trace to the results
# port between GMEM-TRACE-BEGIN and GMEM-TRACE-END lines, for the host to turn into a timeline.
#   trace_run.sh CMD...
# The exit status is CMD's. GMEM_TRACE_KB: the trace buffer per CPU (default 65536).
t=/sys/kernel/tracing
out=/dev/ttyS1
[ -c "$out" ] || out=/dev/stdout
echo 0 >$t/tracing_on
echo mono >$t/trace_clock
echo "${GMEM_TRACE_KB:-65536}" >$t/buffer_size_kb || exit 1
echo >$t/trace
echo 1 >$t/events/gmem_accel/enable || exit 1
echo 1 >$t/tracing_on
"$(dirname "$0")/trace_sync" begin || exit 1
sh -c "$*"
rc=$?
"$(dirname "$0")/trace_sync" end || rc=1
echo 0 >$t/tracing_on
echo 0 >$t/events/gmem_accel/enable
{
	echo GMEM-TRACE-BEGIN
	cat $t/trace
	echo GMEM-TRACE-END
} >"$out"
exit $rc
