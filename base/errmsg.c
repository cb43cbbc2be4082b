/*
 * errmsg: an error's text into the caller's buffer (errmsg.h).
 */
#include "errmsg.h"

#include <stdarg.h>
#include <stdio.h>

int errmsg_set(int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return rc;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}
