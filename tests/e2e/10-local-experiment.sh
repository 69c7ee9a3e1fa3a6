#!/usr/bin/env bash
# 50 trials at concurrency 4 on the local platform: all SUCCEEDED, and the metric rows
# are exactly what the trials wrote (no loss, no duplicate).
. "$(dirname "$0")/lib.sh"

port=$(free_port)
mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/exp/"
write_config "$WORK/exp/config.yml" experimentName=e2e-local trialCommand='sh metrics.sh' \
    searchSpace='{x: {_type: randint, _value: [0, 1000]}, lr: {_type: loguniform, _value: [0.0001, 0.1]}}' \
    trialConcurrency=4 maxTrialNumber=50 tuner='{name: Random, classArgs: {seed: 7}}'

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
cat "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || fail "no experiment id printed"
grep -q "http://127.0.0.1:$port" "$WORK/create.out" || fail "no URL printed"

# the REST API answers while it runs
curl -sf "http://127.0.0.1:$port/api/v1/nni/check-status" | grep -q '"status"' || fail "check-status"

wait_status "$id" DONE 120
pass "experiment reached DONE"

[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")" = 50 ] || fail "not 50 trials"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 50 ] ||
    { sql "SELECT id, status, message FROM trial WHERE experiment_id='$id' AND status != 'SUCCEEDED'"; fail "not all SUCCEEDED"; }
[ "$(sql "SELECT max(n) FROM (SELECT count(*) n FROM trial WHERE experiment_id='$id' GROUP BY status)")" = 50 ] || fail "statuses"
# concurrency was respected: never more than 4 trials RUNNING at once
maxrun=$(sql "WITH ev AS (SELECT time, CASE WHEN to_state='RUNNING' THEN 1 ELSE -1 END d FROM event
              WHERE experiment_id='$id' AND entity='trial' AND (to_state='RUNNING' OR (from_state='RUNNING' AND to_state!='RUNNING')))
              SELECT max(c) FROM (SELECT sum(d) OVER (ORDER BY time, d) c FROM ev)")
[ "$maxrun" -le 4 ] || fail "ran $maxrun trials at once with concurrency 4"
pass "50 SUCCEEDED, at most $maxrun at once"

# metrics in the database == what each trial wrote
assert_metrics_match "$id"
for dir in "$NNI_HOME/$id"/trials/*/; do
    tid=$(basename "$dir")
    x=$(sed -n 's/.*"x":\([0-9]*\).*/\1/p' "$dir/parameter.cfg")
    fm=$(sql "SELECT final_metric FROM trial WHERE id='$tid'")
    [ "${fm%.0}" = "$x" ] || fail "final metric of $tid is $fm, trial reported $x"
done
pass "metric rows equal what the trials wrote"

# the same parameters come from the same seed: parameter.cfg matches the row
n=$(sql "SELECT count(DISTINCT parameters) FROM trial WHERE experiment_id='$id'")
[ "$n" -ge 45 ] || fail "random parameters repeat too often ($n distinct of 50)"

# NNI-shaped REST payloads
curl -sf "http://127.0.0.1:$port/api/v1/nni/trial-jobs" > "$WORK/jobs.json"
$PY - "$WORK/jobs.json" <<'PY'
import json, sys
jobs = json.load(open(sys.argv[1]))
assert len(jobs) == 50, len(jobs)
for j in jobs:
    assert j["status"] == "SUCCEEDED"
    hp = json.loads(j["hyperParameters"][0])
    assert set(hp) >= {"parameter_id", "parameter_source", "parameters", "parameter_index"}, hp
    fm = j["finalMetricData"][0]
    assert json.loads(json.loads(fm["data"])) == hp["parameters"]["x"], (fm, hp)
print("trial-jobs payloads ok")
PY

nnictl trial ls "$id" --head 3 > "$WORK/head.json"
$PY -c "import json,sys; d=json.load(open('$WORK/head.json')); assert len(d)==3; print('trial ls --head ok')"
nnictl experiment list | grep -q "$id" || fail "experiment list does not show the running experiment"

nnictl stop "$id"
port_is_free "$port" || fail "port $port still busy after stop"
assert_no_leftovers
[ "$(sql "SELECT status FROM experiment WHERE id='$id'")" = DONE ] || fail "a DONE experiment changed status on stop"
nnictl experiment list --all | grep -q "$id" || fail "experiment list --all"

# --foreground (the quickstart's run): progress, the best trial, and no advice to stop
# an experiment that has ended by the time the command returns
sed -i 's/^maxTrialNumber: 50$/maxTrialNumber: 6/' "$WORK/exp/config.yml"
nnictl create --config "$WORK/exp/config.yml" --port "$port" --foreground > "$WORK/fg.out" 2>&1 ||
    { cat "$WORK/fg.out"; fail "create --foreground failed"; }
cat "$WORK/fg.out"
fg=$(exp_id_of "$WORK/fg.out")
[ "$(sql "SELECT status FROM experiment WHERE id='$fg'")" = DONE ] || fail "the foreground experiment is not DONE"
grep -q "DONE  trials done 6/6" "$WORK/fg.out" || fail "no final progress line"
grep -q "^Best trial: " "$WORK/fg.out" || fail "no best trial"
! grep -qi "stop" "$WORK/fg.out" || fail "a foreground run printed advice to stop it"
port_is_free "$port" || fail "port $port still busy after the foreground run"
pass "--foreground: progress and best trial, nothing about stopping"
echo "10-local-experiment: passed"
