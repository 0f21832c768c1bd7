#!/usr/bin/python3
"""Turn one run's traces into a Perfetto / Chrome trace-event JSON timeline.

Inputs: QEMU's trace log (the log backend with -msg timestamp=on: "PID@SEC.USEC:event args") and
the guest's ftrace text (trace_clock mono) as guest-tests/trace_run.sh prints it. The two clocks
are lined up on trace_sync's points: a trace_marker line "gmem-sync TAG N" in the guest, a read
of RESET in QEMU's trace, in the same order. The offset is the smallest of each block (the read
follows its marker, never precedes it) and moves linearly from the first block to the last.

  timeline.py --qemu-log FILE --guest-trace FILE --out FILE.json

Tracks: the device (QEMU) as one process with a track per command queue, per queue's fault
groups, and for access counters, TLB invalidations and errors; the driver (guest) as another,
with a track per context (fault groups answered, policy decisions, submissions), per context's
migrations, one for migrations no context asked for (a CPU access, an eviction) and one for
evictions. ui.perfetto.dev opens the file.
"""
import argparse
import json
import re
import sys

QEMU_LINE = re.compile(r"^(\d+)@(\d+)\.(\d{6}):(gmem_accel_\w+) ?(.*)$")
GUEST_LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(?:\S+\s+)?(\d+\.\d+):\s+(\w+):\s?(.*)$")
SYNC_MARK = re.compile(r"gmem-sync (\S+) (\d+)")
KEY_VALUE = re.compile(r"(\w+)=(\S+)")
RESET_REG = 0x1c           # gmem_accel_hw.h GMEM_REG_RESET: trace_sync's register
RESPONSES = {1: "replay", 2: "cancel"}

DEVICE_PID, DRIVER_PID = 1, 2


def fail(msg):
    sys.exit(f"timeline.py: {msg}")


def read_qemu(path):
    """(host seconds, event, args text) of each gmem_accel trace line, in order."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            m = QEMU_LINE.match(line.rstrip("\n"))
            if m:
                out.append((int(m[2]) + int(m[3]) / 1e6, m[4], m[5]))
    return out


def read_guest(path):
    """(guest seconds, event, args text, header notes) of each trace line, in order."""
    out, lost = [], None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"# entries-in-buffer/entries-written: (\d+)/(\d+)", line)
            if m and m[1] != m[2]:
                lost = int(m[2]) - int(m[1])
            if line.startswith("#"):
                continue
            m = GUEST_LINE.match(line)
            if m:
                out.append((float(m[4]), m[5], m[6]))
    return out, lost


def clock_map(qemu, guest):
    """A function from guest seconds to host seconds, and what it is based on."""
    host_points = [t for t, ev, args in qemu
                   if ev == "gmem_accel_mmio_read" and
                   int(re.match(r"addr 0x([0-9a-f]+)", args)[1], 16) == RESET_REG]
    guest_points = []
    for t, ev, args in guest:
        m = SYNC_MARK.search(args) if ev == "tracing_mark_write" else None
        if m:
            guest_points.append((m[1], t))
    if not guest_points:
        fail("the guest trace has no gmem-sync points (was it made by trace_run.sh?)")
    if len(host_points) != len(guest_points):
        fail(f"{len(guest_points)} sync points in the guest trace, {len(host_points)} in QEMU's "
             "(was QEMU run with -trace gmem_accel_mmio_read and -msg timestamp=on?)")
    blocks = {}
    for (tag, g), h in zip(guest_points, host_points):
        blocks.setdefault(tag, []).append((g, h - g))
    fits = []
    for tag, pts in blocks.items():
        g, off = min(pts, key=lambda p: p[1])
        spread = max(p[1] for p in pts) - off
        fits.append((tag, g, off, spread))
    (_, g0, o0, _), (_, g1, o1, _) = fits[0], fits[-1]
    slope = (o1 - o0) / (g1 - g0) if g1 != g0 else 0.0

    def to_host(t):
        return t + o0 + slope * (t - g0)
    info = {
        "sync_points": len(guest_points),
        "drift_ppm": round(slope * 1e6, 1),
        "sync_spread_us": {tag: round(s * 1e6, 1) for tag, _, _, s in fits},
    }
    return to_host, (host_points[0], host_points[-1]), info


class Timeline:
    """The trace events, in microseconds from the first sync point; what lies outside the
    sync points (the boot, the trace's dump) is left out."""

    def __init__(self, window):
        self.t0, self.t1 = window
        self.events = []
        self.tids = {}

    def tid(self, pid, name):
        key = (pid, name)
        if key not in self.tids:
            tid = len(self.tids) + 1
            self.tids[key] = tid
            self.events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                                "args": {"name": name}})
            self.events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                                "args": {"sort_index": tid}})
        return self.tids[key]

    def us(self, t):
        return round((t - self.t0) * 1e6, 3)

    def slice(self, pid, track, name, start, end, args=None, cat="gmem"):
        if end < self.t0 or start > self.t1:
            return
        self.events.append({"ph": "X", "name": name, "cat": cat, "pid": pid,
                            "tid": self.tid(pid, track), "ts": self.us(start),
                            "dur": max(round((end - start) * 1e6, 3), 0.001),
                            "args": args or {}})

    def instant(self, pid, track, name, t, args=None, cat="gmem"):
        if not self.t0 <= t <= self.t1:
            return
        self.events.append({"ph": "i", "s": "t", "name": name, "cat": cat, "pid": pid,
                            "tid": self.tid(pid, track), "ts": self.us(t), "args": args or {}})


def hexint(s):
    return int(s, 16)


def device_events(tl, qemu):
    """The device's commands, fault groups and notifications (QEMU's trace)."""
    running, groups = {}, {}
    for t, ev, args in qemu:
        name = ev[len("gmem_accel_"):]
        if name == "cmd_start":
            m = re.match(r"queue (\d+) \[(\d+)\] (\S+) ctx (\d+) dst 0x(\w+) src 0x(\w+) size 0x(\w+)",
                         args)
            if m:
                running.setdefault((int(m[1]), int(m[2])), (t, m))
        elif name == "cmd_done":
            m = re.match(r"queue (\d+) \[(\d+)\] (\S+) status (\d+)", args)
            if m and (int(m[1]), int(m[2])) in running:
                t_start, s = running.pop((int(m[1]), int(m[2])))
                tl.slice(DEVICE_PID, f"queue {m[1]}", m[3], t_start, t,
                         {"ctx": int(s[4]), "dst": "0x" + s[5], "src": "0x" + s[6],
                          "size": hexint(s[7]), "status": int(m[4]), "index": int(m[2])},
                         cat="command")
        elif name == "fault":
            m = re.match(r"queue (\d+) group (\d+) ctx (\d+) va 0x(\w+) access 0x(\w+)", args)
            if m:
                g = groups.setdefault((int(m[1]), int(m[2])),
                                      {"t": t, "ctx": int(m[3]), "va": "0x" + m[4], "pages": 0})
                g["pages"] += 1
        elif name == "fault_response":
            m = re.match(r"queue (\d+) group (\d+) response (\d+)", args)
            if m and (int(m[1]), int(m[2])) in groups:
                g = groups.pop((int(m[1]), int(m[2])))
                answer = RESPONSES.get(int(m[3]), m[3])
                tl.slice(DEVICE_PID, f"queue {m[1]} faults", f"fault group ({answer})", g["t"], t,
                         {"group": int(m[2]), "ctx": g["ctx"], "first_va": g["va"],
                          "pages": g["pages"], "response": answer}, cat="fault")
        elif name in ("ac_notify", "ac_drop", "ac_clear"):
            tl.instant(DEVICE_PID, "access counters", name, t, {"detail": args}, cat="counters")
        elif name == "tlb_invalidate":
            tl.instant(DEVICE_PID, "TLB", "invalidate", t, {"detail": args}, cat="tlb")
        elif name in ("reset", "error"):
            tl.instant(DEVICE_PID, "device", name, t, {"detail": args}, cat="error")


def driver_events(tl, guest, to_host):
    """The driver's fault service, migrations, evictions and policy decisions (its trace)."""
    for t, ev, args in guest:
        if not ev.startswith("gmem_accel_"):
            continue
        name = ev[len("gmem_accel_"):]
        kv = dict(KEY_VALUE.findall(args))
        h = to_host(t)
        ctx = kv.get("ctx")
        if name == "migrate":
            begun = to_host(int(kv["begun"]) / 1e9)
            track = f"ctx {ctx} migrations" if ctx != "-1" else "migrations (CPU access, eviction)"
            tl.slice(DRIVER_PID, track, "to " + kv["to"], begun, h,
                     {"start": kv["start"], "end": kv["end"], "pages": int(kv["moved"]),
                      "err": int(kv["err"])}, cat="migration")
        elif name == "evict":
            tl.slice(DRIVER_PID, "eviction", "evict chunk " + kv["chunk"],
                     to_host(int(kv["begun"]) / 1e9), h, {"detail": args}, cat="eviction")
        elif name == "fault_group":
            answer = "cancel" if " cancel " in f" {args} " else "replay"
            tl.instant(DRIVER_PID, f"ctx {ctx}", f"fault group {answer}", h,
                       {"group": int(kv["group"]), "pages": int(kv["npages"]), "va": kv["va"],
                        "err": int(kv["err"])}, cat="fault")
        else:
            # Everything else, the policies' decisions too: on its context's track.
            tl.instant(DRIVER_PID, f"ctx {ctx}" if ctx is not None else "driver", name, h,
                       {"detail": args}, cat=name.split("_")[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qemu-log", required=True)
    ap.add_argument("--guest-trace", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    qemu = read_qemu(a.qemu_log)
    guest, lost = read_guest(a.guest_trace)
    to_host, window, info = clock_map(qemu, guest)
    tl = Timeline(window)
    for pid, name in ((DEVICE_PID, "gmem-accel device (QEMU)"),
                      (DRIVER_PID, "gmem_accel driver (guest)")):
        tl.events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}})
    device_events(tl, qemu)
    driver_events(tl, guest, to_host)
    if lost:
        info["guest_events_lost"] = lost
    with open(a.out, "w") as f:
        json.dump({"traceEvents": tl.events, "displayTimeUnit": "ns", "otherData": info}, f)
    kinds = {}
    for e in tl.events:
        if e["ph"] in "Xi":
            kinds[e.get("cat")] = kinds.get(e.get("cat"), 0) + 1
    print(f"timeline: {a.out}: " + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())) +
          f"; clocks lined up on {info['sync_points']} points (drift {info['drift_ppm']} ppm)")
    if lost:
        print(f"timeline: the guest's trace buffer overflowed: {lost} events lost "
              "(raise GMEM_TRACE_KB)", file=sys.stderr)


if __name__ == "__main__":
    main()
