#!/bin/bash
# The one script that changes the host: every other entry point calls it, and it does nothing
# when the host already has what gmem-accel needs (a warm run pays only a dpkg-query).
#
# What it may change, each said before it is done:
#  - /etc/apt/sources.list.d/gmem-accel.sources: the Debian suites bookworm-backports (meson
#    >= 1.5), trixie (QEMU 10.0's source package), trixie-backports (the newest guest
#    kernel's source) and deb-src entries (`apt-get source`), all derived from the machine's
#    own Debian sources, so no archive host is named here;
#  - /etc/apt/preferences.d/gmem-accel-trixie: trixie pinned low, so nothing on the host is
#    upgraded to it by accident;
#  - the Debian packages below, installed with apt-get.
#   scripts/setup-host.sh              add what is missing
#   scripts/setup-host.sh --dry-run    print what it would add, change nothing
#   scripts/setup-host.sh --sources    the apt sources only (for `apt-get source`)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/log.sh"
. "$repo/scripts/lib/kernels.sh"

SRC_FILE=${GMEM_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}
APT_OUT=/etc/apt/sources.list.d/gmem-accel.sources
APT_PIN=/etc/apt/preferences.d/gmem-accel-trixie

# name[/suite]: a suite where bookworm's own version is too old or missing.
PACKAGES=(
	# orchestration and QEMU build
	meson/bookworm-backports ninja-build pkg-config dpkg-dev python3-venv
	libglib2.0-dev libpixman-1-dev zlib1g-dev flex bison
	# QEMU run time: firmware for -L
	seabios qemu-system-data/bookworm-backports
	# guest kernels: their sources (images/kernels) and what building them takes
	"${GMEM_KERNEL_PACKAGES[@]}" bc libelf-dev libssl-dev cpio xz-utils kmod patch
	# guest user space: static test binaries and a busybox initramfs
	gcc libc6-dev busybox-static
	# host tests
	socat libjson-glib-dev
)

mode=install
case "${1:-}" in
'') ;;
--dry-run) mode=dry-run ;;
--sources) mode=sources ;;
-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
*) die "setup-host.sh: unknown option '$1' (--dry-run, --sources, --help)" ;;
esac

# The first URIs of a deb822 stanza (or sources.list line) that lists the plain bookworm suite.
debian_mirror() {
	if [ -r "$SRC_FILE" ]; then
		awk '/^URIs:/ { uri = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") { print uri; exit } }
		     /^$/ { uri = "" }' "$SRC_FILE"
	elif [ -r /etc/apt/sources.list ]; then
		awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list
	fi
}

sources_text() {
	local mirror=$1 keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	cat <<SRC
# Written by gmem-accel's scripts/setup-host.sh, derived from $SRC_FILE.
Types: deb deb-src
URIs: $mirror
Suites: bookworm-backports trixie trixie-backports
Components: main
Signed-By: $keyring

Types: deb-src
URIs: $mirror
Suites: bookworm
Components: main
Signed-By: $keyring
SRC
}

pin_text() {
	cat <<'PIN'
# gmem-accel: take only what is asked for by name from trixie and backports.
Package: *
Pin: release n=trixie
Pin-Priority: 100
PIN
}

# Print the sources and pin that differ from what is there; write them unless dry-running.
# Returns 0 when something changed (or would).
apt_sources() {
	local mirror new changed=1
	mirror=$(debian_mirror)
	[ -n "$mirror" ] ||
		die "no Debian bookworm archive in $SRC_FILE or /etc/apt/sources.list: add one, or set GMEM_APT_SOURCES to a deb822 sources file that has it."
	new=$(sources_text "$mirror")
	if [ "$new" != "$(cat "$APT_OUT" 2>/dev/null)" ]; then
		changed=0
		step "adding Debian suites bookworm-backports, trixie, trixie-backports and deb-src: $APT_OUT"
		sed 's/^/      /' <<<"$new"
		[ "$mode" = dry-run ] || printf '%s\n' "$new" >"$APT_OUT"
	fi
	new=$(pin_text)
	if [ "$new" != "$(cat "$APT_PIN" 2>/dev/null)" ]; then
		changed=0
		step "pinning trixie low (only packages asked for by name come from it): $APT_PIN"
		sed 's/^/      /' <<<"$new"
		[ "$mode" = dry-run ] || printf '%s\n' "$new" >"$APT_PIN"
	fi
	return "$changed"
}

need_root() {
	[ "$(id -u)" -eq 0 ] ||
		die "$1; run scripts/setup-host.sh as root (it says what it adds), or sudo it."
}

if [ "$mode" = sources ]; then
	[ "$(sources_text "$(debian_mirror)")" != "$(cat "$APT_OUT" 2>/dev/null)" ] ||
		[ "$(pin_text)" != "$(cat "$APT_PIN" 2>/dev/null)" ] || exit 0
	need_root "the apt sources gmem-accel needs are missing"
	if apt_sources; then
		step "apt-get update"
		apt-get update -q >/dev/null
	fi
	exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "${p%%/*}" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
# meson must be >= 1.5 (QEMU 10.0); bookworm's own is older.
if ! dpkg --compare-versions "$(dpkg-query -W -f='${Version}' meson 2>/dev/null || echo 0)" ge 1.5 &&
	[[ " ${missing[*]} " != *" meson/"* ]]; then
	missing+=(meson/bookworm-backports)
fi
if [ ${#missing[@]} -eq 0 ]; then
	[ "$mode" != dry-run ] || step "nothing to add: every Debian package gmem-accel needs is installed"
	exit 0
fi

[ "$mode" = dry-run ] || need_root "missing Debian packages: ${missing[*]}"
apt_sources || true
step "installing ${#missing[@]} Debian packages: ${missing[*]}"
[ "$mode" != dry-run ] || exit 0
step "apt-get update"
apt-get update -q >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" |
	grep -E '^(Unpacking|Setting up) ' | sed 's/^/  /' || true
for p in "${missing[@]}"; do
	dpkg-query -W -f='${Status}' "${p%%/*}" 2>/dev/null | grep -q 'ok installed' ||
		die "Debian package ${p%%/*} did not install; see apt-get output above."
done
