/* The git guard's lifecycle and reports (gitguard.h): the baseline walk at open, the check
 * after each command, the read-only binds it asks the backend for, and the list of what it
 * quarantined (sbx_workspace_git_quarantine). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gitguard_int.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/path.h"

bool sbx_gitguard_applies(const sbx_workspace *ws)
{
	return (ws->caps & SBX_BACKEND_CAP_HOST_FILES) && (ws->caps & SBX_BACKEND_CAP_ISOLATED) &&
	       ws->root_fd >= 0 && ws->workdir;
}

/* The backend's protect_now, where its table has one. */
static int backend_protect(struct sbx_gitguard *g, const char *const *paths)
{
	const sbx_backend_ops *ops = g->ws->ops;

	if (!SBX_BACKEND_OPS_HAS(ops, protect_now) || !ops->protect_now)
		return -SBX_ENOSYS;
	return ops->protect_now(g->ws->state, paths);
}

struct bind_list {
	char **v;
	size_t n, cap;
	size_t repos;
};

static int push(struct bind_list *l, const char *rel, const char *name)
{
	char *s;

	if (l->n + 2 > l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		char **nv = realloc(l->v, cap * sizeof *nv);
		if (!nv)
			return -SBX_ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	if (!*rel)
		s = strdup(name);
	else if (asprintf(&s, "%s/%s", rel, name) < 0)
		s = NULL;
	if (!s)
		return -SBX_ENOMEM;
	l->v[l->n++] = s;
	l->v[l->n] = NULL;
	return 0;
}

/* A git dir's entries that must not change: the git dir itself pinned (a mount point cannot
 * be renamed away and replaced), its config, config.worktree, hooks/ and commondir read-only,
 * modules/ and worktrees/ pinned. Missing ones are the backend's to skip: never made. */
static int add_repo(const char *rel, size_t len, void *ud)
{
	static const char *const names[] = { "config", "config.worktree", "hooks/", "commondir",
	                                     "modules//", "worktrees//", NULL };
	struct bind_list *l = ud;
	int r = 0;

	(void)len;
	if (l->repos >= GG_MAX_BOUND_REPOS)
		return 1;
	l->repos++;
	if (*rel)
		r = push(l, rel, "//");
	for (const char *const *n = names; *n && r == 0; n++)
		r = push(l, rel, *n);
	return r;
}

static void free_list(struct bind_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/* After a check: binds for the git dirs found, up to GG_MAX_BOUND_REPOS in all. */
static void bind_new_repos(struct sbx_gitguard *g)
{
	struct bind_list l = { .repos = g->n_bound };
	char detail[160];
	int r;

	if (!g->to_bind.n || g->bind_unsupported || g->backend_gone) {
		sbx_strset_clear(&g->to_bind);
		return;
	}
	r = sbx_strset_each(&g->to_bind, add_repo, &l);
	if (r == 1 && !g->bind_limit_audited) {
		g->bind_limit_audited = true;
		snprintf(detail, sizeof detail, "more than %d repositories: the rest are guarded by "
		         "detection only", GG_MAX_BOUND_REPOS);
		gg_audit_event(g, "binds", detail);
	}
	if (r >= 0 && l.n) {
		char saved[512];
		int limit = r;
		snprintf(saved, sizeof saved, "%s", sbx_last_error());
		r = backend_protect(g, (const char *const *)l.v);
		if (r == 0)
			r = limit;
		if (r == 0 || r == 1) {
			g->n_bound = l.repos;
		} else if (r == -SBX_ENOSYS) {
			g->bind_unsupported = true;
		} else if (r < 0) {
			snprintf(detail, sizeof detail, "read-only binds failed: %s", sbx_last_error());
			gg_audit_event(g, "binds", detail);
		}
		sbx_error_set(-SBX_EIO, "%s", saved);
	}
	if (r >= 0 || r == -SBX_ENOSYS)
		sbx_strset_take(&g->bound, &g->to_bind);
	sbx_strset_clear(&g->to_bind);
	free_list(&l);
}

/* Whether the backend can bind at all (an empty list answers without doing anything), so
 * that the instructions and the report say the truth before the first repository appears. */
static void probe_binds(struct sbx_gitguard *g)
{
	const char *const none[] = { NULL };
	char saved[512];

	snprintf(saved, sizeof saved, "%s", sbx_last_error());
	if (backend_protect(g, none) == -SBX_ENOSYS)
		g->bind_unsupported = true;
	sbx_error_set(-SBX_EIO, "%s", saved);
}

static void free_guard(struct sbx_gitguard *g)
{
	gg_watch_unregister(g);
	sbx_strset_clear(&g->repos);
	sbx_strset_clear(&g->allowed);
	sbx_strset_clear(&g->verified);
	sbx_strset_clear(&g->inspected);
	sbx_strset_clear(&g->bound);
	sbx_strset_clear(&g->to_bind);
	sbx_strset_clear(&g->includes);
	sbx_strset_clear(&g->includes_found);
	for (size_t i = 0; i < g->n_items; i++) {
		free(g->items[i].path);
		free(g->items[i].what);
		free(g->items[i].reason);
		free(g->items[i].moved_to);
		free(g->items[i].when);
	}
	free(g->items);
	if (g->root_fd >= 0)
		close(g->root_fd);
	if (g->quarantine_fd >= 0)
		close(g->quarantine_fd);
	free(g->host_root);
	free(g->view_root);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

static int walk_all(struct sbx_gitguard *g)
{
	_cleanup_close_ int fd = -1;
	int r = gg_open_dir(g, "", &fd);

	return r < 0 ? sbx_fail(sbx_errno_code(-r), "git guard: cannot read the workspace root: %s",
	                        strerror(-r))
	             : gg_walk_dir(g, fd, "", 0);
}

int sbx_gitguard_open(sbx_workspace *ws)
{
	struct sbx_gitguard *g;
	const char *view = ws->ops->root ? ws->ops->root(ws->state) : NULL;
	int r;

	ws->gitguard = NULL;
	if (!sbx_gitguard_applies(ws))
		return 0;
	if (!(g = calloc(1, sizeof *g)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	pthread_mutex_init(&g->lock, NULL);
	g->ws = ws;
	g->quarantine_fd = -1;
	g->root_fd = fcntl(ws->root_fd, F_DUPFD_CLOEXEC, 3);
	g->host_root = strdup(ws->workdir);
	g->view_root = strdup(view ? view : ws->workdir);
	if (g->root_fd < 0 || !g->host_root || !g->view_root) {
		free_guard(g);
		return sbx_fail(-SBX_ENOMEM, "git guard: out of memory or fds");
	}
	if (gg_watch_register(g) < 0) {
		g->watch_broken = true;
		gg_audit_event(g, "full-walks", sbx_last_error());
	}
	probe_binds(g);
	g->baseline = true;
	r = walk_all(g);
	if (r == 0)
		r = gg_check_includes(g);
	gg_restore_modes();
	g->baseline = false;
	if (r < 0) {
		free_guard(g);
		return sbx_fail(r == -ENOMEM ? -SBX_ENOMEM : sbx_errno_code(-r),
		                "git guard: cannot walk the workspace to find its git repositories: %s",
		                strerror(-r));
	}
	sbx_strset_clear(&g->inspected);
	bind_new_repos(g);
	ws->gitguard = g;
	return 0;
}

static int new_dir(const char *rel, size_t len, void *ud)
{
	struct sbx_gitguard *g = ud;
	_cleanup_close_ int fd = -1;
	const char *base = strrchr(rel, '/');

	(void)len;
	base = base ? base + 1 : rel;
	/* A new .git is its parent's business (the dirs set has the parent, gg_recheck_dir). */
	if (strcasecmp(base, ".git") == 0 || gg_open_dir(g, rel, &fd) < 0)
		return 0;
	return gg_walk_dir(g, fd, rel, 1);
}

static int dirty_dir(const char *rel, size_t len, void *ud)
{
	(void)len;
	return gg_recheck_dir(ud, rel);
}

static int dirty_git_dir(const char *rel, size_t len, void *ud)
{
	(void)len;
	return gg_inspect_git_dir(ud, rel, 0);
}

/* One check, under g->lock: what changed, or everything. */
static int check_locked(struct sbx_gitguard *g)
{
	struct gg_dirty d;
	int r = 0;

	gg_watch_take(g, &d);
	if (d.full || g->full_next) {
		g->full_next = false;
		r = walk_all(g);
	} else {
		/* ".git" made in an ordinary dir shows in its parent's dirs set too. */
		if (r == 0)
			r = sbx_strset_each(&d.git_dirs, dirty_git_dir, g);
		if (r == 0)
			r = sbx_strset_each(&d.dirs, dirty_dir, g);
		if (r == 0)
			r = sbx_strset_each(&d.new_dirs, new_dir, g);
	}
	gg_dirty_free(&d);
	/* Files the configs include change without an event of their git dir's: each check. */
	if (r == 0)
		r = gg_check_includes(g);
	gg_restore_modes();
	if (r < 0)
		g->full_next = true;
	return r;
}

int sbx_gitguard_check(sbx_workspace *ws, const char *when)
{
	struct sbx_gitguard *g = ws ? ws->gitguard : NULL;
	uint64_t before;
	int r;

	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	before = atomic_load(&g->count);
	g->when = when;
	r = check_locked(g);
	if (r < 0) {
		char detail[200];
		snprintf(detail, sizeof detail, "the check could not look everywhere (%s); the next "
		         "check walks the whole workspace", strerror(-r));
		gg_audit_event(g, "check-failed", detail);
	}
	if (g->quarantine_fd >= 0) {
		close(g->quarantine_fd);
		g->quarantine_fd = -1;
	}
	sbx_strset_clear(&g->inspected);
	bind_new_repos(g);
	g->when = NULL;
	r = (int)(atomic_load(&g->count) - before);
	pthread_mutex_unlock(&g->lock);
	return r;
}

static int rebind_all(const char *rel, size_t len, void *ud)
{
	return sbx_strset_add(ud, rel, len) < 0 ? -SBX_ENOMEM : 0;
}

void sbx_gitguard_after_reset(sbx_workspace *ws)
{
	struct sbx_gitguard *g = ws ? ws->gitguard : NULL;
	int fd;

	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	/* A capped workspace has a new root after a reset. */
	if (ws->root_fd >= 0 && (fd = fcntl(ws->root_fd, F_DUPFD_CLOEXEC, 3)) >= 0) {
		close(g->root_fd);
		g->root_fd = fd;
	}
	/* The new sandbox has none of the old one's binds. */
	sbx_strset_clear(&g->bound);
	g->n_bound = 0;
	g->bind_limit_audited = false;
	sbx_strset_each(&g->repos, rebind_all, &g->to_bind);
	g->full_next = true;
	pthread_mutex_unlock(&g->lock);
	sbx_gitguard_check(ws, "reset");
}

void sbx_gitguard_backend_closing(sbx_workspace *ws)
{
	struct sbx_gitguard *g = ws ? ws->gitguard : NULL;

	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->backend_gone = true;
	pthread_mutex_unlock(&g->lock);
}

void sbx_gitguard_free(sbx_workspace *ws)
{
	if (ws && ws->gitguard) {
		free_guard(ws->gitguard);
		ws->gitguard = NULL;
	}
}

bool sbx_gitguard_kernel_binds(const sbx_workspace *ws)
{
	return ws && ws->gitguard && !ws->gitguard->bind_unsupported;
}

uint64_t sbx_gitguard_count(const sbx_workspace *ws)
{
	return ws && ws->gitguard ? atomic_load(&ws->gitguard->count) : 0;
}

void sbx_gitguard_describe_since(const sbx_workspace *ws, uint64_t since, sbx_buf *b)
{
	struct sbx_gitguard *g = ws ? ws->gitguard : NULL;

	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	for (size_t i = (size_t)since; i < g->n_items; i++) {
		const struct gg_item *it = &g->items[i];
		sbx_buf_printf(b, "%s (%s: %s)%s%s\n", it->path, it->what, it->reason,
		               it->moved_to ? " -> " : "", it->moved_to ? it->moved_to : "");
	}
	pthread_mutex_unlock(&g->lock);
}

static void json_member(sbx_buf *b, const char *key, const char *value, bool comma)
{
	sbx_buf_printf(b, "%s\"%s\":", comma ? "," : "", key);
	if (value)
		sbx_buf_json_string(b, value, strlen(value));
	else
		sbx_buf_puts(b, "null");
}

int sbx_workspace_git_quarantine(sbx_workspace *ws, char **json_out)
{
	struct sbx_gitguard *g;
	sbx_buf b = { 0 };

	if (!json_out)
		return sbx_fail(-SBX_EINVAL, "sbx_workspace_git_quarantine: json_out is NULL");
	*json_out = NULL;
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "sbx_workspace_git_quarantine: ws is NULL");
	g = ws->gitguard;
	if (!g) {
		sbx_buf_puts(&b, "{\"guarded\":false,\"items\":[]}");
	} else {
		pthread_mutex_lock(&g->lock);
		sbx_buf_printf(&b, "{\"guarded\":true,\"kernel_binds\":%s,\"repositories\":%zu,"
		               "\"bound\":%zu,\"full_walks\":%s,\"items\":[",
		               g->bind_unsupported ? "false" : "true", g->repos.n, g->n_bound,
		               g->watch_broken ? "true" : "false");
		for (size_t i = 0; i < g->n_items; i++) {
			const struct gg_item *it = &g->items[i];
			sbx_buf_puts(&b, i ? ",{" : "{");
			json_member(&b, "path", it->path, false);
			json_member(&b, "what", it->what, true);
			json_member(&b, "reason", it->reason, true);
			json_member(&b, "moved_to", it->moved_to, true);
			json_member(&b, "when", it->when, true);
			sbx_buf_printf(&b, ",\"time\":%lld}", (long long)it->time);
		}
		sbx_buf_puts(&b, "]}");
		pthread_mutex_unlock(&g->lock);
	}
	if (b.oom) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*json_out = b.data;
	return 0;
}

/* ---- the file tools' rule ---------------------------------------------------------------- */

static bool has_git_component(const char *rel)
{
	for (const char *p = rel; *p;) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n == 4 && strncasecmp(p, ".git", 4) == 0)
			return true;
		if (!end)
			break;
		p = end + 1;
	}
	return false;
}

bool sbx_gitguard_dir_is_git(int dirfd)
{
	return gg_is_git_dir_shaped(dirfd);
}

bool sbx_gitguard_path_in_git_dir(int root_fd, const char *rel)
{
	_cleanup_free_ char *prefix = NULL;
	char saved[512];
	bool found = false;

	if (has_git_component(rel))
		return true;
	if (root_fd < 0 || !(prefix = strdup(rel)))
		return root_fd >= 0;
	snprintf(saved, sizeof saved, "%s", sbx_last_error());
	/* Every directory on the way, the root included. */
	for (size_t len = strlen(prefix);; ) {
		char *slash = memrchr(prefix, '/', len);
		len = slash ? (size_t)(slash - prefix) : 0;
		prefix[len] = '\0';
		int fd = sbx_path_open(root_fd, prefix, O_PATH | O_DIRECTORY, 0);
		if (fd >= 0) {
			found = gg_is_git_dir_shaped(fd);
			close(fd);
		}
		if (found || len == 0)
			break;
	}
	sbx_error_set(-SBX_EIO, "%s", saved);
	return found;
}
