#!/usr/bin/env bash
# maxExperimentDuration: no trial starts once the running time is used up, running
# trials are not killed (as NNI), and the experiment ends DONE; execDuration counts.
# maxTrialNumber and the trials the scheduler queues ahead of the free slots (Random):
# NNI would not have submitted those yet, so a customized trial takes the place of one,
# a lowered maxTrialNumber cancels them, and cancelled ones do not count when it is
# raised again.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
metrics_experiment "$WORK/exp" 2 1000 5
sed -i 's/^maxTrialNumber: 1000$/maxExperimentDuration: 3s/' "$WORK/exp/config.yml"
export TRIAL_STEPS=2 TRIAL_SLEEP=0.7
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
wait_status "$id" DONE 60
n=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")
[ "$n" -ge 2 ] && [ "$n" -le 10 ] || fail "$n trials in a 3 s budget of 1.4 s trials at concurrency 2"
# trials that started all succeeded (none killed); queued ones that never started were
# cancelled, none started after the budget was used up
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND start_time IS NOT NULL AND status != 'SUCCEEDED'")" = 0 ] ||
    fail "a running trial was killed or failed at the end of the budget"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND start_time IS NULL AND status != 'SYS_CANCELED'")" = 0 ] ||
    fail "a trial that never started did not end SYS_CANCELED"
last_start=$(sql "SELECT max(start_time) - (SELECT start_time FROM experiment WHERE id='$id') FROM trial WHERE experiment_id='$id'")
[ "$last_start" -le 3800 ] || fail "a trial started ${last_start} ms after the start of a 3 s budget"
exec_s=$(curl -sf "http://127.0.0.1:$port/api/v1/nni/experiment" | $PY -c 'import json,sys; print(json.load(sys.stdin)["execDuration"])')
[ "$exec_s" -ge 3 ] || fail "execDuration $exec_s < 3"
pass "maxExperimentDuration: $n trials, none killed, DONE, execDuration ${exec_s}s"
nnictl stop "$id" > /dev/null

# --- maxTrialNumber and the trials queued ahead ---
export TRIAL_STEPS=3 TRIAL_SLEEP=1
metrics_experiment "$WORK/q" 1 3 6
nnictl create --config "$WORK/q/config.yml" --port "$port" > "$WORK/q.out"
q=$(exp_id_of "$WORK/q.out")
WAIT_STEP=0.05 wait_until 5 sql_is "SELECT sum(status='RUNNING') || ' ' || sum(status='WAITING') FROM trial WHERE experiment_id='$q'" "1 2" ||
    fail "q: '$SQL_GOT' trials running and queued, wanted '1 2'"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$q'")" = 3 ] || fail "q: not 1 running + 2 queued"
API="http://127.0.0.1:$port/api/v1/nni"
out=$(curl -s -X POST -d '{"x": 77}' "$API/trial-jobs")
case "$out" in *'"sequenceId":2'*) ;; *) fail "a customized trial with the budget held by queued trials: $out" ;; esac
wait_status "$q" DONE 60
[ "$(sql "SELECT group_concat(parameter_source || ':' || status, ' ') FROM (SELECT * FROM trial WHERE experiment_id='$q' ORDER BY sequence)")" = \
  "algorithm:SUCCEEDED algorithm:SUCCEEDED customized:SUCCEEDED" ] ||
    fail "q: $(sql "SELECT sequence, parameter_source, status, parameters FROM trial WHERE experiment_id='$q'")"
[ "$(sql "SELECT parameters->>'x' FROM trial WHERE experiment_id='$q' AND parameter_source='customized'")" = 77 ] || fail "q: customized parameters"
nnictl stop "$q" > /dev/null
pass "a customized trial takes the place of a queued one: 3 trials in a budget of 3, as NNI"

metrics_experiment "$WORK/l" 1 10 7
nnictl create --config "$WORK/l/config.yml" --port "$port" > "$WORK/l.out"
l=$(exp_id_of "$WORK/l.out")
WAIT_STEP=0.05 wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$l'" 3 5 "l: 3 trials queued"
nnictl update trialnum "$l" --value 1 > /dev/null
wait_status "$l" DONE 60
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$l' AND start_time IS NOT NULL")" = 1 ] ||
    fail "l: $(sql "SELECT count(*) FROM trial WHERE experiment_id='$l' AND start_time IS NOT NULL") trials ran with maxTrialNumber 1"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$l' AND status='SYS_CANCELED' AND start_time IS NULL")" = 2 ] ||
    fail "l: the queued trials were not cancelled"
nnictl update trialnum "$l" --value 3 > /dev/null
wait_until 20 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$l' AND status='SUCCEEDED'" 3 ||
    fail "l: raised to 3, $SQL_GOT trials ran"
nnictl stop "$l" > /dev/null
pass "maxTrialNumber lowered: queued trials cancelled; raised again: they do not count"
assert_no_leftovers
echo "27-budgets: passed"
