#!/bin/bash
# Boot a q35 VM with gmem-accel devices and run the guest test suite (default), one command
# (--run) or an interactive shell (--shell). Builds whatever is missing first.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
. "$repo/scripts/lib/cache.sh"
. "$repo/scripts/lib/build.sh"

usage() {
	sed "s/@KERNELS@/$GMEM_KERNEL_CHOICES/; s/@KERNEL@/${GMEM_KERNELS[0]}/" <<'TXT'
Usage: scripts/run-vm.sh [OPTIONS]

Builds what is missing, boots a q35 VM with gmem-accel devices, loads the driver and runs the
guest test suite; prints a summary and exits non-zero on any failure.

Modes (default: the guest test suite):
  --shell              interactive shell on the guest console; 'exit' powers off
  --run CMD            run CMD in the guest (sh -c) and return its exit status
Options:
  --kernel @KERNELS@    guest kernel, one of images/kernels (default @KERNEL@, the newest)
  --extra DIR          add DIR's files to the guest under /extra (which is on PATH)
  --devices N          number of gmem-accel devices, 1-16 (default 4: hmm-tests wants two
                       device-private and two coherent ones)
  --hbm-size SIZE      HBM per device, e.g. 256M or 1G (default 256M)
  --coherent N         the last N devices have CPU-coherent HBM (coherent=on); default half
                       of them, rounded down
  --accel tcg|kvm      accelerator (default tcg; nested KVM fails on some hosts)
  --smp N              guest CPUs (default 2)
  --memory SIZE        guest RAM, e.g. 2G (default 2G)
  --numa N             NUMA nodes the RAM and CPUs are spread over, 1-4 (default 2)
  --no-iommu           no intel-iommu in front of the devices (default: one, so every DMA
                       mapping of the driver is translated, as on a distribution's machine)
  --prealloc           allocate the guest's RAM and the devices' HBM on the host before boot, as
                       a real machine has them (QEMU's are otherwise allocated on first write,
                       a host page fault per 2 MiB: what benchmarks should not measure)
  --debug-kernel       boot the debug kernel variant (KASAN, lockdep, DEBUG_VM, kmemleak...:
                       images/kernel-debug.config); the suite's kernel_log test fails on
                       any report it makes
  --kcsan-kernel       boot the KCSAN kernel variant (the data-race detector:
                       images/kernel-kcsan.config); kernel_log fails on a race it reports
                       in gmem_accel (run it by hand when a change touches locking)
  --qemu-args "ARGS"   extra QEMU arguments, split on spaces (e.g. "-trace gmem_accel_*")
  --append "ARGS"      extra guest kernel command-line arguments (e.g. a test's setting:
                       "gmemtest.fuzz_seed=42"); gmem_accel.PARAM=VALUE ones go to the driver,
                       e.g. "gmem_accel.frontend=gmem,drm" gives device 1 to the DRM accel
                       front end (/dev/accel/accel0, over the kernel's drm_gpusvm: Linux 7.3
                       only, 6.12 has no drm_gpusvm)
  --timeout SEC        power the VM off after SEC seconds, 0 = never (default 1800, 5400
                       with a debug or KCSAN kernel, shell 0)
  --boot-timeout SEC   a guest that has not reached its init after SEC seconds is stopped and
                       booted once more (TCG now and then hangs a boot); 0 = never (default
                       300; boot to init takes ~6 s)
  --results FILE       keep what the guest wrote to its results port in FILE: the TAP
                       results, or what the --run command wrote to /dev/ttyS1
  --no-build           boot what was built last, do not build
  -h, --help           this text
Environment: GMEM_QEMU_SRC (your QEMU 10.0 tree), GMEM_KERNEL_SRC (your tree of a guest
kernel's version), GMEM_CACHE (build cache, default ~/.cache/gmem-accel), GMEM_BUILD_DIR
(default ./build).
While the VM runs, its QMP and HMP monitor sockets are printed; connect with e.g.
  socat - UNIX-CONNECT:<hmp socket>
TXT
}

bad_option() {
	echo "run-vm.sh: $*" >&2
	echo "run-vm.sh: see scripts/run-vm.sh --help" >&2
	exit 2
}

# SIZE with optional K/M/G/T suffix -> bytes
parse_size() {
	local v=$1 n unit
	[[ $v =~ ^([0-9]+)([KkMmGgTt]?)(i?B)?$ ]] || return 1
	n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]^^}
	case "$unit" in
	K) n=$((n << 10)) ;; M) n=$((n << 20)) ;; G) n=$((n << 30)) ;; T) n=$((n << 40)) ;;
	esac
	echo "$n"
}

need_arg() { [ $# -ge 2 ] && [ -n "$2" ] || bad_option "$1 needs a value"; }

mode=suite run_cmd="" extra="" devices=4 hbm_size=256M accel=tcg smp=2 memory=2G coherent=""
qemu_args="" append_extra="" timeout="" results="" build=1 numa=2 iommu=1 variant="" prealloc=off
boot_timeout=300
kver=${GMEM_KERNELS[0]}
while [ $# -gt 0 ]; do
	case "$1" in
	--shell) mode=shell ;;
	--run) need_arg "$@"; mode=run run_cmd=$2; shift ;;
	--kernel) need_arg "$@"; kver=$2; shift ;;
	--extra) need_arg "$@"; extra=$2; shift ;;
	--devices) need_arg "$@"; devices=$2; shift ;;
	--hbm-size) need_arg "$@"; hbm_size=$2; shift ;;
	--coherent) need_arg "$@"; coherent=$2; shift ;;
	--accel) need_arg "$@"; accel=$2; shift ;;
	--smp) need_arg "$@"; smp=$2; shift ;;
	--memory) need_arg "$@"; memory=$2; shift ;;
	--numa) need_arg "$@"; numa=$2; shift ;;
	--no-iommu) iommu=0 ;;
	--prealloc) prealloc=on ;;
	--debug-kernel) variant=debug ;;
	--kcsan-kernel) variant=kcsan ;;
	--qemu-args) need_arg "$@"; qemu_args=$2; shift ;;
	--append) need_arg "$@"; append_extra=$2; shift ;;
	--timeout) need_arg "$@"; timeout=$2; shift ;;
	--boot-timeout) need_arg "$@"; boot_timeout=$2; shift ;;
	--results) need_arg "$@"; results=$2; shift ;;
	--no-build) build=0 ;;
	-h | --help) usage; exit 0 ;;
	*) bad_option "unknown option '$1'" ;;
	esac
	shift
done

[[ " ${GMEM_KERNELS[*]} " == *" $kver "* ]] ||
	bad_option "--kernel '$kver': give one of ${GMEM_KERNELS[*]}"
sfx=-$kver${variant:+-$variant}
[[ $devices =~ ^[0-9]+$ ]] && [ "$devices" -ge 1 ] && [ "$devices" -le 16 ] ||
	bad_option "--devices '$devices': give a number from 1 to 16"
if [ -z "$coherent" ]; then
	coherent=$((devices / 2))
fi
[[ $coherent =~ ^[0-9]+$ ]] && [ "$coherent" -le "$devices" ] ||
	bad_option "--coherent '$coherent': give a number from 0 to the number of devices ($devices)"
hbm_bytes=$(parse_size "$hbm_size") ||
	bad_option "--hbm-size '$hbm_size': give a size like 256M or 1G"
mem_bytes=$(parse_size "$memory") && [ "$mem_bytes" -ge $((256 << 20)) ] ||
	bad_option "--memory '$memory': give a size of at least 256M, like 2G"
[[ $smp =~ ^[0-9]+$ ]] && [ "$smp" -ge 1 ] && [ "$smp" -le 8 ] ||
	bad_option "--smp '$smp': give a number from 1 to 8"
[[ $numa =~ ^[0-9]+$ ]] && [ "$numa" -ge 1 ] && [ "$numa" -le 4 ] ||
	bad_option "--numa '$numa': give a number of nodes from 1 to 4"
[ $(((mem_bytes >> 20) % numa)) = 0 ] ||
	bad_option "--numa $numa: the RAM ($memory) must split into $numa nodes of whole MiB"
[ "$smp" -lt "$numa" ] || [ $((smp % numa)) = 0 ] ||
	bad_option "--numa $numa: give a number of CPUs (--smp $smp) that $numa nodes share evenly"
tsc_append=""
case "$accel" in
# TCG runs REP STOSB and REP MOVSB a byte an iteration, and -cpu max advertises ERMS and FSRM,
# which make the guest kernel (clear_page(), memcpy()) and glibc (memset()) prefer them: without
# those two bits they take REP STOSQ or wider stores (docs/performance.md, "The guest CPU").
# The guest's TSC is the host's (QEMU's RDTSC reads it), but the guest, shown no invariant-TSC
# bit (TCG has none) on an AMD model with two CPUs, marks it unstable and keeps time with the
# ACPI PM timer, a port read under QEMU's big lock for every clock read (docs/performance.md,
# "The guest's clock"). A host TSC that is constant and does not stop
# makes the guest's reliable.
tcg)
	accel_args=(-accel tcg -cpu "max,erms=off,fsrm=off")
	grep -qw constant_tsc /proc/cpuinfo && grep -qw nonstop_tsc /proc/cpuinfo &&
		tsc_append=" tsc=reliable"
	;;
kvm)
	[ -w /dev/kvm ] || bad_option "--accel kvm: /dev/kvm is missing or not writable; use --accel tcg"
	accel_args=(-accel kvm -cpu host)
	;;
*) bad_option "--accel '$accel': give tcg or kvm" ;;
esac
[ -z "$extra" ] || [ -d "$extra" ] || bad_option "--extra '$extra' is not a directory"
if [ -z "$timeout" ]; then
	if [ "$mode" = shell ]; then timeout=0; elif [ -n "$variant" ]; then timeout=5400; else timeout=1800; fi
fi
[[ $timeout =~ ^[0-9]+$ ]] || bad_option "--timeout '$timeout': give seconds, 0 for none"
[[ $boot_timeout =~ ^[0-9]+$ ]] || bad_option "--boot-timeout '$boot_timeout': give seconds, 0 for none"
read -ra extra_qemu <<<"$qemu_args"

if [ "$build" = 1 ]; then
	gmem_build "$kver" $variant
fi
qemu="$GMEM_BUILD/qemu-system-x86_64"
kernel="$GMEM_BUILD/bzImage$sfx"
for f in "$qemu" "$kernel" "$GMEM_BUILD/initramfs$sfx.cpio"; do
	[ -e "$f" ] || die "$f is missing: run scripts/run-vm.sh --kernel $kver${variant:+ --$variant-kernel} without --no-build."
done

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/gmem-accel-vm.XXXXXX")
# The extras (--extra DIR, the --run command) ride in a second cpio appended to the first.
initrd="$GMEM_BUILD/initramfs$sfx.cpio"
if [ -n "$extra" ] || [ "$mode" = run ]; then
	stage="$run_dir/extra-root"
	mkdir -p "$stage/extra" "$stage/etc"
	[ -z "$extra" ] || cp -a "$extra/." "$stage/extra/"
	[ "$mode" != run ] || printf '%s\n' "$run_cmd" >"$stage/etc/gmem-run-cmd"
	(cd "$stage" && find . -mindepth 1 | cpio --quiet -o -H newc -R 0:0) >"$run_dir/extra.cpio"
	cat "$GMEM_BUILD/initramfs$sfx.cpio" "$run_dir/extra.cpio" >"$run_dir/initrd.cpio"
	initrd="$run_dir/initrd.cpio"
fi

# RAM and CPUs spread over the NUMA nodes; an IOMMU in front of every device; PCIe native
# hotplug on the root ports (not q35's ACPI hotplug), so devices can be unplugged and plugged.
# A node's CPUs are a socket of their own (a shared LLC across nodes makes the kernel warn);
# with fewer CPUs than nodes, the CPUs are on node 0 and the other nodes hold memory only.
machine_args=(-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off)
smp_arg=$smp
if [ "$numa" -gt 1 ]; then
	per_node=$((smp >= numa ? smp / numa : 0))
	[ "$per_node" = 0 ] || smp_arg="$smp,sockets=$numa"
	for ((n = 0; n < numa; n++)); do
		cpus=""
		if [ "$per_node" = 0 ]; then
			[ "$n" != 0 ] || cpus=",cpus=0-$((smp - 1))"
		else
			cpus=",cpus=$((n * per_node))-$(((n + 1) * per_node - 1))"
		fi
		machine_args+=(-object "memory-backend-ram,id=ram$n,size=$(((mem_bytes >> 20) / numa))M,prealloc=$prealloc"
			       -numa "node,nodeid=$n,memdev=ram$n$cpus")
	done
elif [ "$prealloc" = on ]; then
	machine_args+=(-mem-prealloc)
fi
iommu_append=""
if [ "$iommu" = 1 ]; then
	machine_args+=(-device intel-iommu,intremap=off)
	iommu_append=" intel_iommu=on gmemtest.iommu=1"
fi
device_args=()
for ((i = 0; i < devices; i++)); do
	device_args+=(-device "pcie-root-port,id=gmem_rp$i,chassis=$((i + 1))"
		      -device "gmem-accel,id=gmem$i,bus=gmem_rp$i,hbm-size=$hbm_bytes,hbm-prealloc=$prealloc$(
			[ "$i" -lt $((devices - coherent)) ] || echo ,coherent=on)")
done
results_log="$run_dir/results.log"
# The debug kernel runs with 4-level page tables: identify_cpu() clears the boot CPU's feature
# bits for a moment, and an interrupt then has KASAN check an LA57 direct-map address against
# 4-level bounds: a false "wild-memory-access" at boot (1 boot in 3 under TCG's -cpu max).
debug_append=""
[ "$variant" != debug ] || debug_append=" no5lvl"
append="console=ttyS0 panic=-1 quiet$tsc_append$iommu_append$debug_append gmem.mode=$mode gmemtest.devices=$devices gmemtest.hbm_size=$hbm_bytes gmemtest.coherent=$coherent${append_extra:+ $append_extra}"
qmp="$run_dir/qmp.sock" hmp="$run_dir/hmp.sock"
# Guest tests ask the host for what only it can do (inject device faults) over ttyS2:
# scripts/lib/host-control.py relays each line to a QMP monitor of its own.
ctl="$run_dir/host-control.sock" ctl_qmp="$run_dir/host-control-qmp.sock"
cmd=("$qemu" -machine q35 "${accel_args[@]}" -smp "$smp_arg" -m "$((mem_bytes >> 20))M"
	-nodefaults -no-reboot -display none
	-L /usr/share/seabios -L /usr/share/qemu
	-kernel "$kernel" -initrd "$initrd" -append "$append"
	-serial stdio -serial "file:$results_log" -pidfile "$run_dir/qemu.pid"
	-qmp "unix:$qmp,server=on,wait=off" -monitor "unix:$hmp,server=on,wait=off"
	-chardev "socket,id=hostctl,path=$ctl,server=on,wait=off" -serial chardev:hostctl
	-chardev "socket,id=hostctlqmp,path=$ctl_qmp,server=on,wait=off"
	-mon chardev=hostctlqmp,mode=control
	"${machine_args[@]}" "${device_args[@]}" "${extra_qemu[@]}")

step "booting q35 ($accel, $smp CPUs, $memory in $numa NUMA node(s)$([ "$iommu" = 1 ] && echo ", intel-iommu"), Linux $kver${variant:+ $variant kernel}) with $devices gmem-accel device(s), HBM $hbm_size each, $coherent of them coherent"
note "QMP monitor: $qmp"
note "HMP monitor: $hmp   (socat - UNIX-CONNECT:$hmp)"
note "run directory: $run_dir"
start_relay() {
	/usr/bin/python3 "$repo/scripts/lib/host-control.py" "$ctl" "$ctl_qmp" \
		2>>"$run_dir/host-control.log" &
	relay=$!
}
stop_relay() {
	kill "$relay" 2>/dev/null || true
	wait "$relay" 2>/dev/null || true
}
# TCG now and then never gets a boot to the guest's init: QEMU aborts (an assertion in
# iotlb_to_section(), about 1 boot in 30 on these machines), or the guest kernel stops in its
# initcalls (seen once: a timer interrupt left in service on CPU 0, jiffies stopped, both CPUs
# halted). The init writes a line to the results port first thing; a boot that has not within
# --boot-timeout is stopped. Either is no result of the guest's: it boots once more.
boot_watch() {
	local waited=0
	while [ "$waited" -lt "$boot_timeout" ]; do
		[ ! -s "$results_log" ] || return 0
		sleep 1
		waited=$((waited + 1))
	done
	[ ! -s "$results_log" ] || return 0
	: >"$run_dir/boot-hung"
	kill "$(cat "$run_dir/qemu.pid" 2>/dev/null)" 2>/dev/null || true
}
boot() {
	local watch=""
	rm -f "$run_dir/boot-hung"
	[ "$boot_timeout" = 0 ] || { boot_watch & watch=$!; }
	status=0
	"${tmo[@]}" "${cmd[@]}" </dev/null || status=$?
	[ -z "$watch" ] || { kill "$watch" 2>/dev/null || true; wait "$watch" 2>/dev/null || true; }
}
start_relay
status=0
if [ "$mode" = shell ]; then
	"${cmd[@]}" || status=$?
else
	tmo=()
	[ "$timeout" = 0 ] || tmo=(timeout --foreground -k 10 "$timeout")
	boot
	if [ -e "$run_dir/boot-hung" ] || { [ "$status" = 134 ] && [ ! -s "$results_log" ]; }; then
		if [ -e "$run_dir/boot-hung" ]; then
			echo "run-vm.sh: the guest did not reach its init within --boot-timeout $boot_timeout s; QEMU stopped, booting once more" >&2
		else
			echo "run-vm.sh: QEMU aborted before the guest started (status 134); booting once more" >&2
		fi
		stop_relay
		start_relay
		boot
	fi
	if [ -e "$run_dir/boot-hung" ]; then
		echo "run-vm.sh: the guest did not reach its init within --boot-timeout $boot_timeout s, twice; the console output above shows how far it got" >&2
		status=1
	fi
	[ "$status" != 124 ] || echo "run-vm.sh: the VM did not finish within --timeout $timeout s" >&2
fi

stop_relay

[ -z "$results" ] || cp "$results_log" "$results"
case "$mode" in
suite)
	/usr/bin/python3 "$repo/scripts/lib/tap_summary.py" --name guest "$results_log" || status=1
	;;
run)
	rc=$(sed -n 's/^GMEM-RUN-EXIT \([0-9]*\).*/\1/p' "$results_log" | tail -n 1)
	if [ -z "$rc" ]; then
		echo "run-vm.sh: the guest did not report an exit status for --run (crash or timeout)" >&2
		status=1
	else
		status=$rc
	fi
	;;
esac
[ "$status" = 0 ] && rm -rf "$run_dir"
exit "$status"
