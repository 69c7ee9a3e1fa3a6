#!/usr/bin/env bash
# BOHB in a real experiment at trialConcurrency 2: its brackets ("<s>_<round>_<counter>"
# ids, TRIAL_BUDGET per round), promotions of the best with the same parameters, one
# round at a time (a round starts only after every trial of the round before ended,
# the next bracket only after the last round ended), string parameter ids over REST,
# and DONE at maxTrialNumber.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/budget.py" "$WORK/exp/"
write_config "$WORK/exp/config.yml" searchSpace='{x: {_type: uniform, _value: [0, 1]}, opt: {_type: choice, _value: [a, b, c]}}' \
    trialCommand='/usr/bin/python3 budget.py' trialConcurrency=2 maxTrialNumber=19 \
    tuner='{name: bohb, classArgs: {optimize_mode: maximize, min_budget: 1, max_budget: 9, eta: 3, seed: 3}}'

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/a.out"
a=$(exp_id_of "$WORK/a.out")
[ -n "$a" ] || { cat "$WORK/a.out"; fail "no experiment id"; }
wait_status "$a" DONE 240
pass "BOHB experiment reached DONE"

$PY - "$DB" "$a" "$port" <<'PY' || fail "BOHB plan (see above)"
import json, sqlite3, sys, urllib.request
db, exp, port = sys.argv[1:]
c = sqlite3.connect(db, timeout=30)
rows = c.execute("SELECT id, parameter_label, parameters, final_metric, submit_time, end_time FROM trial"
                 " WHERE experiment_id=? ORDER BY sequence", (exp,)).fetchall()
def bad(msg):
    print("FAIL:", msg)
    for r in rows:
        print("  ", r)
    sys.exit(1)
if len(rows) != 19:
    bad("%d trials" % len(rows))
labels = [r[1] for r in rows]
params = [json.loads(r[2]) for r in rows]
config = lambda p: {k: v for k, v in p.items() if k != "TRIAL_BUDGET"}
# max/min budget 9, eta 3: s_max 2. Bracket s=2: 9 at 1, 3 at 3, 1 at 9; s=1: 5 at 3, 1 at 9
groups = [("2_0", 9, 1), ("2_1", 3, 3), ("2_2", 1, 9), ("1_0", 5, 3), ("1_1", 1, 9)]
k = 0
prev = None
for prefix, n, budget in groups:
    cur = list(range(k, k + n))
    k += n
    got = {labels[i].rsplit("_", 1)[0] for i in cur}
    if got != {prefix}:
        bad("trials %s: %s, wanted round %s" % (cur, sorted(got), prefix))
    if any(params[i]["TRIAL_BUDGET"] != budget for i in cur):
        bad("round %s budgets" % prefix)
    if prefix.endswith("_0"):
        counters = [int(labels[i].rsplit("_", 1)[1]) for i in cur]
        if counters != list(range(counters[0], counters[0] + n)):
            bad("round %s counters %s" % (prefix, counters))
    else:
        # the best of the round before, best first, with the same parameters
        ranked = sorted(prev, key=lambda i: -rows[i][3])
        want = [labels[i].rsplit("_", 1)[1] for i in ranked[:n]]
        if [labels[i].rsplit("_", 1)[1] for i in cur] != want:
            bad("round %s promoted %s, wanted %s" % (prefix, [labels[i] for i in cur], want))
        for i, j in zip(cur, ranked):
            if config(params[i]) != config(params[j]):
                bad("%s does not run the parameters of %s" % (labels[i], labels[j]))
    if prev is not None:
        # one round at a time: nothing of this round was submitted before the last one ended
        last_end = max(rows[i][5] for i in prev)
        first_submit = min(rows[i][4] for i in cur)
        if first_submit < last_end:
            bad("round %s submitted at %d, before round %s ended at %d" % (prefix, first_submit,
                labels[prev[0]], last_end))
    prev = cur
print("ok: BOHB brackets, budgets and promotions; each round after the one before ended")
base = "http://127.0.0.1:%s/api/v1/nni" % port
by_id = {r[0]: r[1] for r in rows}
for j in json.load(urllib.request.urlopen(base + "/trial-jobs", timeout=30)):
    if json.loads(j["hyperParameters"][0])["parameter_id"] != by_id[j["trialJobId"]]:
        bad("hyperParameters of %s" % j["trialJobId"])
for m in json.load(urllib.request.urlopen(base + "/metric-data", timeout=30)):
    if m["parameterId"] != by_id[m["trialJobId"]]:
        bad("parameterId of a metric of %s: %r" % (m["trialJobId"], m["parameterId"]))
print("ok: string parameter ids in REST")
PY
nnictl stop "$a" > /dev/null

# classArgs errors name the key
sed -i 's/max_budget: 9/max_budget: "nine"/' "$WORK/exp/config.yml"
if nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/bad.out" 2>&1; then
    fail "max_budget: \"nine\" accepted"
fi
grep -q "classArgs.max_budget" "$WORK/bad.out" || { cat "$WORK/bad.out"; fail "the error does not name max_budget"; }
pass "bad classArgs named: $(grep -o 'classArgs.max_budget[^"]*' "$WORK/bad.out" | head -1)"
assert_no_leftovers
echo "47-bohb: passed"
