# k8s_lib.sh: shared setup of the Kubernetes-family e2e tests (tests/e2e/7x-*.sh), sourced
# after lib.sh. Starts tests/servers/k8s_server.py over TLS with certificates made by the
# openssl CLI, writes kubeconfigs, and offers the server's test hooks.

K8S_SERVER="$TRIALQ_SRC/tests/servers/k8s_server.py"
# on any exit: experiments stopped while the server still answers, then the server (and
# its pods) stopped, then lib.sh's checks
trap 'k8s_rc=$?; nnictl stop --all > /dev/null 2>&1; k8s_stop; (exit $k8s_rc); cleanup' EXIT
K8S_DIR="$WORK/k8s"
K8S_NFS="$WORK/nfs"          # the "NFS export", mounted on this host (localMountPoint)
mkdir -p "$K8S_DIR" "$K8S_NFS"
K8S_TOKEN="tok-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
# pods find the nni SDK as in an image that has it
export PYTHONPATH="$TRIALQ_SRC/sdk/python${PYTHONPATH:+:$PYTHONPATH}"
# short polls and timeouts keep the tests quick
export TRIALQ_KUBE_POLL_MS=300 TRIALQ_KUBE_TIMEOUT_MS=2000

# k8s_certs: a CA, a server certificate for 127.0.0.1 and a client certificate
k8s_certs() {
    local d=$K8S_DIR
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=trialq-test-ca" \
        -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=127.0.0.1" \
        -keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$d/san.ext"
    openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
        -extfile "$d/san.ext" -out "$d/server.crt" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=trialq-user/O=system:masters" \
        -keyout "$d/client.key" -out "$d/client.csr" 2>/dev/null
    openssl x509 -req -in "$d/client.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
        -out "$d/client.crt" 2>/dev/null
    [ -s "$d/client.crt" ] && [ -s "$d/server.crt" ] || fail "openssl could not make the test certificates"
}

# k8s_start [server args...]: starts the server (TLS, token + client certificates)
K8S_PID=""
k8s_start() {
    [ "$(id -u)" = 0 ] || fail "the Kubernetes test server's pods need root (unshare -m, mount --bind)"
    [ -s "$K8S_DIR/ca.crt" ] || k8s_certs
    K8S_PORT=$(free_port)
    (exec /usr/bin/python3 "$K8S_SERVER" --port "$K8S_PORT" --state-dir "$K8S_DIR/state" \
        --tls-cert "$K8S_DIR/server.crt" --tls-key "$K8S_DIR/server.key" --client-ca "$K8S_DIR/ca.crt" \
        --token "$K8S_TOKEN" --forbidden-token "forbidden-$K8S_TOKEN" --nfs "nfs.test:/exports/nni=$K8S_NFS" --azure "nnishare=$K8S_NFS" \
        "$@" > "$WORK/k8s-server.out" 2>&1) &
    K8S_PID=$!
    for _ in $(seq 100); do
        if grep -q "k8s test server on" "$WORK/k8s-server.out" 2>/dev/null; then
            # K8S_AUTH=token|cert|cert-data: $WORK/kubeconfig for the test's KUBECONFIG
            [ -z "${K8S_AUTH:-}" ] || k8s_kubeconfig "$WORK/kubeconfig" "$K8S_AUTH"
            return 0
        fi
        kill -0 "$K8S_PID" 2>/dev/null || break
        sleep 0.1
    done
    cat "$WORK/k8s-server.out" >&2
    fail "the Kubernetes test server did not start"
}
k8s_stop() {
    [ -n "$K8S_PID" ] || return 0
    jobserver_stop "$K8S_PID"
    K8S_PID=""
}

# k8s_kubeconfig FILE token|cert|cert-data|badtoken|forbidden [namespace]
k8s_kubeconfig() {
    local f=$1 mode=$2 ns=${3:-} user
    case $mode in
    token) user="    token: $K8S_TOKEN" ;;
    badtoken) user="    token: wrong-$K8S_TOKEN" ;;
    forbidden) user="    token: forbidden-$K8S_TOKEN" ;;
    cert) user="    client-certificate: $K8S_DIR/client.crt
    client-key: $K8S_DIR/client.key" ;;
    cert-data) user="    client-certificate-data: $(base64 -w0 "$K8S_DIR/client.crt")
    client-key-data: $(base64 -w0 "$K8S_DIR/client.key")" ;;
    esac
    cat > "$f" <<EOF
apiVersion: v1
kind: Config
current-context: test
clusters:
- name: test-cluster
  cluster:
    server: https://127.0.0.1:$K8S_PORT
    certificate-authority-data: $(base64 -w0 "$K8S_DIR/ca.crt")
contexts:
- name: test
  context:
    cluster: test-cluster
    user: test-user
${ns:+    namespace: $ns}
users:
- name: test-user
  user:
$user
EOF
}

k8s_hook() { # k8s_hook GET|POST path [json]
    curl -sk --max-time 10 -X "$1" ${3:+-H 'Content-Type: application/json' -d "$3"} \
        "https://127.0.0.1:$K8S_PORT/_test/$2"
}
# k8s_fail '<json>': failure injection, {"mode": "5xx"|"slow"|"drop"|"hang", "count": N |
# "seconds": S, "delay": D}; fault_phase k8s (e2e/lib.sh) waits until it was served
k8s_fail() { k8s_hook POST fail "$1" > /dev/null; }
k8s_stats() { k8s_hook GET stats; }
k8s_stat() { k8s_hook GET stats | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }

# the trial: NNISDK_MEb lines on stdout (the stdout channel of every cluster platform)
k8s_trial() {
    mkdir -p "$1"
    cat > "$1/trial.sh" <<'EOF'
#!/bin/sh
# reads parameter.cfg, prints STEPS intermediate results and a final one as NNI's SDK
# does on cluster platforms, and notes what it printed in its output dir
cfg="$NNI_SYS_DIR/parameter.cfg"
pid=$(sed -n 's/.*"parameter_id": *\([0-9]*\).*/\1/p' "$cfg")
x=$(sed -n 's/.*"x": *\([-0-9.e+]*\).*/\1/p' "$cfg")
emit() {
    printf "NNISDK_MEb'{\"parameter_id\":%s,\"trial_job_id\":\"%s\",\"type\":\"%s\",\"sequence\":%s,\"value\":\"%s\"}'\n" \
        "$pid" "$NNI_TRIAL_JOB_ID" "$1" "$2" "$3"
    echo "$1 $2 $3" >> "$NNI_OUTPUT_DIR/written.log"
}
i=0
while [ "$i" -lt "${STEPS:-2}" ]; do
    emit PERIODICAL "$i" "$x.$i"
    sleep "${TRIAL_SLEEP:-0.2}"
    i=$((i + 1))
done
# while <share>/hold exists the trial waits (its NNI_SYS_DIR is <share>/nni/<exp>/<trial>)
while [ -f "$NNI_SYS_DIR/../../../hold" ]; do sleep 0.1; done
# while <share>/fail exists the trial fails with exit code 3
[ -f "$NNI_SYS_DIR/../../../fail" ] && exit 3
# the trial of sequence HOLD_SEQ runs until it is killed
[ "$NNI_TRIAL_SEQ_ID" = "${HOLD_SEQ:-none}" ] && exec sleep 300
emit FINAL 0 "$x"
EOF
    echo "data" > "$1/keep.txt"
    mkdir -p "$1/ignored_dir"
    echo "big" > "$1/ignored_dir/blob.bin"
    echo "secret" > "$1/notes.tmp"
    printf 'ignored_dir/\n*.tmp\n' > "$1/.nniignore"
}

# k8s_assert_metrics EXP CHIEF_ROLE ('-' for adl): each trial's metric rows are what its stdout said (no loss, no duplicate)
k8s_assert_metrics() {
    local id=$1 d tid want got n=0
    for d in "$K8S_NFS/nni/$id"/*/; do
        tid=$(basename "$d")
        case $tid in nni-code|*.attempt*) continue ;; esac
        local out="$d/output/${2}_output"
        [ "$2" = - ] && out="$d/output"   # adl: one output dir
        [ -f "$out/written.log" ] || continue
        want=$(sort "$out/written.log")
        got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$tid'" | sort)
        [ "$want" = "$got" ] || { echo "want: $want"; echo "got: $got"; fail "metrics of $tid differ"; }
        n=$((n + 1))
    done
    echo "$n"
}

# k8s_experiment_config DIR TRIALS CONCURRENCY "<trainingService YAML, indented 2>"
k8s_experiment_config() {
    k8s_trial "$1"
    write_config "$1/config.yml" trialCommand= trialConcurrency="$3" maxTrialNumber="$2" \
        tuner='{name: Random, classArgs: {seed: 7}}' trainingService=$'\n'"$4"
}

k8s_api_pid() { sql "SELECT api_pid FROM experiment WHERE id='$1'"; }
k8s_worker_pid() { pgrep -f "trialq worker --platform $2 --experiment $1" | head -n1 || true; }

# k8s_scenario PLATFORM CHIEF_ROLE "<trainingService YAML>": the cases every
# Kubernetes-family platform must pass, on one experiment of 12 trials:
#   runs to DONE with every metric; a running trial is killed (its job deleted);
#   the API server answers 5xx, drops connections and answers slowly for a while
#   (retries with back-off, nothing lost); the api and worker are SIGKILLed and the
#   experiment resumed (jobs re-attached: each job name created exactly once);
#   nnictl stop deletes every job labelled with the experiment, also one the database
#   never knew; a rejected token is a clear error at create and nothing is submitted.
# k8s_stray EXP NAME TRIAL: a job labelled with the experiment that no trial of it holds
k8s_stray() {
    printf '{"apiVersion":"%s","kind":"%s","metadata":{"name":"%s-%s","labels":{"app":"nni-kubernetes-trial","expId":"%s","trialId":"%s"}},"spec":{}}' \
        "$K8S_API" "$K8S_KIND" "$2" "$1" "$1" "$3" > "$WORK/stray.json"
    curl -sk --max-time 10 -H "Authorization: Bearer $K8S_TOKEN" -H 'Content-Type: application/json' \
        -d @"$WORK/stray.json" "https://127.0.0.1:$K8S_PORT/apis/$K8S_API/namespaces/default/$K8S_PLURAL" > /dev/null
}
k8s_scenario() {
    local platform=$1 chief=$2 ts=$3 port id hold n i
    export HOLD_SEQ=4 STEPS=3 TRIAL_SLEEP=0.3
    # the listing of the experiment's jobs comes in pages: of 2, and 2 jobs no trial
    # holds (added below) are in it besides the running ones (the ended ones are not)
    export TRIALQ_KUBE_LIST_LIMIT=2
    k8s_start
    k8s_experiment_config "$WORK/exp" 12 3 "$ts"
    port=$(free_port)
    nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
        { cat "$WORK/create.out"; fail "nnictl create failed"; }
    id=$(exp_id_of "$WORK/create.out")
    [ -n "$id" ] || fail "no experiment id"
    k8s_stray "$id" spare-a lost-a
    k8s_stray "$id" spare-b lost-b

    # the API server fails for a while: 5xx, dropped connections, slow answers (the
    # trial of sequence HOLD_SEQ runs until killed, so the experiment is alive meanwhile)
    wait_sql "SELECT count(*) > 0 FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 1 60
    # (each phase waits until the server says its fault met that many requests; one
    # listing polls every job with one back-off: a fault each keeps the back-off short)
    fault_phase k8s '{"mode": "5xx", "count": 1}' 1
    fault_phase k8s '{"mode": "drop", "count": 1}' 1
    fault_phase k8s '{"mode": "slow", "count": 1, "delay": 0.7}' 1
    fault_phase k8s '{"mode": "hang", "count": 1, "delay": 2.5}' 1   # longer than the client's timeout (TRIALQ_KUBE_TIMEOUT_MS, 2 s)
    if [ -n "${K8S_LIST_CHECKS:-}" ]; then
        fault_phase k8s '{"mode": "429", "count": 1, "delay": 1}' 1   # Too Many Requests, Retry-After: 1
    fi
    pass "$platform: API server failures injected: 5xx, dropped connections, slow and timed-out answers ($(k8s_stat "['failed']") requests failed)"

    # SIGKILL the api and the worker while trials run, then resume
    wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND sequence=$HOLD_SEQ AND status='RUNNING'" 1 60
    hold=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND sequence=$HOLD_SEQ")
    n=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'")
    kill -9 "$(k8s_worker_pid "$id" "$platform")" "$(k8s_api_pid "$id")" 2>/dev/null || true
    sleep 1.5   # the running jobs go on (and some end) while nothing watches
    nnictl resume "$id" --port "$port" > "$WORK/resume.out" 2>&1 || { cat "$WORK/resume.out"; fail "resume failed"; }
    pass "$platform: api and worker SIGKILLed with $n trial(s) running; resumed"

    if [ -n "${K8S_LIST_CHECKS:-}" ]; then
        # continue tokens expire (410 Gone) while the listing pages: listed again, and
        # when that fails too, one back-off for all trials; nothing is lost (the trial of
        # HOLD_SEQ runs meanwhile; the kill below needs the listing back)
        expired() { [ "$(k8s_stat "['expired']")" -gt 0 ]; }
        k8s_hook POST continue '{"ttl": 0}' > /dev/null
        wait_until 10 expired || fail "no listing met an expired continue token"
        k8s_hook POST continue '{"ttl": 300}' > /dev/null
        pass "$platform: expired continue tokens (410 Gone) answered $(k8s_stat "['expired']") time(s)"
    fi

    # kill of a running trial (one the new worker adopted): its job is deleted
    # (its output dir: output/ on ADL, output/<role>_output/ where the scripts are on the share)
    hold_wrote() {
        local f
        for f in "$K8S_NFS/nni/$id/$hold/output/written.log" "$K8S_NFS/nni/$id/$hold/output/"*_output/written.log; do
            [ -s "$f" ] && return 0
        done
        return 1
    }
    wait_until 10 hold_wrote || fail "$platform: trial $hold wrote no metrics to kill it while it runs"
    nnictl trial kill "$id" --trial_id "$hold" > /dev/null
    wait_sql "SELECT status FROM trial WHERE id='$hold'" USER_CANCELED 30
    job_listed() { k8s_hook GET objects | grep -qi -e "trial-$hold" -e "trial$hold\""; }
    wait_until 10 not job_listed || fail "the killed trial's job is still there"
    pass "$platform: a running trial was killed (USER_CANCELED, its job deleted)"

    wait_status "$id" DONE 180
    local total ok canceled
    total=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")
    ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")
    canceled=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='USER_CANCELED'")
    [ "$total" = 12 ] && [ "$ok" = 11 ] && [ "$canceled" = 1 ] || {
        sql "SELECT id, sequence, status, attempt, message FROM trial WHERE experiment_id='$id'"
        fail "$total trials, $ok SUCCEEDED, $canceled USER_CANCELED (want 12, 11, 1)"; }
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND attempt != 1")" = 0 ] ||
        fail "a trial was started again although its job lived"
    # re-attached, never duplicated: every job name was created exactly once
    k8s_hook GET stats > "$WORK/stats.json"
    /usr/bin/python3 - "$WORK/stats.json" <<'PY' || fail "job creations: see above"
import json, sys
s = json.load(open(sys.argv[1]))
c = {k: v for k, v in s['creates'].items() if not k.startswith('spare-')}  # k8s_stray's
bad = {k: v for k, v in c.items() if v != 1}
if len(c) != 12 or bad:
    print('creates per job name:', c, file=sys.stderr)
    sys.exit(1)
PY
    pass "$platform: 12 jobs, each created exactly once ($(k8s_stat "['create_calls']") create calls)"
    # status came from paged listings of the experiment's jobs, not from a GET per job
    # per second: single GETs only confirm an absence (a kill, a create retried)
    /usr/bin/python3 - "$WORK/stats.json" <<'PY' || fail "status requests: see above"
import json, sys
s = json.load(open(sys.argv[1]))
one = sum(v for k, v in s['routes'].items() if k.startswith('GET ') and k.endswith('/{name}') and '/namespaces/' in k
          and '/secrets/' not in k and '/configmaps/' not in k and '/persistentvolumeclaims/' not in k)
print('%d listings (%d continued pages), %d single GETs' % (s['lists'], s['continues'], one), file=sys.stderr)
if s['lists'] < 5 or s['continues'] < 1 or one > s['lists'] // 2:
    sys.exit('want >= 5 listings, paged, and single GETs at most half as many as listings')
PY
    # the listing leaves out the jobs whose end was recorded (labelled trialq-ended), so
    # it does not grow with the experiment's history: the last one held the running
    # jobs (3 at most) and any the worker could not label (an injected failure)
    k8s_hook GET objects > "$WORK/objects.json"
    /usr/bin/python3 - "$WORK/stats.json" "$WORK/objects.json" "$id" "$K8S_PLURAL" <<'PY' || fail "ended jobs in the listing: see above"
import json, sys
s = json.load(open(sys.argv[1]))
jobs = [o['obj'] for o in json.load(open(sys.argv[2]))['items']
        if (o['obj']['metadata'].get('labels') or {}).get('expId') == sys.argv[3] and o['key'][1] == sys.argv[4]]
trials = [j for j in jobs if not j['metadata']['labels']['trialId'].startswith('lost')]
ended = [j for j in jobs if j['metadata']['labels'].get('trialq-ended') == 'true']
last = s['list_items'][-1]
print('%d of %d ended jobs labelled; the last listing matched %d jobs' % (len(ended), len(trials), last), file=sys.stderr)
if len(ended) < len(trials) - 2 or last > 3 + len(jobs) - len(ended):
    sys.exit('want every ended job but 2 at most labelled, and the last listing to leave them out')
PY
    pass "$platform: ended jobs labelled and left out of the listing (last listing: $(k8s_stat "['list_items'][-1]") jobs)"
    n=$(k8s_assert_metrics "$id" "$chief")
    [ "$n" -ge 11 ] || fail "only $n trials had their metrics checked"
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND final_metric IS NULL")" = 0 ] ||
        fail "a SUCCEEDED trial has no final metric"
    pass "$platform: every metric arrived once (checked $n trials)"

    # the custom resource as the spec describes it (the test's k8s_check_job, in Python)
    if [ -n "${K8S_CHECK_JOB:-}" ]; then
        curl -sk --max-time 10 -H "Authorization: Bearer $K8S_TOKEN" \
            "https://127.0.0.1:$K8S_PORT/apis/$K8S_API/namespaces/default/$K8S_PLURAL?labelSelector=expId%3D$id" > "$WORK/jobs.json"
        /usr/bin/python3 -c "
import json, sys
jobs = [j for j in json.load(open(sys.argv[1]))['items'] if not j['metadata']['labels']['trialId'].startswith('lost')]
assert len(jobs) == 11, len(jobs)   # the killed trial's job is gone
job = jobs[0]
md = job['metadata']
assert md['labels']['app'] == 'nni-kubernetes-trial' and md['labels']['expId'] == sys.argv[2], md
assert md['name'] == sys.argv[3] % (sys.argv[2], md['labels']['trialId'].lower()), md['name']
$K8S_CHECK_JOB
" "$WORK/jobs.json" "$id" "$K8S_NAME" || fail "the $K8S_KIND does not look as the spec says"
        pass "$platform: the $K8S_KIND has the spec's shape"
    fi

    # the trial's logs through its log path: the web UI's trial-file route
    local some
    some=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' LIMIT 1")
    curl -s --max-time 10 "http://127.0.0.1:$port/api/v1/nni/trial-file/$some/stdout" > "$WORK/trial-stdout.txt"
    grep -q "NNISDK_MEb'.*\"trial_job_id\":\"$some\".*FINAL" "$WORK/trial-stdout.txt" ||
        { head -c 400 "$WORK/trial-stdout.txt"; fail "trial-file/$some/stdout does not show the trial's output"; }
    pass "$platform: the trial's stdout is served from the shared storage (trial-file/$some/stdout)"

    # the Secrets of privateRegistryAuthPath / azureStorage, labelled with the experiment
    k8s_secrets() {
        curl -sk --max-time 10 -H "Authorization: Bearer $K8S_TOKEN" \
            "https://127.0.0.1:$K8S_PORT/api/v1/namespaces/default/secrets?labelSelector=expId%3D$id" |
            /usr/bin/python3 -c 'import json,sys; print(" ".join(sorted(i["metadata"]["name"] + ":" + i["type"] for i in json.load(sys.stdin)["items"])))'
    }
    want_secrets=${K8S_WANT_SECRETS:-}; want_secrets=${want_secrets//@ID@/$id}
    [ "$(k8s_secrets)" = "$want_secrets" ] || fail "Secrets of the experiment: '$(k8s_secrets)', want '$want_secrets'"

    # stop deletes every job of the experiment by label, also one the database lost
    k8s_stray "$id" stray lost1
    nnictl stop "$id" > "$WORK/stop.out" 2>&1 || { cat "$WORK/stop.out"; fail "stop failed"; }
    left=$(curl -sk --max-time 10 -H "Authorization: Bearer $K8S_TOKEN" \
        "https://127.0.0.1:$K8S_PORT/apis/$K8S_API/namespaces/default/$K8S_PLURAL?labelSelector=expId%3D$id" |
        /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
    [ "$left" = 0 ] || fail "$left jobs of the experiment left after stop"
    [ -z "$(k8s_secrets)" ] || fail "Secrets left after stop: $(k8s_secrets)"
    port_is_free "$port" || fail "port $port busy after stop"
    pass "$platform: stop deleted every job and Secret labelled with the experiment (Secrets: ${want_secrets:-none})"

    # a rejected token: a clear error at create, nothing stored, nothing submitted
    local before after
    before=$(k8s_stat "['create_calls']")
    k8s_kubeconfig "$WORK/bad.kubeconfig" badtoken
    if KUBECONFIG="$WORK/bad.kubeconfig" nnictl create --config "$WORK/exp/config.yml" --port "$(free_port)" \
        > "$WORK/bad.out" 2>&1; then fail "create succeeded with a wrong token"; fi
    grep -q "401 Unauthorized" "$WORK/bad.out" && grep -q "renew the token" "$WORK/bad.out" ||
        { cat "$WORK/bad.out"; fail "no clear message for a rejected token"; }
    after=$(k8s_stat "['create_calls']")
    [ "$before" = "$after" ] || fail "jobs were submitted with a rejected token"
    [ "$(sql "SELECT count(*) FROM experiment")" = 1 ] || fail "an experiment was stored although its token was rejected"
    pass "$platform: a rejected token: $(grep -o '401 Unauthorized[^;]*' "$WORK/bad.out" | head -n1)"
    k8s_stop
    assert_no_leftovers
}
