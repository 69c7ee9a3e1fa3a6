#!/usr/bin/env bash
# A trial's end when the processes watching it were away (kill -9, SIGSTOP) at the
# wrong moment, on the local platform:
#  a. trials exit 0 (with their final metric) while the api and the worker are dead;
#     then `nnictl stop` drains them: they stay SUCCEEDED, not USER_CANCELED (a kill asked
#     for after a trial ended by itself does not name its end)
#  b. the same for maxTrialDuration: the worker is stopped (SIGSTOP) past the limit while
#     the trial ends by itself; the api asks for the kill meanwhile: SUCCEEDED
#  c. worker and supervisor killed between the trial's start and the RUNNING commit (the
#     row is still WAITING with the dead worker's lease; the trial runs on without its
#     supervisor, under its group leader): the next worker re-adopts it and records its
#     end as attempt 1, instead of starting attempt 1 a second time beside it or throwing
#     its work away
#  d. a trial asked to end before it ever started ends so without running
. "$(dirname "$0")/lib.sh"

port=$(free_port)
export TRIAL_STEPS=2 TRIAL_SLEEP=0.7
# --- a: trials end while api and worker are dead ---------------------------------
metrics_experiment "$WORK/a" 2 2 31
nnictl create --config "$WORK/a/config.yml" --port "$port" > "$WORK/a.out"
a=$(exp_id_of "$WORK/a.out")
WAIT_STEP=0.05 wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$a' AND status='RUNNING'" 2 5 "a: 2 trials not running"
kill -9 "$(sql "SELECT api_pid FROM experiment WHERE id='$a'")" $(pgrep -f "trialq worker .*--experiment $a") 2>/dev/null || true
for t in $(sql "SELECT id FROM trial WHERE experiment_id='$a'"); do
    wait_file -s "$NNI_HOME/$a/trials/$t/.nni/state" 10 "a: trial $t recorded no end"
    read -r code _ < "$NNI_HOME/$a/trials/$t/.nni/state" || fail "a: trial $t recorded no end"
    [ "$code" = 0 ] || fail "a: trial $t exited $code"
done
nnictl stop "$a" > /dev/null
[ "$(sql "SELECT group_concat(status || ':' || (final_metric = parameters->>'x'), ' ') FROM trial WHERE experiment_id='$a'")" = \
  "SUCCEEDED:1 SUCCEEDED:1" ] || fail "a: $(sql "SELECT id, status, exit_code, final_metric FROM trial WHERE experiment_id='$a'")"
pass "trials that ended while api and worker were dead stay SUCCEEDED through stop's drain"

# --- b: maxTrialDuration asked for after the trial ended by itself -------------------
metrics_experiment "$WORK/b" 1 1 32
sed -i 's/^trialConcurrency: 1$/trialConcurrency: 1\nmaxTrialDuration: 2s/' "$WORK/b/config.yml"
nnictl create --config "$WORK/b/config.yml" --port "$port" > "$WORK/b.out"
b=$(exp_id_of "$WORK/b.out")
WAIT_STEP=0.05 wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$b' AND status='RUNNING'" 1 5 "b: the trial runs"
tb=$(sql "SELECT id FROM trial WHERE experiment_id='$b'")
wpid=$(pgrep -f "trialq worker .*--experiment $b")
[ -n "$wpid" ] || fail "b: no worker"
kill -STOP $wpid
wait_until 10 test -s "$NNI_HOME/$b/trials/$tb/.nni/state" ||
    { kill -CONT $wpid; fail "b: the trial did not end by itself while its worker was stopped"; }
wait_until 10 sql_is "SELECT kill_request FROM trial WHERE id='$tb'" EARLY_STOPPED ||
    { kill -CONT $wpid; fail "b: kill request '$SQL_GOT', wanted EARLY_STOPPED"; }
kill -CONT $wpid
wait_status "$b" DONE 30
[ "$(sql "SELECT status || ' ' || exit_code FROM trial WHERE id='$tb'")" = "SUCCEEDED 0" ] ||
    fail "b: $(sql "SELECT status, exit_code, message FROM trial WHERE id='$tb'")"
nnictl stop "$b" > /dev/null
pass "maxTrialDuration reached after the trial ended by itself: SUCCEEDED"

# --- c: the crash between the start and the RUNNING commit ---------------------------
metrics_experiment "$WORK/c" 1 1 33
# (a trial of 4 s, so that it still runs when every other process is killed; exported
# before the create, whose api and worker the trial inherits its environment from)
export TRIAL_STEPS=40 TRIAL_SLEEP=0.1
nnictl create --config "$WORK/c/config.yml" --port "$port" > "$WORK/c.out"
c=$(exp_id_of "$WORK/c.out")
WAIT_STEP=0.05 wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$c' AND status='RUNNING'" 1 5 "c: the trial runs"
tc=$(sql "SELECT id FROM trial WHERE experiment_id='$c'")
read -r _ orphan _ < "$NNI_HOME/$c/trials/$tc/.nni/job.lock"
kill -0 "$orphan" || fail "c: no trial process"
# every process but the trial's own group dies (api, worker, supervisor) ...
for p in $(our_pids); do [ "$(ps -o pgid= -p "$p" | tr -d ' ')" = "$orphan" ] || kill -9 "$p" 2>/dev/null || true; done
sleep 0.3
kill -0 "$orphan" || fail "c: the trial died with its supervisor"
# ... and the row is as it is before the RUNNING commit: WAITING, the dead worker's lease
sql "UPDATE trial SET status = 'WAITING', job_id = NULL, start_time = NULL, machine = NULL WHERE id = '$tc'"
nnictl resume "$c" --port "$port" > /dev/null
wait_status "$c" DONE 60
# (its leader may linger a moment as a zombie of init: dead, not running)
runs() { ps -o stat= -p "$1" | grep -qv Z; }
wait_until 5 not runs "$orphan" || fail "c: attempt 1's trial (pid $orphan) still runs"
[ "$(sql "SELECT status || ' ' || attempt FROM trial WHERE id='$tc'")" = "SUCCEEDED 1" ] ||
    fail "c: $(sql "SELECT status, attempt, message FROM trial WHERE id='$tc'")"
# attempt 1 ran once, to its end, and its metrics are what it wrote
[ ! -e "$NNI_HOME/$c/trials/$tc.attempt1" ] || fail "c: the trial was started again"
want=$(cut -d' ' -f1-3 "$NNI_HOME/$c/trials/$tc/written.log" | sort)
got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$tc' AND attempt = 1" | sort)
[ -n "$want" ] && [ "$want" = "$got" ] || fail "c: attempt 1's metrics differ from what it wrote"
[ "$(grep -c "seq" "$NNI_HOME/$c/trials/$tc/trial.stdout")" = 1 ] || fail "c: the trial started more than once"
nnictl stop "$c" > /dev/null
pass "a trial orphaned before its RUNNING commit is re-adopted and ends as attempt 1, not run twice"

# --- d: asked to end before it ever started -----------------------------------------
export TRIAL_STEPS=2 TRIAL_SLEEP=0.1
metrics_experiment "$WORK/d" 1 1 34
nnictl create --config "$WORK/d/config.yml" --port "$port" > "$WORK/d.out"
d=$(exp_id_of "$WORK/d.out")
wait_status "$d" DONE 30
nnictl stop "$d" > /dev/null
td=$(sql "SELECT id FROM trial WHERE experiment_id='$d'")
# the state a worker killed right after its claim leaves, with a kill asked for since
sql "UPDATE trial SET status = 'WAITING', attempt = 2, job_id = NULL, start_time = NULL, end_time = NULL,
       lease_owner = 'gone:1:1', lease_expires = 0, kill_request = 'USER_CANCELED' WHERE id = '$td'"
sql "UPDATE experiment SET status = 'RUNNING' WHERE id = '$d'"
nnictl resume "$d" --port "$port" > /dev/null
wait_until 10 sql_is "SELECT status || ' ' || attempt FROM trial WHERE id='$td'" "USER_CANCELED 2" ||
    fail "d: $(sql "SELECT status, attempt, message FROM trial WHERE id='$td'")"
[ ! -s "$NNI_HOME/$d/trials/$td/trial.stdout" ] || fail "d: the trial ran"
nnictl stop "$d" > /dev/null
pass "a trial asked to end before it started ends without running"
assert_no_leftovers
echo "26-trial-end-races: passed"
