#!/usr/bin/python3
"""Where a message's latency goes between two vhca guests.

Boots two vhca guests, runs one perftest ping-pong latency program between
them (ib_send_lat, ib_send_lat -e or ib_write_lat) once as it is and once
with vhca's trace events on, and splits each message's one-way trip, from
the sender's SQ doorbell to the receiver's next SQ doorbell (its reply),
into four stages, from the devices' timestamped trace:

  sender: doorbell -> frame out   the guest's SQ doorbell write (the vCPU,
                                  vhca_doorbell) to the frame the device
                                  built (vhca_tx_frame): the doorbell queue,
                                  a QEMU main loop wake-up, the engine
  wire: frame out -> frame in     QEMU's dgram backend sends it, the host's
                                  UDP, the receiving QEMU's main loop wakes
                                  and hands it over (vhca_rx_frame)
  receiver: frame in -> irq       the engine places it and completes it
                                  (vhca_irq_msix); event-driven only: a
                                  polling program arms no CQ, so no
                                  interrupt comes
  receiver's guest: -> doorbell   from the interrupt (or, if none came
                                  first, from the frame in) until the guest rings its SQ
                                  doorbell for the reply: the guest kernel
                                  and program, under TCG

and prints each stage's median and 90th percentile in each direction
beside perftest's own t_typical.  The trace costs time (a write() per
event): the traced run is slower than the untraced one, which is printed
too.  docs/benchmarks.rst, "Where latency goes", has a run and what it
shows.  A diagnostic, not a test: tests/guest/test_two_guests.py only
checks that the stages add up to the latency perftest measures.

    scripts/latency_breakdown.py [--tool "ib_send_lat -e"] [--size 64]
                                 [--iters 2000] [--mtu 9000]
                                 [--guest-idle halt|poll] [--run-dir DIR]
"""

import argparse
import bisect
import collections
import os
import re
import statistics
import subprocess
import sys

import bench
import vhca_fabric

# QEMU's "log" trace backend stamps each event with the time of day only
# under -msg timestamp=on.
QEMU_ARGS = ("-msg", "timestamp=on")
EVENTS = ("vhca_doorbell", "vhca_tx_frame", "vhca_rx_frame", "vhca_irq_msix")
TOOLS = ("ib_send_lat", "ib_send_lat -e", "ib_write_lat")

# "PID@SECONDS.MICROSECONDS:EVENT ARGS", the log backend's format.
TRACE_LINE = re.compile(r"^\d+@(\d+)\.(\d{6}):(vhca_\w+) (.*)$", re.M)
# The doorbell register offsets in a doorbell page (include/vhca_hw.h,
# VHCA_DB_SQ and VHCA_DB_RQ/CQ/SRQ): only the SQ's starts a message.
SQ_DOORBELL = re.compile(r"offset 0x0 ")
FRAME_LEN = re.compile(r"len (\d+)")
# Completion vectors start at VHCA_VECTOR_FIRST_COMP (include/vhca_hw.h);
# the async and Ethernet vectors below it say nothing about a message.
MSIX_VECTOR = re.compile(r"vector (\d+)")
FIRST_COMPLETION_VECTOR = 2

STAGES = ("sender: doorbell -> frame out",
          "wire: frame out -> frame in",
          "receiver: frame in -> irq",
          "receiver's guest: -> doorbell",
          "one way: doorbell -> doorbell")


class Trace:
    """One QEMU's trace, in microseconds since the epoch: the times of its
    SQ doorbells, its completion interrupts (MSI-X), and its frames out and in, by
    length."""

    def __init__(self, text):
        self.sq_doorbells, self.irqs = [], []
        self.tx = collections.defaultdict(list)
        self.rx = collections.defaultdict(list)
        for m in TRACE_LINE.finditer(text):
            t = int(m.group(1)) * 1000000 + int(m.group(2))
            event, args = m.group(3), m.group(4)
            if event == "vhca_doorbell":
                if SQ_DOORBELL.search(args):
                    self.sq_doorbells.append(t)
            elif event == "vhca_irq_msix":
                vector = int(MSIX_VECTOR.search(args).group(1))
                if vector >= FIRST_COMPLETION_VECTOR:
                    self.irqs.append(t)
            elif event in ("vhca_tx_frame", "vhca_rx_frame"):
                frames = self.tx if event == "vhca_tx_frame" else self.rx
                frames[int(FRAME_LEN.search(args).group(1))].append(t)
        # The vCPU and the main loop stamp an event before they take the
        # log's lock: the file's order is not quite the time order.
        for times in [self.sq_doorbells, self.irqs, *self.tx.values(),
                      *self.rx.values()]:
            times.sort()

    def data_frame_len(self):
        """The length of the frames that carry the messages: the longest
        the device sent at least half as often as its most frequent one
        (its acknowledgements, one per message, are shorter)."""
        if not self.tx:
            return None
        most = max(len(times) for times in self.tx.values())
        return max(n for n, times in self.tx.items()
                   if 2 * len(times) >= most)


def first_after(times, t):
    """The first time in sorted times at or after t, or None."""
    i = bisect.bisect_left(times, t)
    return times[i] if i < len(times) else None


def last_before(times, t):
    """The last time in sorted times at or before t, or None."""
    i = bisect.bisect_right(times, t)
    return times[i - 1] if i else None


def one_way(sender, receiver):
    """Each message sender sent receiver, split into STAGES: a dict of
    stage name to the list of its durations (us).  A message is a data
    frame out of sender; the stages follow it to the receiver's next SQ
    doorbell.  The interrupt stage counts only messages that raised one
    before that doorbell."""
    stages = {name: [] for name in STAGES}
    length = sender.data_frame_len()
    if length is None:
        return stages
    frames_in = receiver.rx.get(length, [])
    for out in sender.tx[length]:
        doorbell = last_before(sender.sq_doorbells, out)
        arrived = first_after(frames_in, out)
        if doorbell is None or arrived is None:
            continue
        reply = first_after(receiver.sq_doorbells, arrived)
        if reply is None:
            break
        irq = first_after(receiver.irqs, arrived)
        guest_from = arrived
        if irq is not None and irq <= reply:
            stages["receiver: frame in -> irq"].append(irq - arrived)
            guest_from = irq
        stages["sender: doorbell -> frame out"].append(out - doorbell)
        stages["wire: frame out -> frame in"].append(arrived - out)
        stages["receiver's guest: -> doorbell"].append(reply - guest_from)
        stages["one way: doorbell -> doorbell"].append(reply - doorbell)
    return stages


def percentile(values, fraction):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * fraction))]


def perftest(fabric, tool, size, iters):
    """Run tool between guest 2 (server) and guest 1 (client) as bench.py
    does, its output kept in the fabric's run directory; return
    perftest's t_typical (us).  Raises FabricError if it fails."""
    result = bench.perftest(fabric, fabric.run_dir, tool, size,
                            "-n %d" % iters)
    if result is None:
        raise vhca_fabric.FabricError("%s failed; its output is in %s"
                                      % (tool, fabric.run_dir))
    return result[4]


def traced(fabric, tool, size, iters):
    """Run tool with EVENTS on in both QEMUs; return (t_typical, the
    stages of guest 1's messages to guest 2, those of guest 2's to guest
    1).  The fabric's QEMUs must run with QEMU_ARGS."""
    starts = {}
    for g in fabric.guests:
        starts[g.index] = os.path.getsize(os.path.join(g.dir,
                                                       "qemu.stderr"))
        for event in EVENTS:
            g.qmp("trace-event-set-state", name=event, enable=True)
    try:
        t_typical = perftest(fabric, tool, size, iters)
    finally:
        for g in fabric.guests:
            for event in EVENTS:
                g.qmp("trace-event-set-state", name=event, enable=False)
    traces = {}
    for g in fabric.guests:
        with open(os.path.join(g.dir, "qemu.stderr"), errors="replace") as f:
            f.seek(starts[g.index])
            traces[g.index] = Trace(f.read())
    return (t_typical, one_way(traces[1], traces[2]),
            one_way(traces[2], traces[1]))


def report(tool, size, iters, untraced, t_typical, forth, back):
    lines = ["%s, %d B, %d iterations between two vhca guests"
             % (tool, size, iters),
             "perftest t_typical: %.1f us untraced, %.1f us traced"
             % (untraced, t_typical), "",
             "%-34s %-22s %-22s" % ("median (90th percentile), us",
                                    "guest1 -> guest2", "guest2 -> guest1")]
    for name in STAGES:
        cells = []
        for stages in (forth, back):
            values = stages[name]
            cells.append("%.0f (%.0f), n=%d"
                         % (statistics.median(values),
                            percentile(values, 0.9), len(values))
                         if values else "none")
        lines.append("%-34s %-22s %-22s" % (name, cells[0], cells[1]))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tool", choices=TOOLS, default="ib_send_lat -e")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--mtu", type=int, default=9000,
                        help="both guests' interface MTU (default 9000)")
    parser.add_argument("--guest-idle", choices=vhca_fabric.GUEST_IDLE,
                        default=vhca_fabric.DEFAULT_GUEST_IDLE,
                        help="what an idle guest does: halt or poll "
                        "(idle=poll), as in bench.py; default %s"
                        % vhca_fabric.DEFAULT_GUEST_IDLE)
    parser.add_argument("--run-dir", default=os.path.join(
        vhca_fabric.DEFAULT_RUN_DIR, "latency-breakdown"))
    args = parser.parse_args()
    try:
        artifacts = vhca_fabric.build_artifacts()
        with vhca_fabric.Fabric(2, args.run_dir, nics=["vhca", "vhca"],
                                extra_args=QEMU_ARGS,
                                guest_idle=args.guest_idle) as fabric:
            fabric.start(*artifacts).wait_ready()
            for guest in fabric.guests:
                guest.set_mtu(args.mtu)
            untraced = perftest(fabric, args.tool, args.size, args.iters)
            result = traced(fabric, args.tool, args.size, args.iters)
    except (vhca_fabric.FabricError, subprocess.CalledProcessError) as e:
        print("latency_breakdown: error: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    print(report(args.tool, args.size, args.iters, untraced, *result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
