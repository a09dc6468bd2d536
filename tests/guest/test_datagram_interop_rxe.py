"""rdma_cm, UD and UC programs between vhca and Linux's soft-RoCE (rxe).

Guest 1 has a vhca, guest 2 a virtio-net NIC with rxe0 on it, on one
fabric.  Every case of datagram_cases.CASES runs twice: vhca serving an
rxe client, and rxe serving a vhca client, so each side's CM, UD and UC
headers are read by an independent implementation, in both roles.
"""

import unittest

from host_common import vhca_fabric
import datagram_cases

fabric = vhca_fabric.ModuleFabric("datagram-rxe", nics=["vhca", "rxe"])
setUpModule, tearDownModule = fabric.start, fabric.stop


def vhca_guest():
    return fabric[1]


def rxe_guest():
    return fabric[2]


class VhcaServesRxe(unittest.TestCase):
    pass


class RxeServesVhca(unittest.TestCase):
    pass


def _add(case):
    def vhca_serves(self):
        datagram_cases.run_case(self, case, vhca_guest(), rxe_guest())

    def rxe_serves(self):
        datagram_cases.run_case(self, case, rxe_guest(), vhca_guest())
    setattr(VhcaServesRxe, "test_" + case.name, vhca_serves)
    setattr(RxeServesVhca, "test_" + case.name, rxe_serves)


for _case in datagram_cases.CASES:
    _add(_case)


class Multicast(unittest.TestCase):
    def test_mckey_vhca_sends_rxe_receives(self):
        datagram_cases.mckey(self, vhca_guest(), rxe_guest())

    def test_mckey_rxe_sends_vhca_receives(self):
        # rxe loses what mckey posts just before it destroys its QP.
        datagram_cases.mckey(self, rxe_guest(), vhca_guest(), expect=1)


if __name__ == "__main__":
    unittest.main()
