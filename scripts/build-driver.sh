#!/bin/bash
# Build the guest kernel module vhca.ko against the exact kernel the guest
# boots.  Built in a copy under the cache so the clone stays clean; keyed by
# the driver sources, the shared headers, the kernel version and the make
# flags.  Every file also goes through sparse (C=1; a few seconds more), so
# a byte-order mistake on the little-endian fields of vhca_hw.h fails the
# build like a compiler warning.  Prints the path of vhca.ko on stdout.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build_lock driver

kver="$(guest_kernel_version)"
kdir="$(guest_kernel_root "$kver")/usr/src/linux-headers-$kver"
[ -d "$kdir" ] || die "kernel headers $kdir missing; run scripts/setup-host.sh"
command -v sparse >/dev/null || die "sparse not found; run scripts/setup-host.sh"

# W=1: the extra compiler warnings; C=1: sparse on every file compiled.
make_flags=(W=1 C=1)
key="$(hash_inputs "$VHCA_ROOT/drivers/vhca" "$VHCA_ROOT/include" "$kver" \
	"${make_flags[*]}")"
out="$VHCA_CACHE/driver-$key"
if [ ! -f "$out/vhca.ko" ]; then
	work="$VHCA_CACHE/driver-build"
	rm -rf "$work"
	mkdir -p "$work/drivers"
	cp -r "$VHCA_ROOT/drivers/vhca" "$work/drivers/vhca"
	ln -s "$VHCA_ROOT/include" "$work/include"
	make -s -C "$kdir" M="$work/drivers/vhca" "${make_flags[@]}" modules \
		> "$work/build.log" 2>&1 || {
		grep -E 'error|warning' "$work/build.log" | head -20 >&2
		die "building vhca.ko failed; see $work/build.log"
	}
	# sparse reports without failing make: its errors count too.
	if grep -qE 'warning:|error:' "$work/build.log"; then
		grep -E 'warning:|error:' "$work/build.log" | head -20 >&2
		die "vhca.ko builds with compiler or sparse warnings; see $work/build.log"
	fi
	mkdir -p "$out"
	cp "$work/drivers/vhca/vhca.ko" "$out/vhca.ko"
	find "$VHCA_CACHE" -maxdepth 1 -name 'driver-[0-9a-f]*' ! -path "$out" \
		-mmin +60 -exec rm -rf {} +
fi
echo "$out/vhca.ko"
