#!/usr/bin/env bash
# The web UI's NNI features beyond the two pages, in headless chromium
# (tests/webui/more.js): the All experiments page (three experiments of the database:
# filters, search, the link to another running experiment's UI), Add/Remove columns
# kept in localStorage, Compare, the Summary and log downloads, and a customized trial;
# each against the database, with no console error, at 390 px and by keyboard.
# Screenshots: <ctest's working dir>/webui-artifacts/62-webui-more/*.png
# (WEBUI_ARTIFACTS overrides).
. "$(dirname "$0")/lib.sh"

webui_artifacts   # sets ART
webui_setup   # sets UI; chromium, node and playwright-core

# A: a grid of 6 trials with dict final metrics ({"default", "loss"}) and 3
# intermediate results each; x=3 with sgd fails (a trial with a message). GridSearch
# runs out of points long before maxTrialNumber, so a customized trial still fits.
mkdir -p "$WORK/a"
cat > "$WORK/a/trial.py" <<'PY'
import sys
import nni
p = nni.get_next_parameter()
x = p.get("x", 0)
for i in range(3):
    nni.report_intermediate_result(x * 10 + i)
if x == 3 and p.get("opt") == "sgd":
    sys.exit(4)
nni.report_final_result({"default": x * 1.5 + (0.25 if p.get("opt") == "adam" else 0), "loss": 10 - x})
PY
write_config "$WORK/a/config.yml" experimentName=webui-more-a \
    searchSpace='{x: {_type: randint, _value: [1, 4]}, opt: {_type: choice, _value: [sgd, adam]}}' \
    trialCommand='/usr/bin/python3 trial.py' trialConcurrency=3 maxTrialNumber=20 maxTrialRetries=0 tuner='{name: GridSearch}'
portA=$(free_port)
nnictl create --config "$WORK/a/config.yml" --port "$portA" > "$WORK/a.out" || { cat "$WORK/a.out"; fail "create A"; }
idA=$(exp_id_of "$WORK/a.out")
[ -n "$idA" ] || fail "no experiment id printed for A"

# B: another running experiment (its api stays up after DONE); C: a stopped one
metrics_experiment "$WORK/b" 1 1 5
sed -i '1i experimentName: webui-more-b' "$WORK/b/config.yml"
portB=$(free_port)
nnictl create --config "$WORK/b/config.yml" --port "$portB" > "$WORK/b.out" || { cat "$WORK/b.out"; fail "create B"; }
idB=$(exp_id_of "$WORK/b.out")
metrics_experiment "$WORK/c" 1 1 6
sed -i '1i experimentName: webui-more-c' "$WORK/c/config.yml"
portC=$(free_port)
nnictl create --config "$WORK/c/config.yml" --port "$portC" > "$WORK/c.out" || { cat "$WORK/c.out"; fail "create C"; }
idC=$(exp_id_of "$WORK/c.out")
nnictl stop "$idC" > /dev/null || fail "stop C"
wait_status "$idA" DONE 120
wait_status "$idB" DONE 120
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$idA' AND status='FAILED'")" = 1 ] || fail "A: no failed trial"

node "$UI/more.js" "http://127.0.0.1:$portA/" "$DB" "$idA" "$ART" "$idB" "$idC" ||
    fail "browser test (more) failed; screenshots in $ART"
pass "all experiments, columns, compare, summary and log, customized trial in chromium"

nnictl stop "$idA" > /dev/null
nnictl stop "$idB" > /dev/null
assert_no_leftovers
