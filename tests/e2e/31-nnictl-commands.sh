#!/usr/bin/env bash
# The nnictl commands beyond create/stop: update (the scheduler follows), top, log,
# webui url, config show, platform clean, trial rerun, experiment export/import with an
# export -> delete -> import round trip; and clear messages (never a hang) when the
# experiment is not running, its port does not answer, or the id is unknown.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
# n <command...>: nnictl with a deadline; stdout+stderr to $WORK/out, status in $rc
n() { rc=0; timeout 30 nnictl "$@" > "$WORK/out" 2>&1 || rc=$?; [ "$rc" != 124 ] || fail "nnictl $* hung"; }
has() { grep -q -- "$1" "$WORK/out" || { cat "$WORK/out" >&2; fail "expected '$1' from: nnictl ${*:2}"; }; }

mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/exp/"
# x = 2 fails (exit 3) so that there is something to rerun
cat > "$WORK/exp/trial.sh" <<'SH'
grep -q '"x":2[,}]' "$NNI_SYS_DIR/parameter.cfg" && { echo "x=2 fails" >&2; exit 3; }
exec sh metrics.sh
SH
write_config "$WORK/exp/grid.yml" experimentName=e2e-nnictl searchSpace='{x: {_type: choice, _value: [1, 2, 3, 4, 5, 6]}}' \
    maxTrialNumber=6 tuner='{name: GridSearch}'
export TRIAL_STEPS=3 TRIAL_SLEEP=0.3
nnictl create --config "$WORK/exp/grid.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")

# update concurrency 1 -> 3: three trials run at once
n update concurrency "$id" --value 3; has "Update concurrency success!"
# most trials seen running at once (start/end intervals): a trial may end between polls
overlap() {
    sql "SELECT coalesce(max(n), 0) FROM (SELECT (SELECT count(*) FROM trial u WHERE u.experiment_id = t.experiment_id
           AND u.start_time <= t.start_time AND (u.end_time IS NULL OR u.end_time > t.start_time)) AS n
         FROM trial t WHERE t.experiment_id='$1' AND t.start_time IS NOT NULL)"
}
overlap_3() { [ "$(overlap "$id")" -ge 3 ]; }
wait_until 30 overlap_3 || fail "after update concurrency 3: at most $(overlap "$id") trials ran at once"
n update duration "$id" --value 2h; has "Update duration success!"
[ "$(sql "SELECT max_exec_seconds FROM experiment WHERE id='$id'")" = 7200 ] || fail "duration not stored"
n update trialnum --value 6; has "Update trialnum success!"   # the only running experiment
n update concurrency "$id" --value 0; [ "$rc" != 0 ] || fail "concurrency 0 accepted"; has "must be a digit from 1 to 1000"
n update duration "$id" --value 10x; [ "$rc" != 0 ]; has "unit of time"
n update trialnum "$id"; [ "$rc" != 0 ]; has "required"
n update searchspace "$id" --filename "$WORK/none.json"; [ "$rc" != 0 ]; has "is not a valid file path"
n update concurrency nosuchid --value 2; [ "$rc" != 0 ]; has "Id not correct"
pass "update concurrency (3 trials run), duration, trialnum; bad values refused"

# top: one screen per interval; --once for scripts
n top --once; has "Id: $id"; has "trialId         startTime"
n top --time 0; [ "$rc" != 0 ]; has "positive integer"
# --foreground: the signal to nnictl alone, without the SIGCONT that timeout sends after
# it to the group otherwise: under ASan, a SIGCONT that comes while LeakSanitizer is
# attaching to the exiting process (ptrace) discards its SIGSTOP, and both wait for ever
rc=0; timeout --foreground -k 20 2.5 nnictl top --time 1 > "$WORK/top.out" 2>&1 || rc=$?
[ "$rc" = 124 ] || fail "top exited by itself ($rc)"
[ "$(grep -c "^Id: $id" "$WORK/top.out")" -ge 2 ] || fail "top did not redraw"
pass "top"

# --help (and -h alone) print a command's usage and exit 0; a group alone lists its
# commands; integer options take whole integers only (argparse's message)
n create --help; [ "$rc" = 0 ]; has "^usage: nnictl create --config FILE"
n trial ls -h; [ "$rc" = 0 ]; has "^usage: nnictl trial ls \[ID\] \[--head N | --tail N\]"
n log stdout "$id" --help; [ "$rc" = 0 ]; has "^usage: nnictl log stdout"
n experiment --help; [ "$rc" = 0 ]; has "^  nnictl experiment export"; has "^  nnictl experiment machines"
n update; [ "$rc" = 2 ]; has "nnictl update needs a command"; has "^  nnictl update trialnum"
n top --time 2s; [ "$rc" != 0 ]; has "argument --time: invalid int value: '2s'"
n trial ls "$id" --head 3x; [ "$rc" != 0 ]; has "argument --head: invalid int value: '3x'"
n create --config "$WORK/exp/grid.yml" --port 80x --dry-run; [ "$rc" != 0 ]; has "argument --port: invalid int value: '80x'"
n resume "$id" --port 70000; [ "$rc" != 0 ]; has "argument --port: 70000 is out of range (1 to 65535)"
n ss_gen -t "python3 x.py"; [ "$rc" = 2 ]; has "nnictl ss_gen is not supported by trialq: .*annotations"
n trainingservice list; [ "$rc" = 2 ]; has "nnictl trainingservice is not supported by trialq"; has "built in (local, remote, .*kubeflow, .*and hybrid lists of them)"
n nosuchcommand; [ "$rc" = 2 ]; has "unknown command: nosuchcommand"
pass "--help, group usage, strict integer options; NNI commands that do not apply say why"

n log stderr "$id" --tail 3; has "listening on"
[ "$(wc -l < "$WORK/out")" -le 3 ] || fail "log stderr --tail 3 printed $(wc -l < "$WORK/out") lines"
n log stdout "$id" --head 2; has "-----"
n log stderr "$id" -H 1; [ "$rc" = 0 ] && [ "$(wc -l < "$WORK/out")" = 1 ] || fail "log -H (NNI's short --head): $(cat "$WORK/out")"
n log stderr "$id" -T 2; [ "$rc" = 0 ] && [ "$(wc -l < "$WORK/out")" = 2 ] || fail "log -T: $(cat "$WORK/out")"
n log stderr "$id" --path; has "$NNI_HOME/$id/log/nnictl_stderr.log"
n log trial "$id"; has "All of trial log info:"; has "id:.* path:$NNI_HOME/$id/trials/"
t0=$(sql "SELECT id FROM trial WHERE experiment_id='$id' ORDER BY sequence LIMIT 1")
n log trial "$id" --trial_id "$t0"; has "id:$t0 path:$NNI_HOME/$id/trials/$t0"
n log trial "$id" --trial_id NoSuch; [ "$rc" != 0 ]; has "Trial id NoSuch not correct"
n webui url "$id"; has "Web UI url: http://127.0.0.1:$port"
n config show "$id"; has '    "trialConcurrency": 3'; has '"maxExperimentDuration": "7200s"'
n platform clean --config "$WORK/exp/grid.yml"; has "does not need to clean local platform"
n platform clean --config "$WORK/nothing.yml"; [ "$rc" != 0 ]; has "correct config path"
pass "log stdout/stderr/trial, webui url, config show, platform clean"

wait_status "$id" DONE 60
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='FAILED'")" = 1 ] || fail "x=2 did not fail"

# trial ls [--head|--tail], experiment show|status print exactly what NNI's nnictl
# prints for the same REST answers: its own code (nnictl_utils.py) is the oracle here
for args in "trial ls" "trial ls --head 2" "trial ls --tail 3" "experiment show" "experiment status"; do
    # shellcheck disable=SC2086
    n $args "$id"; [ "$rc" = 0 ] || { cat "$WORK/out"; fail "nnictl $args"; }
    $PY - "http://127.0.0.1:$port/api/v1/nni" "$args" "$WORK/out" <<'PY' || fail "nnictl $args differs from NNI's output"
import json, sys, urllib.request
from datetime import datetime, timezone
from functools import cmp_to_key
api, args, mine = sys.argv[1], sys.argv[2].split(), open(sys.argv[3]).read()
def get(route):
    return json.loads(urllib.request.urlopen(api + route, timeout=10).read())
def convert_time_stamp_to_date(content):
    for k in ("startTime", "endTime"):
        if content.get(k):
            content[k] = str(datetime.fromtimestamp(content[k] // 1000, timezone.utc).astimezone().strftime("%Y/%m/%d %H:%M:%S"))
    return content
def final_metric_data_cmp(lhs, rhs):
    metric_l = json.loads(json.loads(lhs["finalMetricData"][0]["data"]))
    metric_r = json.loads(json.loads(rhs["finalMetricData"][0]["data"]))
    if isinstance(metric_l, dict):
        return metric_l["default"] - metric_r["default"]
    return metric_l - metric_r
if args[:2] == ["trial", "ls"]:
    content = get("/trial-jobs")
    if "--head" in args:
        content = sorted(filter(lambda x: "finalMetricData" in x, content), key=cmp_to_key(final_metric_data_cmp), reverse=True)[:int(args[3])]
    elif "--tail" in args:
        content = sorted(filter(lambda x: "finalMetricData" in x, content), key=cmp_to_key(final_metric_data_cmp))[:int(args[3])]
    content = [convert_time_stamp_to_date(c) for c in content]
elif args[1] == "show":
    content = convert_time_stamp_to_date(get("/experiment"))
else:
    content = get("/check-status")
want = json.dumps(content, indent=4, sort_keys=True, separators=(",", ":")) + "\n"
if mine != want:
    sys.exit("--- NNI would print\n%s--- nnictl printed\n%s" % (want, mine))
PY
done
pass "trial ls [--head|--tail], experiment show|status: NNI's output byte for byte"

# rerun: trials like any other, within maxTrialNumber
failed=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='FAILED'")
ok=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' ORDER BY sequence LIMIT 1")
n trial rerun "$id" --failed; [ "$rc" != 0 ] || fail "rerun beyond maxTrialNumber accepted"; has "reach maxTrialNum"
n update trialnum "$id" --value 8; has "Update trialnum success!"
n trial rerun "$id" --failed; has "Trial $failed rerun as trial"
n trial rerun "$ok"; has "Trial $ok rerun as trial"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND parameter_source='rerun'")" = 2 ] || fail "not 2 reruns"
[ "$(sql "SELECT count(*) FROM trial r JOIN trial o ON o.parameters = r.parameters AND o.id IN ('$failed','$ok')
          WHERE r.experiment_id='$id' AND r.parameter_source='rerun'")" = 2 ] || fail "reruns have other parameters"
n trial rerun "$id" --trial_id "$ok"; [ "$rc" != 0 ]; has "reach maxTrialNum"
wait_status "$id" DONE 60
[ "$(sql "SELECT status FROM trial WHERE experiment_id='$id' AND parameter_source='rerun' AND parameters LIKE '%\"x\":2}%'")" = FAILED ] ||
    fail "the rerun of x=2 should fail again"
pass "trial rerun --failed / TRIAL: same parameters, counted against maxTrialNumber"

# export: json and csv, with intermediate results
n experiment export "$id" --type json --filename "$WORK/a.json"
n experiment export "$id" -t json -f "$WORK/ai.json" -i
n experiment export "$id" -t csv -f "$WORK/a.csv" -i
$PY - "$WORK/a.json" "$WORK/ai.json" "$WORK/a.csv" <<'PY' || fail "export content"
import csv, json, sys
a, ai = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert len(a) == 6 and all(set(r) == {"parameter", "value", "trialJobId"} for r in a), a
assert all(isinstance(r["value"], str) and json.loads(r["value"]) == r["parameter"]["x"] for r in a)
assert len(ai) == 6 and all(len(r["intermediate"]) == 3 and all(isinstance(v, str) for v in r["intermediate"]) for r in ai)
rows = list(csv.DictReader(open(sys.argv[3], newline="")))
assert len(rows) == 6 and {"intermediate", "x", "reward", "trialJobId"} <= set(rows[0]), rows[0]
assert all(float(r["reward"]) == float(r["x"]) and r["intermediate"].startswith("[") for r in rows)
PY
pass "experiment export json, json -i, csv -i"

# not running: clear messages, no hang
nnictl stop "$id" > /dev/null
n update concurrency "$id" --value 2; [ "$rc" != 0 ]; has "Experiment $id is not running"
n trial rerun "$id" --failed; [ "$rc" != 0 ]; has "not running"
n webui url "$id"; [ "$rc" != 0 ]; has "not running"
n experiment import "$id" --filename "$WORK/a.json"; [ "$rc" != 0 ]; has "not running"
n experiment export "$id" -t json -f "$WORK/again.json"   # export reads the database
cmp -s "$WORK/a.json" "$WORK/again.json" || fail "export of a stopped experiment differs"
# a long history streams out in pieces (256 kB each; before, an export of over 1 MB
# never ended): 12,000 more trials, those after 11,000 with a second parameter, which
# the CSV's header must still have, last (its columns are read in a first pass)
sql <<SQL
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 12000)
INSERT OR IGNORE INTO trial(id, experiment_id, sequence, parameter_id, parameters, status, platform, submit_time,
                  start_time, end_time, updated_at, final_metric, final_metric_json)
SELECT printf('y%04d', i), '$id', 100 + i, 100 + i, CASE WHEN i > 11000 THEN '{"x":' || i || ',"y":1}' ELSE '{"x":' || i || '}' END,
       'SUCCEEDED', 'local', 1, 2, 3, 3, i, i FROM n;
WITH RECURSIVE k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < 2)
INSERT INTO metric(trial_id, type, sequence, value, default_value, time)
SELECT t.id, 'PERIODICAL', j, j || '.5', j, 5 FROM trial t, k WHERE t.experiment_id = '$id' AND t.sequence > 100;
SQL
want=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND final_metric_json IS NOT NULL")
timeout 60 nnictl experiment export "$id" -t json -f "$WORK/long.json" -i || fail "export of a long history"
timeout 60 nnictl experiment export "$id" -t csv -f "$WORK/long.csv" || fail "csv export of a long history"
$PY - "$WORK/long.json" "$WORK/long.csv" "$want" "$WORK/a.json" <<'PY' || fail "long export content"
import csv, json, sys
got, want, short = json.load(open(sys.argv[1])), int(sys.argv[3]), json.load(open(sys.argv[4]))
assert len(got) == want > 12000, (len(got), want)
assert [{k: v for k, v in r.items() if k != "intermediate"} for r in got[:6]] == short
assert all(r["intermediate"] == ["0.5", "1.5", "2.5"] for r in got[6:]), got[6]
rows = list(csv.DictReader(open(sys.argv[2], newline="")))
# columns in order of first appearance, as NNI's DictWriter has them
assert len(rows) == want and list(rows[0]) == ["x", "reward", "trialJobId", "y"], list(rows[0])
assert rows[10].get("y") == "" and rows[-1]["y"] == "1" and rows[-1]["x"] == "12000", (rows[10], rows[-1])
PY
n experiment export "$id" -t csv -f "$WORK/no/such/dir.csv"; [ "$rc" = 1 ] || fail "export to no dir gave $rc"; has "cannot write"
pass "export of $want trials streams out whole (json -i, csv); a file it cannot write is an error"

# export -> delete -> import into a new experiment
nnictl experiment delete "$id" > /dev/null
[ "$(sql "SELECT count(*) FROM experiment WHERE id='$id'")" = 0 ] || fail "not deleted"
sed -e 's/maxTrialNumber: 6/maxTrialNumber: 30/' -e 's/trialConcurrency: 1/trialConcurrency: 1/' "$WORK/exp/grid.yml" > "$WORK/exp/grid2.yml"
export TRIAL_SLEEP=2
nnictl create --config "$WORK/exp/grid2.yml" --port "$port" > "$WORK/create2.out"
id2=$(exp_id_of "$WORK/create2.out")
n experiment import "$id2" --filename "$WORK/a.json"; has "Imported 6 record(s)"
curl -sf "http://127.0.0.1:$port/api/v1/nni/experiment/imported-data" > "$WORK/imported.json"
$PY -c "import json,sys; got=json.load(open('$WORK/imported.json')); want=json.load(open('$WORK/a.json')); sys.exit(not (len(got)==1 and json.loads(got[0])==want))" ||
    fail "imported-data differs from the export"
n experiment import "$id2" --filename "$WORK/none.json"; [ "$rc" != 0 ]; has "is not a valid file path"
echo '{"not": "a list"}' > "$WORK/bad.json"
n experiment import "$id2" --filename "$WORK/bad.json"; [ "$rc" != 0 ]; has "JSON array"
pass "export -> delete -> import round trip"

# the port does not answer: say so, quickly
real=$(sql "SELECT port FROM experiment WHERE id='$id2'")
sql "UPDATE experiment SET port = $(free_port) WHERE id='$id2'"
n update concurrency "$id2" --value 2; [ "$rc" != 0 ]; has "Restful server is not running"
n experiment import "$id2" --filename "$WORK/a.json"; [ "$rc" != 0 ]; has "Restful server is not running"
sql "UPDATE experiment SET port = $real WHERE id='$id2'"
n update searchspace "$id2" --filename <(echo '{"x": {"_type": "choice", "_value": [7, 8]}}'); has "Update searchSpace success!"
[ "$(sql "SELECT search_space FROM experiment WHERE id='$id2'")" = '{"x":{"_type":"choice","_value":[7,8]}}' ] || fail "search space not stored"
# a space the tuner refuses (GridSearch needs a parameter) changes nothing
code=$(curl -s -o "$WORK/body" -w '%{http_code}' -X PUT -d '{"params":{"searchSpace":{}}}' \
    "http://127.0.0.1:$port/api/v1/nni/experiment?update_type=SEARCH_SPACE")
[ "$code" = 400 ] || fail "an empty grid search space gave $code: $(cat "$WORK/body")"
[ "$(sql "SELECT search_space FROM experiment WHERE id='$id2'")" = '{"x":{"_type":"choice","_value":[7,8]}}' ] || fail "a refused space was stored"
n update concurrency "$id2" --value 2; has "Update concurrency success!"
pass "clear messages for a stopped experiment and a port that does not answer; update searchspace"

# the new space is searched from its first point (the grid does not go on at the index the
# old one reached), also when the api is killed right after the update: resumed, x=7 and
# x=8 each run once, with parameter ids that go on from the old space's
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND parameter_source='algorithm'")" -ge 2 ] ||
    fail "fewer than 2 trials before the update: the check below would prove nothing"
base=$(sql "SELECT space_index_base FROM experiment WHERE id='$id2'")
kill -9 "$(sql "SELECT api_pid FROM experiment WHERE id='$id2'")"
n resume "$id2" --port "$port"; [ "$rc" = 0 ] || { cat "$WORK/out"; fail "resume after kill -9"; }
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND parameters->>'x' IN (7, 8)" '>=2' 30 "trials of the new grid after resume"
[ "$(sql "SELECT group_concat(x, ',') FROM (SELECT parameters->>'x' AS x FROM trial WHERE experiment_id='$id2'
          AND parameters->>'x' IN (7, 8) ORDER BY sequence)")" = "7,8" ] ||
    fail "the new grid: $(sql "SELECT sequence, parameter_id, parameters FROM trial WHERE experiment_id='$id2'")"
[ "$(sql "SELECT group_concat(parameter_id, ',') FROM (SELECT parameter_id FROM trial WHERE experiment_id='$id2'
          AND parameters->>'x' IN (7, 8) ORDER BY sequence)")" = "$base,$((base + 1))" ] || fail "parameter ids of the new space"
[ "$(sql "SELECT count(DISTINCT parameter_id) = count(*) FROM trial WHERE experiment_id='$id2' AND parameter_source='algorithm'")" = 1 ] ||
    fail "a parameter id was given twice"
pass "update searchspace: the new grid from its first point, across kill -9 of the api and resume"

# a Random tuner needs no imported data (NNI's check)
sed -e 's/tuner: {name: GridSearch}/tuner: {name: Random}/' "$WORK/exp/grid2.yml" > "$WORK/exp/random.yml"
nnictl stop "$id2" > /dev/null
nnictl create --config "$WORK/exp/random.yml" --port "$port" > "$WORK/create3.out"
id3=$(exp_id_of "$WORK/create3.out")
n experiment import "$id3" --filename "$WORK/a.json"; [ "$rc" = 0 ]; has "no need to import data for Random"
[ "$(sql "SELECT count(*) FROM event WHERE experiment_id='$id3' AND entity='import'")" = 0 ] || fail "imported into Random"
nnictl stop "$id3" > /dev/null
# Metis takes imported data, also when the config names it by NNI's alias MetisTuner
sed -e 's/tuner: {name: GridSearch}/tuner: {name: MetisTuner}/' "$WORK/exp/grid2.yml" > "$WORK/exp/metis.yml"
nnictl create --config "$WORK/exp/metis.yml" --port "$port" > "$WORK/create4.out"
id4=$(exp_id_of "$WORK/create4.out")
n experiment import "$id4" --filename "$WORK/a.json"; [ "$rc" = 0 ]; has "Imported 6 record(s)"
nnictl stop "$id4" > /dev/null
pass "import-data into a Metis experiment named MetisTuner"
assert_no_leftovers
echo "31-nnictl-commands: passed"
