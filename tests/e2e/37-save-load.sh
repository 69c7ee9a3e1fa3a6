#!/usr/bin/env bash
# nnictl experiment save | load: a stopped experiment (rows, directory, with -s its
# code) goes into one file; save -> delete -> load (with new --logDir / --codeDir)
# gives back the same trials, metrics and files, and the loaded experiment resumes.
# Refused: saving a running experiment, loading over an existing one, a file that is
# not a pack, a pack holding a path outside its directory (nothing is changed).
. "$(dirname "$0")/lib.sh"

port=$(free_port)
metrics_experiment "$WORK/exp" 2 4 11
echo "# a code file" > "$WORK/exp/notes.txt"
export TRIAL_STEPS=2 TRIAL_SLEEP=0.05
n() { rc=0; timeout 60 nnictl "$@" > "$WORK/out" 2>&1 || rc=$?; [ "$rc" != 124 ] || fail "nnictl $* hung"; }
has() { grep -q -- "$1" "$WORK/out" || { cat "$WORK/out" >&2; fail "expected '$1' from nnictl"; }; }

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
mkdir -p "$WORK/saved"
n experiment save "$id" --path "$WORK/saved"; [ "$rc" != 0 ]; has "Only stopped experiments can be saved"
wait_status "$id" DONE 120
n stop "$id"
pass "a running experiment is not saved"

snapshot() { # the experiment's content, paths made relative to its directory
    local dir
    dir=$(sql "SELECT exp_dir FROM experiment WHERE id='$id'")
    sql "SELECT name, status, search_space, max_trial_number, concurrency, seed FROM experiment WHERE id='$id'"
    sql "SELECT id, sequence, status, parameters, final_metric, final_metric_json, exit_code,
                replace(trial_dir, '$dir', '<dir>') FROM trial WHERE experiment_id='$id' ORDER BY sequence"
    sql "SELECT m.trial_id, m.type, m.sequence, m.value, m.default_value FROM metric m JOIN trial t ON t.id = m.trial_id
         WHERE t.experiment_id='$id' ORDER BY m.id"
    sql "SELECT entity, from_state, to_state, reason FROM event WHERE experiment_id='$id' AND reason NOT LIKE '%load%'
         ORDER BY id" | grep -v DELETED || true
    (cd "$dir" && find . -type f ! -name '*.log' | sort | xargs md5sum)
}
snapshot > "$WORK/before.txt"
[ "$(grep -c '|SUCCEEDED|' "$WORK/before.txt")" = 4 ] || fail "setup: not 4 SUCCEEDED trials"
n experiment export "$id" --type json --filename "$WORK/before.json"; [ "$rc" = 0 ] || fail "export"

# a trial on the HTTP channel has its channel's URL, which names its token, in .nni/
t0dir=$(sql "SELECT trial_dir FROM experiment e JOIN trial t ON t.experiment_id = e.id WHERE e.id='$id' LIMIT 1")
mkdir -p "$t0dir/.nni"
echo "http://127.0.0.1:1/env/0123456789abcdef0123456789abcdef/t0" > "$t0dir/.nni/channel"
echo "http://127.0.0.1:1/env/fedcba9876543210fedcba9876543210/t0" > "$t0dir/.nni/api-channel"
n experiment save "$id" --path "$WORK/saved" --saveCodeDir
[ "$rc" = 0 ] || { cat "$WORK/out"; fail "save"; }
pack="$WORK/saved/nni_experiment_$id.sqlite"
[ -f "$pack" ] || fail "no $pack"
[ "$(stat -c %a "$pack")" = 600 ] || fail "the pack holds the experiment's rows but is mode $(stat -c %a "$pack")"
old_token=$(sql "SELECT token FROM experiment WHERE id='$id'")
[ ${#old_token} = 32 ] || fail "setup: the experiment's token is '$old_token'"
[ "$(sqlite3 "$pack" "SELECT token FROM experiment")" = "" ] || fail "the pack holds the experiment's token"
! grep -qa "$old_token" "$pack" || fail "the experiment's token is somewhere in the pack"
[ "$(sqlite3 "$pack" "SELECT count(*) FROM file WHERE path LIKE '%.nni/channel' OR path LIKE '%.nni/api-channel'")" = 0 ] &&
    ! grep -qa "0123456789abcdef0123456789abcdef\|fedcba9876543210fedcba9876543210" "$pack" ||
    fail "the pack holds a trial's channel file"
[ -z "$(ls "$WORK/saved" | grep -v "^nni_experiment_$id.sqlite$")" ] || fail "leftover files in --path: $(ls "$WORK/saved")"
n experiment save "$id" --path "$WORK/saved"; [ "$rc" != 0 ]; has "already exists"
pass "saved to one 0600 file; not overwritten"

n experiment delete "$id"; [ "$rc" = 0 ] || fail "delete"
[ "$(sql "SELECT count(*) FROM experiment WHERE id='$id'")" = 0 ] || fail "not deleted"

# not a pack / a pack with a path outside its directory: refused, nothing created
echo "not a database" > "$WORK/bad.sqlite"
n experiment load --path "$WORK/bad.sqlite"; [ "$rc" != 0 ]; has "ERROR"
cp "$pack" "$WORK/evil.sqlite"
$PY - "$WORK/evil.sqlite" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("INSERT INTO file VALUES ('experiment', '../../escaped.txt', 420, x'41')")
c.commit()
PY
n experiment load --path "$WORK/evil.sqlite" --logDir "$WORK/evil"; [ "$rc" != 0 ]; has "outside its directory"
[ "$(sql "SELECT count(*) FROM experiment WHERE id='$id'")" = 0 ] || fail "a refused load created the experiment"
[ ! -e "$WORK/escaped.txt" ] && [ ! -e "$WORK/evil/$id" ] || fail "a refused load wrote files"
[ -z "$(ls -A "$WORK/evil" 2>/dev/null)" ] || fail "a refused load left $(ls -A "$WORK/evil")"
pass "not a pack, or a path outside the directory: refused, nothing changed"

n experiment load --path "$pack" --codeDir "$WORK/code2" --logDir "$WORK/logs2"
[ "$rc" = 0 ] || { cat "$WORK/out"; fail "load"; }
has "Experiment $id loaded"
[ "$(sql "SELECT exp_dir FROM experiment WHERE id='$id'")" = "$WORK/logs2/$id" ] || fail "exp_dir not the new one"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND trial_dir NOT LIKE '$WORK/logs2/$id/%'")" = 0 ] ||
    fail "trial dirs not moved under the new directory"
cmp -s "$WORK/exp/notes.txt" "$WORK/code2/notes.txt" && cmp -s "$WORK/exp/metrics.sh" "$WORK/code2/metrics.sh" ||
    fail "code files not restored into --codeDir"
sql "SELECT config FROM experiment WHERE id='$id'" | grep -q "\"trialCodeDirectory\":\"$WORK/code2\"" ||
    fail "trialCodeDirectory not the new --codeDir"
snapshot > "$WORK/after.txt"
diff "$WORK/before.txt" "$WORK/after.txt" || fail "loaded experiment differs from the saved one"
new_token=$(sql "SELECT token FROM experiment WHERE id='$id'")
[[ $new_token =~ ^[0-9a-f]{32}$ ]] && [ "$new_token" != "$old_token" ] ||
    fail "the loaded experiment's token is '$new_token' (saved: '$old_token'): not a new one"
n experiment export "$id" --type json --filename "$WORK/after.json"
cmp -s "$WORK/before.json" "$WORK/after.json" || fail "export differs after save -> delete -> load"
n experiment load --path "$pack" --logDir "$WORK/logs3"; [ "$rc" != 0 ]; has "already exists"
pass "save -> delete -> load: same rows, files, export; new paths; a second load refused"

# trial ls --head / --tail (NNI: the N best final metrics best first / the N lowest, lowest first)
nnictl trial ls "$id" --head 2 > "$WORK/head.json"
nnictl trial ls "$id" --tail 3 > "$WORK/tail.json"
all=$(sql "SELECT group_concat(id) FROM (SELECT id FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' ORDER BY final_metric DESC)")
$PY - "$WORK/head.json" "$WORK/tail.json" "$all" <<'PY' || fail "trial ls --head/--tail"
import json, sys
head, tail, best = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3].split(",")
assert [t["trialJobId"] for t in head] == best[:2], (head, best)
assert [t["trialJobId"] for t in tail] == best[::-1][:3], (tail, best)
assert all(isinstance(t["startTime"], str) and t["startTime"][4] == "/" for t in head)
PY
n trial ls "$id" --head 0; [ "$rc" != 0 ]; has "greater than 0"
n trial ls "$id" --head 1 --tail 1; [ "$rc" != 0 ]; has "not allowed with"
pass "trial ls --head / --tail on the loaded experiment"

n resume "$id" --port "$port"; [ "$rc" = 0 ] || { cat "$WORK/out"; fail "resume of the loaded experiment"; }
wait_status "$id" DONE 60
n trial ls "$id"; has "\"status\":\"SUCCEEDED\""
n stop "$id"
assert_no_leftovers
pass "the loaded experiment resumes"
