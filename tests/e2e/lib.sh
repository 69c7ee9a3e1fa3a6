# lib.sh: shared setup for the end-to-end tests. Each test runs the real binary
# against its own home (database + experiment dirs) in a temporary directory.
set -euo pipefail

: "${TRIALQ_BIN:?set TRIALQ_BIN to the trialq binary (ctest does)}"
: "${TRIALQ_SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
TEST_NAME=$(basename "$0" .sh)
WORK=$(mktemp -d "/tmp/trialq-e2e-$TEST_NAME-XXXXXX")
export NNI_HOME="$WORK/home"
BIN_DIR="$WORK/bin"
mkdir -p "$BIN_DIR" "$NNI_HOME"
ln -s "$TRIALQ_BIN" "$BIN_DIR/nnictl"
ln -s "$TRIALQ_BIN" "$BIN_DIR/trialq"
export PATH="$BIN_DIR:$PATH"
DB="$NNI_HOME/trialq.db"
PY=/usr/bin/python3

cleanup() {
    local rc=$?
    nnictl stop --all >/dev/null 2>&1 || true
    if [ "$rc" -ne 0 ]; then
        echo "--- $TEST_NAME failed (rc=$rc); logs:" >&2
        for f in "$NNI_HOME"/*/log/*.log; do
            [ -f "$f" ] && { echo "== $f" >&2; tail -n 40 "$f" >&2; }
        done
    fi
    if [ -z "${KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi
    exit "$rc"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

free_port() {
    $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

sql() { sqlite3 -batch -noheader "$DB" "$@"; }

# exp_id_of <nnictl create output file>
exp_id_of() { sed -n 's/.*Experiment ID: \([a-z0-9]*\).*/\1/p' "$1" | head -n1; }

# wait_status <id> <regex> <seconds>
wait_status() {
    local id=$1 want=$2 secs=$3 st=""
    for _ in $(seq 1 $((secs * 10))); do
        st=$(sql "SELECT status FROM experiment WHERE id='$id'")
        if [[ "$st" =~ ^($want)$ ]]; then return 0; fi
        sleep 0.1
    done
    fail "experiment $id is $st after ${secs}s, wanted $want"
}

# no process of ours may survive: api, worker, supervisor or trial of this home
assert_no_leftovers() {
    local left
    left=$(pgrep -f "$WORK" || true)
    [ -z "$left" ] || { ps -o pid,ppid,pgid,stat,args -p $(echo $left | tr ' ' ,) >&2; fail "processes left behind"; }
}

port_is_free() {
    $PY -c "import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',$1))" 2>/dev/null
}
