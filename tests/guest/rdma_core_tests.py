"""rdma-core's tests/ folder in a guest, with vhca's own modules beside it.

rdma-core's tests (pyverbs) are unittest modules over a shared framework
(tests/base.py, tests/utils.py).  vhca's own cases in that framework
(pyverbs_*.py here) go into the guest's copy of the folder as
tests/test_vhca_*.py and run with rdma-core's run_tests.py, as its own
modules do.  The folder is the one of the rdma-core source
scripts/build-provider.sh builds the provider against (56.1, the guest's
version)."""

import os
import re
import subprocess
import tarfile
import tempfile

from host_common import vhca_fabric

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "../..")
GUEST_DIR = "/tmp/rdma-core-tests"

# vhca's modules that run alone in one guest, each from a test module of
# its own: file of tests/guest -> (the module's name in the guest's tests/,
# the fabric's run folder, how many cases the module has).
ONE_GUEST = {
    "pyverbs_ah.py": ("test_vhca_ah", "ah-fields", 4),
    "pyverbs_rereg.py": ("test_vhca_rereg", "rereg", 4),
    "pyverbs_resize_cq.py": ("test_vhca_resize_cq", "resize-cq", 2),
    "pyverbs_srq.py": ("test_vhca_srq", "srq-verbs", 4),
}

SUMMARY = re.compile(r"^Ran (\d+) tests? in [\d.]+s\n\n(OK|FAILED)"
                     r"(?: \(([^)]*)\))?$", re.M)


def tests_dir():
    """tests/ of the rdma-core source scripts/build-provider.sh uses."""
    so = subprocess.run([os.path.join(ROOT, "scripts/build-provider.sh")],
                        check=True, stdout=subprocess.PIPE,
                        text=True).stdout.split()[-1]
    return os.path.join(os.path.dirname(so), "../../src/tests")


def put(guest, modules=None):
    """Copy tests/ into GUEST_DIR of guest, with modules ({module name:
    file of tests/guest}) added to it."""
    with tempfile.TemporaryDirectory() as tmp:
        tgz = os.path.join(tmp, "tests.tgz")
        with tarfile.open(tgz, "w:gz") as tar:
            tar.add(tests_dir(), arcname="tests")
            for module, script in (modules or {}).items():
                tar.add(os.path.join(HERE, script),
                        arcname="tests/%s.py" % module)
        guest.put_file("/tmp/tests.tgz", tgz)
    guest.run("rm -rf %s && mkdir %s && tar -C %s -xzf /tmp/tests.tgz"
              % (GUEST_DIR, GUEST_DIR, GUEST_DIR))


def run_all_cases(test, guest, module, count):
    """Run module with run_tests.py on guest's vhca, with the GID of its
    IPv4 address: all count of its cases must pass, none may skip (as
    EOPNOTSUPP would)."""
    status, out = guest.exec(
        "cd %s/tests && timeout 300 python3 run_tests.py --dev vhca0 "
        "--gid %d -v %s 2>&1" % (GUEST_DIR, guest.ipv4_gid_index(), module),
        400)
    m = SUMMARY.search(out)
    test.assertIsNotNone(m, "no unittest summary (exit %d):\n%s"
                         % (status, out[-6000:]))
    test.assertEqual(m.group(2), "OK", out[-8000:])
    test.assertEqual(int(m.group(1)), count, out)
    test.assertNotIn("skipped", m.group(3) or "", out)


class OneGuest:
    """A test module's guest for one file of ONE_GUEST: start() boots it
    and puts rdma-core's tests/ with the file in (setUpModule), stop()
    ends it (tearDownModule)."""

    def __init__(self, script):
        self.script = script
        self.module, run_folder, self.count = ONE_GUEST[script]
        self.fabric = vhca_fabric.ModuleFabric(run_folder, count=1)

    def start(self):
        self.fabric.start()
        try:
            put(self.fabric[1], {self.module: self.script})
        except BaseException:
            self.fabric.stop()
            raise

    def stop(self):
        self.fabric.stop()

    def run_all_cases(self, test):
        """run_all_cases() of the file's module in the guest."""
        run_all_cases(test, self.fabric[1], self.module, self.count)
