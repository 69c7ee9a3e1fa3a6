#!/usr/bin/env bash
# One command for a newcomer: install the dependencies, build, and run the bundled
# example experiment (examples/quickstart) to completion in the foreground.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
echo
echo "== running examples/quickstart (nnictl create --foreground) =="
./build/nnictl create --config examples/quickstart/config.yml --port "${PORT:-8080}" --foreground
