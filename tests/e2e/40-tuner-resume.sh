#!/usr/bin/env bash
# A TPE search, a Metis one and an aging-evolution one continue the same after the api
# is killed and the experiment resumed: the parameter sequence equals that of an
# uninterrupted run with the same seed.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/quadratic.py" "$WORK/exp/"
cat > "$WORK/exp/config.yml" <<YML
searchSpace:
  x: {_type: uniform, _value: [-2, 2]}
  y: {_type: quniform, _value: [-3, 3, 0.5]}
  lr: {_type: loguniform, _value: [0.0001, 0.1]}
  layer:
    _type: choice
    _value:
      - {_name: a}
      - {_name: b, k: {_type: randint, _value: [1, 5]}}
trialCommand: /usr/bin/python3 quadratic.py
trialCodeDirectory: .
trialConcurrency: 1
maxTrialNumber: 24
tuner:
  name: TPE
  classArgs: {seed: 17, optimize_mode: minimize, tpe_args: {n_startup_jobs: 5}}
trainingService: {platform: local}
YML

params() { sql "SELECT parameters FROM trial WHERE experiment_id='$1' ORDER BY sequence"; }

# same_after_kills CONFIG N KILL_AT...: a run of CONFIG to its N trials, and another with
# kill -9 of the api once KILL_AT trials have succeeded (each), resumed each time, give the
# same parameter sequence; sets A to the uninterrupted run's id
same_after_kills() {
    local config=$1 n=$2 b
    shift 2
    nnictl create --config "$config" --port "$port" > "$WORK/a.out"
    A=$(exp_id_of "$WORK/a.out")
    wait_status "$A" DONE 180
    nnictl stop "$A" > /dev/null
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$A' AND status='SUCCEEDED'")" = "$n" ] ||
        fail "$config, run A: not $n SUCCEEDED"
    nnictl create --config "$config" --port "$port" > "$WORK/b.out"
    b=$(exp_id_of "$WORK/b.out")
    kill_api_at "$b" "$port" "$@"
    wait_status "$b" DONE 180
    nnictl stop "$b" > /dev/null
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$b' AND status='SUCCEEDED'")" = "$n" ] ||
        fail "$config, run B: not $n SUCCEEDED"
    if [ "$(params "$A")" != "$(params "$b")" ]; then
        diff <(params "$A") <(params "$b") | head -20
        fail "$config: the parameter sequence changed across kill -9 and resume"
    fi
}

# TPE: uninterrupted, and interrupted by two api kills (once mid-trial)
same_after_kills "$WORK/exp/config.yml" 24 6 14
a=$A
pass "TPE: same 24 suggestions with and without two api kills"

# and TPE learned something: its best beats the median of its first 5 (random) trials
best=$(sql "SELECT min(final_metric) FROM trial WHERE experiment_id='$a'")
rand=$(sql "SELECT final_metric FROM trial WHERE experiment_id='$a' AND sequence < 5 ORDER BY final_metric LIMIT 1 OFFSET 2")
$PY -c "import sys; sys.exit(0 if $best < $rand else 1)" || fail "TPE best $best not below random median $rand"
# imported results reach the tuner (NNI's import-data / FD): with 12 imported records
# TPE is past its random start-up, so its suggestions after the import differ from run A's
cat > "$WORK/import.json" <<JSON
[$(for i in $(seq 0 11); do
    [ "$i" -gt 0 ] && printf ','
    printf '{"parameter": {"x": 0.%d, "y": -1.0, "lr": 0.01, "layer": {"_name": "a"}}, "value": %d.5}' "$i" "$i"
done)]
JSON
sed -i 's/^maxTrialNumber: 24$/maxTrialNumber: 6/' "$WORK/exp/config.yml"
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/c.out"
c=$(exp_id_of "$WORK/c.out")
nnictl experiment import "$c" -f "$WORK/import.json" > /dev/null
wait_status "$c" DONE 120
nnictl stop "$c" > /dev/null
[ "$(sql "SELECT count(*) FROM event WHERE experiment_id='$c' AND entity='import'")" = 1 ] || fail "import not stored"
same=$(sql "SELECT count(*) FROM trial ta JOIN trial tc ON tc.sequence = ta.sequence
            WHERE ta.experiment_id='$a' AND tc.experiment_id='$c' AND ta.parameters = tc.parameters")
[ "$same" -lt 6 ] || fail "imported results did not change TPE's suggestions"
pass "imported results reach TPE ($same of 6 suggestions unchanged)"
# Metis (tuners/metis.c): past its cold start, each suggestion is a GP over the history
# the api rebuilds from the database
cat > "$WORK/exp/metis.yml" <<YML
searchSpace:
  x: {_type: uniform, _value: [-2, 2]}
  y: {_type: quniform, _value: [-3, 3, 0.5]}
  lr: {_type: loguniform, _value: [0.0001, 0.1]}
  k: {_type: randint, _value: [1, 5]}
trialCommand: /usr/bin/python3 quadratic.py
trialCodeDirectory: .
trialConcurrency: 1
maxTrialNumber: 16
tuner:
  name: MetisTuner
  classArgs: {seed: 5, optimize_mode: minimize, cold_start_num: 4}
trainingService: {platform: local}
YML
same_after_kills "$WORK/exp/metis.yml" 16 3 9
pass "Metis: same 16 suggestions with and without two api kills (before and after its cold start)"
# RegularizedEvolutionTuner (tuners/regevo.c): aging evolution replayed from the history
sed -e 's/name: MetisTuner/name: RegularizedEvolutionTuner/' \
    -e 's/classArgs: .*/classArgs: {seed: 9, optimize_mode: minimize, population_size: 5, sample_size: 3}/' \
    "$WORK/exp/metis.yml" > "$WORK/exp/regevo.yml"
same_after_kills "$WORK/exp/regevo.yml" 16 3 9
pass "RegularizedEvolutionTuner: same 16 suggestions with and without two api kills"
assert_no_leftovers
echo "40-tuner-resume: passed"
