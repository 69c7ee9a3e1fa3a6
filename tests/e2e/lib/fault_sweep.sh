# lib/fault_sweep.sh: one run of the I/O-error sweep (issue 32), shared by
# e2e/98-fault-sweep.sh (a slice) and bench/fault_sweep.sh (the whole sweep). Sourced
# after lib.sh. A run is a short experiment with one fault-injection library preloaded
# (tests/faultinj: TQFI_IO_ or TQFI_DB_) whose NTH list fails the Nth matching call of
# each process of one kind; then the invariants are checked with no fault.
#
# The experiment: trialConcurrency 1, maxTrialNumber 3, trials of sh (trials/metrics.sh)
# that report an intermediate result (sequences 0 and 3 then wait up to SWEEP_HOLD
# seconds for their end), a second one and a final one. nnictl create; once trial 0 runs, `nnictl update
# trialnum` to 5 and `nnictl trial kill` of trial 0; trials 1 and 2 run; once trial 3
# runs, `nnictl stop`; `nnictl resume`; trial 4 runs; DONE. Every command runs with the
# fault armed; each may fail under it. A create the fault made refuse must say so and
# leave nothing running; the run then goes on from a create with no fault.
#
# Invariants (sweep_check): PRAGMA integrity_check ok; the kept counts (metric_count,
# exp_counter) equal a recount once the api has exited; the experiment reaches DONE by
# itself or after a `nnictl resume` with no fault; every trial ended once (an end state,
# one end event) and ran once (its side file outside the home has one start per
# attempt), in attempt 1 unless a fault hit a path of its own; every metric a trial
# wrote (its side file: the record was acknowledged by its write) is stored once, no
# other; check-status shows no fault within 5 s of DONE, with the fault over;
# after `nnictl stop` no process of the experiment is left; no sanitizer report.

SWEEP_IO_LIB=${TRIALQ_FAULTINJ_IO:-$(dirname "$TRIALQ_BIN")/tests/faultinj/libtqfi_io.so}
SWEEP_DB_LIB=${TRIALQ_FAULTINJ_DB:-$(dirname "$TRIALQ_BIN")/tests/faultinj/libtqfi_db.so}
SWEEP_HOLD=${SWEEP_HOLD:-5}
[ -f "$SWEEP_IO_LIB" ] && [ -f "$SWEEP_DB_LIB" ] || fail "fault-injection libraries not built ($SWEEP_IO_LIB, $SWEEP_DB_LIB)"
grep -q libsqlite3 <<< "$(ldd "$TRIALQ_BIN")" || fail "trialq does not link libsqlite3 dynamically: the VFS shim cannot reach it"
# a static supervisor (a normal build) loads no preloaded library: kind supervise is then
# not swept
SWEEP_SUPERVISE_DYNAMIC=""
ldd "$(dirname "$TRIALQ_BIN")/trialq-supervise" > /dev/null 2>&1 && SWEEP_SUPERVISE_DYNAMIC=1

# sweep_experiment DIR: the config and trial (trials/metrics.sh) of a run
sweep_experiment() {
    metrics_experiment "$1" 1 3 32
    export TRIAL_STEPS=2 TRIAL_HOLD="$SWEEP_HOLD 0 3"
}

# sweep_errno N: the errno of the run of N: ENOSPC, EIO, EROFS in turn
sweep_errno() {
    local e=(ENOSPC EIO EROFS)
    echo "${e[$((${1:-0} % 3))]}"
}

# sweep_nnictl ARGS...: nnictl with the run's fault armed (SWEEP_ENV), output appended to
# $RUN/nnictl.out; its status is returned, never failed on
sweep_nnictl() {
    echo "\$ nnictl $*" >> "$RUN/nnictl.out"
    env "${SWEEP_ENV[@]}" nnictl "$@" >> "$RUN/nnictl.out" 2>&1
}

# sweep_trial_reached SEQ: the trial of sequence SEQ runs or has ended (a fault that hit
# its own job may end it), or the experiment is over (an update the fault refused leaves
# no trial SEQ to run)
sweep_trial_reached() {
    [ -n "$(sql "SELECT 1 FROM trial WHERE experiment_id='$SWEEP_ID' AND sequence=$1
                   AND (status='RUNNING' OR end_time IS NOT NULL)
                 UNION SELECT 1 FROM experiment WHERE id='$SWEEP_ID' AND status IN ('DONE','STOPPING','STOPPED','ERROR')")" ]
}

# sweep_run KIND LIB NTHS DIR: one run (the experiment, its checks) in DIR, a fresh home:
# KIND api, worker, supervise or nnictl (or a comma list); LIB io or db; NTHS the comma
# list of N; the errno SWEEP_ERRNO, by default sweep_errno of the first N. Fails (lib.sh's fail) on a broken invariant; sets
# SWEEP_FAULTS, the faults injected (0: every N is past the end of the run), and
# SWEEP_MAXCOUNT, the most matching calls a process of KIND made (by the COUNT lines of
# the processes that exited).
sweep_run() {
    local kind=$1 lib=$2 nths=$3 port errno pfx so paths skip
    RUN=$4
    mkdir -p "$RUN"
    export NNI_HOME="$RUN/home" TRIAL_SIDE="$RUN/side" SWEEP_HOLD
    DB="$NNI_HOME/trialq.db"
    mkdir -p "$NNI_HOME" "$TRIAL_SIDE"
    sweep_experiment "$RUN/exp"
    errno=${SWEEP_ERRNO:-$(sweep_errno "${nths%%,*}")}
    if [ "$lib" = io ]; then
        pfx=TQFI_IO_ so=$SWEEP_IO_LIB paths="$NNI_HOME/" skip="$DB"
    else
        pfx=TQFI_DB_ so=$SWEEP_DB_LIB paths="$DB" skip=""
    fi
    SWEEP_ENV=(LD_PRELOAD="$so" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
        "${pfx}PROCS=$kind" "${pfx}PATHS=$paths" "${pfx}SKIP=$skip" "${pfx}ERRNOS=$errno"
        "${pfx}NTH=$nths" "${pfx}LOG=$RUN/faults.log" "${pfx}COUNT=$RUN/counts")
    : > "$RUN/faults.log"
    : > "$RUN/counts"
    port=$(free_port)
    SWEEP_ID="" SWEEP_REFUSED=""
    sweep_nnictl create --config "$RUN/exp/config.yml" --port "$port" || true
    # (a create refused at its first write leaves a database without its tables)
    [ ! -f "$DB" ] || SWEEP_ID=$(sql "SELECT id FROM experiment LIMIT 1" 2> /dev/null || true)
    if [ -z "$SWEEP_ID" ]; then
        # the fault made create refuse: it said so and left nothing behind; the rest of
        # the run goes on from a create with no fault, so that the later commands meet
        # their own Nth calls
        grep -qiE "error|fail|cannot" "$RUN/nnictl.out" || fail "no experiment, and nnictl create said nothing"
        [ ! -f "$DB" ] || [ "$(sql 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after a refused create"
        wait_until 10 sweep_none_left || assert_no_leftovers
        SWEEP_REFUSED="create refused; "
        nnictl create --config "$RUN/exp/config.yml" --port "$port" >> "$RUN/nnictl.out" 2>&1 ||
            fail "create with no fault failed after a refused one"
        SWEEP_ID=$(sql "SELECT id FROM experiment LIMIT 1")
    fi
    wait_until 20 sweep_trial_reached 0 || fail "trial 0 neither ran nor ended within 20 s"
    sweep_nnictl update trialnum "$SWEEP_ID" --value 5 || true
    local t0
    t0=$(sql "SELECT id FROM trial WHERE experiment_id='$SWEEP_ID' AND sequence=0")
    [ -z "$t0" ] || sweep_nnictl trial kill "$SWEEP_ID" --trial_id "$t0" || true
    wait_until $((SWEEP_HOLD * 3)) sweep_trial_reached 3 ||
        fail "trial 3 neither ran nor ended within $((SWEEP_HOLD * 3)) s, and the experiment is not over"
    sweep_nnictl stop "$SWEEP_ID" || true
    sweep_nnictl resume "$SWEEP_ID" --port "$port" || true
    SWEEP_FAULTS=$(wc -l < "$RUN/faults.log")
    SWEEP_MAXCOUNT=$(awk 'BEGIN { m = 0 } $3 > m { m = $3 } END { print m }' "$RUN/counts")
    sweep_check "$port"
}

# sweep_check PORT: the invariants of the run in $RUN (fails naming the first broken)
sweep_check() {
    local port=$1 t f starts attempt want got owned bad
    [ "$(sql 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
    SWEEP_OUTCOME="${SWEEP_REFUSED}DONE by itself"
    if ! wait_until $((SWEEP_HOLD * 3)) status_is "$SWEEP_ID" DONE; then
        # not DONE by itself: the fault is over, a resume brings the experiment to its end
        nnictl stop "$SWEEP_ID" >> "$RUN/nnictl.out" 2>&1 || true
        nnictl resume "$SWEEP_ID" --port "$port" >> "$RUN/nnictl.out" 2>&1 || fail "resume with no fault failed"
        wait_status "$SWEEP_ID" DONE 60
        SWEEP_OUTCOME="${SWEEP_REFUSED}DONE after resume"
    fi
    [ "$(sql 'PRAGMA integrity_check')" = ok ] || fail "integrity_check at DONE"
    bad=$(sql "SELECT id || ' ' || status FROM trial WHERE experiment_id='$SWEEP_ID'
               AND status NOT IN ('SUCCEEDED','FAILED','USER_CANCELED','EARLY_STOPPED')")
    [ -z "$bad" ] || fail "trials not ended at DONE: $bad"
    bad=$(sql "SELECT t.id || ' ' || (SELECT count(*) FROM event e WHERE e.trial_id = t.id AND e.entity = 'trial'
                 AND e.to_state IN ('SUCCEEDED','FAILED','USER_CANCELED','EARLY_STOPPED'))
               FROM trial t WHERE t.experiment_id='$SWEEP_ID'" | awk '$2 != 1')
    [ -z "$bad" ] || fail "trials not ended exactly once (trial, end events): $bad"
    for f in "$TRIAL_SIDE"/*; do
        [ -f "$f" ] || continue
        t=$(basename "$f")
        [ "$(sql "SELECT count(*) FROM trial WHERE id='$t' AND experiment_id='$SWEEP_ID'")" = 1 ] ||
            fail "trial $t ran but the database does not know it"
    done
    for t in $(sql "SELECT id FROM trial WHERE experiment_id='$SWEEP_ID'"); do
        f="$TRIAL_SIDE/$t"
        [ -f "$f" ] || f=/dev/null # a trial ended before its command began
        attempt=$(sql "SELECT attempt FROM trial WHERE id='$t'")
        starts=$(grep -c '^start' "$f" || true)
        owned=$(grep -c "/$t[/.]" "$RUN/faults.log" || true)
        [ "$attempt" = 1 ] || [ "$owned" -gt 0 ] || fail "trial $t in attempt $attempt, and no fault hit its job"
        [ "$starts" -le "$attempt" ] || { cat "$f"; fail "trial $t started $starts times in $attempt attempts"; }
        # the records of its last start; stored under its attempt, each once
        want=$(awk '/^start/ { n = 0; delete m } /^metric / { m[n++] = $2 " " $3 " " $4 }
                    END { for (i = 0; i < n; i++) print m[i] }' "$f" | sort)
        got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$t'
                   AND attempt = $attempt" | sort)
        [ "$want" = "$got" ] || { echo "written: $want"; echo "stored: $got"; fail "metrics of $t differ"; }
    done
    # a fault stays shown until the process's next write succeeds (the api's heartbeat:
    # every 500 ms); one still shown seconds later is stale
    wait_until 5 sweep_no_fault_shown "$port" ||
        fail "check-status shows faults 5 s after DONE, with the fault over: $SWEEP_ERRORS"
    nnictl stop "$SWEEP_ID" >> "$RUN/nnictl.out" 2>&1 || fail "stop with no fault failed"
    wait_until 10 sweep_none_left || assert_no_leftovers
    # the kept counts, folded and refreshed by the api in their own transactions (the
    # last time as it exits), whatever the fault broke
    assert_kept_counts "$SWEEP_ID"
    if grep -rlsE "AddressSanitizer|LeakSanitizer|runtime error:" "$NNI_HOME" "$RUN/nnictl.out"; then
        grep -rshE -A30 "AddressSanitizer|LeakSanitizer|runtime error:" "$NNI_HOME" "$RUN/nnictl.out" | head -60 >&2
        fail "sanitizer report"
    fi
}

sweep_none_left() { [ -z "$(our_pids)" ]; }

# sweep_no_fault_shown PORT: check-status answers, with no error (else they are in SWEEP_ERRORS)
sweep_no_fault_shown() {
    SWEEP_ERRORS=$(curl -sf "http://127.0.0.1:$1/api/v1/nni/check-status" |
        "$PY" -c 'import json,sys; print("\n".join(json.load(sys.stdin)["errors"]))') || SWEEP_ERRORS="(no answer)"
    [ -z "$SWEEP_ERRORS" ]
}
