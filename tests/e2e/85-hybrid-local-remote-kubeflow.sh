#!/usr/bin/env bash
# Hybrid over three kinds of platform at once: the local machine, a remote machine over a
# real sshd, and kubeflow (TFJob) on the Kubernetes API test server. One experiment's
# trials are spread over all three; each trial's metrics arrive exactly as it wrote them,
# the platform is recorded per trial (nnictl trial ls, REST), and stop leaves nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/remote.sh"
. "$TRIALQ_SRC/tests/servers/k8s_lib.sh"
# both libraries set an EXIT trap: stop the experiments and the test server, then the
# remote cleanup (sshd, remote processes), then lib.sh's checks
trap 'h_rc=$?; nnictl stop --all > /dev/null 2>&1; k8s_stop; (exit $h_rc); remote_on_exit' EXIT

remote_need_root
remote_user tqremote1
remote_keys
remote_sshd 1
K8S_AUTH=token
export KUBECONFIG="$WORK/kubeconfig"
k8s_start
remote_known_host 1 > "$WORK/known_hosts"

mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/exp/"
write_config "$WORK/exp/config.yml" trialCommand='TRIAL_SLEEP=0.3 sh metrics.sh' trialConcurrency=6 maxTrialNumber=18 \
    trainingService="
  - platform: local
  - platform: remote
    knownHostsFile: $WORK/known_hosts
    machineList:
      - {host: 127.0.0.1, port: ${SSHD_PORT[1]}, user: tqremote1, password: $REMOTE_PASS}
  - platform: kubeflow
    operator: tf-operator
    apiVersion: v1
    storage: {storageType: nfs, server: nfs.test, path: /exports/nni, localMountPoint: $K8S_NFS}
    worker: {replicas: 1, command: TRIAL_SLEEP=0.3 sh metrics.sh, cpuNumber: 1, memorySize: 512mb, dockerImage: test/tf:1}"
port=$(free_port)
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
REMOTE_EXPS="$id"
wait_status "$id" DONE 240
pass "hybrid local + remote + kubeflow experiment reached DONE"

[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 18 ] ||
    { sql "SELECT id, status, platform, attempt, message FROM trial WHERE experiment_id='$id'"; fail "not 18 SUCCEEDED"; }
for p in local remote kubeflow; do
    n=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND platform='$p'")
    [ "$n" -ge 2 ] || fail "only $n trial(s) ran on $p: $(sql "SELECT platform, count(*) FROM trial WHERE experiment_id='$id' GROUP BY platform")"
done
pass "trials per platform: $(sql "SELECT group_concat(platform || '=' || n, ', ') FROM (SELECT platform, count(*) n FROM trial WHERE experiment_id='$id' GROUP BY platform ORDER BY platform)")"

# every trial's metrics as metrics.sh wrote them: 3 PERIODICAL x.0 x.1 x.2 and FINAL x,
# stored once each, whatever the platform
bad=$(sql "SELECT t.id || ' on ' || t.platform FROM trial t WHERE t.experiment_id='$id' AND (
             (SELECT count(*) FROM metric m WHERE m.trial_id = t.id AND m.type='PERIODICAL') != 3 OR
             (SELECT count(*) FROM metric m WHERE m.trial_id = t.id AND m.type='FINAL') != 1 OR
             t.final_metric != CAST(json_extract(t.parameters, '\$.x') AS REAL))")
[ -z "$bad" ] || fail "metrics wrong for: $bad"
pass "every trial's 3 intermediate and 1 final metric stored once, value = its x"

nnictl trial ls "$id" > "$WORK/ls.json"
$PY -c "
import json; d = json.load(open('$WORK/ls.json'))
assert {t['platform'] for t in d} == {'local', 'remote', 'kubeflow'}, [t['platform'] for t in d]"
curl -sf "http://127.0.0.1:$port/api/v1/nni/trial-jobs" |
    $PY -c "import json,sys; d=json.load(sys.stdin); assert {t['platform'] for t in d} == {'local','remote','kubeflow'}, d"
pass "platform per trial in nnictl trial ls and the REST API"

# each kubeflow trial was created once, and stop deleted every job of the experiment
nk=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND platform='kubeflow'")
[ "$(k8s_stat "['create_calls']")" -ge "$nk" ] || fail "$(k8s_stat "['create_calls']") CREATE calls for $nk kubeflow trials"
nnictl stop "$id" > /dev/null
remote_wait_no_procs "$id" 20
left=$(k8s_hook GET objects | $PY -c "
import json, sys
print(sum(1 for o in json.load(sys.stdin)['items'] if o['obj'].get('kind') == 'TFJob'))")
[ "$left" = 0 ] || fail "$left TFJob(s) left on the cluster after stop"
pass "stop: no remote process, no TFJob left"
assert_no_leftovers
echo "85-hybrid-local-remote-kubeflow: passed"
