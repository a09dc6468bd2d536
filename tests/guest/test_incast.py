"""Incast through a real congestion point, with DCQCN off and on.

The short form of scripts/incast.py (docs/benchmarks.rst has the long
one): guests 1 and 2 write into guest 3 at once through a 40 Mbit/s
bottleneck, a bridge guest whose egress to guest 3 is an HTB rate limit
over an ECN-marking RED queue (scripts/congestion_point.py).  With DCQCN
off the vhcas send Not-ECT and RED drops; with it on (devlink
roce_ecn_tx and roce_rp_enable at the senders, roce_np_enable at the
receiver) RED marks CE, the receiver answers with CNPs (IBTA annex
A17.9.3) and the senders' DCQCN reaction points cut their rates.  The
counters on every side must tell that story, and tshark must decode the
receiver's CNPs.
"""

import os
import subprocess
import unittest

from host_common import vhca_fabric
import incast

# Why tests/run_all.py runs no other fabric beside this module's.
RUNS_ALONE = "its drops and rate cuts depend on the senders' speed"
fabric = vhca_fabric.ModuleFabric("incast", count=3, link="tap",
                                  bottleneck="40mbit")
SECONDS = 8
SIZE = 65536
RESULTS = {}


def setUpModule():
    fabric.start()
    for guest in fabric.guests:
        guest.set_mtu(vhca_fabric.GUEST_MAX_MTU)
    RESULTS["off"] = incast.run_mode(fabric, "off", SECONDS, SIZE)
    RESULTS["on"] = incast.run_mode(fabric, "on", SECONDS, SIZE,
                                    capture=capture_path())


def tearDownModule():
    try:
        # run_mode() put the devlink parameters back as it found them.
        for guest in fabric.guests:
            guest.set_mtu(1500)
    finally:
        fabric.stop()


def capture_path():
    return os.path.join(fabric[3].dir, "incast.pcap")


def losses(result):
    return result["red_drops"] + result["tap_drops"]


class Incast(unittest.TestCase):

    def test_without_dcqcn_the_bottleneck_drops_and_rc_resends(self):
        off = RESULTS["off"]
        self.assertGreater(losses(off), 0, off)
        self.assertGreater(off["retransmitted"], 0, off)
        # Not-ECT traffic: nothing to mark, nothing to answer.
        self.assertEqual(off["marked"], 0, off)
        self.assertEqual(off["cc"]["np_cnp_sent"], 0, off)
        self.assertEqual(off["cc"]["rp_rate_decreases"], 0, off)

    def test_marks_become_cnps_and_rate_cuts(self):
        on = RESULTS["on"]
        cc = on["cc"]
        self.assertGreater(on["marked"], 0, on)
        self.assertGreater(cc["np_ecn_marked_roce_packets"], 0, on)
        # At most one CNP per marked packet, and one handled per CNP sent
        # (the way back is not congested, but a CNP may still be lost).
        self.assertGreater(cc["np_cnp_sent"], 0, on)
        self.assertLessEqual(cc["np_cnp_sent"],
                             cc["np_ecn_marked_roce_packets"], on)
        self.assertGreater(cc["rp_cnp_handled"], 0, on)
        self.assertLessEqual(cc["rp_cnp_handled"], cc["np_cnp_sent"], on)
        self.assertEqual(cc["rp_cnp_ignored"], 0, on)
        self.assertGreater(cc["rp_rate_decreases"], 0, on)
        # The reaction point paced below line rate at some point.
        lowest = min(rate for _, _, rates, _ in on["series"]
                     for rate in rates if rate > 0)
        self.assertLess(lowest, 100, on["series"])

    def test_dcqcn_loses_and_resends_less(self):
        off, on = RESULTS["off"], RESULTS["on"]
        self.assertLess(losses(on), losses(off), (off, on))
        self.assertLess(on["retransmitted"], off["retransmitted"], (off, on))
        self.assertGreater(on["sum_mbit"], off["sum_mbit"], (off, on))

    def test_tshark_decodes_the_cnps(self):
        """The receiver's CNPs as Wireshark reads them (Debian 12's tshark
        names opcode 0x81 "Unknown" but dissects its BTH): BTH opcode 129
        to a sender's QP, P_Key 0xffff, in IP from guest 3 to a sender with
        DSCP np_cnp_dscp (48) and Not-ECT (IBTA annex A17.9.3); nothing in
        the capture is malformed."""
        fields = ("infiniband.bth.opcode", "infiniband.bth.destqp",
                  "infiniband.bth.p_key", "ip.src", "ip.dst",
                  "ip.dsfield.dscp", "ip.dsfield.ecn", "_ws.malformed")
        args = ["tshark", "-r", capture_path(), "-Y", "infiniband",
                "-T", "fields"]
        for field in fields:
            args += ["-e", field]
        out = subprocess.run(args, check=True, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        rows = [dict(zip(fields, line.split("\t")))
                for line in out.splitlines() if line]
        self.assertEqual([r for r in rows if r.get("_ws.malformed")], [],
                         out[-2000:])
        cnps = [r for r in rows if r["infiniband.bth.opcode"] == "129"]
        self.assertGreater(len(cnps), 0, out[-2000:])
        senders = {g.ipv4 for g in fabric.guests[:-1]}
        for cnp in cnps:
            self.assertNotEqual(int(cnp["infiniband.bth.destqp"], 16), 0, cnp)
            self.assertEqual(cnp["infiniband.bth.p_key"], "65535", cnp)
            self.assertEqual(cnp["ip.src"], fabric[3].ipv4, cnp)
            self.assertIn(cnp["ip.dst"], senders, cnp)
            self.assertEqual(cnp["ip.dsfield.dscp"], "48", cnp)
            self.assertEqual(cnp["ip.dsfield.ecn"], "0", cnp)

if __name__ == "__main__":
    unittest.main()
