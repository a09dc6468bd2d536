"""An InfiniBand subnet: three guests (-device vhca,link=ib) on one
vhca-switch (switch/), brought up by opensm in guest 1.  opensm
discovers the switch through directed route SMPs, assigns the LIDs,
writes the switch's forwarding tables and brings every port ACTIVE;
then Debian's programs, unmodified, run between every pair of guests
through the tables it wrote.

The guests boot once for the module.  The classes run in name order;
Unplug runs last (it stops guest 3).
"""

import itertools
import re
import unittest

from host_common import vhca_fabric

fabric = vhca_fabric.ModuleFabric("ib-subnet", count=3,
                                  nics=["vhca-ib", "vhca-ib", "vhca-ib"])
GUESTS = (1, 2, 3)
OPENSM = "opensm -B -d 2 -f /tmp/opensm.log > /dev/null 2>&1"


def port_attr(guest, name):
    return guest.run("cat /sys/class/infiniband/vhca0/ports/1/%s"
                     % name).strip()


def lid(guest):
    return int(port_attr(guest, "lid"), 16)


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


def switch_info():
    return fabric.link.switch_command("info")


def setUpModule():
    fabric.start()
    fabric[1].run(OPENSM)
    for i in GUESTS:
        wait_active(fabric[i])


def tearDownModule():
    fabric.stop()


class IPoIB(unittest.TestCase):
    def test_every_pair_pings(self):
        for a, b in itertools.permutations(GUESTS, 2):
            out = fabric[a].run("ping -c 2 -W 5 %s" % fabric[b].ipv4,
                                timeout=60)
            self.assertRegex(out, r"2 packets transmitted, 2 received")

    def test_broadcast_reaches_every_member(self):
        """IPoIB's broadcast group is an IB multicast group: the switch
        copies each packet to every port of its MFT entry."""
        for i in (2, 3):
            fabric[i].run("sysctl -qw net.ipv4.icmp_echo_ignore_broadcasts=0")
        try:
            out = fabric[1].run("ping -b -c 3 -W 5 192.0.2.255 2>&1",
                                timeout=60)
            for i in (2, 3):
                self.assertIn("from %s" % fabric[i].ipv4, out)
        finally:
            for i in (2, 3):
                fabric[i].run("sysctl -qw "
                              "net.ipv4.icmp_echo_ignore_broadcasts=1")
        self.assertRegex(switch_info(), r"mft 0xc\w+ ports 0xe")


class PingpongEveryPair(unittest.TestCase):
    def test_rc_pingpong_by_lid(self):
        for server, client in itertools.combinations(GUESTS, 2):
            status, cli, srv = vhca_fabric.client_server(
                fabric[server], fabric[client],
                "ibv_rc_pingpong -d vhca0 -n 50 -s 4096",
                "ibv_rc_pingpong -d vhca0 -n 50 -s 4096 %s"
                % fabric[server].ipv4, 18515, timeout=120)
            self.assertEqual(status, 0, cli + srv)
            self.assertIn("50 iters", cli)

    def test_write_bw(self):
        status, cli, srv = vhca_fabric.client_server(
            fabric[3], fabric[1], "ib_write_bw -d vhca0 -F -s 65536 -n 200",
            "ib_write_bw -d vhca0 -F -s 65536 -n 200 %s" % fabric[3].ipv4,
            18515, timeout=180)
        self.assertEqual(status, 0, cli + srv)
        self.assertRegex(cli, r"65536\s+200")


class SmHandover(unittest.TestCase):
    """opensm stops in guest 1 and starts in guest 2: the new SM takes the
    subnet over (SMInfo), every port's SM LID becomes guest 2's, and
    traffic goes on through the tables."""

    def test_new_sm_takes_over(self):
        fabric[1].run("kill $(pidof opensm); "
                      "while pidof opensm > /dev/null; do sleep 0.2; done")
        try:
            fabric[2].run(OPENSM)
            new = lid(fabric[2])
            for i in GUESTS:
                wait_for(fabric[i], "[ $(cat /sys/class/infiniband/vhca0/"
                         "ports/1/sm_lid) = 0x%x ]" % new)
            out = fabric[3].run("sminfo")
            self.assertRegex(out, r"sminfo: sm lid %d .*SMINFO_MASTER" % new)
            status, cli, srv = vhca_fabric.client_server(
                fabric[1], fabric[3], "ibv_rc_pingpong -d vhca0 -n 20",
                "ibv_rc_pingpong -d vhca0 -n 20 %s" % fabric[1].ipv4,
                18515, timeout=120)
            self.assertEqual(status, 0, cli + srv)
        finally:
            # Back to guest 1, as the other classes expect.
            fabric[2].run("kill $(pidof opensm); "
                          "while pidof opensm > /dev/null; do sleep 0.2; "
                          "done; true")
            fabric[1].run(OPENSM)
            for i in GUESTS:
                wait_for(fabric[i], "[ $(cat /sys/class/infiniband/vhca0/"
                         "ports/1/sm_lid) = 0x%x ]" % lid(fabric[1]))


class SubnetAdministration(unittest.TestCase):
    def test_saquery_lists_every_node_and_path(self):
        out = fabric[2].run("saquery NR")
        self.assertEqual(len(re.findall(r"^NodeRecord", out, re.M)), 4, out)
        self.assertIn("vhca-switch 1", out)
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
        info = switch_info()
        for port in GUESTS:
            self.assertRegex(info, r"port %d ACTIVE" % port)
        self.assertRegex(info, r"sm-lid 0x%x" % lid(fabric[1]))


class Topology(unittest.TestCase):
    def test_ibnetdiscover_draws_the_switch(self):
        out = fabric[2].run("ibnetdiscover")
        self.assertEqual(len(re.findall(r"^Switch\s+3 ", out, re.M)), 1, out)
        self.assertEqual(len(re.findall(r"^Ca\s", out, re.M)), 3, out)
        # Switch port i is cabled to guest i's port 1.
        for i in GUESTS:
            guid = port_attr(fabric[i], "gids/0").replace(":", "")[16:]
            self.assertRegex(out, r"\[%d\]\s+\"H-\w+\"\[1\]\(%s\)"
                             % (i, guid.lstrip("0")))

    def test_ibroute_dumps_the_lft(self):
        out = fabric[1].run("ibroute %d" % self.switch_lid())
        for i in GUESTS:
            self.assertRegex(out, r"0x%04x 00%d : \(Channel Adapter"
                             % (lid(fabric[i]), i))
        self.assertRegex(switch_info(), r"lft .*%d:3" % lid(fabric[3]))

    def test_ibtracert_follows_the_tables(self):
        out = fabric[3].run("ibtracert %d %d" % (lid(fabric[3]),
                                                 lid(fabric[1])))
        self.assertRegex(out, r"\[1\] -> switch port \{0x5648434100000001\}"
                         r"\[3\]")
        self.assertRegex(out, r"\[1\] -> ca port .*\n.*To ca")

    @staticmethod
    def switch_lid():
        return int(re.search(r" lid 0x(\w+) ", switch_info()).group(1), 16)


class Unplug(unittest.TestCase):
    """Runs last: guest 3's QEMU stops and its cable comes out of the
    switch; opensm's next sweep (PortStateChange) drops it from the
    subnet, and guests 1 and 2 keep talking."""

    def test_sweep_removes_the_guest(self):
        vhca_fabric.stop_process_groups([fabric[3].pid])
        self.assertEqual(fabric.link.switch_command("cable 3 down"), "ok\n")
        self.assertRegex(switch_info(), r"port 3 DOWN")
        # opensm's own view: the SA's node records, 2 CAs and the switch.
        wait_for(fabric[1], "[ $(saquery NR | grep -c '^NodeRecord') = 3 ]")
        out = fabric[1].run("ibnetdiscover")
        self.assertEqual(len(re.findall(r"^Ca\s", out, re.M)), 2, out)
        status, cli, srv = vhca_fabric.client_server(
            fabric[2], fabric[1], "ibv_rc_pingpong -d vhca0 -n 20",
            "ibv_rc_pingpong -d vhca0 -n 20 %s" % fabric[2].ipv4, 18515,
            timeout=120)
        self.assertEqual(status, 0, cli + srv)
