#!/usr/bin/env bash
# The remote platform against two real sshd "machines" on loopback (a password login
# and an ed25519 key login of two non-root accounts): trials run on both, their metrics
# and logs arrive over the SSH sessions, one SSH connection per machine; `trial kill`
# and `stop` leave no process on the remote hosts.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/remote.sh"
remote_machines

mkdir -p "$WORK/exp/data"
cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/exp/"
# .nniignore: data/ and *.tmp are not shipped
printf 'data/\n*.tmp\n' > "$WORK/exp/.nniignore"
echo big > "$WORK/exp/data/huge.bin"
echo scratch > "$WORK/exp/x.tmp"
remote_config "$WORK/exp/config.yml" 4 24

port=$(free_port)
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create"; }
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || { cat "$WORK/create.out"; fail "no experiment id"; }
REMOTE_EXPS="$id"
wait_status "$id" DONE 180
pass "experiment on two machines reached DONE"

[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 24 ] ||
    { sql "SELECT id, status, machine, message FROM trial WHERE experiment_id='$id'"; fail "not all 24 SUCCEEDED"; }
nm=$(sql "SELECT count(DISTINCT machine) FROM trial WHERE experiment_id='$id'")
[ "$nm" = 2 ] || { sql "SELECT machine, count(*) FROM trial WHERE experiment_id='$id' GROUP BY 1"; fail "trials ran on $nm machine(s), not 2"; }
for m in 1 2; do
    n=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND machine='127.0.0.1:${SSHD_PORT[$m]}'")
    [ "$n" -ge 4 ] || fail "machine $m ran only $n trials"
done
pass "trials spread over both machines"

# metrics in the database == what each trial wrote on its machine; logs pulled
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    rdir=$(remote_dir_of "$tid")
    [ -f "$rdir/written.log" ] || fail "no $rdir/written.log"
    want=$(sort "$rdir/written.log")
    got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$tid'" | sort)
    [ "$want" = "$got" ] || { echo "want: $want"; echo "got: $got"; fail "metrics of $tid differ"; }
    grep -q "trial $tid seq" "$NNI_HOME/$id/trials/$tid/trial.stdout" || fail "stdout of $tid not pulled"
    cmp -s "$rdir/parameter.cfg" "$NNI_HOME/$id/trials/$tid/parameter.cfg" || fail "parameter.cfg of $tid"
    [ -f "$rdir/code/metrics.sh" ] || fail "code not in $rdir/code"
done
pass "metric rows equal what the trials wrote; stdout pulled; parameter.cfg in place"

# the code went once per machine, without what .nniignore lists
for u in tqremote1 tqremote2; do
    c=/home/$u/nni-experiments/$id/nni-code
    [ -f "$c/metrics.sh" ] && [ -f "$c/.nniignore" ] || fail "code missing on $u"
    [ ! -e "$c/data" ] && [ ! -e "$c/x.tmp" ] || fail ".nniignore not honoured on $u"
    # the experiment's config (beside the code, with the machines' passwords) stays here
    [ -f "$WORK/exp/config.yml" ] && [ ! -e "$c/config.yml" ] || fail "the config was shipped to $u"
    # and the experiment's dir there is its owner's alone
    [ "$(stat -c %a "/home/$u/nni-experiments/$id")" = 700 ] || fail "work dir on $u is $(stat -c %a "/home/$u/nni-experiments/$id")"
done
grep -q "code shipped" "$NNI_HOME/$id/log/"*worker*.log 2>/dev/null || grep -rq "code shipped" "$NNI_HOME/$id/log/" ||
    fail "no 'code shipped' log line"
nship=$(grep -rh "code shipped" "$NNI_HOME/$id/log/" | wc -l)
[ "$nship" = 2 ] || fail "code shipped $nship times (want once per machine)"
# one SSH session per machine for the whole experiment (plus nnictl create's check)
for m in 1 2; do
    n=$(grep -c "Accepted .* port" "$WORK/sshd-$m.log" || true)
    [ "$n" = 2 ] || { cat "$WORK/sshd-$m.log"; fail "machine $m saw $n logins (want 2: nnictl create's check, the worker)"; }
done
[ "$(sql "SELECT count(*) FROM machine WHERE platform='remote' AND healthy=1")" -ge 2 ] || fail "machine rows"
pass "code shipped once per machine; one SSH login per machine"
remote_wait_no_procs "$id" 20
nnictl stop "$id" > /dev/null

# kill and stop: long trials on both machines
mkdir -p "$WORK/exp2"
cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/exp2/"
remote_config "$WORK/exp2/config.yml" 4 8
# a stop reaches a remote trial as SIGINT (as NNI 3 sends it), with the signal usable
# although the runner starts the trial in the background, where a shell ignores SIGINT:
# the trial's trap records it
cat > "$WORK/exp2/kb.sh" <<'SH'
trap 'echo INT > "$NNI_SYS_DIR/interrupted"; exit 130' INT
TRIAL_SLEEP=300 sh metrics.sh &
wait
SH
sed -i 's/^trialCommand: .*/trialCommand: sh kb.sh/' "$WORK/exp2/config.yml"
port=$(free_port)
nnictl create --config "$WORK/exp2/config.yml" --port "$port" > "$WORK/create2.out" 2>&1 ||
    { cat "$WORK/create2.out"; fail "create 2"; }
id2=$(exp_id_of "$WORK/create2.out")
REMOTE_EXPS="$id $id2"
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status='RUNNING'" 4 60 "4 trials of experiment 2 running"
[ "$(sql "SELECT count(DISTINCT machine) FROM trial WHERE experiment_id='$id2' AND status='RUNNING'")" = 2 ] ||
    fail "4 trials not running on two machines"
victim=$(sql "SELECT id FROM trial WHERE experiment_id='$id2' AND status='RUNNING' ORDER BY sequence LIMIT 1")
vdir=$(remote_dir_of "$victim")
wait_file -s "$vdir/.nni/trialpid" 10 "the pid of trial $victim"
vpid=$(cat "$vdir/.nni/trialpid")
nnictl trial kill "$id2" --trial_id "$victim" > /dev/null ||
    fail "nnictl trial kill"
wait_until 30 sql_is "SELECT status FROM trial WHERE id='$victim'" USER_CANCELED || fail "killed trial is $SQL_GOT"
remote_group_gone "$vpid" 10 || fail "process group $vpid of the killed trial lives on"
[ "$(cat "$vdir/interrupted" 2>/dev/null)" = INT ] || fail "the killed remote trial did not get SIGINT"
pass "trial kill: SIGINT reached the trial, then its remote process group ended ($victim)"

nnictl stop "$id2" > "$WORK/stop.out" 2>&1 || { cat "$WORK/stop.out"; fail "stop"; }
remote_wait_no_procs "$id2" 30
left=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id2' AND status IN ('RUNNING')")
[ "$left" = 0 ] || fail "$left trials still RUNNING after stop"
pass "stop left no process on the remote hosts"
assert_no_leftovers
