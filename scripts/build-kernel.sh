#!/bin/bash
# Build the guest kernel (bzImage + lib/test_hmm.ko) from tinyconfig + images/kernel.config.
#   Source: $GMEM_KERNEL_SRC (a Linux 6.12 tree of your own), else Debian's linux-source-6.12.
#   --variant debug (first): also merge images/kernel-debug.config (KASAN, lockdep, kmemleak...);
#   the variant's outputs are named bzImage-debug, test_hmm-debug.ko, kernel-build-dir-debug.
#   --print-source: prepare the source tree and print its path (meson uses it at setup).
#   --install DIR: copy bzImage and test_hmm.ko into DIR and write DIR/kernel-build-dir (the
#   O= directory, for out-of-tree modules), touching only files whose content changed.
#   Prints the kernel build directory on the last line.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
. "$repo/scripts/lib/cache.sh"
fragments=("$repo/images/kernel.config")
variant="" sfx=""
if [ "${1:-}" = --variant ]; then
	case "${2:-}" in
	debug) fragments+=("$repo/images/kernel-debug.config") variant=debug sfx=-debug ;;
	*) die "build-kernel.sh: --variant '${2:-}': the only variant is 'debug'" ;;
	esac
	shift 2
fi

debian_source() {
	local tarball=/usr/src/linux-source-6.12.tar.xz pkgver dir="$GMEM_CACHE/src/linux"
	[ -f "$tarball" ] || die "$tarball is missing: apt-get install linux-source-6.12 (scripts/lib/host-deps.sh does), or set GMEM_KERNEL_SRC."
	pkgver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
	if [ "$(cat "$dir/.gmem-unpacked" 2>/dev/null)" != "$pkgver" ]; then
		step "unpacking linux-source-6.12 $pkgver into $dir" >&2
		rm -rf "$dir"
		mkdir -p "$dir"
		tar -C "$dir" -xf "$tarball"
		echo "$pkgver" >"$dir/.gmem-unpacked"
	fi
	echo "$dir/linux-source-6.12"
}

if [ -n "${GMEM_KERNEL_SRC:-}" ]; then
	src=$(cd "$GMEM_KERNEL_SRC" && pwd) || die "GMEM_KERNEL_SRC=$GMEM_KERNEL_SRC is not a directory."
	[ -f "$src/Makefile" ] && [ -f "$src/lib/test_hmm.c" ] ||
		die "GMEM_KERNEL_SRC=$src does not look like a Linux tree with lib/test_hmm.c."
else
	src=$(debian_source)
fi
if [ "${1:-}" = --print-source ]; then
	echo "$src"
	exit 0
fi

version=$(make -s -C "$src" kernelversion)
key=$(hash_of "$src" "$version" "${fragments[@]}" "$(cat "$src/../.gmem-unpacked" 2>/dev/null || true)")
out="$GMEM_CACHE/linux-$version${variant:+-$variant}-$key"
# A kernel tree of the user's may change under us: always run make there; ours is immutable.
install_outputs() {
	[ "${1:-}" = --install ] || return 0
	local dest=$2 tmp
	cmp -s "$out/arch/x86/boot/bzImage" "$dest/bzImage$sfx" ||
		cp "$out/arch/x86/boot/bzImage" "$dest/bzImage$sfx"
	cmp -s "$out/lib/test_hmm.ko" "$dest/test_hmm$sfx.ko" ||
		cp "$out/lib/test_hmm.ko" "$dest/test_hmm$sfx.ko"
	tmp=$(mktemp)
	echo "$out" >"$tmp"
	if cmp -s "$tmp" "$dest/kernel-build-dir$sfx"; then rm -f "$tmp"; else mv "$tmp" "$dest/kernel-build-dir$sfx"; fi
}
if [ -f "$out/.gmem-built" ] && [ -z "${GMEM_KERNEL_SRC:-}" ]; then
	install_outputs "$@"
	echo "$out"
	exit 0
fi

mkdir -p "$out"
if [ ! -f "$out/.gmem-configured" ]; then
	step "configuring Linux $version${variant:+ ($variant)}: tinyconfig + $(cd "$repo" && echo "${fragments[@]#"$repo"/}")"
	make -s -C "$src" O="$out" tinyconfig >"$out/config.log" 2>&1
	"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${fragments[@]}" >>"$out/config.log" 2>&1
	make -s -C "$src" O="$out" olddefconfig >>"$out/config.log" 2>&1
	# Every option of the fragment must have survived dependency resolution.
	lost=$(cat "${fragments[@]}" | grep -E '^CONFIG_[A-Z0-9_]+=' | while read -r line; do
		grep -qx "$line" "$out/.config" || echo "${line%%=*}"
	done)
	[ -z "$lost" ] || die "options of ${fragments[*]#"$repo"/} dropped by Kconfig (missing dependencies?): $(echo $lost). Fix the fragment."
	touch "$out/.gmem-configured"
fi
step "building Linux $version${variant:+ ($variant)} guest kernel + modules (a cold build takes several minutes on $(nproc) cores)"
make -C "$src" O="$out" -j"$(nproc)" bzImage modules >"$out/build.log" 2>&1 &
make_pid=$!
while kill -0 "$make_pid" 2>/dev/null; do
	sleep 20
	kill -0 "$make_pid" 2>/dev/null && note "kernel: $(grep -c '^  CC' "$out/build.log") files compiled"
done
wait "$make_pid" || { grep -B2 -A10 -m3 -E 'error|Error' "$out/build.log" >&2 || tail -n 30 "$out/build.log" >&2; die "kernel build failed; full log: $out/build.log"; }
note "kernel: $(grep -c '^  CC' "$out/build.log") files compiled, done"
touch "$out/.gmem-built"
install_outputs "$@"
echo "$out"
