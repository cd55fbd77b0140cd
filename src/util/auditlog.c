/* Appending to the audit log (auditlog.h). The lock is an flock of the state folder itself:
 * every writer of the workspace takes it, whatever process it is in and whichever fd of the
 * folder it holds, and rotation happens under it too. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/auditlog.h"
#include "util/fs.h"

/* audit.jsonl -> audit.jsonl.1 -> ... -> audit.jsonl.<keep>; the oldest falls off. */
static void rotate(int dirfd, int keep)
{
	char from[64], to[64];

	if (keep == 0) {
		unlinkat(dirfd, SBX_AUDIT_LOG_NAME, 0);
		return;
	}
	for (int i = keep - 1; i >= 1; i--) {
		snprintf(from, sizeof from, "%s.%d", SBX_AUDIT_LOG_NAME, i);
		snprintf(to, sizeof to, "%s.%d", SBX_AUDIT_LOG_NAME, i + 1);
		renameat(dirfd, from, dirfd, to);
	}
	snprintf(to, sizeof to, "%s.1", SBX_AUDIT_LOG_NAME);
	renameat(dirfd, SBX_AUDIT_LOG_NAME, dirfd, to);
}

static int open_log(int dirfd)
{
	return openat(dirfd, SBX_AUDIT_LOG_NAME,
	              O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
}

void sbx_auditlog_append(int dirfd, const char *line, size_t len, uint64_t max_bytes, int keep)
{
	struct stat st;
	int fd;

	if (dirfd < 0 || flock(dirfd, LOCK_EX) < 0)
		return;
	fd = open_log(dirfd);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size + len > max_bytes && st.st_size > 0) {
		close(fd);
		rotate(dirfd, keep);
		fd = open_log(dirfd);
	}
	if (fd >= 0) {
		sbx_write_all(fd, line, len);
		close(fd);
	}
	flock(dirfd, LOCK_UN);
}

void sbx_auditlog_time(char *out, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
	         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	         ts.tv_nsec / 1000000);
}
