#!/usr/bin/python3
"""Compares a gtplan-run result with the single-rank reference.

usage: runtime_compare.py TOL norm|max REF.log REF.weights RUN.log RUN.weights

The logs are gtplan-run --log files (one JSON line per step), the weights
--dump-weights files ("gtplan-weights/2"). Per step, the loss's relative
error |run - ref| / |ref|. Per tensor, two relative errors:
  norm: ||run - ref||_2 / ||ref||_2 (normwise), and
  max:  max |run - ref| / max |ref| (the worst element against the
        tensor's scale; elementwise ratios mean nothing near zero).
Prints the largest loss error and both weight errors; exits 0 when the loss
error and the chosen weight error are <= TOL, 1 when not (naming the step
or tensor), 2 on a usage or read error.

Adam runs are judged normwise: Adam's update m / (sqrt(v) + eps) turns the
fp32 rounding of a gradient element that is nearly zero into an update of
up to lr, so a few isolated elements may differ by far more than the
gradients do. SGD runs, whose updates are linear in the gradients, are
judged elementwise (max).
"""
import json
import math
import sys


def load_log(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_weights(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("format") != "gtplan-weights/2":
        raise ValueError(f"{path}: not a gtplan-weights/2 file")
    return {t["name"]: t for t in doc["tensors"]}


def main(argv):
    if len(argv) != 7 or argv[2] not in ("norm", "max"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    metric = argv[2]
    try:
        tol = float(argv[1])
        ref_log, run_log = load_log(argv[3]), load_log(argv[5])
        ref_w, run_w = load_weights(argv[4]), load_weights(argv[6])
    except (OSError, ValueError, KeyError) as e:
        print(f"runtime_compare: {e}", file=sys.stderr)
        return 2
    bad = []
    if [r["step"] for r in ref_log] != [r["step"] for r in run_log]:
        bad.append("the runs logged different steps")
    loss_err, loss_at = 0.0, None
    for a, b in zip(ref_log, run_log):
        e = abs(b["loss"] - a["loss"]) / abs(a["loss"])
        if e >= loss_err:
            loss_err, loss_at = e, a["step"]
    if list(ref_w) != list(run_w):
        bad.append(f"tensors differ: {list(ref_w)} vs {list(run_w)}")
    worst = {"norm": (0.0, None), "max": (0.0, None)}
    for name, a in ref_w.items():
        b = run_w.get(name)
        if b is None:
            continue
        if a["shape"] != b["shape"] or len(a["data"]) != len(b["data"]):
            bad.append(f"{name}: shape {b['shape']}, want {a['shape']}")
            continue
        diff = [x - y for x, y in zip(a["data"], b["data"])]
        ref_norm = math.sqrt(sum(x * x for x in a["data"])) or 1.0
        ref_max = max(abs(x) for x in a["data"]) or 1.0
        errs = {"norm": math.sqrt(sum(d * d for d in diff)) / ref_norm,
                "max": max(abs(d) for d in diff) / ref_max}
        for k, e in errs.items():
            if e >= worst[k][0]:
                worst[k] = (e, name)
    print(f"loss {loss_err:.2e} (step {loss_at}); weights normwise "
          f"{worst['norm'][0]:.2e} ({worst['norm'][1]}), worst element "
          f"{worst['max'][0]:.2e} ({worst['max'][1]})")
    if loss_err > tol:
        bad.append(f"loss of step {loss_at} off by {loss_err:.3e} > {tol}")
    w_err, w_at = worst[metric]
    if w_err > tol:
        bad.append(f"weight {w_at} off by {w_err:.3e} ({metric}) > {tol}")
    for b in bad:
        print(f"runtime_compare: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
