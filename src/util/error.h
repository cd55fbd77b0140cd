/* The one error convention of the library and the helpers: a failing function returns a
 * negative code (an errno value or an SBX_E* code, which share numbers: -SBX_ENOENT ==
 * -ENOENT) and leaves a one-line reason that names what failed. The reason goes to the thread's
 * message (sbx_fail, read back with sbx_last_error()), or, in code that must not touch that
 * message or that runs in a helper reporting over its own channel (the init's building blocks),
 * into a buffer the caller hands down (sbx_fail_buf). Nothing here prints or exits. */
#ifndef SBX_UTIL_ERROR_H
#define SBX_UTIL_ERROR_H

#include <stddef.h>
#include <agentsbx/backend.h>

/* Records the message and returns -abs(code). Same as the exported sbx_error_set(). */
#define sbx_fail sbx_error_set

/* Formats the reason into err (when err and errlen are given) and returns code forced
 * negative, -SBX_EIO for 0: a caller passing -errno after errno was clobbered to 0 still
 * reports a failure. errno is preserved. */
__attribute__((format(printf, 4, 5)))
int sbx_fail_buf(char *err, size_t errlen, int code, const char *fmt, ...);

/* Maps an errno value to the library's negative code (-SBX_EIO for ones without a twin). */
int sbx_errno_code(int err);

/* Clears the thread's message (used at the start of calls that may leave a stale one). */
void sbx_error_clear(void);

#endif
