"""The vhca multicast RX filter between two vhca guests.

The driver teaches the device the interface's multicast list
(SET_RX_FILTER, docs/specs/vhca.rst "RX filter"): frames to a group
nobody in guest 2 joined are dropped by the device and counted in
``rx_mcast_filtered``; once a socket in guest 2 joins a group, its frames
arrive; ``allmulticast on`` opens the filter to every group.

Guest 1 sends UDP datagrams to 239.8.8.8 (never joined) and 239.7.7.7
(joined by guest 2's receiver).  Every wait is a bounded poll: the device
learns a new list from a work item some time after the join, so the
sender repeats its datagram until the receiver has it.
"""

import time
import unittest

from host_common import vhca_fabric
from test_two_guests import wait_for

JOINED = "239.7.7.7"
NOT_JOINED = "239.8.8.8"
NOT_JOINED_MAC = "01005e080808"     # RFC 1112 6.4: 01:00:5e + low 23 bits
PORT = 5007
BURST = 5
TIMEOUT = 30

IFNAME = "$(ls /sys/bus/pci/drivers/vhca/*/net)"
FILTERED = "ethtool -S %s | awk '/ rx_mcast_filtered:/ {print $2}'" % IFNAME
RECEIVER = "/tmp/mcast_receiver.py"
RESULT = "/tmp/mcast_received"
PIDFILE = "/tmp/mcast_receiver.pid"
LOGFILE = "/tmp/mcast_receiver.log"

# Runs in guest 2 in the background.  "udp GROUP PORT IFADDR": join GROUP
# on the interface with IFADDR and wait for one datagram to it.  "raw
# IFNAME MAC": wait for one IPv4 frame to MAC on a packet socket, which
# joins nothing.  Either way it touches RESULT.ready once listening,
# writes what it got to RESULT, and keeps its socket (and so its group)
# until it is killed or hears nothing for a while.
RECEIVER_SOURCE = r'''
import os
import socket
import sys

mode, out = sys.argv[1], sys.argv[-1]
if mode == "udp":
    group, port, ifaddr = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((group, port))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                 socket.inet_aton(group) + socket.inet_aton(ifaddr))
else:
    ifname, mac = sys.argv[2], bytes.fromhex(sys.argv[3])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind((ifname, 0))
open(out + ".ready", "w").close()
s.settimeout(%d)
while True:
    data = s.recv(2048)
    if mode == "udp" or data[:6] == mac:
        break
with open(out + ".tmp", "wb") as f:
    f.write(data)
os.rename(out + ".tmp", out)
try:
    while True:
        s.recv(2048)
except socket.timeout:
    pass
''' % (TIMEOUT * 4)


def send(guest, group, count):
    """Send count UDP datagrams to group out of guest's vhca interface."""
    guest.run(
        "python3 -c \"import socket; "
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
        "s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, "
        "socket.inet_aton('%s')); "
        "s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1); "
        "[s.sendto(b'to %s', ('%s', %d)) for _ in range(%d)]\""
        % (guest.ipv4, group, group, PORT, count))


def mcast_filtered(guest):
    return int(guest.run(FILTERED).strip())


class McastFilter(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        fabric = vhca_fabric.start_for_tests("mcast")
        cls.addClassCleanup(fabric.stop)
        cls.sender, cls.receiver = fabric[1], fabric[2]

    def setUp(self):
        self.receiver.run("cat > %s <<'EOF'\n%sEOF" % (RECEIVER,
                                                       RECEIVER_SOURCE))
        self.receiver.run("rm -f %s %s.ready %s.tmp"
                          % (RESULT, RESULT, RESULT))

    def tearDown(self):
        self.receiver.exec("[ -f {0} ] && kill $(cat {0}); rm -f {0}"
                           .format(PIDFILE))

    def start_receiver(self, *args):
        self.receiver.run(
            "(python3 %s %s %s > %s 2>&1 & echo $! > %s)"
            % (RECEIVER, " ".join(args), RESULT, LOGFILE, PIDFILE))
        wait_for(self.receiver, "test -f %s.ready" % RESULT, TIMEOUT)

    def send_until_received(self, group):
        """Send one datagram at a time until the receiver has one."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            send(self.sender, group, 1)
            if self.receiver.exec("test -s %s" % RESULT)[0] == 0:
                return self.receiver.run("cat %s" % RESULT)
        log = self.receiver.exec("cat " + LOGFILE)[1]
        self.fail("guest 2 received nothing sent to %s in %d s:\n%s"
                  % (group, TIMEOUT, log))

    def expect_filtered(self, group):
        """A burst to group raises guest 2's rx_mcast_filtered by BURST.

        Other multicast on the fabric may add to the count, never take
        from it; a filter left open would not count at all.
        """
        before = mcast_filtered(self.receiver)
        send(self.sender, group, BURST)
        wait_for(self.receiver,
                 "[ $(%s) -ge %d ]" % (FILTERED, before + BURST), TIMEOUT)

    def test_joined_group_passes_others_are_filtered(self):
        # Nothing in guest 2 joined either group yet.
        self.expect_filtered(NOT_JOINED)
        self.expect_filtered(JOINED)

        self.start_receiver("udp", JOINED, str(PORT), self.receiver.ipv4)
        got = self.send_until_received(JOINED)
        self.assertIn("to " + JOINED, got)

        # The receiver still holds its group: the list that names it
        # replaced the old one, and is not ALLMULTI.
        self.expect_filtered(NOT_JOINED)

    def test_allmulticast_passes_every_group(self):
        self.expect_filtered(NOT_JOINED)
        self.receiver.run("ip link set dev %s allmulticast on" % IFNAME)
        try:
            # A packet socket joins no group: only ALLMULTI lets it see this.
            self.start_receiver("raw", IFNAME, NOT_JOINED_MAC)
            self.send_until_received(NOT_JOINED)
        finally:
            self.receiver.run("ip link set dev %s allmulticast off" % IFNAME)
        self.expect_filtered(NOT_JOINED)


if __name__ == "__main__":
    unittest.main()
