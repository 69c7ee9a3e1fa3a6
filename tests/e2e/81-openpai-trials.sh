#!/usr/bin/env bash
# OpenPAI trial lifecycle: stdout metrics, an unchanged Python trial (import nni) with
# the SDK shipped on the storage, a failing exit code, `nnictl trial kill` of a running
# job (PUT executionType STOP -> USER_CANCELED), a job stopped on the cluster by someone
# else (SYS_CANCELED), and a job PAI lost (retried as attempt 2 under its own job name).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/openpai.sh"

pai_start_server
port=$(free_port)
pai_experiment "$WORK/exp" 6 6 1
cp "$TRIALQ_SRC/tests/e2e/trials/behave.sh" "$WORK/exp/"
cat > "$WORK/exp/py_trial.py" <<'PY'
import nni
p = nni.get_next_parameter()
nni.report_intermediate_result(1.25)
nni.report_final_result(2.5)
PY
# behave.sh's modes, plus: py (the Python trial), admin and lost (wait to be stopped /
# lost; a second attempt of "lost" succeeds)
cat > "$WORK/exp/run.sh" <<'SH'
mode=$(sed -n 's/.*"mode":"\([a-z]*\)".*/\1/p' "$NNI_SYS_DIR/parameter.cfg")
case $mode in
py) exec python3 py_trial.py ;;
admin) echo started > "$NNI_SYS_DIR/started"; sleep 60 ;;
lost) case $NNI_SYS_DIR in *.attempt2) exec sh behave.sh ;; esac
      echo started > "$NNI_SYS_DIR/started"; sleep 60 ;;
*) exec sh behave.sh ;;
esac
SH
sed -i -e 's/^trialCommand: .*/trialCommand: sh run.sh/' -e '/^  x: /d' "$WORK/exp/config.yml"
sed -i 's/^searchSpace:/searchSpace:\n  mode: {_type: choice, _value: [ok, fail, py, slow, admin, lost]}/' "$WORK/exp/config.yml"
sed -i 's/^tuner: .*/tuner: {name: GridSearch}/' "$WORK/exp/config.yml"

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
tid_of() { sql "SELECT id FROM trial WHERE experiment_id='$id' AND parameters LIKE '%\"$1\"%'"; }
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id'" 6 30 "a trial for each of the 6 modes"
slow=$(tid_of slow) admin=$(tid_of admin) lost=$(tid_of lost)
for t in "$slow" "$admin" "$lost"; do
    wait_file "$PAI_LOCAL/$id/$t/started" 60 "trial $t did not start on the server"
done
[ "$(sql "SELECT status FROM trial WHERE id='$slow'")" = RUNNING ] || fail "slow trial not RUNNING"

nnictl trial kill "$id" --trial_id "$slow" > /dev/null   # our kill: STOP through the REST API
curl -sf -X POST "$PAI_URL/_test/stop/nni_exp_${id}_trial_${admin}" > /dev/null   # an administrator's
curl -sf -X POST "$PAI_URL/_test/forget/nni_exp_${id}_trial_${lost}" > /dev/null  # PAI lost the job
wait_status "$id" DONE 120
pass "experiment reached DONE"

st() { sql "SELECT status || ' ' || coalesce(exit_code, '') || ' ' || coalesce(message, '') FROM trial WHERE id='$(tid_of "$1")'"; }
[[ "$(st ok)" == "SUCCEEDED 0 " ]] || fail "ok: $(st ok)"
[[ "$(st fail)" == "FAILED 3 exit code 3" ]] || fail "fail: $(st fail)"
[[ "$(st py)" == "SUCCEEDED 0 " ]] || { cat "$PAI_LOCAL/$id/$(tid_of py)/trial.stderr"; fail "py: $(st py)"; }
[[ "$(st slow)" == USER_CANCELED* ]] || fail "slow: $(st slow)"
[[ "$(st admin)" == SYS_CANCELED* ]] || fail "admin: $(st admin)"
[[ "$(st lost)" == "SUCCEEDED 0 "* ]] || fail "lost: $(st lost)"
pass "statuses: SUCCEEDED, FAILED 3, USER_CANCELED, SYS_CANCELED, retried"

okid=$(tid_of ok) pyid=$(tid_of py) failid=$(tid_of fail)
[ "$(sql "SELECT group_concat(type || ':' || value, ' ') FROM (SELECT * FROM metric WHERE trial_id='$okid' ORDER BY id)")" = "PERIODICAL:0.25 FINAL:0.5" ] || fail "stdout metrics"
[ "$(sql "SELECT group_concat(type || ':' || value, ' ') FROM (SELECT * FROM metric WHERE trial_id='$pyid' ORDER BY id)")" = "PERIODICAL:1.25 FINAL:2.5" ] || fail "Python SDK metrics"
grep -q "some other output" "$PAI_LOCAL/$id/$okid/trial.stdout" || fail "stdout not on the storage"
grep -q "going to fail" "$PAI_LOCAL/$id/$failid/trial.stderr" || fail "stderr not on the storage"
pass "metrics over the storage (stdout lines, Python SDK)"

# the kill went to PAI as STOP and the job ended STOPPED there
[ "$(pai_stat stops)" -ge 1 ] || fail "no STOP reached the server"
curl -sf "$PAI_URL/_test/job/nni_exp_${id}_trial_${slow}" | grep -q '"state": "STOPPED"' || fail "killed job not STOPPED"
# the lost job: attempt 2, its own job name and dir; nothing else was resubmitted
[ "$(sql "SELECT attempt || ' ' || job_id FROM trial WHERE id='$lost'")" = "2 nni_exp_${id}_trial_${lost}_attempt2" ] ||
    fail "lost trial: $(sql "SELECT attempt, job_id, message FROM trial WHERE id='$lost'")"
[[ "$(sql "SELECT trial_dir FROM trial WHERE id='$lost'")" == *"/$lost.attempt2" ]] || fail "dir of attempt 2"
[ "$(pai_stat created)" = 7 ] && [ "$(pai_stat posts)" = 7 ] || fail "$(pai_stat created) jobs created, $(pai_stat posts) posts; want 7"
pass "kill -> STOP; a lost job retried as attempt 2; 7 jobs for 6 trials"

# nnictl stop also stops a job of the experiment that the database does not know
ghost=nni_exp_${id}_trial_ghost1
printf 'protocolVersion: 2\nname: %s\ntype: job\ntaskRoles:\n  taskrole:\n    instances: 1\n    commands: ["sleep 60"]\n' "$ghost" |
    curl -sf -X POST -H "Content-Type: text/yaml" -H "Authorization: Bearer $PAI_TOKEN" --data-binary @- \
        "$PAI_URL/rest-server/api/v2/jobs" > /dev/null || fail "cannot submit the ghost job"
wait_http "$PAI_URL/_test/job/$ghost" 10 '"state": "RUNNING"' "the ghost job does not run"
nnictl stop "$id" > /dev/null
wait_http "$PAI_URL/_test/job/$ghost" 10 '"state": "STOPPED"' "nnictl stop left job $ghost running"
pass "nnictl stop stopped a job the database did not know"
assert_no_leftovers
echo "81-openpai-trials: passed"
