#!/usr/bin/python3
"""Checks a gtplan-run checkpoint directory (gtplan-ckpt/1) on its own.

usage: runtime_ckpt_check.py CKPT_DIR PLAN.json [WEIGHTS.json]

CKPT_DIR is a step directory, or --save's DIR (its `latest` is followed).

PLAN.json is the plan the checkpoint was saved under. Checks, computed here
independently of gtplan-run:
  - the keys are the decoder's (the plan's runtime.model), Megatron-named,
    in model order, each float32 of its logical (unpadded) shape, the
    optimizer's m and v included;
  - every element of every tensor lies in exactly one piece;
  - the pieces are exactly the main replicas' GTP shards: for each rank
    with dp_replicate 0 and cp 0, its TP slice's GTP rows [g S, (g+1) S)
    clipped to the real rows (S from the tail padding to 16 x G rows;
    linear_fc1's TP-local [gate_t; up_t] split into its gate and up keys);
    the qkv bias's TP slices by the gtp 0 ranks; the norms by the one rank
    whose coordinates are all 0;
  - the files: sizes as recorded, pieces inside them without overlap, each
    piece's FNV-1a 64 checksum;
  - with WEIGHTS.json (--dump-weights of the same run and step): the
    weights assembled from the pieces equal the dump exactly.
Prints one summary line; exits 0 when all hold, 1 naming the first
failures, 2 on a usage or read error.
"""
import json
import os
import struct
import sys

PAD = 16  # RT_GTP_PAD
OPT = ("", "optimizer.state.exp_avg.", "optimizer.state.exp_avg_sq.")


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def model_tensors(m):
    """(key, shape, split, dump name, dump rows) in model order, for the
    decoder of a plan's runtime.model (dump rows: a slice of the dumped
    tensor's rows, or None for all)."""
    h, f, L, v = m["hidden"], m["ffn"], m["layers"], m["vocab"]
    H, G, d = m["heads"], m["kv_heads"], m["head_dim"]
    out = [("embedding.word_embeddings.weight", [v, h], "vocab", "embedding",
            None)]
    for l in range(L):
        k, n = f"decoder.layers.{l}.", f"layers.{l}."
        out += [(k + "self_attention.linear_qkv.layer_norm_weight", [h],
                 None, n + "input_norm", None),
                (k + "self_attention.linear_qkv.weight", [(H + 2 * G) * d, h],
                 "column", n + "qkv", None)]
        if m["qkv_bias"]:
            out.append((k + "self_attention.linear_qkv.bias",
                        [(H + 2 * G) * d], "tpvec", n + "qkv_bias", None))
        if m["qk_norm"]:
            out += [(k + "self_attention.q_layernorm.weight", [d], None,
                     n + "q_norm", None),
                    (k + "self_attention.k_layernorm.weight", [d], None,
                     n + "k_norm", None)]
        out += [(k + "self_attention.linear_proj.weight", [h, H * d], "row",
                 n + "proj", None),
                (k + "mlp.linear_fc1.layer_norm_weight", [h], None,
                 n + "mlp_norm", None),
                (k + "mlp.linear_fc1.gate.weight", [f, h], "glu0", n + "fc1",
                 (0, f)),
                (k + "mlp.linear_fc1.up.weight", [f, h], "glu1", n + "fc1",
                 (f, 2 * f)),
                (k + "mlp.linear_fc2.weight", [h, f], "row", n + "fc2", None)]
    out.append(("decoder.final_layernorm.weight", [h], None, "final_norm",
                None))
    if not m["tie_embeddings"]:
        out.append(("output_layer.weight", [v, h], "vocab", "output", None))
    return out


def gtp_rows(d0, g):
    """S: rows of a GTP shard of a TP-local tensor of d0 rows."""
    align = PAD * g
    return (d0 + ((align - d0 % align) % align if g > 1 else 0)) // g


def shard_piece(shape, split, tp, g, t, gr):
    """The logical region (r0, c0, nr, nc) rank (t, gr) holds, or None."""
    if split == "tpvec":
        n = shape[0] // tp
        return (0, t * n, 1, n) if gr == 0 else None
    rows, cols = shape
    if split in ("glu0", "glu1"):
        # linear_fc1's TP-local [gate_t; up_t] (2 F/T rows), shard gr of
        # it, the part in this half
        fl = rows // tp
        s = gtp_rows(2 * fl, g)
        lo = fl if split == "glu1" else 0
        a, b = max(gr * s, lo), min((gr + 1) * s, lo + fl)
        return (t * fl + a - lo, 0, b - a, cols) if b > a else None
    if split == "vocab":
        vl = -(-rows // tp)
        d0, d1, row0, col0 = vl, cols, t * vl, 0
        real = max(0, min(vl, rows - t * vl))
    elif split == "column":
        d0, d1, row0, col0 = rows // tp, cols, t * (rows // tp), 0
        real = d0
    else:
        d0, d1, row0, col0 = rows, cols // tp, 0, t * (cols // tp)
        real = d0
    s = gtp_rows(d0, g)
    n = max(0, min(s, real - gr * s))
    return (row0 + gr * s, col0, n, d1) if n else None


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    d = argv[1]
    if os.path.isfile(os.path.join(d, "latest")):
        # --save's top directory: the step directory `latest` names
        d = os.path.join(d, open(os.path.join(d, "latest")).read().strip())
    try:
        meta = json.load(open(os.path.join(d, "metadata.json"), encoding="utf-8"))
        plan = json.load(open(argv[2], encoding="utf-8"))
        dump = None
        if len(argv) == 4:
            dump = {t["name"]: t for t in
                    json.load(open(argv[3], encoding="utf-8"))["tensors"]}
        blobs = {f["name"]: open(os.path.join(d, f["name"]), "rb").read()
                 for f in meta["files"]}
    except (OSError, ValueError, KeyError) as e:
        print(f"runtime_ckpt_check: {e}", file=sys.stderr)
        return 2
    bad = []
    if meta.get("format") != "gtplan-ckpt/1":
        bad.append(f"format {meta.get('format')!r}")
    lay = meta["layout"]
    tp, g = lay["tp"], lay["gtp"]
    sizes = plan["sizes"]
    if (tp, g, lay["dp_replicate"], lay["cp"], lay["world"]) != (
            sizes["tp"], sizes["gtp"], sizes["dp_replicate"], sizes["cp"],
            plan["world_size"]):
        bad.append(f"layout {lay} is not the plan's {sizes}")
    for f in meta["files"]:
        if len(blobs[f["name"]]) != f["bytes"]:
            bad.append(f"{f['name']}: {len(blobs[f['name']])} bytes, "
                       f"metadata says {f['bytes']}")
    weights = model_tensors(plan["runtime"]["model"])
    want_keys = [p + k for p in OPT for k, _, _, _, _ in weights]
    got_keys = [t["key"] for t in meta["tensors"]]
    if got_keys != want_keys:
        bad.append(f"keys {got_keys} are not the model's {want_keys}")
    main_ranks = [r for r in plan["ranks"]
                  if r["dp_replicate"] == 0 and r["cp"] == 0 and r["pp"] == 0]
    norm_rank = [r["rank"] for r in main_ranks if r["tp"] == 0 and r["gtp"] == 0]
    by_key = {t["key"]: t for t in meta["tensors"]}
    used = {name: [] for name in blobs}
    npieces = 0
    for prefix in OPT:
        for key, shape, split, dname, drows in weights:
            t = by_key.get(prefix + key)
            if t is None:
                continue
            key = prefix + key
            if t["shape"] != shape or t["dtype"] != "float32":
                bad.append(f"{key}: {t['dtype']} {t['shape']}, want float32 "
                           f"{shape}")
                continue
            rows, cols = (1, shape[0]) if len(shape) == 1 else shape
            # the pieces the main replicas hold, by this file's arithmetic
            if split is None:
                want = {(norm_rank[0], 0, 0, 1, cols)}
            else:
                want = set()
                for r in main_ranks:
                    p = shard_piece(shape, split, tp, g, r["tp"], r["gtp"])
                    if p:
                        want.add((r["rank"],) + p)
            got, count = set(), [0] * (rows * cols)
            full = [None] * (rows * cols)
            for p in t["pieces"]:
                npieces += 1
                off, shp = p["offset"], p["shape"]
                r0, c0 = (0, off[0]) if len(shape) == 1 else off
                nr, nc = (1, shp[0]) if len(shape) == 1 else shp
                got.add((p["rank"], r0, c0, nr, nc))
                n = nr * nc
                blob = blobs.get(p["file"], b"")
                data = blob[p["byte_offset"]:p["byte_offset"] + 4 * n]
                used.setdefault(p["file"], []).append((p["byte_offset"], 4 * n))
                if len(data) != 4 * n or f"{fnv1a64(data):016x}" != p["fnv1a64"]:
                    bad.append(f"{key}: piece at {off} in {p['file']}: "
                               f"short or checksum mismatch")
                    continue
                vals = struct.unpack(f"<{n}f", data)
                for i in range(nr):
                    for j in range(nc):
                        e = (r0 + i) * cols + c0 + j
                        if 0 <= r0 + i < rows and 0 <= c0 + j < cols:
                            count[e] += 1
                            full[e] = vals[i * nc + j]
            if got != want:
                bad.append(f"{key}: pieces {sorted(got)}, want the main "
                           f"replicas' {sorted(want)}")
            once = sum(1 for c in count if c == 1)
            if once != rows * cols:
                bad.append(f"{key}: {once} of {rows * cols} elements in "
                           f"exactly one piece")
            if dump is not None and prefix == "" and None not in full:
                data = dump[dname]["data"]
                if drows:
                    dc = dump[dname]["shape"][1]
                    data = data[drows[0] * dc:drows[1] * dc]
                ref = [struct.unpack("<f", struct.pack("<f", x))[0]
                       for x in data]
                if ref != list(full):
                    bad.append(f"{key}: differs from the dump's {dname}")
    for name, spans in used.items():
        spans.sort()
        for (a, n), (b, _) in zip(spans, spans[1:]):
            if a + n > b:
                bad.append(f"{name}: pieces overlap at byte {b}")
        if spans and spans[-1][0] + spans[-1][1] > len(blobs.get(name, b"")):
            bad.append(f"{name}: a piece lies past its end")
    print(f"checkpoint step {meta.get('step')}: {len(got_keys)} tensors, "
          f"{npieces} pieces, {len(blobs)} files"
          f"{', weights equal the dump' if dump is not None and not bad else ''}")
    for b in bad[:10]:
        print(f"runtime_ckpt_check: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
