#!/usr/bin/env bash
# Medianstop decides on intermediate results: once good trials have completed, a trial
# whose results stay below their median is stopped early and ends EARLY_STOPPED.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/curve.sh" "$WORK/exp/"
write_config "$WORK/exp/config.yml" searchSpace='{q: {_type: choice, _value: [8, 9, 1, 0.5]}}' trialCommand='sh curve.sh' \
    maxTrialNumber= tuner='{name: GridSearch}' assessor='{name: Medianstop, classArgs: {optimize_mode: maximize, start_step: 2}}'
export STEPS=8 STEP_SLEEP=0.3
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
wait_status "$id" DONE 120
st() { sql "SELECT status FROM trial WHERE experiment_id='$id' AND parameters = '{\"q\":$1}'"; }
[ "$(st 9)" = SUCCEEDED ] && [ "$(st 8)" = SUCCEEDED ] || fail "good trials: 9=$(st 9) 8=$(st 8)"
[ "$(st 1)" = EARLY_STOPPED ] && [ "$(st 0.5)" = EARLY_STOPPED ] || fail "bad trials: 1=$(st 1) 0.5=$(st 0.5)"
n=$(sql "SELECT max(c) FROM (SELECT count(*) c FROM metric m JOIN trial t ON t.id = m.trial_id
         WHERE t.experiment_id='$id' AND t.status='EARLY_STOPPED' AND m.type='PERIODICAL' GROUP BY t.id)")
[ "$n" -lt 8 ] || fail "an early-stopped trial still reported all 8 results"
sql "SELECT reason FROM event WHERE experiment_id='$id' AND reason LIKE 'Medianstop%'" | grep -q "early stop" ||
    fail "no event names the assessor"
pass "Medianstop stopped the two bad trials early (at most $n of 8 results)"

# a wrong assessor config is refused at create, naming the key
sed -i 's/start_step: 2/start_step: -1/' "$WORK/exp/config.yml"
out=$(nnictl create --config "$WORK/exp/config.yml" --port "$port" 2>&1 || true)
echo "$out" | grep -q "assessor.classArgs.start_step" || fail "bad start_step: $out"
nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "45-assessor: passed"
