#!/usr/bin/env bash
# GET /metrics (Prometheus' text format 0.0.4) during a live local experiment: the format
# checked by a strict parser (names, HELP/TYPE once per family before its samples, label
# escapes, counters named _total, histograms cumulative up to le="+Inf" = _count), and
# promtool's check when it is installed; with the worker paused (SIGSTOP) the counts
# equal the REST answers (job-statistics, trial-jobs, metric-data); the oldest WAITING
# trial's age; the scheduler's lag after the api was paused; the workers' platform calls;
# the same access rule as the other reads (a page of another site is refused).
. "$(dirname "$0")/lib.sh"

port=$(free_port)
BASE="http://127.0.0.1:$port"
API="$BASE/api/v1/nni"
metrics_experiment "$WORK/exp" 2 8 7
# a name with the three characters a label value escapes
sed -i '1i experimentName: '"'"'we"ird \\ name'"'"'' "$WORK/exp/config.yml"
grep -q "^experimentName: 'we\"ird \\\\ name'" "$WORK/exp/config.yml" || fail "config: $(head -1 "$WORK/exp/config.yml")"
export TRIAL_STEPS=6 TRIAL_SLEEP=0.4
t0=$(date +%s)
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
wait_sql "SELECT count(*) >= 1 FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'" 1 60

# scrape FILE: the body, its Content-Type checked
scrape() {
    local ct
    ct=$(curl -sf -o "$1" -w '%{content_type}' "$BASE/metrics") || fail "GET /metrics"
    [[ $ct == "text/plain; version=0.0.4"* ]] || fail "Content-Type: $ct"
}
# parse FILE: the strict parser; prints "series<TAB>value" lines (labels sorted) to FILE.flat
parse() {
    $PY - "$1" > "$1.flat" <<'PY' || fail "exposition format of $1: $(tail -1 "$1.flat")"
import math, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*$")
def die(msg, line=""):
    print("FORMAT: %s: %r" % (msg, line)); sys.exit(1)
if not text.endswith("\n"): die("no final newline")
types, helps, done, series, samples = {}, set(), set(), set(), {}
current = None
def family_of(name):
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and types.get(base) == "histogram": return base
    return name
def labels_of(s, line):
    out, i = [], 0
    while i < len(s):
        m = re.match(r"([^=]*)=\"", s[i:])
        if not m or not LABEL.match(m.group(1)): die("label name", line)
        i += m.end(); v = ""
        while True:
            if i >= len(s): die("unterminated label value", line)
            c = s[i]
            if c == "\\":
                e = s[i + 1 : i + 2]
                if e not in ("\\", '"', "n"): die("bad escape \\" + e, line)
                v += {"\\": "\\", '"': '"', "n": "\n"}[e]; i += 2
            elif c == '"': i += 1; break
            elif c == "\n": die("raw newline in a label value", line)
            else: v += c; i += 1
        if any(k == m.group(1) for k, _ in out): die("label twice", line)
        out.append((m.group(1), v))
        if i < len(s):
            if s[i] != ",": die("no comma between labels", line)
            i += 1
    return out
for line in text[:-1].split("\n"):
    if line.startswith("# HELP ") or line.startswith("# TYPE "):
        parts = line.split(" ", 3)
        if len(parts) < 4 or not NAME.match(parts[2]): die("comment", line)
        name = parts[2]
        if name in done: die("family's lines not together", line)
        if current and current != name: done.add(current)
        current = name
        if parts[1] == "HELP":
            if name in helps: die("HELP twice", line)
            if re.search(r"\\[^\\n]", parts[3].replace("\\\\", "")): die("bad escape in HELP", line)
            helps.add(name)
        else:
            if name in types: die("TYPE twice", line)
            if parts[3] not in ("counter", "gauge", "histogram", "summary", "untyped"): die("type", line)
            if any(family_of(s[0]) == name for s in samples): die("TYPE after its samples", line)
            types[name] = parts[3]
        continue
    if line.startswith("#") or not line.strip(): die("stray line", line)
    m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$", line)
    if not m: die("sample", line)
    name, lab, val = m.group(1), labels_of(m.group(3) or "", line), m.group(4)
    fam = family_of(name)
    if fam not in types: die("sample without TYPE", line)
    if fam != current: die("sample outside its family", line)
    if types[fam] == "counter" and not name.endswith("_total"): die("counter without _total", line)
    try:
        v = float(val) if val not in ("+Inf", "-Inf", "NaN") else {"+Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}[val]
    except ValueError: die("value", line)
    if val.lower() in ("inf", "-inf", "nan", "+nan"): die("value spelling", line)
    key = (name, tuple(sorted(lab)))
    if key in series: die("series twice", line)
    series.add(key); samples[key] = v
for fam, t in types.items():
    if fam not in helps: die("no HELP", fam)
    if t != "histogram": continue
    buckets = sorted(((float(dict(l)["le"]) if dict(l)["le"] != "+Inf" else math.inf), v)
                     for (n, l), v in samples.items() if n == fam + "_bucket")
    if not buckets or buckets[-1][0] != math.inf: die("no +Inf bucket", fam)
    if any(b[1] > c[1] for b, c in zip(buckets, buckets[1:])): die("buckets not cumulative", fam)
    if (fam + "_count", ()) not in samples or (fam + "_sum", ()) not in samples: die("no _sum/_count", fam)
    if samples[(fam + "_count", ())] != buckets[-1][1]: die("+Inf bucket != _count", fam)
for (n, l), v in sorted(samples.items()):
    print(n + "".join("|%s=%s" % kv for kv in l) + "\t" + repr(v))
PY
    if command -v promtool > /dev/null; then
        promtool check metrics < "$1" > "$1.promtool" 2>&1 || { cat "$1.promtool"; fail "promtool check metrics"; }
    fi
}
# val FILE SERIES: the value of "name|label=value..." (labels sorted), 0 when absent
# (the key through the environment: awk -v would take its backslashes as escapes)
val() { K=$2 awk -F'\t' '$1 == ENVIRON["K"] { v = $2 } END { printf "%d\n", (v == "" ? 0 : v) }' "$1.flat"; }
valf() { K=$2 awk -F'\t' '$1 == ENVIRON["K"] { print $2 }' "$1.flat"; }

scrape "$WORK/m0"; parse "$WORK/m0"
pass "GET /metrics parses strictly (Content-Type text/plain; version=0.0.4)$(command -v promtool > /dev/null && echo ', promtool agrees')"
# the name's escapes came back as written
grep -qF 'name="we\"ird \\ name"' "$WORK/m0" || fail "escaped name: $(grep experiment_info "$WORK/m0")"
[ "$(val "$WORK/m0" "trialq_experiment_info|experiment=$id|name=we\"ird \\ name|platform=local")" = 1 ] ||
    fail "experiment_info: $(grep experiment_info "$WORK/m0.flat")"
[ "$(val "$WORK/m0" 'trialq_experiment_status|status=RUNNING')" = 1 ] || fail "status RUNNING"
version=$(curl -sf "$API/version" | $PY -c 'import json,sys; print(json.load(sys.stdin))')
[ "$(val "$WORK/m0" "trialq_build_info|version=$version")" = 1 ] || fail "build_info $version"
start=$(val "$WORK/m0" process_start_time_seconds)
[ "$start" -ge $((t0 - 2)) ] && [ "$start" -le $(($(date +%s) + 1)) ] || fail "process start $start (created at $t0)"
pass "experiment info with its escaped name, status, build info, process start time"

# ---- the worker paused: the counts stand still and equal the REST answers
worker=$(pgrep -f "trialq worker --platform local --experiment $id" | head -n1)
[ -n "$worker" ] || fail "no worker"
kill -STOP "$worker"
# a failure while it is stopped: continued, so that the stop at cleanup ends it
trap 'rc=$?; kill -CONT "$worker" 2>/dev/null || :; (exit $rc); cleanup' EXIT
sleep 1.5 # the scheduler's last enqueue, a tick later
for try in 1 2 3 4 5; do
    scrape "$WORK/m1"; parse "$WORK/m1"
    curl -sf "$API/job-statistics" > "$WORK/stats.json"
    curl -sf "$API/trial-jobs" > "$WORK/jobs.json"
    curl -sf "$API/metric-data" > "$WORK/metrics.json"
    scrape "$WORK/m2"; parse "$WORK/m2"
    grep -v request_duration "$WORK/m1.flat" | grep -v oldest_waiting > "$WORK/a"
    grep -v request_duration "$WORK/m2.flat" | grep -v oldest_waiting > "$WORK/b"
    cmp -s "$WORK/a" "$WORK/b" && break
    sleep 1
done
cmp -s "$WORK/a" "$WORK/b" || fail "the counts change while the worker is stopped: $(diff "$WORK/a" "$WORK/b")"
$PY - "$WORK" "$WORK/m1.flat" <<'PY' || fail "the counts differ from the REST answers"
import json, sys, collections
w = sys.argv[1]
flat = dict(l.split("\t") for l in open(sys.argv[2]).read().splitlines())
g = lambda k: int(float(flat.get(k, "0")))
stats = {s["trialJobStatus"]: s["trialJobNumber"] for s in json.load(open(w + "/stats.json"))}
jobs = json.load(open(w + "/jobs.json"))
metrics = json.load(open(w + "/metrics.json"))
statuses = ["WAITING", "RUNNING", "SUCCEEDED", "FAILED", "USER_CANCELED", "SYS_CANCELED", "EARLY_STOPPED"]
bad = []
for s in statuses:
    if g("trialq_trials|status=" + s) != stats.get(s, 0): bad.append(("trials", s, g("trialq_trials|status=" + s), stats.get(s, 0)))
by = collections.Counter(j["status"] for j in jobs)
for s in statuses[2:]:
    if g("trialq_trials_ended_total|status=" + s) != by[s]: bad.append(("ended", s, by[s]))
# trial-jobs gives a WAITING trial its submit time as startTime (NNI): the others started (no retry here)
started = sum(1 for j in jobs if j["status"] != "WAITING")
if g("trialq_trials_started_total") != started: bad.append(("started", g("trialq_trials_started_total"), started))
waiting = sum(g("trialq_waiting_trials|reason=" + r) for r in ("queued", "claimed", "gpu", "submit_retry", "platform"))
if waiting != by["WAITING"]: bad.append(("waiting", waiting, by["WAITING"]))
mt = collections.Counter(m["type"] for m in metrics)
for t in ("PERIODICAL", "FINAL"):
    if g("trialq_metrics_ingested_total|type=" + t) != mt[t]: bad.append(("metrics", t, g("trialq_metrics_ingested_total|type=" + t), mt[t]))
if not (by["RUNNING"] >= 1 and by["SUCCEEDED"] >= 1 and mt["PERIODICAL"] >= 1): bad.append(("not mid-run", dict(by)))
print("counts:", dict(by), dict(mt))
if bad: print("DIFFER:", bad); sys.exit(1)
PY
pass "while trials run: trials by status = job-statistics; started, ended and waiting = trial-jobs; metrics ingested = metric-data"

# the oldest WAITING trial's age: from its submit time in trial-jobs
$PY - "$WORK/jobs.json" "$WORK/m2.flat" "$(date +%s%3N)" <<'PY' || fail "oldest waiting age"
import json, sys
jobs = json.load(open(sys.argv[1]))
flat = dict(l.split("\t") for l in open(sys.argv[2]).read().splitlines())
age = float(flat.get("trialq_oldest_waiting_trial_age_seconds", "-1"))
w = [j["startTime"] for j in jobs if j["status"] == "WAITING"]  # a WAITING trial's startTime: its submit time
want = (int(sys.argv[3]) - min(w)) / 1000 if w else 0
print("oldest waiting age", age, "want about", want)
sys.exit(0 if abs(age - want) < 3 and (not w or age > 0) else 1)
PY
pass "oldest WAITING trial's age"

# ---- the api paused 2 s: its tick's lag shows it
api=$(sql "SELECT api_pid FROM experiment WHERE id='$id'")
kill -STOP "$api"; sleep 2; kill -CONT "$api"
sleep 0.6
scrape "$WORK/m3"; parse "$WORK/m3"
lag=$(valf "$WORK/m3" trialq_scheduler_loop_lag_seconds)
$PY -c "import sys; sys.exit(0 if 1.2 <= float('$lag') <= 30 else 1)" || fail "scheduler lag $lag after a 2 s pause"
n3=$(val "$WORK/m3" trialq_api_request_duration_seconds_count)
n0=$(val "$WORK/m0" trialq_api_request_duration_seconds_count)
# between them: m0 itself, /version, 5 tries x (2 scrapes + 3 REST reads) at most, at least 5 + 1
[ "$n3" -ge $((n0 + 7)) ] || fail "request histogram count $n0 -> $n3"
pass "scheduler lag $lag s after a 2 s pause; request latency histogram counts the requests ($n0 -> $n3)"

kill -CONT "$worker"
trap cleanup EXIT
wait_status "$id" DONE 120
sleep 6 # the worker's next report (every 5 s)
scrape "$WORK/m4"; parse "$WORK/m4"
[ "$(val "$WORK/m4" 'trialq_experiment_status|status=DONE')" = 1 ] || fail "status DONE"
[ "$(val "$WORK/m4" 'trialq_trials_ended_total|status=SUCCEEDED')" = 8 ] || fail "ended"
[ "$(val "$WORK/m4" 'trialq_trials_started_total')" = 8 ] || fail "started"
[ "$(val "$WORK/m4" 'trialq_metrics_ingested_total|type=PERIODICAL')" = 48 ] || fail "periodical metrics"
[ "$(val "$WORK/m4" 'trialq_platform_requests_total|op=submit|platform=local')" = 8 ] ||
    fail "submits: $(grep platform_requests "$WORK/m4.flat")"
[ "$(val "$WORK/m4" 'trialq_platform_requests_total|op=poll|platform=local')" -ge 1 ] || fail "polls"
[ "$(val "$WORK/m4" 'trialq_platform_request_errors_total|op=submit|platform=local')" = 0 ] || fail "submit errors"
rep=$(val "$WORK/m4" 'trialq_worker_last_report_timestamp_seconds|platform=local')
[ $(($(date +%s) - rep)) -le 10 ] || fail "worker's last report $rep"
grep -q '^trialq_worker_loop_lag_seconds|platform=local	' "$WORK/m4.flat" || fail "worker loop lag"
for k in disk_full io_error read_only locked other; do
    [ "$(val "$WORK/m4" "trialq_resource_faults|kind=$k")" = 0 ] || fail "fault $k"
done
[ "$(val "$WORK/m4" trialq_database_size_bytes)" -gt 0 ] || fail "database size"
pass "at DONE: 8 started and SUCCEEDED, 48 intermediate metrics, 8 submits without error, the worker's report, no fault"

# ---- the access rule of the other reads: a page of another site is refused alike
code_m=$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: evil.example' -H 'Origin: http://evil.example' "$BASE/metrics")
code_t=$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: evil.example' -H 'Origin: http://evil.example' "$API/trial-jobs")
[ "$code_m" = 403 ] && [ "$code_t" = 403 ] || fail "another site's page: /metrics $code_m, /trial-jobs $code_t"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$BASE/metrics")" = 405 ] || fail "POST /metrics"
pass "a browser's request from another site refused (403) as on /trial-jobs; POST gets 405"
nnictl stop "$id" > /dev/null
