/* The public file API. Backends whose files live in a host directory (HOST_FILES) are served
 * here, on the workspace's root fd, with every path resolved beneath it; the others get a
 * normalised root-relative path and do the work themselves. */
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

#include "internal.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/path.h"

#define STATE_DIR ".agentsbx"
#define WRITE_FLAGS_KNOWN  (SBX_WRITE_MKDIRS | SBX_WRITE_EXCL)
#define REMOVE_FLAGS_KNOWN (SBX_REMOVE_RECURSIVE)

static bool host_files(const sbx_workspace *ws)
{
	return ws->caps & SBX_BACKEND_CAP_HOST_FILES;
}

static int check_args(const char *fn, const sbx_workspace *ws, const char *path)
{
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "%s: ws must not be NULL", fn);
	if (!path)
		return sbx_fail(-SBX_EINVAL, "%s: path must not be NULL", fn);
	if (host_files(ws) && ws->root_fd < 0)
		return sbx_fail(-SBX_ESTATE, "%s: the workspace has no root directory open", fn);
	return 0;
}

/* Prefixes the message a helper left ("is a directory") with the operation and the caller's
 * path. Copied first: the message buffer is the one we format into. */
static int fail_on(int code, const char *op, const char *path)
{
	char inner[512];

	snprintf(inner, sizeof inner, "%s", sbx_last_error());
	return sbx_fail(code, "%s '%s': %s", op, path, inner);
}

/* In a read-only workspace only the library's own state folder may change. */
static int refuse_if_read_only(const sbx_workspace *ws, const char *op, const char *path)
{
	_cleanup_free_ char *rel = NULL, *norm = NULL;
	const char *root = ws->ops->root ? ws->ops->root(ws->state) : NULL;

	if (!ws->cfg || !ws->cfg->read_only)
		return 0;
	if (sbx_path_relative(root, path, "path", &rel) == 0 &&
	    sbx_path_normalize(rel, "path", &norm) == 0 &&
	    strncmp(norm, STATE_DIR "/", sizeof STATE_DIR) == 0)
		return 0;
	return sbx_fail(-SBX_EPERM, "%s '%s': the workspace is read-only", op, path);
}

static int relative_path(const sbx_workspace *ws, const char *path, char **rel)
{
	const char *root = ws->ops->root ? ws->ops->root(ws->state) : NULL;

	return sbx_path_relative(root, path, "path", rel);
}

/* For backends that move files themselves: a path with no ".", ".." or leading "/". */
static int backend_path(const sbx_workspace *ws, const char *path, char **norm)
{
	_cleanup_free_ char *rel = NULL;
	int r = relative_path(ws, path, &rel);

	if (r < 0)
		return r;
	return sbx_path_normalize(rel, "path", norm);
}

static int unsupported(const sbx_workspace *ws, const char *what)
{
	return sbx_fail(-SBX_ENOSYS, "backend '%s' does not support %s", ws->ops->name, what);
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

/* ---------------------------------------------------------------------------------------
 * Read
 * ------------------------------------------------------------------------------------- */

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

int sbx_file_read(sbx_workspace *ws, const char *path, char **data, size_t *len)
{
	_cleanup_free_ char *rel = NULL;
	int r;

	if (data)
		*data = NULL;
	if (len)
		*len = 0;
	r = check_args("sbx_file_read", ws, path);
	if (r < 0)
		return r;
	if (!data)
		return sbx_fail(-SBX_EINVAL, "sbx_file_read: data must not be NULL");
	if (!len)
		return sbx_fail(-SBX_EINVAL, "sbx_file_read: len must not be NULL");

	if (!host_files(ws)) {
		if (!ws->ops->file_read)
			return unsupported(ws, "reading files");
		r = backend_path(ws, path, &rel);
		if (r < 0)
			return r;
		return ws->ops->file_read(ws->state, rel, data, len);
	}

	r = relative_path(ws, path, &rel);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = open_regular(ws, rel, path);
	if (fd < 0)
		return fd;
	r = sbx_fs_read_fd(fd, SBX_FILE_READ_MAX, data, len);
	if (r < 0)
		return fail_on(r, "read", path);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Write
 * ------------------------------------------------------------------------------------- */

static int write_checks(const char *path, const void *data, size_t len, unsigned mode,
                        uint32_t flags)
{
	if (!data && len > 0)
		return sbx_fail(-SBX_EINVAL, "sbx_file_write: data must not be NULL (len is %zu)", len);
	if (flags & ~WRITE_FLAGS_KNOWN)
		return sbx_fail(-SBX_EINVAL, "sbx_file_write: flags: unknown bits 0x%" PRIx32,
		                flags & ~(uint32_t)WRITE_FLAGS_KNOWN);
	if (mode & (S_ISUID | S_ISGID))
		return sbx_fail(-SBX_EINVAL, "sbx_file_write: mode 0%o: setuid and setgid bits are "
		                "not allowed", mode);
	if (mode & ~0777u)
		return sbx_fail(-SBX_EINVAL, "sbx_file_write: mode 0%o: only permission bits (0777) "
		                "are allowed", mode);
	return 0;
}

int sbx_file_write(sbx_workspace *ws, const char *path, const void *data, size_t len,
                   unsigned mode, uint32_t flags)
{
	_cleanup_free_ char *rel = NULL, *name = NULL;
	_cleanup_close_ int dirfd = -1;
	int r;

	r = check_args("sbx_file_write", ws, path);
	if (r == 0)
		r = refuse_if_read_only(ws, "write", path);
	if (r < 0)
		return r;
	r = write_checks(path, data, len, mode, flags);
	if (r < 0)
		return r;

	if (!host_files(ws)) {
		if (!ws->ops->file_write)
			return unsupported(ws, "writing files");
		r = backend_path(ws, path, &rel);
		if (r < 0)
			return r;
		if (rel[0] == '\0')
			return sbx_fail(-SBX_EISDIR, "write '%s': is a directory (the workspace root)",
			                path);
		return ws->ops->file_write(ws->state, rel, data, len, mode, flags);
	}

	r = relative_path(ws, path, &rel);
	if (r < 0)
		return r;
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

/* ---------------------------------------------------------------------------------------
 * Stat and list
 * ------------------------------------------------------------------------------------- */

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

#define STAT_COVERS(st, field) \
	((st)->size >= offsetof(sbx_stat, field) + sizeof(((sbx_stat *)0)->field))

/* Copies the fields the caller's struct has room for (its size says which it knows). */
static void stat_copy_known(const sbx_stat *full, sbx_stat *out)
{
	if (STAT_COVERS(out, type))
		out->type = full->type;
	if (STAT_COVERS(out, mode))
		out->mode = full->mode;
	if (STAT_COVERS(out, file_size))
		out->file_size = full->file_size;
	if (STAT_COVERS(out, mtime_sec))
		out->mtime_sec = full->mtime_sec;
	if (STAT_COVERS(out, mtime_nsec))
		out->mtime_nsec = full->mtime_nsec;
}

int sbx_file_stat(sbx_workspace *ws, const char *path, sbx_stat *st)
{
	_cleanup_free_ char *rel = NULL;
	sbx_stat full = { .size = sizeof full };
	struct stat hst;
	int r;

	r = check_args("sbx_file_stat", ws, path);
	if (r < 0)
		return r;
	if (!st)
		return sbx_fail(-SBX_EINVAL, "sbx_file_stat: st must not be NULL");
	if (!STAT_COVERS(st, type))
		return sbx_fail(-SBX_EINVAL, "sbx_file_stat: st->size %zu is too small (set it to "
		                "sizeof(sbx_stat))", st->size);

	if (!host_files(ws)) {
		if (!ws->ops->file_stat)
			return unsupported(ws, "stat");
		r = backend_path(ws, path, &rel);
		if (r < 0)
			return r;
		r = ws->ops->file_stat(ws->state, rel, &full);
		if (r < 0)
			return r;
		stat_copy_known(&full, st);
		return 0;
	}

	r = relative_path(ws, path, &rel);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = sbx_path_open(ws->root_fd, rel, O_PATH | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	if (fstat(fd, &hst) < 0)
		return sbx_fail(sbx_errno_code(errno), "stat '%s': %s", path, strerror(errno));
	stat_from_host(&hst, &full);
	stat_copy_known(&full, st);
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

int sbx_file_list(sbx_workspace *ws, const char *path, char **json_out)
{
	_cleanup_free_ char *rel = NULL;
	struct list_entry *entries = NULL;
	size_t n = 0;
	int r;

	if (json_out)
		*json_out = NULL;
	r = check_args("sbx_file_list", ws, path);
	if (r < 0)
		return r;
	if (!json_out)
		return sbx_fail(-SBX_EINVAL, "sbx_file_list: json_out must not be NULL");

	if (!host_files(ws)) {
		if (!ws->ops->file_list)
			return unsupported(ws, "listing directories");
		r = backend_path(ws, path, &rel);
		if (r < 0)
			return r;
		return ws->ops->file_list(ws->state, rel, json_out);
	}

	r = relative_path(ws, path, &rel);
	if (r < 0)
		return r;
	int fd = sbx_path_open(ws->root_fd, rel, O_RDONLY | O_DIRECTORY, 0);
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

/* ---------------------------------------------------------------------------------------
 * Mkdir and remove
 * ------------------------------------------------------------------------------------- */

static int dir_mode_checks(unsigned mode)
{
	if (mode & (S_ISUID | S_ISGID))
		return sbx_fail(-SBX_EINVAL, "sbx_file_mkdir: mode 0%o: setuid and setgid bits are "
		                "not allowed", mode);
	if (mode & ~(0777u | S_ISVTX))
		return sbx_fail(-SBX_EINVAL, "sbx_file_mkdir: mode 0%o: only permission bits and the "
		                "sticky bit (01777) are allowed", mode);
	return 0;
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

int sbx_file_mkdir(sbx_workspace *ws, const char *path, unsigned mode)
{
	_cleanup_free_ char *rel = NULL, *name = NULL;
	_cleanup_close_ int dirfd = -1;
	int r;

	r = check_args("sbx_file_mkdir", ws, path);
	if (r == 0)
		r = refuse_if_read_only(ws, "mkdir", path);
	if (r < 0)
		return r;
	r = dir_mode_checks(mode);
	if (r < 0)
		return r;
	if (mode == 0)
		mode = 0755;

	if (!host_files(ws)) {
		if (!ws->ops->file_mkdir)
			return unsupported(ws, "creating directories");
		r = backend_path(ws, path, &rel);
		if (r < 0)
			return r;
		if (rel[0] == '\0')
			return 0;
		return ws->ops->file_mkdir(ws->state, rel, mode);
	}

	r = relative_path(ws, path, &rel);
	if (r < 0)
		return r;
	r = existing_dir(ws, rel, path);
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

int sbx_file_remove(sbx_workspace *ws, const char *path, uint32_t flags)
{
	_cleanup_free_ char *rel = NULL, *name = NULL;
	_cleanup_close_ int dirfd = -1;
	int r;

	r = check_args("sbx_file_remove", ws, path);
	if (r == 0)
		r = refuse_if_read_only(ws, "remove", path);
	if (r < 0)
		return r;
	if (flags & ~REMOVE_FLAGS_KNOWN)
		return sbx_fail(-SBX_EINVAL, "sbx_file_remove: flags: unknown bits 0x%" PRIx32,
		                flags & ~(uint32_t)REMOVE_FLAGS_KNOWN);

	if (!host_files(ws)) {
		if (!ws->ops->file_remove)
			return unsupported(ws, "removing files");
		r = backend_path(ws, path, &rel);
		if (r < 0)
			return r;
		if (rel[0] == '\0')
			return sbx_fail(-SBX_EPERM, "remove '%s': the workspace root cannot be removed",
			                path);
		return ws->ops->file_remove(ws->state, rel, flags);
	}

	r = relative_path(ws, path, &rel);
	if (r < 0)
		return r;
	if (names_root(rel))
		return sbx_fail(-SBX_EPERM, "remove '%s': the workspace root cannot be removed", path);
	if (ends_in_dot_component(rel))
		return refuse_dir_reference(ws, rel, "remove", path, -SBX_EPERM, -SBX_EINVAL);
	r = sbx_path_open_parent(ws->root_fd, rel, false, &dirfd, &name);
	if (r < 0)
		return r;
	return remove_entry(dirfd, name, rel[strlen(rel) - 1] == '/', flags, path);
}
