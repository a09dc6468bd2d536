"""SRQ verbs on vhca0, in rdma-core's test framework.

rdma-core's own test_srq (run by test_pyverbs.py) passes traffic through
an SRQ, resizes an empty one and checks that the limit event reaches user
space.  pyverbs_srq.py checks the rest, in one guest with rdma-core
56.1's tests/ next to it: a resize up and down moves the WQEs posted and
not yet taken, in order; a ring too small for them, or a limit past the
size, is refused and changes nothing; the SRQ is full at its size, by the
device's count of the WQEs it took; too many SGEs, and posting to the
receive queue of a QP on an SRQ, are refused.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../scripts"))
import rdma_core_tests  # noqa: E402
import vhca_fabric  # noqa: E402

MODULE = "test_vhca_srq"

fabric = vhca_fabric.ModuleFabric("srq-verbs", count=1)
tearDownModule = fabric.stop


def setUpModule():
    fabric.start()
    try:
        rdma_core_tests.put(fabric[1], {MODULE: "pyverbs_srq.py"})
    except BaseException:
        fabric.stop()
        raise


class SrqVerbs(unittest.TestCase):
    def test_srq_verbs(self):
        rdma_core_tests.run_all_cases(self, fabric[1], MODULE, 4)


if __name__ == "__main__":
    unittest.main()
