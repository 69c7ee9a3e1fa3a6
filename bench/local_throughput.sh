#!/usr/bin/env bash
# bench/local_throughput: N trivial trials at concurrency C on the local platform.
# Prints trials/s; p50/p99 delay from a trial's exit to the next trial start
# (exit->next_start) and, stricter, from the k-th exit to the (k+C)-th start
# (slot_refill: includes waiting behind other exits in a burst); and peak RSS (VmHWM)
# and PSS of the api and the worker. Twice: a POSIX sh trial
# (one ME-framed final metric, no interpreter start-up) and a Python trial using the
# bundled `nni` SDK.
#   usage: bench/local_throughput.sh [BUILD_DIR] (default build)   env: N=2000 C=8
. "$(dirname "$0")/lib/local_env.sh" "$@"
N=${N:-2000}
C=${C:-8}
cp "$SRC/examples/quickstart/trial.sh" "$WORK/code/trial.sh"
cat > "$WORK/code/trial.py" <<'PY'
import nni
p = nni.get_next_parameter()
nni.report_final_result(p["x"] / 1000.0)
PY
port=$(free_port)

run() { # name command
    local name=$1 cmd=$2
    local_config "$WORK/code/$name.yml" "$cmd" "$C" "$N" 1 '{_type: uniform, _value: [0, 1000]}'
    local t0 t1 id
    t0=$(date +%s.%N)
    id=$(exp_create "$WORK/code/$name.yml" "$port")
    while [ "$(sqlite3 -cmd ".timeout 10000" "$NNI_HOME/trialq.db" "SELECT status FROM experiment WHERE id='$id'")" != DONE ]; do sleep 0.05; done
    t1=$(date +%s.%N)
    local rss=0 pss=0 pid
    for pid in $(sqlite3 -cmd ".timeout 10000" "$NNI_HOME/trialq.db" "SELECT DISTINCT pid FROM process WHERE experiment_id='$id' AND ended_at IS NULL"); do
        rss=$((rss + $(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)))
        pss=$((pss + $(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)))
    done
    "$BUILD/nnictl" stop "$id" > /dev/null
    sqlite3 -cmd ".timeout 10000" "$NNI_HOME/trialq.db" > "$WORK/$name.stats" <<SQL
.mode list
WITH x AS (SELECT (SELECT min(start_time) FROM trial s WHERE s.experiment_id='$id' AND s.start_time >= e.end_time)
              - e.end_time AS delay FROM trial e WHERE e.experiment_id='$id'),
     xo AS (SELECT delay, ROW_NUMBER() OVER (ORDER BY delay) r, COUNT(*) OVER () n FROM x WHERE delay IS NOT NULL),
     s AS (SELECT start_time t, ROW_NUMBER() OVER (ORDER BY start_time) - 1 k FROM trial WHERE experiment_id='$id'),
     e AS (SELECT end_time t, ROW_NUMBER() OVER (ORDER BY end_time) - 1 k FROM trial WHERE experiment_id='$id'),
     d AS (SELECT s.t - e.t AS delay FROM s JOIN e ON e.k = s.k - $C),
     o AS (SELECT delay, ROW_NUMBER() OVER (ORDER BY delay) r, COUNT(*) OVER () n FROM d)
SELECT (SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'),
       (SELECT count(*) FROM metric m JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id='$id' AND m.type='FINAL'),
       (SELECT delay FROM xo WHERE r = CAST(0.50 * n AS INT) + 1),
       (SELECT delay FROM xo WHERE r = CAST(0.99 * n AS INT) + 1),
       (SELECT delay FROM o WHERE r = CAST(0.50 * n AS INT) + 1),
       (SELECT delay FROM o WHERE r = CAST(0.99 * n AS INT) + 1);
SQL
    IFS='|' read -r ok finals p50 p99 r50 r99 < "$WORK/$name.stats"
    awk -v name="$name" -v n="$N" -v c="$C" -v t0="$t0" -v t1="$t1" -v ok="$ok" -v fin="$finals" \
        -v p50="$p50" -v p99="$p99" -v r50="$r50" -v r99="$r99" -v rss="$rss" -v pss="$pss" 'BEGIN {
        printf "%-6s trials=%d concurrency=%d succeeded=%d final_metrics=%d wall=%.2fs throughput=%.1f trials/s exit->next_start p50=%sms p99=%sms slot_refill p50=%sms p99=%sms peak_rss(api+worker)=%.1fMB pss=%.1fMB\n",
            name, n, c, ok, fin, t1 - t0, n / (t1 - t0), p50, p99, r50, r99, rss / 1024, pss / 1024 }'
}

echo "local_throughput: $(nproc) cores, build $BUILD"
run sh "sh trial.sh"
N=${NPY:-$((N / 4))} run python "/usr/bin/python3 trial.py"
