#!/usr/bin/env bash
# Hybrid mode (trainingService as a list): one experiment over local + openpai. Each
# listed platform runs its own worker; the trials are taken by both (an equal share of
# trialConcurrency each), the platform is recorded per trial and shown by nnictl and
# the REST API; a trial whose OpenPAI job is lost is queued again for any platform.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/openpai.sh"

export TRIAL_STEPS=2 TRIAL_SLEEP=0.4
pai_start_server
port=$(free_port)
pai_experiment "$WORK/exp" 4 14 21
# the openpai entry of pai_experiment becomes the second item of a list
"$PY" - "$WORK/exp/config.yml" <<'PY'
import sys, yaml
p = sys.argv[1]
c = yaml.safe_load(open(p))
c["trainingService"] = [{"platform": "local"}, c["trainingService"]]
open(p, "w").write(yaml.safe_dump(c, sort_keys=False))
PY

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
[ "$(sql "SELECT platform FROM experiment WHERE id='$id'")" = hybrid ] || fail "experiment platform is not hybrid"
wait_until 30 sql_is "SELECT group_concat(role, ' ') FROM (SELECT DISTINCT role FROM process WHERE experiment_id='$id'
                 AND role LIKE 'worker:%' AND ended_at IS NULL ORDER BY role)" "worker:local worker:openpai" ||
    fail "workers: '$SQL_GOT'"

# lose the first OpenPAI job while it runs: the trial goes back to the queue for any platform
lost=
openpai_runs() {
    lost=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND platform='openpai' AND status='RUNNING' ORDER BY sequence LIMIT 1")
    [ -n "$lost" ] && [ -f "$PAI_LOCAL/$id/$lost/.nni/submitted" ]
}
wait_until 60 openpai_runs || fail "no trial ran on openpai with its job submitted (running: '$lost')"
curl -sf -X POST "$PAI_URL/_test/forget/nni_exp_${id}_trial_${lost}" > /dev/null
wait_status "$id" DONE 180
pass "hybrid experiment reached DONE"

[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 14 ] ||
    { sql "SELECT id, status, platform, attempt, message FROM trial WHERE experiment_id='$id'"; fail "not 14 SUCCEEDED"; }
nl=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND platform='local'")
np=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND platform='openpai'")
[ $((nl + np)) = 14 ] || fail "platforms: $nl local + $np openpai"
[ "$nl" -ge 3 ] && [ "$np" -ge 3 ] || fail "trials not spread: $nl local, $np openpai"
pass "$nl trials ran on local, $np on openpai"

[[ "$(sql "SELECT attempt || ' ' || message FROM trial WHERE id='$lost'")" == "2 "* ]] ||
    fail "lost trial: $(sql "SELECT attempt, platform, message FROM trial WHERE id='$lost'")"
grep -qs "retry as attempt 2" <<< "$(sql "SELECT reason FROM event WHERE trial_id='$lost'")" || fail "no requeue event"
# concurrency held across both workers
maxrun=$(sql "WITH ev AS (SELECT time, CASE WHEN to_state='RUNNING' THEN 1 ELSE -1 END d FROM event
              WHERE experiment_id='$id' AND entity='trial' AND from_state != to_state
              AND (to_state='RUNNING' OR from_state='RUNNING'))
              SELECT max(c) FROM (SELECT sum(d) OVER (ORDER BY time, d) c FROM ev)")
[ "$maxrun" -le 4 ] || fail "ran $maxrun trials at once with concurrency 4"
# each platform's metrics as its trials wrote them; one job per openpai trial (+1 lost)
pai_assert_metrics "$id"
pj=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND platform='openpai'")
lostp=$(sql "SELECT platform FROM trial WHERE id='$lost'")
want=$((pj + 1))   # the lost first attempt was a job too, wherever attempt 2 ran
[ "$(pai_stat created)" = "$want" ] || fail "$(pai_stat created) jobs for $pj openpai trials (lost one now on $lostp)"
pass "lost trial retried (now on $lostp); concurrency held ($maxrun); metrics complete"

nnictl trial ls "$id" > "$WORK/ls.json"
"$PY" -c "
import json; d = json.load(open('$WORK/ls.json'))
assert {t['platform'] for t in d} == {'local', 'openpai'}, d
assert sum(t['platform'] == 'openpai' for t in d) == $np, d"
curl -sf "http://127.0.0.1:$port/api/v1/nni/trial-jobs" |
    "$PY" -c "import json,sys; d=json.load(sys.stdin); assert sum(t['platform']=='local' for t in d)==$nl, d"
pass "platform per trial in nnictl trial ls and the REST API"

nnictl stop "$id" > /dev/null

# the manager dies while trials run on both platforms: nnictl stop ends them through a
# draining worker of each platform (local: its supervisor; openpai: STOP)
port2=$(free_port)
sed -e 's/^trialCommand: .*/trialCommand: sleep 60/' -e 's/^maxTrialNumber: .*/maxTrialNumber: 4/' \
    "$WORK/exp/config.yml" > "$WORK/exp/long.yml"
nnictl create --config "$WORK/exp/long.yml" --port "$port2" > "$WORK/create2.out" 2>&1 ||
    { cat "$WORK/create2.out"; fail "create failed"; }
id2=$(exp_id_of "$WORK/create2.out")
wait_sql "SELECT count(DISTINCT platform) FROM trial WHERE experiment_id='$id2' AND status='RUNNING'" 2 60 \
    "trials do not run on both platforms"
stops=$(pai_stat stops)
for p in $(pgrep -f "trialq worker --platform [a-z]* --experiment $id2" || true) $(sql "SELECT api_pid FROM experiment WHERE id='$id2'"); do
    kill -9 "$p" 2>/dev/null || true
done
nnictl stop "$id2" > "$WORK/stop2.out" 2>&1 || { cat "$WORK/stop2.out"; fail "stop failed"; }
left=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status IN ('RUNNING','WAITING') AND lease_owner IS NOT NULL")
[ "$left" = 0 ] || { sql "SELECT id, platform, status FROM trial WHERE experiment_id='$id2'"; fail "$left trials left running"; }
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status='USER_CANCELED' AND platform='openpai'")" -ge 1 ] ||
    fail "no openpai trial was cancelled"
[ "$(pai_stat stops)" -gt "$stops" ] || fail "no STOP reached the server"
pai_running() { pai_stats | grep -q '"RUNNING"'; }
wait_until 10 not pai_running || fail "jobs still RUNNING on the server"
pass "manager killed: nnictl stop ended the trials of both platforms"
assert_no_leftovers
echo "84-hybrid-local-openpai: passed"
