#!/usr/bin/python3
"""A fault-injecting relay between two vhca guests' -netdev dgram backends.

Each guest's QEMU sends its frames to the relay port meant for it; the relay
forwards every datagram (one Ethernet frame) to the other guest, dropping,
duplicating and reordering frames at the rates it is given:

    fabric_relay.py relay [--drop P] [--dup P] [--reorder P] [--seed N]
                          [--burst N/M] [--storm K]
                          [--roce-only] [--control-port PORT]
                          [--exit-with-parent]
                          RELAY_PORT_1 GUEST_PORT_1 RELAY_PORT_2 GUEST_PORT_2
    fabric_relay.py ctl CONTROL_PORT COMMAND...

Guest 1's QEMU has local.port=GUEST_PORT_1 and remote.port=RELAY_PORT_1, and
guest 2 likewise; everything is on 127.0.0.1.

A reordered frame is held back and sent after the next frame that goes the
same way (or after HOLD_SECONDS if none comes).  Burst loss (--burst N/M)
drops N consecutive frames out of every M going one way, from the first
(counted per direction, on top of --drop); a duplicated frame is sent K
extra times with --storm K (1 by default).  With --roce-only only
RoCEv2 frames (UDP destination port 4791) suffer; ARP, ICMP and the TCP the
RDMA programs use to exchange their QP numbers go through untouched.

"Peer gone": while the relay is a black hole it drops every frame, both
ways.  SIGUSR1 turns the black hole on, SIGUSR2 off.

The control port takes one command per UDP datagram and answers with one
JSON datagram holding the rates, the black hole state and the counters:

    stats                           nothing else
    set drop=P dup=P reorder=P      change some rates
    set burst=N/M storm=K           burst loss (0/0: none), copies per dup
    calm                            stop every fault now (rates, burst,
                                    drop-gsi; a held frame goes out)
    calm off                        faults again
    calm-after N                    stop them after N more disturbable
                                    frames (both ways): a test's data
                                    phase suffers, its teardown does not
    blackhole on|off
    reset                           zero the counters
    mark TEXT...                    print TEXT and the counters on stdout
    drop-gsi 1to2=N 2to1=N          drop the next N frames to QP1 each way
                                    (the CM's MADs: IBTA 13.4.6, 12.6)
    spare-acks 1to2|2to1|both|none  never drop RC ACKs going that way
    spare-gsi on|off                never disturb frames to QP1 (the CM's
                                    MADs) by rates or bursts

The counters (per direction, "1to2" and "2to1") are printed on stdout when
the relay stops (SIGTERM, SIGINT), and the relay stops by itself once its
parent is gone with --exit-with-parent.
"""

import argparse
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import time

HOST = "127.0.0.1"
ROCE_V2_UDP_PORT = 4791           # IBTA Annex A17.3.2.2
HOLD_SECONDS = 0.02               # a held frame's longest wait
POLL_SECONDS = 0.2                # how often the loop looks at its flags
MAX_DATAGRAM = 65535
COUNTERS = ("received", "forwarded", "untouched", "dropped", "duplicated",
            "reordered", "blackholed", "gsi_dropped", "acks_spared",
            "burst_dropped", "calm")
GSI_QPN = 1                       # IBTA 13.4.6: QP1, the CM's MADs
RC_ACKNOWLEDGE = 0x11             # IBTA 9.2.1: BTH OpCode of an RC ACK

ETH_P_IPV4 = 0x0800
ETH_P_IPV6 = 0x86dd
ETH_P_8021Q = 0x8100
IPPROTO_UDP = 17


def roce_v2_udp_offset(frame):
    """Where the UDP header of a RoCEv2 frame (UDP to port 4791) starts,
    or None if the Ethernet frame is not one."""
    offset = 12
    if len(frame) < offset + 2:
        return None
    ethertype = struct.unpack_from("!H", frame, offset)[0]
    if ethertype == ETH_P_8021Q:
        offset += 4
        if len(frame) < offset + 2:
            return None
        ethertype = struct.unpack_from("!H", frame, offset)[0]
    offset += 2
    if ethertype == ETH_P_IPV4:
        if len(frame) < offset + 20:
            return None
        ihl = (frame[offset] & 0xf) * 4
        fragment = struct.unpack_from("!H", frame, offset + 6)[0] & 0x1fff
        if frame[offset + 9] != IPPROTO_UDP or ihl < 20 or fragment:
            return None
        udp = offset + ihl
    elif ethertype == ETH_P_IPV6:
        # RoCEv2 puts UDP right after the fixed header (no extension headers).
        if len(frame) < offset + 40 or frame[offset + 6] != IPPROTO_UDP:
            return None
        udp = offset + 40
    else:
        return None
    if len(frame) < udp + 8 or \
            struct.unpack_from("!H", frame, udp + 2)[0] != ROCE_V2_UDP_PORT:
        return None
    return udp


def is_roce_v2(frame):
    return roce_v2_udp_offset(frame) is not None


def roce_v2_bth(frame):
    """(OpCode, DestQP) of a RoCEv2 frame's BTH, or None."""
    udp = roce_v2_udp_offset(frame)
    if udp is None or len(frame) < udp + 8 + 12:
        return None
    return (frame[udp + 8],
            struct.unpack_from("!I", frame, udp + 8 + 4)[0] & 0xffffff)


class Direction:
    """Frames from one guest to the other, and what befell them."""

    def __init__(self, name, rx, rx_from, tx, tx_to):
        self.name = name
        self.rx = rx               # the socket the source guest sends to
        self.rx_from = rx_from     # the source guest's address
        self.tx = tx               # the socket the destination guest hears
        self.tx_to = tx_to         # the destination guest's address
        self.held = None           # (frame, release time) of a reordered one
        self.gsi_drops = 0         # frames to QP1 still to drop
        self.spare_acks = False    # never drop RC ACKs this way
        self.burst_pos = 0         # disturbable frames this way, mod M
        self.counters = dict.fromkeys(COUNTERS, 0)

    def send(self, frame):
        try:
            self.tx.sendto(frame, self.tx_to)
        except OSError:
            # The destination QEMU is not (yet, or any more) there: the
            # frame is lost on the wire, as it would be on a real one.
            return
        self.counters["forwarded"] += 1


class Relay:
    def __init__(self, ports, drop, dup, reorder, seed, roce_only):
        relay_1, guest_1, relay_2, guest_2 = ports
        self.sock_1 = self.bind(relay_1)
        self.sock_2 = self.bind(relay_2)
        self.directions = {
            self.sock_1: Direction("1to2", self.sock_1, (HOST, guest_1),
                                   self.sock_2, (HOST, guest_2)),
            self.sock_2: Direction("2to1", self.sock_2, (HOST, guest_2),
                                   self.sock_1, (HOST, guest_1)),
        }
        self.rates = {"drop": drop, "dup": dup, "reorder": reorder}
        self.burst = (0, 0)        # (N, M): drop N frames of every M
        self.storm = 1             # extra copies of a duplicated frame
        self.calm_in = None        # frames until the faults stop, or None
        self.spare_gsi = False     # frames to QP1 pass untouched
        self.random = random.Random(seed)
        self.roce_only = roce_only
        self.blackhole = False
        self.stopping = False

    @staticmethod
    def bind(port):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        # Room for a burst: the relay must lose only the frames it chooses
        # to.  Beyond net.core.rmem_max (208 KiB here) with CAP_NET_ADMIN,
        # as the guests' own sockets: batched senders (sendmmsg) deliver
        # 64 frames at once.
        try:
            sock.setsockopt(socket.SOL_SOCKET,
                            getattr(socket, "SO_RCVBUFFORCE", 33), 1 << 22)
        except PermissionError:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        sock.bind((HOST, port))
        sock.setblocking(False)
        return sock

    def chance(self, name):
        rate = self.rates[name]
        return rate > 0 and self.random.random() < rate

    def relay(self, d, frame):
        c = d.counters
        c["received"] += 1
        if self.blackhole:
            c["blackholed"] += 1
            return
        if self.roce_only and not is_roce_v2(frame):
            c["untouched"] += 1
            d.send(frame)
            return
        if self.calm_in is not None:
            if self.calm_in == 0:
                c["calm"] += 1
                d.send(frame)
                return
            self.calm_in -= 1
        bth = roce_v2_bth(frame)
        if self.spare_gsi and bth and bth[1] == GSI_QPN and \
                not d.gsi_drops:
            c["untouched"] += 1
            d.send(frame)
            return
        if self.burst_drops(d):
            if not (d.spare_acks and bth and bth[0] == RC_ACKNOWLEDGE):
                c["dropped"] += 1
                c["burst_dropped"] += 1
                return
            c["acks_spared"] += 1
        if d.gsi_drops and bth and bth[1] == GSI_QPN:
            d.gsi_drops -= 1
            c["gsi_dropped"] += 1
            return
        if self.chance("drop"):
            if not (d.spare_acks and bth and bth[0] == RC_ACKNOWLEDGE):
                c["dropped"] += 1
                return
            c["acks_spared"] += 1
        copies = 1
        if self.chance("dup"):
            c["duplicated"] += self.storm
            copies += self.storm
        if d.held is None and self.chance("reorder"):
            d.held = (frame, time.monotonic() + HOLD_SECONDS)
            copies -= 1
        for _ in range(copies):
            d.send(frame)
        if d.held is not None and d.held[0] is not frame:
            c["reordered"] += 1
            self.release(d)

    def burst_drops(self, d):
        """Is this frame one of the N of every M that a burst loses?"""
        n, m = self.burst
        if not m:
            return False
        pos, d.burst_pos = d.burst_pos, (d.burst_pos + 1) % m
        return pos < n

    def set_burst(self, value):
        n, _, m = value.partition("/")
        if not (n.isdigit() and m.isdigit()) or int(n) > int(m) or \
                (int(m) == 0) != (int(n) == 0):
            raise ValueError("burst wants N/M with 0 < N <= M, or 0/0, "
                             "not %r" % value)
        self.burst = (int(n), int(m))
        for d in self.directions.values():
            d.burst_pos = 0

    def calm(self, after):
        """Stop every fault once after more disturbable frames have gone."""
        self.calm_in = after
        if after == 0:
            for d in self.directions.values():
                d.gsi_drops = 0
                if d.held is not None:
                    self.release(d)

    def release(self, d):
        frame, d.held = d.held[0], None
        if self.blackhole:
            d.counters["blackholed"] += 1
        else:
            d.send(frame)

    def set_rates(self, words):
        rates = {}
        for word in words:
            name, _, value = word.partition("=")
            if name == "burst":
                self.set_burst(value)
                continue
            if name == "storm":
                if not value.isdigit() or int(value) < 1:
                    raise ValueError("storm wants a count >= 1, not %r"
                                     % value)
                self.storm = int(value)
                continue
            if name not in self.rates:
                raise ValueError("unknown rate %r" % name)
            rates[name] = float(value)
            if not 0 <= rates[name] <= 1:
                raise ValueError("%s=%s is not a probability" % (name, value))
        self.rates.update(rates)

    def set_gsi_drops(self, words):
        by_name = {d.name: d for d in self.directions.values()}
        for word in words:
            name, _, value = word.partition("=")
            if name not in by_name or not value.isdigit():
                raise ValueError("drop-gsi wants 1to2=N 2to1=N, not %r" % word)
            by_name[name].gsi_drops = int(value)

    def control(self, request):
        words = request.decode(errors="replace").split()
        reply = {}
        try:
            if not words:
                raise ValueError("empty command")
            if words[0] == "set":
                self.set_rates(words[1:])
            elif words == ["calm"]:
                self.calm(0)
            elif words == ["calm", "off"]:
                self.calm_in = None
            elif words[0] == "calm-after" and len(words) == 2 and \
                    words[1].isdigit():
                self.calm(int(words[1]))
            elif words[0] == "drop-gsi":
                self.set_gsi_drops(words[1:])
            elif words[0] == "spare-acks" and len(words) == 2 and \
                    words[1] in ("1to2", "2to1", "both", "none"):
                for d in self.directions.values():
                    d.spare_acks = words[1] in (d.name, "both")
            elif words[0] == "spare-gsi" and words[1:] in (["on"], ["off"]):
                self.spare_gsi = words[1] == "on"
            elif words[0] == "blackhole" and words[1:] in (["on"], ["off"]):
                self.blackhole = words[1] == "on"
            elif words[0] == "reset" and len(words) == 1:
                for d in self.directions.values():
                    d.counters = dict.fromkeys(COUNTERS, 0)
            elif words[0] == "mark":
                print("mark %s" % " ".join(words[1:]), flush=True)
                self.report()
            elif words != ["stats"]:
                raise ValueError("unknown command %r" % " ".join(words))
        except ValueError as e:
            reply["error"] = str(e)
        reply.update(self.state())
        return json.dumps(reply).encode()

    def state(self):
        return {"rates": self.rates, "blackhole": self.blackhole,
                "burst": "%d/%d" % self.burst, "storm": self.storm,
                "calm_in": self.calm_in, "spare_gsi": self.spare_gsi,
                "gsi_drops": {d.name: d.gsi_drops
                              for d in self.directions.values()},
                "spare_acks": [d.name for d in self.directions.values()
                               if d.spare_acks],
                "roce_only": self.roce_only,
                "counters": {d.name: dict(d.counters)
                             for d in self.directions.values()}}

    def report(self):
        for d in self.directions.values():
            print("%s: %s" % (d.name, " ".join(
                "%s=%d" % (k, d.counters[k]) for k in COUNTERS)), flush=True)

    def run(self, control_sock, parent):
        socks = list(self.directions) + ([control_sock] if control_sock else [])
        while not self.stopping:
            if parent is not None and parent != os.getppid():
                print("parent %d gone" % parent, flush=True)
                break
            now = time.monotonic()
            wait = POLL_SECONDS
            for d in self.directions.values():
                if d.held is not None:
                    if d.held[1] <= now:
                        self.release(d)
                    else:
                        wait = min(wait, d.held[1] - now)
            readable, _, _ = select.select(socks, [], [], wait)
            for sock in readable:
                try:
                    data, src = sock.recvfrom(MAX_DATAGRAM)
                except (BlockingIOError, ConnectionRefusedError):
                    # Linux reports an earlier send's ICMP unreachable here.
                    continue
                if sock is control_sock:
                    if src[0] == HOST:
                        sock.sendto(self.control(data), src)
                    continue
                d = self.directions[sock]
                if src == d.rx_from:
                    self.relay(d, data)


def probability(text):
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("%s is not in [0, 1]" % text)
    return value


def control(port, command, timeout=5.0):
    """Send one command to a relay's control port; return its JSON reply."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(command.encode(), (HOST, port))
        reply = json.loads(s.recv(MAX_DATAGRAM).decode())
    if "error" in reply:
        raise ValueError("relay: %s" % reply["error"])
    return reply


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("relay", help="relay frames between two guests")
    p.add_argument("--drop", type=probability, default=0.0)
    p.add_argument("--dup", type=probability, default=0.0)
    p.add_argument("--reorder", type=probability, default=0.0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--burst", default="0/0", metavar="N/M",
                   help="drop N consecutive frames of every M each way")
    p.add_argument("--storm", type=int, default=1, metavar="K",
                   help="send a duplicated frame K extra times")
    p.add_argument("--roce-only", action="store_true",
                   help="disturb RoCEv2 frames (UDP/4791) only")
    p.add_argument("--control-port", type=int, default=None)
    p.add_argument("--exit-with-parent", action="store_true",
                   help="stop when the process that started the relay ends")
    p.add_argument("ports", type=int, nargs=4, metavar="PORT",
                   help="RELAY_PORT_1 GUEST_PORT_1 RELAY_PORT_2 GUEST_PORT_2")
    p = sub.add_parser("ctl", help="send a command to a running relay")
    p.add_argument("control_port", type=int)
    p.add_argument("command", nargs="+")
    args = parser.parse_args()

    if args.cmd == "ctl":
        try:
            print(json.dumps(control(args.control_port,
                                     " ".join(args.command)), indent=1))
        except (OSError, ValueError) as e:
            print("fabric_relay: %s" % e, file=sys.stderr)
            return 1
        return 0

    relay = Relay(args.ports, args.drop, args.dup, args.reorder, args.seed,
                  args.roce_only)
    try:
        relay.set_burst(args.burst)
        relay.set_rates(["storm=%d" % args.storm])
    except ValueError as e:
        parser.error(str(e))
    control_sock = Relay.bind(args.control_port) \
        if args.control_port is not None else None

    def stop(signum, frame):
        relay.stopping = True

    def blackhole(signum, frame):
        relay.blackhole = signum == signal.SIGUSR1

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGUSR1, blackhole)
    signal.signal(signal.SIGUSR2, blackhole)
    print("relay %s: drop %g dup %g reorder %g burst %s storm %d seed %s%s"
          % (" ".join(map(str, args.ports)), args.drop, args.dup,
             args.reorder, args.burst, args.storm, args.seed,
             " roce-only" if args.roce_only else ""), flush=True)
    try:
        relay.run(control_sock,
                  os.getppid() if args.exit_with_parent else None)
    finally:
        relay.report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
