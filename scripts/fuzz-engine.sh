#!/bin/bash
# Fuzz the vhca engine (tests/unit/fuzz-vhca.c) for a while, by hand.
#
#   scripts/fuzz-engine.sh [SECONDS] [-- LIBFUZZER_OPTIONS...]
#
# With clang and libFuzzer (clang-14 and libclang-rt-14-dev, installed by
# scripts/setup-host.sh): a coverage-guided run of fuzz-vhca, built with
# AddressSanitizer and UBSan in build-fuzz/, one job per CPU (FUZZ_JOBS).
# The corpus grows in $VHCA_CACHE/fuzz-corpus (seeded from
# tests/unit/fuzz-corpus); each job logs to build-fuzz/fuzz-N.log, and a
# crash leaves its input in build-fuzz/crash-*.  Without libFuzzer, the seeded mutator of
# fuzz-vhca-run (the same target with fuzz-driver.c) runs instead, with a
# new seed each run.  SECONDS defaults to 3600.
#
# A crash: reproduce it with
#   build-fuzz/tests/unit/fuzz-vhca-run build-fuzz/crash-...
# fix it, and commit the input as tests/unit/fuzz-corpus/crash-NAME
# (docs/developer-guide.rst, "Fuzzing").
set -euo pipefail
. "$(dirname "$0")/lib.sh"

secs="${1:-3600}"
[ $# -gt 0 ] && shift
[ "${1:-}" = -- ] && shift
build="$VHCA_ROOT/build-fuzz"
corpus="$VHCA_CACHE/fuzz-corpus"
seeds="$VHCA_ROOT/tests/unit/fuzz-corpus"
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
ninja -C "$build" tests/unit/fuzz-vhca-run >/dev/null ||
	die "building fuzz-vhca-run failed"
mkdir -p "$corpus"
find "$seeds" -maxdepth 1 -type f -exec cp -n {} "$corpus"/ \;

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

if ninja -C "$build" tests/unit/fuzz-vhca >/dev/null 2>&1; then
	log "libFuzzer: $jobs jobs for ${secs}s, corpus $corpus"
	cd "$build"
	exec ./tests/unit/fuzz-vhca -max_total_time="$secs" \
		-jobs="$jobs" -workers="$jobs" -max_len=4096 \
		-artifact_prefix="$build/crash-" "$@" "$corpus" "$seeds"
fi

log "no libFuzzer ($cc): the seeded mutator for ${secs}s, $jobs jobs"
pids=()
for j in $(seq 1 "$jobs"); do
	seed="$(date +%s)$j"
	"$build/tests/unit/fuzz-vhca-run" --seed "$seed" --iterations 0 \
		--max-time "$secs" --artifact-prefix "$build/crash-" \
		"$corpus" "$seeds/grown" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=1
done
exit "$rc"
