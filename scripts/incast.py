#!/usr/bin/python3
"""Incast through a bottleneck: RoCE with ECN and DCQCN off, then on.

The classic experiment of DCQCN (Zhu et al., "Congestion Control for
Large-Scale RDMA Deployments", SIGCOMM 2015, section 5): N senders write
into one receiver through one switch port slower than any of them.  Here
the senders are vhca guests 1..N on a tap fabric, the receiver guest N+1
behind a congestion point (scripts/congestion_point.py: a bridge guest
whose egress to the receiver is an HTB rate limit with an ECN-marking RED
queue under it), each sender running ib_write_bw -D into its own server
on the receiver, all at once.

Two runs, one per mode:

  off  the vhcas send Not-ECT; RED drops early what it would have marked,
       and RC recovers each loss by go-back-N.
  on   the senders send ECT(0) (devlink roce_ecn_tx) and react to CNPs with
       DCQCN (roce_rp_enable); the receiver answers CE marks with CNPs
       (roce_np_enable); RED marks instead of dropping.

For each run it prints per sender the goodput perftest reports, and
overall the sum against the bottleneck rate, Jain's fairness index over
the senders' goodputs, the packets the bottleneck marked and the packets
lost on the way (RED's drops, the congestion point's receive drops and the
taps' drops), the senders' retransmitted packets, CNPs sent and handled.
Every SAMPLE seconds it records each sender's sending rate (the device's
sent_bytes counter through QMP, retransmissions included), its QP's DCQCN
rate (x-query-vhca) and the bottleneck's backlog; --plot draws them with
gnuplot, one panel per mode.

This is a benchmark, not a test (tests/guest/test_incast.py is the short
form that asserts): it prints figures, and --rst writes them as
reStructuredText for docs/benchmarks.rst.

    scripts/incast.py [--senders 2] [--rate 40mbit] [--duration 20]
                      [--size 65536] [--modes off,on] [--param N=V]...
                      [--kmin BYTES] [--kmax BYTES]
                      [--run-dir DIR]
                      [--attach] [--rst FILE] [--plot FILE.svg] [--json FILE]
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time

import congestion_point
import vhca_fabric

PORT = 18515
SAMPLE = 0.25
# run_mode(capture=): the bytes kept of each frame.
CAPTURE_SNAPLEN = 128
MODES = ("off", "on")
# DCQCN's parameters for this fabric (devlink runtime parameters, mlx5's
# names and units, drivers/vhca/vhca_cc.c), the same in both modes.
# mlx5's defaults are made for a datacentre: round trips of microseconds
# at 25-100 Gb/s.  Between TCG guests through the congestion point a round
# trip takes milliseconds and the bottleneck is a hundred megabits, so the
# reaction point would recover (rate-increase timer 300 us) and cut again
# (one cut per 4 us) many times per round trip, and its rate would never
# settle.  Scaled as the DCQCN paper scales them to its network (section
# 5.1: the timers against the round trip, the increase steps against the
# bottleneck): one cut and one alpha update per round trip, increase
# steps of a few percent of the bottleneck.  The increase timer runs at
# half the round trip: each cut empties the queue for a while (the link
# idles) until the rate is back, and with one step per two round trips
# (50 ms) the senders filled 85-90 % of the bottleneck; at 5 ms 92 %
# (docs/benchmarks.rst, "Incast").
DCQCN_PARAMS = {
    # The target rate follows every cut, as in the paper (Rt = Rc on each
    # CNP); mlx5's default keeps it, and fast recovery then halves the
    # way back to line rate at each step.
    "rp_clamp_tgt_rate": 1,
    "rp_rate_reduce_monitor_period": 10000,     # us
    "rp_dce_tcp_rtt": 10000,                    # us
    "rp_time_reset": 5000,                      # us
    "rp_byte_reset": 1048576,                   # bytes
    "rp_ai_rate": 1,                            # Mbit/s
    "rp_hai_rate": 5,                           # Mbit/s
    "np_min_time_between_cnps": 5000,           # us
}
# The switches of each mode: senders', receiver's.
KNOBS = {
    "off": ({"roce_ecn_tx": "false", "roce_rp_enable": "false"},
            {"roce_np_enable": "false"}),
    "on": ({"roce_ecn_tx": "true", "roce_rp_enable": "true"},
           {"roce_np_enable": "true"}),
}
# The RC local ACK timeout both modes run with (perftest -u: 4.096 us *
# 2^17, half a second; IBTA 9.7.6.1.3): the default 14 (67 ms) is a few
# round trips here, less than the bottleneck takes to drain its queue,
# so with DCQCN off every loss would also time out until the retries ran
# out (IBV_WC_RETRY_EXC_ERR) instead of being resent.
ACK_TIMEOUT = 17
# Device counters (x-query-vhca "counter NAME N", named as rdma statistic
# names them) the runs compare.
SENDER_COUNTERS = ("sent_bytes", "retransmitted_pkts", "rcvd_seq_err",
                   "local_ack_timeout_err")
# Congestion counters (ethtool -S of the guest's vhca netdev).
CC_COUNTERS = ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled",
               "rp_cnp_ignored", "rp_rate_decreases")


def device_state(guest):
    """From one x-query-vhca: the device's counters ({name: value}) and
    the DCQCN rate of each RC QP ({QPN: kbit/s})."""
    text = guest.qmp("x-query-vhca")["human-readable-text"]
    counters = {m.group(1): int(m.group(2)) for m in re.finditer(
        r"^\s*counter (\w+) (\d+)$", text, re.M)}
    rates = {int(m.group(1)): int(m.group(2)) for m in re.finditer(
        r"^\s*qp (\d+) type RC .* dcqcn \S+ rate-kbps (\d+)", text, re.M)}
    return counters, rates


def device_counters(guest):
    return device_state(guest)[0]


def delta(after, before, names):
    return {n: after.get(n, 0) - before.get(n, 0) for n in names}


def goodput_mbit(out, size):
    """The average bandwidth perftest's output reports for messages of
    size bytes (its MiB/s column), in Mbit/s; None if it reports none."""
    m = re.search(r"^\s*%d\s+\d+\s+\S+\s+(\S+)" % size, out, re.M)
    return float(m.group(1)) * 8 * 1024 * 1024 / 1e6 if m else None


def jain(values):
    """Jain's fairness index: 1 when all equal, 1/n when one takes all."""
    if not values or not any(values):
        return 0.0
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def rate_bits(rate):
    """A tc rate ("100mbit", "1gbit", "500kbit") in bit/s."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)bit", rate.lower())
    if not m:
        raise vhca_fabric.FabricError("rate %r: give it as tc does, e.g. "
                                      "100mbit" % rate)
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[
        m.group(2)]


class Sampler(threading.Thread):
    """Every SAMPLE seconds: each sender's sent_bytes and DCQCN rate, and
    the bottleneck's backlog (every other sample: it asks the congestion
    point's guest, whose CPU is the bottleneck's)."""

    def __init__(self, fabric, senders):
        super().__init__(daemon=True)
        self.fabric = fabric
        self.senders = senders
        self.samples = []
        self.done = threading.Event()

    def run(self):
        start = time.monotonic()
        n = 0
        while not self.done.wait(SAMPLE if n else 0):
            t = time.monotonic() - start
            states = [device_state(g) for g in self.senders]
            row = {"t": t,
                   "sent": [c.get("sent_bytes", 0) for c, _ in states],
                   "dcqcn": [max(r.values(), default=0) for _, r in states]}
            if n % 2 == 0:
                row["backlog"] = self.fabric.cpoint.queue_stats().get(
                    "backlog", 0)
            self.samples.append(row)
            n += 1

    def series(self):
        """[(t, [sending rate of each sender, Mbit/s], [DCQCN rate,
        Mbit/s], backlog bytes or None)]."""
        out = []
        for a, b in zip(self.samples, self.samples[1:]):
            dt = b["t"] - a["t"]
            out.append((b["t"],
                        [(y - x) * 8 / dt / 1e6
                         for x, y in zip(a["sent"], b["sent"])],
                        [r / 1e3 for r in b["dcqcn"]], b.get("backlog")))
        return out


def run_mode(fabric, mode, duration, size, capture=None, params=None,
             kmin=None, kmax=None):
    """One incast run in mode ("off" or "on"); returns its figures.  With
    capture (a path), the receiver's fabric traffic during the run goes to
    that pcap, each frame cut at CAPTURE_SNAPLEN bytes (headers and CNPs
    whole, not the data).  params: DCQCN parameters instead of
    DCQCN_PARAMS ({devlink name: value}); kmin, kmax: the bottleneck's
    marking thresholds (bytes; congestion_point's if None)."""
    found = {g.index: g.devlink_params() for g in fabric.guests}
    try:
        return run_mode_with(fabric, mode, duration, size, capture, params,
                             kmin, kmax)
    finally:
        # The guests as they were: the next run, or the user's fabric
        # (--attach), starts from its own settings, not this run's.
        for guest in fabric.guests:
            now = guest.devlink_params()
            guest.set_devlink_params({
                name: value for name, value in found[guest.index].items()
                if now.get(name) != value})


def run_mode_with(fabric, mode, duration, size, capture, params, kmin,
                  kmax):
    senders, receiver = fabric.guests[:-1], fabric.guests[-1]
    sender_knobs, receiver_knobs = KNOBS[mode]
    params = DCQCN_PARAMS if params is None else params
    for guest in senders:
        guest.set_devlink_params(dict(params, **sender_knobs))
    receiver.set_devlink_params(dict(params, **receiver_knobs))
    cpoint = fabric.cpoint
    cpoint.set_queue(ecn=True, kmin=kmin, kmax=kmax)
    before = {g.index: device_counters(g) for g in fabric.guests}
    cc_before = {g.index: g.hw_counters("ethtool") for g in fabric.guests}
    taps_before = fabric.link.tap_drops()
    gid = receiver.ipv4_gid_index()
    # ib_write_bw polls its CQ (perftest has no events for WRITE): the
    # senders' vCPUs spin for the whole run.  At SCHED_IDLE they take only
    # what the QEMU main loops and the congestion point leave (a host of
    # two cores has fewer than the busy threads here).
    for guest in senders:
        guest.set_vcpu_policy("idle")
    common = "ib_write_bw -d vhca0 -F -s %d -D %d -u %d" % (
        size, duration, ACK_TIMEOUT)
    servers = []
    for i, guest in enumerate(senders):
        port = PORT + i
        receiver.run("rm -f /tmp/incast%d.log; nohup %s -x %d -p %d "
                     "> /tmp/incast%d.log 2>&1 &"
                     % (i, common, gid, port, i))
        servers.append(port)
    for port in servers:
        receiver.run("for i in $(seq 300); do %s && exit 0; sleep 0.1; "
                     "done; exit 1" % (vhca_fabric.READY_TCP % {"port": port}))
    sampler = Sampler(fabric, senders)
    results = [None] * len(senders)

    def client(i, guest):
        results[i] = guest.exec("%s -x %d -p %d %s" % (
            common, guest.ipv4_gid_index(), PORT + i, receiver.ipv4),
            timeout=duration * 4 + 120)

    threads = [threading.Thread(target=client, args=(i, g))
               for i, g in enumerate(senders)]
    if capture:
        if os.path.exists(capture):
            os.unlink(capture)
        receiver.qmp("object-add", **{"qom-type": "filter-dump",
                                      "id": "incast", "netdev": "fabric",
                                      "file": capture,
                                      "maxlen": CAPTURE_SNAPLEN})
    try:
        sampler.start()
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
    finally:
        sampler.done.set()
        sampler.join()
        if capture:
            receiver.qmp("object-del", id="incast")
    goodput = []
    for i, (status, out) in enumerate(results):
        mbit = goodput_mbit(out, size)
        if status != 0 or mbit is None:
            raise vhca_fabric.FabricError(
                "%s: sender guest%d's ib_write_bw failed (exit %d):\n%s"
                % (mode, senders[i].index, status, out))
        goodput.append(mbit)
    receiver.run("for i in $(seq 100); do pgrep -x ib_write_bw >/dev/null "
                 "|| exit 0; sleep 0.1; done; pkill -x ib_write_bw; exit 0")
    queue = cpoint.queue_stats()
    taps = fabric.link.tap_drops()
    after = {g.index: device_counters(g) for g in fabric.guests}
    cc_after = {g.index: g.hw_counters("ethtool") for g in fabric.guests}
    sent = {n: sum(delta(after[g.index], before[g.index], [n])[n]
                   for g in senders) for n in SENDER_COUNTERS}
    cc = {n: sum(cc_after[g.index].get(n, 0) - cc_before[g.index].get(n, 0)
                 for g in fabric.guests) for n in CC_COUNTERS}
    tap_drops = sum(taps[t] - taps_before.get(t, 0) for t in taps)
    return {
        "mode": mode, "goodput_mbit": goodput, "sum_mbit": sum(goodput),
        # What the bottleneck passed on, on average over the programs' whole
        # run (their set-up and end included).
        "bottleneck_mbit": queue.get("sent_bytes", 0) * 8 / elapsed / 1e6,
        "jain": jain(goodput), "marked": queue.get("marked", 0),
        # RED's counters start at zero with each set_queue().
        "red_drops": queue.get("drops", 0), "tap_drops": tap_drops,
        "retransmitted": sent["retransmitted_pkts"],
        "seq_naks": sent["rcvd_seq_err"],
        "ack_timeouts": sent["local_ack_timeout_err"],
        "cc": cc, "series": sampler.series(),
    }


def report(results, rate, senders, duration, size):
    """The figures as reStructuredText."""
    bits = rate_bits(rate)
    lines = [
        "%s, %s, %d host cores (TCG): %d senders, ib_write_bw -s %d -D %d "
        "each, into one receiver through a %s bottleneck (RED, ECN "
        "marking); goodput as perftest reports it."
        % (datetime.date.today(), platform.platform(terse=True),
           os.cpu_count(), senders, size, duration, rate), "",
        ".. list-table::", "   :header-rows: 1", "",
        "   * - DCQCN", "     - goodput per sender (Mbit/s)",
        "     - sum (% of bottleneck)", "     - Jain's index",
        "     - marked", "     - dropped", "     - retransmitted packets",
        "     - CNPs sent / handled",
    ]
    for r in results:
        dropped = r["red_drops"] + r["tap_drops"]
        lines += [
            "   * - %s" % r["mode"],
            "     - %s" % ", ".join("%.1f" % g for g in r["goodput_mbit"]),
            "     - %.1f (%.0f %%)" % (r["sum_mbit"],
                                       100 * r["sum_mbit"] * 1e6 / bits),
            "     - %.3f" % r["jain"],
            "     - %d" % r["marked"],
            "     - %d" % dropped,
            "     - %d" % r["retransmitted"],
            "     - %d / %d" % (r["cc"]["np_cnp_sent"],
                                r["cc"]["rp_cnp_handled"]),
        ]
    return "\n".join(lines) + "\n"


def plot(results, rate, path):
    """Each sender's sending rate and DCQCN rate, and the bottleneck's
    backlog, over time: one panel per mode, an SVG drawn by gnuplot."""
    panels = []
    for r in results:
        n = len(r["goodput_mbit"])
        name = "$%s" % r["mode"]
        lines = ["%s << EOD" % name]
        for t, sending, dcqcn, backlog in r["series"]:
            lines.append(" ".join(
                ["%.3f" % t] + ["%.2f" % v for v in sending + dcqcn] +
                ["%.1f" % (backlog / 1024) if backlog is not None
                 else "NaN"]))
        lines.append("EOD")
        lines.append("set title 'DCQCN %s: %d senders through %s'"
                     % (r["mode"], n, rate))
        plots = ["%s using 1:%d with lines title 'sender %d sending'"
                 % (name, 2 + i, i + 1) for i in range(n)]
        if r["mode"] == "on":
            plots += ["%s using 1:%d with lines dashtype 2 title "
                      "'sender %d DCQCN rate'" % (name, 2 + n + i, i + 1)
                      for i in range(n)]
        plots.append("%s using 1:%d axes x1y2 with points pointtype 7 "
                     "pointsize 0.3 title 'backlog'" % (name, 2 + 2 * n))
        lines.append("plot " + ", ".join(plots))
        panels.append(lines)
    gnuplot(path, "Mbit/s", "bottleneck backlog (KiB)", panels)


def gnuplot(path, ylabel, y2label, panels):
    """An SVG of panels one above the other, over seconds: each panel the
    gnuplot lines (data blocks, title, plot) of one run."""
    program = shutil.which("gnuplot")
    if not program:
        raise vhca_fabric.FabricError(
            "gnuplot not found: run scripts/setup-host.sh (it installs "
            "gnuplot-nox), or leave out --plot")
    script = ["set terminal svg size 900,%d dynamic noenhanced "
              "font 'sans,11'" % (330 * len(panels)),
              "set output '%s'" % path,
              "set multiplot layout %d,1" % len(panels),
              "set xlabel 'seconds'", "set ylabel '%s'" % ylabel,
              "set y2label '%s'" % y2label, "set y2tics",
              "set ytics nomirror", "set key top right", "set grid"]
    for lines in panels:
        script += lines
    script.append("unset multiplot")
    subprocess.run([program], input="\n".join(script) + "\n", text=True,
                   check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--senders", type=int, default=2)
    parser.add_argument("--rate", default="40mbit",
                        help="the bottleneck, a tc rate (default 40mbit: "
                        "well under what the congestion point's guest "
                        "forwards on a busy two-core host)")
    parser.add_argument("--duration", type=int, default=20,
                        help="seconds of ib_write_bw -D (default 20)")
    parser.add_argument("--size", type=int, default=65536)
    parser.add_argument("--modes", default="off,on",
                        type=lambda s: s.split(","))
    parser.add_argument("--param", action="append", default=[],
                        metavar="NAME=VALUE",
                        help="a DCQCN devlink parameter instead of the "
                        "script's (e.g. rp_time_reset=300); repeatable")
    parser.add_argument("--kmin", type=int, metavar="BYTES",
                        help="RED's marking starts at this queue (default "
                        "%d)" % congestion_point.RED_MIN)
    parser.add_argument("--kmax", type=int, metavar="BYTES",
                        help="and marks with RED's top probability here "
                        "(default %d)" % congestion_point.RED_MAX)
    parser.add_argument("--run-dir", default=os.path.join(
        vhca_fabric.DEFAULT_RUN_DIR, "incast"))
    parser.add_argument("--attach", action="store_true",
                        help="use the fabric 'vhca_fabric.py start --link "
                        "tap --bottleneck RATE' left running in RUN_DIR")
    parser.add_argument("--rst", metavar="FILE")
    parser.add_argument("--plot", metavar="FILE.svg")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    for mode in args.modes:
        if mode not in MODES:
            parser.error("--modes: %s is not one of %s"
                         % (mode, ", ".join(MODES)))
    params = dict(DCQCN_PARAMS)
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep or not value.isdigit():
            parser.error("--param %s: give NAME=VALUE, e.g. "
                         "rp_time_reset=300" % item)
        params[name] = int(value)
    if args.plot and not shutil.which("gnuplot"):
        parser.error("--plot needs gnuplot: run scripts/setup-host.sh "
                     "(it installs gnuplot-nox)")
    try:
        rate_bits(args.rate)
        if args.attach:
            fabric = vhca_fabric.Fabric.attach(args.run_dir)
            if not fabric.cpoint:
                raise vhca_fabric.FabricError(
                    "the fabric in %s has no bottleneck" % args.run_dir)
            fabric.cpoint.rate = args.rate
        else:
            fabric = vhca_fabric.Fabric(args.senders + 1, args.run_dir,
                                        link="tap",
                                        bottleneck=args.rate).boot()
        try:
            for guest in fabric.guests:
                guest.set_mtu(vhca_fabric.GUEST_MAX_MTU)
            results = [run_mode(fabric, mode, args.duration, args.size,
                                params=params, kmin=args.kmin,
                                kmax=args.kmax) for mode in args.modes]
        finally:
            if not args.attach:
                fabric.stop()
    except vhca_fabric.FabricError as e:
        print("incast: error: %s" % e, file=sys.stderr)
        return 1
    text = report(results, args.rate, len(fabric.guests) - 1,
                  args.duration, args.size)
    for r in results:
        text += "%s: %s\n" % (r["mode"], json.dumps(
            {k: v for k, v in r.items() if k != "series"}))
    write_outputs(args, text, results, lambda path: plot(results, args.rate,
                                                         path))
    return 0


def write_outputs(args, text, results, draw):
    """A benchmark's figures: text to stdout and to --rst, results to
    --json, the plot draw(path) makes to --plot."""
    sys.stdout.write(text)
    if args.rst:
        with open(args.rst, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.plot:
        draw(args.plot)


if __name__ == "__main__":
    sys.exit(main())
