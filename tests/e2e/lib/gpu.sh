# gpu.sh: the fake nvidia-smi for the GPU tests (source after lib.sh).
# fake_gpus "<total used util procs>" ...: this host now "has" these GPUs (one line each);
# the fake tool (tests/e2e/fake/nvidia-smi) is first on PATH for every process the test
# starts (nnictl -> api -> workers), and it counts its calls in $GPU_FILE.calls.
GPU_FILE="$WORK/gpus.txt"
export TRIALQ_FAKE_GPUS="$GPU_FILE"
mkdir -p "$WORK/fakebin"
ln -sf "$TRIALQ_SRC/tests/e2e/fake/nvidia-smi" "$WORK/fakebin/nvidia-smi"
export PATH="$WORK/fakebin:$PATH"
# every trial of the test counts its GPUs here (tests/e2e/trials/gpu_ledger.py)
export GPU_LEDGER="$WORK/ledger.json"

fake_gpus() {
    : > "$GPU_FILE.new"
    local g
    for g in "$@"; do echo "$g" >> "$GPU_FILE.new"; done
    mv "$GPU_FILE.new" "$GPU_FILE"
}

# gpu_experiment <dir> <extra trainingService lines> <top-level lines>: a config running
# trials/gpu_ledger.py with Random parameters
gpu_experiment() {
    mkdir -p "$1"
    cp "$TRIALQ_SRC/tests/e2e/trials/gpu_ledger.py" "$1/"
    cat > "$1/config.yml" <<YML
searchSpace:
  x: {_type: randint, _value: [0, 100000]}
trialCommand: /usr/bin/python3 gpu_ledger.py
trialCodeDirectory: .
tuner: {name: Random, classArgs: {seed: 3}}
$3
trainingService:
  platform: local
$2
YML
}

# ledger_max <gpu>: the most trials that ever held that GPU at once (0 if none did)
ledger_max() {
    $PY -c "import json,sys
try: print(json.load(open('$GPU_LEDGER'))['max'].get('$1', 0))
except FileNotFoundError: print(0)"
}

# gpu_create <config> <output file> [port]: nnictl create; its output is shown when it fails
gpu_create() {
    nnictl create --config "$1" --port "${3:-$(free_port)}" > "$2" 2>&1 ||
        { cat "$2" >&2; fail "nnictl create --config $1 failed"; }
}
# gpu_stop <nnictl stop arguments>: the same for nnictl stop
gpu_stop() {
    nnictl stop "$@" > "$WORK/stop.out" 2>&1 || { cat "$WORK/stop.out" >&2; fail "nnictl stop $* failed"; }
}
