/* Host-only locks (hostlock.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "cleanup.h"
#include "clock.h"
#include "error.h"
#include "hostlock.h"

#define LOCKS_NAME "locks"
#define POLL_FIRST_MS 1
#define POLL_MAX_MS 32
#define TAKE_ATTEMPTS 16
#define RUN_DIR "/run"

static pthread_mutex_t folder_lock = PTHREAD_MUTEX_INITIALIZER;
static int folder_fd = -1;        /* the lock folder, made for folder_uid */
static uid_t folder_uid;
static char folder_path[PATH_MAX];

/* A host that forks while another thread holds folder_lock (it sweeps, or makes the folder)
 * must not leave its child a lock nobody will release: the child's first audit record would
 * wait forever. Taken around fork, so the child starts with it free. */
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

static void before_fork(void)
{
	pthread_mutex_lock(&folder_lock);
}

static void after_fork(void)
{
	pthread_mutex_unlock(&folder_lock);
}

static void install_fork_handlers(void)
{
	(void)pthread_atfork(before_fork, after_fork, after_fork);
}

static void lock_folder(void)
{
	pthread_once(&fork_handlers_once, install_fork_handlers);
	pthread_mutex_lock(&folder_lock);
}

/* name in parent (path: how messages name it), made 0700 when missing, and accepted only as
 * a real directory of ours that nobody else may enter. */
static int private_dir(int parent, const char *name, const char *path, int *out)
{
	struct stat st;
	int fd;

	if (mkdirat(parent, name, 0700) < 0 && errno != EEXIST)
		return sbx_fail(sbx_errno_code(errno), "create %s: %s", path, strerror(errno));
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sbx_fail(sbx_errno_code(errno), "open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return sbx_fail(-SBX_EACCES, "%s is not a private folder of uid %u (a directory of "
		                "its own with mode 0700)", path, (unsigned)geteuid());
	}
	*out = fd;
	return 0;
}

/* Removes the lock files nobody holds, each under its own lock (a taker that opened it
 * meanwhile finds it unlinked once it has the lock, and takes a fresh one: see take_lock).
 * Once per process: the folder would otherwise keep a file for every object ever locked. */
static void sweep(int dir_fd)
{
	/* A listing of its own: a dup would share (and leave at the end) the kept fd's offset. */
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		int lfd;

		if (n < 5 || strcmp(e->d_name + n - 5, ".lock"))
			continue;
		lfd = openat(dir_fd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (lfd < 0)
			continue;
		if (flock(lfd, LOCK_EX | LOCK_NB) == 0)
			unlinkat(dir_fd, e->d_name, 0);
		close(lfd);
	}
	closedir(d);
}

void sbx_hostlock_sweep(void)
{
	lock_folder();
	if (folder_fd >= 0)
		sweep(folder_fd);
	pthread_mutex_unlock(&folder_lock);
}

/* A directory of root's that nobody else may write: a name made there is root's to make. */
static bool roots_own(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
	       !(st.st_mode & 022);
}

/* The parent of agentsbx[-<uid>]: $XDG_RUNTIME_DIR when it is this user's; for root /run
 * (any user may make /tmp/agentsbx-0 first, and root's locks, the attach lock among them,
 * would then all fail); else /tmp. */
static void base_of(char *parent, size_t plen, char *name, size_t nlen)
{
	const char *xdg = secure_getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (xdg && xdg[0] == '/' && strlen(xdg) < plen && stat(xdg, &st) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
		snprintf(parent, plen, "%s", xdg);
		snprintf(name, nlen, "agentsbx");
		return;
	}
	if (geteuid() == 0 && roots_own(RUN_DIR)) {
		snprintf(parent, plen, RUN_DIR);
		snprintf(name, nlen, "agentsbx");
		return;
	}
	snprintf(parent, plen, "/tmp");
	snprintf(name, nlen, "agentsbx-%u", (unsigned)geteuid());
}

int sbx_runtime_dir(int *out, char *path, size_t len)
{
	char parent[PATH_MAX - 64], name[64];
	_cleanup_close_ int pfd = -1;

	base_of(parent, sizeof parent, name, sizeof name);
	if ((pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return sbx_fail(sbx_errno_code(errno), "open %s: %s", parent, strerror(errno));
	if (snprintf(path, len, "%s/%s", parent, name) >= (int)len)
		return sbx_fail(-SBX_ENAMETOOLONG, "the runtime folder's path is too long");
	return private_dir(pfd, name, path, out);
}

static int make_folder(void)
{
	char path[PATH_MAX];
	_cleanup_close_ int base = -1;
	int locks, r;

	if ((r = sbx_runtime_dir(&base, path, sizeof path)) < 0)
		return r;
	if (strlen(path) + sizeof "/" LOCKS_NAME > sizeof path)
		return sbx_fail(-SBX_ENAMETOOLONG, "the lock folder's path is too long");
	strcat(path, "/" LOCKS_NAME);
	if ((r = private_dir(base, LOCKS_NAME, path, &locks)) < 0)
		return r;
	folder_fd = locks;
	folder_uid = geteuid();
	snprintf(folder_path, sizeof folder_path, "%s", path);
	sweep(locks);
	return 0;
}

/* A new fd of the lock folder (made on first use, again after the euid changed). */
static int folder(int *out)
{
	int r = 0;

	lock_folder();
	if (folder_fd >= 0 && folder_uid != geteuid()) {
		close(folder_fd);
		folder_fd = -1;
	}
	if (folder_fd < 0)
		r = make_folder();
	if (r == 0 && (*out = fcntl(folder_fd, F_DUPFD_CLOEXEC, 3)) < 0)
		r = sbx_fail(sbx_errno_code(errno), "dup: %s", strerror(errno));
	pthread_mutex_unlock(&folder_lock);
	return r;
}

const char *sbx_hostlock_dir(void)
{
	_cleanup_close_ int fd = -1;

	return folder(&fd) == 0 ? folder_path : NULL;
}

static void pause_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* flock without blocking, retried with growing pauses until the deadline: a blocking flock
 * could not be given up. */
static int lock_until(int fd, int timeout_ms)
{
	int64_t deadline = sbx_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int pause = POLL_FIRST_MS;

	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return sbx_fail(sbx_errno_code(errno), "flock: %s", strerror(errno));
		int64_t left = deadline - sbx_now_ms();
		if (left <= 0)
			return sbx_fail(-SBX_ETIMEDOUT, "another process of this host held the lock for "
			                "more than %d ms", timeout_ms);
		pause_ms(pause < left ? pause : (int)left);
		pause = pause * 2 > POLL_MAX_MS ? POLL_MAX_MS : pause * 2;
	}
}

static bool still_linked(int dir, const char *name, int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(dir, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void sbx_hostlock_release(int fd)
{
	int saved = errno;

	if (fd < 0)
		return;
	/* LOCK_UN acts on the open file, which a child forked while we held it shares: a plain
	 * close would leave the lock to the child's copy. */
	flock(fd, LOCK_UN);
	close(fd);
	errno = saved;
}

int sbx_hostlock_take(int object_fd, const char *tag, int timeout_ms, int *lock_fd)
{
	_cleanup_close_ int dir = -1, fd = -1;
	struct stat st;
	char name[128];
	int r;

	*lock_fd = -1;
	if (fstat(object_fd, &st) < 0)
		return sbx_fail(sbx_errno_code(errno), "lock: fstat: %s", strerror(errno));
	if ((r = folder(&dir)) < 0)
		return r;
	snprintf(name, sizeof name, "%x-%x-%llx.%s.lock", major(st.st_dev), minor(st.st_dev),
	         (unsigned long long)st.st_ino, tag);
	int64_t deadline = sbx_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	for (int attempt = 0; attempt < TAKE_ATTEMPTS; attempt++) {
		fd = openat(dir, name, O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		            0600);
		if (fd < 0)
			return sbx_fail(sbx_errno_code(errno), "open the lock %s/%s: %s", folder_path,
			                name, strerror(errno));
		int left = (int)(deadline - sbx_now_ms());
		if ((r = lock_until(fd, left > 0 ? left : 0)) < 0) {
			if (r == -SBX_ETIMEDOUT)
				sbx_fail(r, "another process of this host held the lock for more than %d "
				         "ms", timeout_ms);
			return r;
		}
		/* A sweeper unlinked it before we had it: that lock locks nothing any more. */
		if (still_linked(dir, name, fd)) {
			*lock_fd = SBX_TAKE_FD(fd);
			return 0;
		}
		close(SBX_TAKE_FD(fd));
	}
	return sbx_fail(-SBX_EBUSY, "the lock %s/%s was removed %d times while it was taken",
	                folder_path, name, TAKE_ATTEMPTS);
}
