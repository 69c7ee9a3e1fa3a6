#!/usr/bin/env bash
# bench/history_api: the REST API over a large history. Builds an experiment of
# N trials x M intermediate metrics (plus a final one for each SUCCEEDED trial)
# directly with SQL in one transaction, on the real schema (an experiment made by
# `nnictl create`, stopped), serves it with `nnictl view`, and measures over keep-alive
# HTTP: p50/p99 of GET /trial-jobs?limit=100 (first page and deep pages), an
# incremental read (?since=), the full GET /trial-jobs, /metric-data-latest, the full
# /metric-data, and the api's RSS afterwards (and its peak).
# Targets: p99 of /trial-jobs?limit=100 <= 20 ms at any offset and of since reads; api
# peak RSS <= 50 MB while it streams the full lists.
#   usage: bench/history_api.sh [BUILD_DIR] (default build)   env: N=100000 M=20 REQS=1000
#     HISTORY_DIR=/tmp/DIR builds the history there once and reuses it (N=1000000: ~2.3 GB)
. "$(dirname "$0")/lib/history_db.sh" "$@"
REQS=${REQS:-1000}
history_bench history_api

"$BUILD/nnictl" view "$id" --port "$port" > /dev/null
api=$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT api_pid FROM experiment WHERE id='$id'")

$PY - "$port" "$REQS" "$N" "$api" <<'PY'
import http.client, json, random, sys, time
port, reqs, n, api = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
def get(path):
    t = time.perf_counter()
    c.request("GET", "/api/v1/nni" + path)
    r = c.getresponse()
    body = r.read()
    assert r.status == 200, (path, r.status, body[:200])
    return time.perf_counter() - t, body, r
def rss():
    f = {l.split(":")[0]: l.split()[1:2] for l in open("/proc/%s/status" % api)}
    f = {k: v[0] for k, v in f.items() if v}
    return int(f["VmRSS"]) / 1024, int(f["VmHWM"]) / 1024
def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] * 1000
for _ in range(20):
    get("/trial-jobs?limit=100")  # warm the page cache and the statement cache
first = [get("/trial-jobs?limit=100")[0] for _ in range(reqs)]
rnd = random.Random(1)
deep = [get("/trial-jobs?limit=100&offset=%d" % rnd.randrange(0, n))[0] for _ in range(reqs // 5)]
dt, body, r = get("/trial-jobs?limit=100")
assert len(json.loads(body)) == 100
seq = int(r.getheader("X-Trialq-Seq"))
inc = [get("/trial-jobs?since=%d" % (seq - 100))[0] for _ in range(reqs // 5)]
print("GET /trial-jobs?limit=100            p50 %6.2f ms  p99 %6.2f ms  (%d requests; target p99 <= 20 ms)"
      % (pct(first, .5), pct(first, .99), len(first)))
print("GET /trial-jobs?limit=100&offset=rnd p50 %6.2f ms  p99 %6.2f ms  (%d requests)"
      % (pct(deep, .5), pct(deep, .99), len(deep)))
print("GET /trial-jobs?since=<last 100>     p50 %6.2f ms  p99 %6.2f ms  (%d requests)"
      % (pct(inc, .5), pct(inc, .99), len(inc)))
# other reads, median and worst of 5 (a metric offset is a seek: migration 019, metric_count)
_, _, r = get("/metric-data?limit=1")
mseq = int(r.getheader("X-Trialq-Seq"))
k = (n // 2) // 10000
mid = "%s%04d" % (chr(65 + k + (6 if k >= 26 else 0)), (n // 2) % 10000)  # history_db.sh's id of trial n/2
for p in ["/metric-data?since=%d" % (mseq - 100), "/metric-data?limit=100&offset=%d" % (n // 10),
          "/metric-data?limit=100&offset=%d" % (n * 10), "/metric-data/" + mid,
          "/metric-data-range/%d/%d" % (n // 2, n // 2 + 10),
          "/trial-jobs?status=SUCCEEDED&limit=100&offset=%d" % (n * 8 // 10), "/trial-jobs/" + mid, "/job-statistics"]:
    ts = sorted(get(p)[0] for _ in range(5))
    print("GET %-52s median %7.1f ms  worst %7.1f ms" % (p, ts[2] * 1000, ts[-1] * 1000))
def stream(path, key):
    """a full list read in 1 MB pieces, never held whole: ms, MB, records, chunked?"""
    t = time.perf_counter()
    c.request("GET", "/api/v1/nni" + path)
    r = c.getresponse()
    assert r.status == 200, (path, r.status)
    size = count = 0
    tail = b""
    while True:
        piece = r.read(1 << 20)
        if not piece:
            break
        size += len(piece)
        buf = tail + piece
        count += buf.count(key)
        tail = buf[-16:]
        count -= tail.count(key)  # counted again with the next piece
    count += tail.count(key)
    return (time.perf_counter() - t) * 1000, size / 2**20, count, r.getheader("Transfer-Encoding") == "chunked"
for path in ("/trial-jobs", "/metric-data-latest", "/metric-data"):
    ms, mb, count, chunked = stream(path, b'"sequenceId"' if path == "/trial-jobs" else b'"trialJobId"')
    if path == "/trial-jobs":
        assert count == n + 1, count
    print("GET %-20s %8d records %8.0f ms %8.1f MB  %s; api peak RSS so far %.1f MB"
          % (path, count, ms, mb, "chunked" if chunked else "one piece", rss()[1]))
now, peak = rss()
print("api RSS after: %.1f MB (peak %.1f MB; target <= 50 MB)" % (now, peak))
PY
