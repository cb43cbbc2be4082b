#!/usr/bin/python3
"""Checks schemas/config.schema.json against the NeMo-RL corpus.

  /usr/bin/python3 tests/schema_corpus_check.py [CORPUS_DIR]

Loads every *.yaml under CORPUS_DIR (default: the shared NeMo-RL examples)
the way NeMo-RL does (`defaults:` inheritance, `_override_`, the add/mul/
div/max resolvers), validates it with jsonschema's Draft 2020-12 validator,
and runs gtplan's "did you mean" rule (git's weighted Damerau-Levenshtein,
the same limit as base/levenshtein.c) on every key the schema does not
declare. Prints each finding and a closing "RESULT passed failed 0" line;
exits 1 when a config fails to validate or draws a near-miss warning.
"""
import glob
import os
import sys

os.environ.setdefault("HF_HOME", "/tmp/hf_home")
os.environ.setdefault("PERSISTENT_CACHE", "/tmp/persistent_cache")

import jsonschema  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "schemas", "config.schema.json")
CORPUS = "/work/shared/corpus/nemo-rl/examples/configs"

for _name, _fn in [("add", lambda a, b: a + b), ("mul", lambda a, b: a * b),
                   ("div", lambda a, b: a / b), ("max", lambda a, b: max(a, b))]:
    if not OmegaConf.has_resolver(_name):
        OmegaConf.register_new_resolver(_name, _fn)


def _merge(base, top):
    """OmegaConf.merge, except that a top-level section carrying a truthy
    `_override_` replaces the inherited section instead of merging into it
    (NeMo-RL looks at the first level only; see tests/corpus_ref.py)."""
    base = OmegaConf.create(OmegaConf.to_container(base, resolve=False))
    top = OmegaConf.create(OmegaConf.to_container(top, resolve=False))
    for key in list(top.keys()):
        if OmegaConf.is_missing(top, key):
            continue
        section = top[key]
        if isinstance(section, DictConfig) and section.get("_override_", False):
            section.pop("_override_")
            if key in base:
                base.pop(key)
    return OmegaConf.merge(base, top)


def load(path):
    cfg = OmegaConf.load(path)
    parents = cfg.pop("defaults", None) if "defaults" in cfg else None
    if parents is None:
        return _merge(OmegaConf.create({}), cfg)
    if isinstance(parents, str):
        parents = [parents]
    merged = OmegaConf.create({})
    for p in parents:
        merged = _merge(merged, load(os.path.join(os.path.dirname(path), p)))
    return _merge(merged, cfg)


def resolved(path):
    cfg = load(path)
    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # an oc.env without default: resolve key by key
        raw = OmegaConf.to_container(cfg, resolve=False)

        def walk(node, at):
            if isinstance(node, dict):
                return {k: walk(v, at + [str(k)]) for k, v in node.items()}
            if isinstance(node, list):
                return [walk(v, at + [str(i)]) for i, v in enumerate(node)]
            if isinstance(node, str) and "${" in node:
                try:
                    return OmegaConf.select(cfg, ".".join(at),
                                            throw_on_resolution_failure=True)
                except Exception:
                    return node
            return node
        return walk(raw, [])


# ---- git's levenshtein.c, as base/levenshtein.c implements it --------
def lev(s1, s2, w=0, s=2, a=1, d=3):
    row0 = [0] * (len(s2) + 1)
    row1 = [j * a for j in range(len(s2) + 1)]
    for i in range(len(s1)):
        row2 = [0] * (len(s2) + 1)
        row2[0] = (i + 1) * d
        for j in range(len(s2)):
            row2[j + 1] = row1[j] + s * (s1[i] != s2[j])
            if (i > 0 and j > 0 and s1[i - 1] == s2[j] and
                    s1[i] == s2[j - 1] and row2[j + 1] > row0[j - 1] + w):
                row2[j + 1] = row0[j - 1] + w
            if row2[j + 1] > row1[j + 1] + d:
                row2[j + 1] = row1[j + 1] + d
            if row2[j + 1] > row2[j] + a:
                row2[j + 1] = row2[j] + a
        row0, row1 = row1, row2
    return row1[len(s2)]


def near_limit(key):
    """Mirror of lev_typo_limit() in base/levenshtein.c."""
    return min(max(3, min(6, len(key) // 3)), max(len(key) - 1, 0))


def key_distance(typed, known):
    """Mirror of lev_key_distance(): case and '-' folded."""
    def fold(k):
        return "".join(c.lower() if "A" <= c <= "Z" else "_" if c == "-" else c
                       for c in k)
    return lev(fold(typed), fold(known))


def closest(key, names):
    best, best_d, tie = None, None, False
    for n in names:
        dist = key_distance(key, n)
        if best_d is None or dist < best_d:
            best, best_d, tie = n, dist, False
        elif dist == best_d:
            tie = True
    if best is None or tie or best_d > near_limit(key):
        return None, best_d
    return best, best_d


def deref(schema, root):
    while isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        node = root
        for part in ref.lstrip("#/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        merged = dict(node)
        merged.update({k: v for k, v in schema.items() if k != "$ref"})
        schema = merged
    return schema


def near_misses(node, schema, root, at, out, margins):
    schema = deref(schema, root)
    if not isinstance(schema, dict):
        return
    if isinstance(node, dict):
        props = schema.get("properties", {})
        closed = schema.get("additionalProperties") is False
        for k, v in node.items():
            if k in props:
                near_misses(v, props[k], root, at + [str(k)], out, margins)
                continue
            if props and not closed:
                hit, dist = closest(str(k), props)
                if dist is not None:
                    margins.append((dist - near_limit(str(k)), ".".join(at + [str(k)])))
                if hit:
                    out.append("%s: unknown key '%s', did you mean '%s'?"
                               % (".".join(at) or "<root>", k, hit))
    if isinstance(node, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(node):
            near_misses(v, schema["items"], root, at + [str(i)], out, margins)


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else CORPUS
    schema = __import__("json").load(open(SCHEMA))
    jsonschema.Draft202012Validator.check_schema(schema)
    val = jsonschema.Draft202012Validator(schema)
    files = sorted(glob.glob(os.path.join(corpus, "**", "*.yaml"), recursive=True))
    passed = failed = 0
    margins = []
    for f in files:
        rel = os.path.relpath(f, corpus)
        try:
            cfg = resolved(f)
        except Exception as e:  # noqa: BLE001
            print("%s: cannot load: %s" % (rel, e))
            failed += 1
            continue
        errs = sorted(val.iter_errors(cfg), key=lambda e: list(e.path))
        warns = []
        near_misses(cfg, schema, schema, [], warns, margins)
        for e in errs:
            print("%s: %s: %s" % (rel, ".".join(map(str, e.path)), e.message))
        for w in warns:
            print("%s: warning: %s" % (rel, w))
        if errs or warns:
            failed += 1
        else:
            passed += 1
    margins.sort()
    if margins and "-v" in os.environ.get("SCHEMA_CHECK_FLAGS", ""):
        for m in margins[:15]:
            print("closest unknown key: %+d over the limit: %s" % m)
    print("schema corpus: %d configs, %d clean, %d with findings"
          % (len(files), passed, failed))
    print("RESULT %d %d 0" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
