#!/usr/bin/env bash
# maxExperimentDuration: no trial starts once the running time is used up, running
# trials are not killed (as NNI), and the experiment ends DONE; execDuration counts.
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
assert_no_leftovers
echo "27-budgets: passed"
