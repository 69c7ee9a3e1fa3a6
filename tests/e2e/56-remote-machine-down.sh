#!/usr/bin/env bash
# A machine dies mid-experiment (its sshd and every session killed, its trials gone):
# it is marked unhealthy in the machine table, its running trials are retried on the
# other machine (maxTrialRetries), the experiment finishes there. When the machine
# comes back, the worker reconnects (back-off) and places trials on it again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/remote.sh"
remote_machines

mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/exp/"
remote_config "$WORK/exp/config.yml" 4 70 "maxTrialRetries: 2"
sed -i 's/^trialCommand: .*/trialCommand: TRIAL_SLEEP=0.4 sh metrics.sh/' "$WORK/exp/config.yml"
port=$(free_port)
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create"; }
id=$(exp_id_of "$WORK/create.out")
REMOTE_EXPS="$id"
m2="127.0.0.1:${SSHD_PORT[2]}"

# wait for trials running on machine 2 and a few finished
m2_busy() {
    r2=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING' AND machine='$m2'")
    done_n=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")
    [ "$r2" -ge 1 ] && [ "$done_n" -ge 4 ]
}
wait_until 60 m2_busy || fail "machine 2 runs $r2 trials with $done_n SUCCEEDED; wanted >= 1 with >= 4"
victims=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING' AND machine='$m2'")
# the machine dies: sshd, sessions and the trials it ran
remote_machine_down 2
for p in $(remote_procs "$id"); do
    [ "$(stat -c %U /proc/$p 2>/dev/null)" = tqremote2 ] && kill -9 "$p" 2>/dev/null || true
done
t_down=$(date +%s)

wait_sql "SELECT healthy FROM machine WHERE platform='remote' AND port=${SSHD_PORT[2]}" 0 60 "machine 2 not marked unhealthy"
err=$(sql "SELECT last_error FROM machine WHERE platform='remote' AND port=${SSHD_PORT[2]}")
echo "$err" | grep -qi "unreachable\|connect\|lost" || fail "machine 2's last_error does not say why: $err"
[ "$(sql "SELECT healthy FROM machine WHERE platform='remote' AND port=${SSHD_PORT[1]}")" = 1 ] || fail "machine 1 not healthy"
pass "machine 2 marked down after $(( $(date +%s) - t_down ))s: $err"
# ... and users see it: GET /machines and nnictl experiment machines
curl -sf "http://127.0.0.1:$port/api/v1/nni/machines" > "$WORK/machines.json" || fail "GET /machines"
$PY - "$WORK/machines.json" "${SSHD_PORT[1]}" "${SSHD_PORT[2]}" <<'PY' || fail "GET /machines: $(cat "$WORK/machines.json")"
import json, sys
ms = {m["port"]: m for m in json.load(open(sys.argv[1]))}
p1, p2 = int(sys.argv[2]), int(sys.argv[3])
assert set(ms) == {p1, p2}, ms
assert ms[p1]["healthy"] is True and ms[p2]["healthy"] is False, ms
assert ms[p2]["lastError"], ms
PY
nnictl experiment machines "$id" > "$WORK/machines.out"
grep -q "@127.0.0.1:${SSHD_PORT[2]} *DOWN" "$WORK/machines.out" || fail "nnictl experiment machines: $(cat "$WORK/machines.out")"
grep -q "@127.0.0.1:${SSHD_PORT[1]} *healthy" "$WORK/machines.out" || fail "nnictl experiment machines: $(cat "$WORK/machines.out")"
pass "machine health shown by GET /machines and nnictl experiment machines"

for v in $victims; do
    wait_until 60 sql_is "SELECT attempt FROM trial WHERE id='$v'" '>=2' || fail "trial $v of the dead machine was not retried"
    sql "SELECT reason FROM event WHERE trial_id='$v' AND to_state='WAITING'" | grep -q "$m2 is down" ||
        fail "the retry of $v does not say machine 2 is down"
done
pass "trials of the dead machine retried: $(echo $victims)"

# the machine comes back: reconnected, used again
remote_sshd 2
wait_sql "SELECT healthy FROM machine WHERE platform='remote' AND port=${SSHD_PORT[2]}" 1 90 "machine 2 not healthy again after its sshd came back"
pass "machine 2 reconnected"

wait_status "$id" DONE 300
for v in $victims; do
    st=$(sql "SELECT status || ' ' || machine FROM trial WHERE id='$v'")
    [[ "$st" = SUCCEEDED* ]] || fail "retried trial $v ended $st"
done
bad=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status != 'SUCCEEDED'")
[ "$bad" = 0 ] || { sql "SELECT id, status, attempt, machine, message FROM trial WHERE experiment_id='$id' AND status != 'SUCCEEDED'"; fail "$bad trials did not succeed"; }
later=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND machine='$m2' AND start_time > (SELECT max(time) FROM event WHERE experiment_id='$id' AND reason LIKE '%is down%')")
[ "$later" -ge 1 ] || fail "no trial placed on machine 2 after it came back"
pass "experiment finished: 70 SUCCEEDED, $later placed on machine 2 after its return"
remote_wait_no_procs "$id" 20

# stop while every machine is dead: it ends the trials without hanging
mkdir -p "$WORK/exp2"
cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/exp2/"
remote_config "$WORK/exp2/config.yml" 2 4
sed -i 's/^trialCommand: .*/trialCommand: TRIAL_SLEEP=300 sh metrics.sh/' "$WORK/exp2/config.yml"
nnictl create --config "$WORK/exp2/config.yml" --port "$(free_port)" > "$WORK/create2.out" 2>&1 ||
    { cat "$WORK/create2.out"; fail "create 2"; }
id2=$(exp_id_of "$WORK/create2.out")
REMOTE_EXPS="$id $id2"
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status='RUNNING'" 2 60 "2 trials of experiment 2 running"
remote_machine_down 1
remote_machine_down 2
for p in $(remote_procs "$id2"); do kill -9 "$p" 2>/dev/null || true; done
t0=$(date +%s)
timeout 120 nnictl stop "$id2" > "$WORK/stop2.out" 2>&1 || true
took=$(( $(date +%s) - t0 ))
[ "$took" -lt 90 ] || fail "stop took ${took}s with every machine dead"
left=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status IN ('RUNNING','WAITING') AND lease_owner IS NOT NULL")
[ "$left" = 0 ] || { sql "SELECT id, status, message FROM trial WHERE experiment_id='$id2'"; fail "$left trials left running after stop"; }
pass "stop with every machine dead returned in ${took}s, no trial left running"
