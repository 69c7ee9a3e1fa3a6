#!/usr/bin/env bash
# What happens to trials: stdout metrics, a failing exit code, a segfault, a kill by
# maxTrialDuration (EARLY_STOPPED) and by `nnictl trial kill` (USER_CANCELED); and a
# "reboot" (every process of the experiment killed at once, trials included): after
# `nnictl resume` the vanished trial runs again with the same parameters as attempt 2.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/behave.sh" "$WORK/exp/"
# (trialCommand and trialCodeDirectory given inside trainingService, as NNI allows)
cat > "$WORK/exp/config.yml" <<YML
searchSpace:
  mode: {_type: choice, _value: [ok, fail, crash, slow, nonl]}
trialConcurrency: 5
maxTrialDuration: 2s
tuner: {name: GridSearch}
trainingService:
  platform: local
  trialCommand: sh behave.sh
  trialCodeDirectory: .
YML
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
wait_status "$id" DONE 60
st() { sql "SELECT status || ' ' || coalesce(exit_code, '') || ' ' || coalesce(message, '') FROM trial t WHERE experiment_id='$id' AND parameters LIKE '%\"$1\"%'"; }
[[ "$(st ok)" == "SUCCEEDED 0 " ]] || fail "ok: $(st ok)"
[[ "$(st fail)" == "FAILED 3 exit code 3" ]] || fail "fail: $(st fail)"
[[ "$(st crash)" == FAILED*"signal 11"* ]] || fail "crash: $(st crash)"
[[ "$(st slow)" == EARLY_STOPPED* ]] || fail "slow: $(st slow)"
okid=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND parameters LIKE '%\"ok\"%'")
[ "$(sql "SELECT group_concat(type || ':' || value, ' ') FROM (SELECT * FROM metric WHERE trial_id='$okid' ORDER BY id)")" = "PERIODICAL:0.25 FINAL:0.5" ] || fail "stdout metrics"
[ "$(sql "SELECT final_metric FROM trial WHERE id='$okid'")" = 0.5 ] || fail "final metric from stdout"
grep -q "some other output" "$NNI_HOME/$id/trials/$okid/trial.stdout" || fail "stdout not kept"
failid=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND parameters LIKE '%\"fail\"%'")
grep -q "going to fail" "$NNI_HOME/$id/trials/$failid/trial.stderr" || fail "stderr not kept"
# the GridSearch space is exhausted and every trial ended: DONE (NNI would stay TUNER_NO_MORE_TRIAL)
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")" = 5 ] || fail "grid did not give 5 trials"
# a last stdout line without its newline is a line (NNI's readline returns it at EOF)
[[ "$(st nonl)" == "SUCCEEDED 0 " ]] || fail "nonl: $(st nonl)"
[ "$(sql "SELECT final_metric FROM trial WHERE experiment_id='$id' AND parameters LIKE '%\"nonl\"%'")" = 0.75 ] ||
    fail "the final metric on a last line without newline was lost"
pass "exit codes, signals, stdout metrics (a last line without newline too) and maxTrialDuration"
nnictl stop "$id" > /dev/null

# nnictl trial kill -> USER_CANCELED; and the REST errors for an unknown trial
write_config "$WORK/exp/slow.yml" searchSpace='{mode: {_type: choice, _value: [slow]}, k: {_type: randint, _value: [0, 3]}}' \
    trialCommand='sh behave.sh' trialConcurrency=3 maxTrialNumber= tuner='{name: GridSearch}'
# started EXP N: waits (15 s at most) until N trials of EXP wrote their "started" file
n_started() { [ "$(ls "$NNI_HOME/$1"/trials/*/started 2>/dev/null | wc -l)" = "$2" ]; }
started() { wait_until 15 n_started "$1" "$2" || fail "$2 trials of $1 did not start"; }
nnictl create --config "$WORK/exp/slow.yml" --port "$port" > "$WORK/create2.out"
id2=$(exp_id_of "$WORK/create2.out")
started "$id2" 3
victim=$(sql "SELECT id FROM trial WHERE experiment_id='$id2' ORDER BY sequence LIMIT 1")
nnictl trial kill "$id2" --trial_id "$victim" > /dev/null
wait_sql "SELECT status FROM trial WHERE id='$victim'" USER_CANCELED 10 "trial kill"
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "http://127.0.0.1:$port/api/v1/nni/trial-jobs/NoSuch")
[ "$code" = 404 ] || fail "DELETE unknown trial gave $code"
pass "nnictl trial kill"

# "reboot": kill -9 the api, the worker, the supervisors and the trials at once
pids=$(our_pids)
kill -9 $pids 2>/dev/null || true
none_left() { [ -z "$(our_pids)" ]; }
wait_until 5 none_left || fail "processes survived the simulated reboot: $(our_pids | tr '\n' ' ')"
nnictl resume "$id2" --port "$port" > /dev/null
wait_until 15 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND attempt = 2 AND status = 'RUNNING'" 2 ||
    { sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id2'"; fail "vanished trials were not retried"; }
# the retry has the same parameters and its own directory; the first attempt's is kept aside
for t in $(sql "SELECT id FROM trial WHERE experiment_id='$id2' AND attempt = 2"); do
    [ -d "$NNI_HOME/$id2/trials/$t.attempt1" ] || fail "attempt 1 dir of $t not kept"
    cmp -s <(sed 's/"parameter_source":"[a-z]*",//' "$NNI_HOME/$id2/trials/$t/parameter.cfg") \
           <(sed 's/"parameter_source":"[a-z]*",//' "$NNI_HOME/$id2/trials/$t.attempt1/parameter.cfg") ||
        fail "attempt 2 of $t has other parameters"
done
[ "$(sql "SELECT status FROM trial WHERE id='$victim'")" = USER_CANCELED ] || fail "a final state changed on resume"
pass "after a reboot, vanished trials run again with the same parameters"
nnictl stop "$id2" > /dev/null
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND (status = 'RUNNING' OR lease_owner IS NOT NULL)")" = 0 ] || fail "stop left trials"

# a kill reaches a local trial as SIGINT, as under NNI 3: a Python trial sees
# KeyboardInterrupt and can still save its work (and report); one that ignores SIGINT
# and SIGTERM is ended by the SIGKILL 5 s later
cp "$TRIALQ_SRC/tests/e2e/trials/interrupt.py" "$WORK/exp/"
write_config "$WORK/exp/interrupt.yml" searchSpace='{mode: {_type: choice, _value: [graceful, stubborn]}}' \
    trialCommand='python3 interrupt.py' trialConcurrency=2 maxTrialNumber= tuner='{name: GridSearch}'
nnictl create --config "$WORK/exp/interrupt.yml" --port "$port" > "$WORK/create3.out"
id3=$(exp_id_of "$WORK/create3.out")
started "$id3" 2
tid() { sql "SELECT id FROM trial WHERE experiment_id='$id3' AND parameters LIKE '%\"$1\"%'"; }
graceful=$(tid graceful) stubborn=$(tid stubborn)
t0=$(date +%s%N)
nnictl trial kill "$id3" --trial_id "$graceful" > /dev/null
nnictl trial kill "$id3" --trial_id "$stubborn" > /dev/null
ended() { [ "$(sql "SELECT status FROM trial WHERE id='$1'")" = USER_CANCELED ]; }
WAIT_STEP=0.05 wait_until 5 ended "$graceful" || fail "the graceful trial did not end on its kill"
grep -q KeyboardInterrupt "$NNI_HOME/$id3/trials/$graceful/interrupted" 2>/dev/null ||
    fail "the killed Python trial saw no KeyboardInterrupt: $(cat "$NNI_HOME/$id3/trials/$graceful/trial.stderr")"
[ "$(sql "SELECT group_concat(type || ':' || value) FROM metric WHERE trial_id='$graceful'")" = PERIODICAL:0.5 ] ||
    fail "what the interrupted trial reported was lost"
ended "$stubborn" && fail "a trial ignoring SIGINT and SIGTERM ended before the SIGKILL"
WAIT_STEP=0.05 wait_until 10 ended "$stubborn" || fail "the stubborn trial was not ended by SIGKILL"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -ge 4500 ] || fail "the stubborn trial ended after $ms ms, before the 5 s grace"
# the signal that ended each, as the supervisor recorded it (.nni/state: exit code, end,
# signal, attempt, stopped); the interrupted Python re-raised KeyboardInterrupt
sig() { cut -d' ' -f3,5 "$NNI_HOME/$id3/trials/$1/.nni/state"; }
[ "$(sig "$graceful")" = "2 1" ] || fail "graceful: signal, stopped = $(sig "$graceful")"
[ "$(sig "$stubborn")" = "9 1" ] || fail "stubborn: signal, stopped = $(sig "$stubborn")"
pass "a kill is SIGINT (KeyboardInterrupt, its report kept), SIGKILL after 5 s ($ms ms)"
nnictl stop "$id3" > /dev/null
assert_no_leftovers
echo "25-trial-lifecycle: passed"
