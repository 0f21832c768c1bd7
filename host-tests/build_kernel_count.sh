#!/bin/bash
# scripts/build-kernel.sh's progress reads "N of ~M files compiled", M being what the last whole
# build of that version compiled (kept in the cache): a whole build records its count, smaller
# or larger (a configuration that leaves options out compiles fewer), and a build that resumes
# an interrupted one does not (it compiled only the rest). A stand-in make (first in PATH) that
# "compiles" $STUB_FILES files, and a stand-in kernel tree.
. "$(dirname "$0")/../scripts/lib/tap.sh"
. "$(dirname "$0")/kernel_stub.sh"
: "${REPO:?set REPO to the source tree}"

stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
kernel_stub "$stub"
cat >"$stub/bin/make" <<'STUB'
#!/bin/bash
for a in "$@"; do case $a in O=*) out=${a#O=} ;; esac; done
case " $* " in
*" kernelversion "*) echo 7.3.0; exit 0 ;;
*" tinyconfig "* | *" olddefconfig "*) : >"$out/.config"; exit 0 ;;
esac
for i in $(seq "$STUB_FILES"); do
	echo "  CC      f$i.o"
	: >"$out/f$i.o"
done
STUB
chmod +x "$stub/bin/make"

# build FILES [fresh]: one build compiling FILES files, in an empty build directory if "fresh"
build() {
	[ "${2:-}" != fresh ] || rm -rf "$stub/cache"/linux-7.3.0-*/
	PATH="$stub/bin:$PATH" STUB_FILES=$1 GMEM_CACHE=$stub/cache GMEM_KERNEL_SRC=$stub/src \
		"$REPO/scripts/build-kernel.sh" --kernel 7.3 >"$stub/out" 2>&1
}
recorded() { [ "$(cat "$stub/cache/linux-7.3.0.files" 2>/dev/null)" = "$1" ]; }

plan 3
build 40 fresh
check "a whole build records its count (40)" recorded 40
build 7
check "a build resuming in a directory with objects keeps it (40, not 7)" recorded 40
build 30 fresh
check "a smaller whole build records its own (30, not 40)" recorded 30
tap_done
