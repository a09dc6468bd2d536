#!/bin/bash
# QEMU's own device fuzzer (the generic-fuzz target of tests/qtest/fuzz)
# over vhca's MMIO (BAR0 registers, BAR2 doorbells) and DMA (every guest
# memory read the device makes is answered with fuzzer data), in a second
# QEMU build with clang, libFuzzer, AddressSanitizer and UBSan.  Run by
# hand, except replay, which the test command's fuzz suite runs.
#
#   flock /tmp/vhca-qemu.lock scripts/fuzz-qemu.sh build
#   scripts/fuzz-qemu.sh configure      (tree and configure only)
#   scripts/fuzz-qemu.sh run [SECONDS] [LIBFUZZER_OPTIONS...]
#   scripts/fuzz-qemu.sh merge          (the run's corpus into the repo's)
#   scripts/fuzz-qemu.sh replay         (every input of the repo's corpus)
#   scripts/fuzz-qemu.sh repro CRASH_FILE
#
# build: unpacks the same QEMU tarball as scripts/build-qemu.sh (run that
# first) into a tree of its own, $VHCA_CACHE/qemu-fuzz-KEY/src, hooks
# hw/vhca in the same way and builds qemu-fuzz-x86_64 (configure
# --enable-fuzzing --enable-asan --enable-ubsan).  The normal build's tree
# and build directory are not touched; the lock only keeps two QEMU builds
# from sharing the CPUs.
#
# run: the device on q35 with a user-mode netdev (the fuzzer does not
# inject frames; RoCE traffic to the device's own GIDs loops back):
#   QEMU_FUZZ_ARGS='-M q35 -nodefaults -L /usr/share/seabios
#                   -L /usr/share/qemu -netdev user,id=n0
#                   -device vhca,netdev=n0'
# (-L: Debian's +ds tarball has no firmware blobs; q35 needs SeaBIOS from
# the seabios package, as the normal build's --firmwarepath gives it)
#   QEMU_FUZZ_OBJECTS='vhca'      (the MemoryRegions vhca-ctrl and
#                                  vhca-doorbell, and the device's DMA)
# for SECONDS (default 3600) with the corpus in $VHCA_CACHE/qemu-fuzz-corpus,
# started from the repo's, tests/qtest/fuzz-corpus: the seeds
# (scripts/fuzz-qemu-seeds.py writes them: the device enabled, then each
# admin command, the Ethernet rings, the doorbells) and grown/, what
# earlier runs found.  A crash leaves its input in
# $VHCA_CACHE/qemu-fuzz-crash-*.  merge minimizes the run's corpus into a
# new grown/ (libFuzzer -merge: the fewest inputs with the same coverage).
# replay runs every input of the repo's corpus once and fails on any
# finding; repro runs one input again.  QEMU_FUZZ_TIMEOUT and the rest of
# docs/devel/testing/fuzzing.rst in the QEMU source apply.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cmd="${1:-}"
[ $# -gt 0 ] && shift

src_dir="$VHCA_CACHE/src"
tarball="$(ls "$src_dir"/qemu_10.0.*+ds.orig.tar.xz 2>/dev/null | sort -V | tail -1 || true)"
[ -n "$tarball" ] || die "no QEMU tarball in $src_dir: run scripts/build-qemu.sh first"
if ! command -v clang >/dev/null || ! command -v clang++ >/dev/null; then
	die "needs clang and clang++ (scripts/setup-host.sh installs clang-14)"
fi

configure_opts=(
	--python=/usr/bin/python3 --cc=clang --cxx=clang++ --objcc=clang
	--target-list=x86_64-softmmu --without-default-features
	--disable-download --disable-docs --disable-install-blobs
	--enable-fdt=system --enable-slirp --enable-pixman
	--enable-fuzzing --enable-asan --enable-ubsan --disable-werror
	--enable-trace-backends=log
)
patch_version=1
qemu_patches="$VHCA_ROOT/qemu-patches"
key="$(hash_inputs "$(basename "$tarball")" "${configure_opts[*]}" "$patch_version" \
	"$qemu_patches")"
top="$VHCA_CACHE/qemu-fuzz-$key"
qemu_src="$top/src"
qemu_build="$top/build"
fuzzer="$qemu_build/qemu-fuzz-x86_64"
corpus="$VHCA_CACHE/qemu-fuzz-corpus"
seeds="$VHCA_ROOT/tests/qtest/fuzz-corpus"
inputs=("$seeds")
[ -d "$seeds/grown" ] && inputs+=("$seeds/grown")

export QEMU_FUZZ_ARGS="${QEMU_FUZZ_ARGS:--M q35 -nodefaults -L /usr/share/seabios -L /usr/share/qemu -netdev user,id=n0 -device vhca,netdev=n0}"
export QEMU_FUZZ_OBJECTS="${QEMU_FUZZ_OBJECTS:-vhca}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

configure() {
	qemu_prepare_tree "$tarball" "$qemu_src" "$qemu_build"

	if [ ! -f "$qemu_build/build.ninja" ]; then
		log "configuring QEMU for fuzzing in $qemu_build"
		rm -rf "$qemu_build"
		mkdir -p "$qemu_build"
		( cd "$qemu_build" && "$qemu_src/configure" "${configure_opts[@]}" ) \
			> "$top/configure.log" 2>&1 ||
			die "configure failed; see $top/configure.log"
	fi
}

build() {
	configure
	log "building qemu-fuzz-x86_64 (ninja in $qemu_build; log $top/build.log)"
	nice ninja -C "$qemu_build" qemu-fuzz-x86_64 > "$top/build.log" 2>&1 || {
		grep -E 'error|Error' "$top/build.log" | head -20 >&2
		die "build failed; see $top/build.log"
	}
	echo "$fuzzer"
}

case "$cmd" in
configure)
	configure
	echo "$qemu_build"
	;;
build)
	build
	;;
run)
	[ -x "$fuzzer" ] || die "no $fuzzer: run 'flock /tmp/vhca-qemu.lock $0 build' first"
	secs="${1:-3600}"
	[ $# -gt 0 ] && shift
	mkdir -p "$corpus"
	log "generic-fuzz over '$QEMU_FUZZ_OBJECTS' for ${secs}s, corpus $corpus"
	exec "$fuzzer" --fuzz-target=generic-fuzz -max_total_time="$secs" \
		-artifact_prefix="$VHCA_CACHE/qemu-fuzz-crash-" "$@" "$corpus" \
		"${inputs[@]}"
	;;
merge)
	[ -x "$fuzzer" ] || die "no $fuzzer: run 'flock /tmp/vhca-qemu.lock $0 build' first"
	rm -rf "$seeds/grown.new"
	mkdir -p "$seeds/grown.new"
	"$fuzzer" --fuzz-target=generic-fuzz -merge=1 "$seeds/grown.new" \
		"${inputs[@]:1}" "$corpus" >"$VHCA_CACHE/qemu-fuzz-merge.log" 2>&1 ||
		die "merge failed; see $VHCA_CACHE/qemu-fuzz-merge.log"
	rm -rf "$seeds/grown"
	mv "$seeds/grown.new" "$seeds/grown"
	log "$(ls "$seeds/grown" | wc -l) inputs in $seeds/grown"
	;;
replay)
	[ -x "$fuzzer" ] || die "no $fuzzer: run 'flock /tmp/vhca-qemu.lock $0 build' first"
	# -runs=0: load and run every input once, then stop.  Prints
	# "replayed N inputs" on success; a finding stops it with its report.
	"$fuzzer" --fuzz-target=generic-fuzz -runs=0 \
		-artifact_prefix="$VHCA_CACHE/qemu-fuzz-crash-" \
		"${inputs[@]}" 2>&1 | tee "$VHCA_CACHE/qemu-fuzz-replay.log" |
		grep -E "ERROR|SUMMARY|crash-" >&2 || true
	[ "${PIPESTATUS[0]}" = 0 ] ||
		die "an input of $seeds failed; see $VHCA_CACHE/qemu-fuzz-replay.log"
	echo "replayed $(find "$seeds" -type f | wc -l) inputs"
	;;
repro)
	[ $# -eq 1 ] || die "usage: $0 repro CRASH_FILE"
	exec "$fuzzer" --fuzz-target=generic-fuzz "$1"
	;;
*)
	die "usage: $0 configure | build | run [SECONDS] [OPTIONS...] | merge | replay | repro CRASH_FILE"
	;;
esac
