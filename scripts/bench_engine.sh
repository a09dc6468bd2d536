#!/bin/bash
# The engine's speed (docs/benchmarks.rst, "Engine"): two vhca engines back
# to back through the unit harness, no QEMU and no sockets.  Builds
# tests/unit/bench-vhca-engine optimised (-O2) in build-bench/ and prints,
# for RC WRITE, READ and SEND, the bandwidth of 64 KiB messages and the
# message rate of 64-byte ones at path MTU 4096 and 1024, then the same
# 64 KiB WRITE and 64 B SEND on a device of 16384 QPs (max-qp), whose
# deferred passes must not cost more for the table being larger, and
# 64 B WRITEs spread over 16, 256 and 1000 busy QPs (one per QP a batch),
# and the save and load times of a migration with 1000 QPs.
#
#   scripts/bench_engine.sh [SECONDS_PER_CASE]      # default 2
#
# A benchmark, not a test: it prints figures, per second of the engine's
# CPU time (one thread does all of it).  Each case runs in a process
# of its own.  The machine, and what else runs on it, is the caller's to
# state beside the figures.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

secs="${1:-2}"
build="$VHCA_ROOT/build-bench"
if [ ! -d "$build" ]; then
	meson setup "$build" "$VHCA_ROOT" --buildtype=release >/dev/null ||
		die "meson setup $build failed"
fi
ninja -C "$build" tests/unit/bench-vhca-engine >/dev/null ||
	die "building bench-vhca-engine failed"
bench="$build/tests/unit/bench-vhca-engine"

for mtu in 4096 1024; do
	"$bench" --size 65536 --mtu "$mtu" --seconds "$secs"
	"$bench" --size 64 --mtu "$mtu" --seconds "$secs"
done
"$bench" --op write --size 65536 --mtu 4096 --max-qp 16384 --seconds "$secs"
"$bench" --op send --size 64 --mtu 4096 --max-qp 16384 --seconds "$secs"
for qps in 1 16 256 1000; do
	"$bench" --op write --size 64 --mtu 4096 --max-qp 16384 --qps "$qps" \
		--seconds "$secs"
done
# What the device's state adds to a migration's downtime, 1000 QPs idle
# and in the middle of a batch (docs/benchmarks.rst, "Migration").
"$bench" --state --op write --size 64 --max-qp 2048 --qps 1000
