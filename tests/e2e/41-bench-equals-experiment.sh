#!/usr/bin/env bash
# bench/tuner_quality calls the tuners in-process; its figures stand for the product only
# if a real experiment (trialConcurrency 1, the same seed) runs exactly the same trials.
# For several tuners and spaces (uniform, loguniform, randint, choice) this runs both and
# compares trial by trial: the parameters bit for bit and the values reported.
. "$(dirname "$0")/lib.sh"

TQ="$(dirname "$TRIALQ_BIN")/bench/tuner_quality"
[ -x "$TQ" ] || fail "no $TQ (built with the project)"
port=$(free_port)
mkdir -p "$WORK/code"
cp "$TRIALQ_SRC/tests/e2e/trials/bench_objective.py" "$WORK/code/"

branin='{"x1": {"_type": "uniform", "_value": [-5, 10]}, "x2": {"_type": "uniform", "_value": [0, 15]}}'
mixed5='{"x1": {"_type": "uniform", "_value": [-5, 10]}, "x2": {"_type": "uniform", "_value": [0, 15]},
 "lr": {"_type": "loguniform", "_value": [0.0001, 0.1]}, "k": {"_type": "randint", "_value": [1, 8]},
 "act": {"_type": "choice", "_value": ["relu", "tanh", "sigmoid", "gelu"]}}'

# case <tuner> <objective> <space json> <classArgs json (with seed)> <budget>
case_() {
    local tuner=$1 objective=$2 space=$3 args=$4 budget=$5 name="$1-$2"
    echo "$space" > "$WORK/$name.space.json"
    "$TQ" --trace "$tuner" --space "$WORK/$name.space.json" --objective "$objective" \
        --seed "$($PY -c "import json,sys; print(json.loads(sys.argv[1])['seed'])" "$args")" \
        --budget "$budget" --args "$args" > "$WORK/$name.trace" || fail "$name: tuner_quality --trace failed"
    [ "$(wc -l < "$WORK/$name.trace")" = "$budget" ] || fail "$name: trace has not $budget trials"
    write_config "$WORK/code/$name.yml" searchSpaceFile="$name.space.json" \
        trialCommand="/usr/bin/python3 bench_objective.py $objective" maxTrialNumber="$budget" \
        tuner="{name: $tuner, classArgs: $args}"
    cp "$WORK/$name.space.json" "$WORK/code/"
    nnictl create --config "$WORK/code/$name.yml" --port "$port" > "$WORK/$name.out" || fail "$name: create failed"
    local id
    id=$(exp_id_of "$WORK/$name.out")
    wait_status "$id" DONE 300
    nnictl stop "$id" > /dev/null
    $PY - "$DB" "$id" "$WORK/$name.trace" "$name" <<'PY' || fail "$name: the experiment differs from the in-process run"
import json, sqlite3, sys
db, exp, trace, name = sys.argv[1:]
rows = sqlite3.connect(db).execute(
    "SELECT sequence, status, parameters, final_metric_json FROM trial WHERE experiment_id = ? ORDER BY sequence",
    (exp,)).fetchall()
lines = [l.rstrip("\n").split("\t") for l in open(trace)]
if len(rows) != len(lines):
    sys.exit("%s: %d trials in the experiment, %d in the trace" % (name, len(rows), len(lines)))
best_e = best_t = float("inf")
for (seq, status, params, final), (idx, value, tparams) in zip(rows, lines):
    if status != "SUCCEEDED" or final is None:
        sys.exit("%s: trial %d is %s without a final metric" % (name, seq, status))
    if json.loads(params) != json.loads(tparams):
        sys.exit("%s: trial %d ran %s, in-process suggestion was %s" % (name, seq, params, tparams))
    fe, ft = json.loads(final), float(value)
    if fe != ft:
        sys.exit("%s: trial %d reported %r, in-process value %r" % (name, seq, fe, ft))
    best_e, best_t = min(best_e, fe), min(best_t, ft)
print("ok: %s: %d trials identical, best %.6g in both" % (name, len(rows), best_e))
PY
}

case_ TPE mixed5 "$mixed5" '{"seed": 7, "optimize_mode": "minimize", "tpe_args": {"n_startup_jobs": 6}}' 24
case_ TPE branin "$branin" '{"seed": 3, "optimize_mode": "minimize", "tpe_args": {"n_startup_jobs": 5}}' 20
case_ Anneal mixed5 "$mixed5" '{"seed": 11, "optimize_mode": "minimize"}' 16
case_ Evolution mixed5 "$mixed5" '{"seed": 5, "optimize_mode": "minimize", "population_size": 6}' 16
case_ GP mixed5 "$mixed5" '{"seed": 2, "optimize_mode": "minimize", "cold_start_num": 4}' 12
case_ Random mixed5 "$mixed5" '{"seed": 9}' 10
assert_no_leftovers
pass "in-process tuner runs equal real experiments at trialConcurrency 1"
