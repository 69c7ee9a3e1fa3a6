#!/usr/bin/env bash
# bench/webui_views: what the web UI's views and the counts cost the api over a large
# history: the first read after the api started (its caches empty), then each read
# uncached (one trial changed before each, as while an experiment runs): median and
# worst of RUNS, in ms. Reuses a history built by bench/history_api.sh. GET
# /webui/compare compares every experiment of the database (at most 8); COMPARE_COPY=1
# first adds, once, a second experiment: a copy of the first one's trial rows (no
# metrics) under another id, minimizing, so that two experiments of N trials each (mixed
# modes) are compared.
#   usage: HISTORY_DIR=/tmp/DIR bench/webui_views.sh [BUILD_DIR]   env: RUNS=5 COMPARE_COPY
# The api migrates the database: give it a copy of a history that an older build reads.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
RUNS=${RUNS:-5}
: "${HISTORY_DIR:?HISTORY_DIR=/tmp/DIR: a history built by bench/history_api.sh}"
export NNI_HOME=$HISTORY_DIR/home
DB=$NNI_HOME/trialq.db
PY=/usr/bin/python3
port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
id=$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT id FROM experiment ORDER BY start_time, id LIMIT 1")
if [ -n "${COMPARE_COPY:-}" ] && [ "$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT count(*) FROM experiment")" = 1 ]; then
    t0=$(date +%s)
    sqlite3 -cmd ".timeout 10000" "$DB" <<SQL
BEGIN;
CREATE TEMP TABLE x AS SELECT * FROM experiment WHERE id = '$id';
UPDATE x SET id = 'benchcopy', name = 'bench copy', api_pid = NULL, port = NULL,
    config = json_set(config, '$.tuner.classArgs.optimize_mode', 'minimize');
INSERT INTO experiment SELECT * FROM x;
CREATE TEMP TABLE t AS SELECT * FROM trial WHERE experiment_id = '$id';
UPDATE t SET id = 'c' || id, experiment_id = 'benchcopy';
INSERT INTO trial SELECT * FROM t;
COMMIT;
SQL
    echo "COMPARE_COPY: experiment benchcopy, a copy of $id's trials, added in $(( $(date +%s) - t0 )) s"
fi
CMP_IDS=$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT group_concat(id) FROM (SELECT id FROM experiment ORDER BY start_time, id LIMIT 8)")
export CMP_IDS
trap '"$BUILD/nnictl" stop --all >/dev/null 2>&1 || true' EXIT
"$BUILD/nnictl" view "$id" --port "$port" > /dev/null
n=$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT count(*) FROM trial WHERE experiment_id='$id'")
api=$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT api_pid FROM experiment WHERE id='$id'")
$PY - "$port" "$RUNS" "$n" "$DB" "$id" "$api" <<'PY'
import http.client, os, sqlite3, sys, time
port, runs, n, db, exp, api = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
def cpu():
    """the api's user + system CPU so far, ms"""
    f = open("/proc/%s/stat" % api).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1000 / os.sysconf("SC_CLK_TCK")
c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
def get(path):
    t = time.perf_counter()
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    assert r.status == 200, (path, r.status)
    return (time.perf_counter() - t) * 1000
def touch():
    """a change of one trial, as a running experiment makes: the views' caches miss"""
    s = sqlite3.connect(db, timeout=10)
    s.execute("UPDATE trial SET message = coalesce(message, '') || 'x' WHERE experiment_id = ? AND sequence = ?",
              (exp, n // 3))
    s.commit()
    s.close()
paths = ["/api/v1/nni/job-statistics", "/api/v1/nni/webui/overview", "/api/v1/nni/webui/charts", "/api/v1/nni/webui/params",
         "/api/v1/nni/webui/importance", "/api/v1/nni/webui/slice", "/api/v1/nni/webui/contour", "/api/v1/nni/webui/ecdf",
         "/api/v1/nni/webui/curves", "/api/v1/nni/webui/trials?limit=50", "/api/v1/nni/webui/trials?limit=50&sort=metric&order=desc",
         "/api/v1/nni/webui/trials?limit=50&sort=metric&order=asc&offset=%d" % (n // 2),
         "/api/v1/nni/trial-jobs?status=SUCCEEDED&limit=100&offset=%d" % (n * 8 // 10)]
print("%d trials" % n)
import os
paths.append("/api/v1/nni/webui/compare?ids=" + os.environ["CMP_IDS"])  # the experiments of the database
# the api's first chart reads every trial: how long it takes, and how long another
# request waits meanwhile (the reading is sliced: the api answers in between)
import threading
lat, stop = [], []
def probe():
    c2 = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    while not stop:
        t = time.perf_counter()
        c2.request("GET", "/api/v1/nni/job-statistics")
        c2.getresponse().read()
        lat.append((time.perf_counter() - t) * 1000)
th = threading.Thread(target=probe)
th.start()
time.sleep(0.2)
first_chart = get("/api/v1/nni/webui/charts")
stop.append(1)
th.join()
lat.sort()
print("GET /api/v1/nni/webui/charts, the api's first: %.1f ms; meanwhile /job-statistics answered %d times,"
      " median %.1f ms, worst %.1f ms" % (first_chart, len(lat), lat[len(lat) // 2], lat[-1]))
for p in paths:  # the api's first computation (its caches empty; the page cache warm after the first)
    print("GET %-62s first  %8.1f ms" % (p, get(p)))
for p in paths:
    ts, used = [], 0
    for _ in range(runs):
        touch()
        c0 = cpu()
        ts.append(get(p))
        used += cpu() - c0
    ts.sort()
    print("GET %-62s median %8.1f ms  worst %8.1f ms  api CPU %6.1f ms a read" % (p, ts[len(ts) // 2], ts[-1], used / runs))
PY
