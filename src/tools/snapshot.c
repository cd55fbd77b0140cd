/* Glob and Grep walk a directory on this host. Where the workspace's files are elsewhere and
 * the backend can hand over its tree as a tar (file_tree), the tools walk a private copy of
 * it instead: regular files and directories with their times, links and special files left
 * out, the whole capped. The copy is made for one call and removed after it. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "tools/snapshot.h"
#include "util/archive.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/path.h"

#define SNAPSHOT_MAX_BYTES ((size_t)256 << 20)
#define SNAPSHOT_MAX_ENTRIES 200000

struct copy {
	int root;
};

static void set_time(int dirfd, const char *name, int64_t mtime)
{
	struct timespec t[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = mtime } };

	(void)utimensat(dirfd, name, t, AT_SYMLINK_NOFOLLOW);
}

/* "<rel's last component>/below" (the root: any one name) -> "below". */
static const char *below_top(const char *path)
{
	const char *slash = strchr(path, '/');

	return slash ? slash + 1 : NULL;
}

static int copy_entry(const sbx_archive_entry *e, void *arg)
{
	struct copy *c = arg;
	const char *rel = below_top(e->path);
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int dirfd = -1;
	int r;

	if (!rel || (e->type != SBX_ENTRY_FILE && e->type != SBX_ENTRY_DIR &&
	             e->type != SBX_ENTRY_HARDLINK))
		return 0;
	if ((r = sbx_path_open_parent(c->root, rel, true, &dirfd, &name)) < 0)
		return r;
	if (e->type == SBX_ENTRY_DIR) {
		if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
			return sbx_fail(sbx_errno_code(errno), "snapshot: mkdir %s: %s", rel,
			                strerror(errno));
	} else if ((r = sbx_fs_write_atomic(dirfd, name, e->data ? e->data : "", e->size, 0600,
	                                    0)) < 0) {
		return r;
	}
	set_time(dirfd, name, e->mtime);
	return 0;
}

/* Directories get their times once everything in them is written. */
static int retime_dir(const sbx_archive_entry *e, void *arg)
{
	struct copy *c = arg;
	const char *rel = below_top(e->path);
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int dirfd = -1;

	if (rel && e->type == SBX_ENTRY_DIR &&
	    sbx_path_open_parent(c->root, rel, false, &dirfd, &name) == 0)
		set_time(dirfd, name, e->mtime);
	return 0;
}

bool sbx_tool_can_snapshot(const sbx_workspace *ws)
{
	/* The registry pads every table to the full struct, so an op a plugin left out is NULL. */
	return !(ws->caps & SBX_BACKEND_CAP_HOST_FILES) && ws->ops->file_tree;
}

int sbx_tool_snapshot(sbx_workspace *ws, int *root_fd, char **dir)
{
	const sbx_archive_limits lim = { SNAPSHOT_MAX_ENTRIES, SNAPSHOT_MAX_BYTES,
	                                 SNAPSHOT_MAX_BYTES, SBX_ARCHIVE_AS_STORED };
	_cleanup_free_ char *tar = NULL;
	struct copy c = { -1 };
	size_t len = 0;
	int r;

	*root_fd = -1;
	*dir = NULL;
	if ((r = ws->ops->file_tree(ws->state, "", SNAPSHOT_MAX_BYTES, &tar, &len)) < 0)
		return r == -SBX_EFBIG ? sbx_fail(r, "the workspace's files are more than the %zu "
		                                  "bytes a search copies", SNAPSHOT_MAX_BYTES) : r;
	if ((r = sbx_fs_make_temp_dir("agentsbx-search", dir)) < 0)
		return r;
	c.root = open(*dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.root < 0)
		r = sbx_fail(sbx_errno_code(errno), "snapshot: %s: %s", *dir, strerror(errno));
	if (r == 0)
		r = sbx_archive_iterate(tar, len, SBX_ARCHIVE_TAR, &lim, copy_entry, &c);
	if (r == 0)
		r = sbx_archive_iterate(tar, len, SBX_ARCHIVE_TAR, &lim, retime_dir, &c);
	if (r < 0) {
		if (c.root >= 0)
			close(c.root);
		sbx_tool_snapshot_free(-1, *dir);
		*dir = NULL;
		return r;
	}
	*root_fd = c.root;
	return 0;
}

void sbx_tool_snapshot_free(int root_fd, char *dir)
{
	char *slash = dir ? strrchr(dir, '/') : NULL;
	_cleanup_close_ int parent = -1;

	if (root_fd >= 0)
		close(root_fd);
	if (!slash)
		goto out;
	*slash = '\0';
	parent = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parent >= 0)
		(void)sbx_fs_remove_tree(parent, slash + 1);
out:
	free(dir);
}
