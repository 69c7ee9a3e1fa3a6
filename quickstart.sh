#!/usr/bin/env bash
# One command for a newcomer, as root or as a user with sudo: install the dependencies,
# build, install nnictl, and run the bundled example experiment (examples/quickstart)
# to the end in the foreground. One line per step; everything else goes to the log.
#   PORT    the example's web UI and REST port (default 8080)
#   PREFIX  where nnictl is installed (default /usr/local as root, ~/.local otherwise)
set -euo pipefail
cd "$(dirname "$0")"
PORT=${PORT:-8080}
if [ "$(id -u)" -eq 0 ]; then
    PREFIX=${PREFIX:-/usr/local}
else
    PREFIX=${PREFIX:-$HOME/.local}
fi
mkdir -p build
STEP_LOG=$PWD/build/quickstart.log
: >"$STEP_LOG"
. scripts/steps.sh
echo "trialq quickstart; full log: $STEP_LOG"

step "[1/5] dependencies (apt)" ./scripts/install-deps.sh --build
step "[2/5] configure (build/)" cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRIALQ_TESTS=OFF
step_build "[3/5] build" build
step "[4/5] install nnictl in $PREFIX/bin" cmake --install build --prefix "$PREFIX" --component runtime

echo "[5/5] example: nnictl create --config examples/quickstart/config.yml --port $PORT --foreground"
if ! "$PREFIX/bin/nnictl" create --config examples/quickstart/config.yml --port "$PORT" --foreground 2>&1 |
    tee -ia "$STEP_LOG"; then
    echo "the example failed (above); if port $PORT is taken: PORT=8081 ./quickstart.sh"
    exit 1
fi
echo
echo "Done. Experiments are kept in ${NNI_HOME:-~/nni-experiments} (nnictl experiment list)."
case ":$PATH:" in
*":$PREFIX/bin:"*) ;;
*)
    echo "nnictl is in $PREFIX/bin, which is not on your PATH; add it with:"
    echo "    export PATH=\"$PREFIX/bin:\$PATH\""
    ;;
esac
