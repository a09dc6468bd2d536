#!/bin/bash
# Prepare a Debian 12 host for building and running vhca.  Idempotent: a
# second run only checks.  Adds the apt sources the build needs (deb-src for
# bookworm, bookworm-backports, deb-src only for trixie - never trixie
# binaries, they would upgrade libc), then installs the build dependencies,
# the guest kernel and its headers, and QEMU's firmware.
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
	# QEMU firmware at run time
	seabios ipxe-qemu qemu-system-data
	# rdma-core provider build
	cmake libnl-3-dev libnl-route-3-dev libudev-dev python3-docutils
	# guest image
	debootstrap cpio kmod
	# tests and tools
	tshark iproute2 sparse
	# checkpatch.pl for the driver lint test
	linux-source-6.12
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
log "apt-get install guest kernel $kver and its headers"
apt-get install -y -qq --no-install-recommends \
	"linux-image-$kver" "linux-headers-$kver" >/dev/null ||
	die "installing linux-image/linux-headers-$kver failed"

echo "$want" > "$stamp"
log "host ready (guest kernel $kver)"
