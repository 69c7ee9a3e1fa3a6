#!/usr/bin/env bash
# bench/slurm_throughput: N trivial trials (a POSIX sh trial writing one ME-framed final
# metric) at concurrency C on the slurm platform, on the real test cluster of
# tests/e2e/lib/slurm.sh (NODES nodes of CPUS CPUs on loopback). Prints trials/s, the
# squeue --json calls the worker made (one per poll interval for all jobs, not one per
# trial) and the sbatch calls (one per trial). Needs root and Debian's slurmctld, slurmd,
# slurm-client, munge (scripts/install-deps.sh). MODE=ssh: the SSH mode, the commands run
# on a login node (a real sshd on loopback, as e2e/95; also openssh-server).
#   usage: bench/slurm_throughput.sh [BUILD_DIR] (default build)   env: N=100 C=16 NODES=4 CPUS=4 MODE=local
. "$(dirname "$0")/lib/e2e_env.sh" "$@"
N=${N:-100}
C=${C:-16}
SLURM_NODE_COUNT=${NODES:-4} SLURM_CPUS_PER_NODE=${CPUS:-4}
. "$SRC/tests/e2e/lib.sh"
. "$SRC/tests/e2e/lib/slurm.sh"
slurm_cluster_start

# the Slurm commands behind counting wrappers
mkdir -p "$WORK/bin" "$WORK/code"
for c in squeue sbatch; do
    printf '#!/bin/sh\necho "$*" >> "%s/%s.calls"\nexec /usr/bin/%s "$@"\n' "$WORK" "$c" "$c" > "$WORK/bin/$c"
    chmod +x "$WORK/bin/$c"
    : > "$WORK/$c.calls"
    chmod 666 "$WORK/$c.calls"
done
export PATH="$WORK/bin:$PATH"
cp "$SRC/examples/quickstart/trial.sh" "$WORK/code/trial.sh"
ts=$'\n  platform: slurm'
if [ "${MODE:-local}" = ssh ]; then
    . "$SRC/tests/e2e/lib/remote.sh"
    trap 'rc=$?; remote_cleanup; (exit $rc); slurm_on_exit' EXIT
    SLURM_LOGIN_PATH=$WORK/bin:/usr/bin:/bin slurm_login_node
    ts+=$SLURM_LOGIN_TS
fi
write_config "$WORK/code/config.yml" trialConcurrency="$C" maxTrialNumber="$N" \
    searchSpace=$'\n  x: {_type: uniform, _value: [0, 1000]}' trainingService="$ts"
t0=$(date +%s.%N)
nnictl create --config "$WORK/code/config.yml" --port "$(free_port)" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; exit 1; }
id=$(exp_id_of "$WORK/create.out")
while [ "$(sql "SELECT status FROM experiment WHERE id='$id'")" != DONE ]; do sleep 0.1; done
t1=$(date +%s.%N)
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")
fin=$(sql "SELECT count(*) FROM metric m JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id='$id' AND m.type='FINAL'")
sq=$(grep -c -- --json "$WORK/squeue.calls" || true)
sb=$(wc -l < "$WORK/sbatch.calls")
nnictl stop "$id" > /dev/null
awk -v mode="${MODE:-local}" -v n="$N" -v c="$C" -v cpus="$((SLURM_NODE_COUNT * SLURM_CPUS_PER_NODE))" -v t0="$t0" -v t1="$t1" -v ok="$ok" \
    -v fin="$fin" -v sq="$sq" -v sb="$sb" 'BEGIN {
    printf "slurm mode=%s trials=%d concurrency=%d cluster_cpus=%d succeeded=%d final_metrics=%d wall=%.2fs (from nnictl create) throughput=%.2f trials/s sbatch_calls=%d squeue_json_calls=%d (%.1f/s)\n",
        mode, n, c, cpus, ok, fin, t1 - t0, n / (t1 - t0), sb, sq, sq / (t1 - t0) }'
