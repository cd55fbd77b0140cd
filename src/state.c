/* Where a workspace keeps the library's state (internal.h: sbx_state_*), and the one way
 * the core reaches it.
 *
 * The state folder is <workdir>/.agentsbx, opened at open from the workdir's fd without
 * following links (util/statedir.h): a link planted there (to a folder outside, whose
 * subfolders the host would otherwise make) fails the open with an error naming it, on
 * every backend. The fd is kept; each use checks that <workdir>/.agentsbx still is that
 * folder (a command of a backend without protection, local, may have moved it away) and
 * opens it afresh, by the same rules, when it is not.
 *
 * A workdir the library cannot write (a read-only mount, a folder of another user) opens
 * only with "mode": "read-only", and then keeps its state in a private temporary folder
 * instead, removed at close: the tool sessions, the audit log and MCP's sockets work as
 * usual for the handle's life, and the caller's directory stays untouched. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/statedir.h"

/* What a temporary state folder takes over from an unwritable workdir's own one: the
 * record of the skills the library added (skills.c), so they stay trusted. */
#define SEEDED_FILE "skills.json"
#define SEEDED_MAX ((size_t)1 << 20)

static bool same_inode(int fd, int dir_fd, const char *name)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(dir_fd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Errors that mean "the library may not write here", as opposed to a hostile entry. */
static bool not_writable(int r)
{
	return r == -SBX_EACCES || r == -SBX_EPERM;
}

static int workdir_state(sbx_workspace *ws, int *fd)
{
	int r = sbx_statedir_open(ws->root_fd, NULL, 0755, fd);
	char msg[512];

	if (r == 0 || not_writable(r))
		return r;
	snprintf(msg, sizeof msg, "%s", sbx_last_error());
	return sbx_fail(r, "state folder of %s: %s", ws->workdir, msg);
}

/* Copies the skills record of the workdir's own state folder, if it has a readable one. */
static void seed_from_workdir(sbx_workspace *ws)
{
	_cleanup_close_ int from = -1;
	_cleanup_free_ char *data = NULL;
	size_t len;

	if (sbx_statedir_open(ws->root_fd, NULL, 0, &from) < 0 ||
	    sbx_statedir_read(from, SEEDED_FILE, SEEDED_MAX, &data, &len) < 0) {
		sbx_error_clear();
		return;
	}
	(void)sbx_fs_write_atomic(ws->state_fd, SEEDED_FILE, data, len, 0600, 0);
	sbx_error_clear();
}

static int make_temporary(sbx_workspace *ws)
{
	_cleanup_free_ char *prefix = NULL;
	int r;

	if (asprintf(&prefix, "agentsbx-state-%s", ws->id) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((r = sbx_fs_make_temp_dir(prefix, &ws->state_path)) < 0)
		return r;
	ws->state_temporary = true;
	ws->state_fd = open(ws->state_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ws->state_fd < 0)
		return sbx_fail(sbx_errno_code(errno), "open %s: %s", ws->state_path, strerror(errno));
	seed_from_workdir(ws);
	return 0;
}

/* An existing state folder the caller may not write is no better than none. */
static bool writable(int fd)
{
	return faccessat(fd, ".", W_OK, AT_EACCESS) == 0;
}

int sbx_state_setup(sbx_workspace *ws)
{
	int fd = -1, r = workdir_state(ws, &fd);

	if (r == 0 && !writable(fd)) {
		r = sbx_fail(-SBX_EACCES, "%s/%s is not writable", ws->workdir, SBX_STATE_DIR_NAME);
		close(SBX_TAKE_FD(fd));
	}
	if (r == 0) {
		ws->state_fd = fd;
		if ((ws->state_root_fd = fcntl(ws->root_fd, F_DUPFD_CLOEXEC, 3)) < 0)
			return sbx_fail(sbx_errno_code(errno), "dup: %s", strerror(errno));
		if (asprintf(&ws->state_path, "%s/%s", ws->workdir, SBX_STATE_DIR_NAME) < 0)
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		return 0;
	}
	if (!not_writable(r))
		return r;
	if (!ws->cfg->read_only) {
		char why[256];
		snprintf(why, sizeof why, "%s", sbx_last_error());
		return sbx_fail(r, "config: key 'workdir': %s is not writable for the library (%s); "
		                "open it with \"mode\": \"read-only\", which then keeps the "
		                "library's state in a temporary folder", ws->workdir, why);
	}
	sbx_error_clear();
	return make_temporary(ws);
}

void sbx_state_teardown(sbx_workspace *ws)
{
	if (ws->state_fd >= 0)
		close(ws->state_fd);
	if (ws->state_root_fd >= 0)
		close(ws->state_root_fd);
	if (ws->state_temporary && ws->state_path) {
		_cleanup_free_ char *parent = strdup(ws->state_path);
		char *slash = parent ? strrchr(parent, '/') : NULL;

		if (slash) {
			*slash = '\0';
			_cleanup_close_ int dir = open(*parent ? parent : "/",
			                               O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dir >= 0)
				sbx_fs_remove_tree(dir, slash + 1);
		}
	}
	free(ws->state_path);
	ws->state_fd = ws->state_root_fd = -1;
	ws->state_path = NULL;
	ws->state_temporary = false;
}

/* Under state_lock: the kept fd, replaced when <workdir>/.agentsbx is no longer that folder
 * (made again when it is gone, refused when a link or a file took its place). */
static int current_state_fd(sbx_workspace *ws)
{
	int fd, r;
	char msg[512];

	if (ws->state_root_fd < 0 || same_inode(ws->state_fd, ws->state_root_fd,
	                                        SBX_STATE_DIR_NAME))
		return 0;
	if ((r = sbx_statedir_open(ws->state_root_fd, NULL, 0755, &fd)) < 0) {
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "state folder of %s: %s", ws->workdir, msg);
	}
	close(ws->state_fd);
	ws->state_fd = fd;
	return 0;
}

int sbx_state_dir(sbx_workspace *ws, const char *sub, mode_t mode, int *out)
{
	_cleanup_close_ int dir = -1;
	int r;

	*out = -1;
	if (ws->state_fd < 0)
		return sbx_fail(-SBX_ENOSYS, "backend '%s' keeps the state folder inside the "
		                "workspace, out of the host's reach", ws->ops->name);
	pthread_mutex_lock(&ws->state_lock);
	r = current_state_fd(ws);
	if (r == 0 && (dir = fcntl(ws->state_fd, F_DUPFD_CLOEXEC, 3)) < 0)
		r = sbx_fail(sbx_errno_code(errno), "dup: %s", strerror(errno));
	pthread_mutex_unlock(&ws->state_lock);
	if (r < 0)
		return r;
	if (!sub || !*sub) {
		*out = SBX_TAKE_FD(dir);
		return 0;
	}
	return sbx_statedir_open_below(dir, SBX_STATE_DIR_NAME, sub, mode, out);
}

const char *sbx_state_path(const sbx_workspace *ws)
{
	return ws->state_path;
}
