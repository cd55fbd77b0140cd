/* The snapshot baseline ("baseline": "snapshot"): a private copy of the workdir taken at open,
 * copied back at reset (internal.h: sbx_snapshot_*). Until transactional workspaces replace
 * the mechanism, it must hold against a hostile workdir: the copy never blocks and keeps holes
 * (util/copytree.c), and a copy whose process was killed does not stay.
 *
 * Each copy lives in $TMPDIR/agentsbx-baseline-<id>-XXXXXX, and its directory is flocked for
 * its whole life by the process that made it; the kernel releases the lock when that process
 * ends, however it ends. Every snapshot open first sweeps: a folder of that name, ours, whose
 * lock it can take is a dead process's copy, removed under the lock. A new copy's folder is
 * locked right after mkdtemp; a sweeper that got there in between removes it, and the maker,
 * seeing its folder gone once it has the lock, makes another. The lock is on a folder of the
 * host's temporary space, which no sandbox sees (each has a /tmp of its own). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/statedir.h"

#define PREFIX "agentsbx-baseline-"
#define MAKE_ATTEMPTS 5
#define LOCK_TIMEOUT_MS 5000     /* a sweeper holds a fresh folder's lock for a moment only */

static const char *temp_base(void)
{
	const char *base = secure_getenv("TMPDIR");

	return base && base[0] == '/' ? base : "/tmp";
}

/* Removes name in dir (a copy) when its maker is gone, i.e. when its lock can be taken. */
static void sweep_one(int dir, const char *name)
{
	_cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    flock(fd, LOCK_EX | LOCK_NB) < 0)
		return;
	(void)sbx_fs_remove_tree(dir, name);
}

void sbx_snapshot_sweep(void)
{
	int fd = open(temp_base(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, PREFIX, strlen(PREFIX)) &&
		    (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN))
			sweep_one(dirfd(d), e->d_name);
	closedir(d);
	sbx_error_clear();
}

static void pause_ms(int ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)ms * 1000000 };

	nanosleep(&ts, NULL);
}

/* The lock of a fresh copy's folder, which only a sweeper can hold meanwhile. */
static int lock_fresh(int fd, const char *path)
{
	for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; waited += 10) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return sbx_fail(sbx_errno_code(errno), "snapshot: flock %s: %s", path,
			                strerror(errno));
		if (waited >= LOCK_TIMEOUT_MS)
			return sbx_fail(-SBX_ETIMEDOUT, "snapshot: %s stayed locked by another "
			                "process for %d ms", path, LOCK_TIMEOUT_MS);
		pause_ms(10);
	}
	return 0;
}

/* Is path still the folder fd is open on (no sweeper removed it)? */
static bool still_there(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* Makes the copy's folder and holds its lock: ws->snapshot_dir, ws->snapshot_lock_fd. */
static int make_locked_dir(sbx_workspace *ws)
{
	_cleanup_free_ char *prefix = NULL;
	int r;

	if (asprintf(&prefix, PREFIX "%s", ws->id) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	for (int i = 0; i < MAKE_ATTEMPTS; i++) {
		_cleanup_free_ char *path = NULL;
		_cleanup_close_ int fd = -1;

		if ((r = sbx_fs_make_temp_dir(prefix, &path)) < 0)
			return r;
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;     /* swept before we opened it */
		if ((r = lock_fresh(fd, path)) < 0)
			return r;
		if (!still_there(fd, path))
			continue;
		ws->snapshot_dir = SBX_TAKE_PTR(path);
		ws->snapshot_lock_fd = SBX_TAKE_FD(fd);
		return 0;
	}
	return sbx_fail(-SBX_EBUSY, "snapshot: %d folders for the copy in %s were removed as soon "
	                "as they were made", MAKE_ATTEMPTS, temp_base());
}

int sbx_snapshot_take(sbx_workspace *ws)
{
	_cleanup_close_ int from = -1;
	int r;

	if (!(ws->caps & SBX_BACKEND_CAP_HOST_FILES))
		return sbx_fail(-SBX_ECONFIG, "config: key 'baseline': backend '%s' keeps no host "
		                "files to snapshot", ws->ops->name);
	sbx_snapshot_sweep();
	if ((r = make_locked_dir(ws)) < 0)
		return r;
	if ((r = sbx_workspace_open_root(ws, &from)) < 0)
		return r;
	/* The state folder is not part of the files a reset restores. */
	return sbx_fs_copy_tree(from, ws->snapshot_lock_fd, SBX_STATE_DIR_NAME);
}

int sbx_snapshot_restore(sbx_workspace *ws, int root)
{
	if (ws->snapshot_lock_fd < 0)
		return sbx_fail(-SBX_ESTATE, "reset: the workspace has no snapshot");
	return sbx_fs_copy_tree(ws->snapshot_lock_fd, root, NULL);
}

void sbx_snapshot_release(sbx_workspace *ws)
{
	_cleanup_free_ char *parent = ws->snapshot_dir ? strdup(ws->snapshot_dir) : NULL;
	char *slash = parent ? strrchr(parent, '/') : NULL;

	if (slash) {
		*slash = '\0';
		_cleanup_close_ int dir = open(*parent ? parent : "/",
		                               O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		/* Removed while still locked: no sweeper takes it for a dead one's meanwhile. */
		if (dir >= 0 && ws->snapshot_lock_fd >= 0 && still_there(ws->snapshot_lock_fd,
		                                                         ws->snapshot_dir))
			(void)sbx_fs_remove_tree(dir, slash + 1);
	}
	if (ws->snapshot_lock_fd >= 0)
		close(ws->snapshot_lock_fd);
	ws->snapshot_lock_fd = -1;
	free(ws->snapshot_dir);
	ws->snapshot_dir = NULL;
}
