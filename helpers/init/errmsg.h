/* The one error path of the init's building blocks: write a one-line reason into the caller's
 * buffer and hand back the negative errno. None of these modules prints or exits. */
#ifndef SBX_INIT_ERRMSG_H
#define SBX_INIT_ERRMSG_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Formats the reason into err (when given) and returns code, forced negative so that a caller
 * passing -errno after errno was clobbered to 0 still reports a failure. */
__attribute__((format(printf, 4, 5)))
static inline int sbx_init_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	if (code > 0)
		return -code;
	return code < 0 ? code : -EIO;
}

#endif
