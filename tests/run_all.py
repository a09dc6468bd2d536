#!/usr/bin/python3
"""Build everything and run every vhca test; end with 'N passed, N failed'.

Suites, in order (each counts its individual test cases):
  unit    the engine without QEMU (tests/unit, GTest/TAP through meson)
  fuzz    the engine's fuzz targets with ASan and UBSan for a bounded run:
          the committed corpus replayed, then a fixed number of mutated
          inputs (tests/unit/fuzz-vhca.c on the Ethernet port,
          tests/unit/fuzz-vhca-ib.c on the InfiniBand port; longer:
          scripts/fuzz-engine.sh); and QEMU's generic-fuzz corpus for the
          device replayed
          (tests/qtest/fuzz-corpus; longer: scripts/fuzz-qemu.sh run)
  qtest   device conformance through libqtest (tests/qtest, in QEMU's build)
  lint    checkpatch on the guest driver, the docs parse, each table of
          docs/specs/vhca.rst agrees with include/vhca_hw.h, every
          test docs/compliance.rst names exists, and every identifier
          and path README.md and docs/ cite (tests/lint/check_doc_refs.py),
          and the engine's layering (tests/lint/check_engine_layers.py)
  guest   two guests with a vhca each (tests/guest)

    tests/run_all.py [--suite unit,fuzz,qtest,lint,guest] [--quick]

--quick runs unit, lint and qtest: the loop after an edit of the device,
under three minutes warm; the README's test command runs every suite.
"""

import argparse
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("VHCA_CACHE", "/var/cache/vhca")
TAP_LINE = re.compile(r"^(not )?ok\b\s*\d*\s*(?:- )?(.*?)(\s+#\s*(SKIP|TODO).*)?$",
                      re.IGNORECASE)


class Results:
    def __init__(self):
        self.rows = []
        self.durations = []     # (seconds, what): test programs, cases
        self.modules = []       # (seconds, name): guest modules, whole

    def took(self, what, seconds):
        self.durations.append((seconds, what))

    def print_modules(self):
        """Where the guest suite's time goes, boots included."""
        if self.modules:
            print("[vhca] guest modules, boots included: %s" % ", ".join(
                "%s %.0fs" % (name, seconds) for seconds, name in
                sorted(self.modules, reverse=True)))

    def print_slowest(self, n=10):
        """The test command must stay within its time: show where it goes."""
        print("[vhca] the %d slowest:" % n)
        for seconds, what in sorted(self.durations, reverse=True)[:n]:
            print("[vhca]   %6.0fs %s" % (seconds, what))

    def add(self, suite, name, status, detail=""):
        self.rows.append((suite, name, status))
        mark = {"pass": "ok  ", "fail": "FAIL", "skip": "skip"}[status]
        print("%s %-6s %s" % (mark, suite, name), flush=True)
        if detail and status == "fail":
            print("    " + detail.rstrip().replace("\n", "\n    "), flush=True)

    def count(self, status):
        return sum(1 for r in self.rows if r[2] == status)


def step(what, argv, **kw):
    """Run a build step; on failure print its output and stop everything."""
    t0 = time.monotonic()
    proc = subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, **kw)
    print("[vhca] %s: %.0fs" % (what, time.monotonic() - t0), flush=True)
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout)
        raise SystemExit("vhca: error: %s failed (exit %d)"
                         % (what, proc.returncode))
    return proc.stdout


def parse_meson_log(results, suite, build_dir):
    """Count the TAP test cases of every test meson ran."""
    with open(os.path.join(build_dir, "meson-logs", "testlog.json")) as f:
        entries = [json.loads(line) for line in f if line.strip()]
    for entry in entries:
        name = entry["name"].split(" / ")[-1]
        results.took("%s %s" % (suite, name), entry.get("duration", 0))
        cases = 0
        failed = 0
        for line in entry.get("stdout", "").splitlines():
            m = TAP_LINE.match(line.strip())
            if not m:
                continue
            cases += 1
            if m.group(4) and m.group(4).upper() == "SKIP":
                results.add(suite, "%s: %s" % (name, m.group(2)), "skip")
            elif m.group(1):
                failed += 1
                results.add(suite, "%s: %s" % (name, m.group(2)), "fail")
            else:
                results.add(suite, "%s: %s" % (name, m.group(2)), "pass")
        if entry["result"] not in ("OK", "EXPECTEDFAIL") and not failed:
            results.add(suite, "%s (%s after %d cases)"
                        % (name, entry["result"], cases), "fail",
                        entry.get("stderr", "")[-3000:])
        elif cases == 0 and entry["result"] == "OK":
            results.add(suite, name, "pass")


def run_meson_suite(results, suite, build_dir, meson, meson_suite):
    # meson test rebuilds the tests first and, if that fails, runs none
    # and leaves the last run's log: without this the old results passed.
    log = os.path.join(build_dir, "meson-logs", "testlog.json")
    if os.path.exists(log):
        os.unlink(log)
    out = subprocess.run([meson, "test", "-C", build_dir, "--suite",
                          meson_suite, "--num-processes", "2",
                          "--print-errorlogs"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout
    if not os.path.exists(log):
        results.add(suite, "meson test --suite %s ran no test (build "
                    "failed?)" % meson_suite, "fail", out[-3000:])
        return
    parse_meson_log(results, suite, build_dir)


def run_unit(results):
    build = os.path.join(ROOT, "build")
    if not os.path.exists(os.path.join(build, "build.ninja")):
        step("meson setup", ["meson", "setup", build, ROOT])
    step("build unit tests", ["ninja", "-C", build])
    run_meson_suite(results, "unit", build, "meson", "unit")


def run_fuzz(results):
    build = os.path.join(ROOT, "build")
    if not os.path.exists(os.path.join(build, "build.ninja")):
        step("meson setup", ["meson", "setup", build, ROOT])
    step("build fuzz targets", ["ninja", "-C", build,
                                "tests/unit/fuzz-vhca-run",
                                "tests/unit/fuzz-vhca-ib-run"])
    run_meson_suite(results, "fuzz", build, "meson", "fuzz")

    # QEMU's generic-fuzz over the device: every input of its corpus
    # (tests/qtest/fuzz-corpus) once, in the clang, ASan and UBSan build
    # of scripts/fuzz-qemu.sh (cached; its own tree).
    fuzz_qemu = os.path.join(ROOT, "scripts/fuzz-qemu.sh")
    # The normal build first: it fetches the QEMU source both use.
    step("build QEMU", [os.path.join(ROOT, "scripts/build-qemu.sh")])
    step("build QEMU's fuzzer", [fuzz_qemu, "build"])
    t0 = time.monotonic()
    proc = subprocess.run([fuzz_qemu, "replay"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    results.took("fuzz qemu generic-fuzz corpus", time.monotonic() - t0)
    m = re.search(r"^replayed (\d+) inputs$", proc.stdout, re.M)
    ok = proc.returncode == 0 and m and int(m.group(1)) > 0
    results.add("fuzz", "qemu generic-fuzz corpus (%s inputs)"
                % (m.group(1) if m else "?"), "pass" if ok else "fail",
                "" if ok else proc.stdout[-3000:])


def run_qtest(results):
    qemu = step("build QEMU", [os.path.join(ROOT, "scripts/build-qemu.sh")])
    qemu_build = os.path.dirname(qemu.strip().splitlines()[-1])
    run_meson_suite(results, "qtest", qemu_build,
                    os.path.join(qemu_build, "pyvenv/bin/meson"), "vhca")


def run_checker(results, script, prefix):
    """A lint checker that prints "ok PREFIX ..." or "FAIL PREFIX ..."
    followed by indented details, one line per check."""
    proc = subprocess.run([sys.executable, os.path.join(ROOT, script),
                           "--results"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    checks = re.findall(r"^(ok|FAIL) (%s [^\n]+)\n((?:    .*\n)*)" % prefix,
                        proc.stdout, flags=re.M)
    for mark, name, detail in checks:
        results.add("lint", name, "pass" if mark == "ok" else "fail", detail)
    if not checks or (proc.returncode != 0) != any(c[0] == "FAIL"
                                                   for c in checks):
        results.add("lint", "%s (exit %d)" % (script, proc.returncode),
                    "fail", proc.stdout[-3000:])


def run_lint(results):
    out = step("checkpatch", [os.path.join(ROOT, "scripts/checkpatch.sh")])
    # "ok FILE", or "FAIL FILE" followed by checkpatch's complaints.
    for block in re.split(r"^(?=(?:ok|FAIL) \S+$)", out, flags=re.M):
        m = re.match(r"^(ok|FAIL) (\S+)\n?(.*)", block, re.S)
        if m:
            results.add("lint", "checkpatch " + m.group(2),
                        "pass" if m.group(1) == "ok" else "fail", m.group(3))


    # The docs are reStructuredText: they must parse without errors.
    import docutils.core
    import docutils.utils
    for doc in sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.rst"),
                                recursive=True)):
        name = os.path.relpath(doc, ROOT)
        with open(doc) as f:
            text = f.read()
        try:
            docutils.core.publish_doctree(
                text, source_path=name,
                settings_overrides={"halt_level": 3, "report_level": 5})
            results.add("lint", "rst " + name, "pass")
        except docutils.utils.SystemMessage as e:
            results.add("lint", "rst " + name, "fail", str(e))

    # The spec is the contract: one test per table, each compared with the
    # header ("ok TABLE", or "FAIL TABLE" followed by its mismatches).
    checker = os.path.join(ROOT, "tests/lint/check_spec_contract.py")
    proc = subprocess.run([sys.executable, checker, "--results"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    tables = failed = 0
    for block in re.split(r"^(?=(?:ok|FAIL) )", proc.stdout, flags=re.M):
        m = re.match(r"^(ok|FAIL) ([^\n]+)\n?(.*)", block, re.S)
        if m:
            tables += 1
            failed += m.group(1) == "FAIL"
            results.add("lint", "spec table " + m.group(2),
                        "pass" if m.group(1) == "ok" else "fail", m.group(3))
    if not tables or (proc.returncode != 0) != bool(failed):
        results.add("lint", "spec contract checker (exit %d)"
                    % proc.returncode, "fail", proc.stdout[-3000:])

    # docs/compliance.rst names only tests that exist ("ok compliance
    # test references", or "FAIL ..." followed by what is missing).
    run_checker(results, "tests/lint/check_compliance.py", "compliance")
    # README.md and docs/ cite only what exists, and README's limits
    # paragraph is docs/limits.rst's ("ok doc refs FILE", "ok doc limits
    # summary", or FAIL and what is wrong); the checker's own tests show
    # it failing on a renamed function.
    run_checker(results, "tests/lint/check_doc_refs.py", "doc")
    # hw/vhca/engine includes no QEMU header, its files call each other
    # in no circle of more than six, and the receive path runs top-down
    # ("ok layers RULE" or FAIL and what breaks it).
    run_checker(results, "tests/lint/check_engine_layers.py", "layers")
    suite = unittest.defaultTestLoader.discover(
        os.path.join(ROOT, "tests/lint"), pattern="test_*.py",
        top_level_dir=os.path.join(ROOT, "tests/lint"))
    suite.run(RecordingResult(results, "lint"))


class RecordingResult(unittest.TestResult):
    """Feeds each test case of a unittest suite (the guest tests, the
    lint's own tests), and module set-up errors, to Results."""

    def __init__(self, results, suite="guest"):
        super().__init__()
        self.results = results
        self.suite = suite
        self.started = {}

    def startTest(self, test):
        super().startTest(test)
        self.started[test.id()] = time.monotonic()

    def stopTest(self, test):
        super().stopTest(test)
        start = self.started.pop(test.id(), None)
        if start is not None:
            self.results.took("%s %s" % (self.suite, self.name(test)),
                              time.monotonic() - start)

    def module_took(self, name, seconds):
        self.results.modules.append((seconds, name))

    @staticmethod
    def name(test):
        name = test.id()
        return name.split(".", 1)[1] if "." in name else name

    def addSuccess(self, test):
        self.results.add(self.suite, self.name(test), "pass")

    def addFailure(self, test, err):
        self.results.add(self.suite, self.name(test), "fail",
                         self._exc_info_to_string(err, test))

    addError = addFailure

    def addSubTest(self, test, subtest, err):
        # A failed subtest keeps its test from addSuccess(), and the base
        # class only lists it in self.failures: without this a test whose
        # subtests fail would count neither as passed nor as failed.
        if err is not None:
            self.results.add(self.suite, self.name(subtest), "fail",
                             self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        self.results.add(self.suite, self.name(test), "skip")


# Guest fabrics run two at a time: a fabric's guests leave about half of
# this machine's two cores idle (waiting on each other, on a boot's I/O,
# on the test's own polling), so two side by side take little longer than
# one.  At most MAX_GUESTS QEMUs run at once, and a module whose tests
# measure time or host CPU says so (RUNS_ALONE, with the reason) and runs
# with no other fabric.  $VHCA_GUEST_LANES=1 runs one fabric at a time.
GUEST_LANES = int(os.environ.get("VHCA_GUEST_LANES", "2"))
MAX_GUESTS = 4
# The modules' times of the last run, to start the longest groups first.
GUEST_TIMES = os.path.join(CACHE, "guest-module-times.json")


def run_guest(results):
    step("build QEMU", [os.path.join(ROOT, "scripts/build-qemu.sh")])
    step("build guest image", [os.path.join(ROOT, "images/build-image.sh")])
    step("build provider", [os.path.join(ROOT, "scripts/build-provider.sh")])
    sys.path.insert(0, os.path.join(ROOT, "tests/guest"))
    suite = unittest.defaultTestLoader.discover(
        os.path.join(ROOT, "tests/guest"), top_level_dir=os.path.join(
            ROOT, "tests/guest"))
    groups = fabric_groups(suite)
    if GUEST_LANES < 2:
        unittest.TestSuite(TimedModule(m) for g in groups
                           for m in g.suites).run(RecordingResult(results))
    else:
        run_in_lanes(results, groups)
    save_module_times(results)


class FabricGroup:
    """Guest modules that share one fabric's boot, run one after another
    in one process: their names, suites, the fabric's guest count, and
    why they must run alone (None if they need not)."""

    def __init__(self, guests):
        self.names = []
        self.suites = []
        self.guests = guests
        self.alone = None

    def add(self, name, module_suite, module):
        self.names.append(name)
        self.suites.append(module_suite)
        self.alone = self.alone or getattr(module, "RUNS_ALONE", None)


def fabric_groups(suite):
    """The guest modules grouped so that those asking for the same fabric
    run one after another and share its boot (vhca_fabric's
    ModuleFabric), in the order of each kind's first module."""
    import vhca_fabric
    groups = {}
    for module_suite in suite:
        key, guests, module = id(module_suite), 2, None
        for test in iter_tests(module_suite):
            module = sys.modules.get(type(test).__module__)
            for value in vars(module).values() if module else ():
                # The module's ModuleFabric, or the one its OneGuest has.
                if not isinstance(value, vhca_fabric.ModuleFabric):
                    value = getattr(value, "fabric", None)
                if isinstance(value, vhca_fabric.ModuleFabric):
                    key, guests = value.key(), value.guest_count()
            break
        if module is None:
            continue
        # Those that must run alone share no boot with those that need
        # not, which then run beside other fabrics.
        key = (key, getattr(module, "RUNS_ALONE", None) is not None)
        group = groups.setdefault(key, FabricGroup(guests))
        group.add(module.__name__, module_suite, module)
    return list(groups.values())


def run_in_lanes(results, groups):
    """Run the groups, each in a process of its own (tests/run_all.py
    --guest-modules), GUEST_LANES at once within MAX_GUESTS guests; each
    group's output is printed whole when it ends."""
    try:
        with open(GUEST_TIMES) as f:
            last = json.load(f)
    except (OSError, ValueError):
        last = {}       # a first run: discovery order
    # Alone ones first, then the longest of the last run.
    waiting = sorted(groups, key=lambda g: (
        g.alone is None, -sum(last.get(n, 0) for n in g.names)))
    running = {}
    while waiting or running:
        for group in list(waiting):
            if len(running) >= GUEST_LANES or any(
                    g.alone for g in running.values()):
                break
            if group.alone and running:
                break
            busy = sum(g.guests for g in running.values())
            if running and busy + group.guests > MAX_GUESTS:
                continue
            waiting.remove(group)
            running[start_group(group)] = group
            print("[vhca] started: %s%s" % (", ".join(group.names),
                                            " (alone: %s)" % group.alone
                                            if group.alone else ""),
                  flush=True)
        pid, status = os.wait()
        proc = next((p for p in running if p.pid == pid), None)
        if proc is not None:
            proc.returncode = os.waitstatus_to_exitcode(status)
            finish_group(results, proc, running.pop(proc))


def start_group(group):
    out = tempfile.NamedTemporaryFile("w+", prefix="vhca-guest-",
                                      suffix=".log")
    rows = tempfile.NamedTemporaryFile("w+", prefix="vhca-guest-",
                                       suffix=".json")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__),
                             "--guest-modules", ",".join(group.names),
                             "--results", rows.name],
                            stdout=out, stderr=subprocess.STDOUT,
                            preexec_fn=die_with_parent)
    proc.files = (out, rows)
    return proc


def finish_group(results, proc, group):
    out, rows = proc.files
    with out:
        out.seek(0)
        sys.stdout.write(out.read())
    with rows:
        rows.seek(0)
        text = rows.read()
    if not text:
        results.add("guest", "%s (the process running them ended "
                    "without results)" % ", ".join(group.names), "fail")
        return
    done = json.loads(text)
    for suite, name, status in done["rows"]:
        results.rows.append((suite, name, status))
    results.durations += [tuple(d) for d in done["durations"]]
    results.modules += [tuple(m) for m in done["modules"]]


def die_with_parent():
    """In a group's process before it runs: SIGTERM when run_all.py
    ends, however it ends (prctl PR_SET_PDEATHSIG)."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


def run_guest_modules(names, results_path):
    """--guest-modules: one group's modules in this process; the results
    go to results_path as JSON for the process that started it.  SIGTERM
    exits through the fabric's clean-up (atexit), which stops its QEMUs."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("vhca: terminated"))
    sys.path.insert(0, os.path.join(ROOT, "tests/guest"))
    results = Results()
    suites = [unittest.defaultTestLoader.loadTestsFromName(n)
              for n in names]
    unittest.TestSuite(TimedModule(s) for s in suites).run(
        RecordingResult(results))
    with open(results_path, "w") as f:
        json.dump({"rows": results.rows, "durations": results.durations,
                   "modules": results.modules}, f)


def save_module_times(results):
    try:
        with open(GUEST_TIMES, "w") as f:
            json.dump({name: seconds for seconds, name in results.modules},
                      f)
    except OSError:
        pass    # only an ordering hint for the next run


class TimedModule(unittest.TestSuite):
    """One module's tests, timed as a whole: its boot (setUpModule) and
    the previous module's tear-down come with it, which the cases' own
    times leave out.  The times go to the result's module_took()."""

    def run(self, result, debug=False):
        # Named before the run: a suite drops each test once it has run.
        name = next((type(t).__module__ for t in iter_tests(self)), None)
        t0 = time.monotonic()
        try:
            return super().run(result, debug)
        finally:
            if name and hasattr(result, "module_took"):
                result.module_took(name, time.monotonic() - t0)


def iter_tests(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from iter_tests(item)
        else:
            yield item


SUITES = {"unit": run_unit, "fuzz": run_fuzz, "qtest": run_qtest, "lint": run_lint,
          "guest": run_guest}
# What needs no guest: the engine, the device through libqtest, the lint.
QUICK = ["unit", "lint", "qtest"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", default=",".join(SUITES))
    parser.add_argument("--quick", action="store_true",
                        help="the edit-rerun tier: %s (under 3 minutes "
                        "warm)" % ",".join(QUICK))
    parser.add_argument("--guest-modules", help=argparse.SUPPRESS)
    parser.add_argument("--results", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.guest_modules:
        run_guest_modules(args.guest_modules.split(","), args.results)
        return 0
    wanted = QUICK if args.quick else args.suite.split(",")
    unknown = set(wanted) - set(SUITES)
    if unknown:
        raise SystemExit("vhca: error: unknown suite %s (have %s)"
                         % (",".join(unknown), ",".join(SUITES)))
    step("host set-up", [os.path.join(ROOT, "scripts/setup-host.sh")])
    results = Results()
    t0 = time.monotonic()
    for name in SUITES:
        if name in wanted:
            t_suite = time.monotonic()
            SUITES[name](results)
            print("[vhca] suite %s: %.0fs" % (name,
                                               time.monotonic() - t_suite))
    passed, failed = results.count("pass"), results.count("fail")
    skipped = results.count("skip")
    results.print_slowest()
    results.print_modules()
    print("[vhca] tests took %.0fs" % (time.monotonic() - t0))
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
