#!/usr/bin/python3
"""Runs rdma-core's pyverbs test suite (its tests/ folder), one module a
process, and counts each module's results.  Runs inside a guest.

    guest_pyverbs_suite.py --tests DIR --dev DEV [--gid N] [--timeout S]
                           [MODULE...]

DIR is rdma-core's tests/ folder, unmodified; with no MODULE every
test_*.py in it runs.  Each module runs as

    python3 DIR/run_tests.py --dev DEV [--gid N] -v MODULE

in its own process group, killed after S seconds.  A whole-suite run
crashes in Python 3.13's interpreter teardown (a known upstream bug) and so
can a module's, after its summary: the counts therefore come from unittest's
per-test lines ("name (id) ... ok", "skipped 'why'", "FAIL", "ERROR",
printed as each test ends), not from the summary or the exit status.  A
crash after every test reported is a note; a test that started and never
reported (crash or timeout) is an error.

Prints one line per module, "PYVERBS-MODULE <json>", with the counts, the
skip reasons, the failing tests and notes, then a table of them.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

# "test_foo (tests.test_bar.Baz.test_foo) ... ok"; with a docstring, unittest
# puts its first line, and the " ... ", on the next line.
START = re.compile(r"^(\w+) \(([\w.]+)\)(?:\s\[.*\])?(?: \.\.\. (.*))?$")
RESULT = re.compile(r"(ok|FAIL|ERROR|expected failure|unexpected success|"
                    r"skipped (?:'(.*)'|\"(.*)\"|(.*)))$")
# printErrors() sections: "ERROR: test_foo (tests.test_bar.Baz.test_foo)".
HEADER = re.compile(r"^(ERROR|FAIL): (\w+) \(([\w.]+)\)")
SUMMARY = re.compile(r"^Ran (\d+) tests? in [\d.]+s$", re.M)


def parse(text):
    """unittest -v output -> list of (test id, outcome, skip reason)."""
    results = []
    done = set()
    pending = None

    def finish(tid, rest):
        rest = rest.strip()
        m = RESULT.fullmatch(rest) or RESULT.search(rest)
        if not m:
            return False
        word = m.group(1)
        reason = None
        if word.startswith("skipped"):
            word = "skip"
            reason = next(g for g in m.groups()[1:] if g is not None)
        elif word == "expected failure":
            word = "ok"
        elif word == "unexpected success":
            word = "FAIL"
        results.append((tid, word, reason))
        done.add(tid)
        return True

    for line in text.splitlines():
        m = START.match(line)
        if m:
            pending = "%s" % m.group(2)
            if m.group(3) is not None and finish(pending, m.group(3)):
                pending = None
            continue
        if pending is None:
            continue
        if " ... " in line:
            if finish(pending, line.rsplit(" ... ", 1)[1]):
                pending = None
        elif finish(pending, line):
            pending = None
    headers = []
    for line in text.splitlines():
        m = HEADER.match(line)
        if m and m.group(3) not in done:
            # Reported only in the error listing (a setUpClass or module
            # set-up error has no per-test line of its own).
            results.append((m.group(3), m.group(1), None))
            done.add(m.group(3))
            headers.append(m.group(3))
    return results, pending


def run_module(tests_dir, module, dev, gid, timeout):
    cmd = [sys.executable, os.path.join(tests_dir, "run_tests.py"),
           "--dev", dev] + (["--gid", str(gid)] if gid is not None else []) \
        + ["-v", module]
    start = time.monotonic()
    # unittest writes to stderr; what the tests print goes to stdout, kept
    # apart so it cannot split a "name ... ok" line.
    proc = subprocess.Popen(cmd, cwd=tests_dir, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True)
    timed_out = False
    try:
        stdout, out = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, out = proc.communicate()
    seconds = time.monotonic() - start
    results, pending = parse(out)
    row = {"module": module, "ran": len(results), "ok": 0, "skip": 0,
           "fail": 0, "error": 0, "skips": {}, "failed": [], "notes": [],
           "status": proc.returncode, "seconds": round(seconds, 1)}
    for tid, word, reason in results:
        if word == "ok":
            row["ok"] += 1
        elif word == "skip":
            row["skip"] += 1
            row["skips"][reason] = row["skips"].get(reason, 0) + 1
        else:
            row["fail" if word == "FAIL" else "error"] += 1
            row["failed"].append("%s %s" % (word, tid))
    summary = SUMMARY.search(out)
    if pending is not None:
        row["ran"] += 1
        row["error"] += 1
        row["failed"].append("ERROR %s (%s before it reported)" % (
            pending, "timed out" if timed_out else "process died"))
    elif timed_out:
        row["error"] += 1
        row["failed"].append("ERROR %s (timed out after %ds)"
                             % (module, timeout))
    elif summary is None:
        # Died between two tests, or before the first.
        row["error"] += 1
        row["failed"].append("ERROR %s (no unittest summary, exit %s)"
                             % (module, proc.returncode))
    elif proc.returncode not in (0, 1):
        # Every test reported; the interpreter died afterwards.
        row["notes"].append("exit status %s after all tests reported"
                            % proc.returncode)
    if summary is not None and int(summary.group(1)) > len(results):
        row["notes"].append("unittest counted %s, lines parsed %d"
                            % (summary.group(1), len(results)))
    if row["fail"] or row["error"]:
        row["output"] = out[-6000:] + "\n-- stdout --\n" + stdout[-2000:]
    return row


def table(rows):
    lines = ["%-28s %5s %5s %5s %5s %5s" % ("module", "ran", "ok", "skip",
                                            "fail", "error")]
    total = dict.fromkeys(("ran", "ok", "skip", "fail", "error"), 0)
    for r in rows:
        lines.append("%-28s %5d %5d %5d %5d %5d" % (
            r["module"], r["ran"], r["ok"], r["skip"], r["fail"],
            r["error"]))
        for k in total:
            total[k] += r[k]
    lines.append("%-28s %5d %5d %5d %5d %5d" % (
        "total", total["ran"], total["ok"], total["skip"], total["fail"],
        total["error"]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", required=True,
                    help="rdma-core's tests/ folder")
    ap.add_argument("--dev", required=True)
    ap.add_argument("--gid", type=int,
                    help="GID index (default: the suite chooses)")
    ap.add_argument("--timeout", type=int, default=600,
                    help="seconds a module may take")
    ap.add_argument("modules", nargs="*")
    args = ap.parse_args()
    modules = args.modules or sorted(
        f[:-3] for f in os.listdir(args.tests)
        if f.startswith("test_") and f.endswith(".py"))
    rows = []
    for module in modules:
        row = run_module(args.tests, module, args.dev, args.gid,
                         args.timeout)
        rows.append(row)
        print("PYVERBS-MODULE " + json.dumps(row), flush=True)
    print(table(rows))
    return 1 if any(r["fail"] or r["error"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
