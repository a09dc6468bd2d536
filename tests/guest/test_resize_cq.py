"""ibv_resize_cq on vhca0 with completions pending, in rdma-core's framework.

pyverbs_resize_cq.py resizes an RC CQ holding completions not polled, and
one that completions are still arriving in, and checks that every one
survives in order (IBTA 11.2.8.3), in one guest with rdma-core 56.1's
tests/ next to it (as test_rereg_mr.py runs pyverbs_rereg.py).
"""

import unittest

import rdma_core_tests

guest = rdma_core_tests.OneGuest("pyverbs_resize_cq.py")
setUpModule, tearDownModule = guest.start, guest.stop


class ResizeCq(unittest.TestCase):
    def test_resize_cq(self):
        guest.run_all_cases(self)


if __name__ == "__main__":
    unittest.main()
