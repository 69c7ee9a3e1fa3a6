#!/usr/bin/env bash
# Issue 32: `nnictl stop` ends everything whatever the disk says, and a trial that failed
# on a full disk says so.
#  1. The home on a 6 MB tmpfs, 4 trials running, a filler takes all of it: `nnictl stop`
#     says what it could not record, and no process of the experiment is left 10 s after
#     it returns (the supervisors and leaders give their end records up after a stop).
#     Space freed, `nnictl stop` again records every trial's end once (USER_CANCELED, one
#     end event each), the experiment STOPPED, integrity_check ok.
#  2. The same with the database and the trials' files failing read-only (EROFS), then
#     with I/O errors (EIO), through tests/faultinj, in every process of the experiment
#     and in nnictl: nothing of them can be written at all.
#  2b. Each of the three again, going on with `nnictl resume` instead of a second stop
#     (6 trials, 4 running at the stop): on the full disk the 4 trials' end records were
#     written holding the stop (in their room, .nni/state.next), so the resume records
#     them USER_CANCELED in attempt 1, one end event each; read-only and failing, nothing
#     of their ends could be written anywhere, so the resume runs them again as attempt 2
#     (docs/operations.md says why). Either way the experiment goes on to DONE with the
#     2 trials left of its budget, integrity_check ok, no process left after its stop.
#  3. Trials whose directories are on a tmpfs (experimentWorkingDirectory) that their
#     own writes fill: one that filled it and freed it again before exiting 1, one that
#     exits 1 with it still full, and one that exits 1 on a disk with room. The first two
#     say "the disk of its trial directory was full while it ran" (database, REST,
#     `nnictl trial ls`); the third says only "exit code 1".
. "$(dirname "$0")/lib.sh"

mkdir -p "$WORK/fs"
if ! mount -t tmpfs -o size=6m tmpfs "$NNI_HOME" 2>/dev/null ||
    ! mount -t tmpfs -o size=4m tmpfs "$WORK/fs" 2>/dev/null; then
    umount "$NNI_HOME" 2> /dev/null
    echo "SKIP: cannot mount a tmpfs (needs root or CAP_SYS_ADMIN)"
    exit 77
fi
# the tmpfs goes, after what lib.sh's cleanup reads (logs, sanitizer reports) is copied out
tmpfs_cleanup() {
    local rc=$?
    rm -f "$NNI_HOME/filler" "$CONTROL"
    nnictl stop --all > /dev/null 2>&1 || true
    cp -a "$NNI_HOME" "$WORK/home.copy" 2> /dev/null || true
    umount "$NNI_HOME" 2> /dev/null || umount -l "$NNI_HOME" 2> /dev/null || true
    umount "$WORK/fs" 2> /dev/null || umount -l "$WORK/fs" 2> /dev/null || true
    cp -a "$WORK/home.copy/." "$NNI_HOME/" 2> /dev/null || true
    (exit "$rc")
    cleanup
}
trap tmpfs_cleanup EXIT

IO_LIB=${TRIALQ_FAULTINJ_IO:-$(dirname "$TRIALQ_BIN")/tests/faultinj/libtqfi_io.so}
DB_LIB=${TRIALQ_FAULTINJ_DB:-$(dirname "$TRIALQ_BIN")/tests/faultinj/libtqfi_db.so}
[ -f "$IO_LIB" ] && [ -f "$DB_LIB" ] || fail "fault-injection libraries not built ($IO_LIB, $DB_LIB)"
ldd "$(dirname "$TRIALQ_BIN")/trialq-supervise" > /dev/null 2>&1 ||
    fail "trialq-supervise is static (a normal build): the faults cannot reach it; run this on the sanitized build"
CONTROL="$WORK/faults.on"
FLOG="$WORK/faults.log"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# long trials that end at once on the stop's SIGINT (sh and sleep die of it), while
# $HOLD is there; without it a trial exits 0 at once (the trials run after a resume)
mkdir -p "$WORK/exp"
HOLD="$WORK/exp/hold"
printf 'if [ -e "%s" ]; then sleep 600; fi\n' "$HOLD" > "$WORK/exp/trial.sh"
write_config "$WORK/exp/stop.yml" trialConcurrency=4 maxTrialNumber=4
write_config "$WORK/exp/resume.yml" trialConcurrency=4 maxTrialNumber=6

# run_and_stop NAME FAULT THEN: an experiment of 4 running trials, the fault set (filler:
# the tmpfs full; EROFS/EIO: every write of every process of it and of nnictl fails),
# then `nnictl stop`: no process left after 10 s; the fault cleared, THEN: `stop` again
# records each trial's end once (stop_again), `resume` goes on to DONE (resume_after)
run_and_stop() {
    local name=$1 fault=$2 then=$3 port id t0 t1 left
    port=$(free_port)
    rm -f "$CONTROL"
    touch "$HOLD"
    LD_PRELOAD="$IO_LIB $DB_LIB" \
    TQFI_IO_PROCS=api,worker,supervise,nnictl TQFI_IO_PATHS="$NNI_HOME/" TQFI_IO_SKIP="$DB" \
    TQFI_IO_ERRNOS="$fault" TQFI_IO_PROB=1 TQFI_IO_CONTROL="$CONTROL" TQFI_IO_LOG="$FLOG" \
    TQFI_DB_PROCS=api,worker,nnictl TQFI_DB_PATHS="$DB" TQFI_DB_OPS=write,truncate,sync \
    TQFI_DB_ERRNOS="$fault" TQFI_DB_PROB=1 TQFI_DB_CONTROL="$CONTROL" TQFI_DB_LOG="$FLOG" \
        nnictl create --config "$WORK/exp/$then.yml" --port "$port" > "$WORK/$name.create" 2>&1 ||
        { cat "$WORK/$name.create"; fail "$name: nnictl create failed"; }
    id=$(exp_id_of "$WORK/$name.create")
    [ -n "$id" ] || fail "$name: no experiment id printed"
    wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 4 20 "$name: 4 trials running"
    if [ "$fault" = filler ]; then
        dd if=/dev/zero of="$NNI_HOME/filler" bs=64k 2> /dev/null || true
        [ "$(stat -f -c %a "$NNI_HOME")" = 0 ] || fail "$name: the tmpfs is not full"
    else
        touch "$CONTROL"
        sleep 0.2 # the libraries look at the control file every 50 ms
    fi
    t0=$(date +%s.%N)
    LD_PRELOAD="$IO_LIB $DB_LIB" \
    TQFI_IO_PROCS=nnictl,worker,supervise TQFI_IO_PATHS="$NNI_HOME/" TQFI_IO_SKIP="$DB" \
    TQFI_IO_ERRNOS="$fault" TQFI_IO_PROB=1 TQFI_IO_CONTROL="$CONTROL" TQFI_IO_LOG="$FLOG" \
    TQFI_DB_PROCS=nnictl,worker TQFI_DB_PATHS="$DB" TQFI_DB_OPS=write,truncate,sync \
    TQFI_DB_ERRNOS="$fault" TQFI_DB_PROB=1 TQFI_DB_CONTROL="$CONTROL" TQFI_DB_LOG="$FLOG" \
        nnictl stop "$id" > "$WORK/$name.stop" 2>&1 && { cat "$WORK/$name.stop"; fail "$name: stop said success"; }
    t1=$(date +%s.%N)
    cat "$WORK/$name.stop"
    grep -q "the stop of $id could not be recorded" "$WORK/$name.stop" || fail "$name: stop did not say what it could not record"
    grep -q "every process of it has ended" "$WORK/$name.stop" || fail "$name: stop did not say its processes ended"
    pass "$name: stop returned in $(echo "$t1 - $t0" | bc) s, saying what it could not record"
    sleep 10
    left=$(our_pids | tr '\n' ' ')
    [ -z "${left// /}" ] || { ps -o pid,ppid,pgid,stat,args -p "$(echo $left | tr ' ' ,)"; fail "$name: processes left 10 s after the stop: $left"; }
    pass "$name: no process of the experiment 10 s after the stop"
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND end_time IS NOT NULL")" = 0 ] ||
        fail "$name: an end was recorded under the fault"

    rm -f "$NNI_HOME/filler" "$CONTROL"
    "${then}_again" "$name" "$fault" "$id"
}

# stop_again NAME FAULT ID: `nnictl stop` on a healthy disk records each trial's end once
stop_again() {
    local name=$1 id=$3
    nnictl stop "$id" > "$WORK/$name.stop2" 2>&1 || { cat "$WORK/$name.stop2"; fail "$name: the second stop failed"; }
    sql_is "SELECT status FROM experiment WHERE id='$id'" STOPPED || fail "$name: not STOPPED ($SQL_GOT)"
    sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='USER_CANCELED' AND attempt=1" 4 ||
        { sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id'"; fail "$name: not 4 USER_CANCELED in attempt 1"; }
    sql_is "SELECT count(*) FROM event WHERE experiment_id='$id' AND entity='trial' AND to_state='USER_CANCELED'" 4 ||
        fail "$name: not one end event per trial ($SQL_GOT)"
    sql_is "PRAGMA integrity_check" ok || fail "$name: integrity_check"
    assert_no_leftovers
    pass "$name: the next stop recorded each trial's end once (USER_CANCELED, attempt 1), integrity_check ok"
}

# resume_again NAME FAULT ID: `nnictl resume` on a healthy disk records the 4 trials the
# stop ended (filler: USER_CANCELED in attempt 1 from their end records; EROFS, EIO: no
# record could be written, they run again as attempt 2) and goes on to DONE with the 2
# trials left of the budget; each trial ends once
resume_again() {
    local name=$1 fault=$2 id=$3 st=USER_CANCELED att=1
    [ "$fault" = filler ] || { st=SUCCEEDED att=2; }
    rm -f "$HOLD"
    nnictl resume "$id" --port "$(free_port)" > "$WORK/$name.resume" 2>&1 ||
        { cat "$WORK/$name.resume"; fail "$name: resume failed"; }
    wait_status "$id" DONE 60
    sql_is "SELECT group_concat(status || ':' || attempt, ' ') FROM (SELECT status, attempt FROM trial
            WHERE experiment_id='$id' ORDER BY sequence)" \
        "$st:$att $st:$att $st:$att $st:$att SUCCEEDED:1 SUCCEEDED:1" ||
        { sql "SELECT id, sequence, status, attempt, message FROM trial WHERE experiment_id='$id'"
          fail "$name: after the resume, by sequence: $SQL_GOT"; }
    sql_is "SELECT group_concat(n, ' ') FROM (SELECT (SELECT count(*) FROM event WHERE trial_id=trial.id AND
            to_state IN ('SUCCEEDED', 'FAILED', 'USER_CANCELED', 'SYS_CANCELED', 'EARLY_STOPPED')) AS n
            FROM trial WHERE experiment_id='$id' ORDER BY sequence)" "1 1 1 1 1 1" ||
        fail "$name: not one end event per trial (by sequence: $SQL_GOT)"
    sql_is "PRAGMA integrity_check" ok || fail "$name: integrity_check"
    nnictl stop "$id" > "$WORK/$name.stop2" 2>&1 ||
        { cat "$WORK/$name.stop2"; fail "$name: the stop after DONE failed"; }
    assert_no_leftovers
    pass "$name: the resume recorded the stopped trials $st in attempt $att, once each, and went on to DONE"
}

run_and_stop full filler stop
run_and_stop readonly EROFS stop
run_and_stop ioerror EIO stop
run_and_stop full-resume filler resume
run_and_stop readonly-resume EROFS resume
run_and_stop ioerror-resume EIO resume
grep -q "supervise .* EROFS" "$FLOG" && grep -q "supervise .* EIO" "$FLOG" && grep -q "nnictl .* EIO" "$FLOG" ||
    fail "the faults did not reach the supervisors and nnictl"

# 3. the trials' own disk full (trials/fill_disk.sh)
cp "$TRIALQ_SRC/tests/e2e/trials/fill_disk.sh" "$WORK/exp/fill.sh"
write_config "$WORK/exp/fill.yml" trialCommand='sh fill.sh' maxTrialNumber=3 experimentWorkingDirectory="$WORK/fs"
port=$(free_port)
nnictl create --config "$WORK/exp/fill.yml" --port "$port" > "$WORK/fill.create"
id=$(exp_id_of "$WORK/fill.create")
[ -n "$id" ] || fail "no experiment id printed"
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND end_time IS NOT NULL" 3 60 "3 trials ended"
disk_full_messages "$id" "$port"
pass "the trials that met a full disk say so, the other only its exit code; REST and nnictl trial ls show it"
rm -f "$WORK/fs/$id/trials/$FULL_T2/junk"
nnictl stop "$id" > /dev/null
sql_is "PRAGMA integrity_check" ok || fail "integrity_check"
