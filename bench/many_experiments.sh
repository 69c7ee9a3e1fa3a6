#!/usr/bin/env bash
# bench/many_experiments: E experiments running at once on the local platform in one
# NNI_HOME, so all of them (each its own api and worker, as designed) write the one
# SQLite database. Each runs T short trials (tests/e2e/trials/metrics.sh: STEPS
# intermediate metrics, SLEEP seconds apart, and a final one) at concurrency CE. The
# first experiment's history is read over and over (GET /api/v1/nni/trial-jobs?limit=100
# on its api, one request at a time). Prints trials/s in total (over the time from the
# first nnictl create to the last experiment DONE) and while all E run (from the last
# create to the first experiment DONE), the history read's p50/p99/max while all run,
# the SQLITE_BUSY / "database is locked" lines in the experiments' logs and in their
# errors (experiment.errors), and every other error.
#   usage: bench/many_experiments.sh [BUILD_DIR] (default build)
#   env:   E=50 experiments, T=40 trials each, CE=2 concurrency each, STEPS=3
#          intermediate metrics per trial, SLEEP=0.5, BENCH_TMP=/tmp
. "$(dirname "$0")/lib/local_env.sh" "$@"
E=${E:-50}
T=${T:-40}
CE=${CE:-2}
export TRIAL_STEPS=${STEPS:-3} TRIAL_SLEEP=${SLEEP:-0.5}
sql() { sqlite3 -batch -noheader -cmd ".timeout 10000" "$NNI_HOME/trialq.db" "$@"; }
mkdir -p "$NNI_HOME"
cp "$SRC/tests/e2e/trials/metrics.sh" "$WORK/code/metrics.sh"
local_config "$WORK/code/config.yml" "sh metrics.sh" "$CE" "$T" 1 '{_type: uniform, _value: [0, 1000]}'
ids=() ports=() create_fail=0
t0=$(date +%s.%N)
for ((i = 0; i < E; i++)); do
    p=$(free_port)
    if out=$("$NNICTL" create --config "$WORK/code/config.yml" --port "$p" 2>&1); then
        ids+=("$(sed -n 's/.*Experiment ID: \([a-z0-9]*\).*/\1/p' <<< "$out" | head -n1)")
        ports+=("$p")
    else
        create_fail=$((create_fail + 1))
        echo "nnictl create $i failed: $out" | head -n3 >&2
    fi
done
t_created=$(date +%s.%N)
[ "${#ids[@]}" -gt 0 ] || { echo "no experiment started" >&2; exit 1; }
# the history reader: one request at a time on the first experiment's api
(
    while [ ! -f "$WORK/stop-reader" ]; do
        echo "$(date +%s.%N) $(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 30 \
            "http://127.0.0.1:${ports[0]}/api/v1/nni/trial-jobs?limit=100" || echo "000 30")"
    done > "$WORK/reads.txt"
) &
reader=$!
in_list=$(printf "'%s'," "${ids[@]}"); in_list=${in_list%,}
while [ "$(sql "SELECT count(*) FROM experiment WHERE id IN ($in_list) AND status NOT IN ('DONE','ERROR','STOPPED')")" != 0 ]; do
    sleep 0.5
done
t1=$(date +%s.%N)
touch "$WORK/stop-reader"
wait "$reader" || true
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id IN ($in_list) AND status='SUCCEEDED'")
all=$(sql "SELECT count(*) FROM trial WHERE experiment_id IN ($in_list)")
metrics=$(sql "SELECT count(*) FROM metric m JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id IN ($in_list)")
ended=$(sql "SELECT status || ':' || count(*) FROM experiment WHERE id IN ($in_list) GROUP BY status" | tr '\n' ' ')
busy_log=$(grep -rhiE "SQLITE_BUSY|database is locked" "$NNI_HOME"/*/log/ 2>/dev/null | wc -l || true)
busy_err=$(sql "SELECT count(*) FROM experiment, json_each(experiment.errors) WHERE experiment.id IN ($in_list)
                AND (value LIKE '%database is locked%' OR value LIKE '%SQLITE_BUSY%')")
other_err=$(sql "SELECT count(*) FROM experiment, json_each(experiment.errors) WHERE experiment.id IN ($in_list)")
errlines=$(grep -rhE "\] (ERROR|error)|ERROR " "$NNI_HOME"/*/log/ 2>/dev/null | wc -l || true)
first_done=$(sql "SELECT min(end_time) FROM experiment WHERE id IN ($in_list)")
during=$(sql "SELECT count(*) FROM trial WHERE experiment_id IN ($in_list) AND status='SUCCEEDED'
              AND end_time >= CAST($t_created * 1000 AS INT) AND end_time <= ${first_done:-0}")
failed=$(sql "SELECT count(*) FROM trial WHERE experiment_id IN ($in_list) AND status NOT IN ('SUCCEEDED')")
"$NNICTL" stop --all > /dev/null 2>&1 || true
echo "many_experiments: $(nproc) cores, build $BUILD, experiments=$E (started ${#ids[@]}, create failures $create_fail) trials=$T each concurrency=$CE each steps=$TRIAL_STEPS"
awk -v t0="$t0" -v tc="$t_created" -v t1="$t1" -v ok="$ok" -v all="$all" -v m="$metrics" -v ended="$ended" \
    -v fd="${first_done:-0}" -v during="$during" 'BEGIN {
    printf "  trials: %d succeeded of %d (%d metric rows); experiments ended: %s\n", ok, all, m, ended
    printf "  wall %.1fs (creating all: %.1fs); total %.1f trials/s, %.1f metric rows/s\n", t1 - t0, tc - t0, ok / (t1 - t0), m / (t1 - t0)
    if (fd / 1000 > tc)
        printf "  while all ran (%.1fs, last create -> first DONE): %.1f trials/s\n", fd / 1000 - tc, during / (fd / 1000 - tc)
    else
        printf "  an experiment was DONE before the last one was created: make T or SLEEP larger\n" }'
awk -v a="$t_created" -v b="$(awk -v fd="${first_done:-0}" 'BEGIN { printf "%.3f", fd / 1000 }')" \
    '$1 >= a && $1 <= b { print $2, $3 }' "$WORK/reads.txt" |
sort -k2 -g | awk '{ t[NR] = $2 * 1000; if ($1 != 200) bad++ } END {
    if (NR == 0) { print "  history reads: none"; exit }
    i99 = int(NR * 0.99) + 1; if (i99 > NR) i99 = NR
    printf "  history read (GET trial-jobs?limit=100, experiment 1) while all run: n=%d p50=%.1fms p99=%.1fms max=%.1fms non-200=%d\n",
        NR, t[int(NR * 0.5) + 1], t[i99], t[NR], bad + 0 }'
echo "  SQLITE_BUSY/'database is locked': $busy_log log lines, $busy_err experiment errors (of $other_err experiment errors in all); log lines with ERROR: $errlines; trials not SUCCEEDED: $failed"
