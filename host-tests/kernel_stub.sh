# Sourced by the host tests of scripts/build-kernel.sh. kernel_stub DIR: DIR/src, a stand-in
# kernel tree the script accepts as GMEM_KERNEL_SRC (its merge_config.sh passes), and DIR/bin,
# for the test's stand-in make (first in PATH).
kernel_stub() {
	mkdir -p "$1/bin" "$1/src/lib" "$1/src/scripts/kconfig"
	: >"$1/src/Makefile"
	: >"$1/src/lib/test_hmm.c"
	printf '#!/bin/sh\nexit 0\n' >"$1/src/scripts/kconfig/merge_config.sh"
	chmod +x "$1/src/scripts/kconfig/merge_config.sh"
}
