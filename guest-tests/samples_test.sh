#!/bin/sh
# The samples (samples/*.c, built against libgmem): each runs as a user would run it, and its
# output is checked — exit status, the figures it prints, and its PASS line. On a kernel with
# the DRM accel front end they run again on device 1 given to it, with GMEM_BACKEND=drm.
. /usr/libexec/gmem-accel/tap.sh
. /usr/libexec/gmem-accel/gmem_devices.sh
bin=/usr/libexec/gmem-accel
out=/tmp/sample.out

plan 22
# run NAME SECONDS: the sample's exit status, its output in $out (and the log, as comments).
# Killed after SECONDS, said so: a hung sample fails its own checks, not the whole guest suite.
run() {
	echo "# gmem-timeout $2"
	timeout "$2" "$bin/$1" >$out 2>&1
	st=$?
	diag <$out
	{ [ $st = 124 ] || [ $st = 143 ]; } && echo "# $1: killed after $2 s (its timeout)"
	return $st
}

# stat NAME: device 0's debugfs counter
stat() {
	awk -v k="$1" '$1 == k { print $2 }' /sys/kernel/debug/gmem_accel/gmem_accel0/stats
}

moved=$(stat migrated_to_device)
check "vector_add_managed exits 0" run vector_add_managed 300
moved=$(($(stat migrated_to_device) - moved))
echo "# vector_add_managed: $moved pages prefetched into HBM"
# a and b are 1025 pages each at least (4 MiB, malloc's header); c too, if its empty pages move
check "vector_add_managed: prefetch moved a and b into HBM (>= 2050 pages: $moved)" \
	test "$moved" -ge 2050
check "vector_add_managed: c = a + b on the device over malloc'd arrays, 0 wrong, PASS" sh -c "
	grep -q 'c = a + b over 1048576 elements (4096 KiB each), c\[1000\] = 0x10000fa0, 0 wrong' $out &&
	grep -q 'vector_add_managed: PASS' $out"

check "device_mmap exits 0" run device_mmap 300
check "device_mmap: the CPU reads the device's result (x[1000] = 2005), PASS" \
	sh -c "grep -q 'x\[1000\] = 2005 (2 \* 1000 + 5), 0 wrong' $out && grep -q 'device_mmap: PASS' $out"

check "allocator_sizes exits 0" run allocator_sizes 300
# 4 KiB .. 64 MiB by 4: UVM's page size by size class, in HBM
check "allocator_sizes: 4K, 64K and 2M pages by size class, all in HBM" sh -c "
	grep -Eq ' 4096 HBM +4K ' $out && grep -Eq ' 16384 HBM +4K ' $out &&
	grep -Eq ' 65536 HBM +64K ' $out && grep -Eq ' 1048576 HBM +64K ' $out &&
	grep -Eq ' 4194304 HBM +2048K ' $out && grep -Eq ' 67108864 HBM +2048K ' $out &&
	[ \$(grep -c ' HBM ' $out) = 8 ] && grep -q 'allocator_sizes: PASS' $out"

check "simple_ipc exits 0" run simple_ipc 300
check "simple_ipc: 4 processes each checked 4 slices, 0 bytes wrong, PASS" sh -c "
	[ \$(grep -c 'checked 4 slices: 0 bytes wrong' $out) = 4 ] &&
	grep -q 'simple_ipc: 4 processes, PASS' $out"

# drm_frontend N gmem|drm: device N's front end (the parameter, then unbind and bind)
drm_frontend() {
	list=""
	i=0
	while [ $i -lt "$1" ]; do list="${list}gmem,"; i=$((i + 1)); done
	addr=$(basename "$(readlink /sys/class/gmem_accel/gmem_accel$1/device)")
	printf '%s' "$list$2" >/sys/module/gmem_accel/parameters/frontend &&
		echo "$addr" >/sys/bus/pci/drivers/gmem_accel/unbind &&
		echo "$addr" >/sys/bus/pci/drivers/gmem_accel/bind
}

# The same samples through libgmem's DRM backend (docs/uapi.md, libgmem): device 1 is DRM's,
# and GMEM_BACKEND=drm makes it device 0 for them.
drm_samples() {
	if [ ! -d /sys/class/accel ] || [ ! -e /sys/class/gmem_accel/gmem_accel1 ]; then
		why="no DRM accel front end on this kernel (Linux 7.3 has it)"
		ok "drm: device 1 given to the DRM front end # SKIP $why"
		for t in vector_add_managed device_mmap allocator_sizes simple_ipc oversubscribe; do
			ok "drm: $t exits 0 # SKIP $why"
			ok "drm: $t PASS # SKIP $why"
		done
		return
	fi
	check "drm: device 1 given to the DRM front end" drm_frontend 1 drm
	export GMEM_BACKEND=drm
	check "drm: vector_add_managed exits 0" run vector_add_managed 300
	check "drm: vector_add_managed: c = a + b, 0 wrong, PASS" sh -c "
		grep -q 'c = a + b over 1048576 elements (4096 KiB each), c\[1000\] = 0x10000fa0, 0 wrong' $out &&
		grep -q 'vector_add_managed: PASS' $out"
	check "drm: device_mmap exits 0" run device_mmap 300
	check "drm: device_mmap: x[1000] = 2005, PASS" \
		sh -c "grep -q 'x\[1000\] = 2005 (2 \* 1000 + 5), 0 wrong' $out && grep -q 'device_mmap: PASS' $out"
	check "drm: allocator_sizes exits 0" run allocator_sizes 300
	check "drm: allocator_sizes: 4K, 64K and 2M pages by size class, all in HBM" sh -c "
		grep -Eq ' 4096 HBM +4K ' $out && grep -Eq ' 65536 HBM +64K ' $out &&
		grep -Eq ' 4194304 HBM +2048K ' $out &&
		[ \$(grep -c ' HBM ' $out) = 8 ] && grep -q 'allocator_sizes: PASS' $out"
	check "drm: simple_ipc exits 0" run simple_ipc 300
	check "drm: simple_ipc: 4 processes, 0 bytes wrong, PASS" sh -c "
		[ \$(grep -c 'checked 4 slices: 0 bytes wrong' $out) = 4 ] &&
		grep -q 'simple_ipc: 4 processes, PASS' $out"
	if debug_kernel; then
		why="too slow on the debug kernel; the other kernels run it"
		ok "drm: oversubscribe exits 0 # SKIP $why"
		ok "drm: oversubscribe PASS # SKIP $why"
	else
		check "drm: oversubscribe exits 0" run oversubscribe 1500
		check "drm: oversubscribe: 0 elements wrong, PASS" sh -c "
			grep -Eq ': 0 of [0-9]+ elements wrong' $out && grep -q 'oversubscribe: PASS' $out"
	fi
	unset GMEM_BACKEND
	drm_frontend 1 gmem || echo "# could not give device 1 back to the gmem front end"
}

# 4x HBM under TCG takes tens of seconds alone in a guest, and many times that on the debug
# kernel, where hbm.oversubscription runs the same eviction path.
if debug_kernel; then
	why="too slow on the debug kernel; hbm.oversubscription covers it there, the other kernels run it"
	ok "oversubscribe exits 0 # SKIP $why"
	ok "oversubscribe: 4x HBM in 2 passes, 0 elements wrong, PASS # SKIP $why"
else
	check "oversubscribe exits 0" run oversubscribe 1500
	check "oversubscribe: 4x HBM in 2 passes, 0 elements wrong, PASS" sh -c "
		grep -q 'MiB through .* MiB of HBM, 2 passes' $out && grep -q 'pass 1 done' $out &&
		grep -Eq ': 0 of [0-9]+ elements wrong' $out && grep -q 'oversubscribe: PASS' $out"
fi
drm_samples
tap_done
