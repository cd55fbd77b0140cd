/* "setid DIR": every way a process can give a file of its own the set-user-ID or
 * set-group-ID bit, each tried on a fresh file in DIR (which the host then looks at), one
 * line each: "setid-<way> <OK|errno name>". Made raw where libc would pick another call
 * (fchmodat2, openat2, mknod of a regular file), so that the line names the very call the
 * kernel got. "setid-plain" is the control: chmod 0755, which must work. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

#define SETID (S_ISUID | S_ISGID | 0755)

static char where[4096];

static const char *path_of(const char *way)
{
	static char path[4200];

	snprintf(path, sizeof path, "%s/setid-%s", where, way);
	return path;
}

/* A new empty file named for the way, mode 0755; -1 when it cannot be made. */
static int made(const char *way)
{
	int fd = open(path_of(way), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);

	if (fd >= 0)
		close(fd);
	return fd < 0 ? -1 : 0;
}

static int closing(long fd)
{
	if (fd < 0)
		return errno;
	close((int)fd);
	return PR_OK;
}

static int w_plain(void)
{
	return made("plain") < 0 ? errno : probe_result_of(chmod(path_of("plain"), 0755));
}

static int w_setuid_only(void)
{
	return made("setuid") < 0 ? errno : probe_result_of(syscall(SYS_chmod, path_of("setuid"),
	                                                            S_ISUID | 0755));
}

static int w_setgid_only(void)
{
	return made("setgid") < 0 ? errno : probe_result_of(syscall(SYS_chmod, path_of("setgid"),
	                                                            S_ISGID | 0755));
}

static int w_fchmod(void)
{
	int fd = open(path_of("fchmod"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755), r;

	if (fd < 0)
		return errno;
	r = probe_result_of(syscall(SYS_fchmod, fd, SETID));
	close(fd);
	return r;
}

static int w_fchmodat(void)
{
	return made("fchmodat") < 0 ? errno
	       : probe_result_of(syscall(SYS_fchmodat, AT_FDCWD, path_of("fchmodat"), SETID));
}

static int w_fchmodat2(void)
{
	return made("fchmodat2") < 0 ? errno
	       : probe_result_of(syscall(SYS_fchmodat2, AT_FDCWD, path_of("fchmodat2"), SETID, 0));
}

static int w_creat(void)
{
	return closing(syscall(SYS_creat, path_of("creat"), SETID));
}

static int w_open(void)
{
	return closing(syscall(SYS_open, path_of("open"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	                       SETID));
}

static int w_openat(void)
{
	return closing(syscall(SYS_openat, AT_FDCWD, path_of("openat"),
	                       O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, SETID));
}

static int w_openat2(void)
{
	struct open_how how = { .flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, .mode = SETID };

	return closing(syscall(SYS_openat2, AT_FDCWD, path_of("openat2"), &how, sizeof how));
}

static int w_mknod(void)
{
	return probe_result_of(syscall(SYS_mknod, path_of("mknod"), S_IFREG | SETID, 0));
}

static int w_mknodat(void)
{
	return probe_result_of(syscall(SYS_mknodat, AT_FDCWD, path_of("mknodat"), S_IFREG | SETID,
	                               0));
}

/* O_TMPFILE, then linked: the mode is open's. */
static int w_tmpfile(void)
{
	char proc[64];
	long fd = syscall(SYS_openat, AT_FDCWD, where, O_TMPFILE | O_WRONLY | O_CLOEXEC, SETID);
	int r;

	if (fd < 0)
		return errno;
	snprintf(proc, sizeof proc, "/proc/self/fd/%ld", fd);
	r = probe_result_of(linkat(AT_FDCWD, proc, AT_FDCWD, path_of("tmpfile"), AT_SYMLINK_FOLLOW));
	close((int)fd);
	return r;
}

static const struct {
	const char *way;
	int (*fn)(void);
} ways[] = {
	{ "plain", w_plain }, { "chmod-setuid", w_setuid_only }, { "chmod-setgid", w_setgid_only },
	{ "fchmod", w_fchmod }, { "fchmodat", w_fchmodat }, { "fchmodat2", w_fchmodat2 },
	{ "creat", w_creat }, { "open", w_open }, { "openat", w_openat }, { "openat2", w_openat2 },
	{ "mknod", w_mknod }, { "mknodat", w_mknodat }, { "tmpfile", w_tmpfile },
};

int probe_setid(const char *dir)
{
	char label[64];

	snprintf(where, sizeof where, "%s", dir);
	for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++) {
		snprintf(label, sizeof label, "setid-%s", ways[i].way);
		probe_print(label, ways[i].fn());
	}
	return 0;
}
