#!/bin/bash
# Derive the extra Debian suites gmem-accel needs (bookworm-backports for meson >= 1.5,
# trixie for the QEMU 10.0 source package, trixie-backports for linux-source-7.3, deb-src for
# `apt-get source`) from the machine's own Debian sources, so no archive host is ever named
# here. trixie is pinned low so nothing on the host is upgraded to it by accident.
set -euo pipefail

SRC_FILE=${GMEM_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}
OUT=/etc/apt/sources.list.d/gmem-accel.sources
PIN=/etc/apt/preferences.d/gmem-accel-trixie

debian_mirror() {
	# First URIs: line of a deb822 stanza that lists the plain "bookworm" suite.
	if [ -r "$SRC_FILE" ]; then
		awk '/^URIs:/ { uri = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") { print uri; exit } }
		     /^$/ { uri = "" }' "$SRC_FILE"
	elif [ -r /etc/apt/sources.list ]; then
		awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list
	fi
}

mirror=$(debian_mirror)
if [ -z "$mirror" ]; then
	echo "gmem-accel: cannot find a Debian bookworm archive in $SRC_FILE or /etc/apt/sources.list." >&2
	echo "gmem-accel: add one, or set GMEM_APT_SOURCES to a deb822 sources file that has it." >&2
	exit 1
fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

new=$(mktemp)
cat >"$new" <<SRC
# Written by gmem-accel scripts/lib/apt-sources.sh, derived from $SRC_FILE.
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

if ! cmp -s "$new" "$OUT" 2>/dev/null; then
	install -m 0644 "$new" "$OUT"
	rm -f /var/lib/apt/periodic/gmem-accel-updated
fi
rm -f "$new"

cat >"$PIN.tmp" <<'PINS'
# gmem-accel: take only what is asked for by name from trixie and backports.
Package: *
Pin: release n=trixie
Pin-Priority: 100
PINS
mv "$PIN.tmp" "$PIN"
