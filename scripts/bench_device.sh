#!/bin/bash
# The device's speed inside QEMU (docs/benchmarks.rst, "Device"): one QEMU,
# one vhca function, two RC QPs of it connected to each other, driven
# through libqtest with no guest (tests/qtest/vhca-bench-loopback.c).
# Builds QEMU with scripts/build-qemu.sh and prints, for RC WRITE, READ
# and SEND, the bandwidth of 64 KiB messages and the message rate of
# 64-byte ones at path MTU 4096 and 1024, in the format of
# scripts/bench_engine.sh (the engine alone), so the two compare line by
# line.
#
#   scripts/bench_device.sh [SECONDS_PER_CASE]      # default 2
#
# A benchmark, not a test: it prints figures, per second of wall time
# (the work is QEMU's main loop, another process).  It starts QEMU, so on
# a host shared with other QEMU jobs run it under their lock
# (flock /tmp/vhca-qemu.lock scripts/bench_device.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

secs="${1:-2}"
qemu="$("$VHCA_ROOT/scripts/build-qemu.sh" tests/qtest/vhca/vhca-bench-loopback |
	tail -1)" || die "building QEMU and vhca-bench-loopback failed"
bench="$(dirname "$qemu")/tests/qtest/vhca/vhca-bench-loopback"
[ -x "$bench" ] || die "no $bench after the build"
export QTEST_QEMU_BINARY="$qemu"

# libqtest announces each QEMU it starts ("# starting QEMU: ...").
run() {
	"$bench" "$@" | grep -v '^# starting QEMU'
}

for mtu in 4096 1024; do
	run --size 65536 --mtu "$mtu" --seconds "$secs"
	run --size 64 --mtu "$mtu" --seconds "$secs"
done
