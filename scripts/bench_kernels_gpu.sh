#!/usr/bin/env bash
# make bench-kernels-gpu: TFLOP/s of the bf16 building blocks on this host's
# first GPU (tests/gpu/bench_kernels_gpu.c): the causal flash attention
# forward and backward (FLOPs 4 b nh s^2 hd / 2, backward 2.5 times that) and
# the cuBLASLt GEMMs of Llama-3.1-8B and Llama-3.2-1B linear layers at 4096
# and 8192 tokens (2 m n k); with `mem`, instead, the memory-bound kern_* ops
# of the bf16 training step at the Llama-3.2-1B and Llama-3.1-8B training
# shapes in TB/s of the bytes their contracts move (tests/gpu/bench_mem_gpu.c:
# median of ITERS calls). Prints the table and keeps it in
# $OUT/bench-kernels.txt (or a temporary folder), with the GPU's name.
#   scripts/bench_kernels_gpu.sh [attn|gemm|all|mem] [ITERS]   (default all 10)
set -u
cd "$(dirname "$0")/.." || exit 2
BIN=${BENCH_KERNELS_GPU:-build/gpu/bench_kernels_gpu}
logs=${OUT:-$(mktemp -d)}
mkdir -p "$logs"
[ -x "$BIN" ] || { echo "bench-kernels-gpu: $BIN is not built (make build/gpu/bench_kernels_gpu)"; exit 2; }
{
	nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null
	git rev-parse --short HEAD 2>/dev/null | sed 's/^/commit /'
	"$BIN" "${1:-all}" "${2:-10}"
} 2>&1 | tee "$logs/bench-kernels.txt"
exit "${PIPESTATUS[0]}"
