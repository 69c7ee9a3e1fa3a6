#!/usr/bin/env bash
# DLTS: 12 trials at concurrency 4 through the DLTS test server run to DONE, each as one
# DLTS job named nni_exp_<exp>_trial_<trial>, submitted once with NNI's body (the GPU
# type from the cluster's metadata); the metrics come back over the shared filesystem
# exactly as the trials wrote them. `nnictl trial kill` kills a running job (PUT
# killing -> USER_CANCELED), a job killed on the cluster is SYS_CANCELED, one paused
# there is killed (SYS_CANCELED, as NNI), a failing trial FAILED with its exit code. The
# status of all of them comes from one team job list a poll interval, never a GET of a
# single job. The password is in no log, error, config show, REST answer or the database.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/dlts.sh"

dlts_start_server
port=$(free_port)
dlts_experiment "$WORK/exp" 4 12 11
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || { cat "$WORK/create.out"; fail "no experiment id"; }
wait_status "$id" DONE 180
pass "experiment reached DONE"

ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND platform='dlts'")
[ "$ok" = 12 ] || { sql "SELECT id, status, platform, message FROM trial WHERE experiment_id='$id'"; fail "$ok of 12 SUCCEEDED on dlts"; }
assert_dir_metrics "$id"
[ "$(sql "SELECT count(*) FROM metric m JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id='$id'")" = 48 ] ||
    fail "not 4 metrics for each of 12 trials"
pass "12 trials SUCCEEDED on dlts with exactly the metrics they wrote"

[ "$(dlts_stat 's["created"]')" = 12 ] || fail "the server created $(dlts_stat 's["created"]') jobs, not 12"
[ "$(dlts_stat 's["actions"].get("submit", 0)')" = 12 ] || fail "$(dlts_stat 's["actions"]') : not 12 submissions"
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    [ "$(sql "SELECT job_id FROM trial WHERE id='$tid'")" = "nni_exp_${id}_trial_${tid}" ] || fail "trial $tid: job_id"
    jid=$(cat "$DLTS_LOCAL/$id/$tid/.nni/jobid") || fail "trial $tid: no .nni/jobid"
    curl -sf "$DLTS_URL/_test/job/$jid" > "$WORK/job.json" || fail "the server has no job $jid"
    "$PY" - "$WORK/job.json" "nni_exp_${id}_trial_${tid}" "$DLTS_CONT/$id/$tid" <<'PY' || fail "job body of $tid"
import json, sys
j = json.load(open(sys.argv[1]))
b = j["body"] if isinstance(j["body"], dict) else json.loads(j["body"])
assert j["jobStatus"] == "finished", j["jobStatus"]
assert b["jobName"] == sys.argv[2], b
for k, v in {"resourcegpu": 1, "image": "example/nni:test", "team": "nni", "vcName": "nni",
             "userName": "alice@example.com", "gpuType": "P100", "jobType": "training",
             "jobtrainingtype": "RegularJob", "preemptionAllowed": "False", "interactivePorts": [],
             "mountpoints": []}.items():
    assert b[k] == v, (k, b[k])
for want in ("NNI_PLATFORM=dlts", "NNI_SYS_DIR='%s'" % sys.argv[3], "'sh metrics.sh'"):
    assert want in b["cmd"], (want, b["cmd"])
assert "CUDA_VISIBLE_DEVICES" not in b["cmd"], b["cmd"]
PY
done
pass "12 jobs nni_exp_<exp>_trial_<trial>, each submitted once with NNI's body"
# the status comes from one team job list a poll interval: no GET of a single job
[ "$(dlts_stat 's["actions"].get("get", 0)')" = 0 ] || fail "$(dlts_stat 's["actions"]'): GETs of single jobs"
pass "status by the team's job list: $(dlts_stat 's["actions"].get("list", 0)') lists, no GET per job"

# the password: nowhere shown
nnictl config show "$id" > "$WORK/show.out" 2>&1 || true
grep -q "password" "$WORK/show.out" || fail "config show has no password key"
curl -sf "http://127.0.0.1:$port/api/v1/nni/experiment" > "$WORK/rest.out" || true
grep -q '"trainingService"' "$WORK/rest.out" || fail "GET /experiment: no trainingService"
# every file of NNI_HOME (the database included: the secrets are kept in the
# experiment's secrets file, docs/security.md) but that file, the outputs, a dump of the
# database
nlogs=$(find "$NNI_HOME" -name '*.log' | wc -l)
[ "$nlogs" -gt 0 ] || fail "no log files under $NNI_HOME"
sqlite3 "$DB" .dump > "$WORK/db.dump"
leaks=$(grep -rlF "$DLTS_PASSWORD" "$NNI_HOME" "$WORK/show.out" "$WORK/rest.out" "$WORK/create.out" \
    "$WORK/db.dump" "$DLTS_LOCAL" | grep -v "^$NNI_HOME/secrets/$id.json$" || true)
[ -z "$leaks" ] || fail "the password is in $leaks"
grep -qF "$DLTS_PASSWORD" "$NNI_HOME/secrets/$id.json" || fail "the password is not in the secrets file"
grep -q '"password": *"\*\*\*\*\*\*\*\*"\|password: "\*\*\*\*\*\*\*\*"\|password: \*\*\*\*\*\*\*\*' "$WORK/show.out" ||
    { cat "$WORK/show.out"; fail "config show does not redact the password"; }
pass "the password is redacted in config show, in no log and not in the database"
nnictl stop "$id" > /dev/null

# ---- the trial life cycle: kill, a job killed on the cluster, a failing trial ----
dlts_experiment "$WORK/exp2" 5 5 3
cp "$TRIALQ_SRC/tests/e2e/trials/behave.sh" "$WORK/exp2/"
cat > "$WORK/exp2/run.sh" <<'SH'
mode=$(sed -n 's/.*"mode":"\([a-z]*\)".*/\1/p' "$NNI_SYS_DIR/parameter.cfg")
case $mode in
admin | paused) echo started > "$NNI_SYS_DIR/started"; sleep 60 ;;
*) exec sh behave.sh ;;
esac
SH
sed -i -e 's/^trialCommand: .*/trialCommand: sh run.sh/' -e '/^  x: /d' "$WORK/exp2/config.yml"
sed -i 's/^searchSpace:/searchSpace:\n  mode: {_type: choice, _value: [ok, fail, slow, admin, paused]}/' "$WORK/exp2/config.yml"
sed -i 's/^tuner: .*/tuner: {name: GridSearch}/' "$WORK/exp2/config.yml"
port=$(free_port)
nnictl create --config "$WORK/exp2/config.yml" --port "$port" > "$WORK/create2.out" 2>&1 ||
    { cat "$WORK/create2.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create2.out")
tid_of() { sql "SELECT id FROM trial WHERE experiment_id='$id' AND parameters LIKE '%\"$1\"%'"; }
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id'" 5 30 "a trial for each of the 5 modes"
slow=$(tid_of slow) admin=$(tid_of admin) paused=$(tid_of paused)
for t in "$slow" "$admin" "$paused"; do
    wait_file "$DLTS_LOCAL/$id/$t/started" 60 "trial $t did not start on the server"
done
wait_until 10 sql_is "SELECT status FROM trial WHERE id='$slow'" RUNNING || fail "slow trial not RUNNING"
nnictl trial kill "$id" --trial_id "$slow" > /dev/null
ajid=$(cat "$DLTS_LOCAL/$id/$admin/.nni/jobid")
curl -sf -X PUT -H 'Content-Type: application/json' -d '{"status": "killing"}' \
    "$DLTS_URL/api/clusters/c1/jobs/$ajid/status?email=$DLTS_EMAIL&password=$DLTS_PASSWORD" > /dev/null ||
    fail "cannot kill the admin's job"
pjid=$(cat "$DLTS_LOCAL/$id/$paused/.nni/jobid")
curl -sf -X PUT -H 'Content-Type: application/json' -d '{"status": "pausing"}' \
    "$DLTS_URL/api/clusters/c1/jobs/$pjid/status?email=$DLTS_EMAIL&password=$DLTS_PASSWORD" > /dev/null ||
    fail "cannot pause a job"
wait_status "$id" DONE 120
st() { sql "SELECT status || ' ' || coalesce(exit_code, '') || ' ' || coalesce(message, '') FROM trial WHERE id='$(tid_of "$1")'"; }
[[ "$(st ok)" == "SUCCEEDED 0 " ]] || fail "ok: $(st ok)"
[[ "$(st fail)" == "FAILED 3 exit code 3" ]] || fail "fail: $(st fail)"
[[ "$(st slow)" == USER_CANCELED* ]] || fail "slow: $(st slow)"
[[ "$(st admin)" == SYS_CANCELED* ]] || fail "admin: $(st admin)"
[[ "$(st paused)" == SYS_CANCELED* ]] || fail "paused: $(st paused)"
curl -sf "$DLTS_URL/_test/job/$pjid" | grep -q '"jobStatus": "killed"' || fail "the paused job was not killed"
sjid=$(cat "$DLTS_LOCAL/$id/$slow/.nni/jobid")
curl -sf "$DLTS_URL/_test/job/$sjid" | grep -q '"jobStatus": "killed"' || fail "the killed job is not killed on the server"
pass "statuses: SUCCEEDED, FAILED 3, USER_CANCELED (PUT killing), SYS_CANCELED (killed or paused on the cluster; a paused job killed)"
nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "86-dlts-experiment: passed"
