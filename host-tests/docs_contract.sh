#!/bin/bash
# The documents say what the code says, and stay references: the spec's version, CAP bits,
# registers and QOM properties against the hardware contract and the device; uapi.md against
# the uAPI header and the driver; architecture.md's lock table against the driver's
# `DOC: Locking`; the counts the documents state; every file they name exists; no dated
# measurements in README or docs, none in the driver's and device's comments. Fails on drift.
. "$(dirname "$0")/../scripts/lib/tap.sh"
: "${REPO:?set REPO to the checkout}"

# (the kernel's files the front ends' table counts: the 7.3 tree the guest kernel is built from)
ksrc=$("$REPO/scripts/build-kernel.sh" --kernel 7.3 --print-source 2>/dev/null) || ksrc=""
out=$(/usr/bin/python3 - "$REPO" "$ksrc" <<'PY'
import glob, os, re, sys
repo, ksrc = sys.argv[1], sys.argv[2]
def read(p):
    return open(os.path.join(repo, p), encoding="utf-8").read()
def result(ok, desc, why=""):
    print(("ok" if ok else "not ok") + " - " + desc + ("" if ok else f" ({why})"))
def short(items, n=8):
    items = sorted(set(items))
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")

hdr = read("hw/gmem-accel/gmem_accel_hw.h")
spec = read("docs/hardware-spec.md")
uapi = read("docs/uapi.md")
arch = read("docs/architecture.md")
uapi_h = read("guest-driver/gmem_accel_uapi.h")
docs = {p: read(p) for p in ["README.md"] + sorted(
    os.path.relpath(f, repo) for f in glob.glob(f"{repo}/docs/*.md"))}
driver = {os.path.relpath(f, repo): open(f).read()
          for f in glob.glob(f"{repo}/guest-driver/*.[ch]")}
device = {os.path.relpath(f, repo): open(f).read()
          for f in glob.glob(f"{repo}/hw/gmem-accel/*.[ch]")}

# --- the spec and the hardware contract -------------------------------------------------
major = int(re.search(r"#define GMEM_VERSION_MAJOR\s+(\d+)", hdr).group(1))
minor = int(re.search(r"#define GMEM_VERSION_MINOR\s+(\d+)", hdr).group(1))
caps = {m.group(1): int(m.group(2)) for m in
        re.finditer(r"#define GMEM_CAP_(\w+)\s+\(1u << (\d+)\)", hdr)}
title = re.search(r"^# .*\(version (\d+)\.(\d+)\)", spec, re.M)
result(title and (int(title.group(1)), int(title.group(2))) == (major, minor),
       f"hardware-spec.md's title says version {major}.{minor}, as the header",
       title.group(0) if title else "no version in the title")
stale = [m.group(0) for m in re.finditer(r"this spec is (\d+)\.(\d+)", spec)
         if (int(m.group(1)), int(m.group(2))) != (major, minor)]
result(not stale, "no other version claims in hardware-spec.md", "; ".join(stale))
cap_part = spec.split("### CAP bits")[1].split("###")[0] if "### CAP bits" in spec else ""
rows = {m.group(2): (int(m.group(1)), m.group(3)) for m in
        re.finditer(r"^\| (\d+) \| ([A-Z0-9_]+) \| (.*) \|$", cap_part, re.M)}
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

regs = set(re.findall(r"#define GMEM_REG_(\w+?)\s+0x", hdr))
regs -= {n for n in regs if n.endswith(("_BASE", "_STRIDE"))}
qregs = {n for n in re.findall(r"#define GMEM_(Q_\w+|CTX_\w+)\s+0x", hdr) if not n.endswith("_MASK")}
missing = [r for r in regs | qregs
           if not re.search(r"\b(GMEM_REG_)?%s\b" % r, spec)
           and not re.search(r"\b%s\b" % r.split("_", 1)[-1], spec)]
result(not missing, "every register of gmem_accel_hw.h is in hardware-spec.md", short(missing))
props = set()
for text in device.values():
    props |= set(re.findall(r'DEFINE_PROP_\w+\("([\w-]+)"', text))
    props |= set(re.findall(r'object_class_property_add\w*\(\w+, "([\w-]+)"', text))
    props |= {p + "[" for p in re.findall(r'g_strdup_printf\("([\w-]+)\[%', text)}
missing = [p for p in props if f"`{p}" not in spec]
result(props and not missing, "every QOM property of the device is in hardware-spec.md",
       short(missing) if props else "found none in hw/gmem-accel")
heads = re.findall(r"^## (.*)$", spec, re.M)
log = [h for h in heads if re.match(r"(Changelog|Version history|History)", h)]
result(heads and heads[-1] in log and len(log) == 1,
       "hardware-spec.md's version history is one changelog, at its end",
       f"level-2 headings end with '{heads[-1] if heads else ''}'")
opening = spec.split("\n## ")[0]
result(not re.search(r"^\s*[-*] \*?\*?0\.\d+", opening, re.M),
       "hardware-spec.md opens with the interface, not its versions", "version list before the first section")

# The driver's and the guest tests' text names only registers the driver programs: a register
# the driver stopped using is not described as its behaviour.
drv_code = "".join(driver.values())
used = {r for r in regs | qregs if re.search(r"\bGMEM_(REG_)?%s\b" % r, drv_code)}
stale = []
for f in sorted(glob.glob(f"{repo}/guest-tests/*.[ch]") + glob.glob(f"{repo}/guest-tests/*.sh")
                + glob.glob(f"{repo}/guest-driver/*.[ch]")):
    text = open(f).read()
    for r in sorted((regs | qregs) - used):
        if r not in ("COUNTER_BASE", "CTX_BASE", "QUEUE_BASE") and re.search(r"\b%s\b" % r, text):
            stale.append(f"{os.path.relpath(f, repo)}: {r}")
result(not stale, "driver and guest tests name only registers the driver programs", short(stale, 4))

# --- the uAPI and its document -----------------------------------------------------------
names = [n for n in re.findall(r"^#define (GMEM_ACCEL_\w+)", uapi_h, re.M)
         if n != "GMEM_ACCEL_IOC_MAGIC"]
missing = [n for n in names if not re.search(r"\b%s\b" % n, uapi)
           and not re.search(r"\b%s\b" % n[len("GMEM_ACCEL_"):], uapi)
           and not re.search(r"\b%s\b" % n[len("GMEM_ACCEL_IOC_"):], uapi)]
result(not missing, "every ioctl, flag and limit of the uAPI header is in uapi.md", short(missing))
around = None
for text in driver.values():
    m = re.search(r"#define GMEM_MAP_AROUND\s+SZ_(\d+)([KM])", text)
    if m:
        around = f"{m.group(1)} {m.group(2)}iB"
said = set(re.findall(r"in the same (\d+ [KM]iB) block", uapi))
result(around and said == {around}, "uapi.md's map-around block is the driver's GMEM_MAP_AROUND",
       f"uapi.md says {short(said) or 'nothing'}, the driver {around}")
thp = [s.strip() for s in re.split(r"(?<=\.)\s", uapi)
       if re.search(r"\bTHP\b", s) and re.search(r"\bsplit", s) and "thp_migration" not in s
       and not re.search(r"6\.12|coherent", s)]
result(not thp, "uapi.md says where a THP is split (6.12, coherent HBM), not that it always is",
       short(thp, 2))

# --- the driver's lock order and architecture.md -----------------------------------------
block = ""
for text in driver.values():
    m = re.search(r"DOC: Locking\n(.*?)\*/", text, re.S)
    if m:
        block = m.group(1)
tok = r"(?:gmem_\w+(?:\.\w+)+|gmem_\w+_srcu|mmap_lock|folio locks)"
locks = set()
for line in block.splitlines():
    line = re.sub(r"^\s*\*\s*", "", line)
    m = re.match(r"(?:\d+\.\s+)?(%s(?:, %s)*)(?= \(|:| of)" % (tok, tok), line)
    if m:
        locks |= set(re.findall(tok, m.group(1)))
table = arch.split("| lock | kind |")[1].split("\n\n")[0] if "| lock | kind |" in arch else ""
tlocks = set()
for row in re.findall(r"^\| ([^|]+) \|", table, re.M):
    tlocks |= set(re.findall(tok, row.replace("`", "")))
result(len(locks) >= 5 and locks == tlocks,
       "architecture.md's lock table names the locks of the driver's DOC: Locking, no others",
       f"only in DOC: Locking: {short(locks - tlocks) or '-'}; only in the table: {short(tlocks - locks) or '-'}")

# --- the file tables: every source file is named, and only those -------------------------
def table_files(title):
    part = arch.split(f"| {title} |")[1].split("\n\n")[0] if f"| {title} |" in arch else ""
    return set(re.findall(r"`([\w.-]+\.c)`", part))
for title, d in (("device file (`hw/gmem-accel/`)", "hw/gmem-accel"),
                 ("driver file (`guest-driver/`)", "guest-driver")):
    have = {os.path.basename(f) for f in glob.glob(f"{repo}/{d}/*.c")}
    named = table_files(title)
    result(have and named == have, f"architecture.md's table of {d}/ names every .c file there, no others",
           f"not in the table: {short(have - named) or '-'}; not in {d}: {short(named - have) or '-'}")
dev_h = read("hw/gmem-accel/gmem-accel.h")
m = re.search(r"The device's files, each calling only those listed after it:\n(.*?)\*/", dev_h, re.S)
listed = set(re.findall(r"(gmem-accel[\w-]*\.c)", m.group(1))) if m else set()
core = set(re.findall(r"`(gmem-accel-(?:pt|tlb|cmd)\.c)`", arch))
have = {os.path.basename(f) for f in glob.glob(f"{repo}/hw/gmem-accel/*.c")}
result(listed and listed | core == have, "gmem-accel.h's list of the device's files names every one",
       f"missing: {short(have - listed - core) or '-'}; gone: {short(listed - have) or '-'}")

# --- every gmem name a document quotes exists in the code ------------------------------
code = ""
for f in glob.glob(f"{repo}/**/*", recursive=True):
    if os.path.isfile(f) and "/build/" not in f and "/.git/" not in f and not f.endswith(".md"):
        try:
            code += open(f, errors="ignore").read()
        except OSError:
            pass
gone = []
for p, text in docs.items():
    for name in set(re.findall(r"`(gmem\w*)(?![\w.*\[/-])", text)):
        if not re.search(r"\b%s\b" % name, code):
            gone.append(f"{p}: {name}")
result(not gone, "every function, variable and event name the documents quote exists", short(gone, 6))

# --- numbers the documents state ---------------------------------------------------------
words = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "eight": 8}
def num(s):
    return int(s) if s.isdigit() else words.get(s.lower(), -1)
facts = {"DMA engines": int(re.search(r"#define GMEM_NUM_QUEUES\s+(\d+)", hdr).group(1)),
         "address-space contexts": int(re.search(r"#define GMEM_NUM_CONTEXTS\s+(\d+)", hdr).group(1))}
bad = []
for p, text in docs.items():
    if p == "docs/hardware-spec.md":
        text = text.split("\n## Changelog")[0]
    for what, want in facts.items():
        for m in re.finditer(r"\b(\d+|%s) %s" % ("|".join(words), what), text, re.I):
            if num(m.group(1)) != want:
                bad.append(f"{p}: '{m.group(0)}' (the header: {want})")
result(not bad, "the documents' counts of DMA engines and contexts are the header's", short(bad, 4))

# The front ends' table: each number is the lines (wc -l) of the files its cell names since
# the number before; `_x.c` is the driver's gmem_accel_x.c, "the kernel's" a file of drm/.
def lines(path):
    return sum(1 for _ in open(path, encoding="utf-8", errors="replace"))
table = arch.split("takes from the kernel (lines, `wc -l`):")[-1].split("\n\n")[1]
bad, counted = [], 0
for cell in (c for row in table.splitlines()[2:] for c in row.split("|")[2:-1]):
    names = []
    for m in re.finditer(r"(the kernel's )?`([\w.*]+)`|\b(\d+)\b", cell):
        if m.group(2):
            if m.group(1):
                names.append(os.path.join(ksrc, "drivers/gpu/drm", m.group(2)) if ksrc else None)
            else:
                f = m.group(2)
                names.append(os.path.join(repo, "guest-driver",
                                          "gmem_accel" + f if f.startswith("_") else f))
            continue
        files = [g for n in names if n for g in glob.glob(n)]
        if None in names or not names:
            names = []
            continue
        have = sum(lines(f) for f in files)
        counted += 1
        if len(files) < len(names) or have != int(m.group(3)):
            bad.append(f"{' + '.join(os.path.basename(n) for n in names)}: {m.group(3)}, wc -l {have}")
        names = []
result(counted and not bad, f"the front ends' table gives each file's lines ({counted} counts checked)",
       short(bad, 4) or "no count found")

# --- references, not diaries --------------------------------------------------------------
dated = [f"{p}: {m.group(0)}" for p, t in docs.items() if p != "docs/benchmarks.md"
         for m in re.finditer(r"\b20\d\d-\d\d-\d\d\b", t)]
result(not dated, "README and docs carry no dated measurements (docs/benchmarks.md is generated)",
       short(dated, 4))
meas = re.compile(r"\bp(50|99)\b|\bunder TCG\b|\d ?[GM]iB/s|\b\d+(\.\d+)?(-\d+(\.\d+)?)? ?(us|µs|ms) (instead of|against)")
hits = []
for p in sorted(list(driver) + list(device)):
    for i, line in enumerate(open(os.path.join(repo, p)), 1):
        if meas.search(line) and re.match(r"\s*(/?\*|//)", line):
            hits.append(f"{p}:{i}")
result(not hits, "driver and device comments state no measurements (commit bodies do)", short(hits, 4))

# --- every file a document names exists ---------------------------------------------------
ours = ("guest-driver/", "hw/gmem-accel/", "guest-tests/", "host-tests/", "images/", "docs/",
        "scripts/", "libgmem/", "samples/", ".ci/")
pathre = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.(?:c|h|sh|py|md|config|build|patch|hx))\b")
named = re.compile(r"(?<![\w/.-])((?:gmem[-_]accel[\w-]*|\w+_test|qtest_\w+)\.(?:c|h|sh))\b")
base = {os.path.basename(f) for f in glob.glob(f"{repo}/**/*", recursive=True)
        if "/build/" not in f}
gone = []
sources = dict(docs)
sources["hw/gmem-accel/trace-events"] = read("hw/gmem-accel/trace-events")
for p, text in sources.items():
    for f in pathre.findall(text):
        if f.startswith(ours) and not os.path.exists(os.path.join(repo, f)) and "*" not in f:
            gone.append(f"{p}: {f}")
    for f in named.findall(text):
        if f not in base:
            gone.append(f"{p}: {f}")
result(not gone, "every file named in README, docs and trace-events exists", short(gone, 6))
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
