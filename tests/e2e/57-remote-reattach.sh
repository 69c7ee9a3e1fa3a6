#!/usr/bin/env bash
# The worker is killed (-9) while its trials run on the remote hosts, and later a
# machine's SSH session drops: the api's new worker re-attaches to the running jobs
# through the runner's job files and the worker reconnects; every trial ends
# SUCCEEDED as attempt 1, each started exactly once, no metric counted twice.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/remote.sh"
remote_machines

mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/exp/"
remote_config "$WORK/exp/config.yml" 4 8
sed -i 's/^trialCommand: .*/trialCommand: TRIAL_STEPS=8 TRIAL_SLEEP=0.5 sh metrics.sh/' "$WORK/exp/config.yml"
port=$(free_port)
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create"; }
id=$(exp_id_of "$WORK/create.out")
REMOTE_EXPS="$id"

wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 4 60 "4 trials running"
running=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING'")
[ "$(echo "$running" | wc -w)" = 4 ] || fail "4 trials not running"
wpid=$(sql "SELECT pid FROM process WHERE experiment_id='$id' AND role='worker:remote' AND ended_at IS NULL ORDER BY id DESC LIMIT 1")
[ -n "$wpid" ] || fail "no worker process row"
kill -9 "$wpid"
new_worker() {
    w2=$(sql "SELECT pid FROM process WHERE experiment_id='$id' AND role='worker:remote' AND ended_at IS NULL AND pid != $wpid ORDER BY id DESC LIMIT 1")
    [ -n "$w2" ] && kill -0 "$w2" 2>/dev/null
}
wait_until 30 new_worker || fail "the api did not start a new worker (last seen: '$w2')"
pass "worker $wpid killed; new worker $w2"

# while the new worker holds the jobs, machine 1's session drops (the listener lives)
adopted() { grep -q "adopted" "$NNI_HOME/$id/log/"*.log 2>/dev/null; }
wait_until 30 adopted || fail "the new worker logged no adoption"
sleep 1
remote_drop_sessions 1

wait_status "$id" DONE 240
bad=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND (status != 'SUCCEEDED' OR attempt != 1)")
[ "$bad" = 0 ] || { sql "SELECT id, status, attempt, machine, message FROM trial WHERE experiment_id='$id'"; fail "trials not SUCCEEDED at attempt 1"; }
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    rdir=$(remote_dir_of "$tid")
    # exactly one start: one claim marker, no earlier attempt moved aside, one run of the trial
    [ "$(ls -d "$rdir".*.job | wc -l)" = 1 ] || fail "$tid started more than once"
    [ ! -e "$rdir.attempt1" ] || fail "$tid was started again"
    [ "$(grep -c '^FINAL' "$rdir/written.log")" = 1 ] || fail "$tid ran its command more than once"
    want=$(sort "$rdir/written.log")
    got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$tid'" | sort)
    [ "$want" = "$got" ] || { echo "want: $want"; echo "got: $got"; fail "metrics of $tid differ"; }
done
for tid in $running; do
    sql "SELECT reason FROM event WHERE trial_id='$tid'" | grep -q "adopted" || fail "$tid was not adopted"
done
n1=$(grep -c "Accepted .* port" "$WORK/sshd-1.log" || true)
[ "$n1" -ge 4 ] || fail "machine 1 saw $n1 logins: the worker did not reconnect after the drop"
grep -rq "machine tqremote1@127.0.0.1:${SSHD_PORT[1]}: connection lost" "$NNI_HOME/$id/log/" ||
    fail "the worker did not notice the dropped session"
pass "re-attached after the worker restart and the session drop: 8 SUCCEEDED, each started once, metrics exact"
remote_wait_no_procs "$id" 20
