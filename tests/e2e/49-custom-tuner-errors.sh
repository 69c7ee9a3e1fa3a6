#!/usr/bin/env bash
# Customized algorithms, the rest of the protocol and the ways it fails: a tuner that
# raises (ER with the traceback), one that cannot start (a crash: its stderr is the
# error), one that never answers and one that never connects (deadlines: no hang), an
# advisor with its own string parameter ids, search-space updates (SS) and imported data
# (FD) reaching the tuner, a customized assessor beside a built-in tuner, and config
# errors at create that name the key. Uses the stand-in nni package of tests/dispatcher.
. "$(dirname "$0")/lib.sh"

export PYTHONPATH="$TRIALQ_SRC/tests/dispatcher${PYTHONPATH:+:$PYTHONPATH}"
export TRIALQ_PYTHON=$PY PYTHONDONTWRITEBYTECODE=1 # nothing written into the source tree
ALGOS="$TRIALQ_SRC/tests/dispatcher/algos"
port=$(free_port)

# config <dir> <channel> <tuner section> [assessor section]: q from a choice, trials
# sleep.sh reports q after SLEEP seconds
config() {
    mkdir -p "$1"
    cat > "$1/trial.sh" <<'SH'
q=$(sed -n 's/.*"q": *\([-0-9.]*\).*/\1/p' "$NNI_SYS_DIR/parameter.cfg")
pid=$(sed -n 's/.*"parameter_id": *\("[^"]*"\|[0-9]*\).*/\1/p' "$NNI_SYS_DIR/parameter.cfg")
i=0
while [ $i -lt 3 ]; do
    printf "NNISDK_MEb'{\"parameter_id\":%s,\"trial_job_id\":\"%s\",\"type\":\"PERIODICAL\",\"sequence\":%d,\"value\":\"%s\"}'\n" "$pid" "$NNI_TRIAL_JOB_ID" $i "$q"
    sleep "${SLEEP:-0.2}"
    i=$((i + 1))
done
printf "NNISDK_MEb'{\"parameter_id\":%s,\"trial_job_id\":\"%s\",\"type\":\"FINAL\",\"sequence\":0,\"value\":\"%s\"}'\n" "$pid" "$NNI_TRIAL_JOB_ID" "$q"
SH
    write_config "$1/config.yml" searchSpace='{q: {_type: choice, _value: [9, 1, 8, 0.5]}}' maxTrialNumber="${MAXT:-4}" \
        tunerCommandChannel="$2" tuner="$3" assessor="${4:-}"
}
# trial_ends FILE N: the tuner's record FILE holds at least N trial ends
trial_ends() { [ "$(grep -c '"trial_end"' "$1")" -ge "$2" ]; }

errors_of() { curl -sf "http://127.0.0.1:$port/api/v1/nni/check-status"; }

# ---- a tuner that raises: ER with the traceback -> ERROR, visible in status and REST ----
config "$WORK/raise" websocket "{codeDirectory: $ALGOS, className: recorder.RaisingTuner, classArgs: {out: $WORK/raise/t.jsonl}}"
nnictl create --config "$WORK/raise/config.yml" --port "$port" > "$WORK/raise.out"
id=$(exp_id_of "$WORK/raise.out")
wait_status "$id" ERROR 120
st=$(nnictl experiment status "$id")
echo "$st" | grep -q "Traceback" && echo "$st" | grep -q "RaisingTuner exploded on purpose at parameter 1" ||
    { echo "$st"; fail "raise: nnictl experiment status lacks the traceback"; }
errors_of | grep -q '"status":"ERROR"' || fail "raise: check-status is not ERROR"
errors_of | grep -q 'ValueError: RaisingTuner exploded on purpose' || fail "raise: check-status errors lack the traceback"
dpid=$(sql "SELECT pid FROM process WHERE experiment_id='$id' AND role='dispatcher'")
wait_gone "$dpid" 5 "raise: the failed dispatcher still runs"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")" = 1 ] || fail "raise: want the 1 trial before the error"
nnictl stop "$id" > /dev/null
[ "$(sql "SELECT status FROM experiment WHERE id='$id'")" = ERROR ] || fail "raise: stop changed ERROR"
pass "a raising tuner: ERROR with its traceback in experiment status and check-status"

# ---- a tuner that cannot be constructed: the process dies; its stderr is the error ----
config "$WORK/broken" pipe "{codeDirectory: $ALGOS, className: recorder.BrokenTuner}"
nnictl create --config "$WORK/broken/config.yml" --port "$port" > "$WORK/broken.out"
id=$(exp_id_of "$WORK/broken.out")
wait_status "$id" ERROR 60
err=$(sql "SELECT errors FROM experiment WHERE id='$id'")
echo "$err" | grep -q "ended unexpectedly (exit code 1)" && echo "$err" | grep -q "RuntimeError: BrokenTuner refuses to start" ||
    fail "broken: errors are: $err"
nnictl stop "$id" > /dev/null
pass "a tuner that cannot start: ERROR with the process's exit code and traceback"

# ---- a tuner that never answers GE: the deadline ends it (TRIALQ_DISPATCHER_TIMEOUT) ----
cat > "$WORK/hang.py" <<'PY'
import time
from nni.tuner import Tuner
class HangingTuner(Tuner):
    def update_search_space(self, s): pass
    def receive_trial_result(self, *a, **k): pass
    def generate_parameters(self, pid, **k): time.sleep(3600)
PY
config "$WORK/hang" websocket "{codeDirectory: $WORK, className: hang.HangingTuner}"
TRIALQ_DISPATCHER_TIMEOUT=3 nnictl create --config "$WORK/hang/config.yml" --port "$port" > "$WORK/hang.out"
id=$(exp_id_of "$WORK/hang.out")
wait_status "$id" ERROR 60
sql "SELECT errors FROM experiment WHERE id='$id'" | grep -q "did not answer in time: no trial parameters (TR) after GE within 3 s" ||
    fail "hang: errors are: $(sql "SELECT errors FROM experiment WHERE id='$id'")"
t0=$(date +%s)
nnictl stop "$id" > /dev/null
[ $(( $(date +%s) - t0 )) -lt 20 ] || fail "hang: stop took too long"
pass "a tuner that never answers: ERROR after the deadline, stop is prompt"

# ---- a process that never connects: NNI's 10 s ----
# (nnictl create's check that the class is there, python -c, gets a real python)
cat > "$WORK/fakepy" <<SH
#!/bin/sh
[ "\$1" = -c ] && exec $PY "\$@"
echo "not a python: sleeping instead of connecting" >&2
exec sleep 60
SH
chmod +x "$WORK/fakepy"
config "$WORK/noconn" websocket "{codeDirectory: $ALGOS, className: recorder.RecordingTuner, classArgs: {out: $WORK/x}}"
TRIALQ_PYTHON="$WORK/fakepy" nnictl create --config "$WORK/noconn/config.yml" --port "$port" > "$WORK/noconn.out"
id=$(exp_id_of "$WORK/noconn.out")
wait_status "$id" ERROR 60
err=$(sql "SELECT errors FROM experiment WHERE id='$id'")
echo "$err" | grep -q "Tuner did not connect in 10 seconds" && echo "$err" | grep -q "sleeping instead of connecting" ||
    fail "noconn: errors are: $err"
nnictl stop "$id" > /dev/null
pass "a process that never connects: ERROR after 10 s with its output"

# ---- the WebSocket server with frames nni's client never sends ----
cat > "$WORK/rawpy" <<SH
#!/bin/sh
[ "\$1" = -c ] && exec $PY "\$@"
exec $PY "$TRIALQ_SRC/tests/dispatcher/rawclient.py"
SH
chmod +x "$WORK/rawpy"
config "$WORK/raw" websocket "{codeDirectory: $ALGOS, className: recorder.RecordingTuner, classArgs: {out: $WORK/x}}"
RAW_MODE=fragments TRIALQ_PYTHON="$WORK/rawpy" nnictl create --config "$WORK/raw/config.yml" --port "$port" > "$WORK/raw.out"
id=$(exp_id_of "$WORK/raw.out")
wait_status "$id" ERROR 60
err=$(sql "SELECT errors FROM experiment WHERE id='$id'")
echo "$err" | grep -q "raw client: fragments joined, pong received" || fail "fragments: errors are: $err"
nnictl stop "$id" > /dev/null
RAW_MODE=unmasked TRIALQ_PYTHON="$WORK/rawpy" nnictl create --config "$WORK/raw/config.yml" --port "$port" > "$WORK/raw.out"
id=$(exp_id_of "$WORK/raw.out")
wait_status "$id" ERROR 60
err=$(sql "SELECT errors FROM experiment WHERE id='$id'")
echo "$err" | grep -q "unmasked WebSocket frame from a client" || fail "unmasked: errors are: $err"
curl -sf "http://127.0.0.1:$port/api/v1/nni/check-status" > /dev/null || fail "unmasked: the api stopped answering"
nnictl stop "$id" > /dev/null
pass "WebSocket: fragments with a ping between them are joined and ponged; an unmasked frame fails cleanly"

# ---- an advisor with string parameter ids (its own dispatcher loop) ----
MAXT=3 config "$WORK/adv" websocket "{codeDirectory: $ALGOS, className: recorder.StringIdAdvisor, classArgs: {out: $WORK/adv/a.jsonl}}"
sed -i 's/^tuner:/advisor:/' "$WORK/adv/config.yml"
nnictl create --config "$WORK/adv/config.yml" --port "$port" > "$WORK/adv.out"
id=$(exp_id_of "$WORK/adv.out")
wait_status "$id" DONE 120
wait_until 30 trial_ends "$WORK/adv/a.jsonl" 3 || fail "advisor: fewer than 3 trial ends reached it"
[ "$(sql "SELECT group_concat(parameter_label, ',') FROM (SELECT parameter_label FROM trial WHERE experiment_id='$id' ORDER BY sequence)")" = "r0-0,r0-1,r0-2" ] ||
    fail "advisor: labels $(sql "SELECT parameter_label FROM trial WHERE experiment_id='$id'")"
$PY - "$WORK/adv/a.jsonl" "$(sql "SELECT parameter_label || ' ' || id || ' ' || final_metric FROM trial WHERE experiment_id='$id'" | sort | tr '\n' ';')" <<'PY' || fail "advisor: results"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
got = sorted("%s %s %s" % (r["parameter_id"], r["trial_job_id"], float(r["value"])) for r in recs if r["event"] == "result")
assert got == sorted(x for x in sys.argv[2].split(";") if x), (got, sys.argv[2])
ends = [r for r in recs if r["event"] == "trial_end"]
assert sorted(r["parameter_id"] for r in ends) == ["r0-0", "r0-1", "r0-2"], ends
PY
curl -sf "http://127.0.0.1:$port/api/v1/nni/trial-jobs" | grep -q 'r0-1' || fail "advisor: REST lacks the string id"
nnictl stop "$id" > /dev/null
pass "an advisor's string parameter ids go to the trials and come back with their results"

# ---- search-space update (SS) and imported data (FD) reach the tuner while it runs ----
MAXT=40 config "$WORK/live" websocket "{codeDirectory: $ALGOS, className: recorder.RecordingTuner, classArgs: {out: $WORK/live/t.jsonl}}"
SLEEP=0.5 nnictl create --config "$WORK/live/config.yml" --port "$port" > "$WORK/live.out"
id=$(exp_id_of "$WORK/live.out")
wait_until 30 grep -qs generate "$WORK/live/t.jsonl" || fail "live: the tuner generated nothing in 30 s"
echo '{"q": {"_type": "choice", "_value": [3, 4]}}' > "$WORK/live/ss.json"
nnictl update searchspace "$id" --filename "$WORK/live/ss.json" > /dev/null
echo '[{"parameter": {"q": 7}, "value": 7.5}, {"parameter": {"q": 6}, "value": "{\"default\": 6.5}"}]' > "$WORK/live/imp.json"
nnictl experiment import "$id" --filename "$WORK/live/imp.json" > /dev/null
ss_and_fd() { grep -q '"import"' "$WORK/live/t.jsonl" && [ "$(grep -c search_space "$WORK/live/t.jsonl")" = 2 ]; }
wait_until 30 ss_and_fd || fail "live: the tuner did not get the import and a second search space"
$PY - "$WORK/live/t.jsonl" <<'PY' || fail "live: SS/FD"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ss = [r["space"] for r in recs if r["event"] == "search_space"]
assert ss[-1] == {"q": {"_type": "choice", "_value": [3, 4]}}, ss
imp = [r["data"] for r in recs if r["event"] == "import"]
assert imp == [[{"parameter": {"q": 7}, "value": 7.5}, {"parameter": {"q": 6}, "value": {"default": 6.5}}]], imp
PY
nnictl stop "$id" > /dev/null
pass "a search-space update (SS) and imported data (FD) reached the running tuner"

# ---- kill -9 of the api while trials run: the new process gets them as AD ----
MAXT=4 config "$WORK/kill" websocket "{codeDirectory: $ALGOS, className: recorder.RecordingTuner, classArgs: {out: $WORK/kill/t.jsonl}}"
sed -i 's/trialConcurrency: 1/trialConcurrency: 2/' "$WORK/kill/config.yml"
SLEEP=2 nnictl create --config "$WORK/kill/config.yml" --port "$port" > "$WORK/kill.out"
id=$(exp_id_of "$WORK/kill.out")
WAIT_STEP=0.05 wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 2 30 "kill: 2 trials running"
running=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING' ORDER BY sequence" | tr '\n' ' ')
api=$(sql "SELECT api_pid FROM experiment WHERE id='$id'")
kill -9 "$api"
WAIT_STEP=0.05 wait_dead "$api" 5 "kill: the api killed with -9"
nnictl resume "$id" --port "$port" > /dev/null
wait_status "$id" DONE 120
wait_until 30 trial_ends "$WORK/kill/t.jsonl" 4 || fail "kill: fewer than 4 trial ends reached the tuner"
$PY - "$WORK/kill/t.jsonl" "$running" <<'PY' || fail "kill: AD"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
starts = [r for r in recs if r["event"] == "start"]
assert len(starts) == 2 and starts[1]["mode"] == "resume", starts
second = [r for r in recs if r.get("pid") == starts[1]["pid"]]
# the trials that ran across the kill were handed over (AD): their results and ends came
# to the new process under their ids, and it went on after them (next id = max + 1)
res = sorted((r["parameter_id"], r["trial_job_id"]) for r in second if r["event"] == "result")
resumed = sys.argv[2].split()
assert [t for p, t in res if p in (0, 1)] == resumed, (res, resumed)
assert [r["parameter_id"] for r in second if r["event"] == "generate"] == [2, 3], second
PY
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 4 ] || fail "kill: want 4 SUCCEEDED"
nnictl stop "$id" > /dev/null
pass "kill -9 of the api: the running trials went to the new dispatcher (AD), which continued at id 2"

# ---- a customized assessor beside a built-in tuner ----
config "$WORK/mixed" pipe "{name: GridSearch}" "{codeDirectory: $ALGOS, className: recorder.ThresholdAssessor, classArgs: {out: $WORK/mixed/a.jsonl, threshold: 5}}"
SLEEP=1 nnictl create --config "$WORK/mixed/config.yml" --port "$port" > "$WORK/mixed.out"
id=$(exp_id_of "$WORK/mixed.out")
wait_status "$id" DONE 120
[ "$(sql "SELECT group_concat(status || ':' || (parameters->>'q'), ',') FROM (SELECT * FROM trial WHERE experiment_id='$id' ORDER BY parameters->>'q')")" = \
  "EARLY_STOPPED:0.5,EARLY_STOPPED:1,SUCCEEDED:8,SUCCEEDED:9" ] ||
    fail "mixed: $(sql "SELECT status, parameters FROM trial WHERE experiment_id='$id'")"
nnictl stop "$id" > /dev/null
pass "GridSearch (C) with a customized assessor: the two small q stopped early"

# ---- config errors at create name the key ----
config "$WORK/bad" websocket "{codeDirectory: $ALGOS, className: nosuchmodule.Tuner}"
out=$(nnictl create --config "$WORK/bad/config.yml" --port "$port" 2>&1 || true)
echo "$out" | grep -q "className: module of \"nosuchmodule.Tuner\" not found" || fail "bad module: $out"
config "$WORK/bad" websocket "{codeDirectory: $WORK/nodir, className: recorder.RecordingTuner}"
out=$(nnictl create --config "$WORK/bad/config.yml" --port "$port" 2>&1 || true)
echo "$out" | grep -q "codeDirectory" || fail "bad dir: $out"
config "$WORK/bad" smoke "{codeDirectory: $ALGOS, className: recorder.RecordingTuner}"
out=$(nnictl create --config "$WORK/bad/config.yml" --port "$port" 2>&1 || true)
echo "$out" | grep -q "tunerCommandChannel" || fail "bad channel: $out"
config "$WORK/bad" websocket "{codeDirectory: $ALGOS, className: recorder.RecordingTuner}" "{codeDirectory: $ALGOS, className: recorder}"
out=$(nnictl create --config "$WORK/bad/config.yml" --port "$port" 2>&1 || true)
echo "$out" | grep -q "assessor.className" || fail "bad assessor class: $out"
[ "$(sql "SELECT count(*) FROM experiment")" = 10 ] || fail "a bad config created an experiment"
pass "config errors name tuner.className, codeDirectory, tunerCommandChannel, assessor.className"

assert_no_leftovers
echo "49-custom-tuner-errors: passed"
