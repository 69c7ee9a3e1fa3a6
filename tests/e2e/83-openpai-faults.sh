#!/usr/bin/env bash
# OpenPAI faults: a rejected token is reported by `nnictl create` and nothing is created
# or submitted; then, while an experiment runs, the server answers 429 with
# Retry-After (no call before it), 503, then too slowly (the worker's call times
# out), then 502 (each phase until the server has served its fault):
# the worker retries with back-off and loses nothing (every trial SUCCEEDED once, no
# job created twice, metrics complete).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/openpai.sh"

pai_start_server
port=$(free_port)

# 1. a bad token
pai_experiment "$WORK/bad" 2 4 3
sed -i "s/^  token: .*/  token: not-$PAI_TOKEN/" "$WORK/bad/config.yml"
if nnictl create --config "$WORK/bad/config.yml" --port "$port" > "$WORK/bad.out" 2>&1; then
    cat "$WORK/bad.out"; fail "create succeeded with a bad token"
fi
cat "$WORK/bad.out"
grep -q "rejected the token of user '$PAI_USER'" "$WORK/bad.out" || fail "the error does not say the token was rejected"
grep -q "trainingService.token" "$WORK/bad.out" || fail "the error does not name trainingService.token"
grep -q "HTTP 401" "$WORK/bad.out" || fail "the error does not give the server's answer"
[ "$(sql "SELECT count(*) FROM experiment" 2>/dev/null || echo 0)" = 0 ] || fail "an experiment was created"
[ "$(pai_stat posts)" = 0 ] || fail "a job was submitted with a bad token"
[ "$(pai_stat unauthorized)" -ge 1 ] || fail "the token was never tried"
pass "bad token: clear error, nothing created, nothing submitted"

# 2. a server that fails for a while
export TRIAL_STEPS=3 TRIAL_SLEEP=0.5   # the experiment outlasts the fault phases
pai_stop_server
pai_start_server
pai_experiment "$WORK/exp" 4 12 9
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" '>=2' 30 "2 trials RUNNING"
# each phase waits until the server says its fault met that many requests
# 429 Too Many Requests with Retry-After: 3: no call at all until then
fault_phase pai '{"status": 429, "count": 1, "retry_after": 3}' 1
c0=$(pai_stat calls)
sleep 2   # the window the assertion is about, not a phase boundary
c1=$(pai_stat calls)
[ "$c1" -le $((c0 + 1)) ] || fail "$((c1 - c0)) calls within 2 s of a 429 with Retry-After: 3"
pass "a 429 with Retry-After: 3 held every call back ($((c1 - c0)) in the next 2 s)"
# (the status of all jobs comes from one list call, and one back-off serves them all:
# one fault each keeps the failures in a row, and so the back-off, short)
fault_phase pai '{"status": 503, "count": 1}' 1
fault_phase pai '{"delay": 3, "count": 1}' 1      # answers after 3 s: the worker gives up after 2 s
fault_phase pai '{"status": 502, "count": 1}' 1
wait_status "$id" DONE 180
pass "experiment reached DONE through 503s, timeouts and 502s"

injected=$(pai_stat injected)
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND attempt=1")
[ "$ok" = 12 ] || { sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id'"; fail "$ok of 12 SUCCEEDED in attempt 1"; }
# nothing duplicated: a submission that timed out is found by name, not created again
[ "$(pai_stat created)" = 12 ] || fail "$(pai_stat created) jobs created for 12 trials"
pai_stats | "$PY" -c "
import json, sys
s = json.load(sys.stdin)
names = s['created_names']
assert len(names) == len(set(names)) == 12, names
" || fail "a job name was created twice"
grep -qs "retrying in" "$NNI_HOME/$id"/log/*.log || fail "no retry logged"
pai_assert_metrics "$id"
pass "$injected failed answers; 12 trials each ran once; metrics complete"

nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "83-openpai-faults: passed"
