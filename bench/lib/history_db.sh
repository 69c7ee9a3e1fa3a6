# bench/lib/history_db.sh: a long finished history in one experiment of a trialq
# database, made in one transaction (sourced by bench/history_api.sh and
# bench/webui_load.sh). Trial ids are a letter and four digits (NNI's 5-character
# shape); statuses, durations, parameters and metrics vary as in a real run.
# Source as: . "$(dirname "$0")/lib/history_db.sh" "$@" -- it sets strict mode, SRC (the
# repository), BUILD (the bench's first argument, default build), and N (default
# 100000) and M (default 20) where the environment has none.
#   history_bench NAME: needs SRC, BUILD, N, M; sets PY, WORK (removed at exit unless
#     KEEP is set), NNI_HOME, DB, port and id: an experiment that ran one trial and
#     stopped, with N trials x M metrics of history built into it; prints the figures.
#   build_history DB EXPERIMENT_ID TRIALS METRICS_PER_TRIAL: the history alone.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$SRC/build}
N=${N:-100000}
M=${M:-20}

history_bench() {
    local name=$1
    PY=/usr/bin/python3
    port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    if [ -n "${HISTORY_DIR:-}" ]; then
        # a history built once and reused (N=1000000 takes many minutes to build)
        WORK=$HISTORY_DIR
        export NNI_HOME=$WORK/home
        DB=$NNI_HOME/trialq.db
        trap '"$BUILD/nnictl" stop --all >/dev/null 2>&1 || true' EXIT
        if [ -f "$WORK/built" ] && [ "$(cat "$WORK/built")" = "$N $M" ]; then
            id=$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT id FROM experiment LIMIT 1")
            history_figures "$name" "reused" 0 0
            return
        fi
        rm -rf "$WORK"
        mkdir -p "$WORK"
    else
        WORK=$(mktemp -d "/tmp/trialq-bench-$name-XXXXXX")
        export NNI_HOME=$WORK/home
        trap '"$BUILD/nnictl" stop --all >/dev/null 2>&1 || true; [ -n "${KEEP:-}" ] && echo "kept $WORK" || rm -rf "$WORK"' EXIT
        DB=$NNI_HOME/trialq.db
    fi
    mkdir -p "$WORK/code"
    cat > "$WORK/code/exp.yml" <<YML
experimentName: $name
searchSpace:
  lr: {_type: loguniform, _value: [0.0001, 0.1]}
  batch: {_type: choice, _value: [16, 32, 64, 128]}
  dropout: {_type: uniform, _value: [0, 0.5]}
trialCommand: "true"
trialCodeDirectory: .
trialConcurrency: 1
maxTrialNumber: 1
tuner: {name: Random, classArgs: {seed: 1, optimize_mode: maximize}}
trainingService: {platform: local}
YML
    id=$("$BUILD/nnictl" create --config "$WORK/code/exp.yml" --port "$port" | sed -n 's/.*Experiment ID: \([a-z0-9]*\).*/\1/p')
    while [ "$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT status FROM experiment WHERE id='$id'")" != DONE ]; do sleep 0.05; done
    "$BUILD/nnictl" stop "$id" > /dev/null
    local t0 t1
    t0=$(date +%s.%N)
    build_history "$DB" "$id" "$N" "$M"
    t1=$(date +%s.%N)
    [ -z "${HISTORY_DIR:-}" ] || echo "$N $M" > "$WORK/built"
    history_figures "$name" "built" "$t0" "$t1"
}

# history_figures NAME WHAT T0 T1: trials, metrics and the database's size per trial.
history_figures() {
    local ntrials nmetrics dbsize
    ntrials=$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT count(*) FROM trial WHERE experiment_id='$id'")
    nmetrics=$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT count(*) FROM metric")
    dbsize=$(stat -c %s "$DB")
    awk -v name="$1" -v what="$2" -v n="$ntrials" -v m="$nmetrics" -v s="$dbsize" -v t0="$3" -v t1="$4" \
        'BEGIN { printf "%s: %s %d trials, %d metrics in %.1f s (database %.0f MB, %.0f bytes per trial)\n",
                 name, what, n, m, t1 - t0, s / 1048576, s / n }'
}

build_history() {
    local DB=$1 id=$2 N=$3 M=$4
    sqlite3 -cmd ".timeout 10000" "$DB" <<SQL
    PRAGMA foreign_keys = ON;
    PRAGMA cache_size = -500000;
    BEGIN;
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $N)
    INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameters, status, platform, attempt, max_attempts,
                      submit_time, start_time, end_time, exit_code, message, final_metric, final_metric_json, updated_at)
    SELECT printf('%s%04d', char(65 + i / 10000 + (CASE WHEN i / 10000 >= 26 THEN 6 ELSE 0 END)), i % 10000), '$id', i, i,
           printf('{"lr":%.6g,"batch":%d,"dropout":%.4f}', 0.0001 + (i % 997) / 10000.0, 16 << (i % 4), (i % 503) / 1006.0),
           CASE WHEN i % 20 = 0 THEN 'FAILED' WHEN i % 50 = 1 THEN 'EARLY_STOPPED' ELSE 'SUCCEEDED' END,
           'local', 1, 2, 1700000000000 + i * 1000, 1700000000100 + i * 1000, 1700000030000 + i * 1000 + (i % 89) * 100,
           CASE WHEN i % 20 = 0 THEN 1 ELSE 0 END, CASE WHEN i % 20 = 0 THEN 'exit code 1' END,
           CASE WHEN i % 20 = 0 OR i % 50 = 1 THEN NULL ELSE (i % 1000) / 1000.0 END,
           CASE WHEN i % 20 = 0 OR i % 50 = 1 THEN NULL ELSE printf('%.3f', (i % 1000) / 1000.0) END,
           1700000030000 + i * 1000
    FROM n;
    WITH RECURSIVE k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < $M - 1)
    INSERT INTO metric(trial_id, attempt, parameter_id, type, sequence, value, default_value, time)
    SELECT t.id, 1, t.parameter_id, 'PERIODICAL', k.j, printf('%.4f', (t.sequence % 1000) / 1000.0 * (k.j + 1) / $M),
           (t.sequence % 1000) / 1000.0 * (k.j + 1) / $M, t.start_time + 1000 * (k.j + 1)
    FROM trial t CROSS JOIN k WHERE t.experiment_id = '$id' AND t.sequence >= 1 ORDER BY t.sequence, k.j;
    INSERT INTO metric(trial_id, attempt, parameter_id, type, sequence, value, default_value, time)
    SELECT id, 1, parameter_id, 'FINAL', 0, final_metric_json, final_metric, end_time FROM trial
    WHERE experiment_id = '$id' AND final_metric_json IS NOT NULL AND sequence >= 1 ORDER BY sequence;
    UPDATE experiment SET next_sequence = $N + 1, max_trial_number = $N + 1 WHERE id = '$id';
    COMMIT;
SQL
}
