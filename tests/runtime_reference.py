#!/usr/bin/python3
"""Checks gtplan-run's decoder against an independent float64 reference.

usage: runtime_reference.py PLAN.json INIT.weights STEP1.weights STEP1.log DATA

INIT.weights is `gtplan-run PLAN --steps 0 --dump-weights`, STEP1.* are
`--steps 1 --optimizer sgd --log --dump-weights` of the same plan, so the
gradient gtplan-run applied is (INIT - STEP1) / lr; DATA is the runs'
--data: a file or "synthetic". This script rebuilds step 1's batch from
the dataset's definition (runtime/rt_text.c for a file; runtime/rt_data.c
for the synthetic text, whose word list it reads from that file), runs the
decoder's forward pass in float64 from INIT (tests/runtime_decoder.py,
written from the Llama equations), and checks
  - the loss of step 1 against the logged one (relative 1e-6), and
  - the gradient of sampled elements of every tensor against central
    finite differences of the float64 loss, within 1e-4 of the tensor's
    gradient RMS beyond the fp32 resolution of the step's weight / lr.
Nothing here shares code with the runtime, so a mistake made alike in
every layout (which the parity test cannot see) shows up here.
Exit 0 when all hold, 1 when not, 2 on a usage or read error.
"""
import json
import math
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runtime_decoder as dec  # noqa: E402

M64 = (1 << 64) - 1
DATA_STREAM = 0xDA7A000000000000
TEXT_STREAM = 0x7E47000000000000
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


def loss_of(p, cfg, samples):
    """Mean token cross-entropy of the decoder with the dumped tensors p."""
    W = dec.from_megatron(p, cfg)
    lp = [v for s in samples for v in dec.logprobs(W, cfg, s)]
    return -sum(lp) / len(lp)


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
    cfg = dec.config_of(rt["model"])
    samples = [data.sample(rt["seed"], i, rt["seq_len"],
                           rt["model"]["vocab"]) for i in range(batch)]
    p = {name: rows(t) for name, t in init.items()}
    bad = []

    loss = loss_of(p, cfg, samples)
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
            up = loss_of(p, cfg, samples)
            p[name][r][c] = keep - FD_STEP
            down = loss_of(p, cfg, samples)
            p[name][r][c] = keep
            fd = (up - down) / (2 * FD_STEP)
            # the step's weight is fp32: its rounding (half an ulp, 2^-24
            # relative) divided by lr is the resolution of the gradient
            # read back; it matters for the norms (weights near 1, small
            # gradients), nowhere else
            quant = abs(step1[name]["data"][i]) * 2.0 ** -24 / rt["lr"]
            err = max(abs(grad[i] - fd) - quant, 0.0) / rms
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
