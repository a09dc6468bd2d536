"""ibv_resize_cq on vhca0 with completions pending, in rdma-core's framework.

pyverbs_resize_cq.py resizes an RC CQ holding completions not polled, and
one that completions are still arriving in, and checks that every one
survives in order (IBTA 11.2.8.3), in one guest with rdma-core 56.1's
tests/ next to it (as test_rereg_mr.py runs pyverbs_rereg.py).
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "../..")
GUEST_DIR = "/tmp/rdma-core-tests"
MODULE = "test_vhca_resize_cq"

fabric = vhca_fabric.ModuleFabric("resize-cq", count=1)
tearDownModule = fabric.stop

SUMMARY = re.compile(r"^Ran (\d+) tests? in [\d.]+s\n\n(OK|FAILED)"
                     r"(?: \(([^)]*)\))?$", re.M)


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
                tar.add(os.path.join(HERE, "pyverbs_resize_cq.py"),
                        arcname="tests/%s.py" % MODULE)
            fabric[1].put_file("/tmp/tests.tgz", tgz)
        fabric[1].run("rm -rf %s && mkdir %s && tar -C %s -xzf /tmp/tests.tgz"
                      % (GUEST_DIR, GUEST_DIR, GUEST_DIR))
    except BaseException:
        fabric.stop()
        raise


class ResizeCq(unittest.TestCase):
    def test_resize_cq(self):
        guest = fabric[1]
        status, out = guest.exec(
            "cd %s/tests && timeout 300 python3 run_tests.py --dev vhca0 "
            "--gid %d -v %s 2>&1" % (GUEST_DIR, guest.ipv4_gid_index(),
                                     MODULE), 400)
        m = SUMMARY.search(out)
        self.assertIsNotNone(m, "no unittest summary (exit %d):\n%s"
                             % (status, out[-6000:]))
        self.assertEqual(m.group(2), "OK", out[-8000:])
        # Every case must have run: none may skip (e.g. as EOPNOTSUPP).
        self.assertEqual(int(m.group(1)), 2, out)
        self.assertNotIn("skipped", m.group(3) or "", out)


if __name__ == "__main__":
    unittest.main()
