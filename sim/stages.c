/*
 * stages: per-stage programs against the groups that span stages (see
 * stages.h).
 */
#include "stages.h"

#include <stdio.h>
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

/* The first collective on `group` that the member stages do not all issue
 * equally often (sized: with the same byte count). */
static const struct prog_op *odd_op(const struct prog *progs, size_t n,
				    unsigned group, int sized, size_t *stage,
				    size_t *top)
{
	for (size_t s = 0; s < n; s++) {
		const struct prog *pg = &progs[s];

		if (!member(group, s, n))
			continue;
		for (size_t i = 0; i < pg->n; i++) {
			const struct prog_op *op = &pg->ops[i];
			size_t lo = (size_t)-1, hi = 0;

			if (op->group != group || op->kind == OP_P2P ||
			    op->kind == OP_COMPUTE)
				continue;
			for (size_t t = 0; t < n; t++) {
				size_t c;

				if (!member(group, t, n))
					continue;
				c = count(&progs[t], group, op, sized);
				lo = c < lo ? c : lo;
				hi = c > hi ? c : hi;
			}
			if (lo != hi) {
				*stage = s;
				*top = hi;
				return op;
			}
		}
	}
	return NULL;
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
