#!/usr/bin/env bash
# bench/fault_sweep.sh: the exhaustive I/O-error sweep (issue 32). For each process kind
# (api, worker, supervise, nnictl) and each fault-injection library (db: SQLite's file
# operations on the database; io: the file writes, opens, renames, fsyncs... under the
# home), the short experiment of tests/e2e/lib/fault_sweep.sh runs once per N = FROM,
# FROM+STRIDE, ... with the Nth matching call of each process of that kind failed
# (ENOSPC, EIO, EROFS in turn as N goes), until a run injects no fault: N is past the
# end of every process of the kind. After each run its invariants are checked (see the
# lib). One line per run on stdout: kind lib N errno faults outcome ok|FAIL <why>; a
# summary at the end (runs, faults injected, invariant failures); the directories of
# failed runs are kept under the printed work dir.
# usage: bench/fault_sweep.sh [BUILD] [--kinds api,worker,supervise,nnictl] [--libs db,io]
#                             [--from N] [--stride S] [--max-n N]
#   BUILD: the build tree (default build; the sanitized one checks for sanitizer reports)
build=""
case ${1:-} in --* | "") ;; *) build=$1; shift ;; esac
. "$(dirname "$0")/lib/e2e_env.sh" "$build"
KINDS=api,worker,supervise,nnictl LIBS=db,io FROM=1 STRIDE=1 MAXN=100000
while [ $# -gt 0 ]; do
    case $1 in
    --kinds) KINDS=$2; shift 2 ;;
    --libs) LIBS=$2; shift 2 ;;
    --from) FROM=$2; shift 2 ;;
    --stride) STRIDE=$2; shift 2 ;;
    --max-n) MAXN=$2; shift 2 ;;
    *) echo "usage: bench/fault_sweep.sh [BUILD] [--kinds K,...] [--libs db,io] [--from N] [--stride S] [--max-n N]" >&2; exit 2 ;;
    esac
done
. "$TRIALQ_SRC/tests/e2e/lib.sh"
. "$TRIALQ_SRC/tests/e2e/lib/fault_sweep.sh"
KEEP=1 # lib.sh's cleanup: the failed runs stay for reading (the passed ones are removed)
echo "work dir: $WORK"
runs=0 faults=0 failures=0
for kind in ${KINDS//,/ }; do
    [ "$kind" != supervise ] || [ -n "$SWEEP_SUPERVISE_DYNAMIC" ] || { echo "$kind: static binary, skipped"; continue; }
    for lib in ${LIBS//,/ }; do
        n=$FROM
        while [ "$n" -le "$MAXN" ]; do
            dir="$WORK/$kind-$lib-$n"
            # a subshell: lib.sh's fail ends the run, not the sweep
            (
                sweep_run "$kind" "$lib" "$n" "$dir"
                echo "$SWEEP_FAULTS $SWEEP_OUTCOME" > "$dir/result"
            ) > "$dir.out" 2>&1 && rc=0 || rc=$?
            got=$(wc -l < "$dir/faults.log" 2> /dev/null || echo 0)
            runs=$((runs + 1)) faults=$((faults + got))
            if [ "$rc" = 0 ]; then
                echo "$kind $lib $n $(sweep_errno "$n") $got $(cut -d' ' -f2- "$dir/result") ok"
                rm -rf "$dir" "$dir.out"
            else
                failures=$((failures + 1))
                echo "$kind $lib $n $(sweep_errno "$n") $got - FAIL $(grep -m1 '^FAIL' "$dir.out" || echo "rc $rc")"
                # what a failed run left running goes before the next run
                NNI_HOME="$dir/home" nnictl stop --all > /dev/null 2>&1 || true
            fi
            [ "$got" -gt 0 ] || break # past the end of every process of the kind
            n=$((n + STRIDE))
        done
    done
done
echo "summary: $runs runs, $faults faults injected, $failures invariant failures (kinds $KINDS, libs $LIBS, N from $FROM by $STRIDE)"
[ "$failures" = 0 ]
