#!/usr/bin/env bash
# NNI's TensorBoard in the web UI's trial table, in headless chromium
# (tests/webui/tensorboard.js), with tests/e2e/fake/tensorboard (a stand-in for
# TensorBoard 2.x) first on the api's PATH. An experiment under a URL prefix whose
# trials write event files into $NNI_OUTPUT_DIR/tensorboard (and .../eval): two trials
# selected, TensorBoard: the task RUNNING with a link whose TensorBoard lists exactly
# those trials' runs; the same trials again, Stop, Restart, a second task, Stop all.
# An experiment whose api has no tensorboard on its PATH: the api's "tensorboard is not
# installed" shown. The first experiment under `nnictl view`: read-only, and
# TensorBoard still starts. No console errors, 390 px, keyboard; no process left.
# Screenshots: <ctest's working dir>/webui-artifacts/64-webui-tensorboard/*.png
# (WEBUI_ARTIFACTS overrides).
. "$(dirname "$0")/lib.sh"

webui_artifacts   # sets ART
webui_setup   # sets UI; chromium, node and playwright-core
FAKE_DIR="$TRIALQ_SRC/tests/e2e/fake"

# A: four trials, each with two runs (tensorboard/ and tensorboard/eval), where NNI's
# documentation has trials write their event files
mkdir -p "$WORK/a"
cat > "$WORK/a/trial.sh" <<'SH'
mkdir -p "$NNI_OUTPUT_DIR/tensorboard/eval"
echo events > "$NNI_OUTPUT_DIR/tensorboard/events.out.tfevents.1700000000.host"
echo events > "$NNI_OUTPUT_DIR/tensorboard/eval/events.out.tfevents.1700000001.host"
SH
write_config "$WORK/a/config.yml" experimentName=webui-tensorboard searchSpace='{x: {_type: choice, _value: [1, 2, 3, 4]}}' \
    trialConcurrency=4 maxTrialNumber= tuner='{name: GridSearch}'
portA=$(free_port)
PATH="$FAKE_DIR:$PATH" nnictl create --config "$WORK/a/config.yml" --port "$portA" --url_prefix tb/exp > "$WORK/a.out" ||
    { cat "$WORK/a.out"; fail "create A"; }
idA=$(exp_id_of "$WORK/a.out")
[ -n "$idA" ] || fail "no experiment id printed for A"

# B: no tensorboard on its api's PATH (every directory holding one left out)
no_tb_path=
IFS=: read -ra dirs <<< "$PATH"
for d in "${dirs[@]}"; do [ -x "$d/tensorboard" ] || no_tb_path=${no_tb_path:+$no_tb_path:}$d; done
metrics_experiment "$WORK/b" 1 1 5
portB=$(free_port)
PATH="$no_tb_path" nnictl create --config "$WORK/b/config.yml" --port "$portB" > "$WORK/b.out" ||
    { cat "$WORK/b.out"; fail "create B"; }
idB=$(exp_id_of "$WORK/b.out")
wait_status "$idA" DONE 60
wait_status "$idB" DONE 60

node "$UI/tensorboard.js" live "http://127.0.0.1:$portA/tb/exp/" "$DB" "$idA" "$ART" "http://127.0.0.1:$portB/" "$idB" ||
    fail "browser test (tensorboard) failed; screenshots in $ART"
pass "TensorBoard from the trial table: start, link, runs, stop, restart, stop all; the missing-tensorboard message"

nnictl stop "$idB" > /dev/null
nnictl stop "$idA" > /dev/null
stA=$(sql "SELECT status FROM experiment WHERE id='$idA'")
vport=$(free_port)
PATH="$FAKE_DIR:$PATH" nnictl view "$idA" --port "$vport" > "$WORK/view.out" || { cat "$WORK/view.out"; fail "nnictl view"; }
wait_http "http://127.0.0.1:$vport/tb/exp/api/v1/nni/check-status" 10 "" "nnictl view"
node "$UI/tensorboard.js" view "http://127.0.0.1:$vport/tb/exp/" "$DB" "$idA" "$ART" ||
    fail "browser test (tensorboard, view) failed; screenshots in $ART"
pass "TensorBoard under nnictl view"
nnictl stop "$idA" > /dev/null
[ "$(sql "SELECT status FROM experiment WHERE id='$idA'")" = "$stA" ] || fail "view changed the stored status"
assert_no_leftovers
