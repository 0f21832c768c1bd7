#!/bin/bash
# The documents say what the hardware contract (hw/gmem-accel/gmem_accel_hw.h) says: the spec's
# version, its CAP bit table, and the capabilities example in uapi.md. Fails on any drift.
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${REPO:?set REPO to the checkout}"

out=$(/usr/bin/python3 - "$REPO" <<'PY'
import re, sys
repo = sys.argv[1]
hdr = open(f"{repo}/hw/gmem-accel/gmem_accel_hw.h").read()
spec = open(f"{repo}/docs/hardware-spec.md").read()
uapi = open(f"{repo}/docs/uapi.md").read()
major = int(re.search(r"#define GMEM_VERSION_MAJOR\s+(\d+)", hdr).group(1))
minor = int(re.search(r"#define GMEM_VERSION_MINOR\s+(\d+)", hdr).group(1))
caps = {m.group(1): int(m.group(2)) for m in
        re.finditer(r"#define GMEM_CAP_(\w+)\s+\(1u << (\d+)\)", hdr)}

def result(ok, desc, why=""):
    print(("ok" if ok else "not ok") + " - " + desc + ("" if ok else f" ({why})"))

title = re.search(r"^# .*\(version (\d+)\.(\d+)\)", spec, re.M)
result(title and (int(title.group(1)), int(title.group(2))) == (major, minor),
       f"hardware-spec.md's title says version {major}.{minor}, as the header",
       title.group(0) if title else "no version in the title")
stale = [m.group(0) for m in re.finditer(r"this spec is (\d+)\.(\d+)", spec)
         if (int(m.group(1)), int(m.group(2))) != (major, minor)]
result(not stale, "no other version claims in hardware-spec.md", "; ".join(stale))
rows = {m.group(2): (int(m.group(1)), m.group(3)) for m in
        re.finditer(r"^\| (\d+) \| ([A-Z0-9_]+) \| (.*) \|$",
                    spec.split("### CAP bits")[1].split("###")[0], re.M)}
bad = [f"{n}: spec bit {rows[n][0] if n in rows else '-'}, header {caps[n]}"
       for n in caps if n != "KNOWN_MASK" and (n not in rows or rows[n][0] != caps[n])]
bad += [f"{n}: in the spec only" for n in rows if n not in caps]
result(not bad, "the spec's CAP table is the header's CAP bits", "; ".join(bad))
always = sum(1 << bit for bit, when in rows.values() if "always" in when)
known = sum(1 << b for n, b in caps.items() if n != "KNOWN_MASK")
ex = re.search(r"`capabilities` \| CAP register, hex \(`(0x[0-9a-f]+)`", uapi)
val = int(ex.group(1), 16) if ex else -1
result(ex and val & always == always and not val & ~known,
       "uapi.md's capabilities example has every always-set bit and no unknown one",
       f"{ex.group(1) if ex else 'none'}; always {always:#x}, known {known:#x}")
PY
)
n=$(grep -c '^\(not \)\?ok' <<<"$out")
plan "$n"
while read -r line; do
	case "$line" in
	"ok - "*) ok "${line#ok - }" ;;
	"not ok - "*) not_ok "${line#not ok - }" ;;
	esac
done <<<"$out"
tap_done
