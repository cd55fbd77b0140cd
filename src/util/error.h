/* The one error path: record a thread-local message and return the negative code. */
#ifndef SBX_UTIL_ERROR_H
#define SBX_UTIL_ERROR_H

#include <agentsbx/backend.h>

/* Records the message and returns -abs(code). Same as the exported sbx_error_set(). */
#define sbx_fail sbx_error_set

/* Maps an errno value to the library's negative code (-SBX_EIO for ones without a twin). */
int sbx_errno_code(int err);

/* Clears the thread's message (used at the start of calls that may leave a stale one). */
void sbx_error_clear(void);

#endif
