#!/usr/bin/env bash
# The remote runner's per-trial supervisor (`sh runner.sh run DIR ATTEMPT`) killed with
# SIGKILL while its trial runs on the machine: the trial runs on and its end is recorded
# there; it is never started again beside itself. 6 trials of ~4 s at concurrency 3 on two
# machines:
#  a. every runner supervisor is killed -9 as soon as it is seen
#  b. the supervisors are killed together with the worker (the api starts a new one)
# Every trial is SUCCEEDED in attempt 1 with all its metrics, the process table (sampled
# every 100 ms) never shows two live copies of one trial, nothing is left after stop.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/remote.sh"
remote_machines
copies_watch metrics.sh

port=$(free_port)
# runs EXP: the runner supervisors of the experiment on both machines
runs() { pgrep -f "^sh /home/tqremote[12]/nni-experiments/$1/runner.sh run " || true; }
running() { sql "SELECT count(*) FROM trial WHERE experiment_id='$1' AND status='RUNNING'"; }
worker_pid() {
    sql "SELECT pid FROM process WHERE experiment_id='$1' AND role='worker:remote' AND ended_at IS NULL ORDER BY id DESC LIMIT 1"
}

# start NAME: an experiment of 6 trials of ~4 s, 3 at a time; sets $id
start() {
    mkdir -p "$WORK/$1"
    cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/$1/"
    remote_config "$WORK/$1/config.yml" 3 6
    sed -i 's/^trialCommand: .*/trialCommand: TRIAL_STEPS=8 TRIAL_SLEEP=0.5 sh metrics.sh/' "$WORK/$1/config.yml"
    nnictl create --config "$WORK/$1/config.yml" --port "$port" > "$WORK/$1.out" 2>&1 ||
        { cat "$WORK/$1.out"; fail "$1: create"; }
    id=$(exp_id_of "$WORK/$1.out")
    REMOTE_EXPS="${REMOTE_EXPS:-} $id"
    copies_add "$id"
}

# check ID: 6 trials SUCCEEDED in attempt 1, each started once, metrics exact; nothing left
check() {
    local id=$1 tid rdir want got
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND attempt=1")" = 6 ] ||
        { sql "SELECT id, status, attempt, machine, message FROM trial WHERE experiment_id='$id'"; fail "$id: not every trial SUCCEEDED in attempt 1"; }
    for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
        rdir=$(remote_dir_of "$tid")
        [ "$(ls -d "$rdir".*.job | wc -l)" = 1 ] || fail "$tid started more than once"
        [ "$(grep -c '^FINAL' "$rdir/written.log")" = 1 ] || fail "$tid ran its command more than once"
        want=$(sort "$rdir/written.log")
        got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$tid'" | sort)
        [ "$want" = "$got" ] || { echo "want: $want"; echo "got: $got"; fail "metrics of $tid differ"; }
    done
    nnictl stop "$id" > /dev/null
    remote_wait_no_procs "$id" 20
}

# --- a: every runner supervisor killed while its trial runs ---------------------------
start a
a=$id
kill_until_done "$a" runs 180
wait_status "$a" DONE 60
[ "$KILLED_TRIALS" = 6 ] || fail "a: the runner supervisors of $KILLED_TRIALS trials were killed, not 6"
check "$a"
pass "a: 6 runner supervisors killed -9: every trial ran on and SUCCEEDED in attempt 1 with its metrics"

# --- b: the runner supervisors and the worker together --------------------------------
start b
b=$id
b_runs() { [ "$(running "$b")" = 3 ] && [ "$(runs "$b" | wc -l)" = 3 ]; }
WAIT_STEP=0.05 wait_until 30 b_runs ||
    fail "b: 3 trials with their runner supervisors not running ($(running "$b") RUNNING, $(runs "$b" | wc -l) runners)"
sleep 0.5
w=$(worker_pid "$b")
[ -n "$w" ] || fail "b: no worker"
kill -9 "$w" $(runs "$b") 2>/dev/null || true
new_worker() { w2=$(worker_pid "$b"); [ -n "$w2" ] && [ "$w2" != "$w" ] && kill -0 "$w2" 2>/dev/null; }
wait_until 30 new_worker || fail "b: the api did not start a new worker (last seen: '$w2')"
wait_status "$b" DONE 180
check "$b"
pass "b: runner supervisors killed with the worker: every trial SUCCEEDED in attempt 1"

copies_check 12
echo "57-remote-supervisor-kill: passed"
