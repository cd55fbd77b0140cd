/* The journal's writing half (journal.h): who we are, notes, the temporary names of atomic
 * writes, and the placeholders of a sandbox start. journal_read.c reads notes back and
 * sweeps. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "buf.h"
#include "cleanup.h"
#include "error.h"
#include "journal.h"
#include "journal_int.h"
#include "path.h"

/* More placeholders than this in one start are left to the sandbox to make (a note must stay
 * small; protected-path lists are short). */
#define PLACEHOLDERS_MAX 4096
/* The parents of this many stay open between the steps; the rest are opened again (a host
 * may run with few fds to spare). */
#define PARENTS_KEPT 32

struct sbx_journal {
	int root_fd;
	int dir_fd;
	char *root_path;              /* root_fd as /proc/self/fd shows it */
	struct sbx_fs_temp_notes notes;
};

/* ---- who we are ------------------------------------------------------------------------ */

/* What a fork does not change (the boot, the PID namespace), read once: no lock a fork in a
 * multi-threaded host could leave held (pthread_once copes with a fork in the middle). */
static pthread_once_t stable_once = PTHREAD_ONCE_INIT;
static char stable_boot[40];
static uint64_t stable_pidns;
static int stable_error;

int sbx_journal_read_small(int dirfd, const char *path, char *buf, size_t len)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

int sbx_journal_boot_id(char out[40])
{
	int n = sbx_journal_read_small(AT_FDCWD, "/proc/sys/kernel/random/boot_id", out, 40);

	if (n <= 0)
		return n < 0 ? n : -EIO;
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

int sbx_journal_pidns(uint64_t *ino)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) < 0)
		return -errno;
	*ino = (uint64_t)st.st_ino;
	return 0;
}

int sbx_journal_proc_start(int64_t pid, uint64_t *start, char *state)
{
	char path[64], buf[1024], *p;
	int n;

	snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
	if ((n = sbx_journal_read_small(AT_FDCWD, path, buf, sizeof buf)) < 0)
		return n;
	/* "pid (comm) S ppid ...": comm may hold anything, so count from its last ')'. Field 3
	 * is the state, field 22 the start time. */
	if (!(p = strrchr(buf, ')')) || p[1] != ' ' || !p[2])
		return -EIO;
	*state = p[2];
	p += 2;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EIO;
		p++;
	}
	*start = strtoull(p, NULL, 10);
	return 0;
}

static void read_stable(void)
{
	stable_error = sbx_journal_boot_id(stable_boot);
	if (stable_error == 0)
		stable_error = sbx_journal_pidns(&stable_pidns);
}

int sbx_journal_self(struct sbx_journal_owner *o)
{
	char state;

	pthread_once(&stable_once, read_stable);
	if (stable_error)
		return stable_error;
	memcpy(o->boot, stable_boot, sizeof o->boot);
	o->pidns = stable_pidns;
	o->pid = getpid();
	return sbx_journal_proc_start(o->pid, &o->start, &state);
}

bool sbx_journal_owner_alive(const struct sbx_journal_owner *o)
{
	struct sbx_journal_owner me;
	uint64_t start;
	char state;

	if (sbx_journal_self(&me) < 0)
		return true;                      /* cannot tell: leave it */
	if (strcmp(me.boot, o->boot) != 0)
		return false;                     /* made before the last boot */
	if (me.pidns != o->pidns)
		return true;                      /* another PID namespace: cannot look */
	if (sbx_journal_proc_start(o->pid, &start, &state) < 0)
		return false;                     /* no such process */
	return start == o->start && state != 'Z' && state != 'X';
}

/* ---- notes ---------------------------------------------------------------------------- */

bool sbx_journal_generation(int fd, uint64_t *gen)
{
	/* File systems write an int or a long: read the low 32 bits of a zeroed long, the same
	 * way when noting and when checking. */
	long v = 0;

	if (ioctl(fd, FS_IOC_GETVERSION, &v) < 0)
		return false;
	*gen = (uint64_t)v & 0xffffffffu;
	return true;
}

bool sbx_journal_birth(int dirfd, const char *name, uint64_t *born)
{
	struct statx stx;

	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | (name[0] ? 0 : AT_EMPTY_PATH), STATX_BTIME,
	          &stx) < 0 || !(stx.stx_mask & STATX_BTIME))
		return false;
	*born = (uint64_t)stx.stx_btime.tv_sec * 1000000000u + stx.stx_btime.tv_nsec;
	return true;
}

void sbx_journal_random_hex(char *out, size_t bytes)
{
	unsigned char raw[16];
	static __thread unsigned long counter;

	if (bytes > sizeof raw)
		bytes = sizeof raw;
	if (getrandom(raw, bytes, GRND_NONBLOCK) != (ssize_t)bytes) {
		/* No entropy yet: the name only has to be unlikely to clash (O_EXCL decides). */
		unsigned long x = ((unsigned long)getpid() << 20) ^ (unsigned long)time(NULL) ^
		                  (++counter * 2654435761ul);
		for (size_t i = 0; i < bytes; i++, x = x * 6364136223846793005ul + 1)
			raw[i] = (unsigned char)(x >> 33);
	}
	for (size_t i = 0; i < bytes; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

void sbx_journal_owner_json(sbx_buf *b, const struct sbx_journal_owner *o)
{
	sbx_buf_puts(b, "\"owner\":{\"boot\":");
	sbx_buf_json_string(b, o->boot, strlen(o->boot));
	sbx_buf_printf(b, ",\"pidns\":%llu,\"pid\":%lld,\"start\":%llu}",
	               (unsigned long long)o->pidns, (long long)o->pid,
	               (unsigned long long)o->start);
}

/* Where the file system has no unnamed files: the note is made under its name (O_EXCL) and
 * filled; a replacement goes through ".<name>.new" and a rename. A writer killed in between
 * leaves an empty note or a dot-file, which the sweep removes once it is a minute old. */
static int put_note_named(int dir_fd, const char *name, const char *text, size_t len,
                          bool replace)
{
	char tmp[NAME_MAX + 1];
	_cleanup_close_ int fd = -1;
	int r;

	snprintf(tmp, sizeof tmp, ".%s.new", name);
	fd = openat(dir_fd, replace ? tmp : name,
	            O_WRONLY | O_CREAT | (replace ? O_TRUNC : O_EXCL) | O_NOFOLLOW | O_CLOEXEC,
	            0600);
	if (fd < 0)
		return -errno;
	if ((r = sbx_write_all(fd, text, len)) < 0) {
		unlinkat(dir_fd, replace ? tmp : name, 0);
		return r;
	}
	if (replace && renameat(dir_fd, tmp, dir_fd, name) < 0) {
		r = -errno;
		unlinkat(dir_fd, tmp, 0);
		return r;
	}
	return 0;
}

/* A note gets its name only once it is complete: it is written into an unnamed file and
 * linked (a replacement: linked under a temporary name and renamed over the old one). No
 * fsync: a note must survive its writer, not the machine. */
int sbx_journal_put_note(int dir_fd, const char *name, const sbx_buf *text, bool replace)
{
	_cleanup_close_ int fd = -1;
	char tmp[NAME_MAX + 1];
	int r;

	if (text->oom || !text->data)
		return -ENOMEM;
	fd = openat(dir_fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL))
		return put_note_named(dir_fd, name, text->data, text->len, replace);
	if (fd < 0)
		return -errno;
	if ((r = sbx_write_all(fd, text->data, text->len)) < 0)
		return r;
	if (!replace) {
		r = sbx_fs_link_unnamed(fd, dir_fd, name);
		return r == -ENOENT || r == -EPERM ? put_note_named(dir_fd, name, text->data,
		                                                    text->len, false) : r;
	}
	snprintf(tmp, sizeof tmp, ".%s.new", name);
	if ((r = sbx_fs_link_unnamed(fd, dir_fd, tmp)) == -EEXIST) {
		unlinkat(dir_fd, tmp, 0);         /* a killed writer's */
		r = sbx_fs_link_unnamed(fd, dir_fd, tmp);
	}
	if (r < 0)
		return r == -ENOENT || r == -EPERM ? put_note_named(dir_fd, name, text->data,
		                                                    text->len, true) : r;
	if (renameat(dir_fd, tmp, dir_fd, name) < 0) {
		r = -errno;
		unlinkat(dir_fd, tmp, 0);
		return r;
	}
	return 0;
}

/* ---- the journal ---------------------------------------------------------------------- */

/* A private directory below dirfd, made when missing, never through a link. */
static int private_dir(int dirfd, const char *name, bool create, int *out)
{
	struct stat st;
	int fd;

	if (create && mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return -EACCES;
	}
	*out = fd;
	return 0;
}

int sbx_journal_open_dir(int root_fd, const char *journal_rel, bool create, int *out)
{
	const char *slash = strchr(journal_rel, '/');
	_cleanup_close_ int parent = -1;
	char first[NAME_MAX + 1];

	*out = -1;
	if (!slash)
		return private_dir(root_fd, journal_rel, create, out);
	/* The state folder: the workspace made it before anything noted into it. */
	snprintf(first, sizeof first, "%.*s", (int)(slash - journal_rel), journal_rel);
	parent = openat(root_fd, first, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (parent < 0)
		return -errno;
	return private_dir(parent, slash + 1, create, out);
}

static void *temp_note(void *ctx, int dirfd, const char *tmp, int fd);
static void temp_forget(void *ctx, void *handle);

int sbx_journal_open(int root_fd, const char *journal_rel, sbx_journal **out)
{
	sbx_journal *j = calloc(1, sizeof *j);
	char proc[48], path[PATH_MAX];
	ssize_t n;
	int r;

	*out = NULL;
	if (!j)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	j->root_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
	j->dir_fd = -1;
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", root_fd);
	n = readlink(proc, path, sizeof path - 1);
	if (j->root_fd < 0 || n <= 0) {
		r = sbx_fail(sbx_errno_code(errno), "journal: the workspace directory: %s",
		             strerror(errno));
		sbx_journal_free(j);
		return r;
	}
	path[n] = '\0';
	if (!(j->root_path = strdup(path))) {
		sbx_journal_free(j);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	if ((r = sbx_journal_open_dir(root_fd, journal_rel, true, &j->dir_fd)) < 0) {
		sbx_journal_free(j);
		return sbx_fail(sbx_errno_code(-r), "journal: %s: %s%s", journal_rel, strerror(-r),
		                r == -EACCES ? " (must be a directory of ours, mode 0700)" : "");
	}
	j->notes = (struct sbx_fs_temp_notes){ .note = temp_note, .forget = temp_forget, .ctx = j };
	*out = j;
	return 0;
}

void sbx_journal_free(sbx_journal *j)
{
	if (!j)
		return;
	if (j->root_fd >= 0)
		close(j->root_fd);
	if (j->dir_fd >= 0)
		close(j->dir_fd);
	free(j->root_path);
	free(j);
}

/* ---- temporary names of atomic writes -------------------------------------------------- */

const struct sbx_fs_temp_notes *sbx_journal_temp_notes(sbx_journal *j)
{
	return j ? &j->notes : NULL;
}

/* dirfd's path relative to the root, from what /proc says of both: NULL when it is not
 * below the root (a sandbox's own file system) or not UTF-8 (JSON could not carry it). */
static char *relative_dir(const sbx_journal *j, int dirfd)
{
	char proc[48], path[PATH_MAX];
	size_t root_len = strlen(j->root_path);
	ssize_t n;

	snprintf(proc, sizeof proc, "/proc/self/fd/%d", dirfd);
	if ((n = readlink(proc, path, sizeof path - 1)) <= 0)
		return NULL;
	path[n] = '\0';
	if (!sbx_utf8_valid(path, (size_t)n))
		return NULL;
	if (!strcmp(path, j->root_path))
		return strdup("");
	if (root_len == 1)                    /* the root is "/" */
		return strdup(path + 1);
	if (strncmp(path, j->root_path, root_len) != 0 || path[root_len] != '/')
		return NULL;
	return strdup(path + root_len + 1);
}

struct identity {
	uint64_t dev, ino, gen, born;
	bool has_gen, has_born;
};

/* What a note says of the entry's inode, from an fd of it (-1: not made yet, all 0). */
static struct identity identity_of(int fd)
{
	struct identity id = { 0 };
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return id;
	id.dev = (uint64_t)st.st_dev;
	id.ino = (uint64_t)st.st_ino;
	id.has_gen = sbx_journal_generation(fd, &id.gen);
	id.has_born = sbx_journal_birth(fd, "", &id.born);
	return id;
}

static void item_json(sbx_buf *b, const char *at, const char *name, const char *tmp,
                      enum sbx_placeholder_kind kind, const struct identity *id)
{
	sbx_buf_puts(b, "{\"at\":");
	sbx_buf_json_string(b, at, strlen(at));
	if (name) {
		sbx_buf_puts(b, ",\"name\":");
		sbx_buf_json_string(b, name, strlen(name));
	}
	sbx_buf_puts(b, ",\"tmp\":");
	sbx_buf_json_string(b, tmp, strlen(tmp));
	sbx_buf_printf(b, ",\"dir\":%s,", kind == SBX_PLACEHOLDER_DIR ? "true" : "false");
	if (kind == SBX_PLACEHOLDER_SOCKET)
		sbx_buf_puts(b, "\"sock\":true,");
	sbx_buf_printf(b, "\"dev\":%llu,\"ino\":%llu", (unsigned long long)id->dev,
	               (unsigned long long)id->ino);
	if (id->has_gen)
		sbx_buf_printf(b, ",\"gen\":%llu", (unsigned long long)id->gen);
	if (id->has_born)
		sbx_buf_printf(b, ",\"born\":%llu", (unsigned long long)id->born);
	sbx_buf_puts(b, "}");
}

static void *temp_note(void *ctx, int dirfd, const char *tmp, int fd)
{
	const struct identity id = identity_of(fd);
	sbx_journal *j = ctx;
	_cleanup_free_ char *at = relative_dir(j, dirfd);
	struct sbx_journal_owner me;
	char name[3 + 32 + 1] = "t-";
	sbx_buf b = { 0 };
	int r;

	if (!at || !sbx_utf8_valid(tmp, strlen(tmp)) || sbx_journal_self(&me) < 0)
		return NULL;
	sbx_journal_random_hex(name + 2, 12);
	sbx_buf_puts(&b, "{\"kind\":\"temp\",");
	sbx_journal_owner_json(&b, &me);
	sbx_buf_puts(&b, ",\"items\":[");
	item_json(&b, at, NULL, tmp, SBX_PLACEHOLDER_FILE, &id);
	sbx_buf_puts(&b, "]}");
	r = sbx_journal_put_note(j->dir_fd, name, &b, false);
	sbx_buf_free(&b);
	return r == 0 ? strdup(name) : NULL;
}

static void temp_forget(void *ctx, void *handle)
{
	sbx_journal *j = ctx;

	unlinkat(j->dir_fd, handle, 0);
	free(handle);
}

/* ---- placeholders ---------------------------------------------------------------------- */

struct placeholder {
	const char *path;
	enum sbx_placeholder_kind kind;
	char *at;                     /* its directory (relative) */
	char *name;
	char tmp[NAME_MAX + 1];
	struct identity id;           /* of the temporary entry, once made */
	int parent;                   /* its directory, kept open, or -1 */
	int unnamed;                  /* a file made unnamed (O_TMPFILE), to link as name, or -1 */
};

static void free_placeholders(struct placeholder *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].at);
		free(v[i].name);
		if (v[i].parent >= 0)
			close(v[i].parent);
		if (v[i].unnamed >= 0)
			close(v[i].unnamed);
	}
	free(v);
}

/* Its directory: the one kept open, else opened again (*owned then holds it). */
static int parent_of(const sbx_journal *j, const struct placeholder *p, int *owned)
{
	_cleanup_free_ char *name = NULL;

	*owned = -1;
	if (p->parent >= 0)
		return p->parent;
	return sbx_path_open_parent(j->root_fd, p->path, false, owned, &name) < 0 ? -1 : *owned;
}

/* A socket where the directory's file system tells birth times (a socket cannot be opened
 * for its generation, and its noted inode must not be mistaken for a later one's), else a
 * directory, which blocks the name as well. */
static enum sbx_placeholder_kind kind_in(int dirfd, enum sbx_placeholder_kind wanted)
{
	uint64_t born;

	if (wanted == SBX_PLACEHOLDER_SOCKET && !sbx_journal_birth(dirfd, "", &born))
		return SBX_PLACEHOLDER_DIR;
	return wanted;
}

/* The missing ones whose parent exists, with their directories split off. */
static size_t find_missing(const sbx_journal *j, const char *const *paths,
                           const enum sbx_placeholder_kind *kinds, struct placeholder **out)
{
	size_t n = 0, cap = 0;
	struct placeholder *v = NULL;

	for (size_t i = 0; paths[i] && n < PLACEHOLDERS_MAX; i++) {
		_cleanup_free_ char *name = NULL;
		_cleanup_close_ int dirfd = -1;
		const char *slash = strrchr(paths[i], '/');
		struct stat st;

		if (!sbx_utf8_valid(paths[i], strlen(paths[i])) ||
		    sbx_path_open_parent(j->root_fd, paths[i], false, &dirfd, &name) < 0)
			continue;             /* no parent: nothing there to protect */
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
			continue;
		if (n == cap) {
			struct placeholder *nv = realloc(v, (cap = cap ? 2 * cap : 8) * sizeof *v);
			if (!nv)
				break;
			v = nv;
		}
		v[n] = (struct placeholder){ .path = paths[i], .kind = kind_in(dirfd, kinds[i]),
		                             .name = SBX_TAKE_PTR(name),
		                             .parent = n < PARENTS_KEPT ? SBX_TAKE_FD(dirfd) : -1,
		                             .unnamed = -1,
		                             .at = strndup(paths[i], slash ? (size_t)(slash - paths[i])
		                                                           : 0) };
		if (!v[n].at) {
			free(v[n].name);
			if (v[n].parent >= 0)
				close(v[n].parent);
			break;
		}
		snprintf(v[n].tmp, sizeof v[n].tmp, ".%.*s.sbx-", NAME_MAX - 14, v[n].name);
		sbx_journal_random_hex(v[n].tmp + strlen(v[n].tmp), 3);
		n++;
	}
	*out = v;
	return n;
}

static int note_placeholders(const sbx_journal *j, const char *record, bool detached,
                             const struct placeholder *v, size_t n, bool replace)
{
	struct sbx_journal_owner me;
	sbx_buf b = { 0 };
	int r;

	if ((r = sbx_journal_self(&me)) < 0)
		return r;
	sbx_buf_puts(&b, "{\"kind\":\"placeholders\",");
	sbx_journal_owner_json(&b, &me);
	sbx_buf_printf(&b, ",\"detached\":%s,\"items\":[", detached ? "true" : "false");
	for (size_t i = 0; i < n; i++) {
		sbx_buf_puts(&b, i ? "," : "");
		item_json(&b, v[i].at, v[i].name, v[i].tmp, v[i].kind, &v[i].id);
	}
	sbx_buf_puts(&b, "]}");
	r = sbx_journal_put_note(j->dir_fd, record, &b, replace);
	sbx_buf_free(&b);
	return r;
}

/* A file placeholder whose directory is kept open is made as an unnamed file (O_TMPFILE):
 * its inode is known before it has any name, and linking it as its name refuses anything
 * that appeared meanwhile. No temporary name, no rename. False where the file system has no
 * unnamed files (or the placeholder is no file): the temporary name's way then. */
static bool make_unnamed(struct placeholder *p)
{
	if (p->kind != SBX_PLACEHOLDER_FILE || p->parent < 0)
		return false;
	p->unnamed = openat(p->parent, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0444);
	if (p->unnamed < 0)
		return false;
	p->id = identity_of(p->unnamed);
	return true;
}

/* Makes the entry under its temporary name and learns its inode. */
static void make_temporary(const sbx_journal *j, struct placeholder *p)
{
	_cleanup_close_ int owned = -1, fd = -1;
	int dirfd = parent_of(j, p, &owned);

	if (dirfd < 0)
		return;
	/* 0755 / 0444: the sandbox binds it read-only; the host keeps the right to remove it.
	 * mkdirat and mknodat never follow a link at the name. */
	switch (p->kind) {
	case SBX_PLACEHOLDER_DIR:
		if (mkdirat(dirfd, p->tmp, 0755) < 0)
			return;
		fd = openat(dirfd, p->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		break;
	case SBX_PLACEHOLDER_SOCKET:
		if (mknodat(dirfd, p->tmp, S_IFSOCK | 0444, 0) < 0)
			return;
		fd = openat(dirfd, p->tmp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		break;
	case SBX_PLACEHOLDER_FILE:
	default:
		fd = openat(dirfd, p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		            0444);
		break;
	}
	p->id = identity_of(fd);
	if (p->kind == SBX_PLACEHOLDER_SOCKET && p->id.ino && !p->id.has_born) {
		unlinkat(dirfd, p->tmp, 0);   /* could not be told from a later inode: not made */
		p->id = (struct identity){ 0 };
	}
}

/* Renames it into place, never over anything: what appeared meanwhile is not ours to
 * protect (the sandbox binds it as it is), and our temporary entry goes. */
static void move_into_place(const sbx_journal *j, const struct placeholder *p)
{
	_cleanup_close_ int owned = -1;
	int dirfd = p->id.ino ? parent_of(j, p, &owned) : -1;

	if (dirfd < 0)
		return;
	if (p->unnamed >= 0) {
		sbx_fs_link_unnamed(p->unnamed, dirfd, p->name);   /* EEXIST: not ours to make */
		return;
	}
	if (renameat2(dirfd, p->tmp, dirfd, p->name, RENAME_NOREPLACE) == 0)
		return;
	const bool dir = p->kind == SBX_PLACEHOLDER_DIR;
	if (errno == EINVAL && !dir && linkat(dirfd, p->tmp, dirfd, p->name, 0) == 0) {
		unlinkat(dirfd, p->tmp, 0);   /* a file system without RENAME_NOREPLACE */
		return;
	}
	unlinkat(dirfd, p->tmp, dir ? AT_REMOVEDIR : 0);
}

int sbx_journal_make_placeholders(sbx_journal *j, const char *const *paths,
                                  const enum sbx_placeholder_kind *kinds, bool detached,
                                  char **record)
{
	struct placeholder *v = NULL;
	size_t n = find_missing(j, paths, kinds, &v);
	char name[3 + 32 + 1] = "p-";
	int r;

	*record = NULL;
	if (n == 0) {
		free(v);
		return 0;
	}
	sbx_journal_random_hex(name + 2, 12);
	/* Unnamed files need one note, with their inodes, before they get names; temporary
	 * names are noted before they exist, and again with the inodes before the renames. */
	bool named = false;
	for (size_t i = 0; i < n; i++)
		named |= !make_unnamed(&v[i]);
	if (named && (r = note_placeholders(j, name, detached, v, n, false)) < 0) {
		free_placeholders(v, n);
		return sbx_fail(sbx_errno_code(-r), "journal: note the placeholders: %s",
		                strerror(-r));
	}
	for (size_t i = 0; i < n; i++)
		if (v[i].unnamed < 0)
			make_temporary(j, &v[i]);
	r = note_placeholders(j, name, detached, v, n, named);
	for (size_t i = 0; i < n && r == 0; i++)
		move_into_place(j, &v[i]);
	if (r < 0) {
		/* Without the inodes noted, nothing may be given its name: undo what was made. */
		for (size_t i = 0; i < n; i++)
			if (v[i].id.ino && v[i].unnamed < 0) {
				_cleanup_close_ int owned = -1;
				int dirfd = parent_of(j, &v[i], &owned);
				if (dirfd >= 0)
					unlinkat(dirfd, v[i].tmp,
					         v[i].kind == SBX_PLACEHOLDER_DIR ? AT_REMOVEDIR : 0);
			}
		unlinkat(j->dir_fd, name, 0);
		free_placeholders(v, n);
		return sbx_fail(sbx_errno_code(-r), "journal: note the placeholders: %s",
		                strerror(-r));
	}
	free_placeholders(v, n);
	if (!(*record = strdup(name)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return 0;
}
