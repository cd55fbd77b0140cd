/* The git guard's change feed: ONE inotify instance for the whole process (a user may have
 * only 128, and a host may hold hundreds of workspaces), with a watch on every directory of
 * each guarded workspace and on the parts of each git dir the guard checks. A check reads
 * what the kernel queued with one non-blocking read and routes each event to the guard (and
 * the directory) it belongs to, so its cost follows what changed, not the size of the tree.
 *
 * What the kernel cannot tell us exactly makes the guard walk everything at its next check
 * (correct, only slower): a queue overflow, a directory renamed (the paths below it moved),
 * running out of watches or of inotify instances.
 *
 * Once made, the instance stays for the life of the process (watching nothing while no
 * workspace is open): see gg_watch_unregister for what closing it costs. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "gitguard_int.h"
#include "util/cleanup.h"
#include "util/error.h"

#define BUCKETS 4096
#define DIR_MASK (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_MOVE_SELF | \
                  IN_ONLYDIR | IN_EXCL_UNLINK | IN_MASK_ADD)
#define GIT_MASK (DIR_MASK | IN_ATTRIB | IN_DELETE)

struct watch_entry {
	int wd;
	struct sbx_gitguard *g;
	char *rel;                /* the watched directory, root-relative */
	char *gitdir;             /* for git kinds: the git dir it belongs to */
	enum gg_watch_kind kind;
	bool ordinary;            /* also walked as an ordinary folder (a git-shaped one, the
	                             root): its new folders and .git entries count too */
	struct watch_entry *next;
};

static struct {
	pthread_mutex_t lock;
	int fd;
	size_t n_guards;
	struct sbx_gitguard **guards;
	struct watch_entry *buckets[BUCKETS];
} W = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

static void drain(void);

static struct watch_entry **bucket_of(int wd)
{
	return &W.buckets[(unsigned)wd % BUCKETS];
}

static void free_entry(struct watch_entry *e)
{
	free(e->rel);
	free(e->gitdir);
	free(e);
}

/* A forked child shares the parent's inotify instance (the same open file): a read of it
 * there would take events that the parent's guards wait for, and the parent's checks would
 * then miss what they report. The child drops its copy (closing it takes nothing from the
 * parent) and every guard it inherited walks the whole workspace at its checks from then on;
 * a workspace the child opens itself gets an instance of its own. The lock is taken around
 * the fork, so the child never starts with it held by a thread it does not have. */
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

static void before_fork(void)
{
	pthread_mutex_lock(&W.lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&W.lock);
}

static void after_fork_child(void)
{
	pthread_mutex_unlock(&W.lock);
	if (W.fd >= 0)
		close(W.fd);
	W.fd = -1;
	for (size_t b = 0; b < BUCKETS; b++)
		while (W.buckets[b]) {
			struct watch_entry *e = W.buckets[b];
			W.buckets[b] = e->next;
			free_entry(e);
		}
	for (size_t i = 0; i < W.n_guards; i++)
		W.guards[i]->watch_broken = true;
}

static void install_fork_handlers(void)
{
	(void)pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

int gg_watch_register(struct sbx_gitguard *g)
{
	struct sbx_gitguard **nv;
	int r = 0;

	pthread_once(&fork_handlers_once, install_fork_handlers);
	pthread_mutex_lock(&W.lock);
	if (W.fd < 0)
		W.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	else if (W.n_guards == 0)
		drain();   /* what the last workspace's watches queued (an overflow, their
		              IN_IGNORED): nobody's to route, and no full walk for the new one */
	if (W.fd < 0) {
		r = sbx_fail(sbx_errno_code(errno), "inotify_init1: %s", strerror(errno));
	} else if (!(nv = realloc(W.guards, (W.n_guards + 1) * sizeof *nv))) {
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
	} else {
		W.guards = nv;
		W.guards[W.n_guards++] = g;
		g->registered = true;
	}
	pthread_mutex_unlock(&W.lock);
	return r;
}

static bool wd_in_use(int wd)
{
	for (struct watch_entry *e = *bucket_of(wd); e; e = e->next)
		if (e->wd == wd)
			return true;
	return false;
}

void gg_watch_unregister(struct sbx_gitguard *g)
{
	pthread_mutex_lock(&W.lock);
	if (!g->registered) {
		pthread_mutex_unlock(&W.lock);
		return;
	}
	for (size_t b = 0; b < BUCKETS; b++) {
		for (struct watch_entry **pp = &W.buckets[b]; *pp;) {
			struct watch_entry *e = *pp;
			if (e->g != g) {
				pp = &e->next;
				continue;
			}
			*pp = e->next;
			if (!wd_in_use(e->wd))
				inotify_rm_watch(W.fd, e->wd);
			free_entry(e);
		}
	}
	for (size_t i = 0; i < W.n_guards; i++)
		if (W.guards[i] == g) {
			W.guards[i] = W.guards[--W.n_guards];
			break;
		}
	g->registered = false;
	gg_dirty_free(&g->pending);
	if (W.n_guards == 0) {
		/* No workspace left: the instance stays, watching nothing (every watch went above),
		 * for the next workspace. Closing an instance that had watches waits for the
		 * kernel's mark reaper (an SRCU grace period: 10-20 ms of every close on a loaded
		 * host); a bare rm_watch does not, and the reaper is long done by the time the
		 * instance is reused or the process exits. */
		free(W.guards);
		W.guards = NULL;
	}
	pthread_mutex_unlock(&W.lock);
}

/* The entry of g for wd, if any. */
static struct watch_entry *entry_of(struct sbx_gitguard *g, int wd)
{
	for (struct watch_entry *e = *bucket_of(wd); e; e = e->next)
		if (e->wd == wd && e->g == g)
			return e;
	return NULL;
}

static int set_entry(struct sbx_gitguard *g, int wd, const char *rel, enum gg_watch_kind kind,
                     const char *gitdir)
{
	struct watch_entry *e = entry_of(g, wd);
	char *nrel = strdup(rel), *ngit = gitdir ? strdup(gitdir) : NULL;

	if (!nrel || (gitdir && !ngit)) {
		free(nrel);
		free(ngit);
		return -SBX_ENOMEM;
	}
	if (!e) {
		if (!(e = calloc(1, sizeof *e))) {
			free(nrel);
			free(ngit);
			return -SBX_ENOMEM;
		}
		e->wd = wd;
		e->g = g;
		e->next = *bucket_of(wd);
		*bucket_of(wd) = e;
	}
	/* One directory can be both: a folder of the walk and (git-shaped, or the root made so)
	 * a git dir. It keeps both roles, whichever was found first. */
	if (kind == GG_WATCH_DIR) {
		e->ordinary = true;
		if (e->kind != GG_WATCH_DIR) {
			free(nrel);
			free(ngit);
			return 0;
		}
	}
	free(e->rel);
	free(e->gitdir);
	e->rel = nrel;
	e->gitdir = ngit;
	e->kind = kind;
	return 0;
}

void gg_watch_add(struct sbx_gitguard *g, int dirfd, const char *rel, enum gg_watch_kind kind,
                  const char *gitdir)
{
	char path[64];
	int wd;

	if (g->watch_broken)
		return;
	snprintf(path, sizeof path, "/proc/self/fd/%d", dirfd);
	pthread_mutex_lock(&W.lock);
	wd = W.fd < 0 ? -1 : inotify_add_watch(W.fd, path, kind == GG_WATCH_DIR ? DIR_MASK
	                                                                        : GIT_MASK);
	if (wd < 0 || set_entry(g, wd, rel, kind, gitdir) < 0) {
		int saved = wd < 0 ? errno : ENOMEM;
		pthread_mutex_unlock(&W.lock);
		g->watch_broken = true;
		gg_audit_event(g, "full-walks", saved == ENOSPC
		               ? "out of inotify watches (fs.inotify.max_user_watches): every check "
		                 "walks the whole workspace from now on"
		               : "cannot watch a directory: every check walks the whole workspace");
		return;
	}
	pthread_mutex_unlock(&W.lock);
}

static bool is_name(const char *name, const char *want)
{
	return strcmp(name, want) == 0;
}

/* Names in an ordinary directory that can make it, or a child, a repository. */
static bool repo_name(const char *name)
{
	return strcasecmp(name, ".git") == 0 || is_name(name, "HEAD") || is_name(name, "objects") ||
	       is_name(name, "refs") || is_name(name, "config") || is_name(name, "commondir");
}

/* Names in a git dir that the guard checks. */
static bool checked_name(const char *name)
{
	static const char *const names[] = { "config", "config.worktree", "commondir", "hooks",
	                                      "modules", "worktrees", "gitdir", NULL };

	for (const char *const *n = names; *n; n++)
		if (is_name(name, *n))
			return true;
	return false;
}

static void add_dirty(struct sbx_gitguard *g, sbx_strset *set, const char *key)
{
	if (sbx_strset_add(set, key, strlen(key)) < 0)
		g->pending.full = true;
}

static void route(struct watch_entry *e, const struct inotify_event *ev)
{
	struct sbx_gitguard *g = e->g;
	const char *name = ev->len ? ev->name : "";
	bool is_dir = ev->mask & IN_ISDIR;

	if (ev->mask & IN_MOVE_SELF || (is_dir && (ev->mask & IN_MOVED_FROM))) {
		g->pending.full = true;      /* the paths below a renamed directory changed */
		return;
	}
	if (e->kind != GG_WATCH_DIR) {
		if (e->kind == GG_WATCH_GIT_SUB || checked_name(name))
			add_dirty(g, &g->pending.git_dirs, e->gitdir);
		if (!e->ordinary)
			return;
	}
	if (!*name)
		return;
	_cleanup_free_ char *child = gg_join(e->rel, name);
	if (!child) {
		g->pending.full = true;
		return;
	}
	if (is_dir && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
		add_dirty(g, &g->pending.new_dirs, child);
	if (repo_name(name))
		add_dirty(g, &g->pending.dirs, e->rel);
}

static void dispatch(const struct inotify_event *ev)
{
	if (ev->mask & IN_Q_OVERFLOW) {
		for (size_t i = 0; i < W.n_guards; i++)
			W.guards[i]->pending.full = true;
		return;
	}
	if (ev->mask & IN_IGNORED) {
		for (struct watch_entry **pp = bucket_of(ev->wd); *pp;) {
			struct watch_entry *e = *pp;
			if (e->wd == ev->wd) {
				*pp = e->next;
				free_entry(e);
			} else {
				pp = &e->next;
			}
		}
		return;
	}
	for (struct watch_entry *e = *bucket_of(ev->wd); e; e = e->next)
		if (e->wd == ev->wd)
			route(e, ev);
}

/* Everything queued now, for every guard. */
static void drain(void)
{
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		ssize_t n = read(W.fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN)
				for (size_t i = 0; i < W.n_guards; i++)
					W.guards[i]->pending.full = true;
			return;
		}
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			dispatch(ev);
			p += sizeof *ev + ev->len;
		}
	}
}

int gg_watch_take(struct sbx_gitguard *g, struct gg_dirty *out)
{
	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&W.lock);
	if (W.fd >= 0 && g->registered)
		drain();
	*out = g->pending;
	memset(&g->pending, 0, sizeof g->pending);
	pthread_mutex_unlock(&W.lock);
	if (!g->registered || g->watch_broken)
		out->full = true;
	return 0;
}

void gg_dirty_free(struct gg_dirty *d)
{
	sbx_strset_clear(&d->new_dirs);
	sbx_strset_clear(&d->dirs);
	sbx_strset_clear(&d->git_dirs);
	d->full = false;
}
