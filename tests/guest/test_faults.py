"""Faults while RC QPs move data between two vhca guests.

Guest 1 is the one that suffers the fault, guest 2 its peer.  In each
test ib_write_bw runs from guest 2 to guest 1 with no end in sight, plus
ibv_asyncwatch in guest 1 to see the device's async events.  Once guest 1's device has received
traffic, the fault hits guest 1:

- a function reset through sysfs (FLR: reset_method forced to flr) and
  a hot-unplug (QMP device_del, then device_add of a new one), both
  while guest 1 writes too (ib_write_bw -b: it rings SQ doorbells in a
  loop), an unbind and rebind of the driver, an rmmod and modprobe: the
  driver takes the device down while a process holds a context.  The RDMA core
  disassociates the context: guest 1's programs get IBV_EVENT_DEVICE_FATAL
  and they end, and so does the fault's command;
- QEMU's system_reset of guest 1 (it reboots) and the QEMU of guest 1
  quitting (powered off; guest 2's QEMU then sends into a closed UDP
  port: every send fails with ECONNREFUSED).

Either way guest 2's requester runs out of retries: its send completes
with RETRY_EXC_ERR (IBTA 9.7.6.1.3, C9-139) and the program ends.  Then
each test checks that nothing hangs or leaks and the device is usable:
a short ibv_rc_pingpong between the guests succeeds, no WARNING or BUG in
either guest's kernel log, and the RDMA resource counts (`rdma resource
show`: PDs, CQs, QPs, MRs, contexts) are back where they were.  Debian's
kernel has no kmemleak (CONFIG_DEBUG_KMEMLEAK is not set), and vhca has
no slab caches of its own (it allocates with kmalloc), so the resource
counts stand for the leak check.
"""

import os
import re
import subprocess
import time
import unittest

from host_common import vhca_fabric

fabric = vhca_fabric.ModuleFabric("faults")
setUpModule, tearDownModule = fabric.start, fabric.stop

PORT = 18600
SERVER_LOG = "/tmp/faults-server.log"
CLIENT_LOG = "/tmp/faults-client.log"
WATCH_LOG = "/tmp/faults-watch.log"
# RDMA WRITEs from guest 2 to guest 1 for longer than any fault takes:
# the requester always has WRITEs outstanding, so it notices a vanished
# responder (ibv_rc_pingpong may be waiting for a receive when the fault
# hits, and then waits forever).  A duration, not a count: perftest keeps
# a timestamp per iteration.
TRAFFIC = "-s 4096 -D 600"
# How long a program may take to notice: the requester's retries take
# about a second (timeout 14, retry count 7: 8 x 67 ms) and TCG is slow.
NOTICE_TIMEOUT = 90
# The hot-unplug cycle repeats this many times (VHCA_FAULT_REPEAT=20 for
# issue 25's "20 times in a row").
FAULT_REPEAT = int(os.environ.get("VHCA_FAULT_REPEAT", "1"))
KERNEL_TROUBLE = r"(WARNING:|BUG:|Oops|general protection|refcount_t|" \
    r"kmemleak|INFO: task .* blocked)"


def run_bg(guest, command, log):
    """Start command in the background; its exit status ends up in log."""
    guest.run("rm -f %s; ((%s); echo \"EXIT $?\") > %s 2>&1 < /dev/null &"
              % (log, command, log))


def wait_exit(guest, log, timeout=NOTICE_TIMEOUT):
    """The exit status run_bg logged, once the command has ended."""
    out = guest.run("for i in $(seq %d); do grep -q '^EXIT ' %s && "
                    "{ cat %s; exit 0; }; sleep 0.1; done; "
                    "echo 'still running:'; cat %s; exit 1"
                    % (timeout * 10, log, log, log), timeout + 30)
    return int(re.search(r"^EXIT (\d+)", out, re.M).group(1)), out


def vhca_bdf(guest):
    return guest.run("for dev in /sys/bus/pci/drivers/vhca/0000:*; do "
                     "echo ${dev##*/}; done").split()[0]


def nic_present(guest):
    """Is the fabric NIC still in guest's QEMU (not yet unplugged)?"""
    return any(p["name"] == vhca_fabric.NIC_ID
               for p in guest.qmp("qom-list", path="/machine/peripheral"))


def device_add_args(guest):
    """device_add's arguments for the fabric NIC, from its -device."""
    driver, *props = guest.nic_device_args().split(",")
    args = {"driver": driver}
    args.update(p.split("=", 1) for p in props)
    return args


def bring_up(guest, timeout=60):
    """Configure the (new) vhca interface as the guest's init does, then
    wait for the RoCE v2 GID of its IPv4 address."""
    guest.run(r"""
for i in $(seq %(polls)d); do
    ifname=
    for dev in /sys/class/net/*; do
        drv=$(readlink $dev/device/driver)
        [ "${drv##*/}" = vhca ] && ifname=${dev##*/}
    done
    [ -n "$ifname" ] && break
    sleep 0.1
done
[ -n "$ifname" ] || { echo "no vhca interface"; exit 1; }
ip link set dev $ifname up
ip addr show dev $ifname | grep -q 'inet %(ip4)s/' ||
    ip addr add %(ip4)s/24 dev $ifname
ip -6 addr show dev $ifname | grep -q 'inet6 %(ip6)s/' ||
    ip -6 addr add %(ip6)s/64 dev $ifname nodad
for i in $(seq %(polls)d); do
    ibv_devinfo -v -d vhca0 2>/dev/null | grep -q "%(gid4)s, RoCE v2" &&
        exit 0
    sleep 0.1
done
ibv_devinfo -v -d vhca0
exit 1
""" % {"ip4": guest.ipv4, "ip6": guest.ipv6, "polls": timeout * 10,
       "gid4": vhca_fabric.ipv4_gid(guest.ipv4)}, timeout + 30)


def resources(guest):
    """`rdma resource show` of vhca0: {"pd": n, "cq": n, ...}."""
    out = guest.run("rdma resource show")
    line = [ln for ln in out.splitlines() if " vhca0:" in ln]
    if not line:
        raise vhca_fabric.FabricError("no vhca0 in:\n" + out)
    return {k: int(v) for k, v in re.findall(r"(\w+) (\d+)", line[0])}


def ready_marks(guest):
    return guest.console_text().count(vhca_fabric.READY_MARK)


def wait_ready_mark(guest, count, timeout=vhca_fabric.BOOT_TIMEOUT):
    deadline = time.monotonic() + timeout
    while ready_marks(guest) < count:
        if not guest.alive():
            raise vhca_fabric.FabricError("guest%d: QEMU exited" % guest.index)
        if time.monotonic() > deadline:
            raise vhca_fabric.FabricError("guest%d did not boot within %ds"
                                          % (guest.index, timeout))
        # Boot progress is only visible in the console log file.
        time.sleep(0.5)


def relaunch(guest):
    """Start a guest whose QEMU has gone again, as Fabric.start did (the
    same ports, binaries and fabric socket), and wait until it is ready."""
    with open(os.path.join(guest.dir, "qemu.cmdline")) as f:
        cmdline = f.read()
    words = cmdline.split()
    qemu = words[0]
    kernel = words[words.index("-kernel") + 1]
    initrd = words[words.index("-initrd") + 1]
    local = int(re.search(r"local\.port=(\d+)", cmdline).group(1))
    remote = int(re.search(r"remote\.port=(\d+)", cmdline).group(1))
    for path in (guest.console, guest.agent_sock, guest.qmp_sock):
        if os.path.exists(path):
            os.unlink(path)
    with vhca_fabric.fabric_socket(local, remote) as sock, \
            open(os.path.join(guest.dir, "qemu.stderr"), "w") as err:
        args = guest.qemu_args(qemu, kernel, initrd, local, remote,
                               fabric.pcap, fabric.extra_args, sock.fileno())
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=err,
                                stderr=subprocess.STDOUT,
                                start_new_session=True,
                                pass_fds=[sock.fileno()])
    guest.pid = proc.pid
    fabric.save_state()
    wait_ready_mark(guest, 1)
    bring_up(guest)


class Faults(unittest.TestCase):
    def setUp(self):
        self.victim, self.peer = fabric[1], fabric[2]
        for g in (self.victim, self.peer):
            g.run("dmesg -C")
        self.baseline = [resources(g) for g in (self.victim, self.peer)]

    def tearDown(self):
        for g in (self.victim, self.peer):
            if g.alive():
                g.exec("pkill ib_write_bw; pkill ibv_asyncwatch; true")
        # A test that failed half-way may leave guest 1's new interface
        # without its addresses: give the next test a usable device.
        if self.victim.alive():
            bring_up(self.victim)

    def start_traffic(self, watch=True, both_ways=False):
        """ib_write_bw from guest 2 into guest 1; with both_ways (-b)
        guest 1 writes too, ringing SQ doorbells in a loop."""
        victim, peer = self.victim, self.peer
        traffic = TRAFFIC + (" -b" if both_ways else "")
        if watch:
            victim.run("command -v ibv_asyncwatch")
            run_bg(victim, "ibv_asyncwatch -d vhca0", WATCH_LOG)
        run_bg(victim, "ib_write_bw -d vhca0 -x %d -p %d -F %s"
               % (victim.ipv4_gid_index(), PORT, traffic), SERVER_LOG)
        victim.run("for i in $(seq 300); do ss -ltn | grep -q ':%d ' && "
                   "exit 0; sleep 0.1; done; cat %s; exit 1"
                   % (PORT, SERVER_LOG))
        before = victim.hw_counters()["rcvd_pkts"]
        run_bg(peer, "ib_write_bw -d vhca0 -x %d -p %d -F %s %s"
               % (peer.ipv4_gid_index(), PORT, traffic, victim.ipv4),
               CLIENT_LOG)
        # Data moves: the victim's device has received a few hundred
        # RoCE packets of the WRITEs.
        deadline = time.monotonic() + 120
        while victim.hw_counters()["rcvd_pkts"] < before + 200:
            status, out = peer.exec("cat %s" % CLIENT_LOG)
            self.assertNotIn("EXIT", out, "the client ended early")
            self.assertLess(time.monotonic(), deadline,
                            "no traffic reached guest1:\n" + out)

    def peer_retry_exceeded(self):
        status, out = wait_exit(self.peer, CLIENT_LOG)
        self.assertNotEqual(status, 0, out)
        # perftest: " Failed status 12: wr_id ..." (IBV_WC_RETRY_EXC_ERR).
        self.assertRegex(out, r"Failed status 12\b|retry counter exceeded")

    def victim_fatal(self):
        """Guest 1's programs learnt that the device went away and ended."""
        self.victim.run("for i in $(seq %d); do "
                        "grep -q IBV_EVENT_DEVICE_FATAL %s && exit 0; "
                        "sleep 0.1; done; cat %s; exit 1"
                        % (NOTICE_TIMEOUT * 10, WATCH_LOG, WATCH_LOG),
                        NOTICE_TIMEOUT + 30)
        # The async event file may stay open for the next event: stop
        # the watcher, whose context the device no longer has anyway.
        self.victim.run("pkill ibv_asyncwatch; true")

    def usable_and_clean(self):
        victim, peer = self.victim, self.peer
        status, client_out, server_out = vhca_fabric.client_server(
            victim, peer,
            "ibv_rc_pingpong -d vhca0 -g %d -p %d -n 100"
            % (victim.ipv4_gid_index(), PORT + 1),
            "ibv_rc_pingpong -d vhca0 -g %d -p %d -n 100 %s"
            % (peer.ipv4_gid_index(), PORT + 1, victim.ipv4), PORT + 1,
            timeout=120)
        self.assertEqual(status, 0, client_out + server_out)
        for g, base in zip((victim, peer), self.baseline):
            self.assertNotRegex(g.run("dmesg"), KERNEL_TROUBLE,
                                "guest%d's kernel log" % g.index)
            # The programs have ended: nothing of it may remain.
            self.assertEqual(resources(g), base,
                             "guest%d's RDMA resources" % g.index)

    def driver_fault(self, command, both_ways=False):
        self.start_traffic(both_ways=both_ways)
        # The fault itself must end: no wait for the open contexts.
        self.victim.run(command, 120)
        self.victim_fatal()
        self.peer_retry_exceeded()
        # perftest's server never touches the device after set-up (the
        # client WRITEs into its memory) and waits out its duration: stop
        # it, its context already gone.
        self.victim.run("pkill ib_write_bw; true")
        bring_up(self.victim)
        self.usable_and_clean()

    def test_function_level_reset(self):
        bdf = vhca_bdf(self.victim)
        self.assertIn("flr", self.victim.run(
            "cat /sys/bus/pci/devices/%s/reset_method" % bdf))
        self.victim.run("echo flr > /sys/bus/pci/devices/%s/reset_method"
                        % bdf)
        try:
            for _ in range(FAULT_REPEAT):
                self.victim.run("dmesg -C")
                self.driver_fault("echo 1 > /sys/bus/pci/devices/%s/reset"
                                  % bdf, both_ways=True)
                log = self.victim.run("dmesg")
                self.assertIn("function reset: taking the device down", log)
        finally:
            self.victim.run("echo default > "
                            "/sys/bus/pci/devices/%s/reset_method" % bdf)

    def test_hot_unplug(self):
        """device_del of guest 1's vhca while guest 1 rings SQ doorbells
        in a loop (ib_write_bw -b) and guest 2 streams into it: the
        guest's ACPI hot-plug driver unbinds the driver, QEMU removes
        the device; then device_add puts a new one in the slot."""
        victim = self.victim
        for _ in range(FAULT_REPEAT):
            self.start_traffic(both_ways=True)
            victim.qmp("device_del", id=vhca_fabric.NIC_ID)
            deadline = time.monotonic() + NOTICE_TIMEOUT
            while nic_present(victim):
                self.assertLess(time.monotonic(), deadline,
                                "the vhca was not unplugged")
                time.sleep(0.2)
            self.victim_fatal()
            self.peer_retry_exceeded()
            victim.run("pkill ib_write_bw; true")
            self.assertEqual(victim.run(
                "ls /sys/bus/pci/drivers/vhca | grep -c '^0000:' || true")
                .strip(), "0")
            victim.qmp("device_add", **device_add_args(victim))
            bring_up(victim)
            self.usable_and_clean()
        # QEMU's side: no sanitizer or guest-error report to read here,
        # but the device answers the monitor as a fresh one.
        self.assertIn("device enabled",
                      victim.qmp("x-query-vhca")["human-readable-text"])

    def test_unbind_bind(self):
        bdf = vhca_bdf(self.victim)
        self.driver_fault("echo %s > /sys/bus/pci/drivers/vhca/unbind && "
                          "echo %s > /sys/bus/pci/drivers/vhca/bind"
                          % (bdf, bdf))

    def test_rmmod_modprobe(self):
        self.driver_fault("rmmod vhca && modprobe vhca")

    def test_system_reset(self):
        # The guests run with -no-reboot: a reset would quit QEMU.
        marks = ready_marks(self.victim)
        self.start_traffic(watch=False)
        # Until the guest is back: the firmware may reset once more.
        self.victim.qmp("set-action", reboot="reset")
        try:
            self.victim.qmp("system_reset")
            self.peer_retry_exceeded()
            wait_ready_mark(self.victim, marks + 1)
        finally:
            if self.victim.alive():
                self.victim.qmp("set-action", reboot="shutdown")
        bring_up(self.victim)
        self.assertNotRegex(self.victim.run("dmesg"), KERNEL_TROUBLE)
        self.victim.run("dmesg -C")
        self.baseline[0] = resources(self.victim)
        self.usable_and_clean()

    def test_power_off(self):
        """Guest 1's QEMU quits; guest 2's fabric socket then refuses
        every send (ECONNREFUSED: nothing listens on guest 1's port), and
        its QEMU keeps going."""
        self.start_traffic(watch=False)
        try:
            self.victim.qmp("quit")
        except (OSError, ValueError, vhca_fabric.FabricError):
            pass  # QEMU may close the socket before it answers.
        deadline = time.monotonic() + 30
        while self.victim.alive():
            self.assertLess(time.monotonic(), deadline, "QEMU did not quit")
            time.sleep(0.1)
        start = time.monotonic()
        self.peer_retry_exceeded()
        self.assertLess(time.monotonic() - start, NOTICE_TIMEOUT)
        self.assertTrue(self.peer.alive())
        relaunch(self.victim)
        self.baseline[0] = resources(self.victim)
        self.usable_and_clean()


if __name__ == "__main__":
    unittest.main()
