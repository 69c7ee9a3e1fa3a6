# dlts.sh: the DLTS test server (tests/servers/dlts_server.py) for tests 86, 86b and 86c. Source
# after lib.sh. The server runs each job's cmd as a local process with the shared
# filesystem ($DLTS_LOCAL on this host) where the jobs expect it ($DLTS_CONT).

DLTS_MASTER=master-$RANDOM$RANDOM
DLTS_EMAIL=alice@example.com
DLTS_TEAM=nni
DLTS_PASSWORD=$(printf '%s' "$DLTS_EMAIL:$DLTS_MASTER" | md5sum | cut -d' ' -f1)
DLTS_LOCAL=$WORK/dlts-share
DLTS_CONT=$WORK/dlts-container
# the worker's HTTP timeout (s): short, so that injected slow answers time out quickly
export TRIALQ_DLTS_TIMEOUT=${TRIALQ_DLTS_TIMEOUT:-2}

dlts_start_server() {
    mkdir -p "$DLTS_LOCAL" "$DLTS_CONT"
    jobserver_start dlts "DLTS" "$PY" "$TRIALQ_SRC/tests/servers/dlts_server.py" --master-token "$DLTS_MASTER" \
        --user "$DLTS_EMAIL:$DLTS_TEAM" --cluster c1:P100:8 --cluster c2:V100:2 \
        --mount "$DLTS_CONT:$DLTS_LOCAL" --workdir "$WORK" --kill-grace 2 \
        --port-file "$WORK/dlts.port" "$@"
    DLTS_PID=$JOBSERVER_PID
    DLTS_URL=http://127.0.0.1:$JOBSERVER_PORT
}

dlts_stop_server() {
    jobserver_stop "${DLTS_PID:-}"
    DLTS_PID=
}

# experiments first (their jobs are killed through the server), then the server
# ((exit $rc) || cleanup: cleanup reads the test's status from $?, and set -e must not end
# the trap before it)
trap 'rc=$?; nnictl stop --all >/dev/null 2>&1; dlts_stop_server; (exit $rc) || cleanup; cleanup' EXIT

dlts_stats() { curl -sf "$DLTS_URL/_test/stats"; }
# dlts_stat <python expression on the stats s>: e.g. 's["created"]', 's["actions"].get("submit", 0)'
dlts_stat() { dlts_stats | "$PY" -c "import json,sys; s = json.load(sys.stdin); print($1)"; }
# dlts_fail '<json>': failure injection, e.g. '{"mode": "status", "status": 503, "count": 5}'
dlts_fail() { curl -sf -X POST -d "$1" "$DLTS_URL/_test/fail" > /dev/null; }

# dlts_ts [key: value ...]: the trainingService block (indented 2), extra lines appended
dlts_ts() {
    printf '  platform: dlts\n  dashboard: %s/\n  cluster: c1\n  team: %s\n  email: %s\n  password: %s\n  image: example/nni:test\n  localStorageMountPoint: %s\n  containerStorageMountPoint: %s\n' \
        "$DLTS_URL" "$DLTS_TEAM" "$DLTS_EMAIL" "$DLTS_PASSWORD" "$DLTS_LOCAL" "$DLTS_CONT"
    local l
    for l in "$@"; do printf '  %s\n' "$l"; done
}

# dlts_experiment <dir> <concurrency> <max trials> <seed> [ts lines]: a metrics.sh experiment on dlts
dlts_experiment() {
    local dir=$1 conc=$2 max=$3 seed=$4
    shift 4
    metrics_experiment "$dir" "$conc" "$max" "$seed" "$(dlts_ts "$@")"
    sed -i 's/^trialConcurrency:/trialGpuNumber: 1\ntrialConcurrency:/' "$dir/config.yml"
}
