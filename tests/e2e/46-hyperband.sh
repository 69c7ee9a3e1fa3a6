#!/usr/bin/env bash
# Hyperband in a real experiment: every trial gets TRIAL_BUDGET, rounds promote the
# best configurations of the round before with the same parameters and a larger
# budget, NNI's string parameter ids ("0-2_1_7") reach parameter.cfg, the REST
# hyperParameters and the metrics' parameterId, the experiment reaches DONE, and a
# stop + resume mid-bracket continues the same plan (the same parameter sequence as an
# uninterrupted run with the same seed).
. "$(dirname "$0")/lib.sh"

port=$(free_port)
mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/budget.py" "$WORK/exp/"
write_config "$WORK/exp/config.yml" searchSpace='{x: {_type: uniform, _value: [0, 1]}, opt: {_type: choice, _value: [a, b, c]}}' \
    trialCommand='/usr/bin/python3 budget.py' maxTrialNumber=15 \
    advisor='{name: Hyperband, classArgs: {optimize_mode: maximize, R: 9, eta: 3, seed: 5}}'

trials() { sql "SELECT parameter_label || ' ' || parameters FROM trial WHERE experiment_id='$1' ORDER BY sequence"; }

# ---- A: uninterrupted ----
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/a.out"
a=$(exp_id_of "$WORK/a.out")
[ -n "$a" ] || { cat "$WORK/a.out"; fail "no experiment id"; }
wait_status "$a" DONE 240
pass "Hyperband experiment reached DONE"

# the bracket plan, promotions and budgets, from the database and the REST API
$PY - "$DB" "$a" "$port" "$NNI_HOME" <<'PY' || fail "Hyperband plan (see above)"
import json, sqlite3, sys, urllib.request
db, exp, port, home = sys.argv[1:]
c = sqlite3.connect(db, timeout=30)
rows = c.execute("SELECT id, parameter_label, parameters, status, final_metric FROM trial"
                 " WHERE experiment_id=? ORDER BY sequence", (exp,)).fetchall()
def bad(msg):
    print("FAIL:", msg)
    for r in rows:
        print("  ", r)
    sys.exit(1)
if len(rows) != 15:
    bad("%d trials, wanted 15" % len(rows))
labels = [r[1] for r in rows]
params = [json.loads(r[2]) for r in rows]
value = {r[1]: r[4] for r in rows}
def config(p):
    return {k: v for k, v in p.items() if k != "TRIAL_BUDGET"}
# R = 9, eta = 3: s_max = 2. Bracket 0-2: 9 configurations at budget 1, the best 3 at
# budget 3, the best one at 9; bracket 0-1: 5 at budget 3 (2 of them within 15 trials)
want0 = ["0-2_0_%d" % i for i in range(9)]
if labels[:9] != want0:
    bad("round 0 labels %s" % labels[:9])
if any(p["TRIAL_BUDGET"] != 1 for p in params[:9]):
    bad("round 0 budgets")
if list(params[0]) != ["x", "opt", "TRIAL_BUDGET"]:
    bad("key order %s" % list(params[0]))
if len({json.dumps(config(p), sort_keys=True) for p in params[:9]}) != 9:
    bad("round 0 configurations repeat")
def check_round(prev, cur, budget, n):
    ranked = sorted(prev, key=lambda i: -value[labels[i]])
    want = ["0-2_%d_%s" % (int(labels[cur[0]].split("_")[1]), labels[i].split("_")[2]) for i in ranked[:n]]
    got = [labels[i] for i in cur]
    if got != want:
        bad("promotions %s, wanted the best first: %s" % (got, want))
    for i in cur:
        if params[i]["TRIAL_BUDGET"] != budget:
            bad("%s has budget %s, wanted %d" % (labels[i], params[i]["TRIAL_BUDGET"], budget))
        src = [j for j in prev if labels[j].split("_")[2] == labels[i].split("_")[2]][0]
        if config(params[i]) != config(params[src]):
            bad("%s does not run the parameters of %s" % (labels[i], labels[src]))
check_round(list(range(9)), [9, 10, 11], 3, 3)
check_round([9, 10, 11], [12], 9, 1)
if labels[13:] != ["0-1_0_9", "0-1_0_10"] or params[13]["TRIAL_BUDGET"] != 3:
    bad("bracket 0-1 start: %s" % labels[13:])
print("ok: brackets, rounds and promotions as NNI's formulas say")

# REST: hyperParameters carry the string id; metric parameterId too
base = "http://127.0.0.1:%s/api/v1/nni" % port
jobs = json.load(urllib.request.urlopen(base + "/trial-jobs", timeout=30))
by_id = {r[0]: r for r in rows}
for j in jobs:
    hp = json.loads(j["hyperParameters"][0])
    if hp["parameter_id"] != by_id[j["trialJobId"]][1] or not isinstance(hp["parameter_id"], str):
        bad("hyperParameters of %s: %s" % (j["trialJobId"], hp))
    if hp["parameters"] != json.loads(by_id[j["trialJobId"]][2]):
        bad("hyperParameters parameters of %s" % j["trialJobId"])
metrics = json.load(urllib.request.urlopen(base + "/metric-data", timeout=30))
kinds = set()
for m in metrics:
    kinds.add(m["type"])
    if m["parameterId"] != by_id[m["trialJobId"]][1]:
        bad("metric of %s has parameterId %r" % (m["trialJobId"], m["parameterId"]))
if kinds != {"PERIODICAL", "FINAL"}:
    bad("metric types %s" % kinds)
# what the trial read: parameter.cfg
for r in rows:
    cfg = json.load(open("%s/%s/trials/%s/parameter.cfg" % (home, exp, r[0])))
    if cfg["parameter_id"] != r[1] or cfg["parameters"]["TRIAL_BUDGET"] != json.loads(r[2])["TRIAL_BUDGET"]:
        bad("parameter.cfg of %s: %s" % (r[0], cfg))
print("ok: string parameter ids in REST hyperParameters, metric-data and parameter.cfg")
PY
nnictl stop "$a" > /dev/null

# ---- B: the same with a stop + resume mid-bracket ----
touch "$WORK/exp/slow" # each trial runs a second after its first result: time to stop it
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/b.out"
b=$(exp_id_of "$WORK/b.out")
for at in 6 11; do
    # stop while trial number $at runs and has reported its first result
    WAIT_STEP=0.05 wait_sql "SELECT count(*) FROM trial t WHERE experiment_id='$b' AND sequence = $at AND status = 'RUNNING'
                 AND EXISTS (SELECT 1 FROM metric m WHERE m.trial_id = t.id)" 1 120 "trial $at of run B never ran"
    nnictl stop "$b" > /dev/null
    wait_status "$b" STOPPED 60
    nnictl resume "$b" --port "$port" > /dev/null
done
wait_status "$b" DONE 240
canceled=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$b' AND status='USER_CANCELED'")
[ "$canceled" = 2 ] || fail "run B: $canceled trials cancelled by the stops, wanted 2"
if [ "$(trials "$a")" != "$(trials "$b")" ]; then
    diff <(trials "$a") <(trials "$b") | head -20
    fail "the Hyperband plan changed across stop and resume"
fi
pass "stop + resume twice: the same 15 labels and parameters as the uninterrupted run"
nnictl stop "$b" > /dev/null

# classArgs errors name the key, and nothing is created
sed -i 's/R: 9,/R: 0,/' "$WORK/exp/config.yml"
if nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/bad.out" 2>&1; then
    fail "R: 0 accepted"
fi
grep -q "classArgs.R" "$WORK/bad.out" || { cat "$WORK/bad.out"; fail "the error does not name R"; }
[ "$(sql "SELECT count(*) FROM experiment")" = 2 ] || fail "a bad config created an experiment"
pass "bad classArgs: $(grep -o 'classArgs.R[^"]*' "$WORK/bad.out" | head -1)"
assert_no_leftovers
echo "46-hyperband: passed"
