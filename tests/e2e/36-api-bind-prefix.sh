#!/usr/bin/env bash
# Where the api listens and under which path: `nnictl create --bind 0.0.0.0
# --url_prefix /tq/x/` puts every route (REST, trial channel) under /tq/x and, because
# the api then listens beyond loopback, every mutating route needs the experiment's
# token (401 without, 403 with a wrong one), also from a 127.0.0.x peer; nnictl reads
# the token, address and prefix from the database and its commands work. Resumed with
# --bind 127.0.0.1, changes need no token again. A config whose nniManagerIp is not
# loopback listens on 0.0.0.0. Bad --bind / --url_prefix are refused.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
mkdir -p "$WORK/exp"
cat > "$WORK/exp/trial.sh" <<'SH'
echo "$NNI_TRIAL_COMMAND_CHANNEL" > "$NNI_SYS_DIR/channel.url"
exec sleep 120
SH
write_config "$WORK/exp/config.yml" searchSpace='{x: {_type: uniform, _value: [0, 1]}}' maxTrialNumber=2 \
    trialCommandChannel=http
n() { rc=0; timeout 30 nnictl "$@" > "$WORK/out" 2>&1 || rc=$?; [ "$rc" != 124 ] || fail "nnictl $* hung"; }
has() { grep -q -- "$1" "$WORK/out" || { cat "$WORK/out" >&2; fail "expected '$1' from nnictl"; }; }

n create --config "$WORK/exp/config.yml" --port "$port" --bind nowhere; [ "$rc" != 0 ]; has "is not an IP address"
n create --config "$WORK/exp/config.yml" --port "$port" --url_prefix "a/../b"; [ "$rc" != 0 ]; has "is not allowed"
n create --config "$WORK/exp/config.yml" --port "$port" --url_prefix "//"; [ "$rc" != 0 ]; has "is empty"
[ ! -f "$DB" ] || [ "$(sql "SELECT count(*) FROM experiment")" = 0 ] || fail "a refused create left an experiment"
pass "bad --bind / --url_prefix refused, nothing created"

n create --config "$WORK/exp/config.yml" --port "$port" --bind 0.0.0.0 --url_prefix /tq/x/
[ "$rc" = 0 ] || { cat "$WORK/out"; fail "create failed"; }
id=$(exp_id_of "$WORK/out")
has "Web portal URLs: http://127.0.0.1:$port/tq/x"
# as NNI: a URL for each IPv4 address of the host (each interface's, asked of the kernel)
for ip in $($PY -c 'import fcntl, socket, struct
for _, name in socket.if_nameindex():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        print(socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))[20:24]))
    except OSError:
        pass'); do
    grep "^Web portal URLs:" "$WORK/out" | grep -qF " http://$ip:$port/tq/x" || { cat "$WORK/out"; fail "no URL for $ip"; }
done
[ "$(sql "SELECT bind_address || ' ' || url_prefix FROM experiment WHERE id='$id'")" = "0.0.0.0 /tq/x" ] ||
    fail "bind/prefix not stored: $(sql "SELECT bind_address, url_prefix FROM experiment")"
token=$(sql "SELECT token FROM experiment WHERE id='$id'")

# req METHOD URL [BODY [TOKEN]] -> "<status> <body>"
req() {
    $PY - "$@" <<'PY'
import sys, urllib.request, urllib.error
method, url = sys.argv[1], sys.argv[2]
body = sys.argv[3].encode() if len(sys.argv) > 3 and sys.argv[3] else None
r = urllib.request.Request(url, data=body, method=method, headers={'Content-Type': 'application/json'})
if len(sys.argv) > 4:
    r.add_header('X-Trialq-Token', sys.argv[4])
try:
    with urllib.request.urlopen(r, timeout=10) as f:
        print(f.status, f.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
PY
}
other=http://127.0.0.2:$port   # 0.0.0.0 is reached on another loopback address too
api=$other/tq/x/api/v1/nni

out=$(req GET "$api/check-status"); [ "${out%% *}" = 200 ] || fail "check-status under the prefix: $out"
out=$(req GET "$other/api/v1/nni/check-status")
[ "${out%% *}" = 404 ] && [[ "$out" == *'Outside prefix \"/tq/x\"'* ]] || fail "outside the prefix: $out"
out=$(req GET "$other/tq/api/v1/nni/check-status"); [ "${out%% *}" = 404 ] || fail "half the prefix: $out"
out=$(req GET "$api/experiments-info")
$PY -c 'import json,sys; e=[x for x in json.loads(sys.argv[1].split(" ",1)[1]) if x["id"]==sys.argv[2]][0]; assert e["prefixUrl"]=="tq/x", e' "$out" "$id" ||
    fail "experiments-info prefixUrl: $out"
pass "REST API under /tq/x only; reads need no token; prefixUrl shown"

wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 1 30 "a trial running"
tid=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING'")
[ -n "$tid" ] || fail "no trial runs"
wait_until 10 test -s "$NNI_HOME/$id/trials/$tid/channel.url" || fail "trial $tid wrote no channel.url"
chan=$(cat "$NNI_HOME/$id/trials/$tid/channel.url")
# the trial's channel is served by its group leader (a loopback port of its own) under
# the path the api serves it
[[ "$chan" == "http://127.0.0.1:"*"/tq/x/env/"*"/$tid" && "$chan" != "http://127.0.0.1:$port/"* ]] ||
    fail "trial channel URL: $chan"
metric=$($PY -c 'import json,sys; print(json.dumps({"type":"metric","metric":json.dumps({"parameter_id":0,"trial_job_id":sys.argv[1],"type":"PERIODICAL","sequence":0,"value":"0.25"})}))' "$tid")
out=$(req PUT "$chan" "$metric"); [ "${out%% *}" = 200 ] || fail "metric over the prefixed channel: $out"
apichan="http://127.0.0.1:$port/tq/x/env/${chan#*/tq/x/env/}"
out=$(req PUT "$apichan" "$metric"); [ "${out%% *}" = 200 ] || fail "metric over the api's prefixed channel: $out"
nochan=${apichan/\/tq\/x\/env/\/env}
out=$(req PUT "$nochan" "$metric"); [ "${out%% *}" = 404 ] || fail "channel outside the prefix: $out"
wait_sql "SELECT count(*) FROM metric WHERE trial_id='$tid'" 1 5 "channel metric not stored once"
pass "trial channel under the prefix"

# mutations: token required, also from a loopback peer
profile=$(req GET "$api/experiment"); profile=${profile#* }
upd=$($PY -c 'import json,sys; p=json.loads(sys.argv[1]); p["params"]["trialConcurrency"]=2; print(json.dumps(p))' "$profile")
out=$(req PUT "$api/experiment?update_type=TRIAL_CONCURRENCY" "$upd")
[ "${out%% *}" = 401 ] && [[ "$out" == *'"error"'*X-Trialq-Token* ]] || fail "update without token: $out"
out=$(req PUT "$api/experiment?update_type=TRIAL_CONCURRENCY" "$upd" "${token}x")
[ "${out%% *}" = 403 ] || fail "update with a wrong token: $out"
out=$(req DELETE "$api/trial-jobs/$tid"); [ "${out%% *}" = 401 ] || fail "kill without token: $out"
out=$(req DELETE "$api/experiment"); [ "${out%% *}" = 401 ] || fail "DELETE /experiment without token: $out"
[ "$(sql "SELECT concurrency FROM experiment WHERE id='$id'")" = 1 ] || fail "a refused update changed concurrency"
[ "$(sql "SELECT status FROM trial WHERE id='$tid'")" = RUNNING ] || fail "a refused kill changed the trial"
out=$(req PUT "$api/experiment?update_type=TRIAL_CONCURRENCY" "$upd" "$token")
[ "${out%% *}" = 200 ] || fail "update with the token: $out"
[ "$(sql "SELECT concurrency FROM experiment WHERE id='$id'")" = 2 ] || fail "update with the token not applied"
pass "beyond loopback: mutations 401 without token, 403 with a wrong one, 200 with it"

n update concurrency "$id" --value 1; has "Update concurrency success!"
[ "$(sql "SELECT concurrency FROM experiment WHERE id='$id'")" = 1 ] || fail "nnictl update not applied"
n trial ls "$id"; has "\"trialJobId\":\"$tid\""
n experiment status "$id"; has '"status"'
n trial kill "$id" --trial_id "$tid"; [ "$rc" = 0 ] || { cat "$WORK/out"; fail "nnictl trial kill"; }
wait_sql "SELECT status FROM trial WHERE id='$tid'" USER_CANCELED 10 "nnictl trial kill had no effect"
n webui url "$id"; has ":$port/tq/x"
pass "nnictl update / trial ls / trial kill / status / webui url through address, prefix and token"

n stop "$id"; [ "$rc" = 0 ] || { cat "$WORK/out"; fail "stop"; }
n resume "$id" --port "$port" --bind 127.0.0.1; [ "$rc" = 0 ] || { cat "$WORK/out"; fail "resume --bind"; }
has "Web portal URLs: http://127.0.0.1:$port/tq/x"
api=http://127.0.0.1:$port/tq/x/api/v1/nni
profile=$(req GET "$api/experiment"); profile=${profile#* }
upd=$($PY -c 'import json,sys; p=json.loads(sys.argv[1]); p["params"]["trialConcurrency"]=3; print(json.dumps(p))' "$profile")
out=$(req PUT "$api/experiment?update_type=TRIAL_CONCURRENCY" "$upd"); [ "${out%% *}" = 200 ] || fail "loopback update: $out"
out=$(req GET "http://127.0.0.2:$port/tq/x/api/v1/nni/check-status" 2>&1 || true)
[ "${out%% *}" != 200 ] || fail "bound to 127.0.0.1 but answers on 127.0.0.2"
pass "resume --bind 127.0.0.1: loopback only, no token needed"

# browsers: on loopback there is no token, so a page of another site must not be able to
# change the experiment through its user's browser (a form POST or a no-cors fetch needs
# no CORS preflight), nor a page that reaches the api under its own DNS name (rebinding)
# hreq METHOD URL BODY [Header: value]... -> "<status> <body>" (raw socket: Host is ours)
hreq() {
    $PY - "$@" <<'PY'
import http.client, sys, urllib.parse
method, url, body, extra = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4:]
u = urllib.parse.urlsplit(url)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
c.putrequest(method, u.path + ("?" + u.query if u.query else ""), skip_host=any(h.lower().startswith("host:") for h in extra))
for h in extra:
    k, v = h.split(":", 1)
    c.putheader(k, v.strip())
c.putheader("Content-Type", "text/plain;charset=UTF-8")
c.putheader("Content-Length", str(len(body)))
c.endheaders(body)
r = c.getresponse()
print(r.status, r.read().decode())
PY
}
ntrials() { sql "SELECT count(*) FROM trial WHERE experiment_id='$id'"; }
sql "UPDATE experiment SET max_trial_number = 100 WHERE id='$id'"
before=$(ntrials)
for hdrs in "Origin: http://evil.example" "Origin: null" "Origin: http://127.0.0.1:1" "Sec-Fetch-Site: cross-site" \
            "Host: evil.example:$port|Origin: http://evil.example:$port" "Host: 10.1.2.3:$port|Origin: http://10.1.2.3:$port"; do
    IFS='|' read -r -a h <<< "$hdrs"
    out=$(hreq POST "$api/trial-jobs" '{"x": 0.5}' "${h[@]}")
    [ "${out%% *}" = 403 ] || fail "a browser request with '$hdrs' was not refused: $out"
    case "$out" in *"refused"*) ;; *) fail "403 without the reason: $out" ;; esac
    out=$(hreq POST "$api/trial-jobs/$tid/rerun" '' "${h[@]}"); [ "${out%% *}" = 403 ] || fail "rerun with '$hdrs': $out"
done
[ "$(ntrials)" = "$before" ] || fail "a refused browser request added a trial"
# the api's own pages (Origin = the Host they were loaded from), and clients without Origin
for hdrs in "Origin: http://127.0.0.1:$port" "Host: localhost:$port|Origin: http://localhost:$port" "Sec-Fetch-Site: same-origin" ""; do
    IFS='|' read -r -a h <<< "$hdrs"
    out=$(hreq PUT "$api/experiment?update_type=TRIAL_CONCURRENCY" "$upd" "${h[@]}")
    [ "${out%% *}" = 200 ] || fail "a request with '$hdrs' was refused: $out"
done
# reads too: a browser (it says so with Sec-Fetch-*) under a name that is not loopback is
# a rebound page; the same request without the browser's headers (curl, a script) is served
out=$(hreq GET "$api/trial-jobs" '' "Host: evil.example:$port" "Sec-Fetch-Mode: cors" "Sec-Fetch-Site: same-origin")
[ "${out%% *}" = 403 ] || fail "a browser read under a foreign Host: $out"
out=$(hreq GET "http://127.0.0.1:$port/tq/x/" '' "Host: evil.example:$port" "Sec-Fetch-Mode: navigate")
[ "${out%% *}" = 403 ] || fail "the web UI under a foreign Host: $out"
# plain http to a name that is not localhost gets no Sec-Fetch-* from a browser: its
# User-Agent tells
out=$(hreq GET "$api/trial-jobs" '' "Host: evil.example:$port" "User-Agent: Mozilla/5.0 (X11; Linux x86_64)")
[ "${out%% *}" = 403 ] || fail "a browser's read (User-Agent) under a foreign Host: $out"
out=$(hreq GET "$api/trial-jobs" '' "Host: evil.example:$port"); [ "${out%% *}" = 200 ] || fail "a read without browser headers: $out"
out=$(hreq GET "$api/trial-jobs" '' "Host: localhost:$port" "Sec-Fetch-Mode: cors"); [ "${out%% *}" = 200 ] || fail "localhost: $out"
# the tuner's WebSocket is not for browsers either (WebSockets are not under CORS)
code=$(curl -s -o "$WORK/ws.body" -w '%{http_code}' -H 'Upgrade: websocket' -H 'Connection: Upgrade' \
    -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' -H 'Origin: http://evil.example' \
    "http://127.0.0.1:$port/tq/x/tuner")
[ "$code" = 403 ] || fail "a WebSocket upgrade with an Origin got $code: $(cat "$WORK/ws.body")"
n stop "$id"
pass "browsers: foreign Origin, Origin null, cross-site fetch and DNS rebinding (reads too) refused (403, nothing added); own origin and clients without browser headers pass"

# nniManagerIp not on loopback: the api listens on every interface (NNI's behaviour)
# one trial, stopped once it runs: a trial still WAITING at the stop can make it wait 20 s
sed -e 's/^trialConcurrency: 1$/trialConcurrency: 1\nnniManagerIp: 192.0.2.7/' -e 's/^maxTrialNumber: 2$/maxTrialNumber: 1/' \
    "$WORK/exp/config.yml" > "$WORK/exp/mip.yml"
port2=$(free_port)
n create --config "$WORK/exp/mip.yml" --port "$port2"; [ "$rc" = 0 ] || { cat "$WORK/out"; fail "create with nniManagerIp"; }
id2=$(exp_id_of "$WORK/out")
[ "$(sql "SELECT bind_address FROM experiment WHERE id='$id2'")" = 0.0.0.0 ] || fail "nniManagerIp: not bound to 0.0.0.0"
out=$(req DELETE "http://127.0.0.2:$port2/api/v1/nni/experiment"); [ "${out%% *}" = 401 ] || fail "nniManagerIp: $out"
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status='RUNNING'" 1 30 "a trial of the nniManagerIp experiment running"
n stop "$id2"
assert_no_leftovers
pass "nniManagerIp 192.0.2.7: listens on 0.0.0.0, changes need the token"
