"""rdma_cm, UD and UC programs between two vhca guests.

Every case of datagram_cases.CASES runs unmodified between the guests:
the rdma_cm programs connect through QP1 (the kernel's CM MADs carried as
UD datagrams), the UD and UC programs exchange their QP numbers over TCP.
mckey sends to a multicast group.  The fabric is captured: afterwards the
capture must hold CM ConnectRequest, ConnectReply and ReadyToUse MADs and
UD packets with a DETH, nothing tshark finds malformed, and every RoCEv2
frame's ICRC must be right (roce_capture.py checks it independently of the
device).
"""

import subprocess
import unittest

import host_common
from host_common import vhca_fabric
import datagram_cases
import roce_capture

fabric = vhca_fabric.ModuleFabric("datagram", pcap=True)
setUpModule, tearDownModule = fabric.start, fabric.stop

# IBTA Vol 1 16.7.1 CM attribute IDs.
CM_REQ, CM_REP, CM_RTU = 0x0010, 0x0013, 0x0014


class Programs(unittest.TestCase):
    """Guest 2 serves, guest 1 is the client."""


def _add(case):
    def test(self):
        datagram_cases.run_case(self, case, fabric[2], fabric[1])
    setattr(Programs, "test_" + case.name, test)


for _case in datagram_cases.CASES:
    _add(_case)


class Multicast(unittest.TestCase):
    def test_mckey_one_sender_one_receiver(self):
        datagram_cases.mckey(self, fabric[1], fabric[2])


class Capture(unittest.TestCase):
    """Makes its own rdma_cm and UD traffic first, so it does not depend
    on the order the tests run in."""

    def tshark(self, *args):
        return subprocess.run(
            ["tshark", "-r", fabric[1].pcap, "-d",
             "udp.port==%d,infiniband" % host_common.ROCE_UDP_PORT]
            + list(args),
            check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True).stdout

    def test_capture_decodes_as_cm_mads_and_ud(self):
        by_name = {c.name: c for c in datagram_cases.CASES}
        datagram_cases.run_case(self, by_name["rping"], fabric[2], fabric[1])
        datagram_cases.run_case(self, by_name["ud_pingpong"], fabric[2],
                                fabric[1])
        ids = self.tshark("-Y", "infiniband.mad.attributeid", "-T", "fields",
                          "-e", "infiniband.mad.attributeid").split()
        ids = {int(x, 16) for x in ids}
        for attr in (CM_REQ, CM_REP, CM_RTU):
            self.assertIn(attr, ids, "no CM attribute 0x%04x in the capture"
                          % attr)
        deth = self.tshark("-Y", "infiniband.deth", "-T", "fields", "-e",
                           "infiniband.deth.srcqp")
        self.assertTrue(deth.split(), "no UD packet with a DETH")
        self.assertEqual(self.tshark("-Y", "_ws.malformed"), "",
                         "tshark finds malformed frames")
        total, bad = roce_capture.check_capture(fabric[1].pcap)
        self.assertGreater(total, 0)
        self.assertEqual(bad, 0, "%d of %d RoCEv2 frames have a bad ICRC"
                         % (bad, total))


if __name__ == "__main__":
    unittest.main()
