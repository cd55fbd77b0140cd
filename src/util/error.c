/* The error convention (error.h): the thread's message, the caller-buffer form the helpers
 * use, and the mapping from errno to the library's codes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define SBX_ERROR_MAX 1024

static __thread char last_error[SBX_ERROR_MAX];

const char *sbx_last_error(void)
{
	return last_error;
}

void sbx_error_clear(void)
{
	last_error[0] = '\0';
}

int sbx_error_set(int code, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof last_error, fmt, ap);
	va_end(ap);
	errno = saved;
	return code < 0 ? code : -code;
}

int sbx_fail_buf(char *err, size_t errlen, int code, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	errno = saved;
	if (code == 0)
		return -SBX_EIO;
	return code < 0 ? code : -code;
}

int sbx_errno_code(int err)
{
	switch (err) {
	case EPERM: case ENOENT: case EIO: case E2BIG: case EBADF: case ENOMEM: case EACCES:
	case EBUSY: case EEXIST: case ENOTDIR: case EISDIR: case EINVAL: case EFBIG: case ENOSPC:
	case ENAMETOOLONG: case ENOSYS: case ENOTEMPTY: case ELOOP: case ETIMEDOUT:
		return -err;
	case EXDEV:
		return -SBX_EESCAPE;
	case EDQUOT:
		return -SBX_ENOSPC;
	case EROFS:
		return -SBX_EPERM;
	default:
		return -SBX_EIO;
	}
}

const char *sbx_strerror(int code)
{
	switch (code < 0 ? -code : code) {
	case SBX_OK: return "success";
	case SBX_EPERM: return "operation not permitted";
	case SBX_ENOENT: return "no such file, backend or object";
	case SBX_EIO: return "input/output error";
	case SBX_E2BIG: return "argument list or input too large";
	case SBX_EBADF: return "stream not open";
	case SBX_ENOMEM: return "out of memory";
	case SBX_EACCES: return "permission denied";
	case SBX_EBUSY: return "resource busy";
	case SBX_EEXIST: return "already exists";
	case SBX_ENOTDIR: return "not a directory";
	case SBX_EISDIR: return "is a directory";
	case SBX_EINVAL: return "invalid argument";
	case SBX_EFBIG: return "file too large";
	case SBX_ENOSPC: return "no space left";
	case SBX_ENAMETOOLONG: return "name too long";
	case SBX_ENOSYS: return "not supported by this backend or host";
	case SBX_ENOTEMPTY: return "directory not empty";
	case SBX_ELOOP: return "too many symbolic links";
	case SBX_ETIMEDOUT: return "timed out";
	case SBX_ECONFIG: return "invalid configuration";
	case SBX_EBACKEND: return "backend unavailable";
	case SBX_EESCAPE: return "path escapes the workspace";
	case SBX_EABI: return "incompatible plugin ABI version";
	case SBX_EPROTO: return "protocol error";
	case SBX_ESTATE: return "handle in the wrong state";
	default: return "unknown error";
	}
}
