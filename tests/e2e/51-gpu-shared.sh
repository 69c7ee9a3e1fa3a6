#!/usr/bin/env bash
# Two experiments on one NNI_HOME share the host's GPU slots: with 2 fake GPUs and
# maxTrialNumberPerGpu 1, no GPU ever runs two trials, whichever experiment they belong
# to, and the trials that wait say why (`nnictl trial ls`, REST). A GPU busy with a
# process that is not ours is skipped (useActiveGpu: false) until nvidia-smi reports it
# idle: the waiting trial then starts on its own.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/gpu.sh"

export GPU_TRIAL_SECONDS=3
fake_gpus "40960 0 0 0" "40960 0 0 0"
for x in a b; do
    gpu_experiment "$WORK/$x" "  useActiveGpu: false" "trialGpuNumber: 1
trialConcurrency: 3
maxTrialNumber: 5"
done
port_a=$(free_port); port_b=$(free_port)
gpu_create "$WORK/a/config.yml" "$WORK/a.out" "$port_a"
gpu_create "$WORK/b/config.yml" "$WORK/b.out" "$port_b"
a=$(exp_id_of "$WORK/a.out"); b=$(exp_id_of "$WORK/b.out")
[ -n "$a" ] && [ -n "$b" ] || fail "no experiment ids"

# while both run, 6 trials want 2 GPUs: some wait, and say for what
wait_until 30 sql_is "SELECT waiting_reason FROM trial WHERE experiment_id IN ('$a','$b') AND status='WAITING'
                      AND waiting_reason LIKE 'needs 1 GPU;%' LIMIT 1" '!=' || true
reason=$SQL_GOT
[[ "$reason" =~ ^needs\ 1\ GPU\;\ host\ .+\ has\ 0\ free,\ 0\ idle$ ]] || fail "waiting reason: '$reason'"
pass "a trial waits: $reason"

wait_status "$a" DONE 300
wait_status "$b" DONE 300
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id IN ('$a','$b') AND status='SUCCEEDED'")" = 10 ] ||
    { sql "SELECT id, status, message FROM trial"; fail "not all SUCCEEDED"; }
m0=$(ledger_max 0); m1=$(ledger_max 1)
[ "$m0" = 1 ] && [ "$m1" = 1 ] || fail "a GPU ran two trials at once (gpu0: $m0, gpu1: $m1)"
# both experiments used the GPUs, and a single machine row holds them
[ "$(sql "SELECT count(DISTINCT experiment_id) FROM trial WHERE gpu_indices IS NOT NULL")" = 2 ] || fail "one experiment got no GPU"
[ "$(sql "SELECT count(*) FROM machine WHERE platform='local'")" = 1 ] || fail "the host has more than one machine row"
pass "10 trials of 2 experiments, never 2 on one GPU"
gpu_stop --all
rm -f "$GPU_LEDGER"

# GPU 0 runs someone else's process, GPU 1 is held by a long trial of experiment c:
# experiment d's trial waits with the reason, in `nnictl trial ls` and the REST API
fake_gpus "40960 9000 80 1" "40960 0 0 0"
gpu_experiment "$WORK/c" "  useActiveGpu: false" "trialGpuNumber: 1
trialConcurrency: 1
maxTrialNumber: 1"
port_c=$(free_port)
GPU_TRIAL_SECONDS=600 gpu_create "$WORK/c/config.yml" "$WORK/c.out" "$port_c"
c=$(exp_id_of "$WORK/c.out")
wait_until 30 sql_is "SELECT status || ' ' || gpu_indices FROM trial WHERE experiment_id='$c'" "RUNNING 1" ||
    fail "c's trial: '$SQL_GOT', wanted RUNNING on GPU 1"

gpu_experiment "$WORK/d" "  useActiveGpu: false" "trialGpuNumber: 1
trialConcurrency: 1
maxTrialNumber: 1"
port_d=$(free_port)
GPU_TRIAL_SECONDS=1 gpu_create "$WORK/d/config.yml" "$WORK/d.out" "$port_d"
d=$(exp_id_of "$WORK/d.out")
want="needs 1 GPU; host $(hostname) has 0 free, 0 idle (others busy with processes not ours; useActiveGpu is false)"
wait_until 30 sql_is "SELECT waiting_reason FROM trial WHERE experiment_id='$d' AND status='WAITING'" "$want" ||
    fail "waiting reason '$SQL_GOT', wanted '$want'"
nnictl trial ls "$d" > "$WORK/ls.json"
curl -sf "http://127.0.0.1:$port_d/api/v1/nni/trial-jobs" > "$WORK/jobs.json"
for f in "$WORK/ls.json" "$WORK/jobs.json"; do
    $PY - "$f" "$want" <<'PY'
import json, sys
jobs = json.load(open(sys.argv[1]))
assert len(jobs) == 1 and jobs[0]["status"] == "WAITING", jobs
assert jobs[0]["waitingReason"] == sys.argv[2], jobs
PY
done
pass "nnictl trial ls and REST: $want"

# the other process ends: the next nvidia-smi run shows GPU 0 idle and d's trial starts there
fake_gpus "40960 0 0 0" "40960 0 0 0"
wait_status "$d" DONE 120
[ "$(sql "SELECT gpu_indices FROM trial WHERE experiment_id='$d'")" = 0 ] || fail "d's trial did not run on GPU 0"
[ "$(cat "$NNI_HOME/$d"/trials/*/cuda.txt)" = "[0]" ] || fail "d's trial saw $(cat "$NNI_HOME/$d"/trials/*/cuda.txt)"
pass "the waiting trial started once GPU 0 was idle"

# stopping c ends its trial and frees GPU 1
gpu_stop "$c"
[ "$(sql "SELECT count(*) FROM gpu_claim")" = 0 ] || fail "claims left after stop: $(sql "SELECT * FROM gpu_claim")"
gpu_stop --all
assert_no_leftovers
