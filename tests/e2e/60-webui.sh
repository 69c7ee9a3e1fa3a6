#!/usr/bin/env bash
# The web UI in a real browser (headless Debian chromium driven by playwright-core,
# tests/webui/e2e.js) against a real running experiment: overview numbers equal the
# database, sort and filter the table, a trial's detail, concurrency changed in the UI
# and followed by the scheduler, a kill, no console errors, a narrow window. Then the
# stopped experiment under `nnictl view` (read-only), and the api going away.
# Screenshots of each page: <ctest's working dir>/webui-artifacts/60-webui/*.png (the
# build dir's tests/ folder under ctest; WEBUI_ARTIFACTS overrides).
. "$(dirname "$0")/lib.sh"

webui_artifacts   # sets ART
webui_setup   # sets UI; chromium, node and playwright-core

port=$(free_port)
mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/exp/"
# a trial whose parameters hold "hold" goes on after its final metric (the kill test);
# trial 1 fails after its final metric (it has one, but does not show it: NNI's rule)
write_config "$WORK/exp/config.yml" experimentName=e2e-webui \
    searchSpace=$'\n  x: {_type: randint, _value: [0, 1000]}\n  lr: {_type: loguniform, _value: [0.0001, 0.1]}\n  opt: {_type: choice, _value: [sgd, adam]}' \
    trialCommand='TRIAL_STEPS=4 TRIAL_SLEEP=1 sh metrics.sh && [ "$NNI_TRIAL_SEQ_ID" != 1 ] && if grep -q hold "$NNI_SYS_DIR/parameter.cfg"; then sleep 300; fi' \
    maxTrialNumber=60 tuner='{name: Random, classArgs: {seed: 11, optimize_mode: maximize}}'
# an api's first chart reads every trial in slices of 4 (default 16384), a chunked reply
export TRIALQ_CHART_SLICE_ROWS=4
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || fail "no experiment id printed"

# a few finished trials first, so that there is something to sort and open
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'" '>=3' 60 "no 3 trials succeeded in 60 s"

# the static files: types, revalidation, no way out of webui/
hdr=$(curl -sS -D - -o /dev/null "http://127.0.0.1:$port/")
grep -qi '^Content-Type: text/html' <<< "$hdr" || fail "/ is not HTML: $hdr"
etag=$(sed -n 's/^[Ee][Tt][Aa][Gg]: *//p' <<< "$hdr" | tr -d '\r')
[ -n "$etag" ] || fail "no ETag on /"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "http://127.0.0.1:$port/oview")
[ "$code" = 304 ] || fail "revalidation of /oview gave $code"
curl -sS -D - -o /dev/null "http://127.0.0.1:$port/app.js" | grep -qi '^Content-Type: text/javascript' || fail "app.js type"
for bad in "..%2FCMakeLists.txt" "%2E%2E" ".gitignore" "README.md" "x%00.js"; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/$bad")
    case $code in 404|400) ;; *) fail "GET /$bad gave $code" ;; esac
done
pass "static files: types, ETag/304, no path outside webui/"

node "$UI/e2e.js" live "http://127.0.0.1:$port/" "$DB" "$id" "$ART" || fail "browser test (live) failed; screenshots in $ART"
pass "live experiment in chromium"

nnictl stop "$id" > /dev/null
vport=$(free_port)
nnictl view "$id" --port "$vport" > "$WORK/view.out" || { cat "$WORK/view.out"; fail "nnictl view"; }
wait_http "http://127.0.0.1:$vport/api/v1/nni/check-status" 10 "" "nnictl view"
# the web UI's reads against the database (stable now): every sort order walked page
# by page equals the order computed here, filters, and bad parameters refused by name
$PY - "http://127.0.0.1:$vport/api/v1/nni" "$DB" "$id" <<'PY' || fail "webui reads differ from the database"
import json, sqlite3, sys, urllib.error, urllib.parse, urllib.request
base, db, exp = sys.argv[1:4]
con = sqlite3.connect(db, timeout=10)
rows = con.execute("SELECT id, sequence, status, final_metric, parameters, start_time, end_time, message,"
                   " waiting_reason FROM trial WHERE experiment_id = ?", (exp,)).fetchall()
def get(path, code=200):
    try:
        with urllib.request.urlopen(base + path) as r:
            assert code == 200, (path, r.status)
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        assert e.code == code, (path, e.code, e.read())
        return json.loads(e.read() or b"null")
def walk(q, limit=7):
    out, off = [], 0
    while True:
        page = get("/webui/trials?%s&limit=%d&offset=%d" % (q, limit, off))
        out += [r["trialJobId"] for r in page["rows"]]
        if len(page["rows"]) < limit:
            return out, page["total"]
        off += limit
def expect(key, desc, keep=lambda r: True):
    sel = [r for r in rows if keep(r)]
    valued = [r for r in sel if key(r) is not None]
    none = [r for r in sel if key(r) is None]
    valued.sort(key=lambda r: (key(r), r[1]), reverse=desc)
    none.sort(key=lambda r: r[1], reverse=desc)
    return [r[0] for r in valued + none]
param = lambda name: (lambda r: json.loads(r[4]).get(name))
dur = lambda r: None if r[5] is None or r[6] is None else r[6] - r[5]
# the final metric a trial shows: only a SUCCEEDED one's (trial 1 reported one and
# FAILED: it sorts with the trials that have none)
metric = lambda r: r[3] if r[2] == "SUCCEEDED" else None
assert any(r[3] is not None and r[2] != "SUCCEEDED" for r in rows), "no ended trial with a final metric to check"
cases = [("sort=sequence&order=desc", lambda r: r[1], True, None),
         ("sort=metric&order=asc", metric, False, None),
         ("sort=metric&order=desc", metric, True, None),
         ("sort=status&order=asc", lambda r: r[2], False, None),
         ("sort=id&order=desc", lambda r: r[0], True, None),
         ("sort=duration&order=desc", dur, True, None),
         ("sort=param%3Ax&order=asc", param("x"), False, None),
         ("sort=param%3Aopt&order=desc", param("opt"), True, None),
         # metric:<key>: the trials of 60-webui.sh report plain numbers, so none has one
         ("sort=metric%3Aloss&order=desc", lambda r: None, True, None),
         ("sort=metric&order=desc&status=SUCCEEDED%2CUSER_CANCELED", metric, True,
          lambda r: r[2] in ("SUCCEEDED", "USER_CANCELED")),
         ("sort=sequence&status=USER_CANCELED", lambda r: r[1], False, lambda r: r[2] == "USER_CANCELED")]
for q, key, desc, keep in cases:
    got, total = walk(q)
    want = expect(key, desc, keep or (lambda r: True))
    assert got == want and total == len(want), (q, got, want, total)
# text: literal (no LIKE wildcards), in parameters or id, or a sequence number
x = json.loads(rows[0][4])["x"]
for text, want in [('"x":%d,' % x, [r[0] for r in rows if ('"x":%d,' % x) in r[4]]),
                   (rows[1][0], [rows[1][0]]), ("%", []), ("_", []), ("adam", [r[0] for r in rows if "adam" in r[4]])]:
    got, total = walk("q=" + urllib.parse.quote(text))
    assert sorted(got) == sorted(want) and total == len(want), (text, got, want)
got, _ = walk("q=%d" % rows[2][1])
assert rows[2][0] in got, ("sequence number", rows[2][1], got)
# overview, charts, params against the database
o = get("/webui/overview")
for st in ("SUCCEEDED", "USER_CANCELED", "RUNNING", "WAITING", "FAILED"):
    assert o["counts"][st] == sum(1 for r in rows if r[2] == st), (st, o["counts"])
best = max((r for r in rows if r[2] == "SUCCEEDED" and r[3] is not None), key=lambda r: (r[3], -r[1]))
assert o["best"]["trialJobId"] == best[0] and o["best"]["value"] == best[3], (o["best"], best)
# this api's first chart: chunked, a space per slice read, then the answer
with urllib.request.urlopen(base + "/webui/charts?buckets=10") as r:
    body = r.read()
    assert r.headers.get("Transfer-Encoding") == "chunked" and body.startswith(b" "), (r.headers, body[:40])
c = get("/webui/charts?buckets=10")
assert json.loads(body) == c, (body, c)
finals = [r for r in rows if metric(r) is not None]
assert c["final"]["count"] == len(finals) and len(c["final"]["points"]) <= 20
assert max(p[1] for p in c["final"]["points"]) == max(r[3] for r in finals)
assert min(p[1] for p in c["final"]["points"]) == min(r[3] for r in finals)
failed_final = [r[0] for r in rows if r[3] is not None and r[2] != "SUCCEEDED"]
assert failed_final and not any(p[2] in failed_final for p in c["final"]["points"]), c["final"]["points"]
assert c["best"][-1][1] == best[3], c["best"]
assert c["duration"]["count"] == sum(1 for r in rows if dur(r) is not None)
p = get("/webui/params?n=10")
assert p["count"] == len(finals) and not any(t["id"] in failed_final for t in p["trials"]), p
tops = [t for t in p["trials"] if t["top"]]
assert tops and tops[0]["id"] == best[0] and tops[0]["params"] == json.loads(best[4]), tops[:1]
# bad parameters: 400 naming the parameter
for q, word in [("sort=nope", "sort"), ("order=up", "order"), ("status=DONE", "status"), ("limit=0", "limit"),
                ("limit=501", "limit"), ("offset=-1", "offset"), ("sort=param%3A", "sort"), ("sort=metric%3A", "sort"),
                ("sort=metric%3Aa%22b", "sort"), ("q=" + "a" * 201, "q"), ("status=SUCCEEDED%2C", "status"),
                ("status=%2CRUNNING", "status")]:
    e = get("/webui/trials?" + q, 400)
    assert word in e["error"], (q, e)
for path in ["/webui/charts?buckets=5", "/webui/charts?buckets=x", "/webui/params?n=100000"]:
    e = get(path, 400)
    assert "query parameter" in e["error"], (path, e)
# random queries and file names: never a 5xx, always JSON or a UI file
import random
rnd = random.Random(60)
alphabet = "abcdefghijklmnopqrstuvwxyzABC_-.%/\\'\"?&=,:;0123456789~\x01\xff"
def junk(n):
    return "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, n)))
keys = ["sort", "order", "status", "q", "limit", "offset", "buckets", "n", "x"]
for i in range(300):
    if i % 3 == 0:
        path = "/" + urllib.parse.quote(junk(30), safe="%/.~")
        url = base.rsplit("/api/v1/nni", 1)[0] + path
    else:
        q = "&".join("%s=%s" % (rnd.choice(keys), urllib.parse.quote(junk(20), safe="%,:")) for _ in range(rnd.randrange(0, 4)))
        url = base + rnd.choice(["/webui/trials", "/webui/charts", "/webui/params", "/webui/overview"]) + "?" + q
    try:
        with urllib.request.urlopen(url) as r:
            code, body = r.status, r.read()
    except urllib.error.HTTPError as e:
        code, body = e.code, e.read()
    assert code < 500, (url, code, body[:200])
    if code != 200 or "/webui/" in url:
        json.loads(body)
print("webui reads: %d sort orders and filters equal the database; bad parameters refused; 300 random requests"
      % len(cases))
PY
pass "webui reads equal the database"

# the browser side waits on its stdin for the api to be gone
coproc BROWSER { node "$UI/e2e.js" view "http://127.0.0.1:$vport/" "$DB" "$id" "$ART" 2>&1; }
bpid=$BROWSER_PID
exec {bout}<&"${BROWSER[0]}" {bin}>&"${BROWSER[1]}"
stopped=0
while IFS= read -r line <&"$bout"; do
    echo "$line"
    if [ "$line" = STOP-API ] && [ "$stopped" = 0 ]; then
        nnictl stop "$id" > /dev/null
        stopped=1
        echo go >&"$bin"
    fi
done
wait "$bpid" || fail "browser test (view) failed; screenshots in $ART"
[ "$stopped" = 1 ] || fail "the view test never asked to stop the api"
[ "$(sql "SELECT status FROM experiment WHERE id='$id'")" = STOPPED ] || fail "view changed the stored status"
pass "nnictl view in chromium, then the api unreachable"

ls "$ART"/*.png > /dev/null || fail "no screenshots"
echo "screenshots: $ART"
assert_no_leftovers
