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

UNRESOLVED = "__unresolved__"

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


# ---- reading the resolved config ----------------------------------------

def get(d, dotted, default=None):
    for part in dotted.split("."):
        if isinstance(d, dict) and part in d:
            d = d[part]
        else:
            return default
    return d


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_map(v):
    return isinstance(v, dict) and UNRESOLVED not in v


class Refused(Exception):
    """A check NeMo-RL's setup fails on: gtplan must report `code`."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def algorithm(cfg):
    """Which entry point runs this config, from its top-level sections."""
    if is_map(cfg.get("async_rl")) and (is_map(cfg.get("grpo")) or is_map(cfg.get("ppo"))):
        return "single_controller"
    if is_map(cfg.get("grpo")):
        return "grpo"
    if is_map(cfg.get("ppo")):
        return "ppo"
    if is_map(cfg.get("distillation")):
        return "off_policy_distillation" if isinstance(cfg.get("teachers"), list) else "distillation"
    for name in ("sft", "dpo", "rm"):
        if is_map(cfg.get(name)):
            return name
    return "unknown"


def env_names(cfg):
    """nemo_rl/data/utils.py extract_necessary_env_names: the env_name of
    data.train / data.validation / data.default, each a map or a list."""
    names = set()
    data = cfg.get("data")
    if not isinstance(data, dict):
        return names
    for key in ("train", "validation", "default"):
        items = data.get(key)
        for item in items if isinstance(items, list) else [items]:
            if isinstance(item, dict) and "env_name" in item:
                names.add(item["env_name"])
    return names


def opd_teachers(cfg):
    """Non-colocated OPD teachers: [(alias, num_nodes, gpus_per_node)], one
    per checkpoint when deduplicating (the first alias wins; later aliases of
    it, overrides and all, are skipped). Empty unless
    on_policy_distillation.enabled and non_colocated_teachers.enabled.
    Fields: teacher_overrides.<alias> over default_teacher_cfg over
    TeacherResourceConfig's defaults (num_nodes 1, gpus_per_node 8)."""
    opd = cfg.get("on_policy_distillation")
    if not is_map(opd) or not opd.get("enabled"):
        return []
    nct = opd.get("non_colocated_teachers")
    if not is_map(nct) or not nct.get("enabled"):
        return []
    default = nct.get("default_teacher_cfg") or {}
    overrides = nct.get("teacher_overrides") or {}
    dedup = bool(opd.get("deduplicate_shared_teacher_checkpoints", True))
    seen, out = set(), []
    for alias, model in (opd.get("teacher_model_by_agent_name") or {}).items():
        if dedup and model in seen:
            continue
        seen.add(model)
        merged = {"num_nodes": 1, "gpus_per_node": 8, **default, **(overrides.get(alias) or {})}
        out.append((alias, merged["num_nodes"], merged["gpus_per_node"]))
    return out


def need_int(v, what, allow_none=False):
    if v is None and allow_none:
        return None
    if not is_int(v):
        raise Refused("GT310", f"{what} must be an integer, got {v!r}")
    return v


def split_resources(cfg, algo):
    """The GPUs each part gets, as the entry point's setup() computes them.
    Returns a dict of (nodes, gpus_per_node) pairs; raises Refused."""
    n = get(cfg, "cluster.num_nodes")
    g = get(cfg, "cluster.gpus_per_node")
    if not is_int(n) or not is_int(g) or n < 1 or g < 1:
        return None  # the schema check reports these
    res = {"cluster": (n, g), "inference": (0, 0), "reward": (0, 0),
           "teachers": (0, 0), "colocated": True}
    if algo not in ("grpo", "ppo", "distillation", "single_controller"):
        res["train"] = (n, g)
        return res
    gen = get(cfg, "policy.generation")
    colocated = bool(get(gen, "colocated.enabled", True)) if is_map(gen) else True
    res["colocated"] = colocated
    inf_g = get(gen, "colocated.resources.gpus_per_node")
    inf_n = get(gen, "colocated.resources.num_nodes")

    if algo == "distillation":  # distillation.py setup()
        if colocated:
            res["train"] = (n, g)
            return res
        if get(gen, "backend") == "megatron":
            raise Refused("GT310", "Non-colocated inference is not supported for Megatron generation backends")
        if n == 1:
            inf_g = need_int(inf_g, "policy.generation.colocated.resources.gpus_per_node", True)
            if inf_g is None or inf_g <= 0:
                raise Refused("GT310", "colocated.resources.gpus_per_node must be explicitly set to a value > 0")
            if inf_n is not None and inf_n != 1:
                raise Refused("GT310", "colocated.resources.num_nodes must be 1 or null")
            res["inference"] = (1, inf_g)
            res["train"] = (1, g - inf_g)
        else:
            inf_n = need_int(inf_n, "policy.generation.colocated.resources.num_nodes")
            if inf_n <= 0:
                raise Refused("GT310", "colocated.resources.num_nodes must be > 0")
            if inf_g != g:
                raise Refused("GT310", "colocated.resources.gpus_per_node must equal cluster.gpus_per_node")
            res["inference"] = (inf_n, inf_g)
            res["train"] = (n - inf_n, g)
        if res["train"][0] <= 0 or res["train"][1] <= 0:
            raise Refused("GT309", "no GPUs left for training")
        return res

    teachers = opd_teachers(cfg) if algo in ("grpo", "single_controller") else []
    t_nodes = 0
    for alias, tn, tg in teachers:
        need_int(tn, f"teacher {alias} num_nodes")
        need_int(tg, f"teacher {alias} gpus_per_node")
        if tg > g:
            raise Refused("GT310", f"OPD teacher '{alias}' requests gpus_per_node={tg} > cluster.gpus_per_node={g}")
        t_nodes += tn
    if teachers:
        res["teachers"] = (t_nodes, g)

    if algo == "single_controller":  # single_controller_utils/setup.py _build_clusters
        policy_nodes = n - t_nodes
        if policy_nodes <= 0:
            raise Refused("GT309", "cluster.num_nodes must leave at least one node for the student")
        if colocated:
            res["train"] = (policy_nodes, g)
            return res
        if inf_g is None:
            raise Refused("GT310", "Non-colocated generation requires colocated.resources.gpus_per_node")
        need_int(inf_g, "policy.generation.colocated.resources.gpus_per_node")
        inf_n = inf_n or 1
        if policy_nodes == 1:
            res["inference"] = (inf_n, inf_g)
            res["train"] = (1, g - inf_g)
        else:
            res["inference"] = (inf_n, inf_g)
            res["train"] = (policy_nodes - inf_n, g)
        if res["train"][0] <= 0 or res["train"][1] <= 0:
            raise Refused("GT309", "no GPUs left for training")
        return res

    # grpo.py / ppo.py setup()
    if algo == "ppo" and not colocated and get(gen, "backend") != "vllm":
        raise Refused("GT310", "Non-colocated PPO generation currently supports only vLLM")
    rm_n = rm_g = 0
    rm = "reward_model" in env_names(cfg)
    if rm:
        r = get(cfg, "env.reward_model.resources")
        if not is_map(r) or "num_nodes" not in r or "gpus_per_node" not in r:
            raise Refused("GT310", "env.reward_model.resources.{num_nodes,gpus_per_node} are required")
        rm_n = need_int(r["num_nodes"], "env.reward_model.resources.num_nodes")
        rm_g = need_int(r["gpus_per_node"], "env.reward_model.resources.gpus_per_node")
        res["reward"] = (rm_n, rm_g)
    if n == 1:
        policy_nodes = 1
    else:
        policy_nodes = n - rm_n
        if policy_nodes <= 0:
            raise Refused("GT309", f"policy_nodes:{policy_nodes} + rm_nodes:{rm_n} = total_nodes:{n}")
    policy_nodes -= t_nodes
    if teachers and policy_nodes <= 0:
        raise Refused("GT309", "policy_nodes must be > 0 after reserving OPD teacher nodes")
    if colocated:
        gpn = g - rm_g if n == 1 else g
        if gpn <= 0:
            raise Refused("GT309", "policy.generation.colocated.resources.gpus_per_node must be > 0")
        res["train"] = (policy_nodes, gpn)
        return res
    if policy_nodes == 1:
        inf_g = need_int(inf_g, "policy.generation.colocated.resources.gpus_per_node", True)
        if inf_g is None or inf_g <= 0:
            raise Refused("GT310", "colocated.resources.gpus_per_node must be explicitly set to a value > 0")
        inf_n = need_int(inf_n, "policy.generation.colocated.resources.num_nodes", True)
        if inf_n is not None and inf_n != 1:
            raise Refused("GT310", "colocated.resources.num_nodes must be 1 or null")
        sub = rm_g if n == 1 and rm else 0
        res["inference"] = (1, inf_g)
        res["train"] = (1, g - inf_g - sub)
        if res["train"][1] <= 0:
            raise Refused("GT309", "No enough GPUs for training")
        return res
    inf_n = need_int(inf_n, "policy.generation.colocated.resources.num_nodes")
    if inf_n <= 0:
        raise Refused("GT310", "colocated.resources.num_nodes must be > 0")
    if inf_g is None or inf_g != g:
        raise Refused("GT310", "colocated.resources.gpus_per_node must equal cluster.gpus_per_node")
    res["inference"] = (inf_n, inf_g)
    res["train"] = (policy_nodes - inf_n, g)
    if res["train"][0] <= 0:
        raise Refused("GT309", "Non-colocated mode requires train_nodes > 0")
    return res


# Entry points that build a pydantic MasterConfig from the resolved config.
PYDANTIC_ALGORITHMS = ("grpo", "ppo", "distillation", "single_controller")


def derive(cfg):
    """The numbers NeMo-RL's setup works with, and the checks it would fail."""
    mcfg = get(cfg, "policy.megatron_cfg") or {}
    dcfg = get(cfg, "policy.dtensor_cfg") or {}
    megatron = bool(is_map(mcfg) and mcfg.get("enabled"))
    m = {k: get(mcfg, key) for k, key in (
        ("tp", "tensor_model_parallel_size"), ("cp", "context_parallel_size"),
        ("pp", "pipeline_model_parallel_size"), ("ep", "expert_model_parallel_size"),
        ("etp", "expert_tensor_parallel_size"))}
    d = {"tp": get(dcfg, "tensor_parallel_size"), "cp": get(dcfg, "context_parallel_size")}
    out = {
        "algorithm": algorithm(cfg),
        "megatron_enabled": megatron,
        "megatron": m,
        "dtensor": d,
        "cluster": {"num_nodes": get(cfg, "cluster.num_nodes"),
                    "gpus_per_node": get(cfg, "cluster.gpus_per_node")},
        "batch": {"global": get(cfg, "policy.train_global_batch_size"),
                  "micro": get(cfg, "policy.train_micro_batch_size")},
        "resources": None,
        "world": None,
        "refusals": [],
    }
    # The entry point validates the resolved dict with pydantic
    # (MasterConfig(**config)); PolicyConfig.model_name is a str.
    if out["algorithm"] in PYDANTIC_ALGORITHMS and not isinstance(get(cfg, "policy.model_name"), str):
        out["refusals"].append({"code": "GT200", "check":
                                "MasterConfig: policy.model_name should be a valid string"})
    try:
        res = split_resources(cfg, out["algorithm"])
    except Refused as e:
        out["refusals"].append({"code": e.code, "check": str(e)})
        return out
    if res is None:
        return out
    pair = lambda t: {"nodes": t[0], "gpus_per_node": t[1]}  # noqa: E731
    out["resources"] = {k: (v if k == "colocated" else pair(v)) for k, v in res.items()}
    world = res["train"][0] * res["train"][1]
    out["world"] = world

    # Policy.__init__ (lm_policy.py): W >= and divisible by PP*CP*TP, with
    # Megatron's sizes, or DTensor's TP/CP and PP = 1.
    if megatron:
        tp, cp, pp = m["tp"], m["cp"], m["pp"]
    else:
        tp, cp, pp = d["tp"], d["cp"], 1
    lanes = None
    if all(is_int(x) and x > 0 for x in (tp, cp, pp)):
        msize = tp * cp * pp
        if world < msize or world % msize:
            out["refusals"].append({"code": "GT303", "check":
                                    f"World size ({world}) must be divisible by PP * CP * TP ({msize})"})
        else:
            lanes = world // msize
            # Megatron's expert grid (initialize_model_parallel).
            if megatron:
                ep = m["ep"] if is_int(m["ep"]) else 1
                etp = m["etp"] if is_int(m["etp"]) else tp
                esize = etp * ep * pp
                if world % esize:
                    out["refusals"].append({"code": "GT304", "check":
                                            f"World size ({world}) not divisible by ETP*EP*PP ({esize})"})
            # shard_by_batch_size: "Batch size (B) is not a multiple of shards (D)".
            gbs = out["batch"]["global"]
            if out["algorithm"] != "unknown" and is_int(gbs) and gbs % lanes:
                out["refusals"].append({"code": "GT400", "check":
                                        f"Batch size ({gbs}) is not a multiple of shards ({lanes})"})
        for code, check in framework_refusals(cfg, out["algorithm"], megatron, res, lanes):
            out["refusals"].append({"code": code, "check": check})
    return out


# ---- framework rules (docs/design.md §2.8): Megatron, NeMo-RL, vLLM checks --
#
# Written from the frameworks' sources (see planner/rules_*.c for the file
# references), not from gtplan's C: the same verdicts, computed again. Model
# shapes come from gtplan's data file data/models.yaml (the shared facts);
# every check on them is this file's own.

MODELS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "models.yaml")
_MODELS = None


def hf_fields(c):
    """The Megatron fields these checks use, from a catalog entry's
    config.json keys, as Megatron-Bridge's bridges map them
    (megatron/bridge/models/*/*_bridge.py: num_hidden_layers ->
    num_layers, num_key_value_heads -> num_query_groups, kv_lora_rank ->
    multi-latent attention, the experts' count under its three names)."""
    out = {}
    for hf, meg in (("num_hidden_layers", "num_layers"), ("hidden_size", "hidden_size"),
                    ("num_attention_heads", "num_attention_heads"),
                    ("num_key_value_heads", "num_query_groups"), ("vocab_size", "vocab_size"),
                    ("num_experts", "num_moe_experts"), ("num_local_experts", "num_moe_experts"),
                    ("n_routed_experts", "num_moe_experts")):
        if is_int(c.get(hf)) and c[hf] > 0:
            out[meg] = c[hf]
    if c.get("kv_lora_rank") is not None:
        out["multi_latent_attention"] = True
    return out


def load_models():
    """name (lower case) -> dict of fields, from data/models.yaml's entries
    (PyYAML's safe loader: merge keys as in the file)."""
    global _MODELS
    if _MODELS is not None:
        return _MODELS
    import yaml
    with open(MODELS_FILE, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    names = {}
    for e in doc["models"]:
        fields = hf_fields(e["config"])
        for n in e["names"]:
            names[n.lower()] = fields
    _MODELS = names
    return names


def model_shape(cfg):
    """The model's fields: the catalog entry, then gtplan.model over it."""
    name = get(cfg, "policy.model_name")
    shape = {}
    if isinstance(name, str) and name and not name.startswith(("/", ".", "~")):
        models = load_models()
        hit = models.get(name.lower())
        if hit is None and "/" not in name:
            hit = next((v for k, v in models.items() if k.split("/", 1)[1] == name.lower()), None)
        shape = dict(hit or {})
    desc = get(cfg, "gtplan.model")
    if is_map(desc):
        for k, v in desc.items():
            if v is None:
                shape.pop(k, None)
            else:
                shape[k] = v
    if not all(is_int(shape.get(k)) and shape[k] > 0
               for k in ("num_layers", "hidden_size", "num_attention_heads", "vocab_size")):
        return None
    shape.setdefault("num_query_groups", shape["num_attention_heads"])
    return shape


def layer_split_ok(layers, pp, vpp, first, last):
    """Megatron's layer split: even over PP, or first/last stages given and
    the rest even over the middle stages; every stage's layers whole virtual
    stages."""
    n, st = layers, pp
    for given in (first, last):
        if given:
            if given < 1 or (vpp and given % vpp):
                return False
            n, st = n - given, st - 1
    if n < 0 or (n > 0) != (st > 0):
        return False
    if st and (n % st or (vpp and (n // st) % vpp)):
        return False
    return True


def shape_refusals(shape, tp, pp, ep, vpp, first, last, who):
    out = []
    if pp > 1 and not layer_split_ok(shape["num_layers"], pp, vpp, first, last):
        out.append(("GT600", f"{who}: {shape['num_layers']} layers over PP {pp}"))
    heads, groups = shape["num_attention_heads"], shape["num_query_groups"]
    if heads % tp:
        out.append(("GT601", f"{who}: num_attention_heads ({heads}) must be a multiple of TP ({tp})"))
    elif not shape.get("multi_latent_attention") and groups % tp and tp % groups:
        out.append(("GT602", f"{who}: num_query_groups ({groups}) must be a multiple or divisor of TP ({tp})"))
    experts = shape.get("num_moe_experts") or 0
    if ep > 1 and not experts:
        out.append(("GT604", f"{who}: num_moe_experts must be non None to use expert-parallel"))
    elif ep > 1 and experts % ep:
        out.append(("GT603", f"{who}: {experts} experts over EP {ep}"))
    return out


def framework_refusals(cfg, algo, megatron, res, lanes):
    """(code, check) for each framework rule the config breaks."""
    out = []
    mcfg = get(cfg, "policy.megatron_cfg") or {}
    size = lambda v, dflt=1: v if is_int(v) and v > 0 else dflt  # noqa: E731
    packing = bool(get(cfg, "policy.sequence_packing.enabled", False))
    dynamic = bool(get(cfg, "policy.dynamic_batching.enabled", False))
    shape = model_shape(cfg)
    if megatron:
        tp, pp, cp = size(mcfg.get("tensor_model_parallel_size")), size(mcfg.get("pipeline_model_parallel_size")), size(mcfg.get("context_parallel_size"))
        ep = size(mcfg.get("expert_model_parallel_size"))
        vpp = mcfg.get("virtual_pipeline_model_parallel_size")
        vpp = vpp if is_int(vpp) and vpp > 0 else 0
        sp = mcfg.get("sequence_parallel") is True
        # ModelParallelConfig and NeMo-RL's megatron/setup.py
        if sp and tp == 1:
            out.append(("GT621", "Cannot use sequence parallelism without tensor parallelism"))
        # only where the config says so: NeMo-RL reads the keys, a config
        # without them is a fragment the planner does not judge
        if ep > 1 and tp > 1 and mcfg.get("sequence_parallel") is False:
            out.append(("GT620", "expert and tensor parallelism need sequence parallelism"))
        if vpp and pp == 1:
            out.append(("GT622", "interleaved schedule needs PP > 1"))
        if cp > 1 and get(cfg, "policy.sequence_packing.enabled") is False:
            out.append(("GT624", "Sequence Packing must be enabled to use Context Parallelism with MCore"))
        # nemo_rl/models/megatron/data.py _get_pack_sequence_parameters_for_megatron:
        # packed sequences are padded to make_sequence_length_divisible_by,
        # asserted a multiple of minimum_pad_factor
        msl = get(cfg, "policy.make_sequence_length_divisible_by")
        pad_factor = (2 * cp if cp > 1 else 1) * (tp if tp > 1 and sp else 1)
        if packing and not (cp > 1 and get(cfg, "policy.sequence_packing.enabled") is False) \
                and is_int(msl) and msl > 0 and msl % pad_factor:
            out.append(("GT625", f"make_sequence_length_divisible_by ({msl}) is not a multiple of minimum_pad_factor ({pad_factor})"))
        if shape:
            first = mcfg.get("num_layers_in_first_pipeline_stage") if pp > 1 else None
            last = mcfg.get("num_layers_in_last_pipeline_stage") if pp > 1 else None
            first = first if is_int(first) else 0
            last = last if is_int(last) else 0
            out += shape_refusals(shape, tp, pp, ep, vpp, first, last, "training")
            gen = get(cfg, "policy.generation")
            if is_map(gen) and gen.get("backend") == "megatron" and is_map(gen.get("mcore_generation_config")):
                mg = gen["mcore_generation_config"]
                gtp = size(mg.get("tensor_model_parallel_size"), tp)
                gpp = size(mg.get("pipeline_model_parallel_size"), pp)
                gep = size(mg.get("expert_model_parallel_size"), ep)
                if (gtp, gpp, gep) != (tp, pp, ep):
                    out += shape_refusals(shape, gtp, gpp, gep, 0, 0, 0, "megatron generation")
        # log-probs (GRPO, PPO, distillation): Megatron runs samples // logprob_batch_size micro-batches.
        lb = get(cfg, "policy.logprob_batch_size")
        prompts, gens = get(cfg, f"{algo}.num_prompts_per_step"), get(cfg, f"{algo}.num_generations_per_prompt")
        if (algo in ("grpo", "ppo", "distillation") and lanes and not packing and not dynamic and is_int(lb) and lb > 0
                and is_int(prompts) and is_int(gens) and prompts > 0 and gens > 0):
            rollout = prompts * gens
            if rollout % lanes or (rollout // lanes) % lb:
                out.append(("GT630", f"{rollout} rollout samples over {lanes} lanes in micro-batches of {lb}"))
        # the interleaved schedule: micro-batches a multiple of PP
        gbs, mbs = get(cfg, "policy.train_global_batch_size"), get(cfg, "policy.train_micro_batch_size")
        if (vpp and pp > 1 and lanes and not packing and not dynamic and is_int(gbs) and is_int(mbs)
                and mbs > 0 and gbs % (lanes * mbs) == 0 and (gbs // (lanes * mbs)) % pp):
            out.append(("GT633", "microbatches not divisible by PP with the interleaved schedule"))
    # validation (SFT; DPO and RM double batch and micro-batch): shard_by_batch_size
    # asserts the lanes, get_microbatch_iterator drops a remainder
    if algo in ("sft", "dpo", "rm") and lanes and not packing and not dynamic:
        k = 2 if algo in ("dpo", "rm") else 1
        vg, vm = get(cfg, f"{algo}.val_global_batch_size"), get(cfg, f"{algo}.val_micro_batch_size")
        if is_int(vg) and is_int(vm) and vg > 0 and vm > 0 and ((k * vg) % lanes or (k * vg // lanes) % (k * vm)):
            out.append(("GT631", f"validation batch {k} x {vg} over {lanes} lanes in micro-batches of {k} x {vm}"))
    # vLLM (the algorithms that generate, and configs without an algorithm section)
    gen = get(cfg, "policy.generation")
    if algo in ("grpo", "ppo", "distillation", "single_controller", "unknown") and is_map(gen) and gen.get("backend", "vllm") == "vllm":
        vc = gen.get("vllm_cfg") if is_map(gen.get("vllm_cfg")) else {}
        vtp, vpp_, vep = (vc.get(k, 1) for k in ("tensor_parallel_size", "pipeline_parallel_size", "expert_parallel_size"))
        if all(is_int(x) and x > 0 for x in (vtp, vpp_, vep)):
            if shape:
                heads, kv = shape["num_attention_heads"], shape["num_query_groups"]
                padded = -(-shape["vocab_size"] // 64) * 64
                # every rule broken, not only the first
                if heads % vtp:
                    out.append(("GT610", f"vLLM: heads ({heads}) divisible by TP ({vtp})"))
                if not shape.get("multi_latent_attention") and kv % vtp and vtp % kv:
                    out.append(("GT611", f"vLLM: {kv} KV heads and TP {vtp}"))
                if padded % vtp:
                    out.append(("GT612", f"vLLM: padded vocabulary {padded} over TP {vtp}"))
            if res is not None:
                nodes, gpn = res["train"] if res["colocated"] else res["inference"]
                if nodes * gpn > 0 and (nodes * gpn) % (vtp * vpp_):
                    out.append(("GT613", "World size must be a multiple of model parallel size"))
            if vpp_ > 1 and not vc.get("async_engine"):
                out.append(("GT615", "pipeline_parallel_size > 1 needs async_engine"))
            if vep > 1 and vep % vtp:
                out.append(("GT616", "EP must be a multiple of TP"))
    return out


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
