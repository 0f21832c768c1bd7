#!/bin/bash
# scripts/run-vm.sh refuses bad options with exit status 2 and a message naming the option,
# before it installs, builds or boots anything.
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${REPO:?set REPO to the source tree}"
run_vm() { "$REPO/scripts/run-vm.sh" "$@"; }

plan 17
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
expect_fail "--memory 1M" 2 "--memory '1M'" run_vm --memory 1M
expect_fail "--smp 0" 2 "--smp '0'" run_vm --smp 0
expect_fail "--numa 5" 2 "--numa '5': give a number of nodes from 1 to 4" run_vm --numa 5
expect_fail "--smp 3 over 2 nodes" 2 "--numa 2: give a number of CPUs \\(--smp 3\\)" run_vm --smp 3
expect_fail "--numa 3 of 2G" 2 "--numa 3: the RAM \\(2G\\) must split into 3 nodes" run_vm --numa 3
check "--help describes every mode" bash -c \
	"'$REPO/scripts/run-vm.sh' --help | grep -q -- '--shell' && '$REPO/scripts/run-vm.sh' --help | grep -q -- '--run CMD'"
tap_done
