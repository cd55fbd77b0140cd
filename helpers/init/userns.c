/* The user namespace every other namespace of the sandbox belongs to.
 *
 * An unprivileged caller maps one id: its own uid and gid, to the same numbers inside. That is
 * the only map an unprivileged process may write, and it keeps file ownership on the
 * workspace honest: what the sandbox creates belongs to the caller on the host. Root maps a
 * range of unprivileged host ids instead (sbx_userns_enter_range): inside, the sandbox is uid
 * 0; on the host, nobody. Its workdir then comes as an idmapped mount, which keeps the host's
 * files the caller's (src/util/idmap.h). The other
 * namespaces are created by the same unshare() so that the user namespace owns them, which is
 * what later lets the sandbox's PID 1 mount proc, tmpfs and devpts, set the hostname and bring
 * up its loopback interface without any privilege on the host. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "util/error.h"
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
		return sbx_fail_buf(err, errlen, -errno, "open %s: %s", path, strerror(errno));
	do
		n = write(fd, data, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return sbx_fail_buf(err, errlen, -errno, "write %s: %s", path, strerror(errno));
	if ((size_t)n != len)
		return sbx_fail_buf(err, errlen, -EIO, "write %s: short write", path);
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

static int map_to_root(const char *file, unsigned long id, char *err, size_t errlen)
{
	char line[64];

	snprintf(line, sizeof line, "0 %lu 1\n", id);
	return write_proc_self(file, line, err, errlen);
}

static int enter(uid_t outer_uid, gid_t outer_gid, bool as_root, int extra_flags, char *err,
                 size_t errlen)
{
	int (*map)(const char *, unsigned long, char *, size_t) = as_root ? map_to_root
	                                                                  : map_one_id;
	int r;

	if (unshare(CLONE_NEWUSER | extra_flags) < 0) {
		int e = errno;

		return sbx_fail_buf(err, errlen, -e, "unshare(user namespace, flags 0x%x): %s%s",
		                    (unsigned)extra_flags, strerror(e), userns_refusal_hint(e));
	}
	r = deny_setgroups(err, errlen);
	if (r < 0)
		return r;
	r = map("uid_map", (unsigned long)outer_uid, err, errlen);
	if (r < 0)
		return r;
	return map("gid_map", (unsigned long)outer_gid, err, errlen);
}

int sbx_userns_enter_as_root(int extra_flags, char *err, size_t errlen)
{
	return enter(getuid(), getgid(), true, extra_flags, err, errlen);
}

int sbx_userns_enter(uid_t outer_uid, gid_t outer_gid, int extra_flags, char *err, size_t errlen)
{
	return enter(outer_uid, outer_gid, false, extra_flags, err, errlen);
}

/* ---- a range of host ids (the caller is root) -------------------------------------------- */

/* What the mapper reports when a write fails: which file, and errno. */
struct map_failure {
	char file[16];
	int err;
};

static int write_proc_of(pid_t pid, const char *name, const char *data)
{
	char path[64];
	size_t len = strlen(data);
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (write(fd, data, len) != (ssize_t)len)
		return errno ? -errno : -EIO;
	return 0;
}

/* The mapper, a child forked while its parent was still in the host's user namespace: it
 * waits until the parent has unshared, then writes the parent's maps, which only a process
 * with CAP_SETUID and CAP_SETGID in the namespace's parent may do for a range. Reports a
 * failure on `report` and exits. */
static void run_mapper(pid_t target, const struct sbx_id_range *r, int go, int report)
{
	const char *const names[3] = { "setgroups", "uid_map", "gid_map" };
	char maps[3][64];
	struct map_failure f = { .err = 0 };
	char c;

	snprintf(maps[0], sizeof maps[0], "deny");
	snprintf(maps[1], sizeof maps[1], "0 %u %u\n", r->uid, r->count);
	snprintf(maps[2], sizeof maps[2], "0 %u %u\n", r->gid, r->count);
	if (read(go, &c, 1) != 1)
		_exit(1);          /* the parent gave up */
	for (int i = 0; i < 3 && !f.err; i++) {
		int e = write_proc_of(target, names[i], maps[i]);

		if (e < 0) {
			snprintf(f.file, sizeof f.file, "%s", names[i]);
			f.err = -e;
		}
	}
	if (f.err && write(report, &f, sizeof f) < 0)
		_exit(1);
	_exit(f.err ? 1 : 0);
}

static int reap_mapper(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* Unshares, lets the mapper write the maps, and reads what it says. */
static int unshare_mapped(pid_t mapper, int go, int report, int extra_flags, char *err,
                          size_t errlen)
{
	struct map_failure f = { .err = 0 };
	ssize_t n;
	int r;

	if (unshare(CLONE_NEWUSER | extra_flags) < 0) {
		int e = errno;

		close(go);         /* the mapper reads end-of-file and leaves */
		reap_mapper(mapper);
		return sbx_fail_buf(err, errlen, -e, "unshare(user namespace, flags 0x%x): %s%s",
		                    (unsigned)extra_flags, strerror(e), userns_refusal_hint(e));
	}
	n = write(go, "m", 1);
	close(go);
	r = reap_mapper(mapper);
	while ((n = read(report, &f, sizeof f)) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof f && f.err)
		return sbx_fail_buf(err, errlen, -f.err, "write /proc/self/%.15s for the host range: %s",
		                    f.file, strerror(f.err));
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "the process writing the user namespace's maps "
		                    "failed");
	return 0;
}

int sbx_userns_enter_range(const struct sbx_id_range *range, int extra_flags, char *err,
                           size_t errlen)
{
	_cleanup_close_ int report_r = -1;
	int go[2], report[2], r;
	pid_t self = getpid(), mapper;

	if (!range->count || range->uid == 0 || range->gid == 0)
		return sbx_fail_buf(err, errlen, -EINVAL, "users: the host range must not be empty "
		                    "nor contain root");
	/* The host's supplementary groups would stay with the sandbox, out of reach of a
	 * setgroups that the namespace denies: drop them while we still may. */
	if (setgroups(0, NULL) < 0)
		return sbx_fail_buf(err, errlen, -errno, "setgroups: %s", strerror(errno));
	if (pipe2(go, O_CLOEXEC) < 0)
		return sbx_fail_buf(err, errlen, -errno, "pipe: %s", strerror(errno));
	if (pipe2(report, O_CLOEXEC) < 0) {
		r = -errno;
		close(go[0]);
		close(go[1]);
		return sbx_fail_buf(err, errlen, r, "pipe: %s", strerror(-r));
	}
	mapper = fork();
	if (mapper == 0) {
		close(go[1]);
		close(report[0]);
		run_mapper(self, range, go[0], report[1]);
	}
	close(go[0]);
	close(report[1]);
	report_r = report[0];
	if (mapper < 0) {
		r = -errno;
		close(go[1]);
		return sbx_fail_buf(err, errlen, r, "fork: %s", strerror(-r));
	}
	r = unshare_mapped(mapper, go[1], report_r, extra_flags, err, errlen);
	if (r < 0)
		return r;
	/* Until now this process was the host's root seen from outside; from here it is the
	 * range's first id (CAP_SETUID and CAP_SETGID in the new namespace allow it). */
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		return sbx_fail_buf(err, errlen, -errno, "become uid 0 of the new user namespace: %s",
		                    strerror(errno));
	return 0;
}

int sbx_drop_to_host_ids(uint32_t uid, uint32_t gid, char *err, size_t errlen)
{
	uid_t r, e, saved;

	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return sbx_fail_buf(err, errlen, -errno, "users: become host uid %u and gid %u: %s",
		                    uid, gid, strerror(errno));
	if (getresuid(&r, &e, &saved) < 0 || r != uid || e != uid || saved != uid)
		return sbx_fail_buf(err, errlen, -EPERM, "users: still not host uid %u", uid);
	return 0;
}
