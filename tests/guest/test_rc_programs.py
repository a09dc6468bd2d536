"""Unmodified RDMA programs between two guests over vhca's RC transport.

ibv_rc_pingpong and perftest, each side in its own guest, exchanging their
QP details over TCP on the vhca netdev as they always do.
"""

import unittest

from host_common import vhca_fabric

fabric = vhca_fabric.ModuleFabric("rc")
setUpModule, tearDownModule = fabric.start, fabric.stop


def client_server(server_cmd, client_cmd, port, timeout=300):
    """Start server_cmd in guest 2, wait for it to listen on port, run
    client_cmd in guest 1 against it; return both outputs."""
    srv, cli = fabric[2], fabric[1]
    srv.run("(%s) > /tmp/server.log 2>&1 & echo $! > /tmp/server.pid"
            % server_cmd)
    srv.run("for i in $(seq 300); do ss -ltn | grep -q ':%d ' && exit 0; "
            "sleep 0.1; done; cat /tmp/server.log; exit 1" % port)
    status, client_out = cli.exec(client_cmd, timeout)
    # The server ends by itself once the client is done.
    srv.run("pid=$(cat /tmp/server.pid); for i in $(seq %d); do "
            "kill -0 $pid 2>/dev/null || exit 0; sleep 0.1; done; "
            "kill $pid; exit 1" % (timeout * 10), timeout + 30)
    server_out = srv.run("cat /tmp/server.log")
    if status != 0:
        raise AssertionError("client failed (%d):\n%s\nserver:\n%s"
                             % (status, client_out, server_out))
    return client_out, server_out


class RcPingpong(unittest.TestCase):
    def pingpong(self, extra=""):
        g1, g2 = fabric[1].ipv4_gid_index(), fabric[2].ipv4_gid_index()
        cmd = "ibv_rc_pingpong -d vhca0 -g %d " + extra
        cli, srv = client_server(cmd % g2, (cmd % g1) + " " + fabric[2].ipv4,
                                 18515)
        for out in (cli, srv):
            self.assertRegex(out, r"\d+ bytes in [\d.]+ seconds")
        return cli

    # -c: each side checks the contents of every buffer it receives.
    def test_default(self):
        self.pingpong("-c")

    def test_64k_messages(self):
        self.pingpong("-c -s 65536 -n 1000")

    def test_events(self):
        self.pingpong("-c -e")

    def test_path_mtu_4096_over_jumbo_frames(self):
        for g in (fabric[1], fabric[2]):
            g.run("ip link set dev $(ls /sys/bus/pci/drivers/vhca/*/net) "
                  "mtu 9000")
        try:
            self.pingpong("-c -m 4096 -s 20000 -n 50")
        finally:
            for g in (fabric[1], fabric[2]):
                g.run("ip link set dev $(ls /sys/bus/pci/drivers/vhca/*/net)"
                      " mtu 1500")


class Perftest(unittest.TestCase):
    def perftest(self, tool, extra=""):
        g1, g2 = fabric[1].ipv4_gid_index(), fabric[2].ipv4_gid_index()
        cmd = "%s -d vhca0 -x %%d -F %s" % (tool, extra)
        cli, srv = client_server(cmd % g2, (cmd % g1) + " " + fabric[2].ipv4,
                                 18515)
        self.assertNotRegex(cli + srv, r"(?i)(error|failed|completion with)")
        return cli

    def test_send_bw(self):
        self.assertRegex(self.perftest("ib_send_bw", "-s 4096 -n 200"),
                         r"4096\s+200\s+[\d.]+")

    def test_write_bw(self):
        self.assertRegex(self.perftest("ib_write_bw", "-s 65536 -n 100"),
                         r"65536\s+100\s+[\d.]+")

    def test_read_bw(self):
        self.assertRegex(self.perftest("ib_read_bw", "-s 65536 -n 100"),
                         r"65536\s+100\s+[\d.]+")

    def test_atomic_bw(self):
        self.assertRegex(self.perftest("ib_atomic_bw", "-n 200"),
                         r"8\s+200\s+[\d.]+")

    def test_send_lat(self):
        self.assertRegex(self.perftest("ib_send_lat", "-s 64 -n 200"),
                         r"64\s+200\s+[\d.]+\s+[\d.]+\s+[\d.]+")

    def test_write_lat(self):
        self.assertRegex(self.perftest("ib_write_lat", "-s 64 -n 200"),
                         r"64\s+200\s+[\d.]+\s+[\d.]+\s+[\d.]+")

    def test_read_lat(self):
        self.assertRegex(self.perftest("ib_read_lat", "-s 64 -n 200"),
                         r"64\s+200\s+[\d.]+\s+[\d.]+\s+[\d.]+")

    # -e: each side sleeps on completion events.  ib_send_lat waits for
    # one event per SEND, re-arms before it polls and polls once: an event
    # raised for a completion already in the CQ (not a new one, IBTA
    # 11.4.2.2) left it polling an empty CQ and then posting into a full
    # send queue ("Couldn't post send").
    def test_send_lat_events(self):
        self.assertRegex(self.perftest("ib_send_lat", "-e -s 64 -n 500"),
                         r"64\s+500\s+[\d.]+\s+[\d.]+\s+[\d.]+")

    def test_send_bw_events(self):
        self.assertRegex(self.perftest("ib_send_bw", "-e -s 4096 -n 500"),
                         r"4096\s+500\s+[\d.]+")


if __name__ == "__main__":
    unittest.main()
