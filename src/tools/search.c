/* The directory walk shared by Glob and Grep. Each level lists its directory completely,
 * sorts the names and only then visits them, so the output order does not depend on the file
 * system, and each level holds one fd: the depth bound also bounds the fds. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "tools/search.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/path.h"

/* The library's state folder at the workspace root (tool_util.c and helpers/init/sandbox.h
 * name it too): its files are not the project's, so searches below the root skip it. */
#define STATE_DIR ".agentsbx"
/* A .gitignore bigger than this is not a real one; it is left unread. */
#define GITIGNORE_MAX (1u << 20)
/* How many entries pass between two looks at the clock. */
#define DEADLINE_EVERY 64

typedef struct walk_state {
	sbx_walk *w;
	char path[PATH_MAX];     /* root-relative path of the entry at hand */
	size_t sub_off;          /* where the base-relative part of path starts */
	sbx_ignore_stack ignores;
	unsigned since_clock;
	bool stop;
} walk_state;

typedef struct listed {
	size_t name_off;
	unsigned char type;
} listed;

typedef struct listing {
	char *names;
	size_t used, cap;
	listed *v;
	size_t n, vcap;
} listing;

bool sbx_walk_skipped_name(const char *name)
{
	static const char *const vcs[] = { ".git", ".svn", ".hg", ".bzr", ".jj", ".sl" };

	if (name[0] != '.')
		return false;
	for (size_t i = 0; i < SBX_ARRAY_SIZE(vcs); i++)
		if (strcmp(name, vcs[i]) == 0)
			return true;
	return false;
}

/* ---------------------------------------------------------------------------------------
 * .gitignore files
 * ------------------------------------------------------------------------------------- */

bool sbx_walk_fds_exhausted(int err)
{
	return err == EMFILE || err == ENFILE;
}

/* openat() that, when file descriptors run out, asks the caller to close some of its own
 * and tries once more; when that does not help either, the walk stops there (a walk that
 * went on would report a tree without the parts it could not open). */
static int open_in_walk(walk_state *s, int dirfd, const char *name, int flags)
{
	int fd = openat(dirfd, name, flags);

	if (fd >= 0 || !sbx_walk_fds_exhausted(errno))
		return fd;
	if (s->w->relieve_fds && s->w->relieve_fds(s->w->ud)) {
		fd = openat(dirfd, name, flags);
		if (fd >= 0 || !sbx_walk_fds_exhausted(errno))
			return fd;
	}
	s->w->fd_exhausted = errno;
	s->stop = true;
	return -1;
}

/* Reads dirfd's .gitignore into *out (NULL when there is none or it is unusable: a symlink,
 * not a regular file, too big). Fails only for out of memory. */
static int load_gitignore(walk_state *s, int dirfd, sbx_gitignore **out)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	*out = NULL;
	fd = open_in_walk(s, dirfd, ".gitignore",
	                  O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	r = sbx_fs_read_fd(fd, GITIGNORE_MAX, &text, &len);
	if (r == -SBX_ENOMEM)
		return r;
	if (r < 0)
		return 0;
	return sbx_gitignore_parse(text, len, out);
}

static int push_gitignore(walk_state *s, int dirfd, size_t dir_len)
{
	sbx_gitignore *g;
	int r = load_gitignore(s, dirfd, &g);

	if (r < 0)
		return r;
	return sbx_ignore_stack_push(&s->ignores, g, dir_len ? dir_len + 1 : 0);
}

/* The rules of the root and of every directory between it and the base apply below the
 * base too (not to the base itself: a directory named explicitly is searched). */
static int push_ancestor_gitignores(walk_state *s, const char *base)
{
	size_t len = strlen(base);

	for (size_t i = 0; i < len; i++) {
		if (i > 0 && base[i] != '/')
			continue;
		size_t dir_len = i;
		char anc[PATH_MAX];
		memcpy(anc, base, dir_len);
		anc[dir_len] = '\0';
		_cleanup_close_ int fd = sbx_path_open(s->w->root_fd, anc,
		                                       O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (fd < 0)
			continue;
		int r = push_gitignore(s, fd, dir_len);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Listing one directory
 * ------------------------------------------------------------------------------------- */

static void listing_free(listing *l)
{
	free(l->names);
	free(l->v);
}

static int listing_add(listing *l, const char *name, unsigned char type)
{
	size_t n = strlen(name) + 1;

	if (l->used + n > l->cap) {
		size_t cap = l->cap ? l->cap : 4096;
		while (cap < l->used + n)
			cap *= 2;
		char *p = realloc(l->names, cap);
		if (!p)
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		l->names = p;
		l->cap = cap;
	}
	if (l->n == l->vcap) {
		size_t cap = l->vcap ? l->vcap * 2 : 64;
		listed *v = reallocarray(l->v, cap, sizeof *v);
		if (!v)
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		l->v = v;
		l->vcap = cap;
	}
	memcpy(l->names + l->used, name, n);
	l->v[l->n++] = (listed){ l->used, type };
	l->used += n;
	return 0;
}

static int by_name(const void *a, const void *b, void *names)
{
	const listed *x = a, *y = b;

	return strcmp((const char *)names + x->name_off, (const char *)names + y->name_off);
}

/* Reads every entry of d except "." and "..", sorted by name. Returns 0, or -SBX_ENOMEM;
 * a read error ends the listing early (what was read is still visited, and the directory
 * counts as unreadable). */
static int list_dir(walk_state *s, DIR *d, listing *l)
{
	struct dirent *e;

	for (;;) {
		errno = 0;
		if (!(e = readdir(d)))
			break;
		if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
			continue;
		if (listing_add(l, e->d_name, e->d_type) < 0)
			return -SBX_ENOMEM;
	}
	if (errno)
		s->w->dirs_unreadable++;
	if (l->n > 1)
		qsort_r(l->v, l->n, sizeof *l->v, by_name, l->names);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * The walk
 * ------------------------------------------------------------------------------------- */

static bool deadline_passed(walk_state *s)
{
	if (!s->w->deadline_ms || ++s->since_clock < DEADLINE_EVERY)
		return false;
	s->since_clock = 0;
	if (sbx_now_ms() < s->w->deadline_ms)
		return false;
	s->w->timed_out = true;
	return true;
}

static unsigned char type_of(int dirfd, const char *name, unsigned char d_type)
{
	struct stat st;

	if (d_type != DT_UNKNOWN)
		return d_type;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return DT_UNKNOWN;
	if (S_ISDIR(st.st_mode))
		return DT_DIR;
	if (S_ISREG(st.st_mode))
		return DT_REG;
	return S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
}

static int walk_dir(walk_state *s, int fd, size_t len, unsigned depth);

static bool ignored(walk_state *s, size_t len, bool is_dir)
{
	return s->w->gitignore && sbx_ignore_stack_ignored(&s->ignores, s->path, len, is_dir);
}

static int enter_dir(walk_state *s, const sbx_walk_entry *e, unsigned depth)
{
	int fd;

	if (ignored(s, e->rel_len, true))
		return 0;
	if (s->w->want_dir && !s->w->want_dir(s->w->ud, e))
		return 0;
	if (depth + 1 > SBX_WALK_MAX_DEPTH) {
		s->w->dirs_too_deep++;
		return 0;
	}
	/* O_NOFOLLOW: the entry may have been swapped for a symlink since it was listed. */
	fd = open_in_walk(s, e->dirfd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* Gone or swapped meanwhile is not a failure to read; anything else is. */
		if (!s->w->fd_exhausted && errno != ENOENT && errno != ELOOP && errno != ENOTDIR)
			s->w->dirs_unreadable++;
		return 0;
	}
	return walk_dir(s, fd, e->rel_len, depth + 1);
}

static int visit(walk_state *s, int dirfd, size_t len, const char *name, unsigned char d_type,
                 unsigned depth)
{
	size_t nlen = strlen(name), sep = len ? 1 : 0;
	sbx_walk_entry e;
	unsigned char type;
	int r = 0;

	if (sbx_walk_skipped_name(name) || (len == 0 && strcmp(name, STATE_DIR) == 0))
		return 0;
	if (len + sep + nlen >= sizeof s->path) {
		s->w->dirs_too_deep++;   /* not reachable by name: counted as too deep */
		return 0;
	}
	type = type_of(dirfd, name, d_type);
	if (type != DT_DIR && type != DT_REG)
		return 0;   /* symlinks, special files and entries gone since the listing */
	if (sep)
		s->path[len] = '/';
	memcpy(s->path + len + sep, name, nlen + 1);
	e = (sbx_walk_entry){ s->path, len + sep + nlen, s->path + s->sub_off,
	                      len + sep + nlen - s->sub_off, s->path + len + sep, dirfd,
	                      type == DT_DIR, false };
	if (type == DT_DIR) {
		r = enter_dir(s, &e, depth);
	} else {
		e.ignored = ignored(s, e.rel_len, false);
		r = s->w->on_file(s->w->ud, &e);
		if (r == 1) {
			s->stop = true;
			r = 0;
		}
	}
	s->path[len] = '\0';
	return r;
}

/* Walks the directory open on fd (taken over) whose root-relative path is s->path[0..len). */
static int walk_dir(walk_state *s, int fd, size_t len, unsigned depth)
{
	size_t ignores_before = s->ignores.n;
	listing l = { 0 };
	DIR *d;
	int r = 0;

	d = fdopendir(fd);
	if (!d) {
		close(fd);
		s->w->dirs_unreadable++;
		return 0;
	}
	if (s->w->gitignore)
		r = push_gitignore(s, dirfd(d), len);
	if (r == 0)
		r = list_dir(s, d, &l);
	for (size_t i = 0; r == 0 && i < l.n && !s->stop; i++) {
		if (deadline_passed(s)) {
			s->stop = true;
			break;
		}
		r = visit(s, dirfd(d), len, l.names + l.v[i].name_off, l.v[i].type, depth);
	}
	sbx_ignore_stack_truncate(&s->ignores, ignores_before);
	listing_free(&l);
	closedir(d);
	return r;
}

/* The base directory, with open_in_walk's care for file descriptors (sbx_path_open leaves
 * the errno of its failing call). */
static int open_base(sbx_walk *w)
{
	const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	int fd = sbx_path_open(w->root_fd, w->base, flags, 0);

	if (fd >= 0 || !sbx_walk_fds_exhausted(errno))
		return fd;
	if (w->relieve_fds && w->relieve_fds(w->ud)) {
		fd = sbx_path_open(w->root_fd, w->base, flags, 0);
		if (fd >= 0 || !sbx_walk_fds_exhausted(errno))
			return fd;
	}
	w->fd_exhausted = errno;
	return fd;
}

int sbx_walk_run(sbx_walk *w)
{
	_cleanup_free_ walk_state *s = calloc(1, sizeof *s);
	size_t base_len = strlen(w->base);
	int fd, r = 0;

	w->timed_out = false;
	w->dirs_unreadable = w->dirs_too_deep = 0;
	w->fd_exhausted = 0;
	if (!s)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (base_len >= sizeof s->path)
		return sbx_fail(-SBX_ENAMETOOLONG, "path '%s': too long", w->base);
	s->w = w;
	memcpy(s->path, w->base, base_len + 1);
	s->sub_off = base_len ? base_len + 1 : 0;
	fd = open_base(w);
	if (fd < 0)
		return w->fd_exhausted ? 0 : fd;
	if (w->gitignore)
		r = push_ancestor_gitignores(s, w->base);
	if (r == 0)
		r = walk_dir(s, fd, base_len, 0);
	else
		close(fd);
	sbx_ignore_stack_free(&s->ignores);
	return r;
}
