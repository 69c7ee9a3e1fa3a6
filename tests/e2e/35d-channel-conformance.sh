#!/usr/bin/env bash
# The trial command channel's conformance cases (tests/chan/cases.txt) against the real
# servers of the channel: a running local trial's leader (trialq-trial, its own port)
# and the api (/env/<token>/<trial> on its port), both common/trialchan.c through their
# adapters (supervise/chanserve.c, api/chan_http.c + api/channel.c); the Python relay of
# cluster trials answers the same cases in tests/sdk/test_chanrelay.py, the module
# itself in unit/test_common_trialchan. The leader writes the 2 accepted metrics.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
mkdir -p "$WORK/exp"
write_config "$WORK/exp/config.yml" searchSpace='{x: {_type: uniform, _value: [0, 1]}}' trialCommand='sleep 60' \
    trialCommandChannel=http maxTrialNumber=1 tuner='{name: Random, classArgs: {seed: 3}}'
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || fail "no experiment id printed"
channel_up() {
    tid=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING'")
    [ -n "$tid" ] && [ -s "$NNI_HOME/$id/trials/$tid/.nni/channel" ]
}
wait_until 30 channel_up || fail "no running trial with its channel"
tdir=$NNI_HOME/$id/trials/$tid
leader=$(cat "$tdir/.nni/channel")
[[ "$leader" == "http://127.0.0.1:"*"/env/"*"/$tid" && "$leader" != "http://127.0.0.1:$port/"* ]] ||
    fail "leader's channel URL $leader"

for kept in "" --kept; do
    $PY "$TRIALQ_SRC/tests/chan/conformance.py" leader "$leader" "$tid" $kept > "$WORK/leader.out" ||
        { cat "$WORK/leader.out"; fail "the leader's channel answers otherwise than the cases ($kept)"; }
done
[ "$(grep -c '^ME' "$tdir/.nni/metrics")" = 4 ] || fail "the leader did not write the 2 accepted metrics of each run"
pass "the leader: $(tail -n 1 "$WORK/leader.out")"

api="http://127.0.0.1:$port/env/${leader#*/env/}"
# the api reads a connection's first request through its front door (the REST API's
# limits, e2e/33): the cases are each a connection's second request (--kept)
$PY "$TRIALQ_SRC/tests/chan/conformance.py" api "$api" "$tid" --kept > "$WORK/api.out" ||
    { cat "$WORK/api.out"; fail "the api's channel answers otherwise than the cases"; }
pass "the api: $(tail -n 1 "$WORK/api.out")"
nnictl stop "$id" > /dev/null
