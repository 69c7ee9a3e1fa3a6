#!/usr/bin/env bash
# bench/cluster_scale: an experiment of N trials at concurrency C on the kubeflow platform
# (TFJob, one Worker replica) against the Kubernetes API test server
# (tests/servers/k8s_server.py, over TLS with a bearer token) in its no-process mode
# (--sim-run): a job runs no process, is Running after the server's start delay and
# succeeds DUR seconds later, having written one FINAL metric (ME-framed .nni/metrics)
# and its exit code into the shared storage, as a trial would. So thousands of
# concurrent jobs fit on one small machine, and what is measured is trialq's cost.
# Prints:
#   - API requests/s by verb and path pattern in steady state: over WINDOW seconds
#     starting when C jobs are running (from the server's GET /_test/stats)
#   - slot refill p50/p99: from the k-th trial's end (end_time in the database) to the
#     (k+C)-th job created on the server: how long a freed slot stays empty
#   - queued->created p50/p99: the trial's submit_time in the database to its job's
#     creation on the server (includes waiting for a free slot: up to a job's run time)
#   - created->running p50/p99 on the server (its start delay: a check of the server)
#   - finished->recorded p50/p99: the trial's end_time (SUCCEEDED written) and its FINAL
#     metric's time in the database minus the time the server finished the job
#   - worker CPU per trial (utime+stime of the worker process from /proc, divided by
#     the trials), worker RSS now and peak (VmRSS, VmHWM), wall time and trials/s
#   - the test server's CPU and its answer time in the steady state (when it is
#     saturated, the figures are the Python server's, not trialq's)
# Needs root (tests/servers/k8s_lib.sh starts the server) and a release build.
#   usage: bench/cluster_scale.sh [BUILD_DIR] (default build)
#   env:   N=5000 trials, C=2000 concurrency, DUR=30 seconds a job runs, WINDOW=15
#          seconds of steady state measured, POLL_MS= the worker's poll interval
#          (TRIALQ_KUBE_POLL_MS; empty: the worker's default), SUBMIT_RATE= new jobs
#          per second (TRIALQ_SUBMIT_RATE; empty: the platform's 20), KEEP=1 keeps the
#          work dir, MAX_GET_RATE=R fails the run when the status GETs (job list and
#          single jobs) in the steady state exceed R per second (bench/cluster_scale-short),
#          LATE=1 measures the status GETs over a second WINDOW once N-C-500 jobs are
#          done (C still running, the history large: the listing must not grow with it)
. "$(dirname "$0")/lib/e2e_env.sh" "$@"
N=${N:-5000}
C=${C:-2000}
DUR=${DUR:-30}
WINDOW=${WINDOW:-15}
. "$SRC/tests/e2e/lib.sh"
. "$SRC/tests/servers/k8s_lib.sh"
unset TRIALQ_KUBE_TIMEOUT_MS
if [ -n "${POLL_MS:-}" ]; then export TRIALQ_KUBE_POLL_MS=$POLL_MS; else unset TRIALQ_KUBE_POLL_MS; fi
if [ -n "${SUBMIT_RATE:-}" ]; then export TRIALQ_SUBMIT_RATE=$SUBMIT_RATE; else unset TRIALQ_SUBMIT_RATE; fi
unset TRIALQ_KUBE_LIST_LIMIT
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

K8S_AUTH=token
export KUBECONFIG="$WORK/kubeconfig"
k8s_start --sim-run "$DUR" --start-delay 0.2
k8s_experiment_config "$WORK/exp" "$N" "$C" "  platform: kubeflow
  operator: tf-operator
  apiVersion: v1
  storage: {storageType: nfs, server: nfs.test, path: /exports/nni, localMountPoint: $K8S_NFS}
  worker: {replicas: 1, command: sh trial.sh, cpuNumber: 1, memorySize: 512mb, dockerImage: test/tf:1}"
t0=$(date +%s.%N)
nnictl create --config "$WORK/exp/config.yml" --port "$(free_port)" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "nnictl create failed"; }
id=$(exp_id_of "$WORK/create.out")
worker_pid() { sql "SELECT pid FROM process WHERE experiment_id='$id' AND role LIKE 'worker%' AND ended_at IS NULL LIMIT 1"; }
has_worker() { [ -n "$(worker_pid)" ]; }
wait_until 60 has_worker || fail "no worker process of $id within 60 s"
wpid=$(worker_pid)
[ -n "$wpid" ] || fail "no worker process of $id"
# running: the jobs running now; with an argument, also how many were created: "R CREATED"
running() { k8s_hook GET jobtimes | $PY -c '
import json, sys
t = json.load(sys.stdin).values()
print(sum(1 for v in t if "running" in v and "done" not in v), *([len(t)] if len(sys.argv) > 1 else []))' "$@"; }
cpu_s() { awk '{printf "%.2f", ($14 + $15) / '"$(getconf CLK_TCK)"'}' "/proc/$1/stat"; }

# steady state: from the first time C jobs run (or all N jobs were created) for WINDOW seconds
deadline=$(( $(date +%s) + 3600 ))
while :; do
    read -r r created <<< "$(running all)"
    [ "$r" -ge "$C" ] && break
    [ "$created" -ge "$N" ] && [ "$r" -gt 0 ] && break
    status_is "$id" 'DONE|STOPPED|ERROR' && fail "experiment ended before it reached $C running jobs"
    [ "$(date +%s)" -lt "$deadline" ] || fail "no steady state within an hour"
    sleep 0.5
done
# the server's answer time (before the window, so not counted in it): 20 GETs of one job on one keep-alive connection
job=$(sql "SELECT job_id FROM trial WHERE experiment_id='$id' AND status='RUNNING' AND job_id IS NOT NULL LIMIT 1")
lat=$($PY - "$K8S_PORT" "$K8S_TOKEN" "$job" <<'PY'
import http.client, ssl, sys, time
c = http.client.HTTPSConnection('127.0.0.1', int(sys.argv[1]), context=ssl._create_unverified_context(), timeout=30)
ts = []
for _ in range(20):
    t = time.time()
    c.request('GET', '/apis/kubeflow.org/v1/namespaces/default/tfjobs/' + sys.argv[3],
              headers={'Authorization': 'Bearer ' + sys.argv[2]})
    c.getresponse().read()
    ts.append((time.time() - t) * 1000)
ts.sort()
print('%.1f/%.1f' % (ts[10], ts[-1]))
PY
)
ts_a=$(date +%s.%N); k8s_hook GET stats > "$WORK/stats-a.json"; cpu_a=$(cpu_s "$wpid"); run_a=$(running)
scpu_a=$(cpu_s "$K8S_PID")
sleep "$WINDOW"
ts_b=$(date +%s.%N); k8s_hook GET stats > "$WORK/stats-b.json"; cpu_b=$(cpu_s "$wpid"); run_b=$(running)
scpu_b=$(cpu_s "$K8S_PID")
late=""
if [ -n "${LATE:-}" ]; then
    done_jobs() { k8s_hook GET jobtimes | $PY -c 'import json,sys; print(sum(1 for v in json.load(sys.stdin).values() if "done" in v))'; }
    late_due() { [ "$(done_jobs)" -ge $(( N - C - 500 )) ]; }
    wait_until 7200 late_due || fail "the late window never came"
    la=$(date +%s.%N); k8s_hook GET stats > "$WORK/stats-la.json"; lra=$(running); lda=$(done_jobs)
    sleep "$WINDOW"
    lb=$(date +%s.%N); k8s_hook GET stats > "$WORK/stats-lb.json"; lrb=$(running)
    late=$($PY - "$WORK" "$la" "$lb" "$lra" "$lrb" "$lda" <<'PY'
import json, sys
w, la, lb = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
a, b = json.load(open(w + '/stats-la.json')), json.load(open(w + '/stats-lb.json'))
gets = sum(v - a['routes'].get(k, 0) for k, v in b['routes'].items() if k.startswith('GET ') and '/tfjobs' in k)
print('late window: %.1fs with %s..%s jobs running, %s done: status GETs %.1f/s, %.1f listings/s, jobs per '
      'listing at most %d' % (lb - la, sys.argv[4], sys.argv[5], sys.argv[6], gets / (lb - la),
                              (b['lists'] - a['lists']) / (lb - la), max(b['list_items'][-10:] or [0])))
PY
)
fi
wait_until 7200 status_is "$id" 'DONE|ERROR' || fail "experiment $id did not finish"
t1=$(date +%s.%N)
cpu_end=$(cpu_s "$wpid")
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$wpid/status")
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$wpid/status")
k8s_hook GET jobtimes > "$WORK/jobtimes.json"
k8s_hook GET stats > "$WORK/stats-end.json"
sql "SELECT t.job_id, t.submit_time, t.start_time, t.end_time, t.status,
            (SELECT min(m.time) FROM metric m WHERE m.trial_id = t.id AND m.type = 'FINAL')
     FROM trial t WHERE t.experiment_id='$id'" > "$WORK/trials.txt"
nnictl stop "$id" > /dev/null 2>&1 || true

[ -z "$late" ] || echo "$late"
echo "cluster_scale: $(nproc) cores, build $BUILD, trials=$N concurrency=$C job_run=${DUR}s poll_ms=${TRIALQ_KUBE_POLL_MS:-default} submit_rate=${TRIALQ_SUBMIT_RATE:-default}"
$PY - "$WORK" "$ts_a" "$ts_b" "$t0" "$t1" "$N" "$run_a" "$run_b" "$cpu_a" "$cpu_b" "$cpu_end" "$rss" "$hwm" \
    "$scpu_a" "$scpu_b" "$lat" "$C" "${MAX_GET_RATE:-}" <<'PY'
import json, sys
work, ts_a, ts_b, t0, t1 = sys.argv[1], *map(float, sys.argv[2:6])
n, run_a, run_b = map(int, sys.argv[6:9])
cpu_a, cpu_b, cpu_end = map(float, sys.argv[9:12])
rss, hwm = int(sys.argv[12]), int(sys.argv[13])
scpu_a, scpu_b, lat = float(sys.argv[14]), float(sys.argv[15]), sys.argv[16]
a = json.load(open(work + '/stats-a.json'))['routes']
b = json.load(open(work + '/stats-b.json'))['routes']
end = json.load(open(work + '/stats-end.json'))
times = json.load(open(work + '/jobtimes.json'))
win = ts_b - ts_a
print('steady state: %.1fs with %d..%d jobs running; API requests/s:' % (win, run_a, run_b))
total = 0
for k in sorted(b, key=lambda k: -(b[k] - a.get(k, 0))):
    d = b[k] - a.get(k, 0)
    total += d
    if d:
        print('  %-62s %8.1f/s' % (k, d / win))
verbs = {}
for k in b:
    verbs[k.split()[0]] = verbs.get(k.split()[0], 0) + b[k] - a.get(k, 0)
print('  total %.1f/s (%s); per running job %.2f/s' % (total / win, ', '.join('%s %.1f/s' % (v, c / win) for v, c in
      sorted(verbs.items())), total / win / max(1, (run_a + run_b) / 2)))
status_gets = sum(b[k] - a.get(k, 0) for k in b if k.startswith('GET ') and '/tfjobs' in k) / win
ea, eb = json.load(open(work + '/stats-a.json')), json.load(open(work + '/stats-b.json'))
print('  status GETs (job list pages and single jobs) %.1f/s: %.1f listings/s, %.1f continued pages/s' %
      (status_gets, (eb['lists'] - ea['lists']) / win, (eb['continues'] - ea['continues']) / win))
print('  the test server meanwhile: %.0f%% of a core; a GET of one job p50/max %s ms (20 on one connection)' %
      ((scpu_b - scpu_a) * 100 / win, lat))
print('whole run: %d API requests (%s)' % (end['requests'], ', '.join('%s %d' % (k, v) for k, v in
      sorted(end['routes'].items()))))

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float('nan')

q2c, c2r, f2end, f2met, ends, ok = [], [], [], [], [], 0
for line in open(work + '/trials.txt'):
    job, submit, start, endt, status, fin = (line.rstrip('\n').split('|') + [''] * 6)[:6]
    ok += status == 'SUCCEEDED'
    jt = times.get(job)
    if not jt:
        continue
    if endt:
        ends.append(int(endt))
    if 'created' in jt and submit:
        q2c.append(jt['created'] * 1000 - int(submit))
    if 'running' in jt:
        c2r.append((jt['running'] - jt['created']) * 1000)
    if 'done' in jt and endt:
        f2end.append(int(endt) - jt['done'] * 1000)
    if 'done' in jt and fin:
        f2met.append(int(fin) - jt['done'] * 1000)
print('trials: %d succeeded of %d; wall %.1fs (from nnictl create); %.1f trials/s' % (ok, n, t1 - t0, n / (t1 - t0)))
ends.sort()
creates = sorted(v['created'] * 1000 for v in times.values() if 'created' in v)
c = int(sys.argv[17])
refill = [creates[k + c] - ends[k] for k in range(len(ends)) if k + c < len(creates)]
print('slot refill       p50 %7.0f ms  p99 %7.0f ms  (k-th trial end -> (k+C)-th job created; %d)' %
      (pct(refill, .5), pct(refill, .99), len(refill)))
print('queued->created   p50 %7.0f ms  p99 %7.0f ms  (submit_time -> job created, with the wait for a slot)' %
      (pct(q2c, .5), pct(q2c, .99)))
print('created->running  p50 %7.0f ms  p99 %7.0f ms  (on the server)' % (pct(c2r, .5), pct(c2r, .99)))
print('finished->ended   p50 %7.0f ms  p99 %7.0f ms  (trial end_time - job done)' % (pct(f2end, .5), pct(f2end, .99)))
print('finished->metric  p50 %7.0f ms  p99 %7.0f ms  (FINAL metric time - job done)' % (pct(f2met, .5), pct(f2met, .99)))
print('worker CPU: %.2f ms per trial over the run, %.1f%% of a core in steady state; worker RSS %.1f MB, peak %.1f MB' %
      (cpu_end * 1000 / n, (cpu_b - cpu_a) * 100 / win, rss / 1024, hwm / 1024))
if sys.argv[18] and status_gets > float(sys.argv[18]):
    sys.exit('cluster_scale: FAILED: %.1f status GETs/s with %d..%d jobs running, want at most %s' %
             (status_gets, run_a, run_b, sys.argv[18]))
if ok != n or len(f2met) != n:
    sys.exit('cluster_scale: FAILED: %d of %d trials succeeded, %d with a FINAL metric' % (ok, n, len(f2met)))
PY
