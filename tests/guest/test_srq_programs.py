"""Unmodified RDMA programs on shared receive queues (IBTA 10.2.9).

Three guests on one fabric: guests 1 and 2 have a vhca, guest 3 a
virtio-net NIC with Linux's soft-RoCE (rxe0).  Each program runs between
the two vhca guests, and between vhca and rxe with each as the server, so
an independent implementation is the peer of vhca's SRQ receive side (and
of the AETH credit code "invalid" an RC responder on an SRQ sends).

ibv_srq_pingpong (rdma-core) connects 16 RC QPs that all receive from one
SRQ of 500 WQEs and refills it as it drains, so the 1600 messages a side
takes wrap the ring three times; -c checks every buffer received.
ib_send_bw --use-srq (perftest) receives its stream through an SRQ.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../scripts"))
import datagram_cases  # noqa: E402
import vhca_fabric  # noqa: E402

fabric = vhca_fabric.ModuleFabric("srq", count=3,
                                  nics=["vhca", "vhca", "rxe"])
setUpModule, tearDownModule = fabric.start, fabric.stop

CASES = {c.name: c for c in [
    datagram_cases.Case(
        "srq_pingpong",
        "ibv_srq_pingpong -d %(dev)s -g %(gid)s -c -n 100",
        "ibv_srq_pingpong -d %(dev)s -g %(gid)s -c -n 100 %(srv)s",
        18515, datagram_cases.TCP, datagram_cases.pingpong_ok),
    # Messages of three packets at the 1024-byte path MTU: FIRST, MIDDLE
    # and LAST take one SRQ WQE together.
    datagram_cases.Case(
        "srq_pingpong_multi_packet",
        "ibv_srq_pingpong -d %(dev)s -g %(gid)s -c -q 4 -s 3000 -n 100",
        "ibv_srq_pingpong -d %(dev)s -g %(gid)s -c -q 4 -s 3000 -n 100 "
        "%(srv)s",
        18515, datagram_cases.TCP, datagram_cases.pingpong_ok),
    datagram_cases.Case(
        "send_bw_srq",
        "ib_send_bw -d %(dev)s -x %(gid)s -F --use-srq -s 4096 -n 200",
        "ib_send_bw -d %(dev)s -x %(gid)s -F --use-srq -s 4096 -n 200 "
        "%(srv)s",
        18515, datagram_cases.TCP, datagram_cases.perftest_ok(4096, 200)),
]}


def vhca_guests():
    return fabric[1], fabric[2]


def rxe_guest():
    return fabric[3]


class VhcaServesVhca(unittest.TestCase):
    """Guest 2 serves, guest 1 is the client."""


class VhcaServesRxe(unittest.TestCase):
    pass


class RxeServesVhca(unittest.TestCase):
    pass


def _add(case):
    def vhca_serves_vhca(self):
        client, server = vhca_guests()
        datagram_cases.run_case(self, case, server, client)

    def vhca_serves_rxe(self):
        datagram_cases.run_case(self, case, vhca_guests()[0], rxe_guest())

    def rxe_serves_vhca(self):
        datagram_cases.run_case(self, case, rxe_guest(), vhca_guests()[0])
    setattr(VhcaServesVhca, "test_" + case.name, vhca_serves_vhca)
    setattr(VhcaServesRxe, "test_" + case.name, vhca_serves_rxe)
    setattr(RxeServesVhca, "test_" + case.name, rxe_serves_vhca)


for _case in CASES.values():
    _add(_case)


class DeviceAttributes(unittest.TestCase):
    """What programs size their SRQs by: the device's SRQ limits, and
    that it resizes SRQs (IB_DEVICE_SRQ_RESIZE)."""

    def test_device_reports_srqs(self):
        out = vhca_guests()[0].run("ibv_devinfo -v -d vhca0")
        self.assertRegex(out, r"max_srq:\s+[1-9]")
        self.assertRegex(out, r"max_srq_wr:\s+16384")
        self.assertRegex(out, r"max_srq_sge:\s+7")
        self.assertIn("SRQ_RESIZE", out)


if __name__ == "__main__":
    unittest.main()
