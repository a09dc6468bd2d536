#!/usr/bin/python3
"""Start N QEMU guests, each with a vhca (or soft-RoCE), on one Ethernet fabric.

The link between the guests is one of:

    loopback  (the default) two guests back to back with -netdev dgram
              (UDP on 127.0.0.1); more than two each joined to a small
              learning switch (fabric_hub.py), also over -netdev dgram,
              or with InfiniBand ports to an InfiniBand switch that the
              subnet manager programs (vhca-switch, switch/).
    netns     two guests as on two hosts: network namespaces joined only
              by a veth pair, each QEMU in one (ip netns exec) with
              -netdev dgram bound to its namespace's address.
    tap       every guest on a tap device, the taps ports of a bridge in a
              network namespace of its own; -netdev tap.  --bottleneck
              RATE puts a congestion point between the last guest and
              the others: a bridge guest whose port to it is an HTB rate
              limit over an ECN-marking RED queue (congestion_point.py).

netns and tap need root; they make their namespaces (vhca-*) at start and
delete them, with every device in them, at stop.  Every guest keeps its
console log, can capture its fabric traffic to a pcap (QEMU's filter-dump),
and runs commands through a serial-port agent (images/guest/vhca-agent).
With --vcpu-policy idle a guest's vCPU threads run at SCHED_IDLE once it
has booted, so that QEMU's main loops, where vhca's engine runs, never wait
behind a vCPU spinning on a CQ: for measuring polling latency on few cores.
With --guest-idle poll the guests boot with idle=poll: an idle guest spins
on PAUSE, which the project's QEMU turns into a yield of the host CPU
(qemu-patches/0003), instead of halting, so the host's cores never go idle
and a frame does not wait for one to wake (docs/benchmarks.rst).

Used as a library by the tests and as a command:

    vhca_fabric.py start [-n 2] [--nics vhca,rxe] [--link loopback|netns|tap]
                         [--link-layer eth|ib] [--switches N]
                         [--bottleneck RATE]
                         [--vcpu-policy idle|normal] [--guest-idle halt|poll]
                         [--pcap] [--run-dir DIR]
    vhca_fabric.py mtu 9000 | capture-off
    vhca_fabric.py exec  GUEST COMMAND...                   # GUEST: 1..N
    vhca_fabric.py gid   [--ipv6] GUEST    # index of its RoCE v2 GID
    vhca_fabric.py pair  [--port P] [--rdma-cm] SERVER CLIENT SERVER_CMD CLIENT_CMD
    vhca_fabric.py info  GUEST           # the vhca's QPs, CQs, MRs, counters
    vhca_fabric.py switch [--switch S] [info | cable N up|down]
    vhca_fabric.py bottleneck            # the congestion point's queue
    vhca_fabric.py stop

Addresses: guest i has MAC 52:54:00:56:48:<i>, 192.0.2.<i>/24 and
2001:db8::<i>/64 (documentation prefixes: the fabric is private to these
QEMU processes, or to their namespaces, and never reaches a real network).

Each guest's NIC is one of:

    vhca  -device vhca; the guest's RDMA device is vhca0 (the default)
    vhca-ib  -device vhca,link=ib: an InfiniBand port (vhca0; its network
          interface is IPoIB, ib0); the dgram link is the cable, and a
          subnet manager (opensm in a guest) brings the ports ACTIVE
    rxe   -device virtio-net-pci; after boot the guest loads Linux's
          soft-RoCE (rdma_rxe) on it and its RDMA device is rxe0.  This is
          the reference peer for interoperability tests and benchmarks.
"""

import argparse
import atexit
import base64
import ctypes
import hashlib
import inspect
import ipaddress
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid

import congestion_point

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_RUN_DIR = os.environ.get("VHCA_RUN_DIR", "/tmp/vhca-run")
BOOT_TIMEOUT = float(os.environ.get("VHCA_BOOT_TIMEOUT", "180"))
# How long 'migrate' waits for QEMU to move a guest (1 GiB of RAM, TCG).
MIGRATE_TIMEOUT = float(os.environ.get("VHCA_MIGRATE_TIMEOUT", "180"))
# Each guest's fabric socket holds this much unread traffic.  QEMU's own
# dgram socket gets net.core.rmem_default (208 KiB on Debian): a vhca
# answering 16 outstanding 64 KiB READs sends 1024 frames at once, and with
# the default the host dropped a fifth of all frames in a benchmark run,
# each loss costing a go-back-N retry (docs/benchmarks.rst).
FABRIC_RCVBUF = 16 << 20
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
# The largest guest MTU (VHCA_MAX_MTU in include/vhca_hw.h).
GUEST_MAX_MTU = 9000
# A dgram link carries each guest frame (MTU + the 14-byte Ethernet header)
# in one UDP datagram: the network between two hosts needs an MTU of
# 28 bytes more over IPv4 (IPv4 and UDP headers; 48 over IPv6), or IP
# fragments every full-sized frame.  (A guest's VLAN tag takes 4 more;
# the guests here use none.)
DGRAM_UNDERLAY_MTU = GUEST_MAX_MTU + 14 + 20 + 8
READY_MARK = "vhca-guest: ready"
NICS = ("vhca", "vhca-ib", "rxe")
# How each guest's vCPU threads are scheduled on the host once it has
# booted (docs/user-guide.rst, "Benchmarks", and docs/benchmarks.rst).
# "normal", the default, leaves them as QEMU made them.  "idle" puts them
# at SCHED_IDLE: on a host with fewer cores than busy threads, a program
# polling its CQ keeps its vCPU busy, and the QEMU main loop that must
# carry the next frame (where vhca's engine and every backend run) then
# waits out the vCPU's scheduler slice, milliseconds; at SCHED_IDLE a
# woken main loop takes the core at once.  It is for measuring polling
# latency, not a default: between two vhca guests on two host cores
# ib_send_lat's 99th percentile fell from 2.3-2.6 ms to 0.16-0.38 ms, but
# a vCPU then runs only when both main loops are idle, and 64 KiB
# ib_write_bw fell from 790-890 to 530-600 MiB/s and event-driven 64 B
# SENDs from 61-98 to 27-31 thousand a second (docs/benchmarks.rst).
VCPU_POLICIES = ("idle", "normal")
DEFAULT_VCPU_POLICY = os.environ.get("VHCA_VCPU_POLICY", "normal")
# What an idle guest does: halt (the kernel's default) or poll (idle=poll).
GUEST_IDLE = ("halt", "poll")
DEFAULT_GUEST_IDLE = os.environ.get("VHCA_GUEST_IDLE", "halt")


class FabricError(Exception):
    pass


def free_udp_ports(count):
    """Ask the kernel for count free UDP ports on 127.0.0.1."""
    socks, ports = [], []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def fabric_socket(local_port, remote_port):
    """The UDP socket a guest's -netdev dgram uses, with a deep receive
    buffer; connected, so QEMU sends with send() and hears only the peer."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        # Beyond net.core.rmem_max, which needs CAP_NET_ADMIN ...
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, FABRIC_RCVBUF)
    except PermissionError:
        # ... else as much as rmem_max allows.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, FABRIC_RCVBUF)
    sock.bind(("127.0.0.1", local_port))
    sock.connect(("127.0.0.1", remote_port))
    return sock


def stop_process_groups(pids, grace=10):
    """SIGTERM the process groups led by pids (each started with
    start_new_session), SIGKILL those still there after grace seconds."""
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    break
            except ChildProcessError:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
            # Not our child (a fabric attached to): nothing to block on.
            time.sleep(0.1)
        else:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def dgram_netdev(local_host, local_port, remote_host, remote_port,
                 fabric_fd=None):
    """-netdev dgram: each Ethernet frame is one UDP datagram from
    local_host:local_port to remote_host:remote_port, on QEMU's own socket
    or on fabric_fd (a socket from fabric_socket() that QEMU inherits)."""
    if fabric_fd is not None:
        return "dgram,id=fabric,local.type=fd,local.str=%d" % fabric_fd
    return ("dgram,id=fabric,local.type=inet,local.host=%s,local.port=%d,"
            "remote.type=inet,remote.host=%s,remote.port=%d"
            % (local_host, local_port, remote_host, remote_port))


SYS_PIDFD_GETFD = 438           # x86-64 and the generic table alike


def take_fd(pid, fd):
    """A copy of process pid's file descriptor fd (pidfd_getfd(2)), close
    on exec: the fabric socket a QEMU holds, for the QEMU that takes its
    guest over (Fabric.migrate)."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        new = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
        if new < 0:
            err = ctypes.get_errno()
            raise FabricError("cannot take fd %d of process %d: %s"
                              % (fd, pid, os.strerror(err)))
        return new
    finally:
        os.close(pidfd)


def unix_listening(path):
    """Whether a process listens on UNIX socket path (bound is not
    enough: QEMU binds, then listens)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            return False
    return True


def run_bounded(what, check, timeout, alive=None):
    """Poll check() (a value, or None for not yet) until it has one, at
    most timeout seconds; alive() false stops the wait early."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value is not None:
            return value
        if alive is not None and not alive():
            raise FabricError("%s: the process exited" % what)
        if time.monotonic() > deadline:
            raise FabricError("%s: not within %ds" % (what, timeout))
        # QEMU's state is only visible by asking it again.
        time.sleep(0.1)


def run_ip(*args):
    """Run ip(8) (or a command through 'ip netns exec'); a failure raises
    FabricError with what it printed."""
    proc = subprocess.run(("ip",) + args, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if proc.returncode != 0:
        raise FabricError("'ip %s' failed (%d): %s"
                          % (" ".join(args), proc.returncode,
                             proc.stdout.strip()))
    return proc.stdout


class Link:
    """How the guests' NICs reach each other: a fabric has one.

    set_up() makes what the link needs before any QEMU starts (ports, a
    hub, network namespaces); launch_prefix(), netdev() and guest_socket()
    say how to start each guest's QEMU on it; tear_down() removes what
    set_up() made, after the QEMUs have gone.  state()/restore() carry the
    link's part of state.json to 'vhca_fabric.py stop'."""

    name = None

    def __init__(self, fabric):
        self.count = fabric.count
        self.run_dir = fabric.run_dir
        self.nics = fabric.nics
        self.switches = fabric.switches
        self.switch_guests = fabric.switch_guests

    def set_up(self):
        pass

    def tear_down(self):
        pass

    def launch_prefix(self, guest):
        """What QEMU's command line starts with (ip netns exec NS)."""
        return []

    def netdev(self, guest, fabric_fd=None):
        raise NotImplementedError

    def switch_command(self, command, switch=1):
        """A command to one of the fabric's InfiniBand switches: only
        loopback links of InfiniBand guests have them."""
        raise FabricError("the %s link has no InfiniBand switch" % self.name)

    def guest_socket(self, guest):
        """A socket for QEMU to inherit (closed once QEMU started), or
        None: QEMU opens its own."""
        return None

    def state(self):
        return {}

    def restore(self, state):
        pass


def switch_binary():
    """vhca-switch, built if needed (scripts/build-switch.sh)."""
    proc = subprocess.run([os.path.join(HERE, "build-switch.sh")],
                          stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise FabricError("cannot build the InfiniBand switch "
                          "(scripts/build-switch.sh failed)")
    return proc.stdout.split()[-1]


# The InfiniBand switch's node GUID: "VHCA" and the switch's number.
SWITCH_GUID = 0x5648434100000000


class LoopbackLink(Link):
    """UDP on 127.0.0.1 between the QEMUs of this host: two guests back to
    back, more through fabric_hub.py (Ethernet) or through vhca-switch
    (InfiniBand, switch/).  Needs no privileges."""

    name = "loopback"

    def __init__(self, fabric):
        super().__init__(fabric)
        self.ports = {}
        self.hub_pid = None
        self.switch_pids = []
        self.switch_socks = []

    def set_up(self):
        ports = free_udp_ports(2 * self.count + 2 * self.switches)
        if self.switches:
            links = self.start_switches(ports)
        elif self.count == 2:
            links = [(ports[0], ports[1]), (ports[1], ports[0])]
        else:
            hub_port = ports[-1]
            peers = [str(p) for p in ports[:self.count]]
            with open(os.path.join(self.run_dir, "hub.log"), "w") as hub_log:
                hub = subprocess.Popen(
                    [sys.executable, os.path.join(HERE, "fabric_hub.py"),
                     str(hub_port)] + peers,
                    stdout=hub_log, stderr=subprocess.STDOUT,
                    start_new_session=True)
            self.hub_pid = hub.pid
            links = [(p, hub_port) for p in ports[:self.count]]
        self.ports = {i + 1: link for i, link in enumerate(links)}

    def netdev(self, guest, fabric_fd=None):
        local, remote = self.ports[guest.index]
        return dgram_netdev("127.0.0.1", local, "127.0.0.1", remote,
                            fabric_fd)

    def guest_socket(self, guest):
        return fabric_socket(*self.ports[guest.index])

    def start_switches(self, ports):
        """vhca-switch processes in a chain: the guests split among them
        in order (switch 1 has the first ones on its ports 1..k), switch s
        cabled from its port k+1 to port m+2 of switch s+1 (m its guests).
        Each cable is two UDP ports, one at each end."""
        n, free = self.switches, iter(ports)
        per = self.switch_guests
        specs = [[] for _ in range(n)]
        links = []
        for s in range(n):
            for port in range(1, per[s] + 1):
                guest_port, switch_port = next(free), next(free)
                specs[s].append("%d=%d:%d" % (port, switch_port, guest_port))
                links.append((guest_port, switch_port))
        for s in range(n - 1):
            a, b = next(free), next(free)
            specs[s].append("%d=%d:%d" % (per[s] + 1, a, b))
            specs[s + 1].append("%d=%d:%d" % (per[s + 1] + 2, b, a))
        binary = switch_binary()
        for s in range(n):
            sock = os.path.join(self.run_dir, "switch%d.sock" % (s + 1))
            log_path = os.path.join(self.run_dir, "switch%d.log" % (s + 1))
            args = [binary, "--guid", "0x%x" % (SWITCH_GUID | (s + 1)),
                    "--name", "vhca-switch %d" % (s + 1), "--control", sock]
            for spec in specs[s]:
                args += ["--port", spec]
            # A switch that never sleeps, for one pinned to a core of its
            # own (docs/benchmarks.rst, "InfiniBand switch").
            if os.environ.get("VHCA_SWITCH_BUSY_POLL") == "1":
                args.append("--busy-poll")
            if os.path.exists(sock):
                os.unlink(sock)
            with open(log_path, "w") as log:
                switch = subprocess.Popen(args, stdout=log,
                                          stderr=subprocess.STDOUT,
                                          start_new_session=True)
            self.switch_pids.append(switch.pid)
            self.switch_socks.append(sock)
            # Its sockets are bound once the control socket is there.
            deadline = time.monotonic() + 30
            while not os.path.exists(sock):
                if switch.poll() is not None or time.monotonic() > deadline:
                    raise FabricError("vhca-switch %d did not start; see %s"
                                      % (s + 1, log_path))
                time.sleep(0.05)
        return links

    def switch_command(self, command, switch=1):
        """A command to switch @switch's control socket ("info", "cable N
        up|down"), its answer."""
        if not 1 <= switch <= len(self.switch_socks):
            raise FabricError("this fabric has %d InfiniBand switches "
                              "(--switches N with --link-layer ib)"
                              % len(self.switch_socks))
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(self.switch_socks[switch - 1])
            s.sendall((command + "\n").encode())
            return s.makefile().read()

    def tear_down(self):
        pids = self.switch_pids + ([self.hub_pid] if self.hub_pid else [])
        if pids:
            stop_process_groups(pids)
        self.hub_pid = None
        self.switch_pids = []

    def state(self):
        return {"hub": self.hub_pid, "switches": self.switch_pids,
                "switch_socks": self.switch_socks}

    def restore(self, state):
        self.hub_pid = state.get("hub")
        self.switch_pids = state.get("switches", [])
        self.switch_socks = state.get("switch_socks", [])


def namespace_prefix(run_dir):
    """The start of every network namespace a fabric in run_dir makes:
    'vhca-' and a hash of the run directory, so that fabrics in different
    run directories do not meet, and a fabric finds what a killed run in
    its own directory left behind."""
    digest = hashlib.sha1(os.path.realpath(run_dir).encode()).hexdigest()
    return "vhca-%s-" % digest[:8]


class NamespaceLink(Link):
    """A link made of network namespaces (NAMESPACES of them), torn down
    with them: the host's own network is never touched.  Needs root
    (CAP_SYS_ADMIN and CAP_NET_ADMIN)."""

    NAMESPACES = ()

    def __init__(self, fabric):
        super().__init__(fabric)
        prefix = namespace_prefix(self.run_dir)
        self.namespaces = [prefix + suffix for suffix in self.NAMESPACES]
        self.created = []

    def add_namespace(self, ns):
        if ns in run_ip("netns", "list").split():
            pids = run_ip("netns", "pids", ns).split()
            if pids:
                raise FabricError(
                    "network namespace %s is in use by process(es) %s: a "
                    "fabric of %s is running ('vhca_fabric.py --run-dir %s "
                    "stop' ends it)" % (ns, " ".join(pids), self.run_dir,
                                        self.run_dir))
            # Left by a run that was killed before its tear-down.
            run_ip("netns", "del", ns)
        try:
            run_ip("netns", "add", ns)
        except FabricError as e:
            raise FabricError("cannot create a network namespace (the %s "
                              "link needs root): %s" % (self.name, e))
        self.created.append(ns)
        run_ip("-n", ns, "link", "set", "lo", "up")

    def tear_down(self):
        """Delete the namespaces (and with them every veth, bridge and
        tap in them); the QEMUs in them must have exited."""
        errors = []
        for ns in reversed(self.created):
            try:
                run_ip("netns", "del", ns)
            except FabricError as e:
                errors.append(str(e))
        self.created = []
        if errors:
            raise FabricError("; ".join(errors))

    def state(self):
        return {"namespaces": self.created}

    def restore(self, state):
        self.created = list(state.get("namespaces", []))


class NetnsLink(NamespaceLink):
    """Two guests on two "hosts": network namespaces joined only by a veth
    pair, 10.99.0.1/24 and 10.99.0.2/24.  Guest i's QEMU runs in namespace
    i with -netdev dgram on its own socket, bound to its host's address
    and sending to the other's: the command line a user types on two real
    hosts.  The veth carries each frame in a UDP datagram, so its MTU is
    DGRAM_UNDERLAY_MTU, and the guests' jumbo frames are never fragmented
    on the way."""

    name = "netns"
    NAMESPACES = ("host1", "host2")
    SUBNET = "10.99.0.%d"
    PORT = 47910

    def __init__(self, fabric):
        if fabric.count != 2:
            raise FabricError("the netns link joins two guests point to "
                              "point, not %d (the tap link takes more)"
                              % fabric.count)
        super().__init__(fabric)

    def host_address(self, index):
        return self.SUBNET % index

    def set_up(self):
        for ns in self.namespaces:
            self.add_namespace(ns)
        run_ip("link", "add", "vhca-uplink", "netns", self.namespaces[0],
               "type", "veth", "peer", "name", "vhca-uplink",
               "netns", self.namespaces[1])
        for index, ns in enumerate(self.namespaces, 1):
            run_ip("-n", ns, "addr", "add",
                   "%s/24" % self.host_address(index), "dev", "vhca-uplink")
            run_ip("-n", ns, "link", "set", "vhca-uplink", "mtu",
                   str(DGRAM_UNDERLAY_MTU), "up")

    def launch_prefix(self, guest):
        return ["ip", "netns", "exec", self.namespaces[guest.index - 1]]

    def netdev(self, guest, fabric_fd=None):
        peer = 3 - guest.index
        return dgram_netdev(self.host_address(guest.index), self.PORT,
                            self.host_address(peer), self.PORT)


class TapLink(NamespaceLink):
    """Every guest on a tap device, the taps ports of one Linux bridge, all
    in a network namespace of their own (the QEMUs run in it: a tap lives
    in the namespace that opened it).  Frames go from tap to tap as they
    are, so the taps and the bridge need MTU GUEST_MAX_MTU and no
    more."""

    name = "tap"
    NAMESPACES = ("bridge",)
    BRIDGE = "vhca-br0"

    def __init__(self, fabric):
        super().__init__(fabric)
        # With a congestion point (Fabric(bottleneck=...)), the last guest
        # sits alone on a second bridge behind it.
        self.bottleneck = fabric.bottleneck

    def tap(self, guest):
        return "vhca-tap%d" % guest.index

    def set_up(self):
        ns = self.namespaces[0]
        self.add_namespace(ns)
        bridges = [self.BRIDGE]
        if self.bottleneck:
            bridges.append(congestion_point.RECEIVER_BRIDGE)
        for bridge in bridges:
            # No STP (ports forward at once) and no multicast snooping: a
            # plain switch, as fabric_hub.py is.
            run_ip("-n", ns, "link", "add", bridge, "type", "bridge",
                   "stp_state", "0", "mcast_snooping", "0")
            run_ip("-n", ns, "link", "set", bridge, "mtu",
                   str(GUEST_MAX_MTU), "up")
        ports = [("vhca-tap%d" % index, self.BRIDGE)
                 for index in range(1, self.count + 1)]
        if self.bottleneck:
            ports[-1] = (ports[-1][0], bridges[1])
            ports += list(zip(congestion_point.PORT_TAPS, bridges))
        for tap, bridge in ports:
            run_ip("-n", ns, "tuntap", "add", "dev", tap, "mode", "tap")
            run_ip("-n", ns, "link", "set", tap, "mtu", str(GUEST_MAX_MTU),
                   "master", bridge, "up")

    def tap_drops(self):
        """Frames the taps dropped because a QEMU did not read them in
        time (the tap's queue was full): {tap: count}."""
        out = run_ip("-n", self.namespaces[0], "-s", "-j", "link", "show")
        return {link["ifname"]: link["stats64"]["tx"]["dropped"]
                for link in json.loads(out)
                if link["ifname"].startswith(("vhca-tap", "vhca-cp"))}

    def launch_prefix(self, guest):
        return ["ip", "netns", "exec", self.namespaces[0]]

    def netdev(self, guest, fabric_fd=None):
        return "tap,id=fabric,ifname=%s,script=no,downscript=no" \
            % self.tap(guest)


LINKS = {link.name: link for link in (LoopbackLink, NetnsLink, TapLink)}


def guest_ipv4(i):
    return "192.0.2.%d" % i


def guest_ipv6(i):
    return "2001:db8::%d" % i


def guest_mac(i):
    return "52:54:00:56:48:%02x" % i


def ipv4_gid(addr):
    """The RoCE v2 GID of an IPv4 address, ::ffff:a.b.c.d (IBTA A17.4.1.1), as
    ibv_devinfo prints it."""
    return "::ffff:" + addr


def ipv6_gid(addr):
    """The RoCE v2 GID of an IPv6 address, the address itself, as
    ibv_devinfo prints it."""
    return str(ipaddress.IPv6Address(addr))


def roce_v2_gids(devinfo):
    """{GID: index} of the RoCE v2 GIDs in 'ibv_devinfo -v' output."""
    return {gid: int(index) for index, gid in re.findall(
        r"GID\[\s*(\d+)\]:\s+([^\s,]+), RoCE v2", devinfo)}


def build_artifacts():
    """Build QEMU and the guest image (cached); return their paths."""
    qemu = subprocess.run([os.path.join(ROOT, "scripts/build-qemu.sh")],
                          check=True, stdout=subprocess.PIPE,
                          text=True).stdout.strip()
    kernel, initrd = subprocess.run(
        [os.path.join(ROOT, "images/build-image.sh")], check=True,
        stdout=subprocess.PIPE, text=True).stdout.split()
    return qemu, kernel, initrd


class Guest:
    def __init__(self, index, run_dir, nic="vhca", idle="halt", name=None):
        """Guest index of a fabric, its files in run_dir/name (guestINDEX).
        nic: one of NICS, or "bridge" for a congestion point's machine
        (congestion_point.py)."""
        if nic not in NICS + ("bridge",):
            raise FabricError("guest%d: unknown NIC '%s' (have %s)"
                              % (index, nic, ", ".join(NICS)))
        self.index = index
        self.nic = nic
        self.idle = idle        # one of GUEST_IDLE
        # The guest's RDMA device, as ibv_devices and perftest's -d name it.
        self.rdma_dev = "rxe0" if nic == "rxe" else "vhca0"
        self.dir = os.path.join(run_dir, name or "guest%d" % index)
        self.console = os.path.join(self.dir, "console.log")
        self.agent_sock = os.path.join(self.dir, "agent.sock")
        self.qmp_sock = os.path.join(self.dir, "qmp.sock")
        self.pcap = os.path.join(self.dir, "fabric.pcap")
        self.ipv4 = guest_ipv4(index)
        self.ipv6 = guest_ipv6(index)
        self.mac = guest_mac(index)
        self.pid = None

    def gid_index(self, gid):
        """The index of RoCE v2 GID gid (as ibv_devinfo prints it) in the
        guest's GID table: the -g / -x argument of the programs."""
        out = self.run("ibv_devinfo -v -d %s" % self.rdma_dev)
        gids = roce_v2_gids(out)
        if gid not in gids:
            raise FabricError("guest%d has no RoCE v2 GID %s:\n%s"
                              % (self.index, gid, out))
        return gids[gid]

    def hw_counters(self, tool="rdma"):
        """The device counters as {name: value}: from `rdma statistic`
        (the RoCE transport's) or `ethtool -S` (all of them)."""
        if tool == "rdma":
            out = self.run("rdma statistic show link %s/1" % self.rdma_dev)
            pairs = re.findall(r"(\w+) (\d+)", out.split("/1", 1)[-1])
        else:
            out = self.run("ethtool -S %s" % self.ifname())
            pairs = re.findall(r"^\s*(\w+): (\d+)$", out, re.M)
        return {name: int(value) for name, value in pairs}

    def devlink_handle(self):
        """The vhca's devlink handle: pci/ and its PCI address."""
        return "pci/" + self.run(
            "basename $(readlink -f /sys/class/infiniband/vhca0/device)"
        ).strip()

    def devlink_params(self):
        """The vhca's runtime devlink parameters (its congestion control
        switches and DCQCN's parameters) as {name: value}, the values as
        devlink prints them."""
        out = self.run("devlink dev param show %s" % self.devlink_handle())
        return dict(re.findall(
            r"name (\w+) type driver-specific\s+values:\s+"
            r"cmode runtime value (\S+)", out))

    def set_devlink_params(self, params):
        """Set runtime devlink parameters ({name: value}), all or, at the
        first devlink refuses, none after it (FabricError says which)."""
        handle = self.devlink_handle()
        for name, value in sorted(params.items()):
            status, out = self.exec(
                "devlink dev param set %s name %s value %s cmode runtime "
                "2>&1" % (handle, name, value))
            if status:
                raise FabricError("guest%d: devlink refused %s = %s: %s"
                                  % (self.index, name, value, out.strip()))

    def set_pfc(self, setting):
        """PFC of the vhca's interface through DCB netlink, as on any Linux
        NIC: `dcb pfc set dev IF prio-pfc SETTING` ("3:on", "all:off")."""
        status, out = self.exec("dcb pfc set dev %s prio-pfc %s 2>&1"
                                % (self.ifname(), setting))
        if status:
            raise FabricError("guest%d: dcb pfc set %s: %s"
                              % (self.index, setting, out.strip()))

    def set_rx_frame_rate(self, rate):
        """Make the vhca a receiver that takes at most rate requests a
        second (its x-rx-frame-rate property; 0: as fast as it can)."""
        self.qmp("qom-set", path="/machine/peripheral/" + NIC_ID,
                 property="x-rx-frame-rate", value=rate)

    def ipv4_gid_index(self):
        """The index of the GID of the guest's IPv4 address."""
        return self.gid_index(ipv4_gid(self.ipv4))

    def ipv6_gid_index(self):
        """The index of the GID of the guest's IPv6 address."""
        return self.gid_index(ipv6_gid(self.ipv6))

    def qemu_args(self, qemu, kernel, initrd, local_port, remote_port,
                  pcap, extra, fabric_fd=None, netdev=None):
        """QEMU's command line.  The fabric NIC's backend is netdev (a
        -netdev value, id=fabric) or else UDP from local_port to
        remote_port on 127.0.0.1: QEMU's own socket, or fabric_fd (a
        socket from fabric_socket() that QEMU inherits)."""
        if netdev is None:
            netdev = dgram_netdev("127.0.0.1", local_port, "127.0.0.1",
                                  remote_port, fabric_fd)
        append = ("console=ttyS0 rdinit=/init panic=-1 loglevel=4 "
                  "guest_name=guest%d guest_ip=%s/24 guest_ip6=%s/64"
                  % (self.index, self.ipv4, self.ipv6))
        if self.idle == "poll":
            append += " idle=poll"
        args = [
            qemu, "-machine", "q35", "-accel", "tcg", "-cpu", "max",
            "-m", "1024", "-smp", "1", "-nodefaults", "-display", "none",
            "-no-reboot",
            "-kernel", kernel, "-initrd", initrd, "-append", append,
            "-serial", "file:" + self.console,
            "-chardev", "socket,id=agent,path=%s,server=on,wait=off"
            % self.agent_sock,
            "-serial", "chardev:agent",
            "-qmp", "unix:%s,server=on,wait=off" % self.qmp_sock,
        ]
        return args + self.fabric_nic_args(netdev, pcap) + list(extra)

    def fabric_nic_args(self, netdev, pcap):
        """The fabric NIC's part of QEMU's command line."""
        if self.nic == "bridge":
            return congestion_point.nic_args()
        args = [
            "-netdev", netdev,
            # In a slot, as in a real machine: a device on pcie.0 cannot
            # be hot-unplugged (test_faults.HotUnplug does).
            "-device", "pcie-root-port,id=%s,chassis=1" % NIC_SLOT,
            "-device", self.nic_device_args(),
        ]
        if pcap:
            args += ["-object",
                     "filter-dump,id=dump,netdev=fabric,file=%s" % self.pcap]
        return args

    def nic_device_args(self):
        """The fabric NIC's -device value (also device_add's)."""
        return "%s,id=%s,bus=%s,netdev=fabric,mac=%s" % (
            self.nic_device(), NIC_ID, NIC_SLOT, self.mac)

    def nic_device(self):
        if self.nic == "vhca":
            return "vhca"
        if self.nic == "vhca-ib":
            return "vhca,link=ib"
        # No option ROM: the guest boots with -kernel, not from the network.
        return "virtio-net-pci,romfile="

    def netdev_driver(self):
        """The guest kernel driver bound to the fabric NIC."""
        return "virtio_net" if self.nic == "rxe" else "vhca"

    def ifname(self):
        """The name of the guest's network interface on the fabric (on an
        InfiniBand port the IPoIB interface the guest's init made)."""
        if self.nic == "vhca-ib":
            return "ib0"
        return self.run(
            "for dev in /sys/class/net/*; do "
            "drv=$(readlink $dev/device/driver); "
            "[ \"${drv##*/}\" = %s ] && echo ${dev##*/}; done; true"
            % self.netdev_driver()).strip()

    def set_mtu(self, mtu, timeout=60):
        """Set the fabric interface's MTU and wait until the RDMA device
        follows it (its active_mtu is the largest IB MTU that fits, IBTA
        A17.4.4 / Linux iboe_get_mtu): 9000 gives path MTU 4096, 1500 gives
        1024."""
        ib_mtu = max(m for m in (256, 512, 1024, 2048, 4096)
                     if m <= mtu - 96) if mtu >= 352 else 0
        self.run("ip link set dev %s mtu %d && for i in $(seq %d); do "
                 "ibv_devinfo -d %s | grep -q 'active_mtu:.*(%d)' && exit 0; "
                 "sleep 0.2; done; ibv_devinfo -d %s; exit 1"
                 % (self.ifname(), mtu, timeout * 5, self.rdma_dev,
                    {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}[ib_mtu],
                    self.rdma_dev), timeout + 30)

    def stop_capture(self):
        """End the fabric capture (--pcap): the pcap keeps what it holds,
        and later frames no longer pay for being written."""
        self.qmp("object-del", id="dump")

    def set_up_rxe(self, timeout=60):
        """Bring up soft-RoCE on the virtio-net interface.

        The guest's init only configures a vhca interface, so this loads
        virtio_net and rdma_rxe, gives the interface the guest's addresses
        and adds rxe0 on it, then waits until the RDMA core has turned the
        IPv4 address into a RoCE v2 GID (as init does for vhca, the IPv6
        address skips duplicate address detection so its GID appears at
        once).
        """
        script = r"""
set -e
modprobe virtio_net
for i in $(seq 100); do
    for dev in /sys/class/net/*; do
        drv=$(readlink $dev/device/driver || true)
        [ "${drv##*/}" = virtio_net ] && ifname=${dev##*/}
    done
    [ -n "$ifname" ] && break
    sleep 0.1
done
[ -n "$ifname" ] || { echo "no virtio_net interface"; exit 1; }
ip link set dev $ifname up
ip addr add %(ip4)s/24 dev $ifname
ip -6 addr add %(ip6)s/64 dev $ifname nodad
modprobe rdma_rxe
rdma link add %(dev)s type rxe netdev $ifname
for i in $(seq %(polls)d); do
    ibv_devinfo -v -d %(dev)s | grep -q "%(gid4)s, RoCE v2" && exit 0
    sleep 0.2
done
ibv_devinfo -v -d %(dev)s
echo "%(dev)s has no RoCE v2 GID for %(ip4)s"
exit 1
""" % {"ip4": self.ipv4, "ip6": self.ipv6, "dev": self.rdma_dev,
            "gid4": ipv4_gid(self.ipv4), "polls": timeout * 5}
        self.run(script, timeout + 30)

    def console_text(self):
        try:
            with open(self.console, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def alive(self):
        if self.pid is None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        # A zombie child still "exists"; reap it if it is ours.
        try:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
            return pid == 0
        except ChildProcessError:
            return True

    def exec(self, command, timeout=120):
        """Run command (a shell string) in the guest; return (status, output)."""
        tag = uuid.uuid4().hex[:12]
        line = "%s %s\n" % (tag, base64.b64encode(command.encode()).decode())
        end_prefix = "<<<VHCA-END %s " % tag
        deadline = time.monotonic() + timeout
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(self.agent_sock)
            s.sendall(line.encode())
            buf = b""
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise FabricError("guest%d: command timed out after %ds: %s"
                                      % (self.index, timeout, command))
                s.settimeout(left)
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    continue
                if not chunk:
                    raise FabricError("guest%d: agent connection closed "
                                      "(did QEMU exit? see %s)"
                                      % (self.index, self.console))
                buf += chunk
                text = buf.decode(errors="replace")
                end = text.find(end_prefix)
                if end >= 0 and text.find(">>>", end + len(end_prefix)) >= 0:
                    break
        begin_mark = "<<<VHCA-BEGIN %s>>>\n" % tag
        begin = text.index(begin_mark) + len(begin_mark)
        payload = text[begin:end].strip()
        status = int(text[end + len(end_prefix):].split(">>>")[0])
        return status, base64.b64decode(payload).decode(errors="replace")

    def run(self, command, timeout=120):
        """Like exec, but a non-zero status raises FabricError."""
        status, out = self.exec(command, timeout)
        if status != 0:
            raise FabricError("guest%d: '%s' exited %d:\n%s"
                              % (self.index, command, status, out))
        return out

    def put_file(self, guest_path, host_path):
        """Copy a host file into the guest, in pieces that fit one command
        line (the agent runs each command through bash)."""
        with open(host_path, "rb") as f:
            data = base64.b64encode(f.read()).decode()
        chunk = 64 * 1024
        self.run(": > %s.b64" % guest_path)
        for off in range(0, len(data), chunk):
            self.run("echo %s >> %s.b64" % (data[off:off + chunk], guest_path))
        self.run("base64 -d %s.b64 > %s && rm %s.b64"
                 % (guest_path, guest_path, guest_path))

    def set_vcpu_policy(self, policy):
        """Schedule the guest's vCPU threads by policy (VCPU_POLICIES)."""
        if policy == "normal":
            return
        for cpu in self.qmp("query-cpus-fast"):
            try:
                os.sched_setscheduler(cpu["thread-id"], os.SCHED_IDLE,
                                      os.sched_param(0))
            except OSError as e:
                raise FabricError("guest%d: cannot put vCPU thread %d at "
                                  "SCHED_IDLE: %s (start with --vcpu-policy "
                                  "normal)" % (self.index, cpu["thread-id"],
                                               e.strerror))

    def vcpu_policies(self):
        """The host scheduling policy of each of the guest's vCPU threads
        (os.SCHED_*)."""
        return [os.sched_getscheduler(cpu["thread-id"])
                for cpu in self.qmp("query-cpus-fast")]

    def qmp(self, command, **arguments):
        """Send one QMP command; return its 'return' value."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(self.qmp_sock)
            f = s.makefile("rw")
            greeting = json.loads(f.readline())
            if "QMP" not in greeting:
                raise FabricError("guest%d: QMP greeted with %r"
                                  % (self.index, greeting))
            for cmd in ({"execute": "qmp_capabilities"},
                        {"execute": command, "arguments": arguments}):
                f.write(json.dumps(cmd) + "\n")
                f.flush()
                while True:
                    reply = json.loads(f.readline())
                    if "event" not in reply:
                        break
                if "error" in reply:
                    raise FabricError("guest%d: QMP %s failed: %s"
                                      % (self.index, command,
                                         reply["error"]["desc"]))
            return reply.get("return")

    def qmp_job(self, command, timeout, **arguments):
        """Run a QMP command that starts a job (blockdev-create,
        snapshot-save...) and wait, at most timeout seconds, for the job
        to conclude; a job that ended with an error raises it."""
        job = "vhca-" + uuid.uuid4().hex[:8]
        self.qmp(command, **{"job-id": job}, **arguments)

        def concluded():
            for j in self.qmp("query-jobs"):
                if j["id"] == job and j["status"] == "concluded":
                    return j
            return None
        done = run_bounded("guest%d's %s" % (self.index, command), concluded,
                           timeout, self.alive)
        # Both job kinds this serves wait to be dismissed (QEMU's
        # JOB_MANUAL_DISMISS), so their error stays readable until here.
        self.qmp("job-dismiss", id=job)
        if done.get("error"):
            raise FabricError("guest%d: %s failed: %s"
                              % (self.index, command, done["error"]))

    # The qcow2 node snapshots go to: the guests boot from an initramfs and
    # have no disk, and savevm needs a block device that holds snapshots.
    SNAPSHOT_NODE = "vhca-snapshots"
    SNAPSHOT_IMAGE_SIZE = 4 << 30       # room for 1 GiB of RAM, and more

    def snapshot_node(self):
        """The node snapshots of this QEMU go to: a qcow2 file in the
        guest's directory, created and added (blockdev-create,
        blockdev-add) on first use, as a user adds a disk to a running
        VM.  A new QEMU (after a migration) makes a new one."""
        node = self.SNAPSHOT_NODE
        if any(n.get("node-name") == node
               for n in self.qmp("query-named-block-nodes")):
            return node
        path = os.path.join(self.dir, "snapshots.qcow2")
        self.qmp_job("blockdev-create", 30,
                     options={"driver": "file", "filename": path, "size": 0})
        self.qmp("blockdev-add", driver="file", filename=path,
                 **{"node-name": node + "-file"})
        self.qmp_job("blockdev-create", 30,
                     options={"driver": "qcow2", "file": node + "-file",
                              "size": self.SNAPSHOT_IMAGE_SIZE})
        self.qmp("blockdev-add", driver="qcow2", file=node + "-file",
                 **{"node-name": node})
        return node

    def savevm(self, tag, timeout=MIGRATE_TIMEOUT):
        """Save the guest's RAM and devices as snapshot tag (QMP
        snapshot-save, HMP's savevm): the VM stops while it is written and
        then runs on as it was (running or stopped)."""
        node = self.snapshot_node()
        self.qmp_job("snapshot-save", timeout, tag=tag, vmstate=node,
                     devices=[node])

    def loadvm(self, tag, timeout=MIGRATE_TIMEOUT):
        """Take the guest back to snapshot tag (QMP snapshot-load, HMP's
        loadvm): its RAM and devices, the vhca's QPs with their PSNs and
        timers among them, replace the running ones."""
        node = self.snapshot_node()
        self.qmp_job("snapshot-load", timeout, tag=tag, vmstate=node,
                     devices=[node])


# The fabric NIC's QOM ID and the PCIe root port it sits in.
NIC_ID = "nic"
NIC_SLOT = "slot1"

# Shell tests that succeed once a server is ready for its client.
READY_TCP = "ss -ltn | grep -q ':%(port)d '"
# An rdma_cm listener (rping, ucmatose, udaddy, rdma_server, rstream,
# perftest -R): the kernel lists it as a LISTEN cm_id on that port.
READY_RDMA_CM = "rdma res show cm_id | grep LISTEN | grep -q ':%(port)d'"


def switch_split(text):
    """--switches: N, or the guests of each switch (3,1)."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            "%r: give a number of switches, or the guests of each (3,1)"
            % text)
    return values[0] if len(values) == 1 else values


def client_server(server, client, server_cmd, client_cmd, port,
                  timeout=300, ready=READY_TCP):
    """Run a program pair that meets at a port.

    Starts server_cmd in the background in guest server, polls the shell
    test ready (a READY_* template, %(port)d filled in) until the server is
    there to meet, runs client_cmd in guest client, then waits for the
    server to end by itself (it does once its client is done; it is killed
    after timeout, or 10 s after a client that failed).  Returns (client
    status, client output, server output); a server that had to be killed
    counts as a failed client.
    """
    server.run("(%s) > /tmp/server.log 2>&1 & echo $! > /tmp/server.pid"
               % server_cmd)
    server.run("for i in $(seq 300); do %s && exit 0; "
               "sleep 0.1; done; cat /tmp/server.log; exit 1"
               % (ready % {"port": port}))
    status, client_out = client.exec(client_cmd, timeout)
    wait = timeout if status == 0 else 10
    server_status, _ = server.exec(
        "pid=$(cat /tmp/server.pid); end=$(($(date +%%s) + %d)); "
        "while kill -0 $pid 2>/dev/null; do "
        "[ $(date +%%s) -lt $end ] || { kill $pid; exit 1; }; sleep 0.1; "
        "done" % wait, wait + 30)
    server_out = server.run("cat /tmp/server.log")
    if status == 0 and server_status != 0:
        status = 1
        client_out += "\n(the server did not end by itself; killed)\n"
    return status, client_out, server_out


def start_for_tests(name, fabric_class=None, **kwargs):
    """A booted, ready fabric for one test module, its files in
    $VHCA_RUN_DIR/name; stopped again if it does not come up.  kwargs
    go to the fabric class (Fabric by default)."""
    return (fabric_class or Fabric)(
        run_dir=os.path.join(DEFAULT_RUN_DIR, name), **kwargs).boot()


class ModuleFabric:
    """The fabric of one test module, booted once for all its tests
    (booting is the slow part under TCG):

        fabric = vhca_fabric.ModuleFabric("rc")
        setUpModule, tearDownModule = fabric.start, fabric.stop

    start() is start_for_tests(name, fabric_class, **kwargs).  Once it has
    run, fabric[i] is guest i and every other attribute is the booted
    fabric's (fabric.control(...) of a relayed one, say).

    Test modules that ask for the same fabric share one boot: stop() hands
    the fabric to SHARED instead of stopping it, and the next module's
    start() takes it back if it asks for the same kind and its guests
    still answer (tests/run_all.py runs such modules one after another).
    A module must therefore leave its fabric as it found it: the MTU, the
    daemons, the addresses.  $VHCA_SHARE_FABRICS=0 boots one per module."""

    def __init__(self, name, fabric_class=None, **kwargs):
        self.name = name
        self.fabric_class = fabric_class
        self.kwargs = kwargs
        self.fabric = None

    def arguments(self):
        """Every argument the fabric class is built with, defaults
        filled in."""
        cls = self.fabric_class or Fabric
        bound = inspect.signature(cls.__init__).bind(None, run_dir=None,
                                                     **self.kwargs)
        bound.apply_defaults()
        args = dict(bound.arguments)
        args.pop("self")
        args.pop("run_dir")
        if args.get("nics") is None and "count" in args:
            args["nics"] = ["vhca"] * args["count"]
        return args

    def key(self):
        """What makes two modules' fabrics interchangeable: the class and
        every argument it is built with."""
        cls = self.fabric_class or Fabric
        return (cls.__module__, cls.__qualname__,
                repr(sorted((k, tuple(v) if isinstance(v, list) else v)
                            for k, v in self.arguments().items())))

    def guest_count(self):
        """How many guests (QEMUs) the fabric boots."""
        return len(self.arguments().get("nics") or ["vhca", "vhca"])

    def start(self):
        self.fabric = SHARED.take(self.key(), self.name)
        if self.fabric is None:
            SHARED.clear()
            self.fabric = start_for_tests(self.name, self.fabric_class,
                                          **self.kwargs)
        return self.fabric

    def stop(self):
        """Hand the fabric to the next module of the same kind."""
        if self.fabric:
            SHARED.keep(self.key(), self.fabric)
            self.fabric = None

    def discard(self):
        """Stop the fabric: it is not fit for another module."""
        if self.fabric:
            self.fabric.stop()
            self.fabric = None

    def booted(self):
        fabric = self.__dict__.get("fabric")
        if fabric is None:
            raise FabricError("the %s fabric is not started" % self.name)
        return fabric

    def __getitem__(self, index):
        return self.booted()[index]

    def __getattr__(self, name):
        # Only for names this class does not have itself.
        return getattr(self.booted(), name)


class SharedFabrics:
    """The one booted fabric kept between test modules (ModuleFabric):
    one at most, so that no more guests run at once than one module
    needs; stopped at exit."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.key = self.fabric = None
        atexit.register(self.clear)

    def keep(self, key, fabric):
        if not self.enabled:
            fabric.stop()
            return
        self.clear()
        self.key, self.fabric = key, fabric

    def take(self, key, name):
        """The kept fabric if it is of kind key and every guest answers,
        else None (a fabric of another kind stays kept)."""
        if self.fabric is None or key != self.key:
            return None
        fabric, self.key, self.fabric = self.fabric, None, None
        if all(self.answers(guest) for guest in fabric.guests):
            print("[vhca] %s: the guests of %s, still booted"
                  % (name, fabric.run_dir), file=sys.stderr, flush=True)
            return fabric
        print("[vhca] %s: the kept guests of %s do not answer; booting "
              "new ones" % (name, fabric.run_dir), file=sys.stderr,
              flush=True)
        fabric.stop()
        return None

    @staticmethod
    def answers(guest):
        if not guest.alive():
            return False
        try:
            status, _ = guest.exec("test -e /sys/class/infiniband/%s"
                                   % guest.rdma_dev, timeout=30)
        except (FabricError, OSError):
            return False
        return status == 0

    def clear(self):
        if self.fabric is not None:
            fabric, self.key, self.fabric = self.fabric, None, None
            fabric.stop()


SHARED = SharedFabrics(os.environ.get("VHCA_SHARE_FABRICS", "1") != "0")


def one_of(what, value, allowed, default=None):
    """value (default if it is None), which must be one of allowed."""
    if value is None:
        value = default
    if value not in allowed:
        raise FabricError("unknown %s '%s' (have %s)"
                          % (what, value, ", ".join(allowed)))
    return value


class Fabric:
    """N guests on one fabric. Use as a context manager: stop() on exit."""

    def __init__(self, count=2, run_dir=DEFAULT_RUN_DIR, pcap=False,
                 extra_args=(), nics=None, link="loopback",
                 vcpu_policy=None, guest_idle=None, switches=None,
                 bottleneck=None):
        """nics: one NIC kind per guest ("vhca" or "rxe"); all vhca if None.
        link: how the guests meet, one of LINKS: "loopback" (UDP on
        127.0.0.1), "netns" (two namespaces as two hosts, UDP between
        them) or "tap" (taps on a bridge in a namespace).  vcpu_policy:
        how the guests' vCPU threads are scheduled once booted, one of
        VCPU_POLICIES ($VHCA_VCPU_POLICY, or "normal", if None).
        guest_idle: what an idle guest does, one of GUEST_IDLE
        ($VHCA_GUEST_IDLE, or "halt", if None).  switches: how many
        vhca-switch processes InfiniBand guests on a loopback link meet
        at, in a chain (None: one for three guests or more, none for
        two, which are cabled back to back), the guests split evenly
        among them in order; or a list of how many guests each switch
        has ([3, 1]: guests 1-3 on switch 1, guest 4 on switch 2).
        bottleneck: a tc rate
        ("100mbit") for a congestion point (congestion_point.py) between
        the last guest and the others, on the tap link."""
        if count < 1:
            raise FabricError("need at least one guest")
        if nics is None:
            nics = ["vhca"] * count
        if len(nics) != count:
            raise FabricError("%d guests but %d NICs (%s)"
                              % (count, len(nics), ",".join(nics)))
        link = one_of("link", link, LINKS)
        self.vcpu_policy = one_of("vCPU policy", vcpu_policy, VCPU_POLICIES,
                                  DEFAULT_VCPU_POLICY)
        self.guest_idle = one_of("guest idle", guest_idle, GUEST_IDLE,
                                 DEFAULT_GUEST_IDLE)
        self.count = count
        self.run_dir = run_dir
        self.pcap = pcap
        self.extra_args = extra_args
        self.nics = list(nics)
        ib = set(self.nics) == {"vhca-ib"}
        if switches is None:
            switches = 1 if ib and count > 2 and link == "loopback" else 0
        if isinstance(switches, int):
            per = [count // switches + (1 if s < count % switches else 0)
                   for s in range(switches)]
        else:
            per = list(switches)
        if per and (not ib or link != "loopback" or sum(per) != count or
                    min(per) < 1):
            raise FabricError("switches %s: InfiniBand switches join "
                              "vhca-ib guests on the loopback link, at "
                              "least one guest each, %d in all"
                              % (",".join(map(str, per)), count))
        self.switches = len(per)
        self.switch_guests = per
        if bottleneck and (link != "tap" or count < 2):
            raise FabricError("a bottleneck stands between guests on the "
                              "tap link, two at least (--link tap -n 3)")
        self.bottleneck = bottleneck
        self.guests = [Guest(i + 1, run_dir, nic, guest_idle)
                       for i, nic in enumerate(self.nics)]
        self.cpoint = None
        if bottleneck:
            self.cpoint = congestion_point.CongestionPoint(
                Guest(count + 1, run_dir, "bridge", name="congestion-point"),
                bottleneck)
        self.link = LINKS[link](self)

    def machines(self):
        """Every QEMU of the fabric: the guests and the congestion point's."""
        return self.guests + ([self.cpoint.machine] if self.cpoint else [])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __getitem__(self, index):
        """fabric[1] is guest 1."""
        return self.guests[index - 1]

    def boot(self):
        """start() and wait_ready(); stopped again if it does not come
        up.  Returns the fabric."""
        try:
            self.start().wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def start(self, qemu=None, kernel=None, initrd=None):
        if qemu is None:
            qemu, kernel, initrd = build_artifacts()
        os.makedirs(self.run_dir, exist_ok=True)
        # Saved first, so that stop() of a start that failed half-way
        # still finds what the link made.
        self.save_state()
        self.link.set_up()
        self.save_state()
        for guest in self.machines():
            self.launch(guest, qemu, kernel, initrd)
        self.save_state()
        return self

    def launch(self, guest, qemu, kernel, initrd):
        """Start guest's QEMU on the fabric's link."""
        os.makedirs(guest.dir, exist_ok=True)
        for f in (guest.console, guest.agent_sock, guest.qmp_sock,
                  guest.pcap):
            if os.path.exists(f):
                os.unlink(f)
        prefix = self.link.launch_prefix(guest)
        # qemu.cmdline is for starting a guest by hand: with QEMU's own
        # socket, as an inherited fd is not there then.
        with open(os.path.join(guest.dir, "qemu.cmdline"), "w") as f:
            f.write(" ".join(prefix + guest.qemu_args(
                qemu, kernel, initrd, None, None, self.pcap,
                self.extra_args, netdev=self.link.netdev(guest))) + "\n")
        sock = self.link.guest_socket(guest)
        try:
            fds = [sock.fileno()] if sock else []
            netdev = self.link.netdev(guest, sock.fileno() if sock else None)
            with open(os.path.join(guest.dir, "qemu.stderr"), "w") as err:
                args = prefix + guest.qemu_args(
                    qemu, kernel, initrd, None, None, self.pcap,
                    self.extra_args, netdev=netdev)
                proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                        stdout=err, stderr=subprocess.STDOUT,
                                        start_new_session=True,
                                        pass_fds=fds)
        finally:
            if sock:
                sock.close()
        guest.pid = proc.pid

    def migrate(self, index, timeout=MIGRATE_TIMEOUT):
        """Live-migrate guest index to a new QEMU on this host, while the
        fabric runs: the same command line plus -incoming, the guest's
        RAM and devices through a UNIX socket, then the fabric's records
        (pid, QMP and agent sockets, state.json) are the new process's
        and the old one is stopped.  The new QEMU takes the old one's
        fabric socket itself (pidfd_getfd), so peers keep talking to the
        same UDP address with no moment where nobody holds it, and
        frames sent to it during the downtime wait in its receive queue
        (docs/user-guide.rst, "Migrating a guest").  Returns
        query-migrate's answer (downtime, total-time in ms)."""
        guest = self[index]
        if self.link.name != "loopback" or self.switches or \
                guest.nic == "bridge":
            raise FabricError("migrate: guests on the loopback link, back "
                              "to back or through the hub (this is %s)"
                              % self.link.name)
        if not guest.alive():
            raise FabricError("guest%d is not running" % index)
        with open("/proc/%d/cmdline" % guest.pid, "rb") as f:
            args = [a.decode() for a in f.read().split(b"\0")[:-1]]
        # A name of its own each time: a QEMU that exits unlinks the name
        # it bound its socket to, though the socket was renamed since.
        suffix = ".m" + uuid.uuid4().hex[:8]
        new_qmp, new_agent = guest.qmp_sock + suffix, \
            guest.agent_sock + suffix
        incoming = os.path.join(guest.dir, "migrate.sock")
        for f in (new_qmp, new_agent, incoming):
            if os.path.exists(f):
                os.unlink(f)
        fd = None
        dst_args = []
        for arg in args:
            m = re.search(r"local\.str=(\d+)", arg)
            if m:
                fd = take_fd(guest.pid, int(m.group(1)))
                arg = arg.replace(m.group(0), "local.str=%d" % fd)
            elif arg == "file:" + guest.console:
                # Kept, not truncated: the boot log is still the guest's.
                # This replaces "-serial file:CONSOLE", "-serial" included.
                dst_args[-1:] = ["-chardev", "file,id=console,path=%s,"
                                 "append=on" % guest.console, "-serial"]
                arg = "chardev:console"
            # The first QEMU's names, or those of an earlier migration.
            arg = re.sub(r"path=%s(\.m[0-9a-f]+)?," % re.escape(
                guest.agent_sock), "path=%s," % new_agent, arg)
            arg = re.sub(r"unix:%s(\.m[0-9a-f]+)?," % re.escape(
                guest.qmp_sock), "unix:%s," % new_qmp, arg)
            dst_args.append(arg)
        if fd is None:
            raise FabricError("guest%d: no fabric socket on QEMU's command "
                              "line" % index)
        dst_args += ["-incoming", "defer"]
        try:
            with open(os.path.join(guest.dir, "qemu.stderr"), "a") as err:
                proc = subprocess.Popen(dst_args, stdin=subprocess.DEVNULL,
                                        stdout=err, stderr=subprocess.STDOUT,
                                        start_new_session=True,
                                        pass_fds=[fd])
        finally:
            os.close(fd)
        dst = Guest(index, self.run_dir, guest.nic, guest.idle)
        dst.qmp_sock, dst.agent_sock, dst.pid = new_qmp, new_agent, proc.pid
        try:
            run_bounded("guest%d's new QEMU: QMP" % index,
                        lambda: True if unix_listening(new_qmp) else None,
                        30, dst.alive)
            dst.qmp("migrate-incoming", uri="unix:" + incoming)
            guest.qmp("migrate-set-parameters",
                      **{"max-bandwidth": 1 << 30})
            guest.qmp("migrate", uri="unix:" + incoming)

            def finished():
                info = guest.qmp("query-migrate")
                if info.get("status") in ("completed", "failed",
                                          "cancelled"):
                    return info
                return None
            info = run_bounded("guest%d's migration" % index, finished,
                               timeout)
            if info["status"] != "completed":
                raise FabricError("guest%d: migration %s: %s (see %s)"
                                  % (index, info["status"],
                                     info.get("error-desc", "no reason"),
                                     os.path.join(guest.dir, "qemu.stderr")))
            def running():
                status = dst.qmp("query-status")
                if not isinstance(status, dict) or "running" not in status:
                    # Seen once (a whole test command, 2026-12-06), not
                    # reproduced: say what QMP answered, not KeyError.
                    raise FabricError("guest%d: query-status on the new "
                                      "QEMU answered %r" % (index, status))
                return True if status["running"] else None
            run_bounded("guest%d running on its new QEMU" % index, running,
                        30, dst.alive)
        except BaseException:
            # The source runs on (QEMU resumes it after a failed send).
            stop_process_groups([proc.pid])
            for f in (new_qmp, new_agent):
                if os.path.exists(f):
                    os.unlink(f)
            raise
        old_pid = guest.pid
        guest.pid = proc.pid
        self.save_state()
        stop_process_groups([old_pid])
        # A bound UNIX socket keeps working under its new name.
        os.replace(new_qmp, guest.qmp_sock)
        os.replace(new_agent, guest.agent_sock)
        if os.path.exists(incoming):
            os.unlink(incoming)
        return info

    def save_state(self):
        state = {"pcap": self.pcap, "link": self.link.name,
                 "link_state": self.link.state(),
                 "guests": [g.pid for g in self.guests], "nics": self.nics,
                 "switches": self.switch_guests,
                 "bottleneck": self.bottleneck,
                 "cpoint": self.cpoint.machine.pid if self.cpoint else None}
        with open(os.path.join(self.run_dir, "state.json"), "w") as f:
            json.dump(state, f)

    @classmethod
    def attach(cls, run_dir=DEFAULT_RUN_DIR):
        """The fabric a previous 'start' left running in run_dir."""
        try:
            with open(os.path.join(run_dir, "state.json")) as f:
                state = json.load(f)
        except FileNotFoundError:
            raise FabricError("no fabric running in %s (run 'start' first)"
                              % run_dir)
        fabric = cls(len(state["guests"]), run_dir, state["pcap"],
                     nics=state.get("nics"),
                     link=state.get("link", "loopback"),
                     switches=state.get("switches", 0),
                     bottleneck=state.get("bottleneck"))
        fabric.link.restore(state.get("link_state", {"hub": state.get("hub")}))
        for guest, pid in zip(fabric.guests, state["guests"]):
            guest.pid = pid
        if fabric.cpoint:
            fabric.cpoint.machine.pid = state["cpoint"]
        return fabric

    def wait_ready(self, timeout=BOOT_TIMEOUT):
        """Wait until every guest's init printed the ready mark, then
        schedule the vCPU threads by the fabric's vcpu_policy and bring up
        soft-RoCE in the rxe guests."""
        deadline = time.monotonic() + timeout
        pending = self.machines()
        while pending:
            for guest in list(pending):
                if READY_MARK in guest.console_text():
                    pending.remove(guest)
                elif not guest.alive():
                    with open(os.path.join(guest.dir, "qemu.stderr")) as f:
                        err = f.read().strip()
                    raise FabricError("guest%d: QEMU exited during boot: %s "
                                      "(console: %s)"
                                      % (guest.index, err or "no message",
                                         guest.console))
            if not pending:
                break
            if time.monotonic() > deadline:
                raise FabricError("guest%d did not boot within %ds; see %s"
                                  % (pending[0].index, timeout,
                                     pending[0].console))
            # Boot progress is only visible in the console log file.
            time.sleep(0.5)
        if self.cpoint:
            self.cpoint.set_up(GUEST_MAX_MTU)
        for guest in self.guests:
            guest.set_vcpu_policy(self.vcpu_policy)
            if guest.nic == "rxe":
                guest.set_up_rxe()
            # IPv6 duplicate address detection: until it is done the
            # address is tentative, and rdma_cm cannot bind to it.
            guest.run("for i in $(seq 300); do "
                      "ip -6 addr show tentative | grep -q inet6 || exit 0; "
                      "sleep 0.1; done; ip -6 addr; exit 1", 60)
        return self

    def stop(self):
        """Stop every QEMU this fabric started, then take its link down
        (the hub, the namespaces)."""
        stop_process_groups([g.pid for g in self.machines() if g.pid])
        for g in self.machines():
            g.pid = None
        try:
            self.link.tear_down()
        finally:
            state = os.path.join(self.run_dir, "state.json")
            if os.path.exists(state):
                os.unlink(state)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-dir", default=DEFAULT_RUN_DIR)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("start", help="boot N guests and leave them running")
    p.add_argument("-n", "--guests", type=int,
                   help="number of guests (default: one per --nics entry, "
                   "or 2)")
    p.add_argument("--nics", type=lambda s: s.split(","),
                   help="comma-separated NIC of each guest: vhca (default) "
                   "or rxe (virtio-net with Linux soft-RoCE), e.g. vhca,rxe")
    p.add_argument("--link-layer", choices=("eth", "ib"), default="eth",
                   help="the vhca guests' port: eth (RoCEv2, the default) "
                   "or ib (InfiniBand, NIC vhca-ib: two guests back to "
                   "back, more on an InfiniBand switch)")
    p.add_argument("--switches", type=switch_split, default=None,
                   help="--link-layer ib: InfiniBand switches in a chain, "
                   "the guests split evenly among them (default: one for "
                   "three guests or more); or how many guests each has "
                   "(3,1: guests 1-3 on switch 1, guest 4 on switch 2)")
    p.add_argument("--pcap", action="store_true",
                   help="capture each guest's fabric traffic to "
                   "RUN_DIR/guestI/fabric.pcap")
    p.add_argument("--link", choices=list(LINKS), default="loopback",
                   help="how the guests meet: loopback (UDP on 127.0.0.1, "
                   "the default), netns (two guests in two network "
                   "namespaces joined by a veth pair, as on two hosts; "
                   "root) or tap (tap devices on a bridge in a namespace; "
                   "root)")
    p.add_argument("--bottleneck", metavar="RATE",
                   help="--link tap: put a congestion point (a bridge guest "
                   "with an HTB rate limit and an ECN-marking RED queue, "
                   "scripts/congestion_point.py) between the last guest and "
                   "the others; RATE is a tc rate, e.g. 100mbit")
    p.add_argument("--vcpu-policy", choices=VCPU_POLICIES,
                   default=DEFAULT_VCPU_POLICY,
                   help="host scheduling of the guests' vCPU threads once "
                   "booted: normal (the default) or idle (SCHED_IDLE: "
                   "QEMU's main loops go first, for polling latency; see "
                   "docs/user-guide.rst)")
    p.add_argument("--guest-idle", choices=GUEST_IDLE,
                   default=DEFAULT_GUEST_IDLE,
                   help="what an idle guest does: halt (the default) or "
                   "poll (idle=poll: it spins, yielding the host CPU, so "
                   "the host's cores never go idle; for measuring)")
    p = sub.add_parser("exec", help="run a command in a guest")
    p.add_argument("--timeout", type=int, default=120)
    p.add_argument("guest", type=int)
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="the command and its arguments (a shell line)")
    p = sub.add_parser("gid", help="print the index of a guest's RoCE v2 "
                       "GID for its IPv4 address (the -g / -x argument of "
                       "the RDMA programs)")
    p.add_argument("--ipv6", action="store_true",
                   help="the GID of its IPv6 address instead")
    p.add_argument("guest", type=int)
    p = sub.add_parser("pair", help="run a server command in one guest and "
                       "a client command in another once the server is "
                       "ready; print both outputs")
    p.add_argument("--port", type=int, default=18515,
                   help="where the client meets the server (default 18515)")
    p.add_argument("--rdma-cm", action="store_true",
                   help="the server is ready once it listens through "
                   "rdma_cm, not on a TCP port")
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("server", type=int)
    p.add_argument("client", type=int)
    p.add_argument("server_command", help="a shell line")
    p.add_argument("client_command", help="a shell line")
    p = sub.add_parser("mtu", help="set every guest's fabric interface "
                       "MTU (9000 lets RoCE run path MTU 4096)")
    p.add_argument("mtu", type=int)
    sub.add_parser("capture-off", help="stop the --pcap capture in every "
                   "guest (the pcaps keep what they hold)")
    p = sub.add_parser("info", help="show the state of a guest's vhca "
                       "(QMP x-query-vhca, HMP 'info vhca')")
    p.add_argument("guest", type=int)
    p = sub.add_parser("switch", help="InfiniBand fabric of 3 guests or "
                       "more: show the switch's ports, forwarding tables "
                       "and drops ('info'), or plug and unplug a cable "
                       "('cable N up|down')")
    p.add_argument("--switch", type=int, default=1,
                   help="which switch (1..N, --switches)")
    p.add_argument("command", nargs="*", default=["info"])
    sub.add_parser("bottleneck", help="--bottleneck: show the congestion "
                   "point's queue (RED marks and drops, backlog) and the "
                   "taps' drops")
    p = sub.add_parser("migrate", help="live-migrate a guest to a new QEMU "
                       "on this host while the fabric runs")
    p.add_argument("guest", type=int)
    for cmd, what in (("savevm", "save a guest's RAM and devices as a "
                       "snapshot (a qcow2 file in its directory)"),
                      ("loadvm", "take a guest back to a snapshot")):
        p = sub.add_parser(cmd, help=what)
        p.add_argument("guest", type=int)
        p.add_argument("tag")
    sub.add_parser("stop", help="stop every guest started by 'start'")
    args = parser.parse_args()

    def attached_guest(fabric, index):
        if not 1 <= index <= fabric.count:
            raise FabricError("no guest %d (1..%d)" % (index, fabric.count))
        return fabric[index]

    try:
        if args.cmd == "start":
            count = args.guests or (len(args.nics) if args.nics else 2)
            nics = args.nics
            if args.link_layer == "ib":
                if nics and set(nics) != {"vhca-ib"}:
                    raise FabricError("--link-layer ib takes vhca-ib NICs "
                                      "only, not %s" % ",".join(nics))
                if count < 2 or args.link != "loopback":
                    raise FabricError("--link-layer ib: two guests back to "
                                      "back or three and more on a switch "
                                      "(-n N, --link loopback)")
                nics = ["vhca-ib"] * count
            fabric = Fabric(count, args.run_dir, args.pcap, nics=nics,
                            link=args.link, vcpu_policy=args.vcpu_policy,
                            guest_idle=args.guest_idle,
                            switches=args.switches,
                            bottleneck=args.bottleneck).boot()
            for g in fabric.guests:
                print("guest%d: %s %s %s %s (console %s)"
                      % (g.index, g.rdma_dev, g.mac, g.ipv4, g.ipv6,
                         g.console))
        elif args.cmd in ("exec", "info"):
            if args.cmd == "exec" and not args.command:
                raise FabricError("exec: no command given")
            guest = attached_guest(Fabric.attach(args.run_dir), args.guest)
            if args.cmd == "info":
                # Only reads the device: the guest keeps running.
                info = guest.qmp("x-query-vhca")
                sys.stdout.write(info["human-readable-text"])
                return 0
            status, out = guest.exec(" ".join(args.command), args.timeout)
            sys.stdout.write(out)
            return status
        elif args.cmd == "switch":
            fabric = Fabric.attach(args.run_dir)
            sys.stdout.write(fabric.link.switch_command(
                " ".join(args.command), args.switch))
        elif args.cmd == "gid":
            guest = attached_guest(Fabric.attach(args.run_dir), args.guest)
            print(guest.ipv6_gid_index() if args.ipv6
                  else guest.ipv4_gid_index())
        elif args.cmd == "pair":
            fabric = Fabric.attach(args.run_dir)
            server = attached_guest(fabric, args.server)
            client = attached_guest(fabric, args.client)
            status, client_out, server_out = client_server(
                server, client, args.server_command, args.client_command,
                args.port, args.timeout,
                READY_RDMA_CM if args.rdma_cm else READY_TCP)
            for guest, command, out in (
                    (client, args.client_command, client_out),
                    (server, args.server_command, server_out)):
                print("\n=== guest%d: %s" % (guest.index, command))
                sys.stdout.write(out)
            return status
        elif args.cmd == "mtu":
            for guest in Fabric.attach(args.run_dir).guests:
                guest.set_mtu(args.mtu)
        elif args.cmd == "capture-off":
            for guest in Fabric.attach(args.run_dir).guests:
                guest.stop_capture()
        elif args.cmd == "bottleneck":
            fabric = Fabric.attach(args.run_dir)
            if not fabric.cpoint:
                raise FabricError("this fabric has no congestion point "
                                  "(start --link tap --bottleneck RATE)")
            for name, value in sorted(fabric.cpoint.queue_stats().items()):
                print("%s: %s" % (name, value))
            for tap, dropped in sorted(fabric.link.tap_drops().items()):
                print("%s tx_dropped: %d" % (tap, dropped))
        elif args.cmd == "migrate":
            fabric = Fabric.attach(args.run_dir)
            attached_guest(fabric, args.guest)
            info = fabric.migrate(args.guest)
            print("guest%d: migrated in %d ms, downtime %d ms (pid %d)"
                  % (args.guest, info.get("total-time", 0),
                     info.get("downtime", 0), fabric[args.guest].pid))
        elif args.cmd in ("savevm", "loadvm"):
            guest = attached_guest(Fabric.attach(args.run_dir), args.guest)
            getattr(guest, args.cmd)(args.tag)
            print("guest%d: %s %s done" % (args.guest, args.cmd, args.tag))
        elif args.cmd == "stop":
            Fabric.attach(args.run_dir).stop()
    except (FabricError, subprocess.CalledProcessError) as e:
        print("vhca: error: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
