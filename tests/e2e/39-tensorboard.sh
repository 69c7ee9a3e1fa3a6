#!/usr/bin/env bash
# NNI's TensorBoard routes against the real api, with tests/e2e/fake/tensorboard (a
# stand-in for TensorBoard 2.x's CLI and its /data/runs) on PATH:
# - POST /tensorboard {"trials": "a,b"} starts one tensorboard over each trial's
#   $NNI_OUTPUT_DIR/tensorboard (its runs are exactly those trials' event dirs), bound
#   to the api's address; the same set again is the same task; another set, another
#   port; bad bodies and unknown trials are 400s that start nothing;
# - DELETE stops (STOPPING -> STOPPED, the port closes), PUT starts it again, DELETE
#   /tensorboard-tasks stops all; a tensorboard that dies is ERROR with its exit code
#   and its output kept in the log file named;
# - the tasks end with the api however it ends (kill -9 included), `nnictl view`
#   may start one (it stores nothing), and without tensorboard on PATH the 400 says so.
. "$(dirname "$0")/lib.sh"

FAKE_DIR="$TRIALQ_SRC/tests/e2e/fake"
export TRIALQ_FAKE_TB_CALLS="$WORK/tb-calls"
port=$(free_port)
API="http://127.0.0.1:$port/api/v1/nni"
mkdir -p "$WORK/exp"
cat > "$WORK/exp/trial.sh" <<'SH'
# event files where NNI's documentation has trials write them; one run per trial
mkdir -p "$NNI_OUTPUT_DIR/tensorboard/train"
echo events > "$NNI_OUTPUT_DIR/tensorboard/train/events.out.tfevents.1700000000.host"
SH
write_config "$WORK/exp/config.yml" searchSpace='{x: {_type: choice, _value: [1, 2, 3]}}' trialConcurrency=3 \
    maxTrialNumber= tuner='{name: GridSearch}'
PATH="$FAKE_DIR:$PATH" nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
wait_status "$id" DONE 60
set -- $(sql "SELECT id FROM trial WHERE experiment_id='$id' ORDER BY sequence")
a=$1 b=$2 c=$3

# req METHOD PATH [BODY]: the status in $code, the body in $WORK/body
req() {
    code=$(curl -s -o "$WORK/body" -w '%{http_code}' -X "$1" ${3:+-d "$3"} "$API$2")
}
field() { $PY -c "import json,sys; v=json.load(open('$WORK/body')).get('$1'); print(v if v is not None else '')"; }
runs_of() { curl -sf "http://127.0.0.1:$1/data/runs" 2>/dev/null | $PY -c "import json,sys; print(' '.join(json.load(sys.stdin)))"; }
wait_runs() { # port expected (in any order)
    local want
    want=$(printf '%s\n' $2 | LC_ALL=C sort | paste -sd' ')
    wait_until 10 runs_are "$1" "$want" ||
        fail "tensorboard on port $1 shows runs '$(runs_of "$1")', wanted '$want'"
}
runs_are() { [ "$(runs_of "$1")" = "$2" ]; }
task_status() { req GET "/tensorboard/$1"; field status; }
task_is() { [ "$(task_status "$1")" = "$2" ]; }
wait_task() { # task status
    wait_until 10 task_is "$1" "$2" ||
        fail "task $1 is $(task_status "$1"), wanted $2: $(cat "$WORK/body")"
}
alive() { kill -0 "$1" 2>/dev/null; }

# --- start, the runs it shows, what it was given
req POST /tensorboard "{\"trials\": \"$a,$b\"}"
[ "$code" = 200 ] || fail "POST /tensorboard: $code $(cat "$WORK/body")"
t1=$(field id) p1=$(field port) pid1=$(field pid)
[ "$(field status)" = RUNNING ] || fail "new task: $(cat "$WORK/body")"
$PY - "$WORK/body" "$a" "$b" "$NNI_HOME/$id" <<'PY' || fail "task info: $(cat "$WORK/body")"
import json, sys
t = json.load(open(sys.argv[1]))
a, b, exp = sys.argv[2], sys.argv[3], sys.argv[4]
assert t["trialJobIdList"] == [a, b], t
assert t["trialLogDirectoryList"] == [exp + "/trials/" + a, exp + "/trials/" + b], t
assert t["logFile"] == exp + "/log/tensorboard-" + t["id"] + ".log", t
PY
wait_runs "$p1" "$a/train $b/train"
[ "$(tail -n1 "$TRIALQ_FAKE_TB_CALLS")" = "[\"--logdir_spec=$a:$NNI_HOME/$id/trials/$a/tensorboard,$b:$NNI_HOME/$id/trials/$b/tensorboard\", \"--port=$p1\", \"--host=127.0.0.1\"]" ] ||
    fail "tensorboard was started with $(tail -n1 "$TRIALQ_FAKE_TB_CALLS")"
grep -q "TensorBoard 2.15.1 at http://127.0.0.1:$p1/" "$NNI_HOME/$id/log/tensorboard-$t1.log" || fail "tensorboard's output not kept"
curl -sf "http://127.0.0.1:$port/logs/tensorboard-$t1.log" | grep -q "TensorBoard 2.15.1" || fail "/logs/tensorboard-$t1.log"
pass "POST /tensorboard: one tensorboard over the trials' tensorboard dirs, on loopback (port $p1)"

# the same trials (in another order, with spaces) are the same task; others get their own
req POST /tensorboard "{\"trials\": \" $b ,$a,$a\"}"
[ "$code" = 200 ] && [ "$(field id)" = "$t1" ] || fail "the same trials gave another task: $(cat "$WORK/body")"
req POST /tensorboard "{\"trials\": \"$a,$b,$c\"}"
[ "$code" = 200 ] || fail "second task: $code"
t2=$(field id) p2=$(field port) pid2=$(field pid)
[ "$t2" != "$t1" ] && [ "$p2" != "$p1" ] || fail "a second set of trials shares task or port"
wait_runs "$p2" "$a/train $b/train $c/train"
pass "one task per set of trials"

# --- bad requests: a 400 or 404 naming the problem, and no task started
wait_runs "$p2" "$a/train $b/train $c/train" # both started: their arguments are written
ncalls=$(wc -l < "$TRIALQ_FAKE_TB_CALLS")
expect_error() { # code message-part method path [body]
    req "$3" "$4" "${5:-}"
    [ "$code" = "$1" ] && grep -qF -- "$2" "$WORK/body" || fail "$3 $4 ${5:-}: $code $(cat "$WORK/body"), wanted $1 '$2'"
}
expect_error 400 "trial NoSuch not found in experiment $id" POST /tensorboard "{\"trials\": \"$a,NoSuch\"}"
expect_error 400 "expected {\\\"trials\\\"" POST /tensorboard '{"trials": 5}'
expect_error 400 "no \\\"trials\\\"" POST /tensorboard '{"trial": "x"}'
expect_error 400 "no trial id" POST /tensorboard '{"trials": ", ,"}'
expect_error 400 "not valid JSON" POST /tensorboard '{"trials": "a"'
expect_error 404 "no TensorBoard task zzz" GET /tensorboard/zzz
expect_error 404 "no TensorBoard task zzz" DELETE /tensorboard/zzz
[ "$(wc -l < "$TRIALQ_FAKE_TB_CALLS")" = "$ncalls" ] || fail "a bad request started a tensorboard"
req GET /tensorboard-tasks
[ "$($PY -c "import json; print(sorted(t['id'] for t in json.load(open('$WORK/body'))) == sorted(['$t1', '$t2']))")" = True ] ||
    fail "task list: $(cat "$WORK/body")"
pass "bad requests: 400/404 naming the problem, nothing started"

# --- stop, restart, stop all
req DELETE "/tensorboard/$t1"
[ "$code" = 200 ] && [[ "$(field status)" =~ ^(STOPPING|STOPPED)$ ]] || fail "DELETE: $code $(cat "$WORK/body")"
wait_task "$t1" STOPPED
alive "$pid1" && fail "the stopped tensorboard (pid $pid1) still runs"
curl -sf "http://127.0.0.1:$p1/data/runs" > /dev/null && fail "port $p1 still answers after the stop"
req PUT "/tensorboard/$t1"
[ "$code" = 200 ] && [ "$(field status)" = RUNNING ] || fail "PUT: $code $(cat "$WORK/body")"
p1b=$(field port) pid1b=$(field pid)
[ "$pid1b" != "$pid1" ] || fail "PUT did not start a new process"
wait_runs "$p1b" "$a/train $b/train"
req DELETE /tensorboard-tasks
[ "$code" = 200 ] || fail "DELETE /tensorboard-tasks: $code"
wait_task "$t1" STOPPED
wait_task "$t2" STOPPED
alive "$pid1b" || alive "$pid2" && fail "stop all left a tensorboard running"
pass "DELETE stops (the port closes), PUT starts again, DELETE /tensorboard-tasks stops all"

# --- a tensorboard that dies: ERROR, with its exit code and its output kept
req PUT "/tensorboard/$t2"
pid2b=$(field pid)
kill -KILL "$pid2b"
wait_task "$t2" ERROR
[[ "$(field message)" == "tensorboard was killed by signal 9; its output: $NNI_HOME/$id/log/tensorboard-$t2.log" ]] ||
    fail "ERROR message: $(field message)"
pass "a tensorboard that dies shows ERROR and why"

# --- the tasks end with the api, even when it is killed with -9
req PUT "/tensorboard/$t1"
pid1c=$(field pid)
alive "$pid1c" || fail "no tensorboard to outlive the api"
api_pid=$(sql "SELECT api_pid FROM experiment WHERE id='$id'")
kill -9 "$api_pid"
wait_until 5 not alive "$pid1c" || fail "tensorboard $pid1c outlived the api killed with -9 (5 s)"
nnictl stop "$id" > /dev/null 2>&1 || true
assert_no_leftovers
pass "tensorboard ends with its api (kill -9)"

# --- view mode: no tensorboard on PATH says so; with one, it starts (and nothing is stored)
stored() { sql "SELECT count(*) FROM event"; sql "SELECT * FROM trial ORDER BY id"; }
before=$(stored)
nopath=$(printf '%s' "$PATH" | tr ':' '\n' | grep -vxF "$FAKE_DIR" | paste -sd:)
PATH="$nopath" nnictl view "$id" --port "$port" > /dev/null
expect_error 400 'tensorboard is not installed: no executable \"tensorboard\" on the api'"'"'s PATH' POST /tensorboard "{\"trials\": \"$a\"}"
nnictl stop "$id" > /dev/null 2>&1 || true
PATH="$FAKE_DIR:$PATH" nnictl view "$id" --port "$port" > /dev/null
req GET /tensorboard-tasks
[ "$(cat "$WORK/body")" = "[]" ] || fail "tasks of an earlier api listed: $(cat "$WORK/body")"
req POST /tensorboard "{\"trials\": \"$c\"}"
[ "$code" = 200 ] || fail "POST /tensorboard in view mode: $code $(cat "$WORK/body")"
wait_runs "$(field port)" "$c/train"
[ "$(stored)" = "$before" ] || fail "TensorBoard in view mode changed what is stored"
nnictl stop "$id" > /dev/null 2>&1 || true
assert_no_leftovers
pass "view mode starts a TensorBoard; without tensorboard on PATH the 400 says so"

# --- an api listening beyond loopback: starting one needs the token; it binds all too
PATH="$FAKE_DIR:$PATH" nnictl view "$id" --port "$port" --bind 0.0.0.0 > /dev/null
req POST /tensorboard "{\"trials\": \"$a\"}"
[ "$code" = 401 ] || fail "POST /tensorboard without the token beyond loopback: $code"
token=$(sql "SELECT token FROM experiment WHERE id='$id'")
code=$(curl -s -o "$WORK/body" -w '%{http_code}' -X POST -H "X-Trialq-Token: $token" -d "{\"trials\": \"$a\"}" "$API/tensorboard")
[ "$code" = 200 ] || fail "POST /tensorboard with the token: $code $(cat "$WORK/body")"
wait_runs "$(field port)" "$a/train" # (started: its arguments are written)
[ "$(tail -n1 "$TRIALQ_FAKE_TB_CALLS")" = "[\"--logdir_spec=$a:$NNI_HOME/$id/trials/$a/tensorboard\", \"--port=$(field port)\", \"--bind_all\"]" ] ||
    fail "beyond loopback, tensorboard was started with $(tail -n1 "$TRIALQ_FAKE_TB_CALLS")"
nnictl stop "$id" > /dev/null 2>&1 || true
assert_no_leftovers
pass "beyond loopback: the token is needed, and tensorboard binds all addresses"
echo "39-tensorboard: passed"
