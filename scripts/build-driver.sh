#!/bin/bash
# Build the guest kernel module vhca.ko against the exact kernel the guest
# boots.  Built in a copy under the cache so the clone stays clean; keyed by
# the driver sources, the shared headers and the kernel version.  Prints the
# path of vhca.ko on stdout.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kver="$(guest_kernel_version)"
kdir="/usr/src/linux-headers-$kver"
[ -d "$kdir" ] || die "kernel headers $kdir missing; run scripts/setup-host.sh"

key="$(hash_inputs "$VHCA_ROOT/drivers/vhca" "$VHCA_ROOT/include" "$kver")"
out="$VHCA_CACHE/driver-$key"
if [ ! -f "$out/vhca.ko" ]; then
	work="$VHCA_CACHE/driver-build"
	rm -rf "$work"
	mkdir -p "$work/drivers"
	cp -r "$VHCA_ROOT/drivers/vhca" "$work/drivers/vhca"
	ln -s "$VHCA_ROOT/include" "$work/include"
	make -s -C "$kdir" M="$work/drivers/vhca" W=1 modules > "$work/build.log" 2>&1 || {
		grep -E 'error|warning' "$work/build.log" | head -20 >&2
		die "building vhca.ko failed; see $work/build.log"
	}
	if grep -q 'warning:' "$work/build.log"; then
		grep 'warning:' "$work/build.log" | head -20 >&2
		die "vhca.ko builds with warnings; see $work/build.log"
	fi
	mkdir -p "$out"
	cp "$work/drivers/vhca/vhca.ko" "$out/vhca.ko"
	find "$VHCA_CACHE" -maxdepth 1 -name 'driver-[0-9a-f]*' ! -path "$out" \
		-mmin +60 -exec rm -rf {} +
fi
echo "$out/vhca.ko"
