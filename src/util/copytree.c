/* Copying a tree (util/fs.h: sbx_fs_copy_tree), for the snapshot baseline: a copy of the
 * workdir at open, copied back at reset.
 *
 * The source is a workspace, and the commands of another handle on the same workdir may be
 * changing it while the copy runs. So:
 *  - nothing but a regular file is ever opened for reading: each entry is looked at through
 *    an O_PATH fd, and a regular file is reopened through /proc/self/fd, which reaches that
 *    very inode (a FIFO swapped in after the look cannot block the copy; a device is never
 *    opened). Without /proc the name is opened again, non-blocking, and must lead to the same
 *    inode;
 *  - holes are copied as holes (SEEK_DATA/SEEK_HOLE): a 2 GiB file with 4 KiB on disk costs
 *    4 KiB, not 2 GiB of the host's temporary space;
 *  - a file is copied up to the size it had when opened, so one that a command keeps growing
 *    cannot keep the copy going;
 *  - an entry that vanishes or changes kind between the listing and the open is left out, as
 *    are entries of other kinds (FIFOs, sockets, devices) and other mounts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "cleanup.h"
#include "error.h"
#include "fs.h"

#define COPY_MAX_DEPTH 256
#define CHUNK ((off_t)1 << 30)
#define READ_FLAGS (O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

/* Errors of an entry that is gone, or is no longer what the listing said it was. */
static bool vanished(int err)
{
	return err == ENOENT || err == ELOOP || err == ENOTDIR || err == ENXIO;
}

static bool same_inode(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Opens name in src for reading if, and only if, it is a regular file: 0 with *fd (and *st
 * its state), 0 with *fd -1 when it is not one (or no longer there), or -errno. */
static int open_regular(int src, const char *name, int *fd, struct stat *st)
{
	_cleanup_close_ int path_fd = openat(src, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat seen;
	char proc[64];

	*fd = -1;
	if (path_fd < 0)
		return vanished(errno) ? 0 : -errno;
	if (fstat(path_fd, &seen) < 0)
		return -errno;
	if (!S_ISREG(seen.st_mode))
		return 0;
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", path_fd);
	*fd = open(proc, READ_FLAGS);
	if (*fd < 0 && errno == ENOENT)
		*fd = openat(src, name, READ_FLAGS | O_NOFOLLOW);
	if (*fd < 0)
		return vanished(errno) ? 0 : -errno;
	if (fstat(*fd, st) < 0 || !S_ISREG(st->st_mode) || !same_inode(st, &seen)) {
		close(*fd);
		*fd = -1;
	}
	return 0;
}

/* [off, end) of in into out at the same offsets, by read and write. */
static int copy_range_plain(int in, int out, off_t off, off_t end)
{
	char buf[65536];

	while (off < end) {
		size_t want = end - off < (off_t)sizeof buf ? (size_t)(end - off) : sizeof buf;
		ssize_t n = pread(in, buf, want, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;     /* the file shrank meanwhile */
		for (ssize_t done = 0; done < n;) {
			ssize_t w = pwrite(out, buf + done, (size_t)(n - done), off + done);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return w < 0 ? -errno : -EIO;
			done += w;
		}
		off += n;
	}
	return 0;
}

/* [off, end) of in into out at the same offsets: in the kernel where it can. */
static int copy_range(int in, int out, off_t off, off_t end)
{
	while (off < end) {
		off_t from = off, to = off;
		size_t len = (size_t)(end - off < CHUNK ? end - off : CHUNK);
		ssize_t n = copy_file_range(in, &from, out, &to, len, 0);

		if (n > 0) {
			off += n;
			continue;
		}
		if (n == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
			return -errno;
		return copy_range_plain(in, out, off, end);
	}
	return 0;
}

/* The first size bytes of in: its data ranges only, holes left as holes; a file system
 * without SEEK_DATA is copied whole. */
static int copy_contents(int in, int out, off_t size)
{
	off_t pos = 0;
	int r;

	while (pos < size) {
		off_t data = lseek(in, pos, SEEK_DATA), hole;

		if (data < 0 && errno == ENXIO)
			break;                            /* only a hole is left */
		if (data < 0) {
			if (errno != EINVAL && errno != EOPNOTSUPP)
				return -errno;
			return (r = copy_range(in, out, pos, size)) < 0 ? r
			       : ftruncate(out, size) < 0 ? -errno : 0;
		}
		if (data >= size)
			break;
		if ((hole = lseek(in, data, SEEK_HOLE)) < 0)
			return -errno;
		if (hole > size)
			hole = size;
		if ((r = copy_range(in, out, data, hole)) < 0)
			return r;
		pos = hole;
	}
	return ftruncate(out, size) < 0 ? -errno : 0;
}

static int copy_regular(int src, int dst, const char *name)
{
	_cleanup_close_ int in = -1, out = -1;
	struct stat st;
	int r = open_regular(src, name, &in, &st);

	if (r < 0 || in < 0)
		return r;
	out = openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	             st.st_mode & 07777);
	if (out < 0)
		return -errno;
	if ((r = copy_contents(in, out, st.st_size)) < 0)
		return r;
	return fchmod(out, st.st_mode & 07777) < 0 ? -errno : 0;
}

static int copy_symlink(int src, int dst, const char *name)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(src, name, target, sizeof target - 1);

	if (n < 0)
		return vanished(errno) || errno == EINVAL ? 0 : -errno;
	target[n] = '\0';
	return symlinkat(target, dst, name) < 0 ? -errno : 0;
}

static int copy_dir_entries(int src, int dst, dev_t dev, int depth, const char *except);

static int copy_subdir(int src, int dst, const char *name, dev_t dev, int depth)
{
	_cleanup_close_ int from = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	                                  O_CLOEXEC);
	_cleanup_close_ int to = -1;
	struct stat st;
	int r;

	if (from < 0)
		return vanished(errno) ? 0 : -errno;
	if (fstat(from, &st) < 0)
		return -errno;
	if (st.st_dev != dev)
		return 0;         /* another mount */
	if (mkdirat(dst, name, 0700) < 0)
		return -errno;
	if ((to = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -errno;
	r = copy_dir_entries(from, to, dev, depth + 1, NULL);
	/* Permissions last, so a read-only directory can still be filled. */
	if (r == 0 && fchmod(to, st.st_mode & 07777) < 0)
		r = -errno;
	return r;
}

/* Copies what src holds into dst: directories, regular files and symlinks (as links, never
 * followed); other kinds and other mounts are left out. */
static int copy_dir_entries(int src, int dst, dev_t dev, int depth, const char *except)
{
	/* A listing of its own: a dup of src would share its offset, and a second copy from the
	 * same fd (a second reset) would find the folder empty. */
	int fd = depth > COPY_MAX_DEPTH ? -1 : openat(src, ".", O_RDONLY | O_DIRECTORY |
	                                              O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int r = 0;

	if (depth > COPY_MAX_DEPTH)
		return -ELOOP;
	if (!d) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	while (r == 0 && (e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    (except && !strcmp(e->d_name, except)))
			continue;
		if (fstatat(src, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (!vanished(errno))
				r = -errno;
			continue;
		}
		if (S_ISDIR(st.st_mode))
			r = copy_subdir(src, dst, e->d_name, dev, depth);
		else if (S_ISREG(st.st_mode))
			r = copy_regular(src, dst, e->d_name);
		else if (S_ISLNK(st.st_mode))
			r = copy_symlink(src, dst, e->d_name);
	}
	closedir(d);
	return r;
}

int sbx_fs_copy_tree(int src_dirfd, int dst_dirfd, const char *except)
{
	struct stat st;
	int r;

	if (fstat(src_dirfd, &st) < 0)
		return sbx_fail(sbx_errno_code(errno), "copy: stat: %s", strerror(errno));
	r = copy_dir_entries(src_dirfd, dst_dirfd, st.st_dev, 0, except);
	if (r < 0)
		return sbx_fail(sbx_errno_code(-r), "copy: %s", strerror(-r));
	return 0;
}
