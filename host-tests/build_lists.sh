#!/bin/bash
# meson.build names every file of the guest driver in driver_files: a file left out changes
# without rebuilding the module (gmem_accel_notifier.c was, and the VM booted a stale module).
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${REPO:?set REPO to the checkout}"

plan 1
missing=()
for f in "$REPO"/guest-driver/*.[ch] "$REPO"/guest-driver/Kbuild; do
	rel=${f#"$REPO"/}
	grep -qF "'$rel'" "$REPO/meson.build" || missing+=("$rel")
done
if [ ${#missing[@]} = 0 ]; then
	ok "meson.build's driver_files names every file in guest-driver/"
else
	not_ok "meson.build's driver_files names every file in guest-driver/ (add: ${missing[*]})"
fi
tap_done
