#!/usr/bin/env bash
# NNI's Python-only built-ins and pip-installed customized tuners, run to the end:
# - tuner: {builtinTunerName: SMAC} (v1) runs NNI's class nni.algorithms.hpo.smac_tuner
#   .SMACTuner in the dispatcher process, imported as NNI's dispatcher imports it (a
#   stand-in at NNI's module path, tests/dispatcher, with its library in
#   tests/dispatcher/libs, on PYTHONPATH as pip would install them);
# - tuner: {className: ...} with no codeDirectory, the module found on the python's path,
#   and a search space NNI hands a customized tuner as written ({"q": [1, 100]}, which a
#   built-in refuses): the trials run what the class proposed.
. "$(dirname "$0")/lib.sh"

export PYTHONPATH="$TRIALQ_SRC/tests/dispatcher:$TRIALQ_SRC/tests/dispatcher/libs${PYTHONPATH:+:$PYTHONPATH}"
export TRIALQ_PYTHON=$PY PYTHONDONTWRITEBYTECODE=1 STEPS=1 STEP_SLEEP=0

# ---- SMAC by its v1 name ----
mkdir -p "$WORK/smac"
cp "$TRIALQ_SRC/tests/e2e/trials/curve.sh" "$WORK/smac/"
echo '{"q": {"_type": "uniform", "_value": [0, 10]}}' > "$WORK/smac/space.json"
cat > "$WORK/smac/config.yml" <<'YML'
authorName: test
experimentName: smac-v1
trialConcurrency: 2
maxTrialNum: 4
trainingServicePlatform: local
searchSpacePath: space.json
useAnnotation: false
tuner:
  builtinTunerName: SMAC
  classArgs: {optimize_mode: maximize}
trial: {command: sh curve.sh, codeDir: ., gpuNum: 0}
YML
nnictl create --config "$WORK/smac/config.yml" --port "$(free_port)" > "$WORK/smac.out" 2>&1
id=$(exp_id_of "$WORK/smac.out")
wait_status "$id" DONE 180
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 4 ] || fail "SMAC: 4 trials"
log="$NNI_HOME/$id/log/dispatcher.log"
grep -q 'stand-in nni.algorithms.hpo.smac_tuner.SMACTuner created with {"optimize_mode": "maximize"}' "$log" ||
    fail "SMAC: NNI's class was not loaded: $(cat "$log")"
# what the class proposed is what the trials ran, and their results reached it
for pid in 0 1 2 3; do
    want=$(sed -n "s/.*stand-in SMACTuner: generate $pid \(.*\)\$/\1/p" "$log")
    got=$(sql "SELECT parameters FROM trial WHERE experiment_id='$id' AND parameter_id=$pid")
    $PY -c 'import json,sys; assert json.loads(sys.argv[1]) == json.loads(sys.argv[2]), sys.argv[1:]' "$want" "$got" ||
        fail "SMAC: trial $pid ran other parameters"
done
# the process logs a result a moment after the rows say DONE
smac_results() { [ "$(grep -c 'stand-in SMACTuner: result' "$log")" = 4 ]; }
wait_until 10 smac_results || fail "SMAC: results did not reach the class"
nnictl experiment show "$id" | grep -q 'nni.algorithms.hpo.smac_tuner.SMACTuner' || fail "SMAC: experiment show"
pass "SMAC (v1 builtinTunerName) ran NNI's class in the dispatcher: 4 trials, results back"

# ---- className of an installed module, no codeDirectory, a search space only it reads ----
mkdir -p "$WORK/naive"
cp "$TRIALQ_SRC/tests/e2e/trials/curve.sh" "$WORK/naive/"
cat > "$WORK/naive/config.yml" <<'YML'
searchSpace: {"q": [1, 100]}
trialCommand: sh curve.sh
trialConcurrency: 1
maxTrialNumber: 3
tuner:
  className: nni.algorithms.hpo.dngo_tuner.DNGOTuner
trainingService: {platform: local}
YML
nnictl create --config "$WORK/naive/config.yml" --port "$(free_port)" > "$WORK/naive.out" 2>&1
id=$(exp_id_of "$WORK/naive.out")
wait_status "$id" DONE 180
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'
          AND parameters->>'q' BETWEEN 1 AND 100")" = 3 ] || fail "naive: 3 trials with q in [1, 100]"
grep -q 'stand-in DNGOTuner: search space {"q": \[1, 100\]}' "$NNI_HOME/$id/log/dispatcher.log" ||
    fail "naive: the space did not reach the class as written"
# an update of the space is not validated for it either; the class gets it (SS)
echo '{"q": [5, 6]}' > "$WORK/naive/space2.json"
nnictl update searchspace "$id" --filename "$WORK/naive/space2.json" > "$WORK/update.out" 2>&1 ||
    fail "naive: update searchspace refused: $(cat "$WORK/update.out")"
wait_until 10 grep -q 'stand-in DNGOTuner: search space {"q": \[5, 6\]}' "$NNI_HOME/$id/log/dispatcher.log" ||
    fail "naive: the updated space did not reach the class"
pass "className without codeDirectory from the python's path, search space {\"q\": [1, 100]} as written: 3 trials"
