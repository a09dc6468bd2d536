"""The congestion point of a tap fabric: a guest that is a switch port.

Incast needs a queue where senders' traffic meets and overflows, and a
queue that marks ECN as a datacentre switch does (DCQCN's congestion point,
Zhu et al., SIGCOMM 2015, section 3.1: RED-like marking between Kmin and
Kmax with probability up to Pmax).  The Linux bridge of the tap link would
be that switch, with `tc` on its egress port, but the hosts this project
runs on have a kernel whose net/sched has no RED nor any other ECN-marking
qdisc (docs/limits.rst, "Congestion control").  So the congestion point is
a small guest of the project's own image (Debian's kernel has them all)
with two virtio-net NICs, bridged by Linux's bridge: one on the fabric's
bridge with the senders, one on a second bridge with the receiver.  Its
egress towards the receiver is an HTB class at the bottleneck rate with a
RED queue under it; RED marks ECN-capable packets CE and drops the others
(tc-red(8), "ecn").  Everything on the way is Linux's own: bridge, HTB,
RED, the taps.

    fabric = vhca_fabric.Fabric(3, link="tap", bottleneck="100mbit")

puts guests 1..N-1 on the senders' side and guest N behind the bottleneck;
fabric.cpoint is the congestion point, its machine a vhca_fabric.Guest of
NIC kind "bridge" (the fabric boots and stops it with the guests).
"""

import json
import re

# The congestion point's two NICs: A on the senders' bridge, B on the
# receiver's (its egress is the bottleneck).
PORT_MACS = ("52:54:00:56:49:0a", "52:54:00:56:49:0b")
PORT_TAPS = ("vhca-cpa", "vhca-cpb")
RECEIVER_BRIDGE = "vhca-br1"
# RED's marking thresholds (tc-red(8), bytes of average queue): marking
# starts at MIN and reaches PROBABILITY at MAX, DCQCN's Kmin, Kmax and
# Pmax.  Scaled from the paper's 5 KB / 200 KB / 1 % at 40 Gb/s to
# 4 KiB frames at a hundred megabits: the queue is a few frames deep when
# marking starts and a few milliseconds' worth at MAX, so that a
# sender's rate cut arrives (one CNP per QP per np_min_time_between_cnps)
# before the queue overflows LIMIT.  LIMIT is the buffer a datacentre
# switch's shared memory lends one congested port (megabytes): bursts,
# such as the senders' first round trip at line rate or the frames a TCG
# guest's stall piles up in its tap, are marked rather than dropped.
# With 512 KiB the incast dropped about 100 frames a second with DCQCN
# on, and its resends took 7-10 % of the bottleneck.
RED_MIN = 16 * 1024
RED_MAX = 96 * 1024
RED_LIMIT = 2048 * 1024
RED_AVPKT = 4200
RED_PROBABILITY = 0.2
# RoCEv2's UDP destination port (IBTA A17.2.2; VHCA_ROCE_V2_UDP_PORT).
ROCE_V2_UDP_PORT = 4791


def nic_args():
    """The congestion point's QEMU NICs: two virtio-net on its taps."""
    args = []
    for i, (tap, mac) in enumerate(zip(PORT_TAPS, PORT_MACS)):
        args += ["-netdev", "tap,id=port%d,ifname=%s,script=no,"
                 "downscript=no" % (i, tap),
                 "-device", "virtio-net-pci,romfile=,netdev=port%d,mac=%s"
                 % (i, mac)]
    return args


class CongestionPoint:
    """The bridge in machine (a booted vhca_fabric.Guest): ports A and B
    bridged, B's egress the bottleneck at rate (a tc rate, "100mbit")."""

    def __init__(self, machine, rate):
        self.machine = machine
        self.rate = rate
        self.names = None

    def ports(self):
        """The guest's names of ports A and B, found by their MACs."""
        if not self.names:
            self.names = self.find_ports()
        return self.names

    def find_ports(self):
        return [self.machine.run(
            "for i in $(seq 100); do for d in /sys/class/net/*; do "
            "[ \"$(cat $d/address)\" = %s ] && echo ${d##*/} && exit 0; "
            "done; sleep 0.1; done; exit 1" % mac).strip()
            for mac in PORT_MACS]

    def set_up(self, mtu):
        """Bridge the two ports (MTU mtu) and put the bottleneck on B's
        egress, marking ECN."""
        self.machine.run("modprobe virtio_net && modprobe bridge && "
                         "modprobe sch_htb && modprobe sch_red && "
                         "modprobe cls_u32")
        a, b = self.ports()
        self.machine.run(
            "ip link add br0 type bridge stp_state 0 mcast_snooping 0 && "
            "for d in %s %s; do ip link set $d mtu %d master br0 up; done && "
            "ip link set br0 up" % (a, b, mtu))
        self.set_queue(ecn=True)

    def set_queue(self, ecn=True, rate=None, kmin=None, kmax=None):
        """(Re)make B's egress: one HTB class at the rate, split in two as a
        datacentre switch splits traffic classes.  RoCE (UDP port 4791)
        goes through RED, marking ECN-capable packets CE when ecn, else
        dropping them as it drops the others (tc-red(8)); everything else
        (perftest's TCP set-up, ARP) has a small guaranteed share in a
        FIFO of its own, so that a flow's connection set-up is not lost in
        another flow's congestion (its SYN waiting out TCP's back-off).
        kmin, kmax: RED's thresholds in bytes (RED_MIN, RED_MAX if None)."""
        if rate:
            self.rate = rate
        kmin = kmin or RED_MIN
        kmax = kmax or RED_MAX
        b = self.ports()[1]
        # How many packets RED's average queue takes to follow the real
        # one (tc-red(8) "burst"): the fewest tc accepts for kmin, so that
        # it marks on the queue of now, as DCQCN's switches mark on the
        # instantaneous queue (section 3.1), not on an average that lags
        # the senders' cuts by many round trips.
        burst = kmin // RED_AVPKT + 1
        commands = [
            "tc qdisc add dev {b} root handle 1: htb default 20",
            "tc class add dev {b} parent 1: classid 1:1 htb rate {rate} "
            "ceil {rate} burst 64k",
            # RoCE: the rate, less what the other class takes.
            "tc class add dev {b} parent 1:1 classid 1:10 htb rate {rate} "
            "ceil {rate} burst 64k prio 1",
            "tc qdisc add dev {b} parent 1:10 handle 10: red limit {limit} "
            "min {min} max {max} avpkt {avpkt} burst {burst} "
            "probability {p} bandwidth {rate}{ecn}",
            "tc class add dev {b} parent 1:1 classid 1:20 htb rate 1mbit "
            "ceil {rate} prio 0",
            "tc qdisc add dev {b} parent 1:20 handle 20: pfifo limit 100",
            "tc filter add dev {b} parent 1: protocol ip prio 1 u32 "
            "match ip protocol 17 0xff match ip dport %d 0xffff flowid 1:10"
            % ROCE_V2_UDP_PORT,
            "tc filter add dev {b} parent 1: protocol ipv6 prio 2 u32 "
            "match ip6 protocol 17 0xff match ip6 dport %d 0xffff "
            "flowid 1:10" % ROCE_V2_UDP_PORT,
        ]
        self.machine.run("tc qdisc del dev {b} root 2>/dev/null; ".format(
            b=b) + " && ".join(commands).format(
                b=b, rate=self.rate, limit=RED_LIMIT, min=kmin,
                max=kmax, avpkt=RED_AVPKT, burst=burst,
                p=RED_PROBABILITY, ecn=" ecn" if ecn else ""))

    def queue_stats(self):
        """The bottleneck queue's figures as tc counts them: RED's marked
        packets, its early and queue-full drops, its backlog in bytes and
        the bytes it sent; and the ports' receive drops (virtio-net's ring
        full)."""
        b = self.ports()[1]
        out = self.machine.run(
            "tc -s -j qdisc show dev %s; echo; "
            "cat /sys/class/net/*/statistics/rx_dropped" % b)
        qdiscs, _, drops = out.partition("\n")
        stats = {"rx_dropped": sum(int(n) for n in re.findall(r"\d+", drops))}
        for q in json.loads(qdiscs):
            if q.get("kind") == "red":
                stats.update(marked=q["marked"], early_drops=q["early"],
                             full_drops=q["pdrop"], drops=q["drops"],
                             backlog=q["backlog"], sent_bytes=q["bytes"])
        return stats
