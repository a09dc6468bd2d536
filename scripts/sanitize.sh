#!/bin/bash
# The device under AddressSanitizer, LeakSanitizer and UBSan: builds the
# sanitizer QEMU (scripts/build-qemu.sh with VHCA_QEMU_SANITIZE=1, a tree
# of its own), runs the whole qtest suite with it, then the named
# tests/guest modules, then reads every QEMU's reports.  Run by hand, not
# by the test command: the build takes as long as the normal one, and the
# guests run about twice as slowly.
#
#   flock /tmp/vhca-qemu.lock scripts/sanitize.sh [MODULE...]
#
# MODULE defaults to test_faults (resets, hot-unplug, unbinds, rmmod,
# power-off, a refusing socket during traffic) and test_two_guests;
# VHCA_SANITIZE_QTEST=0 skips the qtests, MODULE "none" the guests.  Exits
# 1 if a test fails or if any QEMU reported an error or a leak in vhca's
# code (a leak report whose stack has no vhca frame is QEMU's own and only
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
[ "${modules[*]}" = none ] && modules=()

qemu="$("$VHCA_ROOT/scripts/build-qemu.sh" | tail -1)"
log "sanitizer QEMU: $qemu"

rm -rf "$VHCA_RUN_DIR"
mkdir -p "$reports"
status=0

if [ "${VHCA_SANITIZE_QTEST:-1}" = 1 ]; then
	# The test programs are built with the sanitizers too, but only the
	# QEMUs they start are judged: the programs run with leak checking
	# off, each QEMU with the options above (libqtest starts
	# QTEST_QEMU_BINARY through sh -c).  A leak must not fail QEMU's exit,
	# which libqtest checks: the reports below decide.
	build="$(dirname "$qemu")"
	tests=$(sed -n "s/^  '\(vhca-[a-z-]*-test\)',.*/\1/p" \
		"$VHCA_ROOT/tests/qtest/meson.build")
	ninja -C "$build" $(printf 'tests/qtest/vhca/%s ' $tests) >/dev/null ||
		die "building the qtests in $build failed"
	wrapper="ASAN_OPTIONS=$ASAN_OPTIONS LSAN_OPTIONS=exitcode=0"
	wrapper+=" UBSAN_OPTIONS=$UBSAN_OPTIONS $qemu"
	for t in $tests; do
		log "qtest $t"
		( cd "$build" &&
		  ASAN_OPTIONS=detect_leaks=0 QTEST_QEMU_BINARY="env $wrapper" \
			"tests/qtest/vhca/$t" --tap -k ) > "$reports/$t.tap" 2>&1 ||
			{ grep -E '^not ok' "$reports/$t.tap"; status=1; }
		grep -cE '^ok' "$reports/$t.tap" | sed "s/^/[vhca]   passed: /"
	done
fi

if [ ${#modules[@]} -gt 0 ]; then
	"$VHCA_ROOT/images/build-image.sh" >/dev/null
	( cd "$VHCA_ROOT/tests/guest" &&
	  /usr/bin/python3 -m unittest -v "${modules[@]}" ) || status=1
fi

python3 - "$VHCA_RUN_DIR" "$reports" <<'EOF' || status=1
import glob
import os
import re
import sys

ours = theirs = 0
files = sorted(glob.glob(os.path.join(sys.argv[1], "*", "guest*",
                                      "qemu.stderr")) +
               glob.glob(os.path.join(sys.argv[2], "asan.*")) +
               glob.glob(os.path.join(sys.argv[2], "ubsan.*")))
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
