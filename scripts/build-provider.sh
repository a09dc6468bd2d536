#!/bin/bash
# Build the vhca rdma-core provider (provider/vhca) against rdma-core 56.1,
# the version the guest runs (Debian 13).  Providers build only inside an
# rdma-core tree (they use its private headers), so the source and build
# directory live in the cache, keyed by the tarball and the configure line,
# with provider/vhca symlinked in as providers/vhca: editing the provider
# rebuilds in seconds.
#
# Prints the path of libvhca-rdmav34.so on stdout; it goes to
# /usr/lib/x86_64-linux-gnu/libibverbs/ in the guest.  The file for
# /etc/libibverbs.d/vhca.driver ("driver vhca") is written by rdma-core's
# rdma_provider() at configure time, at providers/vhca/vhca.driver in the
# build directory, i.e. "$(dirname "$so")/../providers/vhca/vhca.driver".
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build_lock provider

rdma_core_version=56.1
provider=vhca
# rdma_provider() names the plugin <name>-rdmav<IBVERBS_PABI_VERSION>.
provider_target="$provider-rdmav34"

for tool in cmake ninja; do
	command -v "$tool" >/dev/null ||
		die "$tool not found; run scripts/setup-host.sh first"
done

src_dir="$VHCA_CACHE/src"
mkdir -p "$src_dir"
tarball="$src_dir/rdma-core_$rdma_core_version.orig.tar.gz"
if [ ! -f "$tarball" ]; then
	log "fetching rdma-core source (rdma-core/trixie)"
	( cd "$src_dir" && apt-get source -qq --tar-only rdma-core/trixie ) \
		> "$src_dir/rdma-core-fetch.log" 2>&1 ||
		die "apt-get source rdma-core/trixie failed (see $src_dir/rdma-core-fetch.log); run scripts/setup-host.sh first"
	[ -f "$tarball" ] ||
		die "apt-get source rdma-core/trixie did not give $(basename "$tarball"); trixie's rdma-core is no longer $rdma_core_version"
fi

# rdma-core's default build type (RelWithDebInfo: -O2 -g, debug logging
# compiled in); -Werror so a warning fails the build; no build-tree RPATH,
# which would point the installed .so at this host's cache; Debian's Python,
# as python3 on PATH may be a shim (pyenv) that cannot see Debian's modules
# (rdma-core runs Python to generate the ABI headers).
cmake_opts=(
	-GNinja -DNO_PYVERBS=1 -DNO_MAN_PAGES=1 -DENABLE_STATIC=0
	-DENABLE_WERROR=1 -DCMAKE_SKIP_BUILD_RPATH=ON
	-DPYTHON_EXECUTABLE=/usr/bin/python3
)
# Bump when the way the tree is patched changes.
patch_version=1
key="$(hash_inputs "$(basename "$tarball")" "${cmake_opts[*]}" "$patch_version")"
rdma_dir="$VHCA_CACHE/rdma-core-$key"
rdma_src="$rdma_dir/src"
rdma_build="$rdma_dir/build"

if [ ! -f "$rdma_src/.vhca-unpacked" ]; then
	log "unpacking $(basename "$tarball")"
	rm -rf "$rdma_src"
	mkdir -p "$rdma_src"
	tar -xzf "$tarball" -C "$rdma_src" --strip-components=1 ||
		die "could not unpack $tarball"
	touch "$rdma_src/.vhca-unpacked"
fi

# Point the hook at this clone (CI uses a fresh clone in another folder).
# The physical path: CMake resolves the link to find ../../include.
vhca_root="$(cd "$VHCA_ROOT" && pwd -P)"
ln -sfn "$vhca_root/provider/$provider" "$rdma_src/providers/$provider"
hook="add_subdirectory(providers/$provider)"
# Among the providers that need coherent DMA (they ring doorbells from user
# space), in alphabetical order.
grep -qxF "$hook" "$rdma_src/CMakeLists.txt" ||
	sed -i "s|^add_subdirectory(providers/vmw_pvrdma)$|$hook\n&|" "$rdma_src/CMakeLists.txt"
grep -qxF "$hook" "$rdma_src/CMakeLists.txt" ||
	die "could not add $hook to rdma-core's CMakeLists.txt (source layout changed?)"

# Configure once per clone location: the include path of the shared headers
# is resolved at configure time.
root_stamp="$rdma_build/.vhca-root"
if [ ! -f "$rdma_build/build.ninja" ] ||
   [ "$(cat "$root_stamp" 2>/dev/null)" != "$vhca_root" ]; then
	log "configuring rdma-core in $rdma_build"
	# What the provider's objects were built from may be newer than
	# this clone's files (ninja rebuilds by mtime): build them again.
	rm -rf "$rdma_build/providers/$provider" "$rdma_build/lib/lib$provider_target".so*
	mkdir -p "$rdma_build"
	( cd "$rdma_build" && cmake "${cmake_opts[@]}" "$rdma_src" ) \
		> "$rdma_dir/configure.log" 2>&1 ||
		die "rdma-core configure failed; see $rdma_dir/configure.log"
	echo "$vhca_root" > "$root_stamp"
fi

log "building $provider_target (ninja in $rdma_build)"
ninja -C "$rdma_build" -j2 "$provider_target" > "$rdma_dir/build.log" 2>&1 || {
	grep -E 'error:|warning:' "$rdma_dir/build.log" | head -20 >&2
	die "provider build failed; see $rdma_dir/build.log"
}
so="$rdma_build/lib/lib$provider_target.so"
[ -f "$so" ] || die "ninja succeeded but $so is missing"
ln -sfn "rdma-core-$key" "$VHCA_CACHE/rdma-core-current"
echo "$so"
