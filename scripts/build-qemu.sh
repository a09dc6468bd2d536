#!/bin/bash
# Build QEMU 10.0 (Debian's bookworm-backports source) with hw/vhca and the
# vhca qtests hooked in.  The source tree and build directory live in the
# cache, keyed by the QEMU tarball and the configure line; the device and its
# tests are symlinked from this clone, so editing a device file rebuilds in
# seconds.  Prints the path of qemu-system-x86_64 on stdout.
#
# VHCA_QEMU_SANITIZE=1 builds a second QEMU, with AddressSanitizer and
# UBSan, in a tree of its own (the configure line is part of the key); it
# does not become qemu-current.  The guest tests use it when the variable
# is set in their environment (scripts/sanitize.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build_lock qemu

src_dir="$VHCA_CACHE/src"
mkdir -p "$src_dir"
tarball="$(ls "$src_dir"/qemu_10.0.*+ds.orig.tar.xz 2>/dev/null | sort -V | tail -1 || true)"
if [ -z "$tarball" ]; then
	log "fetching QEMU source (qemu/bookworm-backports)"
	( cd "$src_dir" && apt-get source -qq --tar-only qemu/bookworm-backports >/dev/null 2>&1 ) ||
		die "apt-get source qemu/bookworm-backports failed; run scripts/setup-host.sh first"
	tarball="$(ls "$src_dir"/qemu_10.0.*+ds.orig.tar.xz | sort -V | tail -1)"
fi

configure_opts=(
	--python=/usr/bin/python3 --cc="ccache gcc"
	--target-list=x86_64-softmmu --without-default-features
	--disable-download --disable-docs --disable-install-blobs
	--enable-fdt=system --enable-slirp --enable-attr --enable-virtfs
	--enable-pixman --enable-trace-backends=log
	--firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu
)
if [ "${VHCA_QEMU_SANITIZE:-0}" = 1 ]; then
	configure_opts+=(--enable-asan --enable-ubsan)
fi
# Bump when the way the tree is patched changes.  The patches to QEMU
# itself (qemu-patches/, applied once to a fresh tree) are keyed too.
patch_version=2
qemu_patches="$VHCA_ROOT/qemu-patches"
key="$(hash_inputs "$(basename "$tarball")" "${configure_opts[*]}" "$patch_version" \
	"$qemu_patches")"
qemu_src="$VHCA_CACHE/qemu-$key/src"
qemu_build="$VHCA_CACHE/qemu-$key/build"

qemu_prepare_tree "$tarball" "$qemu_src" "$qemu_build"

if [ ! -f "$qemu_build/build.ninja" ]; then
	log "configuring QEMU in $qemu_build"
	rm -rf "$qemu_build"
	mkdir -p "$qemu_build"
	( cd "$qemu_build" && "$qemu_src/configure" "${configure_opts[@]}" ) \
		> "$VHCA_CACHE/qemu-$key/configure.log" 2>&1 ||
		die "QEMU configure failed; see $VHCA_CACHE/qemu-$key/configure.log"
	# A binary run from the build tree looks for firmware in qemu-bundle.
	for d in /usr/share/qemu /usr/share/seabios /usr/lib/ipxe/qemu; do
		mkdir -p "$qemu_build/qemu-bundle$(dirname "$d")"
		ln -sfn "$d" "$qemu_build/qemu-bundle$d"
	done
fi

log "building QEMU (ninja in $qemu_build)"
ninja -C "$qemu_build" qemu-system-x86_64 "$@" > "$VHCA_CACHE/qemu-$key/build.log" 2>&1 || {
	grep -E 'error|Error' "$VHCA_CACHE/qemu-$key/build.log" | head -20 >&2
	die "QEMU build failed; see $VHCA_CACHE/qemu-$key/build.log"
}
if [ "${VHCA_QEMU_SANITIZE:-0}" != 1 ]; then
	ln -sfn "qemu-$key" "$VHCA_CACHE/qemu-current"
fi
echo "$qemu_build/qemu-system-x86_64"
