/*
 * cfg_keys: the config's key paths, spelled once. A section is a prefix
 * that ends in a dot, so KEY_MEG "sequence_parallel" is one path for
 * cfg_path(); the keys read in more than one place have a name of their
 * own. NeMo-RL's sections and Megatron's names are NeMo-RL's (its
 * recipe grpo_math_1B_megatron.yaml); gtplan's own keys live under
 * KEY_GTPLAN, which NeMo-RL ignores (schemas/config.schema.json lists them
 * all).
 *
 * Ownership: string literals only; nothing to free.
 */
#ifndef GTPLAN_CFG_KEYS_H
#define GTPLAN_CFG_KEYS_H

/* ---- NeMo-RL's sections ------------------------------------------------ */

#define KEY_POLICY   "policy."
#define KEY_MEG      KEY_POLICY "megatron_cfg."
#define KEY_MEG_OPT  KEY_MEG "optimizer."
#define KEY_DTENSOR  KEY_POLICY "dtensor_cfg"
#define KEY_GEN_CFG  KEY_POLICY "generation"
#define KEY_GEN      KEY_GEN_CFG "."
#define KEY_CLUSTER  "cluster."
#define KEY_CKPT     "checkpointing."

/* ---- keys read in more than one place ---------------------------------- */

#define KEY_MODEL_NAME     KEY_POLICY "model_name"
#define KEY_MEG_ENABLED    KEY_MEG "enabled"
#define KEY_TP             KEY_MEG "tensor_model_parallel_size"
#define KEY_PP             KEY_MEG "pipeline_model_parallel_size"
#define KEY_EP             KEY_MEG "expert_model_parallel_size"
#define KEY_ETP            KEY_MEG "expert_tensor_parallel_size"
#define KEY_SHARDS         KEY_MEG "tensor_parallel_num_weight_shards"
#define KEY_EXPERT_SHARDS  KEY_MEG "expert_tensor_parallel_num_weight_shards"
#define KEY_VOCAB_DIVISOR  KEY_MEG "make_vocab_size_divisible_by"
#define KEY_SEQ_PARALLEL   KEY_MEG "sequence_parallel"
#define KEY_GEN_BACKEND    KEY_GEN "backend"
#define KEY_GPUS_PER_NODE  KEY_CLUSTER "gpus_per_node"
#define KEY_GLOBAL_BATCH   KEY_POLICY "train_global_batch_size"

/* ---- gtplan's own ------------------------------------------------------- */

#define KEY_GTPLAN         "gtplan."
#define KEY_STACK_CFG      KEY_GTPLAN "stack"
#define KEY_STACK          KEY_STACK_CFG "."
#define KEY_HARDWARE       KEY_GTPLAN "hardware."
#define KEY_INTERCONNECT   KEY_GTPLAN "interconnect."
#define KEY_DRIVER_LAYOUT  KEY_GTPLAN "driver_layout"
#define KEY_RANK_ORDER     KEY_GTPLAN "rank_order"
#define KEY_GPU_MEMORY     KEY_GTPLAN "gpu_memory_gb"
#define KEY_CALLS          KEY_GTPLAN "calls"
#define KEY_GTPLAN_MODEL   KEY_GTPLAN "model"

#endif
