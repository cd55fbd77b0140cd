/* An LD_PRELOAD shim that makes a host process die at a chosen step of an atomic write, for
 * test_lifetimes.c (the way crun forces failures under its suite):
 *   SBX_TEST_CRASH_RENAME_TO=NAME  the process SIGKILLs itself when it is about to rename a
 *                                  temporary file (".<x>.sbx-XXXXXX") over NAME: the file is
 *                                  complete and named, the rename never happens;
 *   SBX_TEST_NO_TMPFILE=1          open(O_TMPFILE) fails with EOPNOTSUPP, as on a file system
 *                                  without unnamed files (the named way then). */
/* Both openat and openat64 are defined here: neither may be renamed to the other. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SHIM __attribute__((visibility("default")))

SHIM int openat64(int dirfd, const char *path, int flags, ...);

SHIM int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
	static int (*real)(int, const char *, int, const char *);
	const char *to = getenv("SBX_TEST_CRASH_RENAME_TO");

	if (to && strstr(oldpath, ".sbx-") && strcmp(newpath, to) == 0)
		kill(getpid(), SIGKILL);
	if (!real)
		real = (int (*)(int, const char *, int, const char *))dlsym(RTLD_NEXT, "renameat");
	return real(olddirfd, oldpath, newdirfd, newpath);
}

static int open_at(const char *which, int dirfd, const char *path, int flags, mode_t mode)
{
	int (*real)(int, const char *, int, ...) =
		(int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, which);

	if ((flags & O_TMPFILE) == O_TMPFILE && getenv("SBX_TEST_NO_TMPFILE")) {
		errno = EOPNOTSUPP;
		return -1;
	}
	return real(dirfd, path, flags, mode);
}

SHIM int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	return open_at("openat", dirfd, path, flags, mode);
}

SHIM int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	return open_at("openat64", dirfd, path, flags, mode);
}
