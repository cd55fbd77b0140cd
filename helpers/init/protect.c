/* Protected paths: files inside the writable workspace that something outside the sandbox
 * later trusts, so the sandbox must not change them ("configuration-based sandbox escape":
 * an agent that writes a git hook or an MCP server entry gets code run on the host).
 *
 * Each path is walked from /workspace one component at a time, never following a link:
 *  - it exists (file or directory): it is bound read-only onto itself. Writes fail with EROFS;
 *    unlink, rename and rmdir fail with EBUSY, because it is a mount point.
 *  - each directory on the way is bound onto itself, writable as before: a mount point cannot
 *    be renamed, so ".git" cannot be moved aside and replaced by a fresh one with new hooks.
 *  - a symlink (or a fifo, socket or device) on the way or at the end is never followed: an
 *    empty read-only file is laid over the entry itself. Inside, the path can then neither be
 *    written nor redirected (the cover cannot be removed); on the host the link is untouched.
 *  - a regular file on the way (a worktree's ".git" file, which names the real git directory)
 *    decides where the rest resolves: it is bound read-only onto itself.
 *  - it is missing but its parent exists: an empty placeholder (a directory, but for a file
 *    inside .git: sbx_placeholder_is_dir) is bound read-only onto itself. The library makes it in the
 *    host directory before the sandbox starts and notes it in the workspace's journal
 *    (util/journal.h), so that it goes when the sandbox ends, however it ends (init/tidy.c);
 *    one still missing here (a race) is made here. Where the placeholder cannot be created
 *    (read-only workspace, a directory we may not write), the sandbox cannot create the path
 *    either, and nothing is needed.
 *  - its parent is missing: nothing is done.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "init/mount_util.h"
#include "init/rootfs_internal.h"
#include "init/sandbox.h"
#include "util/cleanup.h"


#define RO_FLAGS (MS_RDONLY | MS_NOSUID | MS_NODEV)
#define COVER_NAME ".sbx-protect-cover"

struct protector {
	int basefd;
	int cover_fd;             /* an empty read-only file, laid over what must not be followed */
	char **pinned;            /* directories already bound onto themselves (relative to base) */
	size_t n_pinned;
	char *err;
	size_t errlen;
};

/* Binds src onto target (name in parent_fd) and remounts the new mount, found again by name:
 * target_fd itself still points at the covered object. */
static int bind_over(int src_fd, int target_fd, int parent_fd, const char *name,
                     unsigned long flags)
{
	int r = sbx_bind_fds(src_fd, target_fd);

	return r < 0 ? r : sbx_remount_tree_at(parent_fd, name, flags);
}

static int fail_at(struct protector *p, int r, const char *rel, const char *step)
{
	return sbx_fail_buf(p->err, p->errlen, r, "protect /%s: %s: %s", rel, step, strerror(-r));
}

static bool is_pinned(const struct protector *p, const char *rel)
{
	for (size_t i = 0; i < p->n_pinned; i++)
		if (strcmp(p->pinned[i], rel) == 0)
			return true;
	return false;
}

static int pin_dir(struct protector *p, int fd, int parent_fd, const char *name,
                   const char *rel)
{
	char **nv;
	int r;

	if (is_pinned(p, rel))
		return 0;
	r = bind_over(fd, fd, parent_fd, name, MS_NOSUID | MS_NODEV);
	if (r < 0)
		return fail_at(p, r, rel, "bind the directory onto itself");
	nv = realloc(p->pinned, (p->n_pinned + 1) * sizeof *nv);
	if (!nv || !(nv[p->n_pinned] = strdup(rel))) {
		if (nv)
			p->pinned = nv;
		return fail_at(p, -ENOMEM, rel, "remember the pinned directory");
	}
	p->pinned = nv;
	p->n_pinned++;
	return 0;
}

static int cover(struct protector *p, int fd, int parent_fd, const char *name, const char *rel)
{
	int r = bind_over(p->cover_fd, fd, parent_fd, name, RO_FLAGS);

	return r < 0 ? fail_at(p, r, rel, "cover the link with an empty read-only file") : 0;
}

static int bind_readonly(struct protector *p, int fd, int parent_fd, const char *name,
                         const char *rel)
{
	int r = bind_over(fd, fd, parent_fd, name, RO_FLAGS);

	return r < 0 ? fail_at(p, r, rel, "bind read-only onto itself") : 0;
}

static int block_creation(struct protector *p, int parent_fd, const char *name,
                          const char *rel, bool want_dir)
{
	_cleanup_close_ int fd = -1;
	int r = sbx_mountpoint_at(parent_fd, name, want_dir, &fd);

	if (r == -EROFS || r == -EACCES || r == -EPERM)
		return 0;             /* what we may not create, the sandbox may not either */
	if (r < 0)
		return fail_at(p, r, rel, "create the placeholder");
	r = bind_over(fd, fd, parent_fd, name, RO_FLAGS);
	return r < 0 ? fail_at(p, r, rel, "bind the placeholder read-only") : 0;
}

/* One component of the walk: *cur is the directory it lives in, rel its path from the base. */
static int protect_step(struct protector *p, int *cur, const char *name, char *rel, bool last,
                        bool want_dir, bool *done)
{
	_cleanup_close_ int fd = openat(*cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	int next = -1, r;
	struct stat st;

	*done = true;
	if (fd < 0 && errno == ENOENT)
		return last ? block_creation(p, *cur, name, rel, want_dir) : 0;
	if (fd < 0)
		return fail_at(p, -errno, rel, "open");
	if (fstat(fd, &st) < 0)
		return fail_at(p, -errno, rel, "fstat");
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return cover(p, fd, *cur, name, rel);
	if (S_ISREG(st.st_mode) || last)
		return bind_readonly(p, fd, *cur, name, rel);
	r = pin_dir(p, fd, *cur, name, rel);
	if (r < 0)
		return r;
	r = sbx_open_beneath(*cur, name, &next);   /* the pin now on top */
	if (r < 0)
		return fail_at(p, r, rel, "reopen the pinned directory");
	close(*cur);
	*cur = next;
	*done = false;
	return 0;
}

static int protect_one(struct protector *p, const char *entry)
{
	size_t len = strlen(entry);
	bool want_dir = sbx_placeholder_is_dir(entry);
	char buf[PATH_MAX], rel[PATH_MAX + 16];
	char *save = NULL, *name, *next;
	_cleanup_close_ int cur = -1;
	bool done = false;
	int r;

	if (len >= sizeof buf)
		return fail_at(p, -ENAMETOOLONG, entry, "path");
	memcpy(buf, entry, len + 1);
	snprintf(rel, sizeof rel, "%s", SBX_SANDBOX_ROOT + 1);     /* "workspace" */
	r = sbx_open_beneath(p->basefd, rel, &cur);
	if (r < 0)
		return fail_at(p, r, rel, "open the workspace");
	for (name = strtok_r(buf, "/", &save); name && !done; name = next) {
		next = strtok_r(NULL, "/", &save);
		strcat(rel, "/");
		strcat(rel, name);
		r = protect_step(p, &cur, name, rel, next == NULL, want_dir, &done);
		if (r < 0)
			return r;
	}
	return 0;
}

static int make_cover(int basefd, int *out)
{
	_cleanup_close_ int fd = openat(basefd, COVER_NAME,
	                                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);

	if (fd < 0)
		return -errno;
	close(SBX_TAKE_FD(fd));
	fd = openat(basefd, COVER_NAME, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*out = SBX_TAKE_FD(fd);
	return 0;
}

int sbx_protect_paths(int basefd, const char *const *paths, char *err, size_t errlen)
{
	struct protector p = { .basefd = basefd, .cover_fd = -1, .err = err, .errlen = errlen };
	int r;

	if (!paths || !paths[0])
		return 0;
	r = make_cover(basefd, &p.cover_fd);
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "protect: create the cover file: %s",
		                    strerror(-r));
	for (size_t i = 0; paths[i] && r == 0; i++)
		r = protect_one(&p, paths[i]);
	/* The mounts keep the cover alive; the name must not stay in the new root. */
	unlinkat(basefd, COVER_NAME, 0);
	close(p.cover_fd);
	for (size_t i = 0; i < p.n_pinned; i++)
		free(p.pinned[i]);
	free(p.pinned);
	return r;
}
