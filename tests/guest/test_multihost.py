"""Guests on several hosts: the fabric over real networks.

scripts/vhca_fabric.py's loopback link joins guests over UDP on 127.0.0.1.
Here the same guests meet as they would on two hosts, emulated on this one
with network namespaces (torn down again with the fabric):

  netns  two namespaces joined only by a veth pair (10.99.0.1/24 and
         10.99.0.2/24), one QEMU in each, -netdev dgram on QEMU's own
         socket bound to its namespace's address and sending to the
         other's: the command line a user types on two real hosts.  The
         veth has MTU 9042, guest MTU 9000 + 14 (Ethernet header) + 28
         (IPv4 and UDP), so no guest frame is fragmented on the way.
  tap    both QEMUs on tap devices (-netdev tap,script=no) that are ports
         of a Linux bridge, all in a namespace of their own.

For each: two vhca guests ping each other both ways at guest MTU 1500 and
9000, run ibv_rc_pingpong -c (each side checks every buffer) and
ib_write_bw at path MTU 4096 over jumbo frames, and rping through rdma_cm.
The netns link also joins a vhca to Linux's soft-RoCE (rxe).  The dgram
link is point to point, so that pair is a second netns fabric rather than
a third guest behind a hub: every pair runs the recipe as documented.

Namespaces need root; where they cannot be made, the fabric fails to start
and every test here fails with ip's message (it never skips).
"""

import os
import re
import subprocess
import unittest

from host_common import vhca_fabric
import datagram_cases

CASES = {case.name: case for case in datagram_cases.CASES}

# ibv_rc_pingpong at path MTU 4096: 64 KiB messages are 16 packets.
JUMBO_PINGPONG = datagram_cases.Case(
    "rc_pingpong_mtu_4096",
    "ibv_rc_pingpong -d %(dev)s -g %(gid)s -c -m 4096 -s 65536 -n 100",
    "ibv_rc_pingpong -d %(dev)s -g %(gid)s -c -m 4096 -s 65536 -n 100 "
    "%(srv)s",
    18515, vhca_fabric.READY_TCP, datagram_cases.pingpong_ok)


def write_bw_at_4096_ok(test, cli, srv):
    datagram_cases.perftest_ok(65536, 100)(test, cli, srv)
    # perftest prints the path MTU the QPs were brought up with.
    for out in (cli, srv):
        test.assertRegex(out, r"Mtu\s*:\s*4096\[B\]")


JUMBO_WRITE_BW = datagram_cases.Case(
    "write_bw_mtu_4096",
    "ib_write_bw -d %(dev)s -x %(gid)s -F -m 4096 -s 65536 -n 100",
    "ib_write_bw -d %(dev)s -x %(gid)s -F -m 4096 -s 65536 -n 100 %(srv)s",
    18515, vhca_fabric.READY_TCP, write_bw_at_4096_ok)

# ibv_rc_pingpong at the 1024-byte path MTU of a 1500-byte Ethernet:
# 8 KiB messages are FIRST, MIDDLE and LAST packets.
PINGPONG = datagram_cases.Case(
    "rc_pingpong",
    "ibv_rc_pingpong -d %(dev)s -g %(gid)s -c -s 8192 -n 100",
    "ibv_rc_pingpong -d %(dev)s -g %(gid)s -c -s 8192 -n 100 %(srv)s",
    18515, vhca_fabric.READY_TCP, datagram_cases.pingpong_ok)


def snmp_counters(namespace, group):
    """{counter: value} of one group of namespace's /proc/net/snmp ("Ip",
    "Udp"...: RFC 2011's and RFC 2013's counters)."""
    snmp = subprocess.run(["ip", "netns", "exec", namespace, "cat",
                           "/proc/net/snmp"], check=True, text=True,
                          stdout=subprocess.PIPE).stdout
    names, values = [line.split()[1:] for line in snmp.splitlines()
                     if line.startswith(group + ":")][:2]
    return {n: int(v) for n, v in zip(names, values)}


def ip_fragment_counters(namespace):
    """{counter: value} of IPv4 fragmentation and reassembly in namespace
    (ipFragCreates, ipReasmReqds, ...)."""
    return {n: v for n, v in snmp_counters(namespace, "Ip").items()
            if n.startswith(("Frag", "Reasm"))}


def tearDownModule():
    """Every fabric took its namespaces (and their veths, bridge and taps)
    down with it: none of this module's is left on the host."""
    prefixes = [vhca_fabric.namespace_prefix(
        os.path.join(vhca_fabric.DEFAULT_RUN_DIR, fabric_name(cls)))
        for cls in (NetnsVhcaPair, NetnsVhcaRxe, TapBridge)]
    left = [ns for ns in vhca_fabric.run_ip("netns", "list").split()
            if ns.startswith(tuple(prefixes))]
    if left:
        raise AssertionError("network namespaces left behind: %s"
                             % " ".join(left))


def fabric_name(cls):
    """The run directory name of a test class's fabric."""
    return "multihost-%s-%s" % (cls.link, "-".join(cls.nics))


class TwoHosts:
    """The tests every link runs, on a fabric of two guests booted once
    per class: guest 2 serves, guest 1 is the client."""

    link = None
    nics = ["vhca", "vhca"]

    @classmethod
    def setUpClass(cls):
        cls.fabric = vhca_fabric.start_for_tests(
            fabric_name(cls), link=cls.link, nics=cls.nics)

    @classmethod
    def tearDownClass(cls):
        cls.fabric.stop()

    def set_mtu(self, mtu):
        for guest in self.fabric.guests:
            guest.set_mtu(mtu)

    def setUp(self):
        self.set_mtu(1500)

    def ping_both_ways(self, mtu):
        """Full-sized IPv4 pings that may not be fragmented (-M do), and
        IPv6 pings, each guest to the other."""
        for src, dst in ((self.fabric[1], self.fabric[2]),
                         (self.fabric[2], self.fabric[1])):
            src.run("ping -c 3 -W 5 -M do -s %d %s" % (mtu - 28, dst.ipv4))
            src.run("ping -6 -c 3 -W 5 %s" % dst.ipv6)

    def run_case(self, case):
        datagram_cases.run_case(self, case, self.fabric[2], self.fabric[1])

    def underlay_fragments(self):
        """The IP fragment counters of the hosts the frames cross (none
        for a bridge)."""
        return {}

    def test_ping_mtu_1500(self):
        self.ping_both_ways(1500)

    def test_rc_pingpong_mtu_1500(self):
        self.run_case(PINGPONG)

    def test_rping(self):
        self.run_case(CASES["rping"])

    def test_jumbo_frames(self):
        """Guest MTU 9000: RoCE runs path MTU 4096, and the link carries
        every frame whole."""
        before = self.underlay_fragments()
        self.set_mtu(9000)
        try:
            self.ping_both_ways(9000)
            self.run_case(JUMBO_PINGPONG)
            self.run_case(JUMBO_WRITE_BW)
        finally:
            self.set_mtu(1500)
        after = self.underlay_fragments()
        grown = {"%s %s" % (host, name): after[host][name] - value
                 for host, counters in before.items()
                 for name, value in counters.items()
                 if after[host][name] != value}
        self.assertEqual(grown, {}, "the hosts fragmented the fabric's "
                         "datagrams: the veth MTU is below guest MTU + 42")


class NetnsHosts(TwoHosts):
    link = "netns"

    def underlay_fragments(self):
        return {ns: ip_fragment_counters(ns)
                for ns in self.fabric.link.namespaces}

    def test_link_is_the_veth(self):
        """Each QEMU's socket is bound to its namespace's veth address,
        sending to the other namespace's: no loopback in the path."""
        for guest in self.fabric.guests:
            with open(os.path.join(guest.dir, "qemu.cmdline")) as f:
                cmdline = f.read()
            mine, peer = ("10.99.0.%d" % i for i in
                          (guest.index, 3 - guest.index))
            self.assertRegex(cmdline, r"^ip netns exec vhca-\S+-host%d "
                             % guest.index)
            self.assertIn("local.host=%s,local.port=47910" % mine, cmdline)
            self.assertIn("remote.host=%s,remote.port=47910" % peer,
                          cmdline)
            self.assertNotIn("127.0.0.1", cmdline)
        for ns in self.fabric.link.namespaces:
            out = subprocess.run(["ip", "-n", ns, "-o", "link", "show",
                                  "vhca-uplink"], check=True, text=True,
                                 stdout=subprocess.PIPE).stdout
            self.assertRegex(out, r"\bmtu 9042\b")

    def test_frames_leave_in_runs(self):
        """At path MTU 4096 a 64 KiB WRITE is 16 frames, all but the first
        of one length.  QEMU's dgram netdev sends such a run as one
        message that the host's kernel cuts into datagrams (UDP_SEGMENT,
        qemu-patches/0004), so the client's host makes a fraction of the
        UDP sends that its vhca has frames (the kernel counts a message,
        not its segments, in OutDatagrams).  Without segmentation offload
        there is a send per frame; the peer reads them all either way
        (ib_write_bw checks its byte count)."""
        client = self.fabric[1]
        host = self.fabric.link.namespaces[client.index - 1]
        self.set_mtu(9000)
        try:
            sends = snmp_counters(host, "Udp")["OutDatagrams"]
            before = client.hw_counters("ethtool")
            self.run_case(JUMBO_WRITE_BW)
            sends = snmp_counters(host, "Udp")["OutDatagrams"] - sends
            after = client.hw_counters("ethtool")
        finally:
            self.set_mtu(1500)
        # RoCE frames, and the Ethernet ones (perftest's TCP set-up).
        roce = after["sent_pkts"] - before["sent_pkts"]
        frames = roce + after["tx_packets"] - before["tx_packets"]
        self.assertGreaterEqual(roce, 100 * 16,
                                "fewer RoCE frames than 100 messages of 16")
        self.assertLess(sends * 4, frames,
                        "%d UDP sends for %d frames: the dgram netdev did "
                        "not send runs of frames with UDP_SEGMENT"
                        % (sends, frames))


class NetnsVhcaPair(NetnsHosts, unittest.TestCase):
    pass


class NetnsVhcaRxe(NetnsHosts, unittest.TestCase):
    """Guest 1 a vhca (the client, the requester of ib_write_bw), guest 2
    Linux's soft-RoCE on virtio-net (the server)."""

    nics = ["vhca", "rxe"]


class TapBridge(TwoHosts, unittest.TestCase):
    link = "tap"

    def test_link_is_the_bridge(self):
        """Both taps are ports of the bridge, sized for jumbo frames."""
        ns = self.fabric.link.namespaces[0]
        out = subprocess.run(["ip", "-n", ns, "-o", "link", "show",
                              "master", "vhca-br0"], check=True, text=True,
                             stdout=subprocess.PIPE).stdout
        taps = re.findall(r"^\d+: (vhca-tap\d+): .*\bmtu (\d+)\b", out, re.M)
        self.assertEqual(sorted(taps), [("vhca-tap1", "9000"),
                                        ("vhca-tap2", "9000")], out)


if __name__ == "__main__":
    unittest.main()
