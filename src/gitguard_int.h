/* What the git guard's files share (gitguard.c: lifecycle and reports; gitguard_walk.c:
 * finding and checking repositories; gitguard_fix.c: quarantine and rewrites;
 * gitguard_watch.c: the process's inotify instance). */
#ifndef SBX_GITGUARD_INT_H
#define SBX_GITGUARD_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gitguard.h"
#include "util/buf.h"
#include "util/gitconfig.h"
#include "util/strset.h"

#define GG_MAX_DEPTH 256          /* directories deeper than this are not walked (audited) */
#define GG_MAX_POINTER 4096       /* bytes of a commondir or "gitdir:" file we read */
#define GG_MAX_CONFIG ((size_t)1 << 20)  /* a bigger config is quarantined whole */
#define GG_MAX_BOUND_REPOS 256    /* repositories given read-only binds; the rest: detection */
#define GG_MAX_COPIED ((uint64_t)16 << 20)  /* what a guard's quarantine copies across file
                                               systems (a capped workspace) in all */

/* One quarantined item, for sbx_workspace_git_quarantine(). */
struct gg_item {
	char *path;               /* root-relative path of what was found */
	char *what;               /* "hook", "config", "pointer", ... */
	char *reason;
	char *moved_to;           /* root-relative path in the quarantine, or NULL */
	char *when;               /* "exec", "spawn", "tool", "reset", "close" */
	int64_t time;             /* seconds since the epoch */
};

/* What inotify said changed since the last check (filled under the watcher's lock). */
struct gg_dirty {
	sbx_strset new_dirs;      /* directories that appeared: walk them */
	sbx_strset dirs;          /* ordinary directories where .git, HEAD, objects or refs changed */
	sbx_strset git_dirs;      /* git dirs with a change in what the guard checks */
	bool full;                /* overflow, a renamed directory, a lost watch: walk it all */
};

struct sbx_gitguard {
	sbx_workspace *ws;
	pthread_mutex_t lock;     /* one check at a time */
	int root_fd;              /* O_PATH fd of the workspace root (ours) */
	char *host_root;          /* its host path, to judge absolute pointers */
	char *view_root;          /* the root as commands see it ("/workspace") */
	bool baseline;            /* the walk at open: record what the user has, change nothing */
	const char *when;         /* of the check under way */
	sbx_strset repos;         /* root-relative paths of every git dir found */
	sbx_strset allowed;       /* what the baseline holds: hooks, pointers, config keys */
	sbx_strset verified;      /* configs known clean, by fingerprint */
	sbx_strset inspected;     /* git dirs inspected during this check */
	sbx_strset bound;         /* git dirs handed to the binds step (bound, or over the cap) */
	size_t n_bound;           /* of them, the ones the backend bound */
	sbx_strset to_bind;       /* found during this check, to bind after it */
	sbx_strset includes;      /* what the configs name in the workspace: "I<path>\0<git dir>"
	                             for an included file, "H<path>\0<git dir>" for a hooks path */
	sbx_strset includes_found;  /* such keys met since the last gg_check_includes */
	bool bind_unsupported;    /* the backend cannot bind (docker, detached): detection only */
	bool bind_limit_audited;
	bool backend_gone;        /* closing: the backend's state is no more */
	bool watch_broken;        /* no inotify (or out of watches): every check walks it all */
	bool walk_limited;        /* a tree deeper than GG_MAX_DEPTH was met (audited once) */
	bool full_next;           /* the next check walks everything (after reset, a failure) */
	struct gg_item *items;
	size_t n_items;
	_Atomic uint64_t count;
	int quarantine_fd;        /* this check's batch folder in quarantine/, or -1 */
	char batch[64];           /* its name */
	unsigned batch_seq;
	uint64_t copied;          /* bytes the quarantine copied across file systems so far */
	struct gg_dirty pending;  /* owned by gitguard_watch.c, under its lock */
	bool registered;          /* in the watcher's list */
};

/* ---- gitguard_walk.c ---- */
/* Walks the ordinary directory rel (fd dirfd) and all below it: watches, repositories. */
int gg_walk_dir(struct sbx_gitguard *g, int dirfd, const char *rel, unsigned depth);
/* Re-reads one ordinary directory's own entries (.git, a bare shape) without descending. */
int gg_recheck_dir(struct sbx_gitguard *g, const char *rel);
/* Judges every entry of the hooks folder hfd (at rel) as a hook — with named_only (a folder
 * of the work tree, where the user keeps other files too) only those named as git's hooks
 * are — kept when the baseline had it as it is, quarantined otherwise. */
int gg_judge_hooks_in(struct sbx_gitguard *g, int hfd, const char *rel, bool named_only);
/* Inspects the git dir rel (and the git dirs it holds or points at). */
int gg_inspect_git_dir(struct sbx_gitguard *g, const char *rel, unsigned depth);
/* openat of a regular file for reading: never a link, never blocking (a FIFO a command put
 * there), never a terminal. The fd, or -errno (-SBX_EINVAL when it is not a regular file). */
int gg_openat_regular(int dirfd, const char *name);
/* openat of a directory, O_NOFOLLOW, made u+rwx first if we may not read it (ours only);
 * the mode it had is put back by gg_restore_modes at the end of the check. */
int gg_openat_dir(int dirfd, const char *name);
/* Notes that the directory dirfd had mode before the check changed it (gg_restore_modes
 * puts it back); false when it cannot be noted (then do not change it). */
bool gg_remember_mode(int dirfd, mode_t mode);
/* Gives back the modes gg_openat_dir changed during this thread's check. */
void gg_restore_modes(void);
/* Opens rel beneath the root as a directory, following no symlink. */
int gg_open_dir(struct sbx_gitguard *g, const char *rel, int *out);
/* Whether the directory dirfd is shaped like a git dir (HEAD, and objects/ and refs/ or a
 * commondir, as git's is_git_directory judges it). */
bool gg_is_git_dir_shaped(int dirfd);
/* "<what>\0<rel>\0<detail>" in b: the key of an allowance of the baseline. */
int gg_key_of(sbx_buf *b, const char *what, const char *rel, const char *detail,
              size_t detail_len);
/* "a/b" + "c" (rel may be ""). Caller frees; NULL when out of memory. */
char *gg_join(const char *rel, const char *name);

/* ---- gitguard_pointer.c ---- */
/* A pointer: name in dirfd (at rel), written in directory base_rel; prefix "gitdir: " for a
 * .git file, "" for commondir; is_link for a .git symlink. */
int gg_check_pointer(struct sbx_gitguard *g, int dirfd, const char *name, const char *rel,
                     const char *base_rel, const char *prefix, bool is_link, unsigned depth);

/* The root-relative physical path of an fd beneath the root, or NULL when it is not. */
char *gg_rel_of_fd(struct sbx_gitguard *g, int fd);

/* ---- gitguard_include.c ---- */
/* Whether e is include.path or includeIf.<condition>.path. */
bool gg_is_include(const sbx_gitconfig_entry *e);
/* A kept include (value) in the config at config_rel of the git dir grel: its file is
 * checked by the next gg_check_includes. */
void gg_note_include(struct sbx_gitguard *g, const char *config_rel, const char *grel,
                     const char *value);
/* A kept core.hooksPath (value) in a config of the git dir grel: the folder it names is
 * judged as a hooks folder by the next gg_check_includes. */
void gg_note_hooks_path(struct sbx_gitguard *g, const char *grel, const char *value);
/* Checks every included file and hooks path inside the workspace (those met since too). */
int gg_check_includes(struct sbx_gitguard *g);

/* ---- gitguard_fix.c ---- */
/* Moves name (in dirfd, at root-relative rel) into this check's quarantine batch and records
 * it. In the baseline walk it records nothing and moves nothing. */
int gg_quarantine(struct sbx_gitguard *g, int dirfd, const char *name, const char *rel,
                  const char *what, const char *reason);
/* Checks a config file (name in the git dir gfd at grel): kept, sanitised or quarantined. */
int gg_check_config(struct sbx_gitguard *g, int gfd, const char *grel, const char *name);
/* The same for a config of the git dir grel that lives elsewhere (name in dirfd, at dir_rel):
 * included, it is emptied rather than made a minimal config when nothing of it can be kept. */
int gg_check_config_file(struct sbx_gitguard *g, int dirfd, const char *dir_rel,
                         const char *name, const char *grel, bool included);
/* Records an item that was handled without a move (a rewritten pointer). */
int gg_record(struct sbx_gitguard *g, const char *rel, const char *what, const char *reason,
              const char *moved_to);
/* Replaces name in dirfd with data, atomically. */
int gg_replace_file(int dirfd, const char *name, const char *data, size_t len);
/* Audits a guard event that is no quarantine (a full walk, the bind limit). */
void gg_audit_event(struct sbx_gitguard *g, const char *event, const char *detail);

/* ---- gitguard_watch.c ---- */
enum gg_watch_kind { GG_WATCH_DIR, GG_WATCH_GIT_DIR, GG_WATCH_GIT_SUB };
/* Joins the process's watcher (creating the inotify instance on first use). Fails when no
 * instance can be had: the guard then walks everything at each check. */
int gg_watch_register(struct sbx_gitguard *g);
void gg_watch_unregister(struct sbx_gitguard *g);
/* Watches the directory dirfd (at rel; for git kinds, gitdir is the git dir it belongs to).
 * A failure (no watches left) marks the guard watch_broken. */
void gg_watch_add(struct sbx_gitguard *g, int dirfd, const char *rel, enum gg_watch_kind kind,
                  const char *gitdir);
/* Reads what the kernel queued (for every guard of the process) and hands over this guard's
 * share. Cheap when nothing happened: one non-blocking read. */
int gg_watch_take(struct sbx_gitguard *g, struct gg_dirty *out);
void gg_dirty_free(struct gg_dirty *d);

#endif
