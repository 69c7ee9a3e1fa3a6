# openpai.sh: the OpenPAI test server (tests/servers/pai_server.py) for tests 80-84.
# Source after lib.sh. The server runs each job's commands as local processes in a
# private mount namespace where the PAI storage ($PAI_LOCAL on this host) appears at
# $PAI_CONT, the path the "containers" see.

PAI_TOKEN=tok-$RANDOM$RANDOM
PAI_USER=alice
PAI_LOCAL=$WORK/pai-storage
PAI_CONT=$WORK/pai-container
# the worker's HTTP timeout (s): short, so that injected slow answers time out quickly
export TRIALQ_OPENPAI_TIMEOUT=${TRIALQ_OPENPAI_TIMEOUT:-2}

pai_start_server() {
    mkdir -p "$PAI_LOCAL" "$PAI_CONT"
    jobserver_start pai "OpenPAI" "$PY" "$TRIALQ_SRC/tests/servers/pai_server.py" --token "$PAI_TOKEN:$PAI_USER" \
        --local-mount "$PAI_LOCAL" --container-mount "$PAI_CONT" --workdir "$WORK" \
        --port-file "$WORK/pai.port" "$@"
    PAI_PID=$JOBSERVER_PID
    PAI_URL=http://127.0.0.1:$JOBSERVER_PORT
}

pai_stop_server() {
    jobserver_stop "${PAI_PID:-}"
    PAI_PID=
}

# experiments first (their trials are stopped through the server), then the server
trap 'rc=$?; nnictl stop --all >/dev/null 2>&1; pai_stop_server; (exit $rc); cleanup' EXIT

pai_stats() { curl -sf "$PAI_URL/_test/stats"; }
# pai_stat <key>: one counter of the server (posts, created, conflicts, stops, injected, ...)
pai_stat() { pai_stats | "$PY" -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
# pai_fail '<json>': failure injection, e.g. '{"status": 503, "seconds": 3}'
pai_fail() { curl -sf -X POST -d "$1" "$PAI_URL/_test/fail" > /dev/null; }

# pai_experiment <dir> <concurrency> <max trials> <seed>: a metrics.sh experiment on openpai
pai_experiment() {
    metrics_experiment "$1" "$2" "$3" "$4" "  platform: openpai
  host: $PAI_URL/
  username: $PAI_USER
  token: $PAI_TOKEN
  trialCpuNumber: 2
  trialMemorySize: 1.5gb
  trialGpuNumber: 0
  dockerImage: example/nni:test
  virtualCluster: vc1
  storageConfigName: confignfs
  localStorageMountPoint: $PAI_LOCAL
  containerStorageMountPoint: $PAI_CONT"
}

# pai_trial_dirs <exp>: the trial dirs on the storage (current attempts)
pai_trial_dirs() {
    local d
    for d in "$PAI_LOCAL/$1"/*/; do
        case $(basename "$d") in nni-code | nni-sdk | *.attempt* | *.tmp*) continue ;; esac
        echo "${d%/}"
    done
}

# pai_assert_metrics <exp>: assert_dir_metrics (lib.sh) of the experiment
pai_assert_metrics() { assert_dir_metrics "$@"; }
