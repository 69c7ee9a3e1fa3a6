# aml.sh: the Azure ML test server (tests/servers/aml_server.py) for tests 89b-89e. Source
# after lib.sh. The server is both the token endpoint (authorityHost) and the management
# endpoint; it runs each command job's command as a local process with the datastore
# workspaceblobstore at $AML_BLOB (this host's "mount" of it: localStorageMountPoint).
# Its jobs list has pages of 3 jobs, so that the worker's listing pages (nextLink).

AML_TENANT=tenant-$RANDOM$RANDOM
AML_CLIENT=client-$RANDOM$RANDOM
AML_SECRET=aml-s3cr3t-$RANDOM$RANDOM$RANDOM
AML_SUB=sub-$RANDOM$RANDOM
AML_RG=rg-nni
AML_WS=ws-nni
AML_COMPUTE=cpu-cluster
AML_BLOB=$WORK/aml-blob
# the worker's HTTP timeout (s): short, so that injected slow answers time out quickly
export TRIALQ_AML_TIMEOUT=${TRIALQ_AML_TIMEOUT:-2}
# the service principal of the server, as Azure's EnvironmentCredential reads it
export AZURE_TENANT_ID=$AML_TENANT AZURE_CLIENT_ID=$AML_CLIENT AZURE_CLIENT_SECRET=$AML_SECRET
unset AZURE_CLIENT_CERTIFICATE_PATH

aml_start_server() {
    mkdir -p "$AML_BLOB" "$WORK/aml-logs"
    jobserver_start aml "Azure ML" "$PY" "$TRIALQ_SRC/tests/servers/aml_server.py" --tenant "$AML_TENANT" \
        --client "$AML_CLIENT:$AML_SECRET" --client "norole:norole-pw" --no-role norole --subscription "$AML_SUB:$AML_TENANT" \
        --workspace "$AML_SUB/$AML_RG/$AML_WS" --compute "$AML_COMPUTE" \
        --datastore "workspaceblobstore:$AML_BLOB" --workdir "$WORK" --log-dir "$WORK/aml-logs" \
        --stop-grace 2 --page-size 3 --port-file "$WORK/aml.port" "$@"
    AML_PID=$JOBSERVER_PID
    AML_URL=${AML_SCHEME:-http}://127.0.0.1:$JOBSERVER_PORT
}

aml_stop_server() {
    jobserver_stop "${AML_PID:-}"
    AML_PID=
}

# experiments first (their jobs are cancelled through the server), then the server
trap 'rc=$?; nnictl stop --all >/dev/null 2>&1; aml_stop_server; (exit $rc) || cleanup; cleanup' EXIT

# (AML_SCHEME=https and AML_CURL_OPTS="--cacert CA" for a server started with --tls-cert)
aml_stats() { curl -sf ${AML_CURL_OPTS:-} "$AML_URL/_test/stats"; }
# aml_stat <python expression on the stats s>: e.g. 's["created"]', 's["refused"]'
aml_stat() { aml_stats | "$PY" -c "import json,sys; s = json.load(sys.stdin); print($1)"; }
# aml_fail '<json>': failure injection, e.g. '{"mode": "status", "status": 503, "count": 5}'
aml_fail() { curl -sf ${AML_CURL_OPTS:-} -X POST -d "$1" "$AML_URL/_test/fail" > /dev/null; }

# aml_ts [key: value ...]: the trainingService block (indented 2), extra lines appended
aml_ts() {
    printf '  platform: aml\n  subscriptionId: %s\n  resourceGroup: %s\n  workspaceName: %s\n  computeTarget: %s\n  dockerImage: example/nni:test\n  managementEndpoint: %s\n  authorityHost: %s\n  localStorageMountPoint: %s\n' \
        "$AML_SUB" "$AML_RG" "$AML_WS" "$AML_COMPUTE" "$AML_URL" "$AML_URL" "$AML_BLOB"
    local l
    for l in "$@"; do printf '  %s\n' "$l"; done
}

# aml_experiment <dir> <concurrency> <max trials> <seed> [ts lines]: a metrics.sh experiment on aml
aml_experiment() {
    local dir=$1 conc=$2 max=$3 seed=$4
    shift 4
    metrics_experiment "$dir" "$conc" "$max" "$seed" "$(aml_ts "$@")"
}

# aml_create <dir> <port>: nnictl create of <dir>/config.yml; sets AML_ID, the experiment
aml_create() {
    nnictl create --config "$1/config.yml" --port "$2" > "$1.create.out" 2>&1 ||
        { cat "$1.create.out"; fail "create of $1 failed"; }
    AML_ID=$(exp_id_of "$1.create.out")
    [ -n "$AML_ID" ] || { cat "$1.create.out"; fail "no experiment id"; }
}

# aml_assert_no_secret <file>...: the client secret is in none of them
aml_assert_no_secret() {
    local f
    for f in "$@"; do
        ! grep -a -q -F "$AML_SECRET" "$f" || fail "the client secret appears in $f"
    done
}
