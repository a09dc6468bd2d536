"""Memory windows (IBTA 10.6.7) on vhca: rdma-core's own window cases,
and a peer reaching memory through a window's key, between vhca and
Linux's soft-RoCE (rdma_rxe) both ways and between two vhcas.

Guests 1 and 2 have a vhca, guest 3 rxe0 on a virtio-net NIC, on one
fabric.  rdma-core 56.1's test_mr.MWTest (7 cases) and
test_qpex.QpExTestCase.test_qp_ex_rc_bind_mw run unmodified on guest 1's
vhca0, every case passing, none skipped.

No unmodified program binds a window and lets the other side use it:
mw_scenario.py runs one window's life through guest_mw.py on both sides
of an RC connection, here between vhca and rxe both ways and between two
vhcas.
"""

import unittest

from host_common import vhca_fabric
import mw_scenario
import rdma_core_tests

fabric = vhca_fabric.ModuleFabric("mw-interop", count=3,
                                  nics=["vhca", "vhca", "rxe"])
tearDownModule = fabric.stop

# rdma-core's cases of memory windows, as run_tests.py names them.
UPSTREAM = "test_mr.MWTest test_qpex.QpExTestCase.test_qp_ex_rc_bind_mw"
UPSTREAM_COUNT = 8


def setUpModule():
    fabric.start()
    try:
        rdma_core_tests.put(fabric[1])
    except BaseException:
        fabric.stop()
        raise


class UpstreamCases(unittest.TestCase):
    def test_rdma_core_mw_cases(self):
        rdma_core_tests.run_all_cases(self, fabric[1], UPSTREAM,
                                      UPSTREAM_COUNT)


class WindowInterop(mw_scenario.WindowScenario, unittest.TestCase):
    def guests(self):
        return (fabric[1], fabric[2], fabric[3])

    def test_vhca_owner_rxe_peer(self):
        self.windows(fabric[1], fabric[3])

    def test_rxe_owner_vhca_peer(self):
        self.windows(fabric[3], fabric[1])

    def test_vhca_owner_vhca_peer(self):
        self.windows(fabric[1], fabric[2])


if __name__ == "__main__":
    unittest.main()
