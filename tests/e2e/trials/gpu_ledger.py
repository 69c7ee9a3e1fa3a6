#!/usr/bin/python3
"""Trial of the GPU tests. Writes the CUDA_VISIBLE_DEVICES it got to $NNI_SYS_DIR/cuda.txt
("unset" when absent, else "[<value>]"), and, when $GPU_LEDGER names a file shared by
every trial of the test (of any experiment), counts in it how many trials hold each GPU
at once: "now" per GPU while it runs, "max" the most ever seen. Holds its GPUs for
$GPU_TRIAL_SECONDS (default 2)."""
import fcntl
import json
import os
import time

cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
with open(os.path.join(os.environ["NNI_SYS_DIR"], "cuda.txt"), "w") as f:
    f.write("unset" if cvd is None else "[" + cvd + "]")

ledger = os.environ.get("GPU_LEDGER")
gpus = [g for g in (cvd or "").split(",") if g]


def update(delta):
    with open(ledger + ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(ledger) as f:
                state = json.load(f)
        except FileNotFoundError:
            state = {"now": {}, "max": {}}
        for g in gpus:
            state["now"][g] = state["now"].get(g, 0) + delta
            state["max"][g] = max(state["max"].get(g, 0), state["now"][g])
        with open(ledger + ".tmp", "w") as f:
            json.dump(state, f)
        os.replace(ledger + ".tmp", ledger)


if ledger and gpus:
    update(1)
time.sleep(float(os.environ.get("GPU_TRIAL_SECONDS", "2")))
if ledger and gpus:
    update(-1)
