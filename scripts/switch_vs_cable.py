#!/usr/bin/env python3
"""Is the InfiniBand switch the bottleneck of a two-guest stream?

Boots two InfiniBand guests cabled back to back and two through one
vhca-switch, side by side, brings both subnets up with opensm, pins the
four QEMUs to core 0 and the switch to core 1 (a core of its own, as a
switch has its own silicon), then runs ``ib_write_bw -s 65536`` on each
pair alternately and prints MiB/s (docs/benchmarks.rst, "InfiniBand
switch").  A benchmark: it prints figures and asserts nothing.

    scripts/switch_vs_cable.py [--busy-poll] [--rounds 3] [--seconds 8]

--busy-poll starts the switch with ``--busy-poll`` (it never sleeps in
poll()).  Needs two cores and boots four guests.
"""

import argparse
import os
import subprocess
import sys

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
        for rnd in range(args.rounds):
            for name, fabric in (("cable", cable), (mode, switch)):
                result = bench.perftest(fabric, run_dir, "ib_write_bw",
                                        65536, "-D %d" % args.seconds)
                print("round %d  %-17s  %s MiB/s"
                      % (rnd + 1, name,
                         "failed" if result is None else result[3]),
                      flush=True)


if __name__ == "__main__":
    main()
