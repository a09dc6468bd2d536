"""Priority flow control (IEEE 802.1Qbb) between two vhca guests back to
back (issue 29; docs/specs/vhca.rst, "Priority flow control").

The guests configure PFC as on any Linux NIC, through DCB netlink with
iproute2's `dcb pfc` (drivers/vhca/vhca_dcb.c).  The receiver is made
one that cannot keep up by the host: QMP qom-set of the device's
x-rx-frame-rate (received requests per second) on guest 2, undone at the
end.  An RC stream (ib_write_bw, traffic class 96: DSCP 24, priority 3)
into it then loses frames without PFC - queue-full drops at the
receiver, retransmissions at the sender - and with PFC on priority 3 at
both ends loses none: 0 out-of-sequence requests, 0 sequence NAKs and
0 retransmissions, while the pause counters of ethtool -S move.  tshark
decodes the pause frames of a capture of the link (QEMU's filter-dump)
as MAC Control CBFC pauses, nothing malformed.

The fabric is the plain two-vhca one, shared with the other modules that
ask for it (vhca_fabric.ModuleFabric): the test puts PFC and the rate
back as it found them.
"""

import os
import shutil
import subprocess
import unittest

from host_common import vhca_fabric

# Why tests/run_all.py runs no other fabric beside this module's.
RUNS_ALONE = "whether frames drop depends on how fast the receiver drains"
fabric = vhca_fabric.ModuleFabric("pfc")
setUpModule, tearDownModule = fabric.start, fabric.stop

PRIO = 3
TCLASS = 24 << 2                # DSCP 24: class selector 3
SLOW_RATE = 20000               # received requests per second, guest 2
PFC_COUNTERS = ("rx_prio%d_pause", "rx_prio%d_pause_duration",
                "rx_prio%d_pause_transition", "tx_prio%d_pause",
                "tx_prio%d_pause_duration")


def stream(sender, receiver, iters):
    """ib_write_bw of iters 64 KiB messages at priority 3: client
    (status, output)."""
    cmd = "ib_write_bw -d vhca0 -x %%d --tclass=%d -s 65536 -n %d -F" % (
        TCLASS, iters)
    status, cli, _ = vhca_fabric.client_server(
        receiver, sender, cmd % receiver.ipv4_gid_index(),
        (cmd % sender.ipv4_gid_index()) + " " + receiver.ipv4, 18515)
    return status, cli


def delta(before, after, name):
    return after.get(name, 0) - before.get(name, 0)


class DcbNetlink(unittest.TestCase):
    def test_dcb_pfc_sets_and_shows_the_priorities(self):
        guest = fabric[1]
        self.assertEqual(guest.exec("command -v dcb")[0], 0,
                         "the guest image has no dcb (iproute2)")
        try:
            guest.set_pfc("%d:on" % PRIO)
            out = guest.run("dcb pfc show dev %s" % guest.ifname())
            self.assertRegex(out, r"pfc-cap 8")
            self.assertRegex(out, r"\b%d:on\b" % PRIO)
            self.assertRegex(out, r"\b0:off\b")
        finally:
            guest.set_pfc("all:off")
        out = guest.run("dcb pfc show dev %s" % guest.ifname())
        self.assertNotRegex(out, r"\b\d:on\b")

    def test_counters_in_ethtool_and_rdma_statistic(self):
        guest = fabric[1]
        ethtool = guest.hw_counters("ethtool")
        rdma = guest.hw_counters("rdma")
        for prio in range(8):
            for name in PFC_COUNTERS:
                self.assertIn(name % prio, ethtool)
                self.assertIn(name % prio, rdma)


class SlowReceiver(unittest.TestCase):
    """Guest 1 writes into guest 2, which takes SLOW_RATE requests a
    second."""

    def setUp(self):
        fabric[2].set_rx_frame_rate(SLOW_RATE)

    def tearDown(self):
        fabric[2].set_rx_frame_rate(0)
        for guest in (fabric[1], fabric[2]):
            guest.set_pfc("all:off")

    def run_stream(self):
        g1, g2 = fabric[1], fabric[2]
        before = (g1.hw_counters("ethtool"), g2.hw_counters("ethtool"))
        status, out = stream(g1, g2, 200)
        after = (g1.hw_counters("ethtool"), g2.hw_counters("ethtool"))
        return status, out, before, after

    def test_without_pfc_frames_drop(self):
        status, out, before, after = self.run_stream()
        # The stream may even fail (retries exhausted): the loss shows.
        self.assertGreater(delta(before[1], after[1], "drop_queue_full"), 0,
                           out)
        self.assertGreater(delta(before[0], after[0], "retransmitted_pkts"),
                           0, out)
        self.assertEqual(delta(before[1], after[1], "tx_prio3_pause"), 0)

    def test_with_pfc_nothing_is_lost(self):
        g1, g2 = fabric[1], fabric[2]
        g1.set_pfc("%d:on" % PRIO)
        g2.set_pfc("%d:on" % PRIO)
        path = os.path.join(g1.dir, "pfc.pcap")
        if os.path.exists(path):
            os.unlink(path)
        g1.qmp("object-add", **{"qom-type": "filter-dump", "id": "pfc",
                                "netdev": "fabric", "file": path})
        try:
            status, out, before, after = self.run_stream()
        finally:
            g1.qmp("object-del", id="pfc")
        self.assertEqual(status, 0, out)
        self.assertRegex(out, r"(?m)^\s*65536\s+200\s")
        for name in ("drop_queue_full", "out_of_seq_request",
                     "send_seq_err", "rcvd_dropped"):
            self.assertEqual(delta(before[1], after[1], name), 0, name)
        for name in ("retransmitted_pkts", "rcvd_seq_err",
                     "local_ack_timeout_err"):
            self.assertEqual(delta(before[0], after[0], name), 0, name)
        sent = delta(before[1], after[1], "tx_prio3_pause")
        self.assertGreater(sent, 0)
        self.assertEqual(delta(before[0], after[0], "rx_prio3_pause"), sent)
        self.assertGreater(delta(before[0], after[0],
                                 "rx_prio3_pause_duration"), 0)
        self.assertGreater(delta(before[1], after[1],
                                 "tx_prio3_pause_duration"), 0)
        # Only priority 3 was paused.
        for prio in range(8):
            if prio != PRIO:
                self.assertEqual(delta(before[0], after[0],
                                       "rx_prio%d_pause" % prio), 0)
        self.check_capture(path, sent)

    def check_capture(self, path, sent):
        """tshark decodes every pause frame, for priority 3 only, and
        finds nothing malformed."""
        tshark = shutil.which("tshark")
        if not tshark:
            raise FileNotFoundError("tshark is not installed "
                                    "(scripts/setup-host.sh installs it)")
        fields = subprocess.run(
            [tshark, "-r", path, "-Y", "macc.opcode == 0x0101", "-T",
             "fields", "-e", "macc.cbfc.enbv", "-e",
             "macc.cbfc.pause_time.c%d" % PRIO],
            check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True).stdout.split("\n")
        frames = [f.split("\t") for f in fields if f]
        self.assertEqual(len(frames), sent)
        self.assertEqual({f[0] for f in frames}, {"0x0008"})
        times = [int(f[1]) for f in frames]
        self.assertEqual(times[0], 65535)
        self.assertEqual(times[-1], 0)
        decoded = subprocess.run(
            [tshark, "-r", path, "-Y", "macc"], check=True,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True).stdout
        self.assertEqual(len(decoded.splitlines()), sent)
        self.assertNotRegex(decoded, r"(?i)malformed")


if __name__ == "__main__":
    unittest.main()
