/* Appending to the audit log (auditlog.h). Every writer of the workspace, whatever process it
 * is in, takes the host lock of the state folder (util/hostlock.h: a lock file no sandbox can
 * reach, so no command can hold it), and rotation happens under it too. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auditlog.h"
#include "error.h"
#include "fs.h"
#include "hostlock.h"
#include "statedir.h"

/* Other writers hold the lock for one write; past this something is wrong with them, and
 * the record goes out without the lock (it stays whole: one O_APPEND write) rather than
 * being lost. */
#define LOCK_TIMEOUT_MS 5000

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

/* Never a link, never anything but a regular file, never a blocking open (a FIFO planted
 * there on a backend without protection would otherwise stop the host). */
static int open_log(int dirfd)
{
	return sbx_statedir_open_file(dirfd, SBX_AUDIT_LOG_NAME, O_WRONLY | O_APPEND | O_CREAT,
	                              0600);
}

void sbx_auditlog_append(int dirfd, const char *line, size_t len, uint64_t max_bytes, int keep)
{
	int lock = -1, fd;
	struct stat st;
	char kept[1024];

	if (dirfd < 0)
		return;
	/* What goes wrong here is nobody's error: the caller's message stays. */
	snprintf(kept, sizeof kept, "%s", sbx_last_error());
	bool locked = sbx_hostlock_take(dirfd, "audit", LOCK_TIMEOUT_MS, &lock) == 0;
	fd = open_log(dirfd);
	if (locked && fd >= 0 && fstat(fd, &st) == 0 &&
	    (uint64_t)st.st_size + len > max_bytes && st.st_size > 0) {
		close(fd);
		rotate(dirfd, keep);
		fd = open_log(dirfd);
	}
	if (fd >= 0) {
		sbx_write_all(fd, line, len);
		close(fd);
	}
	sbx_hostlock_release(lock);
	if (kept[0])
		sbx_error_set(-SBX_EIO, "%s", kept);
	else
		sbx_error_clear();
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
