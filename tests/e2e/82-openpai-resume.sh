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
crash_and_resume openpai "$id" "$port" 16
# none duplicated: one submission per trial, no job created twice
[ "$(pai_stat posts)" = 16 ] || fail "$(pai_stat posts) submissions for 16 trials"
[ "$(pai_stat created)" = 16 ] && [ "$(pai_stat conflicts)" = 0 ] || fail "jobs created $(pai_stat created), conflicts $(pai_stat conflicts)"
pai_assert_metrics "$id"
pass "16 jobs, each submitted once and re-attached; no metric lost or doubled"

nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "82-openpai-resume: passed"
