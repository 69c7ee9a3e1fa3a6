#!/usr/bin/env bash
# trialCommandChannel: http — unchanged `import nni` trials get their parameters and
# report their metrics over NNI v3's HTTP channel (/env/<token>/<trialId>), served for
# each local trial by its group leader (supervise/chanserve.c): parameters are the stored
# ones, every metric is stored exactly once. The api serves the same channel
# (api/channel.c, for cluster platforms); by hand, it refuses what it must (another
# trial's token or trial id, bad JSON), times polls out. tests/e2e/35b drives the
# trial's own channel by hand and through crashes (21 with its supervisors killed).
. "$(dirname "$0")/lib.sh"

port=$(free_port)
mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/quadratic.py" "$WORK/exp/"
cat > "$WORK/exp/trial.sh" <<'SH'
echo "$NNI_TRIAL_COMMAND_CHANNEL" > "$NNI_SYS_DIR/channel.url"
exec /usr/bin/python3 quadratic.py
SH
write_config "$WORK/exp/config.yml" experimentName=e2e-channel \
    searchSpace='{x: {_type: uniform, _value: [-1, 1]}, y: {_type: uniform, _value: [-2, 0]}}' \
    trialConcurrency=3 maxTrialNumber=6 trialCommandChannel=http tuner='{name: Random, classArgs: {seed: 3}}'

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || fail "no experiment id printed"
wait_status "$id" DONE 120
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 6 ] ||
    { sql "SELECT id, status, message FROM trial WHERE experiment_id='$id'"; fail "not 6 SUCCEEDED"; }
pass "6 import-nni trials SUCCEEDED over the HTTP channel"

# the canonical config keeps the key; the default is file
sql "SELECT config FROM experiment WHERE id='$id'" | grep -q '"trialCommandChannel":"http"' || fail "key not in the config"

# every trial: the SDK was given its leader's channel (a loopback port that is not
# the api's, the trial's own token), its metrics are exactly 3 PERIODICAL (0,1,2) +
# 1 FINAL, and the loss is that of the parameters stored for the trial, so the trial
# received its own parameters
token=$(sql "SELECT token FROM experiment WHERE id='$id'")
for dir in "$NNI_HOME/$id"/trials/*/; do
    tid=$(basename "$dir")
    chan=$(cat "$dir/channel.url")
    [[ "$chan" == "http://127.0.0.1:"*"/env/$($PY "$TRIALQ_SRC/tests/e2e/chantoken.py" "$token" "$tid")/$tid" &&
       "$chan" != "http://127.0.0.1:$port/"* ]] || fail "$tid: channel URL $chan"
    got=$(sql "SELECT group_concat(type || ':' || sequence, ',') FROM (SELECT type, sequence FROM metric WHERE trial_id='$tid' ORDER BY type, sequence)")
    [ "$got" = "FINAL:0,PERIODICAL:0,PERIODICAL:1,PERIODICAL:2" ] || fail "metrics of $tid: $got"
    sql "SELECT parameters || char(10) || final_metric FROM trial WHERE id='$tid'" > "$WORK/row"
    $PY - "$WORK/row" "$tid" <<'PY'
import json, sys
params, final = open(sys.argv[1]).read().split('\n')[:2]
p = json.loads(params)
loss = (p["x"] - 0.3) ** 2 + (p["y"] + 1.0) ** 2 + abs(0.01 - 0.01) * 10 + 0.0
assert abs(loss - float(final)) < 1e-9, (sys.argv[2], p, final, loss)
PY
done
pass "parameters received = stored ones; metrics stored exactly once"

# ---- the api's channel by hand ----
A=$(sql "SELECT id FROM trial WHERE experiment_id='$id' ORDER BY sequence LIMIT 1")
B=$(sql "SELECT id FROM trial WHERE experiment_id='$id' ORDER BY sequence LIMIT 1 OFFSET 1")
tokA=$($PY "$TRIALQ_SRC/tests/e2e/chantoken.py" "$token" "$A")
tokB=$($PY "$TRIALQ_SRC/tests/e2e/chantoken.py" "$token" "$B")
base="http://127.0.0.1:$port/env"
metric() { # trial seq
    $PY -c 'import json,sys; print(json.dumps({"type":"metric","metric":json.dumps({"parameter_id":0,"trial_job_id":sys.argv[1],"type":"PERIODICAL","sequence":int(sys.argv[2]),"value":"0.5"})}))' "$1" "$2"
}
put() { # url body [content type]
    curl -s -o "$WORK/put.out" -w '%{http_code}' -X PUT -H "Content-Type: ${3:-application/json}" --data-binary "$2" "$1"
}
count() { sql "SELECT count(*) FROM metric WHERE trial_id IN ('$A','$B')"; }
n0=$(count)

code=$(put "$base/$tokB/$A" "$(metric "$A" 99)")
[ "$code" = 403 ] || fail "trial B's token on trial A's URL: HTTP $code"
code=$(put "$base/0000/$A" "$(metric "$A" 99)")
[ "$code" = 403 ] || fail "a made-up token: HTTP $code"
code=$(put "$base/$tokA/$A" "$(metric "$B" 99)")
[ "$code" = 403 ] || fail "trial A reporting for trial B: HTTP $code"
[ "$(count)" = "$n0" ] || fail "a refused metric was stored"
pass "another trial's token or trial id: 403, nothing stored"

code=$(put "$base/$tokA/$A" '{"type":"metric",')
[ "$code" = 400 ] || fail "bad JSON: HTTP $code"
code=$(put "$base/$tokA/$A" '{"type":"metric","metric":"{not json"}')
[ "$code" = 400 ] || fail "bad metric JSON: HTTP $code"
code=$(put "$base/$tokA/$A" "$(metric "$A" 99)" text/plain)
[ "$code" = 415 ] || fail "no JSON content type: HTTP $code"
[ "$(count)" = "$n0" ] || fail "a bad request stored a metric"
pass "bad JSON: 400, wrong content type: 415"

code=$(put "$base/$tokA/$A" "$(metric "$A" 99)")
[ "$code" = 200 ] || fail "a good metric: HTTP $code $(cat "$WORK/put.out")"
code=$(put "$base/$tokA/$A" "$(metric "$A" 99)")
[ "$code" = 200 ] || fail "the same metric again: HTTP $code"
[ "$(count)" = $((n0 + 1)) ] || fail "re-sent metric stored twice (or not at all)"
[ "$(sql "SELECT value FROM metric WHERE trial_id='$A' AND sequence=99")" = 0.5 ] || fail "stored value"
pass "metric stored before the reply, once"

t0=$(date +%s%N)
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$base/$tokA/$A")
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$code" = 408 ] || fail "idle GET: HTTP $code"
[ "$ms" -ge 900 ] && [ "$ms" -le 1500 ] || fail "idle GET answered after $ms ms"
pass "idle GET: 408 after $ms ms"

# polls whose clients gave up must not swallow the parameter
for _ in 1 2 3; do curl -s -o /dev/null --max-time 0.2 "$base/$tokA/$A" || true; done
code=$(put "$base/$tokA/$A" '{"type":"request_parameter"}')
[ "$code" = 200 ] || fail "request_parameter: HTTP $code"
curl -sf --max-time 5 "$base/$tokA/$A" > "$WORK/param.json" || fail "GET after request_parameter"
sql "SELECT parameters FROM trial WHERE id='$A'" > "$WORK/want.json"
$PY - "$WORK/param.json" "$WORK/want.json" "$NNI_HOME/$id/trials/$A/parameter.cfg" <<'PY'
import json, sys
cmd = json.load(open(sys.argv[1]))
assert cmd["type"] == "parameter", cmd
rec = json.loads(cmd["parameter"])
assert rec["parameters"] == json.load(open(sys.argv[2])), rec
assert rec == json.load(open(sys.argv[3])), (rec, "parameter.cfg differs")
PY
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$base/$tokB/$A")
[ "$code" = 403 ] || fail "GET with another trial's token: HTTP $code"
pass "request_parameter + GET: the parameter.cfg record"

# a poll pending while the api stops is answered 410 (channel closed)
for _ in 1 2 3; do curl -s -o /dev/null -w '%{http_code}\n' --max-time 5 "$base/$tokA/$A" >> "$WORK/poll.out" || true; done &
poller=$!
sleep 0.3
nnictl stop "$id" > /dev/null
wait "$poller" || true
grep -q '^410$' "$WORK/poll.out" || fail "no 410 to a poll pending at stop: $(tr '\n' ' ' < "$WORK/poll.out")"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$base/$tokA/$A" || true)
[ "$code" != 200 ] || fail "channel answers after stop"
assert_no_leftovers
pass "stopped"
