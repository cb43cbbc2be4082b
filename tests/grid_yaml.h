/*
 * grid_yaml: the config text the planner's suites lint, built from its
 * layout (test_ckpt*.c through ckpt_fixture.h, test_reshard.c,
 * test_stack.c, test_render*.c through render_fixture.h, test_step_est.c):
 * policy's batch sizes and megatron_cfg, the cluster, then each suite's
 * own lines. A suite states only what differs; a count of 0 leaves its
 * key out, as a config that does not set it.
 */
#ifndef GTPLAN_TEST_GRID_YAML_H
#define GTPLAN_TEST_GRID_YAML_H

#include <check.h>
#include <stdio.h>

struct grid_yaml {
	const char *head;	/* lines before policy (checkpointing) */
	const char *policy;	/* policy lines after the micro-batch */
	long long batch;	/* train_global_batch_size */
	/* megatron_cfg: TP, CP, PP, GTP shards (tp * g), the expert grid */
	long long tp, cp, pp, shards, ep, etp, eshards;
	const char *megatron;	/* more megatron_cfg lines */
	long long nodes, gpus;	/* cluster: nodes of gpus GPUs */
	/* gtplan.model when layers: the small model test_ckpt*.c and
	 * test_reshard.c share (vocab 0: 32000), then `model` lines */
	long long layers, vocab;
	const char *model;
	const char *tail;	/* after all: gtplan lines or whole keys */
};

/* The world on nodes of 8 GPUs where 8 divides it, else on one node. */
static inline void grid_yaml_nodes(struct grid_yaml *y, long long gpus)
{
	y->nodes = gpus % 8 ? 1 : gpus / 8;
	y->gpus = gpus % 8 ? gpus : 8;
}

/* Writes y's text into buf (n bytes, which it must hold) and returns buf. */
static inline char *grid_yaml_text(char *buf, size_t n,
				   const struct grid_yaml *y)
{
	static const char *const key[] = {
		"tensor_model_parallel_size", "context_parallel_size",
		"pipeline_model_parallel_size",
		"tensor_parallel_num_weight_shards",
		"expert_model_parallel_size", "expert_tensor_parallel_size",
		"expert_tensor_parallel_num_weight_shards",
	};
	const long long val[] = { y->tp, y->cp, y->pp, y->shards, y->ep,
				  y->etp, y->eshards };
	size_t at;

#define PUT(...)                                                          \
	do {                                                              \
		int m_ = snprintf(buf + at, n - at, __VA_ARGS__);         \
		ck_assert(m_ >= 0 && (size_t)m_ < n - at);                \
		at += (size_t)m_;                                         \
	} while (0)
	at = 0;
	PUT("%spolicy:\n"
	    "  train_global_batch_size: %lld\n"
	    "  train_micro_batch_size: 1\n%s"
	    "  megatron_cfg:\n"
	    "    enabled: true\n", y->head ? y->head : "", y->batch,
	    y->policy ? y->policy : "");
	for (size_t i = 0; i < sizeof(key) / sizeof(key[0]); i++)
		if (val[i])
			PUT("    %s: %lld\n", key[i], val[i]);
	PUT("%scluster:\n"
	    "  num_nodes: %lld\n"
	    "  gpus_per_node: %lld\n", y->megatron ? y->megatron : "",
	    y->nodes, y->gpus);
	if (y->layers)
		PUT("gtplan:\n"
		    "  model:\n"
		    "    num_layers: %lld\n"
		    "    hidden_size: 768\n"
		    "    ffn_hidden_size: 3072\n"
		    "    num_attention_heads: 12\n"
		    "    vocab_size: %lld\n%s", y->layers,
		    y->vocab ? y->vocab : 32000, y->model ? y->model : "");
	PUT("%s", y->tail ? y->tail : "");
#undef PUT
	return buf;
}

#endif
