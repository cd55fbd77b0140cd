/* The git guard's pointers (gitguard.h): commondir, "gitdir:" files and .git links send git
 * to another directory for its config and hooks. Each must lead, as the host's git resolves
 * it (relative to where it is written, links followed) but never out of the workspace
 * (RESOLVE_BENEATH from the root), to a directory that the guard then checks as a git dir;
 * otherwise it is quarantined. An absolute path in the sandbox's view of the root (as git
 * worktree writes it) reads as another place on the host: it is rewritten relative. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitguard_int.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/path.h"

/* The text of a small regular file (trailing newlines dropped), or -errno. */
static int read_small(int dirfd, const char *name, char **out)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	                                             O_NOCTTY | O_CLOEXEC);
	struct stat st;
	size_t len;
	int r;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -SBX_EINVAL;
	if ((r = sbx_fs_read_fd(fd, GG_MAX_POINTER, out, &len)) < 0)
		return r;
	while (len && ((*out)[len - 1] == '\n' || (*out)[len - 1] == '\r'))
		(*out)[--len] = '\0';
	if (strlen(*out) != len) {
		free(*out);
		*out = NULL;
		return -SBX_EINVAL;
	}
	return 0;
}

/* A link's target, in memory of its own: chains of pointers recurse, and each level's
 * frame stays small. */
static int read_link(int dirfd, const char *name, char **out)
{
	char buf[GG_MAX_POINTER];
	ssize_t n = readlinkat(dirfd, name, buf, sizeof buf - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (*out = strdup(buf)) ? 0 : -SBX_ENOMEM;
}

char *gg_rel_of_fd(struct sbx_gitguard *g, int fd)
{
	char root[4096], where[4096], link[64];
	ssize_t n;
	size_t rl;

	snprintf(link, sizeof link, "/proc/self/fd/%d", g->root_fd);
	if ((n = readlink(link, root, sizeof root - 1)) < 0)
		return NULL;
	root[n] = '\0';
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	if ((n = readlink(link, where, sizeof where - 1)) < 0)
		return NULL;
	where[n] = '\0';
	rl = strlen(root);
	if (rl == 1)
		return strdup(where + 1);
	if (strncmp(where, root, rl) != 0 || (where[rl] != '/' && where[rl] != '\0'))
		return NULL;
	return strdup(where[rl] ? where + rl + 1 : "");
}

/* Where a pointer written in directory base_rel leads, as the host's git resolves it
 * (relative to base, links followed) but never out of the workspace: the target's
 * root-relative path, or NULL (outside, missing, not a directory). *from_view: the text was
 * absolute in the sandbox's view of the root, which the host reads as another place. */
static char *resolve_pointer(struct sbx_gitguard *g, const char *base_rel, const char *text,
                             bool *from_view)
{
	size_t hl = strlen(g->host_root), vl = strlen(g->view_root);
	_cleanup_free_ char *path = NULL;
	char saved[512];

	*from_view = false;
	if (text[0] == '/') {
		if (!strncmp(text, g->host_root, hl) && (text[hl] == '/' || !text[hl])) {
			path = strdup(text + hl + (text[hl] == '/'));
		} else if (vl > 1 && !strncmp(text, g->view_root, vl) &&
		           (text[vl] == '/' || !text[vl])) {
			path = strdup(text + vl + (text[vl] == '/'));
			*from_view = true;
		} else {
			return NULL;
		}
	} else {
		path = *base_rel ? gg_join(base_rel, text) : strdup(text);
	}
	if (!path)
		return NULL;
	snprintf(saved, sizeof saved, "%s", sbx_last_error());
	int fd = sbx_path_open(g->root_fd, path, O_PATH | O_DIRECTORY, 0);
	sbx_error_set(-SBX_EIO, "%s", saved);
	if (fd < 0)
		return NULL;
	char *rel = gg_rel_of_fd(g, fd);
	close(fd);
	return rel;
}

/* "../" for each component of from, then to: the same place, relative to from. */
static char *relative_text(const char *from, const char *to)
{
	sbx_buf b = { 0 };

	sbx_buf_append(&b, "", 0);
	for (const char *p = from; *p; p++)
		if (p == from || p[-1] == '/')
			sbx_buf_puts(&b, "../");
	sbx_buf_puts(&b, *to ? to : ".");
	return b.oom ? (sbx_buf_free(&b), NULL) : b.data;
}

/* A pointer (file name in dirfd, at rel, written in directory base_rel; prefix is "gitdir: "
 * for .git files, "" for commondir; a link when is_link). Inside the workspace: its target
 * is a git dir the guard checks too (and an absolute path in the sandbox's view is rewritten
 * relative, so that the host and the sandbox find the same place). Otherwise: quarantined,
 * unless it is the user's own from before the open. */
int gg_check_pointer(struct sbx_gitguard *g, int dirfd, const char *name, const char *rel,
                         const char *base_rel, const char *prefix, bool is_link,
                         unsigned depth)
{
	_cleanup_free_ char *text = NULL, *target = NULL, *fixed = NULL;
	bool from_view;
	sbx_buf key = { 0 };
	int r;

	if (is_link) {
		if ((r = read_link(dirfd, name, &text)) < 0)
			return r == -SBX_ENOMEM ? r : 0;
	} else if ((r = read_small(dirfd, name, &text)) < 0) {
		return r == -SBX_ENOMEM ? r : r == -ENOENT ? 0 :
		       gg_quarantine(g, dirfd, name, rel, "pointer", "an unreadable pointer file");
	}
	if ((r = gg_key_of(&key, "pointer", rel, text, strlen(text))) < 0)
		return r;
	bool allowed = sbx_strset_has(&g->allowed, key.data, key.len);
	if (g->baseline && !allowed)
		r = sbx_strset_add(&g->allowed, key.data, key.len) < 0 ? -SBX_ENOMEM : 0;
	sbx_buf_free(&key);
	if (r < 0)
		return r;
	const char *where = text;
	if (*prefix) {
		if (strncmp(text, prefix, strlen(prefix)) != 0)
			return g->baseline || allowed ? 0 :
			       gg_quarantine(g, dirfd, name, rel, "pointer",
			                     "a .git file that is no \"gitdir:\" pointer");
		where = text + strlen(prefix);
	}
	target = resolve_pointer(g, base_rel, where, &from_view);
	if (!target)
		return g->baseline || allowed ? 0 :
		       gg_quarantine(g, dirfd, name, rel, "pointer",
		                     "leads outside the workspace or to nothing");
	if ((r = gg_inspect_git_dir(g, target, depth + 1)) < 0)
		return r;
	if (!from_view || g->baseline || is_link)
		return 0;
	if (!(fixed = relative_text(base_rel, target)))
		return -SBX_ENOMEM;
	_cleanup_free_ char *content = NULL;
	if (asprintf(&content, "%s%s\n", prefix, fixed) < 0)
		return -SBX_ENOMEM;
	if (gg_replace_file(dirfd, name, content, strlen(content)) == 0)
		gg_audit_event(g, "pointer-rewritten", rel);
	return 0;
}

