#!/usr/bin/python3
"""A slow receiver on a back-to-back link: RoCE with PFC off, then on.

What priority flow control (IEEE 802.1Qbb) is for: a receiver that
cannot take frames as fast as they come.  Two vhca guests cabled back to
back; guest 2's vhca is made a slow one from the host (its
x-rx-frame-rate property, received requests a second); guest 1 runs
ib_write_bw -D into it at traffic class 96 (DSCP 24, so priority 3).

Two runs, one per mode:

  off  the receiver's queues fill and it drops what does not fit; RC
       recovers each loss by go-back-N (sequence NAKs, resends).
  on   PFC on priority 3 at both ends (`dcb pfc set ... prio-pfc 3:on`):
       the receiver sends XOFF for priority 3 when its queue for it
       passes the threshold and XON when it drains; the sender holds its
       priority 3 frames meanwhile.  Nothing is lost.

For each run it prints the goodput perftest reports, the receiver's drops
(drop_queue_full), the sender's resends, sequence NAKs and ACK timeouts,
the pause frames the receiver sent and the sender took, and how long the
sender was paused.  Every SAMPLE seconds it records the sender's sending
rate (the device's sent_bytes, resends included) and, per second, the
receiver's drops, the sender's resends and the pause frames; --plot draws
them with gnuplot, one panel per mode.

This is a benchmark, not a test (tests/guest/test_pfc.py is the short
form that asserts): it prints figures, and --rst writes them as
reStructuredText for docs/benchmarks.rst.

    scripts/pfc_stream.py [--rx-rate 20000] [--duration 10] [--size 65536]
                          [--modes off,on] [--run-dir DIR] [--attach]
                          [--rst FILE] [--plot FILE.svg] [--json FILE]
"""

import argparse
import datetime
import os
import platform
import shutil
import sys
import threading
import time

import incast
import vhca_fabric

PORT = 18515
SAMPLE = 0.25
PRIO = 3
TCLASS = 24 << 2                # DSCP 24: class selector 3, priority 3
# Counters of x-query-vhca ("counter NAME N").
SENDER_COUNTERS = ("sent_bytes", "retransmitted_pkts", "rcvd_seq_err",
                   "local_ack_timeout_err")
RECEIVER_COUNTERS = ("drop_queue_full", "out_of_seq_request")
# PFC's counters (ethtool -S, mlx5's names; durations in microseconds).
PAUSE_TX = "tx_prio%d_pause" % PRIO
PAUSE_RX = "rx_prio%d_pause" % PRIO
PAUSED_US = "rx_prio%d_pause_duration" % PRIO


class Sampler(threading.Thread):
    """Every SAMPLE seconds: the sender's sent_bytes and resends, the
    receiver's drops and the pause frames it sent."""

    def __init__(self, sender, receiver):
        super().__init__(daemon=True)
        self.sender, self.receiver = sender, receiver
        self.samples = []
        self.done = threading.Event()

    def run(self):
        start = time.monotonic()
        while not self.done.wait(SAMPLE if self.samples else 0):
            sent = incast.device_counters(self.sender)
            got = incast.device_counters(self.receiver)
            pauses = self.receiver.hw_counters("ethtool").get(PAUSE_TX, 0)
            self.samples.append((time.monotonic() - start,
                                 sent.get("sent_bytes", 0),
                                 sent.get("retransmitted_pkts", 0),
                                 got.get("drop_queue_full", 0), pauses))

    def series(self):
        """[(t, sending Mbit/s, resends/s, drops/s, pause frames/s)]."""
        out = []
        for a, b in zip(self.samples, self.samples[1:]):
            dt = b[0] - a[0]
            out.append((b[0], (b[1] - a[1]) * 8 / dt / 1e6) +
                       tuple((y - x) / dt for x, y in zip(a[2:], b[2:])))
        return out


def run_mode(fabric, mode, duration, size, rx_rate):
    """One stream in mode ("off" or "on"); returns its figures.  The
    guests' PFC and the receiver's rate are put back as they were."""
    sender, receiver = fabric[1], fabric[2]
    try:
        for guest in (sender, receiver):
            guest.set_pfc("%d:on" % PRIO if mode == "on" else "all:off")
        receiver.set_rx_frame_rate(rx_rate)
        before = [incast.device_counters(g) for g in (sender, receiver)]
        pfc_before = [g.hw_counters("ethtool") for g in (sender, receiver)]
        cmd = ("ib_write_bw -d vhca0 -F -s %d -D %d -u %d --tclass=%d -x %%d"
               % (size, duration, incast.ACK_TIMEOUT, TCLASS))
        sampler = Sampler(sender, receiver)
        sampler.start()
        try:
            status, out, _ = vhca_fabric.client_server(
                receiver, sender, cmd % receiver.ipv4_gid_index(),
                (cmd % sender.ipv4_gid_index()) + " " + receiver.ipv4,
                PORT, timeout=duration * 4 + 120)
        finally:
            sampler.done.set()
            sampler.join()
        after = [incast.device_counters(g) for g in (sender, receiver)]
        pfc_after = [g.hw_counters("ethtool") for g in (sender, receiver)]
    finally:
        receiver.set_rx_frame_rate(0)
        for guest in (sender, receiver):
            guest.set_pfc("all:off")
    goodput = incast.goodput_mbit(out, size)
    if status != 0 or goodput is None:
        raise vhca_fabric.FabricError(
            "%s: guest1's ib_write_bw failed (exit %d):\n%s"
            % (mode, status, out))
    sent = incast.delta(after[0], before[0], SENDER_COUNTERS)
    got = incast.delta(after[1], before[1], RECEIVER_COUNTERS)
    return {
        "mode": mode, "goodput_mbit": goodput,
        "drops": got["drop_queue_full"],
        "out_of_seq": got["out_of_seq_request"],
        "retransmitted": sent["retransmitted_pkts"],
        "seq_naks": sent["rcvd_seq_err"],
        "ack_timeouts": sent["local_ack_timeout_err"],
        "pauses_sent": pfc_after[1].get(PAUSE_TX, 0) -
        pfc_before[1].get(PAUSE_TX, 0),
        "pauses_taken": pfc_after[0].get(PAUSE_RX, 0) -
        pfc_before[0].get(PAUSE_RX, 0),
        "paused_ms": (pfc_after[0].get(PAUSED_US, 0) -
                      pfc_before[0].get(PAUSED_US, 0)) / 1e3,
        "series": sampler.series(),
    }


def report(results, rx_rate, duration, size):
    """The figures as reStructuredText."""
    lines = [
        "%s, %s, %d host cores (TCG): ib_write_bw -s %d -D %d at traffic "
        "class %d (priority %d) into a receiver taking %d requests a second "
        "(x-rx-frame-rate), back to back; goodput as perftest reports it."
        % (datetime.date.today().isoformat(), platform.platform(),
           len(os.sched_getaffinity(0)), size, duration,
           TCLASS, PRIO, rx_rate),
        "", ".. list-table::", "   :header-rows: 1", "",
        "   * - PFC", "     - goodput (Mbit/s)",
        "     - dropped at the receiver", "     - resent",
        "     - sequence NAKs / ACK timeouts",
        "     - pause frames sent / taken", "     - sender paused (ms)"]
    for r in results:
        lines += ["   * - %s" % r["mode"],
                  "     - %.1f" % r["goodput_mbit"],
                  "     - %d" % r["drops"],
                  "     - %d" % r["retransmitted"],
                  "     - %d / %d" % (r["seq_naks"], r["ack_timeouts"]),
                  "     - %d / %d" % (r["pauses_sent"], r["pauses_taken"]),
                  "     - %.0f" % r["paused_ms"]]
    return "\n".join(lines) + "\n"


def plot(results, rx_rate, path):
    """The sender's sending rate, and the drops, resends and pause frames
    a second, over time: one panel per mode, an SVG drawn by gnuplot."""
    panels = []
    for r in results:
        name = "$%s" % r["mode"]
        lines = ["%s << EOD" % name]
        lines += [" ".join("%.3f" % v for v in row) for row in r["series"]]
        lines.append("EOD")
        lines.append("set title 'PFC %s: a receiver taking %d requests "
                     "a second'" % (r["mode"], rx_rate))
        lines.append(
            "plot %s using 1:2 with lines title 'sender sending', "
            "%s using 1:3 axes x1y2 with lines title 'resent', "
            "%s using 1:4 axes x1y2 with lines title 'dropped', "
            "%s using 1:5 axes x1y2 with lines dashtype 2 title "
            "'pause frames'" % ((name,) * 4))
        panels.append(lines)
    incast.gnuplot(path, "sending (Mbit/s)", "per second", panels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rx-rate", type=int, default=20000,
                        help="requests a second the receiver takes "
                        "(default 20000: a fifth of what a vhca sends "
                        "here)")
    parser.add_argument("--duration", type=int, default=10,
                        help="seconds of ib_write_bw -D (default 10)")
    parser.add_argument("--size", type=int, default=65536)
    parser.add_argument("--modes", default="off,on",
                        type=lambda s: s.split(","))
    parser.add_argument("--run-dir", default=vhca_fabric.DEFAULT_RUN_DIR)
    parser.add_argument("--attach", action="store_true",
                        help="use the two vhca guests 'vhca_fabric.py "
                        "start' left running in RUN_DIR")
    parser.add_argument("--rst", metavar="FILE")
    parser.add_argument("--plot", metavar="FILE.svg")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    for mode in args.modes:
        if mode not in ("off", "on"):
            parser.error("--modes: %s is not off or on" % mode)
    if args.plot and not shutil.which("gnuplot"):
        parser.error("--plot needs gnuplot: run scripts/setup-host.sh "
                     "(it installs gnuplot-nox)")
    try:
        if args.attach:
            fabric = vhca_fabric.Fabric.attach(args.run_dir)
        else:
            fabric = vhca_fabric.Fabric(2, args.run_dir).boot()
        try:
            results = [run_mode(fabric, mode, args.duration, args.size,
                                args.rx_rate) for mode in args.modes]
        finally:
            if not args.attach:
                fabric.stop()
    except vhca_fabric.FabricError as e:
        print("pfc_stream: error: %s" % e, file=sys.stderr)
        return 1
    incast.write_outputs(
        args, report(results, args.rx_rate, args.duration, args.size),
        results, lambda path: plot(results, args.rx_rate, path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
