/*
 * step_ops: every kernel of a gtplan-run train step as one table, block
 * by block in runtime/rt_train.c's order (rt_vocab.c's ends, rt_step.c's
 * start and end, rt_weights.c's gather and scatter of a weight), with the
 * elements each touches as a formula of the decoder's sizes
 * (base/decoder_sizes.h) and the bytes it moves per element. When the runtime's kernels change,
 * this table changes with them: a row per kern_* call (or per group of
 * calls of one kind), its condition, its size.
 *
 * Bytes per element of the kernels (fp32 arrays and, in bf16 runs, the
 * bf16 copies written beside them: kernels/kern.h):
 *   rmsnorm_fwd 8 (x in, y out), with the residual add in its pass
 *   (add_rmsnorm_fwd) 16 (x and r in, the sum and y out; bf16 runs
 *   without SP write y's bf16 copy alone: 14),
 *   rmsnorm_bwd 12 (x, dy in, dx out), rmsnorm_bwd_add 16 (dx read and
 *   written; bf16 runs without SP also dx's bits: 18), bf16 copies +2
 *   per element they cover, round_bf16 8 (in place), its _copy 10,
 *   to_bf16 / from_bf16 6 (4 + 2), axpy 12 (x, y in, y out), copy 8,
 *   zero 4, rope 8 (in place), qkv split and merge 8, qkv_rope_bf 6 (packed in, the copies out; 10 where CP's attention
 *   reads the fp32 values too), qkv_merge_rope_bf 6 (dq, dk, dv in, the
 *   copy out; 10 where the bias gradient reads the fp32 values),
 *   swiglu_fwd 12 per F (gate and up in, one out; bf16 runs hold them in
 *   bf16: _b16 6), swiglu_bwd 20 per F (_b16 10), ce passes 4 per logit
 *   read (ce_bwd 8: read and write; bf16 runs hold the logits in bf16:
 *   _b16 2 and 4; ce_target 12 a row: the target id and one logit in,
 *   the target logit out; _b16 10), embedding lookup 8 (_b16 6: bf16
 *   rows in), its backward 12, Adam 28 per parameter (p, m, v read and
 *   written, g read; _bf 30 where it writes the weights' bf16 copy).
 *   GEMMs read bf16 copies (kern_gemm_bf) and the flash kernels bf16
 *   operands, dout's included (linear_proj's backward writes it in bf16
 *   without CP): no casts. tests/gpu/bench_mem_gpu.c times the bf16
 *   rows' ops at these bytes.
 */
#include "step_est.h"

#include <string.h>

/* What a row's elements are: the product of up to three of these. */
enum sym {
	Z_ONE,
	Z_N,      /* the micro-batch's token rows on the rank */
	Z_NSTEP,  /* the step's: Z_N times its micro-batches */
	Z_NL,     /* the residual stream's rows (N / T with SP) */
	Z_H,
	Z_QL, Z_KVL, Z_QKVL, /* query, key (= value), qkv rows per TP rank */
	Z_QG,     /* query rows of one query group (heads per group x d) */
	Z_HD,
	Z_FL, Z_F2,  /* F / T and 2 F / T */
	Z_VL,     /* vocabulary rows per TP rank */
	Z_KL,     /* query groups per TP rank */
	Z_EMB,    /* the TP-local embedding, padded rows included */
	Z_PARAMS, /* the rank's parameters (shards and replicated) */
	Z_REP,    /* its replicated parameters */
	Z_W,      /* the current weight gathered: G shards */
	Z_WS,     /* its shard */
	Z_WPAD,   /* its padding rows x columns */
	Z_SYMS
};

enum kind {
	K_MEM,    /* memory-bound kernel: elementwise class */
	K_COPY,   /* device copy or zeroing */
	K_OPTIM,  /* the optimizer */
	K_GEMM,   /* m = a, n = b, k = c; 2 m n k FLOPs */
	K_ATTN_F, /* attention forward of the layer */
	K_ATTN_B, /* and its backward */
	K_USE,    /* rt_weights_next: the gather block of weight `w` */
	K_SCATTER /* rt_scatter_grad: the scatter block of weight `w` */
};

/* Conditions (all given bits must hold). */
#define C_BF16    (1u << 0)  /* gtplan.runtime.dtype bf16 */
#define C_FP32    (1u << 1)
#define C_SP      (1u << 2)  /* sequence parallelism */
#define C_NOSP    (1u << 3)
#define C_QKN     (1u << 4)  /* QK layernorm */
#define C_BIAS    (1u << 5)  /* qkv bias */
#define C_CP1     (1u << 6)  /* no context parallelism */
#define C_G1      (1u << 7)  /* GTP group of one: gathers are copies */
#define C_OUTSCAT (1u << 8)  /* the output layer's gradient is scattered
				in head_bwd: untied, or a later stage's copy */
#define C_EMBZERO (1u << 9)  /* embed_bwd zeroes the embedding gradient:
				untied, or not the last stage */
#define C_FLASH   (1u << 10) /* head dim 64 or 128: attention runs the
				flash kernels on bf16 copies of its inputs
				(kernels/kern_cuda_fast.cu, kern_fast_attn_ok) */
#define C_NOFLASH (1u << 11)
#define C_GN      (1u << 12) /* GTP of more than one rank */
#define C_CPN     (1u << 13) /* context parallelism */
#define C_QKVF    (1u << 14) /* bf16 without QK-norm: linear_qkv's columns,
				RoPE and the bf16 copies in one pass each
				way (runtime/rt_train.c qkv_fused) */
#define C_QKVS    (1u << 15) /* not so: split, RoPE, copies apart */
#define C_NOBIAS  (1u << 16)
#define C_ZAPART  (1u << 17) /* attention's backward zeroes dq, dk, dv by
				calls of their own: fp32 runs and head dims
				without flash kernels (kern_cuda_attn_bwd
				before the reference kernels); the flash
				backward clears them in its dsum pre-pass
				(kernels/flash_bwd.cuh, fl_bwd_clear) */

/* The large weights, as rt_weights_begin names them. */
enum wt { WT_QKV = DSZ_QKV, WT_PROJ = DSZ_PROJ, WT_FC1 = DSZ_FC1,
	  WT_FC2 = DSZ_FC2, WT_EMB, WT_OUT, WT_NONE };

struct row {
	const char *op;     /* the kern op (profile name) */
	enum kind kind;
	unsigned when;      /* C_* bits */
	double per;         /* bytes per element */
	enum sym a, b, c;   /* elements: a x b x c; GEMM: m, n, k */
	enum sym rep;       /* repeated this many times */
	enum wt w;          /* K_USE, K_SCATTER */
};

#define MEM(op, when, per, a, b) { op, K_MEM, when, per, a, b, Z_ONE, \
				   Z_ONE, WT_NONE }
#define COPY(op, when, per, a, b) { op, K_COPY, when, per, a, b, Z_ONE, \
				    Z_ONE, WT_NONE }
#define GEMM(m, n, k, rep) { "gemm", K_GEMM, 0, 0, m, n, k, rep, WT_NONE }
#define USE(w) { "gather", K_USE, 0, 0, Z_ONE, Z_ONE, Z_ONE, Z_ONE, w }
#define SCATTER(w, when) { "scatter", K_SCATTER, when, 0, Z_ONE, Z_ONE, \
			   Z_ONE, Z_ONE, w }
#define ATTN(k) { "attention", k, 0, 0, Z_ONE, Z_ONE, Z_ONE, Z_ONE, \
		  WT_NONE }
#define END { NULL, K_MEM, 0, 0, Z_ONE, Z_ONE, Z_ONE, Z_ONE, WT_NONE }

/* ---- the table ---------------------------------------------------------- */

/* rt_model_train_step: rt_grads_begin zeroes the gradients no GEMM's
 * first write sets whole: the replicated parameters' with one GTP rank,
 * all of them with more (the weights' bf16 copy is Adam's: no refresh
 * after the first step) */
static const struct row step_begin[] = {
	COPY("zero", C_G1, 4, Z_REP, Z_ONE),
	COPY("zero", C_GN, 4, Z_PARAMS, Z_ONE),
	END,
};

/* rt_load_micro_batch: the tokens and targets (int32) uploaded */
static const struct row load[] = {
	COPY("upload", 0, 4, Z_N, Z_ONE),
	COPY("upload", 0, 4, Z_N, Z_ONE),
	END,
};

/* embed_fwd: bf16 runs look the rows up in the table's bf16 copy */
static const struct row embed_fwd[] = {
	USE(WT_EMB),
	MEM("embed_fwd", C_FP32, 8, Z_N, Z_H),
	MEM("embed_fwd_b16", C_BF16, 6, Z_N, Z_H),
	COPY("copy", C_NOSP, 8, Z_NL, Z_H),    /* tp_reduce's result to x0 */
	END,
};

/* norm_in: input_layernorm or final_layernorm, with the pending residual
 * add in its pass (add_rmsnorm_fwd) after a layer, alone after the
 * embedding or a received chunk input */
static const struct row norm_in_add[] = {
	MEM("add_rmsnorm_fwd", C_FP32, 16, Z_NL, Z_H),
	MEM("add_rmsnorm_fwd", C_BF16 | C_SP, 18, Z_NL, Z_H),
	MEM("add_rmsnorm_fwd", C_BF16 | C_NOSP, 14, Z_NL, Z_H),
	END,
};

static const struct row norm_in_alone[] = {
	MEM("rmsnorm_fwd", 0, 8, Z_NL, Z_H),
	MEM("round_bf16_copy", C_BF16, 10, Z_NL, Z_H),
	END,
};

/* tp_gather_in with SP: the gathered rows' bf16 copy */
static const struct row gather_in[] = {
	MEM("to_bf16", C_BF16 | C_SP, 6, Z_N, Z_H),
	END,
};

/* attn_block_fwd after its norm: one qkv GEMM, then split by query
 * group, RoPE and the copies in one pass (qkv_fwd) or apart
 * (qkv_split_fwd) */
static const struct row attn_fwd[] = {
	USE(WT_QKV),
	GEMM(Z_N, Z_QKVL, Z_H, Z_ONE),
	MEM("bias_add", C_BIAS, 8, Z_N, Z_QKVL),
	MEM("qkv_rope_bf", C_QKVF | C_CP1, 6, Z_N, Z_QKVL),
	MEM("qkv_rope_bf", C_QKVF | C_CPN, 10, Z_N, Z_QKVL),
	MEM("qkv_split", C_QKVS, 8, Z_N, Z_QKVL),
	MEM("rmsnorm_fwd", C_QKN, 8, Z_N, Z_QL),
	MEM("rmsnorm_fwd", C_QKN, 8, Z_N, Z_KVL),
	MEM("rope", C_QKVS, 8, Z_N, Z_QL),
	MEM("rope", C_QKVS, 8, Z_N, Z_KVL),
	MEM("round_bf16_copy", C_BF16 | C_QKVS, 10, Z_N, Z_QKVL),
	ATTN(K_ATTN_F),
	/* attention without the flash kernels reads widened copies and
	 * rounds o after (kern_attn_fwd_bf's fallback), as CP's ring does */
	MEM("from_bf16", C_BF16 | C_CP1 | C_NOFLASH, 6, Z_N, Z_QKVL),
	MEM("round_bf16_copy", C_BF16 | C_NOFLASH, 10, Z_N, Z_QL),
	MEM("round_bf16_copy", C_BF16 | C_CPN | C_FLASH, 10, Z_N, Z_QL),
	USE(WT_PROJ),
	GEMM(Z_N, Z_H, Z_QL, Z_ONE),
	END,
};

/* mlp_block_fwd after its norm (the attention's output added in it);
 * its own output is left pending */
static const struct row mlp_fwd[] = {
	USE(WT_FC1),
	GEMM(Z_N, Z_F2, Z_H, Z_ONE),
	MEM("swiglu_fwd", C_FP32, 12, Z_N, Z_FL),
	MEM("swiglu_fwd_b16", C_BF16, 6, Z_N, Z_FL),
	USE(WT_FC2),
	GEMM(Z_N, Z_H, Z_FL, Z_ONE),
	END,
};

/* a pipeline chunk's output, added whole before it is sent */
static const struct row chunk_out[] = {
	COPY("copy", 0, 8, Z_NL, Z_H),
	MEM("axpy", 0, 12, Z_NL, Z_H),
	END,
};

/* head_fwd after final_layernorm */
static const struct row head_fwd[] = {
	USE(WT_OUT),
	GEMM(Z_N, Z_VL, Z_H, Z_ONE),
	MEM("ce_max", C_FP32, 4, Z_N, Z_VL),
	MEM("ce_max_b16", C_BF16, 2, Z_N, Z_VL),
	MEM("ce_target", C_FP32, 12, Z_N, Z_ONE),
	MEM("ce_target_b16", C_BF16, 10, Z_N, Z_ONE),
	MEM("ce_sumexp", C_FP32, 4, Z_N, Z_VL),
	MEM("ce_sumexp_b16", C_BF16, 2, Z_N, Z_VL),
	MEM("ce_loss", 0, 16, Z_N, Z_ONE),
	END,
};

/* the first block of a backward pass without SP: its gradient came from
 * the head or another stage, not a norm backward that wrote its bits */
static const struct row bwd_first[] = {
	MEM("to_bf16", C_BF16 | C_NOSP, 6, Z_N, Z_H),
	END,
};

/* head_bwd */
static const struct row head_bwd[] = {
	MEM("ce_bwd", C_FP32, 8, Z_N, Z_VL),
	MEM("ce_bwd_b16", C_BF16, 4, Z_N, Z_VL),
	USE(WT_OUT),
	GEMM(Z_N, Z_H, Z_VL, Z_ONE),
	GEMM(Z_VL, Z_H, Z_N, Z_ONE),
	SCATTER(WT_OUT, C_OUTSCAT),
	MEM("rmsnorm_bwd", 0, 12, Z_NL, Z_H),
	END,
};

/* mlp_block_bwd (tp_grad_in: a copy without SP in fp32 runs; bf16 runs
 * hand the GEMMs the gradient's bf16 bits alone, which without SP the
 * previous norm backward wrote with it, resid_norm_bwd: bwd_first) */
static const struct row mlp_bwd[] = {
	COPY("copy", C_NOSP | C_FP32, 8, Z_N, Z_H),
	MEM("to_bf16", C_BF16 | C_SP, 6, Z_N, Z_H),
	USE(WT_FC2),
	GEMM(Z_N, Z_FL, Z_H, Z_ONE),
	GEMM(Z_H, Z_FL, Z_N, Z_ONE),
	SCATTER(WT_FC2, 0),
	MEM("swiglu_bwd", C_FP32, 20, Z_N, Z_FL),
	MEM("swiglu_bwd_b16", C_BF16, 10, Z_N, Z_FL),
	USE(WT_FC1),
	GEMM(Z_N, Z_H, Z_F2, Z_ONE),
	GEMM(Z_F2, Z_H, Z_N, Z_ONE),
	SCATTER(WT_FC1, 0),
	MEM("rmsnorm_bwd_add", C_FP32, 16, Z_NL, Z_H),
	MEM("rmsnorm_bwd_add", C_BF16 | C_SP, 16, Z_NL, Z_H),
	MEM("rmsnorm_bwd_add", C_BF16 | C_NOSP, 18, Z_NL, Z_H),
	END,
};

/* attn_block_bwd with attn_core_bwd and qkv_bwd (dq, dk, dv merged for
 * one GEMM each way, with RoPE's backward and the copy in one pass where
 * fused) */
static const struct row attn_bwd[] = {
	COPY("copy", C_NOSP | C_FP32, 8, Z_N, Z_H),
	MEM("to_bf16", C_BF16 | C_SP, 6, Z_N, Z_H),
	USE(WT_PROJ),
	GEMM(Z_N, Z_QL, Z_H, Z_ONE),
	GEMM(Z_H, Z_QL, Z_N, Z_ONE),
	SCATTER(WT_PROJ, 0),
	COPY("zero", C_CPN, 4, Z_N, Z_QL), /* dq: CP's key blocks add */
	/* without CP the one call writes dq, dk, dv (kern_attn's
	 * overwrite); the flash kernels' zeroing is part of the attention's
	 * time (its dsum pass, as the profile's attention class measures
	 * it: data/hardware.yaml), the reference kernels' is dq, dk, then
	 * dv: three launches of kern_cuda_zero, counted as copies here
	 * though the profile brackets them in the attention's call */
	COPY("zero", C_CP1 | C_ZAPART, 4, Z_N, Z_QL),
	COPY("zero", C_CP1 | C_ZAPART, 4, Z_N, Z_KVL),
	COPY("zero", C_CP1 | C_ZAPART, 4, Z_N, Z_KVL),
	ATTN(K_ATTN_B),
	MEM("from_bf16", C_BF16 | C_CP1 | C_NOFLASH, 6, Z_N, Z_QKVL),
	MEM("from_bf16", C_BF16 | C_CP1 | C_NOFLASH, 6, Z_N, Z_QL),
	MEM("rope", C_QKVS, 8, Z_N, Z_QL),
	MEM("rope", C_QKVS, 8, Z_N, Z_KVL),
	MEM("rmsnorm_bwd", C_QKN, 12, Z_N, Z_QL),
	MEM("rmsnorm_bwd", C_QKN, 12, Z_N, Z_KVL),
	MEM("round_bf16", C_BF16 | C_QKVS, 8, Z_N, Z_QKVL),
	MEM("qkv_merge", C_QKVS, 8, Z_N, Z_QKVL),
	MEM("round_bf16_copy", C_BF16 | C_QKVS, 10, Z_N, Z_QKVL),
	MEM("qkv_merge_rope_bf", C_QKVF | C_NOBIAS, 6, Z_N, Z_QKVL),
	MEM("qkv_merge_rope_bf", C_QKVF | C_BIAS, 10, Z_N, Z_QKVL),
	USE(WT_QKV),
	GEMM(Z_N, Z_H, Z_QKVL, Z_ONE),
	GEMM(Z_QKVL, Z_H, Z_N, Z_ONE),
	MEM("bias_grad", C_BIAS, 4, Z_N, Z_QKVL),
	SCATTER(WT_QKV, 0),
	MEM("rmsnorm_bwd_add", C_FP32, 16, Z_NL, Z_H),
	MEM("rmsnorm_bwd_add", C_BF16 | C_SP, 16, Z_NL, Z_H),
	MEM("rmsnorm_bwd_add", C_BF16 | C_NOSP, 18, Z_NL, Z_H),
	END,
};

/* embed_bwd */
static const struct row embed_bwd[] = {
	COPY("zero", C_EMBZERO, 4, Z_EMB, Z_ONE),
	MEM("embed_bwd", 0, 12, Z_N, Z_H),
	SCATTER(WT_EMB, 0),
	END,
};

/* finish_grads: Adam (the runtime's default optimizer), writing the
 * weights' bf16 copy in bf16 runs */
static const struct row step_end[] = {
	{ "adam", K_OPTIM, C_FP32, 28, Z_PARAMS, Z_ONE, Z_ONE, Z_ONE,
	  WT_NONE },
	{ "adam_bf", K_OPTIM, C_BF16, 30, Z_PARAMS, Z_ONE, Z_ONE, Z_ONE,
	  WT_NONE },
	END,
};

/* rt_loss_flush at the step's end, on the stage with the head: its
 * micro-batches' token losses downloaded in one copy */
static const struct row loss_end[] = {
	COPY("download", 0, 4, Z_NSTEP, Z_ONE),
	END,
};

/* rt_weights_next's gather of a weight (rt_gather_weight): bf16 runs
 * gather the weights' bf16 copy (nothing to do with one GTP rank); fp32
 * runs gather the weight (a copy with one GTP rank) */
static const struct row gather[] = {
	COPY("copy", C_FP32 | C_G1, 8, Z_WS, Z_ONE),
	END,
};

/* rt_scatter_grad: with one GTP rank the GEMM wrote the shard gradient
 * itself (rt_grad_out); else padding zeroed, reduce-scatter, add */
static const struct row scatter[] = {
	COPY("zero", C_GN, 4, Z_WPAD, Z_ONE),
	MEM("axpy", C_GN, 12, Z_WS, Z_ONE),
	END,
};

/* ---- the walk ----------------------------------------------------------- */

static long long wt_shard(const struct step_walk *w, enum wt t)
{
	const struct dsz_sizes *z = &w->s->z;

	return t == WT_EMB || t == WT_OUT ? z->shard_emb : z->shard[t];
}

static long long wt_real(const struct step_walk *w, enum wt t)
{
	const struct dsz_sizes *z = &w->s->z;

	return t == WT_EMB || t == WT_OUT ? z->emb_d0 * z->emb_d1 :
	       z->d0[t] * z->d1[t];
}

static double sym(const struct step_walk *w, enum sym y, enum wt cur)
{
	const struct prog_rt_shape *s = w->s;
	const struct dsz_sizes *z = &s->z;
	long long g = s->d.g > 0 ? s->d.g : 1;

	switch (y) {
	case Z_ONE: return 1;
	case Z_N: return (double)z->tokens;
	case Z_NSTEP: return (double)z->tokens * (double)s->micro_batches;
	case Z_NL: return (double)z->local;
	case Z_H: return (double)s->d.h;
	case Z_QL: return (double)z->q_l;
	case Z_KVL: return (double)z->kv_l;
	case Z_QKVL: return (double)z->qkv_l;
	case Z_QG: return z->kl > 0 ? (double)(z->q_l / z->kl) : 0;
	case Z_HD: return (double)s->d.head_dim;
	case Z_FL: return (double)z->fl;
	case Z_F2: return 2.0 * (double)z->fl;
	case Z_VL: return (double)z->vl;
	case Z_KL: return (double)z->kl;
	case Z_EMB: return (double)z->shard_emb * (double)g;
	case Z_PARAMS: return (double)w->params;
	case Z_REP: return (double)s->z.n_rep;
	case Z_W: return cur == WT_NONE ? 0 : (double)wt_shard(w, cur) * g;
	case Z_WS: return cur == WT_NONE ? 0 : (double)wt_shard(w, cur);
	case Z_WPAD: return cur == WT_NONE ? 0 :
			    (double)(wt_shard(w, cur) * g - wt_real(w, cur));
	case Z_SYMS: break;
	}
	return 0;
}

static int holds(const struct step_walk *w, unsigned when)
{
	const struct prog_rt_shape *s = w->s;
	int flash = s->d.head_dim == 64 || s->d.head_dim == 128;
	unsigned have = (s->bf16 ? C_BF16 : C_FP32) |
			(s->d.sp ? C_SP : C_NOSP) |
			(s->d.qk_norm ? C_QKN : 0) |
			(s->d.qkv_bias ? C_BIAS : C_NOBIAS) |
			(s->bf16 && !s->d.qk_norm ? C_QKVF : C_QKVS) |
			(s->d.cp <= 1 ? C_CP1 : C_CPN) |
			(s->d.g <= 1 ? C_G1 : C_GN) |
			(!s->d.tie || s->d.skip_pre ? C_OUTSCAT : 0) |
			(!s->d.tie || s->d.skip_post ? C_EMBZERO : 0) |
			(flash ? C_FLASH : C_NOFLASH) |
			(s->bf16 && flash ? 0 : C_ZAPART);

	return (when & have) == when;
}

/* Adds `calls` kernels of class c moving `bytes` (memory classes). */
static void add_mem(struct step_walk *w, enum step_class c, double bytes,
		    long long calls)
{
	static const enum hw_mem_class hc[STEP_CLASSES] = {
		[STEP_ELEMENTWISE] = HW_MEM_ELEMENTWISE,
		[STEP_COPY] = HW_MEM_COPY,
		[STEP_OPTIMIZER] = HW_MEM_OPTIMIZER,
	};
	const struct hw_profile *hw = w->hw;
	double us = bytes / (hw->hbm_gbps * 1e3 * hw->mem_efficiency[hc[c]]) +
		    (double)calls * hw->mem_call_us[hc[c]];

	w->into->us[c] += us;
	w->into->work[c] += bytes;
	w->into->calls[c] += calls;
	w->seg_us += us;
}

static void add_gemm(struct step_walk *w, double m, double n, double k,
		     double rep)
{
	const struct hw_profile *hw = w->hw;
	double flops = 2 * m * n * k * rep;
	double us = flops / (hw->bf16_tflops * 1e6 * hw->gemm_efficiency) +
		    rep * hw->gemm_call_us;

	w->into->us[STEP_GEMM] += us;
	w->into->work[STEP_GEMM] += flops;
	w->into->calls[STEP_GEMM] += (long long)rep;
	w->seg_us += us;
}

/* Attention of one layer: causal, halved (FlashAttention's count). */
static void add_attn(struct step_walk *w, int bwd)
{
	const struct prog_rt_shape *s = w->s;
	const struct hw_attn *a = hw_attn_at(w->hw, s->d.head_dim);
	double seq = (double)s->d.seq_len, cp = s->d.cp > 0 ? s->d.cp : 1;
	double f = 4 * (double)s->micro * (double)s->z.hl *
		   (double)s->d.head_dim * seq * seq / 2 / cp;
	enum step_class c = bwd ? STEP_ATTN_BWD : STEP_ATTN_FWD;
	double us;

	if (bwd)
		f *= 2.5;
	us = f / ((bwd ? a->bwd_tflops : a->fwd_tflops) * 1e6);
	w->into->us[c] += us;
	w->into->work[c] += f;
	w->into->calls[c]++;
	w->seg_us += us;
}

static void play(struct step_walk *w, const struct row *rows, enum wt cur);

/* rt_weights_next: the weight's GTP all-gather (exposed, or with
 * prefetch hidden behind the compute since the previous weight's use),
 * then the gather block's kernels. */
static void use(struct step_walk *w, enum wt t)
{
	const struct prog_rt_shape *s = w->s;
	struct cost_model *cm = w->cm;
	long long g = s->d.g > 0 ? s->d.g : 1;
	double us = 0, hidden = 0;

	if (g > 1) {
		unsigned k = prog_kind("gtp");

		us = cost_coll_us(&cm->s, OP_ALL_GATHER, g, wt_shard(w, t) *
				  (s->bf16 ? 2 : 4),
				  cost_group_spans(cm, k, NULL));
		if (w->prefetch && !w->first_use &&
		    cm->s.overlap == COST_OVERLAP_GTP)
			hidden = us < w->seg_us ? us : w->seg_us;
		w->into->us[STEP_COMM] += us - hidden;
		w->into->work[STEP_COMM] += (double)(wt_shard(w, t) * (g - 1) *
						     (s->bf16 ? 2 : 4));
		w->into->calls[STEP_COMM]++;
		w->gtp_us += us;
		w->gtp_hidden_us += hidden;
	}
	w->first_use = 0;
	w->seg_us = 0;
	play(w, gather, t);
}

static void play(struct step_walk *w, const struct row *rows, enum wt cur)
{
	for (const struct row *r = rows; r->op; r++) {
		double a, b, c, rep;

		if (!holds(w, r->when))
			continue;
		a = sym(w, r->a, cur);
		b = sym(w, r->b, cur);
		c = sym(w, r->c, cur);
		rep = sym(w, r->rep, cur);
		switch (r->kind) {
		case K_MEM:
			add_mem(w, STEP_ELEMENTWISE, r->per * a * b * c * rep,
				(long long)rep);
			break;
		case K_COPY:
			if (a * b * c > 0)
				add_mem(w, STEP_COPY, r->per * a * b * c * rep,
					(long long)rep);
			break;
		case K_OPTIM:
			add_mem(w, STEP_OPTIMIZER, r->per * a * b * c,
				(long long)rep);
			break;
		case K_GEMM:
			add_gemm(w, a, b, c, rep);
			break;
		case K_ATTN_F:
		case K_ATTN_B:
			add_attn(w, r->kind == K_ATTN_B);
			break;
		case K_USE:
			use(w, r->w);
			break;
		case K_SCATTER:
			play(w, scatter, r->w);
			break;
		}
	}
}

/* A forward's norm: the pending residual added in its pass, or alone;
 * then, with SP, the gathered rows' bf16 copy. */
static void norm(struct step_walk *w)
{
	play(w, w->pending ? norm_in_add : norm_in_alone, WT_NONE);
	play(w, gather_in, WT_NONE);
}

/* One chunk's pass, forward or backward (rt_forward_chunk,
 * rt_backward_chunk). */
static void pass(struct step_walk *w, int v, int forward)
{
	const struct prog_rt_shape *s = w->s;
	int vpp = s->vpp > 0 ? s->vpp : 1;
	long long L = s->chunk_layers > 0 ? s->chunk_layers : s->d.layers;
	int first = !s->d.skip_pre && v == 0;
	int head = !s->d.skip_post && v == vpp - 1;

	w->first_use = 1;
	if (forward) {
		w->pending = 0;
		if (first)
			play(w, embed_fwd, WT_NONE);
		for (long long l = 0; l < L; l++) {
			norm(w);
			play(w, attn_fwd, WT_NONE);
			w->pending = 1; /* the attention's output */
			norm(w);
			play(w, mlp_fwd, WT_NONE);
		}
		if (head) {
			norm(w);
			play(w, head_fwd, WT_NONE);
		} else if (w->pending) {
			play(w, chunk_out, WT_NONE);
		}
		return;
	}
	if (head)
		play(w, head_bwd, WT_NONE);
	if (L > 0)
		play(w, bwd_first, WT_NONE);
	for (long long l = 0; l < L; l++) {
		play(w, mlp_bwd, WT_NONE);
		play(w, attn_bwd, WT_NONE);
	}
	if (first)
		play(w, embed_bwd, WT_NONE);
}

void step_ops_walk(struct step_walk *w)
{
	int vpp = w->s->vpp > 0 ? w->s->vpp : 1;

	memset(&w->mb, 0, sizeof(w->mb));
	memset(&w->once, 0, sizeof(w->once));
	w->gtp_us = w->gtp_hidden_us = 0;
	w->params = w->s->z.n_shard + w->s->z.n_rep;
	w->into = &w->once;
	play(w, step_begin, WT_NONE);
	w->into = &w->mb;
	play(w, load, WT_NONE);
	for (int v = 0; v < vpp; v++) {
		pass(w, v, 1);
		pass(w, v, 0);
	}
	w->into = &w->once;
	play(w, step_end, WT_NONE);
	if (!w->s->d.skip_post)
		play(w, loss_end, WT_NONE);
}
