/* The git guard: no code that a sandboxed command plants in a git repository of the
 * workspace ever reaches the host's git (docs/security.md, "Git repositories inside a
 * workspace").
 *
 * The host's git runs what a repository's git dir names: hooks, config keys (core.fsmonitor,
 * core.hooksPath, aliases, filters, includes ...), and, through pointers (commondir, "gitdir:"
 * files, a .git symlink, core.worktree), whatever another directory holds. For every backend
 * whose files are on the host and whose commands are isolated, the guard
 *  - finds every repository of the workspace at open (the user's, the baseline) and watches
 *    the tree (one inotify instance per process, gitguard_watch.c);
 *  - after every command, at reset and at close, checks what changed or appeared before
 *    control returns to the caller, and moves what could carry code into the state folder's
 *    quarantine/ (a config is replaced by its sanitised copy, so the repository keeps
 *    working);
 *  - asks the backend to bind the dangerous entries of each repository read-only inside the
 *    running sandbox where it can (ns and bwrap: the warden), so that what exists cannot be
 *    changed at all;
 *  - reports: an audit record per item, sbx_workspace_git_quarantine(), the Bash tool's
 *    metadata, the CLI's warning.
 * All of it works on directory fds from the workspace root, never following a link a command
 * may have made. */
#ifndef SBX_GITGUARD_H
#define SBX_GITGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "util/buf.h"

struct sbx_gitguard;

/* Whether ws gets a guard: files on the host and commands isolated from it. */
bool sbx_gitguard_applies(const sbx_workspace *ws);

/* At open, after the backend started: the baseline walk. Fails only for lack of memory or
 * of a readable workspace root. Sets ws->gitguard (NULL where the guard does not apply). */
int sbx_gitguard_open(sbx_workspace *ws);

/* After a command ended ("exec", "spawn", "tool"), at "reset" and at "close": checks what
 * changed and quarantines what could carry code. Returns the number of items quarantined by
 * this call (>= 0); never fails the caller's operation (a failure to check is audited, and
 * the next check falls back to a full walk). */
int sbx_gitguard_check(sbx_workspace *ws, const char *when);

/* After a reset restarted the sandbox: the files may have been restored from the baseline,
 * so the next check walks everything; the new sandbox gets its read-only binds again. */
void sbx_gitguard_after_reset(sbx_workspace *ws);

/* The backend is about to close: from now on checks bind nothing (detection only). */
void sbx_gitguard_backend_closing(sbx_workspace *ws);

/* Frees the guard (after the last check). */
void sbx_gitguard_free(sbx_workspace *ws);

/* Whether the backend makes found git dirs read-only inside the sandbox (not: detection
 * only, or no guard). */
bool sbx_gitguard_kernel_binds(const sbx_workspace *ws);

/* Items quarantined so far on this handle (a counter that only grows). */
uint64_t sbx_gitguard_count(const sbx_workspace *ws);

/* Appends to b the items quarantined since `since` (a value of sbx_gitguard_count), one line
 * each: "path (what: reason) -> moved_to". */
void sbx_gitguard_describe_since(const sbx_workspace *ws, uint64_t since, sbx_buf *b);

/* The file tools' rule (Write, Edit): whether rel (root-relative, as written or as resolved)
 * names something inside a git directory: a ".git" component at any depth (compared
 * case-insensitively), or a path below a directory shaped like a git dir (HEAD, and objects/
 * and refs/ or a commondir: a bare repository, a submodule's or a worktree's git dir).
 * root_fd may be -1 (no
 * host files: only the name rule). */
bool sbx_gitguard_path_in_git_dir(int root_fd, const char *rel);
/* Whether the directory fd is shaped like a git dir (HEAD, and objects/ and refs/ or a
 * commondir). */
bool sbx_gitguard_dir_is_git(int dirfd);

#endif
