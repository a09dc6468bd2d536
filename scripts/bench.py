#!/usr/bin/python3
"""Benchmark vhca against Linux soft-RoCE (rxe on virtio-net) with perftest.

Boots two vhca guests, runs perftest between them, stops them, then boots two
rxe guests (virtio-net-pci NICs on the same kind of fabric) and runs the
same.  Only two guests run at a time.  Prints reStructuredText for
docs/benchmarks.rst (or writes it to --rst FILE): the machine, then

  - ib_write_bw, ib_read_bw, ib_send_bw from 64 B to 64 KiB:
    average bandwidth (MiB/s) and message rate (thousand messages/s)
  - ib_send_bw -e (event-driven, both sides) at 64 B and 4 KiB: small
    SENDs with no spinning vCPU (docs/benchmarks.rst says why)
  - ib_send_lat (polling and with -e, event-driven), ib_write_lat and
    ib_read_lat at 64 B: typical (median) latency and 99th percentile (us)

and with --plot FILE.svg draws bandwidth against message size for both
NICs with gnuplot (scripts/setup-host.sh installs gnuplot-nox).
``--nics`` takes the fabric's NIC kinds, and vhca-ib-switch: two
InfiniBand guests through one vhca-switch instead of back to back.

Both pairs run with the same interface MTU (--mtu, default 9000: RoCE path
MTU 4096 for vhca and rxe alike; 1500 gives path MTU 1024), and the same
--guest-idle: halt (the kernel's default, and vhca_fabric.py's) or poll, which
boots the guests with idle=poll, so that an idle guest spins, yielding the
host CPU, instead of halting, the host's cores never go idle and a frame
never waits for one to wake up (docs/benchmarks.rst, "Idle host cores").

This is a benchmark, not a test: a run that fails shows as "failed" in the
table and the outputs stay in RUN_DIR/bench-NIC/NAME.log.

    scripts/bench.py [--nics vhca,rxe] [--mtu 9000] [--scale 1.0]
                     [--vcpu-policy idle|normal] [--guest-idle halt|poll]
                     [--run-dir DIR]
                     [--rst FILE] [--plot FILE.svg]
"""

import argparse
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import time

import vhca_fabric

PORT = 18515
TIMEOUT = 300

# Bandwidth: each program runs for BW_SECONDS (perftest -D), of which
# perftest measures the middle half (its margin is a quarter at each
# end), so connection set-up, the first window and the end do not count.
# Counted iterations lasted 20-50 ms on vhca: the guests' 4 ms tick and
# the host's scheduler moved those figures by 10-40% from run to run.
BW_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw")
BW_SIZES = (64, 512, 4096, 16384, 65536)
BW_SECONDS = 4
BANDWIDTH = [(tool, size, None) for tool in BW_TOOLS for size in BW_SIZES]
# perftest's -e does not run timed (-D), so these count messages.
BANDWIDTH += [("ib_send_bw -e", 64, 50000), ("ib_send_bw -e", 4096, 50000)]
# Latency: (tool, message size, iterations).  "-e": the programs sleep on
# completion events instead of polling, so the two vCPUs stop competing
# with the two QEMU main loops for the host's cores; the polling figures
# carry that competition in their tail.
LATENCY = [("ib_send_lat", 64, 5000), ("ib_write_lat", 64, 5000),
           ("ib_read_lat", 64, 5000), ("ib_send_lat -e", 64, 5000)]

# rxe: soft-RoCE on virtio-net; vhca-ib: vhca's InfiniBand port.
NIC_TITLES = {"vhca": "vhca", "rxe": "rxe", "vhca-ib": "vhca IB",
              "vhca-ib-switch": "vhca IB, switch"}

# perftest's result lines: "#bytes #iterations BW-peak BW-average MsgRate"
# and "#bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%",
# where t_stdev can be "-nan" (perftest's variance went negative in
# floating point; seen on rxe with a 55 ms t_max).
BW_LINE = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$",
                     re.M)
LAT_LINE = re.compile(r"^\s*(\d+)\s+(\d+)" + r"\s+([\d.]+|-?nan)" * 7,
                      re.M)


def perftest(fabric, log_dir, tool, size, count):
    """Run tool between guest 2 (server) and guest 1 (client) with count
    ("-n ITERATIONS" or "-D SECONDS"); return the client's result line's
    numbers, or None if the run failed."""
    srv, cli = fabric[2], fabric[1]

    def command(guest):
        # The InfiniBand port is addressed by LID: no GID index.
        gid = "" if guest.nic == "vhca-ib" else \
            "-x %d " % guest.ipv4_gid_index()
        return "%s -d %s %s-F -s %d %s" % (tool, guest.rdma_dev, gid, size,
                                            count)

    status, cli_out, srv_out = vhca_fabric.client_server(
        srv, cli, command(srv), command(cli) + " " + srv.ipv4, PORT,
        TIMEOUT)
    name = "%s-%d" % (tool.replace(" -", "_"), size)
    with open(os.path.join(log_dir, name + ".log"), "w") as f:
        f.write("client (status %d):\n%s\nserver:\n%s" % (status, cli_out,
                                                         srv_out))
    latency = tool.split()[0].endswith("_lat")
    line = (LAT_LINE if latency else BW_LINE).search(cli_out)
    if status != 0 or not line or int(line.group(1)) != size:
        print("  %s: failed (see %s.log)" % (name, name), file=sys.stderr,
              flush=True)
        return None
    return [float(v) for v in line.groups()]


# Pairs beyond the fabric's NIC kinds: (NIC, InfiniBand switches between).
PAIRS = {"vhca-ib-switch": ("vhca-ib", 1)}


def run_nic(pair, artifacts, run_dir, scale, mtu, vcpu_policy, guest_idle):
    """Boot two guests of pair (a NIC kind, or one of PAIRS), run every
    test; return their results."""
    nic, switches = PAIRS.get(pair, (pair, None))
    log_dir = os.path.join(run_dir, "bench-" + pair)
    results = {}
    t0 = time.monotonic()
    with vhca_fabric.Fabric(2, log_dir, nics=[nic, nic],
                            vcpu_policy=vcpu_policy,
                            guest_idle=guest_idle,
                            switches=switches) as fabric:
        fabric.start(*artifacts).wait_ready()
        if nic == "vhca-ib":
            # A subnet manager brings the ports up; the path MTU is the
            # port's, 4096 (NeighborMTU), whatever --mtu says.
            fabric[1].run("opensm -B -f /tmp/opensm.log > /dev/null 2>&1")
            for guest in fabric.guests:
                guest.run("for i in $(seq 240); do grep -q ACTIVE "
                          "/sys/class/infiniband/vhca0/ports/1/state && "
                          "exit 0; sleep 0.5; done; exit 1", 150)
        for guest in fabric.guests:
            if nic != "vhca-ib":
                guest.set_mtu(mtu)
            # The figures are labelled with it: make sure the guest has it.
            polls = "idle=poll" in guest.run("cat /proc/cmdline").split()
            if polls != (guest_idle == "poll"):
                raise vhca_fabric.FabricError(
                    "guest%d: idle=poll %s on its kernel command line, "
                    "expected --guest-idle %s"
                    % (guest.index, "is" if polls else "is not", guest_idle))
        print("[bench] %s: guests up in %.0fs" % (nic, time.monotonic() - t0),
              file=sys.stderr, flush=True)
        for tool, size, iters in BANDWIDTH + LATENCY:
            t1 = time.monotonic()
            if iters is None:
                count = "-D %d" % max(BW_SECONDS, round(BW_SECONDS * scale))
            else:
                count = "-n %d" % max(int(iters * scale), 5)
            results[(tool, size)] = perftest(fabric, log_dir, tool, size,
                                             count)
            print("[bench] %s: %s %d B %s: %.0fs"
                  % (nic, tool, size, count, time.monotonic() - t1),
                  file=sys.stderr, flush=True)
    print("[bench] %s: %.0fs in all" % (nic, time.monotonic() - t0),
          file=sys.stderr, flush=True)
    return results


def rst_table(header, rows):
    """A reStructuredText simple table."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    rule = "  ".join("=" * w for w in widths)

    def line(row):
        return "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()

    return "\n".join([rule, line(header), rule] + [line(r) for r in rows]
                     + [rule])


def size_name(size):
    return "%d KiB" % (size // 1024) if size >= 1024 else "%d B" % size


def ratio_column(nics):
    """vhca over rxe, when the run has both."""
    return "vhca" in nics and "rxe" in nics


def report(nics, results):
    def value(nic, key, index):
        r = results[nic].get(key)
        return None if r is None else r[index]

    def cell(nic, key, index, fmt, scale=1):
        v = value(nic, key, index)
        return "failed" if v is None else fmt % (v * scale)

    def ratio(key, index, fmt):
        vhca, rxe = value("vhca", key, index), value("rxe", key, index)
        return fmt % (vhca / rxe) if vhca and rxe else "-"

    header = ["test", "size"]
    for nic in nics:
        header += ["%s MiB/s" % NIC_TITLES[nic], "%s kmsg/s" % NIC_TITLES[nic]]
    if ratio_column(nics):
        header.append("ratio")
    rows = []
    for tool, size, _ in BANDWIDTH:
        row = [tool, size_name(size)]
        for nic in nics:
            # BW average (MiB/s); MsgRate is in Mpps.
            row += [cell(nic, (tool, size), 3, "%.2f"),
                    cell(nic, (tool, size), 4, "%.2f", 1e3)]
        if ratio_column(nics):
            row.append(ratio((tool, size), 4, "%.1f"))
        rows.append(row)
    bandwidth = rst_table(header, rows)

    header = ["test", "size"]
    for nic in nics:
        header += ["%s t_typical (us)" % NIC_TITLES[nic],
                   "%s 99%% (us)" % NIC_TITLES[nic]]
    if ratio_column(nics):
        header.append("ratio")
    rows = []
    for tool, size, _ in LATENCY:
        row = [tool, size_name(size)]
        for nic in nics:
            # t_typical is the median; the 99th percentile shows the tail.
            row += [cell(nic, (tool, size), 4, "%.1f"),
                    cell(nic, (tool, size), 7, "%.1f")]
        if ratio_column(nics):
            row.append(ratio((tool, size), 4, "%.2f"))
        rows.append(row)
    return bandwidth + "\n\n" + rst_table(header, rows)


def machine(qemu, args):
    """Where and how the figures were taken, for the reader to compare."""
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    version = subprocess.run([qemu, "--version"], stdout=subprocess.PIPE,
                             text=True).stdout.split("\n")[0]
    load = os.getloadavg()[0]
    return ("%s, ``scripts/bench.py %s``; interface MTU %d on both guests "
            "of each pair.  Host: %d x %s, %d GiB, Linux %s; %s with TCG "
            "(no KVM) and the project's patches (``qemu-patches/``); "
            "guests: ``-machine q35 -cpu max -smp 1 -m 1024``%s, vCPU "
            "threads %s.  Load "
            "average %.1f when the run ended.  MiB/s is perftest's \"BW "
            "average\", kmsg/s its \"MsgRate\" in thousands of messages "
            "per second, both from the client; \"ratio\" is vhca over "
            "rxe (message rate; latency: vhca's t_typical over rxe's)."
            % (datetime.date.today().isoformat(),
               "--nics %s --mtu %d --scale %g --vcpu-policy %s "
               "--guest-idle %s"
               % (",".join(args.nics), args.mtu, args.scale,
                  args.vcpu_policy, args.guest_idle),
               args.mtu,
               os.cpu_count(), model, round(mem_kib / 2**20),
               platform.release(), version,
               ", kernel ``idle=poll`` (an idle guest spins, yielding the "
               "host CPU on each PAUSE)" if args.guest_idle == "poll"
               else ", idle guests halt",
               "at ``SCHED_IDLE``" if args.vcpu_policy == "idle"
               else "at the host's normal priority", load))


def plot(nics, results, path):
    """Bandwidth against message size, one line per NIC and program, as
    an SVG drawn by gnuplot."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        raise vhca_fabric.FabricError(
            "gnuplot not found: run scripts/setup-host.sh (it installs "
            "gnuplot-nox), or leave out --plot")
    script = ["set terminal svg size 800,500 dynamic noenhanced font 'sans,12'",
              "set output '%s'" % path,
              "set logscale xy 2",
              "set xlabel 'message size (bytes)'",
              "set ylabel 'MiB/s (perftest BW average)'",
              "set key top left",
              "set grid"]
    lines = []
    for nic in nics:
        for tool in BW_TOOLS:
            name = "$%s_%s" % (nic, tool)
            script.append("%s << EOD" % name)
            for t, size, _ in BANDWIDTH:
                r = results[nic].get((t, size))
                if t == tool and r:
                    script.append("%d %f" % (size, r[3]))
            script.append("EOD")
            lines.append("%s using 1:2 with linespoints title '%s %s' "
                         "dashtype %d" % (name, NIC_TITLES[nic], tool,
                                          1 if nic == "vhca" else 2))
    script.append("plot " + ", ".join(lines))
    subprocess.run([gnuplot], input="\n".join(script) + "\n", text=True,
                   check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nics", type=lambda s: s.split(","),
                        default=["vhca", "rxe"],
                        help="which pairs to run, in order (default vhca,rxe)")
    parser.add_argument("--mtu", type=int, default=9000,
                        help="both guests' interface MTU (default 9000)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the counted tests' iterations and, "
                        "above 1, the bandwidth tests' %d seconds (default 1)"
                        % BW_SECONDS)
    parser.add_argument("--vcpu-policy", choices=vhca_fabric.VCPU_POLICIES,
                        default=vhca_fabric.DEFAULT_VCPU_POLICY,
                        help="host scheduling of the guests' vCPU threads "
                        "(default %s, vhca_fabric.py's)"
                        % vhca_fabric.DEFAULT_VCPU_POLICY)
    parser.add_argument("--guest-idle", choices=vhca_fabric.GUEST_IDLE,
                        default=vhca_fabric.DEFAULT_GUEST_IDLE,
                        help="what an idle guest does: halt (the kernel's) "
                        "or poll (idle=poll: the host's cores never go "
                        "idle); default %s, vhca_fabric.py's"
                        % vhca_fabric.DEFAULT_GUEST_IDLE)
    parser.add_argument("--run-dir", default=os.path.join(
        vhca_fabric.DEFAULT_RUN_DIR, "bench"))
    parser.add_argument("--rst", metavar="FILE",
                        help="write the results there (docs/bench-results"
                        ".rst) instead of printing them")
    parser.add_argument("--plot", metavar="FILE.svg",
                        help="draw bandwidth against message size there "
                        "(docs/bench-bandwidth.svg)")
    args = parser.parse_args()
    if args.plot and not shutil.which("gnuplot"):
        parser.error("--plot needs gnuplot: run scripts/setup-host.sh "
                     "(it installs gnuplot-nox)")
    kinds = list(vhca_fabric.NICS) + list(PAIRS)
    unknown = set(args.nics) - set(kinds)
    if unknown:
        parser.error("unknown NIC %s (have %s)"
                     % (",".join(unknown), ",".join(kinds)))
    try:
        # QEMU and the guest image (cached builds), once for both pairs.
        artifacts = vhca_fabric.build_artifacts()
        results = {}
        for nic in args.nics:
            results[nic] = run_nic(nic, artifacts, args.run_dir, args.scale,
                                   args.mtu, args.vcpu_policy,
                                   args.guest_idle)
        text = "%s\n\n%s\n" % (machine(artifacts[0], args),
                                report(args.nics, results))
        if args.plot:
            plot(args.nics, results, args.plot)
    except (vhca_fabric.FabricError, subprocess.CalledProcessError) as e:
        print("bench: error: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    if args.rst:
        with open(args.rst, "w") as f:
            f.write(".. Generated by scripts/bench.py; do not edit.\n\n"
                    + text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
