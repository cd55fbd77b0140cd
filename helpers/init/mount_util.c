/* fd-based mount primitives; see mount_util.h for the rules they keep. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/error.h"
#include "init/mount_util.h"
#include "util/cleanup.h"

/* mount_setattr(2) arrived in 5.12 and glibc 2.36; older headers lack its definitions. */
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
struct mount_attr {
	__u64 attr_set, attr_clr, propagation, userns_fd;
};
#endif

bool sbx_mount_force_fallback;

/* Probed on first use: false once the kernel answered ENOSYS. */
static bool have_openat2 = true, have_mount_setattr = true, have_open_tree = true;

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

/* ---- walking paths without following links ---- */

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

/* The portable walk: one component at a time, O_NOFOLLOW, each checked with fstat. */
static int walk_beneath(int dirfd, const char *rel, bool create, int *out)
{
	char buf[PATH_MAX];
	char *save = NULL, *comp, *next;
	_cleanup_close_ int cur = -1;
	int at = dirfd;

	if (strlen(rel) >= sizeof buf)
		return -ENAMETOOLONG;
	strcpy(buf, rel);
	for (comp = strtok_r(buf, "/", &save); comp; comp = next) {
		_cleanup_close_ int fd = -1;
		struct stat st;
		bool last;
		int r;

		next = strtok_r(NULL, "/", &save);
		last = next == NULL;
		r = open_component(at, comp, create, &fd);
		if (r < 0)
			return r;
		if (fstat(fd, &st) < 0)
			return -errno;
		if (S_ISLNK(st.st_mode))
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

/* The same walk in one system call (5.6+): RESOLVE_BENEATH refuses to leave dirfd,
 * RESOLVE_NO_SYMLINKS refuses every link on the way and at the end. -ENOSYS: not available. */
static int openat2_beneath(int dirfd, const char *rel, int *out)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	if (sbx_mount_force_fallback || !have_openat2)
		return -ENOSYS;
	fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
	if (fd < 0 && errno == ENOSYS)
		have_openat2 = false;
	if (fd < 0)
		return -errno;
	*out = (int)fd;
	return 0;
}

/* Rules shared by both walks: relative, and no "." or ".." anywhere (RESOLVE_BENEATH would
 * accept a ".." that stays inside; we never need one). 1: the path is empty. */
static int check_rel(const char *rel)
{
	const char *p = rel;

	if (rel[0] == '/')
		return -EINVAL;
	while (*p == '/')
		p++;
	if (!*p)
		return 1;
	while (*p) {
		const char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);

		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return -EINVAL;
		p = *end ? end + 1 : end;
	}
	return 0;
}

static int require_dir(int *fd)
{
	struct stat st;

	if (fstat(*fd, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	close(*fd);
	*fd = -1;
	return -ENOTDIR;
}

int sbx_open_beneath(int dirfd, const char *rel, int *out)
{
	int r = check_rel(rel);

	if (r != 0)
		return r < 0 ? r : dup_cloexec(dirfd, out);
	r = openat2_beneath(dirfd, rel, out);
	if (r != -ENOSYS)
		return r;
	return walk_beneath(dirfd, rel, false, out);
}

int sbx_mkdirs_beneath(int dirfd, const char *rel, int *out)
{
	int r = check_rel(rel);

	if (r != 0)
		return r < 0 ? r : dup_cloexec(dirfd, out);
	r = openat2_beneath(dirfd, rel, out);
	if (r == 0)
		return require_dir(out);
	if (r != -ENOSYS && r != -ENOENT)
		return r;
	return walk_beneath(dirfd, rel, true, out);
}

/* ---- mount points and binds ---- */

int sbx_mountpoint_at(int dirfd, const char *name, bool directory, int *out)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	/* What we just created is what we want: only an existing entry needs checking. */
	if (directory) {
		if (mkdirat(dirfd, name, 0755) == 0) {
			fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0)
				return -errno;
			*out = SBX_TAKE_FD(fd);
			return 0;
		}
	} else {
		fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0) {
			*out = SBX_TAKE_FD(fd);
			return 0;
		}
	}
	if (errno != EEXIST)
		return -errno;
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

/* The bind by fds alone (5.2+): a detached copy of the source's tree, moved onto the target.
 * mount(2) would name both as /proc/self/fd/N, and each such name is a walk through procfs
 * that makes its inodes anew: with some forty binds per sandbox, a visible part of its start.
 * -ENOSYS: not available. */
static int bind_by_open_tree(int src_fd, int dst_fd)
{
	_cleanup_close_ int tree = -1;

	if (sbx_mount_force_fallback || !have_open_tree)
		return -ENOSYS;
	tree = (int)syscall(SYS_open_tree, src_fd, "",
	                    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
	if (tree < 0) {
		if (errno == ENOSYS)
			have_open_tree = false;
		return -errno;
	}
	if (syscall(SYS_move_mount, tree, "", dst_fd, "",
	            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

int sbx_bind_fds(int src_fd, int dst_fd)
{
	struct sbx_fd_path src, dst;
	int r = bind_by_open_tree(src_fd, dst_fd);

	if (r != -ENOSYS)
		return r;
	if (mount(sbx_fd_path(&src, src_fd), sbx_fd_path(&dst, dst_fd), NULL, MS_BIND | MS_REC,
	          NULL) < 0)
		return -errno;
	return 0;
}

/* ---- mount ids and the mount table ---- */

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

/* ---- remounting: mount_setattr, or the remount(2) fallback ---- */

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

static int remount_top_legacy(int fd, unsigned long flags)
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
	r = sbx_open_beneath(rootfd, rec->point + 1, &fd);
	if (r < 0)
		return r;
	r = sbx_mount_id_of(fd, &id);
	if (r < 0)
		return r;
	if (id != rec->id)
		return 0;
	return remount_top_legacy(fd, flags);
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

static __u64 mount_attrs_of(unsigned long ms_flags)
{
	return ((ms_flags & MS_RDONLY) ? MOUNT_ATTR_RDONLY : 0) |
	       ((ms_flags & MS_NOSUID) ? MOUNT_ATTR_NOSUID : 0) |
	       ((ms_flags & MS_NODEV) ? MOUNT_ATTR_NODEV : 0) |
	       ((ms_flags & MS_NOEXEC) ? MOUNT_ATTR_NOEXEC : 0);
}

/* mount_setattr(2) (5.12+) only adds the flags asked for, so the locked ones stay without
 * being read first, and AT_RECURSIVE reaches every submount in one call. -ENOSYS: not
 * available. */
static int setattr_at(int dirfd, const char *path, unsigned long flags, unsigned int at_flags)
{
	struct mount_attr attr = { .attr_set = mount_attrs_of(flags) };

	if (sbx_mount_force_fallback || !have_mount_setattr)
		return -ENOSYS;
	if (syscall(SYS_mount_setattr, dirfd, path, at_flags, &attr, sizeof attr) == 0)
		return 0;
	if (errno == ENOSYS)
		have_mount_setattr = false;
	return -errno;
}

static int setattr(int fd, unsigned long flags, bool recursive)
{
	return setattr_at(fd, "", flags, AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0));
}

int sbx_remount_top(int fd, unsigned long flags)
{
	int r = setattr(fd, flags, false);

	return r != -ENOSYS ? r : remount_top_legacy(fd, flags);
}

int sbx_remount_tree(int top_fd, unsigned long flags)
{
	struct stat st;
	int r = setattr(top_fd, flags, true);

	if (r != -ENOSYS)
		return r;
	r = remount_top_legacy(top_fd, flags);
	if (r < 0)
		return r;
	if (fstat(top_fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))             /* nothing can be mounted below a file */
		return 0;
	return remount_below(top_fd, flags);
}

int sbx_remount_tree_at(int parent_fd, const char *name, unsigned long flags)
{
	_cleanup_close_ int top = -1;
	int r = setattr_at(parent_fd, name, flags, AT_SYMLINK_NOFOLLOW | AT_RECURSIVE);

	if (r != -ENOSYS)
		return r;
	r = sbx_open_beneath(parent_fd, name, &top);
	return r < 0 ? r : sbx_remount_tree(top, flags);
}

/* ---- binding and mounting at a path in the new root ---- */

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

static int move_onto(int tree_fd, int dst_fd)
{
	if (syscall(SYS_move_mount, tree_fd, "", dst_fd, "",
	            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

/* Binds (or, for a tree, attaches) src_fd at rel beneath basefd and remounts it. */
static int place_at(int basefd, int src_fd, bool tree, const char *rel, unsigned long flags,
                    char *err, size_t errlen)
{
	const char *what = tree ? "attach" : "bind";
	_cleanup_close_ int parent_fd = -1, mp = -1;
	const char *parent, *name;
	char buf[PATH_MAX];
	struct stat st;
	int r;

	if (fstat(src_fd, &st) < 0)
		return sbx_fail_buf(err, errlen, -errno, "%s /%s: fstat of the source: %s", what,
		                    rel, strerror(errno));
	r = split_rel(rel, buf, sizeof buf, &parent, &name);
	if (r == 0)
		r = sbx_mkdirs_beneath(basefd, parent, &parent_fd);
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "%s /%s: create the parent directories: %s",
		                    what, rel, strerror(-r));
	r = sbx_mountpoint_at(parent_fd, name, S_ISDIR(st.st_mode), &mp);
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "%s /%s: create the mount point: %s", what, rel,
		                    strerror(-r));
	r = tree ? move_onto(src_fd, mp) : sbx_bind_fds(src_fd, mp);
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "%s /%s: %s", what, rel, strerror(-r));
	r = sbx_remount_tree_at(parent_fd, name, flags);
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "remount /%s%s: %s", rel,
		                    (flags & MS_RDONLY) ? " read-only" : "", strerror(-r));
	return 0;
}

int sbx_bind_at(int basefd, int src_fd, const char *rel, unsigned long flags, char *err,
                size_t errlen)
{
	return place_at(basefd, src_fd, false, rel, flags, err, errlen);
}

int sbx_attach_at(int basefd, int tree_fd, const char *rel, unsigned long flags, char *err,
                  size_t errlen)
{
	return place_at(basefd, tree_fd, true, rel, flags, err, errlen);
}

int sbx_mount_new_at(int basefd, const char *rel, const char *fstype, unsigned long flags,
                     const char *data, char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	struct sbx_fd_path p;
	int r = sbx_mkdirs_beneath(basefd, rel, &fd);

	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "mount %s on /%s: create the directory: %s",
		                    fstype, rel, strerror(-r));
	if (mount(fstype, sbx_fd_path(&p, fd), fstype, flags, data) < 0)
		return sbx_fail_buf(err, errlen, -errno, "mount %s on /%s: %s", fstype, rel,
		                    strerror(errno));
	return 0;
}
