#!/usr/bin/env bash
# real-gpu-check.sh [OUT_DIR]: trialq's GPU scheduling against the real nvidia-smi, for a
# machine with NVIDIA GPUs (run it there by hand: TRIALQ_BIN=build/trialq
# tests/gpu/real-gpu-check.sh out/). The test suite runs it with the fake nvidia-smi
# (tests/e2e/fake) as gpu/real-gpu-check-fake, so the script itself stays true.
#
# It records `nvidia-smi -q -x` (and `--query-gpu` where the tool has it) in OUT_DIR,
# then runs a local experiment with trialGpuNumber 1, maxTrialNumberPerGpu 1 and twice as
# many trials at once as there are GPUs, plus one, each trial keeping its GPU busy for
# a few seconds (with PyTorch where it is importable, else sleeping). It checks that
# every trial SUCCEEDED, saw exactly the GPU its row was given (CUDA_VISIBLE_DEVICES;
# with PyTorch also the device's UUID against nvidia-smi's), and that no two trials
# held one GPU at the same time. Exit 0 and "real-gpu-check: ok" when all holds.
set -euo pipefail
BIN=${TRIALQ_BIN:?set TRIALQ_BIN to the trialq binary}
OUT=${1:-}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/trialq-gpu-XXXXXX")
export NNI_HOME="$WORK/home"
mkdir -p "$WORK/bin" "$WORK/code" "$NNI_HOME"
ln -s "$BIN" "$WORK/bin/nnictl"
ln -s "$BIN" "$WORK/bin/trialq"
export PATH="$WORK/bin:$PATH"
trap 'nnictl stop --all >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
PYTHON=${PYTHON:-python3}

nvidia-smi -q -x > "$WORK/smi.xml" || { echo "real-gpu-check: nvidia-smi -q -x failed" >&2; exit 1; }
if [ -n "$OUT" ]; then
    mkdir -p "$OUT"
    cp "$WORK/smi.xml" "$OUT/nvidia-smi-q-x.xml"
    nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,utilization.gpu --format=csv \
        > "$OUT/query-gpu.csv" 2>/dev/null || rm -f "$OUT/query-gpu.csv"
fi
ngpu=$("$PYTHON" -c 'import sys, xml.etree.ElementTree as E; print(len(E.parse(sys.argv[1]).getroot().findall("gpu")))' "$WORK/smi.xml")
[ "$ngpu" -ge 1 ] || { echo "real-gpu-check: no GPU in nvidia-smi's output" >&2; exit 1; }

cat > "$WORK/code/trial.py" <<'PY'
import json, os, time
rec = {"cuda": os.environ.get("CUDA_VISIBLE_DEVICES"), "start": time.time()}
try:
    import torch
    if torch.cuda.is_available():
        rec["devices"] = torch.cuda.device_count()
        rec["uuid"] = "GPU-" + str(torch.cuda.get_device_properties(0).uuid)
        x = torch.ones((4096, 4096), device="cuda")
        t = time.time()
        while time.time() - t < 3:
            x = (x @ x).clamp_(max=1.0)
        torch.cuda.synchronize()
except ImportError:
    pass
if "devices" not in rec:
    time.sleep(3)
rec["end"] = time.time()
with open(os.path.join(os.environ["NNI_SYS_DIR"], "gpu.json"), "w") as f:
    json.dump(rec, f)
PY
cat > "$WORK/code/config.yml" <<YML
searchSpace:
  x: {_type: randint, _value: [0, 1000]}
trialCommand: $PYTHON trial.py
trialCodeDirectory: .
trialGpuNumber: 1
trialConcurrency: $((2 * ngpu))
maxTrialNumber: $((2 * ngpu + 1))
tuner: {name: Random, classArgs: {seed: 1}}
trainingService:
  platform: local
  useActiveGpu: true
  maxTrialNumberPerGpu: 1
YML
port=$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
nnictl create --config "$WORK/code/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; exit 1; }
id=$(sed -n 's/.*Experiment ID: \([a-z0-9]*\).*/\1/p' "$WORK/create.out" | head -n1)

"$PYTHON" - "$NNI_HOME/trialq.db" "$id" "$WORK/smi.xml" "$NNI_HOME/$id/trials" "${OUT:-}" <<'PY'
import json, os, sqlite3, sys, time, xml.etree.ElementTree as E
db, exp, smi, trials, out = sys.argv[1:6]
uuids = [g.findtext("uuid") for g in E.parse(smi).getroot().findall("gpu")]
con = sqlite3.connect(db, timeout=10)
t0 = time.time()
while con.execute("SELECT status FROM experiment WHERE id=?", (exp,)).fetchone()[0] != "DONE":
    if time.time() - t0 > 300:
        sys.exit("real-gpu-check: the experiment is not DONE after 300 s")
    time.sleep(0.5)
rows = con.execute("SELECT id, status, gpu_indices, attempt FROM trial WHERE experiment_id=?", (exp,)).fetchall()
problems, used = [], {}
for tid, status, gpus, attempt in rows:
    if status != "SUCCEEDED" or attempt != 1:
        problems.append("trial %s: %s (attempt %s)" % (tid, status, attempt))
        continue
    rec = json.load(open(os.path.join(trials, tid, "gpu.json")))
    if rec["cuda"] != gpus or gpus is None or "," in gpus:
        problems.append("trial %s saw CUDA_VISIBLE_DEVICES=%s, its row says %s" % (tid, rec["cuda"], gpus))
        continue
    if "devices" in rec and (rec["devices"] != 1 or rec["uuid"] != uuids[int(gpus)]):
        problems.append("trial %s saw %s device(s), %s; GPU %s is %s" % (tid, rec["devices"], rec["uuid"], gpus, uuids[int(gpus)]))
    used.setdefault(gpus, []).append((rec["start"], rec["end"], tid))
for g, spans in used.items():
    spans.sort()
    for a, b in zip(spans, spans[1:]):
        if b[0] < a[1]:
            problems.append("trials %s and %s held GPU %s at once" % (a[2], b[2], g))
summary = {"gpus": len(uuids), "trials": len(rows), "per_gpu": {g: len(s) for g, s in used.items()},
           "cuda_checked": sum(1 for tid, *_ in rows if os.path.exists(os.path.join(trials, tid, "gpu.json")) and
                               "devices" in json.load(open(os.path.join(trials, tid, "gpu.json")))),
           "problems": problems}
print(json.dumps(summary))
if out:
    json.dump(summary, open(os.path.join(out, "result.json"), "w"), indent=1)
if problems or len(rows) != 2 * len(uuids) + 1:
    sys.exit("real-gpu-check: FAILED")
print("real-gpu-check: ok")
PY
