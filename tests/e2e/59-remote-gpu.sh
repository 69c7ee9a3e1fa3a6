#!/usr/bin/env bash
# GPU slots on remote machines: a fake nvidia-smi (the real tool's XML) on each "remote"
# host, reached through pythonPath. Machine 1 has an idle GPU 0 and a busy GPU 1
# (useActiveGpu false: skipped); machine 2 has two idle GPUs but gpuIndices [1]. With
# trialGpuNumber 1 and maxTrialNumberPerGpu 1 only two trials run at once, each with
# CUDA_VISIBLE_DEVICES of its slot, never two on one GPU; the others wait with a reason.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/remote.sh"
remote_machines

# the fake tool for each machine (run as the machine's user)
cp "$TRIALQ_SRC/tests/e2e/fake/nvidia-smi" "$WORK/nvidia-smi.py"
chmod 755 "$WORK/nvidia-smi.py"
for n in 1 2; do
    mkdir -p "$WORK/gpubin-$n"
    printf '#!/bin/sh\nTRIALQ_FAKE_GPUS=%s exec /usr/bin/python3 %s "$@"\n' "$WORK/gpus-$n.txt" "$WORK/nvidia-smi.py" \
        > "$WORK/gpubin-$n/nvidia-smi"
    chmod 755 "$WORK/gpubin-$n" "$WORK/gpubin-$n/nvidia-smi"
    : > "$WORK/gpus-$n.txt.calls"
    chmod 666 "$WORK/gpus-$n.txt.calls"
done
printf '16000 100 0 0\n16000 5000 60 1\n' > "$WORK/gpus-1.txt"
printf '16000 0 0 0\n16000 0 0 0\n' > "$WORK/gpus-2.txt"

mkdir -p "$WORK/exp"
cat > "$WORK/exp/trial.sh" <<'SH'
echo "${CUDA_VISIBLE_DEVICES-unset}" > "$NNI_SYS_DIR/cuda.txt"
sleep 1.5
printf 'ME000082{"parameter_id":0,"trial_job_id":"%s","type":"FINAL","sequence":0,"value":"1"}\n' "$NNI_TRIAL_JOB_ID" >> "$NNI_SYS_DIR/.nni/metrics"
SH
remote_config "$WORK/exp/config.yml" 6 10 "  trialGpuNumber: 1"
sed -i 's/^trialCommand: .*/trialCommand: sh trial.sh/' "$WORK/exp/config.yml"
sed -i "s|password: $REMOTE_PASS}|password: $REMOTE_PASS, pythonPath: $WORK/gpubin-1, useActiveGpu: false}|" "$WORK/exp/config.yml"
sed -i "s|sshKeyFile: $WORK/id_ed25519}|sshKeyFile: $WORK/id_ed25519, pythonPath: $WORK/gpubin-2, gpuIndices: [1]}|" "$WORK/exp/config.yml"
port=$(free_port)
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; cat "$WORK/exp/config.yml"; fail "create"; }
id=$(exp_id_of "$WORK/create.out")
REMOTE_EXPS="$id"

wait_until 60 sql_is "SELECT waiting_reason FROM trial WHERE experiment_id='$id' AND status='WAITING' AND waiting_reason LIKE '%GPU%' LIMIT 1" '!=' ||
    { sql "SELECT id, status, waiting_reason FROM trial WHERE experiment_id='$id'"; fail "no waiting trial says it waits for GPUs"; }
reason=$SQL_GOT
echo "$reason" | grep -q "needs 1 GPU" || fail "waiting reason: $reason"
pass "waiting trials say why: $reason"
wait_status "$id" DONE 240

[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 10 ] ||
    { sql "SELECT id, status, machine, gpu_indices, message FROM trial WHERE experiment_id='$id'"; fail "not all SUCCEEDED"; }
m1="127.0.0.1:${SSHD_PORT[1]}" m2="127.0.0.1:${SSHD_PORT[2]}"
bad=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND NOT ((machine='$m1' AND gpu_indices='0') OR (machine='$m2' AND gpu_indices='1'))")
[ "$bad" = 0 ] || { sql "SELECT id, machine, gpu_indices FROM trial WHERE experiment_id='$id'"; fail "a trial got a GPU it must not have"; }
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    want=$(sql "SELECT gpu_indices FROM trial WHERE id='$tid'")
    got=$(cat "$(remote_dir_of "$tid")/cuda.txt")
    [ "$got" = "$want" ] || fail "trial $tid saw CUDA_VISIBLE_DEVICES=$got, holds $want"
done
# never two trials on one GPU: on each slot, every trial starts after the previous one ended
overlap=$(sql "SELECT count(*) FROM trial a JOIN trial b ON a.experiment_id = b.experiment_id AND a.id < b.id
               AND a.machine = b.machine AND a.gpu_indices = b.gpu_indices
               WHERE a.experiment_id='$id' AND a.start_time < b.end_time AND b.start_time < a.end_time")
[ "$overlap" = 0 ] || fail "$overlap pairs of trials shared a GPU"
[ "$(sql "SELECT count(DISTINCT machine) FROM trial WHERE experiment_id='$id'")" = 2 ] || fail "not both machines used"
[ "$(sql "SELECT count(*) FROM gpu_claim")" = 0 ] || fail "GPU claims left after the experiment"
[ -s "$WORK/gpus-1.txt.calls" ] && [ -s "$WORK/gpus-2.txt.calls" ] || fail "nvidia-smi not run on both machines"
pass "10 SUCCEEDED on the two allowed slots, CUDA_VISIBLE_DEVICES as claimed, no GPU shared"
remote_wait_no_procs "$id" 20
