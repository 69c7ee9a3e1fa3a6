#!/usr/bin/env bash
# nnictl create checks a local GPU request against this host (nvidia-smi) and names the
# key: more GPUs per trial than the host has, a gpuIndices entry the host lacks, no
# nvidia-smi at all are errors that create nothing; gpuIndices without trialGpuNumber
# is a warning (NNI ignores it silently). A request for every GPU of the host is fine
# (NNI's scheduler never starts one: its `>=` off-by-one).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/gpu.sh"

fake_gpus "16000 0 0 0" "16000 0 0 0"
expect_error() { # <config dir> <message part>
    if nnictl create --config "$WORK/$1/config.yml" --port "$(free_port)" > "$WORK/$1.out" 2>&1; then
        cat "$WORK/$1.out"; fail "$1: create succeeded"
    fi
    grep -qF -- "$2" "$WORK/$1.out" || { cat "$WORK/$1.out"; fail "$1: message lacks '$2'"; }
    pass "$1: $(grep -F -- "$2" "$WORK/$1.out" | head -1)"
}

gpu_experiment "$WORK/three" "  useActiveGpu: true" "trialGpuNumber: 3
trialConcurrency: 1"
expect_error three "config.yml:6:1: trainingService.trialGpuNumber: 3 GPUs per trial, but this host has 2 GPUs: no trial could ever start"

gpu_experiment "$WORK/idx" "  useActiveGpu: true
  gpuIndices: [1, 4]" "trialGpuNumber: 1
trialConcurrency: 1"
expect_error idx "trainingService.gpuIndices: GPU 4 does not exist on this host (nvidia-smi lists GPUs 0..1)"

gpu_experiment "$WORK/few" "  useActiveGpu: true
  gpuIndices: 1" "trialGpuNumber: 2
trialConcurrency: 1"
expect_error few "trainingService.gpuIndices: lists 1 GPU but trialGpuNumber is 2: no trial could ever start"

PATH_WITH_FAKE=$PATH
PATH=${PATH#"$WORK/fakebin:"}
gpu_experiment "$WORK/nosmi" "  useActiveGpu: false" "trialGpuNumber: 1
trialConcurrency: 1"
expect_error nosmi "trainingService.trialGpuNumber: 1 GPU per trial, but this host has no usable GPU (nvidia-smi: not found on PATH)"
PATH=$PATH_WITH_FAKE
rm -f "$GPU_FILE" # the fake now answers like a host whose driver is not loaded
expect_error nosmi "no usable GPU (nvidia-smi: exit code 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
if [ -f "$DB" ]; then
    [ "$(sql "SELECT count(*) FROM experiment")" = 0 ] || fail "a rejected config created an experiment"
fi

# gpuIndices without trialGpuNumber: created, with a warning naming the key
fake_gpus "16000 0 0 0" "16000 0 0 0"
gpu_experiment "$WORK/warn" "  gpuIndices: [0]" "trialConcurrency: 1
maxTrialNumber: 1"
gpu_create "$WORK/warn/config.yml" "$WORK/warn.out"
grep -q "WARNING: .*config.yml:[0-9]*:[0-9]*: trainingService.gpuIndices: ignored: GPUs are scheduled only when trialGpuNumber > 0" "$WORK/warn.out" ||
    { cat "$WORK/warn.out"; fail "no warning about gpuIndices"; }
pass "gpuIndices without trialGpuNumber: warned"
gpu_stop --all

# every GPU of the host for one trial: accepted and run
gpu_experiment "$WORK/all" "  useActiveGpu: false" "trialGpuNumber: 2
trialConcurrency: 2
maxTrialNumber: 2"
GPU_TRIAL_SECONDS=1 gpu_create "$WORK/all/config.yml" "$WORK/all.out"
id=$(exp_id_of "$WORK/all.out")
wait_status "$id" DONE 120
for f in "$NNI_HOME/$id"/trials/*/cuda.txt; do
    [ "$(cat "$f")" = "[0,1]" ] || fail "a trial asking for both GPUs saw $(cat "$f")"
done
[ "$(ledger_max 0)" = 1 ] || fail "two trials held every GPU at once"
pass "trialGpuNumber = the host's GPU count runs (one trial at a time)"
gpu_stop --all
assert_no_leftovers
