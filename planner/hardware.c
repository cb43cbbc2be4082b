/*
 * hardware: data/hardware.txt's profiles (hardware.h).
 *
 * The format, line by line ('#' starts a comment line):
 *   gpu NAME                starts a profile
 *   FIELD VALUE             a number (or text for description, measured)
 *   attention HD FWD BWD    attention's TFLOP/s at head dim HD
 * Every numeric field is required, and at least one attention row.
 */
#include "hardware.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* data/hardware.txt, embedded at build time (scripts/embed.sh). */
extern const char gtplan_hardware_txt[];
extern const unsigned long gtplan_hardware_txt_len;

#define OFF(f) offsetof(struct hw_profile, f)

/* The numeric fields: name in the file, place in the profile, the largest
 * value that makes sense (efficiencies are fractions). */
static const struct {
	const char *key;
	size_t off;
	double max;
} fields[] = {
	{ "bf16_tflops", OFF(bf16_tflops), 1e6 },
	{ "gemm_efficiency", OFF(gemm_efficiency), 1 },
	{ "gemm_call_us", OFF(gemm_call_us), 1e6 },
	{ "hbm_gbps", OFF(hbm_gbps), 1e6 },
	{ "elementwise_efficiency",
	  OFF(mem_efficiency[HW_MEM_ELEMENTWISE]), 1 },
	{ "elementwise_call_us", OFF(mem_call_us[HW_MEM_ELEMENTWISE]), 1e6 },
	{ "copy_efficiency", OFF(mem_efficiency[HW_MEM_COPY]), 1 },
	{ "copy_call_us", OFF(mem_call_us[HW_MEM_COPY]), 1e6 },
	{ "optimizer_efficiency", OFF(mem_efficiency[HW_MEM_OPTIMIZER]), 1 },
	{ "optimizer_call_us", OFF(mem_call_us[HW_MEM_OPTIMIZER]), 1e6 },
	{ "launch_us", OFF(launch_us), 1e6 },
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

struct parse {
	const char *want;        /* the profile asked for */
	struct hw_profile *out;
	int in;                  /* inside the wanted profile */
	int found;
	int gpus;                /* gpu lines so far */
	unsigned seen;           /* bit per fields[] entry */
	unsigned line;
	char *err;
	size_t errlen;
};

static int fail(struct parse *ps, const char *what, const char *key)
{
	snprintf(ps->err, ps->errlen, "data/hardware.txt:%u: %s%s%s%s",
		 ps->line, what, key ? " '" : "", key ? key : "",
		 key ? "'" : "");
	return -1;
}

/* A finite number in [0, max] that fills the whole word. */
static int number(const char *s, double max, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return end == s || *end || errno || !isfinite(*v) || *v < 0 ||
	       *v > max ? -1 : 0;
}

static int attention_row(struct parse *ps, char *rest)
{
	struct hw_profile *hw = ps->out;
	char *a = strtok(rest, " \t"), *b = strtok(NULL, " \t");
	char *c = strtok(NULL, " \t");
	double hd, f, w;

	if (!a || !b || !c || strtok(NULL, " \t") ||
	    number(a, 1 << 20, &hd) || hd < 1 || hd != floor(hd) ||
	    number(b, 1e6, &f) || number(c, 1e6, &w) || f <= 0 || w <= 0)
		return fail(ps, "attention wants HEAD_DIM FWD_TFLOPS "
			    "BWD_TFLOPS, all positive", NULL);
	if (hw->n_attn == HW_MAX_ATTN)
		return fail(ps, "too many attention rows", NULL);
	hw->attn[hw->n_attn++] = (struct hw_attn){ (long long)hd, f, w };
	return 0;
}

static int text_field(struct parse *ps, char *dst, size_t n,
		      const char *rest)
{
	if (strlen(rest) >= n)
		return fail(ps, "text too long", NULL);
	memcpy(dst, rest, strlen(rest) + 1);
	return 0;
}

static int field(struct parse *ps, const char *key, char *rest)
{
	struct hw_profile *hw = ps->out;

	if (!strcmp(key, "attention"))
		return attention_row(ps, rest);
	if (!strcmp(key, "description"))
		return text_field(ps, hw->description,
				  sizeof(hw->description), rest);
	if (!strcmp(key, "measured"))
		return text_field(ps, hw->measured, sizeof(hw->measured),
				  rest);
	if (!strcmp(key, "source"))
		return 0;
	for (size_t i = 0; i < N_FIELDS; i++) {
		double v;

		if (strcmp(key, fields[i].key))
			continue;
		if (number(rest, fields[i].max, &v))
			return fail(ps, "bad value of", key);
		*(double *)((char *)hw + fields[i].off) = v;
		ps->seen |= 1u << i;
		return 0;
	}
	return fail(ps, "unknown field", key);
}

/* One line (key and rest split); the fields of other profiles are
 * skipped. */
static int line(struct parse *ps, const char *key, char *rest)
{
	if (strcmp(key, "gpu")) {
		if (!ps->gpus)
			return fail(ps, "a field before the first gpu line",
				    key);
		return ps->in ? field(ps, key, rest) : 0;
	}
	if (!*rest || strlen(rest) >= sizeof(ps->out->name))
		return fail(ps, "gpu wants a name of at most 31 characters",
			    NULL);
	ps->gpus++;
	ps->in = !ps->found && !strcmp(rest, ps->want);
	if (ps->in) {
		ps->found = 1;
		memset(ps->out, 0, sizeof(*ps->out));
		memcpy(ps->out->name, rest, strlen(rest) + 1);
	}
	return 0;
}

static int complete(struct parse *ps)
{
	if (!ps->found) {
		snprintf(ps->err, ps->errlen, "data/hardware.txt has no "
			 "profile '%s'", ps->want);
		return -1;
	}
	for (size_t i = 0; i < N_FIELDS; i++)
		if (!(ps->seen & (1u << i))) {
			snprintf(ps->err, ps->errlen, "data/hardware.txt: "
				 "profile '%s' lacks %s", ps->want,
				 fields[i].key);
			return -1;
		}
	if (!ps->out->n_attn || ps->out->bf16_tflops <= 0 ||
	    ps->out->gemm_efficiency <= 0 || ps->out->hbm_gbps <= 0) {
		snprintf(ps->err, ps->errlen, "data/hardware.txt: profile '%s' "
			 "needs an attention row and a positive peak, GEMM "
			 "efficiency and bandwidth", ps->want);
		return -1;
	}
	for (int c = 0; c < HW_MEM_CLASSES; c++)
		if (ps->out->mem_efficiency[c] <= 0) {
			snprintf(ps->err, ps->errlen, "data/hardware.txt: "
				 "profile '%s' has an efficiency of 0",
				 ps->want);
			return -1;
		}
	return 0;
}

int hw_profile_parse(const char *text, size_t len, const char *name,
		     struct hw_profile *out, char *err, size_t errlen)
{
	struct parse ps = { name, out, 0, 0, 0, 0, 0, err, errlen };
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		char buf[HW_LINE_MAX], *key, *rest;

		ps.line++;
		if (n >= sizeof(buf))
			return fail(&ps, "line too long", NULL);
		memcpy(buf, p, n);
		buf[n] = '\0';
		p += n + (nl != NULL);
		while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\r' ||
			     buf[n - 1] == '\t'))
			buf[--n] = '\0';
		key = buf + strspn(buf, " \t");
		if (!*key || *key == '#')
			continue;
		rest = key + strcspn(key, " \t");
		if (*rest)
			*rest++ = '\0';
		rest += strspn(rest, " \t");
		if (line(&ps, key, rest))
			return -1;
	}
	return complete(&ps);
}

int hw_profile_builtin(const char *name, struct hw_profile *out, char *err,
		       size_t errlen)
{
	return hw_profile_parse(gtplan_hardware_txt, gtplan_hardware_txt_len,
				name, out, err, errlen);
}

const char *hw_profile_default_name(void)
{
	static char name[32];
	const char *p = gtplan_hardware_txt;
	const char *end = p + gtplan_hardware_txt_len;

	if (name[0])
		return name;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);

		if (n > 4 && !strncmp(p, "gpu ", 4) && n - 4 < sizeof(name)) {
			memcpy(name, p + 4, n - 4);
			name[n - 4] = '\0';
			break;
		}
		p += n + (nl != NULL);
	}
	return name;
}

const struct hw_attn *hw_attn_at(const struct hw_profile *hw, long long hd)
{
	const struct hw_attn *best = &hw->attn[0];

	for (size_t i = 1; i < hw->n_attn; i++) {
		const struct hw_attn *a = &hw->attn[i];
		long long da = llabs(a->head_dim - hd);
		long long db = llabs(best->head_dim - hd);

		if (da < db || (da == db && a->head_dim < best->head_dim))
			best = a;
	}
	return best;
}
