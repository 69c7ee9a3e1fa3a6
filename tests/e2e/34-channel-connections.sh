#!/usr/bin/env bash
# The trial channel's own HTTP/1.1 connections (api/chan_http.c): after its first
# request a keep-alive connection to /env/<token>/<trial> is served by the channel
# itself. Driven with raw sockets: many requests on one connection, pipelining, bytes
# that trickle in, Expect: 100-continue, HTTP/1.0 and Connection: close, other paths,
# malformed heads (each a 4xx/5xx and the connection closed), a client that goes away
# with a metric or a poll pending, a poll pending on a kept connection at stop (410),
# and a few hundred connections of fuzz. Every acknowledged metric is stored once; the
# api is the same process at the end.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
mkdir -p "$WORK/exp"
write_config "$WORK/exp/config.yml" searchSpace='{x: {_type: uniform, _value: [0, 1]}}' trialCommand='sleep 300' \
    trialConcurrency=2 maxTrialNumber=2 trialCommandChannel=http
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || fail "no experiment id printed"
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 2 10 "both trials running"
api_pid=$(sql "SELECT api_pid FROM experiment WHERE id='$id'")
token=$(sql "SELECT token FROM experiment WHERE id='$id'")
A=$(sql "SELECT id FROM trial WHERE experiment_id='$id' ORDER BY sequence LIMIT 1")
B=$(sql "SELECT id FROM trial WHERE experiment_id='$id' ORDER BY sequence LIMIT 1 OFFSET 1")
tokA=$($PY "$TRIALQ_SRC/tests/e2e/chantoken.py" "$token" "$A")
tokB=$($PY "$TRIALQ_SRC/tests/e2e/chantoken.py" "$token" "$B")

cat > "$WORK/chan.py" <<'PY'
import json, random, socket, sys, time
port, A, B, tokA, tokB = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
pathA, pathB = "/env/%s/%s" % (tokA, A), "/env/%s/%s" % (tokB, B)

def metric_body(tid, seq):
    return json.dumps({"type": "metric", "metric": json.dumps({
        "parameter_id": 0, "trial_job_id": tid, "type": "PERIODICAL", "sequence": seq,
        "value": json.dumps(seq * 0.5)})}).encode()

def put(path, body, extra=b"", version=b"1.1"):
    return (b"PUT " + path.encode() + b" HTTP/" + version + b"\r\nHost: x\r\nContent-Type: application/json\r\n"
            + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body)

def get(path, extra=b""):
    return b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n" + extra + b"\r\n"

class Conn:
    def __init__(self):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
    def send(self, data):
        self.s.sendall(data)
    def reply(self):
        """(code, headers dict, body) of the next reply."""
        while b"\r\n\r\n" not in self.buf:
            d = self.s.recv(65536)
            assert d, "connection closed before a reply"
            self.buf += d
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        code = int(lines[0].split()[1])
        hdrs = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        n = int(hdrs.get("content-length", "0"))
        while len(self.buf) < n:
            d = self.s.recv(65536)
            assert d, "connection closed inside a reply body"
            self.buf += d
        body, self.buf = self.buf[:n], self.buf[n:]
        return code, hdrs, body
    def closed(self):
        """True when the server closes the connection (EOF) within 3 s."""
        self.s.settimeout(3)
        try:
            while True:
                d = self.s.recv(65536)
                if not d:
                    return True
                self.buf += d
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True
    def close(self):
        self.s.close()

acked = []  # (trial, seq) answered 200

def ok(c, tid, seq, extra=b""):
    c.send(put("/env/%s/%s" % (tokA if tid == A else tokB, tid), metric_body(tid, seq), extra))
    code, h, body = c.reply()
    assert code == 200, (code, body)
    acked.append((tid, seq))

# 1. many requests on one keep-alive connection, both methods
c = Conn()
for seq in range(1000, 1050):
    ok(c, A, seq)
t0 = time.time()
c.send(get(pathA))
code, _, _ = c.reply()
assert code == 408 and 0.8 < time.time() - t0 < 3, (code, time.time() - t0)
c.send(put(pathA, b'{"type":"request_parameter"}'))
assert c.reply()[0] == 200
c.send(get(pathA))
code, h, body = c.reply()
assert code == 200 and h["content-type"] == "application/json", (code, h)
cmd = json.loads(body)
assert cmd["type"] == "parameter" and "x" in json.loads(cmd["parameter"])["parameters"], cmd
ok(c, A, 1050)
print("ok: 51 metrics, an idle poll (408 after 1 s) and a parameter on one connection")

# 2. pipelined: 20 requests in one write, 20 replies in order
c.send(b"".join(put(pathA, metric_body(A, s)) for s in range(2000, 2020)))
for s in range(2000, 2020):
    code, _, body = c.reply()
    assert code == 200, (s, code, body)
    acked.append((A, s))
print("ok: 20 pipelined requests, 20 replies")

# 3. a request that trickles in byte by byte, then one split at the body
data = put(pathA, metric_body(A, 2100))
for i in range(0, 60):
    c.send(data[i:i + 1])
    time.sleep(0.002)
c.send(data[60:])
assert c.reply()[0] == 200
acked.append((A, 2100))
data = put(pathA, metric_body(A, 2101))
cut = data.index(b"\r\n\r\n") + 4
c.send(data[:cut]); time.sleep(0.05); c.send(data[cut:])
assert c.reply()[0] == 200
acked.append((A, 2101))
print("ok: requests arriving in pieces")

# 4. Expect: 100-continue
body = metric_body(A, 2200)
c.send(b"PUT " + pathA.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
       b"Content-Length: %d\r\n\r\n" % len(body))
code, _, _ = c.reply()
assert code == 100, code
c.send(body)
assert c.reply()[0] == 200
acked.append((A, 2200))
print("ok: Expect: 100-continue")

# 5. another trial's token, another trial's record: 403, and the connection goes on
c.send(put(pathA.replace(tokA, tokB), metric_body(A, 2300)))
assert c.reply()[0] == 403
c.send(put(pathA, metric_body(B, 2301)))
assert c.reply()[0] == 403
c.send(put(pathA, b'{"type":"metric",'))
assert c.reply()[0] == 400
c.send(b"PUT " + pathA.encode() + b" HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}")
assert c.reply()[0] == 415
ok(c, A, 2302)
print("ok: 403/400/415 keep the connection")
c.send(b"DELETE " + pathA.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
code, h, _ = c.reply()
assert code == 405 and h.get("allow") == "GET, PUT", (code, h)
assert c.closed(), "left open after a 405"
c = Conn()
ok(c, A, 2303 - 1000)
print("ok: another method: 405, connection closed")

# 6. Connection: close on a later request: the reply says so, then EOF
ok(c, A, 2303, b"Connection: close\r\n")
assert c.closed(), "connection left open after Connection: close"
c.close()
print("ok: Connection: close")

# 7. HTTP/1.0: closed after the reply unless keep-alive, first request or a later one
c = Conn()
c.send(put(pathB, metric_body(B, 1), version=b"1.0"))
assert c.reply()[0] == 200
acked.append((B, 1))
assert c.closed()
c.close()
c = Conn()
ok(c, B, 2)
c.send(put(pathB, metric_body(B, 3), b"Connection: keep-alive\r\n", version=b"1.0"))
assert c.reply()[0] == 200
acked.append((B, 3))
ok(c, B, 4)
c.send(put(pathB, metric_body(B, 5), version=b"1.0"))
assert c.reply()[0] == 200
acked.append((B, 5))
assert c.closed()
c.close()
print("ok: HTTP/1.0")

# 8. what ends a channel connection: each answered, then closed
bad = [
    (get("/api/v1/nni/check-status"), 400),
    (get("/env/%s/%s/extra" % (tokA, A)), 400),
    (b"GARBAGE\r\n\r\n", 400),
    (b"GET /env/x HTTP/2.0\r\n\r\n", 505),
    (b"GET " + pathA.encode() + b" HTTP/1.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", 431),
    (b"GET " + pathA.encode() + b" HTTP/1.1\r\nX-Big: " + b"a" * 9000, 431),
    (b"PUT " + pathA.encode() + b" HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501),
    (b"PUT " + pathA.encode() + b" HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 413),
    (b"PUT " + pathA.encode() + b" HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400),
    (b"PUT " + pathA.encode() + b" HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
    (b"GET " + pathA.encode() + b" HTTP/1.1\r\n folded: yes\r\n\r\n", 400),
    (b"GET " + pathA.encode() + b" HTTP/1.1\r\nExpect: 200-ok\r\n\r\n", 417),
    (b"GET http://x" + pathA.encode() + b" HTTP/1.1\r\n\r\n", 400),
]
for data, want in bad:
    c = Conn()
    ok(c, A, 3000 + len(acked))
    c.send(data)
    code, _, body = c.reply()
    assert code == want, (data[:60], code, body)
    assert c.closed(), ("left open after", data[:60])
    c.close()
r = Conn()
r.send(get("/api/v1/nni/check-status"))
assert r.reply()[0] == 200, "the REST API on a connection of its own"
r.close()
print("ok: %d kinds of bad request: answered, connection closed" % len(bad))

# 9. gone with a metric pending: stored all the same; gone during a poll: the parameter
# is not lost to it
c = Conn()
ok(c, A, 4000)
c.send(put(pathA, metric_body(A, 4001)))
c.close()
c = Conn()
ok(c, B, 4002)
c.send(get(pathB))
time.sleep(0.1)
c.close()
time.sleep(0.1)
c = Conn()
c.send(put(pathB, b'{"type":"request_parameter"}'))
assert c.reply()[0] == 200
c.send(get(pathB))
code, _, body = c.reply()
assert code == 200 and json.loads(body)["type"] == "parameter", (code, body)
c.close()
print("ok: clients that go away")

# 10. fuzz: a valid first request, then junk, on a few hundred connections
rnd = random.Random(7)
junk = [b"\r\n", b"\x00" * 10, b"PUT", b" HTTP/1.1\r\n", b"Content-Length: 5\r\n", b"\r\n\r\n", b"{}",
        b"GET /env/ HTTP/1.1\r\n\r\n", metric_body(A, 1), b"Connection: close\r\n", b"Expect: 100-continue\r\n",
        bytes(rnd.randrange(256) for _ in range(300)), b"a" * 9000, put(pathA, b"[" * 1000),
        put(pathA, b'{"type":"metric","metric":"{\\"sequence\\":1e999}"}'), get(pathA)]
for i in range(300):
    c = Conn()
    ok(c, A, 5000 + i)
    c.s.settimeout(0.05)
    try:
        for _ in range(rnd.randrange(1, 8)):
            c.s.sendall(rnd.choice(junk))
        if rnd.random() < 0.5:
            c.s.shutdown(socket.SHUT_WR)
        while rnd.random() < 0.7 and c.s.recv(65536):
            pass
    except (OSError, socket.timeout):
        pass
    c.close()
print("ok: 300 connections of fuzz")

json.dump(acked, open(sys.argv[6], "w"))
PY
$PY "$WORK/chan.py" "$port" "$A" "$B" "$tokA" "$tokB" "$WORK/acked.json" || fail "channel connections"

# every acknowledged metric stored exactly once (seq 4001 went without waiting for its reply)
sql "SELECT trial_id || ' ' || sequence || ' ' || count(*) FROM metric WHERE trial_id IN ('$A','$B') GROUP BY trial_id, sequence" > "$WORK/stored"
$PY - "$WORK/acked.json" "$WORK/stored" "$A" <<'PY' || fail "acknowledged metrics vs stored"
import json, sys
acked = {(t, s) for t, s in json.load(open(sys.argv[1]))}
stored = {}
for line in open(sys.argv[2]):
    t, s, n = line.split()
    stored[(t, int(s))] = int(n)
missing = acked - set(stored)
assert not missing, sorted(missing)[:5]
assert all(n == 1 for n in stored.values())
assert (sys.argv[3], 4001) in stored, "the metric of the client that left was not stored"
print("ok: %d acknowledged metrics stored once each" % len(acked))
PY
[ "$(sql "SELECT api_pid FROM experiment WHERE id='$id'")" = "$api_pid" ] && kill -0 "$api_pid" || fail "the api process changed or died"
pass "same api process"

# a poll pending on a kept connection when the experiment stops: 410
$PY - "$port" "/env/$tokA/$A" "$WORK/poll.out" <<'PY' &
import json, socket, sys, time
port, path, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
body = json.dumps({"type": "request_parameter"}).encode()
s.sendall(b"PUT %s HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body))
got = b""
while b"\r\n\r\n" not in got:
    got += s.recv(4096)
got = got.split(b"\r\n\r\n", 1)[1]
codes = []
deadline = time.time() + 10
while time.time() < deadline:
    s.sendall(b"GET %s HTTP/1.1\r\n\r\n" % path.encode())
    while b"\r\n\r\n" not in got:
        d = s.recv(4096)
        if not d:
            break
        got += d
    if b"\r\n\r\n" not in got:
        break
    head, got = got.split(b"\r\n\r\n", 1)
    code = int(head.split()[1])
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(got) < n:
        got += s.recv(4096)
    got = got[n:]
    codes.append(code)
    if code == 410:
        break
open(out, "w").write(" ".join(map(str, codes)))
PY
poller=$!
sleep 1.5
nnictl stop "$id" > /dev/null
wait "$poller" || true
grep -q "410" "$WORK/poll.out" || fail "no 410 on a kept connection at stop: $(cat "$WORK/poll.out")"
pass "a poll pending at stop on a kept connection: $(cat "$WORK/poll.out")"
assert_no_leftovers
echo "34-channel-connections: passed"
