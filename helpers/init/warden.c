/* agentsbx-init --warden: makes entries of a RUNNING sandbox's workspace read-only, for the
 * host's git guard (src/gitguard.c): the git dirs a command created become unchangeable for
 * the next command, as the ones that existed at open are.
 *
 * Started by the library (backends/sandbox/warden.c) with
 *   fd 3: a pidfd of a process in the sandbox's mount namespace (direct mode: the outer
 *         process; bubblewrap: its child, the init);
 *   fd 4: the entries, NUL-separated, root-relative: "a/.git//" pins a directory (bound onto
 *         itself, still writable: a mount point cannot be renamed away), "a/.git/hooks/" binds
 *         a directory read-only, "a/.git/config" a file.
 * It joins the user namespace that owns the sandbox's mount namespace (there it has every
 * capability, as the outer process has) and that mount namespace, and binds. It is never in
 * the sandbox's PID namespace, so no command can see, signal or trace it; it runs nothing,
 * and it follows nothing a command made: every entry is resolved beneath /workspace without
 * links (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, or a walk with
 * O_NOFOLLOW), mounted by fd. A missing entry, a link or an entry of the wrong kind is
 * skipped, never created. Exit 0: every entry bound or skipped; 1: a failure, said on
 * stderr. */
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "init/mount_util.h"
#include "init/sandbox.h"
#include "util/cleanup.h"

#define WARDEN_PIDFD 3
#define WARDEN_LIST 4
#define LIST_MAX (4u << 20)

static int say(const char *what, const char *rel, int err)
{
	fprintf(stderr, "warden: %s%s%s: %s\n", what, rel ? " /" : "", rel ? rel : "",
	        strerror(err));
	return -err;
}

/* The pid behind the pidfd (its fdinfo), to reach its /proc/<pid>/ns files. */
static pid_t pid_of_pidfd(int pidfd)
{
	char path[64], line[256];
	FILE *f;
	long pid = -1;

	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Pid: %ld", &pid) == 1)
			break;
	fclose(f);
	return (pid_t)pid;
}

/* The process is still the one the pidfd names (so the ns files opened belong to it). */
static bool still_alive(int pidfd)
{
	return pid_of_pidfd(pidfd) > 0;
}

/* Whether the namespace fd ns is the one at path. */
static bool same_namespace(int ns, const char *path)
{
	struct stat a, b;

	return fstat(ns, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* Joins the mount namespace of the process and the user namespace that owns it. */
static int join_sandbox(int pidfd)
{
	char path[64];
	pid_t pid = pid_of_pidfd(pidfd);
	_cleanup_close_ int mnt = -1, user = -1;

	if (pid <= 0)
		return say("the sandbox process is gone", NULL, ESRCH);
	snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)pid);
	if ((mnt = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return say("open the mount namespace", NULL, errno);
	if (!still_alive(pidfd))
		return say("the sandbox process is gone", NULL, ESRCH);
	/* Never the namespace we are in (the host's, for a process named wrongly): binds meant
	 * for the sandbox must not land in the host's mount table. */
	if (same_namespace(mnt, "/proc/self/ns/mnt"))
		return say("the process is not in a sandbox of its own", NULL, EINVAL);
	/* bubblewrap's --disable-userns puts the init in a nested user namespace: the mount
	 * namespace belongs to its parent, and only there do we have CAP_SYS_ADMIN over it. */
	if ((user = ioctl(mnt, NS_GET_USERNS)) < 0)
		return say("find the mount namespace's owner", NULL, errno);
	if (setns(user, CLONE_NEWUSER) < 0)
		return say("join the sandbox's user namespace", NULL, errno);
	if (setns(mnt, CLONE_NEWNS) < 0)
		return say("join the sandbox's mount namespace", NULL, errno);
	return 0;
}

/* A recursive bind of the object fd is open on onto itself, by fds only: in the sandbox's
 * mount namespace /proc is the sandbox's own, where /proc/self names nobody (we are not in
 * its PID namespace), so sbx_bind_fds' path form cannot work here. */
static int bind_onto_itself(int fd)
{
	_cleanup_close_ int tree = (int)syscall(SYS_open_tree, fd, "",
	                                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
	                                        AT_RECURSIVE | AT_EMPTY_PATH);

	if (tree < 0)
		return -errno;
	if (syscall(SYS_move_mount, tree, "", fd, "",
	            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

enum kind { PIN, DIR_RO, FILE_RO };

/* One entry; 0 when bound or skipped. */
static int bind_entry(int wsfd, const char *entry)
{
	char rel[4096];
	size_t len = strlen(entry);
	enum kind k = len > 2 && !strcmp(entry + len - 2, "//") ? PIN :
	              len > 1 && entry[len - 1] == '/' ? DIR_RO : FILE_RO;
	_cleanup_close_ int parent = -1, fd = -1;
	char *slash, *name;
	struct stat st;
	int r;

	if (len >= sizeof rel)
		return say("entry too long", NULL, ENAMETOOLONG);
	memcpy(rel, entry, len + 1);
	while (len && rel[len - 1] == '/')
		rel[--len] = '\0';
	if (!len || !sbx_rel_path_ok(rel))
		return say("not a plain relative path", rel, EINVAL);
	slash = strrchr(rel, '/');
	name = slash ? slash + 1 : rel;
	if (slash)
		*slash = '\0';
	r = sbx_open_beneath(wsfd, slash ? rel : "", &parent);
	if (slash)
		*slash = '/';
	if (r == -ENOENT || r == -ELOOP || r == -ENOTDIR)
		return 0;             /* gone, or a link on the way: the guard's detection has it */
	if (r < 0)
		return say("open the parent of", rel, -r);
	if ((fd = openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : say("open", rel, errno);
	if (fstat(fd, &st) < 0)
		return say("stat", rel, errno);
	if (k == FILE_RO ? !S_ISREG(st.st_mode) : !S_ISDIR(st.st_mode))
		return 0;
	if ((r = bind_onto_itself(fd)) < 0)
		return say("bind", rel, -r);
	r = sbx_remount_tree_at(parent, name, k == PIN ? (MS_NOSUID | MS_NODEV)
	                                               : (MS_RDONLY | MS_NOSUID | MS_NODEV));
	return r < 0 ? say("make read-only", rel, -r) : 0;
}

static int read_list(char **out, size_t *len)
{
	char *buf = malloc(LIST_MAX);
	ssize_t n;

	if (!buf)
		return say("memory", NULL, ENOMEM);
	n = pread(WARDEN_LIST, buf, LIST_MAX - 1, 0);
	if (n < 0) {
		free(buf);
		return say("read the entries", NULL, errno);
	}
	buf[n] = '\0';
	*out = buf;
	*len = (size_t)n;
	return 0;
}

static int bind_all(int wsfd, const char *list, size_t len)
{
	int failed = 0;

	for (size_t at = 0; at < len;) {
		const char *entry = list + at;
		size_t n = strlen(entry);
		if (n && bind_entry(wsfd, entry) < 0)
			failed = 1;
		at += n + 1;
	}
	return failed;
}

/* The workspace's second mount (workdir_mount "host"), walked from the root without links,
 * and only if it still is the workspace: the directories above it may be in the writable
 * /tmp, where a command can move them aside and put a look-alike in their place. Then the
 * look-alike is left alone (the guard's quarantine still sees what is written) and the error
 * says so. */
static int open_view(const char *view, int wsfd, int *out)
{
	_cleanup_close_ int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), fd = -1;
	struct stat a, b;
	int r;

	if (view[0] != '/' || !sbx_rel_path_ok(view + 1))
		return say("the view is not a plain absolute path:", view + 1, EINVAL);
	if (rootfd < 0)
		return say("open", "", errno);
	if ((r = sbx_open_beneath(rootfd, view + 1, &fd)) < 0)
		return say("open", view + 1, -r);
	if (fstat(fd, &a) < 0 || fstat(wsfd, &b) < 0)
		return say("stat", view + 1, errno);
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return say("is no longer the workspace:", view + 1, ESTALE);
	*out = SBX_TAKE_FD(fd);
	return 0;
}

int sbx_warden_main(const char *view)
{
	_cleanup_free_ char *list = NULL;
	_cleanup_close_ int wsfd = -1, viewfd = -1;
	size_t len = 0;
	int failed;

	/* Nothing of the sandbox may read our memory, even in theory. */
	prctl(PR_SET_DUMPABLE, 0L, 0L, 0L, 0L);
	if (read_list(&list, &len) < 0 || join_sandbox(WARDEN_PIDFD) < 0)
		return 1;
	close(WARDEN_PIDFD);
	close(WARDEN_LIST);
	/* setns put us at the sandbox's root. */
	wsfd = open(SBX_SANDBOX_ROOT, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wsfd < 0)
		return say("open", SBX_SANDBOX_ROOT + 1, errno), 1;
	if (view && open_view(view, wsfd, &viewfd) < 0)
		return 1;
	failed = bind_all(wsfd, list, len);
	if (viewfd >= 0 && bind_all(viewfd, list, len))
		failed = 1;
	return failed;
}
