"""rdma-core's own tests (pyverbs) against vhca0, unmodified.

The tests/ folder of the rdma-core source the provider is built against
(56.1, the guest's version) is copied into one guest and run there, one
python3 process per module (a whole run crashes in Python 3.13's
interpreter teardown, a known upstream bug; the same noise can follow a
module's summary and is ignored).  Each module is one test here: it passes
if unittest ran tests and reported no failure and no error.  Skips are
counted and printed: they are features vhca does not claim yet (extended
QPs and CQs, SRQ, ODP; see docs/limits.rst).

The modules are those the rdma_cm, UD and UC work needs: rdma_cm between
two processes, address handles, QP creation, query and modify of every
type, CQs and their events.
"""

import os
import re
import subprocess
import sys
import tarfile
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../scripts"))
import vhca_fabric  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
MODULES = ["test_rdmacm", "test_addr", "test_qp", "test_cq",
           "test_cq_events", "test_pd", "test_atomic", "test_cqex",
           "test_qpex"]
GUEST_DIR = "/tmp/rdma-core-tests"

fabric = vhca_fabric.ModuleFabric("pyverbs", count=1)
tearDownModule = fabric.stop


def rdma_core_tests_dir():
    """tests/ of the rdma-core source scripts/build-provider.sh uses."""
    so = subprocess.run([os.path.join(ROOT, "scripts/build-provider.sh")],
                        check=True, stdout=subprocess.PIPE,
                        text=True).stdout.split()[-1]
    return os.path.join(os.path.dirname(so), "../../src/tests")


def setUpModule():
    fabric.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tgz = os.path.join(tmp, "tests.tgz")
            with tarfile.open(tgz, "w:gz") as tar:
                tar.add(rdma_core_tests_dir(), arcname="tests")
            fabric[1].put_file("/tmp/tests.tgz", tgz)
        fabric[1].run("rm -rf %s && mkdir %s && tar -C %s -xzf /tmp/tests.tgz"
                      % (GUEST_DIR, GUEST_DIR, GUEST_DIR))
    except BaseException:
        fabric.stop()
        raise


# unittest's summary: "Ran N tests in Xs", a blank line, then "OK" or
# "FAILED", with the counts in parentheses.
SUMMARY = re.compile(r"^Ran (\d+) tests? in [\d.]+s\n\n(OK|FAILED)"
                     r"(?: \(([^)]*)\))?$", re.M)


class RdmaCoreTests(unittest.TestCase):
    def run_module(self, module):
        guest = fabric[1]
        status, out = guest.exec(
            "cd %s/tests && timeout 600 python3 run_tests.py --dev vhca0 "
            "--gid %d -v %s 2>&1" % (GUEST_DIR, guest.ipv4_gid_index(),
                                     module), 700)
        m = SUMMARY.search(out)
        self.assertIsNotNone(m, "%s: no unittest summary (exit %d):\n%s"
                             % (module, status, out[-6000:]))
        counts = dict((k, int(v)) for k, v in re.findall(
            r"(\w+)=(\d+)", m.group(3) or ""))
        ran = int(m.group(1))
        print("    %s: ran %d, skipped %d" % (module, ran,
                                              counts.get("skipped", 0)),
              file=sys.stderr)
        self.assertEqual(m.group(2), "OK", "%s:\n%s" % (module, out[-8000:]))
        self.assertGreater(ran - counts.get("skipped", 0), 0,
                           "%s: every test skipped:\n%s" % (module, out))


def _add(module):
    def test(self):
        self.run_module(module)
    setattr(RdmaCoreTests, module, test)


for _module in MODULES:
    _add(_module)


if __name__ == "__main__":
    unittest.main()
