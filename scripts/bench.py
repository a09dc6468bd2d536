#!/usr/bin/python3
"""Benchmark vhca against Linux soft-RoCE (rxe on virtio-net) with perftest.

Boots two vhca guests, runs perftest between them, stops them, then boots two
rxe guests (virtio-net-pci NICs on the same kind of fabric) and runs the
same.  Only two guests run at a time.  Prints reStructuredText tables for
docs/benchmarks.rst:

  - ib_write_bw, ib_read_bw, ib_send_bw at 64 B, 4 KiB and 64 KiB:
    average bandwidth (MiB/s) and message rate (thousand messages/s)
  - ib_send_lat (polling and with -e, event-driven) and ib_write_lat at 64 B:
    typical (median) latency and 99th percentile (us)

Both pairs run with the same interface MTU (--mtu, default 9000: RoCE path
MTU 4096 for vhca and rxe alike; 1500 gives path MTU 1024).

This is a benchmark, not a test: a run that fails shows as "failed" in the
table and the outputs stay in RUN_DIR/bench-NIC/NAME.log.

    scripts/bench.py [--nics vhca,rxe] [--mtu 9000] [--scale 1.0] [--run-dir DIR]
"""

import argparse
import os
import re
import subprocess
import sys
import time

import vhca_fabric

PORT = 18515
TIMEOUT = 300

# (tool, message size, iterations): enough for each run to last seconds
# (not dominated by connection set-up), few enough that both halves take a
# few minutes under TCG.
BANDWIDTH = [
    (tool, size, iters)
    for tool in ("ib_write_bw", "ib_read_bw", "ib_send_bw")
    for size, iters in ((64, 10000), (4096, 2000), (65536, 500))
]
# "-e": the programs sleep on completion events instead of polling, so the
# two vCPUs stop competing with the two QEMU main loops for the host's
# cores; the polling figures carry that competition in their tail.
LATENCY = [("ib_send_lat", 64, 1000), ("ib_write_lat", 64, 1000),
           ("ib_send_lat -e", 64, 1000)]

NIC_TITLES = {"vhca": "vhca", "rxe": "rxe"}  # rxe: soft-RoCE on virtio-net

# perftest's result lines: "#bytes #iterations BW-peak BW-average MsgRate"
# and "#bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%".
BW_LINE = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$",
                     re.M)
LAT_LINE = re.compile(r"^\s*(\d+)\s+(\d+)" + r"\s+([\d.]+)" * 7, re.M)


def perftest(fabric, log_dir, tool, size, iters):
    """Run tool between guest 2 (server) and guest 1 (client); return the
    client's result line's numbers, or None if the run failed."""
    srv, cli = fabric[2], fabric[1]
    cmd = "%s -d %s -x %d -F -s %d -n %d"
    status, cli_out, srv_out = vhca_fabric.client_server(
        srv, cli, cmd % (tool, srv.rdma_dev, srv.ipv4_gid_index(), size, iters),
        cmd % (tool, cli.rdma_dev, cli.ipv4_gid_index(), size, iters)
        + " " + srv.ipv4, PORT, TIMEOUT)
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


def run_nic(nic, artifacts, run_dir, scale, mtu):
    """Boot two guests with NIC nic, run every test; return their results."""
    log_dir = os.path.join(run_dir, "bench-" + nic)
    results = {}
    t0 = time.monotonic()
    with vhca_fabric.Fabric(2, log_dir, nics=[nic, nic]) as fabric:
        fabric.start(*artifacts).wait_ready()
        for guest in fabric.guests:
            guest.set_mtu(mtu)
        print("[bench] %s: guests up in %.0fs" % (nic, time.monotonic() - t0),
              file=sys.stderr, flush=True)
        for tool, size, iters in BANDWIDTH + LATENCY:
            t1 = time.monotonic()
            n = max(int(iters * scale), 5)
            results[(tool, size)] = perftest(fabric, log_dir, tool, size, n)
            print("[bench] %s: %s %d B x %d: %.0fs"
                  % (nic, tool, size, n, time.monotonic() - t1),
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


def report(nics, results):
    def cell(nic, key, pick):
        r = results[nic].get(key)
        return "failed" if r is None else pick(r)

    header = ["test", "size"]
    for nic in nics:
        header += ["%s MiB/s" % NIC_TITLES[nic], "%s kmsg/s" % NIC_TITLES[nic]]
    rows = []
    for tool, size, _ in BANDWIDTH:
        row = [tool, size_name(size)]
        for nic in nics:
            # BW average (MiB/s); MsgRate is in Mpps.
            row += [cell(nic, (tool, size), lambda r: "%.2f" % r[3]),
                    cell(nic, (tool, size), lambda r: "%.2f" % (r[4] * 1e3))]
        rows.append(row)
    bandwidth = rst_table(header, rows)

    header = ["test", "size"]
    for nic in nics:
        header += ["%s t_typical (us)" % NIC_TITLES[nic],
                   "%s 99%% (us)" % NIC_TITLES[nic]]
    rows = []
    for tool, size, _ in LATENCY:
        row = [tool, size_name(size)]
        for nic in nics:
            # t_typical is the median; the 99th percentile shows the tail.
            row += [cell(nic, (tool, size), lambda r: "%.1f" % r[4]),
                    cell(nic, (tool, size), lambda r: "%.1f" % r[7])]
        rows.append(row)
    return bandwidth + "\n\n" + rst_table(header, rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nics", type=lambda s: s.split(","),
                        default=["vhca", "rxe"],
                        help="which pairs to run, in order (default vhca,rxe)")
    parser.add_argument("--mtu", type=int, default=9000,
                        help="both guests' interface MTU (default 9000)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply every iteration count (default 1)")
    parser.add_argument("--run-dir", default=os.path.join(
        vhca_fabric.DEFAULT_RUN_DIR, "bench"))
    args = parser.parse_args()
    unknown = set(args.nics) - set(vhca_fabric.NICS)
    if unknown:
        parser.error("unknown NIC %s (have %s)"
                     % (",".join(unknown), ",".join(vhca_fabric.NICS)))
    try:
        # QEMU and the guest image (cached builds), once for both pairs.
        artifacts = vhca_fabric.build_artifacts()
        results = {}
        for nic in args.nics:
            results[nic] = run_nic(nic, artifacts, args.run_dir, args.scale,
                                   args.mtu)
    except (vhca_fabric.FabricError, subprocess.CalledProcessError) as e:
        print("bench: error: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    print("Interface MTU %d on both guests of each pair.\n" % args.mtu)
    print(report(args.nics, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
