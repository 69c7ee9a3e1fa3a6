#!/usr/bin/env bash
# The test suite: builds trialq normally and with ASan+UBSan, then runs every test
# (unit, end-to-end, SDK, systemd units, the repository's own checks) with ctest against
# the sanitized build. One line per build step (their logs in build-asan/test.log),
# ctest's progress, then the logs of the failed tests and ctest's summary, last.
#   ./test.sh --quick      the "quick" subset (ctest -L quick, under 3 minutes on
#                          2 cores once built); the normal build is skipped
#   ./test.sh ARGS...      ARGS go to ctest (e.g. -R e2e/10 or -L unit)
# ctest runs two tests at a time (CTEST_PARALLEL_LEVEL, default 2; 1: one after the
# other); tests that must run alone or one at a time say so (tests/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")"
quick=0
if [ "${1:-}" = --quick ]; then
    quick=1
    shift
fi
mkdir -p build-asan
STEP_LOG=$PWD/build-asan/test.log
: >"$STEP_LOG"
. scripts/steps.sh

step "dependencies" ./scripts/install-deps.sh
if [ "$quick" = 0 ]; then
    step "configure build/ (RelWithDebInfo)" cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRIALQ_TESTS=ON
    step_build "build build/" build
fi
step "configure build-asan/ (Debug, ASan+UBSan)" \
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTRIALQ_SANITIZE=ON -DTRIALQ_TESTS=ON
step_build "build build-asan/" build-asan

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export CTEST_PARALLEL_LEVEL=${CTEST_PARALLEL_LEVEL:-2}
[ "$quick" = 0 ] || set -- -L quick "$@"
cd build-asan
echo "ctest -j$CTEST_PARALLEL_LEVEL${*:+ $*} (in build-asan/)"
# ctest's output as it comes, but its closing summary held back so that it stays last
rm -rf Testing/Temporary/LastTestsFailed.log test-logs fuzz-table.txt
rc=0
ctest --timeout 900 "$@" 2>&1 | tee ctest.log |
    awk '/^[0-9]+% tests passed/ { hold = 1 } !hold { print; fflush() }' || rc=$?

# what the fuzz targets did in their short runs (ctest fuzz/short, bench/fuzz.sh)
if [ -s fuzz-table.txt ]; then
    echo
    echo "Fuzz targets (tests/fuzz, 8 s each from their corpus):"
    sed 's/^/    /' fuzz-table.txt
fi

# each failed test's output, cut out of ctest's LastTest.log
if [ -s Testing/Temporary/LastTestsFailed.log ]; then
    mkdir -p test-logs
    echo
    echo "Failed tests and their output:"
    while IFS=: read -r _ name; do
        log=test-logs/${name//\//_}.log
        awk -v t="$name" '$0 ~ "^[0-9]+/[0-9]+ Testing: " && substr($0, index($0, ": ") + 2) == t { on = 1 }
                          on { print }
                          on && $0 ~ "^\"" && index($0, "\"" t "\" end time") == 1 { exit }' \
            Testing/Temporary/LastTest.log >"$log"
        echo "    $name: build-asan/$log"
        # CI keeps no files: there the end of each log is printed too
        if [ -n "${CI:-}" ]; then tail -n 80 "$log" | sed 's/^/        /'; fi
    done <Testing/Temporary/LastTestsFailed.log
    echo
fi
sed -n '/^[0-9]*% tests passed/,$p' ctest.log
exit "$rc"
