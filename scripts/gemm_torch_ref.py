#!/usr/bin/env python3
"""An independent reference for the GEMM table of docs/runtime-gpu.md:
PyTorch's own matmul (cuBLAS through torch) at the shapes gtplan-run's
bf16 training step calls (the 1B and 8B slice of make bench-train-gpu),
timed as tests/gpu/bench_kernels_gpu.c times kern_gemm_lt (a warm-up, then
the median of 7 batches of 10 calls by CUDA events), in TFLOP/s of
2 m n k. Run where PyTorch and a GPU are (the lent H200 machines); gtplan
itself never imports torch.

  gemm_torch_ref.py            every shape, one line each

Shapes are kern.h's row-major C[m x n] = op(A) op(B) with k deep; "f32"
C: bf16 operands, fp32 output (torch.mm's out_dtype where this PyTorch has
it), "+=": added to an fp32 C (addmm); where PyTorch refuses a form, the
line says so instead of a number.
"""
import statistics
import sys

import torch

SHAPES = [  # (ta, tb, m, n, k, ctype) as gtplan-run's profile names them
    # Llama-3.2-1B, 4096 tokens: qkv, proj, fc1, fc2, output layer
    ("NT", 4096, 3072, 2048, "f32"), ("NN", 4096, 2048, 3072, "f32"),
    ("TN", 3072, 2048, 4096, "f32"), ("TN", 3072, 2048, 4096, "f32+="),
    ("NT", 4096, 2048, 2048, "f32"), ("NN", 4096, 2048, 2048, "bf16"),
    ("TN", 2048, 2048, 4096, "f32"), ("TN", 2048, 2048, 4096, "f32+="),
    ("NT", 4096, 16384, 2048, "bf16"), ("NN", 4096, 2048, 16384, "f32"),
    ("TN", 16384, 2048, 4096, "f32"), ("TN", 16384, 2048, 4096, "f32+="),
    ("NT", 4096, 2048, 8192, "f32"), ("NN", 4096, 8192, 2048, "bf16"),
    ("TN", 2048, 8192, 4096, "f32"), ("TN", 2048, 8192, 4096, "f32+="),
    ("NT", 4096, 128256, 2048, "bf16"), ("NN", 4096, 2048, 128256, "f32"),
    # Llama-3.1-8B layers, 4096 tokens
    ("NT", 4096, 6144, 4096, "f32"), ("NN", 4096, 4096, 6144, "f32"),
    ("TN", 6144, 4096, 4096, "f32"), ("TN", 6144, 4096, 4096, "f32+="),
    ("NT", 4096, 4096, 4096, "f32"), ("NN", 4096, 4096, 4096, "bf16"),
    ("TN", 4096, 4096, 4096, "f32"), ("TN", 4096, 4096, 4096, "f32+="),
    ("NT", 4096, 28672, 4096, "bf16"), ("NN", 4096, 4096, 28672, "f32"),
    ("TN", 28672, 4096, 4096, "f32"), ("TN", 28672, 4096, 4096, "f32+="),
    ("NT", 4096, 4096, 14336, "f32"), ("NN", 4096, 14336, 4096, "bf16"),
    ("TN", 4096, 14336, 4096, "f32"), ("TN", 4096, 14336, 4096, "f32+="),
    ("NT", 4096, 128256, 4096, "bf16"), ("NN", 4096, 4096, 128256, "f32"),
]


def operand(rows, cols, t):
    """op(X) of rows x cols, stored as gtplan stores it (transposed: the
    transpose of a dense [cols, rows] matrix)."""
    x = torch.randn(cols, rows, device="cuda", dtype=torch.bfloat16) \
        if t == "T" else \
        torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    return x.t() if t == "T" else x


def call(t, m, n, k, ctype):
    """The call, on random operands: C = op(A) op(B), t = "NT" and so on."""
    a = operand(m, k, t[0])
    b = operand(k, n, t[1])
    if ctype == "bf16":
        return lambda: torch.mm(a, b)
    c = torch.zeros(m, n, device="cuda", dtype=torch.float32)
    if ctype == "f32":
        return lambda: torch.mm(a, b, out_dtype=torch.float32)
    return lambda: torch.addmm(c, a, b, out_dtype=torch.float32)


def time_ms(fn):
    fn()
    torch.cuda.synchronize()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    runs = []
    for _ in range(7):
        ev[0].record()
        for _ in range(10):
            fn()
        ev[1].record()
        torch.cuda.synchronize()
        runs.append(ev[0].elapsed_time(ev[1]) / 10)
    return statistics.median(runs)


def main():
    print("torch %s, %s" % (torch.__version__, torch.cuda.get_device_name()))
    for t, m, n, k, ctype in SHAPES:
        name = "%s %dx%dx%d %s" % (t, m, n, k, ctype)
        try:
            fn = call(t, m, n, k, ctype)
            ms = time_ms(fn)
        except (RuntimeError, TypeError) as e:
            print("torch-gemm %-28s refused: %s" % (name, str(e)[:60]))
            continue
        print("torch-gemm %-28s %8.3f ms %7.1f TFLOP/s" % (
            name, ms, 2.0 * m * n * k / (ms * 1e-3) / 1e12))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
