/*
 * yaml_doc: a data file of the planner (data/models.yaml, read by
 * model_catalog_load.c; data/hardware.yaml, read by hardware.c) as
 * libyaml's document, walked node by node so that a refusal names the
 * place: "FILE:LINE:COL: what".
 *
 * The data ships with the binary (embedded at build time), so a
 * malformed file is a defect of the build that the tests catch; the
 * readers still check every node they take.
 *
 * Ownership: struct ydoc owns its document after ydoc_load succeeds
 * (ydoc_release frees it); the nodes it hands out are borrowed from it.
 * err is the caller's buffer.
 */
#ifndef GTPLAN_YAML_DOC_H
#define GTPLAN_YAML_DOC_H

#include <stddef.h>

#include <jansson.h>
#include <yaml.h>

struct ydoc {
	yaml_document_t doc;
	const char *file;   /* the name messages start with */
	char *err;
	size_t elen;
};

/* Loads text (len bytes) as one YAML document. Returns 0, or -1 with
 * "FILE:LINE:COL: libyaml's problem" in err (nothing to release). */
int ydoc_load(struct ydoc *d, const char *file, const char *text,
	      size_t len, char *err, size_t elen);
void ydoc_release(struct ydoc *d);

/* "FILE:LINE:COL: what[ arg]" at node n (0:0 when n is NULL) into err;
 * returns -1. */
int ydoc_fail(struct ydoc *d, const yaml_node_t *n, const char *what,
	      const char *arg);

/* The node of id, or NULL. */
yaml_node_t *ydoc_node(struct ydoc *d, int id);
/* map[key]'s value node; NULL when absent or map is not a mapping. */
yaml_node_t *ydoc_child(struct ydoc *d, const yaml_node_t *map,
			const char *key);
/* A scalar's value as YAML's core schema types plain (unquoted) text:
 * null, true/false, integers, reals; anything quoted is a string. NULL
 * when out of memory. */
json_t *ydoc_scalar(const yaml_node_t *n);

#endif
