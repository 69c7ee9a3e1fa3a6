"""Samples the process table every 100 ms and counts, per trial, the live copies of its
command: processes with a trial script among their arguments (e.g. metrics.sh) whose
environment names the trial (NNI_EXP_ID, NNI_TRIAL_JOB_ID) of an experiment listed in
the ids file. One copy is one process group of such processes (the script's subshells
are in its group); two groups at once are two copies of the trial.

  trial_copies.py SCRIPT[,SCRIPT...] IDS_FILE OUT_FILE    (ends when OUT_FILE.stop exists)

OUT_FILE: "samples N", "seen N" (trials seen running), then one line per sample that
saw two copies of a trial: "<time> <exp>/<trial> groups <pgids>"."""
import os
import sys
import time

scripts, ids_file, out = set(sys.argv[1].encode().split(b",")), sys.argv[2], sys.argv[3]
samples, seen, bad = 0, set(), []


def environ(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        return dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)


def write():
    with open(out + ".tmp", "w") as f:
        f.write(f"samples {samples}\nseen {len(seen)}\n")
        f.writelines(line + "\n" for line in bad)
    os.replace(out + ".tmp", out)


while not os.path.exists(out + ".stop"):
    try:
        with open(ids_file) as f:
            ids = set(f.read().split())
    except OSError:
        ids = set()
    copies = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if not scripts.intersection(f.read().split(b"\0")):
                    continue
            with open(f"/proc/{pid}/stat") as f:
                st = f.read()
            fields = st[st.rindex(")") + 2:].split()
            if fields[0] in "ZX":
                continue
            env = environ(pid)
        except (OSError, ValueError):
            continue
        exp = env.get(b"NNI_EXP_ID", b"").decode()
        if exp in ids:
            copies.setdefault(f"{exp}/{env.get(b'NNI_TRIAL_JOB_ID', b'?').decode()}", {})[fields[2]] = pid
    samples += 1
    seen.update(copies)
    bad += [f"{time.time():.1f} {t} groups {' '.join(g)}" for t, g in copies.items() if len(g) > 1]
    if samples % 10 == 0:
        write()
    time.sleep(0.1)
write()
