#!/usr/bin/env bash
# gpu-check.sh OUT_DIR: run once on a machine with a real NVIDIA GPU (not by the test
# suite). Records what the real nvidia-smi prints for trialq's GPU parser
# (queue/gpu.c): `nvidia-smi -q -x` with the GPUs idle, and again while a small CUDA
# program holds 2 GiB on GPU 0 and keeps it busy, so that the busy document shows a
# process, used memory and utilization. The files become test fixtures
# (tests/fixtures/nvidia-smi/, unit/test_queue_gpu).
set -euo pipefail
out=${1:?usage: gpu-check.sh OUT_DIR}
mkdir -p "$out"
nvidia-smi -q -x > "$out/real-idle.xml"
work=$(mktemp -d)
cat > "$work/hold.cu" <<'CU'
#include <cstdio>
#include <cstdlib>
__global__ void spin(long long cycles, int *sink)
{
    long long t0 = clock64();
    int x = 0;
    while (clock64() - t0 < cycles)
        x++;
    if (x == -1)
        *sink = x;
}
int main(int argc, char **argv)
{
    int secs = argc > 1 ? atoi(argv[1]) : 8;
    void *p = nullptr;
    if (cudaMalloc(&p, (size_t)2 << 30) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed\n"); return 1; }
    int rate = 0;
    cudaDeviceGetAttribute(&rate, cudaDevAttrClockRate, 0); /* kHz */
    for (int i = 0; i < secs; i++) {
        spin<<<1024, 256>>>((long long)rate * 1000, (int *)p);
        cudaDeviceSynchronize();
    }
    cudaFree(p);
    return 0;
}
CU
nvcc -O2 -o "$work/hold" "$work/hold.cu"
"$work/hold" 10 &
pid=$!
sleep 5
nvidia-smi -q -x > "$out/real-busy.xml"
nvidia-smi > "$out/real-busy.txt"
wait "$pid"
nvidia-smi --version > "$out/version.txt" 2>&1 || nvidia-smi -h | head -1 > "$out/version.txt"
rm -rf "$work"
ls -l "$out"
