#!/usr/bin/env bash
# bench/metric_ingest: metric ingestion over the HTTP trial command channel
# (trialCommandChannel: http, api/channel.c). An experiment runs C trials that only
# sleep; C client processes (one per trial, each one keep-alive connection, as the SDK
# uses) PUT PERIODICAL metrics for their own trial as fast as the replies come, for
# SECONDS. A reply comes only after the metric is committed, so the metric rows in the
# database at the end are what was acknowledged. Prints metrics/s stored, the reply
# latency p50/p99, and the transactions the api used (group commit).
#   usage: bench/metric_ingest.sh [BUILD_DIR] (default build)   env: C=8 SECONDS_=5
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
C=${C:-8}
DUR=${SECONDS_:-5}
WORK=$(mktemp -d "${BENCH_TMP:-/tmp}/trialq-bench-XXXXXX")
trap 'NNI_HOME=$WORK/home "$BUILD/nnictl" stop --all >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
export NNI_HOME=$WORK/home
mkdir -p "$WORK/code"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$WORK/code/exp.yml" <<YML
searchSpace:
  x: {_type: uniform, _value: [0, 1]}
trialCommand: sleep $((DUR + 60))
trialCodeDirectory: .
trialConcurrency: $C
maxTrialNumber: $C
trialCommandChannel: http
tuner: {name: Random, classArgs: {seed: 1}}
trainingService: {platform: local}
YML
id=$("$BUILD/nnictl" create --config "$WORK/code/exp.yml" --port "$port" | sed -n 's/.*Experiment ID: \([a-z0-9]*\).*/\1/p')
[ -n "$id" ] || { echo "nnictl create failed" >&2; exit 1; }
DB=$NNI_HOME/trialq.db
for _ in $(seq 1 300); do
    [ "$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'")" = "$C" ] && break
    sleep 0.1
done
token=$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT token FROM experiment WHERE id='$id'")
sqlite3 -cmd ".timeout 10000" "$DB" "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING'" > "$WORK/trials"
[ "$(wc -l < "$WORK/trials")" = "$C" ] || { echo "only $(wc -l < "$WORK/trials") of $C trials running" >&2; exit 1; }

/usr/bin/python3 - "$port" "$token" "$DUR" "$WORK/trials" "$DB" "$SRC/tests/e2e" <<'PY'
import http.client, json, multiprocessing, sqlite3, sys, time
port, token, dur, trials_file, db, libdir = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
sys.path.insert(0, libdir)
from chantoken import chan_token
trials = open(trials_file).read().split()

def client(args):
    tid, start = args
    path = '/env/%s/%s' % (chan_token(token, tid), tid)
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    while time.time() < start:
        time.sleep(0.001)
    lat, seq, end = [], 0, start + dur
    while time.time() < end:
        body = json.dumps({'type': 'metric', 'metric': json.dumps({
            'parameter_id': 0, 'trial_job_id': tid, 'type': 'PERIODICAL', 'sequence': seq,
            'value': json.dumps(seq * 0.5)})})
        t0 = time.perf_counter()
        conn.request('PUT', path, body=body, headers={'Content-Type': 'application/json'})
        r = conn.getresponse()
        r.read()
        lat.append(time.perf_counter() - t0)
        if r.status != 200:
            raise SystemExit('HTTP %d for %s' % (r.status, tid))
        seq += 1
    conn.close()
    return seq, lat

start = time.time() + 0.5
with multiprocessing.Pool(len(trials)) as pool:
    res = pool.map(client, [(t, start) for t in trials])
acked = sum(n for n, _ in res)
lat = sorted(x for _, l in res for x in l)
q = ','.join("'%s'" % t for t in trials)
stored = sqlite3.connect(db).execute('SELECT count(*) FROM metric WHERE trial_id IN (%s)' % q).fetchone()[0]
print('clients=%d seconds=%.0f acknowledged=%d stored=%d' % (len(trials), dur, acked, stored))
print('metrics/s stored: %.0f' % (stored / dur))
print('reply latency p50 %.2f ms, p99 %.2f ms' % (lat[len(lat) // 2] * 1e3, lat[int(len(lat) * 0.99)] * 1e3))
if stored != acked:
    raise SystemExit('FAIL: %d acknowledged but %d stored' % (acked, stored))
PY
"$BUILD/nnictl" stop "$id" > /dev/null
grep -h "trial channel:" "$NNI_HOME/$id"/log/*.log | tail -n 1 || true
