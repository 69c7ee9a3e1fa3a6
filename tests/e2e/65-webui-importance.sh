#!/usr/bin/env bash
# Parameter importance (PED-ANOVA, docs/webui.md "Importance") on a real experiment: a
# grid of 60 trials over x (quniform, 5 values), y (choice, 4) and z (randint, 3) whose
# default metric depends on x and y only and whose dict key "other" on z mostly. The
# grid balances z in every (x, y) cell and the 6 best trials are two whole cells, so z
# must rank last for the default metric with importance under 0.05, and first for
# "other". GET /webui/importance and `nnictl experiment importance` must agree to the
# digits the table prints; a bad key is a 400 and an error naming it. Then the UI's
# Importance tab in headless chromium (tests/webui/importance.js): its bars' table
# equals the REST answer, for the default metric and for "other" chosen in its menu.
# Screenshots: <ctest's working dir>/webui-artifacts/65-webui-importance/*.png
. "$(dirname "$0")/lib.sh"

webui_artifacts   # sets ART
webui_setup       # sets UI

mkdir -p "$WORK/imp"
cat > "$WORK/imp/trial.py" <<'PY'
import nni
p = nni.get_next_parameter()
x, y, z = p["x"], p["y"], p["z"]
f = (x - 3) ** 2 + 0.1 * x + {"a": 0, "b": 0.5, "c": 1.7, "d": 3.3}[y]
nni.report_final_result({"default": f, "other": z * 10 + 0.001 * x})
PY
write_config "$WORK/imp/config.yml" experimentName=importance \
    searchSpace='{x: {_type: quniform, _value: [0, 4, 1]}, y: {_type: choice, _value: [a, b, c, d]}, z: {_type: randint, _value: [0, 3]}}' \
    trialCommand='/usr/bin/python3 trial.py' trialConcurrency=4 maxTrialNumber=60 maxTrialRetries=0 tuner='{name: GridSearch}'
port=$(free_port)
nnictl create --config "$WORK/imp/config.yml" --port "$port" > "$WORK/create.out" || { cat "$WORK/create.out"; fail "create"; }
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || fail "no experiment id printed"
wait_status "$id" DONE 240
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 60 ] ||
    fail "not 60 SUCCEEDED trials: $(sql "SELECT status, count(*) FROM trial WHERE experiment_id='$id' GROUP BY 1")"

api="http://127.0.0.1:$port/api/v1/nni/webui/importance"
curl -sSf "$api" > "$WORK/rest.json" || fail "GET /webui/importance"
curl -sSf "$api?metric=other" > "$WORK/rest-other.json" || fail "GET /webui/importance?metric=other"
nnictl experiment importance "$id" > "$WORK/cli.txt" || fail "nnictl experiment importance"
nnictl experiment importance --metric other "$id" > "$WORK/cli-other.txt" || fail "nnictl experiment importance --metric other"
$PY - "$WORK" <<'PY' || fail "importance: REST and nnictl disagree or the ranking is wrong"
import json, sys
w = sys.argv[1]
def table(path):
    rows = {}
    lines = open(path).read().splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("PARAMETER"))
    for l in lines[head + 1:]:
        name, typ, imp, div, n, top = l.split()
        rows[name] = (typ, imp, float(div), int(n), int(top))
    return rows, lines
for rest, cli, first, last in (("rest.json", "cli.txt", None, "z"), ("rest-other.json", "cli-other.txt", "z", None)):
    r = json.load(open(f"{w}/{rest}"))
    rows, lines = table(f"{w}/{cli}")
    print(rest, [(p["name"], round(p["importance"], 4)) for p in r["params"]])
    assert r["method"] == "PED-ANOVA" and r["sample"]["trials"] == 60 and r["sample"]["limit"] == 5000, r
    assert r["optimizeMode"] == "minimize", r
    assert [p["name"] for p in r["params"]] == list(rows), (r, rows)
    assert abs(sum(p["importance"] for p in r["params"]) - 1) < 1e-9, r
    for p in r["params"]:
        typ, imp, div, n, top = rows[p["name"]]
        assert typ == p["type"] and imp == "%.6f" % p["importance"], (p, rows[p["name"]])
        assert abs(div - p["divergence"]) <= 1e-5 * max(1, abs(div)), (p, div)
        assert n == p["trials"] == 60 and top == p["top"] == 6, p
    if last:
        assert r["params"][-1]["name"] == last and r["params"][-1]["importance"] < 0.05, r
        assert r["metric"] is None and "the default metric" in lines[0], (r, lines[0])
    if first:
        assert r["params"][0]["name"] == first and r["params"][0]["importance"] > 0.5, r
        assert r["metric"] == "other" and '"other"' in lines[0], (r, lines[0])
PY
pass "REST and nnictl agree; z ranks last for the default metric and first for \"other\""

code=$(curl -s -o "$WORK/bad.json" -w '%{http_code}' "$api?metric=a%22b")
[ "$code" = 400 ] && grep -q 'query parameter metric' "$WORK/bad.json" || fail "a bad key: $code $(cat "$WORK/bad.json")"
not nnictl experiment importance --metric 'a"b' "$id" > /dev/null 2> "$WORK/bad.err" || fail "nnictl took a bad key"
grep -q "metric: " "$WORK/bad.err" || fail "nnictl's error names the key: $(cat "$WORK/bad.err")"
curl -sSf "$api?metric=nokey" | $PY -c 'import json,sys; r=json.load(sys.stdin); assert r["sample"]["trials"]==0 and r["sample"]["read"]==60 and all(p["importance"]==0 for p in r["params"]), r' ||
    fail "a key no trial has: no trials, importance 0"
pass "bad and unknown keys"

node "$UI/importance.js" "http://127.0.0.1:$port/" "$api" "$ART" || fail "browser test (importance) failed; screenshots in $ART"
pass "the Importance tab in chromium equals the REST answer"

nnictl stop "$id" > /dev/null
# the database alone: nnictl answers the same with the api stopped
nnictl experiment importance "$id" > "$WORK/cli-stopped.txt" || fail "nnictl experiment importance, stopped"
cmp -s "$WORK/cli.txt" "$WORK/cli-stopped.txt" || fail "nnictl's answer changed once stopped"
assert_no_leftovers
pass "importance"
