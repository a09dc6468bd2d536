"""ibv_resize_cq on vhca0 with completions pending, in rdma-core's framework.

pyverbs_resize_cq.py resizes an RC CQ holding completions not polled, and
one that completions are still arriving in, and checks that every one
survives in order (IBTA 11.2.8.3), in one guest with rdma-core 56.1's
tests/ next to it (as test_rereg_mr.py runs pyverbs_rereg.py).
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../scripts"))
import rdma_core_tests  # noqa: E402
import vhca_fabric  # noqa: E402

MODULE = "test_vhca_resize_cq"

fabric = vhca_fabric.ModuleFabric("resize-cq", count=1)
tearDownModule = fabric.stop


def setUpModule():
    fabric.start()
    try:
        rdma_core_tests.put(fabric[1], {MODULE: "pyverbs_resize_cq.py"})
    except BaseException:
        fabric.stop()
        raise


class ResizeCq(unittest.TestCase):
    def test_resize_cq(self):
        rdma_core_tests.run_all_cases(self, fabric[1], MODULE, 2)


if __name__ == "__main__":
    unittest.main()
