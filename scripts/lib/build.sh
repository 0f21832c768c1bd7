# Build everything the VM needs through the top-level meson.build (sourced by run-vm.sh,
# run-tests.sh and run-bench.sh). Sets GMEM_BUILD (the meson build directory).
GMEM_BUILD=${GMEM_BUILD_DIR:-$repo/build}
. "$repo/scripts/lib/kernels.sh"

# gmem_build [VERSION...] [debug] [debug-VERSION...] [sanitize]: QEMU and, for each guest
# kernel VERSION (none given: all of them), its kernel, module, tests and initramfs; with
# "debug", each one's debug variant (KASAN, lockdep, kmemleak...) too, with "debug-VERSION"
# that one's; with "kcsan", each one's KCSAN variant (the data-race detector); with
# "sanitize", the ASan+UBSan QEMU the fuzzer runs.
gmem_build() {
	local a k kernels=() targets=() srcs=() dbg=() debug=0 kcsan=0 sanitize=0 want have
	for a in "$@"; do
		case "$a" in
		debug) debug=1 ;;
		kcsan) kcsan=1 ;;
		debug-*) dbg+=("${a#debug-}") ;;
		sanitize) sanitize=1 ;;
		*) kernels+=("$a") ;;
		esac
	done
	[ ${#kernels[@]} -gt 0 ] || kernels=("${GMEM_KERNELS[@]}")
	"$repo/scripts/setup-host.sh"
	# Each kernel's source, and its uAPI headers when meson setup is to ask for them, the
	# kernels side by side: on a cold machine each is a single-threaded unpack and make
	# headers.
	local prep pids=() p
	prep=$(mktemp -d)
	for k in "${GMEM_KERNELS[@]}"; do
		{ "$repo/scripts/build-kernel.sh" --kernel "$k" --print-source >"$prep/$k" &&
			{ [ -f "$GMEM_BUILD/build.ninja" ] ||
				"$repo/scripts/build-kernel.sh" --kernel "$k" --print-uapi >/dev/null; }; } &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || { rm -rf "$prep"; die "preparing the guest kernels' sources failed (messages above)"; }
	done
	for k in "${GMEM_KERNELS[@]}"; do srcs+=("$k=$(cat "$prep/$k")"); done
	rm -rf "$prep"
	want=$(IFS=,; echo "${srcs[*]}")
	if [ ! -f "$GMEM_BUILD/build.ninja" ]; then
		step "configuring the gmem-accel build in $GMEM_BUILD"
		meson setup "$GMEM_BUILD" "$repo" -Dkernel_srcs="$want" >"$GMEM_BUILD.setup.log" 2>&1 ||
			{ cat "$GMEM_BUILD.setup.log" >&2; die "meson setup failed (log above)"; }
		rm -f "$GMEM_BUILD.setup.log"
	else
		have=$(meson introspect "$GMEM_BUILD" --buildoptions 2>/dev/null |
			/usr/bin/python3 -c 'import json,sys; print(",".join(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "kernel_srcs")))' 2>/dev/null || true)
		[ "$have" = "$want" ] || meson configure "$GMEM_BUILD" -Dkernel_srcs="$want" >/dev/null ||
			die "meson configure -Dkernel_srcs=$want failed: remove $GMEM_BUILD and run again."
	fi
	for k in "${kernels[@]}"; do
		targets+=("initramfs-$k.cpio")
		[ "$debug" = 0 ] || targets+=("initramfs-$k-debug.cpio")
		[ "$kcsan" = 0 ] || targets+=("initramfs-$k-kcsan.cpio")
	done
	for k in "${dbg[@]}"; do targets+=("initramfs-$k-debug.cpio"); done
	[ "$sanitize" = 0 ] || targets+=(qemu-san)
	step "building QEMU$([ "$sanitize" = 1 ] && echo " (and its ASan+UBSan variant, ~7 min cold)"), guest kernel(s) ${kernels[*]}$([ "$debug" = 1 ] && echo " with their debug variants (KASAN, lockdep, kmemleak...)")$([ "$kcsan" = 1 ] && echo " with their KCSAN variants")${dbg[*]:+, debug kernel(s) ${dbg[*]}}, driver, guest tests, initramfs; only what changed"
	meson compile -C "$GMEM_BUILD" || die "build failed; the messages above name the step."
	meson compile -C "$GMEM_BUILD" "${targets[@]}" || die "build failed; the messages above name the step."
}
