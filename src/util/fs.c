/* File-system helpers on directory fds: atomic writes, bounded reads, tree removal that never
 * follows a symlink or crosses a mount, private temporary directories. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "cleanup.h"
#include "error.h"
#include "fs.h"

#if !defined(SYS_fchmodat2) && (defined(__x86_64__) || defined(__aarch64__) || \
                                defined(__i386__) || defined(__riscv))
#define SYS_fchmodat2 452
#endif

#define TEMP_SUFFIX_LEN 6
#define TEMP_ATTEMPTS 100

static bool is_plain_name(const char *name)
{
	return name && *name && !strchr(name, '/') && strcmp(name, ".") != 0 &&
	       strcmp(name, "..") != 0;
}

int sbx_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return sbx_fail(sbx_errno_code(errno), "write: %s", strerror(errno));
		}
		if (n == 0)
			return sbx_fail(-SBX_EIO, "write: no progress");
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Reading
 * ------------------------------------------------------------------------------------- */

int sbx_fs_read_fd(int fd, size_t max, char **data, size_t *len)
{
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t used = 0, cap;

	*data = NULL;
	*len = 0;
	if (fstat(fd, &st) < 0)
		return sbx_fail(sbx_errno_code(errno), "stat: %s", strerror(errno));
	if (S_ISDIR(st.st_mode))
		return sbx_fail(-SBX_EISDIR, "is a directory");
	if (!S_ISREG(st.st_mode))
		return sbx_fail(-SBX_EINVAL, "not a regular file");
	if (max > SIZE_MAX - 2)
		max = SIZE_MAX - 2;
	if ((uint64_t)st.st_size > max)
		return sbx_fail(-SBX_EFBIG, "file too large (%lld bytes, the limit is %zu)",
		                (long long)st.st_size, max);

	/* Room for the size stat() saw, one byte more to notice growth, and the NUL. */
	cap = (size_t)st.st_size + 2;
	buf = malloc(cap);
	if (!buf)
		return sbx_fail(-SBX_ENOMEM, "out of memory (%zu bytes)", cap);
	for (;;) {
		if (cap - used < 2) {
			size_t ncap = cap > (max + 2) / 2 ? max + 2 : cap * 2;
			char *nbuf = realloc(buf, ncap);
			if (!nbuf)
				return sbx_fail(-SBX_ENOMEM, "out of memory (%zu bytes)", ncap);
			buf = nbuf;
			cap = ncap;
		}
		ssize_t n = read(fd, buf + used, cap - used - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return sbx_fail(sbx_errno_code(errno), "read: %s", strerror(errno));
		}
		if (n == 0)
			break;
		used += (size_t)n;
		/* The file grew while we read it. */
		if (used > max)
			return sbx_fail(-SBX_EFBIG, "file too large (more than %zu bytes)", max);
	}
	buf[used] = '\0';
	*data = SBX_TAKE_PTR(buf);
	*len = used;
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Atomic writes
 * ------------------------------------------------------------------------------------- */

static void random_suffix(char *out, size_t n)
{
	static const char chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	static __thread unsigned long counter;
	unsigned char bytes[16];

	if (n > sizeof bytes || getrandom(bytes, n, GRND_NONBLOCK) != (ssize_t)n) {
		/* No entropy yet (early boot): O_EXCL makes collisions harmless, this only has
		 * to make them rare. */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		unsigned long x = (unsigned long)ts.tv_nsec ^ ((unsigned long)getpid() << 16) ^
		                  (++counter * 2654435761ul);
		for (size_t i = 0; i < n && i < sizeof bytes; i++, x = x * 6364136223846793005ul + 1)
			bytes[i] = (unsigned char)(x >> 33);
	}
	for (size_t i = 0; i < n; i++)
		out[i] = chars[bytes[i] % (sizeof chars - 1)];
	out[n] = '\0';
}

static atomic_bool force_named_temp;

void sbx_fs_force_named_temp(bool on)
{
	atomic_store(&force_named_temp, on);
}

/* ".<name>.sbx-XXXXXX" with a fresh suffix; the name part is shortened so the whole fits
 * NAME_MAX. */
static void temp_name(const char *name, char tmp[NAME_MAX + 1])
{
	int room = NAME_MAX - (int)strlen("..sbx-") - TEMP_SUFFIX_LEN;
	char suffix[TEMP_SUFFIX_LEN + 1];

	random_suffix(suffix, TEMP_SUFFIX_LEN);
	snprintf(tmp, NAME_MAX + 1, ".%.*s.sbx-%s", room, name, suffix);
}

static void *note_temp(const struct sbx_fs_temp_notes *notes, int dirfd, const char *tmp,
                       int fd)
{
	return notes && notes->note ? notes->note(notes->ctx, dirfd, tmp, fd) : NULL;
}

static void forget_temp(const struct sbx_fs_temp_notes *notes, void *handle)
{
	if (notes && notes->forget && handle)
		notes->forget(notes->ctx, handle);
}

/* Creates ".<name>.sbx-XXXXXX" in dirfd, hidden and never a symlink we did not make. It is
 * noted before it exists and once more with its inode, before any data goes in: whenever a
 * kill leaves it, the journal can tell it is ours. *note is the note to forget. */
static int create_temp(const struct sbx_fs_temp_notes *notes, int dirfd, const char *name,
                       char tmp[NAME_MAX + 1], void **note)
{
	for (int i = 0; i < TEMP_ATTEMPTS; i++) {
		temp_name(name, tmp);
		void *early = note_temp(notes, dirfd, tmp, -1);
		int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		                0600);
		int err = errno;

		if (fd >= 0) {
			*note = note_temp(notes, dirfd, tmp, fd);
			if (*note)
				forget_temp(notes, early);
			else
				*note = early;
			return fd;
		}
		forget_temp(notes, early);
		if (err != EEXIST)
			return sbx_fail(sbx_errno_code(err), "cannot create a temporary file: %s",
			                strerror(err));
	}
	return sbx_fail(-SBX_EEXIST, "cannot create a temporary file: all names taken");
}

/* Writes, sets mode (and the replaced file's owner where we may) and syncs fd. */
static int fill_file(int fd, const void *data, size_t len, mode_t mode, const struct stat *old)
{
	int r = sbx_write_all(fd, data, len);

	if (r < 0)
		return r;
	/* As root, keep a replaced file's owner: the sandbox's user must still own its files.
	 * Anyone else cannot give files away, and that is fine. */
	if (old && (old->st_uid != geteuid() || old->st_gid != getegid()))
		(void)!fchown(fd, old->st_uid, old->st_gid);
	/* After fchown, which may clear mode bits. Not subject to the umask, unlike open(2). */
	if (fchmod(fd, mode) < 0)
		return sbx_fail(sbx_errno_code(errno), "chmod: %s", strerror(errno));
	if (fsync(fd) < 0)
		return sbx_fail(sbx_errno_code(errno), "fsync: %s", strerror(errno));
	return 0;
}

/* fill_file, then close: close() can report a delayed write error (NFS); the data must be
 * known good before the rename makes it visible. */
static int fill_temp(int fd, const void *data, size_t len, mode_t mode, const struct stat *old)
{
	_cleanup_close_ int owned = fd;
	int r = fill_file(fd, data, len, mode, old);

	if (r < 0)
		return r;
	if (close(SBX_TAKE_FD(owned)) < 0)
		return sbx_fail(sbx_errno_code(errno), "close: %s", strerror(errno));
	return 0;
}

/* rename(2) without replacing: renameat2(RENAME_NOREPLACE), or a hard link on file systems
 * that lack the flag (link(2) fails with EEXIST atomically, too). */
static int rename_noreplace(int dirfd, const char *tmp, const char *name)
{
	if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	if (linkat(dirfd, tmp, dirfd, name, 0) < 0)
		return -errno;
	unlinkat(dirfd, tmp, 0);
	return 0;
}

static int rename_into_place(int dirfd, const char *tmp, const char *name, bool excl)
{
	int r = 0;

	if (excl)
		r = rename_noreplace(dirfd, tmp, name);
	else if (renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r == -EEXIST || r == -ENOTEMPTY)
		return sbx_fail(-SBX_EEXIST, "already exists");
	if (r == -EISDIR)
		return sbx_fail(-SBX_EISDIR, "is a directory");
	if (r < 0)
		return sbx_fail(sbx_errno_code(-r), "rename into place: %s", strerror(-r));
	return 0;
}

/* Makes the rename durable. Best effort: the file is complete and in place already, and a
 * directory we may not read (mode 0300) must not turn a done write into an error. */
static void sync_dir(int dirfd)
{
	_cleanup_close_ int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0)
		(void)fsync(fd);
}

static int check_file_mode(mode_t mode)
{
	if (mode & (S_ISUID | S_ISGID))
		return sbx_fail(-SBX_EINVAL, "mode 0%o: setuid and setgid bits are not allowed",
		                (unsigned)mode);
	if (mode & ~(mode_t)0777)
		return sbx_fail(-SBX_EINVAL, "mode 0%o: only permission bits (0777) are allowed",
		                (unsigned)mode);
	return 0;
}

void sbx_fs_adopt_owner(int dirfd, const char *name)
{
	struct stat dir;

	if (geteuid() != 0 || fstat(dirfd, &dir) < 0 || dir.st_uid == 0)
		return;
	(void)!fchownat(dirfd, name, dir.st_uid, dir.st_gid, AT_SYMLINK_NOFOLLOW);
}

int sbx_fs_link_unnamed(int fd, int dirfd, const char *name)
{
	char proc[48];

	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno == EEXIST)
		return -EEXIST;
	return linkat(fd, "", dirfd, name, AT_EMPTY_PATH) == 0 ? 0 : -errno;
}

/* An unnamed file for the data: 0, or 1 where the file system has none (the named way
 * then). */
static int open_unnamed(int dirfd, int *fd)
{
	*fd = -1;
	if (atomic_load(&force_named_temp))
		return 1;
	*fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (*fd >= 0)
		return 0;
	/* EISDIR: a kernel before O_TMPFILE read the flag as O_DIRECTORY. */
	if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)
		return 1;
	return sbx_fail(sbx_errno_code(errno), "cannot create a temporary file: %s",
	                strerror(errno));
}

/* With SBX_WRITE_EXCL the complete file is linked as name itself: link(2) refuses an
 * existing name atomically, and no temporary name ever shows. */
static int link_exclusive(int fd, int dirfd, const char *name)
{
	int r = sbx_fs_link_unnamed(fd, dirfd, name);

	if (r == -EEXIST)
		return sbx_fail(-SBX_EEXIST, "already exists");
	return r < 0 ? 1 : 0;
}

/* Else under a temporary name (noted first, with the inode it has), then renamed over name.
 * Returns 1 when the file cannot be linked at all (the caller goes the named way). */
static int link_and_rename(const struct sbx_fs_temp_notes *notes, int *fd, int dirfd,
                           const char *name)
{
	char tmp[NAME_MAX + 1];
	void *note = NULL;
	int r = -EEXIST;

	for (int i = 0; i < TEMP_ATTEMPTS && r == -EEXIST; i++) {
		temp_name(name, tmp);
		note = note_temp(notes, dirfd, tmp, *fd);
		if ((r = sbx_fs_link_unnamed(*fd, dirfd, tmp)) < 0) {
			forget_temp(notes, note);
			note = NULL;
		}
	}
	if (r < 0)
		return r == -EEXIST ? sbx_fail(-SBX_EEXIST, "cannot create a temporary file: all "
		                               "names taken") : 1;
	if (close(SBX_TAKE_FD(*fd)) < 0)
		r = sbx_fail(sbx_errno_code(errno), "close: %s", strerror(errno));
	if (r == 0)
		r = rename_into_place(dirfd, tmp, name, false);
	if (r < 0)
		unlinkat(dirfd, tmp, 0);
	forget_temp(notes, note);
	return r;
}

/* The unnamed way: 1 when the file system cannot do it (nothing was written), else the
 * write's result. */
static int write_unnamed(const struct sbx_fs_temp_notes *notes, int dirfd, const char *name,
                         const void *data, size_t len, mode_t mode, const struct stat *old,
                         bool excl)
{
	_cleanup_close_ int fd = -1;
	int r = open_unnamed(dirfd, &fd);

	if (r != 0)
		return r;
	if ((r = fill_file(fd, data, len, mode, old)) < 0)
		return r;
	return excl ? link_exclusive(fd, dirfd, name) : link_and_rename(notes, &fd, dirfd, name);
}

static int write_named(const struct sbx_fs_temp_notes *notes, int dirfd, const char *name,
                       const void *data, size_t len, mode_t mode, const struct stat *old,
                       bool excl)
{
	char tmp[NAME_MAX + 1];
	void *note = NULL;
	int fd = create_temp(notes, dirfd, name, tmp, &note), r;

	if (fd < 0)
		return fd;
	r = fill_temp(fd, data, len, mode, old);
	if (r >= 0)
		r = rename_into_place(dirfd, tmp, name, excl);
	if (r < 0)
		unlinkat(dirfd, tmp, 0);
	forget_temp(notes, note);
	return r;
}

int sbx_fs_write_atomic(int dirfd, const char *name, const void *data, size_t len,
                        mode_t mode, uint32_t flags)
{
	return sbx_fs_write_atomic_noted(NULL, dirfd, name, data, len, mode, flags);
}

int sbx_fs_write_atomic_noted(const struct sbx_fs_temp_notes *notes, int dirfd,
                              const char *name, const void *data, size_t len, mode_t mode,
                              uint32_t flags)
{
	struct stat st;
	bool exists, replaces_file, excl = flags & SBX_WRITE_EXCL;
	int r;

	if (!is_plain_name(name))
		return sbx_fail(-SBX_EINVAL, "'%s': not a file name", name ? name : "(null)");
	if (strlen(name) > NAME_MAX)
		return sbx_fail(-SBX_ENAMETOOLONG, "name longer than %d bytes", NAME_MAX);
	if (!data && len > 0)
		return sbx_fail(-SBX_EINVAL, "data: NULL with a non-zero length");
	r = check_file_mode(mode);
	if (r < 0)
		return r;

	exists = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (!exists && errno != ENOENT)
		return sbx_fail(sbx_errno_code(errno), "stat: %s", strerror(errno));
	if (exists && S_ISDIR(st.st_mode))
		return sbx_fail(-SBX_EISDIR, "is a directory");
	/* Checked here to avoid writing data we will throw away; the link or rename decides. */
	if (exists && excl)
		return sbx_fail(-SBX_EEXIST, "already exists");
	replaces_file = exists && S_ISREG(st.st_mode);
	if (mode == 0)
		mode = replaces_file ? (st.st_mode & 0777) : 0644;
	/* A new file takes the owner the directory would give it (sbx_fs_adopt_owner). */
	if (!replaces_file && fstat(dirfd, &st) == 0 && geteuid() == 0 && st.st_uid != 0)
		replaces_file = true;

	r = write_unnamed(notes, dirfd, name, data, len, mode, replaces_file ? &st : NULL, excl);
	if (r == 1)
		r = write_named(notes, dirfd, name, data, len, mode, replaces_file ? &st : NULL, excl);
	if (r < 0)
		return r;
	sync_dir(dirfd);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Removing trees
 *
 * Iterative, holding two directory fds at most, so neither the stack nor the fd table limits
 * how deep a tree an agent can build and still have removed. Descending opens children with
 * O_NOFOLLOW|O_DIRECTORY; climbing back opens ".." and checks it is the directory we came
 * from (device and inode), so a directory moved during the removal is noticed, not followed.
 * A directory we cannot list or change is made u+rwx first, but only one we are about to
 * delete anyway.
 * ------------------------------------------------------------------------------------- */

struct dir_id {
	dev_t dev;
	ino_t ino;
	char *name;      /* the name in its parent; NULL for the top */
};

struct remover {
	struct dir_id *stack;
	size_t depth, cap;
	bool chmod_top;  /* may the top directory's mode be changed (it is deleted too)? */
};

/* chmod of the inode open as fd (O_PATH, so fchmod() refuses it), through fchmodat2 or
 * /proc: chmod by name could be redirected by a symlink swapped in meanwhile. */
static int chmod_path_fd(int fd, mode_t mode)
{
	char proc[64];

#ifdef SYS_fchmodat2
	if (syscall(SYS_fchmodat2, fd, "", mode, AT_EMPTY_PATH) == 0)
		return 0;
#endif
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	return chmod(proc, mode) < 0 ? -errno : 0;
}

static int stat_entry(int dirfd, const char *name, struct statx *sx)
{
	struct stat st;

	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
	          STATX_TYPE | STATX_MODE | STATX_INO, sx) == 0)
		return 0;
	if (errno != ENOSYS && errno != EPERM)
		return -errno;
	/* A kernel or seccomp profile without statx: no mount-root attribute then. */
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	memset(sx, 0, sizeof *sx);
	sx->stx_mode = (uint16_t)st.st_mode;
	sx->stx_ino = st.st_ino;
	sx->stx_dev_major = major(st.st_dev);
	sx->stx_dev_minor = minor(st.st_dev);
	return 0;
}

static dev_t statx_dev(const struct statx *sx)
{
	return makedev(sx->stx_dev_major, sx->stx_dev_minor);
}

/* A mount point inside the tree is somebody's bind mount: its content is not ours. The device
 * check misses bind mounts of the same file system, the mount-root attribute does not. */
static bool is_mount_point(const struct statx *sx, dev_t parent_dev)
{
	if (statx_dev(sx) != parent_dev)
		return true;
	return (sx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	       (sx->stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* Opens directory `name` of dirfd for listing; if its mode keeps us out, adds u+rwx. */
static int open_dir_for_removal(int dirfd, const char *name, bool may_chmod)
{
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 || errno != EACCES || !may_chmod)
		return fd < 0 ? -errno : fd;
	_cleanup_close_ int pfd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0 || fstat(pfd, &st) < 0)
		return -errno;
	int r = chmod_path_fd(pfd, (st.st_mode & 07777) | S_IRWXU);
	if (r < 0)
		return -EACCES;
	fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* unlinkat() that adds u+rwx to the directory when its mode is what stops us. */
static int unlink_entry(int dirfd, const char *name, int flags, bool may_chmod)
{
	struct stat st;

	if (unlinkat(dirfd, name, flags) == 0 || errno == ENOENT)
		return 0;
	if (errno != EACCES || !may_chmod)
		return -errno;
	if (fstat(dirfd, &st) < 0 || fchmod(dirfd, (st.st_mode & 07777) | S_IRWXU) < 0)
		return -EACCES;
	if (unlinkat(dirfd, name, flags) == 0 || errno == ENOENT)
		return 0;
	return -errno;
}

static bool may_chmod_level(const struct remover *rm, size_t level)
{
	return level > 0 || rm->chmod_top;
}

/* The entry's path relative to the top, for messages. */
static void entry_path(const struct remover *rm, const char *name, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 1; i <= rm->depth && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%s/", rm->stack[i].name);
	if (used < len)
		snprintf(out + used, len - used, "%s", name);
}

static int fail_entry(const struct remover *rm, const char *name, int err, const char *why)
{
	char path[512];

	entry_path(rm, name, path, sizeof path);
	return sbx_fail(sbx_errno_code(err), "cannot remove '%s': %s", path,
	                why ? why : strerror(err));
}

static int remover_push(struct remover *rm, const struct statx *sx, const char *name)
{
	if (rm->depth + 1 >= rm->cap) {
		size_t cap = rm->cap ? rm->cap * 2 : 16;
		struct dir_id *stack = realloc(rm->stack, cap * sizeof *stack);
		if (!stack)
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		rm->stack = stack;
		rm->cap = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	rm->depth++;
	rm->stack[rm->depth] = (struct dir_id){ statx_dev(sx), sx->stx_ino, copy };
	return 0;
}

/* Removes the non-directories of *d and enters the first subdirectory (swapping *d for it,
 * returns 1), or returns 0 when *d holds nothing more. */
static int remove_files_or_descend(struct remover *rm, DIR **d)
{
	int dfd = dirfd(*d);
	dev_t dev = rm->stack[rm->depth].dev;
	bool removed_any = false;
	struct dirent *e;
	struct statx sx;

	rewinddir(*d);
	for (;;) {
		errno = 0;
		e = readdir(*d);
		if (!e && errno)
			return fail_entry(rm, ".", errno, NULL);
		if (!e && !removed_any)
			return 0;
		if (!e) {
			/* Some file systems skip entries when the directory changes under
			 * readdir; "empty" is only believed from a pass that removed nothing. */
			removed_any = false;
			rewinddir(*d);
			continue;
		}
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		int r = stat_entry(dfd, e->d_name, &sx);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return fail_entry(rm, e->d_name, -r, NULL);
		if (!S_ISDIR(sx.stx_mode)) {
			r = unlink_entry(dfd, e->d_name, 0, may_chmod_level(rm, rm->depth));
			if (r < 0)
				return fail_entry(rm, e->d_name, -r, NULL);
			removed_any = true;
			continue;
		}
		if (is_mount_point(&sx, dev))
			return fail_entry(rm, e->d_name, EBUSY, "a mount point, not removed");
		int cfd = open_dir_for_removal(dfd, e->d_name, true);
		if (cfd < 0)
			return fail_entry(rm, e->d_name, -cfd, NULL);
		DIR *child = fdopendir(cfd);
		if (!child) {
			close(cfd);
			return fail_entry(rm, e->d_name, errno, NULL);
		}
		r = remover_push(rm, &sx, e->d_name);
		if (r < 0) {
			closedir(child);
			return r;
		}
		closedir(*d);
		*d = child;
		return 1;
	}
}

/* From the (now empty) current directory back to its parent, deleting it on the way. */
static int climb_and_rmdir(struct remover *rm, DIR **d)
{
	struct stat st;
	const struct dir_id *parent = &rm->stack[rm->depth - 1];
	const char *name = rm->stack[rm->depth].name;
	int pfd = openat(dirfd(*d), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (pfd < 0)
		return fail_entry(rm, ".", errno, NULL);
	if (fstat(pfd, &st) < 0 || st.st_dev != parent->dev || st.st_ino != parent->ino) {
		close(pfd);
		return sbx_fail(-SBX_EBUSY, "cannot remove '%s': the tree was moved while it was "
		                "being removed", name);
	}
	DIR *pd = fdopendir(pfd);
	if (!pd) {
		close(pfd);
		return fail_entry(rm, ".", errno, NULL);
	}
	closedir(*d);
	*d = pd;
	rm->depth--;
	int r = unlink_entry(pfd, name, AT_REMOVEDIR, may_chmod_level(rm, rm->depth));
	if (r < 0) {
		r = fail_entry(rm, name, -r, NULL);
		free(rm->stack[rm->depth + 1].name);
		return r;
	}
	free(rm->stack[rm->depth + 1].name);
	return 0;
}

/* Empties the directory open as fd (consumed). */
static int remove_contents(int fd, bool chmod_top)
{
	struct remover rm = { .chmod_top = chmod_top };
	struct stat st;
	DIR *d;
	int r;

	if (fstat(fd, &st) < 0) {
		close(fd);
		return sbx_fail(sbx_errno_code(errno), "stat: %s", strerror(errno));
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return sbx_fail(sbx_errno_code(errno), "cannot list directory: %s", strerror(errno));
	}
	rm.cap = 16;
	rm.stack = calloc(rm.cap, sizeof *rm.stack);
	if (!rm.stack) {
		closedir(d);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	rm.stack[0] = (struct dir_id){ st.st_dev, st.st_ino, NULL };

	for (;;) {
		r = remove_files_or_descend(&rm, &d);
		if (r < 0)
			break;
		if (r == 1)
			continue;
		if (rm.depth == 0)
			break;
		r = climb_and_rmdir(&rm, &d);
		if (r < 0)
			break;
	}
	closedir(d);
	for (size_t i = 1; i <= rm.depth; i++)
		free(rm.stack[i].name);
	free(rm.stack);
	return r < 0 ? r : 0;
}

int sbx_fs_remove_tree(int dirfd, const char *name)
{
	struct statx sx;
	struct stat parent;
	int r;

	if (!is_plain_name(name))
		return sbx_fail(-SBX_EINVAL, "'%s': not a file name", name ? name : "(null)");
	r = stat_entry(dirfd, name, &sx);
	if (r < 0)
		return sbx_fail(sbx_errno_code(-r), "cannot remove '%s': %s", name, strerror(-r));
	if (!S_ISDIR(sx.stx_mode)) {
		if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
			return sbx_fail(sbx_errno_code(errno), "cannot remove '%s': %s", name,
			                strerror(errno));
		return 0;
	}
	if (fstat(dirfd, &parent) < 0)
		return sbx_fail(sbx_errno_code(errno), "stat: %s", strerror(errno));
	if (is_mount_point(&sx, parent.st_dev))
		return sbx_fail(-SBX_EBUSY, "cannot remove '%s': a mount point", name);

	int fd = open_dir_for_removal(dirfd, name, true);
	if (fd < 0)
		return sbx_fail(sbx_errno_code(-fd), "cannot remove '%s': %s", name, strerror(-fd));
	r = remove_contents(fd, true);
	if (r < 0)
		return r;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return sbx_fail(sbx_errno_code(errno), "cannot remove '%s': %s", name,
		                strerror(errno));
	return 0;
}

int sbx_fs_empty_dir(int dirfd)
{
	/* Reopened because dirfd may be O_PATH, which cannot be listed. */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return sbx_fail(sbx_errno_code(errno), "cannot list directory: %s", strerror(errno));
	return remove_contents(fd, false);
}

/* ---------------------------------------------------------------------------------------
 * Temporary directories
 * ------------------------------------------------------------------------------------- */

int sbx_fs_make_temp_dir(const char *prefix, char **path)
{
	const char *base = secure_getenv("TMPDIR");
	char *p = NULL;

	*path = NULL;
	if (!is_plain_name(prefix))
		return sbx_fail(-SBX_EINVAL, "temporary directory prefix '%s': not a file name",
		                prefix ? prefix : "(null)");
	/* A relative TMPDIR would depend on the host's cwd at the time. */
	if (!base || base[0] != '/')
		base = "/tmp";
	if (asprintf(&p, "%s/%s-XXXXXX", base, prefix) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (!mkdtemp(p)) { /* mode 0700 */
		int err = errno;
		int r = sbx_fail(sbx_errno_code(err), "cannot create a directory in '%s': %s", base,
		                 strerror(err));
		free(p);
		return r;
	}
	*path = p;
	return 0;
}
