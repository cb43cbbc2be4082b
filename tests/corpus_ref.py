#!/usr/bin/python3
"""corpus_ref: what NeMo-RL's own loader makes of each corpus config.

A reference for gtplan's loader and resource split, written from NeMo-RL's
source (see docs/notes/nemo-rl-loader-and-resources.md for the rules and the
file references). It needs only OmegaConf and PyYAML; run it with Debian's
/usr/bin/python3, which has python3-omegaconf.

    corpus_ref.py [--root DIR] [--list] [FILE ...]

With no FILE it walks DIR (default ../shared/corpus, or $GTPLAN_CORPUS) and
takes every examples/**/*.yaml and *.yaml.disabled. It prints one JSON line
per file, sorted by path:

    {"file": path relative to DIR (or as given), "kind": "training" | "eval"
     | "fragment", "error": null or why NeMo-RL could not load it,
     "config": the resolved config, "unresolved": [dotted paths],
     "derived": {...} (training configs only)}

Loading is NeMo-RL's load_config + OmegaConf.to_container(resolve=True) with
the resolvers NeMo-RL registers. One difference on purpose: resolution is
done key by key, and a value that cannot be resolved here (an unset
${oc.env:VAR}, or anything that depends on one) becomes
{"__unresolved__": "<its text>"} and is listed in "unresolved" instead of
failing the whole file, as NeMo-RL would.

The derived record is tests/corpus_setup.py's (the entry point, resources,
world and refusals) with tests/corpus_rules.py's framework rules;
tests/corpus_values.py reads the resolved config for all of them.

Kinds: "training" has `policy` and `cluster` sections (GRPO, PPO,
distillation, SFT, DPO, RM); "eval" has `eval`, `generation` and `cluster`
(run_eval.py: no training world); everything else is a "fragment" (modelopt
quantization recipes, the fault-tolerance launcher config, NeMo-Gym venv
prefetch lists), which no NeMo-RL entry point loads as a config.
"""

import argparse
import json
import os
import sys
from pathlib import Path

from omegaconf import DictConfig, ListConfig, OmegaConf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_setup import derive  # noqa: E402
from corpus_values import UNRESOLVED, is_map  # noqa: E402

# ---- loader (nemo_rl/utils/config.py) -----------------------------------

# The resolvers register_omegaconf_resolvers() installs. Plain Python
# arithmetic: div is true division (always a float), mul repeats strings.
RESOLVERS = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "max": lambda a, b: max(a, b),
}


def register_resolvers():
    for name, fn in RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


def parent_path(base_dir, entry):
    """A defaults: entry, relative to the including file's folder unless it
    starts with '/'. No normalisation: 'a/../b' stays as written."""
    return Path(entry) if entry.startswith("/") else Path(base_dir) / entry


def merge_over(base, top):
    """OmegaConf.merge(base, top), except that a top-level section of `top`
    whose map carries a truthy `_override_` loses the marker and replaces the
    section of `base` instead of merging into it. Only the first level of
    `top` is looked at; a mandatory value ('???') is skipped."""
    for key in list(top.keys()):
        if OmegaConf.is_missing(top, key):
            continue
        section = top[key]
        if isinstance(section, DictConfig) and section.get("_override_", False):
            section.pop("_override_")
            if key in base:
                base.pop(key)
    return OmegaConf.merge(base, top)


_LOADED = {}  # (path, base_dir) -> plain container; parents are shared a lot


def load_with_defaults(path, base_dir=None):
    """NeMo-RL's load_config_with_inheritance: parents depth-first, merged in
    list order (later wins), then the file itself on top."""
    key = (str(path), None if base_dir is None else str(base_dir))
    if key not in _LOADED:
        cfg = _load_with_defaults(path, base_dir)
        _LOADED[key] = OmegaConf.to_container(cfg, resolve=False)
    return OmegaConf.create(_LOADED[key])


def _load_with_defaults(path, base_dir):
    path = Path(path)
    base_dir = path.parent if base_dir is None else Path(base_dir)
    cfg = OmegaConf.load(path)
    if not isinstance(cfg, DictConfig):
        raise ValueError("Config must be a Dictionary Config (List Config not supported)")
    if "defaults" not in cfg:
        return cfg
    entries = cfg.pop("defaults")
    if isinstance(entries, str):
        entries = [entries]
    elif isinstance(entries, ListConfig):
        entries = [str(e) for e in entries]
    merged = OmegaConf.create({})
    for entry in entries:
        p = parent_path(base_dir, str(entry))
        merged = merge_over(merged, load_with_defaults(p, p.parent))
    return merge_over(merged, cfg)


def resolve(cfg):
    """OmegaConf.to_container(cfg, resolve=True); when that fails, again one
    key at a time. Returns (container, unresolved paths)."""
    try:
        return OmegaConf.to_container(cfg, resolve=True), []
    except Exception:
        pass
    unresolved = []

    def walk(node, path):
        if isinstance(node, DictConfig):
            return {k: child(node, k, path + [str(k)]) for k in node.keys()}
        return [child(node, i, path + [str(i)]) for i in range(len(node))]

    def child(parent, key, path):
        raw = parent._get_node(key)
        if raw._is_missing():
            return "???"
        if raw._is_interpolation():
            try:
                value = parent[key]
            except Exception:
                unresolved.append(".".join(path))
                return {UNRESOLVED: raw._value()}
        else:
            value = raw
        if isinstance(value, (DictConfig, ListConfig)):
            return None if value._is_none() else walk(value, path)
        return value._value() if hasattr(value, "_value") else value

    return walk(cfg, []), unresolved


# ---- driver ---------------------------------------------------------------

def classify(cfg):
    if is_map(cfg.get("policy")) and is_map(cfg.get("cluster")):
        return "training"
    if is_map(cfg.get("eval")) and is_map(cfg.get("generation")) and is_map(cfg.get("cluster")):
        return "eval"
    return "fragment"


def discover(root):
    examples = sorted(Path(root).glob("**/examples"))
    found = set()
    for ex in examples:
        for pat in ("**/*.yaml", "**/*.yaml.disabled"):
            found.update(p for p in ex.glob(pat) if p.is_file())
    return sorted(found)


def one(path, name):
    rec = {"file": name, "kind": None, "error": None, "config": None,
           "unresolved": [], "derived": None}
    try:
        raw = load_with_defaults(path)
        cfg, rec["unresolved"] = resolve(raw)
    except Exception as e:  # NeMo-RL would fail to load it
        rec["error"] = f"{type(e).__name__}: {e}".splitlines()[0]
        return rec
    rec["config"] = cfg
    rec["kind"] = classify(cfg)
    if rec["kind"] == "training":
        rec["derived"] = derive(cfg)
    return rec


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--root", default=os.environ.get("GTPLAN_CORPUS", "../shared/corpus"))
    ap.add_argument("--list", action="store_true",
                    help="only print the corpus files, one per line, relative to --root")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args(argv)
    register_resolvers()
    if args.files:
        todo = [(Path(f), f) for f in args.files]
    else:
        todo = [(p, os.path.relpath(p, args.root)) for p in discover(args.root)]
    if args.list:
        for _, name in todo:
            print(name)
        return 0
    for path, name in todo:
        print(json.dumps(one(path, name)), flush=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
