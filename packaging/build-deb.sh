#!/usr/bin/env bash
# Builds the Debian package trialq_<version>_<arch>.deb (docs/operations.md, "Install
# and remove"): a release build of this source tree in DIR (default build-deb/) with the
# install prefix /usr and TRIALQ_INSTALLED_ONLY (the programs look for their data only
# where the package puts it), then `cpack -G DEB` there. Prints the package's path last.
#   packaging/build-deb.sh [DIR]
# Needs what building needs (scripts/install-deps.sh --build) and dpkg-deb.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/build-deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/build-deb.log
{
    cmake -S "$src" -B "$out" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
        -DTRIALQ_TESTS=OFF -DTRIALQ_INSTALLED_ONLY=ON ${CMAKE_C_COMPILER_LAUNCHER:+-DCMAKE_C_COMPILER_LAUNCHER=$CMAKE_C_COMPILER_LAUNCHER}
    cmake --build "$out" -j"$(nproc)"
    rm -f "$out"/trialq_*.deb
    (cd "$out" && cpack -G DEB)
} >"$log" 2>&1 || { tail -40 "$log" >&2; echo "packaging/build-deb.sh failed; the log: $log" >&2; exit 1; }
deb=$(ls "$out"/trialq_*.deb)
echo "$deb"
