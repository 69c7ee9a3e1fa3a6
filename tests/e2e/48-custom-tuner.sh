#!/usr/bin/env bash
# Customized tuner and assessor (codeDirectory + className) through NNI's dispatcher
# protocol, over the WebSocket channel and over the legacy fd 3/4 pipes. The nni
# package is not installable here: tests/dispatcher holds a stdlib-only stand-in written
# from the protocol, put on PYTHONPATH so that trialq's launch command is unchanged.
# Checked: trials run the tuner's parameters, the tuner receives their final results and
# trial ends, a customized assessor stops a trial EARLY_STOPPED, and resume replays the
# finished trials to the new process (FD) with NNI_MODE=resume.
. "$(dirname "$0")/lib.sh"

export PYTHONPATH="$TRIALQ_SRC/tests/dispatcher${PYTHONPATH:+:$PYTHONPATH}"
export TRIALQ_PYTHON=$PY PYTHONDONTWRITEBYTECODE=1 # nothing written into the source tree
export STEPS=6 STEP_SLEEP=0.4
port=$(free_port)

# experiment <dir> <channel>: q is what the tuner proposes; curve.sh reports q as every
# intermediate result and as the final one; the assessor stops trials whose q < 5
experiment() {
    mkdir -p "$1"
    cp "$TRIALQ_SRC/tests/e2e/trials/curve.sh" "$1/"
    write_config "$1/config.yml" searchSpace='{q: {_type: choice, _value: [9, 1, 8, 0.5]}}' trialCommand='sh curve.sh' \
        trialConcurrency=2 maxTrialNumber=6 tunerCommandChannel="$2" \
        tuner="{codeDirectory: $TRIALQ_SRC/tests/dispatcher/algos, className: recorder.RecordingTuner, classArgs: {out: $1/tuner.jsonl}}" \
        assessor="{codeDirectory: $TRIALQ_SRC/tests/dispatcher/algos, className: recorder.ThresholdAssessor,
          classArgs: {out: $1/assessor.jsonl, threshold: 5, start: 2}}"
}

# events <file> <event>: the records of one kind, one JSON per line
events() { $PY -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["event"] == sys.argv[2]: print(json.dumps(r, sort_keys=True))' "$1" "$2"; }

# wait_events <file> <event> <count>: the process writes what it received a moment after
# the experiment's rows say so; fails when fewer than <count> come within 30 s
has_events() { [ -f "$1" ] && [ "$(events "$1" "$2" | wc -l)" -ge "$3" ]; }
wait_events() { wait_until 30 has_events "$@" || fail "$1: fewer than $3 $2 records after 30 s"; }

check_run() { # <dir> <exp id> <channel>
    local dir=$1 id=$2 chan=$3
    wait_events "$dir/tuner.jsonl" trial_end 6
    wait_events "$dir/assessor.jsonl" assessor_trial_end 6
    # what the tuner proposed is exactly what the trials ran (parameter id -> parameters)
    want=$($PY -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["event"] == "generate": print(r["parameter_id"], json.dumps(r["parameters"], sort_keys=True))' "$dir/tuner.jsonl" | sort)
    got=$(sql "SELECT parameter_id, parameters FROM trial WHERE experiment_id='$id'" | $PY -c 'import json,sys
for l in sys.stdin:
    pid, p = l.rstrip("\n").split("|", 1)
    print(pid, json.dumps(json.loads(p), sort_keys=True))' | sort)
    [ "$(echo "$got" | wc -l)" = 6 ] || fail "$chan: want 6 trials, got: $got"
    [ "$want" = "$got" ] || { echo "tuner: $want"; echo "trials: $got"; fail "$chan: trials did not run the tuner's parameters"; }
    # every SUCCEEDED trial's final result reached the tuner, with its id and value
    want=$(sql "SELECT id || ' ' || parameter_id || ' ' || final_metric FROM trial WHERE experiment_id='$id'
                AND status='SUCCEEDED'" | sort)
    got=$(events "$dir/tuner.jsonl" result | $PY -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l); print(r["trial_job_id"], r["parameter_id"], float(r["value"]))' | sort)
    [ -n "$want" ] && [ "$want" = "$got" ] || { echo "db: $want"; echo "tuner: $got"; fail "$chan: final results differ"; }
    # the assessor stopped the trials with small q, and nothing else
    bad=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='EARLY_STOPPED'")
    good=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")
    small=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND parameters->>'q' < 5")
    [ "$bad" = "$small" ] && [ "$good" = $((6 - small)) ] && [ "$bad" -ge 1 ] ||
        fail "$chan: $bad EARLY_STOPPED, $good SUCCEEDED, $small trials with q < 5"
    sql "SELECT reason FROM event WHERE experiment_id='$id' AND reason LIKE 'recorder.ThresholdAssessor%'" |
        grep -q "early stop" || fail "$chan: no event names the assessor"
    # trial ends: the tuner saw each trial end once, success = SUCCEEDED
    [ "$(events "$dir/tuner.jsonl" trial_end | wc -l)" = 6 ] || fail "$chan: tuner saw $(events "$dir/tuner.jsonl" trial_end | wc -l) trial ends"
    [ "$(events "$dir/tuner.jsonl" trial_end | grep -c '"success": true')" = "$good" ] || fail "$chan: trial_end success flags"
    [ "$(events "$dir/assessor.jsonl" assessor_trial_end | wc -l)" = 6 ] || fail "$chan: assessor trial ends"
    # NNI's environment: mode, channel, no GPU, cwd = <exp dir>/log
    events "$dir/tuner.jsonl" start | grep -q "\"mode\": \"start\"" || fail "$chan: NNI_MODE"
    events "$dir/tuner.jsonl" start | grep -q "\"cuda\": \"\"" || fail "$chan: CUDA_VISIBLE_DEVICES"
    events "$dir/tuner.jsonl" start | grep -q "\"cwd\": \"$NNI_HOME/$id/log\"" || fail "$chan: cwd"
}

# ---- WebSocket channel (NNI >= 3.0, the default) ----
experiment "$WORK/ws" websocket
nnictl create --config "$WORK/ws/config.yml" --port "$port" > "$WORK/ws.out"
ws=$(exp_id_of "$WORK/ws.out")
wait_status "$ws" DONE 180
events "$WORK/ws/tuner.jsonl" start | grep -q "\"channel\": \"ws://localhost:$port/tuner\"" || fail "ws: channel URL"
# --exp_params holds the algorithm sections only: a command line is readable by every
# local user, and trainingService and the rest of the config may hold secrets
dpid=$(sql "SELECT pid FROM process WHERE experiment_id='$ws' AND role='dispatcher' ORDER BY id DESC LIMIT 1")
$PY - "/proc/$dpid/cmdline" <<'PY' || fail "the dispatcher's --exp_params"
import base64, json, sys
argv = open(sys.argv[1], "rb").read().split(b"\0")
params = json.loads(base64.b64decode(argv[argv.index(b"--exp_params") + 1]))
assert set(params) == {"tuner", "assessor"}, sorted(params)
assert params["tuner"]["className"] == "recorder.RecordingTuner", params
PY
check_run "$WORK/ws" "$ws" websocket
pass "WebSocket channel: 6 trials ran the tuner's parameters, results and ends reached it, the assessor stopped $(sql "SELECT count(*) FROM trial WHERE experiment_id='$ws' AND status='EARLY_STOPPED'")"

# ---- resume: the finished trials are replayed to the new process (FD) ----
nnictl stop "$ws" > /dev/null
grep -q "terminate" "$NNI_HOME/$ws/log/dispatcher.log" || fail "the dispatcher did not get TE at stop"
dpid=$(sql "SELECT pid FROM process WHERE experiment_id='$ws' AND role='dispatcher' ORDER BY id DESC LIMIT 1")
! kill -0 "$dpid" 2>/dev/null || fail "the dispatcher (pid $dpid) outlived nnictl stop"
sql "UPDATE experiment SET max_trial_number = 8 WHERE id='$ws'"
nnictl resume "$ws" --port "$port" > /dev/null
wait_status "$ws" DONE 180
wait_events "$WORK/ws/tuner.jsonl" trial_end 8
$PY - "$WORK/ws/tuner.jsonl" "$(sql "SELECT id || ' ' || final_metric FROM trial WHERE experiment_id='$ws'
     AND status='SUCCEEDED' AND sequence < 6" | sort | tr '\n' ';')" <<'PY' || fail "resume: replay"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
starts = [r for r in recs if r["event"] == "start"]
assert len(starts) == 2 and starts[1]["mode"] == "resume", starts
second = [r for r in recs if r.get("pid") == starts[1]["pid"]]
assert any(r["event"] == "load_checkpoint" for r in second), "no load_checkpoint"
imports = [r for r in second if r["event"] == "import"]
assert len(imports) == 1, imports
got = sorted("%s %s" % (d["trialJobId"], float(d["value"])) for d in imports[0]["data"])
want = sorted(x for x in sys.argv[2].split(";") if x)
assert got == want, (got, want)
# the replayed parameters are the trials' own
assert all(set(d["parameter"]) == {"q", "tag"} for d in imports[0]["data"])
# and the new process went on: 2 more trials, from its own ids (NNI restarts them at 0)
gens = [r for r in second if r["event"] == "generate"]
assert len(gens) == 2 and [g["parameter_id"] for g in gens] == [0, 1], gens
# its results came back under its own ids
res = [r for r in second if r["event"] == "result"]
assert res and all(r["parameter_id"] in (0, 1) for r in res), res
PY
# the trials carry the new process's ids (trial.parameter_label), not the index
[ "$(sql "SELECT group_concat(parameter_label, ',') FROM (SELECT parameter_label FROM trial
      WHERE experiment_id='$ws' AND sequence >= 6 ORDER BY sequence)")" = "0,1" ] || fail "resume: labels"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$ws'")" = 8 ] || fail "resume: want 8 trials"
pass "resume: the new dispatcher got the $(sql "SELECT count(*) FROM trial WHERE experiment_id='$ws' AND status='SUCCEEDED' AND sequence < 6") finished results (FD) and proposed the 2 more trials"
nnictl stop "$ws" > /dev/null

# ---- legacy pipe channel (fd 3/4) ----
experiment "$WORK/pipe" pipe
nnictl create --config "$WORK/pipe/config.yml" --port "$port" > "$WORK/pipe.out"
pipe=$(exp_id_of "$WORK/pipe.out")
wait_status "$pipe" DONE 180
events "$WORK/pipe/tuner.jsonl" start | grep -q '"channel": "pipe"' || fail "pipe: NNI_TUNER_COMMAND_CHANNEL was set"
check_run "$WORK/pipe" "$pipe" pipe
nnictl stop "$pipe" > /dev/null
grep -q "terminate" "$NNI_HOME/$pipe/log/dispatcher.log" || fail "pipe: the dispatcher did not get TE at stop"
pass "pipe channel: the same experiment over fd 3/4, TE at stop"

# ---- the WebSocket route refuses what is not the expected tuner ----
experiment "$WORK/route" websocket
sed -i 's/maxTrialNumber: 6/maxTrialNumber: 1/' "$WORK/route/config.yml"
nnictl create --config "$WORK/route/config.yml" --port "$port" > "$WORK/route.out"
rid=$(exp_id_of "$WORK/route.out")
wait_status "$rid" DONE 120
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/tuner")
[ "$code" = 400 ] || fail "GET /tuner without upgrade: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
    -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "http://127.0.0.1:$port/tuner")
[ "$code" = 409 ] || fail "a second tuner connection: $code"
curl -sf "http://127.0.0.1:$port/api/v1/nni/check-status" | grep -q '"status":"DONE"' || fail "api unhealthy after /tuner probes"
pass "/tuner refuses plain requests (400) and a second connection (409)"
nnictl stop "$rid" > /dev/null

# ---- a retried trial: the tuner gets the result of the attempt that ended, once ----
# attempt 1 reports 1.5 and waits; its job vanishes (supervisor and trial killed) after
# the FINAL is stored; attempt 2 reports 2.5. NNI's tuners keep one result per parameter
# id (its TPE raises on a second): exactly one result may arrive, attempt 2's.
mkdir -p "$WORK/retry"
cat > "$WORK/retry/trial.sh" <<'SH'
pid=$(sed -n 's/.*"parameter_id":\([0-9]*\).*/\1/p' "$NNI_SYS_DIR/parameter.cfg")
v=2.5
[ -e first-done ] || { v=1.5; : > first-done; }
rec=$(printf '{"parameter_id":%s,"trial_job_id":"%s","type":"FINAL","sequence":0,"value":"%s"}' "$pid" "$NNI_TRIAL_JOB_ID" "$v")
mkdir -p "$NNI_SYS_DIR/.nni"
printf 'ME%06d%s\n' "$((${#rec} + 1))" "$rec" >> "$NNI_SYS_DIR/.nni/metrics"
[ "$v" = 2.5 ] || exec sleep 60
SH
write_config "$WORK/retry/config.yml" searchSpace='{q: {_type: choice, _value: [9]}}' maxTrialRetries=1 \
    tuner="{codeDirectory: $TRIALQ_SRC/tests/dispatcher/algos, className: recorder.RecordingTuner, classArgs: {out: $WORK/retry/tuner.jsonl}}"
nnictl create --config "$WORK/retry/config.yml" --port "$port" > "$WORK/retry.out"
rt=$(exp_id_of "$WORK/retry.out")
wait_sql "SELECT count(*) FROM metric m JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id='$rt' AND m.type='FINAL'" 1 30 \
    "retry: attempt 1 reported its result"
tr_id=$(sql "SELECT id FROM trial WHERE experiment_id='$rt'")
read -r _ tpid _ < "$NNI_HOME/$rt/trials/$tr_id/.nni/job.lock"
pkill -9 -f "trialq-supervise $NNI_HOME/$rt/trials/$tr_id " || fail "retry: no supervisor to kill"
kill -9 -- "-$tpid" 2>/dev/null || true
wait_status "$rt" DONE 120
[ "$(sql "SELECT status || ' ' || attempt || ' ' || final_metric FROM trial WHERE id='$tr_id'")" = "SUCCEEDED 2 2.5" ] ||
    fail "retry: $(sql "SELECT status, attempt, final_metric, message FROM trial WHERE id='$tr_id'")"
wait_events "$WORK/retry/tuner.jsonl" trial_end 1
[ "$(events "$WORK/retry/tuner.jsonl" result | $PY -c 'import json,sys; print(" ".join(str(json.loads(l)["value"]) for l in sys.stdin))')" = 2.5 ] ||
    fail "retry: the tuner got $(events "$WORK/retry/tuner.jsonl" result | tr '\n' ' ')"
nnictl stop "$rt" > /dev/null
pass "a retried trial: the tuner got one result, the retry's"

assert_no_leftovers
echo "48-custom-tuner: passed"
