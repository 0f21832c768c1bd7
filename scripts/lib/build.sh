# Build everything the VM needs through the top-level meson.build (sourced by run-vm.sh and
# run-tests.sh). Sets GMEM_BUILD (the meson build directory).
GMEM_BUILD=${GMEM_BUILD_DIR:-$repo/build}

# gmem_build [debug] [sanitize]: everything the VM needs; with "debug", the debug kernel
# variant too; with "sanitize", the ASan+UBSan QEMU the fuzzer runs.
gmem_build() {
	local ksrc
	"$repo/scripts/lib/host-deps.sh"
	ksrc=$("$repo/scripts/build-kernel.sh" --print-source)
	if [ ! -f "$GMEM_BUILD/build.ninja" ]; then
		step "configuring the gmem-accel build in $GMEM_BUILD"
		meson setup "$GMEM_BUILD" "$repo" -Dkernel_src="$ksrc" >"$GMEM_BUILD.setup.log" 2>&1 ||
			{ cat "$GMEM_BUILD.setup.log" >&2; die "meson setup failed (log above)"; }
		rm -f "$GMEM_BUILD.setup.log"
	elif [ "$(meson introspect "$GMEM_BUILD" --buildoptions 2>/dev/null |
		/usr/bin/python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "kernel_src"))' 2>/dev/null)" != "$ksrc" ]; then
		meson configure "$GMEM_BUILD" -Dkernel_src="$ksrc" >/dev/null
	fi
	step "building (QEMU, guest kernel, driver, guest tests, initramfs; only what changed)"
	meson compile -C "$GMEM_BUILD" || die "build failed; the messages above name the step."
	if [[ " $* " == *" debug "* ]]; then
		step "building the debug guest kernel (KASAN, lockdep, kmemleak...), its driver and initramfs"
		meson compile -C "$GMEM_BUILD" initramfs-debug.cpio ||
			die "debug build failed; the messages above name the step."
	fi
	if [[ " $* " == *" sanitize "* ]]; then
		step "building QEMU with ASan and UBSan (the fuzzer's; a cold build takes ~7 min)"
		meson compile -C "$GMEM_BUILD" qemu-san ||
			die "sanitizer build failed; the messages above name the step."
	fi
}
