#!/usr/bin/env python3
"""scripts/bench_train_gpu.sh's arithmetic (its top comment states the
conventions).

  bench_train_report.py NAME PLAN LOG OUT   one JSON line for a run
  bench_train_report.py --table JSONL       the Markdown tables of the runs
  bench_train_report.py --calibrate JSONL   data/hardware.yaml's figures
                                            from the runs' per-class times
  bench_train_report.py --gemms JSONL       each GEMM shape's TFLOP/s in
                                            the runs (kern_cuda_prof.cu's
                                            "kern profile gemms" line)

Predicted vs measured: the plan's "runtime_estimate" (gtplan sim's
estimate of the step, sim/step_est.h) against the profile's classes:
gemm and copy as measured, attention forward and backward from the
profile's attn_fwd and attn_bwd ops, optimizer its adam op, elementwise
the memory-bound class less adam (the casts inside GEMM and attention
calls are memory-bound in both).
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


def gemm_profile(out):
    """[(shape, ms, calls)] from the "kern profile gemms:" line, summed
    from step 2 on ([] where the binary prints none)."""
    for line in open(out, errors="replace"):
        if line.startswith("kern profile gemms:"):
            return [(m.group(1), float(m.group(2)), int(m.group(3)))
                    for m in re.finditer(
                        r"([NT]{2} [0-9]+x[0-9]+x[0-9]+ [a-z0-9]+(?:\+=)?) "
                        r"(-?[0-9.]+) ms ([0-9]+) calls", line)]
    return []


def gemm_flops(shape):
    """2 m n k of a gemm_profile shape ("NT 4096x6144x4096 bf16")."""
    m, n, k = (int(x) for x in shape.split()[1].split("x"))
    return 2.0 * m * n * k


# The estimate's classes, in the tables' order.
CLASSES = ["gemm", "attention_fwd", "attention_bwd", "elementwise", "copy",
           "optimizer", "communication", "host_gaps"]


def measured_classes(per, ops_ms, comm, gaps):
    """The profile's device seconds a step by the estimate's classes."""
    # each op under its plain name and its bf16-copy variant (kern.h's _bf)
    op = lambda k: (ops_ms.get(k, 0.0) + ops_ms.get(k + "_bf", 0.0)) / 1e3
    return {
        "gemm": per.get("gemm", 0.0),
        "attention_fwd": op("attn_fwd"),
        "attention_bwd": op("attn_bwd"),
        "elementwise": per.get("memory-bound", 0.0) - op("adam"),
        "copy": per.get("copy", 0.0),
        "optimizer": op("adam"),
        "communication": comm,
        "host_gaps": gaps,
    }


def run(name, plan, log, out):
    doc = json.load(open(plan))
    p = doc["runtime"]
    est = doc.get("runtime_estimate") or {}
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
        "samples": doc["batch"]["global"],
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
        "head_dim": m["head_dim"],
        "predicted_step_s": est.get("step_s"),
        "predicted_s": {k: v["time_s"] for k, v in
                        (est.get("classes") or {}).items()},
        "predicted_work": {k: [v["work"], v["calls"]] for k, v in
                           (est.get("classes") or {}).items()},
        "measured_s": measured_classes(per, ops, 0.0, max(mean - busy, 0.0)),
        "logged_prediction_s": rows[-1].get("predicted_step_s"),
        "gemms": [[g, ms, c] for g, ms, c in gemm_profile(out)],
    }
    print(json.dumps(r, sort_keys=True))


def gemms(jsonl):
    """Every run's GEMM shapes, largest total time first: calls a step,
    ms a call, TFLOP/s."""
    rs = [json.loads(x) for x in open(jsonl) if x.strip()]
    print("| config | GEMM (row-major C[m x n] = op(A) op(B), k deep; C "
          "type, += accumulating) | calls a step | ms a call | TFLOP/s |")
    print("|---|---|---|---|---|")
    for r in rs:
        for g, ms, c in sorted(r.get("gemms", []), key=lambda x: -x[1]):
            if c and ms > 0:
                print("| %s | %s | %d | %.3f | %.1f |" % (
                    r["config"], g, round(c / (r["steps"] - 1)), ms / c,
                    gemm_flops(g) * c / (ms / 1e3) / 1e12))


def plural(n, word):
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def table(jsonl):
    rs = [json.loads(x) for x in open(jsonl) if x.strip()]
    print("| config | step | tokens/s | TFLOP/s | MFU (halved) | MFU (un-halved) "
          "| GEMM | attention | memory-bound | copy | comm | host gaps |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rs:
        b, t = r["breakdown_s"], r["mean_step_s"]
        cell = lambda k: "%.1f ms (%.0f%%)" % (b.get(k, 0) * 1e3,
                                              100 * b.get(k, 0) / t)
        print("| %s, %d layers, seq %d, %s a step | %.1f ms | %.0f | %.0f "
              "| %.1f%% | %.1f%% | %s | %s | %s | %s | %s | %s |" % (
                  r["model"], r["layers"], r["seq"],
                  plural(r.get("samples", 1), "sample"), r["step_s"] * 1e3,
                  r["tokens_per_s"], r["tflops"], 100 * r["mfu"],
                  100 * r["mfu_unhalved"], cell("gemm"), cell("attention"),
                  cell("memory-bound"), cell("copy"), cell("communication"),
                  cell("host_gaps")))
    print()
    print("Predicted (gtplan sim, the plan's runtime_estimate) vs measured "
          "(device ms a step, profiled):")
    print()
    print("| config | step | " + " | ".join(CLASSES) + " |")
    print("|---" * (len(CLASSES) + 2) + "|")
    for r in rs:
        pr, me = r.get("predicted_s") or {}, r["measured_s"]
        pair = lambda k: "%s / %.1f" % (
            "%.1f" % (pr[k] * 1e3) if k in pr else "-", me.get(k, 0) * 1e3)
        step = r.get("predicted_step_s")
        print("| %s | %s / %.1f ms | %s |" % (
            r["config"], "%.1f" % (step * 1e3) if step else "-",
            r["step_s"] * 1e3, " | ".join(pair(k) for k in CLASSES)))


def fit(points):
    """(a, t) with time = work * a + calls * t, least squares over the
    points [(work, calls, seconds)]; t = 0 when the fit would make it
    negative (a fixed cost below zero means nothing)."""
    sww = sum(w * w for w, c, y in points)
    swc = sum(w * c for w, c, y in points)
    scc = sum(c * c for w, c, y in points)
    swy = sum(w * y for w, c, y in points)
    scy = sum(c * y for w, c, y in points)
    det = sww * scc - swc * swc
    if len(points) >= 2 and abs(det) > 1e-12 * sww * scc:
        a = (swy * scc - scy * swc) / det
        t = (sww * scy - swc * swy) / det
        if t >= 0 and a > 0:
            return a, t
    return swy / sww, 0.0


def calibrate(jsonl, peak=989.5e12, hbm=4800e9):
    """data/hardware.yaml's keys of a profile from the runs (at least two
    configs), indented to paste into its mapping."""
    rs = [json.loads(x) for x in open(jsonl) if x.strip()]
    pts = lambda k: [(r["predicted_work"][k][0], r["predicted_work"][k][1],
                      r["measured_s"][k]) for r in rs]
    a, t = fit(pts("gemm"))
    print("  gemm_efficiency: %.3f" % (1 / a / peak))
    print("  gemm_call_us: %.2f" % (t * 1e6))
    for k, key in (("elementwise", "elementwise"), ("copy", "copy"),
                   ("optimizer", "optimizer")):
        a, t = fit(pts(k))
        print("  %s_efficiency: %.3f" % (key, 1 / a / hbm))
        print("  %s_call_us: %.2f" % (key, t * 1e6))
    print("  attention:")
    for hd in sorted({r["head_dim"] for r in rs}):
        tf = lambda k: statistics.mean(
            r["predicted_work"][k][0] / r["measured_s"][k] / 1e12
            for r in rs if r["head_dim"] == hd)
        print("    - {head_dim: %d, fwd_tflops: %.1f, bwd_tflops: %.1f}" % (
            hd, tf("attention_fwd"), tf("attention_bwd")))


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        table(sys.argv[2])
    elif sys.argv[1] == "--gemms":
        gemms(sys.argv[2])
    elif sys.argv[1] == "--calibrate":
        calibrate(sys.argv[2])
    else:
        run(*sys.argv[1:5])
