#!/usr/bin/env bash
# PAI-DLC faults while an experiment runs: 503s for a while, throttling (HTTP 429
# Throttling.User), connections dropped before the request is handled, answers too slow
# (the worker's calls time out), CreateJob answers lost after the job was created: the
# worker retries with back-off (a new signature and nonce each time) and loses nothing
# (every trial SUCCEEDED once, no DisplayName created twice, metrics complete). Then DLC
# refuses everything for a while: the experiment's errors (check-status, nnictl) say
# that DLC keeps failing and why, and the experiment still ends DONE once DLC is back.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/dlc.sh"

export TRIAL_STEPS=3 TRIAL_SLEEP=0.5   # the experiment outlasts the fault phases
dlc_start_server --throttle-status 429
port=$(free_port)
dlc_experiment "$WORK/exp" 4 12 9
# every phase waits until the server says its fault met the requests it names
# (fault_phase); the first CreateJob answers are lost (the job created all the same)
dlc_fail '{"mode": "drop_after", "count": 2, "action": "CreateJob"}'
dlc_create "$WORK/exp" "$port"
id=$DLC_ID
wait_until 20 served_ge dlc 2 || fail "only $FAULT_SERVED CreateJob answers were lost"
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" '>=2' 30 "2 trials RUNNING"
# (one listing polls every job, with one back-off: a fault each keeps it short)
fault_phase dlc '{"mode": "status", "status": 503, "count": 1}' 1
fault_phase dlc '{"mode": "throttle", "count": 1}' 1
fault_phase dlc '{"mode": "drop", "count": 1}' 1
fault_phase dlc '{"delay": 3, "count": 1}' 1      # answers after 3 s: the worker gives up after 2 s
wait_status "$id" DONE 180
pass "experiment reached DONE through 503s, throttling, dropped connections, timeouts and lost answers"

ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND attempt=1")
[ "$ok" = 12 ] || { sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id'"; fail "$ok of 12 SUCCEEDED in attempt 1"; }
[ "$(dlc_stat "s['created']")" = 12 ] || fail "$(dlc_stat "s['created']") jobs created for 12 trials"
[ "$(dlc_stat "len({j['DisplayName'] for j in s['jobs'].values()})")" = 12 ] || fail "a DisplayName created twice"
grep -qs "retrying in" "$NNI_HOME/$id"/log/*.log || fail "no retry logged"
assert_dir_metrics "$id"
pass "12 trials each ran once in one job; metrics complete"
nnictl stop "$id" > /dev/null

# DLC refuses everything: the experiment says so, then recovers once DLC answers again
port2=$(free_port)
dlc_experiment "$WORK/exp2" 2 2 10
dlc_create "$WORK/exp2" "$port2"
id2=$DLC_ID
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status='RUNNING'" '>=1' 30 "a trial RUNNING"
fault_phase dlc '{"mode": "status", "status": 503}' 1   # until check-status has said so
said() { curl -sf "http://127.0.0.1:$port2/api/v1/nni/check-status" | grep -q "keeps failing (HTTP 503 ServiceUnavailable)"; }
wait_until 30 said || { curl -s "http://127.0.0.1:$port2/api/v1/nni/check-status"; fail "check-status does not say DLC keeps failing"; }
pass "check-status after $(fault_served dlc) 503s: $(curl -sf "http://127.0.0.1:$port2/api/v1/nni/check-status" | grep -o 'dlc: DLC at [^"]*')"
dlc_fail '{}'
wait_status "$id2" DONE 120
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status='SUCCEEDED'")" = 2 ] || fail "trials after the outage"
pass "the experiment ends DONE once DLC answers again"
nnictl stop "$id2" > /dev/null
assert_no_leftovers
echo "88-dlc-faults: passed"
