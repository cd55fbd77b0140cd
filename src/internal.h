/* What the core's files share: the workspace handle and the registry of backends. */
#ifndef SBX_INTERNAL_H
#define SBX_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <agentsbx/agentsbx.h>
#include <agentsbx/backend.h>
#include "config.h"
#include "util/clock.h" /* sbx_now_ms(), the clock of every deadline and stamp */

struct sbx_workspace {
	const sbx_backend_ops *ops;
	uint32_t caps;            /* SBX_BACKEND_CAP_* of this workspace (sbx_backend_caps) */
	const struct sbx_files_ops *files; /* how its files are reached (files_int.h) */
	void *state;              /* the backend's */
	sbx_config *cfg;
	char *id;
	char *workdir;            /* host directory, or NULL */
	bool workdir_temporary;   /* made by the core, removed at close */
	char *snapshot_dir;       /* baseline "snapshot": a private copy of workdir from open */
	int snapshot_lock_fd;     /* that copy's folder, flocked for its life, or -1 */
	int root_fd;              /* O_PATH fd of workdir for HOST_FILES backends, else -1; for
	                             a capped workspace, the backend's root of its files */
	bool files_in_sandbox;    /* root_fd is not workdir but the backend's files_root_fd */
	char **base_env;          /* PATH, HOME, then the config's env: "NAME=value" */
	pthread_mutex_t procs_lock;
	struct sbx_process *procs; /* live process handles, so close can stop them */
	pthread_mutex_t bg_lock;  /* the Bash tool's background shells (tools/bgshell.c) */
	struct sbx_bgshell *bgshells;
	unsigned bg_next_id;
	unsigned bg_starting;     /* slots taken by starts spawning outside bg_lock */
	pthread_mutex_t hooks_lock; /* the approval handler */
	pthread_mutex_t audit_lock; /* one append to the audit log at a time (audit.c) */
	sbx_approval_fn approval_fn;
	void *approval_userdata;
	char *audit_path;         /* host path of the audit log, or NULL when off */
	pthread_mutex_t state_lock; /* the state folder's fd below, replaced when it moved */
	int state_fd;             /* the state folder (state.c), or -1 without host files */
	int state_root_fd;        /* the host workdir it lives in, or -1 when temporary */
	char *state_path;         /* its host path */
	bool state_temporary;     /* a private folder made because the workdir is not writable */
	bool state_outside;       /* the state folder is not <workdir>/.agentsbx (state.c) */
	char *state_leaf;         /* its name in the folder state_root_fd */
	char *home_path;          /* the workspace's private HOME on the host (state.c), or NULL */
	char home_view[80];       /* where a sandbox binds it ("/home/<user>"), or "" */
	bool workdir_writable;    /* the library may make things in the workdir (its journal) */
	struct sbx_mcp_state *mcp; /* MCP connections and gateway (src/mcp), made on first use */
	_Atomic int64_t last_used_ms; /* sbx_now_ms() of the last exec, spawn or tool call (the
	                                 workspace manager's idle TTL counts from it) */
	pthread_mutex_t network_lock; /* one sbx_workspace_set_network at a time */
	struct sbx_journal *journal; /* what the library makes in the workdir and must take away
	                                (util/journal.h), for HOST_FILES backends; else NULL */
	char network_mode[16];    /* the mode the backend enforces ("none", "allowlist", "host") */
	struct sbx_gitguard *gitguard; /* src/gitguard.h: NULL where it does not apply */
};

/* sbx_fs_write_atomic into the workspace, with its temporary name noted in the workspace's
 * journal: a writer killed between link and rename leaves nothing the next open does not
 * sweep. */
int sbx_workspace_write_atomic(sbx_workspace *ws, int dirfd, const char *name, const void *data,
                               size_t len, mode_t mode, uint32_t flags);
/* A new O_RDONLY directory fd of the workdir the open verified (root_fd), never reopened by
 * its path: the path may lead elsewhere by now. */
int sbx_workspace_open_root(const sbx_workspace *ws, int *fd);
/* path relative to the workspace's root (files.c): a relative path as given, or an absolute
 * one in either form a workspace with host files has — as its commands see it
 * (sbx_workspace_root: "/workspace/src/a.c") or as the host sees it (its workdir:
 * "/home/me/proj/src/a.c"). Anything else fails with -SBX_EESCAPE naming what (the field). */
int sbx_workspace_relative(const sbx_workspace *ws, const char *path, const char *what,
                           char **rel);
/* The workdir as the host names it, where the files live in a host directory; else NULL. */
const char *sbx_workspace_host_view(const sbx_workspace *ws);
/* Refuses a workdir that is / or in a system tree, after resolving links, unless the config
 * opts in (workdir_policy.c); -SBX_ECONFIG naming the key. exists: path is there already
 * (else the longest existing part of it is resolved). */
int sbx_workdir_check(const sbx_config *cfg, const char *path, bool exists);

/* The snapshot baseline (workspace_snapshot.c). take: sweeps the copies of dead processes,
 * then copies the workdir (its state folder left out) into a private folder locked for the
 * copy's life; restore copies it into root; release removes it. sweep alone: the copies
 * whose process is gone. */
int sbx_snapshot_take(sbx_workspace *ws);
int sbx_snapshot_restore(sbx_workspace *ws, int root);
void sbx_snapshot_release(sbx_workspace *ws);
void sbx_snapshot_sweep(void);

/* The library's state folder (state.c). setup: at open, for backends with host files: by
 * default a folder of this user's outside the workdir ($XDG_STATE_HOME/agentsbx/workspaces/
 * <key>, or the config's "state_dir"), with the workspace's private HOME in it; with
 * "state_dir": "workdir" the workdir's .agentsbx (made when missing; a link or a file there
 * fails the open, naming it), or, for a read-only workspace whose workdir the library cannot
 * write, a private temporary folder removed by teardown (as for a temporary workdir). */
int sbx_state_setup(sbx_workspace *ws);
void sbx_state_teardown(sbx_workspace *ws);
/* The one way into the state folder: a new O_RDONLY directory fd (caller closes) of it (sub
 * NULL or "") or of the folder sub inside it ("tools", "mcp", "quarantine"...), made with
 * mode when missing (mode 0: -SBX_ENOENT instead). Never through a symbolic link: a link or
 * a file in the way is an error naming it. -SBX_ENOSYS for a backend without host files (its
 * state folder lives in the workspace, reached through the file API). Thread-safe. */
int sbx_state_dir(sbx_workspace *ws, const char *sub, mode_t mode, int *out);
/* Its host path (for messages and sbx_audit_path), or NULL. */
const char *sbx_state_path(const sbx_workspace *ws);
/* The workspace's private HOME on the host (<state>/home, 0700), or NULL when the state
 * folder is the workdir's own (the old layout, where HOME is the workspace's root). */
const char *sbx_state_home(const sbx_workspace *ws);
/* At close: takes away the workdir's .agentsbx when only the (empty) journal is left in it,
 * so that nothing of the library's stays in the user's tree. */
void sbx_state_tidy_workdir(sbx_workspace *ws);
/* The file API as the agent tools use it (files.c). rel is root-relative and normalised
 * already (sbx_tool_resolve_path) and may hold any byte but NUL: a name the tools printed
 * escaped need not be UTF-8, which the public functions require.
 * sbx_file_read_rel reads at most max bytes (at most SBX_FILE_READ_MAX): a larger file fails
 * with -SBX_EFBIG, judged on the file opened, and no more than max + 1 bytes are ever read
 * whatever the file becomes meanwhile. st (may be NULL; a full sbx_stat) gets the opened
 * file's own stat, taken before reading it. */
int sbx_file_stat_rel(sbx_workspace *ws, const char *rel, sbx_stat *st);
int sbx_file_read_rel(sbx_workspace *ws, const char *rel, size_t max, char **data, size_t *len,
                      sbx_stat *st);

/* Marks the workspace as used now: every exec, spawn and tool call does (manager.c reads it). */
void sbx_workspace_touch(sbx_workspace *ws);

/* limits.disk_bytes and limits.tmp_bytes (workspace_quota.c): refused for a backend without
 * SBX_BACKEND_CAP_DISK_LIMITS and with settings a capped workspace cannot have; after open
 * and reset, the root of a capped workspace replaces root_fd. */
int sbx_workspace_check_disk_limits(const sbx_workspace *ws);
int sbx_workspace_adopt_files_root(sbx_workspace *ws);

/* Kills and releases the backend side of every process handle still open on ws (process.c);
 * the handles stay valid and report the command as killed. */
void sbx_process_detach_all(sbx_workspace *ws);

/* Registry (registry.c). find() loads a plugin on first use; fails with a message. The table
 * it returns is the registry's copy, padded to this library's sizeof(sbx_backend_ops): an op
 * an older plugin's table lacks reads NULL, so callers test the op, never ops->size. */
int sbx_registry_find(const char *name, const sbx_backend_ops **ops);
/* The capabilities of a workspace of ops opened with the backend's options_json: ops->caps,
 * narrowed by the table's workspace_caps where it has one. Fails as that does. */
int sbx_backend_caps(const sbx_backend_ops *ops, const char *options_json, uint32_t *caps);
/* Names the config may use as backend sections: built-ins, registered and documented ones. */
bool sbx_registry_is_backend_name(const char *name);

/* Environment (env.c): base + overrides ("NAME=v" sets, "NAME" unsets), or only overrides
 * when clear. Validates the overrides (-SBX_EINVAL naming the entry). */
int sbx_env_compose(char *const *base, const char *const *overrides, bool clear, char ***out);
void sbx_strv_free(char **v);

/* Helper executables (helpers.c): the absolute path of a helper program by name, searched in
 * $SBX_HELPER_DIR, the "helpers" directory beside the library, then the install libexecdir. */
int sbx_helper_path(const char *name, char **out);

/* Process plumbing shared by sbx_exec and the process API (spawn.c). */
typedef struct sbx_spawned {
	void *proc;               /* the backend's process */
	int wait_fd;              /* owned by the backend process */
	int in_fd, out_fd, err_fd; /* host ends; -1 where absent (err_fd when merged) */
} sbx_spawned;

int sbx_spawn_command(sbx_workspace *ws, const char *const argv[], const char *cwd,
                      const char *const *env, uint32_t flags, bool want_stdin,
                      sbx_spawned *out);
/* sbx_spawn_command with a terminal of rows x cols (0 = the default) instead of pipes: the
 * host ends in_fd and out_fd are two fds of its master, err_fd is -1. -SBX_ENOSYS for a
 * backend without SBX_BACKEND_CAP_PTY. */
int sbx_spawn_command_pty(sbx_workspace *ws, const char *const argv[], const char *cwd,
                          const char *const *env, uint32_t flags, unsigned short rows,
                          unsigned short cols, sbx_spawned *out);

/* Every command sbx_exec runs (the Bash tool's included) is killed, and the call returns as
 * for a killed command, as soon as fd becomes readable: the CLI's signalfd of INT, TERM and
 * HUP, so that it can close the workspace and exit by the signal. -1 turns it off. Process-
 * wide; not exported. */
void sbx_exec_set_interrupt_fd(int fd);

/* sbx_exec whose stdin is copied from stdin_fd as it arrives (the command starts at once and
 * reads end-of-file when stdin_fd does; no size limit), for the CLI's --stdin. stdin_fd stays
 * the caller's, and blocking: it is read only after poll says it is readable. */
int sbx_exec_from_fd(sbx_workspace *ws, const char *const argv[], const sbx_exec_opts *opts,
                     int stdin_fd, sbx_result **out);

/* sbx_exec without the approval hook and the audit record: for the library's own commands
 * (the Bash tool asks and logs once, as a tool call). */
int sbx_exec_unhooked(sbx_workspace *ws, const char *const argv[], const sbx_exec_opts *opts,
                      sbx_result **out);

/* sbx_process_spawn without the approval hook and the audit record: for the Bash tool's
 * background shells, asked and logged once as a tool call. */
int sbx_process_spawn_unhooked(sbx_workspace *ws, const char *const argv[],
                               const sbx_spawn_opts *opts, sbx_process **out);

/* Kills the Bash tool's background shells and forgets them (tools/bgshell.c): at close and
 * reset, before the process handles go. */
void sbx_bgshells_stop(sbx_workspace *ws);

/* write(2) to a pipe without the host ever receiving SIGPIPE when the reader is gone. Returns
 * the bytes written or -errno. */
ssize_t sbx_pipe_write(int fd, const void *data, size_t len);

#endif
