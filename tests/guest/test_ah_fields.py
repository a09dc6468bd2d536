"""Address handles and QP paths with the fields UCX, libfabric and
librdmacm pass, on vhca0, in rdma-core's framework (issue 31).

pyverbs_ah.py creates AHs for every flow label (0xffffffff, 0, 0x12345),
hop limit (0, 1, 64, 255) and traffic class (0, 106, 255) with UCX's DLID
0xc000 on RoCE, sends UD datagrams through them and checks the IPv4
header they arrive with, and takes an RC QP to RTS on UCX's path
(modify_qp IBV_QP_AV), in one guest with rdma-core 56.1's tests/ next to
it (as test_resize_cq.py runs pyverbs_resize_cq.py).  What the device does
with each field: docs/developer-guide.rst, "Address vector fields".
"""

import unittest

import rdma_core_tests

guest = rdma_core_tests.OneGuest("pyverbs_ah.py")
setUpModule, tearDownModule = guest.start, guest.stop


class AhFields(unittest.TestCase):
    def test_ah_fields(self):
        guest.run_all_cases(self)


if __name__ == "__main__":
    unittest.main()
