#!/usr/bin/env bash
# nnictl experiment load treats a pack as untrusted input (issue 21): packs crafted from
# a real saved one with sqlite3 — ids that are not trialq's (one leading out of the
# directory), a trial_dir of /etc, file paths with '..', rows of another experiment of
# this database, a code file through a symbolic link, a table that is a view (issue
# 29) — are refused with a message naming the field or object, and change nothing:
# the database dump and the files are the same before and after (a trial view that
# stored trial_dir /etc made trial-file serve /etc/passwd). A trial_dir outside the
# experiment on a shared-storage platform is cleared (the trial-file route then cannot
# serve /etc/passwd); the good pack still loads, with every trial dir under the new
# directory, and resumes.
. "$(dirname "$0")/lib.sh"

metrics_experiment "$WORK/exp" 2 3 5
mkdir -p "$WORK/exp/lib"
echo "helper" > "$WORK/exp/lib/helper.txt"
export TRIAL_STEPS=2 TRIAL_SLEEP=0.05
n() { rc=0; timeout 60 nnictl "$@" > "$WORK/out" 2>&1 || rc=$?; [ "$rc" != 124 ] || fail "nnictl $* hung"; }
has() { grep -qF -- "$1" "$WORK/out" || { cat "$WORK/out" >&2; fail "expected '$1' from nnictl"; }; }

run_one() { # an experiment to its end, stopped; prints its id
    local port out
    port=$(free_port)
    out="$WORK/create-$RANDOM.out"
    nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$out"
    local x
    x=$(exp_id_of "$out")
    wait_status "$x" DONE 120
    nnictl stop "$x" > /dev/null
    echo "$x"
}
id=$(run_one)
other=$(run_one)
mkdir -p "$WORK/saved"
n experiment save "$id" --path "$WORK/saved" --saveCodeDir; [ "$rc" = 0 ] || { cat "$WORK/out"; fail "save"; }
pack="$WORK/saved/nni_experiment_$id.sqlite"
n experiment delete "$id"; [ "$rc" = 0 ] || fail "delete"
old_dir=$(sqlite3 "$pack" "SELECT exp_dir FROM experiment")
t1=$(sqlite3 "$pack" "SELECT id FROM trial ORDER BY rowid LIMIT 1")
other_trial=$(sql "SELECT id FROM trial WHERE experiment_id='$other' ORDER BY rowid LIMIT 1")
[ -n "$t1" ] && [ -n "$other_trial" ] || fail "setup: no trials"
pass "setup: a saved experiment ($id) and another one in the database ($other)"

# what a refused load must leave as it was: the database's content and every file
# outside the database and the packs (the WAL files come and go with readers)
state() {
    sql .dump
    (cd "$WORK" && find . -path ./saved -prune -o -path ./home/trialq.db-wal -prune -o -path ./home/trialq.db-shm \
        -prune -o -name out -prune -o -name '*.state' -prune -o -name 'bad.sqlite*' -prune -o -print | sort)
}
escaped_before=$( [ -e /tmp/x/escaped ] && echo yes || echo no )
mkdir -p "$WORK/code"
echo "mine" > "$WORK/code/metrics.sh"

# refused <message> <sql>...: the pack with the statements applied is refused with the
# message, and nothing changes
refused() {
    local msg=$1
    shift
    cp "$pack" "$WORK/bad.sqlite"
    for s in "$@"; do sqlite3 "$WORK/bad.sqlite" "$s" || fail "crafting: $s"; done
    state > "$WORK/before.state"
    n experiment load --path "$WORK/bad.sqlite" --logDir "$WORK/logs" --codeDir "$WORK/code" \
        --searchSpacePath "$WORK/ss.json"
    [ "$rc" != 0 ] || { cat "$WORK/out" >&2; fail "loaded a pack with: $*"; }
    has "$msg"
    state > "$WORK/after.state"
    diff "$WORK/before.state" "$WORK/after.state" >&2 || fail "a refused load ($msg) changed something"
}

# ids: the experiment's in meta, in its row, trials'
refused "experiment_id '/../../../../tmp/x/escaped': not an experiment id (8 characters [a-z0-9])" \
    "UPDATE meta SET value='/../../../../tmp/x/escaped' WHERE key='experiment_id'" \
    "UPDATE experiment SET id='/../../../../tmp/x/escaped'" "UPDATE trial SET experiment_id='/../../../../tmp/x/escaped'"
[ "$escaped_before" = yes ] || [ ! -e /tmp/x/escaped ] || fail "files written to /tmp/x/escaped"
refused "experiment_id '/../escaped': not an experiment id" \
    "UPDATE meta SET value='/../escaped' WHERE key='experiment_id'" "UPDATE experiment SET id='/../escaped'"
[ ! -e "$WORK/escaped" ] || fail "files written to $WORK/escaped"
for bad in ABCDEFGH abcdefg abcdefghi "ab'c;d e" 'abc$(id)' '........'; do
    refused "not an experiment id" "UPDATE meta SET value='${bad//\'/\'\'}' WHERE key='experiment_id'"
done
refused "experiment.id 'x/../yyy': not an experiment id (8 characters [a-z0-9])" "UPDATE experiment SET id='x/../yyy'"
refused "experiment.id 'zzzzzzzz' is not the pack's experiment_id $id" "UPDATE experiment SET id='zzzzzzzz'"
refused "more than one experiment row" "INSERT INTO experiment SELECT * FROM experiment"
refused "trial.id '../../x': not a trial id" "UPDATE trial SET id='../../x' WHERE id='$t1'"
refused "trial.id '1abcd': not a trial id" "UPDATE trial SET id='1abcd' WHERE id='$t1'"
pass "ids that are not trialq's (in meta, the experiment row, a trial row) are refused, nothing changed"

# paths: trial dirs, files of either area, a code file through a link
refused "trial $t1: trial_dir '/etc' is not inside the saved experiment directory" \
    "UPDATE trial SET trial_dir='/etc' WHERE id='$t1'"
refused "trial_dir '$old_dir/../../etc' is not inside" "UPDATE trial SET trial_dir='$old_dir/../../etc' WHERE id='$t1'"
refused "trial_dir '${old_dir}x/trials/$t1' is not inside" \
    "UPDATE trial SET trial_dir='${old_dir}x/trials/$t1' WHERE id='$t1'"
refused "file.path '../../escaped.txt': a path outside its directory" \
    "INSERT INTO file VALUES ('experiment', '../../escaped.txt', 420, x'41')"
refused "file.path '/tmp/escaped.txt': a path outside" "INSERT INTO file VALUES ('code', '/tmp/escaped.txt', 420, x'41')"
refused "file.path 'lib/../../escaped.txt': a path outside" \
    "INSERT INTO file VALUES ('code', 'lib/../../escaped.txt', 420, x'41')"
refused "area 'home' is neither experiment nor code" "INSERT INTO file VALUES ('home', 'x.txt', 420, x'41')"
refused "file 'trials' is stored twice, or as a file and as the directory of 'trials/" \
    "INSERT INTO file VALUES ('experiment', 'trials', 420, x'41')"
[ ! -e "$WORK/escaped.txt" ] && [ ! -e /tmp/escaped.txt ] || fail "a refused pack wrote escaped.txt"
mkdir -p "$WORK/outside"
ln -s "$WORK/outside" "$WORK/code/lib"
refused "$WORK/code/lib is a symbolic link: the pack's files are not written through links"
[ -z "$(ls -A "$WORK/outside")" ] || fail "a file was written through the link: $(ls -A "$WORK/outside")"
rm "$WORK/code/lib"
pass "trial_dir outside the experiment, file paths leading out, a link in --codeDir: refused, nothing changed"

# rows of another experiment of this database
refused "trial Zzzzz: experiment_id '$other' is not the pack's experiment $id" \
    "INSERT INTO trial SELECT * FROM trial WHERE id='$t1'" \
    "UPDATE trial SET id='Zzzzz', experiment_id='$other', sequence=99, status='WAITING', trial_dir=NULL
     WHERE rowid=(SELECT max(rowid) FROM trial)"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$other' AND status='WAITING'")" = 0 ] ||
    fail "a trial was added to $other"
refused "trial $other_trial already exists in this database (experiment $other)" \
    "UPDATE trial SET id='$other_trial' WHERE id='$t1'" "UPDATE metric SET trial_id='$other_trial' WHERE trial_id='$t1'"
refused "is not a trial of the pack's experiment $id" \
    "INSERT INTO metric SELECT * FROM metric WHERE rowid=1" \
    "UPDATE metric SET trial_id='$other_trial', sequence=sequence+100 WHERE rowid=(SELECT max(rowid) FROM metric)"
refused "event row 1: experiment_id '$other' is not the pack's experiment $id" \
    "UPDATE event SET experiment_id='$other' WHERE rowid=1"
refused "trial_id '$other_trial' is a trial of another experiment" \
    "UPDATE event SET trial_id='$other_trial' WHERE rowid=1"
pass "trial, metric and event rows of another experiment: refused, naming the row; nothing changed"

# a pack table that is a view (issue 29): its rows change between the checks and the
# copy. last_insert_rowid() is 0 or an event's id (over 9) when the load checks the
# trials, the new experiment row's rowid (under 10) when it copies them: trial_dir
# NULL for the checks, /etc for the copy. Such a load stored /etc and trial-file then
# served /etc/passwd; the pack is refused, naming the view, and nothing changes.
cols=$(sqlite3 "$pack" "SELECT group_concat(CASE name WHEN 'trial_dir' THEN 'CASE WHEN id = ''$t1''
    AND last_insert_rowid() BETWEEN 1 AND 9 THEN ''/etc'' WHEN id = ''$t1'' THEN NULL ELSE trial_dir END AS trial_dir'
    ELSE name END, ', ') FROM pragma_table_info('trial')")
cp "$pack" "$WORK/view.sqlite"
sqlite3 "$WORK/view.sqlite" "ALTER TABLE trial RENAME TO trial_data; CREATE VIEW trial AS SELECT $cols FROM trial_data"
state > "$WORK/before.state"
n experiment load --path "$WORK/view.sqlite" --logDir "$WORK/logs-view"
if [ "$rc" = 0 ]; then
    port=$(free_port)
    n view "$id" --port "$port"; [ "$rc" = 0 ] || { cat "$WORK/out"; fail "view"; }
    got=$(curl -s "http://127.0.0.1:$port/api/v1/nni/trial-file/$t1/passwd")
    ! grep -q '^root:' <<< "$got" ||
        fail "a pack whose trial table is a view loaded trial_dir $(sql "SELECT trial_dir FROM trial WHERE id='$t1'");" \
            "trial-file/$t1/passwd served /etc/passwd"
    fail "a pack whose trial table is a view was loaded"
fi
has "unexpected view 'trial' (a pack holds only the tables"
state > "$WORK/after.state"
diff "$WORK/before.state" "$WORK/after.state" >&2 || fail "a refused load (a view) changed something"
pass "a pack whose trial table is a view (last_insert_rowid()) is refused; trial-file cannot serve /etc/passwd"

# a shared-storage platform's trial_dir is elsewhere by nature: cleared, never served
cp "$pack" "$WORK/shared.sqlite"
sqlite3 "$WORK/shared.sqlite" "UPDATE trial SET platform='openpai', trial_dir='/etc' WHERE id='$t1'"
n experiment load --path "$WORK/shared.sqlite" --logDir "$WORK/logs-shared"
[ "$rc" = 0 ] || { cat "$WORK/out"; fail "load of a pack with an openpai trial dir elsewhere"; }
[ -z "$(sql "SELECT trial_dir FROM trial WHERE id='$t1'")" ] || fail "the openpai trial_dir /etc was kept"
port=$(free_port)
n view "$id" --port "$port"; [ "$rc" = 0 ] || { cat "$WORK/out"; fail "view"; }
got=$(curl -s "http://127.0.0.1:$port/api/v1/nni/trial-file/$t1/passwd")
! grep -q '^root:' <<< "$got" || fail "the trial-file route served /etc/passwd"
n stop "$id"
n experiment delete "$id"; [ "$rc" = 0 ] || fail "delete"
pass "a shared-storage trial_dir outside the experiment is cleared; trial-file cannot serve /etc/passwd"

# the good pack loads, its trial dirs under the new directory, and resumes
n experiment load --path "$pack" --logDir "$WORK/logs" --codeDir "$WORK/code"
[ "$rc" = 0 ] || { cat "$WORK/out"; fail "load of the good pack"; }
has "Experiment $id loaded"
has "1 files already in $WORK/code were kept"
[ "$(cat "$WORK/code/metrics.sh")" = mine ] || fail "an existing code file was overwritten"
[ -f "$WORK/code/lib/helper.txt" ] || fail "code file lib/helper.txt not restored"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")" = 3 ] || fail "not 3 trials"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND trial_dir NOT LIKE '$WORK/logs/$id/trials/%'")" = 0 ] ||
    fail "trial dirs not rebuilt under $WORK/logs/$id: $(sql "SELECT trial_dir FROM trial WHERE experiment_id='$id'")"
port=$(free_port)
n resume "$id" --port "$port"; [ "$rc" = 0 ] || { cat "$WORK/out"; fail "resume of the loaded experiment"; }
wait_status "$id" DONE 60
cfg=$(curl -s "http://127.0.0.1:$port/api/v1/nni/trial-file/$t1/parameter.cfg")
grep -q '"parameter_id"' <<< "$cfg" || fail "trial-file of the loaded trial: $cfg"
n stop "$id"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$other'")" = 3 ] || fail "$other changed"
# a worker stopped while it starts leaves its 'import nni' probe to finish alone
nothing_left() { [ -z "$(our_pids)" ]; }
wait_until 3 nothing_left || fail "processes left after the stop: $(our_pids)"
assert_no_leftovers
pass "the good pack loads (trial dirs rebuilt under --logDir) and resumes"
