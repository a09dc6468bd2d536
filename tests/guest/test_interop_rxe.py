"""vhca against Linux's soft-RoCE (rdma_rxe): RC interoperability.

Guest 1 has a vhca; guest 2 has a virtio-net NIC with rxe0 on it, on the same
fabric (scripts/vhca_fabric.py, nics=["vhca", "rxe"]).  rxe is an
independent RoCEv2 implementation, so every program that completes here
shows that vhca's headers, ICRC, ACKs and PSN handling are what another
implementation expects, in both roles (requester and responder).  The
connections use the IPv4 RoCE v2 GIDs.
"""

import os
import re
import unittest

from host_common import vhca_fabric
import roce_capture
from test_congestion import param, set_param, SWITCHES, ECN_ECT0, \
    ECN_NOT_ECT

fabric = vhca_fabric.ModuleFabric("interop-rxe", nics=["vhca", "rxe"])
setUpModule, tearDownModule = fabric.start, fabric.stop


def vhca_guest():
    return fabric[1]


def rxe_guest():
    return fabric[2]


def client_server(srv, cli, command, port=18515, timeout=300):
    """Run command as a server in guest srv and as a client in guest cli;
    %(dev)s and %(gid)s in command are each side's RDMA device and IPv4 GID
    index.  Return both outputs; a failed client fails the test."""
    status, client_out, server_out = vhca_fabric.client_server(
        srv, cli,
        command % {"dev": srv.rdma_dev, "gid": srv.ipv4_gid_index()},
        command % {"dev": cli.rdma_dev, "gid": cli.ipv4_gid_index()}
        + " " + srv.ipv4, port, timeout)
    if status != 0:
        raise AssertionError("client (guest%d, %s) failed (%d):\n%s\n"
                             "server (guest%d, %s):\n%s"
                             % (cli.index, cli.rdma_dev, status, client_out,
                                srv.index, srv.rdma_dev, server_out))
    return client_out, server_out


class RcPingpong(unittest.TestCase):
    """ibv_rc_pingpong -c: each side checks every buffer it receives."""

    def pingpong(self, srv, cli, extra):
        outs = client_server(srv, cli, "ibv_rc_pingpong -d %(dev)s "
                             "-g %(gid)s -c " + extra)
        for out in outs:
            self.assertRegex(out, r"\d+ bytes in [\d.]+ seconds")

    def test_vhca_server_rxe_client(self):
        self.pingpong(vhca_guest(), rxe_guest(), "")

    def test_rxe_server_vhca_client(self):
        self.pingpong(rxe_guest(), vhca_guest(), "")

    # 8 KiB messages are 8 packets at the 1024-byte path MTU both sides
    # choose on a 1500-byte Ethernet: FIRST, MIDDLE and LAST SENDs.
    def test_vhca_server_rxe_client_multi_packet(self):
        self.pingpong(vhca_guest(), rxe_guest(), "-s 8192 -n 100")

    def test_rxe_server_vhca_client_multi_packet(self):
        self.pingpong(rxe_guest(), vhca_guest(), "-s 8192 -n 100")


class Perftest(unittest.TestCase):
    """RDMA WRITE and READ, 64 packets a message, each device as requester.

    perftest gives RTS max_rd_atomic the *peer's* outstanding-reads count,
    and rxe offers 128 where vhca offers 16: a vhca requester would ask for
    more than its own limit and fail to reach RTS (as a 16-deep hardware HCA
    would).  ib_read_bw -o 16 makes both sides agree, as one does between
    unequal HCAs.
    """

    def perftest(self, srv, cli, tool, extra=""):
        cli_out, srv_out = client_server(
            srv, cli, tool + " -d %(dev)s -x %(gid)s -F -s 65536 -n 100 "
            + extra)
        self.assertNotRegex(cli_out + srv_out,
                            r"(?i)(error|failed|completion with)")
        self.assertRegex(cli_out, r"65536\s+100\s+[\d.]+\s+[\d.]+")

    def test_write_bw_vhca_to_rxe(self):
        self.perftest(rxe_guest(), vhca_guest(), "ib_write_bw")

    def test_write_bw_rxe_to_vhca(self):
        self.perftest(vhca_guest(), rxe_guest(), "ib_write_bw")

    # The client is the requester: it reads the server's buffer.
    def test_read_bw_vhca_reads_rxe(self):
        self.perftest(rxe_guest(), vhca_guest(), "ib_read_bw", "-o 16")

    def test_read_bw_rxe_reads_vhca(self):
        self.perftest(vhca_guest(), rxe_guest(), "ib_read_bw", "-o 16")


class BidirectionalStreams(unittest.TestCase):
    """Issue 31: ib_write_bw both ways at once on four QPs, 64 KiB
    messages, with either side the server.  vhca sends tens of times faster than rxe (in a TCG guest)
    takes packets; resending whole windows into rxe's full receive path
    used to exhaust a QP's retries (IBV_WC_RETRY_EXC_ERR).  With the
    requester's loss back-off (docs/specs/vhca.rst, "Loss back-off") the
    stream completes and the vhca's counters say why: windows cut, ACK
    timers doubled, no retry exhausted."""

    def stream(self, srv, cli, command, timeout=900):
        """Run command (%(dev)s, %(gid)s as client_server()) with srv as
        the server; return the client's output and the vhca's counter
        deltas, with a report to print on failure.  No completion may
        fail and no vhca QP may exhaust its retries."""
        vhca = vhca_guest()
        before = vhca.hw_counters("ethtool")
        cli_out, srv_out = client_server(srv, cli, command, timeout=timeout)
        after = vhca.hw_counters("ethtool")
        delta = {name: after[name] - before.get(name, 0) for name in after}
        report = "%s\n%s\nvhca counters: %s" % (
            cli_out, srv_out,
            {name: delta[name] for name in
             ("retransmitted_pkts", "local_ack_timeout_err",
              "rcvd_seq_err", "req_window_cuts", "req_timer_backoffs",
              "retry_exceeded_err")})
        print(report)
        self.assertNotRegex(cli_out + srv_out,
                            r"(?i)(error|failed|completion with)", report)
        self.assertEqual(delta["retry_exceeded_err"], 0, report)
        return cli_out, delta, report

    def both_ways(self, srv, cli):
        cli_out, delta, report = self.stream(
            srv, cli,
            "ib_write_bw -d %(dev)s -x %(gid)s -F -b -q 4 -s 65536 -n 200")
        # perftest counts the iterations of all four QPs: 4 x 200.
        self.assertRegex(cli_out, r"65536\s+800\s+[\d.]+\s+[\d.]+",
                         report)
        # Both directions carried the stream (-b): each way 4 QPs x 200 x
        # 64 KiB; a floor of a quarter of it, well above the connection's
        # own few packets.
        self.assertGreaterEqual(delta["sent_bytes"], 200 * 65536, report)
        self.assertGreaterEqual(delta["rcvd_bytes"], 200 * 65536, report)

    def test_write_bw_both_ways_four_qps(self):
        self.both_ways(rxe_guest(), vhca_guest())

    def test_write_bw_both_ways_four_qps_vhca_server(self):
        self.both_ways(vhca_guest(), rxe_guest())

    def test_write_bw_vhca_to_rxe_every_size(self):
        """Issue 31: a vhca sender into an rxe receiver at every message
        size of perftest's -a, 2 bytes to 8 MiB, none failing."""
        cli_out, _, report = self.stream(
            rxe_guest(), vhca_guest(),
            "ib_write_bw -d %(dev)s -x %(gid)s -F -a -n 5")
        sizes = [int(size) for size in re.findall(
            r"^\s*(\d+)\s+5\s+[\d.]+\s+[\d.]+", cli_out, re.M)]
        self.assertEqual(sizes, [2 ** k for k in range(1, 24)], report)


class PerftestEvents(unittest.TestCase):
    """ib_send_lat -e: both sides sleep on completion events, and wait
    for one per completion (IBTA 11.4.2.2: an event for the next new
    completion, none for those already in the CQ)."""

    def send_lat(self, srv, cli):
        cli_out, srv_out = client_server(
            srv, cli, "ib_send_lat -d %(dev)s -x %(gid)s -F -e -s 64 -n 500")
        self.assertNotRegex(cli_out + srv_out,
                            r"(?i)(error|failed|couldn't|completion with)")
        self.assertRegex(cli_out, r"64\s+500\s+[\d.]+\s+[\d.]+\s+[\d.]+")

    def test_send_lat_vhca_client_rxe_server(self):
        self.send_lat(rxe_guest(), vhca_guest())

    def test_send_lat_rxe_client_vhca_server(self):
        self.send_lat(vhca_guest(), rxe_guest())


class CongestionControlOn(unittest.TestCase):
    """A vhca with ECN-capable transmission, the notification point and
    the reaction point on (devlink roce_ecn_tx, roce_np_enable,
    roce_rp_enable; tests/guest/test_congestion.py) still interoperates
    with rxe, in both roles: rxe takes ECT(0) packets as any other (the
    ICRC covers the TOS byte as ones, IBTA 7.8.1 / annex A17.3.3), never
    marks CE itself and sends no CNPs, so the vhca sends none and cuts no
    rate.  Its frames are seen ECT(0) in a capture of the fabric, rxe's
    Not-ECT; the data gets through.  The switches are put back off after
    each test: the other tests share the guests."""

    COUNTERS = ("np_ecn_marked_roce_packets", "np_cnp_sent",
                "rp_cnp_handled", "rp_cnp_ignored", "rp_rate_decreases")

    def setUp(self):
        guest = vhca_guest()
        self.addCleanup(self.switches_off)
        for name in SWITCHES:
            status, out = set_param(guest, name, "true")
            self.assertEqual(status, 0, out)
            self.assertEqual(param(guest, name), "true")

    def switches_off(self):
        guest = vhca_guest()
        for name in SWITCHES:
            set_param(guest, name, "false")
        for name in SWITCHES:
            self.assertEqual(param(guest, name), "false")

    def counters(self):
        out = vhca_guest().run("rdma statistic show link %s/1"
                               % vhca_guest().rdma_dev)
        values = {}
        for name in self.COUNTERS:
            m = re.search(r"\b%s (\d+)" % name, out)
            self.assertIsNotNone(m, "%s not in:\n%s" % (name, out))
            values[name] = int(m.group(1))
        return values

    def perftest(self, srv, cli, tool):
        guest = vhca_guest()
        path = os.path.join(guest.dir, "cc-rxe.pcap")
        if os.path.exists(path):
            os.unlink(path)
        before = self.counters()
        guest.qmp("object-add", **{"qom-type": "filter-dump",
                                   "id": "ccrxe", "netdev": "fabric",
                                   "file": path})
        try:
            # Traffic class 32: DSCP 8, ECN bits 0 as given.
            cli_out, srv_out = client_server(
                srv, cli, tool + " -d %(dev)s -x %(gid)s -F -s 65536 "
                "-n 100 --tclass=32")
        finally:
            guest.qmp("object-del", id="ccrxe")
        self.assertNotRegex(cli_out + srv_out,
                            r"(?i)(error|failed|completion with)")
        self.assertRegex(cli_out, r"65536\s+100\s+[\d.]+\s+[\d.]+")
        after = self.counters()
        # Nothing marked, so no CNP either way; nothing cut.
        self.assertEqual(after, before)

        tos, data = {}, {}
        for frame in roce_capture.pcap_frames(path):
            pkt = roce_capture.roce_packet(frame)
            if pkt is None or pkt[0][0] >> 4 != 4:
                continue
            ip, rest = pkt
            src = ".".join(str(b) for b in ip[12:16])
            self.assertTrue(roce_capture.icrc_ok(ip, rest), src)
            tos.setdefault(src, set()).add((ip[1] >> 2, ip[1] & 3))
            data[src] = data.get(src, 0) + len(rest)
        self.assertEqual(tos.get(vhca_guest().ipv4), {(8, ECN_ECT0)}, tos)
        self.assertEqual(tos.get(rxe_guest().ipv4), {(8, ECN_NOT_ECT)}, tos)
        # The client sent 100 messages of 64 KiB (and more for perftest's
        # warm-up): at least that much RoCE went from it to the server.
        self.assertGreaterEqual(data.get(cli.ipv4, 0), 100 * 65536)

    def test_write_bw_vhca_to_rxe(self):
        self.perftest(rxe_guest(), vhca_guest(), "ib_write_bw")

    def test_write_bw_rxe_to_vhca(self):
        self.perftest(vhca_guest(), rxe_guest(), "ib_write_bw")

    def test_send_bw_vhca_to_rxe(self):
        self.perftest(rxe_guest(), vhca_guest(), "ib_send_bw")

    def test_send_bw_rxe_to_vhca(self):
        self.perftest(vhca_guest(), rxe_guest(), "ib_send_bw")


class PfcOn(unittest.TestCase):
    """A vhca with PFC on every priority (dcb pfc, tests/guest/test_pfc.py)
    still interoperates with rxe, which neither sends nor honours PFC
    frames (the virtio-net NIC under it hands MAC Control frames to no
    one).  Receiving from rxe, even made slow from the host
    (x-rx-frame-rate), the vhca loses nothing: rxe keeps at most 128
    packets of a QP unacknowledged (RXE_MAX_UNACKED_PSNS), under the
    per-QP receive queue's 256 frames, so its own window holds it whether
    the pauses the vhca may send reach it or not.  Sending to rxe, the
    vhca takes no pause,
    as rxe sends none.  PFC and the rate are put back after each test:
    the other tests share the guests."""

    SLOW_RATE = 5000

    def setUp(self):
        self.addCleanup(self.pfc_off)
        vhca_guest().set_pfc("all:on")

    def pfc_off(self):
        vhca_guest().set_rx_frame_rate(0)
        vhca_guest().set_pfc("all:off")

    def write_bw(self, srv, cli):
        before = vhca_guest().hw_counters("ethtool")
        cli_out, srv_out = client_server(
            srv, cli, "ib_write_bw -d %(dev)s -x %(gid)s -F -s 65536 -n 100")
        self.assertRegex(cli_out, r"65536\s+100\s+[\d.]+\s+[\d.]+")
        after = vhca_guest().hw_counters("ethtool")
        return {name: after[name] - before.get(name, 0) for name in after}

    def test_rxe_into_a_slow_vhca_with_pfc_loses_nothing(self):
        vhca_guest().set_rx_frame_rate(self.SLOW_RATE)
        delta = self.write_bw(vhca_guest(), rxe_guest())
        self.assertGreaterEqual(delta["rcvd_bytes"], 100 * 65536, delta)
        for name in ("drop_queue_full", "out_of_seq_request",
                     "send_seq_err"):
            self.assertEqual(delta[name], 0, name)

    def test_vhca_to_rxe_takes_no_pause(self):
        delta = self.write_bw(rxe_guest(), vhca_guest())
        for prio in range(8):
            self.assertEqual(delta["rx_prio%d_pause" % prio], 0, delta)
        self.assertGreater(delta["sent_bytes"], 100 * 65536, delta)


if __name__ == "__main__":
    unittest.main()
