#!/usr/bin/env bash
# GPU scheduling on the local platform with a fake nvidia-smi (2 GPUs): trialGpuNumber 1
# at maxTrialNumberPerGpu 2 runs at most 2 trials per GPU and 4 at once although the
# concurrency is 6; each trial sees the GPU it was given in CUDA_VISIBLE_DEVICES, the
# same as trial.gpu_indices, the REST API's gpuIndices and `nnictl trial ls`; the tool
# runs every few seconds, not per claim. trialGpuNumber 0 hides every GPU; without
# trialGpuNumber the trial inherits the caller's CUDA_VISIBLE_DEVICES (as in NNI).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/gpu.sh"

fake_gpus "40960 0 0 0" "40960 0 0 0"
gpu_experiment "$WORK/a" "  useActiveGpu: false
  maxTrialNumberPerGpu: 2" "trialGpuNumber: 1
trialConcurrency: 6
maxTrialNumber: 12"
port=$(free_port)
t0=$(date +%s)
gpu_create "$WORK/a/config.yml" "$WORK/create.out" "$port"
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || { cat "$WORK/create.out"; fail "no experiment id"; }
wait_status "$id" DONE 300
t1=$(date +%s)
pass "12 trials ran to DONE"

[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 12 ] ||
    { sql "SELECT id, status, message FROM trial WHERE experiment_id='$id'"; fail "not all SUCCEEDED"; }
m0=$(ledger_max 0); m1=$(ledger_max 1)
[ "$m0" -le 2 ] && [ "$m1" -le 2 ] || fail "a GPU held more than 2 trials at once (gpu0: $m0, gpu1: $m1)"
[ "$m0" -ge 1 ] && [ "$m1" -ge 1 ] || fail "trials did not use both GPUs (gpu0: $m0, gpu1: $m1)"
# at most 4 trials (2 GPUs x 2) ran at once, by the event log
maxrun=$(sql "WITH ev AS (SELECT time, CASE WHEN to_state='RUNNING' THEN 1 ELSE -1 END d FROM event
              WHERE experiment_id='$id' AND entity='trial' AND (to_state='RUNNING' OR (from_state='RUNNING' AND to_state!='RUNNING')))
              SELECT max(c) FROM (SELECT sum(d) OVER (ORDER BY time, d) c FROM ev)")
[ "$maxrun" -le 4 ] || fail "$maxrun trials ran at once on 2 GPUs x 2"
pass "at most 2 trials per GPU (gpu0: $m0, gpu1: $m1), $maxrun at once"

# each trial saw the GPU it was given, as recorded in the row
for dir in "$NNI_HOME/$id"/trials/*/; do
    tid=$(basename "$dir")
    seen=$(cat "$dir/cuda.txt")
    row=$(sql "SELECT gpu_indices FROM trial WHERE id='$tid'")
    [[ "$seen" =~ ^\[[01]\]$ ]] || fail "trial $tid saw CUDA_VISIBLE_DEVICES $seen"
    [ "$seen" = "[$row]" ] || fail "trial $tid saw $seen, its row says $row"
done
[ "$(sql "SELECT count(*) FROM gpu_claim")" = 0 ] || fail "GPU claims left after every trial ended"
pass "CUDA_VISIBLE_DEVICES = trial.gpu_indices for every trial; no claim left"

curl -sf "http://127.0.0.1:$port/api/v1/nni/trial-jobs" > "$WORK/jobs.json"
nnictl trial ls "$id" > "$WORK/ls.json"
for f in "$WORK/jobs.json" "$WORK/ls.json"; do
    $PY - "$f" "$NNI_HOME/$id/trials" <<'PY'
import json, sys
jobs = json.load(open(sys.argv[1]))
assert len(jobs) == 12, len(jobs)
for j in jobs:
    seen = open("%s/%s/cuda.txt" % (sys.argv[2], j["trialJobId"])).read()
    assert seen == "[%s]" % j["gpuIndices"], (j, seen)
PY
done
pass "REST and nnictl trial ls show each trial's gpuIndices"

# nvidia-smi ran every few seconds, not once per claim (12 claims)
calls=$(wc -l < "$GPU_FILE.calls")
limit=$(( (t1 - t0) / 5 + 3 ))
[ "$calls" -ge 1 ] && [ "$calls" -le "$limit" ] || fail "nvidia-smi ran $calls times in $((t1 - t0)) s"
pass "nvidia-smi ran $calls times in $((t1 - t0)) s"
sql "SELECT host, gpu, memory_total, active_procs FROM gpus_v" | grep -q "|1|40960|0$" || fail "gpus_v"
gpu_stop "$id"

# trialGpuNumber 0: CUDA_VISIBLE_DEVICES is set and empty; unset: inherited from the caller
export CUDA_VISIBLE_DEVICES=7
gpu_experiment "$WORK/z" "" "trialGpuNumber: 0
trialConcurrency: 1
maxTrialNumber: 1"
gpu_experiment "$WORK/u" "" "trialConcurrency: 1
maxTrialNumber: 1"
for d in z u; do
    gpu_create "$WORK/$d/config.yml" "$WORK/create-$d.out"
    eval "id_$d=$(exp_id_of "$WORK/create-$d.out")"
done
wait_status "$id_z" DONE 120
wait_status "$id_u" DONE 120
[ "$(cat "$NNI_HOME/$id_z"/trials/*/cuda.txt)" = "[]" ] || fail "trialGpuNumber 0: $(cat "$NNI_HOME/$id_z"/trials/*/cuda.txt)"
[ "$(cat "$NNI_HOME/$id_u"/trials/*/cuda.txt)" = "[7]" ] || fail "no trialGpuNumber: $(cat "$NNI_HOME/$id_u"/trials/*/cuda.txt)"
[ -z "$(sql "SELECT group_concat(gpu_indices) FROM trial WHERE experiment_id IN ('$id_z', '$id_u')")" ] ||
    fail "gpu_indices recorded without GPU scheduling"
pass "trialGpuNumber 0 -> CUDA_VISIBLE_DEVICES=\"\"; unset -> inherited"
gpu_stop --all
assert_no_leftovers
