#!/usr/bin/env bash
# Slurm, SSH mode: trialq runs sbatch, squeue and scancel on a login node over SSH (a real
# sshd on loopback in front of the test cluster, logged in as the non-root tqremote1 with
# its password, which stays out of the database (the worker reads it from the
# experiment's secrets file); the host key checked against known_hosts; a key login runs
# in bench/slurm_throughput.sh MODE=ssh). The trial files are written
# there as that user (the jobs run as tqremote1: squeue says so, and root's sbatch would
# make root their user); the manager reads the metrics from sharedDirectory, mounted here
# at the same path. 8 trials at concurrency 4 on 3 CPUs to DONE with exact metrics, across
# a dropped SSH session (reopened: a second session logged) and a kill -9 of the api and
# the worker with `nnictl resume` (the login node unreachable at first) re-attaching to
# the jobs over SSH (one job per trial);
# `nnictl stop` cancels, over SSH, a job of the experiment's name it never recorded. A
# login node whose host key is not in knownHostsFile, a wrong password or an RSA key is
# refused at create with the reason.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/slurm.sh"
. "$(dirname "$0")/lib/remote.sh"
trap 'rc=$?; remote_cleanup; (exit $rc); slurm_on_exit' EXIT
slurm_cluster_start
SLURM_LOGIN_AUTH=password slurm_login_node
export TRIALQ_SLURM_POLL_MS=300

metrics_experiment "$WORK/exp" 4 8 31 "  platform: slurm$SLURM_LOGIN_TS"
# the job's environment is the login session's: the trial's pace is set in its command
sed -i "s|^trialCommand: .*|trialCommand: 'TRIAL_STEPS=3 TRIAL_SLEEP=0.4 sh metrics.sh'|" "$WORK/exp/config.yml"

# a login node whose host key is not in knownHostsFile: refused at create, nothing created
sed "s|knownHostsFile: .*|knownHostsFile: $WORK/empty_known_hosts|" "$WORK/exp/config.yml" > "$WORK/exp/unknown.yml"
out=$(nnictl create --config "$WORK/exp/unknown.yml" --port "$(free_port)" 2>&1) && fail "an unknown host key accepted: $out"
echo "$out" | grep -q "host key of \[127.0.0.1\]:${SSHD_PORT[1]} is not in" || fail "no clear message for an unknown host key: $out"
n=$(sql "SELECT count(*) FROM experiment" 2>/dev/null || true)
[ "${n:-0}" = 0 ] || fail "an experiment was created with an unknown host key"
pass "unknown host key of the login node refused at create"
# ... and a wrong password
sed "s|password: [^}]*|password: not-$REMOTE_PASS|" "$WORK/exp/config.yml" > "$WORK/exp/badpass.yml"
grep -q "password: not-" "$WORK/exp/badpass.yml" || fail "no wrong password in the config"
out=$(nnictl create --config "$WORK/exp/badpass.yml" --port "$(free_port)" 2>&1) && fail "a wrong password accepted: $out"
echo "$out" | grep -q "authentication refused: wrong password for user tqremote1" || fail "no clear message for a wrong password: $out"
pass "wrong login node password refused at create"
# ... and an RSA key (the key login: OpenSSH refuses libssh2's SHA-1 signature)
sed "s|password: [^}]*|sshKeyFile: $WORK/id_rsa|" "$WORK/exp/config.yml" > "$WORK/exp/rsa.yml"
out=$(nnictl create --config "$WORK/exp/rsa.yml" --port "$(free_port)" 2>&1) && fail "an RSA key accepted: $out"
echo "$out" | grep -q "RSA key refused by the server: $WORK/id_rsa" || fail "no clear message for an RSA key: $out"
pass "RSA key of the login node refused at create, naming the key"

port=$(free_port)
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || { cat "$WORK/create.out"; fail "no experiment id"; }
! grep -q "SSH session" "$WORK/create.out" || { cat "$WORK/create.out"; fail "nnictl create printed the worker's log"; }
# the login password is not in the database (the worker reads it from the experiment's
# secrets file, also after the resume below)
! grep -qaF "$REMOTE_PASS" "$NNI_HOME"/trialq.db* || fail "the login node's password is in the database"

wait_until 60 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'" '>=1' ||
    fail "no trial SUCCEEDED over SSH"
users=$(squeue -h -t all -o '%j %u' | awk -v p="nni-$id-" 'index($1, p) == 1 {print $2}' | sort -u | tr '\n' ' ')
[ "$users" = "tqremote1 " ] || fail "the jobs' users are '$users', not tqremote1 (sbatch did not run over SSH?)"
pass "jobs submitted on the login node as its user"

# the session drops (its sshd processes end; the listener stays): the worker reopens it
remote_drop_sessions 1
wait_until 30 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'" '>=3' ||
    fail "no 3 trials SUCCEEDED after the SSH session dropped"
opened() { [ "$(cat "$NNI_HOME/$id"/log/*.log | grep -c 'SSH session opened')" -ge 2 ]; }
wait_until 10 opened || fail "no second SSH session logged after the drop"
pass "the dropped SSH session was reopened"

wait_until 30 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND lease_owner IS NOT NULL AND job_id IS NOT NULL" '>=2' ||
    fail "fewer than 2 jobs in flight"
kill9_manager "$id" slurm
# ... and the login node cannot be reached when the worker starts again: it fails to
# start (no session), the api starts it again with a back-off, and it re-attaches once
# the login node is back
remote_partition 1
worker_failed() { grep -qs "platform slurm: .*login node tqremote1@127.0.0.1:${SSHD_PORT[1]}: unreachable" "$NNI_HOME/$id"/log/*.log; }
login_back() {
    wait_until 20 worker_failed || fail "no worker start failing for the unreachable login node"
    remote_sshd 1
    pass "the worker could not start without the login node; sshd back"
}
RESUME_THEN=login_back resume_to_done "$id" "$port" 8
slurm_one_job_each "$id" 8
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    dir=$(sql "SELECT trial_dir FROM trial WHERE id='$tid'")
    case $dir in "$WORK/shared/$id/trials/"*) ;; *) fail "trial dir $dir is not under sharedDirectory" ;; esac
    [ "$(stat -c %U "$dir/parameter.cfg")" = tqremote1 ] || fail "$dir/parameter.cfg was not written by the login user"
done
pass "8 trials DONE over SSH, one job each, across a dropped session and a kill -9 + resume; metrics exact"

# nnictl stop cancels over SSH, also a job of the experiment's name it never recorded
ghost=$(su tqremote1 -s /bin/sh -c "SLURM_CONF=$SLURM_CONF sbatch --parsable --job-name=nni-$id-ghost0 --comment=trialq:$id:ghost0:1 -o /dev/null --wrap 'sleep 300'")
[ -n "$ghost" ] || fail "no ghost job"

nnictl stop "$id" > /dev/null
ghost_cancelled() { [ "$(squeue -h -t all -j "$ghost" -o %T)" = CANCELLED ]; }
wait_until 20 ghost_cancelled || fail "the unrecorded job $ghost is $(squeue -h -t all -j "$ghost" -o %T) after stop"
pass "nnictl stop cancelled the unrecorded job over SSH"
echo "95-slurm-ssh: passed"
