#!/usr/bin/python3
"""An independent float64 Llama-family decoder, from the model's equations.

Written from the Llama / Qwen2 / Qwen3 definitions (Hugging Face
transformers' modeling_llama.py, modeling_qwen3.py: RMSNorm, rotate-half
RoPE, grouped-query causal attention with 1/sqrt(head_dim), SwiGLU MLP),
in plain Python floats (float64), sharing nothing with gtplan-run's C
code. Weights are Hugging Face tensors by name:

  model.embed_tokens.weight [V, h]
  model.layers.L.input_layernorm.weight [h]
  model.layers.L.self_attn.{q,k,v}_proj.weight [H d | G d, h] (+ .bias)
  model.layers.L.self_attn.{q,k}_norm.weight [d] (QK-norm, optional)
  model.layers.L.self_attn.o_proj.weight [h, H d]
  model.layers.L.post_attention_layernorm.weight [h]
  model.layers.L.mlp.{gate,up}_proj.weight [F, h], down_proj [h, F]
  model.norm.weight [h], lm_head.weight [V, h] (absent when tied)

as lists of rows (1-D tensors: one list). `cfg` is a config.json-like
dict: hidden_size, num_attention_heads, num_key_value_heads, head_dim,
num_hidden_layers, rms_norm_eps, rope_theta, tie_word_embeddings.

from_megatron() maps gtplan-run's --dump-weights tensors (Megatron's
layouts, rt_model.h) to these names, from Megatron-Bridge's conversions:
linear_qkv's rows are per query group [q heads of the group, k, v]
(split_qkv_weights), linear_fc1 is [gate; up].
"""
import math


def rmsnorm(x, g, eps):
    s = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
    return [v * s * w for v, w in zip(x, g)]


def matvec(w, x, b=None):
    """w [n, k] times x [k] (+ b)."""
    out = [sum(a * c for a, c in zip(row, x)) for row in w]
    if b is not None:
        out = [o + bb for o, bb in zip(out, b)]
    return out


def rope(x, pos, theta):
    """Rotate-half RoPE of one head's vector at position pos."""
    d = len(x)
    half = d // 2
    out = list(x)
    for i in range(half):
        a = pos * theta ** (-2.0 * i / d)
        c, s = math.cos(a), math.sin(a)
        out[i] = x[i] * c - x[i + half] * s
        out[i + half] = x[i + half] * c + x[i] * s
    return out


def heads(v, n, d):
    return [v[j * d:(j + 1) * d] for j in range(n)]


def attention(W, cfg, l, xs):
    """The attention block's output for every position of one sequence."""
    H, G = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d, eps = cfg["head_dim"], cfg["rms_norm_eps"]
    theta = cfg["rope_theta"]
    p = f"model.layers.{l}.self_attn."
    qn, kn = W.get(p + "q_norm.weight"), W.get(p + "k_norm.weight")
    qs, ks, vs = [], [], []
    for pos, x in enumerate(xs):
        q = heads(matvec(W[p + "q_proj.weight"], x,
                         W.get(p + "q_proj.bias")), H, d)
        k = heads(matvec(W[p + "k_proj.weight"], x,
                         W.get(p + "k_proj.bias")), G, d)
        v = heads(matvec(W[p + "v_proj.weight"], x,
                         W.get(p + "v_proj.bias")), G, d)
        if qn is not None:
            q = [rmsnorm(hq, qn, eps) for hq in q]
            k = [rmsnorm(hk, kn, eps) for hk in k]
        qs.append([rope(hq, pos, theta) for hq in q])
        ks.append([rope(hk, pos, theta) for hk in k])
        vs.append(v)
    out = []
    for i in range(len(xs)):
        o = []
        for hh in range(H):
            g = hh // (H // G)
            sc = [sum(a * b for a, b in zip(qs[i][hh], ks[j][g])) /
                  math.sqrt(d) for j in range(i + 1)]
            m = max(sc)
            e = [math.exp(s - m) for s in sc]
            z = sum(e)
            o += [sum(e[j] * vs[j][g][c] for j in range(i + 1)) / z
                  for c in range(d)]
        out.append(matvec(W[p + "o_proj.weight"], o))
    return out


def mlp(W, l, x):
    p = f"model.layers.{l}.mlp."
    g = matvec(W[p + "gate_proj.weight"], x)
    u = matvec(W[p + "up_proj.weight"], x)
    a = [gg / (1.0 + math.exp(-gg)) * uu for gg, uu in zip(g, u)]
    return matvec(W[p + "down_proj.weight"], a)


def logprobs(W, cfg, ids):
    """log p(ids[j + 1] | ids[0..j]) for j < len(ids) - 1."""
    eps = cfg["rms_norm_eps"]
    xs = [list(W["model.embed_tokens.weight"][t]) for t in ids[:-1]]
    for l in range(cfg["num_hidden_layers"]):
        ln = W[f"model.layers.{l}.input_layernorm.weight"]
        a = attention(W, cfg, l, [rmsnorm(x, ln, eps) for x in xs])
        xs = [[u + v for u, v in zip(x, y)] for x, y in zip(xs, a)]
        ln = W[f"model.layers.{l}.post_attention_layernorm.weight"]
        xs = [[u + v for u, v in zip(x, mlp(W, l, rmsnorm(x, ln, eps)))]
              for x in xs]
    head = W["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] \
        else W["lm_head.weight"]
    out = []
    for x, t in zip(xs, ids[1:]):
        z = matvec(head, rmsnorm(x, W["model.norm.weight"], eps))
        m = max(z)
        out.append(z[t] - m - math.log(sum(math.exp(v - m) for v in z)))
    return out


def config_of(model):
    """The config.json fields from a plan's runtime.model."""
    return {"hidden_size": model["hidden"],
            "num_attention_heads": model["heads"],
            "num_key_value_heads": model["kv_heads"],
            "head_dim": model["head_dim"],
            "num_hidden_layers": model["layers"],
            "rms_norm_eps": model["norm_eps"],
            "rope_theta": model["rope_theta"],
            "tie_word_embeddings": model["tie_embeddings"]}


def split_groups(rows, cfg):
    """Megatron's per-group [q..., k, v] rows into q, k, v rows."""
    H, G, d = (cfg["num_attention_heads"], cfg["num_key_value_heads"],
               cfg["head_dim"])
    r = H // G
    q, k, v = [], [], []
    for g in range(G):
        base = g * (r + 2) * d
        q += rows[base:base + r * d]
        k += rows[base + r * d:base + (r + 1) * d]
        v += rows[base + (r + 1) * d:base + (r + 2) * d]
    return q, k, v


def from_megatron(t, cfg):
    """--dump-weights tensors {name: rows} to Hugging Face names."""
    W = {"model.embed_tokens.weight": t["embedding"],
         "model.norm.weight": t["final_norm"][0]}
    if "output" in t:
        W["lm_head.weight"] = t["output"]
    for l in range(cfg["num_hidden_layers"]):
        p, h = f"layers.{l}.", f"model.layers.{l}."
        W[h + "input_layernorm.weight"] = t[p + "input_norm"][0]
        W[h + "post_attention_layernorm.weight"] = t[p + "mlp_norm"][0]
        q, k, v = split_groups(t[p + "qkv"], cfg)
        W[h + "self_attn.q_proj.weight"] = q
        W[h + "self_attn.k_proj.weight"] = k
        W[h + "self_attn.v_proj.weight"] = v
        if p + "qkv_bias" in t:
            b = [[x] for x in t[p + "qkv_bias"][0]]
            q, k, v = split_groups(b, cfg)
            W[h + "self_attn.q_proj.bias"] = [x[0] for x in q]
            W[h + "self_attn.k_proj.bias"] = [x[0] for x in k]
            W[h + "self_attn.v_proj.bias"] = [x[0] for x in v]
        if p + "q_norm" in t:
            W[h + "self_attn.q_norm.weight"] = t[p + "q_norm"][0]
            W[h + "self_attn.k_norm.weight"] = t[p + "k_norm"][0]
        W[h + "self_attn.o_proj.weight"] = t[p + "proj"]
        f = len(t[p + "fc1"]) // 2
        W[h + "mlp.gate_proj.weight"] = t[p + "fc1"][:f]
        W[h + "mlp.up_proj.weight"] = t[p + "fc1"][f:]
        W[h + "mlp.down_proj.weight"] = t[p + "fc2"]
    return W
