/* What the git guard does about what it finds (gitguard.h): configs sanitised against the
 * allow-list (util/gitconfig.c), and everything else that could carry code moved into the
 * state folder's quarantine/<batch>/<path>, which the sandbox cannot write. Each item is
 * recorded (sbx_workspace_git_quarantine) and audited (kind "git").
 *
 * The order is what makes it race-free against a command still running: the suspicious file
 * is first moved out of the sandbox's reach (one rename in its directory fd), and only the
 * moved copy is read and sanitised; the clean copy then replaces it atomically. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "gitguard_int.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/gitconfig.h"

#define STATE_DIR ".agentsbx"
#define QUARANTINE "quarantine"

void gg_audit_event(struct sbx_gitguard *g, const char *event, const char *detail)
{
	sbx_audit_rec rec;

	if (g->baseline && strcmp(event, "full-walks") && strcmp(event, "depth-limit") &&
	    strcmp(event, "binds"))
		return;
	sbx_audit_begin(&rec, g->ws, "git");
	sbx_audit_str(&rec, "event", event);
	sbx_audit_str(&rec, "detail", detail);
	sbx_audit_str(&rec, "when", g->when ? g->when : "open");
	sbx_audit_end(&rec);
}

int gg_record(struct sbx_gitguard *g, const char *rel, const char *what, const char *reason,
              const char *moved_to)
{
	struct gg_item *nv = realloc(g->items, (g->n_items + 1) * sizeof *nv);
	struct gg_item *it;
	sbx_audit_rec rec;

	if (!nv)
		return -SBX_ENOMEM;
	g->items = nv;
	it = &g->items[g->n_items];
	*it = (struct gg_item){ .path = strdup(rel), .what = strdup(what),
	                        .reason = strdup(reason), .when = strdup(g->when ? g->when : "open"),
	                        .moved_to = moved_to ? strdup(moved_to) : NULL,
	                        .time = (int64_t)time(NULL) };
	if (!it->path || !it->what || !it->reason || !it->when || (moved_to && !it->moved_to)) {
		free(it->path);
		free(it->what);
		free(it->reason);
		free(it->when);
		free(it->moved_to);
		return -SBX_ENOMEM;
	}
	g->n_items++;
	atomic_fetch_add(&g->count, 1);
	sbx_audit_begin(&rec, g->ws, "git");
	sbx_audit_str(&rec, "event", "quarantine");
	sbx_audit_str(&rec, "path", rel);
	sbx_audit_str(&rec, "what", what);
	sbx_audit_str(&rec, "reason", reason);
	sbx_audit_str(&rec, "moved_to", moved_to);
	sbx_audit_str(&rec, "when", it->when);
	sbx_audit_end(&rec);
	return 0;
}

/* A directory name in dirfd, made (0700) if missing, opened without following a link. */
static int subdir(int dirfd, const char *name, int *out)
{
	*out = -1;
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	*out = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return *out < 0 ? -errno : 0;
}

/* This check's batch folder: quarantine/<UTC time>-<pid>-<n> in the state folder. */
static int open_batch(struct sbx_gitguard *g)
{
	_cleanup_close_ int q = -1;
	struct tm tm;
	time_t now = time(NULL);
	int r;

	if (g->quarantine_fd >= 0)
		return 0;
	/* Through the state folder's one way in (state.c): never through a link. */
	if ((r = sbx_state_dir(g->ws, QUARANTINE, 0700, &q)) < 0)
		return r;
	gmtime_r(&now, &tm);
	snprintf(g->batch, sizeof g->batch, "%04d%02d%02dT%02d%02d%02dZ-%d-%u",
	         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	         (int)getpid(), ++g->batch_seq);
	return subdir(q, g->batch, &g->quarantine_fd);
}

/* The directory for rel's parent inside the batch, made on the way. */
static int batch_parent(struct sbx_gitguard *g, const char *rel, int *out)
{
	_cleanup_free_ char *copy = strdup(rel);
	char *save = NULL, *slash;
	int cur;

	if (!copy)
		return -SBX_ENOMEM;
	if ((cur = fcntl(g->quarantine_fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return -errno;
	slash = strrchr(copy, '/');
	if (slash) {
		*slash = '\0';
		for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
			int next;
			int r = subdir(cur, c, &next);
			close(cur);
			if (r < 0)
				return r;
			cur = next;
		}
	}
	*out = cur;
	return 0;
}

/* What a copy of st costs the host's disk: its bytes, and a block for its inode. */
static uint64_t copy_cost(const struct stat *st)
{
	return (S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0) + 4096;
}

/* Across file systems (a capped workspace, whose files are a tmpfs of the sandbox's and whose
 * quarantine is on the host's disk): copy, then remove. The copy is the host's disk, outside
 * the workspace's cap, and a command can plant another cap's worth for every check: a file or
 * link is kept while the guard's copies stay within GG_MAX_COPIED, a folder never (a hook or
 * a config is a file). 1: removed without a copy. */
static int move_by_copy(struct sbx_gitguard *g, int dirfd, const char *name, int to_dir,
                        const char *to_name)
{
	struct stat st;
	char target[4096];
	int r;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode) || copy_cost(&st) > GG_MAX_COPIED - g->copied) {
		r = sbx_fs_remove_tree(dirfd, name);
		return r < 0 ? r : 1;
	}
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(dirfd, name, target, sizeof target - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		if (symlinkat(target, to_dir, to_name) < 0)
			return -errno;
	} else if (S_ISREG(st.st_mode)) {
		_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		                                             O_CLOEXEC);
		_cleanup_free_ char *data = NULL;
		size_t len;
		if (fd < 0)
			return -errno;
		/* At most the size judged: grown since (or unreadable), it is not kept. */
		if (sbx_fs_read_fd(fd, (size_t)st.st_size, &data, &len) < 0) {
			r = sbx_fs_remove_tree(dirfd, name);
			return r < 0 ? r : 1;
		}
		if ((r = sbx_fs_write_atomic(to_dir, to_name, data, len, 0600, 0)) < 0)
			return r;
	} else {
		r = sbx_fs_remove_tree(dirfd, name);    /* a FIFO, a socket: nothing to keep */
		return r < 0 ? r : 1;
	}
	g->copied += copy_cost(&st);
	return sbx_fs_remove_tree(dirfd, name);
}

static int make_writable(int dirfd)
{
	struct stat st;

	if (fstat(dirfd, &st) < 0 || st.st_uid != geteuid() ||
	    !gg_remember_mode(dirfd, st.st_mode & 07777))
		return -1;
	return fchmod(dirfd, (st.st_mode & 07777) | S_IRWXU);
}

int gg_quarantine(struct sbx_gitguard *g, int dirfd, const char *name, const char *rel,
                  const char *what, const char *reason)
{
	_cleanup_close_ int parent = -1;
	_cleanup_free_ char *moved = NULL;
	const char *base = strrchr(rel, '/');
	char why[400];
	int r;

	if (g->baseline)
		return 0;
	base = base ? base + 1 : rel;
	if ((r = open_batch(g)) < 0 || (r = batch_parent(g, rel, &parent)) < 0) {
		/* Nowhere to keep it: it goes all the same. */
		r = sbx_fs_remove_tree(dirfd, name);
		snprintf(why, sizeof why, "%s (deleted: the quarantine folder could not be made)",
		         reason);
		return r < 0 && r != -SBX_ENOENT ? r : gg_record(g, rel, what, why, NULL);
	}
	r = renameat(dirfd, name, parent, base) == 0 ? 0 : -errno;
	/* A command may have made the directory unwritable for us: it is ours (the sandbox runs
	 * as our user), and git could still run what is in it. */
	if ((r == -EACCES || r == -EPERM) && make_writable(dirfd) == 0)
		r = renameat(dirfd, name, parent, base) == 0 ? 0 : -errno;
	if (r == -ENOENT)
		return 0;             /* gone meanwhile: nothing left to run */
	if (r == -EXDEV)
		r = move_by_copy(g, dirfd, name, parent, base);
	if (r < 0 && r != -SBX_ENOENT)
		return r;
	if (r == 1) {
		snprintf(why, sizeof why, "%s (deleted: a folder, or more than the quarantine keeps "
		         "of a capped workspace)", reason);
		return gg_record(g, rel, what, why, NULL);
	}
	/* Where the host finds it: the state folder (outside the workdir by default). */
	if (asprintf(&moved, "%s/%s/%s/%s", sbx_state_path(g->ws) ? sbx_state_path(g->ws)
	                                                          : STATE_DIR,
	             QUARANTINE, g->batch, rel) < 0)
		return -SBX_ENOMEM;
	return gg_record(g, rel, what, reason, moved);
}

int gg_replace_file(int dirfd, const char *name, const char *data, size_t len)
{
	char saved[512];
	int r;

	snprintf(saved, sizeof saved, "%s", sbx_last_error());
	r = sbx_fs_write_atomic(dirfd, name, data, len, 0, 0);
	sbx_error_set(-SBX_EIO, "%s", saved);
	return r;
}

/* ---- configs -------------------------------------------------------------------------- */

struct keep_ctx {
	struct sbx_gitguard *g;
	const char *rel;          /* of the config */
	const char *grel;         /* of its git dir */
	bool included;            /* a file a config includes, not one of the git dir's own */
	sbx_buf key;
	bool record;              /* baseline: collect the keys that are not allowed */
	int err;
};

static void entry_key(struct keep_ctx *k, const sbx_gitconfig_entry *e)
{
	k->key.len = 0;
	sbx_buf_append(&k->key, "cfgkey", 7);
	sbx_buf_append(&k->key, k->rel, strlen(k->rel) + 1);
	sbx_buf_append(&k->key, e->section, strlen(e->section) + 1);
	sbx_buf_append(&k->key, e->subsection ? e->subsection : "\x01",
	               strlen(e->subsection ? e->subsection : "\x01") + 1);
	sbx_buf_append(&k->key, e->name, strlen(e->name) + 1);
	if (e->value)
		sbx_buf_append(&k->key, e->value, strlen(e->value));
	else
		sbx_buf_append(&k->key, "\x01", 1);
}

/* core.worktree: relative to the git dir, and it must stay in the workspace all the way
 * (lexically: a link on the way is the file tools' and the walk's business, and git only
 * reads and writes work-tree files there, it runs nothing from it). */
static bool worktree_inside(const struct keep_ctx *k, const char *value)
{
	_cleanup_free_ char *path = gg_join(k->grel, value);
	long depth = 0;

	if (!path)
		return false;
	for (char *save = NULL, *c = strtok_r(path, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, ".."))
			depth--;
		else if (strcmp(c, "."))
			depth++;
		if (depth < 0)
			return false;
	}
	return true;
}

static bool keep_key(const sbx_gitconfig_entry *e, bool allowed, void *userdata)
{
	struct keep_ctx *k = userdata;

	if (allowed && !strcmp(e->section, "core") && !strcmp(e->name, "worktree"))
		allowed = worktree_inside(k, e->value);
	if (allowed)
		return true;
	entry_key(k, e);
	if (k->key.oom) {
		k->err = -SBX_ENOMEM;
		return false;
	}
	if (k->record) {
		if (sbx_strset_add(&k->g->allowed, k->key.data, k->key.len) < 0)
			k->err = -SBX_ENOMEM;
	} else if (!sbx_strset_has(&k->g->allowed, k->key.data, k->key.len)) {
		return false;
	}
	/* The user's own include stays; the file it names is checked as a config too. So does
	 * a hooks path, whose folder is then a hooks folder. */
	if (gg_is_include(e))
		gg_note_include(k->g, k->rel, k->grel, e->value);
	else if (!strcmp(e->section, "core") && !strcmp(e->name, "hookspath"))
		gg_note_hooks_path(k->g, k->grel, e->value);
	return true;
}

static void fingerprint_of(const struct stat *st, const char *rel, sbx_buf *b)
{
	sbx_buf_append(b, "cfgfp", 6);
	sbx_buf_append(b, rel, strlen(rel) + 1);
	sbx_buf_printf(b, "%llu:%llu:%lld:%lld.%ld:%lld.%ld", (unsigned long long)st->st_dev,
	               (unsigned long long)st->st_ino, (long long)st->st_size,
	               (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
	               (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

/* Marks the file now at name as verified clean. */
static void remember_clean(struct sbx_gitguard *g, int gfd, const char *name, const char *rel)
{
	struct stat st;
	sbx_buf fp = { 0 };

	if (fstatat(gfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		fingerprint_of(&st, rel, &fp);
		if (!fp.oom)
			sbx_strset_add(&g->verified, fp.data, fp.len);
	}
	sbx_buf_free(&fp);
}

static int read_config(int dirfd, const char *name, char **text, size_t *len)
{
	_cleanup_close_ int fd = gg_openat_regular(dirfd, name);

	if (fd < 0)
		return fd;
	return sbx_fs_read_fd(fd, GG_MAX_CONFIG, text, len);
}

/* What a config is replaced by when nothing of it can be kept. */
static const char *minimal_config(const char *grel)
{
	const char *base = strrchr(grel, '/');

	base = base ? base + 1 : grel;
	return strcasecmp(base, ".git") == 0 || strstr(grel, "/modules/") || strstr(grel, "/worktrees/")
	       ? "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
	       : "[core]\n\trepositoryformatversion = 0\n\tbare = true\n";
}

/* Baseline: what the user has is allowed as it is. */
static int allow_config(struct sbx_gitguard *g, struct keep_ctx *k, const char *text,
                        size_t len)
{
	sbx_gitconfig_clean c;
	char err[200];
	sbx_buf whole = { 0 };
	int r;

	k->record = true;
	r = sbx_gitconfig_sanitize(text, len, keep_key, k, &c, err, sizeof err);
	if (r == 0) {
		sbx_gitconfig_clean_free(&c);
		return k->err;
	}
	if (r == -SBX_ENOMEM)
		return r;
	/* One we cannot read: allowed as these very bytes. */
	sbx_buf_append(&whole, "cfgwhole", 9);
	sbx_buf_append(&whole, k->rel, strlen(k->rel) + 1);
	sbx_buf_append(&whole, text, len);
	r = whole.oom || sbx_strset_add(&g->allowed, whole.data, whole.len) < 0 ? -SBX_ENOMEM : 0;
	sbx_buf_free(&whole);
	return r;
}

static bool allowed_whole(struct sbx_gitguard *g, const char *rel, const char *text, size_t len)
{
	sbx_buf whole = { 0 };
	bool yes;

	sbx_buf_append(&whole, "cfgwhole", 9);
	sbx_buf_append(&whole, rel, strlen(rel) + 1);
	sbx_buf_append(&whole, text, len);
	yes = !whole.oom && sbx_strset_has(&g->allowed, whole.data, whole.len);
	sbx_buf_free(&whole);
	return yes;
}

/* The quarantined copy (at moved, in the batch), sanitised, replaces name in gfd. */
static int restore_sanitised(struct sbx_gitguard *g, struct keep_ctx *k, int gfd,
                             const char *name)
{
	_cleanup_close_ int parent = -1;
	_cleanup_free_ char *text = NULL;
	const char *base = strrchr(k->rel, '/');
	sbx_gitconfig_clean c = { 0 };
	char err[200];
	size_t len;
	int r;

	base = base ? base + 1 : k->rel;
	/* Nothing to read (gone meanwhile, or deleted outright): the minimal config, so the
	 * repository still has one. */
	if ((r = batch_parent(g, k->rel, &parent)) < 0 || (r = read_config(parent, base, &text,
	                                                                    &len)) < 0)
		text = NULL;
	k->record = false;
	r = text ? sbx_gitconfig_sanitize(text, len, keep_key, k, &c, err, sizeof err) : -SBX_EINVAL;
	if (r == -SBX_ENOMEM || k->err)
		return -SBX_ENOMEM;
	if (r < 0 && k->included)
		r = gg_replace_file(gfd, name, "", 0);   /* an include: nothing of it is needed */
	else if (r < 0)
		r = gg_replace_file(gfd, name, minimal_config(k->grel), strlen(minimal_config(k->grel)));
	else
		r = gg_replace_file(gfd, name, c.text, c.len);
	sbx_gitconfig_clean_free(&c);
	if (r == 0)
		remember_clean(g, gfd, name, k->rel);
	return 0;
}

int gg_check_config(struct sbx_gitguard *g, int gfd, const char *grel, const char *name)
{
	return gg_check_config_file(g, gfd, grel, name, grel, false);
}

int gg_check_config_file(struct sbx_gitguard *g, int gfd, const char *dir_rel,
                         const char *name, const char *grel, bool included)
{
	_cleanup_free_ char *rel = gg_join(dir_rel, name), *text = NULL;
	struct keep_ctx k = { .g = g, .grel = grel, .included = included };
	sbx_gitconfig_clean c;
	sbx_buf fp = { 0 };
	char err[200], reason[400];
	struct stat st;
	size_t len;
	int r;

	if (!rel)
		return -SBX_ENOMEM;
	k.rel = rel;
	if (fstatat(gfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (!S_ISREG(st.st_mode))
		return gg_quarantine(g, gfd, name, rel, "config", "a config that is a link or no file");
	fingerprint_of(&st, rel, &fp);
	bool known = !fp.oom && sbx_strset_has(&g->verified, fp.data, fp.len);
	sbx_buf_free(&fp);
	if (known)
		return 0;
	r = read_config(gfd, name, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (g->baseline) {
		r = r < 0 ? 0 : allow_config(g, &k, text, len);
		sbx_buf_free(&k.key);
		remember_clean(g, gfd, name, rel);
		return r;
	}
	if (r == 0 && allowed_whole(g, rel, text, len)) {
		remember_clean(g, gfd, name, rel);
		return 0;
	}
	if (r == 0) {
		r = sbx_gitconfig_sanitize(text, len, keep_key, &k, &c, err, sizeof err);
		if (r == 0 && c.removed == 0 && !k.err) {
			sbx_gitconfig_clean_free(&c);
			sbx_buf_free(&k.key);
			remember_clean(g, gfd, name, rel);
			return 0;
		}
		if (r == 0)
			snprintf(reason, sizeof reason, "a config with keys that can run programs or "
			         "redirect git (%s, %zu in all); replaced by its sanitised copy",
			         c.first_removed, c.removed);
		else
			snprintf(reason, sizeof reason, "a config the strict reader refuses (%s); "
			         "replaced by %s", err, included ? "an empty one" : "a minimal one");
		sbx_gitconfig_clean_free(&c);
	} else {
		snprintf(reason, sizeof reason, "a config that cannot be read (%s); replaced by %s",
		         strerror(-r), included ? "an empty one" : "a minimal one");
	}
	if (r == -SBX_ENOMEM || k.err) {
		sbx_buf_free(&k.key);
		return -SBX_ENOMEM;
	}
	r = gg_quarantine(g, gfd, name, rel, "config", reason);
	if (r == 0)
		r = restore_sanitised(g, &k, gfd, name);
	sbx_buf_free(&k.key);
	return r;
}
