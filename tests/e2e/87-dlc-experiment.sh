#!/usr/bin/env bash
# PAI-DLC: 12 trials at concurrency 4 through the DLC test server (which checks every
# request's signature V3) run to DONE, each as one DLC job named
# nni_exp_<exp>_trial_<trial>, created once with the job spec of the config, the NAS
# data source mounted where the config says; the metrics come back over the NAS exactly
# as the trials wrote them. A job stopped on DLC (the console) ends its trial
# SYS_CANCELED; nnictl stop stops the jobs that still run.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/dlc.sh"

dlc_start_server --pod-banner "pod {PodId} of DLC job {JobId} starting"
export TRIALQ_DLC_LIST_PAGE=5 # the batched poll's ListJobs comes in pages
port=$(free_port)
dlc_experiment "$WORK/exp" 4 12 11

dlc_create "$WORK/exp" "$port"
id=$DLC_ID

wait_status "$id" DONE 180
pass "experiment reached DONE"

[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")" = 12 ] || fail "not 12 trials"
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND platform='dlc'")
[ "$ok" = 12 ] || { sql "SELECT id, status, platform, message FROM trial WHERE experiment_id='$id'"; fail "$ok of 12 SUCCEEDED on dlc"; }
pass "12 trials SUCCEEDED on dlc"

# one job per trial, each created once, every request signed and accepted
[ "$(dlc_stat "s['created']")" = 12 ] || fail "the server created $(dlc_stat "s['created']") jobs, not 12"
[ "$(dlc_stat "s['actions'].get('CreateJob', 0)")" = 12 ] || fail "CreateJob calls: $(dlc_stat "s['actions']")"
[ "$(dlc_stat "s['refused']")" = "{}" ] || fail "the server refused requests: $(dlc_stat "s['refused']")"
dlc_stats > "$WORK/stats.json"
# status came from paged ListJobs of the experiment's jobs: GetJob only once per trial
# at its end (for its pods' logs) and to confirm a job the listing lacks
"$PY" - "$WORK/stats.json" <<'PY' || fail "status calls: see above"
import json, sys
a = json.load(open(sys.argv[1]))['actions']
print('status calls: ListJobs %d, GetJob %d' % (a.get('ListJobs', 0), a.get('GetJob', 0)), file=sys.stderr)
sys.exit(a.get('GetJob', 0) - 12 > a.get('ListJobs', 0) // 4)
PY
pass "status from ListJobs of the experiment ($(dlc_stat "s['actions'].get('ListJobs', 0)") calls), GetJob $(dlc_stat "s['actions'].get('GetJob', 0)") times"
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    job=$(sql "SELECT job_id FROM trial WHERE id='$tid'")
    [ "$job" = "nni_exp_${id}_trial_${tid}" ] || fail "trial $tid has job '$job'"
    dir=$(sql "SELECT trial_dir FROM trial WHERE id='$tid'")
    [ "$dir" = "$DLC_NAS/$id/$tid" ] || fail "trial dir of $tid is $dir"
    jid=$(cat "$dir/.nni/submitted")
    "$PY" - "$WORK/stats.json" "$jid" "$job" <<'PY' || fail "job $jid of trial $tid"
import json, sys
s, jid, name = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
j = s["jobs"][jid]
assert j == {"DisplayName": name, "Status": "Succeeded"}, j
assert sum(1 for x in s["jobs"].values() if x["DisplayName"] == name) == 1, name
PY
done
pass "12 DLC jobs nni_exp_<exp>_trial_<trial>, one each, their JobIds recorded on the NAS"

# the CreateJob body
job=$(sql "SELECT job_id FROM trial WHERE experiment_id='$id' LIMIT 1")
tid=$(sql "SELECT id FROM trial WHERE job_id='$job'")
curl -sf "$DLC_URL/_test/job/$(cat "$DLC_NAS/$id/$tid/.nni/submitted")" > "$WORK/job.json"
"$PY" - "$WORK/job.json" "$job" "$id" "$DLC_CONT" "$DLC_WS" "$tid" <<'PY'
import json, sys
b = json.loads(json.load(open(sys.argv[1]))["body"])
name, exp, cont, ws, tid = sys.argv[2:7]
assert b["DisplayName"] == name and b["JobType"] == "PyTorchJob" and b["WorkspaceId"] == ws, b
assert b["JobSpecs"] == [{"Type": "Worker", "Image": "example/nni:test", "PodCount": 1,
                          "EcsSpec": "ecs.c6.large"}], b["JobSpecs"]
assert b["DataSources"] == [{"DataSourceId": "d-nas1", "MountPath": cont}], b["DataSources"]
cmd = b["UserCommand"]
for want in ("NNI_PLATFORM=dlc", "NNI_SYS_DIR='%s/%s/%s'" % (cont, exp, tid), "NNI_TRIAL_JOB_ID='%s'" % tid,
             "NNI_EXP_ID='%s'" % exp, "NNI_CODE_DIR='%s/%s/nni-code'" % (cont, exp), "'sh metrics.sh'"):
    assert want in cmd, (want, cmd)
print("CreateJob body ok")
PY
pass "CreateJob: job spec, data source and the trial's command as configured"

# metrics: the rows are what the trials wrote on the NAS
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    dir=$(sql "SELECT trial_dir FROM trial WHERE id='$tid'")
    x=$(sed -n 's/.*"x":\([0-9]*\).*/\1/p' "$dir/parameter.cfg")
    fm=$(sql "SELECT final_metric FROM trial WHERE id='$tid'")
    [ "${fm%.0}" = "$x" ] || fail "final metric of $tid is $fm, parameter x is $x"
done
assert_dir_metrics "$id"
pass "metric rows equal what the trials wrote on the NAS"

nnictl trial ls "$id" > "$WORK/ls.json"
"$PY" -c "import json; d=json.load(open('$WORK/ls.json')); assert len(d)==12 and all(t['platform']=='dlc' for t in d), d"
pass "platform shown by nnictl trial ls"

# each trial's tracking URL (the console's page of its job) in GET /trial-jobs, nnictl trial
# ls and nnictl log trial; the pods' logs (GetPodLogs) in dlc-pods.log, served as a trial file
curl -sf "http://127.0.0.1:$port/api/v1/nni/trial-jobs" > "$WORK/jobs.json"
nnictl log trial "$id" > "$WORK/logtrial.out"
"$PY" - "$WORK/jobs.json" "$WORK/ls.json" "$WORK/logtrial.out" "$DLC_NAS/$id" "$DLC_WS" <<'PY' || fail "tracking URLs"
import json, sys
jobs, ls, logtrial, nas, ws = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), open(sys.argv[3]).read(), sys.argv[4], sys.argv[5]
urls = {t["trialJobId"]: t.get("url") for t in ls}
assert len(jobs) == 12
for t in jobs:
    tid = t["trialJobId"]
    jid = open("%s/%s/.nni/submitted" % (nas, tid)).read().strip()
    want = "https://pai-dlc.console.aliyun.com/#/jobs/detail?jobId=%s&regionId=cn-test&workspaceId=%s" % (jid, ws)
    assert t.get("url") == want and urls[tid] == want, (t.get("url"), urls[tid], want)
    assert "id:%s path:%s/%s url:%s\n" % (tid, nas, tid, want) in logtrial, (tid, logtrial)
PY
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    jid=$(cat "$DLC_NAS/$id/$tid/.nni/submitted")
    curl -sf "http://127.0.0.1:$port/api/v1/nni/trial-file/$tid/dlc-pods.log" > "$WORK/pods.log" || fail "no dlc-pods.log of $tid"
    grep -q "^==== pod .* ====\$" "$WORK/pods.log" && grep -q "^pod .* of DLC job $jid starting\$" "$WORK/pods.log" ||
        { cat "$WORK/pods.log"; fail "dlc-pods.log of $tid is not its job's pod log"; }
done
pass "tracking URLs (console page of each job) in GET /trial-jobs, trial ls, log trial; pod logs as trial files"
webui_setup
mkdir -p "$WORK/ui"
node "$UI/dlc.js" "http://127.0.0.1:$port/" "$DB" "$id" "$tid" "$WORK/ui" || fail "web UI: the trial's tracking URL and pod logs"
pass "web UI: the trial's Tracking URL link and its pods' log tab"
nnictl stop "$id" > /dev/null

# a job stopped on DLC (as in the console) ends its trial, and nnictl stop stops what runs
dlc_experiment "$WORK/exp2" 2 4 12
sed -i 's/^trialCommand: .*/trialCommand: sleep 300/' "$WORK/exp2/config.yml"
dlc_create "$WORK/exp2" "$port"
id2=$DLC_ID
running() { [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status='RUNNING'")" = 2 ]; }
wait_until 60 running || fail "2 trials do not run"
t1=$(sql "SELECT id FROM trial WHERE experiment_id='$id2' AND status='RUNNING' LIMIT 1")
curl -sf -X POST "$DLC_URL/_test/stop/$(cat "$DLC_NAS/$id2/$t1/.nni/submitted")" > /dev/null
ended() { [ "$(sql "SELECT status FROM trial WHERE id='$t1'")" = SYS_CANCELED ] ||
          [ "$(sql "SELECT status FROM trial WHERE id='$t1'")" = USER_CANCELED ]; }
wait_until 30 ended || fail "trial $t1 is $(sql "SELECT status FROM trial WHERE id='$t1'") after its job was stopped on DLC"
pass "a job stopped on DLC: trial $(sql "SELECT status FROM trial WHERE id='$t1'")"
nnictl stop "$id2" > /dev/null
live() { dlc_stat "sum(1 for j in s['jobs'].values() if j['Status'] in ('Creating','Queuing','Running'))"; }
stopped_all() { [ "$(live)" = 0 ]; }
wait_until 30 stopped_all || fail "jobs still live on DLC after nnictl stop: $(live)"
pass "nnictl stop: no job left running on DLC"
assert_no_leftovers
echo "87-dlc-experiment: passed"
