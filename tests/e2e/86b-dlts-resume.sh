#!/usr/bin/env bash
# DLTS crash safety: two submissions are handled by the dashboard but their answers are
# lost (the worker finds those jobs by name in the team's job list instead of creating
# them again); the dlts worker is killed with SIGKILL while jobs run (the api restarts
# it), then the whole manager (api + worker) is, and `nnictl resume` re-attaches to the
# jobs (by the jobId on the shared filesystem, or by name). Every trial ran exactly once:
# one job per trial on the server, every trial SUCCEEDED in its first attempt, and the
# metric rows are exactly what the trials wrote. A second job of a trial's name (made by
# hand while no manager ran) is killed on resume; the trial keeps its own.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/dlts.sh"

export TRIAL_STEPS=3 TRIAL_SLEEP=0.4   # the jobs inherit these from the server
dlts_start_server
port=$(free_port)
dlts_experiment "$WORK/exp" 4 16 5
# the first two jobs are created, and their answers dropped
dlts_fail '{"mode": "drop_after", "action": "submit", "count": 2}'

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
crash_and_resume dlts "$id" "$port" 16
# no duplicate job: one job per trial name on the server, and each trial's recorded jobId is it
[ "$(dlts_stat 's["created"]')" = 16 ] ||
    { dlts_stat '"\n".join(sorted("%s %s %s" % (j["jobName"], i, j["jobStatus"]) for i, j in s["jobs"].items()))'
      fail "the server created $(dlts_stat 's["created"]') jobs for 16 trials"; }
dlts_stats | "$PY" -c "
import json, sys
s = json.load(sys.stdin)
names = [j['jobName'] for j in s['jobs'].values()]
assert len(names) == len(set(names)) == 16, names
" || fail "a job name was created twice"
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    jid=$(cat "$DLTS_LOCAL/$id/$tid/.nni/jobid") || fail "trial $tid: no jobid"
    [ "$(dlts_stat "s['jobs']['$jid']['jobName']")" = "nni_exp_${id}_trial_${tid}" ] || fail "trial $tid: job $jid is not its job"
done
grep -qs "re-attached to DLTS job" "$NNI_HOME/$id"/log/*.log || fail "no re-attach by name logged"
assert_dir_metrics "$id"
pass "16 jobs, one per trial (2 lost answers found by name); no metric lost or doubled"

nnictl stop "$id" > /dev/null

# a second job of a trial's name (made by hand while no manager ran): on resume the
# trial keeps its own (the oldest), the other is killed, nothing else is created
export TRIAL_SLEEP=1.5
port=$(free_port)
dlts_experiment "$WORK/dup" 1 1 7
nnictl create --config "$WORK/dup/config.yml" --port "$port" > "$WORK/dup.out" 2>&1 || { cat "$WORK/dup.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/dup.out")
wait_until 30 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 1 || fail "no trial RUNNING"
tid=$(sql "SELECT id FROM trial WHERE experiment_id='$id'")
wait_file "$DLTS_LOCAL/$id/$tid/.nni/jobid" 10 "no jobid"
own=$(cat "$DLTS_LOCAL/$id/$tid/.nni/jobid")
kill9_manager "$id" dlts
rm "$DLTS_LOCAL/$id/$tid/.nni/jobid"   # as if the manager died before writing it
created=$(dlts_stat 's["created"]')
"$PY" -c "import json,sys; print(json.dumps({'jobName': sys.argv[1], 'resourcegpu': 1, 'image': 'x', 'cmd': 'sleep 30',
  'team': 'nni', 'vcName': 'nni', 'userName': sys.argv[2], 'gpuType': 'P100', 'jobtrainingtype': 'RegularJob'}))" \
    "nni_exp_${id}_trial_${tid}" "$DLTS_EMAIL" |
    curl -sf -X POST -H 'Content-Type: application/json' --data-binary @- \
        "$DLTS_URL/api/clusters/c1/jobs?email=$DLTS_EMAIL&password=$DLTS_PASSWORD" > "$WORK/dup.json" || fail "cannot submit the duplicate"
other=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['jobId'])" "$WORK/dup.json")
nnictl resume "$id" --port "$port" > "$WORK/resume2.out" 2>&1 || { cat "$WORK/resume2.out"; fail "resume failed"; }
wait_status "$id" DONE 120
[ "$(sql "SELECT status || ' ' || attempt FROM trial WHERE id='$tid'")" = "SUCCEEDED 1" ] || fail "the trial: $(sql "SELECT status, attempt, message FROM trial WHERE id='$tid'")"
[ "$(cat "$DLTS_LOCAL/$id/$tid/.nni/jobid")" = "$own" ] || fail "the trial did not keep its own job $own"
wait_until 10 eval "curl -sf '$DLTS_URL/_test/job/$other' | grep -q '\"jobStatus\": \"killed\"'" || fail "the duplicate job $other was not killed"
[ "$(dlts_stat 's["created"]')" = $((created + 1)) ] || fail "a job was created on resume"
pass "a second job of the trial's name: the trial kept its own, the other was killed"
nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "86b-dlts-resume: passed"
