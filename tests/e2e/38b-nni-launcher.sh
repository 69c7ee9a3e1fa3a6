#!/usr/bin/env bash
# NNI's launcher (the Python API's Experiment.run() and NNI's nnictl use it) starting
# trialq through trialq's nni_node package: a stand-in launcher written from NNI's
# documented behaviour (lib/nni_launcher.py) spawns nni_node/node with NNI's manager
# command line, polls /check-status, POSTs the config. Create -> DONE with exact metrics,
# DELETE /experiment and SIGTERM (NNI's nnictl stop) as stops, resume and view from
# nni.sqlite, bad configs (400 naming the key, nothing left), the port in use, kill -9 of
# the api then resume through the launcher.
. "$(dirname "$0")/lib.sh"

export PYTHONPATH="$TRIALQ_SRC/sdk/launcher"
L() { "$PY" "$TRIALQ_SRC/tests/e2e/lib/nni_launcher.py" "$@"; }
port=$(free_port)
EXPS=$NNI_HOME # NNI's experiments directory is trialq's home (~/nni-experiments)
mkdir -p "$WORK/code"
cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/code/"
echo '{"x": {"_type": "uniform", "_value": [0, 1]}}' > "$WORK/code/ss.json"

# canonical_config FILE CONCURRENCY MAX [KEY=JSON ...]: the JSON NNI's client POSTs (NNI v2
# camelCase, searchSpaceFile beside the space read from it, trainingService filled in)
canonical_config() {
    "$PY" - "$@" <<PYEOF
import json, sys
f, conc, mx = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
code = "$WORK/code"
ts = {"platform": "local", "trialCommand": "sh metrics.sh", "trialCodeDirectory": code, "debug": False,
      "maxTrialNumberPerGpu": 1, "reuseMode": False}
c = {"experimentType": "hpo", "searchSpaceFile": code + "/ss.json",
     "searchSpace": json.load(open(code + "/ss.json")), "trialCommand": "sh metrics.sh",
     "trialCodeDirectory": code, "trialConcurrency": conc, "maxTrialNumber": mx, "useAnnotation": False,
     "debug": False, "logLevel": "info", "experimentWorkingDirectory": "$EXPS",
     "tuner": {"name": "Random", "classArgs": {"seed": 7}}, "trainingService": ts}
for kv in sys.argv[4:]:
    k, v = kv.split("=", 1)
    c[k] = json.loads(v)
json.dump(c, open(f, "w"))
PYEOF
}
# newest_param ID KEY: the newest ExperimentProfile's params.KEY in DIR/ID/db/nni.sqlite
newest_param() {
    "$PY" -c 'import json,sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute("SELECT params FROM ExperimentProfile ORDER BY revision DESC").fetchone(); print(json.loads(r[0]).get(sys.argv[2]))' \
        "$EXPS/$1/db/nni.sqlite" "$2"
}
count() { sql "SELECT count(*) FROM trial WHERE experiment_id='$1' AND status='$2'"; }

# ---- the Python API's run(): create, wait for the end, DELETE, wait for the process
canonical_config "$WORK/a.json" 2 6
L run "$WORK/a.json" "$port" "$EXPS" > "$WORK/run.out" 2> "$WORK/run.err" ||
    { cat "$WORK/run.err" >&2; fail "the launcher's run failed"; }
read -r id pid < <(head -n1 "$WORK/run.out")
[ "$(sed -n 2p "$WORK/run.out")" = "DONE 0" ] || fail "run: ended '$(sed -n 2p "$WORK/run.out")', wanted DONE and exit 0"
[ "$(sql "SELECT status FROM experiment WHERE id='$id'")" = DONE ] || fail "run: the row is not DONE"
[ "$(count "$id" SUCCEEDED)" = 6 ] || fail "run: $(count "$id" SUCCEEDED) trials succeeded, wanted 6"
assert_dir_metrics "$id"
gone "$pid" || fail "run: the api $pid still runs after DELETE"
port_is_free "$port" || fail "run: port busy after DELETE"
assert_no_leftovers
[ "$(newest_param "$id" trialConcurrency)" = 2 ] && [ "$(newest_param "$id" searchSpaceFile)" = "$WORK/code/ss.json" ] ||
    fail "nni.sqlite: the newest params are not the config NNI's client sent"
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r[sys.argv[2]]["pid"] == int(sys.argv[3])' \
    "$EXPS/.experiment" "$id" "$pid" || fail "NNI's registry DIR/.experiment is not the launcher's"
nnictl experiment list --all | grep -q "Id: $id" || fail "nnictl experiment list does not show $id"
pass "run(): create -> DONE, 6 trials with exact metrics, DELETE ends the api, nni.sqlite and .experiment"

# ---- create detached; a second launcher on the port; PUT kept in nni.sqlite; DELETE stops
export TRIAL_STEPS=4 TRIAL_SLEEP=0.5
canonical_config "$WORK/b.json" 2 6
read -r id pid < <(L create "$WORK/b.json" "$port" "$EXPS") || fail "create failed"
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 2 20 "2 trials never ran"
! L create "$WORK/b.json" "$port" "$EXPS" > /dev/null 2> "$WORK/second.err" || fail "a second launcher on port $port started"
grep -q "Port $port is not idle" "$WORK/second.err" || fail "second launcher: $(cat "$WORK/second.err")"
# the manager itself, started on the busy port, exits at once without touching anything
rc=0
(cd "$TRIALQ_SRC/sdk/launcher/nni_node" && ./node --max-old-space-size=4096 main.js --port "$port" \
    --experiment-id busyport1 --action create --mode local --experiments-directory "$EXPS" --log-level info \
    --foreground false --python-interpreter "$PY") 2> "$WORK/busy.err" || rc=$?
[ "$rc" = 3 ] || fail "the api on a busy port exited $rc, wanted 3: $(cat "$WORK/busy.err")"
[ "$(sql "SELECT count(*) FROM experiment WHERE id='busyport1'")" = 0 ] || fail "the busy-port api left a row"
[ "$(sql "SELECT status FROM experiment WHERE id='$id'")" = RUNNING ] || fail "the first experiment was disturbed"
curl -sf -X PUT "http://127.0.0.1:$port/api/v1/nni/experiment?update_type=TRIAL_CONCURRENCY" \
    -H 'Content-Type: application/json' -d '{"params": {"trialConcurrency": 3}}' > /dev/null || fail "PUT concurrency"
[ "$(newest_param "$id" trialConcurrency)" = 3 ] || fail "nni.sqlite not in step with the update"
L stop "$port" "$pid" || fail "stop by DELETE /experiment"
[ "$(sql "SELECT status FROM experiment WHERE id='$id'")" = STOPPED ] || fail "not STOPPED after DELETE"
[ "$(count "$id" USER_CANCELED)" -ge 2 ] || fail "running trials were not cancelled by DELETE"
port_is_free "$port" || fail "port busy after DELETE"
assert_no_leftovers
pass "create, a second launcher refused ('Port $port is not idle'), the api on a busy port exits 3, PUT in nni.sqlite, DELETE stops"

# ---- resume through the launcher (config from nni.sqlite) to DONE; then view; SIGTERM ends a view
export TRIAL_STEPS=1 TRIAL_SLEEP=0
read -r _ pid < <(L resume "$id" "$port" "$EXPS") || fail "resume failed"
wait_status "$id" DONE 120
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")" = 6 ] || fail "resume: not 6 trials"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status IN ('SUCCEEDED','USER_CANCELED')")" = 6 ] ||
    fail "resume: trials neither succeeded nor cancelled"
assert_dir_metrics "$id"
L stop "$port" "$pid" || fail "stop after resume"
read -r _ pid < <(L view "$id" "$port" "$EXPS") || fail "view failed"
http_ok "http://127.0.0.1:$port/api/v1/nni/check-status" '"VIEWED"' || fail "view: not VIEWED"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/api/v1/nni/trial-jobs" -d '{"x":1}')
[ "$code" = 400 ] || fail "view: a new trial answered $code"
L sigterm "$pid" || fail "SIGTERM did not end the view"
[ "$(sql "SELECT status FROM experiment WHERE id='$id'")" = DONE ] || fail "view changed the status"
assert_no_leftovers
pass "resume from nni.sqlite -> DONE with exact metrics; view read-only; SIGTERM ends it"

# ---- NNI's nnictl stop: SIGTERM to the recorded pid stops the experiment
export TRIAL_STEPS=20 TRIAL_SLEEP=0.5
canonical_config "$WORK/c.json" 2 4
read -r id pid < <(L create "$WORK/c.json" "$port" "$EXPS") || fail "create for SIGTERM failed"
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 2 20 "2 trials never ran"
L sigterm "$pid" || fail "the api did not exit on SIGTERM"
[ "$(sql "SELECT status FROM experiment WHERE id='$id'")" = STOPPED ] || fail "SIGTERM: not STOPPED"
[ "$(count "$id" USER_CANCELED)" = 2 ] || fail "SIGTERM: the running trials were not cancelled"
assert_no_leftovers
pass "SIGTERM (NNI's nnictl stop): STOPPED, trials cancelled, nothing left"

# ---- bad configs: 400 naming the key, nothing stored, the port free once the launcher killed it
bad() { # bad LABEL KEY-IN-MESSAGE KEY=JSON
    local n before
    canonical_config "$WORK/bad.json" 2 4 "$3"
    before=$(sql "SELECT count(*) FROM experiment")
    ! L create "$WORK/bad.json" "$port" "$EXPS" > "$WORK/bad.out" 2> "$WORK/bad.err" || fail "$1: accepted"
    grep -q "HTTP 400.*$2" "$WORK/bad.err" || fail "$1: $(cat "$WORK/bad.err")"
    [ "$(sql "SELECT count(*) FROM experiment")" = "$before" ] || fail "$1: a row was stored"
    n=$(find "$EXPS" -name nni.sqlite | wc -l)
    [ "$n" = 3 ] || fail "$1: $n nni.sqlite files, wanted the 3 experiments'"
    ! ls "$NNI_HOME"/secrets 2>/dev/null | grep -q . || fail "$1: a secrets file was left"
    wait_until 5 port_is_free "$port" || fail "$1: port busy"
    assert_no_leftovers
}
bad "concurrency 0" trialConcurrency 'trialConcurrency=0'
bad "unknown tuner" tuner.name 'tuner={"name": "NoSuchTuner"}'
bad "unknown key" maxTrialNumbr 'maxTrialNumbr=3'
pass "bad configs: 400 naming the key, nothing stored"

# ---- before its config, a web page's POST (a browser's, from another site) is refused
(cd "$TRIALQ_SRC/sdk/launcher/nni_node" && exec ./node main.js --port "$port" --experiment-id xsite1 \
    --action create --mode local --experiments-directory "$EXPS" --log-level info --foreground false \
    --python-interpreter "$PY") 2> "$WORK/xsite.err" &
xpid=$!
wait_http "http://127.0.0.1:$port/api/v1/nni/check-status" 20 INITIALIZED
canonical_config "$WORK/x.json" 1 1
code=$(curl -s -o "$WORK/xsite.out" -w '%{http_code}' -X POST -H 'Origin: http://evil.example' \
    -H 'Content-Type: text/plain' --data-binary @"$WORK/x.json" "http://127.0.0.1:$port/api/v1/nni/experiment")
[ "$code" = 403 ] || fail "a cross-site POST of a config answered $code: $(cat "$WORK/xsite.out")"
[ "$(sql "SELECT count(*) FROM experiment WHERE id='xsite1'")" = 0 ] || fail "the cross-site POST made a row"
kill "$xpid"
wait "$xpid" || fail "SIGTERM before the config: exit $?"
pass "before its config: a cross-site POST refused (403), SIGTERM ends the api"

# ---- kill -9 of the api mid-run, then resume through the launcher to DONE
export TRIAL_STEPS=3 TRIAL_SLEEP=0.3
canonical_config "$WORK/d.json" 2 6
read -r id pid < <(L create "$WORK/d.json" "$port" "$EXPS") || fail "create for kill -9 failed"
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'" '>=1' 60 "no trial ended"
kill -9 "$pid"
wait_gone "$pid"
wait_until 10 port_is_free "$port" || fail "port busy after kill -9"
read -r _ pid < <(L resume "$id" "$port" "$EXPS") || fail "resume after kill -9 failed"
wait_status "$id" DONE 120
[ "$(count "$id" SUCCEEDED)" = 6 ] || fail "after kill -9: $(count "$id" SUCCEEDED) of 6 succeeded"
assert_dir_metrics "$id"
L stop "$port" "$pid" || fail "stop after kill -9 + resume"
assert_no_leftovers
pass "kill -9 of the api, resume through the launcher: DONE, 6 trials with exact metrics"

# ---- nnictl launcher: the PYTHONPATH line, and a .pth file that puts nni_node first
want=$(cd "$TRIALQ_SRC/sdk/launcher/nni_node" && pwd -P)
got=$(unset PYTHONPATH; eval "$(nnictl launcher path)"; "$PY" -c 'import nni_node; print(nni_node.__path__[0])')
[ "$got" = "$want" ] || fail "nnictl launcher path: nni_node from '$got', wanted '$want'"
"$PY" -m venv --without-pip "$WORK/venv"
nnictl launcher install --python "$WORK/venv/bin/python" > "$WORK/install.out" || fail "nnictl launcher install"
got=$(unset PYTHONPATH; "$WORK/venv/bin/python" -c 'import nni_node; print(nni_node.__path__[0])')
[ "$got" = "$want" ] || fail "nnictl launcher install: nni_node from '$got', wanted '$want'"
pass "nnictl launcher path and install put trialq's nni_node first"
