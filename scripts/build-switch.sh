#!/bin/bash
# Build vhca-switch, the fabric's InfiniBand switch (switch/), in the
# project's meson build (as the unit tests are) and print its path.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build="$VHCA_ROOT/build"
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$VHCA_ROOT" >&2 ||
		die "meson setup failed; run scripts/setup-host.sh first"
fi
ninja -C "$build" switch/vhca-switch >&2 ||
	die "could not build switch/vhca-switch (see the compiler's messages above)"
echo "$build/switch/vhca-switch"
