#!/bin/bash
# scripts/run-vm.sh refuses bad options with exit status 2 and a message naming the option,
# before it installs, builds or boots anything.
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${REPO:?set REPO to the source tree}"
run_vm() { "$REPO/scripts/run-vm.sh" "$@"; }

plan 28
expect_fail "unknown option" 2 "unknown option '--frobnicate'" run_vm --frobnicate
expect_fail "--devices 0" 2 "--devices '0': give a number from 1 to 16" run_vm --devices 0
expect_fail "--devices 17" 2 "--devices '17'" run_vm --devices 17
expect_fail "--devices two" 2 "--devices 'two'" run_vm --devices two
expect_fail "--devices without a value" 2 "--devices needs a value" run_vm --devices
expect_fail "--hbm-size 12Q" 2 "--hbm-size '12Q': give a size like 256M" run_vm --hbm-size 12Q
expect_fail "--coherent 3 of 2 devices" 2 "--coherent '3': give a number from 0 to the number of devices" \
	run_vm --devices 2 --coherent 3
expect_fail "--accel xen" 2 "--accel 'xen': give tcg or kvm" run_vm --accel xen
expect_fail "--extra on a missing directory" 2 "--extra '/nonexistent/dir' is not a directory" \
	run_vm --extra /nonexistent/dir
expect_fail "--run without a command" 2 "--run needs a value" run_vm --run
expect_fail "--timeout soon" 2 "--timeout 'soon'" run_vm --timeout soon
expect_fail "--boot-timeout -1" 2 "--boot-timeout '-1': give seconds" run_vm --boot-timeout -1
expect_fail "--memory 1M" 2 "--memory '1M'" run_vm --memory 1M
expect_fail "--smp 0" 2 "--smp '0'" run_vm --smp 0
expect_fail "--numa 5" 2 "--numa '5': give a number of nodes from 1 to 4" run_vm --numa 5
expect_fail "--smp 3 over 2 nodes" 2 "--numa 2: give a number of CPUs \\(--smp 3\\)" run_vm --smp 3
expect_fail "--numa 3 of 2G" 2 "--numa 3: the RAM \\(2G\\) must split into 3 nodes" run_vm --numa 3
check "--help describes every mode" bash -c \
	"'$REPO/scripts/run-vm.sh' --help | grep -q -- '--shell' && '$REPO/scripts/run-vm.sh' --help | grep -q -- '--run CMD'"
check "run-bench.sh --help: its usage, before it builds anything" bash -c \
	"GMEM_BUILD_DIR=/nonexistent timeout 10 '$REPO/scripts/run-bench.sh' --help | grep -q -- '--boots N'"
check "run-tests.sh --help: its usage, before it builds anything" bash -c \
	"GMEM_BUILD_DIR=/nonexistent timeout 10 '$REPO/scripts/run-tests.sh' --help | grep -q 'GMEM_DEBUG_KERNELS'"

# A QEMU that aborts before the guest wrote anything (TCG's iotlb_to_section() assertion)
# boots once more; one that aborts again, or after the guest wrote, fails the run. So does a
# boot that hangs before the guest's init (--boot-timeout).
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
: >"$stub/bzImage-7.3"
: >"$stub/initramfs-7.3.cpio"
cat >"$stub/qemu-system-x86_64" <<'STUB'
#!/bin/bash
# Boots that hang silently ($STUB_HANGS of them) or abort ($STUB_ABORTS), then one that runs
# (--run: exit status 0), $STUB_SLOW seconds after the guest's first line.
n=$(cat "$(dirname "$0")/boots" 2>/dev/null || echo 0)
printf '%s\n' "$@" >"$(dirname "$0")/args"
echo $((n + 1)) >"$(dirname "$0")/boots"
prev=""
for a in "$@"; do
	case $a in file:*) results=${a#file:} ;; esac
	[ "$prev" != -pidfile ] || echo $$ >"$a"
	prev=$a
done
[ "$n" -ge "${STUB_HANGS:-0}" ] || exec sleep 120
[ "${STUB_WRITES:-0}" = 0 ] || echo "GMEM-GUEST-INIT stub" >"$results"
[ "$n" -ge "${STUB_ABORTS:-0}" ] || kill -ABRT $$
sleep "${STUB_SLOW:-0}"
echo "GMEM-RUN-EXIT 0" >>"$results"
STUB
chmod +x "$stub/qemu-system-x86_64"
boot_stub() {
	rm -f "$stub/boots"
	# (TMPDIR: the run directories that run-vm.sh keeps of failed boots go with $stub)
	TMPDIR=$stub GMEM_BUILD_DIR=$stub "$REPO/scripts/run-vm.sh" --no-build --timeout 60 \
		--boot-timeout "${BOOT_TIMEOUT:-300}" --run true >"$stub/out" 2>&1
}
check "an abort before the guest ran: booted once more, exit 0" bash -c \
	"$(declare -f boot_stub); stub='$stub' REPO='$REPO' STUB_ABORTS=1 boot_stub &&
	 grep -q 'QEMU aborted before the guest started' '$stub/out' && [ \"\$(cat '$stub/boots')\" = 2 ]"
check "two aborts in a row: the run fails" bash -c \
	"$(declare -f boot_stub); ! stub='$stub' REPO='$REPO' STUB_ABORTS=2 boot_stub &&
	 [ \"\$(cat '$stub/boots')\" = 2 ]"
check "an abort after the guest wrote: no second boot, the run fails" bash -c \
	"$(declare -f boot_stub); ! stub='$stub' REPO='$REPO' STUB_ABORTS=1 STUB_WRITES=1 boot_stub &&
	 [ \"\$(cat '$stub/boots')\" = 1 ]"
check "a boot that hangs before the guest's init: stopped, booted once more, exit 0" bash -c \
	"$(declare -f boot_stub); stub='$stub' REPO='$REPO' STUB_HANGS=1 BOOT_TIMEOUT=2 boot_stub &&
	 grep -q 'did not reach its init within --boot-timeout 2 s' '$stub/out' &&
	 [ \"\$(cat '$stub/boots')\" = 2 ]"
check "two hanging boots: the run fails" bash -c \
	"$(declare -f boot_stub); ! stub='$stub' REPO='$REPO' STUB_HANGS=2 BOOT_TIMEOUT=2 boot_stub &&
	 grep -q 'twice' '$stub/out' && [ \"\$(cat '$stub/boots')\" = 2 ]"
# TCG emulates REP STOSB/MOVSB a byte an iteration: the guest is told they are not fast.
check "TCG's guest CPU is -cpu max without ERMS and FSRM" bash -c \
	"$(declare -f boot_stub); stub='$stub' REPO='$REPO' boot_stub &&
	 grep -qx -- '-cpu' '$stub/args' && grep -qx -- 'max,erms=off,fsrm=off' '$stub/args'"
# TCG's guest TSC is the host's: reliable when the host's is constant and does not stop.
check "TCG's guest keeps time with the TSC on a host whose TSC is constant" bash -c \
	"$(declare -f boot_stub); stub='$stub' REPO='$REPO' boot_stub &&
	 if grep -qw constant_tsc /proc/cpuinfo && grep -qw nonstop_tsc /proc/cpuinfo; then
		grep -q ' tsc=reliable' '$stub/args'; else ! grep -q 'tsc=reliable' '$stub/args'; fi"
check "a guest past its init outlives --boot-timeout: one boot, exit 0" bash -c \
	"$(declare -f boot_stub); stub='$stub' REPO='$REPO' STUB_WRITES=1 STUB_SLOW=4 BOOT_TIMEOUT=2 boot_stub &&
	 [ \"\$(cat '$stub/boots')\" = 1 ]"
tap_done
