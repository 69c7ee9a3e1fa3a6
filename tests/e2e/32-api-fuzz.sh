#!/usr/bin/env bash
# Robustness: a few thousand malformed requests (random methods, paths, query strings,
# bodies, broken framing, huge headers, early disconnects) against a running api, from
# FUZZ_CLIENTS (8) connections at once. The requests and what each client does with its
# connection are drawn up front from one seed, so a run sends the same set whatever the
# clients' timing (most of the time goes to waiting on connections the api keeps open).
# Afterwards it still answers check-status, it is the same process, and (ASan builds)
# its log holds no sanitizer report (lib.sh fails the test on one).
. "$(dirname "$0")/lib.sh"

N=${FUZZ_N:-3000}
CLIENTS=${FUZZ_CLIENTS:-8}
port=$(free_port)
export TRIAL_STEPS=3 TRIAL_SLEEP=0.2
metrics_experiment "$WORK/exp" 2 40 3
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
wait_sql "SELECT count(*) FROM metric m JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id='$id'" '>0' 10 \
    "a metric stored before the fuzzing"
api_pid=$(sql "SELECT api_pid FROM experiment WHERE id='$id'")
tid=$(sql "SELECT id FROM trial WHERE experiment_id='$id' ORDER BY sequence LIMIT 1")

$PY - "$port" "$N" "$tid" "$CLIENTS" <<'PY'
import random, socket, sys, threading, time
port, n, tid, clients = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rnd = random.Random(20240611)
methods = [b"GET", b"POST", b"PUT", b"DELETE", b"OPTIONS", b"HEAD", b"PATCH", b"TRACE", b"CONNECT", b"FOO",
           b"", b"G\x00T", b"GET GET", b"\xff\xfe"]
routes = ["version", "check-status", "experiment", "experiment/cluster-metadata", "experiment/import-data",
          "experiment/imported-data", "experiment-metadata", "experiments-info", "job-statistics", "trial-jobs",
          "trial-jobs/" + tid, "trial-jobs/" + tid + "/rerun", "metric-data", "metric-data/" + tid,
          "metric-data-range/0/5", "metric-data-latest", "trial-file/" + tid + "/stdout",
          "trial-file/" + tid + "/parameter.cfg", "export-data", "tensorboard", "no-such"]
junk_segments = ["..", "%2e%2e", "%2F", "%00", "%ZZ", "%", "%%", "a" * 5000, "\xe9", "%C0%AF", "*", ":id",
                 "trial.log", "..%2F..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "", "/", "?", "#", ";"]
queries = ["", "?", "?limit=", "?limit=-5", "?limit=99999999999999999999", "?since=1e9", "?status=%00",
           "?type=FINAL&type=PERIODICAL", "?offset=1&limit=2&since=3", "?update_type=TRIAL_CONCURRENCY",
           "?update_type=SEARCH_SPACE", "?update_type=MAX_TRIAL_NUM", "?a=%ZZ", "?&&==&", "?status=WAITING",
           "?limit=1&offset=99999999999"]
bodies = [b"", b"{", b"[", b"null", b"{}", b"[]", b"1e999", b'"\xff\xfe"', b'{"params":{}}',
          b'{"params":{"trialConcurrency":1e308}}', b'{"params":{"trialConcurrency":-1}}',
          b'{"params":{"trialConcurrency":3}}', b'{"params":{"maxTrialNumber":"NaN"}}',
          b'{"params":{"maxExperimentDuration":"9999999999999d"}}', b'{"params":{"searchSpace":"{"}}',
          b'{"params":{"searchSpace":{"x":{"_type":"choice","_value":[]}}}}',
          b'[{"parameter":{"x":1},"value":"[[[["}]', b'[{"parameter":[],"value":1}]',
          b"[" * 100000, b'{"a":' * 3000, b'{"x":"\\ud800"}', bytes(rnd.randrange(256) for _ in range(3000))]
sent = errors = 0
t0 = time.time()

def request():
    kind = rnd.random()
    m = rnd.choice(methods)
    if m in (b"DELETE",) and rnd.random() < 0.9:
        m = b"GET"
    if kind < 0.5:
        path = "/api/v1/nni/" + rnd.choice(routes)
    elif kind < 0.8:
        path = "/api/v1/nni/" + "/".join(rnd.choice(junk_segments) for _ in range(rnd.randrange(1, 6)))
    else:
        path = "/" + "".join(chr(rnd.randrange(1, 0x7f)) for _ in range(rnd.randrange(0, 200)))
    if m == b"DELETE" and path.rstrip("/").endswith("/experiment"):
        m = b"GET"  # that one stops the experiment on purpose
    path += rnd.choice(queries)
    body = rnd.choice(bodies)
    headers = [b"Host: x"]
    r = rnd.random()
    if r < 0.05:
        headers.append(b"X-Big: " + b"a" * rnd.choice([1000, 70000, 200000]))
    elif r < 0.1:
        headers += [b"X-%d: y" % i for i in range(rnd.choice([100, 3000]))]
    elif r < 0.15:
        headers.append(b"Content-Length: " + rnd.choice([b"-1", b"abc", b"99999999999999999999", b"60000000"]))
    elif r < 0.2:
        headers.append(b"Transfer-Encoding: chunked")
        body = rnd.choice([b"zz\r\n", b"5\r\nab", b"ffffffffffffffff\r\n", b"3\r\nabc\r\n0\r\n\r\n"])
    else:
        headers.append(b"Content-Length: %d" % len(body))
    # most exchanges end with the reply; some keep the connection open
    if rnd.random() < 0.9:
        headers.append(b"Connection: close")
    line = m + b" " + path.encode("utf-8", "surrogatepass") + b" HTTP/1." + rnd.choice([b"1", b"0", b"9"])
    data = line + b"\r\n" + b"\r\n".join(headers) + b"\r\n\r\n" + body
    if rnd.random() < 0.05:
        data = data[: rnd.randrange(1, len(data))]  # cut short, then gone
    if rnd.random() < 0.03:
        data = data * 3  # pipelined
    return data

# each exchange: the request, then EOF right after it (maybe mid-reply), gone before the
# reply, or the reply read (gone in the middle of a long reply after CUT chunks); drawn
# in turn under the lock, so the clients share one sequence of exchanges
lock = threading.Lock()
drawn = 0

def next_plan():
    global drawn
    with lock:
        if drawn == n:
            return None
        drawn += 1
        data = request()
        shut = rnd.random() < 0.3
        gone = rnd.random() < 0.1
        cut = rnd.randrange(1, 4) if rnd.random() < 0.05 else 0
        return data, shut, gone, cut

def client():
    global sent, errors
    while time.time() - t0 <= 240:
        plan = next_plan()
        if plan is None:
            return
        data, shut, gone, cut = plan
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=3)
            s.settimeout(0.25)
            s.sendall(data)
            if shut:
                s.shutdown(socket.SHUT_WR)
            if not gone:
                chunks = 0
                try:
                    while s.recv(65536):
                        chunks += 1
                        if chunks == cut:
                            break
                except socket.timeout:
                    pass
            s.close()
            with lock:
                sent += 1
        except OSError:
            with lock:
                errors += 1

threads = [threading.Thread(target=client) for _ in range(clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("fuzz: %d requests sent from %d clients, %d socket errors, %.1f s" % (sent, clients, errors, time.time() - t0))
if sent + errors < n:
    sys.exit("FAIL: only %d of %d requests sent within 240 s" % (sent + errors, n))
PY

code=$(curl -s -o "$WORK/status" -w '%{http_code}' "http://127.0.0.1:$port/api/v1/nni/check-status")
[ "$code" = 200 ] || fail "check-status after fuzzing: $code"
grep -q '"status"' "$WORK/status" || fail "check-status body: $(cat "$WORK/status")"
[ "$(sql "SELECT api_pid FROM experiment WHERE id='$id'")" = "$api_pid" ] && kill -0 "$api_pid" || fail "the api process changed or died"
curl -sf "http://127.0.0.1:$port/api/v1/nni/trial-jobs" | $PY -c 'import json,sys; assert len(json.load(sys.stdin)) >= 1' ||
    fail "trial-jobs after fuzzing"
rss=$(awk '/VmRSS/ {print $2}' "/proc/$api_pid/status")
pass "api still answers after $N malformed requests (RSS ${rss} kB)"
nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "32-api-fuzz: passed"
