#!/usr/bin/env bash
# Issue 32: a deterministic slice of the exhaustive I/O-error sweep (bench/fault_sweep.sh
# runs the whole of it). The short experiment of lib/fault_sweep.sh (create, trials with
# intermediate and final results, a kill, an update, stop, resume, DONE) runs with the
# Nth matching call of one kind of process failed: for each kind (api, worker,
# supervise, nnictl) and each fault-injection library (db: SQLite's file operations on
# the database; io: file writes, opens, renames, fsyncs under the home). Two runs with
# no fault first count the calls each kind makes (TQFI_*_COUNT); then, per kind and
# library, SWEEP_PER (default 45) values of N spread evenly from 1 to that count, in
# SWEEP_RUNS (default 3) runs, each failing every SWEEP_RUNS-th of them (a comma list
# in TQFI_*_NTH: the faults of one run stay far apart in the process's life), with
# ENOSPC, EIO and EROFS in turn from run to run. After
# each run the invariants of lib/fault_sweep.sh hold (integrity_check, each trial ended
# once in attempt 1 unless the fault hit its job, every written metric stored once,
# DONE by itself or after a resume, no fault left in check-status, no process left,
# no sanitizer report).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/fault_sweep.sh"

per=${SWEEP_PER:-45}
runs=${SWEEP_RUNS:-3}
kinds="api worker nnictl${SWEEP_SUPERVISE_DYNAMIC:+ supervise}"

# the calls each kind makes in a run with no fault (only counted)
declare -A calls
for lib in db io; do
    sweep_run "${kinds// /,}" "$lib" "" "$WORK/count-$lib"
    for kind in $kinds; do
        calls[$kind-$lib]=$(awk -v k="$kind" 'BEGIN { m = 0 } $1 == k && $3 > m { m = $3 } END { print m }' "$RUN/counts")
    done
    [ "$SWEEP_FAULTS" = 0 ] || fail "a fault in a run with no NTH"
done
echo "matching calls per process with no fault: $(for k in "${!calls[@]}"; do printf '%s=%s ' "$k" "${calls[$k]}"; done)"
[ "${calls[api-db]}" -gt 0 ] && [ "${calls[worker-db]}" -gt 0 ] && [ "${calls[nnictl-db]}" -gt 0 ] &&
    [ "${calls[api-io]}" -gt 0 ] && [ "${calls[worker-io]}" -gt 0 ] || fail "a kind made no database or file call: not counted"
pass "calls counted with no fault injected"

# spread N COUNT K: K values of N from 1 to COUNT, evenly spaced (all of them when COUNT <= K)
spread() {
    awk -v c="$1" -v k="$2" 'BEGIN { if (c <= k) { for (i = 1; i <= c; i++) print i; exit }
        for (i = 0; i < k; i++) print 1 + int(i * (c - 1) / (k - 1)) }' | uniq
}

total_runs=0 total_n=0 total_faults=0
for kind in $kinds; do
    for lib in db io; do
        c=${calls[$kind-$lib]}
        [ "$c" -gt 0 ] || { echo "$kind/$lib: no matching call (e.g. supervisors open no database)"; continue; }
        mapfile -t ns < <(spread "$c" "$per")
        injected=0
        for ((r = 0; r < runs && r < ${#ns[@]}; r++)); do
            list=""
            for ((i = r; i < ${#ns[@]}; i += runs)); do list+=${list:+,}${ns[$i]}; done
            export SWEEP_ERRNO=$(sweep_errno "$total_runs")
            sweep_run "$kind" "$lib" "$list" "$WORK/$kind-$lib-$r"
            echo "  $kind/$lib N=$list ($SWEEP_ERRNO): $SWEEP_FAULTS faults, $SWEEP_OUTCOME"
            injected=$((injected + SWEEP_FAULTS))
            total_runs=$((total_runs + 1))
            rm -rf "$RUN"
        done
        [ "$injected" -gt 0 ] || fail "$kind/$lib: no fault injected at any of ${#ns[@]} N up to $c"
        total_n=$((total_n + ${#ns[@]})) total_faults=$((total_faults + injected))
        pass "$kind/$lib: ${#ns[@]} N from 1 to $c, $injected faults, every invariant held"
    done
done
echo "17-fault-sweep: $total_runs runs, $total_n N, $total_faults faults injected, 0 invariant failures"
echo "17-fault-sweep: passed"
