#!/bin/bash
# Build qemu-system-x86_64 with hw/gmem-accel overlaid.
#   Source: $GMEM_QEMU_SRC (a QEMU 10.0 tree of your own), else Debian trixie's `qemu` source
#   package (apt-get source applies Debian's patches, which the +ds tarball needs).
#   Also builds the device's qtests (host-tests/qtest/, overlaid as tests/qtest/gmem-accel) with
#   QEMU's own libqtest, as an in-tree device's qtests are built.
#   --install LINK: also point LINK at the binary and, next to it, gmem-accel-qtest-* at the
#   qtests (meson's outputs).
#   --sanitize: the ASan+UBSan variant the fuzzer runs (scripts/run-fuzz.sh, the fuzz smoke):
#   its own build directory, the binary only; with --install, LINK points at it alone.
#   --libfuzzer: QEMU's own fuzzer, qemu-fuzz-x86_64 (clang, libFuzzer, ASan), for
#   scripts/run-fuzz.sh --generic; likewise.
#   Prints the path of the built binary on the last line.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
. "$repo/scripts/lib/cache.sh"

CONFIGURE_ARGS=(
	--target-list=x86_64-softmmu --python=/usr/bin/python3
	--without-default-features --without-default-devices --disable-download
	--disable-install-blobs --disable-docs --disable-tools --disable-guest-agent
	--disable-werror --enable-tcg --enable-kvm --enable-trace-backends=log
	--with-devices-x86_64=gmem-accel
)
sanitize= target=qemu-system-x86_64
if [ "${1:-}" = --sanitize ]; then
	sanitize="ASan+UBSan"
	shift
	CONFIGURE_ARGS+=(--enable-asan --enable-ubsan)
elif [ "${1:-}" = --libfuzzer ]; then
	sanitize="libFuzzer, ASan"
	target=qemu-fuzz-x86_64
	shift
	command -v clang >/dev/null && command -v clang++ >/dev/null ||
		die "QEMU's fuzzer needs clang: apt-get install clang"
	CONFIGURE_ARGS+=(--cc=clang --cxx=clang++ --enable-fuzzing --enable-asan)
fi

fetch_debian_source() {
	local dir
	dir=$(find "$GMEM_CACHE/src" -maxdepth 1 -type d -name 'qemu-10.0.*' 2>/dev/null | sort -V | tail -n 1)
	if [ -n "$dir" ] && [ -f "$dir/.gmem-unpacked" ]; then
		echo "$dir"
		return
	fi
	step "fetching QEMU 10.0 source (Debian trixie 'qemu' source package, with Debian's patches)" >&2
	mkdir -p "$GMEM_CACHE/src"
	# A tree without the marker is a partial unpack from an interrupted run: start over.
	[ -n "$dir" ] && rm -rf "$dir"
	"$repo/scripts/setup-host.sh" --sources >&2
	(cd "$GMEM_CACHE/src" && apt-get source -q qemu/trixie >apt-source-qemu.log 2>&1) ||
		die "apt-get source qemu/trixie failed (log: $GMEM_CACHE/src/apt-source-qemu.log): it needs trixie's deb-src entry (scripts/setup-host.sh --sources adds it), or set GMEM_QEMU_SRC to a QEMU 10.0 tree."
	dir=$(find "$GMEM_CACHE/src" -maxdepth 1 -type d -name 'qemu-10.0.*' | sort -V | tail -n 1)
	[ -n "$dir" ] || die "apt-get source did not unpack a qemu-10.0.* tree into $GMEM_CACHE/src."
	touch "$dir/.gmem-unpacked"
	echo "$dir"
}

# Idempotent build glue: a few lines in QEMU's own build files plus the overlay symlink.
overlay_device() {
	local src=$1
	ln -sfn "$repo/hw/gmem-accel" "$src/hw/gmem-accel"
	ln -sfn "$repo/host-tests/qtest" "$src/tests/qtest/gmem-accel"
	grep -q "subdir('gmem-accel')" "$src/tests/qtest/meson.build" ||
		echo "subdir('gmem-accel')  # gmem-accel overlay: the device's qtests" \
			>>"$src/tests/qtest/meson.build"
	grep -q "subdir('gmem-accel')" "$src/hw/meson.build" ||
		echo "subdir('gmem-accel')  # gmem-accel overlay" >>"$src/hw/meson.build"
	grep -q "source gmem-accel/Kconfig" "$src/hw/Kconfig" ||
		printf '# gmem-accel overlay\nsource gmem-accel/Kconfig\n' >>"$src/hw/Kconfig"
	if ! grep -q "'hw/gmem-accel'" "$src/meson.build"; then
		grep -q "^subdir('trace')" "$src/meson.build" ||
			die "$src/meson.build has no subdir('trace') line; is this a QEMU 10.0 tree?"
		sed -i "s|^subdir('trace')|trace_events_subdirs += ['hw/gmem-accel']  # gmem-accel overlay\n&|" "$src/meson.build"
	fi
	# HMP 'info gmem-accel': the entry here, its handler registered by the device at start.
	# Our hunk is the file's tail from its marker line; replaced only when it changed.
	local hx="$src/hmp-commands-info.hx" ours="$repo/hw/gmem-accel/hmp-commands-info.hx"
	if ! sed -n '/^HXCOMM gmem-accel overlay/,$p' "$hx" | cmp -s - "$ours"; then
		sed -i '/^HXCOMM gmem-accel overlay/,$d' "$hx"
		cat "$ours" >>"$hx"
	fi
	# Debian's device list for --without-default-devices: q35 plus our device.
	mkdir -p "$src/configs/devices/x86_64-softmmu"
	cp "$repo/hw/gmem-accel/gmem-accel.mak" "$src/configs/devices/x86_64-softmmu/gmem-accel.mak"
}

if [ -n "${GMEM_QEMU_SRC:-}" ]; then
	src=$(cd "$GMEM_QEMU_SRC" && pwd) || die "GMEM_QEMU_SRC=$GMEM_QEMU_SRC is not a directory."
	[ -f "$src/VERSION" ] && grep -q '^10\.0\.' "$src/VERSION" ||
		die "GMEM_QEMU_SRC=$src is not a QEMU 10.0 tree (VERSION says '$(cat "$src/VERSION" 2>/dev/null)')."
else
	src=$(fetch_debian_source)
fi
version=$(cat "$src/VERSION")
# One build at a time in the shared tree: another checkout's build re-points the overlay and
# rebuilds the device's objects, which a second ninja in the same directory would race.
exec {lock}>"$GMEM_CACHE/qemu-build.lock"
if ! flock -n "$lock"; then
	step "waiting for another checkout's QEMU build to finish (lock $GMEM_CACHE/qemu-build.lock)"
	flock "$lock"
fi
overlay_device "$src"

key=$(hash_of "$src" "${CONFIGURE_ARGS[*]}" "$repo/hw/gmem-accel/gmem-accel.mak")
build="$GMEM_CACHE/qemu-$version-$key"
mkdir -p "$build"
if [ ! -f "$build/build.ninja" ]; then
	step "configuring QEMU $version (x86_64-softmmu, trimmed${sanitize:+, $sanitize}) in $build"
	(cd "$build" && "$src/configure" "${CONFIGURE_ARGS[@]}" >configure.log 2>&1) ||
		{ tail -n 30 "$build/configure.log" >&2; rm -f "$build/build.ninja"; die "QEMU configure failed; full log: $build/configure.log"; }
fi
# ninja compares mtimes only: when the overlay now points at files of other content (another
# checkout's, which may be older than the outputs), drop everything made from the device's
# files (objects and the generated trace code) so it is rebuilt from them. A checkout with the
# same files (a worktree, a fresh clone) rebuilds nothing.
overlay=$(cd "$repo" && find hw/gmem-accel host-tests/qtest -type f -print0 | sort -z |
	xargs -0 sha256sum | sha256sum | cut -c1-12)
if [ "$(cat "$build/.gmem-overlay-src" 2>/dev/null)" != "$overlay" ]; then
	find "$build" \( -name '*hw_gmem-accel_*.o' -o -name 'trace-hw_gmem_accel.*' \) -delete
	rm -rf "$build/tests/qtest/gmem-accel"
	echo "$overlay" >"$build/.gmem-overlay-src"
fi
step "building $target $version with gmem-accel${sanitize:+ ($sanitize)} (incremental; a cold build takes ~5-10 min on 2 cores)"
set -o pipefail
qtests=()    # host-tests/qtest/qtests names them
while read -r t; do
	case "$t" in '' | '#'*) ;; *) qtests+=("gmem-accel-qtest-$t") ;; esac
done <"$repo/host-tests/qtest/qtests"
[ -z "$sanitize" ] || qtests=()
ninja -C "$build" "$target" "${qtests[@]/#/tests/qtest/gmem-accel/}" 2>&1 |
	tee "$build/ninja.log" | progress_filter "qemu" ||
	{ grep -B2 -A12 -m3 'error' "$build/ninja.log" >&2 || tail -n 40 "$build/ninja.log" >&2; die "QEMU build failed; full log: $build/ninja.log"; }
if [ "${1:-}" = --install ]; then
	ln -sfn "$build/$target" "$2"
	for t in "${qtests[@]}"; do
		ln -sfn "$build/tests/qtest/gmem-accel/$t" "$(dirname "$2")/$t"
	done
fi
echo "$build/$target"
