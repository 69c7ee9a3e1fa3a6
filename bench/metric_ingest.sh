#!/usr/bin/env bash
# bench/metric_ingest: metric ingestion over the HTTP trial command channel
# (trialCommandChannel: http). An experiment runs C trials that only sleep; C client
# processes (one per trial, each one keep-alive connection, as trialq's SDK uses) PUT
# PERIODICAL metrics for their own trial as fast as the replies come, for SECONDS, to
# the trial's channel: its leader's (trialq-trial, supervise/chanserve.c: the metric is
# appended to .nni/metrics before the reply, not fdatasync'ed; the worker ingests the file), or
# with CHANNEL=api the api's (api/channel.c, what cluster trials use: committed before
# the reply). Every acknowledged metric must be in the database at the end (the time
# the worker took to catch up is printed). Prints metrics/s acknowledged and stored,
# the reply latency p50/p99, the CPU time one metric cost in the manager's processes
# (trials' leaders and supervisors, worker, api) and in the clients (with what two idle cores would carry
# at that cost: the machine is shared, the throughput depends on what else runs).
# The load comes from bench/metric_ingest_client (C; build it with the project), or
# with CLIENT=python from Python's http.client as NNI's SDK sends it.
#   usage: bench/metric_ingest.sh [BUILD_DIR] (default build)
#   env: C=8 SECONDS_=5 CLIENT=c|python CHANNEL=supervisor|api
. "$(dirname "$0")/lib/local_env.sh" "$@"
C=${C:-8}
DUR=${SECONDS_:-5}
port=$(free_port)
local_config "$WORK/code/exp.yml" "sleep $((DUR + 60))" "$C" "$C" 1 '{_type: uniform, _value: [0, 1]}' \
    'trialCommandChannel: http'
id=$(exp_create "$WORK/code/exp.yml" "$port")
[ -n "$id" ] || { echo "nnictl create failed" >&2; exit 1; }
DB=$NNI_HOME/trialq.db
for _ in $(seq 1 300); do
    [ "$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'")" = "$C" ] && break
    sleep 0.1
done
token=$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT token FROM experiment WHERE id='$id'")
sqlite3 -cmd ".timeout 10000" "$DB" "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING'" > "$WORK/trials"
[ "$(wc -l < "$WORK/trials")" = "$C" ] || { echo "only $(wc -l < "$WORK/trials") of $C trials running" >&2; exit 1; }

# the channel of each trial: "<trial id> <path> <port>", its leader's (the URL in
# .nni/channel) or the api's (/env/<its token>/<trial id> on the experiment's port)
if [ "${CHANNEL:-supervisor}" = api ]; then
    /usr/bin/python3 - "$token" "$WORK/trials" "$SRC/tests/e2e" "$port" > "$WORK/channels" <<'PY'
import sys
sys.path.insert(0, sys.argv[3])
from chantoken import chan_token
for tid in open(sys.argv[2]).read().split():
    print(tid, '/env/%s/%s' % (chan_token(sys.argv[1], tid), tid), sys.argv[4])
PY
else
    while read -r tid; do
        f=$NNI_HOME/$id/trials/$tid/.nni/channel
        for _ in $(seq 100); do [ -s "$f" ] && break; sleep 0.1; done
        url=$(cat "$f")
        hostport=${url#http://}; hostport=${hostport%%/*}
        echo "$tid /${url#http://*/} ${hostport##*:}"
    done < "$WORK/trials" > "$WORK/channels"
fi
# CPU time (ms) of the manager's processes (api, worker, the trials' leaders, which serve
# the channel, and supervisors) so far: with the
# clients' own, what one metric costs, whatever else runs on this shared machine
api_pid=$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT api_pid FROM experiment WHERE id='$id'")
worker_pid=$(pgrep -f "trialq worker --platform local --experiment $id" | head -n 1)
sup_pids=$(pgrep -f "trialq-(supervise|trial) $NNI_HOME/$id/" | tr '\n' ' ')
tck=$(getconf CLK_TCK)
cpu_ms() { cat $(printf '/proc/%s/stat ' "$@") 2>/dev/null | awk -v t="$tck" '{ s += $14 + $15 } END { print int(s * 1000 / t) }'; }
cpu0=$(cpu_ms "$api_pid"); wcpu0=$(cpu_ms "$worker_pid"); scpu0=$(cpu_ms $sup_pids)
# busy CPU time of the whole machine (ms), to tell what else ran meanwhile
busy_ms() { awk -v t="$tck" '/^cpu / { print int(($2 + $3 + $4 + $7 + $8 + $9) * 1000 / t) }' /proc/stat; }
busy0=$(busy_ms)
t0=$(date +%s%3N)
if [ "${CLIENT:-c}" = python ]; then
    # the same load from Python's http.client (what NNI's SDK uses): the client, not
    # the api, is then the limit on 2 cores
    out=$(/usr/bin/python3 - "$port" "$DUR" "$WORK/channels" <<'PY'
import http.client, json, multiprocessing, sys, time
dur, chans = float(sys.argv[2]), [l.split() for l in open(sys.argv[3])]
def client(args):
    tid, path, port, start = args
    conn = http.client.HTTPConnection('127.0.0.1', int(port), timeout=30)
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
    return seq, lat
start = time.time() + 0.5
with multiprocessing.Pool(len(chans)) as pool:
    res = pool.map(client, [(t, p, port, start) for t, p, port in chans])
lat = sorted(x for _, l in res for x in l)
print('acknowledged %d errors 0 p50_us %d p99_us %d' % (sum(n for n, _ in res),
      lat[len(lat) // 2] * 1e6, lat[int(len(lat) * 0.99)] * 1e6))
PY
) || true
else
    out=$("$BUILD/bench/metric_ingest_client" "$port" "$DUR" "$WORK/channels" || true)
fi
t1=$(date +%s%3N)
read -r _ acked _ errors _ p50 _ p99 _ client_ms <<< "$out"
# the worker ingests what the leaders wrote: wait until it caught up (at most 60 s)
count() { sqlite3 -cmd ".timeout 10000" "$DB" "SELECT count(*) FROM metric JOIN trial ON trial.id = metric.trial_id WHERE trial.experiment_id = '$id'"; }
stored=$(count)
while [ "$stored" -lt "${acked:-0}" ] && [ $(($(date +%s%3N) - t1)) -lt 60000 ]; do
    sleep 0.05
    stored=$(count)
done
t2=$(date +%s%3N)
cpu1=$(cpu_ms "$api_pid"); wcpu1=$(cpu_ms "$worker_pid"); scpu1=$(cpu_ms $sup_pids)
busy1=$(busy_ms)
echo "client=${CLIENT:-c} channel=${CHANNEL:-supervisor} clients=$C seconds=$DUR acknowledged=$acked stored=$stored"
awk -v s="$acked" -v d="$DUR" 'BEGIN { printf "metrics/s acknowledged: %.0f\n", s / d }'
awk -v s="$stored" -v d="$DUR" -v lag=$((t2 - t1)) 'BEGIN { printf "metrics/s stored: %.0f (the last stored %d ms after the clients ended)\n", s / d, lag }'
awk -v a="$p50" -v b="$p99" 'BEGIN { printf "reply latency p50 %.2f ms, p99 %.2f ms\n", a / 1000, b / 1000 }'
awk -v s="$stored" -v a=$((cpu1 - cpu0)) -v w=$((wcpu1 - wcpu0)) -v u=$((scpu1 - scpu0)) -v c="${client_ms:-0}" 'BEGIN { if (s == 0) exit
    m = (a + w + u) * 1000 / s
    printf "CPU per metric: manager %.1f us (leaders+supervisors %.1f, worker %.1f, api %.1f)", m, u * 1000 / s, w * 1000 / s, a * 1000 / s
    if (c > 0) printf ", clients %.1f us (both together on 2 idle cores: ~%.0f metrics/s)", c * 1000 / s, 2e6 / (m + c * 1000 / s)
    printf "\n" }'
awk -v b=$((busy1 - busy0)) -v a=$((cpu1 - cpu0 + wcpu1 - wcpu0 + scpu1 - scpu0)) -v c="${client_ms:-0}" -v ms=$((t2 - t0)) 'BEGIN {
    o = b - a - c; if (o < 0) o = 0
    printf "other processes meanwhile: %.2f cores busy (the figures above are for what they left)\n", o / ms }'
[ "$stored" = "$acked" ] || { echo "FAIL: $acked acknowledged but $stored stored" >&2; exit 1; }
[ "$errors" = 0 ] || { echo "FAIL: $errors clients got an error reply" >&2; exit 1; }
"$BUILD/nnictl" stop "$id" > /dev/null
[ "${CHANNEL:-supervisor}" != api ] || grep -h "trial channel:" "$NNI_HOME/$id"/log/*.log | tail -n 1 || true
