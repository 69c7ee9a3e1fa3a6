#!/usr/bin/env bash
# bench/remote_throughput: N trivial trials (a POSIX sh trial writing one ME-framed final
# metric) at concurrency C on the remote platform over 2 "machines": two real sshd on
# loopback with two non-root accounts (password and ed25519 key), as the e2e tests set
# them up. Prints trials/s and the SSH connections opened (sshd's own login count;
# nnictl create's check logs in once per machine, the worker should add one per machine
# plus reconnects). Needs root (sshd, useradd).
#   usage: bench/remote_throughput.sh [BUILD_DIR] (default build)   env: N=500 C=8
. "$(dirname "$0")/lib/e2e_env.sh" "$@"
N=${N:-500}
C=${C:-8}
. "$SRC/tests/e2e/lib.sh"
. "$SRC/tests/e2e/lib/remote.sh"
remote_machines

mkdir -p "$WORK/code"
cp "$SRC/examples/quickstart/trial.sh" "$WORK/code/trial.sh"
remote_config "$WORK/code/config.yml" "$C" "$N"
sed -i 's/^trialCommand: .*/trialCommand: sh trial.sh/; s/_type: randint, _value: \[0, 100000\]/_type: uniform, _value: [0, 1000]/' \
    "$WORK/code/config.yml"
t0=$(date +%s.%N)
nnictl create --config "$WORK/code/config.yml" --port "$(free_port)" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; exit 1; }
id=$(exp_id_of "$WORK/create.out")
REMOTE_EXPS="$id"
while [ "$(sql "SELECT status FROM experiment WHERE id='$id'")" != DONE ]; do sleep 0.05; done
t1=$(date +%s.%N)
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")
fin=$(sql "SELECT count(*) FROM metric m JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id='$id' AND m.type='FINAL'")
m1=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND machine='127.0.0.1:${SSHD_PORT[1]}'")
m2=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND machine='127.0.0.1:${SSHD_PORT[2]}'")
l1=$(grep -c "Accepted " "$WORK/sshd-1.log" || true)
l2=$(grep -c "Accepted " "$WORK/sshd-2.log" || true)
wk=$(grep -rh "SSH connection opened" "$NNI_HOME/$id/log/" | wc -l)
nnictl stop "$id" > /dev/null
awk -v n="$N" -v c="$C" -v t0="$t0" -v t1="$t1" -v ok="$ok" -v fin="$fin" -v m1="$m1" -v m2="$m2" \
    -v l1="$l1" -v l2="$l2" -v wk="$wk" 'BEGIN {
    printf "remote trials=%d concurrency=%d machines=2 succeeded=%d final_metrics=%d per_machine=%d/%d wall=%.2fs (from nnictl create) throughput=%.1f trials/s ssh_logins machine1=%d machine2=%d (incl. 1 each by nnictl create) worker_connections=%d\n",
        n, c, ok, fin, m1, m2, t1 - t0, n / (t1 - t0), l1, l2, wk }'
