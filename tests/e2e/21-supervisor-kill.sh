#!/usr/bin/env bash
# A trial's supervisor killed with SIGKILL (the OOM killer, a careless kill) while the
# trial runs: the trial runs on and its end is recorded; it is never started again beside
# itself. 6 trials of ~4 s at concurrency 3:
#  a. every trialq-supervise is killed -9 as soon as it is seen
#  b. the supervisors are killed together with the worker (the api starts a new one),
#     then together with the worker and the api (nnictl resume)
#  c. trials on the HTTP channel (trialCommandChannel: http: half a stdlib client that
#     speaks it as NNI 3's SDK does, no retry, half the bundled SDK): every supervisor is
#     killed -9 as soon as it is seen; the channel is the trial's group leader's, so the
#     trials go on talking to it
# Every trial is SUCCEEDED in attempt 1 with all its metrics, the process table (sampled
# every 100 ms) never shows two live copies of one trial, and nothing is left after stop.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
export TRIAL_STEPS=8 TRIAL_SLEEP=0.5
copies_watch metrics.sh,nni_http_client.py,sdk_steps.py

# the supervisors of experiment $1 whose trial runs: those that have started the trial's
# group leader (a child). One killed before that never ran its trial, and its job is
# rightly started again as the next attempt (seen on a loaded machine: "its job vanished;
# retry as attempt 2"); that is not this test's scenario.
supervisors() {
    local p
    for p in $(pgrep -f "^trialq-supervise $NNI_HOME/$1/trials/"); do
        pgrep -P "$p" > /dev/null && echo "$p"
    done
    return 0
}
worker_pid() { pgrep -f "trialq worker --platform local --experiment $1" || true; }
running() { sql "SELECT count(*) FROM trial WHERE experiment_id='$1' AND status='RUNNING'"; }

# check_ended ID: 6 trials SUCCEEDED in attempt 1, each with one final state, never
# started again
check_ended() {
    local id=$1
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")" = 6 ] || fail "$id: not 6 trials"
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND attempt=1")" = 6 ] || {
        sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id'"
        for f in "$NNI_HOME/$id"/trials/*/trial.stderr; do [ -s "$f" ] && { echo "== $f"; tail -n 5 "$f"; }; done
        fail "$id: not every trial SUCCEEDED in attempt 1"
    }
    [ "$(sql "SELECT count(*) FROM event WHERE experiment_id='$id' AND entity='trial' AND to_state='SUCCEEDED'")" = 6 ] ||
        fail "$id: a trial ended more than once"
    ! ls -d "$NNI_HOME/$id"/trials/*.attempt* 2>/dev/null || fail "$id: a trial was started again"
}

# check ID: check_ended, and each trial ran its command once and stored exactly the
# metrics it wrote
check() {
    local id=$1 d
    check_ended "$id"
    for d in "$NNI_HOME/$id"/trials/*/; do
        [ "$(grep -c '^FINAL' "$d/written.log")" = 1 ] || fail "$id: $(basename "$d") ran its command more than once"
    done
    assert_metrics_match "$id"
}

# check_http ID: check_ended, and each trial (an http_experiment's) stored exactly the
# metrics its channel acknowledged
check_http() {
    check_ended "$1"
    assert_acked_match "$1" "$1" "$TRIAL_STEPS"
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$1' AND final_metric IS NOT NULL")" = 6 ] ||
        fail "$1: final metrics missing"
}

# run_killing LABEL CHECK: runs the experiment of $WORK/LABEL, killing -9 every supervisor
# as soon as it is seen until it is DONE; then CHECK ID, stop, and nothing may be left
run_killing() {
    local id
    nnictl create --config "$WORK/$1/config.yml" --port "$port" > "$WORK/$1.out"
    id=$(exp_id_of "$WORK/$1.out")
    copies_add "$id"
    kill_until_done "$id" supervisors 120
    wait_status "$id" DONE 60
    [ "$KILLED_TRIALS" = 6 ] || fail "$1: the supervisors of $KILLED_TRIALS trials were killed, not 6"
    $2 "$id"
    nnictl stop "$id" > /dev/null
    assert_no_leftovers
}

# --- a: every supervisor killed while its trial runs ----------------------------------
metrics_experiment "$WORK/a" 3 6 21
run_killing a check
pass "a: 6 supervisors killed -9: every trial ran on and SUCCEEDED in attempt 1 with its metrics"

# --- b: supervisors and worker together; then with the api too (resume) --------------
metrics_experiment "$WORK/b" 3 6 22
nnictl create --config "$WORK/b/config.yml" --port "$port" > "$WORK/b.out"
b=$(exp_id_of "$WORK/b.out")
copies_add "$b"
b_runs() { [ "$(running "$b")" = 3 ] && [ -n "$(supervisors "$b")" ]; }
WAIT_STEP=0.05 wait_until 15 b_runs || fail "b: 3 trials with their supervisors not running ($(running "$b") RUNNING)"
sleep 0.5
w=$(worker_pid "$b")
[ -n "$w" ] || fail "b: no worker"
kill -9 $w $(supervisors "$b") 2>/dev/null || true
new_worker() { w2=$(worker_pid "$b"); [ -n "$w2" ] && [ "$w2" != "$w" ]; }
wait_until 30 new_worker || fail "b: the api did not start a new worker"
pass "b: worker $w and the supervisors killed together; new worker $w2"
# the next trials, once they run: api, worker and supervisors at once, then resume
WAIT_STEP=0.05 wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$b' AND status='RUNNING' AND sequence >= 3" '>=1' 15 \
    "b: a trial after the first 3 runs"
sleep 0.5
api=$(sql "SELECT api_pid FROM experiment WHERE id='$b'")
kill -9 "$api" $(worker_pid "$b") $(supervisors "$b") 2>/dev/null || true
WAIT_STEP=0.05 wait_dead "$api" 2.5 "b: the api killed with -9"
nnictl resume "$b" --port "$port" > "$WORK/resume.out" 2>&1 || { cat "$WORK/resume.out"; fail "b: resume"; }
wait_status "$b" DONE 120
check "$b"
nnictl stop "$b" > /dev/null
assert_no_leftovers
pass "b: supervisors killed with the worker, then with worker and api: every trial SUCCEEDED in attempt 1"

# --- c: HTTP-channel trials whose supervisors are killed ------------------------------
# (each reports TRIAL_STEPS results 0.65 s apart, then its final one)
http_experiment "$WORK/c" 23 3 6
run_killing c check_http
pass "c: 6 HTTP-channel trials' supervisors killed -9: every trial SUCCEEDED in attempt 1, every acknowledged metric stored once"

copies_check 18
echo "21-supervisor-kill: passed"
