"""corpus_setup: what NeMo-RL's entry points make of a resolved training
config before they start, for tests/corpus_ref.py's "derived" record: the
entry point (algorithm), the GPUs each part gets (split_resources, as their
setup() computes them), the world, and the checks NeMo-RL would fail
(refusals, with the gtplan code that must report each; the framework rules
are tests/corpus_rules.py's). The rules and their file references:
docs/notes/nemo-rl-loader-and-resources.md.
"""

from corpus_rules import framework_refusals
from corpus_values import get, is_int, is_map


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
