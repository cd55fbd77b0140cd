/* fd-based mount primitives; see mount_util.h for the rules they keep. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "init/errmsg.h"
#include "init/mount_util.h"
#include "util/cleanup.h"

const char *sbx_fd_path(struct sbx_fd_path *p, int fd)
{
	snprintf(p->s, sizeof p->s, "/proc/self/fd/%d", fd);
	return p->s;
}

bool sbx_rel_path_ok(const char *rel)
{
	const char *p = rel;

	if (!rel || !*rel || *rel == '/')
		return false;
	while (*p) {
		const char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);

		if (len == 0 && *end)                       /* "a//b" */
			return false;
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (len > NAME_MAX)
			return false;
		p = *end ? end + 1 : end;
	}
	return true;
}

static int dup_cloexec(int fd, int *out)
{
	int r = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (r < 0)
		return -errno;
	*out = r;
	return 0;
}

/* Opens one component below at, creating it as a directory when asked. Never follows it. */
static int open_component(int at, const char *name, bool create, int *out)
{
	int fd = openat(at, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(at, name, 0755) < 0 && errno != EEXIST)
			return -errno;
		fd = openat(at, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	*out = fd;
	return 0;
}

static int walk_beneath(int dirfd, const char *rel, bool create, bool allow_final_link, int *out)
{
	char buf[PATH_MAX];
	char *save = NULL, *comp, *next;
	_cleanup_close_ int cur = -1;
	int at = dirfd;

	if (strlen(rel) >= sizeof buf)
		return -ENAMETOOLONG;
	if (rel[0] == '/')
		return -EINVAL;
	strcpy(buf, rel);
	comp = strtok_r(buf, "/", &save);
	if (!comp)
		return dup_cloexec(dirfd, out);
	for (; comp; comp = next) {
		_cleanup_close_ int fd = -1;
		struct stat st;
		bool last;
		int r;

		next = strtok_r(NULL, "/", &save);
		last = next == NULL;
		if (strcmp(comp, "..") == 0 || strcmp(comp, ".") == 0)
			return -EINVAL;
		r = open_component(at, comp, create, &fd);
		if (r < 0)
			return r;
		if (fstat(fd, &st) < 0)
			return -errno;
		if (S_ISLNK(st.st_mode) && !(last && allow_final_link))
			return -ELOOP;
		if ((!last || create) && !S_ISDIR(st.st_mode))
			return -ENOTDIR;
		if (cur >= 0)
			close(cur);
		cur = SBX_TAKE_FD(fd);
		at = cur;
	}
	*out = SBX_TAKE_FD(cur);
	return 0;
}

int sbx_open_beneath(int dirfd, const char *rel, bool allow_final_link, int *out)
{
	return walk_beneath(dirfd, rel, false, allow_final_link, out);
}

int sbx_mkdirs_beneath(int dirfd, const char *rel, int *out)
{
	return walk_beneath(dirfd, rel, true, false, out);
}

int sbx_mountpoint_at(int dirfd, const char *name, bool directory, int *out)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (directory) {
		if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
			return -errno;
	} else {
		fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			return -errno;
		if (fd >= 0)
			close(SBX_TAKE_FD(fd));
	}
	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode))
		return -ELOOP;
	if (directory != !!S_ISDIR(st.st_mode))
		return directory ? -ENOTDIR : -EISDIR;
	*out = SBX_TAKE_FD(fd);
	return 0;
}

int sbx_bind_fds(int src_fd, int dst_fd)
{
	struct sbx_fd_path src, dst;

	if (mount(sbx_fd_path(&src, src_fd), sbx_fd_path(&dst, dst_fd), NULL, MS_BIND | MS_REC,
	          NULL) < 0)
		return -errno;
	return 0;
}

/* The per-mount flags a remount must repeat: in a user namespace the kernel locks the ones a
 * host mount already had (MNT_LOCK_*) and answers EPERM to a remount that would clear one.
 * Atime flags are left out on purpose: a remount that names none keeps them as they are. */
static unsigned long flags_to_keep(unsigned long st_flags)
{
	unsigned long keep = 0;

	if (st_flags & ST_RDONLY)
		keep |= MS_RDONLY;
	if (st_flags & ST_NOSUID)
		keep |= MS_NOSUID;
	if (st_flags & ST_NODEV)
		keep |= MS_NODEV;
	if (st_flags & ST_NOEXEC)
		keep |= MS_NOEXEC;
#if defined(ST_NOSYMFOLLOW) && defined(MS_NOSYMFOLLOW)
	if (st_flags & ST_NOSYMFOLLOW)
		keep |= MS_NOSYMFOLLOW;
#endif
	return keep;
}

int sbx_remount_top(int fd, unsigned long flags)
{
	struct sbx_fd_path p;
	struct statvfs sv;

	if (fstatvfs(fd, &sv) < 0)
		return -errno;
	flags |= flags_to_keep(sv.f_flag);
	if (mount(NULL, sbx_fd_path(&p, fd), NULL, MS_REMOUNT | MS_BIND | flags, NULL) < 0)
		return -errno;
	return 0;
}

int sbx_mount_id_of(int fd, int *id)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;
	int r = -ENOENT;

	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0)
		if (sscanf(line, "mnt_id: %d", id) == 1) {
			r = 0;
			break;
		}
	free(line);
	fclose(f);
	return r;
}

struct mount_rec {
	int id, parent;
	char *point;           /* mount point, relative to our root, unescaped */
};

struct mount_table {
	struct mount_rec *v;
	size_t n;
};

static void mount_table_free(struct mount_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].point);
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

/* mountinfo writes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s)
{
	char *w = s;

	for (char *r = s; *r; ) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

static int mount_table_read(struct mount_table *t)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0, room = 0;
	int r = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		struct mount_rec rec = { 0 };

		if (sscanf(line, "%d %d %*s %*s %ms", &rec.id, &rec.parent, &rec.point) != 3)
			continue;
		unescape_octal(rec.point);
		if (t->n == room) {
			size_t nroom = room ? room * 2 : 64;
			struct mount_rec *nv = realloc(t->v, nroom * sizeof *nv);

			if (!nv) {
				free(rec.point);
				r = -ENOMEM;
				break;
			}
			t->v = nv;
			room = nroom;
		}
		t->v[t->n++] = rec;
	}
	free(line);
	fclose(f);
	if (r < 0)
		mount_table_free(t);
	return r;
}

static bool id_in(const int *ids, size_t n, int id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* Remounts the mount at rec's mount point if that path still leads to it. A path that leads to
 * another mount means rec is covered by a later mount: unreachable, so nothing to do. */
static int remount_rec(int rootfd, const struct mount_rec *rec, unsigned long flags)
{
	_cleanup_close_ int fd = -1;
	int id, r;

	if (rec->point[0] != '/')
		return -EINVAL;
	r = sbx_open_beneath(rootfd, rec->point + 1, false, &fd);
	if (r < 0)
		return r;
	r = sbx_mount_id_of(fd, &id);
	if (r < 0)
		return r;
	if (id != rec->id)
		return 0;
	return sbx_remount_top(fd, flags);
}

/* A recursive bind copies the source's submounts with the flags they had; each needs the same
 * remount as the top, or a read-only /usr could hide a writable mount below it. */
static int remount_below(int top_fd, unsigned long flags)
{
	struct mount_table t = { 0 };
	_cleanup_free_ int *ids = NULL;
	_cleanup_close_ int rootfd = -1;
	size_t n_ids = 1;
	bool added;
	int top_id, r;

	r = sbx_mount_id_of(top_fd, &top_id);
	if (r < 0)
		return r;
	r = mount_table_read(&t);
	if (r < 0)
		return r;
	ids = calloc(t.n + 1, sizeof *ids);
	if (!ids) {
		r = -ENOMEM;
		goto out;
	}
	rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		r = -errno;
		goto out;
	}
	ids[0] = top_id;
	do {
		added = false;
		for (size_t i = 0; i < t.n && r == 0; i++) {
			if (id_in(ids, n_ids, t.v[i].id) || !id_in(ids, n_ids, t.v[i].parent))
				continue;
			ids[n_ids++] = t.v[i].id;
			added = true;
			r = remount_rec(rootfd, &t.v[i], flags);
		}
	} while (added && r == 0);
out:
	mount_table_free(&t);
	return r;
}

int sbx_mount_is_ours(int id, bool *ours)
{
	struct mount_table t = { 0 };
	int r = mount_table_read(&t);

	if (r < 0)
		return r;
	*ours = false;
	for (size_t i = 0; i < t.n && !*ours; i++)
		*ours = t.v[i].id == id;
	mount_table_free(&t);
	return 0;
}

int sbx_remount_tree(int top_fd, unsigned long flags)
{
	struct stat st;
	int r = sbx_remount_top(top_fd, flags);

	if (r < 0)
		return r;
	if (fstat(top_fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))             /* nothing can be mounted below a file */
		return 0;
	return remount_below(top_fd, flags);
}

/* Splits "a/b/c/" into parent "a/b" and name "c" (in buf). */
static int split_rel(const char *rel, char *buf, size_t len, const char **parent,
                     const char **name)
{
	size_t n = strlen(rel);
	char *slash;

	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(buf, rel, n + 1);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash) {
		*parent = "";
		*name = buf;
	} else {
		*slash = '\0';
		*parent = buf;
		*name = slash + 1;
	}
	return 0;
}

int sbx_bind_at(int basefd, int src_fd, const char *rel, unsigned long flags, char *err,
                size_t errlen)
{
	_cleanup_close_ int parent_fd = -1, mp = -1, top = -1;
	const char *parent, *name;
	char buf[PATH_MAX];
	struct stat st;
	int r;

	if (fstat(src_fd, &st) < 0)
		return sbx_init_fail(err, errlen, -errno, "bind /%s: fstat of the source: %s", rel,
		                     strerror(errno));
	r = split_rel(rel, buf, sizeof buf, &parent, &name);
	if (r == 0)
		r = sbx_mkdirs_beneath(basefd, parent, &parent_fd);
	if (r < 0)
		return sbx_init_fail(err, errlen, r, "bind /%s: create the parent directories: %s",
		                     rel, strerror(-r));
	r = sbx_mountpoint_at(parent_fd, name, S_ISDIR(st.st_mode), &mp);
	if (r < 0)
		return sbx_init_fail(err, errlen, r, "bind /%s: create the mount point: %s", rel,
		                     strerror(-r));
	r = sbx_bind_fds(src_fd, mp);
	if (r < 0)
		return sbx_init_fail(err, errlen, r, "bind /%s: %s", rel, strerror(-r));
	r = sbx_open_beneath(parent_fd, name, false, &top);
	if (r < 0)
		return sbx_init_fail(err, errlen, r, "bind /%s: reopen the new mount: %s", rel,
		                     strerror(-r));
	r = sbx_remount_tree(top, flags);
	if (r < 0)
		return sbx_init_fail(err, errlen, r, "remount /%s%s: %s", rel,
		                     (flags & MS_RDONLY) ? " read-only" : "", strerror(-r));
	return 0;
}

int sbx_mount_new_at(int basefd, const char *rel, const char *fstype, unsigned long flags,
                     const char *data, char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	struct sbx_fd_path p;
	int r = sbx_mkdirs_beneath(basefd, rel, &fd);

	if (r < 0)
		return sbx_init_fail(err, errlen, r, "mount %s on /%s: create the directory: %s",
		                     fstype, rel, strerror(-r));
	if (mount(fstype, sbx_fd_path(&p, fd), fstype, flags, data) < 0)
		return sbx_init_fail(err, errlen, -errno, "mount %s on /%s: %s", fstype, rel,
		                     strerror(errno));
	return 0;
}
