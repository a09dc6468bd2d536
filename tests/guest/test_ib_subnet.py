"""An InfiniBand subnet: four guests (-device vhca,link=ib) on two
vhca-switches (switch/) cabled to each other - guests 1, 2 and 3 on
switch 1's ports 1 to 3, guest 4 on switch 2's port 1, switch 1's port
4 to switch 2's port 3 - brought up by opensm in guest 1.  opensm
discovers the switches through directed route SMPs, two hops deep,
assigns the LIDs, writes both switches' forwarding tables and brings
every port ACTIVE; then Debian's programs, unmodified, run between
every pair of guests through the tables it wrote, through one switch
(1-2, 1-3, 2-3) or both (each with 4).  Issue 28 asks for its scenarios
with three guests on one switch and with four on two cabled switches:
this one subnet is both (guests 1-3 are three guests on one switch, and
the partitions keep two of them apart there), booted once.

The guests boot once for the module.  The classes run in name order;
Unplug runs last (it stops guest 4).
"""

import itertools
import re
import unittest

from host_common import vhca_fabric
from ib_port import lid, pkey_index, port_attr, port_guid

fabric = vhca_fabric.ModuleFabric("ib-subnet", count=4, switches=(3, 1),
                                  nics=["vhca-ib"] * 4)
GUESTS = (1, 2, 3, 4)
# Where each guest is cabled: (switch, port); the switches' link.
CABLE = {1: (1, 1), 2: (1, 2), 3: (1, 3), 4: (2, 1)}
INTER_SWITCH = ((1, 4), (2, 3))
SWITCH_GUID = vhca_fabric.SWITCH_GUID
# opensm's partition file: the default partition, every port a full
# member, IPoIB's broadcast group in it; Partitions adds to it.
PARTITIONS = "/tmp/partitions.conf"
DEFAULT_PARTITION = "Default=0x7fff, ipoib : ALL=full ;"
OPENSM = ("opensm -B -d 2 -P %s -f /tmp/opensm.log > /dev/null 2>&1"
          % PARTITIONS)


def wait_for(guest, shell_test, timeout=120):
    """Poll a shell test in the guest until it holds, or fail with what
    the last try printed."""
    status, out = guest.exec("for i in $(seq %d); do %s && exit 0; "
                             "sleep 0.5; done; %s; exit 1"
                             % (timeout * 2, shell_test, shell_test),
                             timeout + 30)
    if status:
        raise AssertionError("guest%d: '%s' never held:\n%s"
                             % (guest.index, shell_test, out))


def wait_active(guest):
    wait_for(guest, "grep -q ACTIVE /sys/class/infiniband/vhca0/ports/1/"
             "state")


def switch_info(switch=1):
    return fabric.link.switch_command("info", switch)


def switch_lid(switch):
    return int(re.search(r" lid 0x(\w+) ", switch_info(switch)).group(1),
               16)


def set_partitions(lines):
    """Write opensm's partition file in every guest (the SM may move) and
    have the running opensm re-read it (SIGHUP: it sweeps again and
    programs the P_Key tables of the CAs and of the switch's ports)."""
    text = " ".join("'%s'" % l for l in [DEFAULT_PARTITION] + lines)
    for i in GUESTS:
        fabric[i].run("printf '%%s\\n' %s > %s; "
                      "kill -HUP $(pidof opensm) 2>/dev/null; true"
                      % (text, PARTITIONS))


def has_pkey(guest, pkey, present=True):
    wait_for(guest, "%sgrep -qx 0x%04x /sys/class/infiniband/vhca0/ports/1/"
             "pkeys/*" % ("" if present else "! ", pkey))


def setUpModule():
    fabric.start()
    set_partitions([])
    fabric[1].run(OPENSM)
    for i in GUESTS:
        wait_active(fabric[i])


def tearDownModule():
    fabric.stop()


class IPoIB(unittest.TestCase):
    def test_every_pair_pings(self):
        for a, b in itertools.combinations(GUESTS, 2):
            out = fabric[a].run("ping -c 2 -W 5 %s" % fabric[b].ipv4,
                                timeout=60)
            self.assertRegex(out, r"2 packets transmitted, 2 received")

    def test_broadcast_reaches_every_member(self):
        """IPoIB's broadcast group is an IB multicast group: each switch
        copies a packet to every port of its MFT entry, the other switch
        included."""
        others = GUESTS[1:]
        for i in others:
            fabric[i].run("sysctl -qw net.ipv4.icmp_echo_ignore_broadcasts=0")
        try:
            out = fabric[1].run("ping -b -c 3 -W 5 192.0.2.255 2>&1",
                                timeout=60)
            for i in others:
                self.assertIn("from %s" % fabric[i].ipv4, out)
        finally:
            for i in others:
                fabric[i].run("sysctl -qw "
                              "net.ipv4.icmp_echo_ignore_broadcasts=1")
        # The broadcast group's entry: guests and the inter-switch port.
        self.assertRegex(switch_info(1), r"mft 0xc000 ports 0x1e")
        self.assertRegex(switch_info(2), r"mft 0xc000 ports 0xa")


class Partitions(unittest.TestCase):
    """opensm's partitions.conf puts guest A (1) in partition 0x8001,
    guest B (2) in 0x8002 and guest C (3) in both, three guests on one
    switch.  A's packets in 0x8001 never reach B: switch 1's port to B,
    whose P_Key table opensm wrote without 0x8001, refuses them
    (partition enforcement, counted); C talks to both, by QPs and by IPoIB
    child interfaces."""

    A, B, C = 1, 2, 3
    CHILDREN = {A: [(0x8001, "192.168.81.1")],
                B: [(0x8002, "192.168.82.2")],
                C: [(0x8001, "192.168.81.3"), (0x8002, "192.168.82.3")]}

    def send_bw(self, client, server, pkey, expect_ok):
        cmd = "ib_send_bw -d vhca0 -F -s 256 -n 20 --pkey_index=%d"
        server_index = pkey_index(fabric[server], pkey) if expect_ok else 0
        self.assertIsNotNone(pkey_index(fabric[client], pkey))
        status, cli, srv = vhca_fabric.client_server(
            fabric[server], fabric[client], cmd % server_index,
            (cmd % pkey_index(fabric[client], pkey)) + " " +
            fabric[server].ipv4, 18515, timeout=60)
        if expect_ok:
            self.assertEqual(status, 0, cli + srv)
        else:
            self.assertNotEqual(status, 0, cli + srv)

    def child_ping(self, src, address):
        return fabric[src].exec(
            "for i in $(seq 20); do ping -c 1 -W 2 %s && exit 0; done; exit 1"
            % address, 120)

    def xmit_constraint(self):
        switch, port = CABLE[self.B]
        return int(re.search(r"port %d \S+ .*xmit-constraint (\d+)" % port,
                             switch_info(switch)).group(1))

    def test_a_and_b_apart_c_with_both(self):
        a, b, c = (port_guid(fabric[i]) for i in (self.A, self.B, self.C))
        try:
            set_partitions(["A=0x8001, ipoib : 0x%s=full, 0x%s=full ;"
                            % (a, c),
                            "B=0x8002, ipoib : 0x%s=full, 0x%s=full ;"
                            % (b, c)])
            for i, children in self.CHILDREN.items():
                for pkey, _ in children:
                    has_pkey(fabric[i], pkey)
            has_pkey(fabric[self.B], 0x8001, present=False)
            for i, children in self.CHILDREN.items():
                for pkey, address in children:
                    fabric[i].run(
                        "echo 0x%04x > /sys/class/net/ib0/create_child && "
                        "ip addr add %s/24 dev ib0.%04x && "
                        "ip link set ib0.%04x up" % (pkey, address, pkey,
                                                     pkey))
            # C reaches A and B, each in their partition, and they C.
            for src, address in ((self.C, "192.168.81.1"),
                                 (self.C, "192.168.82.2"),
                                 (self.A, "192.168.81.3"),
                                 (self.B, "192.168.82.3")):
                status, out = self.child_ping(src, address)
                self.assertEqual(status, 0, out)
            self.send_bw(self.A, self.C, 0x8001, True)
            self.send_bw(self.B, self.C, 0x8002, True)
            # A's QP in 0x8001 towards B: switch 1 drops it at B's port.
            before = self.xmit_constraint()
            self.send_bw(self.A, self.B, 0x8001, False)
            self.assertGreater(self.xmit_constraint(), before)
            switch, port = CABLE[self.B]
            out = fabric[1].run("perfquery %d %d" % (switch_lid(switch),
                                                     port))
            self.assertRegex(out, r"PortXmitConstraintErrors:\.*[1-9]")
        finally:
            for i, children in self.CHILDREN.items():
                for pkey, _ in children:
                    fabric[i].run("[ -e /sys/class/net/ib0.%04x ] && echo "
                                  "0x%04x > /sys/class/net/ib0/delete_child;"
                                  " true" % (pkey, pkey))
            set_partitions([])
            has_pkey(fabric[self.C], 0x8001, present=False)


class PingpongEveryPair(unittest.TestCase):
    """Every pair: through one switch (1-2, 1-3, 2-3) or both (1-4, 2-4,
    3-4); the server by its IPoIB address, the QP by LID."""

    def every_pair(self, command, expected, timeout):
        for server, client in itertools.combinations(GUESTS, 2):
            with self.subTest(server=server, client=client):
                status, cli, srv = vhca_fabric.client_server(
                    fabric[server], fabric[client], command,
                    "%s %s" % (command, fabric[server].ipv4), 18515,
                    timeout=timeout)
                self.assertEqual(status, 0, cli + srv)
                self.assertRegex(cli, expected)

    def test_rc_pingpong_by_lid(self):
        self.every_pair("ibv_rc_pingpong -d vhca0 -n 50 -s 4096",
                        r"50 iters", 120)

    def test_write_bw(self):
        self.every_pair("ib_write_bw -d vhca0 -F -s 65536 -n 100",
                        r"65536\s+100", 180)


class SmHandover(unittest.TestCase):
    """opensm stops in guest 1 and starts in guest 4, behind the other
    switch: the new SM takes the subnet over (SMInfo), every port's SM
    LID becomes guest 4's, and traffic goes on through the tables."""

    def test_new_sm_takes_over(self):
        fabric[1].run("kill $(pidof opensm); "
                      "while pidof opensm > /dev/null; do sleep 0.2; done")
        try:
            fabric[4].run(OPENSM)
            new = lid(fabric[4])
            for i in GUESTS:
                wait_for(fabric[i], "[ $(cat /sys/class/infiniband/vhca0/"
                         "ports/1/sm_lid) = 0x%x ]" % new)
            out = fabric[2].run("sminfo")
            self.assertRegex(out, r"sminfo: sm lid %d .*SMINFO_MASTER" % new)
            self.assertRegex(switch_info(1), r"sm-lid 0x%x" % new)
            status, cli, srv = vhca_fabric.client_server(
                fabric[1], fabric[3], "ibv_rc_pingpong -d vhca0 -n 20",
                "ibv_rc_pingpong -d vhca0 -n 20 %s" % fabric[1].ipv4,
                18515, timeout=120)
            self.assertEqual(status, 0, cli + srv)
        finally:
            # Back to guest 1, as the other classes expect.
            fabric[4].run("kill $(pidof opensm); "
                          "while pidof opensm > /dev/null; do sleep 0.2; "
                          "done; true")
            fabric[1].run(OPENSM)
            for i in GUESTS:
                wait_for(fabric[i], "[ $(cat /sys/class/infiniband/vhca0/"
                         "ports/1/sm_lid) = 0x%x ]" % lid(fabric[1]))


class SubnetAdministration(unittest.TestCase):
    def test_saquery_lists_every_node_and_path(self):
        out = fabric[2].run("saquery NR")
        self.assertEqual(len(re.findall(r"^NodeRecord", out, re.M)), 6, out)
        for switch in (1, 2):
            self.assertIn("vhca-switch %d" % switch, out)
        out = fabric[2].run("saquery PR")
        for a, b in itertools.permutations(GUESTS, 2):
            self.assertRegex(out, r"dlid\.+%d\n\s+slid\.+%d\n"
                             % (lid(fabric[b]), lid(fabric[a])))


class SubnetUp(unittest.TestCase):
    def test_every_port_active(self):
        for i in GUESTS:
            self.assertIn("ACTIVE", port_attr(fabric[i], "state"))
            self.assertEqual(port_attr(fabric[i], "sm_lid"),
                             "0x%x" % lid(fabric[1]))
        ports = {1: [], 2: []}
        for switch, port in list(CABLE.values()) + list(INTER_SWITCH):
            ports[switch].append(port)
        for switch, used in ports.items():
            info = switch_info(switch)
            for port in used:
                self.assertRegex(info, r"port %d ACTIVE" % port)
            self.assertRegex(info, r"sm-lid 0x%x" % lid(fabric[1]))
        self.assertRegex(switch_info(2), r"port 2 DOWN \(no cable\)")


class SwitchCounters(unittest.TestCase):
    def test_perfquery_reads_every_switch_port(self):
        """Each switch's PMA (QP1 of port 0): its ports count traffic."""
        for switch, port in list(CABLE.values()) + list(INTER_SWITCH):
            out = fabric[1].run("perfquery %d %d" % (switch_lid(switch),
                                                     port))
            self.assertRegex(out, r"PortSelect:\.*%d\b" % port)
            self.assertGreater(int(re.search(r"PortXmitPkts:\.*(\d+)",
                                             out).group(1)), 0, out)
        out = fabric[1].run("perfquery -x %d %d" % (switch_lid(1),
                                                    INTER_SWITCH[0][1]))
        self.assertRegex(out, r"PortRcvData:\.*[1-9]")


class Topology(unittest.TestCase):
    def test_ibnetdiscover_draws_both_switches(self):
        out = fabric[2].run("ibnetdiscover")
        self.assertEqual(len(re.findall(r"^Switch\s", out, re.M)), 2, out)
        self.assertEqual(len(re.findall(r"^Ca\s", out, re.M)), 4, out)
        for i, (switch, port) in CABLE.items():
            self.assertRegex(out, r"\[%d\]\s+\"H-\w+\"\[1\]\(%s\)"
                             % (port, port_guid(fabric[i]).lstrip("0")))
        (_, port1), (_, port2) = INTER_SWITCH
        self.assertRegex(out, r"\[%d\]\s+\"S-%x\"\[%d\]"
                         % (port1, SWITCH_GUID | 2, port2))

    def test_ibroute_dumps_each_lft(self):
        for switch in (1, 2):
            out = fabric[1].run("ibroute %d" % switch_lid(switch))
            for i in GUESTS:
                on, port = CABLE[i]
                if on != switch:
                    port = INTER_SWITCH[switch - 1][1]
                self.assertRegex(out, r"0x%04x 00%d : \(Channel Adapter"
                                 % (lid(fabric[i]), port))

    def test_ibtracert_crosses_both_switches(self):
        out = fabric[4].run("ibtracert %d %d" % (lid(fabric[4]),
                                                 lid(fabric[1])))
        self.assertRegex(out, r"\[1\] -> switch port \{0x%016x\}\[1\].*\n"
                         r"\[3\] -> switch port \{0x%016x\}\[4\].*\n"
                         r"\[1\] -> ca port" % (SWITCH_GUID | 2,
                                               SWITCH_GUID | 1))


class Unplug(unittest.TestCase):
    """Runs last: guest 2's QEMU stops and its cable comes out of switch
    1; opensm's next sweep (PortStateChange) drops it from the subnet,
    and the others keep talking across both switches."""

    def test_sweep_removes_the_guest(self):
        switch, port = CABLE[2]
        vhca_fabric.stop_process_groups([fabric[2].pid])
        self.assertEqual(fabric.link.switch_command("cable %d down" % port,
                                                    switch), "ok\n")
        self.assertRegex(switch_info(switch), r"port %d DOWN" % port)
        # opensm's own view: the SA's node records, 3 CAs, 2 switches.
        wait_for(fabric[1], "[ $(saquery NR | grep -c '^NodeRecord') = 5 ]")
        out = fabric[1].run("ibnetdiscover")
        self.assertEqual(len(re.findall(r"^Ca\s", out, re.M)), 3, out)
        status, cli, srv = vhca_fabric.client_server(
            fabric[4], fabric[1], "ibv_rc_pingpong -d vhca0 -n 20",
            "ibv_rc_pingpong -d vhca0 -n 20 %s" % fabric[4].ipv4, 18515,
            timeout=120)
        self.assertEqual(status, 0, cli + srv)
