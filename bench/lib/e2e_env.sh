# bench/lib/e2e_env.sh: what a bench on the e2e helpers (tests/e2e/lib.sh) sets first:
# strict mode, SRC (the repository), BUILD (the bench's first argument, default build),
# TRIALQ_BIN and TRIALQ_SRC for lib.sh. Source as: . "$(dirname "$0")/lib/e2e_env.sh" "$@"
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
export TRIALQ_BIN=$BUILD/trialq TRIALQ_SRC=$SRC
