"""The memory-policy part of docs/benchmarks.md (bench_table.py calls it): guest-tests/
policy_bench.c's "BENCH-POLICY <workload> <setting> <ms> <groups> <migrated> <evictions>
<MiB/s>" lines as a table per guest kernel (medians over boots), what each policy changes
against its absence, and the same as an SVG plot.
"""
import statistics

# workload -> what it is, and its settings: the policy's, then its absence
WORKLOADS = [
    ("stream", "64 MiB of CPU-written memory the device reads a page a command, in order",
     ["prefetch", "no-prefetch", "block", "batch", "batch_flush", "once"]),
    ("random", "the same pages in random order", ["prefetch", "no-prefetch"]),
    ("pingpong", "the CPU and the device write 64 pages that prefer HBM, in turns, 200 rounds",
     ["thrashing", "no-thrashing"]),
    ("hammer", "the device reads 2 MiB of system memory 64 times, 64 KiB a command",
     ["access-counters", "no-access-counters"]),
    ("readdup", "16 MiB of managed memory the device, then the CPU, reads, 10 rounds",
     ["read-mostly", "no-read-mostly"]),
    ("oversub4x", "a working set 4x the HBM preferring it, read through twice by the device",
     ["defaults", "all-off", "defaults-thp"]),
]
# (workload, with, without, what it shows)
EFFECTS = [
    ("stream", "prefetch", "no-prefetch", "density prefetch"),
    ("random", "prefetch", "no-prefetch", "density prefetch on random pages"),
    ("pingpong", "thrashing", "no-thrashing", "thrashing mitigation"),
    ("hammer", "access-counters", "no-access-counters", "access-counter migration"),
    ("readdup", "read-mostly", "no-read-mostly", "read duplication"),
    ("oversub4x", "defaults", "all-off", "every policy at its default"),
]
COLUMNS = ("ms", "groups", "migrated", "evictions", "MiBps")


def parse(path):
    runs = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if line.startswith("BENCH-POLICY ") and len(p) == 8:
                runs.setdefault((p[1], p[2]), []).append([float(x) for x in p[3:]])
    return {k: dict(zip(COLUMNS, (statistics.median(c) for c in zip(*v))))
            for k, v in runs.items()}


def table(path, memcpy):
    data = parse(path)
    if not data:
        return []
    out = ["", "Memory policies (guest-tests/policy_bench.c; each run checks its bytes):", "",
           "| workload | setting | ms | fault groups | pages migrated | evictions | MiB/s "
           "| vs memcpy |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for workload, what, settings in WORKLOADS:
        for s in settings:
            d = data.get((workload, s))
            if not d:
                continue
            vs = f"{d['MiBps'] / 1024 / memcpy:.3f}" if memcpy else "–"
            out.append(f"| {workload}: {what} | {s} | {d['ms']:.0f} | {d['groups']:.0f} | "
                       f"{d['migrated']:.0f} | {d['evictions']:.0f} | {d['MiBps']:.1f} | {vs} |")
    out += ["", "What each policy changes (with it / without it):", ""]
    for workload, on, off, what in EFFECTS:
        a, b = data.get((workload, on)), data.get((workload, off))
        if not a or not b:
            continue
        ratio = lambda key: f"{a[key] / b[key]:.2f}" if b[key] else "–"
        out.append(f"- {what} ({workload}): time {ratio('ms')}, fault groups "
                   f"{ratio('groups')}, pages migrated {ratio('migrated')}")
    return out


def svg(path, title):
    """Bars of each workload's settings, time relative to the workload's slowest setting."""
    data = parse(path)
    rows = []
    for workload, _, settings in WORKLOADS:
        got = [(s, data[(workload, s)]) for s in settings if (workload, s) in data]
        if got:
            slowest = max(d["ms"] for _, d in got) or 1
            rows += [(workload, s, d, d["ms"] / slowest) for s, d in got]
    if not rows:
        return None
    bar_h, gap, left, width = 18, 6, 260, 420
    height = 50 + len(rows) * (bar_h + gap)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 200}" '
           f'height="{height}" font-family="sans-serif" font-size="12">',
           f'<text x="10" y="20" font-size="14">{title}: time per workload, relative to its '
           f'slowest setting</text>']
    y = 40
    for workload, s, d, frac in rows:
        colour = "#888" if s.startswith("no-") or s == "all-off" else "#2a7ab8"
        out += [f'<text x="10" y="{y + 13}">{workload}: {s}</text>',
                f'<rect x="{left}" y="{y}" width="{max(frac * width, 1):.1f}" height="{bar_h}" '
                f'fill="{colour}"/>',
                f'<text x="{left + frac * width + 6:.1f}" y="{y + 13}">{d["ms"]:.0f} ms, '
                f'{d["groups"]:.0f} groups, {d["migrated"]:.0f} pages moved</text>']
        y += bar_h + gap
    out.append("</svg>")
    return "\n".join(out) + "\n"
