#!/bin/bash
# Guest tests with the host side under AddressSanitizer, LeakSanitizer and
# UBSan: builds the sanitizer QEMU (scripts/build-qemu.sh with
# VHCA_QEMU_SANITIZE=1, a tree of its own), runs the named tests/guest
# modules with it, then reads every QEMU's stderr for sanitizer reports.
# Run by hand, not by the test command: the build takes as long as the
# normal one, and the guests run about twice as slowly.
#
#   flock /tmp/vhca-qemu.lock scripts/sanitize-guests.sh [MODULE...]
#
# MODULE defaults to test_faults (resets, unbinds, rmmod, power-off, a
# refusing socket during traffic) and test_two_guests.  Exits 1 if a
# module fails or if any QEMU reported an error or a leak in vhca's code
# (a leak report whose stack has no vhca frame is QEMU's own and only
# counted).  The reports stay in $VHCA_RUN_DIR/sanitizer/{asan,ubsan}.PID
# (ASan's file of each QEMU holds at least its start-up warning).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

export VHCA_QEMU_SANITIZE=1
export VHCA_RUN_DIR="${VHCA_RUN_DIR:-/tmp/vhca-run-sanitize}"
# ASan stops QEMU at the first error; LeakSanitizer reports at exit, which
# the fabric's SIGTERM reaches through QEMU's orderly shutdown.
# Each process writes its reports to a file of its own (PREFIX.PID): a
# module that restarts its guests rewrites their qemu.stderr.
reports="$VHCA_RUN_DIR/sanitizer"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:log_path=$reports/asan}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:log_path=$reports/ubsan}"
# Boot and every command take about twice as long under ASan.
export VHCA_BOOT_TIMEOUT="${VHCA_BOOT_TIMEOUT:-600}"

modules=("$@")
[ ${#modules[@]} -gt 0 ] || modules=(test_faults test_two_guests)

qemu="$("$VHCA_ROOT/scripts/build-qemu.sh" | tail -1)"
log "sanitizer QEMU: $qemu"
"$VHCA_ROOT/images/build-image.sh" >/dev/null

rm -rf "$VHCA_RUN_DIR"
mkdir -p "$reports"
status=0
( cd "$VHCA_ROOT/tests/guest" && /usr/bin/python3 -m unittest -v "${modules[@]}" ) ||
	status=1

python3 - "$VHCA_RUN_DIR" "$reports" <<'EOF' || status=1
import glob
import os
import re
import sys

ours = theirs = 0
files = sorted(glob.glob(os.path.join(sys.argv[1], "*", "guest*",
                                      "qemu.stderr")) +
               glob.glob(os.path.join(sys.argv[2], "*")))
for path in files:
    text = open(path, errors="replace").read()
    # One report per "ERROR: ..." or "runtime error" block; a leak report
    # is one "Direct/Indirect leak" stack.
    reports = re.split(r"\n(?=\S*(?:ERROR: |[Dd]irect leak|"
                       r"Indirect leak)|\S+:\d+:\d+: runtime error)", text)
    for report in reports:
        if not re.search(r"ERROR: AddressSanitizer|runtime error|leak of",
                         report):
            continue
        if "leak of" in report and "vhca" not in report:
            theirs += 1
            continue
        ours += 1
        print("%s:\n%s\n" % (path, report.strip()[:4000]))
print("[vhca] sanitizer reports: %d in vhca, %d leaks in the rest of QEMU "
      "(%d QEMU processes)" % (ours, theirs, len(glob.glob(
          os.path.join(sys.argv[2], "asan.*")))))
sys.exit(1 if ours else 0)
EOF
exit $status
