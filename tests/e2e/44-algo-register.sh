#!/usr/bin/env bash
# nnictl algo list | show | register | unregister, and configs that name a registered
# algorithm: NNI's registered_algorithms.yml in NNI's config dir ($NNI_CONFIG_DIR), read
# and written as NNI's nnictl does (PyYAML reads what trialq writes). A registered tuner
# and assessor named in a config run in the dispatcher process (tests/dispatcher stands
# in for the nni package) exactly as their className would; bad metas change nothing.
. "$(dirname "$0")/lib.sh"

export NNI_CONFIG_DIR="$WORK/nnicfg"
REG="$NNI_CONFIG_DIR/registered_algorithms.yml"
export PYTHONPATH="$TRIALQ_SRC/tests/dispatcher:$TRIALQ_SRC/tests/dispatcher/algos${PYTHONPATH:+:$PYTHONPATH}"
export TRIALQ_PYTHON=$PY PYTHONDONTWRITEBYTECODE=1
export STEPS=3 STEP_SLEEP=0.2
n() { rc=0; timeout 30 nnictl "$@" > "$WORK/out" 2>&1 || rc=$?; [ "$rc" != 124 ] || fail "nnictl $* hung"; }
has() { grep -q -- "$1" "$WORK/out" || { cat "$WORK/out" >&2; fail "expected '$1' from: nnictl ${*:2}"; }; }

# --- list: the built-in algorithms (trialq's, and NNI's Python-only ones), nothing registered yet
n algo list; [ "$rc" = 0 ] || fail "algo list: $(cat "$WORK/out")"
has "^TPE  *tuner  *trialq"; has "^Hyperband  *advisor"; has "^Medianstop  *assessor"
has "^SMAC  *tuner  *nni  *SMACTuner  *nni.algorithms.hpo.smac_tuner"
[ "$(wc -l < "$WORK/out")" = 20 ] || fail "algo list shows more than the built-ins: $(cat "$WORK/out")"
n algo show tpe; [ "$rc" = 0 ]; has "algoType: tuner"
pass "algo list / show: the built-in algorithms"

# --- register: a tuner and an assessor in one meta file (NNI's "algorithms:" form)
cat > "$WORK/meta.yml" <<'YML'
algorithms:
  - algoType: tuner
    builtinName: MyRecorder
    className: recorder.RecordingTuner
  - algoType: assessor
    builtinName: MyThreshold
    className: recorder.ThresholdAssessor
    classArgs: {start: 2}
YML
n algo register --meta_path "$WORK/meta.yml"; [ "$rc" = 0 ] || fail "register: $(cat "$WORK/out")"
has "Registered MyRecorder"; has "Registered MyThreshold"
# the file is NNI's: PyYAML reads the entries NNI's nnictl would find
$PY - "$REG" <<'PY' || fail "registered_algorithms.yml is not what NNI reads: $(cat "$REG")"
import sys, yaml
r = yaml.safe_load(open(sys.argv[1]))
assert r["tuners"] == [{"builtinName": "MyRecorder", "className": "recorder.RecordingTuner", "source": "user"}], r
assert r["assessors"] == [{"builtinName": "MyThreshold", "className": "recorder.ThresholdAssessor",
                           "classArgs": {"start": 2}, "source": "user"}], r
assert r["advisors"] == [], r
PY
n algo list; has "^MyRecorder  *tuner  *user  *RecordingTuner  *recorder$"; has "^MyThreshold  *assessor  *user"
n algo show myrecorder; [ "$rc" = 0 ]; has "className: recorder.RecordingTuner"
pass "algo register: NNI's file, read back by PyYAML; list and show name them"

# --- bad metas: refused naming what is wrong, the file unchanged
cp "$REG" "$WORK/reg.before"
bad_meta() { # message-part meta-yaml
    printf '%s\n' "$2" > "$WORK/bad.yml"
    n algo register -m "$WORK/bad.yml"; [ "$rc" != 0 ] && has "$1" || fail "bad meta accepted: $2"
    cmp -s "$REG" "$WORK/reg.before" || fail "a refused meta changed the registry"
}
bad_meta "MyRecorder is registered already" "{algoType: tuner, builtinName: myrecorder, className: recorder.RecordingTuner}"
bad_meta "TPE is a built-in algorithm of trialq" "{algoType: tuner, builtinName: TPE, className: recorder.RecordingTuner}"
bad_meta "MetisTuner is a built-in algorithm" "{algoType: tuner, builtinName: MetisTuner, className: recorder.RecordingTuner}"
bad_meta "algoType: must be tuner, assessor or advisor (got 'tunr')" "{algoType: tunr, builtinName: X, className: a.B}"
bad_meta "className: required" "{algoType: tuner, builtinName: X}"
bad_meta "cannot import recorder.NoSuchTuner" "{algoType: tuner, builtinName: X, className: recorder.NoSuchTuner}"
bad_meta "cannot import nosuchmodule.T with $PY: ModuleNotFoundError" "{algoType: tuner, builtinName: X, className: nosuchmodule.T}"
bad_meta "algorithms\\[1\\].builtinName: required" "{algorithms: [{algoType: tuner, builtinName: Y, className: recorder.RecordingTuner}, {algoType: tuner, className: a.B}]}"
bad_meta "classNme: unknown key" "{algoType: tuner, builtinName: X, classNme: a.B}"
bad_meta "algorithms: empty; nothing to register" "{algorithms: []}"
# an import that hangs does not hang nnictl (60 s; TRIALQ_IMPORT_TIMEOUT for the test)
mkdir -p "$WORK/slow" && echo 'import time; time.sleep(30)' > "$WORK/slow/slowmod.py"
PYTHONPATH="$WORK/slow:$PYTHONPATH" TRIALQ_IMPORT_TIMEOUT=1 bad_meta "cannot import slowmod.T with $PY: no answer in 1 s" \
    "{algoType: tuner, builtinName: X, className: slowmod.T}"
n algo unregister TPE; [ "$rc" != 0 ]; has "cannot unregister TPE: it is a built-in algorithm"
pass "bad metas refused (duplicate, built-in name, type, import, unknown key), nothing written"

# --- a config naming them runs their classes in the dispatcher process
port=$(free_port)
mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/curve.sh" "$WORK/exp/"
write_config "$WORK/exp/config.yml" searchSpace='{q: {_type: choice, _value: [9, 1, 8]}}' trialCommand='sh curve.sh' \
    trialConcurrency=2 maxTrialNumber=4 tuner="{name: myrecorder, classArgs: {out: $WORK/exp/tuner.jsonl}}" \
    assessor="{name: MyThreshold, classArgs: {out: $WORK/exp/assessor.jsonl, threshold: 5}}"
n create --config "$WORK/exp/config.yml" --dry-run; [ "$rc" = 0 ] || fail "dry-run: $(cat "$WORK/out")"
has '"className":	"recorder.RecordingTuner"'; has '"start":	2'
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
wait_status "$id" DONE 90
# the trials ran what the registered tuner proposed ("w<parameter id>" tags), and the
# registered assessor (threshold 5, start 2 from the registry) stopped the q < 5 trial
[ "$(sql "SELECT group_concat(parameters->>'tag', ' ') FROM (SELECT parameters FROM trial WHERE experiment_id='$id' ORDER BY parameter_id)")" = "w0 w1 w2 w3" ] ||
    fail "trials did not run the registered tuner's parameters: $(sql "SELECT parameters FROM trial WHERE experiment_id='$id'")"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='EARLY_STOPPED'")" = 1 ] &&
    [ "$(sql "SELECT status FROM trial WHERE experiment_id='$id' AND parameters->>'q' = 1")" = EARLY_STOPPED ] ||
    fail "the registered assessor did not stop the q=1 trial: $(sql "SELECT parameters, status FROM trial WHERE experiment_id='$id'")"
grep -q '"event": "generate"' "$WORK/exp/tuner.jsonl" || fail "the registered tuner recorded nothing"
nnictl stop "$id" > /dev/null 2>&1 || true
pass "a config naming registered algorithms runs their classes (tuner and assessor)"

# --- unregister: the name is gone, and a config naming it is refused as unknown
n algo unreg MyRecorder; [ "$rc" = 0 ]; has "MyRecorder unregistered"
n algo list; grep -q "^MyRecorder" "$WORK/out" && fail "unregistered algorithm still listed"
has "^MyThreshold"
n create --config "$WORK/exp/config.yml" --dry-run; [ "$rc" != 0 ]
has "unknown tuner 'myrecorder' (known: .*; and those of nnictl algo list)"
n algo unregister MyRecorder; [ "$rc" != 0 ]; has "algorithm MyRecorder is not registered"
assert_no_leftovers
pass "algo unregister"
echo "44-algo-register: passed"
