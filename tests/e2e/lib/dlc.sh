# dlc.sh: the PAI-DLC test server (tests/servers/dlc_server.py) for tests 87-*. Source
# after lib.sh. The server checks every request's signature V3 against the access key
# below and runs each job's UserCommand as local processes, the NAS data source
# ($DLC_NAS on this host) where the jobs see it ($DLC_CONT: bind-mounted as root, else
# the paths are rewritten in the command).

DLC_KEY_ID=LTAItest$RANDOM$RANDOM
DLC_SECRET=s3cr3t-$RANDOM$RANDOM$RANDOM-dlc
DLC_NAS=$WORK/dlc-nas
DLC_CONT=$WORK/dlc-container
DLC_WS=ws-$RANDOM
# the worker's HTTP timeout (s): short, so that injected slow answers time out quickly
export TRIALQ_DLC_TIMEOUT=${TRIALQ_DLC_TIMEOUT:-2}

dlc_start_server() {
    mkdir -p "$DLC_NAS" "$DLC_CONT" "$WORK/dlc-logs"
    jobserver_start dlc "DLC" "$PY" "$TRIALQ_SRC/tests/servers/dlc_server.py" --access-key "$DLC_KEY_ID:$DLC_SECRET" \
        --data-source "d-nas1:$DLC_CONT:$DLC_NAS" --workspace "$DLC_WS" --workdir "$WORK" \
        --log-dir "$WORK/dlc-logs" --port-file "$WORK/dlc.port" "$@"
    DLC_PID=$JOBSERVER_PID
    DLC_URL=${DLC_SCHEME:-http}://127.0.0.1:$JOBSERVER_PORT
}

dlc_stop_server() {
    jobserver_stop "${DLC_PID:-}"
    DLC_PID=
}

# experiments first (their jobs are stopped through the server), then the server
trap 'rc=$?; nnictl stop --all >/dev/null 2>&1; dlc_stop_server; (exit $rc); cleanup' EXIT

# (DLC_SCHEME=https and DLC_CURL_OPTS="--cacert CA" for a server started with --tls-cert)
dlc_stats() { curl -sf ${DLC_CURL_OPTS:-} "$DLC_URL/_test/stats"; }
# dlc_stat <expr>: a value of the server's counters, a Python expression on s (the stats)
dlc_stat() { dlc_stats | "$PY" -c "import json,sys; s=json.load(sys.stdin); print($1)"; }
# dlc_fail '<json>': fault injection, e.g. '{"mode": "status", "status": 503, "count": 3}'
dlc_fail() { curl -sf ${DLC_CURL_OPTS:-} -X POST -d "$1" "$DLC_URL/_test/fail" > /dev/null; }

# dlc_ts [extra lines]: the trainingService entry (indented 2) of the test server
dlc_ts() {
    printf '%s\n' "  platform: dlc
  type: Worker
  image: example/nni:test
  jobType: PyTorchJob
  podCount: 1
  ecsSpec: ecs.c6.large
  region: cn-test
  endpoint: $DLC_URL
  workspaceId: \"$DLC_WS\"
  nasDataSourceId: d-nas1
  accessKeyId: $DLC_KEY_ID
  accessKeySecret: $DLC_SECRET
  localStorageMountPoint: $DLC_NAS
  containerStorageMountPoint: $DLC_CONT${1:+
$1}"
}

# dlc_experiment <dir> <concurrency> <max trials> <seed> [extra ts lines]: a metrics.sh
# experiment on dlc
dlc_experiment() { metrics_experiment "$1" "$2" "$3" "$4" "$(dlc_ts "${5:-}")"; }

# dlc_assert_no_secret <file>...: the access key secret is in none of them
dlc_assert_no_secret() {
    local f
    for f in "$@"; do
        ! grep -a -q -F "$DLC_SECRET" "$f" || fail "the access key secret appears in $f"
    done
}

# dlc_create <dir> <port>: nnictl create of <dir>/config.yml; sets DLC_ID, the experiment
dlc_create() {
    nnictl create --config "$1/config.yml" --port "$2" > "$1.create.out" 2>&1 ||
        { cat "$1.create.out"; fail "create of $1 failed"; }
    DLC_ID=$(exp_id_of "$1.create.out")
    [ -n "$DLC_ID" ] || { cat "$1.create.out"; fail "no experiment id"; }
}
