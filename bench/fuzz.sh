#!/usr/bin/env bash
# bench/fuzz.sh: builds the libFuzzer targets of tests/fuzz (clang, ASan+UBSan, its own
# build dir) and runs each for SECONDS, one after the other, starting from its seed
# corpus tests/fuzz/corpus/<target>/ (every seed runs first: the committed regression
# inputs are checked on every run), with the words of tests/fuzz/<target>.dict if there
# is one. New inputs go to a work corpus outside the tree; crashes, leaks, timeouts (an
# input over 10 s) and out-of-memory (over 2 GB) are kept as <out>/<target>/crash-*,
# leak-*, timeout-*, oom-*. Prints one line per target (CPU seconds: user + system of
# the run) and exits 1 when any target found something.
#   usage: bench/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]
#   env: FUZZ_BUILD   build dir (default <repo>/build-fuzz)
#        FUZZ_SEED    libFuzzer's -seed (default: a new one each run; CI sets 1, so its
#                     short run repeats the same inputs first)
#        FUZZ_OUT     work corpora and findings (default $FUZZ_BUILD/fuzz-out)
#        FUZZ_TABLE   also write the table to this file
#        FUZZ_NICE    run the targets under nice (default 10)
# Exits 77 (skipped) when clang or its libFuzzer is missing.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
SECS=${1:-60}
[ "$#" -gt 0 ] && shift
BUILD=${FUZZ_BUILD:-$SRC/build-fuzz}
OUT=${FUZZ_OUT:-$BUILD/fuzz-out}
ALL=(config searchspace json metrics rest dispatcher kubeconfig nvsmi remote_state)
TARGETS=("$@")
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=("${ALL[@]}")
case $SECS in '' | *[!0-9]*) echo "usage: $0 [SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2 ;; esac

if ! command -v clang >/dev/null ||
    ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
        clang -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
    echo "fuzz: clang with libFuzzer is not installed (Debian: apt-get install clang); skipped"
    exit 77
fi
echo "fuzz: building the targets in $BUILD"
mkdir -p "$BUILD"
blog=$BUILD/fuzz-build.log
CC=clang cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DTRIALQ_FUZZ=ON >"$blog" 2>&1 ||
    { tail -n 30 "$blog"; exit 1; }
cmake --build "$BUILD" -j"${FUZZ_JOBS:-2}" --target fuzz_targets >>"$blog" 2>&1 || { tail -n 30 "$blog"; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
found=0
table=$(printf '%-13s %10s %8s %6s %8s  %s\n' target runs exec/s cov cpu_s findings)
echo "$table"
for t in "${TARGETS[@]}"; do
    exe=$BUILD/tests/fuzz/fuzz_$t
    seeds=$SRC/tests/fuzz/corpus/$t
    [ -x "$exe" ] && [ -d "$seeds" ] || { echo "fuzz: no target $t (known: ${ALL[*]})" >&2; exit 2; }
    work=$OUT/$t
    mkdir -p "$work/corpus"
    rm -f "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* "$work"/slow-unit-*
    log=$work/log
    t0=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$$/stat)
    rc=0
    dict=()
    [ ! -f "$SRC/tests/fuzz/$t.dict" ] || dict=(-dict="$SRC/tests/fuzz/$t.dict")
    # the work corpus first (new inputs are written there), the seeds read only
    (cd "$work" && exec nice -n "${FUZZ_NICE:-10}" "$exe" -max_total_time="$SECS" ${FUZZ_SEED:+-seed="$FUZZ_SEED"} -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "${dict[@]}" -artifact_prefix="$work/" "$work/corpus" "$seeds") >"$log" 2>&1 || rc=$?
    # CPU time of the finished child (user + system, clock ticks), from this shell's counters
    t1=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$$/stat)
    cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.0f", (b - a) / hz }')
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    finds=$(cd "$work" && ls crash-* leak-* timeout-* oom-* 2>/dev/null | tr '\n' ' ' || true)
    if [ "$rc" != 0 ] || [ -n "$finds" ]; then
        found=1
        finds="${finds:-exit $rc} (log: $log)"
        grep -m 1 -A 12 -E '^==[0-9]+==ERROR|runtime error|^SUMMARY' "$log" | sed 's/^/    /' >&2 || true
    fi
    line=$(printf '%-13s %10s %8s %6s %8s  %s' "$t" "${runs:-?}" "${eps:-?}" "${cov:-?}" "$cpu" "${finds:-none}")
    echo "$line"
    table+=$'\n'$line
done
[ -z "${FUZZ_TABLE:-}" ] || printf '%s\n' "$table" >"$FUZZ_TABLE"
exit "$found"
