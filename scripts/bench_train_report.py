#!/usr/bin/env python3
"""scripts/bench_train_gpu.sh's arithmetic (its top comment states the
conventions).

  bench_train_report.py NAME PLAN LOG OUT   one JSON line for a run
  bench_train_report.py --table JSONL       the Markdown table of the runs
"""
import json
import re
import statistics
import sys

PEAK = 989.5e12  # H100/H200 SXM, bf16 dense, FLOP/s


def flops_per_token(m, seq):
    """(causal-halved, un-halved) training FLOPs a token, and N."""
    h, f, L, v = m["hidden"], m["ffn"], m["layers"], m["vocab"]
    H, G, d = m["heads"], m["kv_heads"], m["head_dim"]
    layer = (H + 2 * G) * d * h + h * H * d + 2 * f * h + h * f
    n = L * layer + v * h  # the output layer (the embedding when tied)
    attn = 6 * L * H * d * seq
    return 6 * n + attn, 6 * n + 2 * attn, n


def profile(out, head):
    """{class or op: ms} summed from step 2 on, from kern_release's line
    that starts with head."""
    for line in open(out, errors="replace"):
        if line.startswith(head):
            return {m.group(1): float(m.group(2)) for m in re.finditer(
                r"([a-z0-9_-]+) (-?[0-9.]+) ms [0-9]+ calls", line)}
    raise SystemExit("no '%s' line in %s" % (head, out))


def run(name, plan, log, out):
    p = json.load(open(plan))["runtime"]
    m, seq = p["model"], p["seq_len"]
    rows = [json.loads(x) for x in open(log)]
    times = [r["step_time_s"] for r in rows[1:]]
    step = statistics.median(times)
    mean = statistics.mean(times)
    tokens = rows[-1]["tokens"]
    half, full, n = flops_per_token(m, seq)
    prof = profile(out, "kern profile:")
    per = {k: v / 1e3 / len(times) for k, v in prof.items()}
    ops = {k: round(v / len(times), 3)
           for k, v in profile(out, "kern profile ops:").items()}
    busy = sum(per.values())
    r = {
        "config": name, "model": m["name"], "layers": m["layers"],
        "seq": seq, "tokens": tokens, "params_gemm": n,
        "step_s": step, "tokens_per_s": tokens / step,
        "tflops": half * tokens / step / 1e12,
        "mfu": half * tokens / step / PEAK,
        "mfu_unhalved": full * tokens / step / PEAK,
        "loss_first": rows[0]["loss"], "loss_last": rows[-1]["loss"],
        "steps": len(rows),
        "breakdown_s": dict(per, communication=0.0,
                            host_gaps=max(mean - busy, 0.0)),
        "mean_step_s": mean,
        "ops_ms_per_step": ops,
    }
    print(json.dumps(r, sort_keys=True))


def table(jsonl):
    rs = [json.loads(x) for x in open(jsonl) if x.strip()]
    print("| config | step | tokens/s | TFLOP/s | MFU (halved) | MFU (un-halved) "
          "| GEMM | attention | memory-bound | copy | comm | host gaps |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rs:
        b, t = r["breakdown_s"], r["mean_step_s"]
        cell = lambda k: "%.1f ms (%.0f%%)" % (b.get(k, 0) * 1e3,
                                              100 * b.get(k, 0) / t)
        print("| %s, %d layers, seq %d | %.1f ms | %.0f | %.0f | %.1f%% | %.1f%% "
              "| %s | %s | %s | %s | %s | %s |" % (
                  r["model"], r["layers"], r["seq"], r["step_s"] * 1e3,
                  r["tokens_per_s"], r["tflops"], 100 * r["mfu"],
                  100 * r["mfu_unhalved"], cell("gemm"), cell("attention"),
                  cell("memory-bound"), cell("copy"), cell("communication"),
                  cell("host_gaps")))


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        table(sys.argv[2])
    else:
        run(*sys.argv[1:5])
