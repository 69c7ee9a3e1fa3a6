#!/usr/bin/env bash
# trialCommandChannel: http on a cluster platform survives the api's crash (issue 23):
# kubeflow (TFJob) and frameworkcontroller (two task roles) against the Kubernetes API
# test server, the pods seeing the trial dirs on the "NFS" share. The trials are those of 35b: the even ones a stdlib client that
# speaks NNI's HTTP channel exactly as NNI 3's SDK does (a new connection per request, no
# retry: a refused connection fails the trial, trials/nni_http_client.py), the odd ones
# the bundled SDK (trials/sdk_steps.py); 12 trials at concurrency 4, each reporting 6
# intermediate results over ~4 s and a final one. While 4 run: kill -9 the api (its
# worker ends with it), resume 3 s later. Every trial SUCCEEDED in its first attempt,
# with exactly the metrics it was acknowledged, none doubled, and the trials went on
# reporting while no manager process ran: their channel is served in the pod by
# .nni/chanrelay.py (sdk/chanrelay/trialq_chanrelay.py). First that relay by hand: it
# answers as a local trial's leader does (35b), and runs its command with the exit code
# and signals passed through. AdaptDL trials get the same launch script
# (workers/kube/submit.c, kube_role_script).
. "$(dirname "$0")/lib.sh"
. "$TRIALQ_SRC/tests/servers/k8s_lib.sh"

RELAY=$TRIALQ_SRC/sdk/chanrelay/trialq_chanrelay.py

# ---- the relay by hand ----
hand=$WORK/hand
mkdir -p "$hand/.nni"
printf '{"parameter_id": 0, "parameter_source": "algorithm", "parameters": {"x": 5}, "parameter_index": 0}\n' \
    > "$hand/parameter.cfg"
(cd "$hand" && NNI_TRIAL_COMMAND_CHANNEL=http://127.0.0.1:9/env/0123abcd/TrIaL NNI_TRIAL_JOB_ID=TrIaL NNI_SYS_DIR=$hand \
    exec /usr/bin/python3 "$RELAY" -- sh -c 'echo "$NNI_TRIAL_COMMAND_CHANNEL" > seen; exec sleep 60') &
relay=$!
relay_up() { [ -s "$hand/seen" ] && [ -s "$hand/.nni/channel" ]; }
wait_until 10 relay_up || fail "the relay wrote no channel file, or its command did not start, within 10 s"
url=$(cat "$hand/.nni/channel")
[[ "$url" == "http://127.0.0.1:"*"/env/0123abcd/TrIaL" && "$url" != *":9/"* ]] || fail "relay channel URL $url"
[ "$(cat "$hand/seen")" = "$url" ] || fail "the command's NNI_TRIAL_COMMAND_CHANNEL is $(cat "$hand/seen"), not $url"
$PY "$TRIALQ_SRC/tests/e2e/lib/chan_probe.py" "$url" TrIaL "$hand" || fail "the relay answers otherwise than a trial's leader"
kill -TERM "$relay"
wait "$relay" && rc=0 || rc=$?
[ "$rc" = $((128 + 15)) ] || fail "the relay ended with $rc after SIGTERM to its sleep, not 143"
[ ! -e "$hand/.nni/channel" ] || fail "the relay left its channel file"
NNI_TRIAL_COMMAND_CHANNEL=http://127.0.0.1:9/env/x/T NNI_TRIAL_JOB_ID=T NNI_SYS_DIR=$hand \
    /usr/bin/python3 "$RELAY" -- sh -c 'exit 7' && rc=0 || rc=$?
[ "$rc" = 7 ] || fail "the relay exited $rc for a command that exited 7"
pass "the trial channel relay: parameter, 408, metric on disk before its 200, 403/400/415/404/405; exit codes and signals passed on"

# ---- cluster trials on the HTTP channel, the api killed while 4 run ----
acked_lines() { cat "$K8S_NFS/nni/$1"/*/acked.log 2>/dev/null | wc -l; }

# http_case PLATFORM CHIEF_ROLE SEED "<trainingService YAML, indented 2>"
http_case() {
    local platform=$1 chief=$2 exp=$WORK/$1 port id some api before after n dir tid want got
    http_experiment "$exp" "$3" 4 12 "$4"
    port=$(free_port)
    nnictl create --config "$exp/config.yml" --port "$port" > "$WORK/$platform.create" 2>&1 ||
        { cat "$WORK/$platform.create"; fail "$platform: nnictl create failed"; }
    id=$(exp_id_of "$WORK/$platform.create")
    [ -n "$id" ] || fail "$platform: no experiment id"
    http_wait_reporting "$id" "$platform" 60
    some=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING' LIMIT 1")
    [ -f "$K8S_NFS/nni/$id/$some/.nni/chanrelay.py" ] || fail "$platform: no relay beside trial $some"
    grep -q 'chanrelay.py' "$K8S_NFS/nni/$id/$some/run_$chief.sh" || fail "$platform: the launch script does not start the relay"
    api=$(k8s_api_pid "$id")
    kill -9 "$api"
    before=$(acked_lines "$id")
    sleep 3
    ! kill -0 "$api" 2>/dev/null || fail "$platform: the api still runs"
    [ -z "$(k8s_worker_pid "$id" "$platform")" ] || fail "$platform: the worker outlived the api"
    after=$(acked_lines "$id")
    [ "$after" -gt "$before" ] || fail "$platform: no metric acknowledged while the api was down ($before, $after)"
    nnictl resume "$id" --port "$port" > "$WORK/$platform.resume" 2>&1 ||
        { cat "$WORK/$platform.resume"; fail "$platform: resume failed"; }
    wait_status "$id" DONE 240
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND attempt=1")" = 12 ] || {
        sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id'"
        for f in "$K8S_NFS/nni/$id"/*/output/"$chief"_output/trial.stderr; do
            [ -s "$f" ] && { echo "== $f"; tail -n 5 "$f"; }
        done
        fail "$platform: not every trial SUCCEEDED in attempt 1"
    }
    n=0
    for dir in "$K8S_NFS/nni/$id"/*/; do
        tid=$(basename "$dir")
        [ -f "$dir/parameter.cfg" ] || continue
        want=$(sort "$dir/acked.log")
        got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$tid'" | sort)
        [ "$want" = "$got" ] || { echo "acknowledged: $want"; echo "stored: $got"; fail "$platform: metrics of $tid differ"; }
        [ "$(grep -c '^PERIODICAL' "$dir/acked.log")" = 6 ] && [ "$(grep -c '^FINAL' "$dir/acked.log")" = 1 ] ||
            fail "$platform: $tid did not report 6 + 1 results"
        [ ! -e "$dir/.nni/channel" ] || fail "$platform: $tid's channel file left after its end"
        ! grep -q "no python3" "$dir/output/${chief}_output/trial.stderr" || fail "$platform: $tid ran without the relay"
        n=$((n + 1))
    done
    [ "$n" = 12 ] || fail "$platform: $n trial dirs checked, not 12"
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND final_metric IS NOT NULL")" = 12 ] ||
        fail "$platform: final metrics missing"
    pass "$platform: 12 HTTP channel trials SUCCEEDED in attempt 1 across a kill -9 of the api, every acknowledged metric stored once ($((after - before)) acknowledged while it was down)"
    nnictl stop "$id" > /dev/null
}

K8S_AUTH=token
export KUBECONFIG="$WORK/kubeconfig"
k8s_start
NFS="  storage: {storageType: nfs, server: nfs.test, path: /exports/nni, localMountPoint: $K8S_NFS}"
http_case kubeflow worker 21 "  platform: kubeflow
  operator: tf-operator
  apiVersion: v1
$NFS
  worker: {replicas: 1, command: sh run.sh, cpuNumber: 1, memorySize: 512mb, dockerImage: test/tf:1}"
# two task roles: both run under their own relay, the trainer's reports
policy="frameworkAttemptCompletionPolicy: {minFailedTaskCount: 1, minSucceedTaskCount: -1}"
http_case frameworkcontroller trainer 22 "  platform: frameworkcontroller
$NFS
  serviceAccountName: frameworkbarrier
  taskRoles:
    - {name: trainer, taskNumber: 1, command: sh run.sh, gpuNumber: 0, cpuNumber: 1, memorySize: 512mb, dockerImage: test/fc:1, $policy}
    - {name: helper, taskNumber: 1, command: 'test -n \"\$NNI_TRIAL_COMMAND_CHANNEL\"', gpuNumber: 0, cpuNumber: 1, memorySize: 128mb, dockerImage: test/fc:1, $policy}"
k8s_stop
assert_no_leftovers
echo "70b-kube-http-channel: passed"
