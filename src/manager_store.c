/* The workspace manager's files in base_dir: see manager_store.h for the layout. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "internal.h"
#include "manager_store.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/journal.h"

#define RECORD_MAX (1u << 20)

/* mkdir -p of a trusted host path (the caller's base_dir), new directories 0700. */
static int make_dirs(const char *path)
{
	_cleanup_free_ char *copy = strdup(path);

	if (!copy)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	for (char *p = copy + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(copy, 0700) < 0 && errno != EEXIST)
			return sbx_fail(sbx_errno_code(errno), "workspace manager: mkdir %s: %s", copy,
			                strerror(errno));
		*p = saved;
		if (!saved)
			break;
	}
	return 0;
}

/* Opens (creating, 0700) a directory below dirfd, never through a symlink, and checks it is
 * ours and closed to others. */
static int private_dir(int dirfd, const char *name, const char *shown, int *out)
{
	struct stat st;
	int fd;

	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return sbx_fail(sbx_errno_code(errno), "workspace manager: mkdir %s: %s", shown,
		                strerror(errno));
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sbx_fail(sbx_errno_code(errno), "workspace manager: open %s: %s", shown,
		                strerror(errno));
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return sbx_fail(-SBX_EACCES, "workspace manager: %s must be a directory of uid %u "
		                "closed to others (mode 0700)", shown, (unsigned)geteuid());
	}
	*out = fd;
	return 0;
}

int sbx_store_open(const char *base_dir, struct sbx_store *st)
{
	char resolved[PATH_MAX];
	struct stat sb;
	int r;

	*st = (struct sbx_store){ .base_fd = -1, .locks_fd = -1, .records_fd = -1 };
	if (!base_dir[0] || base_dir[0] != '/')
		return sbx_fail(-SBX_ECONFIG, "config: key 'base_dir': expected an absolute path");
	if ((r = make_dirs(base_dir)) < 0)
		return r;
	if (!realpath(base_dir, resolved))
		return sbx_fail(sbx_errno_code(errno), "config: key 'base_dir': %s: %s", base_dir,
		                strerror(errno));
	if (!(st->base_dir = strdup(resolved)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	st->base_fd = open(resolved, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->base_fd < 0 || fstat(st->base_fd, &sb) < 0 || sb.st_uid != geteuid() ||
	    (sb.st_mode & 022)) {
		r = sbx_fail(-SBX_EACCES, "config: key 'base_dir': %s must be a directory of uid %u "
		             "that others cannot write", resolved, (unsigned)geteuid());
		sbx_store_close(st);
		return r;
	}
	if ((r = private_dir(st->base_fd, ".locks", ".locks", &st->locks_fd)) < 0 ||
	    (r = private_dir(st->base_fd, ".records", ".records", &st->records_fd)) < 0) {
		sbx_store_close(st);
		return r;
	}
	/* A record's temporary name left by a process killed while it wrote one goes now. */
	sbx_journal_sweep(st->base_fd, SBX_JOURNAL_STORE, SBX_SWEEP_ENDED);
	if ((r = sbx_journal_open(st->base_fd, SBX_JOURNAL_STORE, &st->journal)) < 0)
		sbx_store_close(st);
	return r;
}

void sbx_store_close(struct sbx_store *st)
{
	if (st->base_fd >= 0)
		close(st->base_fd);
	if (st->locks_fd >= 0)
		close(st->locks_fd);
	if (st->records_fd >= 0)
		close(st->records_fd);
	sbx_journal_free(st->journal);
	free(st->base_dir);
	*st = (struct sbx_store){ .base_fd = -1, .locks_fd = -1, .records_fd = -1 };
}

int sbx_store_workdir(struct sbx_store *st, const struct sbx_managed_id *mid, char **path)
{
	_cleanup_close_ int user = -1, ws = -1;
	int r;

	if ((r = private_dir(st->base_fd, mid->user_key, mid->user_key, &user)) < 0 ||
	    (r = private_dir(user, mid->name, mid->name, &ws)) < 0)
		return r;
	if (asprintf(path, "%s/%s/%s", st->base_dir, mid->user_key, mid->name) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return 0;
}

static int open_lock_file(struct sbx_store *st, const char *id, const char *suffix)
{
	char name[NAME_MAX];
	int fd;

	snprintf(name, sizeof name, "%s.%s", id, suffix);
	fd = openat(st->locks_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sbx_fail(sbx_errno_code(errno), "workspace manager: open .locks/%s: %s", name,
		                strerror(errno));
	return fd;
}

static int take(int fd, int op, const char *what, const char *id)
{
	while (flock(fd, op) < 0) {
		if (errno == EINTR)
			continue;
		int r = errno == EWOULDBLOCK
		        ? sbx_fail(-SBX_EBUSY, "workspace manager: workspace %s is held by another "
		                   "process (%s)", id, what)
		        : sbx_fail(sbx_errno_code(errno), "workspace manager: flock: %s",
		                   strerror(errno));
		close(fd);
		return r;
	}
	return fd;
}

int sbx_store_lock(struct sbx_store *st, const char *id, bool wait, int *fd)
{
	int f = open_lock_file(st, id, "lock");

	if (f >= 0)
		f = take(f, LOCK_EX | (wait ? 0 : LOCK_NB), "opening or closing it", id);
	*fd = f;
	return f < 0 ? f : 0;
}

int sbx_store_lease(struct sbx_store *st, const char *id, bool exclusive, int *fd)
{
	int f = open_lock_file(st, id, "lease");

	if (f >= 0)
		f = take(f, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB, "in use", id);
	*fd = f;
	return f < 0 ? f : 0;
}

bool sbx_store_lease_free(struct sbx_store *st, const char *id)
{
	int fd;

	if (sbx_store_lease(st, id, true, &fd) < 0)
		return false;
	close(fd);
	return true;
}

static void record_name(const char *id, char *name, size_t len)
{
	snprintf(name, len, "%s.json", id);
}

int sbx_store_write_record(struct sbx_store *st, const char *id, const char *json)
{
	char name[NAME_MAX];

	record_name(id, name, sizeof name);
	return sbx_fs_write_atomic_noted(sbx_journal_temp_notes(st->journal), st->records_fd, name,
	                                 json, strlen(json), 0600, 0);
}

int sbx_store_read_record(struct sbx_store *st, const char *id, sbx_json **out)
{
	char name[NAME_MAX], err[256];
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int fd = -1;
	size_t len = 0;
	int r;

	*out = NULL;
	record_name(id, name, sizeof name);
	fd = openat(st->records_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? sbx_fail(-SBX_ENOENT, "workspace manager: no workspace %s "
		                                  "in %s", id, st->base_dir)
		                       : sbx_fail(sbx_errno_code(errno), "workspace manager: %s: %s",
		                                  name, strerror(errno));
	if ((r = sbx_fs_read_fd(fd, RECORD_MAX, &text, &len)) < 0)
		return r;
	if (sbx_json_parse(text, len, out, err, sizeof err) < 0 || (*out)->type != SBX_JSON_OBJECT) {
		sbx_json_free(*out);
		*out = NULL;
		return sbx_fail(-SBX_EPROTO, "workspace manager: record of %s is damaged", id);
	}
	return 0;
}

void sbx_store_stamp(struct sbx_store *st, const char *id)
{
	char name[NAME_MAX];

	record_name(id, name, sizeof name);
	utimensat(st->records_fd, name, NULL, AT_SYMLINK_NOFOLLOW);
}

int64_t sbx_store_idle_ms(struct sbx_store *st, const char *id)
{
	char name[NAME_MAX];
	struct timespec now;
	struct stat sb;

	record_name(id, name, sizeof name);
	if (fstatat(st->records_fd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t ms = (int64_t)(now.tv_sec - sb.st_mtim.tv_sec) * 1000 +
	             (now.tv_nsec - sb.st_mtim.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms;
}

int sbx_store_list(struct sbx_store *st, char ***ids)
{
	int fd = openat(st->records_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	size_t n = 0, cap = 8;
	char **v = calloc(cap, sizeof *v);
	struct dirent *e;

	if (!d || !v) {
		if (fd >= 0 && !d)
			close(fd);
		if (d)
			closedir(d);
		free(v);
		return sbx_fail(-SBX_ENOMEM, "workspace manager: cannot list .records");
	}
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len <= 5 || strcmp(e->d_name + len - 5, ".json"))
			continue;
		if (n + 2 > cap) {
			char **bigger = realloc(v, (cap *= 2) * sizeof *v);
			if (!bigger)
				break;
			v = bigger;
		}
		if (!(v[n] = strndup(e->d_name, len - 5)))
			break;
		if (sbx_managed_id_valid(v[n]))
			n++;
		else
			free(v[n]);
		v[n] = NULL;
	}
	closedir(d);
	*ids = v;
	return 0;
}
