#!/usr/bin/env bash
# PAI-DLC crash safety and idempotent submission (DLC accepts a second job with the same
# DisplayName, so no duplicate is the client's doing): CreateJob answers lost after DLC
# created the job (the connection dropped) are found by ListJobs, not created again; the
# dlc worker is killed with SIGKILL while jobs run (the api restarts it), then the whole
# manager (api + worker); `nnictl resume` re-attaches. Every trial ran exactly once: the
# server holds one job per trial, every trial SUCCEEDED in its first attempt, and the
# metric rows are exactly what the trials wrote.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/dlc.sh"

export TRIAL_STEPS=3 TRIAL_SLEEP=0.4   # the jobs inherit these from the server
dlc_start_server
port=$(free_port)
dlc_experiment "$WORK/exp" 4 16 5
# the first 3 CreateJob: handled, then the connection drops before the answer
dlc_fail '{"mode": "drop_after", "count": 3, "action": "CreateJob"}'

dlc_create "$WORK/exp" "$port"
id=$DLC_ID
crash_and_resume dlc "$id" "$port" 16
# none duplicated: the server holds exactly one job per trial
[ "$(dlc_stat "s['created']")" = 16 ] || fail "the server created $(dlc_stat "s['created']") jobs for 16 trials"
[ "$(dlc_stat "len({j['DisplayName'] for j in s['jobs'].values()})")" = 16 ] || fail "a DisplayName twice"
[ "$(dlc_stat "s['refused']")" = "{}" ] || fail "the server refused requests: $(dlc_stat "s['refused']")"
assert_dir_metrics "$id"
sqlite3 "$DB" .dump > "$WORK/db.dump"
dlc_assert_no_secret "$WORK/db.dump" "$DB"* "$WORK/exp.create.out" $(find "$NNI_HOME" -name "*.log")
pass "the access key secret came to the restarted workers from the secrets file, and is not in the database"
pass "16 jobs, one per trial (3 lost CreateJob answers found by name), re-attached; no metric lost or doubled"

nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "88-dlc-resume: passed"
