#!/usr/bin/env bash
# bench/soak.sh: a long run of short trials while manager processes are killed (issue 18).
# One local experiment of TRIALS trials (default 200,000) at CONCURRENCY (16), each
# reporting 3 intermediate results and a final one (NNI's file channel, sh only); every
# KILL_EVERY seconds (30) a random manager process gets SIGKILL: the api (then
# `nnictl resume` brings the experiment back, as systemd would), the worker (the api
# restarts it) or a trial's supervisor (the trial runs on under its leader). Every
# SAMPLE_EVERY seconds (10) it prints a row: the api's and the worker's RSS and open
# fds, the database's size (with its WAL) and the trials ended since the last row.
# At the end every trial must have ended SUCCEEDED with its final metric, and the run
# fails (exit 1) when
#   - RSS of the api or the worker grows from the lowest it had in the first third of
#     the run to the highest of the last third by more than RSS_BOUND_KB (default 20480)
#     plus RSS_PER_TRIAL bytes (default 512) for each trial ended in between: the
#     Random tuner keeps every suggestion it gave, to never give one twice (NNI's does
#     too), about 250 bytes each in the api (200,000-trial run); a restarted api
#     computes them again. A leak smaller than the allowance hides in it: the per-trial
#     figure is printed (a process restarted by a kill starts low again: each row holds
#     what the live processes hold),
#   - open fds of the api or the worker grow beyond FD_BOUND (default 16) above the
#     lowest of the first third,
#   - the trial rate of the last third falls below RATE_FLOOR (default 0.7) times that
#     of the first third (thirds of the rows but the last, where the run drains; kills
#     fall in both).
# usage: bench/soak.sh [--trials N] [--concurrency C] [--kill-every S] [--sample-every S]
#                      [--build DIR] [--keep]
#   short mode for CI-sized runs: bench/soak.sh --trials 2000
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build TRIALS=200000 CONC=16 KILL_EVERY=30 SAMPLE_EVERY=10 KEEP=""
RSS_BOUND_KB=${RSS_BOUND_KB:-20480} RSS_PER_TRIAL=${RSS_PER_TRIAL:-512} FD_BOUND=${FD_BOUND:-16} RATE_FLOOR=${RATE_FLOOR:-0.7}
while [ $# -gt 0 ]; do
    case $1 in
    --trials) TRIALS=$2; shift 2 ;;
    --concurrency) CONC=$2; shift 2 ;;
    --kill-every) KILL_EVERY=$2; shift 2 ;;
    --sample-every) SAMPLE_EVERY=$2; shift 2 ;;
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "usage: bench/soak.sh [--trials N] [--concurrency C] [--kill-every S] [--sample-every S] [--build DIR] [--keep]" >&2
       exit 2 ;;
    esac
done
[ -x "$BUILD/nnictl" ] || { echo "soak: no $BUILD/nnictl (build first)" >&2; exit 2; }
. "$SRC/bench/lib/local_env.sh" "$BUILD"
DB=$NNI_HOME/trialq.db
sql() { sqlite3 -batch -noheader -cmd ".timeout 10000" "$DB" "$@"; }

cat > "$WORK/code/trial.sh" <<'SH'
cfg=$NNI_SYS_DIR/parameter.cfg
read -r rec < "$cfg"
pid=${rec#*\"parameter_id\":}; pid=${pid%%[,\}]*}
x=${rec#*\"x\":}; x=${x%%[,\}]*}
[ -d "$NNI_SYS_DIR/.nni" ] || mkdir -p "$NNI_SYS_DIR/.nni"
for s in 0 1 2 F; do
    if [ $s = F ]; then t=FINAL s=0; else t=PERIODICAL; fi
    r="{\"parameter_id\":$pid,\"trial_job_id\":\"$NNI_TRIAL_JOB_ID\",\"type\":\"$t\",\"sequence\":$s,\"value\":\"$x\"}"
    printf 'ME%06d%s\n' $((${#r} + 1)) "$r" >> "$NNI_SYS_DIR/.nni/metrics"
done
SH
local_config "$WORK/code/config.yml" "sh trial.sh" "$CONC" "$TRIALS" 18 '{_type: randint, _value: [0, 1000000]}'
port=$(free_port)
id=$(exp_create "$WORK/code/config.yml" "$port")
[ -n "$id" ] || { echo "soak: nnictl create failed" >&2; exit 1; }

api_pid() { sql "SELECT coalesce(api_pid, '') FROM experiment WHERE id='$id'" || true; }
worker_pid() { pgrep -f "trialq worker .*--experiment $id" | head -n1 || true; }
# (a process that just died, a zombie, has no VmRSS: 0, never an empty field)
rss_kb() { awk '/^VmRSS/ {v = $2} END {print v + 0}' "/proc/$1/status" 2> /dev/null || echo 0; }
fds() { { ls "/proc/$1/fd" 2> /dev/null || true; } | wc -l; }

echo "soak: $TRIALS trials at concurrency $CONC, a kill every ${KILL_EVERY}s, a row every ${SAMPLE_EVERY}s ($(nproc) cores, build $BUILD)"
printf '%7s %8s %9s %9s %7s %7s %9s %8s %8s  %s\n' time ended api_rss worker_rss api_fd wrk_fd db_kb rate/s bytes/tr killed
t0=$SECONDS next_kill=$((SECONDS + KILL_EVERY)) next_row=$((SECONDS + SAMPLE_EVERY)) last_ended=0 last_t=$SECONDS
killed="" rows="$WORK/rows"
: > "$rows"
while :; do
    # (a query that meets a lock beyond its timeout is only a missed look, not the end)
    st=$(sql "SELECT status FROM experiment WHERE id='$id'" || true)
    [ "$st" = DONE ] && break
    a=$(api_pid)
    if [ -z "$a" ] || ! kill -0 "$a" 2> /dev/null; then
        # the api was killed: bring the experiment back as systemd (or a user) would
        "$BUILD/nnictl" resume "$id" --port "$port" > /dev/null 2>&1 || true
    fi
    if [ "$SECONDS" -ge "$next_kill" ]; then
        next_kill=$((SECONDS + KILL_EVERY))
        case $((RANDOM % 3)) in
        0) victim=$(api_pid) what=api ;;
        1) victim=$(worker_pid) what=worker ;;
        *) victim=$(pgrep -f "trialq-supervise $NNI_HOME/$id/" | shuf -n1 || true) what=supervisor ;;
        esac
        [ -n "$victim" ] && kill -9 "$victim" 2> /dev/null && killed="$killed $what"
    fi
    if [ "$SECONDS" -ge "$next_row" ]; then
        next_row=$((SECONDS + SAMPLE_EVERY))
        ended=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND end_time IS NOT NULL" || echo "$last_ended")
        a=$(api_pid) w=$(worker_pid)
        ar=$( [ -n "$a" ] && rss_kb "$a" || echo 0) wr=$( [ -n "$w" ] && rss_kb "$w" || echo 0)
        af=$( [ -n "$a" ] && fds "$a" || echo 0) wf=$( [ -n "$w" ] && fds "$w" || echo 0)
        dbkb=$(( ($(stat -c %s "$DB") + $(stat -c %s "$DB-wal" 2> /dev/null || echo 0)) / 1024 ))
        rate=$(awk -v n=$((ended - last_ended)) -v s=$((SECONDS - last_t)) 'BEGIN { printf "%.1f", s ? n / s : 0 }')
        per=$(( ended > 0 ? dbkb * 1024 / ended : 0 ))
        printf '%6ds %8d %8dk %8dk %7d %7d %9d %8s %8d  %s\n' $((SECONDS - t0)) "$ended" "$ar" "$wr" "$af" "$wf" "$dbkb" "$rate" "$per" "${killed# }"
        echo "${ended:-0} ${ar:-0} ${wr:-0} ${af:-0} ${wf:-0} ${rate:-0}" >> "$rows"
        last_ended=$ended last_t=$SECONDS killed=""
    fi
    sleep 1
done
wall=$((SECONDS - t0))
bad=0
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND final_metric IS NOT NULL")
echo "soak: DONE in ${wall}s, $ok of $TRIALS trials SUCCEEDED with their final metric ($(awk -v n="$TRIALS" -v s="$wall" 'BEGIN { printf "%.1f", n / s }') trials/s)"
[ "$ok" = "$TRIALS" ] || { echo "FAIL: $((TRIALS - ok)) trials did not succeed with a final metric" >&2; bad=1; }
[ "$(sql 'PRAGMA integrity_check')" = ok ] || { echo "FAIL: integrity_check" >&2; bad=1; }
# the bounds, over rows with live processes (a row taken right after a kill shows 0)
awk -v rss="$RSS_BOUND_KB" -v pertrial="$RSS_PER_TRIAL" -v fdb="$FD_BOUND" -v floor="$RATE_FLOOR" '
    { n++; e[n] = $1; v[1, n] = $2; v[2, n] = $3; v[3, n] = $4; v[4, n] = $5; r[n] = $6 }
    function mean(from, to,   i, s) { s = 0; for (i = from; i <= to; i++) s += r[i]; return s / (to - from + 1) }
    END {
        if (n < 3) { print "soak: fewer than 3 rows: no bounds checked (a longer run checks them)"; exit 0 }
        t = int(n / 3); bad = 0
        split("api_rss_kb worker_rss_kb api_fds worker_fds", names, " ")
        for (k = 1; k <= 4; k++) {
            lo = -1; hi = 0; il = 1; ih = n
            # the lowest of the first third, the highest of the last (a row right after a kill shows 0)
            for (i = 1; i <= t; i++) if (v[k, i] > 0 && (lo < 0 || v[k, i] < lo)) { lo = v[k, i]; il = i }
            for (i = n - t + 1; i <= n; i++) if (v[k, i] > hi) { hi = v[k, i]; ih = i }
            trials = e[ih] - e[il]
            b = k <= 2 ? rss + pertrial * trials / 1024 : fdb
            per = k <= 2 && trials > 0 ? sprintf(", %.0f bytes per trial ended", (hi - lo) * 1024 / trials) : ""
            printf "soak: %s first third lowest %d, last third highest %d: +%d (bound +%d)%s\n", names[k], lo, hi, hi - lo, b, per
            if (lo > 0 && hi - lo > b) { printf "FAIL: %s grew by %d\n", names[k], hi - lo; bad = 1 }
        }
        # the last row is left out: the run drains there (fewer trials left than slots)
        m = n - 1; t = int(m / 3)
        first = mean(1, t); last = mean(m - t + 1, m)
        printf "soak: trial rate first third %.1f/s, last third %.1f/s (floor %.2f x)\n", first, last, floor
        if (last < first * floor) { print "FAIL: the trial rate fell"; bad = 1 }
        exit bad
    }' "$rows" || bad=1
exit "$bad"
