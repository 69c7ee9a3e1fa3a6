#!/usr/bin/env bash
# Every read route of the REST API against NNI's recorded responses
# (tests/e2e/nni/responses.json, shapes from the spec): the same keys with the same
# JSON types, element by element, so NNI's own clients (web UI, nnictl, Python API)
# find what they read. trialq's additions and the keys it leaves out are listed in the
# recording and documented in docs/rest-api.md; anything else fails.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
metrics_experiment "$WORK/exp" 2 2 21
export TRIAL_STEPS=2 TRIAL_SLEEP=0.05
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
wait_status "$id" DONE 120
API="http://127.0.0.1:$port/api/v1/nni"
curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data '[{"parameter": {"x": 7}, "value": 0.5}]' "$API/experiment/import-data" | grep -q 200 || fail "import-data"

tid=$(sql "SELECT id FROM trial WHERE experiment_id='$id' ORDER BY sequence LIMIT 1")
$PY - "$API" "$TRIALQ_SRC/tests/e2e/nni/responses.json" "$tid" <<'PY' || fail "shapes differ from NNI's"
import json, sys, urllib.request
api, rec_path, tid = sys.argv[1], sys.argv[2], sys.argv[3]
rec = json.load(open(rec_path))
additions = {k: set(v) for k, v in rec["_additions"].items()}
absent = {k: set(v) for k, v in rec["_absent"].items()}
errors = []

def kind(v):
    if v is None: return "null"
    if isinstance(v, bool): return "bool"
    if isinstance(v, (int, float)): return "number"
    if isinstance(v, str): return "string"
    if isinstance(v, list): return "list"
    return "object"

def compare(nni, ours, where, scope):
    if kind(nni) != kind(ours):
        # a value NNI leaves null may be set, and the other way round (e.g. endTime)
        if "null" not in (kind(nni), kind(ours)):
            errors.append("%s: NNI has %s, trialq %s" % (where, kind(nni), kind(ours)))
        return
    if isinstance(nni, dict):
        if where.endswith(".params"):
            return  # the experiment's own config
        extra = set(ours) - set(nni) - additions.get(scope, set())
        missing = set(nni) - set(ours) - absent.get(scope, set())
        if extra:
            errors.append("%s: keys NNI does not have: %s" % (where, sorted(extra)))
        if missing:
            errors.append("%s: NNI keys missing: %s" % (where, sorted(missing)))
        for k in set(nni) & set(ours):
            compare(nni[k], ours[k], where + "." + k, scope)
    elif isinstance(nni, list) and nni and ours:
        sub = scope if scope.endswith("[]") or where != scope else scope + "[]"
        for i, o in enumerate(ours[:50]):
            compare(nni[0], o, "%s[%d]" % (where, i), sub)

routes = [k for k in rec if not k.startswith("_")]
for route in routes:
    path = route.replace(":id", tid).replace(":job_id", tid)
    with urllib.request.urlopen(api + "/" + path, timeout=30) as r:
        assert r.status == 200, (route, r.status)
        ours = json.loads(r.read())
    if isinstance(rec[route], list) and not ours:
        errors.append("%s: empty, cannot compare" % route)
    compare(rec[route], ours, route, route if not route.startswith("trial-jobs/") else "trial-jobs[]")
    print("compared", route)
if errors:
    print("\n".join(errors))
    sys.exit(1)
PY
# TensorBoard (e2e/39 tests it whole): its errors are 400s, as NNI's; no task yet
[ "$(curl -s -o "$WORK/tb" -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data '{"trials":"a"}' \
    "$API/tensorboard")" = 400 ] && grep -q '"error":"trials: trial a not found' "$WORK/tb" || fail "POST /tensorboard: $(cat "$WORK/tb")"
[ "$(curl -s "$API/tensorboard-tasks")" = "[]" ] || fail "GET /tensorboard-tasks"
pass "TensorBoard: 400 with a message, no tasks"
nnictl stop "$id" > /dev/null
assert_no_leftovers
pass "every read route has NNI's keys and JSON types"
