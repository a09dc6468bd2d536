#!/bin/bash
# The README's test command: set up the host, build everything (cached),
# run every suite and print "N passed, N failed".  Arguments go to
# tests/run_all.py (e.g. --suite unit,qtest).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
"$VHCA_ROOT/scripts/setup-host.sh"
exec /usr/bin/python3 "$VHCA_ROOT/tests/run_all.py" "$@"
