#!/bin/bash
# Install the Debian packages gmem-accel builds and runs with. Idempotent: does nothing when
# every package is already installed, so warm runs pay only a dpkg-query.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/log.sh"

# name[/suite] — a suite is given where bookworm's own version is too old.
PACKAGES=(
	# orchestration and QEMU build
	meson/bookworm-backports ninja-build pkg-config dpkg-dev python3-venv
	libglib2.0-dev libpixman-1-dev zlib1g-dev flex bison
	# QEMU run time: firmware for -L
	seabios qemu-system-data/bookworm-backports
	# guest kernels: 6.12 LTS (bookworm-security) and 7.3 (trixie-backports)
	linux-source-6.12 linux-source-7.3/trixie-backports bc libelf-dev libssl-dev cpio xz-utils kmod patch
	# guest user space: static test binaries and a busybox initramfs
	gcc libc6-dev busybox-static
	# host tests
	socat libjson-glib-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
	name=${p%%/*}
	if ! dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q 'ok installed'; then
		missing+=("$p")
	fi
done
# meson must be >= 1.5 (QEMU 10.0); an older one from bookworm counts as missing.
if ! dpkg --compare-versions "$(dpkg-query -W -f='${Version}' meson 2>/dev/null || echo 0)" ge 1.5; then
	missing+=(meson/bookworm-backports)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	die "missing Debian packages: ${missing[*]}; run this as root (or install them with sudo apt-get install)."
fi
step "adding Debian suites bookworm-backports, trixie, trixie-backports and deb-src (derived from this machine's sources)"
"$here/apt-sources.sh"
step "apt-get update"
apt-get update -q >/dev/null
step "installing ${#missing[@]} Debian packages: ${missing[*]}"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" |
	grep -E '^(Unpacking|Setting up) ' | sed 's/^/  /' || true
for p in "${missing[@]}"; do
	dpkg-query -W -f='${Status}' "${p%%/*}" 2>/dev/null | grep -q 'ok installed' ||
		die "Debian package ${p%%/*} did not install; see apt-get output above."
done
