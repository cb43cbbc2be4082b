/*
 * stages: per-stage programs against the groups that span stages (see
 * stages.h).
 */
#include "stages.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"

/* Group kinds whose groups have members on several stages. */
static int spans_stages(unsigned group)
{
	const struct lay_group_kind *gk = lay_group_kind_at(group);

	if (group == PROG_GK_WORLD || group == PROG_GK_TRAIN_INFER ||
	    group == PROG_GK_EMBEDDING)
		return 1;
	return gk && (gk->axes & (1u << LAY_PP));
}

/* Whether stage s is in a group of this kind (the embedding group holds
 * the first and the last stage only). */
static int member(unsigned group, size_t s, size_t n)
{
	return group != PROG_GK_EMBEDDING || s == 0 || s + 1 == n;
}

/* How many collectives of `pg` on `group` match `ref` (kind, what and
 * root; with `sized` the byte count too). */
static size_t count(const struct prog *pg, unsigned group,
		    const struct prog_op *ref, int sized)
{
	size_t c = 0;

	for (size_t i = 0; i < pg->n; i++) {
		const struct prog_op *op = &pg->ops[i];

		if (op->group != group || op->kind == OP_P2P ||
		    op->kind == OP_COMPUTE)
			continue;
		c += op->kind == ref->kind && op->what == ref->what &&
		     op->root == ref->root && (!sized || op->amount == ref->amount);
	}
	return c;
}

/* The member stages whose count of `ref` is (want = 1) or is not the
 * highest, as "0, 1 and 3". */
static size_t stage_list(char *buf, size_t len, const struct prog *progs,
			 size_t n, unsigned group, const struct prog_op *ref,
			 int sized, size_t top, int want)
{
	size_t used = 0, c = 0, total = 0;

	for (size_t s = 0; s < n; s++)
		total += member(group, s, n) &&
			 (count(&progs[s], group, ref, sized) == top) == want;
	buf[0] = '\0';
	for (size_t s = 0; s < n && used < len; s++) {
		if (!member(group, s, n) ||
		    (count(&progs[s], group, ref, sized) == top) != want)
			continue;
		c++;
		used += (size_t)snprintf(buf + used, len - used, "%s%zu",
					 c == 1 ? "" : c == total ? " and " :
					 ", ", s);
	}
	return total;
}

static const char *hint_for(const struct prog_op *op)
{
	if (op->what == W_MOE_METRICS)
		return "pre-initialise the MoE auxiliary-loss tracker on every "
		       "stage with num_layers + MTP entries (NeMo-RL PR #3419, "
		       "Megatron PR #3401: gtplan.stack.moe_aux_loss_tracker: "
		       "preinit), or lay the stages out so that each holds MoE "
		       "layers";
	if (op->what == W_EMBED_GRADS)
		return "only the first and the last stage may take part in the "
		       "embedding gradients' all-reduce (Megatron's embedding "
		       "group)";
	return "every stage of the group must issue the same collectives in "
	       "the same order";
}

/* One collective of one stage, for counting by signature. */
struct sig {
	int64_t amount;  /* 0 unless sized */
	int32_t root;
	uint16_t what;
	uint8_t kind;
	uint32_t stage;
	size_t hi;       /* odd list: the highest count over the stages */
};

static int sig_cmp_key(const struct sig *a, const struct sig *b)
{
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->what != b->what)
		return a->what < b->what ? -1 : 1;
	if (a->root != b->root)
		return a->root < b->root ? -1 : 1;
	if (a->amount != b->amount)
		return a->amount < b->amount ? -1 : 1;
	return 0;
}

static int sig_key_cmp(const void *x, const void *y)
{
	return sig_cmp_key(x, y);
}

static int sig_cmp(const void *x, const void *y)
{
	const struct sig *a = x, *b = y;
	int c = sig_cmp_key(a, b);

	return c ? c : (a->stage > b->stage) - (a->stage < b->stage);
}

static int relevant(const struct prog_op *op, unsigned group)
{
	return op->group == group && op->kind != OP_P2P &&
	       op->kind != OP_COMPUTE;
}

static struct sig sig_of(const struct prog_op *op, int sized, size_t s)
{
	struct sig g = { sized ? op->amount : 0, op->root, op->what, op->kind,
			 (uint32_t)s, 0 };

	return g;
}

/* The signatures (sorted, with their highest count) that the member
 * stages do not all issue equally often. Returns how many, in *odd (heap;
 * NULL when none); (size_t)-1 when out of memory. */
static size_t odd_sigs(const struct prog *progs, size_t n, unsigned group,
		       int sized, struct sig **odd)
{
	size_t total = 0, k = 0, n_odd = 0, members = 0;
	struct sig *v;

	*odd = NULL;
	for (size_t s = 0; s < n; s++) {
		members += member(group, s, n);
		for (size_t i = 0; member(group, s, n) && i < progs[s].n; i++)
			total += relevant(&progs[s].ops[i], group);
	}
	if (!total)
		return 0;
	v = malloc(total * sizeof(*v));
	if (!v)
		return (size_t)-1;
	for (size_t s = 0; s < n; s++)
		for (size_t i = 0; member(group, s, n) && i < progs[s].n; i++)
			if (relevant(&progs[s].ops[i], group))
				v[k++] = sig_of(&progs[s].ops[i], sized, s);
	qsort(v, total, sizeof(*v), sig_cmp);
	for (size_t a = 0, b; a < total; a = b) {
		size_t lo = (size_t)-1, hi = 0, stages = 0;

		for (b = a; b < total && !sig_cmp_key(&v[a], &v[b]);) {
			size_t c = 0, e = b;

			while (e < total && !sig_cmp_key(&v[a], &v[e]) &&
			       v[e].stage == v[b].stage)
				e++, c++;
			lo = c < lo ? c : lo;
			hi = c > hi ? c : hi;
			stages++;
			b = e;
		}
		if (stages < members)
			lo = 0; /* some member stage never issues it */
		if (lo != hi) {
			v[n_odd] = v[a];
			v[n_odd++].hi = hi;
		}
	}
	if (!n_odd)
		free(v);
	else
		*odd = v;
	return n_odd;
}

/* The first collective on `group` that the member stages do not all issue
 * equally often (sized: with the same byte count), in stage and program
 * order. Signatures are sorted once, so this costs the stages' ops times
 * a logarithm, whatever PP is. Out of memory, it finds none. */
static const struct prog_op *odd_op(const struct prog *progs, size_t n,
				    unsigned group, int sized, size_t *stage,
				    size_t *top)
{
	struct sig *odd;
	size_t n_odd = odd_sigs(progs, n, group, sized, &odd);
	const struct prog_op *found = NULL;

	if (!n_odd || n_odd == (size_t)-1)
		return NULL;
	for (size_t s = 0; s < n && !found; s++) {
		for (size_t i = 0; member(group, s, n) && i < progs[s].n; i++) {
			const struct prog_op *op = &progs[s].ops[i];
			struct sig key = sig_of(op, sized, s);
			const struct sig *hit;

			if (!relevant(op, group))
				continue;
			key.stage = 0;
			hit = bsearch(&key, odd, n_odd, sizeof(*odd),
				      sig_key_cmp);
			if (hit) {
				*stage = s;
				*top = hit->hi;
				found = op;
				break;
			}
		}
	}
	free(odd);
	return found;
}

/* Compares the member stages' collectives on one group kind. */
static int check_group(const struct plan *p, const struct prog *progs,
		       size_t n, unsigned group, const char *call,
		       const struct prog_opts *o, struct diag_list *diags)
{
	size_t stage = 0, top = 0, with, without;
	int sized = 0;
	const struct prog_op *op = odd_op(progs, n, group, 0, &stage, &top);
	char yes[96], no[96], label[256];
	struct diag_loc loc = o ? o->stages_loc : DIAG_NOLOC;
	struct diag *d;

	if (!op) {
		op = odd_op(progs, n, group, 1, &stage, &top);
		sized = 1;
	}
	if (!op)
		return 0;
	if (op->what == W_MOE_METRICS && o && o->tracker_loc.src >= 0)
		loc = o->tracker_loc;
	prog_op_label(&progs[stage], op, label, sizeof(label));
	with = stage_list(yes, sizeof(yes), progs, n, group, op, sized, top, 1);
	without = stage_list(no, sizeof(no), progs, n, group, op, sized, top, 0);
	if (sized)
		d = diag_add(diags, "GT680", loc, NULL,
			     "%s: %s spans pipeline stages; stage%s %s issue%s "
			     "it with %lld bytes per rank, stage%s %s with "
			     "another size, so the %s groups of %lld stages "
			     "mismatch", call, label, with == 1 ? "" : "s", yes,
			     with == 1 ? "s" : "", (long long)op->amount,
			     without == 1 ? "" : "s", no,
			     prog_group_name(group), group == PROG_GK_EMBEDDING
			     ? 2LL : p->pp);
	else
		d = diag_add(diags, "GT680", loc, NULL,
			     "%s: %s spans pipeline stages, but only stage%s %s "
			     "issue%s it; stage%s %s never do%s, so the %s "
			     "groups of %lld stages wait forever", call, label,
			     with == 1 ? "" : "s", yes, with == 1 ? "s" : "",
			     without == 1 ? "" : "s", no, without == 1 ? "es" :
			     "", prog_group_name(group),
			     group == PROG_GK_EMBEDDING ? 2LL : p->pp);
	diag_hint(d, "%s", hint_for(op));
	return 1;
}

size_t stages_check(const struct plan *p, const struct prog *progs, size_t n,
		    const char *call, const struct prog_opts *o,
		    struct diag_list *diags)
{
	size_t found = 0;

	if (n < 2)
		return 0;
	for (unsigned g = 0; g < 32; g++)
		if (spans_stages(g))
			found += (size_t)check_group(p, progs, n, g, call, o,
						     diags);
	return found;
}
