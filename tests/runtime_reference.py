#!/usr/bin/python3
"""Checks gtplan-run's model against an independent float64 reference.

usage: runtime_reference.py PLAN.json INIT.weights STEP1.weights STEP1.log DATA

INIT.weights is `gtplan-run PLAN --steps 0 --dump-weights`, STEP1.* are
`--steps 1 --optimizer sgd --log --dump-weights` of the same plan, so the
gradient gtplan-run applied is (INIT - STEP1) / lr; DATA is the runs'
--data: a file or "synthetic". This script rebuilds step 1's batch from
the dataset's definition (runtime/rt_text.c for a file; runtime/rt_data.c
for the synthetic text, whose word list it reads from that file), runs the
model's forward pass in
float64 from INIT, and checks
  - the loss of step 1 against the logged one (relative 1e-6), and
  - the gradient of sampled elements of every tensor against central
    finite differences of the float64 loss, within 1e-4 of the tensor's
    gradient RMS.
Nothing here shares code with the runtime, so a mistake made alike in
every layout (which the parity test cannot see) shows up here.
Exit 0 when all hold, 1 when not, 2 on a usage or read error.
"""
import json
import math
import random
import re
import sys

M64 = (1 << 64) - 1
DATA_STREAM = 0xDA7A000000000000
TEXT_STREAM = 0x7E47000000000000
NORM_EPS = 1e-5
FD_STEP = 1e-4
SAMPLES_PER_TENSOR = 4
GRAD_TOL = 1e-4
LOSS_TOL = 1e-6


def mix(z):
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def rand_u64(seed, stream, index):
    return mix(mix(mix(seed) ^ stream) ^ index)


def unit(u):
    return ((u >> 11) + 1.0) * (1.0 / 9007199254740992.0)


def read_words(path):
    src = open(path, encoding="utf-8").read()
    body = re.search(r"words\[\] = \{(.*?)\};", src, re.S).group(1)
    return re.findall(r'"([^"]*)"', body)


def sample(words, seed, index, seq_len, vocab):
    """rt_data_sample: seq_len + 1 tokens of sample `index`."""
    stream, k, out = DATA_STREAM ^ index, 0, []
    want, start, in_sentence = seq_len + 1, True, 0
    while len(out) < want:
        r = rand_u64(seed, stream, k)
        k += 1
        u = unit(r)
        w = words[int(u * u * len(words)) % len(words)]
        for i, ch in enumerate(w.encode()):
            if len(out) >= want:
                break
            if start and i == 0 and 97 <= ch <= 122:
                ch -= 32
            out.append(ch % vocab)
        start = False
        in_sentence += 1
        if in_sentence >= 4 and (r >> 60) < in_sentence - 2:
            if len(out) < want:
                out.append((ord(".") if (r >> 8) & 3 else ord(",")) % vocab)
            start = ((r >> 8) & 3) != 0
            in_sentence = 0 if start else in_sentence
        if len(out) < want:
            out.append(32 % vocab)
    return out


def text_sample(text, seed, index, seq_len, vocab):
    """rt_text_sample: seq_len + 1 bytes from a seed-hashed offset."""
    at = rand_u64(seed, TEXT_STREAM, index) % len(text)
    return [text[(at + i) % len(text)] % vocab for i in range(seq_len + 1)]


class Dataset:
    """gtplan-run's --data: a file's bytes or the synthetic text."""

    def __init__(self, spec):
        if spec == "synthetic":
            self.text, self.words = None, read_words("runtime/rt_data.c")
        else:
            self.text, self.words = open(spec, "rb").read(), None
            if not self.text:
                raise ValueError(f"{spec}: empty")

    def sample(self, seed, index, seq_len, vocab):
        if self.text is None:
            return sample(self.words, seed, index, seq_len, vocab)
        return text_sample(self.text, seed, index, seq_len, vocab)


def rows(t):
    r, c = t["shape"]
    return [list(t["data"][i * c:(i + 1) * c]) for i in range(r)]


def rmsnorm(x, g):
    out = []
    for row in x:
        s = 1.0 / math.sqrt(sum(v * v for v in row) / len(row) + NORM_EPS)
        out.append([v * s * gi for v, gi in zip(row, g)])
    return out


def mat_t(x, w):
    """x [T, k] times w^T, w [n, k]."""
    return [[sum(a * b for a, b in zip(row, wr)) for wr in w] for row in x]


def token_losses(p, layers, tokens, targets):
    """Each token's cross-entropy -log p(target) under parameters p."""
    emb = p["embedding"]
    x = [list(emb[t]) for t in tokens]
    for l in range(layers):
        n = rmsnorm(x, p[f"layers.{l}.norm"][0])
        a = mat_t(n, p[f"layers.{l}.fc1"])
        b = [[0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in r]
             for r in a]
        c = mat_t(b, p[f"layers.{l}.fc2"])
        x = [[u + v for u, v in zip(r, s)] for r, s in zip(x, c)]
    z = rmsnorm(x, p["final_norm"][0])
    out = []
    for row, t in zip(mat_t(z, emb), targets):
        m = max(row)
        out.append(m + math.log(sum(math.exp(v - m) for v in row)) - row[t])
    return out


def loss_of(p, layers, tokens, targets):
    """Mean token cross-entropy of the model with parameters p."""
    return sum(token_losses(p, layers, tokens, targets)) / len(tokens)


def main(argv):
    if len(argv) != 6:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        plan = json.load(open(argv[1], encoding="utf-8"))
        init = {t["name"]: t for t in
                json.load(open(argv[2], encoding="utf-8"))["tensors"]}
        step1 = {t["name"]: t for t in
                 json.load(open(argv[3], encoding="utf-8"))["tensors"]}
        log = [json.loads(l) for l in open(argv[4], encoding="utf-8")
               if l.strip()]
        data = Dataset(argv[5])
    except (OSError, ValueError, KeyError, AttributeError) as e:
        print(f"runtime_reference: {e}", file=sys.stderr)
        return 2
    rt, batch = plan["runtime"], plan["batch"]["global"]
    tokens, targets = [], []
    for i in range(batch):
        s = data.sample(rt["seed"], i, rt["seq_len"], rt["vocab"])
        tokens += s[:-1]
        targets += s[1:]
    p = {name: rows(t) for name, t in init.items()}
    bad = []

    loss = loss_of(p, rt["layers"], tokens, targets)
    e = abs(log[0]["loss"] - loss) / loss
    print(f"step 1 loss: gtplan-run {log[0]['loss']:.9g}, float64 "
          f"{loss:.9g} (rel err {e:.2e})")
    if e > LOSS_TOL:
        bad.append(f"step 1 loss off by {e:.2e} > {LOSS_TOL}")

    rng = random.Random(1)
    worst = 0.0
    for name, t in init.items():
        cols = t["shape"][1]
        grad = [(a - b) / rt["lr"] for a, b in
                zip(t["data"], step1[name]["data"])]
        rms = math.sqrt(sum(g * g for g in grad) / len(grad)) or 1.0
        for i in rng.sample(range(len(grad)), SAMPLES_PER_TENSOR):
            r, c = divmod(i, cols)
            keep = p[name][r][c]
            p[name][r][c] = keep + FD_STEP
            up = loss_of(p, rt["layers"], tokens, targets)
            p[name][r][c] = keep - FD_STEP
            down = loss_of(p, rt["layers"], tokens, targets)
            p[name][r][c] = keep
            fd = (up - down) / (2 * FD_STEP)
            err = abs(grad[i] - fd) / rms
            worst = max(worst, err)
            if err > GRAD_TOL:
                bad.append(f"{name}[{r}][{c}]: gradient {grad[i]:.6e}, "
                           f"finite differences {fd:.6e} "
                           f"({err:.2e} of the RMS {rms:.3e})")
    print(f"gradients: worst error {worst:.2e} of the tensor's gradient RMS "
          f"({SAMPLES_PER_TENSOR} elements per tensor)")
    for b in bad:
        print(f"runtime_reference: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
