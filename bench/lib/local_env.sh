# bench/lib/local_env.sh: what a bench that runs its experiments in a home of its own
# sets first: strict mode, SRC (the repository), BUILD (the bench's first argument,
# default build), NNICTL ($BUILD/nnictl, else $BUILD/trialq), WORK (a new directory
# under BENCH_TMP, default /tmp) with NNI_HOME=$WORK/home and $WORK/code; at exit every
# experiment of that home is stopped and WORK removed (kept, and said, when KEEP is set).
# Source as: . "$(dirname "$0")/lib/local_env.sh" "$@"
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
NNICTL=$BUILD/nnictl
[ -x "$NNICTL" ] || NNICTL=$BUILD/trialq
WORK=$(mktemp -d "${BENCH_TMP:-/tmp}/trialq-bench-XXXXXX")
export NNI_HOME=$WORK/home
mkdir -p "$WORK/code"
trap '"$NNICTL" stop --all > /dev/null 2>&1 || true; if [ -n "${KEEP:-}" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi' EXIT

# free_port: a TCP port free on 127.0.0.1 now
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# local_config FILE COMMAND CONCURRENCY MAX_TRIALS SEED X [LINE...]: a config of the
# local platform and the Random tuner (classArgs seed SEED) with one parameter x (X: its
# search space entry, e.g. '{_type: uniform, _value: [0, 1]}'); each LINE is added.
local_config() {
    local file=$1 command=$2 concurrency=$3 max=$4 seed=$5 x=$6
    shift 6
    {
        printf 'searchSpace:\n  x: %s\ntrialCommand: %s\ntrialCodeDirectory: .\n' "$x" "$command"
        printf 'trialConcurrency: %s\nmaxTrialNumber: %s\n' "$concurrency" "$max"
        [ $# -eq 0 ] || printf '%s\n' "$@"
        printf 'tuner: {name: Random, classArgs: {seed: %s}}\ntrainingService: {platform: local}\n' "$seed"
    } > "$file"
}

# exp_create FILE PORT: nnictl create; prints the new experiment's id
exp_create() { "$NNICTL" create --config "$1" --port "$2" | sed -n 's/.*Experiment ID: \([a-z0-9]*\).*/\1/p'; }
