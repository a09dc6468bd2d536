"""Unmodified RDMA programs on XRC (IBTA annex A14).

Two guests with a vhca on one fabric.  Linux's soft-RoCE (rxe) has no
XRC, so unlike the other program tests there is no interop peer: both
ends are vhca.

ibv_xsrq_pingpong (rdma-core) opens an XRC domain on a file, creates an
XRC SRQ in it, one XRC send QP (XRC_INI) and one XRC receive QP
(XRC_TGT) per client, exchanges SRQ numbers, and pings each peer's SRQ
through its send QP: every request names the SRQ in its XRCETH, the
receive completions report the target QP.  It prints "success" after
closing every resource, the domain included, and exits 0.
"""

import unittest

from host_common import vhca_fabric
import datagram_cases

fabric = vhca_fabric.ModuleFabric("xrc", count=2, nics=["vhca", "vhca"])
setUpModule, tearDownModule = fabric.start, fabric.stop


def xsrq_pingpong_ok(test, cli, srv):
    for out in (cli, srv):
        test.assertRegex(out, r"(?m)^success$")
        # Both addresses were exchanged, with an XRC SRQ number each.
        test.assertRegex(out, r"local: LID .* SRQN [0-9a-f]{6}")
        test.assertRegex(out, r"remote: LID .* SRQN [0-9a-f]{6}")


XSRQ_PINGPONG = datagram_cases.Case(
    "xsrq_pingpong",
    "ibv_xsrq_pingpong -d %(dev)s -g %(gid)s -n 20",
    "ibv_xsrq_pingpong -d %(dev)s -g %(gid)s -n 20 %(srv)s",
    18515, datagram_cases.TCP, xsrq_pingpong_ok)
# Messages of three packets at the 1024-byte path MTU: each MIDDLE and
# LAST packet names the SRQ its FIRST packet named.
XSRQ_PINGPONG_MULTI_PACKET = datagram_cases.Case(
    "xsrq_pingpong_multi_packet",
    "ibv_xsrq_pingpong -d %(dev)s -g %(gid)s -s 3000 -n 20",
    "ibv_xsrq_pingpong -d %(dev)s -g %(gid)s -s 3000 -n 20 %(srv)s",
    18515, datagram_cases.TCP, xsrq_pingpong_ok)


class VhcaServesVhca(unittest.TestCase):
    """Guest 2 serves, guest 1 is the client."""

    def test_xsrq_pingpong(self):
        datagram_cases.run_case(self, XSRQ_PINGPONG, fabric[2], fabric[1])

    def test_xsrq_pingpong_multi_packet(self):
        datagram_cases.run_case(self, XSRQ_PINGPONG_MULTI_PACKET, fabric[2],
                                fabric[1])


class DeviceAttributes(unittest.TestCase):
    """What programs look for before using XRC: IBV_DEVICE_XRC."""

    def test_device_reports_xrc(self):
        out = fabric[1].run("ibv_devinfo -v -d vhca0")
        self.assertRegex(out, r"(?m)^\s+XRC$")


if __name__ == "__main__":
    unittest.main()
