/* The workspace's cgroup: memory and process-count limits for everything in the sandbox.
 *
 * The cgroup is made below the caller's own cgroup in each hierarchy
 * (<own>/agentsbx/<id>), never at the hierarchy's root: a sandbox must stay inside whatever
 * limits its creator already lives under, and moving it to the root would let it escape them.
 *
 * cgroup v2 (the whole /sys/fs/cgroup is cgroup2) is used when our cgroup can hand the memory
 * and pids controllers down to a child; v2 forbids that while the cgroup itself holds
 * processes (the "no internal processes" rule), so it works where the caller runs in a
 * delegated cgroup with a free subtree or in a cgroup namespace's root. Otherwise, on v1 or
 * hybrid hosts, the v1 memory and pids controllers are used, which needs write access to them
 * (root). Neither possible: -ENOTSUP, with the reason in err.
 *
 * On v1 the swap limit (memory.memsw.limit_in_bytes) is set to the memory limit when the
 * kernel accounts swap, and on v2 memory.swap.max is 0: otherwise a process could go on
 * growing into swap past its memory limit. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "util/error.h"
#include "init/sandbox.h"
#include "util/cleanup.h"

#define CGROUP_ROOT "/sys/fs/cgroup"
#define CGROUP_PARENT "agentsbx"
#define CGROUP2_MAGIC 0x63677270
#define ID_MAX 64

enum { CTRL_MEMORY, CTRL_PIDS, N_CTRL };
static const char *const ctrl_names[N_CTRL] = { "memory", "pids" };

/* snprintf's result as 0, or -ENAMETOOLONG when the path did not fit. */
static int fits(int n, size_t len)
{
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Ids become directory names: plain names only. */
static bool id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > ID_MAX || id[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)id[i]) && id[i] != '-' && id[i] != '_' && id[i] != '.')
			return false;
	return true;
}

static bool line_names_controller(const char *list, const char *ctrl)
{
	size_t n = strlen(ctrl);

	for (const char *p = list; *p; ) {
		const char *end = strchrnul(p, ',');

		if ((size_t)(end - p) == n && strncmp(p, ctrl, n) == 0)
			return true;
		p = *end ? end + 1 : end;
	}
	return false;
}

/* Drops a trailing "/agentsbx/<id>": after moving itself into its own sandbox's cgroup, a
 * caller must still find the same parent. */
static void strip_own_sandbox(char *path, const char *id)
{
	char tail[ID_MAX + sizeof CGROUP_PARENT + 3];
	size_t n = strlen(path), t;

	snprintf(tail, sizeof tail, "/" CGROUP_PARENT "/%s", id);
	t = strlen(tail);
	if (n >= t && strcmp(path + n - t, tail) == 0)
		path[n - t] = '\0';
}

/* Our cgroup in the v1 hierarchy of ctrl, or in v2 when ctrl is NULL ("/" for the root, as
 * /proc/self/cgroup writes it; "" then, so paths concatenate). */
static int own_cgroup(const char *ctrl, const char *id, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char *line = NULL;
	size_t cap = 0;
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (r == -ENOENT && getline(&line, &cap, f) > 0) {
		char *ctrls = strchr(line, ':'), *path = ctrls ? strchr(ctrls + 1, ':') : NULL;

		if (!path)
			continue;
		*path++ = '\0';
		ctrls++;
		path[strcspn(path, "\n")] = '\0';
		if (ctrl ? !line_names_controller(ctrls, ctrl) : *ctrls != '\0')
			continue;
		if (strlen(path) >= len)
			r = -ENAMETOOLONG;
		else
			r = snprintf(out, len, "%s", strcmp(path, "/") == 0 ? "" : path) < 0 ? -EIO : 0;
	}
	free(line);
	fclose(f);
	if (r == 0)
		strip_own_sandbox(out, id);
	return r;
}

static int write_file(const char *dir, const char *file, const char *value)
{
	char path[PATH_MAX];
	_cleanup_close_ int fd = -1;
	size_t len = strlen(value);
	ssize_t n;

	if (fits(snprintf(path, sizeof path, "%s/%s", dir, file), sizeof path) < 0)
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	do
		n = write(fd, value, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static int write_u64(const char *dir, const char *file, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%" PRIu64, v);
	return write_file(dir, file, buf);
}

static bool is_cgroup2(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && (unsigned long)sf.f_type == CGROUP2_MAGIC;
}

/* rmdir of a cgroup fails with EBUSY until the kernel has let go of its last (dying)
 * processes, which takes a moment after they exit. */
static int rmdir_patiently(const char *dir)
{
	struct timespec ten_ms = { 0, 10 * 1000 * 1000 };

	for (int i = 0; i < 100; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		nanosleep(&ten_ms, NULL);
	}
	return -EBUSY;
}

static bool is_permission_error(int r)
{
	return r == -EACCES || r == -EPERM || r == -EROFS;
}

/* Makes parent (shared by all sandboxes) and dir in it; an empty leftover of an earlier
 * sandbox with the same id is replaced, one still in use is an error. ENOENT: another
 * sandbox's cleanup removed the parent in between, so make it again, once. */
static int make_fresh_dir(const char *parent, const char *dir)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		if (mkdir(parent, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (mkdir(dir, 0755) == 0)
			return 0;
		if (errno != ENOENT)
			break;
	}
	if (errno != EEXIST)
		return -errno;
	if (rmdir(dir) < 0)
		return errno == EBUSY ? -EEXIST : -errno;
	return mkdir(dir, 0755) < 0 ? -errno : 0;
}

/* ---- cgroup v1 ---- */

static int v1_dir(int ctrl, const char *id, bool parent_only, char *out, size_t len)
{
	char own[PATH_MAX];
	int r = own_cgroup(ctrl_names[ctrl], id, own, sizeof own);

	if (r < 0)
		return r;
	if (parent_only)
		r = snprintf(out, len, CGROUP_ROOT "/%s%s/" CGROUP_PARENT, ctrl_names[ctrl], own);
	else
		r = snprintf(out, len, CGROUP_ROOT "/%s%s/" CGROUP_PARENT "/%s", ctrl_names[ctrl], own,
		             id);
	return fits(r, len);
}

static int v1_limit(int ctrl, const char *dir, const struct sbx_cgroup_limits *lim)
{
	int r;

	if (ctrl == CTRL_PIDS)
		return write_u64(dir, "pids.max", lim->pids);
	r = write_u64(dir, "memory.limit_in_bytes", lim->memory_bytes);
	if (r == 0) {
		r = write_u64(dir, "memory.memsw.limit_in_bytes", lim->memory_bytes);
		if (r == -ENOENT)        /* the kernel does not account swap: nothing to close */
			r = 0;
	}
	return r;
}

static int v1_setup_one(int ctrl, const char *id, pid_t pid, const struct sbx_cgroup_limits *lim,
                        char *err, size_t errlen)
{
	char parent[PATH_MAX], dir[PATH_MAX];
	int r = v1_dir(ctrl, id, true, parent, sizeof parent);

	if (r == 0)
		r = v1_dir(ctrl, id, false, dir, sizeof dir);
	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "cgroup v1 %s: find our own cgroup: %s",
		                    ctrl_names[ctrl], strerror(-r));
	/* A second round when the directory vanished before the pid was in (sbx_cgroup_sweep,
	 * in another process, took it for a dead workspace's empty one). */
	for (int round = 0; round < 2; round++) {
		r = make_fresh_dir(parent, dir);
		if (is_permission_error(r))
			return sbx_fail_buf(err, errlen, -ENOTSUP,
			                    "cgroup v1 %s: cannot create %s: %s (needs root, and there is "
			                    "no delegated cgroup v2 hierarchy)", ctrl_names[ctrl], dir,
			                    strerror(-r));
		if (r < 0)
			return sbx_fail_buf(err, errlen, r, "cgroup v1: mkdir %s: %s", dir,
			                    strerror(-r));
		r = v1_limit(ctrl, dir, lim);
		if (r == 0)
			r = write_u64(dir, "cgroup.procs", (uint64_t)pid);
		if (r != -ENOENT && r != -ENODEV)
			break;
	}
	if (r < 0) {
		rmdir(dir);
		return sbx_fail_buf(err, errlen, r, "cgroup v1 %s: set up %s: %s", ctrl_names[ctrl],
		                    dir, strerror(-r));
	}
	return 0;
}

/* The shared parent goes too once the last sandbox left it; EBUSY means another one lives. */
static void v1_cleanup(const char *id)
{
	char dir[PATH_MAX];

	for (int c = 0; c < N_CTRL; c++) {
		if (v1_dir(c, id, false, dir, sizeof dir) == 0)
			rmdir_patiently(dir);
		if (v1_dir(c, id, true, dir, sizeof dir) == 0)
			rmdir(dir);
	}
}

static int v1_setup(const char *id, pid_t pid, const struct sbx_cgroup_limits *lim,
                    char *err, size_t errlen)
{
	bool want[N_CTRL] = { lim->memory_bytes > 0, lim->pids > 0 };
	char path[PATH_MAX];

	for (int c = 0; c < N_CTRL; c++) {
		snprintf(path, sizeof path, CGROUP_ROOT "/%s", ctrl_names[c]);
		if (want[c] && access(path, F_OK) < 0)
			return sbx_fail_buf(err, errlen, -ENOTSUP,
			                    "cgroup: no cgroup v2 and no v1 %s controller at %s",
			                    ctrl_names[c], path);
	}
	for (int c = 0; c < N_CTRL; c++) {
		int r = want[c] ? v1_setup_one(c, id, pid, lim, err, errlen) : 0;

		if (r < 0) {
			v1_cleanup(id);
			return r;
		}
	}
	return 0;
}

/* ---- cgroup v2 ---- */

static int v2_base(const char *id, char *out, size_t len)
{
	char own[PATH_MAX];
	int r = own_cgroup(NULL, id, own, sizeof own);

	if (r == 0)
		r = fits(snprintf(out, len, CGROUP_ROOT "%s", own), len);
	return r;
}

static bool file_lists_word(const char *path, const char *word)
{
	char buf[512], *save = NULL;
	FILE *f = fopen(path, "re");
	bool found = false;

	if (!f)
		return false;
	if (fgets(buf, sizeof buf, f))
		for (char *w = strtok_r(buf, " \n", &save); w && !found; w = strtok_r(NULL, " \n", &save))
			found = strcmp(w, word) == 0;
	fclose(f);
	return found;
}

/* Hands the wanted controllers from dir down to its children. */
static int v2_delegate(const char *dir, const bool want[N_CTRL], char *err, size_t errlen)
{
	char path[PATH_MAX];

	for (int c = 0; c < N_CTRL; c++) {
		char plus[16];
		int r;

		if (!want[c])
			continue;
		snprintf(path, sizeof path, "%s/cgroup.controllers", dir);
		if (!file_lists_word(path, ctrl_names[c]))
			return sbx_fail_buf(err, errlen, -ENOTSUP,
			                    "cgroup v2: the %s controller is not available in %s",
			                    ctrl_names[c], dir);
		snprintf(plus, sizeof plus, "+%s", ctrl_names[c]);
		r = write_file(dir, "cgroup.subtree_control", plus);
		if (r == -EBUSY)
			return sbx_fail_buf(err, errlen, -ENOTSUP,
			                    "cgroup v2: %s holds processes, so it cannot hand %s down to a "
			                    "child (no internal processes rule)", dir, ctrl_names[c]);
		if (r < 0)
			return sbx_fail_buf(err, errlen, is_permission_error(r) ? -ENOTSUP : r,
			                    "cgroup v2: enable %s in %s: %s (not delegated to us?)",
			                    ctrl_names[c], dir, strerror(-r));
	}
	return 0;
}

static int v2_limit(const char *dir, const struct sbx_cgroup_limits *lim)
{
	int r = 0;

	if (lim->memory_bytes > 0) {
		r = write_u64(dir, "memory.max", lim->memory_bytes);
		if (r == 0) {
			r = write_file(dir, "memory.swap.max", "0");
			if (r == -ENOENT)
				r = 0;
		}
	}
	if (r == 0 && lim->pids > 0)
		r = write_u64(dir, "pids.max", lim->pids);
	return r;
}

static int v2_setup(const char *id, pid_t pid, const struct sbx_cgroup_limits *lim,
                    char *err, size_t errlen)
{
	bool want[N_CTRL] = { lim->memory_bytes > 0, lim->pids > 0 };
	char base[PATH_MAX], parent[PATH_MAX + 16], dir[PATH_MAX + 96];
	int r = v2_base(id, base, sizeof base);

	if (r < 0)
		return sbx_fail_buf(err, errlen, r, "cgroup v2: find our own cgroup: %s",
		                    strerror(-r));
	if (fits(snprintf(parent, sizeof parent, "%s/" CGROUP_PARENT, base), sizeof parent) < 0 ||
	    fits(snprintf(dir, sizeof dir, "%s/%s", parent, id), sizeof dir) < 0)
		return sbx_fail_buf(err, errlen, -ENAMETOOLONG, "cgroup v2: %s: path too long", base);
	r = v2_delegate(base, want, err, errlen);
	if (r < 0)
		return r;
	if (mkdir(parent, 0755) < 0 && errno != EEXIST)
		return sbx_fail_buf(err, errlen, is_permission_error(-errno) ? -ENOTSUP : -errno,
		                    "cgroup v2: mkdir %s: %s", parent, strerror(errno));
	r = v2_delegate(parent, want, err, errlen);
	if (r < 0)
		return r;
	for (int round = 0; round < 2; round++) {   /* as in v1_setup_one */
		r = make_fresh_dir(parent, dir);
		if (r < 0)
			return sbx_fail_buf(err, errlen, is_permission_error(r) ? -ENOTSUP : r,
			                    "cgroup v2: mkdir %s: %s", dir, strerror(-r));
		r = v2_limit(dir, lim);
		if (r == 0)
			r = write_u64(dir, "cgroup.procs", (uint64_t)pid);
		if (r != -ENOENT && r != -ENODEV)
			break;
	}
	if (r < 0) {
		rmdir(dir);
		return sbx_fail_buf(err, errlen, r, "cgroup v2: set up %s: %s", dir, strerror(-r));
	}
	return 0;
}

/* cgroup.kill (5.14+) ends whatever is still inside, so the rmdir can succeed. */
static void v2_cleanup(const char *id)
{
	char base[PATH_MAX], dir[PATH_MAX + 96];

	if (!is_cgroup2(CGROUP_ROOT) || v2_base(id, base, sizeof base) < 0)
		return;
	if (fits(snprintf(dir, sizeof dir, "%s/" CGROUP_PARENT "/%s", base, id), sizeof dir) < 0)
		return;
	write_file(dir, "cgroup.kill", "1");
	rmdir_patiently(dir);
	*strrchr(dir, '/') = '\0';
	rmdir(dir);                   /* the shared parent, once the last sandbox left it */
}

int sbx_cgroup_setup(const char *id, pid_t pid, const struct sbx_cgroup_limits *lim,
                     char *err, size_t errlen)
{
	if (!id_ok(id))
		return sbx_fail_buf(err, errlen, -EINVAL, "cgroup: bad id \"%s\"", id ? id : "(null)");
	if (!lim || pid <= 0)
		return sbx_fail_buf(err, errlen, -EINVAL, "cgroup: no limits or no pid");
	if (lim->memory_bytes == 0 && lim->pids == 0)
		return 0;             /* nothing to limit: no cgroup needed */
	if (is_cgroup2(CGROUP_ROOT))
		return v2_setup(id, pid, lim, err, errlen);
	return v1_setup(id, pid, lim, err, errlen);
}

void sbx_cgroup_cleanup(const char *id)
{
	if (!id_ok(id))
		return;
	v2_cleanup(id);
	v1_cleanup(id);
}

/* ---- the backstop sweep ---- */

/* A cgroup with no process and no child: nothing of a sandbox lives in it. */
static bool cgroup_empty(int parent_fd, const char *name)
{
	char path[NAME_MAX + 16], buf[64];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof path, "%s/cgroup.procs", name);
	fd = openat(parent_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof buf);
	return n == 0;
}

/* Removes the empty workspace cgroups below one "agentsbx" parent, then the parent if it is
 * left empty. rmdir decides: it refuses a cgroup that still has a process or a child. */
static int sweep_parent(const char *parent)
{
	DIR *d = opendir(parent);
	struct dirent *e;
	int removed = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || !id_ok(e->d_name) || !cgroup_empty(dirfd(d), e->d_name))
			continue;
		removed += unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) == 0;
	}
	closedir(d);
	rmdir(parent);
	return removed;
}

int sbx_cgroup_sweep(void)
{
	char dir[PATH_MAX + 96], base[PATH_MAX];
	int removed = 0;

	/* Any id: the parent is the same for all (own_cgroup only strips our own sandbox's). */
	if (is_cgroup2(CGROUP_ROOT)) {
		if (v2_base("-", base, sizeof base) == 0 &&
		    fits(snprintf(dir, sizeof dir, "%s/" CGROUP_PARENT, base), sizeof dir) == 0)
			removed += sweep_parent(dir);
		return removed;
	}
	for (int c = 0; c < N_CTRL; c++)
		if (v1_dir(c, "-", true, dir, sizeof dir) == 0)
			removed += sweep_parent(dir);
	return removed;
}
