#!/usr/bin/env bash
# The Kubernetes-family platforms check their cluster at `nnictl create`: a missing or
# bad kubeconfig, an unreachable or untrusted server, 401/403, and a missing CRD
# (operator not installed, wrong apiVersion) each give a clear message naming what to
# fix, and nothing is stored or submitted. Then the real kubectl checks the test
# server's wire format (discovery, create, get, list by label, delete), so that the
# server the other 7x tests use speaks what a real client expects.
. "$(dirname "$0")/lib.sh"
. "$TRIALQ_SRC/tests/servers/k8s_lib.sh"

K8S_AUTH=token
k8s_start --no-crd adaptdl.petuum.com
export KUBECONFIG="$WORK/kubeconfig"
k8s_trial "$WORK/exp"
ts_kubeflow() { # apiVersion
    cat <<YML
  platform: kubeflow
  operator: tf-operator
  apiVersion: $1
  storage: {storageType: nfs, server: nfs.test, path: /exports/nni, localMountPoint: $K8S_NFS}
  worker: {replicas: 1, command: sh trial.sh, cpuNumber: 1, memorySize: 512mb}
YML
}
cfg() { k8s_experiment_config "$WORK/exp" 2 1 "$1"; }

# expect_error WHAT GREP-PATTERN: nnictl create fails with the pattern, stores nothing
expect_error() {
    if nnictl create --config "$WORK/exp/config.yml" --port "$(free_port)" > "$WORK/err.out" 2>&1; then
        fail "$1: create succeeded"
    fi
    grep -qE "$2" "$WORK/err.out" || { cat "$WORK/err.out"; fail "$1: the message does not say /$2/"; }
    [ "$(sql "SELECT count(*) FROM experiment" 2>/dev/null || echo 0)" = 0 ] || fail "$1: an experiment was stored"
    pass "$1: $(grep -oE "$2.{0,60}" "$WORK/err.out" | head -n1)"
}

cfg "$(ts_kubeflow v1)"
KUBECONFIG="$WORK/none.yaml" expect_error "missing kubeconfig" "no file of KUBECONFIG=.*exists"
(unset KUBECONFIG; HOME="$WORK/emptyhome" expect_error "no ~/.kube/config" "\.kube/config does not exist")
printf 'apiVersion: v1\nclusters: [\n  - {name: x\n' > "$WORK/broken.yaml"
KUBECONFIG="$WORK/broken.yaml" expect_error "bad kubeconfig YAML" "broken.yaml:[0-9]+:[0-9]+"
sed 's/^current-context: test/current-context: other/' "$WORK/kubeconfig" > "$WORK/ctx.yaml"
KUBECONFIG="$WORK/ctx.yaml" expect_error "unknown current-context" 'current-context "other" is not among its contexts'
closed=$(free_port)
sed "s#server: https://127.0.0.1:$K8S_PORT#server: https://127.0.0.1:$closed#" "$WORK/kubeconfig" > "$WORK/down.yaml"
KUBECONFIG="$WORK/down.yaml" expect_error "unreachable server" "cannot reach the Kubernetes API server https://127.0.0.1:$closed"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "/CN=other-ca" \
    -keyout "$WORK/other.key" -out "$WORK/other.crt" 2>/dev/null
sed "s#certificate-authority-data: .*#certificate-authority-data: $(base64 -w0 "$WORK/other.crt")#" "$WORK/kubeconfig" > "$WORK/ca.yaml"
KUBECONFIG="$WORK/ca.yaml" expect_error "untrusted server certificate" "cannot reach .*(SSL|certificate)"
k8s_kubeconfig "$WORK/bad.yaml" badtoken
KUBECONFIG="$WORK/bad.yaml" expect_error "rejected token (401)" "401 Unauthorized.*renew the token"
k8s_kubeconfig "$WORK/forbidden.yaml" forbidden
KUBECONFIG="$WORK/forbidden.yaml" expect_error "no RBAC rights (403)" "403 Forbidden.*grant get, list, create, delete on tfjobs.kubeflow.org"
cfg "$(ts_kubeflow v1alpha2)"
expect_error "apiVersion not served" "serves version\(s\) v1, not v1alpha2; set apiVersion"
cfg "  platform: adl
  trialCommand: sh trial.sh
  nniManagerIp: 127.0.0.1
  image: test/adaptdl:1
  nfs: {server: nfs.test, path: /exports/nni, containerMountPath: /tmp/adl-nfs, localMountPoint: $K8S_NFS}"
expect_error "operator not installed" "does not serve the API group adaptdl.petuum.com.*install AdaptDL"
cfg "$(ts_kubeflow v1 | sed 's/localMountPoint: [^}]*/localMountPoint: \/nonexistent-k8s-mount/')"
expect_error "storage mount point missing" "localMountPoint"
mkdir -p "$WORK/exp/many"
for i in $(seq 2001); do : > "$WORK/exp/many/f$i"; done
cfg "$(ts_kubeflow v1)"
expect_error "code directory over NNI's limit" "more than 2000 files and directories"
rm -rf "$WORK/exp/many"
if [ ! -x /sbin/mount.nfs ] && [ ! -x /usr/sbin/mount.nfs ]; then
    cfg "$(ts_kubeflow v1 | sed 's/, localMountPoint: [^}]*//')"
    expect_error "no mount point and no NFS client" "no NFS client \(mount.nfs\) to mount nfs.test:/exports/nni; install nfs-common"
fi
[ "$(k8s_stat "['create_calls']")" = 0 ] || fail "a job was submitted by a failed create"

# credentials that break while an experiment runs: the restarted worker's reason is
# kept with the experiment (nnictl and the UI show it); fixed, the experiment goes on
cfg "$(ts_kubeflow v1)"
cp "$WORK/kubeconfig" "$WORK/run.yaml"
port=$(free_port)
KUBECONFIG="$WORK/run.yaml" nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/run.out" 2>&1 ||
    { cat "$WORK/run.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/run.out")
cp "$WORK/bad.yaml" "$WORK/run.yaml"
pkill -9 -f "trialq worker --platform kubeflow --experiment $id" || true
# the phase ends once the restarted worker met the 401 (its error kept), not after a time
error_401() { sql "SELECT errors FROM experiment WHERE id='$id'" | grep -q "kubeflow: the Kubernetes API server .* answered 401 Unauthorized"; }
wait_until 15 error_401 ||
    { sql "SELECT errors FROM experiment WHERE id='$id'"; fail "the worker's start failure is not kept with the experiment"; }
cp "$WORK/kubeconfig" "$WORK/run.yaml"
wait_status "$id" DONE 60
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 2 ] || fail "the experiment did not recover"
nnictl stop "$id" > /dev/null
pass "credentials broken mid-run: the reason is kept with the experiment; repaired, it finished"

# trialCommandChannel: http: the pods report through the api's HTTP channel at
# nniManagerIp (NNI v3's), with the SDK unchanged (an `import nni` trial)
mkdir -p "$WORK/sdk-exp"
cp "$TRIALQ_SRC/tests/e2e/trials/quadratic.py" "$WORK/sdk-exp/"
write_config "$WORK/sdk-exp/config.yml" searchSpace='{x: {_type: uniform, _value: [0, 1]}, y: {_type: uniform, _value: [-2, 0]}}' \
    trialCommand= trialConcurrency=2 maxTrialNumber=2 trialCommandChannel=http nniManagerIp=127.0.0.1 \
    tuner='{name: Random, classArgs: {seed: 3}}' \
    trainingService=$'\n'"$(ts_kubeflow v1 | sed 's/command: sh trial.sh/command: python3 quadratic.py/')"
port=$(free_port)
nnictl create --config "$WORK/sdk-exp/config.yml" --port "$port" > "$WORK/sdk.out" 2>&1 || { cat "$WORK/sdk.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/sdk.out")
wait_status "$id" DONE 60
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND final_metric IS NOT NULL")" = 2 ] ||
    { sql "SELECT id, status, message FROM trial WHERE experiment_id='$id'"; fail "the HTTP-channel trials did not report"; }
[ "$(sql "SELECT count(*) FROM metric m JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id='$id'")" = 8 ] ||
    fail "not 4 metrics per trial"
! grep -rqs "NNISDK_MEb" "$K8S_NFS/nni/$id"/*/output/ || fail "the trials printed metrics instead of using the channel"
# the URL (its token) is in .nni/api-channel (0600), which the launch script reads; the
# script, a file trial-file serves, holds no token
for tdir in "$K8S_NFS/nni/$id"/*/; do
    [ -f "$tdir/run_worker.sh" ] || continue
    grep -qs "^http://127.0.0.1:$port/env/" "$tdir/.nni/api-channel" || fail "no channel URL in $tdir.nni/api-channel"
    [ "$(stat -c %a "$tdir/.nni/api-channel") $(stat -c %a "$tdir/.nni")" = "600 700" ] || fail "modes of .nni/api-channel"
    ! grep -qs "/env/" "$tdir/run_worker.sh" || fail "a channel URL in the launch script"
    grep -qs 'NNI_TRIAL_COMMAND_CHANNEL="$(cat "$NNI_SYS_DIR/.nni/api-channel")"' "$tdir/run_worker.sh" ||
        fail "the launch script does not read .nni/api-channel"
done
nnictl stop "$id" > /dev/null
pass "trialCommandChannel http: 2 trials reported 8 metrics through the api's channel"

# a job deleted behind trialq's back (not a kill): the trial is retried with the same
# parameters as attempt 2 (maxTrialRetries: 1), its first attempt's files kept aside
cfg "$(ts_kubeflow v1)"
touch "$K8S_NFS/hold"
port=$(free_port)
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/vanish.out" 2>&1 || { cat "$WORK/vanish.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/vanish.out")
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 1 60
tid=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING'")
# meanwhile the role loses the list verb: the worker polls each job on its own
k8s_hook POST deny '{"list": true}' > /dev/null
wait_file "$K8S_NFS/nni/$id/$tid/output/worker_output/written.log" 10 "the trial's job runs"
curl -sk --max-time 10 -X DELETE -H "Authorization: Bearer $K8S_TOKEN" \
    "https://127.0.0.1:$K8S_PORT/apis/kubeflow.org/v1/namespaces/default/tfjobs/nni-exp-$id-trial-${tid,,}" > /dev/null
wait_sql "SELECT attempt FROM trial WHERE id='$tid'" 2 30
rm -f "$K8S_NFS/hold"
wait_status "$id" DONE 60
[ "$(sql "SELECT status || ' ' || attempt FROM trial WHERE id='$tid'")" = "SUCCEEDED 2" ] || fail "the vanished trial did not succeed as attempt 2"
[ -d "$K8S_NFS/nni/$id/$tid.attempt1" ] || fail "attempt 1's files were not kept aside"
[ "$(k8s_stat "['creates']['nni-exp-$id-trial-${tid,,}']")" = 2 ] || fail "the vanished trial's job was not created again"
[ "$(sql "SELECT count(*) FROM metric WHERE trial_id='$tid' AND type='FINAL'")" = 1 ] || fail "not one final metric for the retried trial"
grep -qs "refuses to list the experiment's jobs" "$NNI_HOME/$id"/log/*.log || fail "no fallback from listing logged"
k8s_hook POST deny '{"list": false}' > /dev/null
nnictl stop "$id" > /dev/null
pass "a job deleted behind trialq's back: the trial was retried as attempt 2 and succeeded (listing forbidden meanwhile: each job polled on its own)"

# a failing trial: the job's Failed condition, with the exit code the pod left
touch "$K8S_NFS/fail"
port=$(free_port)
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/failing.out" 2>&1 || { cat "$WORK/failing.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/failing.out")
wait_status "$id" DONE 60
rm -f "$K8S_NFS/fail"
[ "$(sql "SELECT group_concat(status || ' ' || exit_code || ' ' || message, ',') FROM trial WHERE experiment_id='$id'")" = \
  "FAILED 3 exit code 3,FAILED 3 exit code 3" ] ||
    { sql "SELECT id, status, exit_code, message FROM trial WHERE experiment_id='$id'"; fail "failing trials: wrong status"; }
nnictl stop "$id" > /dev/null
pass "failing trials: FAILED with the pod's exit code 3"

# the real kubectl against the test server
command -v kubectl > /dev/null || fail "kubectl is missing (scripts/install-deps.sh installs kubernetes-client)"
kc() { kubectl --cache-dir "$WORK/kcache" --request-timeout 20s "$@"; }
kc version -o json > "$WORK/kv.json" 2>&1 || true
grep -q '"gitVersion": "v1.27.0-trialq-test"' "$WORK/kv.json" || { cat "$WORK/kv.json"; fail "kubectl version: no server version"; }
kc api-resources --api-group=kubeflow.org > "$WORK/ar.out" 2>&1 || { cat "$WORK/ar.out"; fail "kubectl api-resources failed"; }
grep -qE "^tfjobs +tfjob +kubeflow.org/v1 +true +TFJob" "$WORK/ar.out" || { cat "$WORK/ar.out"; fail "kubectl api-resources: no tfjobs"; }
cat > "$WORK/job.json" <<EOF
{"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
 "metadata": {"name": "kubectl-job", "labels": {"app": "nni-kubernetes-trial", "expId": "kubectl"}},
 "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
   "containers": [{"name": "tensorflow", "image": "x", "command": ["sh", "-c", "echo ran > /tmp/mount/kubectl-ran"],
                   "volumeMounts": [{"name": "nni-vol", "mountPath": "/tmp/mount"}]}],
   "volumes": [{"name": "nni-vol", "nfs": {"server": "nfs.test", "path": "/exports/nni"}}]}}}}}}
EOF
kc create -f "$WORK/job.json" --validate=false > "$WORK/create.out" 2>&1 || { cat "$WORK/create.out"; fail "kubectl create failed"; }
grep -q "tfjob.kubeflow.org/kubectl-job created" "$WORK/create.out" || { cat "$WORK/create.out"; fail "kubectl create: unexpected output"; }
if kc create -f "$WORK/job.json" --validate=false > "$WORK/create2.out" 2>&1; then fail "a second create succeeded"; fi
grep -q 'AlreadyExists\|already exists' "$WORK/create2.out" || { cat "$WORK/create2.out"; fail "kubectl: no AlreadyExists"; }
job_succeeded() { st=$(kc get tfjob kubectl-job -o 'jsonpath={.status.conditions[-1:].type}' 2>&1 || true); [ "$st" = Succeeded ]; }
wait_until 10 job_succeeded || fail "kubectl get: the job is '$st', not Succeeded"
[ "$(cat "$K8S_NFS/kubectl-ran" 2>/dev/null)" = ran ] || fail "the job's pod did not write to the NFS volume"
kc get tfjobs -l app=nni-kubernetes-trial,expId=kubectl -o name > "$WORK/get.out" 2>&1 || { cat "$WORK/get.out"; fail "kubectl get -l failed"; }
[ "$(cat "$WORK/get.out")" = "tfjob.kubeflow.org/kubectl-job" ] || { cat "$WORK/get.out"; fail "kubectl get -l: unexpected list"; }
[ -z "$(kc get tfjobs -l expId=other -o name 2>&1)" ] || fail "kubectl get -l expId=other listed something"
kc get tfjobs > "$WORK/table.out" 2>&1 && grep -q "^kubectl-job" "$WORK/table.out" || { cat "$WORK/table.out"; fail "kubectl get tfjobs (table)"; }
kc delete tfjobs -l expId=kubectl > "$WORK/del.out" 2>&1 || { cat "$WORK/del.out"; fail "kubectl delete -l failed"; }
grep -q 'tfjob.kubeflow.org "kubectl-job" deleted' "$WORK/del.out" || { cat "$WORK/del.out"; fail "kubectl delete: unexpected output"; }
if kc get tfjob kubectl-job > "$WORK/nf.out" 2>&1; then fail "the deleted job is still there"; fi
grep -q 'NotFound\|not found' "$WORK/nf.out" || { cat "$WORK/nf.out"; fail "kubectl: no NotFound"; }
# client certificate auth as kubectl does it; a rejected token
k8s_kubeconfig "$WORK/cert.yaml" cert
KUBECONFIG="$WORK/cert.yaml" kc get tfjobs -o name > "$WORK/cert.out" 2>&1 || { cat "$WORK/cert.out"; fail "kubectl with a client certificate failed"; }
if KUBECONFIG="$WORK/bad.yaml" kc get tfjobs > "$WORK/401.out" 2>&1; then fail "kubectl with a bad token succeeded"; fi
grep -qi "unauthorized\|must be logged in" "$WORK/401.out" || { cat "$WORK/401.out"; fail "kubectl: no 401"; }
pass "kubectl $(kubectl version --client -o json 2>/dev/null | sed -n 's/.*"gitVersion": "\([^"]*\)".*/\1/p' | head -n1): discovery, create, 409, get, list by label, delete, 404, client certificate, 401"
k8s_stop
assert_no_leftovers
echo "74-k8s-start-errors: passed"
