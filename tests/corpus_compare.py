#!/usr/bin/python3
"""corpus_compare: gtplan's view of each corpus config against NeMo-RL's.

    corpus_compare.py --ref REF.jsonl --out DIR --expected FILE

REF.jsonl is tests/corpus_ref.py's output. DIR holds gtplan's results for
file number i (the order of DIR/files.txt, one corpus path per line):
i.config.{out,err,rc} from `gtplan config`, i.plan.{...} from `gtplan plan
-o -`, i.lint.{...} from `gtplan lint --format json`. FILE is
tests/corpus_expected_errors.txt.

Checks, each counted once per file:
  config   every file: `gtplan config` prints (exit 0, or 1 for findings such
           as schema errors, which are lint's business) exactly the config
           OmegaConf resolves: same keys in the same order, same values, ints
           and floats and booleans told apart. A value the reference could
           not resolve (an unset ${oc.env:...}) matches anything.
  derived  training configs: the plan's sizes (tp, cp, pp, ep, etp), batch
           (global, micro), world_size and resources (cluster, train,
           inference, reward_model, teachers, colocated) are NeMo-RL's.
  lint     training configs: `gtplan lint` reports no error, unless NeMo-RL
           itself refuses the config; such files are listed in FILE with
           the codes gtplan must report, and exactly those. FILE must list
           exactly the files the reference finds refused. Warnings are
           allowed and summarised.
Eval configs (run_eval.py: no training world) and fragments (no entry point
loads them as a config) get only the config check; their other two checks
count as skipped.

Then one more check over the whole corpus, `models`: the training configs'
policy.model_name values are listed as resolving (no GT524 from lint) or
not, and every name data/models.yaml lists must resolve.

Prints one line per failure, a warning summary, then
`RESULT <passed> <failed> <skipped>`; exits 1 when anything failed.
"""

import argparse
import json
import math
import os
import sys
from collections import defaultdict

UNRESOLVED = "__unresolved__"
MAX_DIFFS = 6


def read(path, default=""):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return default


def run_result(out_dir, i, what):
    """(stdout, stderr, exit code or None) of one gtplan run."""
    base = os.path.join(out_dir, f"{i}.{what}")
    rc = read(base + ".rc", "").strip()
    return read(base + ".out"), read(base + ".err"), int(rc) if rc.lstrip("-").isdigit() else None


def sanitizer_report(err):
    for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        if marker in err:
            line = next(l for l in err.splitlines() if marker in l)
            return line.strip()
    return None


def tname(v):
    return {bool: "bool", int: "int", float: "float", str: "string",
            type(None): "null", dict: "map", list: "list"}.get(type(v), type(v).__name__)


def show(v):
    s = json.dumps(v)
    return s if len(s) <= 60 else s[:57] + "..."


def diff(ref, got, path, out):
    """Appends human-readable differences between the reference value and
    gtplan's to `out` (stops early once MAX_DIFFS are found)."""
    if len(out) >= MAX_DIFFS:
        return
    where = path or "<root>"
    if isinstance(ref, dict) and UNRESOLVED in ref and len(ref) == 1:
        return  # unresolved here: anything goes
    if type(ref) is not type(got):
        out.append(f"{where}: {show(ref)} ({tname(ref)}) expected, gtplan has {show(got)} ({tname(got)})")
        return
    if isinstance(ref, dict):
        rk, gk = list(ref), list(got)
        missing = [k for k in rk if k not in got]
        extra = [k for k in gk if k not in ref]
        if missing:
            out.append(f"{where}: gtplan lacks key(s) {', '.join(missing[:5])}")
        if extra:
            out.append(f"{where}: gtplan has extra key(s) {', '.join(extra[:5])}")
        for k in rk:
            if k in got:
                diff(ref[k], got[k], f"{path}.{k}" if path else str(k), out)
        common_r = [k for k in rk if k in got]
        common_g = [k for k in gk if k in ref]
        if not missing and not extra and common_r != common_g and len(out) < MAX_DIFFS:
            first = next(a for a, b in zip(common_r, common_g) if a != b)
            out.append(f"{where}: key order differs (OmegaConf: {', '.join(common_r[:8])}"
                       f"{'...' if len(common_r) > 8 else ''}); first difference at '{first}'")
        return
    if isinstance(ref, list):
        if len(ref) != len(got):
            out.append(f"{where}: {len(ref)} items expected, gtplan has {len(got)}")
            return
        for i, (a, b) in enumerate(zip(ref, got)):
            diff(a, b, f"{path}.{i}", out)
        return
    if isinstance(ref, float) and math.isnan(ref) and math.isnan(got):
        return
    if ref != got:
        out.append(f"{where}: {show(ref)} expected, gtplan has {show(got)}")


def load_expected(path):
    """file -> (set of codes, reason, line number)."""
    exp = {}
    for n, line in enumerate(read(path).splitlines(), 1):
        body, _, reason = line.partition("#")
        body = body.strip()
        if not body:
            continue
        parts = body.split()
        if len(parts) != 2:
            raise SystemExit(f"{path}:{n}: expected '<file> <CODE>[,<CODE>...]  # reason'")
        exp[parts[0]] = (set(parts[1].split(",")), reason.strip(), n)
    return exp


def parse_json(text):
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def diagnostics(out, err):
    """The diagnostics list from `gtplan lint --format json` (stdout, or
    stderr as a fallback)."""
    for text in (out, err):
        doc = parse_json(text)
        if isinstance(doc, dict) and isinstance(doc.get("diagnostics"), list):
            return doc["diagnostics"]
    return None


def code_of(d):
    return d.get("code") or d.get("rule") or "?"


def check_config(rec, res):
    out, err, rc = res
    san = sanitizer_report(err)
    if san:
        return [f"sanitizer: {san}"]
    got = parse_json(out)
    last = err.strip().splitlines()[-1] if err.strip() else ""
    # Exit 1 means findings (e.g. the schema's); the config must still print.
    if rc not in (0, 1) or got is None:
        return [f"`gtplan config` exited {rc} and printed {'no ' if got is None else ''}JSON: {last}"]
    diffs = []
    diff(rec["config"], got, "", diffs)
    return diffs


def expected_sizes(d):
    if d["megatron_enabled"]:
        m = d["megatron"]
        tp = m["tp"] if m["tp"] is not None else 1
        return {"tp": tp, "cp": m["cp"] if m["cp"] is not None else 1,
                "pp": m["pp"] if m["pp"] is not None else 1,
                "ep": m["ep"] if m["ep"] is not None else 1,
                "etp": m["etp"] if m["etp"] is not None else tp}
    t = d["dtensor"]
    tp = t["tp"] if t["tp"] is not None else 1
    return {"tp": tp, "cp": t["cp"] if t["cp"] is not None else 1, "pp": 1, "ep": 1, "etp": tp}


def check_derived(rec, res):
    out, err, rc = res
    d = rec["derived"]
    san = sanitizer_report(err)
    if san:
        return [f"sanitizer: {san}"]
    plan = parse_json(out)
    if not isinstance(plan, dict):
        return [f"`gtplan plan` printed no plan JSON (exit {rc})"]
    bad = []

    def want(path, exp):
        cur = plan
        for part in path.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        if exp is None and cur in (None, 0):
            return
        if type(cur) is not type(exp) or cur != exp:
            bad.append(f"{path}: {show(exp)} expected, plan has {show(cur)}")

    for k, v in expected_sizes(d).items():
        want(f"sizes.{k}", v)
    for k in ("global", "micro"):
        v = d["batch"][k]
        want(f"batch.{k}", v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None)
    r = d["resources"]
    if r is None:
        return bad
    want("resources.colocated", r["colocated"])
    for part, key in (("cluster", "cluster"), ("train", "train"), ("inference", "inference"),
                      ("reward_model", "reward"), ("teachers", "teachers")):
        for f in ("nodes", "gpus_per_node"):
            want(f"resources.{part}.{f}", r[key][f])
    if d["world"] is not None:
        want("world_size", d["world"])
    return bad


def check_lint(rec, res, expected, warn_summary):
    out, err, rc = res
    name = rec["file"]
    san = sanitizer_report(err)
    if san:
        return [f"sanitizer: {san}"]
    diags = diagnostics(out, err)
    if diags is None:
        return [f"`gtplan lint --format json` printed no diagnostics JSON (exit {rc})"]
    errors = sorted({code_of(x) for x in diags if x.get("severity") == "error"})
    for x in diags:
        if x.get("severity") == "warning":
            warn_summary[code_of(x)].append(name)
    refused = sorted({r["code"] for r in (rec["derived"] or {}).get("refusals", [])})
    want = sorted(expected[name][0]) if name in expected else []
    bad = []
    if refused != want:
        if want:
            bad.append(f"{os.path.basename(EXPECTED)} lists {','.join(want)}, but NeMo-RL's checks "
                       f"give {','.join(refused) or 'none'}")
        else:
            checks = "; ".join(r["check"] for r in rec["derived"]["refusals"])
            bad.append(f"NeMo-RL refuses this config ({checks}); list it in "
                       f"{os.path.basename(EXPECTED)} with {','.join(refused)}")
    if errors != want:
        msgs = [f"{code_of(x)} {x.get('path') or ''}: {x.get('message') or x.get('msg') or ''}".strip()
                for x in diags if x.get("severity") == "error"]
        bad.append(f"lint errors {','.join(errors) or 'none'}, expected {','.join(want) or 'none'}"
                   + (f" [{' | '.join(msgs[:3])}]" if msgs else ""))
    if rc not in (0, 1) or (rc == 1) != bool(errors):
        bad.append(f"lint exit code {rc} with {len(errors)} error code(s)")
    return bad


EXPECTED = "tests/corpus_expected_errors.txt"
MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "models.yaml")


def catalog_names():
    """The hub names data/models.yaml lists, lower case."""
    import yaml
    with open(MODELS, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    return {n.lower() for e in doc["models"] for n in e["names"]}



def main(argv):
    global EXPECTED
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--expected", default=EXPECTED)
    args = ap.parse_args(argv)
    EXPECTED = args.expected
    expected = load_expected(args.expected)
    files = [l for l in read(os.path.join(args.out, "files.txt")).splitlines() if l]
    refs = {}
    for line in read(args.ref).splitlines():
        if line.strip():
            rec = json.loads(line)
            refs[rec["file"]] = rec
    passed = failed = skipped = 0
    warn_summary = defaultdict(list)
    kinds = defaultdict(int)

    def result(check, name, problems):
        nonlocal passed, failed
        if problems:
            failed += 1
            print(f"FAIL {check} {name}")
            for p in problems:
                print(f"    {p}")
        else:
            passed += 1

    for i, name in enumerate(files):
        rec = refs.get(name)
        if rec is None:
            result("config", name, ["corpus_ref.py has no record for this file"])
            skipped += 2
            continue
        if rec["error"]:
            # NeMo-RL cannot load it: gtplan must fail too.
            rc = run_result(args.out, i, "config")[2]
            result("config", name, [] if rc not in (0, None) else
                   [f"NeMo-RL fails to load it ({rec['error']}), gtplan config exits 0"])
            skipped += 2
            continue
        kinds[rec["kind"]] += 1
        result("config", name, check_config(rec, run_result(args.out, i, "config")))
        if rec["kind"] != "training":
            skipped += 2
            continue
        result("derived", name, check_derived(rec, run_result(args.out, i, "plan")))
        result("lint", name, check_lint(rec, run_result(args.out, i, "lint"), expected, warn_summary))

    for name in sorted(set(expected) - set(refs)):
        failed += 1
        print(f"FAIL expectations {name}")
        print(f"    listed in {os.path.basename(EXPECTED)} (line {expected[name][2]}) but not in the corpus")

    # models: which policy.model_name values the catalog resolves
    catalog = catalog_names()
    resolved, unknown = set(), set()
    for i, name in enumerate(files):
        rec = refs.get(name)
        if not rec or rec["error"] or rec["kind"] != "training":
            continue
        model = (rec["config"].get("policy") or {}).get("model_name")
        diags = diagnostics(*run_result(args.out, i, "lint")[:2])
        if not isinstance(model, str) or diags is None:
            continue
        miss = any(code_of(x) == "GT524" and x.get("path") == "policy.model_name" for x in diags)
        (unknown if miss else resolved).add(model)
    wrong = sorted(m for m in unknown if m.lower() in catalog)
    result("models", "data/models.yaml",
           [f"{m}: in data/models.yaml but lint reports GT524" for m in wrong])
    print(f"corpus: {len(resolved)} of {len(resolved | unknown)} model names resolve: "
          + ", ".join(sorted(resolved, key=str.lower)))
    print("corpus: not in the catalog (GT524): " + ", ".join(sorted(unknown, key=str.lower)))

    print(f"corpus: {len(files)} files: " + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())))
    if warn_summary:
        print("corpus: lint warnings (allowed):")
        for code, names in sorted(warn_summary.items()):
            uniq = sorted(set(names))
            print(f"    {code}: {len(names)} in {len(uniq)} file(s), e.g. {uniq[0]}")
    print(f"RESULT {passed} {failed} {skipped}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
