#!/usr/bin/env bash
# DLTS crash safety: two submissions are handled by the dashboard but their answers are
# lost (the worker finds those jobs by name in the team's job list instead of creating
# them again); the dlts worker is killed with SIGKILL while jobs run (the api restarts
# it), then the whole manager (api + worker) is, and `nnictl resume` re-attaches to the
# jobs (by the jobId on the shared filesystem, or by name). Every trial ran exactly once:
# one job per trial on the server, every trial SUCCEEDED in its first attempt, and the
# metric rows are exactly what the trials wrote.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/dlts.sh"

export TRIAL_STEPS=3 TRIAL_SLEEP=0.4   # the jobs inherit these from the server
dlts_start_server
port=$(free_port)
dlts_experiment "$WORK/exp" 4 16 5
# the first two jobs are created, and their answers dropped
dlts_fail '{"mode": "drop_after", "action": "submit", "count": 2}'

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
crash_and_resume "$id" dlts "$port" 16
# no duplicate job: one job per trial name on the server, and each trial's recorded jobId is it
[ "$(dlts_stat 's["created"]')" = 16 ] ||
    { dlts_stat '"\n".join(sorted("%s %s %s" % (j["jobName"], i, j["jobStatus"]) for i, j in s["jobs"].items()))'
      fail "the server created $(dlts_stat 's["created"]') jobs for 16 trials"; }
dlts_stats | "$PY" -c "
import json, sys
s = json.load(sys.stdin)
names = [j['jobName'] for j in s['jobs'].values()]
assert len(names) == len(set(names)) == 16, names
" || fail "a job name was created twice"
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    jid=$(cat "$DLTS_LOCAL/$id/$tid/.nni/jobid") || fail "trial $tid: no jobid"
    [ "$(dlts_stat "s['jobs']['$jid']['jobName']")" = "nni_exp_${id}_trial_${tid}" ] || fail "trial $tid: job $jid is not its job"
done
grep -qs "re-attached to DLTS job" "$NNI_HOME/$id"/log/*.log || fail "no re-attach by name logged"
assert_written_metrics "$id"
pass "16 jobs, one per trial (2 lost answers found by name); no metric lost or doubled"

nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "86b-dlts-resume: passed"
