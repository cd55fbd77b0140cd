/* The state folder, opened without ever following a link (statedir.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "cleanup.h"
#include "error.h"
#include "fs.h"
#include "statedir.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define STATE_DIR_MODE 0755
#define SHOWN_MAX 256

/* Why name in dir_fd could not be opened as a directory, as the error the caller returns. */
static int refuse_entry(int dir_fd, const char *name, const char *shown, int err)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode)) {
			n = readlinkat(dir_fd, name, target, sizeof target - 1);
			target[n > 0 ? n : 0] = '\0';
			return sbx_fail(-SBX_ELOOP, "%s is a symbolic link (to '%s'): refused, the "
			                "library never follows a link in its state folder (a command "
			                "may have planted it; remove it)", shown, target);
		}
		if (!S_ISDIR(st.st_mode))
			return sbx_fail(-SBX_ENOTDIR, "%s is not a directory: refused (a command may "
			                "have put it there; remove it)", shown);
	}
	return sbx_fail(sbx_errno_code(err), "open %s: %s", shown, strerror(err));
}

/* One step down: opens (and with mode, makes) the folder name in dir_fd. */
static int step(int dir_fd, const char *name, const char *shown, mode_t mode, int *out)
{
	int fd = openat(dir_fd, name, DIR_FLAGS);

	if (fd < 0 && errno == ENOENT && mode) {
		if (mkdirat(dir_fd, name, mode) < 0 && errno != EEXIST)
			return sbx_fail(sbx_errno_code(errno), "create %s: %s", shown, strerror(errno));
		fd = openat(dir_fd, name, DIR_FLAGS);
	}
	if (fd < 0) {
		if (errno == ENOENT)
			return sbx_fail(-SBX_ENOENT, "%s does not exist", shown);
		return refuse_entry(dir_fd, name, shown, errno);
	}
	*out = fd;
	return 0;
}

static bool plain_component(const char *s, size_t n)
{
	return n > 0 && n < NAME_MAX && !(n == 1 && s[0] == '.') &&
	       !(n == 2 && s[0] == '.' && s[1] == '.');
}

int sbx_statedir_open_below(int dir_fd, const char *shown, const char *sub, mode_t mode,
                            int *out)
{
	_cleanup_close_ int cur = -1;
	char path[SHOWN_MAX], name[NAME_MAX];
	const char *p = sub ? sub : "";
	int r;

	*out = -1;
	if ((cur = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: dup: %s", shown, strerror(errno));
	snprintf(path, sizeof path, "%s", shown);
	while (*p) {
		size_t n = strcspn(p, "/");
		int next = -1;

		if (!plain_component(p, n))
			return sbx_fail(-SBX_EINVAL, "state folder: '%s' is not a plain relative path",
			                sub);
		memcpy(name, p, n);
		name[n] = '\0';
		snprintf(path + strlen(path), sizeof path - strlen(path), "/%s", name);
		if ((r = step(cur, name, path, mode, &next)) < 0)
			return r;
		close(cur);
		cur = next;
		p += n;
		p += *p == '/';
	}
	*out = SBX_TAKE_FD(cur);
	return 0;
}

int sbx_statedir_open(int root_fd, const char *sub, mode_t mode, int *out)
{
	_cleanup_close_ int state = -1;
	int r;

	*out = -1;
	r = step(root_fd, SBX_STATE_DIR_NAME, SBX_STATE_DIR_NAME, mode ? STATE_DIR_MODE : 0,
	         &state);
	if (r < 0)
		return r;
	if (!sub || !*sub) {
		*out = SBX_TAKE_FD(state);
		return 0;
	}
	return sbx_statedir_open_below(state, SBX_STATE_DIR_NAME, sub, mode, out);
}

int sbx_statedir_open_file(int dir_fd, const char *name, int flags, mode_t mode)
{
	struct stat st;
	int fd = openat(dir_fd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
	                mode);

	if (fd < 0) {
		if (errno == ENOENT)
			return -SBX_ENOENT;
		if (errno == ELOOP)
			return sbx_fail(-SBX_ELOOP, "%s is a symbolic link: refused", name);
		/* A FIFO without a reader refuses a non-blocking writer with ENXIO. */
		if (errno == ENXIO)
			return sbx_fail(-SBX_EINVAL, "%s is not a regular file: refused", name);
		return sbx_fail(sbx_errno_code(errno), "open %s: %s", name, strerror(errno));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return sbx_fail(-SBX_EINVAL, "%s is not a regular file: refused", name);
	}
	return fd;
}

int sbx_statedir_read(int dir_fd, const char *name, size_t max, char **data, size_t *len)
{
	_cleanup_close_ int fd = sbx_statedir_open_file(dir_fd, name, O_RDONLY, 0);

	*data = NULL;
	*len = 0;
	if (fd < 0)
		return fd;
	return sbx_fs_read_fd(fd, max, data, len);
}
