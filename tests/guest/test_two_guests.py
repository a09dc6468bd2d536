"""End-to-end tests: two guests, each with a vhca, on one fabric.

The guests boot once for the whole module (booting is the slow part under
TCG); each test leaves them as it found them.  Guest i has 192.0.2.i/24 and
2001:db8::i/64 on its vhca interface (scripts/vhca_fabric.py).
"""

import os
import re
import statistics
import subprocess
import unittest

from host_common import vhca_fabric
import guest_scripts
import latency_breakdown
from vhca_fabric import ipv4_gid, ipv6_gid

# vcpu_policy="idle": HostScheduling checks it; the other tests here are
# functional and run the same with either policy.  The QEMUs stamp their
# trace with the time of day for LatencyBreakdown.
# Why tests/run_all.py runs no other fabric beside this module's.
RUNS_ALONE = ("its latency breakdown and interrupt counts depend on how "
              "promptly the QEMUs run")
fabric = vhca_fabric.ModuleFabric("tests", pcap=True, vcpu_policy="idle",
                                  extra_args=latency_breakdown.QEMU_ARGS)
setUpModule, tearDownModule = fabric.start, fabric.stop


def vhca_ifname(guest):
    out = guest.run("ls /sys/bus/pci/drivers/vhca/*/net/")
    names = out.split()
    if len(names) != 1:
        raise AssertionError("guest%d: expected one vhca netdev, found %r"
                             % (guest.index, names))
    return names[0]


def wait_for(guest, command, timeout=30):
    """Run command in the guest until it succeeds (a guest-side loop)."""
    guest.run("for i in $(seq %d); do %s && exit 0; sleep 0.2; done; exit 1"
              % (timeout * 5, command), timeout=timeout + 30)


class Ping(unittest.TestCase):
    def ping(self, src, dst_addr, extra=""):
        out = src.run("ping -c 3 -W 5 %s %s" % (extra, dst_addr), timeout=60)
        self.assertRegex(out, r"3 packets transmitted, 3 received")

    def test_ipv4_both_ways(self):
        self.ping(fabric[1], fabric[2].ipv4)
        self.ping(fabric[2], fabric[1].ipv4)

    def test_ipv6_both_ways(self):
        self.ping(fabric[1], fabric[2].ipv6)
        self.ping(fabric[2], fabric[1].ipv6)

    def test_jumbo_mtu(self):
        for g in (fabric[1], fabric[2]):
            # Waits until vhca0's active_mtu is 4096 (9000 - RoCE headers).
            g.set_mtu(9000)
        try:
            # 8972 = 9000 - IPv4 20 - ICMP 8, do not fragment.
            self.ping(fabric[1], fabric[2].ipv4, "-M do -s 8972")
            self.ping(fabric[2], fabric[1].ipv6, "-M do -s 8952")
            status, out = fabric[1].exec("ping -c 1 -W 2 -M do -s 8973 %s"
                                         % fabric[2].ipv4)
            self.assertNotEqual(status, 0, "a frame above the MTU was sent")
        finally:
            for g in (fabric[1], fabric[2]):
                g.set_mtu(1500)


class HostScheduling(unittest.TestCase):
    def test_vcpu_threads_idle_main_loop_normal(self):
        # --vcpu-policy idle: the vCPUs at SCHED_IDLE once booted, QEMU's
        # main loop (the process's first thread) left at SCHED_OTHER.
        for g in (fabric[1], fabric[2]):
            self.assertEqual(g.vcpu_policies(), [os.SCHED_IDLE],
                             "guest%d" % g.index)
            self.assertEqual(os.sched_getscheduler(g.pid), os.SCHED_OTHER)

    def test_unknown_policy_refused(self):
        with self.assertRaisesRegex(vhca_fabric.FabricError,
                                    "unknown vCPU policy 'fifo'"):
            vhca_fabric.Fabric(2, vcpu_policy="fifo")

    def test_guest_idle_poll_on_the_kernel_command_line(self):
        # --guest-idle poll boots the guests with idle=poll, halt (the
        # default) without (docs/benchmarks.rst, "Idle host cores");
        # bench.py also checks a booted guest's /proc/cmdline.
        for idle, expected in (("poll", True), ("halt", False)):
            guest = vhca_fabric.Fabric(2, guest_idle=idle)[1]
            args = guest.qemu_args("qemu", "kernel", "initrd", 1, 2, False,
                                   ())
            append = args[args.index("-append") + 1].split()
            self.assertEqual("idle=poll" in append, expected, idle)
        with self.assertRaisesRegex(vhca_fabric.FabricError,
                                    "unknown guest idle 'mwait'"):
            vhca_fabric.Fabric(2, guest_idle="mwait")


class PauseYields(unittest.TestCase):
    YIELDS = 1000

    def test_polling_an_empty_cq_yields_the_host_cpu(self):
        # vhca's provider executes PAUSE when a poll finds the CQ empty
        # (vhca_cq_empty_hint(), provider/vhca/vhca_cq.c), and the
        # project's QEMU yields the host CPU on PAUSE under MTTCG
        # (qemu-patches/0003): a guest program polling an empty CQ makes
        # its vCPU thread call sched_yield(), so the QEMU main loops get
        # the core (docs/benchmarks.rst).  Fails without either half.
        g = fabric[1]
        script = guest_scripts.put(g, "guest_poll_empty_cq.py")
        g.run("rm -f /tmp/stop-poll; (python3 %s vhca0 /tmp/stop-poll "
              "> /tmp/poll.log 2>&1 &)" % script)
        wait_for(g, "grep -q polling /tmp/poll.log")
        tid = g.qmp("query-cpus-fast")[0]["thread-id"]
        # An idle guest pauses now and then too (a sched_yield() every
        # few seconds was seen): count YIELDS of them, which a program
        # polling with PAUSE makes in well under a second.  strace ends
        # by itself after 60 s if they do not come.
        strace = subprocess.Popen(
            ["timeout", "60", "strace", "-e", "trace=sched_yield", "-p",
             str(tid)],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        yields = 0
        try:
            for line in strace.stderr:
                yields += line.startswith("sched_yield(")
                if yields == self.YIELDS:
                    break
        finally:
            strace.terminate()
            strace.wait(30)
            strace.stderr.close()
            g.run("touch /tmp/stop-poll")
            wait_for(g, "grep -q '^polls' /tmp/poll.log")
        self.assertEqual(yields, self.YIELDS)
        self.assertRegex(g.run("cat /tmp/poll.log"), r"polls [1-9]")


def doorbell_queue(guest):
    """(queued, full) from the device's "doorbell-queue" line of
    x-query-vhca: doorbells the vCPU rang without the BQL and the main loop
    ran later, and those that found the queue full."""
    text = guest.qmp("x-query-vhca")["human-readable-text"]
    m = re.search(r"^  doorbell-queue queued (\d+) full (\d+)$", text, re.M)
    if not m:
        raise AssertionError("guest%d: no doorbell-queue line in %r"
                             % (guest.index, text))
    return int(m.group(1)), int(m.group(2))


class LocklessDoorbells(unittest.TestCase):
    def test_sq_doorbells_do_not_take_the_bql(self):
        # BAR2 is a lockless region (qemu-patches/0006): a vCPU ringing an
        # SQ doorbell queues it for the main loop instead of waiting for
        # the BQL (hw/vhca/vhca-doorbell.c).  Each side of 50 pingpong
        # iterations posts 50 sends, each with a doorbell; its receives'
        # doorbells run at once and are not counted.  Fails if the
        # doorbells went through the BQL (TCG's MMIO path unpatched, or the
        # region not lockless), and if queued doorbells were lost (the
        # program would not finish).
        before = [doorbell_queue(fabric[i]) for i in (1, 2)]
        cmd = "ibv_rc_pingpong -d vhca0 -g %d -s 64 -n 50"
        status, cli, srv = vhca_fabric.client_server(
            fabric[2], fabric[1], cmd % fabric[2].ipv4_gid_index(),
            (cmd % fabric[1].ipv4_gid_index()) + " " + fabric[2].ipv4,
            18515)
        self.assertEqual(status, 0, cli + srv)
        after = [doorbell_queue(fabric[i]) for i in (1, 2)]
        for i in (0, 1):
            self.assertGreaterEqual(after[i][0] - before[i][0], 50,
                                    "guest%d queued" % (i + 1))
            self.assertGreaterEqual(after[i][1], before[i][1])


class LatencyBreakdown(unittest.TestCase):
    # scripts/latency_breakdown.py splits each message of a perftest
    # ping-pong into stages from vhca's trace events (docs/benchmarks.rst,
    # "Where latency goes").  Fails if an event it reads is gone or no
    # longer says what it parses, if it cannot follow most messages, if
    # the stages do not add up to the latency perftest measures, or if a
    # completion interrupt comes where none may (a polling program arms
    # no CQ: IBTA 11.4.2.2).
    ITERS = 300
    ONE_WAY = "one way: doorbell -> doorbell"
    IRQ = "receiver: frame in -> irq"

    def breakdown(self, tool):
        t_typical, forth, back = latency_breakdown.traced(fabric, tool, 64,
                                                          self.ITERS)
        for stages in (forth, back):
            self.assertGreaterEqual(len(stages[self.ONE_WAY]),
                                    0.9 * self.ITERS, tool)
            # perftest's t_typical is the median of half round trips.
            one_way = statistics.median(stages[self.ONE_WAY])
            self.assertGreaterEqual(one_way, 0.5 * t_typical, tool)
            self.assertLessEqual(one_way, 1.5 * t_typical, tool)
        return forth, back

    def test_event_driven_messages_raise_interrupts(self):
        # Not every message: after each event perftest -e polls the CQ
        # again before it re-arms it, and a message that lands in that
        # window completes without an interrupt (IBTA 11.4.2.2).  Alone
        # on the host more than half raised one in every run seen; under
        # the whole test command's load 40% did once (CI, 2026-12-05).  A
        # quarter still tells "interrupts" from the polled case's none.
        for stages in self.breakdown("ib_send_lat -e"):
            self.assertGreaterEqual(len(stages[self.IRQ]), 0.25 * self.ITERS)

    def test_polled_messages_raise_none(self):
        for stages in self.breakdown("ib_send_lat"):
            self.assertEqual(stages[self.IRQ], [])


class Capture(unittest.TestCase):
    def test_pcap_holds_fabric_traffic(self):
        fabric[1].run("ping -c 2 -W 5 %s" % fabric[2].ipv4, timeout=60)
        out = subprocess.run(
            ["tshark", "-r", fabric[1].pcap, "-Y", "icmp.type == 8", "-T",
             "fields", "-e", "ip.src", "-e", "ip.dst"],
            check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True).stdout
        self.assertIn("%s\t%s" % (fabric[1].ipv4, fabric[2].ipv4), out)

    def echo_sizes(self):
        """The IPv4 total lengths of the echo requests in guest 1's pcap:
        20 + 8 + the size given to ping -s."""
        return subprocess.run(
            ["tshark", "-r", fabric[1].pcap, "-Y", "icmp.type == 8", "-T",
             "fields", "-e", "ip.len"],
            check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True).stdout.split()

    def test_stop_capture_keeps_pcap(self):
        # Runs after test_pcap_holds_fabric_traffic (name order): the
        # module's capture ends here, and no later test reads the pcap.
        fabric[1].run("ping -c 1 -W 5 -s 1111 %s" % fabric[2].ipv4,
                      timeout=60)
        self.assertIn("1139", self.echo_sizes())
        fabric[1].stop_capture()
        fabric[1].run("ping -c 2 -W 5 -s 1222 %s" % fabric[2].ipv4,
                      timeout=60)
        sizes = self.echo_sizes()
        self.assertIn("1139", sizes, "the pcap lost what it held")
        self.assertNotIn("1250", sizes, "frames captured after capture-off")


class RdmaDevice(unittest.TestCase):
    def test_devinfo_shows_port_and_gids(self):
        for g in (fabric[1], fabric[2]):
            out = g.run("ibv_devinfo -v -d vhca0")
            self.assertIn("hca_id:\tvhca0", out)
            self.assertRegex(out, r"state:\s+PORT_ACTIVE \(4\)")
            self.assertRegex(out, r"link_layer:\s+Ethernet")
            self.assertRegex(out, r"active_mtu:\s+1024 \(3\)")
            gids = vhca_fabric.roce_v2_gids(out)
            self.assertIn(ipv4_gid(g.ipv4), gids, out)
            self.assertIn(ipv6_gid(g.ipv6), gids, out)

    def test_gid_follows_address_changes(self):
        g = fabric[1]
        ifname = vhca_ifname(g)
        g.run("ip addr add 192.0.2.101/24 dev %s" % ifname)
        try:
            wait_for(g, "ibv_devinfo -v -d vhca0 | grep -q '%s, RoCE v2'"
                     % ipv4_gid("192.0.2.101"))
        finally:
            g.run("ip addr del 192.0.2.101/24 dev %s" % ifname)
        wait_for(g, "! ibv_devinfo -v -d vhca0 | grep -q '%s'"
                 % ipv4_gid("192.0.2.101"))

    def test_rdma_link_and_sysfs(self):
        out = fabric[1].run("rdma link show")
        self.assertRegex(out, r"link vhca0/1 state ACTIVE .*netdev %s"
                         % vhca_ifname(fabric[1]))
        # The provider binds: a user context opens and maps its doorbell page.
        out = fabric[1].run(
            "python3 -c \"import pyverbs.device as d; "
            "c = d.Context(name='vhca0'); a = c.query_device(); "
            "print('vendor_part_id', a.vendor_part_id)\"")
        self.assertIn("vendor_part_id %d" % 0x10f5, out)

    def test_resources_through_pyverbs(self):
        # PD, MR, CQ with events, RC QP through its states, flush on ERR.
        for g in (fabric[1], fabric[2]):
            script = guest_scripts.put(g, "guest_rdma_resources.py")
            out = g.run("python3 " + script, timeout=120)
            self.assertIn("PASS", out)


def header_counter_names(function="vhca_counter_name", prefix="VHCA_CNT_",
                         at_least=20):
    """The table of include/vhca_hw.h's function, in its enum's order: the
    names the guest tools must show (the COUNTERS registers by default;
    vhca_cc_counter_name: the congestion counters QUERY_CC returns;
    vhca_pfc_counter_name: its PFC counters, %u for the priority)."""
    path = os.path.join(os.path.dirname(__file__), "../../include/vhca_hw.h")
    with open(path) as f:
        text = f.read()
    table = text[text.index("%s(unsigned int counter)" % function):]
    names = re.findall(r'\[%s(\w+)\]\s*=\s*"([\w%%]+)"' % prefix,
                       table[:table.index("};")])
    if len(names) < at_least:
        raise AssertionError("could not read the counter names: %r" % names)
    return names


class HwCounters(unittest.TestCase):
    """The device counters reach `rdma statistic` and `ethtool -S` under
    the header's names, and the transport ones move with traffic."""

    def test_names_in_both_tools(self):
        names = header_counter_names()
        ids = [i for i, _ in names]
        first_roce = ids.index("ROCE_TX_PACKETS")
        # The congestion counters follow in both (drivers/vhca/vhca_cc.c).
        cc = header_counter_names("vhca_cc_counter_name", "VHCA_CC_CNT_", 5)
        # Then PFC's, each counter for priorities 0..7 (rx_prio3_pause).
        cc += [(i, n % prio) for i, n in header_counter_names(
            "vhca_pfc_counter_name", "VHCA_PFC_CNT_", 5) for prio in range(8)]
        g = fabric[1]
        self.assertEqual(sorted(g.hw_counters("ethtool")),
                         sorted(n for _, n in names + cc))
        # rdma statistic leaves out the requester's two back-off
        # counters: a port's counters come in one 8 KiB netlink message,
        # which they would overflow (drivers/vhca/vhca_hw_counters.c).
        backoff = ("req_window_cuts", "req_timer_backoffs")
        self.assertEqual(sorted(g.hw_counters("rdma")),
                         sorted(n for _, n in names[first_roce:] + cc
                                if n not in backoff))

    def test_rc_traffic_moves_packet_counters(self):
        before = [fabric[i].hw_counters() for i in (1, 2)]
        g2 = fabric[2].ipv4_gid_index()
        cmd = "ibv_rc_pingpong -d vhca0 -g %d -s 4096 -n 50"
        status, cli, srv = vhca_fabric.client_server(
            fabric[2], fabric[1], cmd % g2,
            (cmd % fabric[1].ipv4_gid_index()) + " " + fabric[2].ipv4,
            18515)
        self.assertEqual(status, 0, cli + srv)
        after = [fabric[i].hw_counters() for i in (1, 2)]
        for i in (0, 1):
            # 50 messages each way of 4 packets at MTU 1024, and the ACKs.
            for name in ("sent_pkts", "rcvd_pkts"):
                self.assertGreaterEqual(after[i][name] - before[i][name],
                                        200, "guest%d %s" % (i + 1, name))
            # Counters only grow (a reset or a 32-bit wrap would show).
            for name, value in after[i].items():
                self.assertGreaterEqual(value, before[i][name],
                                        "guest%d %s" % (i + 1, name))


class NetDevice(unittest.TestCase):
    def test_ethtool_driver_and_counters(self):
        g = fabric[1]
        ifname = vhca_ifname(g)
        out = g.run("ethtool -i %s" % ifname)
        self.assertRegex(out, r"driver: vhca")

        def tx_packets():
            stats = g.run("ethtool -S %s" % ifname)
            m = re.search(r"tx_packets:\s+(\d+)", stats)
            self.assertIsNotNone(m, "no tx_packets in ethtool -S:\n" + stats)
            return int(m.group(1))
        before = tx_packets()
        g.run("ping -c 5 -W 5 %s" % fabric[2].ipv4, timeout=60)
        self.assertGreaterEqual(tx_packets() - before, 5)

    def test_link_down_and_up(self):
        g = fabric[1]
        ifname = vhca_ifname(g)
        g.qmp("set_link", name="fabric", up=False)
        try:
            wait_for(g, "grep -qx 0 /sys/class/net/%s/carrier" % ifname)
            wait_for(g, "ibv_devinfo -d vhca0 | grep -q PORT_DOWN")
        finally:
            g.qmp("set_link", name="fabric", up=True)
        wait_for(g, "grep -qx 1 /sys/class/net/%s/carrier" % ifname)
        wait_for(g, "ibv_devinfo -d vhca0 | grep -q PORT_ACTIVE")
        out = g.run("ping -c 2 -W 5 %s" % fabric[2].ipv4, timeout=60)
        self.assertIn("2 received", out)


class ModuleReload(unittest.TestCase):
    # unittest runs classes in name order, so this runs first: it leaves
    # the guest configured as it found it for the tests after it.
    LOOPS = 10

    def test_unload_reload_loop(self):
        g = fabric[2]
        ifname = vhca_ifname(g)
        setup = ("ip link set dev {i} up && ip addr add {a}/24 dev {i} && "
                 "ip -6 addr add {b}/64 dev {i} nodad").format(
                     i="$(ls /sys/bus/pci/drivers/vhca/*/net)",
                     a=g.ipv4, b=g.ipv6)
        # One warm-up round, then measure unreclaimable slab over the loop.
        g.run("rmmod vhca && modprobe vhca")
        slab = "awk '/^SUnreclaim:/ {print $2}' /proc/meminfo"
        before = int(g.run("sync; echo 3 > /proc/sys/vm/drop_caches; " + slab))
        g.run("for i in $(seq %d); do rmmod vhca || exit 1; "
              "modprobe vhca || exit 2; done" % self.LOOPS, timeout=300)
        after = int(g.run("sync; echo 3 > /proc/sys/vm/drop_caches; " + slab))
        # Each probe allocates rings, an ib_device and a net_device; a leak
        # of those per loop would show as tens of KiB per iteration.
        self.assertLess(after - before, 64 * self.LOOPS,
                        "unreclaimable slab grew by %d KiB over %d reloads"
                        % (after - before, self.LOOPS))
        dmesg = g.run("dmesg")
        self.assertNotRegex(dmesg, r"(WARNING:|BUG:|Oops|general protection)")
        self.assertEqual(ifname, vhca_ifname(g))
        g.run(setup)
        wait_for(g, "ibv_devinfo -d vhca0 | grep -q PORT_ACTIVE")
        out = g.run("ping -c 2 -W 5 %s" % fabric[1].ipv4, timeout=60)
        self.assertIn("2 received", out)
        out = g.run("ibv_devinfo -v -d vhca0")
        self.assertIn(ipv4_gid(g.ipv4), out)


if __name__ == "__main__":
    unittest.main()
