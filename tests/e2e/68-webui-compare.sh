#!/usr/bin/env bash
# Compare experiments (docs/webui.md "Compare experiments") with three real experiments
# in one home, each with another tuner: TPE maximizing, Random and GridSearch minimizing
# (mixed modes), each trial reporting two intermediate metrics and a final one (the
# same objective, offset by a number of each experiment's). GET
# /webui/compare?ids=A,B,C from A's api must equal what the database says: each one's
# trial count, its best final metric (by its own mode), its best-so-far records by trial
# number and by time (all trials are read: each curve is exact), its median, and the
# config keys that differ (the tuner, the name...) marked, those the three share not.
# Bad ids are a 400 or a 404 naming them. GET /metric-data paged with offsets of 7
# equals one full read (the seek of migration 019), on each experiment's api. Then the
# All experiments page in headless chromium (tests/webui/compare.js): three rows ticked,
# "Compare selected" draws both charts and the tables equal to the REST answer; 5 more
# trials of the Random experiment (nnictl update trialnum) show up without a reload.
# Screenshots: <ctest's working dir>/webui-artifacts/68-webui-compare/*.png
. "$(dirname "$0")/lib.sh"

webui_artifacts   # sets ART
webui_setup       # sets UI

mkdir -p "$WORK/code"
cat > "$WORK/code/trial.py" <<'PY'
import nni, sys
p = nni.get_next_parameter()
x, y = float(p["x"]), float(p["y"])
f = (x - 2) ** 2 + (y - 1) ** 2 + float(sys.argv[1])  # each experiment its own offset
nni.report_intermediate_result(f + 1)
nni.report_intermediate_result(f + 0.5)
nni.report_final_result(f)
PY
ss='{x: {_type: quniform, _value: [0, 4, 0.5]}, y: {_type: quniform, _value: [0, 2, 1]}}'
declare -A offset=([tpe]=0 [rnd]=1.5 [grid]=3.25)
declare -A tuner=([tpe]='{name: TPE, classArgs: {optimize_mode: maximize, seed: 3}}'
                  [rnd]='{name: Random, classArgs: {seed: 4}}' [grid]='{name: GridSearch}')
ids=()
for t in tpe rnd grid; do
    write_config "$WORK/code/$t.yml" experimentName="cmp-$t" searchSpace="$ss" trialCommand="/usr/bin/python3 trial.py ${offset[$t]}" \
        trialConcurrency=3 maxTrialNumber=15 maxTrialRetries=0 tuner="${tuner[$t]}"
    port=$(free_port)
    nnictl create --config "$WORK/code/$t.yml" --port "$port" > "$WORK/create-$t.out" || { cat "$WORK/create-$t.out"; fail "create $t"; }
    id=$(exp_id_of "$WORK/create-$t.out")
    [ -n "$id" ] || fail "no experiment id printed for $t"
    ids+=("$id")
    eval "port_$t=$port"
done
for id in "${ids[@]}"; do wait_status "$id" DONE 240; done
for id in "${ids[@]}"; do
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND final_metric IS NOT NULL")" = 15 ] ||
        fail "$id: not 15 SUCCEEDED trials with a metric: $(sql "SELECT status, count(*) FROM trial WHERE experiment_id='$id' GROUP BY 1")"
done
list=$(IFS=,; echo "${ids[*]}")
api="http://127.0.0.1:$port_tpe/api/v1/nni"
curl -sSf "$api/webui/compare?ids=$list" > "$WORK/rest.json" || fail "GET /webui/compare"
$PY - "$WORK/rest.json" "$DB" "${ids[@]}" <<'PY' || fail "GET /webui/compare disagrees with the database"
import json, sqlite3, statistics, sys
r = json.load(open(sys.argv[1]))
db = sqlite3.connect(sys.argv[2])
ids = sys.argv[3:]
assert [e["id"] for e in r["experiments"]] == ids, r["experiments"]
assert r["mixedModes"] is True, r["mixedModes"]
for e, mode, tuner in zip(r["experiments"], ("maximize", "minimize", "minimize"), ("TPE", "Random", "GridSearch")):
    assert e["optimizeMode"] == mode and e["tuner"] == tuner and e["exact"] is True, (e["id"], e["optimizeMode"], e["tuner"])
    start = db.execute("SELECT start_time FROM experiment WHERE id = ?", (e["id"],)).fetchone()[0]
    rows = db.execute("SELECT sequence, final_metric, end_time FROM trial WHERE experiment_id = ? AND status = 'SUCCEEDED'"
                      " AND final_metric IS NOT NULL ORDER BY sequence", (e["id"],)).fetchall()
    assert e["trials"] == len(rows) == e["read"] == 15, (e["trials"], e["read"])
    better = (lambda a, b: a > b) if mode == "maximize" else (lambda a, b: a < b)
    def records(order):
        out = []
        for seq, v, t in order:
            if not out or better(v, out[-1][1]):
                out.append((seq, v, t))
        return out
    by_seq = records(rows)
    by_time = records(sorted(rows, key=lambda x: (x[2], x[0])))
    got = [(p[0], p[1]) for p in e["bestBySeq"]]
    assert len(got) == len(by_seq) and all(g[0] == w[0] and abs(g[1] - w[1]) < 1e-9 for g, w in zip(got, by_seq)), (got, by_seq)
    assert [p[2] for p in e["bestByTime"]] == [s for s, _, _ in by_time], (e["bestByTime"], by_time)
    assert all(abs(p[0] - (t - start) / 1000) < 0.0015 for p, (_, _, t) in zip(e["bestByTime"], by_time)), e["bestByTime"]
    best = max(rows, key=lambda x: x[1]) if mode == "maximize" else min(rows, key=lambda x: x[1])
    assert abs(e["best"]["value"] - best[1]) < 1e-9, (e["best"], best)
    vals = sorted(v for _, v, _ in rows)
    assert e["distribution"]["n"] == 15 and abs(e["distribution"]["median"] - statistics.median(vals)) < 1e-9, e["distribution"]
    assert sum(e["distribution"]["counts"]) == 15, e["distribution"]
rows = {row["key"]: row for row in r["config"]["rows"]}
for key in ("tuner.name", "experimentName", "trialCommand"):
    assert rows[key]["differs"], rows[key]
for key in ("trialConcurrency", "maxTrialNumber", "searchSpace.x._type"):
    assert not rows[key]["differs"], rows[key]
assert rows["tuner.classArgs.optimize_mode"]["values"][1:] == [None, None], rows["tuner.classArgs.optimize_mode"]
assert r["config"]["differing"] == sum(row["differs"] for row in r["config"]["rows"])
print("compare:", [(e["tuner"], e["best"]["value"], len(e["bestBySeq"])) for e in r["experiments"]], r["config"]["differing"], "keys differ")
PY
pass "GET /webui/compare equals the database: counts, bests, best-so-far by trial and by time, medians, config differences"

for bad in "" "ids=" "ids=${ids[0]},${ids[0]}" "ids=a%2Fb" "ids=${ids[0]},,${ids[1]}" "ids=a,b,c,d,e,f,g,h,i"; do
    code=$(curl -s -o "$WORK/bad.json" -w '%{http_code}' "$api/webui/compare?$bad")
    [ "$code" = 400 ] && grep -q 'query parameter ids' "$WORK/bad.json" || fail "ids '$bad': $code $(cat "$WORK/bad.json")"
done
code=$(curl -s -o "$WORK/bad.json" -w '%{http_code}' "$api/webui/compare?ids=${ids[0]},nosuch1")
[ "$code" = 404 ] && grep -q "'nosuch1'" "$WORK/bad.json" || fail "an unknown id: $code $(cat "$WORK/bad.json")"
pass "bad and unknown ids are refused, named"

for t in tpe rnd grid; do
    eval "p=\$port_$t"
    $PY - "http://127.0.0.1:$p/api/v1/nni/metric-data" <<'PY' || fail "$t: metric-data pages with offsets differ from one full read"
import json, sys, urllib.request
base = sys.argv[1]
get = lambda q: json.load(urllib.request.urlopen(base + q))
for q, want in (("", 45), ("?type=PERIODICAL", 30), ("?type=FINAL", 15)):
    full = get(q)
    assert len(full) == want, (q, len(full))
    pages, off = [], 0
    while True:
        page = get((q + "&" if q else "?") + "limit=7&offset=%d" % off)
        pages += page
        off += 7
        if len(page) < 7:
            break
    assert pages == full, (q, len(pages), len(full))
PY
done
pass "metric-data paged by offset equals the full read on each api"

node "$UI/compare.js" "http://127.0.0.1:$port_tpe/" "$api/webui/compare" "$ART" "${ids[@]}" ||
    fail "browser test (compare) failed; screenshots in $ART"
pass "the comparison in chromium equals the REST answer"

for id in "${ids[@]}"; do nnictl stop "$id" > /dev/null; done
assert_no_leftovers
pass "compare"
