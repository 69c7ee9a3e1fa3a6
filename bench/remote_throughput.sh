#!/usr/bin/env bash
# bench/remote_throughput: N trivial trials (a POSIX sh trial writing one ME-framed final
# metric) at concurrency C on the remote platform over M "machines": M real sshd on
# loopback (tests/e2e/lib/remote.sh), the odd ones logged into as tqremote1 by password,
# the even ones as tqremote2 by ed25519 key (so machines of one account share its home,
# as cluster nodes with an NFS home do). Prints trials/s, the trials per machine, the SSH
# logins per machine (sshd's own "Accepted" count less the one of nnictl create's check:
# the worker's connections, which must stay 1 per machine without faults), the worker's
# "SSH connection opened" log lines, and the worker's CPU per trial (utime+stime from
# /proc) and peak RSS. Needs root (sshd, useradd).
#   usage: bench/remote_throughput.sh [BUILD_DIR] (default build)   env: N=500 C=8 M=2
. "$(dirname "$0")/lib/e2e_env.sh" "$@"
N=${N:-500}
C=${C:-8}
M=${M:-2}
[ "$M" -ge 1 ] || { echo "M must be at least 1" >&2; exit 2; }
. "$SRC/tests/e2e/lib.sh"
. "$SRC/tests/e2e/lib/remote.sh"
remote_machines
for ((i = 3; i <= M; i++)); do remote_sshd "$i"; done

mkdir -p "$WORK/code"
cp "$SRC/examples/quickstart/trial.sh" "$WORK/code/trial.sh"
for ((i = 1; i <= M; i++)); do remote_known_host "$i"; done > "$WORK/known_hosts"
ts=$(printf '\n  platform: remote\n  knownHostsFile: %s\n  machineList:' "$WORK/known_hosts"
    for ((i = 1; i <= M; i++)); do
        if ((i % 2)); then
            printf '\n    - {host: 127.0.0.1, port: %s, user: tqremote1, password: %s}' "${SSHD_PORT[$i]}" "$REMOTE_PASS"
        else
            printf '\n    - {host: 127.0.0.1, port: %s, user: tqremote2, sshKeyFile: %s}' "${SSHD_PORT[$i]}" "$WORK/id_ed25519"
        fi
    done)
write_config "$WORK/code/config.yml" trialCommand='sh trial.sh' trialConcurrency="$C" maxTrialNumber="$N" \
    searchSpace=$'\n  x: {_type: uniform, _value: [0, 1000]}' tuner='{name: Random, classArgs: {seed: 11}}' \
    trainingService="$ts"
t0=$(date +%s.%N)
nnictl create --config "$WORK/code/config.yml" --port "$(free_port)" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; exit 1; }
id=$(exp_id_of "$WORK/create.out")
REMOTE_EXPS="$id"
worker_pid() { sql "SELECT pid FROM process WHERE experiment_id='$id' AND role LIKE 'worker%' AND ended_at IS NULL LIMIT 1"; }
has_worker() { [ -n "$(worker_pid)" ]; }
wait_until 60 has_worker || fail "no worker process of $id within 60 s"
wpid=$(worker_pid)
while [ "$(sql "SELECT status FROM experiment WHERE id='$id'")" != DONE ]; do sleep 0.2; done
t1=$(date +%s.%N)
cpu=$(awk '{printf "%.3f", ($14 + $15) / '"$(getconf CLK_TCK)"'}' "/proc/$wpid/stat" 2>/dev/null || echo nan)
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$wpid/status" 2>/dev/null || echo 0)
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")
fin=$(sql "SELECT count(*) FROM metric m JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id='$id' AND m.type='FINAL'")
per=() logins=()
for ((i = 1; i <= M; i++)); do
    per+=("$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND machine='127.0.0.1:${SSHD_PORT[$i]}'")")
    logins+=("$(( $(grep -c "Accepted " "$WORK/sshd-$i.log" || true) - 1 ))")
done
wk=$(grep -rh "SSH connection opened" "$NNI_HOME/$id/log/" | wc -l)
nnictl stop "$id" > /dev/null
lmin=$(printf '%s\n' "${logins[@]}" | sort -n | head -n1)
lmax=$(printf '%s\n' "${logins[@]}" | sort -n | tail -n1)
awk -v n="$N" -v c="$C" -v m="$M" -v t0="$t0" -v t1="$t1" -v ok="$ok" -v fin="$fin" -v per="${per[*]}" \
    -v logins="${logins[*]}" -v lmin="$lmin" -v lmax="$lmax" -v wk="$wk" -v cpu="$cpu" -v hwm="$hwm" 'BEGIN {
    printf "remote trials=%d concurrency=%d machines=%d succeeded=%d final_metrics=%d wall=%.2fs (from nnictl create) throughput=%.1f trials/s\n",
        n, c, m, ok, fin, t1 - t0, n / (t1 - t0)
    printf "  trials per machine: %s\n", per
    printf "  worker ssh logins per machine (sshd Accepted - 1 of nnictl create): min=%d max=%d [%s]; worker_connections=%d\n",
        lmin, lmax, logins, wk
    printf "  worker cpu=%.2fs (%.2f ms per trial) peak_rss=%.1fMB\n", cpu, cpu * 1000 / n, hwm / 1024 }'
