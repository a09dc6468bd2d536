"""RoCE over an 802.1Q VLAN between two vhca guests (issue 29, traffic
classes; docs/specs/vhca.rst, "RoCE over a VLAN").

Each guest gets eth0.100 above the vhca netdev.  The kernel's RoCE GID
cache adds the VLAN interface's addresses to the vhca's GID table by
itself, and the driver passes their VLAN to the device (ADD_GID): what is
sent from those GIDs is tagged with VID 100 and the SL as the priority
(PCP), what arrives for them must carry the tag.  The programs are the
unmodified ones: ping over the VLAN interface (the Ethernet datapath),
ibv_rc_pingpong and ibv_ud_pingpong with the VLAN GID's index and an SL,
and ucmatose (rdma_cm, RC) with a type of service, which the kernel turns
into the SL through the VLAN device's egress map (iboe_tos_to_sl()).

A capture of the fabric (QEMU's filter-dump on guest 1's netdev) is read
by tshark on the host: every RoCE frame must be tagged with the VID and
the expected PCP, nothing may be malformed, and every ICRC must be right.

The fabric is the plain two-vhca one, shared with the other modules that
ask for it: the VLAN interfaces go away again at the end.
"""

import os
import shutil
import subprocess
import unittest

from host_common import ROCE_UDP_PORT, vhca_fabric
import roce_capture

fabric = vhca_fabric.ModuleFabric("vlan")
setUpModule, tearDownModule = fabric.start, fabric.stop

VID = 100
# rdma_cm's ToS 0x10 (IPTOS_LOWDELAY) is skb priority 6 (rt_tos2priority(),
# TC_PRIO_INTERACTIVE); the VLAN device maps priority 6 to PCP 5.
TOS = 0x10
EGRESS_MAP = "6:5"
TOS_PCP = 5


def vlan_ipv4(i):
    return "198.51.100.%d" % i


def vlan_if(guest):
    return "%s.%d" % (guest.ifname(), VID)


def tshark_rows(path, display_filter, fields):
    """tshark's values of fields for each packet of the capture that
    matches display_filter, one tuple of strings per packet."""
    tshark = shutil.which("tshark")
    if not tshark:
        raise FileNotFoundError("tshark is not installed "
                                "(scripts/setup-host.sh installs it)")
    args = [tshark, "-r", path, "-Y", display_filter, "-T", "fields",
            "-E", "separator=|"]
    for field in fields:
        args += ["-e", field]
    out = subprocess.run(args, check=True, capture_output=True, text=True,
                         timeout=120).stdout
    return [tuple(line.split("|")) for line in out.splitlines() if line]


class RoceOverVlan(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.indexes = {}
        for i in (1, 2):
            g = fabric[i]
            # No udev in the guest: the VLAN driver is loaded by hand.
            g.run("modprobe 8021q && "
                  "ip link add link %s name %s type vlan id %d "
                  "egress-qos-map %s && ip addr add %s/24 dev %s && "
                  "ip link set %s up"
                  % (g.ifname(), vlan_if(g), VID, EGRESS_MAP, vlan_ipv4(i),
                     vlan_if(g), vlan_if(g)))
        for i in (1, 2):
            g = fabric[i]
            gid = vhca_fabric.ipv4_gid(vlan_ipv4(i))
            # The GID cache adds the address's GID from a work queue.
            g.run("for i in $(seq 300); do ibv_devinfo -v -d %s | "
                  "grep -q '%s, RoCE v2' && exit 0; sleep 0.1; done; "
                  "ibv_devinfo -v -d %s; exit 1" % (g.rdma_dev, gid,
                                                    g.rdma_dev), 60)
            cls.indexes[i] = g.gid_index(gid)

    @classmethod
    def tearDownClass(cls):
        for i in (1, 2):
            fabric[i].exec("ip link del %s" % vlan_if(fabric[i]))

    def counters(self, i):
        return fabric[i].hw_counters("ethtool")

    def capture(self, name):
        """Start capturing guest 1's fabric traffic; the pcap's path."""
        path = os.path.join(fabric[1].dir, "vlan-%s.pcap" % name)
        if os.path.exists(path):
            os.unlink(path)
        fabric[1].qmp("object-add", **{"qom-type": "filter-dump",
                                       "id": "vlan", "netdev": "fabric",
                                       "file": path})
        self.addCleanup(fabric[1].qmp, "object-del", id="vlan")
        return path

    def end_capture(self):
        fabric[1].qmp("object-del", id="vlan")
        self._cleanups.pop()

    def check_roce(self, path, pcp, least):
        """Every RoCE frame of the capture between the VLAN addresses is
        tagged VID 100 with priority pcp (at least `least` of them, both
        ways), well formed, its ICRC right; none goes untagged."""
        rows = tshark_rows(path, "udp.dstport == %d" % ROCE_UDP_PORT,
                           ("vlan.id", "vlan.priority", "ip.src", "ip.dst",
                            "infiniband.bth.opcode"))
        self.assertGreaterEqual(len(rows), least, rows)
        seen = set()
        for vid, prio, src, dst, opcode in rows:
            self.assertEqual((vid, prio), (str(VID), str(pcp)),
                             (vid, prio, src, dst, opcode))
            self.assertIn(src, (vlan_ipv4(1), vlan_ipv4(2)))
            self.assertNotEqual(opcode, "", "not dissected as RoCE")
            seen.add(src)
        self.assertEqual(seen, {vlan_ipv4(1), vlan_ipv4(2)})
        self.assertEqual(tshark_rows(path, "_ws.malformed", ("frame.number",)),
                         [])
        total, bad = roce_capture.check_capture(path)
        self.assertEqual((total, bad), (len(rows), 0))

    def test_gid_entries_are_the_vlan_interfaces(self):
        for i in (1, 2):
            ndev = fabric[i].run(
                "cat /sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/%d"
                % (fabric[i].rdma_dev, self.indexes[i])).strip()
            self.assertEqual(ndev, vlan_if(fabric[i]))

    def test_ping_over_the_vlan(self):
        path = self.capture("ping")
        out = fabric[1].run("ping -c 3 -W 5 %s" % vlan_ipv4(2), timeout=60)
        self.end_capture()
        self.assertIn("3 received", out)
        rows = tshark_rows(path, "icmp", ("vlan.id", "ip.src"))
        self.assertGreaterEqual(len(rows), 6, rows)
        self.assertEqual({vid for vid, _ in rows}, {str(VID)}, rows)

    def pingpong(self, program, sl, size):
        """ibv_<program>_pingpong between the VLAN GIDs at SL sl: every
        RoCE frame, both ways, tagged VID 100 with PCP sl; none dropped
        for its VLAN."""
        before = [self.counters(i)["drop_vlan"] for i in (1, 2)]
        path = self.capture(program)
        cmd = "ibv_%s_pingpong -d vhca0 -g %%d -l %d -s %d -n 20" % (
            program, sl, size)
        status, cli, srv = vhca_fabric.client_server(
            fabric[2], fabric[1], cmd % self.indexes[2],
            (cmd % self.indexes[1]) + " " + vlan_ipv4(2), 18515)
        self.end_capture()
        self.assertEqual(status, 0, cli + srv)
        self.assertRegex(cli, r"\d+ iters in [\d.]+ seconds")
        self.check_roce(path, sl, 40)
        self.assertEqual([self.counters(i)["drop_vlan"] for i in (1, 2)],
                         before)

    def test_rc_pingpong_tagged_with_its_sl(self):
        self.pingpong("rc", 3, 1024)

    def test_ud_pingpong_tagged_with_its_sl(self):
        self.pingpong("ud", 2, 512)

    def test_rdma_cm_tos_becomes_the_priority(self):
        """ucmatose with ToS 0x10: the kernel's rdma_cm makes the SL from
        it through eth0.100's egress map (5), the passive side takes it
        from the CM REQ and answers the CM from the VLAN's GID (the UD
        completion carries the tag); the IP header carries the ToS."""
        path = self.capture("cm")
        status, cli, srv = vhca_fabric.client_server(
            fabric[2], fabric[1], "ucmatose -b %s" % vlan_ipv4(2),
            "ucmatose -s %s -t %d" % (vlan_ipv4(2), TOS), 7471,
            ready=vhca_fabric.READY_RDMA_CM)
        self.end_capture()
        self.assertEqual(status, 0, cli + srv)
        for out in (cli, srv):
            self.assertIn("test complete", out)
        self.check_roce(path, TOS_PCP, 10)
        # The data's traffic class is the ToS (the CM's MADs go on QP1).
        tos = tshark_rows(path, "udp.dstport == %d && "
                          "infiniband.bth.destqp != 1" % ROCE_UDP_PORT,
                          ("ip.dsfield",))
        self.assertGreaterEqual(len(tos), 10)
        self.assertEqual({t for t, in tos}, {"0x10"}, tos)


if __name__ == "__main__":
    unittest.main()
