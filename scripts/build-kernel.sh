#!/bin/bash
# Build a guest kernel (bzImage + lib/test_hmm.ko) from tinyconfig + images/kernel.config (+
# images/kernel-VERSION.config, what that version needs besides).
#   --kernel VERSION (first): which kernel, one of images/kernels (default: its first). Source:
#   $GMEM_KERNEL_SRC if it is a tree of that version, else Debian's linux-source-VERSION.
#   --variant debug: also merge images/kernel-debug.config (KASAN, lockdep, kmemleak...);
#   --variant kcsan: images/kernel-kcsan.config (the data-race detector).
#   Outputs are named bzImage-VERSION[-VARIANT], test_hmm-VERSION[-VARIANT].ko and
#   kernel-build-dir-VERSION[-VARIANT].
#   --print-source: prepare the source tree and print its path (meson uses it at setup);
#   --print-uapi: the same for the kernel's uAPI headers (make headers; an include directory).
#   --install DIR: copy bzImage and test_hmm.ko into DIR and write DIR/kernel-build-dir-... (the
#   O= directory, for out-of-tree modules), touching only files whose content changed.
#   Prints the kernel build directory on the last line.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
. "$repo/scripts/lib/cache.sh"
. "$repo/scripts/lib/kernels.sh"
kver=${GMEM_KERNELS[0]}
if [ "${1:-}" = --kernel ]; then
	kver=${2:-}
	[[ " ${GMEM_KERNELS[*]} " == *" $kver "* ]] ||
		die "build-kernel.sh: --kernel '$kver': give one of ${GMEM_KERNELS[*]}"
	shift 2
fi
fragments=("$repo/images/kernel.config")
[ ! -f "$repo/images/kernel-$kver.config" ] || fragments+=("$repo/images/kernel-$kver.config")
variant=""
if [ "${1:-}" = --variant ]; then
	case "${2:-}" in
	debug | kcsan) variant=$2 fragments+=("$repo/images/kernel-$2.config") ;;
	*) die "build-kernel.sh: --variant '${2:-}': give debug or kcsan" ;;
	esac
	shift 2
fi
sfx=-$kver${variant:+-$variant}

# A make of ours does not outlive this script: killed (an interrupted build, a timeout), it
# would go on compiling unseen, and the next build in the same directory would race it.
child=""
stop_child() {
	[ -z "$child" ] || { kill "$child" 2>/dev/null; wait "$child" 2>/dev/null || true; }
}
trap 'stop_child; exit 130' INT
trap 'stop_child; exit 143' TERM HUP
# run_child CMD...: CMD in the background, waited for (so that a signal stops it too).
run_child() {
	local st=0
	"$@" &
	child=$!
	wait "$child" || st=$?
	child=""
	return "$st"
}

# Debian's linux-source-VERSION, unpacked once per package version and set of patches into
# the cache, with images/patches/linux-VERSION/*.patch applied: fixes of kernel bugs the guest
# suite finds, each explained in its header, until the kernel has them. Each set of patches has
# a tree of its own, so that checkouts with different sets (branches, worktrees) never unpack
# over a tree another's build or module is using; a tree is named in cache keys by its
# canonical place ($tree_name), whichever directory holds it.
pkgver=""
tree_name=""
debian_source() {
	local tarball=/usr/src/linux-source-$kver.tar.xz dir="$GMEM_CACHE/src/linux" p tmp
	local patches=("$repo/images/patches/linux-$kver/"*.patch)
	[ -f "${patches[0]}" ] || patches=()
	[ -f "$tarball" ] || die "$tarball is missing: apt-get install linux-source-$kver (scripts/setup-host.sh does), or set GMEM_KERNEL_SRC."
	pkgver=$(dpkg-query -W -f='${Version}' "linux-source-$kver")
	[ ${#patches[@]} = 0 ] || pkgver="$pkgver+gmem$(hash_of "${patches[@]}")"
	# (a tree unpacked where all sets once shared one place keeps serving its own set there)
	local tree="$dir/linux-source-$kver"
	[ "$(cat "$tree/.gmem-unpacked" 2>/dev/null)" = "$pkgver" ] ||
		tree="$dir/$pkgver/linux-source-$kver"
	if [ "$(cat "$tree/.gmem-unpacked" 2>/dev/null)" != "$pkgver" ]; then
		step "unpacking linux-source-$kver $pkgver into ${tree%/*}" >&2
		mkdir -p "$dir"
		tmp=$(mktemp -d "$dir/.unpack.XXXXXX")
		tar -C "$tmp" -xf "$tarball" "linux-source-$kver"
		for p in "${patches[@]}"; do
			note "applying ${p#"$repo"/}" >&2
			patch -s -p1 -d "$tmp/linux-source-$kver" <"$p" >&2 ||
				{ rm -rf "$tmp"; die "${p#"$repo"/} does not apply to linux-source-$kver $pkgver: refresh or drop it."; }
		done
		echo "$pkgver" >"$tmp/linux-source-$kver/.gmem-unpacked"
		# (whole or not at all: a concurrent unpack of the same set loses the race harmlessly)
		rm -rf "$tree"
		mkdir -p "${tree%/*}"
		mv -T "$tmp/linux-source-$kver" "$tree" 2>/dev/null || true
		rm -rf "$tmp"
	fi
	echo "$tree"
}

src=""
if [ -n "${GMEM_KERNEL_SRC:-}" ]; then
	src=$(cd "$GMEM_KERNEL_SRC" && pwd) || die "GMEM_KERNEL_SRC=$GMEM_KERNEL_SRC is not a directory."
	[ -f "$src/Makefile" ] && [ -f "$src/lib/test_hmm.c" ] ||
		die "GMEM_KERNEL_SRC=$src does not look like a Linux tree with lib/test_hmm.c."
	# A tree of another version is for the other kernel: this one comes from Debian.
	case "$(make -s -C "$src" kernelversion)" in "$kver" | "$kver".*) ;; *) src="" ;; esac
fi
user_tree=1
if [ -z "$src" ]; then
	user_tree=0
	src=$(debian_source)
	pkgver=$(cat "$src/.gmem-unpacked")
	tree_name="$GMEM_CACHE/src/linux/linux-source-$kver"
fi
if [ "${1:-}" = --print-source ]; then
	echo "$src"
	exit 0
fi
# The kernel's uAPI headers (make headers), which user space built for it includes before the
# host's (the guest tests and the kernel's own selftests: kselftest's KHDR_INCLUDES).
if [ "${1:-}" = --print-uapi ]; then
	hdr="$GMEM_CACHE/uapi-$kver-$(hash_of "${tree_name:-$src}" "$pkgver")"
	if [ ! -f "$hdr/.gmem-headers" ] || [ "$user_tree" = 1 ]; then
		step "installing the uAPI headers of Linux $kver into $hdr" >&2
		mkdir -p "$hdr"
		run_child make -s -C "$src" O="$hdr" headers >"$hdr/headers.log" 2>&1 ||
			{ tail -n 20 "$hdr/headers.log" >&2; die "make headers failed for $src; log: $hdr/headers.log"; }
		touch "$hdr/.gmem-headers"
	fi
	echo "$hdr/usr/include"
	exit 0
fi

version=$(make -s -C "$src" kernelversion)
key=$(hash_of "${tree_name:-$src}" "$version" "${fragments[@]}" "$pkgver")
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
if [ -f "$out/.gmem-built" ] && [ "$user_tree" = 0 ]; then
	install_outputs "$@"
	echo "$out"
	exit 0
fi

mkdir -p "$out"
if [ ! -f "$out/.gmem-configured" ]; then
	step "configuring Linux $version${variant:+ ($variant)}: tinyconfig + $(cd "$repo" && echo "${fragments[@]#"$repo"/}")"
	run_child make -s -C "$src" O="$out" tinyconfig >"$out/config.log" 2>&1
	run_child "$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${fragments[@]}" >>"$out/config.log" 2>&1
	run_child make -s -C "$src" O="$out" olddefconfig >>"$out/config.log" 2>&1
	# Every option of the fragments must have survived dependency resolution, save those this
	# version does not have at all (renamed; the version's own fragment names the new one).
	lost="" unknown=""
	while read -r line; do
		grep -qx "$line" "$out/.config" && continue
		opt=${line%%=*}
		if grep -rqE --include='Kconfig*' "^\s*(menu)?config ${opt#CONFIG_}\s*$" "$src"; then
			lost="$lost $opt"
		else
			unknown="$unknown $opt"
		fi
	done < <(cat "${fragments[@]}" | grep -E '^CONFIG_[A-Z0-9_]+=')
	[ -z "$unknown" ] || note "Linux $version has no$unknown (options of another version): left out"
	[ -z "$lost" ] || die "options of ${fragments[*]#"$repo"/} dropped by Kconfig (missing dependencies?): $(echo $lost). Fix the fragment."
	touch "$out/.gmem-configured"
fi
# A build with no object yet is a whole one: its count is the next cold build's "of ~N".
whole=1
[ -z "$(find "$out" -name '*.o' -print -quit)" ] || whole=0
step "building Linux $version${variant:+ ($variant)} guest kernel + modules (a cold build takes several minutes on $(nproc) cores)"
make -C "$src" O="$out" -j"$(nproc)" bzImage modules >"$out/build.log" 2>&1 &
make_pid=$!
child=$make_pid
# How many files the last cold build of this version compiled: the progress's "of ~N".
count_file="$GMEM_CACHE/linux-$version${variant:+-$variant}.files"
total=$(cat "$count_file" 2>/dev/null || true)
[[ "$total" =~ ^[0-9]+$ ]] || total=""
# A progress line every 20 s; the make's end ends the wait at once, not at the next line.
st=""
while [ -z "$st" ]; do
	sleep 20 &
	tick=$!
	ended=""
	wait -n -p ended "$make_pid" "$tick" && rc=0 || rc=$?	# (a signal waits for neither)
	if [ "$ended" = "$make_pid" ]; then
		st=$rc
		kill "$tick" 2>/dev/null
	elif [ "$ended" = "$tick" ]; then
		note "kernel: $(grep -c '^  CC' "$out/build.log")${total:+ of ~$total} files compiled"
	fi
done
child=""
[ "$st" = 0 ] || { grep -B2 -A10 -m3 -E 'error|Error' "$out/build.log" >&2 || tail -n 30 "$out/build.log" >&2; die "kernel build failed; full log: $out/build.log"; }
compiled=$(grep -c '^  CC' "$out/build.log" || true)
note "kernel: $compiled files compiled, done"
# (a build that resumed an interrupted one compiled only the rest: not a total)
[ "$whole" = 0 ] || echo "$compiled" >"$count_file"
touch "$out/.gmem-built"
install_outputs "$@"
echo "$out"
