#!/usr/bin/python3
"""Benchmark NVMe over RDMA on vhca against Linux soft-RoCE (rxe) with fio.

For each NIC kind, boots two guests, exports a RAM-backed null_blk from
guest 2 through nvmet-rdma and connects guest 1 with nvme-rdma
(scripts/nvmeof.py), then runs fio on the namespace: 4 KiB random reads
(IOPS) and 128 KiB sequential reads (MiB/s), each time based, direct I/O,
libaio at queue depth 16.  Prints a reStructuredText table for
docs/benchmarks.rst.  A benchmark, not a test: a job that fails shows as
"failed", and fio's output stays in RUN_DIR/bench-nvme-NIC/JOB.log.

    scripts/bench_nvme.py [--nics vhca,rxe] [--runtime 20] [--run-dir DIR]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import nvmeof
import vhca_fabric

# (name, fio arguments, what to report)
JOBS = [
    ("randread-4k", "--rw=randread --bs=4k", "iops"),
    ("seqread-128k", "--rw=read --bs=128k", "bw"),
]
# The whole namespace is first written once: null_blk's memory-backed
# mode reads unwritten sectors without allocating, which would flatter
# the reads.
SIZE = "64m"


def fio(host, dev, log_dir, name, args, runtime):
    """Run one fio job on dev in host; return its read result or None."""
    cmd = ("fio --name=%s --filename=%s --size=%s %s --direct=1 "
           "--ioengine=libaio --iodepth=16 --time_based --runtime=%d "
           "--output-format=json" % (name, dev, SIZE, args, runtime))
    status, out = host.exec(cmd, timeout=runtime * 10 + 120)
    with open(os.path.join(log_dir, name + ".log"), "w") as f:
        f.write("%s\n(status %d)\n%s" % (cmd, status, out))
    try:
        return json.loads(out[out.index("{"):])["jobs"][0]["read"]
    except (ValueError, KeyError, IndexError):
        print("  %s: failed (see %s.log)" % (name, name), file=sys.stderr,
              flush=True)
        return None


def run_nic(nic, artifacts, run_dir, runtime):
    log_dir = os.path.join(run_dir, "bench-nvme-" + nic)
    results = {}
    t0 = time.monotonic()
    with vhca_fabric.Fabric(2, log_dir, nics=[nic, nic]) as fabric:
        fabric.start(*artifacts).wait_ready()
        host, target = fabric[1], fabric[2]
        nvmeof.export(target)
        dev = nvmeof.connect(host, target)
        host.run("dd if=/dev/zero of=%s bs=1M count=64 oflag=direct "
                 "status=none" % dev, timeout=900)
        for name, args, _ in JOBS:
            results[name] = fio(host, dev, log_dir, name, args, runtime)
        nvmeof.disconnect(host, target)
    print("[bench-nvme] %s: %.0fs in all" % (nic, time.monotonic() - t0),
          file=sys.stderr, flush=True)
    return results


def report(nics, results):
    header = ["fio job"] + nics
    rows = []
    for name, _, what in JOBS:
        row = [name + (" (IOPS)" if what == "iops" else " (MiB/s)")]
        for nic in nics:
            r = results[nic].get(name)
            if r is None:
                row.append("failed")
            elif what == "iops":
                row.append("%.0f" % r["iops"])
            else:
                row.append("%.1f" % (r["bw"] / 1024.0))  # fio: KiB/s
        rows.append(row)
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    rule = "  ".join("=" * w for w in widths)

    def line(row):
        return "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()

    return "\n".join([rule, line(header), rule] + [line(r) for r in rows]
                     + [rule])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nics", type=lambda s: s.split(","),
                        default=["vhca", "rxe"])
    parser.add_argument("--runtime", type=int, default=20,
                        help="seconds per fio job (default 20)")
    parser.add_argument("--run-dir", default=os.path.join(
        vhca_fabric.DEFAULT_RUN_DIR, "bench"))
    args = parser.parse_args()
    try:
        artifacts = vhca_fabric.build_artifacts()
        results = {nic: run_nic(nic, artifacts, args.run_dir, args.runtime)
                   for nic in args.nics}
    except (vhca_fabric.FabricError, subprocess.CalledProcessError) as e:
        print("bench-nvme: error: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    print(report(args.nics, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
