#!/usr/bin/env bash
# Kill -9 the api and the worker at random moments while an experiment runs; resume
# after each api kill. Afterwards every trial reached exactly one final state, no
# metric is missing or duplicated, and no process or port is left behind.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
metrics_experiment "$WORK/exp" 4 60 3
export TRIAL_STEPS=3 TRIAL_SLEEP=0.25

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || fail "no experiment id"

api_pid() { sql "SELECT api_pid FROM experiment WHERE id='$id'"; }
worker_pid() { pgrep -f "trialq worker --platform local --experiment $id" | head -n1 || true; }

kills=0 api_kills=0 worker_kills=0
end=$((SECONDS + 30))
RANDOM=42
while [ "$kills" -lt 20 ] && [ "$SECONDS" -lt "$end" ]; do
    sleep "0.$((RANDOM % 9 + 1))"
    st=$(sql "SELECT status FROM experiment WHERE id='$id'")
    [ "$st" = DONE ] && break
    if [ $((RANDOM % 3)) -eq 0 ]; then
        p=$(api_pid)
        [ -n "$p" ] || continue
        kill -9 "$p" 2>/dev/null || continue
        kills=$((kills + 1)); api_kills=$((api_kills + 1))
        # the port is free once the process is gone; resume takes over
        WAIT_STEP=0.05 wait_dead "$p" 2.5 "the api killed with -9"
        nnictl resume "$id" --port "$port" > "$WORK/resume.out" 2>&1 || { cat "$WORK/resume.out"; fail "resume failed"; }
    else
        p=$(worker_pid)
        [ -n "$p" ] || continue
        kill -9 "$p" 2>/dev/null || continue
        kills=$((kills + 1)); worker_kills=$((worker_kills + 1))
    fi
done
echo "killed api $api_kills times, worker $worker_kills times"
[ "$kills" -ge 5 ] || fail "only $kills kills happened"

# make sure an api runs, then let the experiment finish
p=$(api_pid)
if [ -z "$p" ] || ! kill -0 "$p" 2>/dev/null; then
    nnictl resume "$id" --port "$port" > /dev/null
fi
wait_status "$id" DONE 180
pass "experiment reached DONE after $kills kills"

total=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")
[ "$total" = 60 ] || fail "$total trials, expected 60"
notfinal=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status IN ('WAITING','RUNNING')")
[ "$notfinal" = 0 ] || fail "$notfinal trials not final"
# exactly one final state per trial, and it is SUCCEEDED
multi=$(sql "SELECT count(*) FROM (SELECT trial_id FROM event WHERE experiment_id='$id' AND entity='trial'
             AND to_state IN ('SUCCEEDED','FAILED','USER_CANCELED','SYS_CANCELED','EARLY_STOPPED')
             GROUP BY trial_id HAVING count(*) != 1)")
[ "$multi" = 0 ] || fail "$multi trials reached a final state more or less than once"
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")
[ "$ok" = 60 ] || { sql "SELECT id,status,attempt,message FROM trial WHERE experiment_id='$id' AND status!='SUCCEEDED'"; fail "$ok of 60 SUCCEEDED"; }
# no trial ran twice: each was started exactly once
restarted=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND attempt != 1")
[ "$restarted" = 0 ] || fail "$restarted trials were started again although their jobs lived"
pass "every trial ended exactly once, SUCCEEDED, in its first attempt"

assert_metrics_match "$id"
# the api saw each worker death and recorded why
deaths=$(sql "SELECT count(*) FROM event WHERE experiment_id='$id' AND entity='process' AND reason LIKE '%killed by signal 9%'")
[ "$deaths" -ge "$worker_kills" ] || fail "only $deaths of $worker_kills worker kills were recorded"
pass "no metric missing or duplicated"

nnictl stop "$id" > /dev/null
port_is_free "$port" || fail "port $port busy after stop"
assert_no_leftovers
echo "20-crash-kill9: passed ($kills kills)"
