#!/usr/bin/env bash
# bench/metrics_scrape: the cost of GET /metrics against the number of trials. Builds an
# experiment of N trials x M intermediate metrics (bench/lib/history_db.sh: SQL in one
# transaction on the real schema, so migration 018's triggers keep the counts as the
# rows go in), serves it with `nnictl view`, and times REQS scrapes over keep-alive HTTP
# (p50/p99, and the body's size). Run it at N=1000 and N=1000000: the figures should be
# the same (kept counts, no scan of the trials).
#   usage: bench/metrics_scrape.sh [BUILD_DIR] (default build)   env: N=100000 M=1 REQS=500
#     HISTORY_DIR=/tmp/DIR builds the history there once and reuses it
M=${M:-1}
. "$(dirname "$0")/lib/history_db.sh" "$@"
REQS=${REQS:-500}
history_bench metrics_scrape
"$BUILD/nnictl" view "$id" --port "$port" > /dev/null
$PY - "$port" "$REQS" <<'PY'
import http.client, sys, time
port, reqs = int(sys.argv[1]), int(sys.argv[2])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
def get():
    t = time.perf_counter()
    c.request("GET", "/metrics")
    r = c.getresponse()
    body = r.read()
    assert r.status == 200 and r.getheader("Content-Type").startswith("text/plain; version=0.0.4"), r.status
    return time.perf_counter() - t, body
for _ in range(20):
    get()
ts = sorted(get()[0] for _ in range(reqs))
_, body = get()
line = [l for l in body.decode().splitlines() if l.startswith('trialq_trials{status="SUCCEEDED"}')]
print("GET /metrics  p50 %.3f ms  p99 %.3f ms  (%d requests, %d bytes; %s)"
      % (ts[len(ts) // 2] * 1000, ts[int(len(ts) * .99)] * 1000, reqs, len(body), line[0]))
PY
