/* Size caps on the sandbox's own file systems: a capped /tmp and /dev/shm, and — with
 * limits.disk_bytes — a workspace that is a capped tmpfs instead of the host directory.
 *
 * Such a workspace is the sandbox's, but the host library must still serve files on it. The
 * init hands it a recursive clone of the tmpfs's mount, taken after the host's state folder
 * was bound in and before the protected paths are: the clone is a mount tree of its own (in
 * an anonymous mount namespace that the fd keeps), so the read-only binds laid over
 * .git/hooks and friends for the sandbox do not apply to the host, while the host's writes
 * land in the very same tmpfs and count against the same size. The state folder (audit log,
 * tool sessions, MCP's run folder) stays on the host disk, where a full workspace cannot
 * starve it.
 *
 * In "inside" mode (bubblewrap built the root; Debian's bwrap 0.8.0 cannot size a tmpfs and
 * leaves the init no capabilities) the init first enters a user and mount namespace of its
 * own, nested in bubblewrap's, where it may mount. The binds bubblewrap made below /tmp and
 * /workspace are carried over onto the new file systems by cloning them first.
 *
 * The same namespace serves a sandbox whose host is root (init_proto.h, "users"): bubblewrap,
 * run as the unprivileged host uid, cannot attach the idmapped workspace the host made, nor
 * reach a workdir below a directory only root may enter. The init attaches it here as direct
 * mode does, with the binds that come from it or are idmapped themselves, and protects its
 * paths; bubblewrap made only their mount points.
 *
 * As root, the state folder of a capped workspace comes as a detached mount of the host's
 * own view (fd 9): the host writes its audit log there, and through an idmapped state folder
 * its root would have no id to write as. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/error.h"
#include "init/mount_util.h"
#include "init/quota.h"
#include "init/rootfs_internal.h"
#include "util/cleanup.h"

#define TMPFS_FLAGS (MS_NOSUID | MS_NODEV)

uint64_t sbx_quota_inodes(uint64_t bytes)
{
	uint64_t n = bytes / SBX_QUOTA_BYTES_PER_INODE;

	return n < SBX_QUOTA_MIN_INODES ? SBX_QUOTA_MIN_INODES : n;
}

int sbx_quota_mount_tmpfs(int basefd, const char *rel, const char *mode, unsigned long flags,
                          uint64_t bytes, char *err, size_t errlen)
{
	char data[96];

	if (bytes)
		snprintf(data, sizeof data, "mode=%s,size=%llu,nr_inodes=%llu", mode,
		         (unsigned long long)bytes, (unsigned long long)sbx_quota_inodes(bytes));
	else
		snprintf(data, sizeof data, "mode=%s", mode);
	return sbx_mount_new_at(basefd, rel, "tmpfs", flags, data, err, errlen);
}

static int clone_tree(int dirfd, const char *rel, int *out)
{
	int fd = (int)syscall(SYS_open_tree, dirfd, rel,
	                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);

	if (fd < 0)
		return -errno;
	*out = fd;
	return 0;
}

/* The host's state folder into the capped workspace: its detached mount, or a bind. */
static int place_state_dir(int basefd, int host_ws_fd, int state_fd, char *err, size_t errlen)
{
	_cleanup_close_ int state = -1;

	if (state_fd > 2)
		return sbx_attach_at(basefd, state_fd, SBX_SANDBOX_ROOT "/" SBX_STATE_DIR + 1,
		                     TMPFS_FLAGS, err, errlen);
	state = openat(host_ws_fd, SBX_STATE_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (state < 0)
		return sbx_fail_buf(err, errlen, -errno, "workspace: the state folder %s: %s",
		                    SBX_STATE_DIR, strerror(errno));
	return sbx_bind_at(basefd, state, SBX_SANDBOX_ROOT "/" SBX_STATE_DIR + 1, TMPFS_FLAGS, err,
	                   errlen);
}

int sbx_quota_make_workspace(int basefd, int host_ws_fd, int state_fd, uint64_t bytes,
                             int *files_root, char *err, size_t errlen)
{
	_cleanup_close_ int ws = -1;
	int r = sbx_quota_mount_tmpfs(basefd, SBX_SANDBOX_ROOT + 1, "0755", TMPFS_FLAGS, bytes,
	                              err, errlen);

	if (r < 0)
		return r;
	r = place_state_dir(basefd, host_ws_fd, state_fd, err, errlen);
	if (r < 0)
		return r;
	r = clone_tree(basefd, SBX_SANDBOX_ROOT + 1, files_root);
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "workspace: clone its mount for the host: %s",
		                    strerror(-r));
	/* The state folder is on the host's disk: writable inside, whatever the protected paths
	 * say, it would be a way past the cap. The host's clone keeps its own, writable mount. */
	r = sbx_open_beneath(basefd, SBX_SANDBOX_ROOT + 1, &ws);
	if (r == 0)
		r = sbx_remount_tree_at(ws, SBX_STATE_DIR, MS_RDONLY | TMPFS_FLAGS);
	if (r < 0) {
		close(SBX_TAKE_FD(*files_root));
		return sbx_fail_buf(err, errlen, r, "workspace: the state folder read-only: %s",
		                    strerror(-r));
	}
	return 0;
}

/* ---- inside mode ---------------------------------------------------------------------- */

struct carried {
	int fd;                   /* a clone of the bind */
	const char *rel;          /* where it goes, relative to the new file system's root */
	bool dir;
};

static bool below(const char *path, const char *top, const char **rest)
{
	size_t n = strlen(top);

	if (strncmp(path, top, n) != 0 || path[n] != '/' || !path[n + 1])
		return false;
	*rest = path + n + 1;
	return true;
}

/* A bind the init makes itself, not bubblewrap: one from the idmapped workspace, or of an
 * idmapped mount of its own. */
static bool made_by_init(const struct sbx_quota_inside *q, const struct sbx_bind *b)
{
	return q->workspace_tree > 2 && (b->in_workspace || b->tree_fd > 2);
}

/* Clones every bind below top, before a new file system hides them. */
static int clone_binds_below(const struct sbx_quota_inside *q, const char *top,
                             struct carried *out, size_t *n, char *err, size_t errlen)
{
	*n = 0;
	for (size_t i = 0; i < q->n_binds; i++) {
		const char *rest;
		struct stat st;
		int r;

		if (made_by_init(q, &q->binds[i]) || !below(q->binds[i].dest, top, &rest))
			continue;
		r = clone_tree(AT_FDCWD, q->binds[i].dest, &out[*n].fd);
		if (r < 0)
			return sbx_fail_buf(err, errlen, r, "clone the bind %s: %s", q->binds[i].dest,
			                    strerror(-r));
		out[*n].rel = rest;
		out[*n].dir = fstat(out[*n].fd, &st) == 0 && S_ISDIR(st.st_mode);
		++*n;
	}
	return 0;
}

/* Attaches the clones below rootfd (prefix + their path), making their mount points. */
static int attach_carried(int rootfd, const char *prefix, struct carried *c, size_t n,
                          char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *rel = NULL;
		_cleanup_close_ int parent = -1, point = -1;
		char *slash;
		int r;

		if (asprintf(&rel, "%s%s", prefix, c[i].rel) < 0)
			return sbx_fail_buf(err, errlen, -ENOMEM, "out of memory");
		slash = strrchr(rel, '/');
		if (slash) {
			*slash = '\0';
			r = sbx_mkdirs_beneath(rootfd, rel, &parent);
		} else {
			r = (parent = fcntl(rootfd, F_DUPFD_CLOEXEC, 3)) < 0 ? -errno : 0;
		}
		if (r == 0)
			r = sbx_mountpoint_at(parent, slash ? slash + 1 : rel, c[i].dir, &point);
		if (r == 0 && syscall(SYS_move_mount, c[i].fd, "", parent, slash ? slash + 1 : rel,
		                      MOVE_MOUNT_F_EMPTY_PATH) < 0)
			r = -errno;
		if (r < 0)
			return sbx_fail_buf(err, errlen, r, "carry a bind over to %s: %s", c[i].rel,
			                    strerror(-r));
	}
	return 0;
}

static void close_carried(struct carried *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(c[i].fd);
}

/* The last steps of either workspace built at the new /tmp's "workspace": its protections,
 * then the move to /workspace, leaving no mount point behind in /tmp. */
static int protect_and_move_in(const struct sbx_quota_inside *q, int tmpfd, char *err,
                               size_t errlen)
{
	int r = sbx_protect_paths(tmpfd, q->protected_paths, err, errlen);

	if (r == 0 && syscall(SYS_move_mount, tmpfd, SBX_SANDBOX_ROOT + 1, AT_FDCWD,
	                      SBX_SANDBOX_ROOT, 0) < 0)
		r = sbx_fail_buf(err, errlen, -errno, "move the workspace to %s: %s",
		                 SBX_SANDBOX_ROOT, strerror(errno));
	if (r == 0)
		unlinkat(tmpfd, SBX_SANDBOX_ROOT + 1, AT_REMOVEDIR);
	return r;
}

/* The capped workspace, built at /tmp/workspace of the new /tmp (the only place where we may
 * make a mount point and the protection's cover file) and then moved to /workspace. */
static int inside_workspace(const struct sbx_quota_inside *q, int tmpfd, int host_ws,
                            struct carried *c, size_t n, int *files_root, char *err,
                            size_t errlen)
{
	int r = sbx_quota_make_workspace(tmpfd, host_ws, q->state_fd, q->workspace_bytes,
	                                 files_root, err, errlen);

	if (r == 0)
		r = attach_carried(tmpfd, SBX_SANDBOX_ROOT "/" + 1, c, n, err, errlen);
	return r == 0 ? protect_and_move_in(q, tmpfd, err, errlen) : r;
}

/* Where a bind's dest lands while the new /tmp is tmpfd and the workspace still sits at its
 * "workspace": below either, or (a mount point bubblewrap made) below the root. */
static int bind_place(const char *dest, int rootfd, int tmpfd, int *base, char *rel,
                      size_t len)
{
	const char *rest = NULL;
	bool in_tmp;

	if (below(dest, SBX_SANDBOX_ROOT, &rest)) {
		*base = tmpfd;
		return snprintf(rel, len, "%s/%s", SBX_SANDBOX_ROOT + 1, rest) < (int)len ? 0 : -1;
	}
	/* Decided by the path, not by comparing the two fds (they are never equal, but the
	 * choice of `rest` must not depend on it). */
	in_tmp = below(dest, "/tmp", &rest);
	*base = in_tmp ? tmpfd : rootfd;
	return snprintf(rel, len, "%s", in_tmp ? rest : dest + 1) < (int)len ? 0 : -1;
}

/* The binds the init makes (made_by_init): from the workspace's tree, or of their own
 * idmapped mount. Before the workspace's paths are protected, as in direct mode: a bind
 * from below a protected path (MCP's run folder in the state folder) must not inherit the
 * read-only mount laid over it. */
static int place_init_binds(const struct sbx_quota_inside *q, int rootfd, int tmpfd,
                            char *err, size_t errlen)
{
	for (size_t i = 0; i < q->n_binds; i++) {
		const struct sbx_bind *b = &q->binds[i];
		unsigned long flags = b->writable ? TMPFS_FLAGS : TMPFS_FLAGS | MS_RDONLY;
		_cleanup_close_ int src = -1;
		char rel[PATH_MAX];
		int base, r = 0;

		if (!made_by_init(q, b))
			continue;
		if (bind_place(b->dest, rootfd, tmpfd, &base, rel, sizeof rel) < 0)
			return sbx_fail_buf(err, errlen, -ENAMETOOLONG, "bind %s: path too long",
			                    b->dest);
		if (b->tree_fd > 2) {
			r = sbx_attach_at(base, b->tree_fd, rel, flags, err, errlen);
			if (r < 0)
				return r;
			continue;
		}
		if ((r = sbx_open_beneath(q->workspace_tree, b->source, &src)) < 0)
			return sbx_fail_buf(err, errlen, r, "open bind source /workspace/%s: %s",
			                    b->source, strerror(-r));
		if ((r = sbx_bind_at(base, src, rel, flags, err, errlen)) < 0)
			return r;
	}
	return 0;
}

/* The idmapped workspace the host made (init_proto.h, "users"): attached at the new /tmp's
 * "workspace", given its binds and protections there, and moved to /workspace. */
static int inside_tree_workspace(const struct sbx_quota_inside *q, int rootfd, int tmpfd,
                                 char *err, size_t errlen)
{
	unsigned long flags = q->workspace_readonly ? TMPFS_FLAGS | MS_RDONLY : TMPFS_FLAGS;
	int r = sbx_attach_at(tmpfd, q->workspace_tree, SBX_SANDBOX_ROOT + 1, flags, err, errlen);

	if (r == 0)
		r = place_init_binds(q, rootfd, tmpfd, err, errlen);
	return r == 0 ? protect_and_move_in(q, tmpfd, err, errlen) : r;
}

/* A new capped tmpfs at rel (of rootfd, the sandbox's "/"), and an fd of it. */
static int new_tmp(const struct sbx_quota_inside *q, int rootfd, const char *rel, int *fd,
                   char *err, size_t errlen)
{
	int r = sbx_quota_mount_tmpfs(rootfd, rel, "1777", TMPFS_FLAGS, q->tmp_bytes, err, errlen);

	if (r == 0 && (r = sbx_open_beneath(rootfd, rel, fd)) < 0)
		r = sbx_fail_buf(err, errlen, r, "open /%s: %s", rel, strerror(-r));
	return r;
}

/* The layout's writable places (rootfs_layout.c) on a tmpfs as capped as the new /tmp, over
 * bubblewrap's uncapped ones; the binds bubblewrap made below them (the helpers' folder in
 * /run) are carried over. The new /tmp (tmpfd) holds the temporary mount point. */
static int inside_layout(const struct sbx_quota_inside *q, int rootfd, int tmpfd, char *err,
                         size_t errlen)
{
	static const char *const tops[] = { "/run", "/var/tmp", "/var/cache" };
	struct carried *c[SBX_ARRAY_SIZE(tops)] = { 0 };
	size_t n[SBX_ARRAY_SIZE(tops)] = { 0 };
	int r = 0;

	for (size_t i = 0; r == 0 && i < SBX_ARRAY_SIZE(tops); i++) {
		if (!(c[i] = calloc(q->n_binds + 1, sizeof *c[i])))
			r = sbx_fail_buf(err, errlen, -ENOMEM, "out of memory");
		if (r == 0)
			r = clone_binds_below(q, tops[i], c[i], &n[i], err, errlen);
	}
	if (r == 0)
		r = sbx_layout_mount_scratch(tmpfd, rootfd, q->tmp_bytes, err, errlen);
	for (size_t i = 0; r == 0 && i < SBX_ARRAY_SIZE(tops); i++) {
		_cleanup_close_ int top = -1;

		if (!n[i])
			continue;
		if ((r = sbx_open_beneath(rootfd, tops[i] + 1, &top)) < 0)
			r = sbx_fail_buf(err, errlen, r, "open %s: %s", tops[i], strerror(-r));
		if (r == 0)
			r = attach_carried(top, "", c[i], n[i], err, errlen);
	}
	for (size_t i = 0; i < SBX_ARRAY_SIZE(tops); i++) {
		if (c[i])
			close_carried(c[i], n[i]);
		free(c[i]);
	}
	return r;
}

static int inside_mounts(const struct sbx_quota_inside *q, int *files_root, char *err,
                         size_t errlen)
{
	struct carried *in_tmp = calloc(q->n_binds + 1, sizeof *in_tmp);
	struct carried *in_ws = calloc(q->n_binds + 1, sizeof *in_ws);
	_cleanup_close_ int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int host_ws = -1, tmpfd = -1, shm = -1;
	size_t n_tmp = 0, n_ws = 0;
	int r = in_tmp && in_ws ? 0 : sbx_fail_buf(err, errlen, -ENOMEM, "out of memory");

	if (r == 0 && rootfd < 0)
		r = sbx_fail_buf(err, errlen, -errno, "open /: %s", strerror(errno));

	if (r == 0)
		r = clone_binds_below(q, "/tmp", in_tmp, &n_tmp, err, errlen);
	if (r == 0 && q->workspace_bytes)
		r = clone_binds_below(q, SBX_SANDBOX_ROOT, in_ws, &n_ws, err, errlen);
	if (r == 0 && q->workspace_bytes && q->state_fd <= 2 &&
	    (host_ws = open(SBX_SANDBOX_ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = sbx_fail_buf(err, errlen, -errno, "open %s: %s", SBX_SANDBOX_ROOT,
		                 strerror(errno));
	if (r == 0)
		r = new_tmp(q, rootfd, "tmp", &tmpfd, err, errlen);
	if (r == 0)
		r = inside_layout(q, rootfd, tmpfd, err, errlen);
	if (r == 0 && q->workspace_bytes)
		r = inside_workspace(q, tmpfd, host_ws, in_ws, n_ws, files_root, err, errlen);
	else if (r == 0 && q->workspace_tree > 2)
		r = inside_tree_workspace(q, rootfd, tmpfd, err, errlen);
	if (r == 0)
		r = attach_carried(tmpfd, "", in_tmp, n_tmp, err, errlen);
	/* A capped workspace's idmapped binds (its own workspace has none of them). */
	if (r == 0 && q->workspace_bytes)
		r = place_init_binds(q, rootfd, tmpfd, err, errlen);
	if (r == 0)
		r = new_tmp(q, rootfd, "dev/shm", &shm, err, errlen);
	if (in_tmp)
		close_carried(in_tmp, n_tmp);
	if (in_ws)
		close_carried(in_ws, n_ws);
	free(in_tmp);
	free(in_ws);
	return r;
}

/* workdir_mount "host" under bubblewrap: the finished /workspace at its host path too. */
static int inside_view(const struct sbx_quota_inside *q, char *err, size_t errlen)
{
	_cleanup_close_ int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (rootfd < 0)
		return sbx_fail_buf(err, errlen, -errno, "open /: %s", strerror(errno));
	return sbx_layout_workspace_view(rootfd, q->workspace_view, q->workspace_readonly, err,
	                                 errlen);
}

/* bubblewrap's root (a tmpfs its sandbox's uid owns) read-only, now that every mount point
 * in it is made; bubblewrap seals it itself when the init makes no mounts (bwrap_argv.c). */
static int seal_root(char *err, size_t errlen)
{
	_cleanup_close_ int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r = rootfd < 0 ? -errno : sbx_remount_top(rootfd, MS_RDONLY);

	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "remount / read-only: %s", strerror(-r));
	return 0;
}

int sbx_quota_enter_inside(const struct sbx_quota_inside *q, int *files_root, char *err,
                           size_t errlen)
{
	int r;

	*files_root = -1;
	if (!q->workspace_bytes && !q->tmp_bytes && q->workspace_tree <= 2 && !q->workspace_view)
		return 0;
	/* Bubblewrap ran us as the host range's uid (init_proto.h, "users"): that is 0 from
	 * here on, the uid tools expect. */
	r = q->workspace_tree > 2 ? sbx_userns_enter_as_root(CLONE_NEWNS, err, errlen)
	                          : sbx_userns_enter(getuid(), getgid(), CLONE_NEWNS, err, errlen);
	/* Where the host forbids a namespace below bubblewrap's (Ubuntu's AppArmor profile for
	 * it can), only a cap the config asked for is worth failing for; the default one gives
	 * way to bubblewrap's uncapped /tmp. */
	if (r < 0 && !q->workspace_bytes && !q->tmp_required && q->workspace_tree <= 2 &&
	    !q->workspace_view) {
		err[0] = '\0';
		return 0;
	}
	if (r < 0) {
		char why[300];

		snprintf(why, sizeof why, "%s", err);
		if (q->workspace_view && !q->workspace_bytes && !q->tmp_required)
			return sbx_fail_buf(err, errlen, r, "config: key 'workdir_mount': no namespace of "
			                    "our own below bubblewrap's to mount the workspace at %s in: "
			                    "%s", q->workspace_view, why);
		if (q->workspace_tree > 2 && !q->workspace_bytes && !q->tmp_bytes)
			return sbx_fail_buf(err, errlen, r, "users: no namespace of our own below "
			                    "bubblewrap's to attach the idmapped workspace in (the config key "
			                    "'root_inside': \"allow-host-root\" runs the sandbox as host "
			                    "root instead): %s", why);
		return sbx_fail_buf(err, errlen, r, "config: key 'limits.%s': no namespace of our own "
		                    "below bubblewrap's to mount the capped file system in: %s",
		                    q->workspace_bytes ? "disk_bytes" : "tmp_bytes", why);
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return sbx_fail_buf(err, errlen, -errno, "make / private: %s", strerror(errno));
	r = inside_mounts(q, files_root, err, errlen);
	if (r == 0 && q->workspace_view)
		r = inside_view(q, err, errlen);
	if (r == 0)
		r = seal_root(err, errlen);
	/* The cwd bubblewrap gave us is the directory now hidden under the new workspace. */
	if (r == 0 && chdir(q->workspace_view ? q->workspace_view : SBX_SANDBOX_ROOT) < 0)
		r = sbx_fail_buf(err, errlen, -errno, "chdir %s: %s",
		                 q->workspace_view ? q->workspace_view : SBX_SANDBOX_ROOT,
		                 strerror(errno));
	if (r < 0 && *files_root >= 0)
		close(SBX_TAKE_FD(*files_root));
	return r;
}
