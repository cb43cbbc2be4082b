/*
 * pp_schedule: pipeline parallelism as gtplan-run runs it and the
 * simulator predicts it, header-only (like decoder_sizes.h), so that the
 * runtime (runtime/rt_pp.c) and the simulator (sim/program_rt_pp.c) play
 * one list of operations.
 *
 * Layer split (megatron/core/transformer/transformer_block.py,
 * get_transformer_layer_offset): stage q holds n_q layers: L / P, or with
 * num_layers_in_first_pipeline_stage f and/or ..._last_... l those on the
 * ends and the rest evenly over the middle stages; with V virtual stages
 * each stage's layers form V chunks of n_q / V, and chunk v of stage p
 * starts at v L / V + (n_0 + ... + n_{p-1}) / V (even: v L / V +
 * p L / (P V)).
 *
 * Schedules (megatron/core/pipeline_parallel/schedules.py), as a list of
 * operations for one stage p: FWD and BWD of (chunk, micro-batch), and
 * XCHG, a point-to-point exchange with one neighbour: with the next stage
 * (p + 1, mod P in the interleaved ring) it sends a chunk's output
 * activation and/or receives the gradient of one; with the previous stage
 * it sends a chunk's input gradient and/or receives an input activation.
 *   V = 1: forward_backward_pipelining_without_interleaving: W = min(P -
 *   p - 1, M) warm-up forwards (recv_forward, forward, send_forward), a
 *   recv_forward, M - W steady steps (forward, send_forward_recv_backward,
 *   backward, send_backward_recv_forward; the last only send_backward),
 *   W cool-down backwards (recv_backward, backward, send_backward).
 *   V > 1: forward_backward_pipelining_with_interleaving with
 *   microbatch_group_size_per_vp_stage = P (needs M % P == 0): virtual
 *   micro-batch k runs chunk (k mod P V) / P (backward: V - 1 minus it)
 *   on micro-batch (k / P V) P + k mod P; W = (P - p - 1) 2 + (V - 1) P
 *   warm-up forwards (all M V when M = P or when W reaches it), steady
 *   steps of one forward and one backward followed by one combined
 *   exchange, then the cool-down backwards.
 * Megatron issues each step's sends and receives in one
 * batch_isend_irecv; here one step's communication is one exchange with
 * each neighbour that has a part in it, even stages with the next stage
 * first and odd stages with the previous first, so that the two
 * neighbours of a pair always meet in the same exchange (with P = 2 both
 * neighbours are one rank) and no cycle of waits forms.
 */
#ifndef GTPLAN_PP_SCHEDULE_H
#define GTPLAN_PP_SCHEDULE_H

#include <stdio.h>

/* The most virtual stages a split handles. */
#define PPS_MAX_V 64

enum pps_kind { PPS_FWD, PPS_BWD, PPS_XCHG };
enum pps_peer { PPS_PREV, PPS_NEXT };

struct pps_op {
	int kind;
	int chunk;          /* FWD, BWD */
	long long mb;
	int peer;           /* XCHG: enum pps_peer */
	int send, recv;     /* XCHG: the parts present */
	int send_chunk, recv_chunk;
	long long send_mb, recv_mb;
};

/* Layers of stage q, or -1 when L does not split so. f, l: 0 unset. */
static inline long long pps_stage_layers(long long L, int P, int V,
					 long long f, long long l, int q)
{
	long long n = L, st = P;

	if (P < 1 || V < 1 || q < 0 || q >= P)
		return -1;
	if (P == 1)
		return L;
	if (f) {
		n -= f;
		st--;
	}
	if (l) {
		n -= l;
		st--;
	}
	if (n < 0 || (n > 0) != (st > 0) || (st > 0 && n % st))
		return -1;
	if (q == 0 && f)
		return f % V ? -1 : f;
	if (q == P - 1 && l)
		return l % V ? -1 : l;
	return (n / st) % V || n / st == 0 ? -1 : n / st;
}

/* Model index of the first layer of chunk v on stage p (the split must be
 * valid: pps_stage_layers >= 0 on every stage). */
static inline long long pps_chunk_first(long long L, int P, int V,
					long long f, long long l, int p, int v)
{
	long long before = 0;

	for (int q = 0; q < p; q++)
		before += pps_stage_layers(L, P, V, f, l, q);
	return (long long)v * (L / V) + before / V;
}

/* An upper bound of pps_build's operations. */
static inline long long pps_max_ops(int V, long long M)
{
	return 8 * (long long)V * M + 16;
}

/* The builder's state: per chunk, the activations and gradients received
 * so far (they arrive in each chunk's forward, or backward, order: micro-
 * batches ascending). */
struct pps_b {
	int P, p, V;
	long long M, n;
	struct pps_op *ops;
	long long got_act[PPS_MAX_V], got_grad[PPS_MAX_V];
};

static inline void pps_push(struct pps_b *b, int kind, int chunk,
			    long long mb)
{
	struct pps_op *o = &b->ops[b->n++];

	*o = (struct pps_op){ .kind = kind, .chunk = chunk, .mb = mb };
}

/* One step's communication; a part is -1 (absent) or a chunk. The micro-
 * batches: sent ones given, received ones the chunk's next. */
static inline void pps_comm(struct pps_b *b, int send_act, long long act_mb,
			    int send_grad, long long grad_mb, int recv_act,
			    int recv_grad)
{
	for (int i = 0; i < 2; i++) {
		int next = (b->p % 2 == 0) == (i == 0);
		struct pps_op o = { .kind = PPS_XCHG,
				    .peer = next ? PPS_NEXT : PPS_PREV };

		if (next) {
			o.send = send_act >= 0;
			o.send_chunk = send_act;
			o.send_mb = act_mb;
			o.recv = recv_grad >= 0;
			o.recv_chunk = recv_grad;
			if (o.recv)
				o.recv_mb = b->got_grad[recv_grad]++;
		} else {
			o.send = send_grad >= 0;
			o.send_chunk = send_grad;
			o.send_mb = grad_mb;
			o.recv = recv_act >= 0;
			o.recv_chunk = recv_act;
			if (o.recv)
				o.recv_mb = b->got_act[recv_act]++;
		}
		if (o.send || o.recv)
			b->ops[b->n++] = o;
	}
}

/* forward_backward_pipelining_without_interleaving. */
static inline void pps_1f1b(struct pps_b *b)
{
	int P = b->P, p = b->p, first = p == 0, last = p == P - 1;
	long long M = b->M, W = P - p - 1 < M ? P - p - 1 : M, R = M - W;

	for (long long i = 0; i < W; i++) {
		pps_comm(b, -1, 0, -1, 0, first ? -1 : 0, -1);
		pps_push(b, PPS_FWD, 0, i);
		pps_comm(b, last ? -1 : 0, i, -1, 0, -1, -1);
	}
	if (R > 0)
		pps_comm(b, -1, 0, -1, 0, first ? -1 : 0, -1);
	for (long long i = 0; i < R; i++) {
		pps_push(b, PPS_FWD, 0, W + i);
		pps_comm(b, last ? -1 : 0, W + i, -1, 0, -1, last ? -1 : 0);
		pps_push(b, PPS_BWD, 0, i);
		pps_comm(b, -1, 0, first ? -1 : 0, i,
			 first || i == R - 1 ? -1 : 0, -1);
	}
	for (long long i = R; i < M; i++) {
		pps_comm(b, -1, 0, -1, 0, -1, last ? -1 : 0);
		pps_push(b, PPS_BWD, 0, i);
		pps_comm(b, -1, 0, first ? -1 : 0, i, -1, -1);
	}
}

/* Virtual micro-batch k's chunk (forward order) and micro-batch; k may
 * be negative (the steady state looks P - 1 back), taken modulo P V as
 * Python's % takes it in Megatron's get_model_chunk_id. */
static inline int pps_vchunk(const struct pps_b *b, long long k, int fwd)
{
	long long g = (long long)b->P * b->V;
	int c = (int)((((k % g) + g) % g) / b->P);

	return fwd ? c : b->V - 1 - c;
}

static inline long long pps_vmb(const struct pps_b *b, long long k)
{
	return k / ((long long)b->P * b->V) * b->P + k % b->P;
}

/* The interleaved warm-up (its last step also receives the first
 * gradient unless every virtual micro-batch is a warm-up one). */
static inline void pps_il_warmup(struct pps_b *b, long long W, long long T,
				 int all)
{
	int P = b->P, p = b->p, V = b->V;

	pps_comm(b, -1, 0, -1, 0, p == 0 ? -1 : 0, -1);
	for (long long k = 0; k < W; k++) {
		int c = pps_vchunk(b, k, 1), nc = pps_vchunk(b, k + 1, 1);
		int recv_prev = !(p == 0 && nc == 0) && k != T - 1;
		int send = !(p == P - 1 && c == V - 1) ? c : -1;
		int recv_next = k == W - 1 && !all && p != P - 1;

		pps_push(b, PPS_FWD, c, pps_vmb(b, k));
		pps_comm(b, send, pps_vmb(b, k), -1, 0, recv_prev ? nc : -1,
			 recv_next ? V - 1 : -1);
	}
}

/* forward_backward_pipelining_with_interleaving (M % P == 0). */
static inline void pps_interleaved(struct pps_b *b)
{
	int P = b->P, p = b->p, V = b->V, all = 0;
	long long T = b->M * V, W, R;

	W = (long long)(P - p - 1) * 2 + (long long)(V - 1) * P;
	if (b->M == P || W >= T) {
		W = T;
		all = 1;
	}
	R = T - W;
	pps_il_warmup(b, W, T, all);
	for (long long k = 0; k < R; k++) {
		long long fk = k + W, bk = k;
		int fc = pps_vchunk(b, fk, 1), bc = pps_vchunk(b, bk, 0);
		int send = !(p == P - 1 && fc == V - 1) ? fc : -1;
		int sendg = !(p == 0 && bc == 0) ? bc : -1;
		int nfc, nbc, rp = 1, rn = 1;

		pps_push(b, PPS_FWD, fc, pps_vmb(b, fk));
		pps_push(b, PPS_BWD, bc, pps_vmb(b, bk));
		if (p == 0) {
			nfc = pps_vchunk(b, fk - (P - 1), 1);
			rp = nfc != V - 1;
			nfc++;
		} else {
			nfc = pps_vchunk(b, fk + 1, 1);
		}
		if (p == P - 1) {
			nbc = pps_vchunk(b, bk - (P - 1), 0);
			rn = nbc != 0;
			nbc--;
		} else {
			nbc = pps_vchunk(b, bk + 1, 0);
		}
		if (k == R - 1)
			rp = 0;
		pps_comm(b, send, pps_vmb(b, fk), sendg, pps_vmb(b, bk),
			 rp ? nfc : -1, rn ? nbc : -1);
	}
	if (all)
		pps_comm(b, -1, 0, -1, 0, -1, p == P - 1 ? -1 : V - 1);
	for (long long k = R; k < T; k++) {
		int c = pps_vchunk(b, k, 0), nc = pps_vchunk(b, k + 1, 0);
		int rn = !(p == P - 1 && nc == V - 1) && k != T - 1;

		pps_push(b, PPS_BWD, c, pps_vmb(b, k));
		pps_comm(b, -1, 0, !(p == 0 && c == 0) ? c : -1,
			 pps_vmb(b, k), -1, rn ? nc : -1);
	}
}

/* Stage p's operations for M micro-batches into ops (pps_max_ops(V, M)
 * long); returns their number, or -1 when the sizes are out of range.
 * Megatron refuses V > 1 with M % P != 0 (GT633; the caller's check): the
 * formulas above then give the stages exchanges that do not pair, and a
 * forced run hangs where they part (tests/runtime_parity.sh). */
static inline long long pps_build(int P, int p, int V, long long M,
				  struct pps_op *ops)
{
	struct pps_b b = { .P = P, .p = p, .V = V, .M = M, .ops = ops };

	if (P < 1 || p < 0 || p >= P || V < 1 || V > PPS_MAX_V || M < 1)
		return -1;
	if (V == 1)
		pps_1f1b(&b);
	else
		pps_interleaved(&b);
	return b.n;
}

/* An exchange's label: its parts, "act.mb3" (with V > 1 "act.v1.mb3") for
 * an activation, "grad..." for a gradient, sent part first, joined by
 * ','. */
static inline void pps_label(const struct pps_op *o, int V, char *buf,
			     size_t n)
{
	const char *kind[2] = { o->peer == PPS_NEXT ? "act" : "grad",
				o->peer == PPS_NEXT ? "grad" : "act" };
	int has[2] = { o->send, o->recv };
	int ch[2] = { o->send_chunk, o->recv_chunk };
	long long mb[2] = { o->send_mb, o->recv_mb };
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < 2 && at < n; i++) {
		int w;

		if (!has[i])
			continue;
		if (V > 1)
			w = snprintf(buf + at, n - at, "%s%s.v%d.mb%lld",
				     at ? "," : "", kind[i], ch[i], mb[i]);
		else
			w = snprintf(buf + at, n - at, "%s%s.mb%lld",
				     at ? "," : "", kind[i], mb[i]);
		if (w < 0)
			return;
		at += (size_t)w;
	}
}

#endif
