"""ibv_rereg_mr on vhca0, in rdma-core's test framework.

rdma-core's test_mr rereg cases assume that a rereg keeps the MR's keys
(mlx5 changes the MR in place); vhca keeps them too (the driver creates
the new device MR at the old index with the old key tag).
pyverbs_rereg.py runs the same flows asserting that the keys did not
change and that the peer's R_Key from before a rereg works after it, in
one guest with rdma-core 56.1's tests/ next to it.
"""

import unittest

import rdma_core_tests

guest = rdma_core_tests.OneGuest("pyverbs_rereg.py")
setUpModule, tearDownModule = guest.start, guest.stop


class ReregMr(unittest.TestCase):
    def test_rereg_mr(self):
        guest.run_all_cases(self)


if __name__ == "__main__":
    unittest.main()
