/* File descriptor headroom (fdlimit.h). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include <agentsbx/agentsbx.h>
#include "error.h"
#include "fdlimit.h"

/* Descriptors open in this process, or -1 when /proc/self/fd cannot be listed (then that
 * listing may itself have failed for want of a descriptor: the caller checks the limit). */
static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;     /* the listing's own */
}

int sbx_fd_headroom(const char *who, const char *step, int need_free, int need_limit)
{
	struct rlimit rl;
	long open, limit;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	limit = rl.rlim_cur > (rlim_t)1 << 30 ? 1L << 30 : (long)rl.rlim_cur;
	open = open_fds();
	if (limit >= need_limit && (open < 0 || limit - open >= need_free))
		return 0;
	if (open < 0)
		return sbx_fail(-SBX_EIO, "%s: too many open files to %s: this process may have %ld "
		                "file descriptors open (RLIMIT_NOFILE), and the sandbox's init, which "
		                "inherits the limit, needs %d; raise it (ulimit -n, setrlimit)", who,
		                step, limit, need_limit);
	return sbx_fail(-SBX_EIO, "%s: too many open files to %s: this process has %ld of its %ld "
	                "file descriptors (RLIMIT_NOFILE) open; that needs %d free here and a limit "
	                "of at least %d, which the sandbox's init inherits; raise the limit "
	                "(ulimit -n, setrlimit) or close some", who, step, open, limit, need_free,
	                need_limit);
}
