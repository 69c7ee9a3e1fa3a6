#!/usr/bin/env bash
# Azure ML crash safety: a PUT of a job is idempotent by its name, so two submissions
# whose answers are lost (the job made, the connection dropped) are PUT again and found
# (200), not made twice; the aml worker is killed with SIGKILL while jobs run (the api
# restarts it), then the whole manager (api + worker), and `nnictl resume` re-attaches.
# Every trial ran exactly once: one job per trial on the server, every trial SUCCEEDED in
# its first attempt, the metric rows exactly what the trials wrote. A job of a trial's
# name with another body (made by an earlier manager, its record lost) is re-attached on
# resume, not duplicated.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/aml.sh"

export TRIAL_STEPS=3 TRIAL_SLEEP=0.4   # the jobs inherit these from the server
aml_start_server
port=$(free_port)
aml_experiment "$WORK/exp" 4 16 5
# the first two job PUTs: the job is made, then the connection drops before the answer
aml_fail '{"mode": "drop_after", "action": "put", "count": 2}'
aml_create "$WORK/exp" "$port"
id=$AML_ID
crash_and_resume aml "$id" "$port" 16
[ "$(aml_stat 's["created"]')" = 16 ] ||
    { aml_stat '"\n".join(sorted(s["jobs"]))'; fail "the server created $(aml_stat 's["created"]') jobs for 16 trials"; }
[ "$(aml_stat 's["injected"]')" = 2 ] || fail "$(aml_stat 's["injected"]') answers dropped, not 2"
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    [ "$(aml_stat "s['jobs'].get('nni_exp_${id}_trial_${tid}')")" = Completed ] || fail "trial $tid: its job is not Completed"
done
grep -qs "re-attached to Azure ML job" "$NNI_HOME/$id"/log/*.log || fail "no re-attach logged"
assert_dir_metrics "$id"
pass "16 jobs, one per trial (2 lost answers: PUT again, found); no metric lost or doubled"
nnictl stop "$id" > /dev/null

# a job of the trial's name with another body, its record (.nni/amljob) lost: re-attached
export TRIAL_SLEEP=1.5
port=$(free_port)
aml_experiment "$WORK/dup" 1 1 7
aml_create "$WORK/dup" "$port"
id=$AML_ID
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 1 30 "a trial RUNNING"
tid=$(sql "SELECT id FROM trial WHERE experiment_id='$id'")
wait_file "$AML_BLOB/$id/$tid/.nni/amljob" 10 "no .nni/amljob"
# (the job runs the trial's command before its body is changed below)
wait_file -s "$AML_BLOB/$id/$tid/written.log" 10 "the trial's job did not start its command"
kill9_manager "$id" aml
rm "$AML_BLOB/$id/$tid/.nni/amljob"   # as if the manager died before writing it
name=nni_exp_${id}_trial_${tid}
curl -sf -X POST -d '{"command": "sleep 1 # another manager"}' "$AML_URL/_test/job/$name" > /dev/null ||
    fail "cannot change the job's body"
created=$(aml_stat 's["created"]')
nnictl resume "$id" --port "$port" > "$WORK/resume2.out" 2>&1 || { cat "$WORK/resume2.out"; fail "resume failed"; }
wait_status "$id" DONE 60
[ "$(sql "SELECT status || ' ' || attempt FROM trial WHERE id='$tid'")" = "SUCCEEDED 1" ] ||
    fail "the trial: $(sql "SELECT status, attempt, message FROM trial WHERE id='$tid'")"
[ "$(aml_stat 's["created"]')" = "$created" ] || fail "a job was created on resume"
[ "$(cat "$AML_BLOB/$id/$tid/.nni/amljob")" = "$name" ] || fail "the job's record was not written again"
[ "$(aml_stat 's["refused"].get("UserError", 0)')" = 1 ] || fail "not one PUT refused (already exists): $(aml_stat 's["refused"]')"
assert_dir_metrics "$id"
pass "a job of the trial's name that differs (400 already exists): found by GET and re-attached, none created"
nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "89c-aml-resume: passed"
