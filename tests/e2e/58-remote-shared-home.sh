#!/usr/bin/env bash
# Two remote machines that see one home directory (in the field: cluster nodes with an
# NFS home; here: one account, tqremote1, reached at two sshd ports, so both machines
# also share the host: machine id and boot id are the same). Every trial's files are in
# the one $HOME/nni-experiments/<exp>, whichever machine runs it.
#   1. 12 trials at concurrency 4; every manager process (nnictl, api, workers) is
#      killed -9 while trials run, then `nnictl resume`: the worker that takes over finds
#      machine B's trials in the shared dir while it connects to machine A and leaves them
#      alone (they were killed as strays before): every trial SUCCEEDED as attempt 1 with
#      all its metrics, no run killed, nothing left running after stop. The shared home
#      is reported once, as information, by `nnictl experiment machines` and the log.
#   2. The same crash and resume, then `nnictl trial kill` of a trial placed on machine
#      B: that trial alone ends (USER_CANCELED, its process group gone), the others
#      SUCCEEDED as attempt 1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/remote.sh"
remote_machines
U=tqremote1
RH=/home/$U/nni-experiments
A="127.0.0.1:${SSHD_PORT[1]}"
B="127.0.0.1:${SSHD_PORT[2]}"

# The trial: TRIAL_STEPS metrics TRIAL_SLEEP s apart, then a final one (metrics.sh);
# sequence numbers listed in $LONG run until $RELEASE exists (and record a SIGINT)
cat > "$WORK/shared.sh" <<'SH'
case " $LONG " in
*" $NNI_TRIAL_SEQ_ID "*)
    trap 'echo INT > "$NNI_SYS_DIR/interrupted"; exit 130' INT
    while [ ! -e "$RELEASE" ]; do sleep 0.2; done ;;
esac
exec sh metrics.sh
SH

# exp_config DIR CONCURRENCY MAX_TRIALS STEPS SLEEP LONG: both machines are tqremote1
exp_config() {
    mkdir -p "$1"
    cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/shared.sh" "$1/"
    write_config "$1/config.yml" trialCommand="TRIAL_STEPS=$4 TRIAL_SLEEP=$5 LONG='$6' RELEASE=$WORK/release sh shared.sh" \
        trialConcurrency="$2" maxTrialNumber="$3" tuner='{name: Random, classArgs: {seed: 17}}' \
        trainingService="$(REMOTE_USER=$U remote_ts 1 2)"
}

# start_fg DIR: nnictl create --foreground (one more manager process to kill); sets ID, NPID
start_fg() {
    local port
    port=$(free_port)
    nnictl create --config "$1/config.yml" --port "$port" --foreground > "$1/create.out" 2>&1 &
    NPID=$!
    id_printed() { ID=$(exp_id_of "$1"); [ -n "$ID" ]; }
    wait_until 30 id_printed "$1/create.out" || { cat "$1/create.out" >&2; fail "create $1"; }
    PORT=$port
}

live() { # PID: runs (a zombie left to an init that does not reap does not count)
    local st
    st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) && [ "$st" != Z ]
}

# started ID: the RUNNING trials whose process runs (a trial pid, no exit code yet)
started() {
    local v n=0
    for v in $(sql "SELECT id FROM trial WHERE experiment_id='$1' AND status='RUNNING'"); do
        [ -s "$RH/$1/trials/$v/.nni/trialpid" ] && [ ! -e "$RH/$1/trials/$v/.nni/code" ] && n=$((n + 1))
    done
    echo "$n"
}

# crash ID: waits until 4 trials run, on both machines, then kills -9 every manager
# process at once: the foreground nnictl, the api, its workers
crash() {
    local id=$1 pids p
    wait_sql "SELECT count(DISTINCT machine) || ' ' || count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" \
        "2 4" 120 "4 trials running on both machines"
    all_4_started() { [ "$(started "$id")" = 4 ]; }
    WAIT_STEP=0.05 wait_until 5 all_4_started || fail "the 4 running trials did not start on the machines"
    pids="$NPID $(sql "SELECT pid FROM process WHERE experiment_id='$id' AND ended_at IS NULL") $(our_pids)"
    kill -9 $pids 2>/dev/null || true
    wait "$NPID" 2>/dev/null || true
    for p in $pids; do
        wait_until 5 not live "$p" || fail "manager process $p survived kill -9"
    done
    [ -z "$(our_pids)" ] || fail "manager processes survived kill -9: $(our_pids)"
    CRASH_RUNNING=$(sql "SELECT id || ' ' || machine FROM trial WHERE experiment_id='$id' AND status='RUNNING'")
    [ "$(remote_procs "$id" | wc -l)" -gt 0 ] || fail "no trial runs after the crash: nothing tested"
    pass "every manager process killed -9 while these trials ran: $(echo $CRASH_RUNNING)"
    nnictl resume "$id" --port "$PORT" > "$WORK/resume-$id.out" 2>&1 || { cat "$WORK/resume-$id.out" >&2; fail "resume"; }
}

# check_succeeded ID TRIAL: SUCCEEDED as attempt 1, started once, its metrics exactly
# what it wrote
check_succeeded() {
    local id=$1 v=$2 dir=$RH/$1/trials/$2 st want got
    st=$(sql "SELECT status || ' ' || attempt FROM trial WHERE id='$v'")
    [ "$st" = "SUCCEEDED 1" ] || fail "trial $v: $st: $(sql "SELECT machine, message FROM trial WHERE id='$v'")"
    [ "$(ls -d "$dir".*.job | wc -l)" = 1 ] && [ ! -e "$dir.attempt1" ] || fail "$v started more than once"
    [ "$(grep -c '^FINAL' "$dir/written.log")" = 1 ] || fail "$v ran its command more than once"
    want=$(sort "$dir/written.log")
    got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$v'" | sort)
    [ "$want" = "$got" ] || { echo "want: $want" >&2; echo "got: $got" >&2; fail "metrics of $v differ"; }
}

nothing_killed() { # ID
    local k
    k=$(sql "SELECT trial_id || ': ' || reason FROM event WHERE experiment_id='$1' AND entity='process' AND to_state='KILLED'")
    [ -z "$k" ] || fail "runs killed at resume: $k"
    ! grep -rqs "killing it" "$NNI_HOME/$1/log/" || fail "the log names a kill: $(grep -rhs "killing it" "$NNI_HOME/$1/log/")"
}

# ---- 1. crash and resume with a shared home
exp_config "$WORK/exp1" 4 12 3 1 ""
start_fg "$WORK/exp1"
id=$ID
REMOTE_EXPS="$id"
crash "$id"
wait_status "$id" DONE 240
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")" = 12 ] || fail "not 12 trials"
for v in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    check_succeeded "$id" "$v"
    [ "$(wc -l < "$RH/$id/trials/$v/written.log")" = 4 ] || fail "trial $v wrote not 4 metrics"
done
[ "$(sql "SELECT count(DISTINCT machine) FROM trial WHERE experiment_id='$id'")" = 2 ] || fail "not both machines used"
nothing_killed "$id"
pass "12 trials SUCCEEDED as attempt 1 with all their metrics; nothing killed at resume"

# the shared home: shown once by nnictl experiment machines, and in the log
nnictl experiment machines "$id" > "$WORK/machines.out" 2>&1 || { cat "$WORK/machines.out"; fail "experiment machines"; }
[ "$(grep -ci "share one home" "$WORK/machines.out")" = 1 ] || { cat "$WORK/machines.out"; fail "shared home not shown once"; }
grep -q "$U@$A" "$WORK/machines.out" && grep -q "$U@$B" "$WORK/machines.out" &&
    [ "$(grep -c healthy "$WORK/machines.out")" = 2 ] || { cat "$WORK/machines.out"; fail "machines not listed healthy"; }
nnictl experiment machines "$id" --json | grep -q '"sharedHome"' || fail "machines --json names no sharedHome"
grep -rqs "share one home" "$NNI_HOME/$id/log/" || fail "the log does not name the shared home"
pass "shared home shown once: $(grep -i "share one home" "$WORK/machines.out")"
nnictl stop "$id" > /dev/null
remote_wait_no_procs "$id" 20

# ---- 2. crash, resume, then a trial placed on machine B is killed with nnictl trial kill
rm -f "$WORK/release"
exp_config "$WORK/exp2" 4 8 3 0.5 "0 1 2 3"
start_fg "$WORK/exp2"
id2=$ID
REMOTE_EXPS="$id $id2"
crash "$id2"
wait_until 30 grep -rqs "adopted" "$NNI_HOME/$id2/log/" || fail "the resumed experiment logged no adoption"
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status='RUNNING' AND lease_owner IS NOT NULL" 4 60 \
    "4 trials held again after resume"
victim=$(sql "SELECT id FROM trial WHERE experiment_id='$id2' AND status='RUNNING' AND machine='$B' ORDER BY sequence LIMIT 1")
[ -n "$victim" ] || fail "no trial running on machine B"
vdir=$RH/$id2/trials/$victim
vpid=$(cat "$vdir/.nni/trialpid")
others=$(sql "SELECT id FROM trial WHERE experiment_id='$id2' AND status='RUNNING' AND id != '$victim'")
nnictl trial kill "$id2" --trial_id "$victim" > /dev/null || fail "nnictl trial kill"
wait_sql "SELECT status FROM trial WHERE id='$victim'" USER_CANCELED 30 "the killed trial ends USER_CANCELED"
remote_group_gone "$vpid" 10 || fail "process group $vpid of the killed trial lives on"
[ "$(cat "$vdir/interrupted" 2>/dev/null)" = INT ] || fail "the killed trial did not get SIGINT"
sleep 1
for v in $others; do
    [ "$(sql "SELECT status FROM trial WHERE id='$v'")" = RUNNING ] || fail "trial $v ended with the killed one"
    [ ! -e "$RH/$id2/trials/$v/interrupted" ] || fail "trial $v got the kill's SIGINT"
done
touch "$WORK/release"
wait_status "$id2" DONE 240
for v in $(sql "SELECT id FROM trial WHERE experiment_id='$id2' AND id != '$victim'"); do
    check_succeeded "$id2" "$v"
done
nothing_killed "$id2"
pass "trial kill on machine B with a shared home: only $victim ended; the other 7 SUCCEEDED as attempt 1"
nnictl stop "$id2" > /dev/null
remote_wait_no_procs "$id2" 20
remote_wait_no_procs "$id" 5
assert_no_leftovers
pass "nothing left running after stop"
