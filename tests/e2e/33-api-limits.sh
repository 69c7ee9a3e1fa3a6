#!/usr/bin/env bash
# The api's front door (api/guard.c, docs/security.md) against clients that try to
# stall it, each case as an outside probe found it:
#  - its fd limit at 1,024 (prlimit) and 1,030 connections held open, half of them
#    trickling a header byte at a time: /check-status from a new connection answers
#    within 1 s every time, the api does not spin, its log grows by < 100 kB a minute;
#  - the limit lowered under the api's feet (accept() fails with EMFILE): no spin, one
#    log line per interval, and it serves again;
#  - a head or body trickled one byte at a time ends with 408 at the request deadline;
#  - 20 connections declaring 50 MB bodies get 413 at once, before any body; bodies at
#    a route's limit are admitted only within the budget (503 beyond), and the api's
#    memory grows by less than the budget;
#  - beyond loopback a change without the token is refused from its head (401/403)
#    before its body is sent; chunked bodies get 411, heads over 32 kB 431.
# Afterwards it is the same process and answers.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
mkdir -p "$WORK/exp"
write_config "$WORK/exp/config.yml" searchSpace='{x: {_type: uniform, _value: [0, 1]}}' trialCommand='sleep 300'
# the api (a child of nnictl) inherits the limit and the deadline; under ASan, freed
# memory is not held in quarantine, so that its RSS says what the api holds
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
TRIALQ_API_REQUEST_TIMEOUT=5 prlimit --nofile=1024:1024 nnictl create --config "$WORK/exp/config.yml" \
    --port "$port" --bind 0.0.0.0 > "$WORK/create.out" 2>&1 || { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
api_pid=$(sql "SELECT api_pid FROM experiment WHERE id='$id'")
token=$(sql "SELECT token FROM experiment WHERE id='$id'")
log="$NNI_HOME/$id/log/nnictl_stderr.log"
[ "$(awk '/Max open files/ {print $4}' "/proc/$api_pid/limits")" = 1024 ] || fail "the api's fd limit is not 1024"
grep -q "connections: at most 960 at once (fd limit 1024)" "$log" || { cat "$log"; fail "cap not derived from the fd limit"; }

$PY - "$port" "$api_pid" "$log" "$token" <<'PY'
import os, resource, socket, sys, time
port, pid, log, token = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
API = "/api/v1/nni"

def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)

def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

def rss_mb():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

def reply(s, timeout=3.0):
    """The status code of the reply on s, or None when none comes in time."""
    s.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    if not data.startswith(b"HTTP/1.1 "):
        return None
    return int(data[9:12])

def check_status():
    """Seconds a new connection takes to get /check-status answered (None: no answer)."""
    t0 = time.time()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        s.sendall(f"GET {API}/check-status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        code = reply(s, 2)
        s.close()
    except OSError:
        return None
    return time.time() - t0 if code == 200 else None

# ---- 1,030 connections held: half idle, half trickling a header ----
def opener():
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    return s

held = [opener() for _ in range(1030)]
time.sleep(1)
log0, cpu0, t0 = os.path.getsize(log), cpu(), time.time()
worst, reopened, n = 0.0, 0, 0
while time.time() - t0 < 20:
    for i, s in enumerate(held):
        if i % 2:
            try:
                s.send(b"GET / HTTP/1.1\r\nX-Slow: " if n == 0 else b"a")
            except OSError:  # closed by the api (evicted, or the deadline): come back
                s.close()
                held[i] = opener()
                reopened += 1
    lat = check_status()
    if lat is None or lat > 1.0:
        fail(f"/check-status from a new connection: {lat} s with 1,030 connections held")
    worst = max(worst, lat)
    n += 1
    time.sleep(0.5)
used = cpu() - cpu0
growth = (os.path.getsize(log) - log0) / (time.time() - t0) * 60
print(f"held 1,030: {n} checks, slowest {worst * 1000:.0f} ms; {reopened} reconnects; api cpu {used:.1f} s in 20 s;"
      f" log {growth / 1024:.1f} kB/min")
if growth > 100 * 1024:
    fail(f"the log grows by {growth / 1024:.0f} kB a minute")
if used > 15:
    fail(f"the api spent {used:.1f} s of cpu in 20 s")
for s in held:
    s.close()
time.sleep(1)

# ---- accept() failing: the limit lowered below what the api has open ----
nfd = len(os.listdir(f"/proc/{pid}/fd"))
os.system(f"prlimit --pid {pid} --nofile={nfd + 3}:1024")
extra = [opener() for _ in range(60)]
time.sleep(0.5)
log1, cpu1 = os.path.getsize(log), cpu()
time.sleep(3)
used = cpu() - cpu1
lines = open(log, errors="replace").read()[log1:].count("\n")
os.system(f"prlimit --pid {pid} --nofile=1024:1024")
for s in extra:
    s.close()
if used > 1.0:
    fail(f"out of fds the api spent {used:.1f} s of cpu in 3 s (spinning)")
for _ in range(120):  # counted, and logged once per 10 s
    text = open(log, errors="replace").read()
    if "out of file descriptors" in text:
        break
    time.sleep(0.1)
else:
    fail("no log line about accept() failing")
if "Error from accept() call" in text:
    fail("libevent's accept error flood is back")
if lines > 3:
    fail(f"{lines} log lines in 3 s out of fds")
time.sleep(0.5)
lat = check_status() or check_status()
if lat is None:
    fail("no /check-status after the fd limit came back")
print(f"out of fds: api cpu {used:.2f} s in 3 s, {lines} log lines; then served in {lat * 1000:.0f} ms")

# ---- the request deadline (TRIALQ_API_REQUEST_TIMEOUT=5) ----
def trickle(head, each=b"a", secs=9):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(head)
    t = time.time()
    s.settimeout(0.05)
    while time.time() - t < secs:
        try:
            s.send(each)
            data = s.recv(4096)
            if data:
                return int(data[9:12]), time.time() - t
            return "closed", time.time() - t
        except socket.timeout:
            time.sleep(0.5)
        except OSError:
            return "closed", time.time() - t
    return None, time.time() - t

code, secs = trickle(b"GET " + API.encode() + b"/check-status HTTP/1.1\r\nX-Slow: ")
if code != 408 or not 4 <= secs <= 7:
    fail(f"a trickled head: {code} after {secs:.1f} s, wanted 408 after ~5 s")
code, secs = trickle(f"PUT {API}/experiment/cluster-metadata HTTP/1.1\r\nContent-Length: 1000\r\n"
                     f"X-Trialq-Token: {token}\r\n\r\n{{".encode())
if code != 408 or not 4 <= secs <= 7:
    fail(f"a trickled body: {code} after {secs:.1f} s, wanted 408 after ~5 s")
print("trickled head and body: 408 at the deadline")

# ---- bodies: the route's limit, the budget, memory ----
def head_only(method, path, length, tok=token, extra=""):
    s = socket.create_connection(("127.0.0.1", port))
    hdr = f"X-Trialq-Token: {tok}\r\n" if tok else ""
    s.sendall(f"{method} {API}{path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{hdr}{extra}"
              f"Content-Length: {length}\r\n\r\n".encode())
    return s

rss0 = rss_mb()
big = [head_only("PUT", "/experiment?update_type=SEARCH_SPACE", 52428800) for _ in range(20)]
t = time.time()
codes = [reply(s, 2) for s in big]
if codes != [413] * 20 or time.time() - t > 2:
    fail(f"50 MB declared: {codes} in {time.time() - t:.1f} s, wanted 413 at once")
for s in big:
    s.close()
rss_big = rss_mb()
if rss_big - rss0 > 8:
    fail(f"20 declared 50 MB bodies took the api from {rss0:.0f} to {rss_big:.0f} MB")
limit = 16 << 20  # BODY_PROFILE
at_limit = [head_only("PUT", "/experiment?update_type=SEARCH_SPACE", limit) for _ in range(20)]
time.sleep(0.5)
codes = [reply(s, 0.3) for s in at_limit]
admitted = [s for s, c in zip(at_limit, codes) if c is None]
if len(admitted) != 2 or codes.count(503) != 18:
    fail(f"16 MB declared x20: {codes}, wanted 2 admitted (32 MB budget) and 18 503s")
chunk = b" " * (1 << 20)
for s in admitted:  # all but the last byte: the api holds both bodies
    s.settimeout(10)
    for _ in range(15):
        s.sendall(chunk)
    s.sendall(b" " * ((1 << 20) - 1))
time.sleep(1)
rss1 = rss_mb()
if rss1 - rss0 > 48:
    fail(f"the api grew from {rss0:.0f} to {rss1:.0f} MB holding two 16 MB bodies")
for s in admitted:
    s.sendall(b" ")  # complete: whitespace is not JSON, so 400, and the budget is free again
codes = [reply(s, 5) for s in admitted]
if codes != [400, 400]:
    fail(f"the completed bodies: {codes}")
for s in at_limit:
    s.close()
s = head_only("PUT", "/experiment?update_type=SEARCH_SPACE", 1000)
if reply(s, 0.5) is not None:
    fail("the budget was not given back")
s.close()
print(f"bodies: 413 at once for 50 MB (rss {rss0:.0f} -> {rss_big:.0f} MB); the budget admits 2 of 20 at 16 MB"
      f" (rss {rss0:.0f} -> {rss1:.0f} MB holding both)")

# ---- beyond loopback: the token from the head, before the body ----
for tok, want in ((None, 401), (token + "x", 403)):
    s = head_only("PUT", "/experiment/cluster-metadata", 1000000, tok)
    code = reply(s, 1)
    s.close()
    if code != want:
        fail(f"token {tok!r}: {code} before the body, wanted {want}")
s = head_only("PUT", "/experiment/cluster-metadata", 100, None, "Transfer-Encoding: chunked\r\n")
if reply(s, 1) != 411:
    fail("a chunked body was not refused with 411")
s.close()
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET " + API.encode() + b"/version HTTP/1.1\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n")
if reply(s, 2) != 431:
    fail("a 40 kB head was not refused with 431")
s.close()
# the trial channel takes a connection over before it checks the token: a connection
# that never showed one is closed after its 403, not kept
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET /env/" + b"0" * 32 + b"/Ab12c HTTP/1.1\r\nHost: x\r\n\r\n")
if reply(s, 2) != 403:
    fail("a channel request without a valid token was not refused")
s.settimeout(2)
try:
    rest = s.recv(4096)
    while rest and b"\r\n\r\n" not in rest:
        rest += s.recv(4096)
    closed = s.recv(1) == b""
except socket.timeout:
    closed = False
if not closed:
    fail("a channel connection without a valid token stays open after its 403")
s.close()
print("token checked from the head (401/403), 411 for chunked, 431 for a 40 kB head; tokenless channel closed")
PY
[ "$(sql "SELECT api_pid FROM experiment WHERE id='$id'")" = "$api_pid" ] && kill -0 "$api_pid" || fail "the api is not the same process"
curl -sf "http://127.0.0.1:$port/api/v1/nni/check-status" > /dev/null || fail "no answer at the end"
pass "the api survived fd exhaustion, slow clients and large bodies"
nnictl stop "$id" > /dev/null
assert_no_leftovers
