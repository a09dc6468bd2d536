#!/bin/bash
# Fuzz the vhca engine for a while, by hand: the Ethernet port's target
# (tests/unit/fuzz-vhca.c, the default) or the InfiniBand port's
# (tests/unit/fuzz-vhca-ib.c, with "ib").
#
#   scripts/fuzz-engine.sh [eth|ib] [SECONDS] [-- LIBFUZZER_OPTIONS...]
#
# With clang and libFuzzer (clang-14 and libclang-rt-14-dev, installed by
# scripts/setup-host.sh): a coverage-guided run of fuzz-vhca (fuzz-vhca-ib),
# built with AddressSanitizer and UBSan in build-fuzz/, one job per CPU
# (FUZZ_JOBS).  The corpus grows in $VHCA_CACHE/fuzz-corpus
# ($VHCA_CACHE/fuzz-corpus-ib), seeded from tests/unit/fuzz-corpus
# (tests/unit/fuzz-corpus-ib); each job logs to build-fuzz/fuzz-N.log,
# and a crash leaves its input in build-fuzz/crash-* (crash-ib-*).
# Without libFuzzer, the seeded mutator of fuzz-vhca-run (fuzz-vhca-ib-run:
# the same target with fuzz-driver.c) runs instead, with a new seed each
# run.  SECONDS defaults to 3600.
#
# A crash: reproduce it with
#   build-fuzz/tests/unit/fuzz-vhca-run build-fuzz/crash-...
# fix it, and commit the input as tests/unit/fuzz-corpus/crash-NAME
# (fuzz-corpus-ib/ for the IB target; docs/developer-guide.rst, "Fuzzing").
set -euo pipefail
. "$(dirname "$0")/lib.sh"

target=fuzz-vhca
suffix=
case "${1:-}" in
eth) shift ;;
ib) target=fuzz-vhca-ib suffix=-ib; shift ;;
esac
secs="${1:-3600}"
[ $# -gt 0 ] && shift
[ "${1:-}" = -- ] && shift
build="$VHCA_ROOT/build-fuzz"
corpus="$VHCA_CACHE/fuzz-corpus$suffix"
seeds="$VHCA_ROOT/tests/unit/fuzz-corpus$suffix"
crash="$build/crash$suffix-"
jobs="${FUZZ_JOBS:-$(nproc)}"

if command -v clang >/dev/null; then
	cc=clang
else
	cc=cc
fi
if [ ! -f "$build/build.ninja" ]; then
	CC="$cc" meson setup --buildtype=debugoptimized "$build" "$VHCA_ROOT" >/dev/null ||
		die "meson setup $build failed"
fi
ninja -C "$build" "tests/unit/$target-run" >/dev/null ||
	die "building $target-run failed"
mkdir -p "$corpus"
find "$seeds" -maxdepth 1 -type f -exec cp -n {} "$corpus"/ \;

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

if ninja -C "$build" "tests/unit/$target" >/dev/null 2>&1; then
	log "libFuzzer: $target, $jobs jobs for ${secs}s, corpus $corpus"
	cd "$build"
	exec "./tests/unit/$target" -max_total_time="$secs" \
		-jobs="$jobs" -workers="$jobs" -max_len=4096 \
		-artifact_prefix="$crash" "$@" "$corpus" "$seeds"
fi

log "no libFuzzer ($cc): $target's seeded mutator for ${secs}s, $jobs jobs"
# What libFuzzer found before, if the target has such a corpus.
grown=()
[ -d "$seeds/grown" ] && grown=("$seeds/grown")
pids=()
for j in $(seq 1 "$jobs"); do
	seed="$(date +%s)$j"
	"$build/tests/unit/$target-run" --seed "$seed" --iterations 0 \
		--max-time "$secs" --artifact-prefix "$crash" \
		"$corpus" "${grown[@]}" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=1
done
exit "$rc"
