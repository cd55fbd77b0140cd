/* The user namespace every other namespace of the sandbox belongs to.
 *
 * One id is mapped: the caller's own uid and gid, to the same numbers inside (real root: 0→0).
 * That is the only map an unprivileged process may write, and it keeps file ownership on the
 * workspace honest: what the sandbox creates belongs to the caller on the host. The other
 * namespaces are created by the same unshare() so that the user namespace owns them, which is
 * what later lets the sandbox's PID 1 mount proc, tmpfs and devpts, set the hostname and bring
 * up its loopback interface without any privilege on the host. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "init/errmsg.h"
#include "init/sandbox.h"
#include "util/cleanup.h"

/* /proc/self/{setgroups,uid_map,gid_map} take their content in a single write(2). */
static int write_proc_self(const char *name, const char *data, char *err, size_t errlen)
{
	char path[64];
	size_t len = strlen(data);
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof path, "/proc/self/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return sbx_init_fail(err, errlen, -errno, "open %s: %s", path, strerror(errno));
	do
		n = write(fd, data, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return sbx_init_fail(err, errlen, -errno, "write %s: %s", path, strerror(errno));
	if ((size_t)n != len)
		return sbx_init_fail(err, errlen, -EIO, "write %s: short write", path);
	return 0;
}

/* Why unshare(CLONE_NEWUSER) is refused is rarely obvious from the errno alone. */
static const char *userns_refusal_hint(int e)
{
	switch (e) {
	case EPERM:
		return " (user namespaces disabled for this process: AppArmor, seccomp in a container, "
		       "or kernel.unprivileged_userns_clone=0)";
	case ENOSPC:
		return " (user.max_user_namespaces reached, or nesting too deep)";
	case EINVAL:
		return " (the process is multi-threaded or in a chroot)";
	default:
		return "";
	}
}

/* Denying setgroups(2) is what makes the gid map writable without CAP_SETGID on the host, and
 * it also stops the sandbox from dropping supplementary groups to get around a "deny group"
 * permission. Kernels before 3.19 have no such file and need no such step. */
static int deny_setgroups(char *err, size_t errlen)
{
	int r = write_proc_self("setgroups", "deny", err, errlen);

	if (r == -ENOENT)
		return 0;
	return r;
}

static int map_one_id(const char *file, unsigned long id, char *err, size_t errlen)
{
	char line[64];

	snprintf(line, sizeof line, "%lu %lu 1\n", id, id);
	return write_proc_self(file, line, err, errlen);
}

int sbx_userns_enter(uid_t outer_uid, gid_t outer_gid, int extra_flags, char *err, size_t errlen)
{
	int r;

	if (unshare(CLONE_NEWUSER | extra_flags) < 0) {
		int e = errno;

		return sbx_init_fail(err, errlen, -e, "unshare(user namespace, flags 0x%x): %s%s",
		                     (unsigned)extra_flags, strerror(e), userns_refusal_hint(e));
	}
	r = deny_setgroups(err, errlen);
	if (r < 0)
		return r;
	r = map_one_id("uid_map", (unsigned long)outer_uid, err, errlen);
	if (r < 0)
		return r;
	return map_one_id("gid_map", (unsigned long)outer_gid, err, errlen);
}
