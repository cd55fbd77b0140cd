/*
 * libagentsbx — isolated workspaces for AI-agent harnesses.
 *
 * The part every other public header builds on: conventions, SBX_API, error codes, the
 * library-wide calls and the workspace handle type. Most programs include
 * <agentsbx/agentsbx.h>, which includes every part.
 *
 * Conventions that hold for every function below unless its comment says otherwise:
 *  - Functions return 0 on success or a negative error code (-SBX_E...). The codes that have an
 *    errno twin use the errno's value, so -SBX_ENOENT == -ENOENT.
 *  - After a failure, sbx_last_error() returns a sentence that names what failed and why. The
 *    message is thread-local and stays valid until the next failing call on the same thread.
 *  - No function aborts, exits, or prints to the host's stdout or stderr.
 *  - Memory the library returns is released with sbx_free() (strings and buffers) or the
 *    type's own free function; never with the caller's free().
 *  - Option structs start with `size_t size`: set it to sizeof the struct you compiled against
 *    (each struct's SBX_*_OPTS_INIT does). The library reads only the fields that size covers,
 *    so newer fields can be appended without breaking old callers. Since 1.6 a struct larger
 *    than the library's (a program built against newer headers) is accepted only when every
 *    field the library does not know is zero, that is left at its default; otherwise the call
 *    fails with -SBX_EINVAL naming the struct, instead of silently dropping the setting. A size
 *    below sizeof(size_t) or above 4096 is refused the same way. A NULL options pointer means
 *    "all defaults".
 *  - Strings are NUL-terminated UTF-8. Paths handed to the file functions are either relative to
 *    the workspace root or absolute paths under sbx_workspace_root(); anything that resolves
 *    outside the root fails with -SBX_EESCAPE.
 *
 * Thread safety: a workspace handle may be used by several threads at once for sbx_exec,
 * sbx_exec_shell, sbx_process_spawn and the file functions. sbx_workspace_reset and
 * sbx_workspace_close must not run concurrently with any other call on the same workspace.
 * A process handle (sbx_process) belongs to one thread at a time. docs/threading.md has the
 * rule of every call.
 */
#ifndef AGENTSBX_COMMON_H
#define AGENTSBX_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <agentsbx/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SBX_API __attribute__((visibility("default")))
#else
#define SBX_API
#endif

/* The ABI version this header describes; compare with sbx_abi_version() at run time. */
#define SBX_ABI_VERSION 1

/* Error codes. Functions return their negation (-SBX_EINVAL). */
enum sbx_error {
	SBX_OK = 0,
	SBX_EPERM = 1,         /* operation not permitted (by the sandbox or the host) */
	SBX_ENOENT = 2,        /* no such file, backend, workspace or process */
	SBX_EIO = 5,           /* I/O error, or a helper process died unexpectedly */
	SBX_E2BIG = 7,         /* argument list, environment or input too large */
	SBX_EBADF = 9,         /* stream not open (stdin already closed, fd gone) */
	SBX_ENOMEM = 12,       /* out of memory */
	SBX_EACCES = 13,       /* permission denied */
	SBX_EBUSY = 16,        /* resource busy */
	SBX_EEXIST = 17,       /* already exists */
	SBX_ENOTDIR = 20,      /* a path component is not a directory */
	SBX_EISDIR = 21,       /* the path is a directory */
	SBX_EINVAL = 22,       /* invalid argument or configuration (the message names the field) */
	SBX_EFBIG = 27,        /* file too large */
	SBX_ENOSPC = 28,       /* no space left (quota reached) */
	SBX_ENAMETOOLONG = 36, /* path or name too long */
	SBX_ENOSYS = 38,       /* the backend or the host does not support this */
	SBX_ENOTEMPTY = 39,    /* directory not empty */
	SBX_ELOOP = 40,        /* too many symbolic links */
	SBX_ETIMEDOUT = 110,   /* a wait ran out of time */
	/* Library-specific codes, above the errno range. */
	SBX_ECONFIG = 1001,    /* the configuration JSON is malformed or has a bad value */
	SBX_EBACKEND = 1002,   /* the backend is unknown or cannot work on this host */
	SBX_EESCAPE = 1003,    /* a path resolves outside the workspace root */
	SBX_EABI = 1004,       /* a plugin was built for another ABI version */
	SBX_EPROTO = 1005,     /* a helper or remote service broke its protocol */
	SBX_ESTATE = 1006      /* the handle is in the wrong state (closed, already waited) */
};

/* ---------------------------------------------------------------------------------------
 * Library-wide
 * ------------------------------------------------------------------------------------- */

/* The library's version string ("1.7.0"): SBX_VERSION_STRING of the headers it was built
 * with. Static storage. */
SBX_API const char *sbx_version(void);

/* Since 1.6. The loaded library's version as SBX_VERSION_NUMBER encodes it (0x010600 for
 * 1.6.0): a program compares it with the SBX_VERSION_NUMBER it was compiled with, or
 * with SBX_VERSION_ENCODE(1, 6, 0), before it calls a function newer than the library. */
SBX_API int sbx_version_number(void);

/* The ABI version of the loaded library (SBX_ABI_VERSION it was built with). */
SBX_API int sbx_abi_version(void);

/* The message of the last failing call on this thread ("" if none). Valid until the next
 * failing call on this thread. */
SBX_API const char *sbx_last_error(void);

/* A generic description of an error code (positive or negative). Static storage. */
SBX_API const char *sbx_strerror(int code);

/* Releases a string or buffer the library returned. NULL is ignored. */
SBX_API void sbx_free(void *ptr);

/* Writes a JSON array describing every backend this library can reach (built-in and plugins
 * found in the plugin directories) and whether it can work on this host:
 *   [{"backend":"local","available":true,"detail":"...","network":["host"]}, ...]
 * where "network" lists the network modes the backend can enforce ("none", "allowlist",
 * "host"; only "host" means its commands always share the host's network). It is absent for
 * a plugin that could not be loaded.
 * *json_out is released with sbx_free(). */
SBX_API int sbx_backends_probe(char **json_out);

/* SBX_OPTS_INIT_(type): a value of an option struct with every field zero (its default) and
 * size set, behind each struct's SBX_*_OPTS_INIT: `sbx_exec_opts o = SBX_EXEC_OPTS_INIT;`.
 * C++ before C++20 has no designated initializers, so there a helper template makes the value;
 * either way no field is left out (-Wmissing-field-initializers stays quiet). */
#ifdef __cplusplus
#define SBX_OPTS_INIT_(type) (::sbx_opts_sized_<type>())
#else
#define SBX_OPTS_INIT_(type) { .size = sizeof(type) }
#endif

/* A workspace handle: sbx_workspace_open (<agentsbx/workspace.h>) makes one. Declared here
 * because every part of the API takes it. */
typedef struct sbx_workspace sbx_workspace;

#ifdef __cplusplus
}

template <typename T> inline T sbx_opts_sized_()
{
	T value = T();
	value.size = sizeof(T);
	return value;
}
#endif

#endif /* AGENTSBX_COMMON_H */
