"""The InfiniBand port (-device vhca,link=ib): two guests cabled back to
back, brought up by opensm running in guest 1, as on real hardware.

The guests boot once for the module; setUpModule starts opensm in guest 1
and waits until both ports are ACTIVE.  Every program here is Debian's,
unmodified: opensm, infiniband-diags, libibverbs' examples, IPoIB.
"""

import re
import unittest

from host_common import vhca_fabric
import datagram_cases
import ib_capture
from ib_port import lid, pkey_index, port_attr, port_guid
import mw_scenario
import nvmeof

fabric = vhca_fabric.ModuleFabric("ib", pcap=True,
                                  nics=["vhca-ib", "vhca-ib"])


def wait_active(guest, timeout=120):
    """Wait in the guest until its port is ACTIVE (the SM's last step)."""
    guest.run("for i in $(seq %d); do grep -q ACTIVE "
              "/sys/class/infiniband/vhca0/ports/1/state && exit 0; "
              "sleep 0.5; done; cat /sys/class/infiniband/vhca0/ports/1/"
              "state; exit 1" % (timeout * 2), timeout=timeout + 30)


# opensm's partition file (opensm -P): the default partition, every port
# a full member, IPoIB's broadcast group in it; Partitions adds to it.
PARTITIONS = "/tmp/partitions.conf"
DEFAULT_PARTITION = "Default=0x7fff, ipoib : ALL=full ;"


def set_partitions(lines):
    """Write opensm's partition file and have it re-read (SIGHUP: opensm
    sweeps again and programs the P_Key tables anew)."""
    fabric[1].run("printf '%%s\\n' %s > %s && kill -HUP $(pidof opensm)"
                  % (" ".join("'%s'" % l for l in [DEFAULT_PARTITION] + lines),
                     PARTITIONS))


def setUpModule():
    fabric.start()
    # opensm in guest 1 (a daemon, its log in /tmp, each line flushed:
    # -d 2): it sweeps the subnet through QP0, assigns LIDs and moves
    # both ports INIT -> ARMED -> ACTIVE.
    fabric[1].run("echo '%s' > %s && opensm -B -d 2 -P %s "
                  "-f /tmp/opensm.log > /dev/null 2>&1"
                  % (DEFAULT_PARTITION, PARTITIONS, PARTITIONS))
    for g in (fabric[1], fabric[2]):
        wait_active(g)


def tearDownModule():
    fabric.stop()


class SubnetUp(unittest.TestCase):
    def test_ports_active_with_lids(self):
        lids = set()
        for g in (fabric[1], fabric[2]):
            out = g.run("ibstat vhca0")
            self.assertRegex(out, r"State: Active")
            self.assertRegex(out, r"Physical state: LinkUp")
            self.assertRegex(out, r"Link layer: InfiniBand")
            self.assertNotEqual(lid(g), 0)
            lids.add(lid(g))
        self.assertEqual(len(lids), 2, "the SM gave both ports one LID")

    def test_sm_lid_is_guest1(self):
        sm = lid(fabric[1])
        for g in (fabric[1], fabric[2]):
            self.assertEqual(int(port_attr(g, "sm_lid"), 16), sm)

    def test_devinfo(self):
        out = fabric[2].run("ibv_devinfo -v -d vhca0")
        self.assertRegex(out, r"link_layer:\s+InfiniBand")
        self.assertRegex(out, r"state:\s+PORT_ACTIVE")
        self.assertRegex(out, r"sm_lid:\s+%d\b" % lid(fabric[1]))

    def test_sminfo(self):
        out = fabric[2].run("sminfo")
        self.assertRegex(out, r"sm lid %d .*SMINFO_MASTER" % lid(fabric[1]))


class HostView(unittest.TestCase):
    def test_info_shows_the_port(self):
        text = fabric[2].qmp("x-query-vhca")["human-readable-text"]
        self.assertRegex(text, r"ib-port state ACTIVE lid 0x%x lmc 0 "
                         r"sm-lid 0x%x" % (lid(fabric[2]), lid(fabric[1])))
        self.assertRegex(text, r"pkeys 0:0xffff")


class SmpQueries(unittest.TestCase):
    def test_nodeinfo_of_peer(self):
        out = fabric[1].run("smpquery nodeinfo %d" % lid(fabric[2]))
        self.assertRegex(out, r"NodeType:\.*Channel Adapter")
        self.assertRegex(out, r"NumPorts:\.*1")

    def test_portinfo_of_peer(self):
        out = fabric[1].run("smpquery portinfo %d 1" % lid(fabric[2]))
        self.assertRegex(out, r"LinkState:\.*Active")
        self.assertRegex(out, r"Lid:\.*%d\b" % lid(fabric[2]))

    def test_pkeys(self):
        out = fabric[1].run("smpquery pkeys %d 1" % lid(fabric[2]))
        self.assertRegex(out, r"0xffff")

    def test_ibnetdiscover_two_hcas(self):
        out = fabric[1].run("ibnetdiscover")
        self.assertEqual(len(re.findall(r"^Ca\s", out, re.M)), 2, out)

    def test_perfquery_counts_traffic(self):
        def xmit_pkts():
            out = fabric[1].run("perfquery %d 1" % lid(fabric[2]))
            return int(re.search(r"PortXmitPkts:\.*(\d+)", out).group(1))

        before = xmit_pkts()
        fabric[2].run("ping -c 3 -W 5 %s" % fabric[1].ipv4, timeout=60)
        self.assertGreater(xmit_pkts(), before)


class IPoIB(unittest.TestCase):
    def test_ping_both_ways(self):
        for src, dst in ((fabric[1], fabric[2]), (fabric[2], fabric[1])):
            out = src.run("ping -c 3 -W 5 %s" % dst.ipv4, timeout=60)
            self.assertRegex(out, r"3 packets transmitted, 3 received")


class VerbsByLid(unittest.TestCase):
    """libibverbs' examples without -g: addressed by LID, no GRH.  They
    exchange their addresses over TCP, here over IPoIB."""

    def pingpong(self, program, extra="", port=18515):
        status, client_out, server_out = vhca_fabric.client_server(
            fabric[2], fabric[1],
            "%s -d vhca0 -p %d %s" % (program, port, extra),
            "%s -d vhca0 -p %d %s %s" % (program, port, extra,
                                         fabric[2].ipv4), port, timeout=180)
        self.assertEqual(status, 0, client_out + server_out)
        for side in (client_out, server_out):
            self.assertRegex(side, r"iters in [\d.]+ seconds")

    def test_rc_pingpong(self):
        self.pingpong("ibv_rc_pingpong", "-n 100 -c")

    def test_uc_pingpong(self):
        self.pingpong("ibv_uc_pingpong", "-n 100")

    def test_ud_pingpong(self):
        self.pingpong("ibv_ud_pingpong", "-n 100 -s 1024")

    def test_srq_pingpong(self):
        self.pingpong("ibv_srq_pingpong", "-n 100")


def wait_pkey(guest, pkey, present, timeout=60):
    """Wait in the guest until its P_Key table has (or lacks) @pkey."""
    guest.run("for i in $(seq %d); do "
              "if grep -qx 0x%04x /sys/class/infiniband/vhca0/ports/1/pkeys/*;"
              " then [ %d = 1 ] && exit 0; else [ %d = 0 ] && exit 0; fi; "
              "sleep 0.5; done; exit 1"
              % (timeout * 2, pkey, present, present), timeout=timeout + 30)


class Partitions(unittest.TestCase):
    """opensm's partitions.conf puts guest 1 in partition 0x8001 and
    guest 2 not: a QP of guest 1 in that partition cannot reach guest 2,
    whose port drops the packets and counts them (PortRcvConstraintErrors,
    drop_pkey), and the IPoIB child interfaces of 0x8001 (ib0.8001) do not
    reach each other either; with guest 2 added to the partition the same
    programs run and the child interfaces ping.  The default partition
    (0x7fff) stays for IPoIB and the other tests."""

    PKEY = 0x8001
    CHILD = "ib0.8001"

    def send_bw(self, client_index, server_index, expect_ok):
        cmd = "ib_send_bw -d vhca0 -F -s 256 -n 20 --pkey_index=%d"
        status, cli, srv = vhca_fabric.client_server(
            fabric[2], fabric[1], cmd % server_index,
            (cmd % client_index) + " " + fabric[2].ipv4, 18515, timeout=60)
        if expect_ok:
            self.assertEqual(status, 0, cli + srv)
        else:
            self.assertNotEqual(status, 0, cli + srv)

    def constraint_errors(self):
        out = fabric[1].run("perfquery %d 1" % lid(fabric[2]))
        return int(re.search(r"PortRcvConstraintErrors:\.*(\d+)",
                             out).group(1))

    def add_children(self):
        """ib0.8001 in both guests (IPoIB's child interface of a
        partition), 192.168.81.<guest>/24."""
        for i in (1, 2):
            fabric[i].run("echo 0x%04x > /sys/class/net/ib0/create_child && "
                          "ip addr add 192.168.81.%d/24 dev %s && "
                          "ip link set %s up" % (self.PKEY, i, self.CHILD,
                                                 self.CHILD))

    def remove_children(self):
        for i in (1, 2):
            fabric[i].run("[ -e /sys/class/net/%s ] && echo 0x%04x > "
                          "/sys/class/net/ib0/delete_child; true"
                          % (self.CHILD, self.PKEY))

    def child_ping(self, expect_ok):
        """Guest 1's child pings guest 2's.  A child whose port lacks the
        P_Key has no carrier (ipoib_ib_dev_up); with it, the first pings
        may go while IPoIB joins the partition's broadcast group, so up
        to 20 tries of one ping where it must get through, 3 where it
        must not (each waits for ARP: the 20 would take a minute)."""
        status, out = fabric[1].exec(
            "for i in $(seq %d); do ping -c 1 -W 2 -I %s 192.168.81.2 "
            "&& exit 0; done; exit 1" % (20 if expect_ok else 3,
                                        self.CHILD), timeout=120)
        if expect_ok:
            self.assertEqual(status, 0, out)
        else:
            self.assertNotEqual(status, 0, out)

    def test_partition_keeps_guests_apart_then_joins_them(self):
        guid1 = port_guid(fabric[1])
        guid2 = port_guid(fabric[2])
        # The kernel hears of the SM's change as a P_Key change event
        # (the device's PORT_MGMT event, IBTA 14.2.5.7).
        fabric[1].run("(stdbuf -oL ibv_asyncwatch -d vhca0 > /tmp/aw.log "
                      "2>&1 &); for i in $(seq 100); do "
                      "grep -q 'async event FD' /tmp/aw.log && exit 0; "
                      "sleep 0.1; done; cat /tmp/aw.log; exit 1")
        try:
            self.add_children()
            set_partitions(["P1=0x%04x, ipoib : 0x%s=full ;"
                            % (self.PKEY, guid1)])
            wait_pkey(fabric[1], self.PKEY, True)
            fabric[1].run("for i in $(seq 100); do grep -q PKEY_CHANGE "
                          "/tmp/aw.log && exit 0; sleep 0.2; done; "
                          "cat /tmp/aw.log; exit 1", timeout=60)
            wait_pkey(fabric[2], self.PKEY, False)
            before = self.constraint_errors()
            # Guest 1 sends in 0x8001; guest 2's QP is in the default
            # partition and its port has no 0x8001.
            self.send_bw(pkey_index(fabric[1], self.PKEY), 0, False)
            self.assertGreater(self.constraint_errors(), before)
            self.child_ping(False)

            set_partitions(["P1=0x%04x, ipoib : 0x%s=full, 0x%s=full ;"
                            % (self.PKEY, guid1, guid2)])
            wait_pkey(fabric[2], self.PKEY, True)
            self.send_bw(pkey_index(fabric[1], self.PKEY),
                         pkey_index(fabric[2], self.PKEY), True)
            self.child_ping(True)
        finally:
            fabric[1].run("pkill ibv_asyncwatch; true")
            self.remove_children()
            set_partitions([])
            wait_pkey(fabric[2], self.PKEY, False)


class SmaTraps(unittest.TestCase):
    """The SMA's trap 144 (IBTA 14.2.5.1): a new node description in
    guest 2 reaches opensm in guest 1 at once, through the device, the
    driver's trap forwarding and QP0, and opensm reads it again; the SA's
    NodeRecord (saquery) shows it.  opensm's light sweeps re-read only
    unknown descriptions (state_mgr_get_node_desc), so without the trap
    the new one would wait for a heavy sweep."""

    def test_node_description_change_reaches_the_sm(self):
        desc = "vhca-trap-test guest2"
        old = fabric[2].run("cat /sys/class/infiniband/vhca0/node_desc"
                            ).strip()
        traps = "/sys/class/infiniband/vhca0/ports/1/hw_counters/sma_traps"
        before = int(fabric[2].run("cat %s" % traps))
        logged = int(fabric[1].run(
            "grep -c 'Trap 144 Node description update' /tmp/opensm.log; "
            "true").strip() or 0)
        try:
            fabric[2].run("echo -n '%s' > "
                          "/sys/class/infiniband/vhca0/node_desc" % desc)
            self.assertGreater(int(fabric[2].run("cat %s" % traps)), before)
            fabric[1].run(
                "for i in $(seq 100); do [ $(grep -c 'Trap 144 Node "
                "description update' /tmp/opensm.log) -gt %d ] && exit 0; "
                "sleep 0.2; done; tail -20 /tmp/opensm.log; exit 1"
                % logged, timeout=60)
            fabric[1].run("for i in $(seq 100); do saquery NR | grep -q "
                          "'%s' && exit 0; sleep 0.2; done; saquery NR; "
                          "exit 1" % desc, timeout=60)
        finally:
            fabric[2].run("echo -n '%s' > "
                          "/sys/class/infiniband/vhca0/node_desc" % old)


class SubnetAdministration(unittest.TestCase):
    """opensm's SA, read with saquery; ibstatus's view of the ports."""

    def test_saquery_node_and_path_records(self):
        out = fabric[2].run("saquery NR")
        self.assertEqual(len(re.findall(r"^NodeRecord", out, re.M)), 2, out)
        # Every path record opensm computed: guest 2 to guest 1 among
        # them, in the default partition, at MTU 4096 (0x85: exactly 5).
        out = fabric[2].run("saquery PR")
        self.assertRegex(out, r"dlid\.+%d\n\s+slid\.+%d\n"
                         % (lid(fabric[1]), lid(fabric[2])))
        self.assertRegex(out, r"pkey\.+0xFFFF")
        self.assertRegex(out, r"mtu\.+0x85")

    def test_ibstatus(self):
        out = fabric[2].run("ibstatus vhca0")
        self.assertRegex(out, r"state:\s+4: ACTIVE")
        self.assertRegex(out, r"phys state:\s+5: LinkUp")
        self.assertRegex(out, r"link_layer:\s+InfiniBand")
        self.assertRegex(out, r"sm lid:\s+0x%x\b" % lid(fabric[1]))


class PerftestByLid(unittest.TestCase):
    """perftest without -x: LID addressed, no GRH."""

    def perftest(self, tool, extra, size, iters):
        cmd = "%s -d vhca0 -F %s" % (tool, extra)
        status, cli, srv = vhca_fabric.client_server(
            fabric[2], fabric[1], cmd, cmd + " " + fabric[2].ipv4, 18515,
            timeout=300)
        self.assertEqual(status, 0, cli + srv)
        self.assertNotRegex(cli + srv, datagram_cases.FAILURE)
        self.assertRegex(cli, re.compile(datagram_cases.PERFTEST_LINE
                                         % (size, iters), re.M))

    def test_write_bw(self):
        self.perftest("ib_write_bw", "-s 65536 -n 100", 65536, 100)

    def test_read_bw(self):
        self.perftest("ib_read_bw", "-s 65536 -n 100", 65536, 100)

    def test_send_bw(self):
        self.perftest("ib_send_bw", "-s 4096 -n 200", 4096, 200)

    def test_atomic_bw(self):
        self.perftest("ib_atomic_bw", "-n 200", 8, 200)

    def test_send_lat(self):
        self.perftest("ib_send_lat", "-s 64 -n 200", 64, 200)

    def test_send_bw_ud(self):
        self.perftest("ib_send_bw", "-c UD -s 512 -n 200", 512, 200)


class RdmaCmOverIPoIB(unittest.TestCase):
    """rdma_cm resolves the guests' IPoIB addresses to GIDs and asks
    opensm's SA for the path records: every rdma_cm case of the RoCE
    suite (datagram_cases.py), unchanged, and mckey's multicast group."""

    def test_rdma_cm_programs(self):
        cases = [c for c in datagram_cases.CASES
                 if "%(gid" not in c.server + c.client]
        self.assertGreaterEqual(len(cases), 8)
        for case in cases:
            with self.subTest(case.name):
                datagram_cases.run_case(self, case, fabric[2], fabric[1])

    def test_mckey(self):
        datagram_cases.mckey(self, fabric[1], fabric[2])


class Diagnostics(unittest.TestCase):
    def test_ibtracert(self):
        out = fabric[1].run("ibtracert %d %d" % (lid(fabric[1]),
                                                 lid(fabric[2])))
        self.assertRegex(out, r"From ca .* lid %d" % lid(fabric[1]))
        self.assertRegex(out, r"To ca .* lid %d" % lid(fabric[2]))

    def test_ibping(self):
        fabric[2].run("(ibping -S > /tmp/ibping.log 2>&1 &); true")
        try:
            out = fabric[1].run("for i in $(seq 50); do "
                                "ibping -c 3 -L %d && exit 0; sleep 0.2; "
                                "done; exit 1" % lid(fabric[2]), timeout=90)
        finally:
            fabric[2].run("pkill ibping; true")
        self.assertRegex(out, r"3 packets transmitted, 3 received")


class IPoIBConnectedMode(unittest.TestCase):
    """IPoIB's connected mode: an RC QP per peer, set up by the CM over
    QP1.  Switching, IPoIB raises the MTU to what the device's SRQ can
    take (ipoib_cm_max_mtu: its receive SGEs of a page each), well above
    datagram mode's 2044 or 4092; a ping that fills it goes unfragmented."""

    def test_connected_mode_ping(self):
        try:
            for g in (fabric[1], fabric[2]):
                g.run("echo connected > /sys/class/net/ib0/mode")
            mtu = int(fabric[1].run("cat /sys/class/net/ib0/mtu"))
            self.assertGreater(mtu, 4092)
            out = fabric[1].run("ping -c 3 -W 5 -M do -s %d %s"
                                % (mtu - 28, fabric[2].ipv4), timeout=90)
            self.assertRegex(out, r"3 packets transmitted, 3 received")
        finally:
            for g in (fabric[1], fabric[2]):
                g.run("echo datagram > /sys/class/net/ib0/mode; true")


class MemoryWindowsByLid(mw_scenario.WindowScenario, unittest.TestCase):
    """Memory windows of type 1 and 2 over an RC connection addressed by
    LID: bound, used by the peer's WRITE, READ and atomic, then unbound
    or invalidated (LOCAL_INV, SEND with Invalidate) and refused."""

    def guests(self):
        return (fabric[1], fabric[2])

    def test_windows(self):
        self.windows(fabric[1], fabric[2])


class NvmeOverIB(unittest.TestCase):
    """NVMe over RDMA on the InfiniBand port: nvmet-rdma in guest 2,
    nvme-rdma in guest 1 reaching it by its IPoIB address; fast
    registration and remote invalidation by LID-routed RC."""

    def test_verified_round_trip(self):
        nvmeof.export(fabric[2])
        dev = nvmeof.connect(fabric[1], fabric[2])
        try:
            out = fabric[1].run(nvmeof.VERIFY % {"dev": dev}, timeout=900)
        finally:
            left = nvmeof.disconnect(fabric[1], fabric[2])
        self.assertIn("dd round trip verified", out)
        self.assertIn("fio verify passed", out)
        self.assertNotIn(nvmeof.nqn(fabric[2]), left)


class XrcByLid(unittest.TestCase):
    def test_xsrq_pingpong(self):
        status, cli, srv = vhca_fabric.client_server(
            fabric[2], fabric[1], "ibv_xsrq_pingpong -d vhca0 -n 50",
            "ibv_xsrq_pingpong -d vhca0 -n 50 " + fabric[2].ipv4, 18515,
            timeout=180)
        self.assertEqual(status, 0, cli + srv)


class WireCapture(unittest.TestCase):
    """Runs last (class name order): guest 1's capture then holds the
    SM's sweep, IPoIB and every verbs test above."""

    def test_every_packet_is_well_formed(self):
        fabric[1].stop_capture()
        count, problems = ib_capture.check_capture(fabric[1].pcap)
        self.assertEqual(problems, [])
        decoded = ib_capture.tshark_decode(fabric[1].pcap)
        lines = decoded.strip().splitlines()
        self.assertEqual([l for l in lines if "Malformed" in l], [])
        self.assertEqual(len(lines), count)
        # The SM's directed-route SMPs, IPoIB's datagrams, RC's sends.
        for what in ("SubnGet(NodeInfo)", "UD Send Only", "RC Send"):
            self.assertTrue(any(what in line for line in lines),
                            "no %r among %d packets" % (what, count))


if __name__ == "__main__":
    unittest.main()
