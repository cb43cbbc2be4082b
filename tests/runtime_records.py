#!/usr/bin/python3
"""Checks the collectives gtplan-run recorded (--record) against its plan.

usage: runtime_records.py PLAN.json RECORD MICRO_BATCHES

RECORD is the --record path; rank r's file is RECORD.r. Checks:
  - each line has the documented keys, sorted, its rank, consecutive seq;
  - NCCL semantics: the members of every group issue, on that group, the
    same collectives (call, step, kind, op, count, dtype, label) in the
    same order, and each names its group by its index in the plan;
  - one-rank groups issue nothing;
  - per train step and rank, for the decoder of runtime.model with L
    layers: per micro-batch GTP all-gathers 3 + 8 L (forward: embedding,
    4 a layer, output; backward: output, 4 a layer) and GTP
    reduce-scatters 1 + 4 L (+ 1 untied); TP all-reduces 5 + 4 L, or with
    sequence parallelism 3 TP all-reduces (the CE statistics) and 2 + 4 L
    TP all-gathers and reduce-scatters each; per step one gradient
    all-reduce over dp_cp_replicate, three all-reduces over dp_cp (tokens,
    replicated gradients, loss), one TP all-reduce when QK-norm or
    sequence parallelism needs the TP sum, one world barrier; with CP per
    micro-batch, by runtime.model.cp_comm_type: all_gather 2 L CP
    all-gathers (keys, values) and 2 L CP reduce-scatters (their
    gradients), p2p L (2 CP - 1) CP sends and as many receives (the ring:
    CP - 1 steps forward, CP backward); each only where its group has more
    than one rank;
  - point-to-point lines (coll "send", "recv") carry the peer's place
    (after op) and pair up: the n-th send from a member to another carries
    as many elements as the other's n-th receive from it;
  - GTP shard sizes: each weight's all-gather and reduce-scatter move
    S x d1 elements, S = the TP-local dim 0 padded to a multiple of 16 x G,
    divided by G (Megatron's gtp_remat_shard_dim0), computed here;
  - the gradient all-reduce over dp_cp_replicate comes after every GTP
    reduce-scatter of its step (docs/design.md §2.4).
Exit 0 when all hold, 1 when not, 2 on a usage or read error.
"""
import json
import sys

KEYS = ["bytes", "call", "coll", "count", "dtype", "group", "group_index",
        "op", "rank", "seq", "step", "what"]
P2P_KEYS = KEYS[:8] + ["peer"] + KEYS[8:]
PEERS = ("rank", "seq", "peer")
GTP_PAD = 16


def shard(d0, d1, g):
    if g == 1:
        return d0 * d1
    align = GTP_PAD * g
    return (d0 + (align - d0 % align) % align) // g * d1


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        plan = json.load(open(argv[1], encoding="utf-8"))
        mbs = int(argv[3])
        recs = []
        for r in range(plan["world_size"]):
            with open(f"{argv[2]}.{r}", encoding="utf-8") as f:
                recs.append([(json.loads(l), l) for l in f if l.strip()])
    except (OSError, ValueError, KeyError) as e:
        print(f"runtime_records: {e}", file=sys.stderr)
        return 2
    bad = []
    sz, rt, groups = plan["sizes"], plan["runtime"], plan["groups"]
    tp, g, layers = sz["tp"], sz["gtp"], rt["model"]["layers"]

    # my group of each kind, by rank
    where = {}
    for kind, lists in groups.items():
        for i, members in enumerate(lists):
            for r in members:
                where[(kind, r)] = (i, members)

    for r, lines in enumerate(recs):
        for n, (d, raw) in enumerate(lines):
            keys = P2P_KEYS if d.get("coll") in ("send", "recv") else KEYS
            if list(d) != keys or d["rank"] != r or d["seq"] != n:
                bad.append(f"rank {r} line {n}: keys, rank or seq wrong: "
                           f"{raw.strip()}")
                break
            kind = d["group"]
            if kind == "world":
                continue
            idx, members = where[(kind, r)]
            if d["group_index"] != idx:
                bad.append(f"rank {r} seq {n}: {kind} group "
                           f"{d['group_index']}, the plan says {idx}")
            if len(members) == 1:
                bad.append(f"rank {r} seq {n}: a collective on a one-rank "
                           f"{kind} group")

    def projected(r, kind):
        return [tuple(d[k] for k in d if k not in PEERS)
                for d, _ in recs[r] if d["group"] == kind]

    def pairs(kind, members):
        flow = {}  # (from, to) -> [counts sent], [counts received]
        for p, r in enumerate(members):
            for d, _ in recs[r]:
                if d["group"] == kind and d["coll"] in ("send", "recv"):
                    send = d["coll"] == "send"
                    key = (p, d["peer"]) if send else (d["peer"], p)
                    flow.setdefault(key, ([], []))[0 if send else 1] \
                        .append(d["count"])
        for (p, q), (sent, got) in sorted(flow.items()):
            if sent != got:
                return (f"{kind} group {members}: place {p} sends {sent[:4]}"
                        f"... to place {q}, which receives {got[:4]}... "
                        f"from it: they do not pair")
        return None

    for kind, lists in list(groups.items()) + [("world", [list(range(
            plan["world_size"]))])]:
        for members in lists:
            first = projected(members[0], kind)
            for r in members[1:]:
                if projected(r, kind) != first:
                    bad.append(f"{kind} group {members}: rank {r} issued "
                               f"other collectives than rank {members[0]}")
                    break
            unpaired = pairs(kind, members)
            if unpaired:
                bad.append(unpaired)

    m = rt["model"]
    h, f, d = m["hidden"], m["ffn"], m["head_dim"]
    vl = -(-m["vocab"] // tp)
    want_count = {"embedding": shard(vl, h, g), "output": shard(vl, h, g)}
    for l in range(layers):
        want_count[f"layers.{l}.qkv"] = shard(
            (m["heads"] + 2 * m["kv_heads"]) // tp * d, h, g)
        want_count[f"layers.{l}.proj"] = shard(h, m["heads"] // tp * d, g)
        want_count[f"layers.{l}.fc1"] = shard(2 * f // tp, h, g)
        want_count[f"layers.{l}.fc2"] = shard(h, f // tp, g)
    size = {"tp": tp, "gtp": g, "cp": sz["cp"], "dp_cp": sz["dp"] * sz["cp"],
            "dp_cp_replicate": sz["dp_replicate"] * sz["cp"],
            "world": plan["world_size"]}
    for r, lines in enumerate(recs):
        steps = sorted({d["step"] for d, _ in lines if d["call"] == "train"})
        for s in steps:
            ops = [d for d, _ in lines if d["call"] == "train"
                   and d["step"] == s]
            count = {}
            for d in ops:
                key = (d["coll"], d["group"])
                count[key] = count.get(key, 0) + 1
                if d["group"] == "gtp" and d["count"] != want_count.get(
                        d["what"]):
                    bad.append(f"rank {r} step {s}: {d['coll']} of "
                               f"{d['what']} moves {d['count']}, want "
                               f"{want_count.get(d['what'])}")
            sp = m["sequence_parallel"] and tp > 1
            want = {("all-gather", "gtp"): mbs * (3 + 8 * layers),
                    ("reduce-scatter", "gtp"): mbs * (
                        1 + 4 * layers + (0 if m["tie_embeddings"] else 1)),
                    ("all-reduce", "tp"): mbs * (3 if sp else 5 + 4 * layers)
                    + (1 if sp or m["qk_norm"] else 0),
                    ("all-reduce", "dp_cp_replicate"): 1,
                    ("all-reduce", "dp_cp"): 3,
                    ("barrier", "world"): 1}
            if sp:
                want[("all-gather", "tp")] = mbs * (2 + 4 * layers)
                want[("reduce-scatter", "tp")] = mbs * (2 + 4 * layers)
            # CP: each layer's keys and values all-gathered, their
            # gradients reduce-scattered, or the ring's steps
            if m["cp_comm_type"] == "p2p":
                for coll in ("send", "recv"):
                    want[(coll, "cp")] = mbs * layers * (2 * sz["cp"] - 1)
            else:
                want[("all-gather", "cp")] = mbs * 2 * layers
                want[("reduce-scatter", "cp")] = mbs * 2 * layers
            want = {k: v for k, v in want.items() if size[k[1]] > 1}
            if count != want:
                bad.append(f"rank {r} step {s}: issued {sorted(count.items())}"
                           f", want {sorted(want.items())}")
            last_rs = max((i for i, d in enumerate(ops)
                           if d["coll"] == "reduce-scatter"), default=-1)
            grads = [i for i, d in enumerate(ops)
                     if d["group"] == "dp_cp_replicate"]
            if grads and grads[0] < last_rs:
                bad.append(f"rank {r} step {s}: the gradient all-reduce "
                           f"over dp_cp_replicate precedes a GTP "
                           f"reduce-scatter")
    n = sum(len(x) for x in recs)
    print(f"records: {n} collectives on {len(recs)} ranks checked")
    for b in bad[:20]:
        print(f"runtime_records: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
