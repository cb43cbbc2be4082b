/*
 * fuzz_lint: libFuzzer harness over gtplan's whole lint path, as `gtplan
 * lint` runs it on one config: the YAML loader, interpolation, the schema
 * (with its size limits), the plan, every simulated call, and the text and
 * JSON reports. Built and run by `make fuzz` and tests/fuzz.sh with ASan +
 * UBSan; any crash, leak, overflow or timeout is a finding.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "plan.h"
#include "schema.h"
#include "simulate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink(void)
{
	static FILE *f;

	if (!f)
		f = fopen("/dev/null", "w");
	return f;
}

/* The simulator's work grows with the ranks (README's Limits: a world of
 * 2^20 ranks takes a few seconds in a release build, 25 times that under
 * the fuzzer's instrumentation), so worlds past this many ranks are planned
 * but not simulated here: the fuzzer looks for crashes, not for scale,
 * which tests/hostile.sh measures. */
#define FUZZ_SIM_MAX_WORLD 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root = NULL;
	struct plan p;
	struct sim_report sim;
	char *text = malloc(size + 1);
	int past_max = 0;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	plan_init(&p);
	sim_report_init(&sim);
	if (cfg_parse_text("fuzz.yaml", text, size, &srcs, &diags, &root) ||
	    cfg_resolve(root, &srcs, &diags) ||
	    schema_settle_config(root, &diags, &past_max) < 0 ||
	    past_max || plan_build(&p, root, "fuzz.yaml", &diags))
		goto report;
	if (p.world <= FUZZ_SIM_MAX_WORLD)
		sim_run(&p, root, NULL, &sim, &diags);
report:
	diag_sort(&diags);
	if (sink()) {
		diag_print_text(sink(), &diags, 0);
		diag_print_json(sink(), &diags);
	}
	sim_report_release(&sim);
	plan_release(&p);
	cfg_free(root);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return 0;
}
