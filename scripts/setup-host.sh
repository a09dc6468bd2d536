#!/bin/bash
# Prepare a Debian 12 host for building and running vhca.  Idempotent: a
# second run only checks.  Adds the apt sources the build needs (deb-src for
# bookworm, bookworm-backports, deb-src only for trixie - never trixie
# binaries, they would upgrade libc), then installs the build dependencies
# and QEMU's firmware, and unpacks the guest kernel and its headers into
# the cache (never into the host's /boot: installing linux-image would run
# the host's initramfs and boot loader hooks).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || die "must run as root (apt-get install); try: sudo $0"
. /etc/os-release
[ "${ID:-}" = debian ] && [ "${VERSION_ID:-}" = 12 ] ||
	die "needs Debian 12 (bookworm); this is ${PRETTY_NAME:-unknown}"

stamp="$VHCA_CACHE/setup-host.stamp"
want="$(sha256sum "$0" | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi

src=/etc/apt/sources.list.d
cat > "$src/vhca-bookworm-src.sources" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
cat > "$src/vhca-bookworm-backports.sources" <<SRC
Types: deb deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
cat > "$src/vhca-trixie-src.sources" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC

log "apt-get update"
apt-get update -qq || die "apt-get update failed; check the Debian mirror is reachable"

export DEBIAN_FRONTEND=noninteractive
pkgs=(
	# QEMU build
	build-essential pkgconf ninja-build python3-venv python3-distlib
	libglib2.0-dev zlib1g-dev libpixman-1-dev libslirp-dev libfdt-dev
	ccache xz-utils bzip2 libattr1-dev libcap-ng-dev
	# the device's ICRC (hw/vhca/engine/vhca-icrc.c): libdeflate's crc32
	libdeflate-dev libdeflate0
	# QEMU firmware at run time
	seabios ipxe-qemu qemu-system-data
	# rdma-core provider build
	cmake libnl-3-dev libnl-route-3-dev libudev-dev python3-docutils
	# guest image
	debootstrap cpio kmod
	# tests and tools (gnuplot: scripts/bench.py --plot; strace: a guest
	# test watches a vCPU thread yield)
	tshark iproute2 sparse gnuplot-nox strace
	# tests/guest/fi_rma_check.c, built here and copied into the guests
	libfabric-dev
	# checkpatch.pl for the driver lint test
	linux-source-6.12
	# building vhca.ko against the unpacked headers: what linux-kbuild and
	# linux-headers depend on (gcc-12 comes with build-essential)
	libelf1 libssl3 pahole
	# fuzzing: libFuzzer builds (scripts/fuzz-engine.sh, fuzz-qemu.sh);
	# gcc's ASan/UBSan for the test command's run come with build-essential
	clang clang-14 libclang-rt-14-dev
)
log "apt-get install build dependencies"
apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null ||
	die "installing build dependencies failed: ${pkgs[*]}"
log "apt-get install meson from bookworm-backports"
apt-get install -y -qq -t bookworm-backports meson python3-pycotap >/dev/null ||
	die "installing meson from bookworm-backports failed"

kver="$(guest_kernel_version)"
[ -n "$kver" ] || die "no linux-image-6.12.*+deb12-amd64 in apt; is bookworm-updates/security enabled?"
kroot="$(guest_kernel_root "$kver")"
if [ ! -f "$kroot/done" ]; then
	# linux-headers-KVER-common and linux-kbuild-X are named after the
	# version without its flavour (-amd64).
	kbase="${kver%-amd64}"
	debs="$VHCA_CACHE/kernel-debs"
	rm -rf "$kroot" "$debs"
	mkdir -p "$kroot" "$debs"
	log "downloading guest kernel $kver and its headers into $debs"
	# _apt must be able to write there, or apt downloads unsandboxed.
	chown _apt "$debs" 2>/dev/null || true
	( cd "$debs" && apt-get download -q "linux-image-$kver" \
		"linux-headers-$kver" "linux-headers-$kbase-common" \
		"linux-kbuild-$kbase" >/dev/null ) ||
		die "downloading linux-image/linux-headers-$kver failed; check the Debian mirror is reachable"
	log "unpacking them into $kroot"
	for deb in "$debs"/*.deb; do
		dpkg-deb -x "$deb" "$kroot" ||
			die "unpacking $(basename "$deb") failed"
	done
	rm -rf "$debs"
	# The flavour's Makefile includes the common one by absolute path.
	sed -i "s|^include /usr/src/|include $kroot/usr/src/|" \
		"$kroot/usr/src/linux-headers-$kver/Makefile"
	grep -q "^include $kroot/usr/src/" "$kroot/usr/src/linux-headers-$kver/Makefile" ||
		die "could not point linux-headers-$kver at its common headers (package layout changed?)"
	# The package leaves modules.dep to its postinst: make it here.
	depmod -b "$kroot" "$kver" || die "depmod for the unpacked $kver failed"
	touch "$kroot/done"
fi

echo "$want" > "$stamp"
log "host ready (guest kernel $kver)"
