#!/usr/bin/python3
"""Checks gtplan-run's get_logprobs and refit export outputs.

usage: runtime_calls.py logprobs TOL REF.json RUN.json
       runtime_calls.py export TOL REF.safetensors RUN.safetensors
       runtime_calls.py dump RUN.safetensors RUN.weights
       runtime_calls.py order ORDER PLAN.json GOOD.safetensors RUN.safetensors
       runtime_calls.py records PLAN.json RECORD
       runtime_calls.py float64 PLAN.json DATA RUN.weights RUN.logprobs

logprobs: the two --logprobs files hold the same samples and every value
  agrees within TOL x max(|ref|, 1).
export: both --export files are well-formed safetensors (read here without
  numpy: header length, JSON header, F32 data, offsets contiguous in sorted
  name order) with the same names and shapes, and every tensor agrees
  normwise within TOL (||run - ref|| / ||ref||).
dump: the export (gtp_then_tp) holds exactly the --dump-weights tensors of
  the same run under their Hugging Face names.
order: RUN (a TP x G layout's export in ORDER, tp_then_gtp or tp_only)
  holds exactly the rows that order reaches of GOOD (the correct export of
  the same weights), computed here from the plan's sizes: column-parallel
  and vocab weights as whole rows in the order of the pieces (TP-local row
  blocks of S = padded rows / G, t-major for TP gathers, g-major for
  tp_then_gtp), row-parallel weights in place; the shape must be the
  wrong one of NeMo-RL PR #4512's stack ([R/G, k] for tp_only), not GOOD's.
records: every rank's get_logprobs record is exactly train's forward per
  micro-batch (GTP all-gathers, TP all-reduces, CE max/target/sumexp over
  tp; rt_model.h), with no other collective; get_logprobs.results is one
  world gather.
float64: the logprobs of the model in RUN.weights on the batch the file
  names, recomputed in float64 (tests/runtime_reference.py), agree within
  1e-5 x max(|value|, 1).
Exit 0 when all hold, 1 when not, 2 on a usage or read error.
"""
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runtime_reference as ref  # noqa: E402

GTP_PAD = 16
F64_TOL = 1e-5
HF = {"embedding": "model.embed_tokens.weight", "final_norm": "model.norm.weight"}


def hf_name(name):
    if name in HF:
        return HF[name]
    _, l, kind = name.split(".")
    return {"norm": f"model.layers.{l}.post_attention_layernorm.weight",
            "fc1": f"model.layers.{l}.mlp.up_proj.weight",
            "fc2": f"model.layers.{l}.mlp.down_proj.weight"}[kind]


def read_safetensors(path):
    """{name: (shape, [floats])}, checking the format on the way."""
    raw = open(path, "rb").read()
    if len(raw) < 8:
        raise ValueError(f"{path}: shorter than the header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if n % 8 or 8 + n > len(raw):
        raise ValueError(f"{path}: header length {n} (file {len(raw)})")
    text = raw[8:8 + n].decode("utf-8")
    head = json.loads(text)
    if text.rstrip() != json.dumps(head, separators=(",", ":"), sort_keys=True):
        raise ValueError(f"{path}: header keys not sorted or not compact")
    meta = head.pop("__metadata__", None)
    if not isinstance(meta, dict) or meta.get("format") != "pt":
        raise ValueError(f"{path}: __metadata__ {meta}")
    data, out, end = raw[8 + n:], {}, 0
    for name in sorted(head):
        e = head[name]
        if e["dtype"] != "F32":
            raise ValueError(f"{path}: {name} dtype {e['dtype']}")
        b, f = e["data_offsets"]
        count = math.prod(e["shape"])
        if b != end or f - b != 4 * count:
            raise ValueError(f"{path}: {name} offsets {b}, {f}")
        out[name] = (e["shape"], list(struct.unpack(f"<{count}f", data[b:f])))
        end = f
    if end != len(data):
        raise ValueError(f"{path}: {len(data) - end} bytes after the data")
    return out, meta


def cmd_logprobs(tol, a, b):
    ra, rb = (json.load(open(p, encoding="utf-8")) for p in (a, b))
    bad = []
    for k in ("format", "first_sample", "samples", "seq_len", "step"):
        if ra[k] != rb[k]:
            bad.append(f"{k}: {rb[k]}, reference {ra[k]}")
    if len(ra["logprobs"]) != ra["samples"] or any(
            len(r) != ra["seq_len"] for r in ra["logprobs"]):
        bad.append("the reference is not samples x seq_len")
    worst = 0.0
    for i, (x, y) in enumerate(zip(ra["logprobs"], rb["logprobs"])):
        if len(x) != len(y):
            bad.append(f"sample {i}: {len(y)} values, want {len(x)}")
            continue
        for j, (u, v) in enumerate(zip(x, y)):
            e = abs(u - v) / max(abs(u), 1.0)
            worst = max(worst, e)
            if e > tol:
                bad.append(f"sample {i} token {j}: {v!r}, reference {u!r}")
    print(f"logprobs: {ra['samples']} x {ra['seq_len']} of step "
          f"{ra['step']}, worst relative error {worst:.2e}")
    return bad


def cmd_export(tol, a, b):
    (ta, _), (tb, _) = read_safetensors(a), read_safetensors(b)
    bad, worst = [], 0.0
    if list(ta) != list(tb):
        return [f"names {list(tb)}, reference {list(ta)}"]
    for name, (shape, v) in ta.items():
        if tb[name][0] != shape:
            bad.append(f"{name}: shape {tb[name][0]}, reference {shape}")
            continue
        d = math.sqrt(sum((x - y) ** 2 for x, y in zip(v, tb[name][1])))
        e = d / (math.sqrt(sum(x * x for x in v)) or 1.0)
        worst = max(worst, e)
        if e > tol:
            bad.append(f"{name}: off by {e:.3e} (normwise) > {tol}")
    print(f"export: {len(ta)} tensors, worst normwise error {worst:.2e}")
    return bad


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def cmd_dump(st, weights):
    t, meta = read_safetensors(st)
    doc = json.load(open(weights, encoding="utf-8"))
    bad = []
    if meta.get("gtplan.refit_gather") != "gtp_then_tp":
        bad.append(f"metadata {meta}")
    names = set()
    for w in doc["tensors"]:
        n = hf_name(w["name"])
        names.add(n)
        r, c = w["shape"]
        want_shape = [c] if w["name"].endswith("norm") else [r, c]
        if n not in t:
            bad.append(f"{n} ({w['name']}) is not exported")
        elif t[n][0] != want_shape:
            bad.append(f"{n}: shape {t[n][0]}, the dump has {want_shape}")
        elif t[n][1] != [f32(x) for x in w["data"]]:
            bad.append(f"{n}: values differ from the dump's {w['name']}")
    if names != set(t):
        bad.append(f"exported but not dumped: {sorted(set(t) - names)}")
    print(f"dump: {len(t)} exported tensors equal the dump's")
    return bad


def pieces(order, tp, g):
    """(t, g) of each gathered block, in the order the gathers stack them."""
    if order == "tp_then_gtp":
        return [(t, k) for k in range(g) for t in range(tp)]
    if order == "tp_only":
        return [(t, 0) for t in range(tp)]
    return [(t, k) for t in range(tp) for k in range(g)]


def expected(order, kind, shape, tp, g, vocab):
    """The rows of the correct weight that `order` returns, in its order
    (row-parallel weights: the rows it covers, in place)."""
    rows, cols = shape
    if kind == "row":   # TP splits the columns; blocks of S rows
        d0 = rows
    elif kind == "vocab":
        d0 = -(-vocab // tp)
    else:
        d0 = rows // tp
    align = GTP_PAD * g
    s = (d0 + ((align - d0 % align) % align if g > 1 else 0)) // g
    out = []
    for t, k in pieces(order, tp, g):
        base = 0 if kind == "row" else t * d0
        real = d0 if kind != "vocab" else max(0, min(d0, vocab - t * d0))
        for j in range(k * s, min((k + 1) * s, real)):
            if kind != "row" or t == 0:   # row-parallel: once per row
                out.append(base + j)
    return sorted(out) if kind == "row" else out


def cmd_order(order, plan_path, good, run):
    plan = json.load(open(plan_path, encoding="utf-8"))
    tp, g = plan["sizes"]["tp"], plan["sizes"]["gtp"]
    vocab = plan["runtime"]["vocab"]
    (tg, _), (tr, meta) = read_safetensors(good), read_safetensors(run)
    bad = []
    if meta.get("gtplan.refit_gather") != order:
        bad.append(f"metadata {meta}, want refit_gather {order}")
    if list(tg) != list(tr):
        return bad + [f"names {list(tr)}, want {list(tg)}"]
    shown = []
    for name, (shape, v) in tg.items():
        if len(shape) == 1:
            if tr[name] != (shape, v):
                bad.append(f"{name}: a norm must come back unchanged")
            continue
        kind = ("vocab" if "embed" in name else
                "row" if "down_proj" in name else "column")
        rows = expected(order, kind, shape, tp, g, vocab)
        cols = shape[1]
        want = [x for r in rows for x in v[r * cols:(r + 1) * cols]]
        got_shape, got = tr[name]
        if got_shape != [len(rows), cols] or got != want:
            bad.append(f"{name}: got shape {got_shape}, want "
                       f"[{len(rows)}, {cols}] with rows {rows[:12]}...")
        if kind == "column" and not shown:
            shown = rows
            wrong = ("a permutation" if order == "tp_then_gtp" else
                     f"R/G = {shape[0]}/{g} rows")
            if order == "tp_then_gtp" and (sorted(rows) != list(range(
                    shape[0])) or rows == list(range(shape[0]))):
                bad.append(f"{name}: {order} should permute the rows")
            if order == "tp_only" and len(rows) * g != shape[0]:
                bad.append(f"{name}: {order} should give R/G rows")
            print(f"order {order}: {name} [{shape[0]}, {cols}] comes back "
                  f"[{len(rows)}, {cols}] ({wrong}), rows "
                  f"{runs(rows)}")
    return bad


def runs(rows):
    """"0-15, 48-63, ..." for the first runs of consecutive rows."""
    out, i = [], 0
    while i < len(rows) and len(out) < 4:
        j = i
        while j + 1 < len(rows) and rows[j + 1] == rows[j] + 1:
            j += 1
        out.append(f"{rows[i]}-{rows[j]}")
        i = j + 1
    return ", ".join(out) + (", ..." if i < len(rows) else "")


def shard(d0, d1, g):
    if g == 1:
        return d0 * d1
    align = GTP_PAD * g
    return (d0 + (align - d0 % align) % align) // g * d1


def cmd_records(plan_path, record):
    plan = json.load(open(plan_path, encoding="utf-8"))
    sz, rt, b = plan["sizes"], plan["runtime"], plan["batch"]
    tp, g, cp, layers = sz["tp"], sz["gtp"], sz["cp"], rt["layers"]
    h, ffn, world = rt["hidden"], rt["ffn"], plan["world_size"]
    micro = b["micro"] or 1
    per_lane = b["global"] // sz["dp"]
    T = micro * rt["seq_len"] // cp
    vl = -(-rt["vocab"] // tp)
    fwd = [("all-gather", "gtp", "embedding", shard(vl, h, g), None),
           ("all-reduce", "tp", "embedding.out", T * h, "sum")]
    for l in range(layers):
        fwd += [("all-gather", "gtp", f"layers.{l}.fc1",
                 shard(ffn // tp, h, g), None),
                ("all-gather", "gtp", f"layers.{l}.fc2",
                 shard(h, ffn // tp, g), None),
                ("all-reduce", "tp", f"layers.{l}.fc2", T * h, "sum")]
    fwd += [("all-gather", "gtp", "embedding", shard(vl, h, g), None),
            ("all-reduce", "tp", "ce.max", T, "max"),
            ("all-reduce", "tp", "ce.target", T, "sum"),
            ("all-reduce", "tp", "ce.sumexp", T, "sum")]
    size = {"tp": tp, "gtp": g}
    want = [x for x in fwd if size[x[1]] > 1] * (per_lane // micro)
    results = ([("gather", "world", "logprobs", per_lane * rt["seq_len"] // cp,
                 None)] if world > 1 else [])
    bad, n = [], 0
    for r in range(world):
        lines = [json.loads(l) for l in open(f"{record}.{r}", encoding="utf-8")
                 if l.strip()]
        got = [(d["coll"], d["group"], d["what"], d["count"], d["op"])
               for d in lines if d["call"] == "get_logprobs"]
        res = [(d["coll"], d["group"], d["what"], d["count"], d["op"])
               for d in lines if d["call"] == "get_logprobs.results"]
        n += len(got)
        if got != want:
            first = next((i for i, (x, y) in enumerate(zip(got, want))
                          if x != y), min(len(got), len(want)))
            bad.append(f"rank {r}: get_logprobs issued {len(got)} "
                       f"collectives, want {len(want)}; first difference at "
                       f"{first}: {got[first:first + 1]} vs "
                       f"{want[first:first + 1]}")
        if res != results:
            bad.append(f"rank {r}: get_logprobs.results {res}, want {results}")
    print(f"records: get_logprobs issued {n} collectives on {world} ranks, "
          f"{len(want)} each, as predicted")
    return bad


def cmd_float64(plan_path, data, weights, logprobs):
    plan = json.load(open(plan_path, encoding="utf-8"))
    rt = plan["runtime"]
    p = {t["name"]: ref.rows(t) for t in
         json.load(open(weights, encoding="utf-8"))["tensors"]}
    lp = json.load(open(logprobs, encoding="utf-8"))
    ds = ref.Dataset(data)
    bad, worst = [], 0.0
    for i, row in enumerate(lp["logprobs"]):
        s = ds.sample(rt["seed"], lp["first_sample"] + i, rt["seq_len"],
                      rt["vocab"])
        want = [-x for x in ref.token_losses(p, rt["layers"], s[:-1], s[1:])]
        for j, (u, v) in enumerate(zip(want, row)):
            e = abs(u - v) / max(abs(u), 1.0)
            worst = max(worst, e)
            if e > F64_TOL:
                bad.append(f"sample {i} token {j}: {v!r}, float64 {u!r}")
    print(f"float64: {len(lp['logprobs'])} samples of step {lp['step']} "
          f"({data}), worst relative error {worst:.2e}")
    return bad


def main(argv):
    cmds = {"logprobs": (3, lambda a: cmd_logprobs(float(a[0]), *a[1:])),
            "export": (3, lambda a: cmd_export(float(a[0]), *a[1:])),
            "dump": (2, lambda a: cmd_dump(*a)),
            "order": (4, lambda a: cmd_order(*a)),
            "records": (2, lambda a: cmd_records(*a)),
            "float64": (4, lambda a: cmd_float64(*a))}
    if len(argv) < 2 or argv[1] not in cmds or len(argv) != cmds[argv[1]][0] + 2:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        bad = cmds[argv[1]][1](argv[2:])
    except (OSError, ValueError, KeyError, UnicodeDecodeError) as e:
        print(f"runtime_calls: {e}", file=sys.stderr)
        return 2
    for b in bad[:20]:
        print(f"runtime_calls: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
