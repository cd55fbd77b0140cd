/* Finding repositories and checking what their git dirs hold (gitguard.h).
 *
 * A git dir is: a ".git" directory (its name compared case-insensitively: the host's file
 * system may not tell the cases apart), any directory shaped like one (HEAD, objects/ and
 * refs/: a bare repository), every git dir below modules/ and worktrees/ of another, and
 * whatever a pointer leads to (commondir, a "gitdir:" file, a .git symlink): git reads config
 * and hooks there too. In each the guard checks what the host's git would run or follow:
 * hooks/, config, config.worktree, commondir, and the pointers that lead elsewhere.
 *
 * A git-shaped folder that is not named .git is walked like any other folder as well: the
 * host's git run in a subfolder of it takes that subfolder's own .git first.
 *
 * Every directory is opened from its parent's fd with O_NOFOLLOW, so a link a command made
 * is never followed; pointers are resolved from the root with RESOLVE_BENEATH, the way the
 * host's git would resolve them but never out of the workspace. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gitguard_int.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/digest.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/path.h"

#define STATE_DIR ".agentsbx"
#define HOOK_HASH_MAX ((off_t)64 << 20)   /* a bigger hook is fingerprinted by its stat */

/* A failure that says nothing about the tree but that we could not look: the check must
 * fail (and the next one walk everything), never skip what it could not see. */
static bool out_of_resources(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOMEM;
}

char *gg_join(const char *rel, const char *name)
{
	char *s;

	if (!*rel)
		return strdup(name);
	return asprintf(&s, "%s/%s", rel, name) < 0 ? NULL : s;
}

int gg_openat_regular(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -SBX_EINVAL;
	}
	return fd;
}

/* The directories a check opened up (gg_openat_dir), to be given their modes back when it
 * ends: the guard must see what the host's git could, but a folder the user (or a command)
 * closed stays closed. One check runs on one thread, under its guard's lock. */
struct opened_up {
	int pfd;                  /* O_PATH fd of the directory itself */
	mode_t mode;
};
static __thread struct opened_up *opened;
static __thread size_t n_opened, cap_opened;

static bool remember_opened(int pfd, mode_t mode)
{
	if (n_opened == cap_opened) {
		size_t cap = cap_opened ? 2 * cap_opened : 8;
		struct opened_up *nv = realloc(opened, cap * sizeof *nv);

		if (!nv)
			return false;
		opened = nv;
		cap_opened = cap;
	}
	opened[n_opened++] = (struct opened_up){ pfd, mode };
	return true;
}

bool gg_remember_mode(int dirfd, mode_t mode)
{
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);

	if (fd < 0)
		return false;
	if (!remember_opened(fd, mode)) {
		close(fd);
		return false;
	}
	return true;
}

void gg_restore_modes(void)
{
	char path[64];

	for (size_t i = n_opened; i-- > 0;) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", opened[i].pfd);
		(void)chmod(path, opened[i].mode);
		close(opened[i].pfd);
	}
	free(opened);
	opened = NULL;
	n_opened = cap_opened = 0;
}

/* The directory name in dirfd, opened without following a link. One a command made
 * unreadable or unsearchable for us (chmod 100: git, as the same user, can still run a hook
 * in it by name) is given u+rwx for the rest of the check: the guard must see all that the
 * host's git could. Its own mode comes back at the end of the check (gg_restore_modes). */
int gg_openat_dir(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char path[64];
	struct stat st;
	int pfd;

	if (fd >= 0 || errno != EACCES)
		return fd;
	pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0 || fstat(pfd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    !remember_opened(pfd, st.st_mode & 07777)) {
		if (pfd >= 0)
			close(pfd);
		errno = EACCES;
		return -1;
	}
	/* Through the O_PATH fd: the very directory checked, never a link swapped in. */
	snprintf(path, sizeof path, "/proc/self/fd/%d", pfd);
	if (chmod(path, (st.st_mode & 07777) | S_IRWXU) < 0) {
		errno = EACCES;
		return -1;
	}
	return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* One component at a time, for kernels without openat2 (and where a directory on the way
 * must be made searchable). */
static int open_dir_walk(int rootfd, const char *rel, int *out)
{
	_cleanup_free_ char *copy = strdup(rel);
	int cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	char *save = NULL;

	if (!copy || cur < 0) {
		if (cur >= 0)
			close(cur);
		return -SBX_ENOMEM;
	}
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, ".") || !strcmp(c, "..")) {
			close(cur);
			return -SBX_EINVAL;
		}
		int next = gg_openat_dir(cur, c);
		int saved = errno;
		close(cur);
		if (next < 0)
			return -saved;
		cur = next;
	}
	*out = cur;
	return 0;
}

int gg_open_dir(struct sbx_gitguard *g, const char *rel, int *out)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};

	for (int tries = 0; tries < 16; tries++) {
		long fd = syscall(SYS_openat2, g->root_fd, *rel ? rel : ".", &how, sizeof how);
		if (fd >= 0) {
			*out = (int)fd;
			return 0;
		}
		if (errno == ENOSYS || errno == EAGAIN || errno == EACCES)
			break;
		if (errno != EINTR)
			return -errno;
	}
	return open_dir_walk(g->root_fd, rel, out);
}

static bool stat_is(int dirfd, const char *name, int flags, mode_t type)
{
	struct stat st;

	return fstatat(dirfd, name, &st, flags) == 0 && (st.st_mode & S_IFMT) == type;
}

/* git's is_git_directory: HEAD, and objects/ and refs/ in the common dir, which is the one a
 * commondir file names when there is one (a worktree's git dir has no objects/ or refs/ of its
 * own). Any commondir counts here: where it leads is the inspection's to judge. Links are
 * followed, as git's access() does: here a stat only, which reads nothing. */
bool gg_is_git_dir_shaped(int dirfd)
{
	struct stat st;

	if (fstatat(dirfd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
		return false;
	if (fstatat(dirfd, "commondir", &st, AT_SYMLINK_NOFOLLOW) == 0)
		return true;
	return stat_is(dirfd, "objects", 0, S_IFDIR) && stat_is(dirfd, "refs", 0, S_IFDIR);
}

static int entry_type(int dirfd, const struct dirent *e)
{
	struct stat st;

	if (e->d_type != DT_UNKNOWN)
		return e->d_type;
	if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return DT_UNKNOWN;
	return S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG :
	       S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
}

/* Calls fn for each entry of the directory dirfd (a fresh open of it, for the offset). */
static int each_entry(int dirfd, int (*fn)(int dirfd, const struct dirent *e, void *ud),
                      void *ud)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int r = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while (r == 0 && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			r = fn(dirfd, e, ud);
	closedir(d);
	return r;
}

/* ---- fingerprints --------------------------------------------------------------------- */

/* "<what>\0<rel>\0<detail>" as the key of an allowance. */
int gg_key_of(sbx_buf *b, const char *what, const char *rel, const char *detail,
              size_t detail_len)
{
	sbx_buf_append(b, what, strlen(what) + 1);
	sbx_buf_append(b, rel, strlen(rel) + 1);
	sbx_buf_append(b, detail, detail_len);
	return b->oom ? -SBX_ENOMEM : 0;
}

static int sha256_fd(int fd, char out[65])
{
	unsigned char md[SBX_SHA256_LEN], buf[65536];
	sbx_sha256 ctx;
	ssize_t n;

	sbx_sha256_init(&ctx);
	while ((n = read(fd, buf, sizeof buf)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -SBX_EIO;
		}
		sbx_sha256_update(&ctx, buf, (size_t)n);
	}
	sbx_sha256_final(&ctx, md);
	sbx_hex_of(md, sizeof md, out);
	return 0;
}

/* What an entry is, as a string that changes whenever what git would run could: a regular
 * file's mode and content hash, a link's target, a directory. */
static int fingerprint(int dirfd, const char *name, sbx_buf *out)
{
	struct stat st;
	char target[4096], hash[65];

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(dirfd, name, target, sizeof target - 1);
		if (n < 0)
			return -errno;
		sbx_buf_printf(out, "link:%.*s", (int)n, target);
		return 0;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > HOOK_HASH_MAX) {
		sbx_buf_printf(out, "%o:%lld:%llu:%lld.%ld", (unsigned)st.st_mode,
		               (long long)st.st_size, (unsigned long long)st.st_ino,
		               (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		return 0;
	}
	_cleanup_close_ int fd = gg_openat_regular(dirfd, name);
	struct stat fst;
	if (fd < 0)
		return fd;
	if (fstat(fd, &fst) < 0)
		return -errno;
	if (sha256_fd(fd, hash) < 0)
		return -SBX_EIO;
	sbx_buf_printf(out, "file:%o:%s", (unsigned)(fst.st_mode & 07777), hash);
	return 0;
}

/* Baseline: allow the entry as it is. Check: quarantine it unless the baseline allowed it. */
static int judge_entry(struct sbx_gitguard *g, int dirfd, const char *name, const char *what,
                       const char *rel, const char *reason)
{
	sbx_buf fp = { 0 }, key = { 0 };
	int r = fingerprint(dirfd, name, &fp);

	if (r == -ENOENT) {
		sbx_buf_free(&fp);
		return 0;
	}
	if (r == 0)
		r = gg_key_of(&key, what, rel, fp.data ? fp.data : "", fp.len);
	sbx_buf_free(&fp);
	if (r == 0 && g->baseline)
		r = sbx_strset_add(&g->allowed, key.data, key.len) < 0 ? -SBX_ENOMEM : 0;
	else if (r == 0 ? !sbx_strset_has(&g->allowed, key.data, key.len) : r != -SBX_ENOMEM)
		r = gg_quarantine(g, dirfd, name, rel, what, reason);
	sbx_buf_free(&key);
	return r;
}

/* ---- hooks ---------------------------------------------------------------------------- */

struct hooks_walk {
	struct sbx_gitguard *g;
	const char *hooks_rel;
	bool named_only;          /* a folder of the work tree: only the names git runs */
};

/* The hooks git runs, by name (githooks(5), git 2.47). */
static bool is_hook_name(const char *name)
{
	static const char *const names[] = {
		"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit",
		"pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase",
		"post-checkout", "post-merge", "pre-push", "pre-receive", "update", "proc-receive",
		"post-receive", "post-update", "reference-transaction", "push-to-checkout",
		"pre-auto-gc", "post-rewrite", "sendemail-validate", "fsmonitor-watchman",
		"p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
		"post-index-change", NULL,
	};

	for (const char *const *n = names; *n; n++)
		if (!strcmp(name, *n))
			return true;
	return false;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int judge_hook(int dirfd, const struct dirent *e, void *ud)
{
	struct hooks_walk *w = ud;
	_cleanup_free_ char *rel = gg_join(w->hooks_rel, e->d_name);

	if (!rel)
		return -SBX_ENOMEM;
	/* git runs hooks by their names; a "*.sample" never matches one */
	if (ends_with(e->d_name, ".sample") && entry_type(dirfd, e) == DT_REG)
		return 0;
	if (w->named_only && !is_hook_name(e->d_name))
		return 0;
	return judge_entry(w->g, dirfd, e->d_name, "hook", rel,
	                   "a hook the host's git would run");
}

static int check_hooks(struct sbx_gitguard *g, int gfd, const char *grel)
{
	_cleanup_free_ char *rel = gg_join(grel, "hooks");
	_cleanup_close_ int hfd = -1;
	struct stat st;

	if (!rel)
		return -SBX_ENOMEM;
	if (fstatat(gfd, "hooks", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (!S_ISDIR(st.st_mode))
		return judge_entry(g, gfd, "hooks", "hooks", rel,
		                   "a hooks folder that is a link or no folder");
	hfd = gg_openat_dir(gfd, "hooks");
	if (hfd < 0)
		return out_of_resources(errno) || errno == EACCES ? -errno : 0;
	gg_watch_add(g, hfd, rel, GG_WATCH_GIT_SUB, grel);
	return gg_judge_hooks_in(g, hfd, rel, false);
}

int gg_judge_hooks_in(struct sbx_gitguard *g, int hfd, const char *rel, bool named_only)
{
	struct hooks_walk w = { g, rel, named_only };

	return each_entry(hfd, judge_hook, &w);
}

/* ---- git dirs ------------------------------------------------------------------------- */

struct sub_walk {
	struct sbx_gitguard *g;
	const char *rel;          /* of the directory walked */
	const char *gitdir;       /* the git dir it belongs to */
	unsigned depth;
	bool every_dir_is_git;    /* worktrees/: each entry is a git dir */
};

static int walk_modules(struct sbx_gitguard *g, int dirfd, const char *rel, const char *gitdir,
                        unsigned depth);

static int sub_entry(int dirfd, const struct dirent *e, void *ud)
{
	struct sub_walk *w = ud;
	_cleanup_free_ char *rel = gg_join(w->rel, e->d_name);
	_cleanup_close_ int fd = -1;
	int type = entry_type(dirfd, e);

	if (!rel)
		return -SBX_ENOMEM;
	if (type == DT_LNK)
		return judge_entry(w->g, dirfd, e->d_name, "git-link", rel,
		                   "a link inside a git dir's modules or worktrees");
	if (type != DT_DIR)
		return 0;
	fd = gg_openat_dir(dirfd, e->d_name);
	if (fd < 0)
		return out_of_resources(errno) || errno == EACCES ? -errno : 0;
	/* A submodule's git dir has a HEAD; names with slashes nest ("modules/a/b"). */
	if (w->every_dir_is_git || stat_is(fd, "HEAD", AT_SYMLINK_NOFOLLOW, S_IFREG))
		return gg_inspect_git_dir(w->g, rel, w->depth + 1);
	return walk_modules(w->g, fd, rel, w->gitdir, w->depth + 1);
}

static int walk_modules(struct sbx_gitguard *g, int dirfd, const char *rel, const char *gitdir,
                        unsigned depth)
{
	struct sub_walk w = { g, rel, gitdir, depth, false };

	if (depth > GG_MAX_DEPTH)
		return 0;
	gg_watch_add(g, dirfd, rel, GG_WATCH_GIT_SUB, gitdir);
	return each_entry(dirfd, sub_entry, &w);
}

static int check_subdirs(struct sbx_gitguard *g, int gfd, const char *grel, const char *name,
                         unsigned depth)
{
	_cleanup_free_ char *rel = gg_join(grel, name);
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (!rel)
		return -SBX_ENOMEM;
	if (fstatat(gfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (!S_ISDIR(st.st_mode))
		return judge_entry(g, gfd, name, "git-link", rel,
		                   "modules or worktrees that is a link or no folder");
	if ((fd = gg_openat_dir(gfd, name)) < 0)
		return out_of_resources(errno) || errno == EACCES ? -errno : 0;
	if (!strcmp(name, "modules"))
		return walk_modules(g, fd, rel, grel, depth);
	struct sub_walk w = { g, rel, grel, depth, true };
	gg_watch_add(g, fd, rel, GG_WATCH_GIT_SUB, grel);
	return each_entry(fd, sub_entry, &w);
}

static int check_commondir(struct sbx_gitguard *g, int gfd, const char *grel, unsigned depth)
{
	_cleanup_free_ char *rel = gg_join(grel, "commondir");
	struct stat st;

	if (!rel)
		return -SBX_ENOMEM;
	if (fstatat(gfd, "commondir", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (!S_ISREG(st.st_mode))
		return judge_entry(g, gfd, "commondir", "pointer", rel,
		                   "a commondir that is a link or no file");
	return gg_check_pointer(g, gfd, "commondir", rel, grel, "", false, depth);
}

static int remember_repo(struct sbx_gitguard *g, const char *rel)
{
	int r = sbx_strset_add(&g->repos, rel, strlen(rel));

	if (r == 1 && !sbx_strset_has(&g->bound, rel, strlen(rel)) &&
	    sbx_strset_add(&g->to_bind, rel, strlen(rel)) < 0)
		return -SBX_ENOMEM;
	return r < 0 ? r : 0;
}

int gg_inspect_git_dir(struct sbx_gitguard *g, const char *rel, unsigned depth)
{
	_cleanup_close_ int gfd = -1;
	int r;

	if (sbx_strset_has(&g->inspected, rel, strlen(rel)))
		return 0;
	/* depth counts the pointers and module nestings that led here, never the folders above
	 * (a repository found by the walk starts a chain at 0). */
	if (depth > GG_MAX_DEPTH) {
		if (!g->walk_limited)
			gg_audit_event(g, "depth-limit", rel);
		g->walk_limited = true;
		return 0;
	}
	if (sbx_strset_add(&g->inspected, rel, strlen(rel)) < 0 || remember_repo(g, rel) < 0)
		return -SBX_ENOMEM;
	if ((r = gg_open_dir(g, rel, &gfd)) < 0)
		return out_of_resources(-r) ? r : 0;   /* gone, or a link now: its parent's check */
	gg_watch_add(g, gfd, rel, GG_WATCH_GIT_DIR, rel);
	if ((r = check_hooks(g, gfd, rel)) < 0 ||
	    (r = gg_check_config(g, gfd, rel, "config")) < 0 ||
	    (r = gg_check_config(g, gfd, rel, "config.worktree")) < 0 ||
	    (r = check_commondir(g, gfd, rel, depth)) < 0 ||
	    (r = check_subdirs(g, gfd, rel, "modules", depth)) < 0 ||
	    (r = check_subdirs(g, gfd, rel, "worktrees", depth)) < 0)
		return r;
	return 0;
}

/* ---- ordinary directories ------------------------------------------------------------- */

struct dir_walk {
	struct sbx_gitguard *g;
	const char *rel;
	unsigned depth;
	bool descend;
};

/* A .git entry of an ordinary folder: the start of a chain of git dirs (depth 0), however
 * deep the folder is. */
static int check_dot_git(struct sbx_gitguard *g, int dirfd, const char *dir_rel,
                         const char *name, int type)
{
	const unsigned depth = 0;
	_cleanup_free_ char *rel = gg_join(dir_rel, name);

	if (!rel)
		return -SBX_ENOMEM;
	switch (type) {
	case DT_DIR:
		return gg_inspect_git_dir(g, rel, depth);
	case DT_REG:
		return gg_check_pointer(g, dirfd, name, rel, dir_rel, "gitdir: ", false, depth);
	case DT_LNK:
		return gg_check_pointer(g, dirfd, name, rel, dir_rel, "", true, depth);
	default:
		return 0;
	}
}

static int dir_entry(int dirfd, const struct dirent *e, void *ud)
{
	struct dir_walk *w = ud;
	int type = entry_type(dirfd, e);

	if (!*w->rel && !strcmp(e->d_name, STATE_DIR))
		return 0;             /* the library's own (and the quarantine in it) */
	if (strcasecmp(e->d_name, ".git") == 0)
		return check_dot_git(w->g, dirfd, w->rel, e->d_name, type);
	if (type != DT_DIR || !w->descend)
		return 0;
	_cleanup_free_ char *rel = gg_join(w->rel, e->d_name);
	_cleanup_close_ int fd = gg_openat_dir(dirfd, e->d_name);
	if (!rel)
		return -SBX_ENOMEM;
	if (fd < 0)   /* else: gone, or a link now */
		return out_of_resources(errno) || errno == EACCES ? -errno : 0;
	return gg_walk_dir(w->g, fd, rel, w->depth + 1);
}

int gg_walk_dir(struct sbx_gitguard *g, int dirfd, const char *rel, unsigned depth)
{
	struct dir_walk w = { g, rel, depth, true };
	int r;

	if (depth > GG_MAX_DEPTH) {
		if (!g->walk_limited)
			gg_audit_event(g, "depth-limit", rel);
		g->walk_limited = true;
		return 0;
	}
	gg_watch_add(g, dirfd, rel, GG_WATCH_DIR, NULL);
	/* A folder shaped like a git dir is one (git takes it for a bare repository when it runs
	 * there or below without a .git of its own), and it stays a folder: git run in a
	 * subfolder of it uses that subfolder's .git first, so its tree is walked as any other. */
	if (gg_is_git_dir_shaped(dirfd) && (r = gg_inspect_git_dir(g, rel, 0)) < 0)
		return r;
	return each_entry(dirfd, dir_entry, &w);
}

int gg_recheck_dir(struct sbx_gitguard *g, const char *rel)
{
	_cleanup_close_ int fd = -1;
	struct dir_walk w = { g, rel, 0, false };
	int r;

	if (gg_open_dir(g, rel, &fd) < 0)
		return 0;
	/* The root too: made bare-shaped, it is the git dir of the host's git run there. */
	if (gg_is_git_dir_shaped(fd) && (r = gg_inspect_git_dir(g, rel, 0)) < 0)
		return r;
	return each_entry(fd, dir_entry, &w);
}
