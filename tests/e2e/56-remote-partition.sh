#!/usr/bin/env bash
# A network partition: machine A becomes unreachable while its trials keep running (they
# are detached from SSH). A is marked down and its trials are retried as attempt 2; when A
# comes back, the worker kills the attempt-1 runs it finds there (they are no trial's
# current attempt) before it places anything new there, records each kill as an event,
# and no metric an attempt-1 process writes is stored as attempt 2's.
#   1. two machines: the retries run on B; A's orphans are killed when A returns.
#   2. one machine: the retries land on A itself, in the same trial dirs, while the old
#      attempts (which ignore SIGINT and SIGTERM) are still being killed and still writing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/remote.sh"
remote_machines

# The trial: ignores SIGINT and SIGTERM (an old attempt lives through the runner's whole
# 5 s grace),
# tags every metric with its attempt (value = attempt * 100000 + step, read from the
# runner's .nni/attempt at its start) and appends each record by path, as a shell trial
# does, so an old attempt still running after a new one took the dir over would write into
# the new attempt's files. Attempt 1 runs until $RELEASE exists; later attempts run 10 steps.
cat > "$WORK/part.sh" <<'SH'
trap '' INT TERM
d=$NNI_SYS_DIR
att=$(cat "$d/.nni/attempt")
pid=$(sed -n 's/.*"parameter_id":\([0-9]*\).*/\1/p' "$d/parameter.cfg")
emit() {
    rec=$(printf '{"parameter_id":%s,"trial_job_id":"%s","type":"%s","sequence":%s,"value":"%s"}' \
        "$pid" "$NNI_TRIAL_JOB_ID" "$1" "$2" "$3")
    printf 'ME%06d%s\n' "$((${#rec} + 1))" "$rec" >> "$d/.nni/metrics"
    echo "$1 $2 $3" >> "$d/written.$att.log"
}
i=0
while :; do
    emit PERIODICAL "$i" "$((att * 100000 + i))"
    i=$((i + 1))
    if [ "$att" = 1 ]; then [ -e "$RELEASE" ] && break; else [ "$i" -lt 10 ] || break; fi
    sleep 0.2
done
emit FINAL 0 "$((att * 100000 + 99999))"
SH

# exp_config DIR MACHINES...: 2 trials per machine listed, each retried at most twice
exp_config() {
    local dir=$1
    shift
    mkdir -p "$dir"
    cp "$WORK/part.sh" "$dir/"
    write_config "$dir/config.yml" trialCommand="RELEASE=$WORK/release sh part.sh" trialConcurrency=$(($# * 2)) \
        maxTrialNumber=$(($# * 2)) maxTrialRetries=2 trainingService="$(remote_ts "$@")"
}

start_exp() { # DIR -> experiment id
    nnictl create --config "$1/config.yml" --port "$(free_port)" > "$1/create.out" 2>&1 ||
        { cat "$1/create.out" >&2; fail "create $1"; }
    exp_id_of "$1/create.out"
}

alive() { # PID START: that process still runs (not a zombie, same start time)
    local st
    st=$(cut -d' ' -f3,22 "/proc/$1/stat" 2>/dev/null) || return 1
    [ "${st%% *}" != Z ] && [ "${st#* }" = "$2" ]
}

group_alive() { # PGID: a live (non-zombie) process is in that process group
    [ -n "$(ps -eo pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/')" ]
}

A="127.0.0.1:${SSHD_PORT[1]}"
AL="tqremote1@127.0.0.1:${SSHD_PORT[1]}"
declare -A RPID RSTART TPID

trial_files() { [ -s "$1/.nni/trialpid" ] && [ -s "$1/.nni/metrics" ]; }

# partition_a ID: waits until A runs 2 trials, records their attempt-1 runners and trial
# groups, cuts A off, checks they live on, waits until A is down and both are retried
partition_a() {
    local id=$1 v dir
    wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING' AND machine='$A'" 2 120 \
        "2 trials running on machine A"
    victims=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING' AND machine='$A'")
    for v in $victims; do
        dir=/home/tqremote1/nni-experiments/$id/trials/$v
        wait_until 10 trial_files "$dir" || fail "trial $v: no trialpid and metrics in $dir/.nni"
        read -r RPID[$v] RSTART[$v] < "$dir/.nni/runner" || fail "no runner file in $dir"
        TPID[$v]=$(cat "$dir/.nni/trialpid")
    done
    remote_partition 1
    sleep 1
    for v in $victims; do
        alive "${RPID[$v]}" "${RSTART[$v]}" || fail "the partition killed the runner of $v"
        group_alive "${TPID[$v]}" || fail "the partition killed the trial $v"
    done
    wait_sql "SELECT healthy FROM machine WHERE platform='remote' AND port=${SSHD_PORT[1]}" 0 60 "machine A marked down"
    for v in $victims; do
        wait_sql "SELECT attempt FROM trial WHERE id='$v'" '>=2' 30 "trial $v retried after machine A went down"
        sql "SELECT reason FROM event WHERE trial_id='$v' AND to_state='WAITING'" | grep -q "$A is down" ||
            fail "trial $v was not retried after machine A went down"
        alive "${RPID[$v]}" "${RSTART[$v]}" || fail "attempt 1 of $v ended by itself: the test shows nothing"
    done
    pass "machine A cut off and marked down; its trials $(echo $victims) retried, their attempt-1 runs live on there"
}

# a_returns ID: A comes back; its attempt-1 runs are killed (runner and trial group) and
# each kill is logged and recorded as an event
a_returns() {
    local id=$1 v
    remote_sshd 1
    wait_sql "SELECT healthy FROM machine WHERE platform='remote' AND port=${SSHD_PORT[1]}" 1 90 "machine A healthy again"
    for v in $victims; do
        remote_group_gone "${TPID[$v]}" 15 || fail "attempt 1 of $v (process group ${TPID[$v]}) still runs on A"
        wait_until 5 not alive "${RPID[$v]}" "${RSTART[$v]}" || fail "the runner ${RPID[$v]} of attempt 1 of $v still runs on A"
        ev=$(sql "SELECT reason FROM event WHERE trial_id='$v' AND entity='process' AND from_state='RUNNING'
                  AND to_state='KILLED'")
        echo "$ev" | grep -q "attempt 1 on $AL" || fail "no event records the kill of attempt 1 of $v: '$ev'"
        grep -rqs "trial $v: attempt 1 on $AL: killing it" "$NNI_HOME/$id/log/" ||
            fail "the worker log does not name the kill of attempt 1 of $v"
    done
    pass "machine A back: attempt 1 of $(echo $victims) killed there (runner and process group), events: $ev"
}

# check_trial ID TRIAL DIR: ended once, SUCCEEDED as attempt 2 with attempt 2's final
# metric; the attempt-2 metric rows are exactly what attempt 2 wrote (DIR: its trial dir)
check_trial() {
    local id=$1 v=$2 dir=$3 st want got ends
    st=$(sql "SELECT status || ' ' || attempt || ' ' || final_metric FROM trial WHERE id='$v'")
    [ "$st" = "SUCCEEDED 2 299999.0" ] || fail "trial $v: $st (wanted SUCCEEDED, attempt 2, final 299999)"
    ends=$(sql "SELECT count(*) FROM event WHERE trial_id='$v' AND entity='trial'
                AND to_state IN ('SUCCEEDED','FAILED','USER_CANCELED','SYS_CANCELED','EARLY_STOPPED')")
    [ "$ends" = 1 ] || fail "trial $v ended $ends times"
    [ -f "$dir/written.2.log" ] || fail "no $dir/written.2.log"
    want=$(sort "$dir/written.2.log")
    got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$v' AND attempt=2" | sort)
    [ "$want" = "$got" ] || { echo "want: $want" >&2; echo "got: $got" >&2; fail "attempt-2 metrics of $v differ from what attempt 2 wrote"; }
    [ "$(sql "SELECT count(*) FROM metric WHERE trial_id='$v' AND attempt=2 AND CAST(value AS INTEGER) < 200000")" = 0 ] ||
        fail "attempt-1 metrics of $v stored as attempt 2"
    # what the API shows for the trial: attempt 2's final metric only
    [ "$(sql "SELECT count(*) FROM metric WHERE trial_id='$v' AND attempt=2 AND type='FINAL'")" = 1 ] ||
        fail "trial $v: not one final metric for attempt 2"
}

# ---- 1. two machines: the retries run on B
exp_config "$WORK/exp1" 1 2
id=$(start_exp "$WORK/exp1")
REMOTE_EXPS="$id"
partition_a "$id"
B="127.0.0.1:${SSHD_PORT[2]}"
for v in $victims; do
    wait_sql "SELECT attempt || ' ' || machine FROM trial WHERE id='$v' AND status IN ('RUNNING','SUCCEEDED')" "2 $B" 60 \
        "trial $v running as attempt 2 on machine B"
done
a_returns "$id"
touch "$WORK/release"
wait_status "$id" DONE 120
for v in $victims; do
    check_trial "$id" "$v" "/home/tqremote2/nni-experiments/$id/trials/$v"
done
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 4 ] ||
    fail "not all 4 trials SUCCEEDED"
[ "$(sql "SELECT count(*) FROM event WHERE experiment_id='$id' AND entity='process' AND to_state='KILLED'")" = 2 ] ||
    fail "runs killed that should not have been: $(sql "SELECT trial_id, reason FROM event WHERE experiment_id='$id' AND to_state='KILLED'")"
pass "two machines: each retried trial ended once, SUCCEEDED as attempt 2 on B, its metrics exactly attempt 2's"
remote_wait_no_procs "$id" 20

# ---- 2. one machine: the retries start on A in the same trial dirs while the old
# attempts are still being killed (they ignore SIGINT and SIGTERM, so they live 5 s more and write)
rm -f "$WORK/release"
exp_config "$WORK/exp2" 1
id2=$(start_exp "$WORK/exp2")
REMOTE_EXPS="$id $id2"
partition_a "$id2"
a_returns "$id2"
wait_status "$id2" DONE 120
for v in $victims; do
    dir=/home/tqremote1/nni-experiments/$id2/trials/$v
    check_trial "$id2" "$v" "$dir"
    [ "$(sql "SELECT machine FROM trial WHERE id='$v'")" = "$A" ] || fail "trial $v: attempt 2 did not run on A"
    # the dirs: attempt 1's moved aside whole, attempt 2's written by attempt 2 alone
    [ "$(cat "$dir/.nni/attempt")" = 2 ] || fail "$dir is not attempt 2's"
    [ "$(cat "$dir.attempt1/.nni/attempt")" = 1 ] || fail "attempt 1's dir was not kept as $dir.attempt1"
    # the window under test: attempt 2 was started (its claim file) before attempt 1 ended
    started=$(stat -c %.3Y "$dir.2.job" | tr -d .)
    read -r _ ended _ < "$dir.attempt1/.nni/code" || fail "attempt 1 of $v recorded no end"
    [ "$started" -lt "$ended" ] || fail "attempt 2 of $v started after attempt 1 ended: no overlap tested"
    [ ! -e "$dir/written.1.log" ] || fail "attempt 1 of $v wrote into attempt 2's dir: $(cat "$dir/written.1.log" | head -3)"
    ! grep -q '"value":"1' "$dir/.nni/metrics" || fail "attempt 1 of $v wrote into attempt 2's metrics file"
done
pass "one machine: attempt 2 ran in the same trial dirs on A only after attempt 1 was gone; metrics exactly attempt 2's"
remote_wait_no_procs "$id2" 20
nnictl stop --all >/dev/null 2>&1 || true
assert_no_leftovers
pass "no process left behind"
