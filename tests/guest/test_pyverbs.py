"""rdma-core's own tests (pyverbs) against vhca0, unmodified.

The tests/ folder of the rdma-core source the provider is built against
(56.1, the guest's version) is copied into one guest with
guest_pyverbs_suite.py, which runs every module of it (test_*.py), one
child process per module, forked once the suite is imported: a whole run
crashes in Python 3.13's interpreter teardown, a known upstream bug, which
the children never reach.  rdma_cm modules talk to
themselves through the guest's own address.

Each module is one test here: it passes if no test of it failed or raised
an error; a module every test of which skipped (another vendor's device, a
second port) is a skip, with the reasons.  The counts and skip reasons are
printed, and the table at the end is the one in docs/conformance.rst.

VHCA_PYVERBS_NIC=rxe runs the same suite on Linux's soft-RoCE instead
(the reference table of docs/conformance.rst); VHCA_PYVERBS_MODULES
(comma-separated) limits the modules.
"""

import json
import os
import sys
import unittest

from host_common import vhca_fabric
import rdma_core_tests

HERE = os.path.dirname(os.path.abspath(__file__))
GUEST_DIR = rdma_core_tests.GUEST_DIR
RUNNER = "guest_pyverbs_suite.py"
NIC = os.environ.get("VHCA_PYVERBS_NIC", "vhca")
# "auto": the suite picks the GID, as for a new user; "ipv4": the IPv4
# RoCE v2 GID.
GID = os.environ.get("VHCA_PYVERBS_GID", "auto")
MODULE_TIMEOUT = 600

fabric = vhca_fabric.ModuleFabric("pyverbs", count=1, nics=[NIC])
rows = []


def modules():
    chosen = os.environ.get("VHCA_PYVERBS_MODULES")
    if chosen:
        return chosen.split(",")
    return sorted(f[:-3] for f in os.listdir(rdma_core_tests.tests_dir())
                  if f.startswith("test_") and f.endswith(".py"))


def setUpModule():
    fabric.start()
    try:
        rdma_core_tests.put(fabric[1])
        fabric[1].put_file("/tmp/" + RUNNER, os.path.join(HERE, RUNNER))
    except BaseException:
        fabric.stop()
        raise


def tearDownModule():
    try:
        if rows:
            print("\nrdma-core tests on %s:" % fabric[1].rdma_dev,
                  file=sys.stderr)
            print(table(rows), file=sys.stderr)
    finally:
        fabric.stop()


def table(rows):
    out = ["%-28s %5s %5s %5s %5s %5s" % ("module", "ran", "ok", "skip",
                                          "fail", "error")]
    total = dict.fromkeys(("ran", "ok", "skip", "fail", "error"), 0)
    for r in rows:
        out.append("%-28s %5d %5d %5d %5d %5d" % (
            r["module"], r["ran"], r["ok"], r["skip"], r["fail"], r["error"]))
        for k in total:
            total[k] += r[k]
    out.append("%-28s %5d %5d %5d %5d %5d" % (
        "total", total["ran"], total["ok"], total["skip"], total["fail"],
        total["error"]))
    return "\n".join(out)


class RdmaCoreTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # One run of the runner for every module: it imports the suite
        # once and forks a child per module (guest_pyverbs_suite.py).
        guest = fabric[1]
        gid = ""
        if GID == "ipv4":
            gid = "--gid %d " % guest.ipv4_gid_index()
        chosen = modules()
        cls.status, cls.out = guest.exec(
            "python3 /tmp/%s --tests %s/tests --dev %s %s--timeout %d %s"
            % (RUNNER, GUEST_DIR, guest.rdma_dev, gid, MODULE_TIMEOUT,
               " ".join(chosen)), MODULE_TIMEOUT + 60 * len(chosen))
        cls.rows = {}
        for line in cls.out.splitlines():
            if line.startswith("PYVERBS-MODULE "):
                row = json.loads(line.split(" ", 1)[1])
                cls.rows[row["module"]] = row

    def run_module(self, module):
        row = self.rows.get(module)
        self.assertIsNotNone(row, "%s: the runner gave no result for it "
                             "(exit %d):\n%s" % (module, self.status,
                                                 self.out[-6000:]))
        rows.append(row)
        print("\n    %s: ran %d, ok %d, skip %d, fail %d, error %d (%.0fs)"
              % (module, row["ran"], row["ok"], row["skip"], row["fail"],
                 row["error"], row["seconds"]), file=sys.stderr)
        for reason, n in sorted(row["skips"].items()):
            print("      skip x%d: %s" % (n, reason), file=sys.stderr)
        for note in row["notes"]:
            print("      note: %s" % note, file=sys.stderr)
        self.assertFalse(row["fail"] or row["error"], "%s:\n%s\n%s" % (
            module, "\n".join(row["failed"]), row.get("output", "")))
        if row["ok"] == 0:
            self.skipTest("%s: no test ran to completion (%s)" % (
                module, "; ".join(sorted(row["skips"])) or "none found"))


def _add(module):
    def test(self):
        self.run_module(module)
    setattr(RdmaCoreTests, module, test)


for _module in modules():
    _add(_module)


if __name__ == "__main__":
    unittest.main()
