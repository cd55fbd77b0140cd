/* Paths inside the workspace: from what a caller wrote to a root-relative path, and from that
 * to a file descriptor that provably lies beneath the root.
 *
 * Resolution uses openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) where the kernel has it. The
 * fallback walks the path one component at a time from the root fd, never following a symlink
 * blindly: each link is read and its target spliced into the rest of the path, so the walk
 * itself decides every step. ".." pops a stack of directory fds that were reached by descending
 * from the root, which gives the kernel's physical ".." semantics without ever asking the file
 * system where ".." leads (an attacker could move directories underneath us). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "buf.h"
#include "cleanup.h"
#include "error.h"
#include "fs.h"
#include "path.h"

#ifndef SYS_openat2
#define SYS_openat2 437 /* the same number on every architecture but alpha */
#endif

/* The kernel's bound on symlinks followed in one lookup. */
#define WALK_MAX_LINKS 40
/* Directory fds the fallback keeps open; deeper levels are reopened by name when ".." needs
 * them, so a path of thousands of components cannot exhaust the process's fds. */
#define WALK_FD_WINDOW 32
/* The fallback's own code for "this step would leave the root". */
#define WALK_ESCAPE (-SBX_EESCAPE)
/* Not an error: the component was a symlink whose target must be walked next. Negative and
 * outside the errno range, so it is never mistaken for an fd (1 is one, if stdout is closed). */
#define WALK_FOLLOW (-100000)

static const char *shown(const char *rel)
{
	return *rel ? rel : ".";
}

static bool is_dot(const char *s, size_t n)
{
	return n == 1 && s[0] == '.';
}

static bool is_dotdot(const char *s, size_t n)
{
	return n == 2 && s[0] == '.' && s[1] == '.';
}

static int dup_string(const char *s, size_t n, char **out)
{
	char *copy = strndup(s, n);

	if (!copy)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	*out = copy;
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * From the caller's text to a root-relative path
 * ------------------------------------------------------------------------------------- */

/* The next component of *p, skipping slashes and "." (they do not change where an absolute
 * path points, and callers write "//workspace/./a"). Returns its length, 0 at the end. */
static size_t next_named_component(const char **p, const char **start)
{
	for (;;) {
		while (**p == '/')
			(*p)++;
		*start = *p;
		while (**p && **p != '/')
			(*p)++;
		size_t n = (size_t)(*p - *start);
		if (!is_dot(*start, n))
			return n;
	}
}

/* If absolute `path` is root_view or lies under it, returns what follows the root in path;
 * else NULL. Compared component by component so "/workspace2" is not under "/workspace". */
static const char *strip_root(const char *root_view, const char *path)
{
	const char *r = root_view, *p = path;

	if (!root_view || root_view[0] != '/')
		return NULL;
	for (;;) {
		const char *rs, *ps;
		size_t rn = next_named_component(&r, &rs);
		if (rn == 0)
			return p;
		size_t pn = next_named_component(&p, &ps);
		if (pn != rn || memcmp(rs, ps, rn) != 0)
			return NULL;
	}
}

int sbx_path_relative(const char *root_view, const char *path, const char *what, char **rel)
{
	size_t len;

	*rel = NULL;
	if (!what)
		what = "path";
	if (!path)
		return sbx_fail(-SBX_EINVAL, "%s: must not be NULL", what);
	len = strlen(path);
	if (len >= PATH_MAX)
		return sbx_fail(-SBX_ENAMETOOLONG, "%s: too long (%zu bytes, the limit is %d)", what,
		                len, PATH_MAX - 1);
	if (!sbx_utf8_valid(path, len))
		return sbx_fail(-SBX_EINVAL, "%s: not valid UTF-8", what);
	if (path[0] != '/')
		return dup_string(path, len, rel);

	const char *rest = strip_root(root_view, path);
	if (!rest)
		return sbx_fail(-SBX_EESCAPE, "%s '%s' is outside the workspace root '%s'", what,
		                path, root_view ? root_view : "(none)");
	while (*rest == '/')
		rest++;
	return dup_string(rest, strlen(rest), rel);
}

int sbx_path_relative_in(const char *root_view, const char *host_view, const char *path,
                         const char *what, char **rel)
{
	int r = sbx_path_relative(root_view, path, what, rel);

	if (r != -SBX_EESCAPE || !host_view || host_view[0] != '/' ||
	    (root_view && !strcmp(root_view, host_view)))
		return r;
	if (sbx_path_relative(host_view, path, what, rel) == 0) {
		sbx_error_clear();
		return 0;
	}
	return sbx_fail(-SBX_EESCAPE, "%s '%s' is outside the workspace root '%s' (on the host "
	                "'%s')", what ? what : "path", path, root_view ? root_view : "(none)",
	                host_view);
}

int sbx_path_normalize(const char *rel, const char *what, char **out)
{
	_cleanup_free_ char *norm = NULL;
	size_t len, used = 0;
	const char *p;

	*out = NULL;
	if (!what)
		what = "path";
	if (!rel)
		return sbx_fail(-SBX_EINVAL, "%s: must not be NULL", what);
	len = strlen(rel);
	if (len >= PATH_MAX)
		return sbx_fail(-SBX_ENAMETOOLONG, "%s: too long (%zu bytes, the limit is %d)", what,
		                len, PATH_MAX - 1);
	if (rel[0] == '/')
		return sbx_fail(-SBX_EESCAPE, "%s '%s': escapes the workspace root", what, rel);
	norm = malloc(len + 1);
	if (!norm)
		return sbx_fail(-SBX_ENOMEM, "out of memory");

	p = rel;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *start = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - start);
		if (is_dot(start, n))
			continue;
		if (is_dotdot(start, n)) {
			if (used == 0)
				return sbx_fail(-SBX_EESCAPE, "%s '%s': escapes the workspace root",
				                what, rel);
			char *slash = memrchr(norm, '/', used);
			used = slash ? (size_t)(slash - norm) : 0;
			continue;
		}
		if (n > NAME_MAX)
			return sbx_fail(-SBX_ENAMETOOLONG, "%s '%s': a component is longer than %d bytes",
			                what, rel, NAME_MAX);
		if (used)
			norm[used++] = '/';
		memcpy(norm + used, start, n);
		used += n;
	}
	norm[used] = '\0';
	*out = SBX_TAKE_PTR(norm);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * openat2
 * ------------------------------------------------------------------------------------- */

enum { OPENAT2_UNKNOWN, OPENAT2_WORKS, OPENAT2_MISSING };

static atomic_int openat2_state = OPENAT2_UNKNOWN;
static atomic_bool fallback_forced;

void sbx_path_force_fallback(bool on)
{
	atomic_store(&fallback_forced, on);
}

/* A size below the first version of struct open_how is refused with EINVAL by every kernel that
 * has the call, before any lookup; ENOSYS means an old kernel, EPERM a seccomp filter (container
 * runtimes) that does not know the call. */
static int probe_openat2(void)
{
	struct open_how how = { 0 };
	long fd = syscall(SYS_openat2, AT_FDCWD, ".", &how, (size_t)0);

	if (fd >= 0) {
		close((int)fd);
		return OPENAT2_WORKS;
	}
	return errno == ENOSYS || errno == EPERM ? OPENAT2_MISSING : OPENAT2_WORKS;
}

static bool use_openat2(void)
{
	if (atomic_load(&fallback_forced))
		return false;
	int state = atomic_load(&openat2_state);
	if (state == OPENAT2_UNKNOWN) {
		/* Racing probes agree, so a plain store is enough. */
		state = probe_openat2();
		atomic_store(&openat2_state, state);
	}
	return state == OPENAT2_WORKS;
}

static bool creates_file(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

/* Returns the fd, WALK_ESCAPE or -errno; -ENOSYS means "use the fallback". */
static int open_beneath_kernel(int rootfd, const char *rel, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC),
		.mode = creates_file(flags) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};

	for (int tries = 0;; tries++) {
		long fd = syscall(SYS_openat2, rootfd, *rel ? rel : ".", &how, sizeof how);
		if (fd >= 0)
			return (int)fd;
		/* EAGAIN: a concurrent rename or mount kept the kernel from proving that ".."
		 * stayed beneath the root; it asks us to try again. If renames keep coming, the
		 * walk (which never asks where ".." leads) answers instead. */
		if (errno == EINTR || (errno == EAGAIN && tries < 16))
			continue;
		if (errno == EAGAIN)
			return -ENOSYS;
		if (errno == ENOSYS) {
			/* A sandbox that hid the call after the probe ran. */
			atomic_store(&openat2_state, OPENAT2_MISSING);
			return -ENOSYS;
		}
		return errno == EXDEV ? WALK_ESCAPE : -errno;
	}
}

/* ---------------------------------------------------------------------------------------
 * The fallback: a component walk
 * ------------------------------------------------------------------------------------- */

struct walk_level {
	char *name;     /* the entry's name in the level below; NULL for the root */
	int fd;         /* O_PATH directory fd, or -1 when closed to save fds */
};

struct walk {
	struct walk_level *levels; /* levels[0] is the root: fd = rootfd, not owned */
	size_t depth;              /* index of the current directory */
	size_t cap;
	size_t lowest_open;        /* levels lowest_open..depth (and 0) hold fds */
	unsigned links;
	char link_target[PATH_MAX];
};

static int walk_init(struct walk *w, int rootfd)
{
	memset(w, 0, sizeof *w);
	w->cap = 16;
	w->levels = calloc(w->cap, sizeof *w->levels);
	if (!w->levels)
		return -ENOMEM;
	w->levels[0].fd = rootfd;
	w->lowest_open = 1;
	return 0;
}

static void walk_free(struct walk *w)
{
	for (size_t i = 1; i <= w->depth; i++) {
		if (w->levels[i].fd >= 0)
			close(w->levels[i].fd);
		free(w->levels[i].name);
	}
	free(w->levels);
}

static int walk_top(const struct walk *w)
{
	return w->levels[w->depth].fd;
}

/* Keeps at most WALK_FD_WINDOW fds above the root by closing the lowest ones. */
static void walk_trim_fds(struct walk *w)
{
	while (w->depth >= w->lowest_open && w->depth - w->lowest_open + 1 > WALK_FD_WINDOW) {
		close(w->levels[w->lowest_open].fd);
		w->levels[w->lowest_open].fd = -1;
		w->lowest_open++;
	}
}

static int walk_push(struct walk *w, int fd, const char *name)
{
	if (w->depth + 1 >= w->cap) {
		size_t cap = w->cap * 2;
		struct walk_level *levels = realloc(w->levels, cap * sizeof *levels);
		if (!levels) {
			close(fd);
			return -ENOMEM;
		}
		w->levels = levels;
		w->cap = cap;
	}
	char *copy = strdup(name);
	if (!copy) {
		close(fd);
		return -ENOMEM;
	}
	w->depth++;
	w->levels[w->depth] = (struct walk_level){ .name = copy, .fd = fd };
	walk_trim_fds(w);
	return 0;
}

/* Reopens levels 1..depth (all closed: fds are closed from the bottom up) by descending from
 * the root by name, keeping the top WALK_FD_WINDOW open. Every step is a plain child lookup
 * that does not follow symlinks, so it cannot leave the root. */
static int walk_reopen(struct walk *w)
{
	size_t keep_from = w->depth > WALK_FD_WINDOW ? w->depth - WALK_FD_WINDOW + 1 : 1;
	int root = w->levels[0].fd, cur = root;

	for (size_t i = 1; i <= w->depth; i++) {
		int fd = openat(cur, w->levels[i].name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int err = errno;
		if (cur != root && i - 1 < keep_from)
			close(cur);
		if (fd < 0)
			return -err;
		if (i >= keep_from)
			w->levels[i].fd = fd;
		cur = fd;
	}
	w->lowest_open = keep_from;
	return 0;
}

static int walk_pop(struct walk *w)
{
	if (w->depth == 0)
		return WALK_ESCAPE;
	close(w->levels[w->depth].fd);
	free(w->levels[w->depth].name);
	w->depth--;
	if (w->depth == 0) {
		w->lowest_open = 1;
		return 0;
	}
	return w->depth < w->lowest_open ? walk_reopen(w) : 0;
}

/* Reads the target of the symlink open as fd (O_PATH) into w->link_target, counting it
 * against the lookup's budget. */
static int walk_read_link(struct walk *w, int fd)
{
	struct statfs sfs;
	ssize_t n;

	if (++w->links > WALK_MAX_LINKS)
		return -ELOOP;
	/* /proc links (fd/N, root, cwd, exe) jump without a path: never follow them, as
	 * RESOLVE_NO_MAGICLINKS refuses them. procfs only matters if mounted beneath the root. */
	if (fstatfs(fd, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC)
		return -ELOOP;
	n = readlinkat(fd, "", w->link_target, sizeof w->link_target);
	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof w->link_target)
		return -ENAMETOOLONG;
	w->link_target[n] = '\0';
	if (w->link_target[0] == '/')
		return WALK_ESCAPE;
	return WALK_FOLLOW;
}

/* Steps into directory `name` of the current directory, or reports a symlink to follow. */
static int walk_descend(struct walk *w, const char *name)
{
	struct stat st;
	int fd = openat(walk_top(w), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int err = errno;
		close(fd);
		return -err;
	}
	if (S_ISLNK(st.st_mode)) {
		int r = walk_read_link(w, fd);
		close(fd);
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		close(fd);
		return -ENOTDIR;
	}
	return walk_push(w, fd, name);
}

/* The final open failed with err. If the entry is a symlink, that is why (O_NOFOLLOW refuses
 * it with ELOOP, or ENOTDIR with O_DIRECTORY): read it through an O_PATH fd, so the link we
 * follow is the one we looked at. An ELOOP without a symlink means the entry changed since;
 * look the name up again, counted against the link budget so a flapping entry cannot spin us. */
static int walk_check_final_link(struct walk *w, const char *name, int err)
{
	struct stat st;
	_cleanup_close_ int fd = openat(walk_top(w), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode))
		return walk_read_link(w, fd);
	if (err != ELOOP)
		return -err;
	if (++w->links > WALK_MAX_LINKS)
		return -ELOOP;
	snprintf(w->link_target, sizeof w->link_target, "%s", name);
	return WALK_FOLLOW;
}

/* Opens the last component with the caller's flags, never letting the kernel follow a link:
 * a symlink comes back as WALK_FOLLOW unless the caller asked not to follow it. */
static int walk_open_last(struct walk *w, const char *name, int flags, mode_t mode)
{
	/* O_CREAT|O_EXCL never follows a final symlink in the kernel either. */
	bool follow = !(flags & O_NOFOLLOW) && !((flags & O_CREAT) && (flags & O_EXCL));
	struct stat st;
	int fd = openat(walk_top(w), name, flags | O_NOFOLLOW | O_CLOEXEC, mode);

	if (fd < 0) {
		if ((errno == ELOOP || errno == ENOTDIR) && follow)
			return walk_check_final_link(w, name, errno);
		return -errno;
	}
	if (!follow || !(flags & O_PATH))
		return fd;
	/* O_PATH|O_NOFOLLOW hands back the link itself; the caller wants its target. */
	if (fstat(fd, &st) < 0) {
		int err = errno;
		close(fd);
		return -err;
	}
	if (S_ISLNK(st.st_mode)) {
		int r = walk_read_link(w, fd);
		close(fd);
		return r;
	}
	return fd;
}

/* Replaces the pending path with link_target followed by what came after the link. */
static int walk_splice(struct walk *w, char **pending, const char **p, const char *rest)
{
	size_t tn = strlen(w->link_target), rn = strlen(rest);
	char *next = malloc(tn + rn + 1);

	if (!next)
		return -ENOMEM;
	memcpy(next, w->link_target, tn);
	memcpy(next + tn, rest, rn + 1);
	free(*pending);
	*pending = next;
	*p = next;
	return 0;
}

static int walk_resolve(struct walk *w, const char *rel, int flags, mode_t mode)
{
	_cleanup_free_ char *pending = strdup(rel);
	const char *p = pending;
	char name[NAME_MAX + 1];

	if (!pending)
		return -ENOMEM;
	if (*p == '/')
		return WALK_ESCAPE;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p) { /* "", "a/..", "dir/": the current directory itself */
			int fd = openat(walk_top(w), ".", flags | O_CLOEXEC, mode);
			return fd < 0 ? -errno : fd;
		}
		const char *start = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - start);
		const char *rest = p;
		int r;

		if (is_dot(start, n))
			continue;
		if (is_dotdot(start, n)) {
			r = walk_pop(w);
			if (r < 0)
				return r;
			continue;
		}
		if (n > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, start, n);
		name[n] = '\0';
		/* A trailing slash makes the last component a directory that must be entered,
		 * symlink or not, as the kernel does. */
		if (*rest == '\0') {
			r = walk_open_last(w, name, flags, mode);
		} else {
			r = walk_descend(w, name);
			/* "newdir/" cannot be created as a file; the kernel says EISDIR. */
			if (r == -ENOENT && (flags & O_CREAT) && rest[strspn(rest, "/")] == '\0')
				r = -EISDIR;
		}
		if (r == WALK_FOLLOW) {
			r = walk_splice(w, &pending, &p, rest);
			if (r < 0)
				return r;
			continue;
		}
		if (r < 0 || *rest == '\0')
			return r;
	}
}

static int open_beneath_walk(int rootfd, const char *rel, int flags, mode_t mode)
{
	struct walk w;
	int r = walk_init(&w, rootfd);

	if (r < 0)
		return r;
	r = walk_resolve(&w, rel, flags, mode);
	walk_free(&w);
	return r;
}

int sbx_path_open(int rootfd, const char *rel, int flags, mode_t mode)
{
	size_t len;
	int fd = -ENOSYS;

	if (!rel)
		return sbx_fail(-SBX_EINVAL, "path: must not be NULL");
	len = strlen(rel);
	if (len >= PATH_MAX)
		return sbx_fail(-SBX_ENAMETOOLONG, "path: too long (%zu bytes, the limit is %d)", len,
		                PATH_MAX - 1);
	if (use_openat2())
		fd = open_beneath_kernel(rootfd, rel, flags, mode);
	if (fd == -ENOSYS)
		fd = open_beneath_walk(rootfd, rel, flags, mode);
	if (fd >= 0)
		return fd;
	if (fd == WALK_ESCAPE)
		return sbx_fail(-SBX_EESCAPE, "path '%s': escapes the workspace root", shown(rel));
	int r = sbx_fail(sbx_errno_code(-fd), "path '%s': %s", shown(rel), strerror(-fd));
	errno = -fd;   /* EMFILE and the like have no code of their own: callers look here */
	return r;
}

/* ---------------------------------------------------------------------------------------
 * Parents
 * ------------------------------------------------------------------------------------- */

/* mkdir -p of `dir` beneath the root, one prefix at a time, so each step is resolved (and
 * its symlinks checked) by sbx_path_open before anything is created in it. */
static int make_parents(int rootfd, const char *dir)
{
	_cleanup_free_ char *prefix = strdup(dir);
	size_t i = 0, len = strlen(dir);

	if (!prefix)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	while (i < len) {
		while (i < len && dir[i] == '/')
			i++;
		size_t start = i;
		while (i < len && dir[i] != '/')
			i++;
		size_t n = i - start;
		if (n == 0 || is_dot(dir + start, n) || is_dotdot(dir + start, n))
			continue;

		prefix[i] = '\0';
		int fd = sbx_path_open(rootfd, prefix, O_PATH | O_DIRECTORY, 0);
		if (fd >= 0) {
			close(fd);
		} else if (fd != -SBX_ENOENT) {
			return fd;
		} else {
			prefix[start] = '\0';
			_cleanup_close_ int parent = sbx_path_open(rootfd, prefix, O_PATH | O_DIRECTORY, 0);
			if (parent < 0)
				return parent;
			memcpy(prefix + start, dir + start, n);
			/* EEXIST: made concurrently, or a dangling symlink; the next open tells. */
			if (mkdirat(parent, prefix + start, 0755) < 0 && errno != EEXIST)
				return sbx_fail(sbx_errno_code(errno), "path '%s': cannot create directory: %s",
				                prefix, strerror(errno));
			sbx_fs_adopt_owner(parent, prefix + start);
		}
		prefix[i] = dir[i];
	}
	return 0;
}

int sbx_path_open_parent(int rootfd, const char *rel, bool mkdirs, int *dirfd, char **name)
{
	_cleanup_free_ char *copy = rel ? strdup(rel) : NULL;
	_cleanup_free_ char *last = NULL;
	size_t len;
	char *slash;
	const char *parent;
	int fd, r;

	*dirfd = -1;
	*name = NULL;
	if (!rel)
		return sbx_fail(-SBX_EINVAL, "path: must not be NULL");
	if (!copy)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (rel[0] == '/')
		return sbx_fail(-SBX_EESCAPE, "path '%s': escapes the workspace root", rel);
	len = strlen(copy);
	while (len > 0 && copy[len - 1] == '/')
		copy[--len] = '\0';
	if (len == 0)
		return sbx_fail(-SBX_EINVAL, "path '%s': names the workspace root, not an entry in it",
		                shown(rel));
	slash = strrchr(copy, '/');
	if (slash) {
		*slash = '\0';
		r = dup_string(slash + 1, strlen(slash + 1), &last);
		parent = copy;
	} else {
		r = dup_string(copy, len, &last);
		parent = "";
	}
	if (r < 0)
		return r;
	if (is_dot(last, strlen(last)) || is_dotdot(last, strlen(last)))
		return sbx_fail(-SBX_EINVAL, "path '%s': must end in a name, not '.' or '..'", rel);
	if (strlen(last) > NAME_MAX)
		return sbx_fail(-SBX_ENAMETOOLONG, "path '%s': the name is longer than %d bytes", rel,
		                NAME_MAX);

	fd = sbx_path_open(rootfd, parent, O_PATH | O_DIRECTORY, 0);
	if (fd == -SBX_ENOENT && mkdirs) {
		r = make_parents(rootfd, parent);
		if (r < 0)
			return r;
		fd = sbx_path_open(rootfd, parent, O_PATH | O_DIRECTORY, 0);
	}
	if (fd < 0)
		return fd;
	*dirfd = fd;
	*name = SBX_TAKE_PTR(last);
	return 0;
}

const char *sbx_path_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (strncmp(path, dir, n) != 0 || path[n] != '/' || !path[n + 1])
		return NULL;
	return path + n + 1;
}
