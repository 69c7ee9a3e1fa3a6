#!/usr/bin/env bash
# The whole test suite: builds trialq normally and with ASan+UBSan, then runs every
# test (unit, end-to-end, SDK, systemd units) with ctest against the sanitized build.
set -euo pipefail
cd "$(dirname "$0")"
if ! pkg-config --exists sqlite3 libcurl yaml-0.1 libcjson libssh2 libevent cmocka 2>/dev/null; then
    ./scripts/install-deps.sh
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTRIALQ_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd build-asan
ctest --output-on-failure --timeout 900 "$@"
