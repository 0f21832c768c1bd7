#!/bin/sh
# The suite's SVM tests on the DRM accel front end (Linux 7.3): device 0 given to DRM, then
# each test binary below run whole with GMEM_FRONTEND=drm, so that its gmem_open(0) is the
# device's /dev/accel file and its ioctls the DRM ones (gmem_frontend_adapter.c). A case
# that needs what only the /dev/gmem_accelN front end has (a call without a DRM counterpart,
# test_hmm's /dev/gmem_dmirrorN) is reported as a SKIP naming it; every other result is the
# case's own. Device 0 goes back to the front end it had. One TAP stream, plan last.
. /usr/libexec/gmem-accel/tap.sh
# (not oversub_test: each of its cases asserts or waits for the gmem core's oversubscription
# policy; 4x oversubscription on this front end is drm_devmem_test's and drm_sysalloc_test's)
tests="mirror_test mm_events_test hostile_test signal_test hbm_test load_test"
dev=0
param=/sys/module/gmem_accel/parameters/frontend
drv=/sys/bus/pci/drivers/gmem_accel

if [ ! -d /sys/class/accel ]; then
	echo "1..0 # SKIP no DRM accel framework: the DRM front end needs Linux 7.3 with" \
	     "CONFIG_DRM_GPUSVM (images/kernel-7.3.config)"
	exit 0
fi
addr=$(basename "$(readlink /sys/class/gmem_accel/gmem_accel$dev/device)")
# (the parameter is an array by device number: device 0's is its first entry)
before=$(cut -d, -f1 $param)
[ "$before" = "(null)" ] && before=gmem
# bind_as FRONTEND: device $dev's front end set, and the device bound again under it
bind_as() {
	[ -e $drv/"$addr" ] && printf %s "$addr" >$drv/unbind
	printf %s "$1" >$param && printf %s "$addr" >$drv/bind
}
trap 'bind_as "$before" || echo "# could not give device $dev back to $before"' EXIT
if ! bind_as drm || [ ! -d /sys/class/gmem_accel/gmem_accel$dev/device/accel ]; then
	echo "Bail out! device $dev ($addr) could not be given to the DRM front end"
	exit 1
fi
echo "# device $dev ($addr) on the DRM front end: $(ls /sys/class/gmem_accel/gmem_accel$dev/device/accel)"
export GMEM_FRONTEND=drm

# Cases that assert how the gmem core does it, not what the program sees: not run, SKIPped
# with the reason ("skip"); and the DRM front end's known bugs: run, a failure is a TODO
# naming it ("bug"). BINARY CASE KIND REASON, one a line.
grain="drm_gpusvm faults a whole chunk (2 MiB, 64 KiB or 4 KiB), the gmem core a page or a 64 KiB block"
windows="counts the gmem core's notifier windows; drm_gpusvm's notifiers are its own"
dmirror="needs test_hmm's /dev/gmem_dmirrorN, which the DRM front end has not"
hbm="counts the gmem core's HBM allocator (hbm_pages_now, hbm_chunks_now); drm_pagemap's HBM is drm_hbm_pages_now"
evict="asserts the gmem core's eviction (its LRU of 2 MiB chunks, evictions, evictions_ahead); drm_pagemap evicts the oldest ranges (drm_evictions)"
coherent="(not run: it WARNs) a page in a coherent device's HBM of the gmem front end reaches drm_gpusvm_get_pages(), which takes it for drm_pagemap's (drm_WARN_ON(!dpagemap)): the DRM device's fault or PREFETCH there fails with EBUSY"
cat >/tmp/drm_svm_suite.cases <<EOT
mirror_test processes_fault_at_once_each_on_its_own_queue skip $grain
mirror_test fault_populates_only_the_faulting_page skip $grain
mirror_test fault_maps_present_neighbours_in_64k_block skip $grain
mirror_test fault_in_block_mapped_around_maps_its_page_alone skip $grain
mirror_test zero_page_read skip counts the gmem core's DMA mappings (dma_mapped_pages_now); drm_gpusvm's are its own
mm_events_test invalidations_elsewhere_pass_the_device_by skip $windows
mm_events_test window_mapped_again_keeps_its_device_mappings skip $windows
hostile_test own_migration_races_its_faults skip needs the gmem core's fault-pass injection
hostile_test contention_on_shared_windows_throttles skip known bug $coherent
hostile_test killed_during_a_huge_fault_ahead skip $dmirror
hostile_test dmirror_snapshot_of_a_huge_hole skip $dmirror
hostile_test dmirror_snapshot_without_buffer skip $dmirror
hbm_test bad_advise_args skip a range past user space is EINVAL here (docs/uapi.md), EFAULT to GMEM_ACCEL_IOC_ADVISE
hbm_test migrate_between_devices skip known bug $coherent
hbm_test to_device_then_cpu_access skip PREFETCH maps HBM for reading (the device's write faults), MIGRATE writable; and $hbm, cpu_faults
hbm_test contiguous_pages_map_as_64k skip drm_gpusvm maps a range's HBM 4 KiB or 2 MiB a leaf, never as 64 KiB CONT groups
hbm_test close_brings_pages_home skip $hbm
hbm_test munmap_returns_chunks skip $hbm
hbm_test device_write_to_readonly_hbm skip $hbm
hbm_test device_write_keeps_hbm_after_protection_change skip $hbm
hbm_test device_write_with_hbm_full_evicts_nothing skip $hbm
hbm_test oversubscription skip $evict
hbm_test eviction_spares_recently_used_chunk skip $evict
hbm_test eviction_invalidates_ranges_not_pages skip $evict
hbm_test eviction_worker_makes_room_beside_a_migration skip $evict
hbm_test eviction_finds_pages_mremap_moved skip $evict
hbm_test random_interleavings skip $evict
signal_test obj_alloc_evicting_through_signals skip GEM objects are never evicted here (as GMEM_ACCEL_OBJ_PINNED): the second object finds no room (ENOSPC)
EOT

counts=/tmp/drm_svm_suite.counts
: >$counts
for t in $tests; do
	echo "# $t on the DRM front end"
	skips=$(awk -v t="$t" '$1 == t && $3 == "skip" { printf " -T %s", $2 }' /tmp/drm_svm_suite.cases)
	# (hbm_test's coherent variant runs on the last device, which stays the gmem core's)
	[ "$t" = hbm_test ] && skips="$skips -V coherent"
	# shellcheck disable=SC2086 # (one word per option)
	{ "$t" $skips 2>&1; echo "GMEM-ADAPTER-EXIT $?"; } |
	awk -v t="$t" -v n="$tap_n" -v counts=$counts -v cases=/tmp/drm_svm_suite.cases \
	    -v dmirror="$dmirror" '
	# A result: numbered on from the results before; a failure whose own output shows it
	# needed what the DRM front end has not becomes a SKIP that says so.
	BEGIN {
		while ((getline l <cases) > 0) {
			split(l, f, " ")
			if (f[1] != t)
				continue
			why = l
			sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", why)
			if (f[3] == "skip")
				skipped[f[2]] = why
			else
				bug[f[2]] = why
		}
	}
	function result(line, okay, c) {
		n++; seen++
		sub(/^(not )?ok [0-9]+ /, "", line)
		c = line
		sub(/^[^.]*\./, "", c)
		sub(/ .*/, "", c)
		if (!okay && c in bug) {
			print "not ok " n " - " t ": " line " # TODO known bug: " bug[c]; todo++
		} else if (!okay && need != "") {
			print "ok " n " - " t ": " line " # SKIP " need; skip++
		} else if (!okay) {
			print "not ok " n " - " t ": " line; fail++
		} else if (line ~ /# SKIP/) {
			print "ok " n " - " t ": " line; skip++
		} else {
			print "ok " n " - " t ": " line; pass++
		}
		need = ""
	}
	/^1\.\.[0-9]+/ { plan = substr($1, 4) + 0; next }
	/^(not )?ok [0-9]+ / { result($0, $1 == "ok"); next }
	/^GMEM-ADAPTER-EXIT / { status = $2; next }
	/gmem-adapter: the DRM front end has no / {
		need = "needs " $NF ", which the DRM front end has not"
	}
	/gmem_dmirror[0-9]*: No such file/ {
		need = dmirror
	}
	{ print }
	END {
		for (c in skipped) {
			n++; skip++
			print "ok " n " - " t ": " c " # SKIP " skipped[c]
		}
		if (seen < plan) {
			n++; fail++
			print "not ok " n " - " t ": " plan - seen " of " plan " results missing (exit " status ")"
		}
		printf "%d %d %d %d %d\n", n, pass, fail, skip, todo >>counts
	}'
	tap_n=$(tail -n 1 $counts | cut -d" " -f1)
done
awk '{ p += $2; f += $3; s += $4; k += $5 } END {
	printf "# on the DRM front end: %d passed, %d failed, %d skipped, %d known bugs\n", p, f, s, k
}' $counts
failed=$(awk '{ f += $3 } END { print f + 0 }' $counts)
plan "$tap_n"
[ "$failed" = 0 ]
