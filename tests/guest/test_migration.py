"""Live migration and snapshots of a guest in the middle of RDMA traffic
(issue 30).

Guest 1 runs unmodified RDMA programs against guest 2 (both vhca); while
they run, vhca_fabric.py's migrate moves guest 1 to a new QEMU on this
host.  Every program must end without error, its data checked where it
checks it (rping -V, ibv_rc_pingpong -c): the peer sees a pause of about
the downtime plus one ACK timeout, and RC retransmits what the downtime
lost (docs/user-guide.rst, "Migrating a guest").  NVMe over RDMA and an
rxe peer are migrated in tests/guest/test_nvme_rdma.py, whose fabric has
both.
"""

import os
import re
import unittest

from host_common import vhca_fabric
from guest_jobs import Job, finish_all, start_pair, start_pairs
import guest_jobs

# Why tests/run_all.py runs no other fabric beside this module's.
RUNS_ALONE = "the stall a peer sees is asserted in milliseconds"
fabric = vhca_fabric.ModuleFabric("migration")
setUpModule, tearDownModule = fabric.start, fabric.stop


def gid(index):
    return fabric[index].ipv4_gid_index()


# perftest prints its table's header once connected, before the run.
PERFTEST_STARTED = "grep -q '#bytes' %(log)s"
PERFTEST_SECONDS = 20
# What a migrated guest takes, past the downtime, to run its code again
# under TCG (test_latency_stall).
TCG_WARM_UP_MS = 100


def perftest(program, port, server, client):
    """A start_pairs() tuple: program (-D PERFTEST_SECONDS) between the
    guests, its server in guest server."""
    cmd = "%s -d vhca0 -x %%d -p %d -F -D %d" % (program, port,
                                                 PERFTEST_SECONDS)
    return ("%s-%d" % (program, port), server, client, cmd % gid(server),
            cmd % gid(client) + " " + fabric[server].ipv4,
            vhca_fabric.READY_TCP % {"port": port}, PERFTEST_STARTED)


# A perftest bandwidth line: "#bytes #iterations BW peak BW average ...".
BW_LINE = re.compile(r"^\s*65536\s+(\d+)\s+[\d.]+\s+([\d.]+)", re.M)


def unix_socket_inodes():
    with open("/proc/net/unix") as f:
        next(f)
        return {line.split()[6] for line in f}


def fds_and_rss(pid):
    """(open file descriptors but UNIX sockets, resident KiB) of a host
    process.  UNIX sockets are the monitor's and the agent's connections,
    which come and go with the test's own requests."""
    unix = unix_socket_inodes()
    fds = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except FileNotFoundError:
            continue
        m = re.match(r"socket:\[(\d+)\]$", target)
        fds += not (m and m.group(1) in unix)
    with open("/proc/%d/status" % pid) as f:
        rss = int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1))
    return fds, rss


def rc_pingpong(name, iterations):
    """A start_pairs() tuple: ibv_rc_pingpong -c (each side checks every
    buffer it receives), guest 1 the client."""
    cmd = "ibv_rc_pingpong -d vhca0 -g %%d -c -n %d" % iterations
    return (name, 2, 1, cmd % gid(2), (cmd % gid(1)) + " " + fabric[2].ipv4,
            vhca_fabric.READY_TCP % {"port": 18515},
            "[ $(wc -l < %(log)s) -ge 2 ]")


class MigrateDuringTraffic(unittest.TestCase):
    def test_perftest_bandwidth_both_roles_and_rc_pingpong(self):
        # ib_write_bw and ib_read_bw -D 20, guest 1 once the client and
        # once the server of each: it sends and receives WRITEs, issues
        # READs and answers them; and ibv_rc_pingpong -c, each side
        # checking every buffer it receives: all through one migration.
        pairs = start_pairs(fabric, [perftest("ib_write_bw", 18601, 2, 1),
                                     perftest("ib_write_bw", 18602, 1, 2),
                                     perftest("ib_read_bw", 18603, 2, 1),
                                     perftest("ib_read_bw", 18604, 1, 2),
                                     rc_pingpong("pingpong", 5000)])
        jobs = [job for pair in pairs for job in pair]
        guest_jobs.migrate(self, fabric, 1, [cli for _, cli in pairs])
        outs = finish_all(self, jobs, PERFTEST_SECONDS + 120)
        for out in (outs["pingpong"], outs["pingpong-server"]):
            self.assertRegex(out, r"\d+ bytes in [\d.]+ seconds")
        for _, cli in pairs[:4]:
            m = BW_LINE.search(outs[cli.name])
            self.assertIsNotNone(m, outs[cli.name])
            self.assertGreater(float(m.group(2)), 0, outs[cli.name])

    def test_latency_stall(self):
        # The stall the peer sees: ib_write_lat's longest iteration
        # (t_max), measured in guest 2 while guest 1 migrates, at most
        # the downtime plus one ACK timeout (perftest's QP timeout 14:
        # 4.096 us x 2^14, 67 ms), plus TCG_WARM_UP_MS: the new QEMU
        # starts with an empty translation cache, and guest 1's kernel
        # and programs are translated again before it answers (up to 85 ms
        # past the downtime seen).  A frame lost in the migration would
        # wait for a doubled retransmission timer and fail this.
        lat_cmd = "ib_write_lat -d vhca0 -x %d -p 18611 -F -n 30000"
        lat = start_pair(fabric, "lat", 1, 2, lat_cmd % gid(1),
                         lat_cmd % gid(2) + " " + fabric[1].ipv4,
                         vhca_fabric.READY_TCP % {"port": 18611},
                         PERFTEST_STARTED)
        info = guest_jobs.migrate(self, fabric, 1, [lat[1]])
        outs = finish_all(self, lat, 300)
        # "#bytes #iterations t_min[usec] t_max[usec] t_typical ..."
        m = re.search(r"^\s*2\s+30000\s+([\d.]+)\s+([\d.]+)", outs["lat"],
                      re.M)
        self.assertIsNotNone(m, outs["lat"])
        stall_ms = float(m.group(2)) / 1000
        ack_timeout_ms = 4.096e-3 * 2 ** 14
        print("peer's longest iteration %.1f ms; downtime %s ms, ACK "
              "timeout %.1f ms" % (stall_ms, info["downtime"],
                                   ack_timeout_ms))
        self.assertLessEqual(stall_ms, info["downtime"] + ack_timeout_ms +
                             TCG_WARM_UP_MS, outs["lat"])

    def test_ud_pingpong(self):
        # ibv_ud_pingpong waits for every datagram with no timeout: it
        # ends only if the migration lost none of its datagrams (those
        # sent during the downtime wait in the fabric socket for the new
        # QEMU, qemu-patches/0007).
        cmd = "ibv_ud_pingpong -d vhca0 -g %d -p 18613 -n 60000"
        ping = start_pair(fabric, "udping", 2, 1, cmd % gid(2),
                          cmd % gid(1) + " " + fabric[2].ipv4,
                          vhca_fabric.READY_TCP % {"port": 18613},
                          "grep -q 'remote address' %(log)s")
        guest_jobs.migrate(self, fabric, 1, [ping[1]])
        for out in finish_all(self, ping, 300).values():
            self.assertRegex(out, r"60000 iters in [\d.]+ seconds", out)

    def test_rping_ten_migrations(self):
        # Ten migrations in a row during one rping -V: every ping's data
        # checked, no error, and the host process no bigger for it: each
        # new QEMU holds as many file descriptors as the first, and about
        # as much memory (the engine's state stream, the old engine, the
        # handed-over socket all freed or closed).
        migrations = 10
        srv, cli = start_pair(
            fabric, "rping", 2, 1,
            "rping -s -a %s -p 7190 -V -v -C 100000" % fabric[2].ipv4,
            "rping -c -a %s -p 7190 -V -v -C 100000" % fabric[2].ipv4,
            vhca_fabric.READY_RDMA_CM % {"port": 7190},
            "[ $(wc -l < %(log)s) -ge 20 ]")
        after = []
        for _ in range(migrations):
            guest_jobs.migrate(self, fabric, 1, [cli])
            after.append(fds_and_rss(fabric[1].pid))
        # Pings go on after the last one.
        count = "grep -c '^ping data: ' /tmp/rping.log"
        pings = int(cli.guest.run(count))
        cli.wait_for("[ $(%s) -ge %d ]" % (count, pings + 20))
        # rping -C 100000 would run on for many minutes: read what both
        # sides printed so far, then stop them (what they print on being
        # stopped is not theirs to be judged by).
        cli_out = cli.guest.run("cat /tmp/rping.log")
        out = cli_out + srv.guest.run("cat /tmp/rping-server.log")
        for job in (cli, srv):
            job.stop()
            job.finish(60)
        self.assertNotRegex(out, r"(?i)(error|fail|mismatch)")
        self.assertGreaterEqual(
            len(re.findall(r"^ping data: ", cli_out, re.M)), pings + 20)
        print("file descriptors, RSS KiB after each migration: %s" % after)
        self.assertEqual(len({fds for fds, _ in after}), 1, after)
        self.assertLess(after[-1][1] - after[0][1], 64 * 1024, after)


def vhca_qps(index):
    """The QPs of guest index's vhca, from x-query-vhca ("qp N type ...")."""
    text = fabric[index].qmp("x-query-vhca")["human-readable-text"]
    return re.findall(r"^\s*qp (\d+) type ", text, re.M)


class Snapshots(unittest.TestCase):
    def test_savevm_loadvm_with_open_qps(self):
        # savevm of guest 1 in the middle of ibv_rc_pingpong -c, then
        # loadvm: its QPs go back to the snapshot's PSNs and timers.  The
        # peer is stopped from before the save until after the load, so
        # that what the snapshot holds is what the peer expects (a
        # snapshot taken back under a running peer is a connection that
        # went back in time).  Between save and load guest 1 opens one
        # more QP (an ibv_rc_pingpong server waiting for its client); the
        # load takes that back too, and the ping-pong then ends with
        # every buffer checked.
        pair = start_pair(fabric, *rc_pingpong("snap", 20000))
        fabric[2].qmp("stop")
        try:
            fabric[1].savevm("open-qps")
            saved = vhca_qps(1)
            self.assertTrue(saved)
            Job(fabric, 1, "snap-extra",
                "ibv_rc_pingpong -d vhca0 -g %d -p 18599" % gid(1)).wait_for(
                    vhca_fabric.READY_TCP % {"port": 18599})
            self.assertEqual(len(vhca_qps(1)), len(saved) + 1)
            fabric[1].loadvm("open-qps")
            self.assertEqual(vhca_qps(1), saved)
        finally:
            fabric[2].qmp("cont")
        for out in finish_all(self, pair).values():
            self.assertRegex(out, r"\d+ bytes in [\d.]+ seconds")
        # The server guest 1 started after the save went with the load
        # (the bracket keeps pgrep from finding the shell that runs it).
        status, _ = fabric[1].exec("pgrep -f 'ibv_rc_pingpon[g].*18599'")
        self.assertNotEqual(status, 0)


if __name__ == "__main__":
    unittest.main()
