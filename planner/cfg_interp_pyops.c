/*
 * cfg_interp_pyops: what Python does with the values resolution builds.
 * str() and repr() (a value inside a longer string reads as Python's str()
 * of it), == and >, and NeMo-RL's resolvers, each a two-argument Python
 * lambda (nemo_rl/utils/config.py): add, sub, mul, div and max, next to
 * OmegaConf's oc.env.
 */
#include "cfg_interp_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Python's repr() of a float: the shortest text that reads back the same,
 * in exponent form when the decimal point is outside (-4, 16]. */
static void py_float(struct strbuf *b, double v)
{
	char e[40], digits[24];
	int prec, exp, nd = 0, point;
	const char *p;

	if (isnan(v)) {
		strbuf_addstr(b, "nan");
		return;
	}
	if (isinf(v)) {
		strbuf_addstr(b, v < 0 ? "-inf" : "inf");
		return;
	}
	for (prec = 0; prec < 17; prec++) {
		snprintf(e, sizeof(e), "%.*e", prec, v);
		if (strtod(e, NULL) == v)
			break;
	}
	p = e;
	if (*p == '-')
		strbuf_addch(b, *p++);
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	exp = atoi(p + 1);
	point = exp + 1;
	if (point > -4 && point <= 16) {
		if (point <= 0) {
			strbuf_addstr(b, "0.");
			strbuf_addchars(b, '0', (size_t)-point);
			strbuf_addstr(b, digits);
		} else if (point >= nd) {
			strbuf_addstr(b, digits);
			strbuf_addchars(b, '0', (size_t)(point - nd));
			strbuf_addstr(b, ".0");
		} else {
			strbuf_add(b, digits, (size_t)point);
			strbuf_addch(b, '.');
			strbuf_addstr(b, digits + point);
		}
	} else {
		snprintf(e, sizeof(e), "e%c%02d", exp < 0 ? '-' : '+',
			 exp < 0 ? -exp : exp);
		strbuf_addch(b, digits[0]);
		if (nd > 1) {
			strbuf_addch(b, '.');
			strbuf_addstr(b, digits + 1);
		}
		strbuf_addstr(b, e);
	}
}

/* Python's repr() of a str: single quotes unless the text has one and no
 * double quote. */
static void py_repr_str(struct strbuf *b, const char *s)
{
	char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
	char esc[8];

	strbuf_addch(b, q);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\\' || *p == (unsigned char)q) {
			strbuf_addch(b, '\\');
			strbuf_addch(b, (char)*p);
		} else if (*p == '\n') {
			strbuf_addstr(b, "\\n");
		} else if (*p == '\r') {
			strbuf_addstr(b, "\\r");
		} else if (*p == '\t') {
			strbuf_addstr(b, "\\t");
		} else if (*p < 0x20 || *p == 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			strbuf_addstr(b, esc);
		} else {
			strbuf_addch(b, (char)*p);
		}
	}
	strbuf_addch(b, q);
}

void py_str(struct strbuf *b, const struct cfg_node *n, int repr)
{
	char num[32];

	switch (n->kind) {
	case CFG_NULL: strbuf_addstr(b, "None"); break;
	case CFG_BOOL: strbuf_addstr(b, n->v.b ? "True" : "False"); break;
	case CFG_INT:
		snprintf(num, sizeof(num), "%lld", n->v.i);
		strbuf_addstr(b, num);
		break;
	case CFG_FLOAT: py_float(b, n->v.f); break;
	case CFG_STR:
		if (repr)
			py_repr_str(b, n->text ? n->text : "");
		else
			strbuf_addstr(b, n->text ? n->text : "");
		break;
	case CFG_MAP:
	case CFG_SEQ:
		strbuf_addch(b, n->kind == CFG_MAP ? '{' : '[');
		for (size_t i = 0; i < n->n && !b->bad; i++) {
			if (i)
				strbuf_addstr(b, ", ");
			if (n->kind == CFG_MAP) {
				py_repr_str(b, n->kids[i]->key);
				strbuf_addstr(b, ": ");
			}
			py_str(b, n->kids[i], 1);
		}
		strbuf_addch(b, n->kind == CFG_MAP ? '}' : ']');
		break;
	}
}

/* ---- Python's operators ------------------------------------------------- */

static const char *py_type(const struct cfg_node *n)
{
	static const char *const names[] = {
		[CFG_NULL] = "NoneType", [CFG_BOOL] = "bool", [CFG_INT] = "int",
		[CFG_FLOAT] = "float", [CFG_STR] = "str", [CFG_MAP] = "dict",
		[CFG_SEQ] = "list",
	};
	return names[n->kind];
}

static int is_num(const struct cfg_node *n)
{
	return n->kind == CFG_BOOL || n->kind == CFG_INT ||
	       n->kind == CFG_FLOAT;
}

static int is_intlike(const struct cfg_node *n)
{
	return n->kind == CFG_BOOL || n->kind == CFG_INT;
}

static long long as_int(const struct cfg_node *n)
{
	return n->kind == CFG_BOOL ? n->v.b : n->v.i;
}

static double as_float(const struct cfg_node *n)
{
	return n->kind == CFG_FLOAT ? n->v.f : (double)as_int(n);
}

/* A fresh number at the site, its text as Python's str() writes it. */
static struct cfg_node *new_number(struct ps *ps, int is_float, long long i,
				   double f)
{
	struct cfg_node *n = ps_site_node(ps, is_float ? CFG_FLOAT : CFG_INT);
	struct strbuf b = INTERP_TEXT_INIT;

	if (!n)
		return NULL;
	if (is_float)
		n->v.f = f;
	else
		n->v.i = i;
	py_str(&b, n, 0);
	if (!(n->text = strbuf_detach(&b))) {
		cfg_free(n);
		ps->c->oom = 1;
		return NULL;
	}
	return n;
}

/* Appends a copy of each item of the list s to the list n; on failure
 * frees n and returns -1. */
static int append_copies(struct ps *ps, struct cfg_node *n,
			 const struct cfg_node *s)
{
	for (size_t j = 0; j < s->n; j++) {
		struct cfg_node *kid = interp_copy_counted(ps->c, s->kids[j]);

		if (!kid || cfg_append(n, kid)) {
			cfg_free(n);
			return -1;
		}
	}
	return 0;
}

/* s * k for a string or list, as Python repeats sequences. */
static struct cfg_node *repeat(struct ps *ps, const struct cfg_node *s,
			       long long k, const char *ref, size_t ref_len)
{
	struct cfg_node *n;

	if (k < 0)
		k = 0;
	if (s->kind == CFG_STR) {
		struct strbuf b = INTERP_TEXT_INIT;
		size_t len = strlen(s->text);

		if (len && (unsigned long long)k > CFG_MAX_INTERP_TEXT / len)
			b.bad = STRBUF_TOOLONG;
		for (long long i = 0; i < k && !b.bad; i++)
			strbuf_add(&b, s->text, len);
		{
			struct val v = { 0 };

			if (ps_own_str(ps, &b, &v))
				return NULL;
			return v.n;
		}
	}
	if (s->n && (unsigned long long)k > CFG_MAX_NODES / s->n) {
		interp_report_ref(ps->c, ref, ref_len, "GT103", "'%.*s' builds "
				  "a list of more than %d items", (int)ref_len,
				  ref, CFG_MAX_NODES);
		return NULL;
	}
	if (!(n = ps_site_node(ps, CFG_SEQ)))
		return NULL;
	for (long long i = 0; i < k; i++)
		if (append_copies(ps, n, s))
			return NULL;
	return n;
}

/* Python's a + b, a - b, a * b, a / b and max(a, b) for NeMo-RL's lambdas.
 * Returns the result, or NULL with *why set (a TypeError-like text). */
static struct cfg_node *arith(struct ps *ps, char op, const struct cfg_node *a,
			      const struct cfg_node *b, const char **why,
			      const char *ref, size_t ref_len)
{
	long long r = 0;

	*why = NULL;
	if (is_num(a) && is_num(b)) {
		int fl = a->kind == CFG_FLOAT || b->kind == CFG_FLOAT;
		long long x = as_int(a), y = as_int(b);
		double fx = as_float(a), fy = as_float(b);

		switch (op) {
		case '+':
			if (!fl && __builtin_add_overflow(x, y, &r))
				goto overflow;
			return new_number(ps, fl, r, fx + fy);
		case '-':
			if (!fl && __builtin_sub_overflow(x, y, &r))
				goto overflow;
			return new_number(ps, fl, r, fx - fy);
		case '*':
			if (!fl && __builtin_mul_overflow(x, y, &r))
				goto overflow;
			return new_number(ps, fl, r, fx * fy);
		case '/':
			if (fy == 0) {
				*why = fl ? "float division by zero"
					  : "division by zero";
				return NULL;
			}
			return new_number(ps, 1, 0, fx / fy);
		}
	}
	if (op == '+' && a->kind == b->kind &&
	    (a->kind == CFG_STR || a->kind == CFG_SEQ)) {
		struct cfg_node *n;

		if (a->kind == CFG_STR) {
			struct strbuf s = INTERP_TEXT_INIT;
			struct val v = { 0 };

			strbuf_addstr(&s, a->text);
			strbuf_addstr(&s, b->text);
			return ps_own_str(ps, &s, &v) ? NULL : v.n;
		}
		if (!(n = ps_site_node(ps, CFG_SEQ)) ||
		    append_copies(ps, n, a) || append_copies(ps, n, b))
			return NULL;
		return n;
	}
	if (op == '*' && (a->kind == CFG_STR || a->kind == CFG_SEQ) &&
	    is_intlike(b))
		return repeat(ps, a, as_int(b), ref, ref_len);
	if (op == '*' && (b->kind == CFG_STR || b->kind == CFG_SEQ) &&
	    is_intlike(a))
		return repeat(ps, b, as_int(a), ref, ref_len);
	if (op == '*' && (a->kind == CFG_STR || a->kind == CFG_SEQ ||
			  b->kind == CFG_STR || b->kind == CFG_SEQ) &&
	    (a->kind == CFG_FLOAT || b->kind == CFG_FLOAT)) {
		*why = "can't multiply sequence by non-int of type 'float'";
		return NULL;
	}
	*why = "unsupported operand types";
	return NULL;
overflow:
	interp_report_ref(ps->c, ref, ref_len, "GT114", "'%.*s' overflows a "
			  "64-bit integer (Python would switch to a big "
			  "integer)", (int)ref_len, ref);
	return NULL;
}

/* b > a, as Python compares numbers and strings; -1 when it cannot. */
static int greater(const struct cfg_node *b, const struct cfg_node *a)
{
	if (is_intlike(a) && is_intlike(b))
		return as_int(b) > as_int(a);
	if (is_num(a) && is_num(b))
		return as_float(b) > as_float(a);
	if (a->kind == CFG_STR && b->kind == CFG_STR)
		return strcmp(b->text, a->text) > 0;
	return -1;
}

int py_equal(const struct cfg_node *a, const struct cfg_node *b)
{
	if (is_num(a) && is_num(b)) {
		if (is_intlike(a) && is_intlike(b))
			return as_int(a) == as_int(b);
		return as_float(a) == as_float(b);
	}
	if (a->kind != b->kind)
		return 0;
	switch (a->kind) {
	case CFG_NULL: return 1;
	case CFG_STR: return strcmp(a->text, b->text) == 0;
	case CFG_SEQ:
		if (a->n != b->n)
			return 0;
		for (size_t i = 0; i < a->n; i++)
			if (!py_equal(a->kids[i], b->kids[i]))
				return 0;
		return 1;
	case CFG_MAP:
		if (a->n != b->n)
			return 0;
		for (size_t i = 0; i < a->n; i++) {
			const struct cfg_node *o = cfg_get(b, a->kids[i]->key);

			if (!o || !py_equal(a->kids[i], o))
				return 0;
		}
		return 1;
	default:
		return 0;
	}
}

/* ---- resolvers ----------------------------------------------------------- */

static const char *const known_resolvers =
	"NeMo-RL registers add, sub, mul, div and max; OmegaConf provides "
	"oc.env";

static int call_env(struct ps *ps, struct vals *args, const char *ref,
		    size_t ref_len, struct val *out)
{
	const char *value;
	struct diag *d;

	if (args->n < 1 || args->n > 2) {
		d = interp_report_ref(ps->c, ref, ref_len, "GT114", "'%.*s': "
				      "oc.env takes a variable name and an "
				      "optional default, not %zu arguments",
				      (int)ref_len, ref, args->n);
		diag_hint(d, "write ${oc.env:VAR} or ${oc.env:VAR,default}");
		return ps_fail(ps, R_FAIL);
	}
	if (args->v[0].n->kind != CFG_STR) {
		interp_report_ref(ps->c, ref, ref_len, "GT114", "'%.*s': the "
				  "variable name must be a string, not %s",
				  (int)ref_len, ref, py_type(args->v[0].n));
		return ps_fail(ps, R_FAIL);
	}
	value = getenv(args->v[0].n->text);
	if (!value && args->n == 2 && args->v[1].n->kind == CFG_NULL) {
		out->n = ps_site_node(ps, CFG_NULL);
		out->own = 1;
		return out->n ? 0 : ps_fail(ps, R_FAIL);
	}
	if (value || args->n == 2) {
		/* oc.env gives strings: the value, or str(default) */
		struct strbuf b = INTERP_TEXT_INIT;

		if (value)
			strbuf_addstr(&b, value);
		else
			py_str(&b, args->v[1].n, 0);
		return ps_own_str(ps, &b, out);
	}
	d = interp_report_ref(ps->c, ref, ref_len, "GT113", "environment "
			      "variable '%s' is not set here; '%.*s' is left "
			      "unresolved", args->v[0].n->text, (int)ref_len,
			      ref);
	diag_hint(d, "set %s where the run is launched, or give a default: "
		  "${oc.env:%s,default}", args->v[0].n->text,
		  args->v[0].n->text);
	return ps_fail(ps, R_ENV);
}

int interp_call_resolver(struct ps *ps, const char *name, struct vals *args,
			 const char *ref, size_t ref_len, struct val *out)
{
	static const char *const ops[] = { "add", "sub", "mul", "div", "max" };
	static const char opc[] = "+-*/m";
	const struct cfg_node *a, *b;
	struct cfg_node *res = NULL;
	const char *why = NULL;
	struct diag *d;
	int op = -1;

	if (strcmp(name, "oc.env") == 0)
		return call_env(ps, args, ref, ref_len, out);
	for (int i = 0; i < 5; i++)
		if (strcmp(name, ops[i]) == 0)
			op = i;
	if (op < 0) {
		d = interp_report_ref(ps->c, ref, ref_len, "GT112",
				      strncmp(name, "oc.", 3) == 0
				      ? "gtplan does not evaluate OmegaConf's "
					"resolver '%s' (in '%.*s')"
				      : "unknown resolver '%s' in '%.*s'",
				      name, (int)ref_len, ref);
		diag_hint(d, "%s", known_resolvers);
		return ps_fail(ps, R_FAIL);
	}
	if (args->n != 2) {
		d = interp_report_ref(ps->c, ref, ref_len, "GT114",
				      "'%.*s': %s takes 2 arguments, not %zu",
				      (int)ref_len, ref, name, args->n);
		diag_hint(d, "write ${%s:x,y}; a trailing comma adds an empty "
			  "argument", name);
		return ps_fail(ps, R_FAIL);
	}
	a = args->v[0].n;
	b = args->v[1].n;
	if (opc[op] == 'm') {
		int gt = greater(b, a);
		struct val *win;

		if (gt < 0) {
			interp_report_ref(ps->c, ref, ref_len, "GT114",
					  "'%.*s': cannot compare %s with %s",
					  (int)ref_len, ref, py_type(b),
					  py_type(a));
			return ps_fail(ps, R_FAIL);
		}
		win = &args->v[gt];
		*out = *win;
		win->n = NULL;
		win->own = 0;
		return 0;
	}
	res = arith(ps, opc[op], a, b, &why, ref, ref_len);
	if (res) {
		out->n = res;
		out->own = 1;
		return 0;
	}
	if (why) {
		d = interp_report_ref(ps->c, ref, ref_len, "GT114",
				      "'%.*s': %s (%s %c %s in Python)",
				      (int)ref_len, ref, why, py_type(a),
				      opc[op], py_type(b));
		diag_hint(d, "add, sub, mul, div and max take two numbers; mul "
			  "also repeats a string or list by an integer; div "
			  "always gives a float");
	}
	return ps_fail(ps, R_FAIL);
}
