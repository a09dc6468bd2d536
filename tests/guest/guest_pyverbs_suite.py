#!/usr/bin/python3
"""Runs rdma-core's pyverbs test suite (its tests/ folder), one module a
process, and counts each module's results.  Runs inside a guest.

    guest_pyverbs_suite.py --tests DIR --dev DEV [--gid N] [--timeout S]
                           [MODULE...]

DIR is rdma-core's tests/ folder, unmodified; with no MODULE every
test_*.py in it runs.  Each module runs as DIR/run_tests.py would run it,

    python3 DIR/run_tests.py --dev DEV [--gid N] -v MODULE

but in a child forked from this process once it has imported the suite
(run_tests.py loads every test module, pyverbs and its providers: two
seconds a module under TCG, for modules that mostly skip), in its own
process group, killed after S seconds, and ending with os._exit(): a
whole-suite run crashes in Python 3.13's interpreter teardown (a known
upstream bug), which a child never reaches.  It may still die in a test,
so the counts come from unittest's per-test lines ("name (id) ... ok",
"skipped 'why'", "FAIL", "ERROR", printed as each test ends), not from
the summary or the exit status.  A test that started and never reported
(crash or timeout) is an error.

Prints one line per module, "PYVERBS-MODULE <json>", with the counts, the
skip reasons, the failing tests and notes, then a table of them.
"""

import argparse
import json
import os
import re
import selectors
import signal
import sys
import time
import traceback
import unittest

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


def load_suite(tests_dir, dev, gid):
    """Import rdma-core's tests package as run_tests.py does, its
    arguments parsed; the package, for unittest.main(module=...)."""
    from importlib.machinery import SourceFileLoader
    os.chdir(tests_dir)
    sys.path.insert(0, tests_dir)
    sys.argv = [os.path.join(tests_dir, "run_tests.py"), "--dev", dev] + \
        (["--gid", str(gid)] if gid is not None else [])
    from args_parser import parser
    tests = SourceFileLoader(
        "tests", os.path.join(tests_dir, "__init__.py")).load_module()
    parser.parse_args()
    return tests


def run_in_child(tests, module):
    """Fork a child that runs module as run_tests.py -v MODULE would, in
    its own process group; (pid, its stdout, its stderr) as pipes."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setpgid(0, 0)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            for fd in (out_r, out_w, err_r, err_w):
                os.close(fd)
            result = unittest.main(module=tests, exit=False,
                                   argv=[sys.argv[0], "-v", module]).result
            code = 0 if result.wasSuccessful() else 1
        except BaseException:
            # os._exit() below skips the interpreter's own report.
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(out_w)
    os.close(err_w)
    return pid, out_r, err_r


def read_until(pid, fds, timeout):
    """What the child wrote to fds until it closed them or timeout
    seconds passed (then its group is killed); (texts, exit status,
    timed out)."""
    chunks = {fd: [] for fd in fds}
    deadline = time.monotonic() + timeout
    timed_out = False
    with selectors.DefaultSelector() as sel:
        for fd in fds:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                os.killpg(pid, signal.SIGKILL)
                break
            for key, _ in sel.select(left):
                data = os.read(key.fd, 65536)
                if data:
                    chunks[key.fd].append(data)
                else:
                    sel.unregister(key.fd)
    for fd in fds:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    texts = [b"".join(chunks[fd]).decode(errors="replace") for fd in fds]
    return texts, os.waitstatus_to_exitcode(status), timed_out


def run_module(tests, module, timeout):
    start = time.monotonic()
    # unittest writes to stderr; what the tests print goes to stdout, kept
    # apart so it cannot split a "name ... ok" line.
    pid, out_r, err_r = run_in_child(tests, module)
    (stdout, out), returncode, timed_out = read_until(pid, [out_r, err_r],
                                                      timeout)
    seconds = time.monotonic() - start
    results, pending = parse(out)
    row = {"module": module, "ran": len(results), "ok": 0, "skip": 0,
           "fail": 0, "error": 0, "skips": {}, "failed": [], "notes": [],
           "status": returncode, "seconds": round(seconds, 1)}
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
                             % (module, returncode))
    elif returncode not in (0, 1):
        # Every test reported; the process died afterwards.
        row["notes"].append("exit status %s after all tests reported"
                            % returncode)
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
    tests = load_suite(args.tests, args.dev, args.gid)
    rows = []
    for module in modules:
        row = run_module(tests, module, args.timeout)
        rows.append(row)
        print("PYVERBS-MODULE " + json.dumps(row), flush=True)
    print(table(rows))
    return 1 if any(r["fail"] or r["error"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
