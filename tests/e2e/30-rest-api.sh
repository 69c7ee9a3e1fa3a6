#!/usr/bin/env bash
# The REST API route by route against a running api: NNI's payload shapes (double-
# encoded metric data, hyperParameters as JSON strings, finalMetricData only for
# SUCCEEDED trials), trial files without path traversal, imports stored durably,
# customized trials and the maxTrialNumber budget, kill of a running trial, update_type
# changes seen in scheduling, pagination and incremental reads (since=), readonly view,
# and clear 4xx errors.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
API="http://127.0.0.1:$port/api/v1/nni"
# code <curl args...>: the HTTP status; the body goes to $WORK/body
code() { curl -s -o "$WORK/body" -w '%{http_code}' "$@"; }
# check <python expression over j (the JSON body) and b (the raw body)>
check() {
    $PY - "$WORK/body" "$1" <<'PY' || { echo "body: $(head -c 600 "$WORK/body")" >&2; fail "check: $1"; }
import json, sys
b = open(sys.argv[1], encoding="utf-8").read()
try:
    j = json.loads(b)
except ValueError:
    j = None
ok = eval(sys.argv[2])
sys.exit(0 if ok else 1)
PY
}
expect() { # expect <status> <curl args...>
    local want=$1; shift
    local got; got=$(code "$@")
    [ "$got" = "$want" ] || { echo "body: $(head -c 400 "$WORK/body")" >&2; fail "$* gave $got, wanted $want"; }
}

# ---------------------------------------------------------------- a finished experiment
metrics_experiment "$WORK/exp" 2 6 5
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
wait_status "$id" DONE 60

expect 200 "$API/version"; check 'isinstance(j, str) and j'
expect 200 "$API/check-status"; check 'j == {"status": "DONE", "errors": []}'
expect 200 "$API/experiment"
check 'j["id"] == "'"$id"'" and j["params"]["trialConcurrency"] == 2 and j["params"]["maxTrialNumber"] == 6 and isinstance(j["execDuration"], int) and j["nextSequenceId"] == 6 and "startTime" in j and j["logDir"].endswith("'"$id"'")'
expect 200 "$API/experiment-metadata"
check 'j["id"] == "'"$id"'" and j["port"] == '"$port"' and j["status"] == "DONE" and j["platform"] == "local" and j["tag"] == [] and j["webuiUrl"] == [] and j["logDir"] == "'"$NNI_HOME"'" and isinstance(j["pid"], int)'
expect 200 "$API/experiments-info"; check 'isinstance(j, list) and [e["id"] for e in j] == ["'"$id"'"] and j[0]["status"] == "DONE"'
expect 200 "$API/job-statistics"; check 'j == [{"trialJobStatus": "SUCCEEDED", "trialJobNumber": 6}]'
pass "version, check-status, experiment, experiment-metadata, experiments-info, job-statistics"

expect 200 "$API/trial-jobs"
cp "$WORK/body" "$WORK/jobs.json"
check 'len(j) == 6 and [t["sequenceId"] for t in j] == list(range(6))'
$PY - "$WORK/jobs.json" <<'PY' || fail "TrialJobInfo shapes"
import json, sys
jobs = json.load(open(sys.argv[1]))
for t in jobs:
    assert t["status"] == "SUCCEEDED", t
    assert isinstance(t["startTime"], int) and isinstance(t["endTime"], int)
    assert len(t["hyperParameters"]) == 1 and isinstance(t["hyperParameters"][0], str)
    hp = json.loads(t["hyperParameters"][0])
    assert set(hp) == {"parameter_id", "parameter_source", "parameters", "parameter_index"}, hp
    assert hp["parameter_source"] == "algorithm" and hp["parameter_index"] == 0
    fm = t["finalMetricData"]
    assert len(fm) == 1 and fm[0]["type"] == "FINAL" and fm[0]["trialJobId"] == t["trialJobId"]
    assert isinstance(fm[0]["data"], str) and fm[0]["parameterId"] == str(hp["parameter_id"])
    # double encoded: a JSON string whose content is the reported value's JSON
    assert json.loads(json.loads(fm[0]["data"])) == hp["parameters"]["x"], fm
    assert "stderrPath" not in t and "waitingReason" not in t
    assert t["logPath"].endswith("/" + t["trialJobId"])
PY
tid=$($PY -c "import json; print(json.load(open('$WORK/jobs.json'))[1]['trialJobId'])")
expect 200 "$API/trial-jobs/$tid"
$PY -c "import json,sys; a=json.load(open('$WORK/body')); b=[t for t in json.load(open('$WORK/jobs.json')) if t['trialJobId']=='$tid'][0]; sys.exit(a!=b)" || fail "trial-jobs/:id differs from the list"
expect 404 "$API/trial-jobs/NoSuchTrial"; check '"NoSuchTrial" in j["error"]'
expect 200 "$API/trial-jobs?status=SUCCEEDED"; check 'len(j) == 6'
expect 200 "$API/trial-jobs?status=FAILED"; check 'j == []'
# sequences 0..5 without a gap: an offset is a seek on the sequence (the walk, after a gap, below)
for off in 1 4 5 6 9; do
    expect 200 "$API/trial-jobs?limit=2&offset=$off"
    $PY -c "import json,sys; sys.exit(json.load(open('$WORK/body')) != json.load(open('$WORK/jobs.json'))[$off:$off + 2])" ||
        fail "trial-jobs?offset=$off is not the list's slice"
done
pass "trial-jobs: NNI's TrialJobInfo, by id, by status, by offset"

expect 200 "$API/metric-data"; cp "$WORK/body" "$WORK/metrics.json"
check 'len(j) == 24 and all(set(m) == {"timestamp","trialJobId","parameterId","type","sequence","data"} for m in j)'
check 'all(isinstance(json.loads(m["data"]), str) for m in j)'
expect 200 "$API/metric-data?type=FINAL"; check 'len(j) == 6 and {m["type"] for m in j} == {"FINAL"}'
expect 200 "$API/metric-data?type=PERIODICAL"; check 'len(j) == 18'
expect 200 "$API/metric-data/$tid"; check 'len(j) == 4 and {m["trialJobId"] for m in j} == {"'"$tid"'"}'
expect 200 "$API/metric-data-range/1/2"; check 'len(j) == 8'
expect 200 "$API/metric-data-latest/"
check 'len(j) == 12 and [m["type"] for m in j[:6]] == ["FINAL"]*6 and all(m["type"] == "PERIODICAL" and m["sequence"] == 2 for m in j[6:])'
expect 200 "$API/export-data"
$PY - "$WORK/body" "$WORK/jobs.json" <<'PY' || fail "export-data"
import json, sys
ex = json.load(open(sys.argv[1])); jobs = {t["trialJobId"]: t for t in json.load(open(sys.argv[2]))}
assert len(ex) == 6
for e in ex:
    assert set(e) == {"parameter", "value", "trialJobId"}, e
    t = jobs[e["trialJobId"]]
    assert e["parameter"] == json.loads(t["hyperParameters"][0])["parameters"]
    assert isinstance(e["value"], str) and e["value"] == json.loads(t["finalMetricData"][0]["data"])
PY
pass "metric-data (all, type, trial, range, latest), export-data"

# trial files: NNI's names, any file of the trial dir, nothing outside it
tdir="$NNI_HOME/$id/trials/$tid"
expect 200 "$API/trial-file/$tid/stdout"; grep -q "trial $tid" "$WORK/body" || fail "stdout content"
expect 200 "$API/trial-file/$tid/stderr"; [ "$(cat "$WORK/body")" = "stderr is empty." ] || fail "empty stderr"
ct=$(curl -s -o /dev/null -w '%{content_type}' "$API/trial-file/$tid/parameter.cfg")
[ "$ct" = application/octet-stream ] || fail "parameter.cfg content type $ct"
echo "a log line" > "$tdir/trial.log"
expect 200 "$API/trial-file/$tid/trial.log"; grep -q "a log line" "$WORK/body" || fail "trial.log"
mkdir -p "$tdir/out"; echo nested > "$tdir/out/m.txt"
expect 200 "$API/trial-file/$tid/out%2Fm.txt"; grep -q nested "$WORK/body" || fail "nested file"
ln -s /etc/passwd "$tdir/evil"; ln -s ../../../trialq.db "$tdir/db"; ln -s parameter.cfg "$tdir/alias"
expect 403 "$API/trial-file/$tid/evil"
expect 403 "$API/trial-file/$tid/db"
expect 200 "$API/trial-file/$tid/alias"
for bad in "..%2F..%2F..%2Ftrialq.db" "%2Fetc%2Fpasswd" ".." "%2E%2E" "out%2F..%2F..%2Fx" "out%2F"; do
    expect 400 --path-as-is "$API/trial-file/$tid/$bad"
done
expect 404 "$API/trial-file/$tid/none.bin"
mkfifo "$tdir/fifo"; expect 404 "$API/trial-file/$tid/fifo"
expect 404 "$API/trial-file/NoSuch/stdout"
expect 200 "http://127.0.0.1:$port/logs/nnictl_stderr.log"; grep -q "listening on" "$WORK/body" || fail "/logs/"
expect 404 "http://127.0.0.1:$port/logs/..%2F..%2Ftrialq.db"
expect 404 "http://127.0.0.1:$port/logs/nothing.log"
pass "trial-file and /logs/: NNI's names, nested files, no traversal, symlinks checked"

# import-data: validated, stored as an event row, returned by imported-data
expect 200 -X POST -H 'Content-Type: application/json' -d '[{"parameter":{"x":3},"value":0.5},{"parameter":{"x":4},"value":{"default":0.7,"loss":1}},{"parameter":{"x":5},"value":"0.25"}]' "$API/experiment/import-data"
expect 400 -X POST -d '[{"parameter":{"x":3},"value":0.5},{"parameter":{"x":4},"value":"abc"}]' "$API/experiment/import-data"
check '"body[1].value" in j["error"]'
expect 400 -X POST -d '[{"value":1}]' "$API/experiment/import-data"; check '"body[0].parameter" in j["error"]'
expect 400 -X POST -d '{"parameter":{}}' "$API/experiment/import-data"; check 'j["error"].startswith("body:")'
expect 200 "$API/experiment/imported-data"
check 'len(j) == 1 and json.loads(j[0])[1]["value"]["default"] == 0.7'
[ "$(sql "SELECT count(*) FROM event WHERE experiment_id='$id' AND entity='import'")" = 1 ] || fail "import not stored"
pass "import-data validated and stored; imported-data"

# cluster-metadata: accepted, said unused, no crash
expect 200 -X PUT -d '{"nni_manager_ip":{"nniManagerIp":"10.0.0.1"},"machine_list":[{"passwd":"secret"}]}' "$API/experiment/cluster-metadata"
check 'sorted(j["ignored"]) == ["machine_list", "nni_manager_ip"] and "not used" in j["message"]'
grep -q secret "$NNI_HOME/$id/log/nnictl_stderr.log" && fail "a cluster-metadata secret reached the log"
expect 400 -X PUT -d '[1,2]' "$API/experiment/cluster-metadata"
# an empty key beside another (json_check compared it with memcmp(NULL, ..., 0): the
# sanitizer build's api aborted), and a key that would forge a log line
api_pid=$(sql "SELECT api_pid FROM experiment WHERE id='$id'")
expect 200 -X PUT -d '{"":1,"a":2}' "$API/experiment/cluster-metadata"; check 'j["ignored"] == ["", "a"]'
expect 200 -X PUT -d '{"a":1,"":2}' "$API/experiment/cluster-metadata"; check 'j["ignored"] == ["a", ""]'
expect 400 -X PUT -d '{"":1,"a":2,"":3}' "$API/experiment/cluster-metadata"; check '"repeated" in j["error"]'
expect 200 -X PUT -d '{"k\n[0000-00-00 00:00:00] ERROR forged\u001b[31m":1}' "$API/experiment/cluster-metadata"
expect 200 "$API/check-status"
kill -0 "$api_pid" || fail "the api died on an empty key"
grep -q '^\[0000-00-00' "$NNI_HOME/$id/log/nnictl_stderr.log" && fail "a key forged a log line"
grep -qF 'k\n[0000-00-00 00:00:00] ERROR forged\x1b[31m' "$NNI_HOME/$id/log/nnictl_stderr.log" ||
    fail "the key is not in the log, escaped: $(grep cluster-metadata "$NNI_HOME/$id/log/nnictl_stderr.log")"
pass "cluster-metadata accepted and reported unused; empty keys and escaped keys in the log"

# customized trials count against maxTrialNumber: the budget (6) is used
expect 500 -X POST -d '{"x": 1}' "$API/trial-jobs"; check 'j == {"error": "reach maxTrialNum"}'

# bad requests: 404 naming the route, 405, 400 naming the field, 413
expect 404 "$API/no-such-route"; check '"/api/v1/nni/no-such-route" in j["error"]'
expect 404 "http://127.0.0.1:$port/elsewhere"; check '"/elsewhere" in j["error"]'
expect 405 -X DELETE "$API/metric-data"; check '"GET" in j["error"]'
expect 400 "$API/trial-jobs?limit=-1"; check '"limit" in j["error"]'
expect 400 "$API/trial-jobs?since=abc"; check '"since" in j["error"]'
expect 400 "$API/trial-jobs?status=DONE"; check '"status" in j["error"]'
expect 400 "$API/metric-data?type=BEST"; check '"type" in j["error"]'
expect 400 "$API/metric-data-range/x/3"; check '"min_seq_id" in j["error"]'
expect 400 -X PUT -d '{"params":{"trialConcurrency":"many"}}' "$API/experiment?update_type=TRIAL_CONCURRENCY"
check '"params.trialConcurrency" in j["error"]'
expect 400 -X PUT -d '{"params":{"trialConcurrency":1e300}}' "$API/experiment?update_type=TRIAL_CONCURRENCY"
expect 400 -X PUT -d '{"params":{}}' "$API/experiment?update_type=NO_SUCH"; check '"update_type" in j["error"]'
expect 400 -X PUT -d '{"params":' "$API/experiment?update_type=MAX_TRIAL_NUM"; check '"not valid JSON" in j["error"]'
expect 400 -X PUT -d '[]' "$API/experiment?update_type=MAX_TRIAL_NUM"; check '"body.params" in j["error"]'
expect 400 -X PUT -d '{"params":{"searchSpace":{"x":{"_type":"nope"}}}}' "$API/experiment?update_type=SEARCH_SPACE"
check '"searchSpace" in j["error"]'
# bodies that cJSON alone would take (trailing garbage, "03", a raw tab, \u0000 that
# cuts a string, a repeated key resolved the other way than NNI's JSON.parse, 1e400):
# 400 naming the problem and where, and nothing changes
state() { sql "SELECT concurrency || ' ' || (SELECT count(*) FROM trial WHERE experiment_id='$id') || ' ' ||
              (SELECT count(*) FROM event WHERE experiment_id='$id' AND entity='import') FROM experiment WHERE id='$id'"; }
before=$(state)
expect 400 -X PUT -d '{"params":{"trialConcurrency":3}} x' "$API/experiment?update_type=TRIAL_CONCURRENCY"
check '"something after the JSON value" in j["error"] and "byte 34" in j["error"]'
expect 400 -X PUT -d '{"params":{"trialConcurrency":03}}' "$API/experiment?update_type=TRIAL_CONCURRENCY"; check '"leading zero" in j["error"]'
expect 400 -X PUT -d '{"params":{"trialConcurrency":3,"trialConcurrency":4}}' "$API/experiment?update_type=TRIAL_CONCURRENCY"
check '"key \"trialConcurrency\" repeated" in j["error"]'
expect 400 -X POST -d '{"x":1} junk' "$API/trial-jobs"; check '"after the JSON value" in j["error"]'
expect 400 -X POST -d '{"x":"a\u0000b"}' "$API/trial-jobs"; check '"\\u0000" in j["error"]'
expect 400 -X POST -d "$(printf '{"x":"a\tb"}')" "$API/trial-jobs"; check '"control character" in j["error"]'
expect 400 -X POST -d '{"x":{"_type":"choice","_type":"uniform"}}' "$API/trial-jobs"; check '"repeated" in j["error"]'
expect 400 -X POST -d '[{"parameter":{"x":1},"value":1e400}]' "$API/experiment/import-data"; check '"beyond the range" in j["error"]'
expect 400 -X POST -d '[{"parameter":{"x":1},"value":"1e400"}]' "$API/experiment/import-data"; check '"body[0].value" in j["error"]'
expect 400 -X PUT -d '{"params":{"searchSpace":"{\"x\":{\"_type\":\"choice\",\"_value\":[1],\"_type\":\"uniform\"}}"}}' \
    "$API/experiment?update_type=SEARCH_SPACE"; check '"params.searchSpace" in j["error"] and "repeated" in j["error"]'
[ "$(state)" = "$before" ] || fail "a refused body changed something: $before -> $(state)"
big=$($PY - "$port" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"POST /api/v1/nni/experiment/import-data HTTP/1.1\r\nHost: x\r\nContent-Length: 60000000\r\n\r\n[")
print(s.recv(200).split(b" ")[1].decode())
PY
)
[ "$big" = 413 ] || fail "an oversize body gave $big"
pass "bad requests: 404, 405, 400 naming the field or the JSON problem (nothing changed), 413"

# durations as NNI's: a number (digits, one '.') and a unit; nothing strtod would also take
for bad in '" 1h"' '"1.5e-9s"' '"0x10"' '"-1h"' '"1h "' '"1 h"' '"."' '"h"' '0' '-5' '1.5'; do
    expect 400 -X PUT -d "{\"params\":{\"maxExperimentDuration\":$bad}}" "$API/experiment?update_type=MAX_EXEC_DURATION"
    check '"params.maxExperimentDuration" in j["error"]'
done
# an update that cannot add a trial leaves a DONE experiment DONE, with its end time
# (the experiment ran its 6 trials: maxTrialNumber 6)
done_state() { sql "SELECT status || ' ' || end_time FROM experiment WHERE id='$id'"; }
was=$(done_state)
case "$was" in DONE\ [0-9]*) ;; *) fail "not DONE with an end time: $was" ;; esac
expect 200 -X PUT -d '{"params":{"trialConcurrency":2}}' "$API/experiment?update_type=TRIAL_CONCURRENCY"
expect 200 -X PUT -d '{"params":{"maxTrialNumber":5}}' "$API/experiment?update_type=MAX_TRIAL_NUM"
expect 200 -X PUT -d '{"params":{"maxTrialNumber":6}}' "$API/experiment?update_type=MAX_TRIAL_NUM"
sleep 1 # a tick or two
[ "$(done_state)" = "$was" ] || fail "an update that adds no trial changed $was to $(done_state)"
pass "updates that cannot add a trial keep DONE and its end time"

# long listings go out in chunks; clients that leave mid-listing cost nothing
sql <<SQL
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameters, status, platform, submit_time,
                  start_time, end_time, updated_at, final_metric, final_metric_json)
SELECT printf('z%04d', i), '$id', 100 + i, 100 + i, '{"x":' || i || '}', 'SUCCEEDED', 'local', 1, 2, 3, 3, i, i FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000),
               k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < 9)
INSERT INTO metric(trial_id, type, sequence, value, default_value, time)
SELECT printf('z%04d', i), 'PERIODICAL', j, i || '.' || j, i, 5 FROM n, k;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
INSERT INTO metric(trial_id, type, sequence, value, default_value, time) SELECT printf('z%04d', i), 'FINAL', 0, i, i, 6 FROM n;
SQL
$PY - "$API" <<'PY' || fail "chunked listings"
import json, re, socket, sys, urllib.request
api = sys.argv[1]
def get(path):
    with urllib.request.urlopen(api + path, timeout=30) as r:
        return r.headers.get("Transfer-Encoding"), json.loads(r.read())
te, jobs = get("/trial-jobs")
assert te == "chunked" and len(jobs) == 3006 and [t["sequenceId"] for t in jobs] == sorted(t["sequenceId"] for t in jobs), (te, len(jobs))
assert jobs[-1]["trialJobId"] == "z3000" and json.loads(jobs[-1]["finalMetricData"][0]["data"]) == "3000", jobs[-1]
te, ms = get("/metric-data")
assert te == "chunked" and len(ms) == 24 + 3000 * 11, len(ms)
# made piece by piece as they leave (a few hundred kB each), never the whole list first
def chunk_sizes(path):
    host, port = api.split("/")[2].split(":")
    s = socket.create_connection((host, int(port)), timeout=30)
    s.sendall(("GET /%s%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % ("/".join(api.split("/")[3:]), path)).encode())
    raw = b""
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        raw += b
    s.close()
    body = raw.split(b"\r\n\r\n", 1)[1]
    sizes = []
    while True:
        line, body = body.split(b"\r\n", 1)
        n = int(line, 16)
        if n == 0:
            return sizes
        sizes.append(n)
        body = body[n + 2:]
for path in ("/trial-jobs", "/metric-data"):
    sizes = chunk_sizes(path)
    assert len(sizes) >= 4 and max(sizes) < 512 * 1024, (path, len(sizes), max(sizes))
_, latest = get("/metric-data-latest")
assert len(latest) == 2 * 3006, len(latest)
# the rows made above are z0001 .. z3000 (a real trial's random id may start with z too)
bad = [m for m in latest if re.fullmatch(r"z\d{4}", m["trialJobId"]) and m["type"] == "PERIODICAL" and m["sequence"] != 9]
assert not bad, (len(bad), bad[:3])
_, ex = get("/export-data")
assert len(ex) == 3006, len(ex)
_, page = get("/trial-jobs?limit=50&offset=3000")
assert [t["trialJobId"] for t in page] == ["z%04d" % i for i in range(2995, 3001)], [t["trialJobId"] for t in page]
# clients that go away in the middle of a long reply
host, port = api.split("/")[2].split(":")
for i in range(30):
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(b"GET /api/v1/nni/%s HTTP/1.1\r\nHost: x\r\n\r\n" % [b"trial-jobs", b"metric-data", b"export-data"][i % 3])
    s.recv(1000 + 5000 * i)
    s.close()
n = len(get("/trial-jobs")[1])
assert n == 3006, n
PY
pass "long listings stream in chunks; clients leaving mid-listing are harmless"

# ---------------------------------------------------------------- a running experiment
nnictl stop "$id" > /dev/null
export TRIAL_STEPS=6 TRIAL_SLEEP=0.4
metrics_experiment "$WORK/run" 1 10 9
nnictl create --config "$WORK/run/config.yml" --port "$port" > "$WORK/create2.out"
id2=$(exp_id_of "$WORK/create2.out")
WAIT_STEP=0.05 wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status='RUNNING'" 1 5 "no trial runs"

# incremental readers follow the whole run from here; compared with full reads at the end
$PY - "$API" "$WORK/since.out" <<'PY' > "$WORK/since.log" 2>&1 &
import json, sys, time, urllib.request
api, out = sys.argv[1], sys.argv[2]
def get(path):
    with urllib.request.urlopen(api + path, timeout=10) as r:
        return json.loads(r.read()), int(r.headers["X-Trialq-Seq"])
trials, metrics = {}, {}
# the cursor to continue from is the one of the reply that delivered the rows
page, tseq = get("/trial-jobs?since=0")
for t in page:
    trials[t["trialJobId"]] = t
page, mseq = get("/metric-data?since=0")
for m in page:
    metrics[(m["trialJobId"], m["type"], m["sequence"])] = m
reads = 0
while True:
    st = json.loads(urllib.request.urlopen(api + "/check-status", timeout=10).read())["status"]
    # small pages with limit: the cursor moves page by page
    while True:
        page, nxt = get("/trial-jobs?since=%d&limit=2" % tseq)
        for t in page:
            trials[t["trialJobId"]] = t
        reads += 1
        if not page:
            break
        assert nxt > tseq, (nxt, tseq)
        tseq = nxt
    page, mseq2 = get("/metric-data?since=%d" % mseq)
    for m in page:
        key = (m["trialJobId"], m["type"], m["sequence"])
        assert key not in metrics, ("metric delivered twice", key)
        metrics[key] = m
    mseq = mseq2
    if st in ("DONE", "STOPPED", "ERROR"):
        break
    time.sleep(0.2)
json.dump({"trials": trials, "metrics": list(metrics.values()), "reads": reads}, open(out, "w"))
PY
follower=$!

# update_type TRIAL_CONCURRENCY 1 -> 3: the scheduler follows at once
expect 200 "$API/experiment"
$PY -c "import json; p=json.load(open('$WORK/body')); p['params']['trialConcurrency']=3; json.dump(p, open('$WORK/profile.json','w'))"
expect 200 -X PUT -H 'Content-Type: application/json' --data-binary @"$WORK/profile.json" "$API/experiment?update_type=TRIAL_CONCURRENCY"
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status='RUNNING'" 3 6 "concurrency 3: trials running"
pass "PUT update_type=TRIAL_CONCURRENCY 1 -> 3: 3 trials run"

# kill a running trial through the API
victim=$(sql "SELECT id FROM trial WHERE experiment_id='$id2' AND status='RUNNING' ORDER BY sequence LIMIT 1")
expect 200 -X DELETE "$API/trial-jobs/$victim"
wait_sql "SELECT status FROM trial WHERE id='$victim'" USER_CANCELED 10 "DELETE /trial-jobs did not kill $victim"
pass "DELETE /trial-jobs/:id killed a running trial"

# a customized trial: WAITING, parameter_source customized, parameter_id null
expect 200 -X POST -H 'Content-Type: application/json' -d '{"x": 424242}' "$API/trial-jobs"
check 'isinstance(j["sequenceId"], int)'
cid=$($PY -c "import json; print(json.load(open('$WORK/body'))['trialJobId'])")
[ "$(sql "SELECT parameter_source || '|' || coalesce(parameter_id, 'null') || '|' || parameters FROM trial WHERE id='$cid'")" = 'customized|null|{"x":424242}' ] ||
    fail "customized trial row: $(sql "SELECT * FROM trial WHERE id='$cid'")"
expect 200 "$API/trial-jobs/$cid"
check 'json.loads(j["hyperParameters"][0]) == {"parameter_id": None, "parameter_source": "customized", "parameters": {"x": 424242}, "parameter_index": 0} and (j["status"] != "WAITING" or j["waitingReason"])'
pass "POST /trial-jobs: a customized trial"

# the budget: once every trial is submitted, customized ones are refused
expect 200 -X PUT -d '{"params":{"maxTrialNumber":1}}' "$API/experiment?update_type=MAX_TRIAL_NUM"
expect 500 -X POST -d '{"x": 1}' "$API/trial-jobs"; check 'j["error"] == "reach maxTrialNum"'
expect 200 -X PUT -d '{"params":{"maxTrialNumber":8}}' "$API/experiment?update_type=MAX_TRIAL_NUM"
pass "maxTrialNumber applies to customized trials"

wait_status "$id2" DONE 120
wait $follower || { cat "$WORK/since.log"; fail "the incremental reader failed"; }
expect 200 "$API/trial-jobs"; cp "$WORK/body" "$WORK/full.json"
expect 200 "$API/metric-data"; cp "$WORK/body" "$WORK/fullm.json"
$PY - "$WORK/since.out" "$WORK/full.json" "$WORK/fullm.json" <<'PY' || fail "incremental reads differ from full reads"
import json, sys
inc = json.load(open(sys.argv[1]))
full = {t["trialJobId"]: t for t in json.load(open(sys.argv[2]))}
# maxTrialNumber 8: the trials that count (the queued ones cancelled when it was 1 do not)
assert len(full) - sum(t["status"] == "SYS_CANCELED" for t in full.values()) == 8, len(full)
assert inc["trials"] == full, "trials differ"
fm = sorted(json.dumps(m, sort_keys=True) for m in json.load(open(sys.argv[3])))
im = sorted(json.dumps(m, sort_keys=True) for m in inc["metrics"])
assert fm == im, (len(fm), len(im))
print("incremental reader: %d reads, %d trials, %d metrics" % (inc["reads"], len(full), len(fm)))
PY
pass "since=: incremental trial and metric reads equal full reads"

# pagination: pages of every size concatenate to the full list
$PY - "$API" <<'PY' || fail "pagination"
import json, urllib.request
api = __import__("sys").argv[1]
get = lambda p: json.loads(urllib.request.urlopen(api + p, timeout=10).read())
full, fullm = get("/trial-jobs"), get("/metric-data")
for size in (1, 3, 5, 100):
    got, off = [], 0
    while True:
        page = get("/trial-jobs?limit=%d&offset=%d" % (size, off))
        got += page; off += size
        if len(page) < size: break
    assert got == full, size
    got, off = [], 0
    while True:
        page = get("/metric-data?limit=%d&offset=%d" % (size * 7, off))
        got += page; off += size * 7
        if len(page) < size * 7: break
    assert got == fullm, size
assert get("/trial-jobs?status=SUCCEEDED&limit=2&offset=1") == [t for t in full if t["status"] == "SUCCEEDED"][1:3]
assert get("/trial-jobs?limit=0") == []
PY
pass "limit/offset pages equal the full lists"

# readonly view: every mutating route is refused
nnictl stop "$id2" > /dev/null
nnictl view "$id2" --port "$port" > /dev/null
expect 400 -X POST -d '{"x": 1}' "$API/trial-jobs"; check '"readonly" in j["error"]'
expect 400 -X POST -d '[]' "$API/experiment/import-data"
expect 400 -X PUT -d '{}' "$API/experiment/cluster-metadata"
expect 400 -X DELETE "$API/trial-jobs/$cid"
expect 400 -X POST "$API/trial-jobs/$cid/rerun"
expect 200 "$API/trial-jobs"; check 'len([t for t in j if t["status"] != "SYS_CANCELED"]) == 8'
nnictl stop "$id2" > /dev/null
pass "view: mutating routes refused, reads served"
assert_no_leftovers
echo "30-rest-api: passed"
