#!/usr/bin/env bash
# OpenPAI: 12 trials at concurrency 4 through the OpenPAI test server run to DONE, each
# as one PAI job named nni_exp_<exp>_trial_<trial> submitted once as a job protocol v2
# YAML; the code directory is shipped once to the storage honouring .nniignore; the
# metrics come back over the shared storage, exactly as the trials wrote them. A job
# protocol of the user's own (openpaiConfigFile) is kept and its commands wrapped; one
# without task roles is refused at create.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/openpai.sh"

pai_start_server
port=$(free_port)
pai_experiment "$WORK/exp" 4 12 11
# what .nniignore names is not shipped
mkdir -p "$WORK/exp/data" "$WORK/exp/sub"
echo big > "$WORK/exp/data/blob.bin"
echo keep > "$WORK/exp/sub/keep.txt"
echo drop > "$WORK/exp/sub/drop.tmp"
printf 'data/\n*.tmp\n' > "$WORK/exp/.nniignore"

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || { cat "$WORK/create.out"; fail "no experiment id"; }

wait_status "$id" DONE 180
pass "experiment reached DONE"

[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")" = 12 ] || fail "not 12 trials"
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND platform='openpai'")
[ "$ok" = 12 ] || { sql "SELECT id, status, platform, message FROM trial WHERE experiment_id='$id'"; fail "$ok of 12 SUCCEEDED on openpai"; }
pass "12 trials SUCCEEDED on openpai"

# one job per trial, each submitted once, named as NNI names them
[ "$(pai_stat created)" = 12 ] || fail "the server created $(pai_stat created) jobs, not 12"
[ "$(pai_stat posts)" = 12 ] || fail "$(pai_stat posts) submissions for 12 trials"
[ "$(pai_stat conflicts)" = 0 ] || fail "duplicate submissions"
# status from one list call per interval: a job's own GET only at its submit (and to
# confirm one missing from the list)
gets=$(pai_stat gets) lists=$(pai_stat lists)
[ "$lists" -ge 2 ] && [ "$gets" -le $((12 + lists / 4)) ] || fail "status calls: $lists lists, $gets job GETs"
pass "status from $lists list calls; $gets GETs of single jobs (12 of them at submit)"
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    job=$(sql "SELECT job_id FROM trial WHERE id='$tid'")
    [ "$job" = "nni_exp_${id}_trial_${tid}" ] || fail "trial $tid has job '$job'"
    [ "$(curl -sf "$PAI_URL/rest-server/api/v2/jobs/$PAI_USER~$job" -H "Authorization: Bearer $PAI_TOKEN" |
         "$PY" -c 'import json,sys; print(json.load(sys.stdin)["jobStatus"]["state"])')" = SUCCEEDED ] ||
        fail "job $job is not SUCCEEDED on the server"
done
pass "12 jobs nni_exp_<exp>_trial_<trial>, each submitted once"

# the protocol NNI generates (spec §2.3)
job=$(sql "SELECT job_id FROM trial WHERE experiment_id='$id' LIMIT 1")
curl -sf "$PAI_URL/_test/job/$job" > "$WORK/job.json"
"$PY" - "$WORK/job.json" "$job" "$id" "$PAI_CONT" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
p, name, exp, cont = j["protocol"], sys.argv[2], sys.argv[3], sys.argv[4]
assert p["protocolVersion"] == 2 and p["name"] == name and p["type"] == "job" and p["jobRetryCount"] == 0, p
assert p["prerequisites"] == [{"type": "dockerimage", "uri": "example/nni:test", "name": "docker_image_0"}], p
r = p["taskRoles"]["taskrole"]
assert r["instances"] == 1 and r["taskRetryCount"] == 0 and r["dockerImage"] == "docker_image_0", r
assert r["completion"] == {"minFailedInstances": 1, "minSucceededInstances": -1}, r
assert r["resourcePerInstance"] == {"gpu": 0, "cpu": 2, "memoryMB": 1536}, r
assert len(r["commands"]) == 1, r
cmd = r["commands"][0]
tid = name.rsplit("_", 1)[1]
for want in ("NNI_PLATFORM=pai", "NNI_SYS_DIR='%s/%s/%s'" % (cont, exp, tid), "NNI_TRIAL_JOB_ID='%s'" % tid,
             "NNI_EXP_ID='%s'" % exp, "MULTI_PHASE=false", "NNI_CODE_DIR='%s/%s/nni-code'" % (cont, exp),
             "'sh metrics.sh'"):
    assert want in cmd, (want, cmd)
assert p["extras"] == {"storages": [{"name": "confignfs"}], "submitFrom": "submit-job-v2"}, p
assert p["defaults"] == {"virtualCluster": "vc1"}, p
print("job protocol ok")
PY

# the code was shipped once, without what .nniignore names
code="$PAI_LOCAL/$id/nni-code"
[ -f "$code/metrics.sh" ] && [ -f "$code/sub/keep.txt" ] || fail "code not shipped to $code"
[ ! -e "$code/data" ] && [ ! -e "$code/sub/drop.tmp" ] || fail ".nniignore not honoured: $(ls -R "$code")"
# the experiment's config (beside the code, with the OpenPAI token) stays here
[ -f "$WORK/exp/config.yml" ] && [ ! -e "$code/config.yml" ] || fail "the config was shipped to the storage"
[ "$(sql "SELECT config_file FROM experiment WHERE id='$id'")" = "$(realpath "$WORK/exp/config.yml")" ] || fail "config_file"
pass "code shipped to the storage, .nniignore honoured, the config left out"

# metrics: the rows are what the trials wrote on the storage; parameter.cfg per trial
pai_assert_metrics "$id"
for dir in $(pai_trial_dirs "$id"); do
    tid=$(basename "$dir")
    x=$(sed -n 's/.*"x":\([0-9]*\).*/\1/p' "$dir/parameter.cfg")
    fm=$(sql "SELECT final_metric FROM trial WHERE id='$tid'")
    [ "${fm%.0}" = "$x" ] || fail "final metric of $tid is $fm, parameter x is $x"
    [ "$(sql "SELECT trial_dir FROM trial WHERE id='$tid'")" = "$dir" ] || fail "trial dir of $tid"
done
pass "metric rows equal what the trials wrote; parameter.cfg per trial"

# the platform per trial in nnictl and the REST API
nnictl trial ls "$id" > "$WORK/ls.json"
"$PY" -c "import json; d=json.load(open('$WORK/ls.json')); assert len(d)==12 and all(t['platform']=='openpai' for t in d), d"
curl -sf "http://127.0.0.1:$port/api/v1/nni/trial-jobs" |
    "$PY" -c "import json,sys; d=json.load(sys.stdin); assert {t['platform'] for t in d}=={'openpai'}, d"
pass "platform shown by nnictl trial ls and the REST API"

nnictl stop "$id" > /dev/null

# a job protocol of the user's own (openpaiConfigFile): kept, renamed, each task role's
# commands wrapped into one NNI command
pai_experiment "$WORK/exp2" 2 2 12
cat > "$WORK/exp2/job.yaml" <<'YML'
protocolVersion: 2
name: whatever
type: job
prerequisites:
  - {type: dockerimage, uri: "custom/image:1", name: img}
parameters: {epochs: 3}
taskRoles:
  main:
    instances: 1
    dockerImage: img
    resourcePerInstance: {cpu: 3, memoryMB: 4096, gpu: 0}
    commands:
      - echo "prepared $PAI_JOB_NAME" > prepared.txt
      - sh metrics.sh
YML
echo "  openpaiConfigFile: job.yaml" >> "$WORK/exp2/config.yml"
nnictl create --config "$WORK/exp2/config.yml" --port "$port" > "$WORK/create2.out" 2>&1 ||
    { cat "$WORK/create2.out"; fail "create with openpaiConfigFile failed"; }
id2=$(exp_id_of "$WORK/create2.out")
wait_status "$id2" DONE 120
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status='SUCCEEDED'")" = 2 ] || fail "openpaiConfigFile trials"
job=$(sql "SELECT job_id FROM trial WHERE experiment_id='$id2' LIMIT 1")
curl -sf "$PAI_URL/_test/job/$job" | "$PY" -c "
import json, sys
p = json.load(sys.stdin)['protocol']
assert p['name'] == '$job' and p['parameters'] == {'epochs': 3}, p
assert p['prerequisites'] == [{'type': 'dockerimage', 'uri': 'custom/image:1', 'name': 'img'}], p
r = p['taskRoles']['main']
assert r['resourcePerInstance'] == {'cpu': 3, 'memoryMB': 4096, 'gpu': 0} and len(r['commands']) == 1, r
assert 'NNI_PLATFORM=pai' in r['commands'][0] and '> prepared.txt && sh metrics.sh' in r['commands'][0], r
" || fail "the user's protocol was not kept and wrapped"
tid=$(sql "SELECT id FROM trial WHERE job_id='$job'")
grep -q "prepared $job" "$PAI_LOCAL/$id2/$tid/code/prepared.txt" || fail "the role's first command did not run"
pai_assert_metrics "$id2"
pass "openpaiConfigFile: the user's protocol kept, its commands wrapped"
nnictl stop "$id2" > /dev/null

# a protocol without task roles is refused at create, naming the file
printf 'protocolVersion: 2\nname: x\n' > "$WORK/exp2/job.yaml"
if nnictl create --config "$WORK/exp2/config.yml" --port "$port" > "$WORK/create3.out" 2>&1; then
    fail "a protocol without taskRoles was accepted"
fi
grep -q "openpaiConfigFile.*job.yaml: taskRoles must be a mapping" "$WORK/create3.out" ||
    { cat "$WORK/create3.out"; fail "unclear error for a protocol without taskRoles"; }
pass "a protocol without taskRoles: $(head -n1 "$WORK/create3.out")"
assert_no_leftovers
echo "80-openpai-experiment: passed"
