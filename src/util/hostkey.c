/* Host keys (hostkey.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "cleanup.h"
#include "error.h"
#include "fs.h"
#include "hostkey.h"
#include "hostlock.h"

/* $XDG_STATE_HOME/agentsbx, or ~/.local/state/agentsbx of this user's home. */
static int state_dir_path(char *out, size_t len)
{
	const char *xdg = secure_getenv("XDG_STATE_HOME");
	struct passwd pw, *found = NULL;
	char buf[4096];

	if (xdg && xdg[0] == '/')
		return snprintf(out, len, "%s/agentsbx", xdg) < (int)len ? 0 : -SBX_ENAMETOOLONG;
	if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &found) != 0 || !found ||
	    !found->pw_dir || found->pw_dir[0] != '/')
		return -SBX_ENOENT;
	return snprintf(out, len, "%s/.local/state/agentsbx", found->pw_dir) < (int)len
	       ? 0 : -SBX_ENAMETOOLONG;
}

/* A real directory of ours that nobody else may enter. */
static bool private_fd(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 077);
}

/* Opens path as a directory, making what is missing of it (new folders 0700); the last one
 * must be private. */
static int open_key_dir(const char *path, int *out)
{
	_cleanup_free_ char *copy = strdup(path);
	_cleanup_close_ int cur = -1;
	char *p, *next;

	if (!copy)
		return -SBX_ENOMEM;
	if ((cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return sbx_errno_code(errno);
	for (p = copy + 1; *p; p = next) {
		next = p + strcspn(p, "/");
		bool last = !*next;
		*next = '\0';
		if (!last)
			next++;
		if (!*p)
			continue;
		if (mkdirat(cur, p, 0700) < 0 && errno != EEXIST)
			return sbx_errno_code(errno);
		int fd = openat(cur, p, O_RDONLY | O_DIRECTORY | (last ? O_NOFOLLOW : 0) | O_CLOEXEC);
		if (fd < 0)
			return sbx_errno_code(errno);
		close(cur);
		cur = fd;
	}
	if (!private_fd(cur))
		return -SBX_EACCES;
	*out = SBX_TAKE_FD(cur);
	return 0;
}

/* Reads the key file, which must be ours alone and exactly a key long. 0, -SBX_ENOENT, or
 * -SBX_EACCES for a file that is not one. */
static int read_key(int dir, const char *name, unsigned char key[SBX_HOSTKEY_LEN])
{
	_cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return errno == ENOENT ? -SBX_ENOENT : -SBX_EACCES;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) || st.st_size != SBX_HOSTKEY_LEN)
		return -SBX_EACCES;
	do
		n = read(fd, key, SBX_HOSTKEY_LEN);
	while (n < 0 && errno == EINTR);
	return n == SBX_HOSTKEY_LEN ? 0 : -SBX_EACCES;
}

/* The key in dir, made when there is none: linked whole as its name, so a racing process
 * either makes it or reads the one made first. */
static int key_in(int dir, const char *name, unsigned char key[SBX_HOSTKEY_LEN])
{
	unsigned char fresh[SBX_HOSTKEY_LEN];
	int r = read_key(dir, name, key);

	if (r != -SBX_ENOENT)
		return r;
	if (getrandom(fresh, sizeof fresh, 0) != (ssize_t)sizeof fresh)
		return -SBX_EIO;
	r = sbx_fs_write_atomic(dir, name, fresh, sizeof fresh, 0600, SBX_WRITE_EXCL);
	sbx_error_clear();
	if (r < 0 && r != -SBX_EEXIST)
		return r;
	return read_key(dir, name, key);
}

/* The key in the folder path; a folder that cannot be used is -SBX_ENOENT and the like, a
 * key file that is not a key of ours alone fails with a message. */
static int key_at(const char *path, const char *name, unsigned char key[SBX_HOSTKEY_LEN],
                  bool *folder_ok)
{
	_cleanup_close_ int dir = -1;
	int r = open_key_dir(path, &dir);

	*folder_ok = r == 0;
	if (r < 0)
		return r;
	if ((r = key_in(dir, name, key)) < 0)
		return sbx_fail(r, "the key %s/%s is not a key of uid %u's alone (a 0600 file of %d "
		                "bytes): refused", path, name, (unsigned)geteuid(), SBX_HOSTKEY_LEN);
	return 0;
}

int sbx_hostkey_get(const char *purpose, unsigned char key[SBX_HOSTKEY_LEN])
{
	char path[PATH_MAX] = "", name[64];
	const char *runtime;
	bool folder_ok = false;
	int r, rr;

	snprintf(name, sizeof name, "%s.key", purpose);
	if ((r = state_dir_path(path, sizeof path)) == 0 &&
	    ((r = key_at(path, name, key, &folder_ok)) == 0 || folder_ok))
		return r;
	/* No usable state folder (no home, a read-only one): the host-lock folder, which lasts
	 * until the next boot. */
	if ((runtime = sbx_hostlock_dir()) &&
	    ((rr = key_at(runtime, name, key, &folder_ok)) == 0 || folder_ok)) {
		if (rr == 0)
			sbx_error_clear();
		return rr;
	}
	return sbx_fail(r, "no folder to keep the key %s in (%s: %s)", name,
	                *path ? path : "no home folder", strerror(-r));
}
