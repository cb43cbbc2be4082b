"""corpus_rules: the framework rules (docs/design.md §2.8): Megatron, NeMo-RL,
vLLM checks, for tests/corpus_ref.py's derived record (framework_refusals,
called by tests/corpus_setup.py's derive).

Written from the frameworks' sources (see planner/rules_*.c for the file
references), not from gtplan's C: the same verdicts, computed again. Model
shapes come from gtplan's data file data/models.yaml (the shared facts);
every check on them is this file's own.
"""

import os

from corpus_values import get, is_int, is_map

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
