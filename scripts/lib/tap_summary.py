#!/usr/bin/python3
"""Summarise gmem-accel test results.

Each input file holds one suite: GMEM-SUITE-BEGIN, then per test program a block
    GMEM-TEST-BEGIN <name>
    <TAP: "1..N", "ok N desc", "not ok N desc", "ok N desc # SKIP why", "# comments">
    GMEM-TEST-END <name> <exit status>
and GMEM-SUITE-END. Anything that goes missing counts as a failure: a suite that never
started or never ended (guest crash, timeout), a program that died before its plan was done or
exited non-zero without saying why. The guest follows each result with "# gmem-time SECONDS"
and a test may say "# gmem-timeout SECONDS" at its start: every test that took over 10 s is
listed with both. Prints failures, one line per program, each with the "# ..." lines of its
test (kselftest's come before its "not ok", other TAP's after), and last the line
"N passed, N failed[, N skipped]". Exits 1 if anything failed.

    tap_summary.py [--name LABEL] FILE...
    tap_summary.py --run-host-tests BUILD_DIR OUTPUT   (run meson's host suite into OUTPUT)
"""
import argparse
import json
import os
import re
import subprocess
import sys

RESULT = re.compile(r"^(not )?ok\b\s*(\d+)?\s*-?\s*([^#]*)(#\s*(\w+)(.*))?$")
PLAN = re.compile(r"^1\.\.(\d+)")
TIME = re.compile(r"^# gmem-time ([0-9.]+)")
TIMEOUT = re.compile(r"^# gmem-timeout (\d+)")
SLOW_S = 10


class Counts:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.failures = []
        self.details = []
        self.slow = []      # (what, seconds, timeout or None)

    def fail(self, what):
        self.failed += 1
        self.failures.append(what)
        self.details.append([])


HARNESS_LINE = re.compile(r"^#\s+(RUN|OK|FAIL|SKIP)\b")
DIAG_BEFORE, DIAG_AFTER = 6, 4


def parse_program(name, lines, exit_status, counts):
    plan, seen = None, 0
    before = counts.failed
    diag_for = None     # the failure the "# ..." lines after it explain (TAP puts them there)
    pending = []        # "# ..." lines since the last result (kselftest puts them before it)
    last, timeout = None, None
    for line in lines:
        m = TIMEOUT.match(line)
        if m:
            timeout = int(m.group(1))
            continue
        m = TIME.match(line)
        if m:
            if last is not None and float(m.group(1)) > SLOW_S:
                counts.slow.append((f"{name}: {last}", float(m.group(1)), timeout))
            last, timeout = None, None
            continue
        if line.startswith("#") and line.lstrip("# ").startswith("RUN "):
            diag_for, pending = None, []    # the next test's: not the failure's
            continue
        if line.startswith("#") and diag_for is not None:
            if len(counts.details[diag_for]) < DIAG_AFTER:
                counts.details[diag_for].append(line)
            continue
        if line.startswith("#"):
            if not HARNESS_LINE.match(line):
                pending.append(line)
            continue
        diag_for = None
        m = PLAN.match(line)
        if m and plan is None:
            plan = int(m.group(1))
            continue
        m = RESULT.match(line)
        if not m:
            continue
        seen += 1
        why, pending = pending[-DIAG_BEFORE:], []
        desc = m.group(3).strip()
        last = desc
        directive = (m.group(5) or "").upper()
        if directive == "SKIP":
            counts.skipped += 1
        elif m.group(1) and directive != "TODO":
            counts.fail(f"{name}: {desc}")
            diag_for = len(counts.failures) - 1
            counts.details[diag_for] = why
        else:
            counts.passed += 1
    if exit_status is None:
        counts.fail(f"{name}: did not finish (crash or timeout)")
    if plan is not None and seen < plan:
        counts.fail(f"{name}: {plan - seen} of {plan} planned results missing")
        counts.failed += plan - seen - 1  # each missing result is a failure
    if plan is not None and seen > plan:
        counts.fail(f"{name}: {seen} results, beyond its plan of {plan}")
    if exit_status not in (None, 0) and counts.failed == before:
        counts.fail(f"{name}: exit status {exit_status} with no failing result")
    if plan is None and seen == 0 and exit_status == 0:
        counts.fail(f"{name}: printed no TAP results")
    return seen


def parse_suite(path, label, counts):
    try:
        with open(path, errors="replace") as f:
            lines = [l.rstrip("\r\n") for l in f]
    except OSError as e:
        counts.fail(f"{label}: no results ({e.strerror}: {path})")
        return
    if "GMEM-SUITE-BEGIN" not in lines:
        counts.fail(f"{label}: the suite never started (see the console output above)")
        return
    cur, body = None, []
    for line in lines:
        if line.startswith("GMEM-TEST-BEGIN "):
            if cur:
                parse_program(cur, body, None, counts)
            cur, body = line.split(None, 1)[1].strip(), []
        elif line.startswith("GMEM-TEST-END ") and cur:
            parts = line.split()
            status = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 1
            before = (counts.passed, counts.failed, counts.skipped)
            parse_program(cur, body, status, counts)
            after = (counts.passed, counts.failed, counts.skipped)
            print(f"  {label}/{cur}: {after[0] - before[0]} passed, "
                  f"{after[1] - before[1]} failed, {after[2] - before[2]} skipped")
            cur, body = None, []
        elif cur:
            body.append(line)
    if cur:
        parse_program(cur, body, None, counts)
    if "GMEM-SUITE-END" not in lines:
        counts.fail(f"{label}: the suite did not finish (crash or timeout)")


def run_host_tests(build_dir, output):
    """Run meson's suite 'host' (TAP programs: meson parses them, applies each test's
    timeout and environment) one at a time, and copy each test's output into OUTPUT."""
    logbase = "gmem-host-tests"
    log = os.path.join(build_dir, "meson-logs", logbase + ".json")
    if os.path.exists(log):
        os.unlink(log)
    # Progress: meson prints one line per test as it finishes.
    subprocess.run(["meson", "test", "-C", build_dir, "--suite", "host", "--no-rebuild",
                    "--num-processes", "1", "--logbase", logbase], check=False)
    with open(output, "w") as out:
        out.write("GMEM-SUITE-BEGIN\n")
        if os.path.exists(log):
            with open(log) as f:
                for line in f:
                    t = json.loads(line)
                    text = (t.get("stdout") or "") + (t.get("stderr") or "")
                    if t.get("result") == "TIMEOUT":
                        text += "\n# timed out\n"
                    status = t.get("returncode")
                    if status is None or t.get("result") == "TIMEOUT":
                        status = 124
                    elif status == 0 and t.get("result") in ("FAIL", "ERROR"):
                        status = 1     # meson's verdict on its TAP (a broken plan, say)
                    name = t["name"]
                    out.write(f"GMEM-TEST-BEGIN {name}\n{text}")
                    if not text.endswith("\n"):
                        out.write("\n")
                    out.write(f"GMEM-TEST-END {name} {status}\n")
        out.write("GMEM-SUITE-END\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", help="label for a single suite file")
    ap.add_argument("--run-host-tests", nargs=2, metavar=("BUILD_DIR", "OUTPUT"))
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    if args.run_host_tests:
        run_host_tests(*args.run_host_tests)
        return 0
    if not args.files:
        ap.error("no result files given")
    counts = Counts()
    for path in args.files:
        label = args.name or os.path.splitext(os.path.basename(path))[0]
        parse_suite(path, label, counts)
    for what, secs, timeout in counts.slow:
        limit = f"timeout {timeout} s" if timeout else "no timeout stated"
        print(f"  slow: {what} took {secs:.1f} s ({limit})")
    for what, details in zip(counts.failures, counts.details):
        print(f"  FAILED {what}")
        for d in details:
            print(f"      {d}")
    line = f"{counts.passed} passed, {counts.failed} failed"
    if counts.skipped:
        line += f", {counts.skipped} skipped"
    print(line)
    return 1 if counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
