"""Live migration of a guest in the middle of RDMA traffic (issue 30).

Guest 1 runs an unmodified RDMA program against guest 2 (both vhca);
while it runs, vhca_fabric.py's migrate moves guest 1 to a new QEMU on
this host.  The program must end without error, its data checked where
it checks it (rping -V, ibv_rc_pingpong -c): the peer sees a pause of
about the downtime plus one ACK timeout, and RC retransmits what the
downtime lost (docs/user-guide.rst, "Migrating a guest").
"""

import unittest

from host_common import vhca_fabric

fabric = vhca_fabric.ModuleFabric("migration")
setUpModule, tearDownModule = fabric.start, fabric.stop


def start_pair(server_cmd, client_cmd, ready, name, started_lines):
    """Start server_cmd in guest 2 and, once it listens (ready, a shell
    test), client_cmd in the background in guest 1, its output in
    /tmp/NAME.log and its exit status in /tmp/NAME.status; return once
    the client printed started_lines lines (it is under way)."""
    srv, cli = fabric[2], fabric[1]
    srv.run("(%s) > /tmp/%s-server.log 2>&1 & echo $! > /tmp/%s-server.pid"
            % (server_cmd, name, name))
    srv.run("for i in $(seq 300); do %s && exit 0; sleep 0.1; done; "
            "cat /tmp/%s-server.log; exit 1" % (ready, name))
    cli.run("rm -f /tmp/%s.status; (%s > /tmp/%s.log 2>&1; "
            "echo $? > /tmp/%s.status) > /dev/null 2>&1 & "
            "echo $! > /tmp/%s.pid" % (name, client_cmd, name, name, name))
    cli.run("for i in $(seq 600); do [ $(wc -l < /tmp/%s.log) -ge %d ] && "
            "exit 0; [ -e /tmp/%s.status ] && break; sleep 0.1; done; "
            "cat /tmp/%s.log; exit 1" % (name, started_lines, name, name))


def client_running(name):
    status, _ = fabric[1].exec("[ ! -e /tmp/%s.status ]" % name)
    return status == 0


def finish_pair(name, timeout=600):
    """Wait (bounded) for both sides to end; return (client status, client
    output, server status, server output)."""
    cli, srv = fabric[1], fabric[2]
    cli.run("for i in $(seq %d); do [ -e /tmp/%s.status ] && exit 0; "
            "sleep 0.1; done; exit 1" % (timeout * 10, name), timeout + 30)
    status = int(cli.run("cat /tmp/%s.status" % name))
    client_out = cli.run("cat /tmp/%s.log" % name)
    server_status, _ = srv.exec(
        "pid=$(cat /tmp/%s-server.pid); for i in $(seq 600); do "
        "kill -0 $pid 2>/dev/null || exit 0; sleep 0.1; done; kill $pid; "
        "exit 1" % name, 90)
    server_out = srv.run("cat /tmp/%s-server.log" % name)
    return status, client_out, server_status, server_out


class MigrateDuringTraffic(unittest.TestCase):
    def migrate_during(self, server_cmd, client_cmd, ready, name,
                       started_lines):
        start_pair(server_cmd, client_cmd, ready, name, started_lines)
        old_pid = fabric[1].pid
        info = fabric.migrate(1)
        self.assertNotEqual(fabric[1].pid, old_pid)
        print("%s: guest1 migrated in %s ms, downtime %s ms"
              % (name, info.get("total-time"), info.get("downtime")))
        # The program was still running when the guest moved.
        self.assertTrue(client_running(name),
                        "%s ended before the migration did: raise its "
                        "count" % name)
        status, cli, server_status, srv = finish_pair(name)
        detail = "client:\n%s\nserver:\n%s" % (cli[-3000:], srv[-3000:])
        self.assertEqual(status, 0, detail)
        self.assertEqual(server_status, 0, detail)
        return cli, srv

    def test_rping_verify(self):
        count = 8000
        cli, srv = self.migrate_during(
            "rping -s -a %s -p 7190 -V -v -C %d" % (fabric[2].ipv4, count),
            "rping -c -a %s -p 7190 -V -v -C %d" % (fabric[2].ipv4, count),
            vhca_fabric.READY_RDMA_CM % {"port": 7190}, "rping", 20)
        self.assertNotRegex(cli + srv, r"(?i)(error|fail|mismatch)")
        self.assertEqual(len([line for line in cli.splitlines()
                              if line.startswith("ping data:")]), count)

    def test_rc_pingpong_checked(self):
        g1, g2 = fabric[1].ipv4_gid_index(), fabric[2].ipv4_gid_index()
        # -c: each side checks every buffer it receives.
        cmd = "ibv_rc_pingpong -d vhca0 -g %d -c -n 50000"
        cli, srv = self.migrate_during(
            cmd % g2, "stdbuf -oL " + (cmd % g1) + " " + fabric[2].ipv4,
            "ss -ltn | grep -q ':18515 '", "pingpong", 2)
        for out in (cli, srv):
            self.assertRegex(out, r"\d+ bytes in [\d.]+ seconds")


if __name__ == "__main__":
    unittest.main()
