"""ibv_rereg_mr on vhca0, in rdma-core's test framework.

rdma-core's test_mr rereg cases assume that a rereg keeps the MR's keys
(mlx5 changes the MR in place); vhca keeps them too (the driver creates
the new device MR at the old index with the old key tag).
pyverbs_rereg.py runs the same flows asserting that the keys did not
change and that the peer's R_Key from before a rereg works after it, in
one guest with rdma-core 56.1's tests/ next to it.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../scripts"))
import rdma_core_tests  # noqa: E402
import vhca_fabric  # noqa: E402

MODULE = "test_vhca_rereg"

fabric = vhca_fabric.ModuleFabric("rereg", count=1)
tearDownModule = fabric.stop


def setUpModule():
    fabric.start()
    try:
        rdma_core_tests.put(fabric[1], {MODULE: "pyverbs_rereg.py"})
    except BaseException:
        fabric.stop()
        raise


class ReregMr(unittest.TestCase):
    def test_rereg_mr(self):
        rdma_core_tests.run_all_cases(self, fabric[1], MODULE, 4)


if __name__ == "__main__":
    unittest.main()
