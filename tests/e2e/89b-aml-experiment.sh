#!/usr/bin/env bash
# Azure ML: 12 trials at concurrency 4 through the Azure ML test server (a token from the
# service principal of AZURE_TENANT_ID / AZURE_CLIENT_ID / AZURE_CLIENT_SECRET, every
# management request checked for it) run to DONE, each as one command job PUT once under
# the name nni_exp_<exp>_trial_<trial> on the configured compute, in the environment of
# dockerImage, its output folder the experiment's path on the datastore; the metrics come
# back over the datastore exactly as the trials wrote them. `nnictl trial kill` cancels a
# running job (USER_CANCELED), a job cancelled in the workspace ends SYS_CANCELED, a
# failing trial FAILED with its exit code; `nnictl stop` cancels what still runs; with
# trialCommandChannel: http the trials report through the relay in their jobs. The
# client secret is in no log, error, config show, REST answer or the database.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/aml.sh"

aml_start_server
port=$(free_port)
aml_experiment "$WORK/exp" 4 12 11
aml_create "$WORK/exp" "$port"
id=$AML_ID
wait_status "$id" DONE 180
pass "experiment reached DONE"

ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND platform='aml'")
[ "$ok" = 12 ] || { sql "SELECT id, status, platform, message FROM trial WHERE experiment_id='$id'"; fail "$ok of 12 SUCCEEDED on aml"; }
assert_dir_metrics "$id"
[ "$(sql "SELECT count(*) FROM metric m JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id='$id'")" = 48 ] ||
    fail "not 4 metrics for each of 12 trials"
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    dir=$(sql "SELECT trial_dir FROM trial WHERE id='$tid'")
    [ "$dir" = "$AML_BLOB/$id/$tid" ] || fail "trial dir of $tid is $dir"
    x=$(sed -n 's/.*"x":\([0-9]*\).*/\1/p' "$dir/parameter.cfg")
    fm=$(sql "SELECT final_metric FROM trial WHERE id='$tid'")
    [ "${fm%.0}" = "$x" ] || fail "final metric of $tid is $fm, parameter x is $x"
done
pass "12 trials SUCCEEDED on aml with exactly the metrics they wrote on the datastore"

[ "$(aml_stat 's["created"]')" = 12 ] || fail "the server created $(aml_stat 's["created"]') jobs, not 12"
[ "$(aml_stat 's.get("put", 0)')" = 12 ] || fail "$(aml_stat 's.get("put")') PUTs of jobs, not 12"
[ "$(aml_stat 's.get("environments", 0)')" = 1 ] || fail "not one environment registered"
[ "$(aml_stat 's["refused"]')" = "{}" ] || fail "the server refused requests: $(aml_stat 's["refused"]')"
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    name=nni_exp_${id}_trial_${tid}
    [ "$(sql "SELECT job_id FROM trial WHERE id='$tid'")" = "$name" ] || fail "trial $tid: job_id"
    [ "$(cat "$AML_BLOB/$id/$tid/.nni/amljob")" = "$name" ] || fail "trial $tid: no .nni/amljob"
    url=$(sql "SELECT url FROM trial WHERE id='$tid'")
    [[ $url == "https://ml.azure.com/runs/$name?wsid=/subscriptions/$AML_SUB/"*"&tid=$AML_TENANT" ]] ||
        fail "trial $tid: tracking URL '$url' is not its job's Studio page"
    curl -sf "$AML_URL/_test/job/$name" > "$WORK/job.json" || fail "the server has no job $name"
    aml_assert_no_secret "$WORK/job.json"
    "$PY" - "$WORK/job.json" "$id" "$tid" "$AML_SUB" "$AML_RG" "$AML_WS" <<'PY' || fail "job body of $tid"
import json, sys
j = json.load(open(sys.argv[1]))
exp, tid, sub, rg, ws = sys.argv[2:7]
p = json.loads(j["body"])["properties"]
assert j["status"] == "Completed", j["status"]
assert j["history"] == ["NotStarted", "Starting", "Provisioning", "Preparing", "Queued", "Running", "Finalizing",
                        "Completed"], j["history"]
wsid = "/subscriptions/%s/resourceGroups/%s/providers/Microsoft.MachineLearningServices/workspaces/%s" % (sub, rg, ws)
assert p["jobType"] == "Command" and p["computeId"] == wsid + "/computes/cpu-cluster", p
assert p["environmentId"].startswith(wsid + "/environments/trialq-nni/versions/"), p["environmentId"]
assert p["outputs"] == {"nni": {"jobOutputType": "uri_folder", "mode": "ReadWriteMount",
                                "uri": "azureml://datastores/workspaceblobstore/paths/" + exp}}, p["outputs"]
assert p["experimentName"] == "nni_exp_" + exp and p["tags"]["nni_trial"] == tid, p
for want in ("NNI_PLATFORM=aml", "NNI_SYS_DIR='${{outputs.nni}}/%s'" % tid, "NNI_TRIAL_JOB_ID='%s'" % tid,
             "NNI_CODE_DIR='${{outputs.nni}}/nni-code'", "'sh metrics.sh'"):
    assert want in p["command"], (want, p["command"])
assert "CUDA_VISIBLE_DEVICES" not in p["command"], p["command"]
PY
done
pass "12 command jobs nni_exp_<exp>_trial_<trial>, each PUT once, walking the documented states, their Studio pages the trials' tracking URLs"

# the client secret: nowhere, the database included (it only ever comes from the environment)
nnictl config show "$id" > "$WORK/show.out" 2>&1 || true
curl -sf "http://127.0.0.1:$port/api/v1/nni/experiment" > "$WORK/rest.out" || true
grep -q '"trainingService"' "$WORK/rest.out" || fail "GET /experiment: no trainingService"
leaks=$(grep -rlaF "$AML_SECRET" "$NNI_HOME" "$WORK/show.out" "$WORK/rest.out" "$WORK/exp.create.out" "$AML_BLOB" || true)
[ -z "$leaks" ] || fail "the client secret is in $leaks"
pass "the client secret is in no log, database, config show, REST answer, job body or file on the datastore"
nnictl stop "$id" > /dev/null

# ---- the trial life cycle: kill, a job cancelled in the workspace, a failing trial ----
aml_experiment "$WORK/exp2" 4 4 3
cp "$TRIALQ_SRC/tests/e2e/trials/behave.sh" "$WORK/exp2/"
sed -i -e 's/^trialCommand: .*/trialCommand: sh behave.sh/' -e '/^  x: /d' "$WORK/exp2/config.yml"
sed -i 's/^searchSpace:/searchSpace:\n  mode: {_type: choice, _value: [ok, fail, slow, admin]}/' "$WORK/exp2/config.yml"
sed -i 's/^tuner: .*/tuner: {name: GridSearch}/' "$WORK/exp2/config.yml"
# "admin": a slow trial whose job is cancelled in the workspace
sed -i 's/^slow)  /slow | admin)  /' "$WORK/exp2/behave.sh"
port=$(free_port)
aml_create "$WORK/exp2" "$port"
id=$AML_ID
tid_of() { sql "SELECT id FROM trial WHERE experiment_id='$id' AND parameters LIKE '%\"$1\"%'"; }
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id'" 4 30 "4 trials"
slow=$(tid_of slow) admin=$(tid_of admin)
for t in "$slow" "$admin"; do
    wait_file "$AML_BLOB/$id/$t/started" 60 "trial $t did not start on the server"
done
wait_sql "SELECT status FROM trial WHERE id='$slow'" RUNNING 10 "the slow trial RUNNING"
nnictl trial kill "$id" --trial_id "$slow" > /dev/null
tok=$(curl -sf -X POST -d "{\"tid\": \"$AML_TENANT\"}" "$AML_URL/_test/token" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
wsid="/subscriptions/$AML_SUB/resourceGroups/$AML_RG/providers/Microsoft.MachineLearningServices/workspaces/$AML_WS"
curl -sf -X POST -H "Authorization: Bearer $tok" \
    "$AML_URL$wsid/jobs/nni_exp_${id}_trial_${admin}/cancel?api-version=2023-04-01" > /dev/null ||
    fail "cannot cancel the admin's job"
wait_status "$id" DONE 90
st() { sql "SELECT status || ' ' || coalesce(exit_code, '') || ' ' || coalesce(message, '') FROM trial WHERE id='$(tid_of "$1")'"; }
[[ "$(st ok)" == "SUCCEEDED 0 " ]] || fail "ok: $(st ok)"
[[ "$(st fail)" == "FAILED 3 Azure ML job Failed: the trial command exited with code 3" ]] || fail "fail: $(st fail)"
[[ "$(st slow)" == USER_CANCELED* ]] || fail "slow: $(st slow)"
[[ "$(st admin)" == SYS_CANCELED* ]] || fail "admin: $(st admin)"
curl -sf "$AML_URL/_test/job/nni_exp_${id}_trial_${slow}" | grep -q '"status": "Canceled"' ||
    fail "the killed trial's job is not Canceled on the server"
pass "statuses: SUCCEEDED, FAILED 3 (its reason), USER_CANCELED (POST cancel), SYS_CANCELED (cancelled in the workspace)"
nnictl stop "$id" > /dev/null

# the status of running jobs costs one listing per poll interval (1 s; pages of 3 jobs),
# no GET per job; nnictl stop cancels the jobs that still run
aml_experiment "$WORK/exp3" 6 6 4
sed -i 's/^trialCommand: .*/trialCommand: sleep 300/' "$WORK/exp3/config.yml"
port=$(free_port)
aml_create "$WORK/exp3" "$port"
id=$AML_ID
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 6 30 "6 trials RUNNING"
get0=$(aml_stat 's.get("get", 0)') list0=$(aml_stat 's.get("list", 0)') t0=$(date +%s%N)
wait_until 10 eval '[ "$(aml_stat "s.get(\"list\", 0)")" -ge $((list0 + 6)) ]' || fail "no listing in steady state"
get1=$(aml_stat 's.get("get", 0)') list1=$(aml_stat 's.get("list", 0)') t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
[ "$get1" = "$get0" ] || fail "$((get1 - get0)) GETs of single jobs in steady state with 6 running (want 0)"
# 6 jobs: 2 pages a listing, one listing a second (+1 for the edges of the window)
[ $((list1 - list0)) -le $(( (ms / 1000 + 2) * 2 )) ] || fail "$((list1 - list0)) list pages in $ms ms"
pass "6 jobs running: $((list1 - list0)) list pages in $ms ms (one 2-page listing a second), no GET per job"
nnictl stop "$id" > /dev/null
live() { aml_stat "sum(1 for n, st in s['jobs'].items() if '$id' in n and st not in ('Completed', 'Failed', 'Canceled'))"; }
wait_until 30 eval '[ "$(live)" = 0 ]' || fail "jobs still live after nnictl stop: $(live)"
pass "nnictl stop: no job of the experiment left running"

# trialCommandChannel: http: the trials speak NNI v3's HTTP channel, served in the job by
# .nni/chanrelay.py (metrics to the trial's dir on the datastore)
port=$(free_port)
http_experiment "$WORK/http" 5 4 4 "$(aml_ts)"
aml_create "$WORK/http" "$port"
id=$AML_ID
wait_status "$id" DONE 60
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 4 ] ||
    { sql "SELECT id, status, message FROM trial WHERE experiment_id='$id'"; fail "http channel: not 4 trials SUCCEEDED"; }
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    dir=$AML_BLOB/$id/$tid
    [ -s "$dir/.nni/chanrelay.py" ] || fail "http channel: no relay in $tid's dir"
    want=$(sort "$dir/acked.log")
    got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$tid'" | sort)
    [ -n "$want" ] && [ "$want" = "$got" ] || { echo "acknowledged: $want"; echo "stored: $got"; fail "http channel: metrics of $tid"; }
    curl -sf "$AML_URL/_test/job/nni_exp_${id}_trial_${tid}" | grep -q 'NNI_TRIAL_COMMAND_CHANNEL=.*chanrelay.py' ||
        fail "http channel: the job of $tid does not run the relay"
done
pass "trialCommandChannel http: 4 trials through the relay in their jobs, every acknowledged metric stored"
nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "89b-aml-experiment: passed"
