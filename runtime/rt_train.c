/*
 * rt_train: the decoder itself, top to bottom: a micro-batch's load, the
 * forward of the embedding, each layer's attention and MLP blocks and the
 * head (final norm, output layer, vocab-parallel cross-entropy: the two
 * ends are rt_vocab.c's), their backwards in reverse, whole or one
 * pipeline chunk at a time (the train step around them is rt_step.c's;
 * see rt_model.h for the model, its shapes and its collectives, in this
 * file's order).
 *
 * Row layouts: a micro-batch's N = micro x local_seq token rows on this
 * rank, sample-major (local_seq = seq_len / CP: with CP, chunks c and
 * 2C-1-c of each sample, m->pos giving each row's position). The residual
 * stream (x, xm) holds `local` rows: all N, or with sequence parallelism
 * this TP rank's contiguous N/T of them; everything between a column-
 * parallel and a row-parallel linear holds all N rows. Q, K and V are
 * [N, heads, head_dim] (kern.h's attention layout); with CP, attention
 * reads K and V of every CP rank (rt_cp.c).
 */
#include "rt_model.h"

#include <math.h>
#include <string.h>

#include "rt_err.h"
#include "rt_text.h"
#include "rt_train_int.h"


int rt_load_micro_batch(struct rt_model *m, long long step, long long mb)
{
	const struct rt_shape *s = &m->s;
	long long first = (step - 1) * s->global_batch +
			  (long long)s->lane * s->per_lane + mb * s->micro;
	long long n = 0;

	for (long long j = 0; j < s->micro; j++) {
		rt_text_sample(m->text, m->seed, first + j, s->seq_len,
			       s->vocab, m->sample);
		for (long long i = 0; i < s->local_seq; i++, n++) {
			long long pos = rt_row_pos(s, s->c, i);

			m->h_tokens[n] = m->sample[pos];
			m->h_targets[n] = m->sample[pos + 1];
		}
	}
	KCHECK(kern_upload(m->k, m->tokens, m->h_tokens,
			   (size_t)n * sizeof(int32_t)));
	KCHECK(kern_upload(m->k, m->targets, m->h_targets,
			   (size_t)n * sizeof(int32_t)));
	return 0;
}

/* ---- TP plumbing (Megatron's sequence-parallel mappings) ----------------- */

/* Before a column-parallel linear: the input's N rows. With SP the local
 * rows (bf16 values) are all-gathered over TP into full (what:
 * "<layer>.in") and, in bf16 runs, full's bf16 copy full16 written;
 * without, the input is already whole and full (full16) is set to it. */
int rt_tp_gather_in(struct rt_model *m, const char *what,
			const float *local, float *full, uint16_t *full16)
{
	if (!m->s.sp)
		return 0;
	RCHECK(coll_all_gather(m->c, RT_K_TP, what, local, full,
			       m->s.local * m->s.h));
	if (full16)
		KCHECK(kern_to_bf16(m->k, m->s.tokens * m->s.h, full, full16));
	return 0;
}

/* After a row-parallel linear (or the embedding, or a column-parallel
 * linear's input gradient): full [N, h] holds this rank's partial sum.
 * Without SP it is all-reduced in place and *out = full; with SP it is
 * reduce-scattered into local and *out = local. */
int rt_tp_reduce(struct rt_model *m, const char *what, float *full,
		     float *local, float **out)
{
	const struct rt_shape *s = &m->s;

	if (!s->sp) {
		*out = full;
		return coll_all_reduce(m->c, RT_K_TP, what, full,
				       s->tokens * s->h, COLL_SUM);
	}
	*out = local;
	return coll_reduce_scatter(m->c, RT_K_TP, what, full, local,
				   s->local * s->h);
}

/* Whether a block's norm backward writes the residual gradient's bf16
 * bits into a.full_h16 with it (resid_norm_bwd): bf16 runs without SP,
 * whose next row-parallel backward reads exactly those bits. */
static int dx_bits_by_norm(const struct rt_model *m)
{
	return m->bf16 && !m->s.sp;
}

/* The backward of rt_tp_reduce for the residual's gradient a.dx [local,
 * h]: all N rows (all-gathered with SP into full = a.full_h) for the
 * GEMMs that read it, *in the fp32 operand to hand them. bf16 runs hand
 * them only its bf16 rounding, a.full_h16 (written from dx, or from full
 * with SP, unless `after_norm`: a norm backward just wrote it, where
 * dx_bits_by_norm), and *in is NULL: the GEMMs read the copy alone
 * (kern_gemm_bf). fp32 runs: *in is full, a copy of dx without SP. */
static int tp_grad_in(struct rt_model *m, const char *what, int after_norm,
		      const float **in)
{
	const struct rt_shape *s = &m->s;
	const float *dx = m->a.dx;
	float *full = m->a.full_h;
	long long n = s->tokens * s->h;

	if (s->sp) {
		RCHECK(coll_all_gather(m->c, RT_K_TP, what, dx, full,
				       s->local * s->h));
		dx = full;
	}
	if (m->bf16) {
		*in = NULL;
		if (!(after_norm && dx_bits_by_norm(m)))
			KCHECK(kern_to_bf16(m->k, n, dx, m->a.full_h16));
		return 0;
	}
	*in = full;
	if (!s->sp)
		KCHECK(kern_copy(m->k, full, dx, (size_t)n * sizeof(float)));
	return 0;
}

const char *rt_label(char *buf, size_t n, const char *w, const char *sfx)
{
	snprintf(buf, n, "%s.%s", w, sfx);
	return buf;
}

/* ---- linear_qkv: one GEMM, then the columns split ------------------------ */

/* Whether linear_qkv's columns reach attention in one pass each way
 * (kern_qkv_rope_bf, kern_qkv_merge_rope_bf): bf16 runs without QK-norm,
 * which sits between the split and RoPE. fp32 runs keep the plain ops. */
static int qkv_fused(const struct rt_model *m)
{
	return m->bf16 && !m->s.qk_norm;
}

/* pos_end: every row's position is below seq_len (rt_row_pos), which
 * under context parallelism exceeds the rank's rows: the device's RoPE
 * table then covers the far chunk's positions too (kern.h). */
static struct kern_qkv qkv_shape(const struct rt_shape *s)
{
	long long d = s->hd;

	return (struct kern_qkv){
		.rows = s->tokens, .groups = s->z.kl,
		.nq = s->z.hl / s->z.kl * d, .nk = d, .hd = d,
		.theta = s->theta, .pos_end = s->seq_len,
	};
}

/* a.qkv's columns to attention's q, k, v (la) in separate passes: split
 * by group (kern_qkv_split), QK-norm, RoPE, then each rounded with its
 * bf16 copy in bf16 runs (rt_bf16_copy). */
static int qkv_split_fwd(struct rt_model *m, long long l)
{
	const struct rt_shape *s = &m->s;
	const struct rt_layer *ly = &m->layer[l];
	struct rt_layer_acts *la = &m->la[l];
	struct kern_ctx *k = m->k;
	struct kern_qkv a = qkv_shape(s);
	long long N = s->tokens, d = s->hd;

	KCHECK(kern_qkv_split(k, N, a.groups, a.nq, a.nk, m->a.qkv,
			      s->qk_norm ? la->qraw : la->q,
			      s->qk_norm ? la->kraw : la->k, la->v));
	if (s->qk_norm) {
		KCHECK(kern_rmsnorm_fwd(k, N * s->z.hl, d, s->eps, la->qraw,
					P(m, ly->qn), la->q, la->qrstd));
		KCHECK(kern_rmsnorm_fwd(k, N * s->z.kl, d, s->eps, la->kraw,
					P(m, ly->kn), la->k, la->krstd));
	}
	KCHECK(kern_rope(k, N, s->z.hl, d, s->theta, m->pos, 0, la->q));
	KCHECK(kern_rope(k, N, s->z.kl, d, s->theta, m->pos, 0, la->k));
	RCHECK(rt_bf16_copy(m, la->q, la->q16, N * s->z.q_l));
	RCHECK(rt_bf16_copy(m, la->k, la->k16, N * s->z.kv_l));
	return rt_bf16_copy(m, la->v, la->v16, N * s->z.kv_l);
}

/* linear_qkv and what follows it up to attention, for layer l: one GEMM
 * in [N, h] W^T into a.qkv [N, qkv_l] in the weight's interleaved row order
 * (Megatron's: per query group r query heads, then its key, then its
 * value head, d rows each), the bias added there (it has the same
 * order), then q, k, v with RoPE and their bf16 copies (la): in one pass
 * where qkv_fused, which writes the fp32 values only where CP's attention
 * reads them (rt_cp.c; the flash kernels and attn_core_bwd read the
 * copies), else qkv_split_fwd. in16, W16: the bf16 copies
 * (kern_gemm_bf). */
static int qkv_fwd(struct rt_model *m, long long l, const float *in,
		   const uint16_t *in16, const float *W, const uint16_t *W16)
{
	const struct rt_shape *s = &m->s;
	const struct rt_layer *ly = &m->layer[l];
	struct rt_layer_acts *la = &m->la[l];
	struct kern_qkv a = qkv_shape(s);
	long long N = s->tokens, h = s->h, ql = s->z.qkv_l;
	int f32 = s->cp > 1;

	KCHECK(kern_gemm_bf(m->k, 0, 1, N, ql, h, 1.0f, in, in16, h, W, W16,
			    h, 0.0f, m->a.qkv, ql));
	if (ly->bias >= 0)
		KCHECK(kern_bias_add(m->k, N, ql, P(m, ly->bias), m->a.qkv));
	if (!qkv_fused(m))
		return qkv_split_fwd(m, l);
	KCHECK(kern_qkv_rope_bf(m->k, &a, m->pos, m->a.qkv,
				f32 ? la->q : NULL, f32 ? la->k : NULL,
				f32 ? la->v : NULL, la->q16, la->k16,
				la->v16));
	return 0;
}

/* Its backward: dq, dk, dv (RoPE's backward still to apply where
 * qkv_fused: kern_qkv_merge_rope_bf does it, rounds them and merges) into
 * a.qkv in the weight's row order, with its bf16 copy a.qkv16 (the fp32
 * values written only where the bias gradient reads them, in the fused
 * pass), then din [N, h] = dqkv W and the weight gradient dqkv^T in
 * (rt_grad_out: *gw, for the scatter after the input gradient's
 * reduction), and the bias gradient summed over the rows. */
static int qkv_bwd(struct rt_model *m, const struct rt_layer *ly,
		   const float *in, const uint16_t *in16, const float *W,
		   const uint16_t *W16, const float *dq, const float *dk,
		   const float *dv, float *din, float **gw)
{
	const struct rt_shape *s = &m->s;
	struct kern_qkv a = qkv_shape(s);
	long long N = s->tokens, h = s->h, ql = s->z.qkv_l;
	float *dqkv = m->a.qkv, beta, *gout = rt_grad_out(m, ly->qkv, &beta);

	*gw = gout;
	if (qkv_fused(m)) {
		if (ly->bias < 0)
			dqkv = NULL; /* the GEMMs read the copy */
		KCHECK(kern_qkv_merge_rope_bf(m->k, &a, m->pos, dq, dk, dv,
					      dqkv, m->a.qkv16));
	} else {
		KCHECK(kern_qkv_merge(m->k, N, a.groups, a.nq, a.nk, dq, dk,
				      dv, dqkv));
		RCHECK(rt_bf16_copy(m, dqkv, m->a.qkv16, N * ql));
	}
	KCHECK(kern_gemm_bf(m->k, 0, 0, N, h, ql, 1.0f, dqkv, m->a.qkv16, ql,
			    W, W16, h, 0.0f, din, h));
	KCHECK(kern_gemm_bf(m->k, 1, 0, ql, h, N, 1.0f, dqkv, m->a.qkv16, ql,
			    in, in16, h, beta, gout, h));
	if (ly->bias >= 0)
		KCHECK(kern_bias_grad(m->k, N, ql, dqkv, G(m, ly->bias)));
	return 0;
}

/* ---- forward -------------------------------------------------------------- */

struct kern_attn rt_attn_shape(const struct rt_shape *s, long long sk)
{
	return (struct kern_attn){
		.batch = s->micro, .sq = s->local_seq, .sk = sk,
		.nh = s->z.hl, .nkv = s->z.kl, .hd = s->hd,
		.scale = (float)(1.0 / sqrt((double)s->hd)),
	};
}

/* input_layernorm in the pass that makes its input (kern_add_rmsnorm_fwd):
 * with a pending residual (pr set: the previous block's output not yet
 * added), x = pb + pr is written to `x` first; else x is there. y rounded
 * with its bf16 copy y16 in bf16 runs (rt_bf16_copy); there, without SP
 * (whose gather sends the fp32 y), the GEMMs read y16 alone and y is not
 * allocated (NULL): with a pending residual the norm writes y16 alone, and
 * the first layer of a chunk normalises into the backward's scratch dn,
 * then rounds it. */
int rt_norm_in(struct rt_model *m, const float *pb, const float *pr,
		   float *x, long long g, float *y, float *rstd, uint16_t *y16)
{
	const struct rt_shape *s = &m->s;
	long long Nl = s->local, h = s->h;

	if (pr) {
		int alone = m->bf16 && y16 && !s->sp;

		KCHECK(kern_add_rmsnorm_fwd(m->k, Nl, h, s->eps, pb, pr, x,
					    P(m, g), alone ? NULL : y, rstd,
					    m->bf16 ? y16 : NULL));
		return 0;
	}
	if (!y) /* y16 alone (rt_model.c W_N32): dn is the backward's
		   scratch, free between a layer's backward passes */
		y = m->a.dn;
	KCHECK(kern_rmsnorm_fwd(m->k, Nl, h, s->eps, x, P(m, g), y, rstd));
	return rt_bf16_copy(m, y, y16, Nl * h);
}

/* x -> linear_proj(attention(RoPE(QK-norm(linear_qkv(input_layernorm(
 * x)))))), left in *res [local, h]: the MLP block adds it to x (xm = x +
 * *res) in the pass of its norm (kern_add_rmsnorm_fwd). x is layer l's
 * input, or pb + pr when the previous layer's output is pending. */
static int attn_block_fwd(struct rt_model *m, long long l, const float *pb,
			  const float *pr, float **res)
{
	const struct rt_shape *s = &m->s;
	const struct rt_layer *ly = &m->layer[l];
	struct rt_layer_acts *la = &m->la[l];
	struct kern_ctx *k = m->k;
	struct kern_attn at = rt_attn_shape(s, s->seq_len);
	long long N = s->tokens, h = s->h;
	const float *W;
	const uint16_t *W16;
	char what[64];

	RCHECK(rt_norm_in(m, pb, pr, la->x, ly->ln1, la->n1, la->rstd1,
		       la->n1_16));
	rt_label(what, sizeof(what), ly->qkv->name, "in");
	RCHECK(rt_tp_gather_in(m, what, la->n1, la->n1g, la->n1g16));
	RCHECK(rt_weights_next(m, &W, &W16));
	RCHECK(qkv_fwd(m, l, la->n1g, la->n1g16, W, W16));
	if (s->cp > 1) {
		RCHECK(rt_cp_attn_fwd(m, l));
		RCHECK(rt_bf16_copy(m, la->o, la->o16, N * s->z.q_l));
	} else if (m->bf16) { /* o's bf16 bits alone: the GEMMs read them */
		/* without CP a sample's positions are 0, 1, 2, ...
		 * (rt_model.c rt_row_pos): NULL says so (kern.h), and the
		 * flash kernels then skip reading them */
		KCHECK(kern_attn_fwd_bf(k, &at, la->q16, la->k16, la->v16,
					NULL, NULL, NULL, la->o16, la->lse));
	} else {
		KCHECK(kern_attn_fwd(k, &at, la->q, la->k, la->v, NULL, NULL,
				     la->o, la->lse));
	}
	RCHECK(rt_weights_next(m, &W, &W16));
	KCHECK(kern_gemm_bf(k, 0, 1, N, h, s->z.q_l, 1.0f, la->o, la->o16,
			    s->z.q_l, W, W16, s->z.q_l, 0.0f, m->a.full_h, h));
	return rt_tp_reduce(m, rt_label(what, sizeof(what), ly->proj->name, "out"),
			 m->a.full_h, m->a.dtmp, res);
}

/* xm = x + res (the attention block's output), then the block's output
 * xm + linear_fc2(SwiGLU(linear_fc1(pre_mlp_layernorm(xm)))) left pending:
 * *res2 [local, h] is what the next norm adds to xm (rt_norm_in). */
static int mlp_block_fwd(struct rt_model *m, long long l, const float *res,
			 float **res2)
{
	const struct rt_shape *s = &m->s;
	const struct rt_layer *ly = &m->layer[l];
	struct rt_layer_acts *la = &m->la[l];
	struct kern_ctx *k = m->k;
	long long N = s->tokens, h = s->h, fl = s->fl;
	const float *W;
	const uint16_t *W16;
	char what[64];

	RCHECK(rt_norm_in(m, la->x, res, la->xm, ly->ln2, la->n2, la->rstd2,
		       la->n2_16));
	rt_label(what, sizeof(what), ly->fc1->name, "in");
	RCHECK(rt_tp_gather_in(m, what, la->n2, la->n2g, la->n2g16));
	RCHECK(rt_weights_next(m, &W, &W16));
	if (m->bf16) { /* linear_fc1's output and SwiGLU's in bf16 alone */
		KCHECK(kern_gemm_bf16(k, 0, 1, N, 2 * fl, h, la->n2g16, h, W16,
				      h, la->u16));
		KCHECK(kern_swiglu_fwd_b16(k, N, fl, la->u16, la->sw16));
	} else {
		KCHECK(kern_gemm(k, 0, 1, N, 2 * fl, h, 1.0f, la->n2g, h, W, h,
				 0.0f, la->u, 2 * fl));
		KCHECK(kern_swiglu_fwd(k, N, fl, la->u, la->sw));
	}
	RCHECK(rt_weights_next(m, &W, &W16));
	KCHECK(kern_gemm_bf(k, 0, 1, N, h, fl, 1.0f, la->sw, la->sw16, fl, W,
			    W16, fl, 0.0f, m->a.full_h, h));
	return rt_tp_reduce(m, rt_label(what, sizeof(what), ly->fc2->name, "out"),
			 m->a.full_h, m->a.dtmp, res2);
}

int rt_forward_chunk(struct rt_model *m, int v, double *loss_sum)
{
	const struct rt_shape *s = &m->s;
	long long l0 = v * s->chunk_layers, l1 = l0 + s->chunk_layers;
	int head = s->post && v == s->vpp - 1;
	float *out = head ? m->a.xL : m->pp_out;

	const float *pb = NULL; /* the pending output pb + pr (rt_norm_in) */
	float *pr = NULL;

	RCHECK(rt_weights_begin(m, 1, v));
	if (s->pre && v == 0)
		RCHECK(rt_embed_fwd(m));
	for (long long l = l0; l < l1; l++) {
		float *res;

		RCHECK(attn_block_fwd(m, l, pb, pr, &res));
		RCHECK(mlp_block_fwd(m, l, res, &pr));
		pb = m->la[l].xm;
	}
	if (head)
		return rt_head_fwd(m, pb, pr, loss_sum);
	if (pr) { /* the chunk's output, sent to the next stage */
		KCHECK(kern_copy(m->k, out, pb, (size_t)(s->local * s->h) *
				 sizeof(float)));
		KCHECK(kern_axpy(m->k, s->local * s->h, 1.0f, pr, out));
	}
	return 0;
}

int rt_forward(struct rt_model *m, double *loss_sum)
{
	return rt_forward_chunk(m, 0, loss_sum);
}

/* ---- backward ------------------------------------------------------------- */

/* A row-parallel linear's backward (linear_proj, linear_fc2: out = in
 * W^T, in [N, n], W [h, n] TP-local): its output gradient is the
 * residual's, a->dx, brought to all N rows (tp_grad_in, with its bf16
 * copy; after_norm: a norm backward wrote a->dx last); din [N, n] = dout
 * W, or with din16 set (bf16 runs) that product in bf16 alone; w's
 * gradient += dout^T in (in16: in's bf16 copy). */
static int row_linear_bwd(struct rt_model *m, const struct rt_weight *w,
			  int after_norm, const float *in,
			  const uint16_t *in16, long long n, float *din,
			  uint16_t *din16)
{
	const struct rt_shape *s = &m->s;
	struct rt_acts *a = &m->a;
	long long N = s->tokens, h = s->h;
	const float *W;
	const uint16_t *W16;
	const float *dout;
	float beta, *g;
	char what[64];

	RCHECK(tp_grad_in(m, rt_label(what, sizeof(what), w->name, "dout"),
			  after_norm, &dout));
	RCHECK(rt_weights_next(m, &W, &W16));
	if (din16)
		KCHECK(kern_gemm_bf16(m->k, 0, 0, N, n, h, a->full_h16, h, W16,
				      n, din16));
	else
		KCHECK(kern_gemm_bf(m->k, 0, 0, N, n, h, 1.0f, dout,
				    a->full_h16, h, W, W16, n, 0.0f, din, n));
	g = rt_grad_out(m, w, &beta);
	KCHECK(kern_gemm_bf(m->k, 1, 0, h, n, N, 1.0f, dout, a->full_h16, h,
			    in, in16, n, beta, g, n));
	return rt_scatter_grad(m, w, g);
}

/* A block's norm backward added into the residual's gradient a->dx (its
 * input x, rstd, gain g and its gradient dg; dy its output's gradient).
 * Where dx_bits_by_norm, a->dx's bf16 bits go to a.full_h16 in the same
 * pass: the operand of the next row-parallel backward's GEMMs
 * (tp_grad_in's after_norm). */
static int resid_norm_bwd(struct rt_model *m, const float *x, long long g,
			  const float *rstd, const float *dy)
{
	const struct rt_shape *s = &m->s;
	struct rt_acts *a = &m->a;

	if (dx_bits_by_norm(m))
		KCHECK(kern_rmsnorm_bwd_add_bf(m->k, s->local, s->h, x,
					       P(m, g), rstd, dy, a->dx,
					       G(m, g), a->full_h16));
	else
		KCHECK(kern_rmsnorm_bwd_add(m->k, s->local, s->h, x, P(m, g),
					    rstd, dy, a->dx, G(m, g)));
	return 0;
}

/* a->dx = dL/dout in, dL/dxm out; after_norm: a->dx is the previous
 * layer's attention block's (its norm backward wrote it), not the head's
 * or another stage's. */
static int mlp_block_bwd(struct rt_model *m, long long l, int after_norm)
{
	const struct rt_shape *s = &m->s;
	const struct rt_layer *ly = &m->layer[l];
	struct rt_layer_acts *la = &m->la[l];
	struct rt_acts *a = &m->a;
	struct kern_ctx *k = m->k;
	long long N = s->tokens, h = s->h, fl = s->fl;
	const float *W;
	const uint16_t *W16;
	float *r, *g, beta;
	char what[64];

	/* linear_fc2 (row-parallel) */
	if (m->bf16) {
		RCHECK(row_linear_bwd(m, ly->fc2, after_norm, NULL, la->sw16,
				      fl, NULL, a->dsw16));
		KCHECK(kern_swiglu_bwd_b16(k, N, fl, la->u16, a->dsw16,
					   a->du16));
	} else {
		RCHECK(row_linear_bwd(m, ly->fc2, after_norm, la->sw, NULL, fl,
				      a->dsw, NULL));
		KCHECK(kern_swiglu_bwd(k, N, fl, la->u, a->dsw, a->du));
	}
	/* linear_fc1 (column-parallel): its input gradient summed over TP */
	RCHECK(rt_weights_next(m, &W, &W16));
	KCHECK(kern_gemm_bf(k, 0, 0, N, h, 2 * fl, 1.0f, a->du, a->du16, 2 * fl,
			    W, W16, h, 0.0f, a->full_h, h));
	g = rt_grad_out(m, ly->fc1, &beta);
	KCHECK(kern_gemm_bf(k, 1, 0, 2 * fl, h, N, 1.0f, a->du, a->du16, 2 * fl,
			    la->n2g, la->n2g16, h, beta, g, h));
	rt_label(what, sizeof(what), ly->fc1->name, "dgrad");
	RCHECK(rt_tp_reduce(m, what, a->full_h, a->dn, &r));
	RCHECK(rt_scatter_grad(m, ly->fc1, g));
	return resid_norm_bwd(m, la->xm, ly->ln2, la->rstd2, r);
}

/* Attention's backward through RoPE and QK-norm: a->dq, a->dk, a->dv from
 * a->dout; returns the Q and K gradients before QK-norm, rounded to bf16
 * in bf16 runs. Where qkv_fused, RoPE's backward and the rounding are
 * left to qkv_bwd's pass. */
static int attn_core_bwd(struct rt_model *m, long long l, float **dq,
			 float **dk)
{
	const struct rt_shape *s = &m->s;
	const struct rt_layer *ly = &m->layer[l];
	struct rt_layer_acts *la = &m->la[l];
	struct rt_acts *a = &m->a;
	struct kern_ctx *k = m->k;
	struct kern_attn at = rt_attn_shape(s, s->seq_len);
	long long N = s->tokens, d = s->hd;

	if (s->cp > 1) { /* key blocks or a gather: dq accumulates */
		KCHECK(kern_zero(k, a->dq, (size_t)(N * s->z.q_l) *
					   sizeof(float)));
		RCHECK(rt_cp_attn_bwd(m, l));
	} else {
		/* one call over all keys, at positions 0, 1, 2, ... (NULL,
		 * as the forward's), writes dq, dk, dv (the flash kernels
		 * clear them in their dsum pass): no zeroing here */
		at.overwrite = 1;
		if (m->bf16)
			KCHECK(kern_attn_bwd_bf(k, &at, la->q16, la->k16,
						la->v16, la->o16, la->lse,
						NULL, a->dout16, NULL, NULL,
						a->dq, a->dk, a->dv));
		else
			KCHECK(kern_attn_bwd(k, &at, la->q, la->k, la->v,
					     la->o, la->lse, a->dout, NULL,
					     NULL, a->dq, a->dk, a->dv));
	}
	*dq = a->dq;
	*dk = a->dk;
	if (qkv_fused(m))
		return 0;
	KCHECK(kern_rope(k, N, s->z.hl, d, s->theta, m->pos, 1, a->dq));
	KCHECK(kern_rope(k, N, s->z.kl, d, s->theta, m->pos, 1, a->dk));
	if (s->qk_norm) {
		KCHECK(kern_rmsnorm_bwd(k, N * s->z.hl, d, la->qraw,
					P(m, ly->qn), la->qrstd, a->dq,
					a->dqraw, G(m, ly->qn)));
		KCHECK(kern_rmsnorm_bwd(k, N * s->z.kl, d, la->kraw,
					P(m, ly->kn), la->krstd, a->dk,
					a->dkraw, G(m, ly->kn)));
		*dq = a->dqraw;
		*dk = a->dkraw;
	}
	RCHECK(rt_bf16(m, *dq, N * s->z.q_l));
	RCHECK(rt_bf16(m, *dk, N * s->z.kv_l));
	return rt_bf16(m, a->dv, N * s->z.kv_l);
}

/* a->dx = dL/dxm in, dL/dx out. */
static int attn_block_bwd(struct rt_model *m, long long l)
{
	const struct rt_shape *s = &m->s;
	const struct rt_layer *ly = &m->layer[l];
	struct rt_layer_acts *la = &m->la[l];
	struct rt_acts *a = &m->a;
	long long ql = s->z.q_l;
	const float *W;
	const uint16_t *W16;
	float *r, *dq = NULL, *dk = NULL, *gw;
	char what[64];

	/* linear_proj (row-parallel), after the MLP block's norm backward;
	 * the flash backward reads dout's bf16 bits (CP's kernels the fp32) */
	RCHECK(row_linear_bwd(m, ly->proj, 1, la->o, la->o16, ql, a->dout,
			      m->bf16 && s->cp == 1 ? a->dout16 : NULL));
	RCHECK(attn_core_bwd(m, l, &dq, &dk));
	/* linear_qkv (column-parallel) */
	RCHECK(rt_weights_next(m, &W, &W16));
	RCHECK(qkv_bwd(m, ly, la->n1g, la->n1g16, W, W16, dq, dk, a->dv,
		       a->full_h, &gw));
	rt_label(what, sizeof(what), ly->qkv->name, "dgrad");
	RCHECK(rt_tp_reduce(m, what, a->full_h, a->dn, &r));
	RCHECK(rt_scatter_grad(m, ly->qkv, gw));
	return resid_norm_bwd(m, la->x, ly->ln1, la->rstd1, r);
}

/* Backward of one micro-batch's chunk v; the loss is the token sum x
 * `scale`. */
int rt_backward_chunk(struct rt_model *m, int v, float scale)
{
	const struct rt_shape *s = &m->s;
	long long l0 = v * s->chunk_layers, l1 = l0 + s->chunk_layers;

	RCHECK(rt_weights_begin(m, 0, v));
	if (s->post && v == s->vpp - 1)
		RCHECK(rt_head_bwd(m, scale));
	for (long long l = l1; l-- > l0;) {
		/* the chunk's first a->dx is the head's or another stage's */
		RCHECK(mlp_block_bwd(m, l, l < l1 - 1));
		RCHECK(attn_block_bwd(m, l));
	}
	return s->pre && v == 0 ? rt_embed_bwd(m) : 0;
}
