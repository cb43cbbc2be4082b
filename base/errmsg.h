/*
 * errmsg: an error's text into the caller's fixed buffer, for functions
 * that return a status and say why in `char *err, size_t errlen` (the
 * launcher, project files, lint's file list, rank order strings).
 *
 * Ownership: err is the caller's; nothing is allocated or kept.
 */
#ifndef GTPLAN_ERRMSG_H
#define GTPLAN_ERRMSG_H

#include <stddef.h>

/* Writes the message into err (cut to errlen - 1 bytes, NUL-terminated;
 * nothing when err is NULL or errlen 0) and returns rc, so that one line
 * reports and fails: `return errmsg_set(-1, err, errlen, "...", ...);`. */
int errmsg_set(int rc, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
