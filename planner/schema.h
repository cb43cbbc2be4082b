/*
 * schema: JSON Schema (draft 2020-12) checks applied to the config tree.
 *
 * gtplan validates a loaded config against schemas/config.schema.json, the
 * same file editors use for completion and hover text. The check runs on the
 * `struct cfg_node` tree itself, so every finding points at the file:line:col
 * where the value (or, for key findings, the key) was written, even when it
 * came from a parent file or the command line.
 *
 * Supported keywords (anything else that asserts is refused at load, so a
 * schema never silently checks less than it says):
 *   type (a name or a list; a YAML integer is also a "number", and a
 *   float with a zero fractional part is an "integer", as JSON Schema
 *   2020-12 has it: 48.0, up to 2^53; schema_ints.c), enum, const,
 *   minimum, maximum,
 *   exclusiveMinimum, exclusiveMaximum, multipleOf, minLength, maxLength,
 *   pattern (POSIX extended regex, unanchored), properties,
 *   patternProperties, additionalProperties (boolean or schema), required,
 *   minProperties, maxProperties, items (one schema), minItems, maxItems,
 *   allOf, anyOf, oneOf, not, $ref to a local JSON pointer ("#/$defs/x"),
 *   boolean schemas. Annotations (description, title, default, examples,
 *   format, $comment, ...) are read for messages and hints only.
 *
 * Editors see a recipe as written, gtplan after `defaults:` and `${...}`
 * are resolved. Two forms are for editors only: an anyOf branch
 * {"$ref": SCHEMA_INTERPOLATION} (a `${...}` string where a number goes)
 * and one {"$ref": SCHEMA_CHILD_RECIPE} (a file with `defaults:` need not
 * hold the keys its parents give). gtplan drops such branches at load, and
 * an anyOf left with one branch is merged into the schema that holds it,
 * so it checks resolved configs as if they were never there.
 *
 * Findings (rules.def): GT200 type, GT201 range, GT202 enum/const, GT203
 * unknown key one typo away from a declared key (a warning; only where the
 * schema declares `properties` and leaves the map open), GT204 required,
 * GT205 everything else, including an unknown key in a closed map
 * (additionalProperties: false), GT206 an integer written as a float
 * (valid, but Python gets a float: an error for Megatron's parallel
 * sizes, a warning for NeMo-RL's other keys, a note for gtplan's own).
 * Every finding carries the dotted config path and a hint.
 *
 * Ownership: a struct schema owns its parsed JSON and compiled patterns;
 * schema_free() releases everything. Validation never changes the tree.
 */
#ifndef GTPLAN_SCHEMA_H
#define GTPLAN_SCHEMA_H

#include <stddef.h>

#include "cfg.h"
#include "diag.h"

/* The editor-only forms (see above). */
#define SCHEMA_INTERPOLATION "#/$defs/interpolation"
#define SCHEMA_CHILD_RECIPE  "#/$defs/child_recipe"

/* Hostile-input limits. */
#define SCHEMA_MAX_DEPTH 256 /* nested schema applications for one check
				 ($ref cycles end here) */
#define SCHEMA_MAX_PATH  512 /* bytes of a config path kept for messages */
#define SCHEMA_MAX_SIZE  (1LL << 20) /* every size's "maximum" in
					 schemas/config.schema.json: the
					 world limit, PLAN_MAX_WORLD */

struct schema;

/* Parses a schema from `len` bytes of JSON text and checks that it uses
 * only supported keywords with well-formed values, that every $ref
 * resolves and that every pattern compiles. Returns the schema, or NULL
 * with a one-line reason in err (when errlen > 0). */
struct schema *schema_load(const char *text, size_t len, char *err,
			   size_t errlen);
void schema_free(struct schema *s);

/* Validates the config tree `root` against `s`, adding findings to diags.
 * Returns the number of errors found (warnings are not counted; nor is
 * GT206, a valid value), or -1 when out of memory; a NULL root is an
 * empty config with nothing to check (0). */
int schema_validate(const struct schema *s, const struct cfg_node *root,
		    struct diag_list *diags);

/* schema_validate() with gtplan's built-in copy of
 * schemas/config.schema.json. Returns the number of errors, or -1 when the
 * built-in schema itself cannot be loaded (a build problem; the reason is
 * printed on stderr). */
int schema_check_config(const struct cfg_node *root, struct diag_list *diags);
/* The same, and *past_max: how many integers it found above their
 * maximum (GT201). Every size of the config schema is at most
 * SCHEMA_MAX_SIZE, gtplan's world limit; a config with a larger one is
 * not planned (job.c), so no product of sizes is ever computed from it. */
int schema_check_config_limits(const struct cfg_node *root,
			       struct diag_list *diags, int *past_max);
/* schema_check_config_limits(), then every float it took as an integer
 * (GT206) becomes in the tree the integer node its value written without
 * the decimal point gives (kind, value and text), so that planning and
 * every rule read `tensor_model_parallel_size: 2.0` as they read `2`.
 * `gtplan config` shows the tree as written and does not settle. Returns
 * as schema_check_config_limits(), or -1 when out of memory. */
int schema_settle_config(struct cfg_node *root, struct diag_list *diags,
			 int *past_max);

/* The description the schema gives the key at a dotted config path
 * ("policy.megatron_cfg.tensor_model_parallel_size"; list items by index),
 * following $refs; NULL when the path is not described. Borrowed from s. */
const char *schema_description(const struct schema *s, const char *dotted);

#endif
