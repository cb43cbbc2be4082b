#!/usr/bin/python3
"""Checks gtplan-run's get_logprobs and refit export outputs.

usage: runtime_calls.py logprobs TOL REF.json RUN.json
       runtime_calls.py export TOL REF.safetensors RUN.safetensors
       runtime_calls.py dump PLAN.json RUN.safetensors RUN.weights
       runtime_calls.py order ORDER PLAN.json GOOD.safetensors RUN.safetensors
       runtime_calls.py records PLAN.json RECORD
       runtime_calls.py float64 PLAN.json RUN.weights RUN.logprobs
       runtime_calls.py hf EXPORT_DIR RUN.logprobs

logprobs: the two --logprobs files hold the same samples (the same
  input_ids) and every value agrees within TOL x max(|ref|, 1).
export: both --export files are well-formed safetensors (read here without
  numpy: header length, JSON header, F32 data, offsets contiguous in sorted
  name order) with the same names and shapes, and every tensor agrees
  normwise within TOL (||run - ref|| / ||ref||).
dump: the export (gtp_then_tp) holds exactly the --dump-weights tensors of
  the same run under their Hugging Face names, in Hugging Face's row order
  (tests/runtime_decoder.py's from_megatron: linear_qkv split by query
  group, linear_fc1 into gate and up).
order: RUN (a TP x G layout's export in ORDER, tp_then_gtp or tp_only)
  holds exactly the rows that order reaches of GOOD (the correct export of
  the same weights), computed here from the plan's sizes: column-parallel
  and vocab weights as whole rows in the order of the pieces (TP-local row
  blocks of S = padded rows / G, t-major for TP gathers, g-major for
  tp_then_gtp), row-parallel weights in place. linear_qkv and linear_fc1
  are gathered as Megatron holds them (the TP concatenation of the
  TP-local tensors: per-group interleaved q, k, v; [gate_t; up_t]) and
  then split as the export splits them; tp_only's [R/G, k] comes back
  fused (self_attn.qkv_proj, mlp.gate_up_proj).
records: every rank's get_logprobs record is exactly train's forward per
  micro-batch (rt_model.h), with no other collective;
  get_logprobs.results is one world gather.
float64: the logprobs of the decoder in RUN.weights on the input_ids the
  file carries, recomputed in float64 (tests/runtime_decoder.py), agree
  within 1e-5 x max(|value|, 1).
hf: the same from a Hugging Face export directory (model.safetensors and
  config.json, as transformers reads them): the float64 decoder on the
  exported weights and config gives the logged values within 1e-5 x
  max(|value|, 1); where transformers and torch import, also
  AutoModelForCausalLM on the directory (float64), within 1e-5.
Exit 0 when all hold, 1 when not, 2 on a usage or read error.
"""
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runtime_decoder as dec  # noqa: E402

GTP_PAD = 16
F64_TOL = 1e-5
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
    for k in ("format", "first_sample", "samples", "seq_len", "step",
              "input_ids"):
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


def flat(v):
    return [x for r in v for x in r] if v and isinstance(v[0], list) else v


def cmd_dump(plan_path, st, weights):
    plan = json.load(open(plan_path, encoding="utf-8"))
    cfg = dec.config_of(plan["runtime"]["model"])
    t, meta = read_safetensors(st)
    doc = json.load(open(weights, encoding="utf-8"))
    W = dec.from_megatron({w["name"]: [w["data"][i * w["shape"][1]:(i + 1) *
                                                 w["shape"][1]]
                                       for i in range(w["shape"][0])]
                           for w in doc["tensors"]}, cfg)
    bad = []
    if meta.get("gtplan.refit_gather") != "gtp_then_tp":
        bad.append(f"metadata {meta}")
    for n, v in W.items():
        shape = [len(v), len(v[0])] if isinstance(v[0], list) else [len(v)]
        if n not in t:
            bad.append(f"{n} is not exported")
        elif t[n][0] != shape:
            bad.append(f"{n}: shape {t[n][0]}, the dump gives {shape}")
        elif t[n][1] != [f32(x) for x in flat(v)]:
            bad.append(f"{n}: values differ from the dump's")
    if set(W) != set(t):
        bad.append(f"exported but not dumped: {sorted(set(t) - set(W))}")
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


def fused_of(tg, layer, kind, cfg, tp):
    """Megatron's TP concatenation of linear_qkv or linear_fc1 (rows) from
    the correct export's Hugging Face tensors."""
    p = f"model.layers.{layer}."
    if kind == "qkv":
        q, k, v = (tg[p + f"self_attn.{x}_proj.weight"] for x in "qkv")
        cols = q[0][1]
        rows = lambda t: [t[1][i * cols:(i + 1) * cols]  # noqa: E731
                          for i in range(t[0][0])]
        q, k, v = rows(q), rows(k), rows(v)
        G, d = cfg["num_key_value_heads"], cfg["head_dim"]
        r = cfg["num_attention_heads"] // G
        out = []
        for g in range(G):
            out += q[g * r * d:(g + 1) * r * d] + k[g * d:(g + 1) * d] + \
                v[g * d:(g + 1) * d]
        return out
    gate, up = (tg[p + f"mlp.{x}_proj.weight"] for x in ("gate", "up"))
    cols = gate[0][1]
    gr = [gate[1][i * cols:(i + 1) * cols] for i in range(gate[0][0])]
    ur = [up[1][i * cols:(i + 1) * cols] for i in range(up[0][0])]
    fl = len(gr) // tp
    out = []
    for t in range(tp):
        out += gr[t * fl:(t + 1) * fl] + ur[t * fl:(t + 1) * fl]
    return out


def split_fused(rows, kind, cfg, tp):
    """The export's split of a complete fused tensor (the rows it got)."""
    if kind == "qkv":
        q, k, v = dec.split_groups(rows, cfg)
        return {"self_attn.q_proj.weight": q, "self_attn.k_proj.weight": k,
                "self_attn.v_proj.weight": v}
    fl = len(rows) // (2 * tp)
    gate, up = [], []
    for t in range(tp):
        gate += rows[2 * t * fl:(2 * t + 1) * fl]
        up += rows[(2 * t + 1) * fl:(2 * t + 2) * fl]
    return {"mlp.gate_proj.weight": gate, "mlp.up_proj.weight": up}


def check_fused(order, tg, tr, layer, kind, cfg, tp, g, bad):
    """linear_qkv or linear_fc1 of one layer; returns the rows reached."""
    fused = fused_of(tg, layer, kind, cfg, tp)
    rows = expected(order, "column", [len(fused), len(fused[0])], tp, g, 0)
    got = [fused[r] for r in rows]
    p = f"model.layers.{layer}."
    if order == "tp_only":
        name = p + ("self_attn.qkv_proj.weight" if kind == "qkv" else
                    "mlp.gate_up_proj.weight")
        want = {name: got}
    else:
        want = {p + n: v for n, v in split_fused(got, kind, cfg, tp).items()}
    for name, v in want.items():
        if name not in tr:
            bad.append(f"{name} is not in the export")
        elif tr[name][0] != [len(v), len(v[0])] or tr[name][1] != flat(v):
            bad.append(f"{name}: got shape {tr[name][0]}, want "
                       f"[{len(v)}, {len(v[0])}] from rows {rows[:12]}...")
    return rows, len(fused)


def cmd_order(order, plan_path, good, run):
    plan = json.load(open(plan_path, encoding="utf-8"))
    tp, g = plan["sizes"]["tp"], plan["sizes"]["gtp"]
    model = plan["runtime"]["model"]
    cfg = dec.config_of(model)
    vocab = model["vocab"]
    (tg, _), (tr, meta) = read_safetensors(good), read_safetensors(run)
    bad = []
    if meta.get("gtplan.refit_gather") != order:
        bad.append(f"metadata {meta}, want refit_gather {order}")
    for name, (shape, v) in tg.items():
        if name.endswith("_proj.weight") and any(
                x in name for x in ("q_proj", "k_proj", "v_proj",
                                    "gate_proj", "up_proj")):
            continue
        if len(shape) == 1:
            if tr.get(name) != (shape, v):
                bad.append(f"{name}: a replicated tensor must come back "
                           f"unchanged")
            continue
        kind = ("vocab" if "embed" in name or "lm_head" in name else
                "row" if "down_proj" in name or "o_proj" in name else "?")
        rows = expected(order, kind, shape, tp, g, vocab)
        cols = shape[1]
        want = [x for r in rows for x in v[r * cols:(r + 1) * cols]]
        got_shape, got = tr[name]
        if got_shape != [len(rows), cols] or got != want:
            bad.append(f"{name}: got shape {got_shape}, want "
                       f"[{len(rows)}, {cols}] with rows {rows[:12]}...")
    for layer in range(model["layers"]):
        for kind in ("qkv", "fc1"):
            rows, n = check_fused(order, tg, tr, layer, kind, cfg, tp, g,
                                  bad)
            if layer or kind != "fc1":
                continue
            if order == "tp_then_gtp" and (sorted(rows) != list(range(n))
                                           or rows == list(range(n))):
                bad.append(f"layers.0.fc1: {order} should permute the rows")
            if order == "tp_only" and len(rows) * g != n:
                bad.append(f"layers.0.fc1: {order} should give R/G rows")
            print(f"order {order}: layers.0.fc1 [{n}, k] comes back "
                  f"[{len(rows)}, k], rows {runs(rows)}")
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


def forward_ops(plan):
    """rt_model.h's forward of one micro-batch: (coll, group, what, count,
    op) on a rank, before dropping one-rank groups."""
    sz, rt, b = plan["sizes"], plan["runtime"], plan["batch"]
    m = rt["model"]
    tp, g = sz["tp"], sz["gtp"]
    h, f, d = m["hidden"], m["ffn"], m["head_dim"]
    sp = m["sequence_parallel"] and tp > 1
    N = (b["micro"] or 1) * rt["seq_len"] // sz["cp"]
    local = N // tp if sp else N
    kv = m["kv_heads"] // tp * m["head_dim"]
    vl = -(-m["vocab"] // tp)

    def red(what):
        return (("reduce-scatter", "tp", what, local * h, "sum") if sp else
                ("all-reduce", "tp", what, N * h, "sum"))

    def ag_in(what):
        return [("all-gather", "tp", what, local * h, None)] if sp else []

    def w(name, d0, d1):
        return ("all-gather", "gtp", name, shard(d0, d1, g), None)

    def cp_kv(p):
        # rt_cp.c: the ring's C - 1 forward steps (a send, then a receive,
        # of keys and values), or the all-gathers of keys and values
        if m["cp_comm_type"] == "p2p":
            return [(coll, "cp", p + "qkv.kv", 2 * N * kv, None)
                    for _ in range(sz["cp"] - 1) for coll in ("send", "recv")]
        return [("all-gather", "cp", p + "qkv.k", N * kv, None),
                ("all-gather", "cp", p + "qkv.v", N * kv, None)]

    ops = [w("embedding", vl, h), red("embedding.out")]
    for l in range(m["layers"]):
        p = f"layers.{l}."
        ops += ag_in(p + "qkv.in")
        ops += [w(p + "qkv", (m["heads"] + 2 * m["kv_heads"]) // tp * d, h)]
        ops += cp_kv(p)
        ops += [w(p + "proj", h, m["heads"] // tp * d), red(p + "proj.out")]
        ops += ag_in(p + "fc1.in")
        ops += [w(p + "fc1", 2 * f // tp, h), w(p + "fc2", h, f // tp),
                red(p + "fc2.out")]
    ops += ag_in("output.in")
    ops += [w("embedding" if m["tie_embeddings"] else "output", vl, h),
            ("all-reduce", "tp", "ce.max", N, "max"),
            ("all-reduce", "tp", "ce.target", N, "sum"),
            ("all-reduce", "tp", "ce.sumexp", N, "sum")]
    size = {"tp": tp, "gtp": g, "cp": sz["cp"]}
    return [x for x in ops if size[x[1]] > 1]


def cmd_records(plan_path, record):
    plan = json.load(open(plan_path, encoding="utf-8"))
    sz, rt, b = plan["sizes"], plan["runtime"], plan["batch"]
    world, micro = plan["world_size"], b["micro"] or 1
    per_lane = b["global"] // sz["dp"]
    want = forward_ops(plan) * (per_lane // micro)
    results = ([("gather", "world", "logprobs",
                 per_lane * rt["seq_len"] // sz["cp"], None)]
               if world > 1 else [])
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


def compare_logprobs(lp, fn, what):
    bad, worst = [], 0.0
    for i, (ids, row) in enumerate(zip(lp["input_ids"], lp["logprobs"])):
        for j, (u, v) in enumerate(zip(fn(ids), row)):
            e = abs(u - v) / max(abs(u), 1.0)
            worst = max(worst, e)
            if e > F64_TOL:
                bad.append(f"sample {i} token {j}: {v!r}, {what} {u!r}")
    print(f"{what}: {len(lp['logprobs'])} samples of step {lp['step']}, "
          f"worst relative error {worst:.2e}")
    return bad


def cmd_float64(plan_path, weights, logprobs):
    plan = json.load(open(plan_path, encoding="utf-8"))
    cfg = dec.config_of(plan["runtime"]["model"])
    p = {t["name"]: [t["data"][i * t["shape"][1]:(i + 1) * t["shape"][1]]
                     for i in range(t["shape"][0])]
         for t in json.load(open(weights, encoding="utf-8"))["tensors"]}
    W = dec.from_megatron(p, cfg)
    lp = json.load(open(logprobs, encoding="utf-8"))
    return compare_logprobs(lp, lambda ids: dec.logprobs(W, cfg, ids),
                            "float64")


def cmd_hf(export_dir, logprobs):
    cfg = json.load(open(os.path.join(export_dir, "config.json"),
                         encoding="utf-8"))
    t, _ = read_safetensors(os.path.join(export_dir, "model.safetensors"))
    W = {n: (v if len(shape) == 1 else
             [v[i * shape[1]:(i + 1) * shape[1]] for i in range(shape[0])])
         for n, (shape, v) in t.items()}
    lp = json.load(open(logprobs, encoding="utf-8"))
    bad = compare_logprobs(lp, lambda ids: dec.logprobs(W, cfg, ids),
                           f"float64 from the export ({cfg['architectures'][0]})")
    try:
        import torch  # noqa: F401
        from transformers import AutoModelForCausalLM
    except ImportError:
        print("transformers: not importable here, skipped")
        return bad
    model = AutoModelForCausalLM.from_pretrained(
        export_dir, torch_dtype=torch.float64).eval()

    def hf(ids):
        with torch.no_grad():
            x = torch.tensor([ids[:-1]])
            out = torch.log_softmax(model(x).logits[0].double(), -1)
        return [out[j, ids[j + 1]].item() for j in range(len(ids) - 1)]
    return bad + compare_logprobs(lp, hf, "transformers")


def main(argv):
    cmds = {"logprobs": (3, lambda a: cmd_logprobs(float(a[0]), *a[1:])),
            "export": (3, lambda a: cmd_export(float(a[0]), *a[1:])),
            "dump": (3, lambda a: cmd_dump(*a)),
            "order": (4, lambda a: cmd_order(*a)),
            "records": (2, lambda a: cmd_records(*a)),
            "float64": (3, lambda a: cmd_float64(*a)),
            "hf": (2, lambda a: cmd_hf(*a))}
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
