/*
 * program_rt_record: the runtime programs' ops as gtplan-run names and
 * records them (program_rt.h): labels, collective, reduction, type and
 * group names, counts, and the --record lines, byte for byte as
 * runtime/coll.c and runtime/coll_p2p.c write them.
 */
#include "program_rt.h"

#include <stdio.h>
#include <string.h>

char *prog_rt_what(const struct prog *pg, const struct prog_op *op,
		   char *buf, size_t len)
{
	static const char *const fixed[PRT_L_COUNT] = {
		[PRT_L_TOKENS] = "tokens", [PRT_L_EMBED_OUT] = "embedding.out",
		[PRT_L_EMBED_DOUT] = "embedding.dout",
		[PRT_L_OUTPUT_IN] = "output.in", [PRT_L_CE_MAX] = "ce.max",
		[PRT_L_CE_TARGET] = "ce.target",
		[PRT_L_CE_SUMEXP] = "ce.sumexp",
		[PRT_L_OUTPUT_DGRAD] = "output.dgrad", [PRT_L_GRADS] = "grads",
		[PRT_L_REP_GRADS] = "replicated_grads",
		[PRT_L_TP_GRADS] = "tp_grads", [PRT_L_LOSS] = "loss",
		[PRT_L_STEP] = "step", [PRT_L_EMB_GRADS] = "embedding_grads",
		[PRT_L_LOSS_PP] = "loss.pp",
	};
	static const char *const sfx[PRT_L_COUNT] = {
		[PRT_L_WEIGHT] = "", [PRT_L_IN] = ".in", [PRT_L_OUT] = ".out",
		[PRT_L_DOUT] = ".dout", [PRT_L_DGRAD] = ".dgrad",
		[PRT_L_K] = ".k", [PRT_L_V] = ".v", [PRT_L_DK] = ".dk",
		[PRT_L_DV] = ".dv", [PRT_L_KV] = ".kv", [PRT_L_DKV] = ".dkv",
	};
	const char *wn = op->weight >= 0 && (size_t)op->weight < pg->n_weights ?
			 pg->weights[op->weight] : "?";

	if (op->label == PRT_L_P2P) {
		struct pps_op o;

		prog_rt_pp_decode(op, &o);
		pps_label(&o, op->redop ? 2 : 1, buf, len);
	} else if (op->label < PRT_L_COUNT && sfx[op->label]) {
		if (op->layer < 0)
			snprintf(buf, len, "%s%s", wn, sfx[op->label]);
		else
			snprintf(buf, len, "layers.%d.%s%s", (int)op->layer, wn,
				 sfx[op->label]);
	} else {
		snprintf(buf, len, "%s", op->label < PRT_L_COUNT &&
			 fixed[op->label] ? fixed[op->label] : "?");
	}
	return buf;
}

const char *prog_rt_coll_name(const struct prog_op *op)
{
	switch (op->kind) {
	case OP_ALL_GATHER: return "all-gather";
	case OP_REDUCE_SCATTER: return "reduce-scatter";
	case OP_ALL_REDUCE: return "all-reduce";
	case OP_BARRIER: return "barrier";
	case OP_SEND_RECV: return "send-recv";
	default: return "?";
	}
}

const char *prog_rt_op_name(const struct prog_op *op)
{
	return op->redop == PROG_REDOP_SUM ? "sum" :
	       op->redop == PROG_REDOP_MAX ? "max" : NULL;
}

const char *prog_rt_dtype_name(const struct prog_op *op)
{
	return op->dtype == PROG_DT_FP64 ? "fp64" :
	       op->dtype == PROG_DT_FP32 ? "fp32" :
	       op->dtype == PROG_DT_BF16 ? "bf16" : "none";
}

const char *prog_rt_group_name(const struct prog_op *op)
{
	return op->group == PROG_GK_WORLD ? "world" :
	       prog_group_name(op->group);
}

long long prog_rt_count(const struct prog_op *op)
{
	long long elem = op->dtype == PROG_DT_FP64 ? 8 :
			 op->dtype == PROG_DT_FP32 ? 4 :
			 op->dtype == PROG_DT_BF16 ? 2 : 0;

	return elem ? (long long)op->amount / elem : 0;
}

long long prog_rt_line(const struct prog *pg, size_t i)
{
	long long line = 0;

	for (size_t j = 0; j < i && j < pg->n; j++) {
		unsigned f = pg->ops[j].flags;

		if (pg->ops[j].kind == OP_SEND_RECV)
			line += 2;
		else if (pg->ops[j].kind == OP_P2P)
			line += !!(f & (PROG_SEND_FWD | PROG_SEND_BWD)) +
				!!(f & (PROG_RECV_FWD | PROG_RECV_BWD));
		else
			line++;
	}
	return line;
}

/* A ring step as runtime/coll_p2p.c records a send-recv: a "send" line
 * to one neighbour of place `at` in a group of n, then a "recv" line from
 * the other, each with the peer's place and the step's count (a ring step
 * moves as much each way). */
static int write_ring_step(FILE *f, const struct prog *pg,
			   const struct prog_op *op, long long idx,
			   long long at, long long n, long long rank,
			   const char *call, long long step, long long *seq)
{
	long long next = (at + 1) % n, prev = (at + n - 1) % n;
	int fwd = (op->flags & PROG_SEND_FWD) != 0;
	char what[64];

	prog_rt_what(pg, op, what, sizeof(what));
	for (int dir = 0; dir < 2; dir++)
		fprintf(f, "{\"bytes\":%lld,\"call\":\"%s\",\"coll\":\"%s\","
			"\"count\":%lld,\"dtype\":\"fp32\",\"group\":\"%s\","
			"\"group_index\":%lld,\"op\":null,\"peer\":%lld,"
			"\"rank\":%lld,\"seq\":%lld,\"step\":%lld,\"what\":"
			"\"%s\"}\n", (long long)op->amount, call,
			dir ? "recv" : "send", prog_rt_count(op),
			prog_rt_group_name(op), idx,
			(dir == 0) == fwd ? next : prev, rank, (*seq)++, step,
			what);
	return ferror(f) ? -1 : 0;
}

int prog_rt_write_record(FILE *f, const struct plan *p,
			 const struct prog *pg, size_t n, long long rank,
			 const char *call, long long step, long long *seq)
{
	char what[64];

	for (size_t i = 0; i < n && i < pg->n; i++) {
		const struct prog_op *op = &pg->ops[i];
		const struct lay_group_kind *gk = lay_group_kind_at(op->group);
		const char *rop_name = prog_rt_op_name(op);
		long long idx = 0, at = 0;

		if (op->kind == OP_P2P) {
			if (prog_rt_pp_write_p2p(f, p, op, rank, call, step,
						 seq))
				return -1;
			continue;
		}
		/* the embedding group is numbered as its pipeline */
		if (op->group == PROG_GK_EMBEDDING)
			gk = lay_group_kind_at(prog_kind("pp"));
		if (op->group != PROG_GK_WORLD && gk)
			lay_group_of(&p->dense, gk->axes, rank, &idx, &at);
		if (op->kind == OP_SEND_RECV) {
			if (write_ring_step(f, pg, op, idx, at, gk ?
					    lay_group_size(&p->dense,
							   gk->axes) : 1,
					    rank, call, step, seq))
				return -1;
			continue;
		}
		/* coll.c's record(), byte for byte */
		fprintf(f, "{\"bytes\":%lld,\"call\":\"%s\",\"coll\":\"%s\","
			"\"count\":%lld,\"dtype\":\"%s\",\"group\":\"%s\","
			"\"group_index\":%lld,\"op\":%s%s%s,\"rank\":%lld,"
			"\"seq\":%lld,\"step\":%lld,\"what\":\"%s\"}\n",
			(long long)op->amount, call, prog_rt_coll_name(op),
			prog_rt_count(op), prog_rt_dtype_name(op),
			prog_rt_group_name(op), idx, rop_name ? "\"" : "",
			rop_name ? rop_name : "null", rop_name ? "\"" : "",
			rank, (*seq)++, step, prog_rt_what(pg, op, what,
							  sizeof(what)));
	}
	return ferror(f) ? -1 : 0;
}
