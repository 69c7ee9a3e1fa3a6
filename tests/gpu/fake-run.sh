#!/usr/bin/env bash
# The real-GPU check (real-gpu-check.sh) on this machine's fake nvidia-smi
# (tests/e2e/fake: 2 idle GPUs), so that the script a GPU machine runs stays true.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/trialq-fakegpu-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
ln -s "$here/../e2e/fake/nvidia-smi" "$work/bin/nvidia-smi"
printf '40960 0 0 0\n40960 0 0 0\n' > "$work/gpus.txt"
PATH="$work/bin:$PATH" TRIALQ_FAKE_GPUS="$work/gpus.txt" bash "$here/real-gpu-check.sh" "$work/out"
