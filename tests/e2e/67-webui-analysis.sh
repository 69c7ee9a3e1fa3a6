#!/usr/bin/env bash
# The web UI's analysis views (docs/webui.md, "Slice, contour, distribution and early
# stopping") on a real experiment: TPE over x (loguniform), y (uniform), c (choice) and
# a nested choice `model` (branch small: randint w; branch big: quniform d), whose
# trials report 6 intermediate results each and a final metric; Medianstop stops the
# trials whose results trail. The REST answers (/webui/slice, /webui/contour,
# /webui/ecdf, /webui/curves) are checked against the database: the slice's points are
# the trials' parameters and final metrics, log scale for x, categories for c and the
# branches, each branch's parameter over the trials that chose it; the ECDF is the
# distribution of the final metrics; the contour grid is the kernel average recomputed
# here from the answer's points and bandwidths; the curves are the trials' results, the
# EARLY_STOPPED ones marked. Bad arguments are 400s naming them. Then the four tabs in
# headless chromium (tests/webui/analysis.js): each draws, its numbers equal the REST
# answer, no console error; then 8 more trials (nnictl update trialnum) appear in the
# Distribution tab without a reload; screenshots in
# <ctest's working dir>/webui-artifacts/67-webui-analysis/*.png
. "$(dirname "$0")/lib.sh"

webui_artifacts   # sets ART
webui_setup       # sets UI

mkdir -p "$WORK/ana"
# Trials started after the marker file "late" exists (the 8 added while the browser shows
# the Distribution tab) report intermediate results above every earlier one, so
# Medianstop lets them finish and the distribution surely grows; their final metric is
# the function's as before.
printf 'LATE = %s\n' "'$WORK/ana/late'" > "$WORK/ana/trial.py"
cat >> "$WORK/ana/trial.py" <<'PY'
import math, os, time
import nni
late = os.path.exists(LATE)
p = nni.get_next_parameter()
m = p["model"]
f = (math.log10(p["x"]) + 1.5) ** 2 + 2 * (p["y"] - 0.3) ** 2 + {"a": 0, "b": 0.4}[p["c"]] \
    + (0.1 * m["w"] if m["_name"] == "small" else 0.5 - m["d"] * 0.3)
for i in range(6):
    # the same value at every step: Medianstop stops a trial whose -f is below the median
    # of the finished trials' (about half of the random start-up). A ramp -f*(i+1)/6 made
    # it stop only trials 1.5x worse than the median, which TPE's trials often are not.
    nni.report_intermediate_result({"default": 100.0 if late else -f, "step": i})
    # from Medianstop's start_step on, time for its decision to reach the trial before it
    # ends (on a loaded machine, 0.15 s a step let all 48 trials finish unstopped)
    time.sleep(0.15 if i < 2 else 0.5)
nni.report_final_result({"default": -f, "loss": f})
PY
write_config "$WORK/ana/config.yml" experimentName=analysis \
    searchSpace='{x: {_type: loguniform, _value: [0.001, 1]}, y: {_type: uniform, _value: [0, 1]}, c: {_type: choice, _value: [a, b]}, model: {_type: choice, _value: [{_name: small, w: {_type: randint, _value: [1, 4]}}, {_name: big, d: {_type: quniform, _value: [0, 1, 0.25]}}]}}' \
    trialCommand='/usr/bin/python3 trial.py' trialConcurrency=4 maxTrialNumber=48 maxTrialRetries=0 \
    tuner='{name: TPE, classArgs: {optimize_mode: maximize, seed: 3}}' \
    assessor='{name: Medianstop, classArgs: {optimize_mode: maximize, start_step: 2}}'
port=$(free_port)
nnictl create --config "$WORK/ana/config.yml" --port "$port" > "$WORK/create.out" || { cat "$WORK/create.out"; fail "create"; }
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || fail "no experiment id printed"
wait_status "$id" DONE 300
sql "SELECT status, count(*) FROM trial WHERE experiment_id='$id' GROUP BY 1"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='EARLY_STOPPED'")" -ge 1 ] ||
    fail "no trial was stopped early: $(sql "SELECT status, count(*) FROM trial WHERE experiment_id='$id' GROUP BY 1")"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" -ge 10 ] ||
    fail "fewer than 10 SUCCEEDED trials"

api="http://127.0.0.1:$port/api/v1/nni/webui"
for v in slice ecdf contour curves; do
    curl -sSf "$api/$v" > "$WORK/$v.json" || fail "GET /webui/$v"
done
curl -sSf "$api/slice?metric=loss" > "$WORK/slice-loss.json" || fail "GET /webui/slice?metric=loss"
curl -sSf "$api/contour?x=model%5B0%5D.w&y=x&grid=12" > "$WORK/contour-wx.json" || fail "GET /webui/contour?x=model[0].w&y=x"
sql -json "SELECT id, status, parameters, final_metric, final_metric_json FROM trial WHERE experiment_id='$id'
           ORDER BY sequence DESC" > "$WORK/trials.json"
sql -json "SELECT m.trial_id, m.sequence, m.default_value FROM metric m JOIN trial t ON t.id = m.trial_id
           WHERE t.experiment_id='$id' AND m.type='PERIODICAL' ORDER BY m.trial_id, m.sequence" > "$WORK/periodical.json"
$PY - "$WORK" <<'PY' || fail "the analysis answers disagree with the database"
import json, math, sys
w = sys.argv[1]
load = lambda n: json.load(open(f"{w}/{n}"))
close = lambda a, b: abs(a - b) <= 1e-9 * max(1, abs(a))  # the api writes 10 significant digits
trials = load("trials.json")
done = [t for t in trials if t["status"] == "SUCCEEDED" and t["final_metric"] is not None]  # the sample, most recent first
for t in done:
    t["p"] = json.loads(t["parameters"])
    t["loss"] = json.loads(t["final_metric_json"])["loss"]

# slice: each parameter's values and the metric, in the sample's order; branches apart
def col(name, t):
    p, m = t["p"], t["p"]["model"]
    if name == "model[0].w":
        return m["w"] if m["_name"] == "small" else None
    if name == "model[1].d":
        return m["d"] if m["_name"] == "big" else None
    if name == "model":
        return ["small", "big"].index(m["_name"])
    if name == "c":
        return ["a", "b"].index(p["c"])
    return p[name]
for f, key in (("slice.json", "final_metric"), ("slice-loss.json", "loss")):
    r = load(f)
    assert r["sample"] == {"limit": 5000, "read": len(done), "trials": len(done), "of": r["sample"]["of"]}, r["sample"]
    assert r["metric"] == (None if key == "final_metric" else "loss") and r["optimizeMode"] == "maximize", r
    got = [(p["name"], p["type"], p["scale"], p.get("categories")) for p in r["params"]]
    assert got == [("x", "loguniform", "log", None), ("y", "uniform", "linear", None), ("c", "choice", "category", ["a", "b"]),
                   ("model", "choice", "category", ["small", "big"]), ("model[0].w", "randint", "linear", None),
                   ("model[1].d", "quniform", "linear", None)], got
    for p in r["params"]:
        want = [(col(p["name"], t), t[key]) for t in done if col(p["name"], t) is not None]
        assert p["trials"] == len(want) and len(p["x"]) == len(want), (p["name"], p["trials"], len(want))
        for (wx, wy), gx, gy in zip(want, p["x"], p["y"]):
            assert close(wx, gx) and close(wy, gy), (p["name"], wx, gx, wy, gy)
    small = sum(1 for t in done if t["p"]["model"]["_name"] == "small")
    assert 0 < small < len(done), "both branches were tried"
print("slice: %d trials, %d in branch small" % (len(done), small))

# ECDF: the final metrics' distribution
r = load("ecdf.json")
vals = sorted(t["final_metric"] for t in done)
xs = sorted(set(vals))
assert r["n"] == len(vals) and len(r["x"]) == len(xs), r
for x, gx, gf in zip(xs, r["x"], r["f"]):
    assert close(x, gx) and close(sum(v <= x for v in vals) / len(vals), gf), (x, gx, gf)
assert r["min"] == r["x"][0] and r["max"] == r["x"][-1], r
assert r["median"] == next(x for x, f in zip(r["x"], r["f"]) if f >= 0.5), r
print("ecdf: %d trials, median %g" % (r["n"], r["median"]))

# contour: the grid recomputed from the answer's points and bandwidths (a Nadaraya-Watson
# average with a Gaussian kernel in the (log) unit square, blank beyond 2 bandwidths)
blank = 0
for f, xn, yn, grid in (("contour.json", "x", "y", 30), ("contour-wx.json", "model[0].w", "x", 12)):
    r = load(f)
    assert r["numeric"] == ["x", "y", "model[0].w", "model[1].d"], r["numeric"]
    assert r["x"]["name"] == xn and r["y"]["name"] == yn and r["fit"]["grid"] == grid and len(r["z"]) == grid, (f, r["fit"])
    both = [(col(xn, t), col(yn, t), t["final_metric"]) for t in done if col(xn, t) is not None and col(yn, t) is not None]
    assert r["trials"] == len(both) and len(r["points"]) == len(both), (f, len(both))
    assert all(close(a, b) for g, t in zip(sorted(map(tuple, r["points"])), sorted(both)) for a, b in zip(g, t)), f
    def unit(a, v):
        t = math.log if a["scale"] == "log" else (lambda q: q)
        return (t(v) - t(a["lo"])) / (t(a["hi"]) - t(a["lo"]))
    hu, hv = r["x"]["bandwidth"], r["y"]["bandwidth"]
    pts = [(unit(r["x"], x), unit(r["y"], y), z) for x, y, z in both]
    filled = 0
    for j in range(grid):
        for i in range(grid):
            cu, cv = (i + 0.5) / grid, (j + 0.5) / grid
            d2 = [((cu - u) / hu) ** 2 + ((cv - v) / hv) ** 2 for u, v, _ in pts]
            k = [math.exp(-d / 2) for d in d2]
            got = r["z"][j][i]
            if min(d2) < 4:
                want = sum(a * z for a, (_, _, z) in zip(k, pts)) / sum(k)
                assert got is not None and abs(got - want) <= 1e-6 * max(1, abs(want)), (f, i, j, got, want)
                filled += 1
            else:
                assert got is None, (f, i, j, got)
    assert filled == r["filled"] and 0 < filled <= grid * grid, (f, filled)
    blank += grid * grid - filled
    print("contour %s x %s: %d of %d cells" % (xn, yn, filled, grid * grid))
assert blank > 0, "no blank cell in either contour: the 2-bandwidth cut was not exercised"

# curves: every ended trial (fewer than 100 a group) with its results, EARLY_STOPPED marked
r = load("curves.json")
per = {}
for m in load("periodical.json"):
    per.setdefault(m["trial_id"], []).append([m["sequence"], m["default_value"]])
stopped = [t["id"] for t in trials if t["status"] == "EARLY_STOPPED"]
others = [t["id"] for t in trials if t["status"] in ("SUCCEEDED", "FAILED", "USER_CANCELED", "SYS_CANCELED")]
assert [c["id"] for c in r["curves"]] == stopped + others, r["curves"]
assert r["counts"] == {"EARLY_STOPPED": len(stopped), "others": len(others)} and r["assessor"] == "Medianstop", r
for c in r["curves"]:
    want = per.get(c["id"], [])
    assert c["stopped"] == (c["id"] in stopped) and len(c["points"]) == len(want), c
    assert all(g[0] == t[0] and close(g[1], t[1]) for g, t in zip(c["points"], want)), (c, want)
    assert c["results"] == len(c["points"]) and not c["more"], c
# Medianstop decides from start_step 2 on; a decision at the sixth result still stops
# the trial before its final one (the trial sleeps 0.5 s after each step)
assert all(2 <= len(per[i]) <= 6 for i in stopped) and min(len(per[i]) for i in stopped) < 6, "stopped trials ended early"
assert all(len(per[i]) == 6 for i in others), "unstopped trials reported every step"
print("curves: %d stopped early, %d others" % (len(stopped), len(others)))
PY
pass "slice, contour, ECDF and curves agree with the database"

bad() { # bad QUERY WORDS: a 400 whose error has WORDS
    local code
    code=$(curl -s -o "$WORK/bad.json" -w '%{http_code}' "$api/$1")
    [ "$code" = 400 ] && grep -q "$2" "$WORK/bad.json" || fail "GET /webui/$1: $code $(cat "$WORK/bad.json")"
}
bad 'contour?x=c' "query parameter x: 'c' is not a numeric parameter of the search space (numeric: x, y, model\[0\].w, model\[1\].d)"
bad 'contour?x=nope&y=x' "query parameter x: 'nope' is not a numeric"
bad 'contour?x=y&y=y' "query parameter y: 'y' is the other axis too"
bad 'contour?grid=4' 'grid'
bad 'slice?metric=a%22b' 'query parameter metric'
bad 'ecdf?metric=' 'query parameter metric'
bad 'curves?n=0' 'query parameter n'
curl -sSf "$api/ecdf" | cmp -s - "$WORK/ecdf.json" || fail "the same ECDF twice"
pass "bad arguments are 400s naming them"

touch "$WORK/ana/late"   # the experiment is DONE: only the trials added in the browser test see it
node "$UI/analysis.js" "http://127.0.0.1:$port/" "$api" "$ART" "$id" || fail "browser test (analysis) failed; screenshots in $ART"
pass "the four tabs in chromium draw the REST answers; the Distribution tab follows 8 more trials without a reload"

nnictl stop "$id" > /dev/null
assert_no_leftovers
pass "analysis"
