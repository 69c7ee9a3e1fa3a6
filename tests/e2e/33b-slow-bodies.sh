#!/usr/bin/env bash
# Slow clients against the limits that must hold beyond evhttp (issue 29, findings 3-5;
# docs/security.md), each reproduced as the probe ran it, with the request deadline at
# 5 s. Throughout, a trial's own channel request answers within 1 s and the api stays
# under 64 MB RSS (from /proc/<pid>/status; ASan's quarantine off, so RSS is what the api
# holds):
#  - a GET with a body (Content-Length: 36) and a second request behind it: 400 from its
#    head, never one reply for both; 6 GETs declaring 30 MB, their "bodies" fake request
#    heads sent a few MB at a time: each refused and closed;
#  - 30 connections of one trial's channel (its token), each with a 4 MB body sent but
#    for its last bytes, which trickle: at most 4 per trial, the rest closed (503), none
#    outlives the deadline;
#  - 40 connections trickling heads into a trial leader's channel port (all 32 slots and
#    more): the trial's own request_parameter and its parameter still answer within 1 s.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
mkdir -p "$WORK/exp"
write_config "$WORK/exp/config.yml" searchSpace='{x: {_type: uniform, _value: [0, 1]}}' trialCommand='sleep 300' \
    trialConcurrency=2 maxTrialNumber=2 trialCommandChannel=http
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
TRIALQ_API_REQUEST_TIMEOUT=5 nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || fail "no experiment id printed"
both_up() {
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'")" = 2 ] &&
        for t in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
            [ -s "$NNI_HOME/$id/trials/$t/.nni/channel" ] || return 1
        done
}
wait_until 30 both_up || fail "two trials with their channels do not run"
api_pid=$(sql "SELECT api_pid FROM experiment WHERE id='$id'")
token=$(sql "SELECT token FROM experiment WHERE id='$id'")
A=$(sql "SELECT id FROM trial WHERE experiment_id='$id' ORDER BY sequence LIMIT 1")
B=$(sql "SELECT id FROM trial WHERE experiment_id='$id' ORDER BY sequence LIMIT 1 OFFSET 1")
tokA=$($PY "$TRIALQ_SRC/tests/e2e/chantoken.py" "$token" "$A")
tokB=$($PY "$TRIALQ_SRC/tests/e2e/chantoken.py" "$token" "$B")
leaderB=$(cat "$NNI_HOME/$id/trials/$B/.nni/channel")

$PY - "$port" "$api_pid" "$A" "$B" "$tokA" "$tokB" "$leaderB" <<'PY' || fail "slow clients"
import json, os, socket, sys, time, urllib.parse
port, pid, A, B, tokA, tokB, leader = int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:8]
pathA, pathB = "/env/%s/%s" % (tokA, A), "/env/%s/%s" % (tokB, B)
RSS_MAX, DEADLINE = 64, 5

def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)

def rss_mb():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

def code_of(s, timeout):
    """The status of the next reply on s; None: none in time; 'closed': EOF or reset first."""
    s.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except socket.timeout:
        return None
    except OSError:
        return "closed"
    return int(data[9:12]) if data.startswith(b"HTTP/1.1 ") else "closed"

def put(path, body):
    return (b"PUT " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body)

seq = [0]
def metric(tid=B):
    seq[0] += 1
    return json.dumps({"type": "metric", "metric": json.dumps({
        "parameter_id": 0, "trial_job_id": tid, "type": "PERIODICAL", "sequence": seq[0], "value": "0.5"})}).encode()

def own_request(host, p, path, body):
    """Seconds for a trial's own request on a new connection, as NNI's SDK sends it."""
    t0 = time.time()
    try:
        s = socket.create_connection((host, p), timeout=2)
        s.sendall(body(path))
        code = code_of(s, 2)
        s.close()
    except OSError:
        code = None
    if code != 200:
        fail(f"the trial's own request to {host}:{p}{path[:12]}...: {code}")
    return time.time() - t0

worst = {"lat": 0.0, "rss": rss_mb()}
def watch(what):
    """The trial's own metric on the api and the api's RSS: within bounds, now."""
    lat = own_request("127.0.0.1", port, pathB, lambda p: put(p, metric()))
    rss = rss_mb()
    worst["lat"], worst["rss"] = max(worst["lat"], lat), max(worst["rss"], rss)
    if lat > 1.0:
        fail(f"{what}: the trial's own metric took {lat:.2f} s")
    if rss > RSS_MAX:
        fail(f"{what}: the api holds {rss:.0f} MB")

def pump(conns, budget_s, what):
    """Sends each conn's pending bytes without blocking for up to budget_s, watching."""
    t_end = time.time() + budget_s
    while time.time() < t_end and any(c["out"] for c in conns):
        for c in conns:
            while c["out"] and not c["closed"]:
                try:
                    n = c["s"].send(c["out"][:1 << 20])
                except BlockingIOError:
                    break
                except OSError:
                    c["closed"] = True
                    break
                c["out"] = c["out"][n:]
        watch(what)
        time.sleep(0.2)

def conn(first=b""):
    s = socket.create_connection(("127.0.0.1", port))
    if first:
        s.sendall(first)
    s.setblocking(False)
    return {"s": s, "out": b"", "closed": False}

def closed_by_server(c, timeout):
    code = code_of(c["s"], timeout)
    return code is not None

rss0 = rss_mb()
watch("at rest")
print(f"at rest: api {rss0:.0f} MB")

# ---- finding 3: bodies on GET ----
second = b"GET /api/v1/nni/version HTTP/1.1\r\n\r\n"
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET /api/v1/nni/check-status HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(second) + second)
code = code_of(s, 2)
if code != 400:
    fail(f"a GET with a 36-byte body, a request behind it: {code}, wanted 400")
s.close()
fake = b"GET /api/v1/nni/check-status HTTP/1.1\r\nHost: x\r\n\r\n"
gets = [conn(b"GET /api/v1/nni/check-status HTTP/1.1\r\nHost: x\r\nContent-Length: 31457280\r\n\r\n")
        for _ in range(6)]
for i in range(15):  # 30 MB each in 2 MB pieces, a piece every 0.5 s
    for c in gets:
        c["out"] += fake * (2 * 1024 * 1024 // len(fake))
    pump(gets, 0.5, "6 GETs declaring 30 MB")
pump(gets, 2, "6 GETs declaring 30 MB")
codes = [code_of(c["s"], 0.5) for c in gets]
if any(c not in (400, "closed") for c in codes):
    fail(f"6 GETs declaring 30 MB bodies: {codes}, wanted each refused (400) and closed")
for c in gets:
    c["s"].close()
print(f"bodies on GET: 400 from the head; 6 x 30 MB of fake heads: {codes}; api at most {worst['rss']:.0f} MB,"
      f" the trial's own metric at most {worst['lat'] * 1000:.0f} ms")

# ---- finding 4: 30 channel connections of one trial, 4 MB bodies trickled ----
size = 4 * 1024 * 1024 - 4096
chans = []
for i in range(30):
    c = conn()
    c["s"].setblocking(True)
    c["s"].sendall(put(pathA, metric(A)))  # the connection taken over, trusted
    if code_of(c["s"], 3) != 200:
        fail("a first channel request with the trial's token was not answered")
    c["s"].setblocking(False)
    c["out"] = (b"PUT " + pathA.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % size + b" " * (size - 100))
    chans.append(c)
pump(chans, 6, "30 channel bodies of 4 MB")
t0 = time.time()
while time.time() - t0 < DEADLINE + 2:  # then a byte a second
    for c in chans:
        if not c["closed"]:
            try:
                c["s"].send(b" ")
            except BlockingIOError:
                pass
            except OSError:
                c["closed"] = True
    watch("30 channel bodies trickled")
    time.sleep(0.5)
open_left = [c for c in chans if not closed_by_server(c, 0.2)]
if open_left:
    fail(f"{len(open_left)} of 30 trickled channel connections outlived the {DEADLINE} s deadline")
for c in chans:
    c["s"].close()
print(f"30 x 4 MB channel bodies trickled: all closed by the deadline; api at most {worst['rss']:.0f} MB,"
      f" the trial's own metric at most {worst['lat'] * 1000:.0f} ms")

# ---- finding 5: 40 connections trickling into the trial leader's port ----
u = urllib.parse.urlsplit(leader)
tricklers = []
for i in range(40):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect((u.hostname, u.port))
    except BlockingIOError:
        pass
    tricklers.append(s)
time.sleep(0.3)
for s in tricklers:
    try:
        s.send(b"GET " + u.path.encode() + b" HTTP/1.1\r\nX-Slow: ")
    except OSError:
        pass
slow = 0.0
t0 = time.time()
while time.time() - t0 < 4:
    for s in tricklers:
        try:
            s.send(b"a")
        except OSError:
            pass
    lat = own_request(u.hostname, u.port, u.path, lambda p: put(p, b'{"type":"request_parameter"}'))
    t1 = time.time()
    s2 = socket.create_connection((u.hostname, u.port), timeout=2)
    s2.sendall(b"GET " + u.path.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    code = code_of(s2, 2)
    s2.close()
    if code != 200:
        fail(f"the trial's parameter from its leader with 40 connections trickling: {code}")
    slow = max(slow, lat, time.time() - t1)
    if slow > 1.0:
        fail(f"the trial's own request to its leader took {slow:.2f} s with 40 connections trickling")
    time.sleep(0.5)
for s in tricklers:
    s.close()
print(f"40 connections trickling into the leader: the trial's request_parameter and parameter at most"
      f" {slow * 1000:.0f} ms")
PY
[ "$(sql "SELECT api_pid FROM experiment WHERE id='$id'")" = "$api_pid" ] && kill -0 "$api_pid" || fail "the api is not the same process"
pass "bodies on GET, trickled channel bodies and a full leader port: bounded, and the trial's own requests answer"
nnictl stop "$id" > /dev/null
assert_no_leftovers
