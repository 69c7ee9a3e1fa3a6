#!/usr/bin/env bash
# Azure ML faults while an experiment runs, its tokens living 4 s (the run spans several
# lifetimes): the management endpoint answers 503 for a while (the experiment's error,
# check-status, says so, and clears once it answers), PUTs are throttled (429 with
# Retry-After), connections drop, answers come too late (the worker's timeout is 2 s),
# the token endpoint answers 503 once; the worker retries with back-off, refreshes its
# token before it expires (ARM never sees an expired one) and loses nothing: every trial
# SUCCEEDED in its first attempt as one job, its metrics exactly what it wrote.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/aml.sh"

export TRIAL_STEPS=3 TRIAL_SLEEP=0.3   # the jobs inherit these from the server
aml_start_server --token-lifetime 4
port=$(free_port)
aml_experiment "$WORK/exp" 4 10 9
# every phase waits until the server says its fault met the requests it names
# (fault_phase, e2e/lib.sh); the 503s last until check-status has shown them
aml_fail '{"mode": "throttle", "status": 429, "count": 3, "action": "put"}'   # the first submissions
aml_create "$WORK/exp" "$port"
id=$AML_ID
wait_until 20 served_ge aml 3 || fail "only $FAULT_SERVED submissions throttled"
check() { curl -sf "http://127.0.0.1:$port/api/v1/nni/check-status"; }
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" '>=2' 30 "2 trials RUNNING"
fault_phase aml '{"mode": "status", "status": 503, "action": "list"}' 1
wait_until 20 eval "check | grep -q 'Azure ML at'" || { check; fail "check-status does not show the failing service"; }
check > "$WORK/status.json"
aml_fail '{}'
grep -q "HTTP 503" "$WORK/status.json" || { cat "$WORK/status.json"; fail "check-status does not give the answer"; }
pass "a service answering 503 is the experiment's error: $(grep -o 'Azure ML at[^"]*' "$WORK/status.json" | head -c 200)"
wait_until 10 eval "! check | grep -q 'Azure ML at'" || fail "the error stays after the service answers again"
pass "the error is gone once the service answers"
fault_phase aml '{"mode": "drop", "count": 3, "action": "list"}' 3
fault_phase aml '{"mode": "delay", "delay": 3, "count": 1, "action": "list"}' 1
fault_phase aml '{"mode": "status", "status": 503, "count": 1, "action": "token"}' 1
wait_status "$id" DONE 120
pass "experiment reached DONE through 503s, 429s, dropped connections, timeouts and a failing token endpoint"

ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND attempt=1")
[ "$ok" = 10 ] || { sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id'"; fail "$ok of 10 SUCCEEDED in attempt 1"; }
[ "$(aml_stat 's["created"]')" = 10 ] || fail "$(aml_stat 's["created"]') jobs created for 10 trials"
assert_dir_metrics "$id"
refused=$(aml_stat 's["refused"]')
[[ $refused != *Expired* && $refused != *InvalidAuthenticationToken* ]] || fail "ARM refused tokens: $refused"
tokens=$(aml_stat 's["tokens"]')
[ "$tokens" -ge 4 ] || fail "only $tokens tokens issued in a run of several 4 s lifetimes"
grep -qs "retrying in\|submitted by a later poll" "$NNI_HOME/$id"/log/*.log || fail "no retry logged"
pass "10 trials each ran once, metrics complete; $tokens tokens, none expired at ARM ($(aml_stat 's["injected"]') faults)"
nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "89e-aml-faults: passed"
