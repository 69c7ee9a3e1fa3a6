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

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
api_pid() { sql "SELECT api_pid FROM experiment WHERE id='$id'"; }
worker_pid() { pgrep -f "trialq worker --platform dlc --experiment $id" | head -n1 || true; }
wait_running() {
    wait_until 60 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" ">=$1" ||
        fail "fewer than $1 trials RUNNING"
}

# 1. the worker alone, while 4 jobs run
wait_running 4
w=$(worker_pid)
[ -n "$w" ] || fail "no dlc worker"
kill -9 "$w"
pass "worker $w killed with 4 jobs running"

# 2. the whole manager, a little later
wait_until 60 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'" '>=6' || true
wait_running 2
w=$(worker_pid) a=$(api_pid)
[ -n "$w" ] && [ -n "$a" ] || fail "no worker or api to kill"
kill -9 "$w" "$a"
wait_until 5 gone "$a" || true
before=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status IN ('RUNNING','WAITING') AND job_id IS NOT NULL")
pass "api $a and worker $w killed with $before jobs in flight"
sleep 1.5   # some jobs end while no manager watches

nnictl resume "$id" --port "$port" > "$WORK/resume.out" 2>&1 || { cat "$WORK/resume.out"; fail "resume failed"; }
wait_status "$id" DONE 180
pass "experiment reached DONE after resume"

total=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND attempt=1")
[ "$total" = 16 ] && [ "$ok" = 16 ] ||
    { sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id'"; fail "$ok of $total SUCCEEDED in attempt 1"; }
# none duplicated: the server holds exactly one job per trial
[ "$(dlc_stat "s['created']")" = 16 ] || fail "the server created $(dlc_stat "s['created']") jobs for 16 trials"
[ "$(dlc_stat "len({j['DisplayName'] for j in s['jobs'].values()})")" = 16 ] || fail "a DisplayName twice"
[ "$(dlc_stat "s['refused']")" = "{}" ] || fail "the server refused requests: $(dlc_stat "s['refused']")"
grep -qs "re-attached" "$NNI_HOME/$id"/log/*.log || fail "no re-attach logged"
multi=$(sql "SELECT count(*) FROM (SELECT trial_id FROM event WHERE experiment_id='$id' AND entity='trial'
             AND to_state IN ('SUCCEEDED','FAILED','USER_CANCELED','SYS_CANCELED','EARLY_STOPPED')
             GROUP BY trial_id HAVING count(*) != 1)")
[ "$multi" = 0 ] || fail "$multi trials reached a final state more or less than once"
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    dir=$(sql "SELECT trial_dir FROM trial WHERE id='$tid'")
    want=$(sort "$dir/written.log")
    got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$tid'" | sort)
    [ -n "$want" ] && [ "$want" = "$got" ] || { echo "want: $want"; echo "got: $got"; fail "metrics of $tid differ"; }
done
pass "16 jobs, one per trial (3 lost CreateJob answers found by name), re-attached; no metric lost or doubled"

nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "88-dlc-resume: passed"
