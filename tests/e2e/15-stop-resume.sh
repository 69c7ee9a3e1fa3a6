#!/usr/bin/env bash
# nnictl stop while trials run: they end USER_CANCELED, every process is gone, the
# port is free; stop is idempotent; resume continues the same experiment (and the
# same parameter sequence); view serves it read-only; bad ids give clear messages.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
metrics_experiment "$WORK/exp" 3 12 11
export TRIAL_STEPS=4 TRIAL_SLEEP=0.5

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
WAIT_STEP=0.05 wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 3 5 "3 trials never ran"

nnictl stop "$id" > "$WORK/stop.out"
grep -q "Stop experiment success" "$WORK/stop.out" || fail "stop did not report success"
[ "$(sql "SELECT status FROM experiment WHERE id='$id'")" = STOPPED ] || fail "not STOPPED"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND (status = 'RUNNING' OR lease_owner IS NOT NULL)")" = 0 ] ||
    fail "trials still running or held after stop"
cancelled=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='USER_CANCELED'")
[ "$cancelled" -ge 3 ] || fail "running trials did not end USER_CANCELED ($cancelled)"
port_is_free "$port" || fail "port busy after stop"
assert_no_leftovers
pass "stop: $cancelled trials USER_CANCELED, no process left, port free"

nnictl stop "$id" > "$WORK/stop2.out" 2>&1 || fail "a second stop failed"
pass "stop is idempotent"

# resume: continues the experiment to its budget with new trials
nnictl resume "$id" --port "$port" > "$WORK/resume.out"
wait_status "$id" DONE 120
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")" = 12 ] || fail "resume did not reach 12 trials"
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")
cancelled=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='USER_CANCELED'")
[ $((ok + cancelled)) = 12 ] || fail "after resume: $ok succeeded + $cancelled cancelled != 12"
nnictl stop "$id" > /dev/null
pass "resume continued to DONE"

# resuming a DONE experiment whose budget is used: it stays DONE with its end time (NNI
# clears endTime only when the budget is not used up)
ended=$(sql "SELECT status || ' ' || end_time FROM experiment WHERE id='$id'")
nnictl resume "$id" --port "$port" > /dev/null
sleep 1 # a tick or two
[ "$(sql "SELECT status || ' ' || end_time FROM experiment WHERE id='$id'")" = "$ended" ] ||
    fail "resume of a used-up DONE experiment: $ended -> $(sql "SELECT status || ' ' || end_time FROM experiment WHERE id='$id'")"
nnictl stop "$id" > /dev/null
pass "resume of a DONE experiment with its budget used: DONE, end time kept"

# the parameter sequence is a function of (seed, index): same as a fresh run with the same seed
seq_a=$(sql "SELECT parameters FROM trial WHERE experiment_id='$id' ORDER BY sequence")
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create2.out"
id2=$(exp_id_of "$WORK/create2.out")
wait_status "$id2" DONE 120
nnictl stop "$id2" > /dev/null
seq_b=$(sql "SELECT parameters FROM trial WHERE experiment_id='$id2' ORDER BY sequence")
[ "$seq_a" = "$seq_b" ] || { echo "$seq_a"; echo ---; echo "$seq_b"; fail "parameter sequence differs across stop/resume"; }
pass "same parameters as an uninterrupted run with the same seed"

# view: read-only
nnictl view "$id" --port "$port" > /dev/null
curl -sf "http://127.0.0.1:$port/api/v1/nni/check-status" | grep -q VIEWED || fail "view status"
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/json' \
    -d '{"params":{"trialConcurrency":5}}' "http://127.0.0.1:$port/api/v1/nni/experiment?update_type=TRIAL_CONCURRENCY")
[ "$code" = 400 ] || fail "view accepted a change ($code)"
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "http://127.0.0.1:$port/api/v1/nni/experiment")
[ "$code" = 200 ] || fail "DELETE /experiment in view mode gave $code"
wait_until 5 port_is_free "$port" || fail "DELETE /experiment did not end the view api"
st=$(sql "SELECT status FROM experiment WHERE id='$id'"); [ "$st" = DONE ] || fail "viewing changed the stored status to $st"
nnictl view "$id" --port "$port" > /dev/null
nnictl stop "$id" > /dev/null
port_is_free "$port" || fail "port busy after view stop"
[ "$(sql "SELECT status FROM experiment WHERE id='$id'")" = DONE ] || fail "stopping a view changed the stored status"
pass "view is read-only"

# clear messages for wrong ids and busy ports
out=$(nnictl experiment show nosuchid 2>&1 || true)
echo "$out" | grep -q "Id not correct" || fail "unknown id message: $out"
$PY -c "import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',$port)); s.listen(); time.sleep(5)" &
holder=$!
WAIT_STEP=0.05 wait_until 5 port_busy "$port" || fail "the port holder did not take port $port"
out=$(nnictl create --config "$WORK/exp/config.yml" --port "$port" 2>&1 || true)
kill $holder 2>/dev/null || true
echo "$out" | grep -q "Port $port is not idle" || fail "busy port message: $out"
pass "clear messages for unknown id and busy port"

# ids as typed: a unique prefix resolves, in its case, with no wildcards ('_', '%'
# are characters); "ID*" stops every running experiment that starts with ID
p1=${id:0:1}
u=$(printf '%s' "$p1" | tr 'a-z0-9' 'A-Z_')
out=$(nnictl experiment show "${id:0:7}" 2>&1) || fail "a unique prefix did not resolve: $out"
for wild in "${p1}%" "${p1}_" "$u" "%"; do
    out=$(nnictl experiment show "$wild" 2>&1) && fail "'$wild' resolved to an experiment: $out"
    echo "$out" | grep -q "Id not correct" || fail "'$wild': $out"
done
nnictl view "$id" --port "$port" > /dev/null
nnictl stop "${id:0:3}*" > "$WORK/glob.out" 2>&1 || { cat "$WORK/glob.out"; fail "stop ID*"; }
grep -q "Stop experiment success" "$WORK/glob.out" || fail "stop ID*: $(cat "$WORK/glob.out")"
port_is_free "$port" || fail "stop ID* left the api running"
pass "ids: prefixes as typed (no wildcards, case kept); stop ID*"
assert_no_leftovers
echo "15-stop-resume: passed"
