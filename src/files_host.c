/* The file primitives of a backend whose files live in a host directory
 * (SBX_BACKEND_CAP_HOST_FILES): every path resolved beneath the workspace's root fd, nothing
 * followed out of it, no FIFO or device ever opened (files_int.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files_int.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/path.h"

static int host_ready(const sbx_workspace *ws, const char *fn)
{
	return ws->root_fd < 0
	       ? sbx_fail(-SBX_ESTATE, "%s: the workspace has no root directory open", fn) : 0;
}

static int host_from_rel(const sbx_workspace *ws, const char *rel, char **out)
{
	if (ws->root_fd < 0)
		return sbx_fail(-SBX_ESTATE, "'%s': the workspace has no root directory open", rel);
	return (*out = strdup(rel)) ? 0 : sbx_fail(-SBX_ENOMEM, "out of memory");
}

/* Prefixes the message a helper left ("is a directory") with the operation and the caller's
 * path. Copied first: the message buffer is the one we format into. */
static int fail_on(int code, const char *op, const char *path)
{
	char inner[512];

	snprintf(inner, sizeof inner, "%s", sbx_last_error());
	return sbx_fail(code, "%s '%s': %s", op, path, inner);
}

/* Does rel lexically name the root ("", ".", "a/..")? Such a path can never name a file. */
static bool names_root(const char *rel)
{
	_cleanup_free_ char *norm = NULL;

	return sbx_path_normalize(rel, "path", &norm) == 0 && norm[0] == '\0';
}

static bool has_trailing_slash(const char *rel)
{
	size_t len = strlen(rel);

	return len > 0 && rel[len - 1] == '/';
}

/* Does rel end in "." or ".." (no name a file could be made under or removed by)? */
static bool ends_in_dot_component(const char *rel)
{
	const char *last = strrchr(rel, '/');

	last = last ? last + 1 : rel;
	return strcmp(last, ".") == 0 || strcmp(last, "..") == 0;
}

/* rel ends in "." or "..": say where it leads. Outside: the escape; the root: `root_code`;
 * elsewhere: `dir_code` (a directory, but not named in a way we can act on). */
static int refuse_dir_reference(sbx_workspace *ws, const char *rel, const char *op,
                                const char *path, int root_code, int dir_code)
{
	struct stat st, root;
	_cleanup_close_ int fd = sbx_path_open(ws->root_fd, rel, O_PATH | O_DIRECTORY, 0);

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) == 0 && fstat(ws->root_fd, &root) == 0 && st.st_dev == root.st_dev &&
	    st.st_ino == root.st_ino)
		return sbx_fail(root_code, "%s '%s': the workspace root %s", op, path,
		                root_code == -SBX_EPERM ? "cannot be removed" : "is a directory");
	return sbx_fail(dir_code, "%s '%s': name the directory itself, not '.' or '..' inside it",
	                op, path);
}

static int file_type(mode_t mode)
{
	if (S_ISREG(mode))
		return SBX_FILE_REGULAR;
	if (S_ISDIR(mode))
		return SBX_FILE_DIRECTORY;
	if (S_ISLNK(mode))
		return SBX_FILE_SYMLINK;
	return SBX_FILE_OTHER;
}

static void stat_from_host(const struct stat *st, sbx_stat *out)
{
	out->type = file_type(st->st_mode);
	out->mode = st->st_mode & 07777;
	out->file_size = (uint64_t)st->st_size;
	out->mtime_sec = st->st_mtim.tv_sec;
	out->mtime_nsec = st->st_mtim.tv_nsec;
}

/* Opens the file the O_PATH fd refers to for reading. Through /proc the kernel reopens that
 * very inode, so a rename racing with us cannot swap the file; without /proc the path is
 * resolved again and must lead to the same file. */
static int reopen_for_reading(sbx_workspace *ws, int pfd, const struct stat *st,
                              const char *rel, const char *path)
{
	const int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	char proc[64];
	struct stat st2;

	snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
	int fd = open(proc, flags);
	if (fd >= 0)
		return fd;
	if (errno != ENOENT)
		return sbx_fail(sbx_errno_code(errno), "read '%s': %s", path, strerror(errno));
	fd = sbx_path_open(ws->root_fd, rel, flags, 0);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st2) < 0 || st2.st_dev != st->st_dev || st2.st_ino != st->st_ino) {
		close(fd);
		return sbx_fail(-SBX_EBUSY, "read '%s': the file was replaced while opening it", path);
	}
	return fd;
}

/* Opens a regular file for reading without ever opening anything else: the path is looked at
 * through O_PATH first, so a FIFO cannot block us and a device is never opened. */
static int open_regular(sbx_workspace *ws, const char *rel, const char *path)
{
	struct stat st;
	_cleanup_close_ int pfd = sbx_path_open(ws->root_fd, rel, O_PATH, 0);

	if (pfd < 0)
		return pfd;
	if (fstat(pfd, &st) < 0)
		return sbx_fail(sbx_errno_code(errno), "read '%s': %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return sbx_fail(-SBX_EISDIR, "read '%s': is a directory", path);
	if (!S_ISREG(st.st_mode))
		return sbx_fail(-SBX_EINVAL, "read '%s': not a regular file", path);
	return reopen_for_reading(ws, pfd, &st, rel, path);
}

/* The cap is judged on the opened file and passed into the read, so a file swapped or grown
 * after any earlier look costs at most max + 1 bytes. */
static int host_read(sbx_workspace *ws, const char *rel, const char *path, size_t max,
                     char **data, size_t *len, sbx_stat *st)
{
	struct stat hst;
	int r;
	_cleanup_close_ int fd = open_regular(ws, rel, path);

	if (fd < 0)
		return fd;
	if (st) {
		if (fstat(fd, &hst) < 0)
			return sbx_fail(sbx_errno_code(errno), "read '%s': %s", path, strerror(errno));
		stat_from_host(&hst, st);
	}
	r = sbx_fs_read_fd(fd, max, data, len);
	if (r < 0)
		return fail_on(r, "read", path);
	return 0;
}

static int host_write(sbx_workspace *ws, const char *rel, const char *path, const void *data,
                      size_t len, unsigned mode, uint32_t flags)
{
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int dirfd = -1;
	int r;

	if (rel[0] == '\0' || has_trailing_slash(rel))
		return sbx_fail(-SBX_EISDIR, "write '%s': names a directory", path);
	if (ends_in_dot_component(rel))
		return refuse_dir_reference(ws, rel, "write", path, -SBX_EISDIR, -SBX_EISDIR);
	r = sbx_path_open_parent(ws->root_fd, rel, flags & SBX_WRITE_MKDIRS, &dirfd, &name);
	if (r < 0)
		return r;
	r = sbx_workspace_write_atomic(ws, dirfd, name, data, len, mode, flags & SBX_WRITE_EXCL);
	if (r < 0)
		return fail_on(r, "write", path);
	return 0;
}

static int host_stat(sbx_workspace *ws, const char *rel, const char *path, sbx_stat *full)
{
	struct stat hst;
	_cleanup_close_ int fd = sbx_path_open(ws->root_fd, rel, O_PATH | O_NOFOLLOW, 0);

	if (fd < 0)
		return fd;
	if (fstat(fd, &hst) < 0)
		return sbx_fail(sbx_errno_code(errno), "stat '%s': %s", path, strerror(errno));
	stat_from_host(&hst, full);
	return 0;
}

struct list_entry {
	char *name;
	const char *type;
	uint64_t size;
	int64_t mtime;
};

static const char *list_type_name(mode_t mode)
{
	if (S_ISREG(mode))
		return "file";
	if (S_ISDIR(mode))
		return "dir";
	if (S_ISLNK(mode))
		return "symlink";
	return "other";
}

static int compare_entries(const void *a, const void *b)
{
	return strcmp(((const struct list_entry *)a)->name, ((const struct list_entry *)b)->name);
}

static void free_entries(struct list_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

/* Reads every entry but "." and ".." (entries that vanish meanwhile are skipped). */
static int read_entries(DIR *d, struct list_entry **out, size_t *count, const char *path)
{
	struct list_entry *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	struct stat st;

	for (;;) {
		errno = 0;
		e = readdir(d);
		if (!e)
			break;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			int err = errno;
			free_entries(v, n);
			return sbx_fail(sbx_errno_code(err), "list '%s': '%s': %s", path, e->d_name,
			                strerror(err));
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 32;
			struct list_entry *nv = realloc(v, ncap * sizeof *nv);
			if (!nv) {
				free_entries(v, n);
				return sbx_fail(-SBX_ENOMEM, "list '%s': out of memory", path);
			}
			v = nv;
			cap = ncap;
		}
		char *name = strdup(e->d_name);
		if (!name) {
			free_entries(v, n);
			return sbx_fail(-SBX_ENOMEM, "list '%s': out of memory", path);
		}
		/* Sizes of directories and devices mean nothing portable; report 0. */
		bool sized = S_ISREG(st.st_mode) || S_ISLNK(st.st_mode);
		v[n++] = (struct list_entry){ name, list_type_name(st.st_mode),
		                              sized ? (uint64_t)st.st_size : 0, st.st_mtim.tv_sec };
	}
	if (errno) {
		int err = errno;
		free_entries(v, n);
		return sbx_fail(sbx_errno_code(err), "list '%s': %s", path, strerror(err));
	}
	*out = v;
	*count = n;
	return 0;
}

static int entries_to_json(const struct list_entry *v, size_t n, char **json, const char *path)
{
	sbx_buf b = { 0 };

	sbx_buf_puts(&b, "[");
	for (size_t i = 0; i < n; i++) {
		sbx_buf_puts(&b, i ? ",{\"name\":" : "{\"name\":");
		sbx_buf_json_string(&b, v[i].name, strlen(v[i].name));
		sbx_buf_printf(&b, ",\"type\":\"%s\",\"size\":%" PRIu64 ",\"mtime\":%" PRId64 "}",
		               v[i].type, v[i].size, v[i].mtime);
	}
	sbx_buf_puts(&b, "]");
	if (b.oom) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "list '%s': out of memory", path);
	}
	*json = sbx_buf_steal(&b, NULL);
	if (!*json)
		return sbx_fail(-SBX_ENOMEM, "list '%s': out of memory", path);
	return 0;
}

static int host_list(sbx_workspace *ws, const char *rel, const char *path, char **json_out)
{
	struct list_entry *entries = NULL;
	size_t n = 0;
	int r, fd = sbx_path_open(ws->root_fd, rel, O_RDONLY | O_DIRECTORY, 0);

	if (fd < 0)
		return fd;
	DIR *d = fdopendir(fd);
	if (!d) {
		int err = errno;
		close(fd);
		return sbx_fail(sbx_errno_code(err), "list '%s': %s", path, strerror(err));
	}
	r = read_entries(d, &entries, &n, path);
	closedir(d);
	if (r < 0)
		return r;
	if (n > 0)
		qsort(entries, n, sizeof *entries, compare_entries);
	r = entries_to_json(entries, n, json_out, path);
	free_entries(entries, n);
	return r;
}

/* An existing directory (also through a symlink that stays beneath the root) is success. */
static int existing_dir(sbx_workspace *ws, const char *rel, const char *path)
{
	int fd = sbx_path_open(ws->root_fd, rel, O_PATH | O_DIRECTORY, 0);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (fd == -SBX_ENOTDIR && !has_trailing_slash(rel) && !ends_in_dot_component(rel)) {
		/* Is it the last component that is not a directory? */
		_cleanup_close_ int lfd = sbx_path_open(ws->root_fd, rel, O_PATH, 0);
		if (lfd >= 0)
			return sbx_fail(-SBX_EEXIST, "mkdir '%s': exists and is not a directory", path);
		return sbx_fail(-SBX_ENOTDIR, "mkdir '%s': a parent is not a directory", path);
	}
	return fd;
}

static int remove_entry(int dirfd, const char *name, bool trailing_slash, uint32_t flags,
                        const char *path)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return sbx_fail(sbx_errno_code(errno), "remove '%s': %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		if (trailing_slash)
			return sbx_fail(-SBX_ENOTDIR, "remove '%s': not a directory", path);
		if (unlinkat(dirfd, name, 0) < 0)
			return sbx_fail(sbx_errno_code(errno), "remove '%s': %s", path, strerror(errno));
		return 0;
	}
	if (flags & SBX_REMOVE_RECURSIVE) {
		int r = sbx_fs_remove_tree(dirfd, name);
		return r < 0 ? fail_on(r, "remove", path) : 0;
	}
	if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0)
		return 0;
	if (errno == ENOTEMPTY || errno == EEXIST)
		return sbx_fail(-SBX_ENOTEMPTY, "remove '%s': directory not empty (use "
		                "SBX_REMOVE_RECURSIVE)", path);
	return sbx_fail(sbx_errno_code(errno), "remove '%s': %s", path, strerror(errno));
}

static int host_mkdir(sbx_workspace *ws, const char *rel, const char *path, unsigned mode)
{
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int dirfd = -1;
	int r = existing_dir(ws, rel, path);

	if (r != -SBX_ENOENT)
		return r;
	r = sbx_path_open_parent(ws->root_fd, rel, true, &dirfd, &name);
	if (r < 0)
		return r;
	if (mkdirat(dirfd, name, mode) == 0) {
		sbx_fs_adopt_owner(dirfd, name);
		return 0;
	}
	if (errno == EEXIST)
		/* Made meanwhile, or a dangling symlink: say which. */
		return existing_dir(ws, rel, path);
	return sbx_fail(sbx_errno_code(errno), "mkdir '%s': %s", path, strerror(errno));
}

static int host_remove(sbx_workspace *ws, const char *rel, const char *path, uint32_t flags)
{
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int dirfd = -1;
	int r;

	if (names_root(rel))
		return sbx_fail(-SBX_EPERM, "remove '%s': the workspace root cannot be removed", path);
	if (ends_in_dot_component(rel))
		return refuse_dir_reference(ws, rel, "remove", path, -SBX_EPERM, -SBX_EINVAL);
	r = sbx_path_open_parent(ws->root_fd, rel, false, &dirfd, &name);
	if (r < 0)
		return r;
	return remove_entry(dirfd, name, rel[strlen(rel) - 1] == '/', flags, path);
}

const struct sbx_files_ops sbx_files_host = {
	.ready = host_ready,
	.to_rel = sbx_files_relative_path,
	.from_rel = host_from_rel,
	.read = host_read,
	.write = host_write,
	.stat = host_stat,
	.list = host_list,
	.mkdir = host_mkdir,
	.remove = host_remove,
};
