#!/usr/bin/env bash
# trialCommandChannel: http survives the manager's crash (issue 23). Trials on NNI's
# HTTP channel, half of them a stdlib client that speaks it exactly as NNI 3's own SDK
# does (a new connection per request, no retry: a refused connection fails the trial,
# trials/nni_http_client.py), half the bundled SDK (trials/sdk_steps.py); 12 trials at
# concurrency 4, each reporting 6 intermediate results over ~4 s and a final one.
# While 4 run: kill -9 the api (its workers end with it), resume 3 s later; then again
# with kill -9 of every manager process at once (api and workers). Every trial
# SUCCEEDED in its first attempt, with exactly the metrics it was acknowledged, none
# doubled, and the trials went on reporting while no manager process ran; once stopped,
# the kept metric and trial counts equal a recount (lib.sh's assert_kept_counts). First, a
# trial's channel (served by its group leader, trialq-trial) by hand: what it answers,
# and that a metric is in .nni/metrics before its 200.
. "$(dirname "$0")/lib.sh"

acked_lines() { cat "$NNI_HOME/$1"/trials/*/acked.log 2>/dev/null | wc -l; }

run_case() { # label seed what-to-kill (api | all)
    local port id api workers before after
    port=$(free_port)
    http_experiment "$WORK/$1" "$2"
    nnictl create --config "$WORK/$1/config.yml" --port "$port" > "$WORK/$1.out"
    id=$(exp_id_of "$WORK/$1.out")
    [ -n "$id" ] || fail "$1: no experiment id printed"
    http_wait_reporting "$id" "$1" 30
    api=$(sql "SELECT api_pid FROM experiment WHERE id='$id'")
    workers=$(pgrep -f "trialq worker --platform local --experiment $id" | tr '\n' ' ')
    [ -n "$workers" ] || fail "$1: no worker found"
    if [ "$3" = all ]; then kill -9 "$api" $workers; else kill -9 "$api"; fi
    before=$(acked_lines "$id")
    sleep 3
    for p in $api $workers; do
        ! kill -0 "$p" 2>/dev/null || fail "$1: manager process $p still runs"
    done
    after=$(acked_lines "$id")
    [ "$after" -gt "$before" ] || fail "$1: no metric acknowledged while the manager was down ($before, $after)"
    nnictl resume "$id" --port "$port" > "$WORK/$1.resume" 2>&1 || { cat "$WORK/$1.resume"; fail "$1: resume"; }
    wait_status "$id" DONE 180
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND attempt=1")" = 12 ] || {
        sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id'"
        for f in "$NNI_HOME/$id"/trials/*/trial.stderr; do [ -s "$f" ] && { echo "== $f"; tail -n 5 "$f"; }; done
        fail "$1: not every trial SUCCEEDED in attempt 1"
    }
    multi=$(sql "SELECT count(*) FROM (SELECT trial_id FROM event WHERE experiment_id='$id' AND entity='trial'
                 AND to_state IN ('SUCCEEDED','FAILED','USER_CANCELED','SYS_CANCELED','EARLY_STOPPED')
                 GROUP BY trial_id HAVING count(*) != 1)")
    [ "$multi" = 0 ] || fail "$1: $multi trials reached a final state more or less than once"
    assert_acked_match "$id" "$1" 6
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND final_metric IS NOT NULL")" = 12 ] ||
        fail "$1: final metrics missing"
    pass "$1: 12 trials SUCCEEDED in attempt 1, every acknowledged metric stored once ($((after - before)) acknowledged while down)"
    nnictl stop "$id" > /dev/null
    assert_kept_counts "$id"  # the metric counts folded across the kill -9 and the resume
}

# ---- the trial's channel by hand (served by its group leader) ----
port=$(free_port)
mkdir -p "$WORK/hand"
write_config "$WORK/hand/config.yml" searchSpace='{x: {_type: uniform, _value: [0, 1]}}' trialCommand='sleep 60' \
    trialCommandChannel=http tuner='{name: Random, classArgs: {seed: 3}}'
nnictl create --config "$WORK/hand/config.yml" --port "$port" > "$WORK/hand.out"
id=$(exp_id_of "$WORK/hand.out")
[ -n "$id" ] || fail "no experiment id printed"
channel_up() {
    tid=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING'")
    [ -n "$tid" ] && [ -s "$NNI_HOME/$id/trials/$tid/.nni/channel" ]
}
wait_until 30 channel_up || fail "no running trial wrote its .nni/channel"
tdir=$NNI_HOME/$id/trials/$tid
url=$(cat "$tdir/.nni/channel")
[[ "$url" == "http://127.0.0.1:"*"/env/"*"/$tid" && "$url" != "http://127.0.0.1:$port/"* ]] || fail "channel URL $url"
$PY "$TRIALQ_SRC/tests/e2e/lib/chan_probe.py" "$url" "$tid" "$tdir" || fail "the trial channel by hand"
wait_sql "SELECT count(*) FROM metric WHERE trial_id='$tid'" 2 5 "the probe's metrics (sequences 7 and 9) stored"
[ "$(sql "SELECT count(*) FROM metric WHERE trial_id='$tid' AND sequence=7")" = 1 ] || fail "the metric sent twice is not stored once"
nnictl stop "$id" > /dev/null
[ ! -e "$tdir/.nni/channel" ] || fail "channel file left after the trial ended"
pass "the trial leader's channel: parameter, 408, metric on disk before its 200, 403/400/415/404/405"

run_case api-killed 11 api
run_case all-killed 12 all
assert_no_leftovers
pass "HTTP channel trials outlive the api and the workers"
