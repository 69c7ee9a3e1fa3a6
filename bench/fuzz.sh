#!/usr/bin/env bash
# bench/fuzz.sh: builds the libFuzzer targets of tests/fuzz (clang, ASan+UBSan, its own
# build dir) and runs each for SECONDS (FUZZ_PARALLEL at a time), starting from its seed
# corpus tests/fuzz/corpus/<target>/ (every seed runs first: the committed regression
# inputs are checked on every run), with the words of tests/fuzz/<target>.dict if there
# is one. New inputs go to a work corpus outside the tree; crashes, leaks, timeouts (an
# input over 10 s) and out-of-memory (over 2 GB) are kept as <out>/<target>/crash-*,
# leak-*, timeout-*, oom-*. A target's own libFuzzer flags (a -max_len...) are the lines of
# tests/fuzz/<target>.options that are not comments. Prints one line per target (CPU seconds: user + system of
# the run) and exits 1 when any target found something.
#   usage: bench/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]
#   env: FUZZ_BUILD   build dir (default <repo>/build-fuzz)
#        FUZZ_SEED    libFuzzer's -seed (default: a new one each run; CI sets 1, so its
#                     short run repeats the same inputs first)
#        FUZZ_OUT     work corpora and findings (default $FUZZ_BUILD/fuzz-out)
#        FUZZ_TABLE   also write the table to this file
#        FUZZ_NICE    run the targets under nice (default 10)
#        FUZZ_PARALLEL  targets run at a time, each on its own core (default 1; ctest's
#                     fuzz/short runs 2: the same SECONDS per target in half the time)
#        FUZZ_CPU     1: SECONDS are CPU seconds, not wall-clock ones: a target that got
#                     less (a busy machine) is run again on its work corpus until its CPU
#                     time reaches SECONDS. Do not pause a target (SIGSTOP): libFuzzer's
#                     timeout is wall-clock, so the input it was on is reported as a
#                     timeout (-timeout=10) when it goes on
# Exits 77 (skipped) when clang or its libFuzzer is missing.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
SECS=${1:-60}
[ "$#" -gt 0 ] && shift
BUILD=${FUZZ_BUILD:-$SRC/build-fuzz}
OUT=${FUZZ_OUT:-$BUILD/fuzz-out}
# every tests/fuzz/fuzz_<name>.c (each listed with its library in tests/fuzz/CMakeLists.txt)
ALL=()
for f in "$SRC"/tests/fuzz/fuzz_*.c; do
    f=${f##*/fuzz_}
    ALL+=("${f%.c}")
done
TARGETS=("$@")
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=("${ALL[@]}")
case $SECS in '' | *[!0-9]*) echo "usage: $0 [SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2 ;; esac
for t in "${TARGETS[@]}"; do
    [[ " ${ALL[*]} " == *" $t "* ]] && [ -d "$SRC/tests/fuzz/corpus/$t" ] ||
        { echo "fuzz: no target $t (known: ${ALL[*]})" >&2; exit 2; }
done

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
# run_target T: runs target T; its table line to $OUT/T.line, "found" there when it found
# something (a background job of its own: its CPU time is its own child's)
run_target() {
    local t=$1 me=$BASHPID exe seeds work log t0 t1 rc cpu runs n left eps cov finds dict=() opts=()
    exe=$BUILD/tests/fuzz/fuzz_$t
    seeds=$SRC/tests/fuzz/corpus/$t
    work=$OUT/$t
    mkdir -p "$work/corpus"
    rm -f "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* "$work"/slow-unit-* "$OUT/$t.line" "$OUT/$t.found"
    log=$work/log
    t0=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$me/stat)
    rc=0 cpu=0 runs=0 left=$SECS
    [ ! -f "$SRC/tests/fuzz/$t.dict" ] || dict=(-dict="$SRC/tests/fuzz/$t.dict")
    [ ! -f "$SRC/tests/fuzz/$t.options" ] || mapfile -t opts < <(grep -v -e '^#' -e '^[[:space:]]*$' "$SRC/tests/fuzz/$t.options")
    : >"$log"
    while [ "$rc" = 0 ] && [ "$left" -gt 0 ]; do
        # the work corpus first (new inputs are written there), the seeds read only
        (cd "$work" && exec nice -n "${FUZZ_NICE:-10}" "$exe" -max_total_time="$left" ${FUZZ_SEED:+-seed="$FUZZ_SEED"} -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 "${dict[@]}" "${opts[@]}" -artifact_prefix="$work/" "$work/corpus" "$seeds") >>"$log" 2>&1 || rc=$?
        # CPU time of the finished children (user + system, clock ticks), from this job's counters
        t1=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$me/stat)
        cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.0f", (b - a) / hz }')
        n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
        runs=$((runs + ${n:-0}))
        [ "${FUZZ_CPU:-0}" = 1 ] && left=$((SECS - cpu)) || left=0
    done
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
    finds=$(cd "$work" && ls crash-* leak-* timeout-* oom-* 2>/dev/null | tr '\n' ' ' || true)
    if [ "$rc" != 0 ] || [ -n "$finds" ]; then
        : >"$OUT/$t.found"
        finds="${finds:-exit $rc} (log: $log)"
        grep -m 1 -A 12 -E '^==[0-9]+==ERROR|runtime error|^SUMMARY' "$log" | sed 's/^/    /' >&2 || true
    fi
    printf '%-13s %10s %8s %6s %8s  %s\n' "$t" "${runs:-?}" "${eps:-?}" "${cov:-?}" "$cpu" "${finds:-none}" >"$OUT/$t.line"
}

# FUZZ_PARALLEL targets at a time (each for SECONDS of its own core), lines in order
for t in "${TARGETS[@]}"; do
    [ -x "$BUILD/tests/fuzz/fuzz_$t" ] || { echo "fuzz: target $t was not built" >&2; exit 2; }
done
found=0
table=$(printf '%-13s %10s %8s %6s %8s  %s\n' target runs exec/s cov cpu_s findings)
echo "$table"
mkdir -p "$OUT"
for i in "${!TARGETS[@]}"; do
    [ "$i" -lt "${FUZZ_PARALLEL:-1}" ] || wait -n || true
    run_target "${TARGETS[$i]}" &
done
wait
for t in "${TARGETS[@]}"; do
    line=$(cat "$OUT/$t.line" 2>/dev/null || printf '%-13s  no result' "$t")
    [ -f "$OUT/$t.line" ] && [ ! -e "$OUT/$t.found" ] || found=1
    echo "$line"
    table+=$'\n'$line
done
[ -z "${FUZZ_TABLE:-}" ] || printf '%s\n' "$table" >"$FUZZ_TABLE"
exit "$found"
