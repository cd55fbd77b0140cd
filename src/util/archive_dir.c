/* A host directory tree read as an archive: the same entry checks as tar and zip, so a
 * folder and an archive of it give the same stream. Names are visited in sorted order (the
 * stream, and the first error, do not depend on the file system's order); symlinks are read,
 * never followed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "archive_int.h"
#include "cleanup.h"
#include "error.h"
#include "fs.h"

struct names {
	char **v;
	size_t n;
};

static void names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in the directory fd (consumed), sorted, without "." and "..". */
static int read_names(int fd, const char *path, struct names *out)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	size_t cap = 0;

	*out = (struct names){ 0 };
	if (!d) {
		int err = errno;
		close(fd);
		return sbx_fail(sbx_errno_code(err), "'%s': %s", path, strerror(err));
	}
	while ((errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (out->n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **nv = realloc(out->v, ncap * sizeof *nv);
			if (!nv)
				goto oom;
			out->v = nv;
			cap = ncap;
		}
		if (!(out->v[out->n] = strdup(de->d_name)))
			goto oom;
		out->n++;
	}
	if (errno) {
		int err = errno;
		closedir(d);
		names_free(out);
		return sbx_fail(sbx_errno_code(err), "'%s': %s", path, strerror(err));
	}
	closedir(d);
	if (out->n)
		qsort(out->v, out->n, sizeof *out->v, compare_names);
	return 0;
oom:
	closedir(d);
	names_free(out);
	return sbx_fail(-SBX_ENOMEM, "out of memory");
}

static const char *other_kind(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	return "of an unknown kind";
}

static int emit_file(sbx_arc *a, int dirfd, const char *name, const char *path,
                     const struct stat *st)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r;

	if ((uint64_t)st->st_size > sbx_arc_limits(a)->max_file)
		return sbx_arc_admit(a, path, strlen(path), (uint64_t)st->st_size);
	/* O_NONBLOCK: if a FIFO took the file's place meanwhile, the open does not hang. */
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	                                O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return sbx_fail(sbx_errno_code(errno), "'%s': %s", path, strerror(errno));
	r = sbx_fs_read_fd(fd, sbx_arc_limits(a)->max_file, &data, &len);
	if (r == -SBX_EFBIG)        /* it grew since the stat */
		return sbx_arc_admit(a, path, strlen(path),
		                     (uint64_t)sbx_arc_limits(a)->max_file + 1);
	if (r < 0) {
		char inner[256];
		snprintf(inner, sizeof inner, "%s", sbx_last_error());
		return sbx_fail(r, "'%s': %s", path, inner);
	}
	if ((r = sbx_arc_admit(a, path, strlen(path), len)) < 0)
		return r;
	sbx_arc_raw raw = { .name = path, .name_len = strlen(path), .type = SBX_ENTRY_FILE,
	                    .mode = st->st_mode & 0777, .data = data, .size = len };
	return sbx_arc_emit(a, &raw);
}

static int emit_link(sbx_arc *a, int dirfd, const char *name, const char *path)
{
	char target[SBX_ARCHIVE_LINK_MAX + 2];
	ssize_t n = readlinkat(dirfd, name, target, sizeof target);

	if (n < 0)
		return sbx_fail(sbx_errno_code(errno), "'%s': %s", path, strerror(errno));
	if ((size_t)n >= sizeof target - 1)
		return sbx_arc_fail(a, path, strlen(path), "the symlink target is too long");
	sbx_arc_raw raw = { .name = path, .name_len = strlen(path), .type = SBX_ENTRY_SYMLINK,
	                    .link = target, .link_len = (size_t)n };
	return sbx_arc_emit(a, &raw);
}

static int walk(sbx_arc *a, int dirfd, const char *prefix, int depth);

static int walk_entry(sbx_arc *a, int dirfd, const char *name, const char *path, int depth)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return sbx_fail(sbx_errno_code(errno), "'%s': %s", path, strerror(errno));
	if (S_ISREG(st.st_mode))
		return emit_file(a, dirfd, name, path, &st);
	if (S_ISLNK(st.st_mode))
		return emit_link(a, dirfd, name, path);
	if (!S_ISDIR(st.st_mode)) {
		sbx_arc_raw raw = { .name = path, .name_len = strlen(path), .type = SBX_ENTRY_OTHER,
		                    .other = other_kind(st.st_mode) };
		return sbx_arc_emit(a, &raw);
	}
	sbx_arc_raw raw = { .name = path, .name_len = strlen(path), .type = SBX_ENTRY_DIR,
	                    .mode = st.st_mode & 0777 };
	int r = sbx_arc_emit(a, &raw);
	if (r < 0)
		return r;
	/* Bounded: the name checks refuse a directory deeper than the limit before this. */
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sbx_fail(sbx_errno_code(errno), "'%s': %s", path, strerror(errno));
	return walk(a, fd, path, depth + 1);
}

/* Walks the directory fd (consumed); prefix is its path ("" for the top). */
static int walk(sbx_arc *a, int fd, const char *prefix, int depth)
{
	struct names ns;
	int r, dfd = dup(fd);

	if (dfd < 0) {
		int err = errno;
		close(fd);
		return sbx_fail(sbx_errno_code(err), "'%s': %s", *prefix ? prefix : ".",
		                strerror(err));
	}
	r = read_names(fd, *prefix ? prefix : ".", &ns);
	for (size_t i = 0; r == 0 && i < ns.n; i++) {
		_cleanup_free_ char *path = NULL;
		if (asprintf(&path, "%s%s%s", prefix, *prefix ? "/" : "", ns.v[i]) < 0) {
			r = sbx_fail(-SBX_ENOMEM, "out of memory");
			break;
		}
		r = walk_entry(a, dfd, ns.v[i], path, depth);
	}
	names_free(&ns);
	close(dfd);
	return r;
}

int sbx_arc_walk_dir(sbx_arc *a, int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return sbx_fail(sbx_errno_code(errno), "cannot read the directory: %s",
		                strerror(errno));
	return walk(a, fd, "", 0);
}
