/*
 * Override tests: Hydra's key=value, +key=value, ++key=value, ~key and
 * ~key=value on a struct-mode config (as NeMo-RL's parse_hydra_overrides
 * applies them), Hydra's value grammar, and every error with its exact
 * position on the "command line" source.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "harness.h"

static const char *const base_yaml =
	"policy:\n"
	"  model_name: llama\n"
	"  max_total_sequence_length: 1024\n"
	"  megatron_cfg:\n"
	"    tensor_model_parallel_size: 2\n"
	"  generation:\n"
	"    temperature: 1.0\n"
	"    top_p: 0.9\n"
	"  lst: [1, 2, 3]\n"
	"  nothing: null\n"
	"  flag: true\n"
	"cluster:\n"
	"  gpus_per_node: 8\n";

struct fx {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
};

static void fx_init(struct fx *f)
{
	char *text = strdup(base_yaml);

	ck_assert_ptr_nonnull(text);
	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	f->root = NULL;
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(base_yaml),
					&f->srcs, &f->diags, &f->root), 0);
}

static void fx_release(struct fx *f)
{
	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

/* Applies the NULL-terminated overrides; cfg_override's result. */
static int run(struct fx *f, const char *const *args)
{
	int n = 0;

	while (args[n])
		n++;
	return cfg_override(f->root, n, (char *const *)args, &f->srcs,
			    &f->diags);
}

#define OV(f, ...) run(f, (const char *const[]){ __VA_ARGS__, NULL })

static const struct cfg_node *at(const struct fx *f, const char *path)
{
	const struct cfg_node *n = cfg_path(f->root, path);

	ck_assert_msg(n != NULL, "no node at '%s'", path);
	return n;
}

static const struct diag *find(const struct fx *f, const char *code)
{
	for (size_t i = 0; i < f->diags.n; i++)
		if (strcmp(diag_code(&f->diags.v[i]), code) == 0)
			return &f->diags.v[i];
	return NULL;
}

/* Asserts the only finding is `code` at 1:col of the command line, with
 * `part` in its message. */
static void ck_only(const struct fx *f, const char *code, int col,
		    const char *part)
{
	const struct diag *d = find(f, code);

	ck_assert_msg(d != NULL, "no %s", code);
	ck_assert_uint_eq(f->diags.n, 1);
	ck_assert_str_eq(src_name(&f->srcs, d->loc.src), SRC_CMDLINE);
	ck_assert_int_eq(d->loc.line, 1);
	ck_assert_int_eq(d->loc.col, col);
	ck_assert_msg(strstr(d->msg, part), "'%s' not in '%s'", part, d->msg);
}

START_TEST(command_line_source_and_marks)
{
	struct fx f;
	const char *line;
	size_t len;
	int src;

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "policy.model_name=qwen", "+extra=x"), 0);
	src = at(&f, "extra")->loc.src;
	ck_assert_str_eq(src_name(&f.srcs, src), SRC_CMDLINE);
	ck_assert_int_eq(src_line(&f.srcs, src, 1, &line, &len), 0);
	ck_assert_int_eq((int)len, 31);
	ck_assert(strncmp(line, "policy.model_name=qwen +extra=x", len) == 0);
	ck_assert_int_eq(at(&f, "policy.model_name")->loc.col, 19);
	ck_assert_int_eq(at(&f, "policy.model_name")->key_loc.col, 1);
	ck_assert_int_eq(at(&f, "extra")->loc.col, 31);
	ck_assert_int_eq(at(&f, "extra")->key_loc.col, 25);
	/* untouched nodes keep their YAML marks */
	ck_assert_int_ne(at(&f, "cluster.gpus_per_node")->loc.src, src);
	fx_release(&f);

	fx_init(&f);
	ck_assert_int_eq(cfg_override(f.root, 0, NULL, &f.srcs, &f.diags), 0);
	ck_assert_uint_eq(f.srcs.n, 1); /* nothing registered */
	fx_release(&f);
}
END_TEST

START_TEST(columns_count_code_points)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "policy.model_name='h\xc3\xa9llo'", "nope=1"),
			 -1);
	ck_assert_str_eq(at(&f, "policy.model_name")->text, "h\xc3\xa9llo");
	/* "policy.model_name='héllo'" is 25 code points */
	ck_only(&f, "GT121", 27, "'nope'");
	fx_release(&f);
}
END_TEST

START_TEST(change_existing_keys)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(OV(&f,
		"policy.megatron_cfg.tensor_model_parallel_size=4",
		"policy.generation={temperature: 0.5}",
		"policy.lst=[7]",
		"policy.model_name=5",
		"cluster={gpus_per_node: 4}",
		"policy.flag=null",
		"policy.lst.0=9"), 0);
	ck_assert_int_eq(at(&f, "policy.megatron_cfg."
			    "tensor_model_parallel_size")->v.i, 4);
	/* a map merges: top_p stays */
	ck_assert_double_eq(at(&f, "policy.generation.temperature")->v.f, 0.5);
	ck_assert_double_eq(at(&f, "policy.generation.top_p")->v.f, 0.9);
	/* a list replaces */
	ck_assert_uint_eq(at(&f, "policy.lst")->n, 1);
	ck_assert_int_eq(at(&f, "policy.lst.0")->v.i, 9);
	ck_assert_int_eq(at(&f, "policy.model_name")->kind, CFG_INT);
	ck_assert_int_eq(at(&f, "cluster.gpus_per_node")->v.i, 4);
	ck_assert_int_eq(at(&f, "policy.flag")->kind, CFG_NULL);
	ck_assert_uint_eq(f.diags.n, 0);
	fx_release(&f);
}
END_TEST

START_TEST(value_types_follow_hydra)
{
	static const struct {
		const char *value;
		enum cfg_kind kind;
		const char *text; /* CFG_STR: the string */
		double num;
	} cases[] = {
		{ "4", CFG_INT, NULL, 4 },
		{ "-20", CFG_INT, NULL, -20 },
		{ "1_000", CFG_INT, NULL, 1000 },
		{ "1e-5", CFG_FLOAT, NULL, 1e-5 },
		{ "3.", CFG_FLOAT, NULL, 3 },
		{ ".5", CFG_FLOAT, NULL, 0.5 },
		{ "-inf", CFG_FLOAT, NULL, -INFINITY },
		{ "TrUe", CFG_BOOL, NULL, 1 },
		{ "false", CFG_BOOL, NULL, 0 },
		{ "NULL", CFG_NULL, NULL, 0 },
		{ "", CFG_STR, "", 0 },
		{ "010", CFG_STR, "010", 0 },
		{ "0x10", CFG_STR, "0x10", 0 },
		{ "1.2.3", CFG_STR, "1.2.3", 0 },
		{ "nullx", CFG_STR, "nullx", 0 },
		{ "hello world", CFG_STR, "hello world", 0 },
		{ "  lead", CFG_STR, "lead", 0 },
		{ "trail  ", CFG_STR, "trail", 0 },
		{ "meta-llama/Llama-3.1-8B", CFG_STR, "meta-llama/Llama-3.1-8B", 0 },
		{ "http://host:8000/x", CFG_STR, "http://host:8000/x", 0 },
		{ "'quoted, [text]'", CFG_STR, "quoted, [text]", 0 },
		{ "\"say \\\"hi\\\"\"", CFG_STR, "say \"hi\"", 0 },
		{ "'it\\'s'", CFG_STR, "it's", 0 },
		{ "'4'", CFG_STR, "4", 0 },
		{ "a\\,b\\ c", CFG_STR, "a,b c", 0 },
		{ "$HOME%x*y@z?", CFG_STR, "$HOME%x*y@z?", 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct fx f;
		char arg[128];
		const struct cfg_node *n;

		snprintf(arg, sizeof(arg), "++v=%s", cases[i].value);
		fx_init(&f);
		ck_assert_msg(OV(&f, arg) == 0, "%s", arg);
		n = at(&f, "v");
		ck_assert_msg(n->kind == cases[i].kind, "%s: %s", arg,
			      cfg_kind_name(n->kind));
		if (n->kind == CFG_STR)
			ck_assert_str_eq(n->text, cases[i].text);
		else if (n->kind == CFG_INT)
			ck_assert_int_eq(n->v.i, (long long)cases[i].num);
		else if (n->kind == CFG_FLOAT)
			ck_assert_double_eq(n->v.f, cases[i].num);
		else if (n->kind == CFG_BOOL)
			ck_assert_int_eq(n->v.b, (int)cases[i].num);
		ck_assert(!n->interp);
		fx_release(&f);
	}
}
END_TEST

START_TEST(containers_in_values)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "+a=[1, 'x', [true, null], {k: 2.5}]",
			    "+b={x: 1, y: {z: [a,b]}, w: 'q'}", "+c=[]",
			    "+d={}"), 0);
	ck_assert_uint_eq(at(&f, "a")->n, 4);
	ck_assert_int_eq(at(&f, "a.0")->v.i, 1);
	ck_assert_str_eq(at(&f, "a.1")->text, "x");
	ck_assert_int_eq(at(&f, "a.2.1")->kind, CFG_NULL);
	ck_assert_double_eq(at(&f, "a.3.k")->v.f, 2.5);
	ck_assert_str_eq(at(&f, "b.y.z.1")->text, "b");
	ck_assert_str_eq(at(&f, "b.w")->text, "q");
	ck_assert_uint_eq(at(&f, "c")->n, 0);
	ck_assert_int_eq(at(&f, "d")->kind, CFG_MAP);
	/* elements are located on the command line */
	ck_assert_int_eq(at(&f, "a.1")->loc.col, 8);
	ck_assert_int_eq(at(&f, "b.x")->key_loc.col, 41);
	ck_assert_int_eq(at(&f, "b.x")->loc.col, 44);
	fx_release(&f);
}
END_TEST

START_TEST(add_creates_sections)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "+new.deep.key=1", "+policy.nothing=2",
			    "+policy.generation={top_k: 5}",
			    "+policy.model_name.x=3"), 0);
	ck_assert_int_eq(at(&f, "new.deep.key")->v.i, 1);
	ck_assert_int_eq(at(&f, "new")->key_loc.col, 2);
	ck_assert_int_eq(at(&f, "policy.nothing")->v.i, 2); /* null: absent */
	ck_assert_int_eq(at(&f, "policy.generation.top_k")->v.i, 5);
	ck_assert_double_eq(at(&f, "policy.generation.top_p")->v.f, 0.9);
	/* a scalar in the way becomes a map, as OmegaConf.update does */
	ck_assert_int_eq(at(&f, "policy.model_name.x")->v.i, 3);
	fx_release(&f);
}
END_TEST

START_TEST(add_existing_key_is_an_error)
{
	struct fx f;
	const struct diag *d;

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "a=1", "+policy.model_name=x"), -1);
	/* a=1 fails too; look at the + one */
	fx_release(&f);

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "+policy.model_name=x"), -1);
	ck_only(&f, "GT122", 2, "'policy.model_name', which already exists");
	d = find(&f, "GT122");
	ck_assert_ptr_nonnull(strstr(d->hint, "policy.model_name=x"));
	ck_assert_ptr_nonnull(strstr(d->hint, "++"));
	ck_assert_str_eq(at(&f, "policy.model_name")->text, "llama");
	fx_release(&f);
}
END_TEST

START_TEST(force_add_adds_or_changes)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "++policy.model_name=qwen", "++x.y=1",
			    "++policy.generation={top_k: 5, temperature: 0}"),
			 0);
	ck_assert_str_eq(at(&f, "policy.model_name")->text, "qwen");
	ck_assert_int_eq(at(&f, "x.y")->v.i, 1);
	ck_assert_int_eq(at(&f, "policy.generation.top_k")->v.i, 5);
	ck_assert_int_eq(at(&f, "policy.generation.temperature")->v.i, 0);
	ck_assert_uint_eq(f.diags.n, 0);
	fx_release(&f);
}
END_TEST

START_TEST(delete_keys)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "~policy.lst", "~policy.max_total_sequence_"
			    "length=1024.0", "~policy.flag=1",
			    "~policy.generation={top_p: 0.9, temperature: 1}",
			    "~policy.model_name=llama",
			    "~cluster.gpus_per_node=null"), 0);
	ck_assert_ptr_null(cfg_path(f.root, "policy.lst"));
	ck_assert_ptr_null(cfg_path(f.root, "policy.max_total_sequence_length"));
	ck_assert_ptr_null(cfg_path(f.root, "policy.flag"));
	ck_assert_ptr_null(cfg_path(f.root, "policy.generation"));
	ck_assert_ptr_null(cfg_path(f.root, "policy.model_name"));
	ck_assert_ptr_null(cfg_path(f.root, "cluster.gpus_per_node"));
	fx_release(&f);
}
END_TEST

START_TEST(delete_errors)
{
	static const struct {
		const char *arg;
		int col;
		const char *part;
	} cases[] = {
		{ "~policy.nope", 2, "which does not exist" },
		{ "~policy.model_name.x", 2, "'policy.model_name' is a string" },
		{ "~policy.nothing", 2, "which is null" },
		{ "~policy.lst.0", 2, "list item" },
		{ "~cluster.gpus_per_node=7", 24, "only if it is '7', but it is 8" },
		{ "~policy.model_name=qwen", 20, "but it is llama" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct fx f;

		fx_init(&f);
		ck_assert_int_eq(OV(&f, cases[i].arg), -1);
		ck_only(&f, "GT123", cases[i].col, cases[i].part);
		fx_release(&f);
	}
}
END_TEST

START_TEST(missing_key_is_an_error)
{
	struct fx f;
	const struct diag *d;

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "cluster.gpus_per_node=4",
			    "policy.max_total_sequence_lenght=2048"), -1);
	ck_only(&f, "GT121", 25, "'policy.max_total_sequence_lenght'");
	d = find(&f, "GT121");
	ck_assert_str_eq(d->path, "policy.max_total_sequence_lenght");
	ck_assert_ptr_nonnull(strstr(d->hint,
		"did you mean 'policy.max_total_sequence_length'"));
	ck_assert_ptr_nonnull(strstr(d->hint,
		"+policy.max_total_sequence_lenght=2048"));
	ck_assert_int_eq(at(&f, "cluster.gpus_per_node")->v.i, 4);
	fx_release(&f);

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "zzz.y=1"), -1);
	ck_only(&f, "GT121", 1, "changes 'zzz', which is not in the config");
	ck_assert_ptr_nonnull(strstr(find(&f, "GT121")->hint, "+zzz.y=1"));
	fx_release(&f);

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "policy.model_name.x=1"), -1);
	ck_only(&f, "GT121", 1, "'policy.model_name' is a string, not a map");
	fx_release(&f);

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "policy.lst.3=1"), -1);
	ck_only(&f, "GT121", 1, "not an item of the list");
	ck_assert_ptr_nonnull(strstr(find(&f, "GT121")->hint, "3 items"));
	fx_release(&f);
}
END_TEST

START_TEST(struct_mode_merge)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "policy.generation={top_k: 1}"), -1);
	ck_only(&f, "GT121", 19, "'policy.generation.top_k'");
	ck_assert_ptr_nonnull(strstr(find(&f, "GT121")->hint, "++"));
	fx_release(&f);

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "policy.megatron_cfg=[1]"), -1);
	ck_only(&f, "GT120", 21, "merges a list into the map");
	fx_release(&f);

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "policy.generation={}"), 0);
	ck_assert_uint_eq(at(&f, "policy.generation")->n, 2);
	fx_release(&f);
}
END_TEST

START_TEST(syntax_errors)
{
	static const struct {
		const char *arg;
		int col;
		const char *part;
	} cases[] = {
		{ "policy", 1, "has no '='" },
		{ "+policy", 1, "has no '='" },
		{ "=5", 1, "an empty key" },
		{ "+=5", 2, "an empty key" },
		{ "~", 2, "an empty key" },
		{ "a..b=1", 1, "an empty key part" },
		{ "a.=1", 1, "an empty key part" },
		{ "x.y-z=1", 1, "cannot be in a key" },
		{ "db/mysql=1", 1, "config group" },
		{ "a@pkg=1", 1, "config group" },
		{ "0=1", 1, "only a list index" },
		{ "a b=1", 1, "cannot be in a key" },
		{ "a=[1,2", 3, "expected ',' or ']'" },
		{ "a={x 1}", 3, "expected ':'" },
		{ "a={x: 1", 3, "expected ',' or '}'" },
		{ "a=1,2", 3, "is a sweep" },
		{ "a=choice(1,2)", 3, "a function call" },
		{ "a=int (3)", 3, "a function call" },
		{ "a='abc", 3, "unterminated quoted string" },
		{ "a=${x", 3, "unterminated ${" },
		{ "a=b=c", 3, "must be quoted" },
		{ "a=x(y)", 3, "a function call" },
		{ "a=ab'c'", 3, "a quote inside" },
		{ "a=\xc3\xa9", 3, "must be quoted" },
		{ "a=[1]x", 3, "unexpected text" },
		{ "a=99999999999999999999", 3, "64 bits" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct fx f;
		const struct diag *d;

		fx_init(&f);
		ck_assert_msg(OV(&f, cases[i].arg) == -1, "%s", cases[i].arg);
		d = find(&f, "GT120");
		ck_assert_msg(d != NULL, "%s: no GT120", cases[i].arg);
		ck_assert_msg(d->loc.col == cases[i].col, "%s: col %d",
			      cases[i].arg, d->loc.col);
		ck_assert_msg(strstr(d->msg, cases[i].part), "%s: '%s'",
			      cases[i].arg, d->msg);
		ck_assert_uint_eq(f.diags.n, 1);
		fx_release(&f);
	}
}
END_TEST

START_TEST(interpolation_in_values)
{
	struct fx f;
	const struct diag *d;

	fx_init(&f);
	ck_assert_int_eq(OV(&f,
		"policy.model_name=${policy.megatron_cfg.tensor_model_"
		"parallel_size}",
		"+name=run-${policy.max_total_sequence_length}/x",
		"+twice='${mul:${policy.megatron_cfg.tensor_model_parallel_"
		"size},2}'",
		"+tp=${.policy.megatron_cfg.tensor_model_parallel_size}"), 0);
	ck_assert(at(&f, "policy.model_name")->interp);
	ck_assert_str_eq(at(&f, "name")->text,
			 "run-${policy.max_total_sequence_length}/x");
	ck_assert(at(&f, "twice")->interp);
	ck_assert_int_eq(cfg_resolve(f.root, &f.srcs, &f.diags), 0);
	ck_assert_int_eq(at(&f, "policy.model_name")->v.i, 2);
	ck_assert_str_eq(at(&f, "name")->text, "run-1024/x");
	ck_assert_int_eq(at(&f, "twice")->v.i, 4);
	ck_assert_int_eq(at(&f, "tp")->v.i, 2);
	/* the resolved value still points at the command line */
	ck_assert_str_eq(src_name(&f.srcs, at(&f, "twice")->loc.src),
			 SRC_CMDLINE);
	fx_release(&f);

	/* Hydra ends an unquoted ${...} at the first '}' */
	fx_init(&f);
	ck_assert_int_eq(OV(&f, "x=${mul:${policy.lst.0},2}"), -1);
	ck_only(&f, "GT120", 3, "sweep");
	d = find(&f, "GT120");
	ck_assert_ptr_nonnull(strstr(d->hint, "quote"));
	fx_release(&f);
}
END_TEST

START_TEST(errors_do_not_stop_later_overrides)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(OV(&f, "nope=1", "cluster.gpus_per_node=2", "=x",
			    "+policy.model_name=y"), -1);
	ck_assert_uint_eq(f.diags.n, 3);
	ck_assert_int_eq(f.diags.v[0].loc.col, 1);
	ck_assert_int_eq(f.diags.v[1].loc.col, 32);
	ck_assert_int_eq(f.diags.v[2].loc.col, 36);
	ck_assert_int_eq(at(&f, "cluster.gpus_per_node")->v.i, 2);
	fx_release(&f);
}
END_TEST

START_TEST(nesting_limit)
{
	struct fx f;
	char arg[2 * CFG_MAX_DEPTH + 16], *p = arg;

	p += sprintf(p, "+deep=");
	for (int i = 0; i <= CFG_MAX_DEPTH; i++)
		*p++ = '[';
	for (int i = 0; i <= CFG_MAX_DEPTH; i++)
		*p++ = ']';
	*p = '\0';
	fx_init(&f);
	ck_assert_int_eq(OV(&f, arg), -1);
	ck_only(&f, "GT103", 7, "nests more than 64 levels");
	ck_assert_ptr_null(cfg_path(f.root, "deep"));
	fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "cmdline_source", command_line_source_and_marks },
		{ "code_points", columns_count_code_points },
		{ "change", change_existing_keys },
		{ "value_types", value_types_follow_hydra },
		{ "containers", containers_in_values },
		{ "add", add_creates_sections },
		{ "add_exists", add_existing_key_is_an_error },
		{ "force_add", force_add_adds_or_changes },
		{ "delete", delete_keys },
		{ "delete_errors", delete_errors },
		{ "missing_key", missing_key_is_an_error },
		{ "struct_merge", struct_mode_merge },
		{ "syntax", syntax_errors },
		{ "interpolation", interpolation_in_values },
		{ "keep_going", errors_do_not_stop_later_overrides },
		{ "nesting_limit", nesting_limit },
	};

	return RUN_CASES("cfg_override", cases, 30);
}
