#!/usr/bin/env python3
"""Is the InfiniBand switch the bottleneck of a two-guest stream?

Boots two InfiniBand guests cabled back to back and two through one
vhca-switch, side by side, brings both subnets up with opensm, pins the
four QEMUs to core 0 and the switch to core 1 (a core of its own, as a
switch has its own silicon), then runs ``ib_write_bw -s 65536`` on each
pair alternately and prints, for each run: MiB/s; the CPU seconds each
QEMU (and the switch) spent per GiB streamed; each core's idle share;
and what was lost on the way (the host's UDP receive-buffer drops, the
HCAs' retransmitted packets) - the figures that say which of the three
processes limits the stream (docs/benchmarks.rst, "InfiniBand switch").
A benchmark: it prints figures and asserts nothing.

    scripts/switch_vs_cable.py [--busy-poll] [--rounds 3] [--seconds 8]

--busy-poll starts the switch with ``--busy-poll`` (it never sleeps in
poll()).  Needs two cores and boots four guests.
"""

import argparse
import os
import re
import subprocess
import sys
import time

import bench
import vhca_fabric


def subnet_up(fabric, artifacts):
    fabric.start(*artifacts).wait_ready()
    fabric[1].run("opensm -B -f /tmp/opensm.log > /dev/null 2>&1")
    for guest in fabric.guests:
        guest.run("for i in $(seq 240); do grep -q ACTIVE "
                  "/sys/class/infiniband/vhca0/ports/1/state && exit 0; "
                  "sleep 0.5; done; exit 1", 150)


def pin(pid, mask):
    subprocess.run(["taskset", "-a", "-p", mask, str(pid)], check=True,
                   stdout=subprocess.DEVNULL)


def cpu_seconds(pid):
    """User and system time of a process, all its threads."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_seconds():
    """Each core's idle time so far."""
    with open("/proc/stat") as f:
        return [int(line.split()[4]) / os.sysconf("SC_CLK_TCK")
                for line in f if re.match(r"cpu\d+ ", line)]


def udp_rcvbuf_errors():
    """Datagrams the host dropped for a full socket receive buffer."""
    with open("/proc/net/snmp") as f:
        udp = [line.split() for line in f if line.startswith("Udp:")]
    return int(dict(zip(udp[0][1:], udp[1][1:]))["RcvbufErrors"])


def retransmitted(fabric):
    return sum(g.hw_counters()["retransmitted_pkts"] for g in fabric.guests)


def measured_run(fabric, run_dir, seconds):
    """One ib_write_bw run and what it cost; a line to print."""
    pids = [g.pid for g in fabric.guests] + fabric.link.switch_pids
    cpu = [cpu_seconds(p) for p in pids]
    idle, t0 = idle_seconds(), time.monotonic()
    lost = udp_rcvbuf_errors(), retransmitted(fabric)
    result = bench.perftest(fabric, run_dir, "ib_write_bw", 65536,
                            "-D %d" % seconds)
    if result is None:
        return "failed"
    wall = time.monotonic() - t0
    gib = result[3] * seconds / 1024
    cpu = [(cpu_seconds(p) - c) / gib for p, c in zip(pids, cpu)]
    idle = [(b - a) / wall for a, b in zip(idle, idle_seconds())]
    return ("%7.1f MiB/s  CPU s/GiB %s  idle %s  rcvbuf drops %d, "
            "retransmitted %d"
            % (result[3], " ".join("%.2f" % c for c in cpu),
               " ".join("%.0f%%" % (100 * i) for i in idle),
               udp_rcvbuf_errors() - lost[0],
               retransmitted(fabric) - lost[1]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--busy-poll", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=8)
    args = parser.parse_args()
    if os.cpu_count() < 2:
        sys.exit("switch_vs_cable: needs two cores (QEMUs on one, the "
                 "switch on the other)")
    os.environ["VHCA_SWITCH_BUSY_POLL"] = "1" if args.busy_poll else "0"
    artifacts = vhca_fabric.build_artifacts()
    run_dir = os.path.join(vhca_fabric.DEFAULT_RUN_DIR, "switch-vs-cable")
    mode = "switch, busy-poll" if args.busy_poll else "switch"
    with vhca_fabric.Fabric(2, os.path.join(run_dir, "cable"),
                            nics=["vhca-ib"] * 2) as cable, \
            vhca_fabric.Fabric(2, os.path.join(run_dir, "switch"),
                               nics=["vhca-ib"] * 2, switches=1) as switch:
        subnet_up(cable, artifacts)
        subnet_up(switch, artifacts)
        for guest in cable.guests + switch.guests:
            pin(guest.pid, "0x1")
        for pid in switch.link.switch_pids:
            pin(pid, "0x2")
        print("CPU s/GiB: the two QEMUs (core 0), then the switch (core 1);"
              " idle: core 0, core 1, over the run")
        for rnd in range(args.rounds):
            for name, fabric in (("cable", cable), (mode, switch)):
                print("round %d  %-17s %s"
                      % (rnd + 1, name,
                         measured_run(fabric, run_dir, args.seconds)),
                      flush=True)


if __name__ == "__main__":
    main()
