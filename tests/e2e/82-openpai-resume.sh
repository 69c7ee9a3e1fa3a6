#!/usr/bin/env bash
# OpenPAI crash safety: the openpai worker is killed with SIGKILL while jobs run (the
# api restarts it), then the whole manager (api + worker) is; `nnictl resume` re-attaches
# to the jobs by name. Every trial ran exactly once: the server saw one submission per
# trial and no duplicate, every trial SUCCEEDED in its first attempt, and the metric rows
# are exactly what the trials wrote.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/openpai.sh"

export TRIAL_STEPS=3 TRIAL_SLEEP=0.4   # the jobs inherit these from the server
pai_start_server
port=$(free_port)
pai_experiment "$WORK/exp" 4 16 5

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
worker_pid() { pgrep -f "trialq worker --platform openpai --experiment $id" | head -n1 || true; }
wait_running() {
    wait_until 60 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" ">=$1" ||
        fail "fewer than $1 trials RUNNING"
}

# 1. the worker alone, while 4 jobs run
wait_running 4
w=$(worker_pid)
[ -n "$w" ] || fail "no openpai worker"
kill -9 "$w"
pass "worker $w killed with 4 jobs running"

# 2. the whole manager, a little later
wait_until 60 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'" '>=6' || true
wait_running 2
kill9_manager "$id" openpai
sleep 1.5   # some jobs end while no manager watches

resume_to_done "$id" "$port" 16
# none duplicated: one submission per trial, no job created twice
[ "$(pai_stat posts)" = 16 ] || fail "$(pai_stat posts) submissions for 16 trials"
[ "$(pai_stat created)" = 16 ] && [ "$(pai_stat conflicts)" = 0 ] || fail "jobs created $(pai_stat created), conflicts $(pai_stat conflicts)"
pai_assert_metrics "$id"
pass "16 jobs, each submitted once and re-attached; no metric lost or doubled"

nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "82-openpai-resume: passed"
