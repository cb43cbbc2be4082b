/*
 * fuzz_load: libFuzzer harness over gtplan's config loader as cfg_load()
 * runs it on a file: the input is written to a file in a folder of its own
 * and loaded with `defaults:` inheritance (so an input may include itself,
 * its folder or a missing file), then resolved (${...}) and printed as
 * `gtplan config` prints it. Built and run by `make fuzz` and
 * tests/fuzz.sh with ASan + UBSan.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input's file, in a folder made once per process under $TMPDIR
 * (tests/fuzz.sh points it at a folder it removes). */
static const char *input_path(void)
{
	static char dir[512], path[544];

	if (!dir[0]) {
		const char *t = getenv("TMPDIR");

		snprintf(dir, sizeof(dir), "%s/gtplan-fuzz-XXXXXX",
			 t && *t ? t : "/tmp");
		if (!mkdtemp(dir))
			abort();
		snprintf(path, sizeof(path), "%s/config.yaml", dir);
	}
	return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = input_path();
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root = NULL;
	FILE *f = fopen(path, "wb"), *out;

	if (!f || fwrite(data, 1, size, f) != size || fclose(f))
		abort();
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	if (!cfg_load(path, &srcs, &diags, &root) &&
	    !cfg_resolve(root, &srcs, &diags) &&
	    (out = fopen("/dev/null", "w"))) {
		cfg_write_json(out, root);
		fclose(out);
	}
	cfg_free(root);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return 0;
}
