/*
 * rt_err: the status table and error messages of gtplan-run.
 */
#include "rt_err.h"

#include <stdarg.h>
#include <stdio.h>

static int err_rank = -1;

const char *rt_strerror(int code)
{
	switch (code) {
	case RT_OK:
		return "ok";
#define RT_MSG(name, val, msg) case name: return msg;
	RT_ERRORS(RT_MSG)
#undef RT_MSG
	}
	return "unknown error";
}

void rt_err_set_rank(int rank)
{
	err_rank = rank;
}

/* One write per message, so that the lines of several ranks sharing a
 * terminal do not interleave. */
static void emit(const char *prefix, const char *fmt, va_list ap)
{
	char msg[1024];
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);

	if (n < 0)
		snprintf(msg, sizeof(msg), "(unprintable message)");
	fprintf(stderr, "%s%s\n", prefix, msg);
}

static void vreport(const char *what, const char *fmt, va_list ap)
{
	char prefix[64];

	if (err_rank >= 0)
		snprintf(prefix, sizeof(prefix), "gtplan-run: rank %d: %s: ",
			 err_rank, what);
	else
		snprintf(prefix, sizeof(prefix), "gtplan-run: %s: ", what);
	emit(prefix, fmt, ap);
}

int rt_error(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("error", fmt, ap);
	va_end(ap);
	return code;
}

int rt_error_once(int code, const char *fmt, ...)
{
	va_list ap;

	if (err_rank > 0)
		return code;
	va_start(ap, fmt);
	emit("gtplan-run: error: ", fmt, ap);
	va_end(ap);
	return code;
}

void rt_note(const char *fmt, ...)
{
	va_list ap;

	if (err_rank > 0)
		return;
	va_start(ap, fmt);
	emit("gtplan-run: note: ", fmt, ap);
	va_end(ap);
}
