#!/usr/bin/env bash
# Issue 18: faults at random points across the api, the worker and the supervisors
# (tests/faultinj: ENOSPC, EIO and EROFS from SQLite's file operations and from the
# processes' file writes, opens, renames and fsyncs under the home) while an experiment
# runs; then they stop and it must end as if nothing happened:
#  - every trial ran once (its own side file, outside the home, has one start and one
#    end) and ended exactly once: SUCCEEDED in attempt 1, one end event;
#  - every metric a trial wrote (acknowledged by its write to .nni/metrics, listed in its
#    side file) is in the database once, no metric row that no trial wrote;
#  - PRAGMA integrity_check ok, the api that started is the one that ends it, no process
#    was killed by a signal, no sanitizer report (lib.sh);
#  - faults really were injected, in each kind of process;
#  - a backup taken with sqlite3 .backup while the experiment runs (docs/operations.md)
#    is a whole database.
# FI_TRIALS (default 40) trials, FI_SEED (default 19) seeds the faults, FI_IO_PROB and
# FI_DB_PROB (default 0.03, 0.01) are the chances of a fault per file and database write.
. "$(dirname "$0")/lib.sh"

IO_LIB=${TRIALQ_FAULTINJ_IO:-$(dirname "$TRIALQ_BIN")/tests/faultinj/libtqfi_io.so}
DB_LIB=${TRIALQ_FAULTINJ_DB:-$(dirname "$TRIALQ_BIN")/tests/faultinj/libtqfi_db.so}
[ -f "$IO_LIB" ] && [ -f "$DB_LIB" ] || fail "fault-injection libraries not built ($IO_LIB, $DB_LIB)"
grep -q libsqlite3 <<< "$(ldd "$TRIALQ_BIN")" || fail "trialq does not link libsqlite3 dynamically: the VFS shim cannot reach it"
trials=${FI_TRIALS:-40}
seed=${FI_SEED:-19}

port=$(free_port)
SIDE="$WORK/side"
mkdir -p "$SIDE"
# NNI's file protocol (trials/metrics.sh); every record a trial wrote is listed in its
# side file, outside the home (which the faults hit), after the write succeeded
export TRIAL_SIDE="$SIDE" TRIAL_STEPS=8 TRIAL_SLEEP=0.05
metrics_experiment "$WORK/exp" 4 "$trials" "$seed"

CONTROL="$WORK/faults.on"
FLOG="$WORK/faults.log"
touch "$CONTROL"
# the supervisor of a normal build is static: no preloaded library reaches it
supervise_dynamic=""
ldd "$(dirname "$TRIALQ_BIN")/trialq-supervise" > /dev/null 2>&1 && supervise_dynamic=1
# ASan wants its runtime first among the libraries; ours come first, on purpose
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
# everything of the experiment's home, the database through SQLite's VFS only
LD_PRELOAD="$IO_LIB $DB_LIB" \
TQFI_IO_PROCS=api,worker,supervise TQFI_IO_PATHS="$NNI_HOME/" TQFI_IO_SKIP="$DB" \
TQFI_IO_ERRNOS=ENOSPC,EIO,EROFS TQFI_IO_PROB="${FI_IO_PROB:-0.03}" TQFI_IO_BURST=2 TQFI_IO_SEED="$seed" \
TQFI_IO_CONTROL="$CONTROL" TQFI_IO_LOG="$FLOG" \
TQFI_DB_PROCS=api,worker TQFI_DB_PATHS="$DB" \
TQFI_DB_ERRNOS=ENOSPC,EIO TQFI_DB_PROB="${FI_DB_PROB:-0.01}" TQFI_DB_BURST=3 TQFI_DB_SEED="$seed" \
TQFI_DB_CONTROL="$CONTROL" TQFI_DB_LOG="$FLOG" \
    nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "nnictl create failed"; }
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || { cat "$WORK/create.out"; fail "no experiment id printed"; }
api_pid=$(sql "SELECT api_pid FROM experiment WHERE id='$id'")

# faults for a while: until 3/4 of the trials ended or 120 s
half=$((trials * 3 / 4))
backup_done=""
for _ in $(seq 1 1200); do
    ended=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND end_time IS NOT NULL")
    if [ -z "$backup_done" ] && [ "$ended" -ge 4 ]; then
        # the documented backup of a live database
        sqlite3 "$DB" ".timeout 10000" ".backup '$WORK/backup.db'" || fail "sqlite3 .backup of the running experiment failed"
        backup_done=1
    fi
    [ "$ended" -ge "$half" ] && break
    sleep 0.1
done
rm -f "$CONTROL"
[ -s "$FLOG" ] || fail "no fault was injected"
echo "faults injected, by process kind and operation:"
awk '{print $1, $3, $4}' "$FLOG" | sort | uniq -c
for kind in api worker ${supervise_dynamic:+supervise}; do
    grep -q "^$kind " "$FLOG" || fail "no fault reached a $kind"
done
pass "faults injected into api, worker${supervise_dynamic:+ and supervisor} ($(wc -l < "$FLOG") in all); now they stop"

[ -n "$backup_done" ] || fail "no backup taken while the experiment ran"
[ "$(sqlite3 "$WORK/backup.db" 'PRAGMA integrity_check')" = ok ] || fail "the live backup is not a whole database"
sqlite3 "$WORK/backup.db" "SELECT count(*) FROM trial WHERE experiment_id='$id'" | grep -qE '^[1-9]' ||
    fail "the live backup holds no trial of the experiment"
pass "sqlite3 .backup of the running experiment: integrity_check ok"

wait_status "$id" DONE 300
pass "experiment reached DONE after the faults stopped"
[ "$(sql "SELECT api_pid FROM experiment WHERE id='$id'")" = "$api_pid" ] && kill -0 "$api_pid" ||
    fail "the api that started the experiment did not live to its end"
bad=$(sql "SELECT id || ' ' || status || ' ' || attempt || ' ' || coalesce(message, '') FROM trial
           WHERE experiment_id='$id' AND NOT (status = 'SUCCEEDED' AND attempt = 1)")
[ -z "$bad" ] || fail "trials not SUCCEEDED in attempt 1: $bad"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")" = "$trials" ] || fail "not $trials trials"
ls "$NNI_HOME/$id/trials" | grep -q attempt && fail "a trial was run again"
ends=$(sql "SELECT trial_id || ' ' || count(*) FROM event WHERE experiment_id='$id' AND trial_id IS NOT NULL
            AND entity = 'trial' AND to_state IN ('SUCCEEDED','FAILED','USER_CANCELED','EARLY_STOPPED') GROUP BY trial_id HAVING count(*) != 1")
[ -z "$ends" ] || fail "trials whose end was recorded more than once: $ends"
pass "$trials trials SUCCEEDED, each in attempt 1, each ended once"

for t in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    f="$SIDE/$t"
    [ -f "$f" ] || fail "trial $t never ran"
    [ "$(grep -c '^start' "$f")" = 1 ] && [ "$(grep -c '^end$' "$f")" = 1 ] || { cat "$f"; fail "trial $t ran more than once or did not end"; }
    want=$(sed -n 's/^metric //p' "$f" | sort)
    got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$t'" | sort)
    [ "$want" = "$got" ] || { echo "written: $want"; echo "stored: $got"; fail "metrics of $t differ"; }
    [ "$(sql "SELECT final_metric = parameters->>'x' FROM trial WHERE id='$t'")" = 1 ] || fail "final metric of $t"
done
pass "every trial ran once; every metric it wrote is stored once, nothing else"
# each trial's output went to its own trial.stdout, never into the experiment's logs
! grep -l "seq .* done" "$NNI_HOME/$id"/log/*.log || fail "trial output in the experiment's logs"
[ "$(cat "$NNI_HOME/$id"/trials/*/trial.stdout | grep -c "seq .* done")" = "$trials" ] || fail "a trial.stdout lacks its output"
pass "each trial's output is in its trial.stdout"

[ "$(sql 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
pass "integrity_check ok"
if grep -h "killed by signal" "$NNI_HOME/$id"/log/*.log; then fail "a process was killed by a signal"; fi
exits=$(cat "$NNI_HOME/$id"/log/*.log | grep -c "worker pid .* exited with code" || true)
pass "no process killed by a signal ($exits worker exits with an error code, restarted)"
nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "19-fault-injection: passed"
