/*
 * libagentsbx — the backend-plugin interface.
 *
 * A backend is one ops table. Built-in backends register themselves; others are shared objects
 * named "<name>.so" in $libdir/agentsbx/backends or in a directory listed in SBX_BACKEND_PATH
 * (colon-separated, searched first), exporting
 *
 *     const sbx_backend_ops *sbx_backend_plugin_entry(void);
 *
 * The core owns everything a backend would otherwise repeat: configuration parsing, the
 * environment, exec loops (pipes, output caps, timeouts, streaming), the process API, and the
 * file primitives of backends whose files are visible on the host (SBX_BACKEND_CAP_HOST_FILES).
 * A backend only creates its isolation, starts processes in it and, when its files are not
 * host-visible, moves files.
 *
 * Every function pointer returns 0 or a negative SBX_E code and records a message with
 * sbx_error_set() on failure. Buffers a backend hands to the core are allocated with malloc().
 * The interface is versioned separately from the library: SBX_BACKEND_ABI_VERSION.
 */
#ifndef AGENTSBX_BACKEND_H
#define AGENTSBX_BACKEND_H

#include <stddef.h>

#include <agentsbx/agentsbx.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SBX_BACKEND_ABI_VERSION 1
#define SBX_BACKEND_ENTRY_SYMBOL "sbx_backend_plugin_entry"

/* Capability flags (sbx_backend_ops.caps) */
#define SBX_BACKEND_CAP_HOST_FILES   (1u << 0) /* workspace files live in a host directory that
                                                  host_dir() names; the core serves file ops */
#define SBX_BACKEND_CAP_ISOLATED     (1u << 1) /* commands cannot see the host outside the root */
#define SBX_BACKEND_CAP_NETWORK_NONE (1u << 2) /* can enforce network mode "none" */
#define SBX_BACKEND_CAP_NETWORK_HOST (1u << 3) /* can give commands the host's network */
#define SBX_BACKEND_CAP_NETWORK_ALLOWLIST (1u << 4) /* since 1.2: can make a proxy that checks
                                                      the allow list the only way out */
#define SBX_BACKEND_CAP_DISK_LIMITS  (1u << 5) /* since 1.5: honours disk_bytes and tmp_bytes
                                                  of sbx_backend_config (the core refuses
                                                  limits.disk_bytes and limits.tmp_bytes for
                                                  a backend without it) */
#define SBX_BACKEND_CAP_DETACHED     (1u << 6) /* since 1.6: the key "detached" (bool) of its
                                                  config object makes the sandbox outlive
                                                  close() (a later open of the same workdir
                                                  attaches) and "idle_ttl_s" (seconds, 0 =
                                                  never) stops it once nobody holds it. The
                                                  workspace manager turns it on by default and
                                                  needs detached_running() and detached_stop() */
#define SBX_BACKEND_CAP_HELPER_BINDS (1u << 7) /* since 1.6: binds the host paths the core
                                                  names in sbx_backend_config.binds into the
                                                  sandbox (the MCP gateway's folder at
                                                  SBX_BACKEND_HELPERS_VIEW, its run folder at
                                                  SBX_BACKEND_MCP_RUN_VIEW); the core starts the
                                                  gateway from there */
#define SBX_BACKEND_CAP_HOST_VIEW    (1u << 8) /* since 1.6: commands see the host's file
                                                  system at the host's own paths (no root of
                                                  their own): helpers run from where the
                                                  library finds them on the host */
#define SBX_BACKEND_CAP_PTY          (1u << 9) /* since 1.7: honours sbx_backend_spawn.pty (a
                                                  terminal for the command, made where the
                                                  command runs); the core refuses a pty for a
                                                  backend without it */

/* Since 1.6: where a HELPER_BINDS backend binds the helper programs (read-only) and the MCP
 * gateway's run folder (writable) inside the sandbox. */
#define SBX_BACKEND_HELPERS_VIEW "/run/agentsbx/helpers"
#define SBX_BACKEND_MCP_RUN_VIEW "/tmp/.agentsbx-mcp"

/* Since 1.6: one host path to bind into the sandbox (sbx_backend_config.binds). */
typedef struct sbx_backend_bind {
	const char *source;           /* absolute host path, made and checked by the core */
	const char *dest;             /* absolute path inside the sandbox */
	int writable;                 /* 0: read-only */
} sbx_backend_bind;

/* Resource limits from the "limits" config object; 0 = not set. */
typedef struct sbx_backend_limits {
	uint64_t cpu_seconds;
	uint64_t memory_bytes;
	uint64_t file_size_bytes;
	uint64_t open_files;
	uint64_t processes;
	uint64_t pids;
} sbx_backend_limits;

/* What the core hands to open(): the validated configuration. */
typedef struct sbx_backend_config {
	size_t size;                  /* sizeof(sbx_backend_config) of the core */
	const char *id;               /* workspace id */
	const char *workdir;          /* absolute host directory (exists), or NULL for a backend
	                                 without SBX_BACKEND_CAP_HOST_FILES and no workdir given */
	int workdir_is_temporary;     /* 1 when the core made workdir and removes it at close */
	const char *network_mode;     /* "none", "allowlist" or "host" (validated against caps) */
	int64_t default_timeout_ms;   /* 0 = none */
	sbx_backend_limits limits;
	const char *options_json;     /* the object under the backend's own name, "{}" if absent */
	const char *config_json;      /* the whole configuration, for backends that want more */
	/* Since library 1.1 (read only when size covers it): the workspace is opened read-only;
	 * a backend that cannot keep commands from writing it must refuse to open. */
	int read_only;
	/* Since library 1.2 (read only when size covers it): */
	const char *network_json;     /* the validated "network" object as JSON (mode, allow,
	                                 deny; see agentsbx.h), or NULL when the config has none */
	int audit_dir_fd;             /* the workspace's state folder (a directory fd, owned by the
	                                 core: dup it to keep it) where helpers append audit records
	                                 (one JSON object a line to audit.jsonl, each line one
	                                 write(2) under flock(2) of this directory fd, rotating
	                                 audit.jsonl -> .1 -> ... -> .<audit_keep> first when the
	                                 line would pass audit_max_bytes); -1 when it is off */
	uint64_t audit_max_bytes;     /* the log's rotation size, and how many rotated files stay */
	int audit_keep;
	/* Since library 1.5 (read only when size covers it): where a slow open reports what it
	 * is doing (sbx_open_progress in agentsbx.h; the backend fills every field, size
	 * included). Call it only from open() and on its thread; NULL: nobody listens. */
	sbx_open_progress_fn progress;
	void *progress_userdata;
	/* Since library 1.5 (read only when size covers it; given only to backends with
	 * SBX_BACKEND_CAP_DISK_LIMITS): */
	uint64_t disk_bytes;          /* limits.disk_bytes: what the workspace's files may take;
	                                 0 = not set. A backend that cannot enforce it for this
	                                 workdir refuses to open, naming the key */
	uint64_t tmp_bytes;           /* limits.tmp_bytes: the size of the sandbox's own /tmp (and
	                                 /dev/shm); 0 = the backend's default */
	/* Since library 1.6 (read only when size covers it): where the library's state folder
	 * is when it is not <workdir>/.agentsbx. A read-only workspace whose workdir the library
	 * cannot write keeps it in a private temporary folder on the host, removed at close:
	 * its absolute path and a directory fd of it (owned by the core: dup it to keep it).
	 * NULL and -1 otherwise: the state folder is <workdir>/.agentsbx, which the core has
	 * made and checked (a real directory, no link) before open() is called; reach it from
	 * the workdir's fd without following links (openat2 with RESOLVE_BENEATH |
	 * RESOLVE_NO_SYMLINKS, say). */
	const char *state_dir;
	int state_dir_fd;
	/* Since library 1.6 (read only when size covers it; given only to backends with
	 * SBX_BACKEND_CAP_HELPER_BINDS): the host paths to bind into the sandbox, valid during
	 * open() only (copy what you keep). NULL and 0: none (no MCP gateway is installed). */
	const sbx_backend_bind *binds;
	size_t n_binds;
} sbx_backend_config;

/* Whether the core's config struct has member: read a member added after 1.0 only when this
 * says so (an older library passes a shorter struct). */
#define SBX_BACKEND_CONFIG_HAS(cfg, member) \
	((cfg)->size >= offsetof(sbx_backend_config, member) + sizeof (cfg)->member)

/* One command to start. */
typedef struct sbx_backend_spawn {
	size_t size;                  /* sizeof(sbx_backend_spawn) of the core */
	const char *const *argv;      /* NULL-terminated, argv[0] non-empty */
	const char *const *envp;      /* the final environment, NULL-terminated "NAME=value" */
	const char *cwd;              /* the working directory as commands see it (absolute) */
	int cwd_fd;                   /* HOST_FILES backends: an O_PATH directory fd of cwd, verified
	                                 beneath the root; -1 otherwise */
	int stdin_fd;                 /* the child's ends of the stdio pipes; stderr_fd equals */
	int stdout_fd;                /* stdout_fd when streams are merged. Owned by the core,   */
	int stderr_fd;                /* which closes them after spawn() returns.                */
	const sbx_backend_limits *limits; /* per-command rlimits to apply */
	/* Since library 1.7 (read only when size covers it; nonzero only for backends with
	 * SBX_BACKEND_CAP_PTY): */
	int pty;                      /* 1: the command runs on a new pseudo-terminal made where
	                                 it runs (in the sandbox: its own devpts), its controlling
	                                 terminal and its stdin, stdout and stderr; the three fds
	                                 above are then /dev/null and unused */
	unsigned short rows, cols;    /* the terminal's size (never 0) */
	int *pty_fd;                  /* where spawn() stores the terminal's master fd (the
	                                 core's from then on, close-on-exec), by which the core
	                                 writes, reads and resizes (TIOCSWINSZ) */
} sbx_backend_spawn;

/* Whether the core's spawn request has member (a later addition). */
#define SBX_BACKEND_SPAWN_HAS(req, member) \
	((req)->size >= offsetof(sbx_backend_spawn, member) + sizeof (req)->member)

/* Concurrency. The ops of one workspace (one state) are called as follows; a backend needs
 * no lock of its own beyond what this leaves concurrent:
 *   - probe(), workspace_caps(), detached_running(), detached_stop(): any thread, any time,
 *     concurrently with each other and with every workspace's ops (they touch no state);
 *     detached_stop() never twice at once for one workdir.
 *   - open(), close(), reset(): alone on their state: no other call on a workspace may
 *     overlap its close or reset (agentsbx.h), and the core ends the workspace's commands
 *     and MCP gateway first. Different workspaces open and close concurrently.
 *   - spawn(), the file_*() ops, file_tree(), protect_now(): concurrently from several
 *     threads on the same state (one per command or tool call).
 *   - proc_wait(), proc_signal(), proc_kill(): concurrently with each other on the same
 *     proc; proc_release() once, after every other call on that proc has returned.
 *   - set_network(): serialized with itself by the core (one lock per workspace),
 *     concurrent with spawn() and the file ops.
 *   - root(), host_dir(), protected_paths(), base_env(), files_root_fd(),
 *     writable_paths(): any thread
 *     between open() and the next reset() or close(); they must not block.
 */
typedef struct sbx_backend_ops {
	size_t size;                  /* sizeof(sbx_backend_ops) the backend was built with */
	uint32_t abi_version;         /* SBX_BACKEND_ABI_VERSION */
	const char *name;             /* [a-z0-9_]+ , also the key of its config object */
	uint32_t caps;                /* SBX_BACKEND_CAP_* */

	/* Can the backend work on this host? Returns 0 if yes, a negative code if not; writes a
	 * one-line explanation either way into detail (NUL-terminated, at most len bytes). */
	int (*probe)(char *detail, size_t len);

	/* Workspace lifecycle. open() stores the backend's state in *state. */
	int (*open)(const sbx_backend_config *cfg, void **state);
	/* Kills every process, releases resources and frees state (also on error). */
	int (*close)(void *state);
	/* Kills every process and restarts whatever runs them. */
	int (*reset)(void *state);
	/* The root as commands see it; the host directory of the files (HOST_FILES) or NULL. */
	const char *(*root)(void *state);
	const char *(*host_dir)(void *state);

	/* Processes. spawn() starts req->argv and returns a process handle in *proc and a file
	 * descriptor in *wait_fd (owned by the process) that polls readable once the process has
	 * ended. A command that cannot be executed still spawns: it ends with exit code 127/126
	 * and the reason written to its stderr. */
	int (*spawn)(void *state, const sbx_backend_spawn *req, void **proc, int *wait_fd);
	/* Waits up to timeout_ms (-1 = forever, 0 = poll) for the end; -SBX_ETIMEDOUT if still
	 * running. Repeatable after success. */
	int (*proc_wait)(void *proc, int timeout_ms, int *exit_code, int *term_signal);
	/* Sends sig to the command's process group. */
	int (*proc_signal)(void *proc, int sig);
	/* Kills the command and every process it started; does not wait. */
	int (*proc_kill)(void *proc);
	/* Kills (if needed), reaps and frees the process. */
	void (*proc_release)(void *proc);

	/* File operations, used only for backends without SBX_BACKEND_CAP_HOST_FILES. Paths are
	 * relative to the root, normalised by the core (no "..", no "." components, no leading
	 * "/", "" = the root). May be NULL, in which case the file API returns -SBX_ENOSYS. */
	int (*file_read)(void *state, const char *rel, char **data, size_t *len);
	int (*file_write)(void *state, const char *rel, const void *data, size_t len,
	                  unsigned mode, uint32_t flags);
	int (*file_stat)(void *state, const char *rel, sbx_stat *st);
	int (*file_list)(void *state, const char *rel, char **json_out);
	int (*file_mkdir)(void *state, const char *rel, unsigned mode);
	int (*file_remove)(void *state, const char *rel, uint32_t flags);
	/* Since library 1.1 (older tables end before it and read as NULL). The root-relative paths
	 * commands cannot change, NULL-terminated; an entry ending in "/" stands for a directory
	 * and everything below it. The core's own writers that act for a model (the Write and Edit
	 * tools) keep the same rule. NULL, or a NULL function: none. */
	const char *const *(*protected_paths)(void *state);
	/* Since library 1.2 (older tables end before these and read as NULL). */
	/* Changes the network policy of an open workspace: network_json is a validated "network"
	 * object (mode given). Takes effect for new connections. A backend that cannot make a
	 * change take effect (another mode on a running sandbox) refuses it with a message.
	 * NULL: the core answers -SBX_ENOSYS. */
	int (*set_network)(void *state, const char *network_json);
	/* "NAME=value" entries the backend adds to every command's environment, after PATH and
	 * HOME and before the config's "env" (which may override them), NULL-terminated and
	 * valid while the workspace is open; the proxy settings of mode "allowlist", say. NULL,
	 * or a NULL function: none. Read once, at open. */
	const char *const *(*base_env)(void *state);
	/* Since library 1.5 (older tables end before it and read as NULL). HOST_FILES backends
	 * whose files do not live in host_dir() but in a file system of the sandbox's own (a
	 * size-capped workspace, limits.disk_bytes): a directory fd of that file system's root,
	 * owned by the backend and valid until the next reset() or close(). The core serves the
	 * file primitives and the tools beneath it, and after a reset carries what the baseline
	 * keeps (the state folder at least) over to the new root. -1 (or a NULL function): the
	 * files are in host_dir(). */
	int (*files_root_fd)(void *state);
	/* Since library 1.5 (older tables end before it and read as NULL). The capabilities of
	 * a workspace opened with options_json (the object under the backend's name, "{}" if
	 * absent), asked before open() and before the core prepares a host workdir: a backend
	 * whose options decide where the files live (docker's "volume") clears
	 * SBX_BACKEND_CAP_HOST_FILES here. Only bits of `caps` count (the core masks the
	 * answer with it); a negative return refuses the options, with a message naming the
	 * key. NULL, or a NULL function: `caps` for every workspace. */
	int (*workspace_caps)(const char *options_json, uint32_t *caps);
	/* For backends without HOST_FILES: rel ("" = the root) and everything below it as a tar
	 * in *tar (malloc'd, *len bytes), its entries named by rel's last component (for the
	 * root: any one name) and the paths below; at most max bytes (-SBX_EFBIG beyond). The
	 * Glob and Grep tools search a private copy of it. NULL: those tools are errors there. */
	int (*file_tree)(void *state, const char *rel, size_t max, char **tar, size_t *len);
	/* Since library 1.6 (older tables end before it and read as NULL). Makes existing
	 * entries unchangeable inside the RUNNING sandbox (the git guard's read-only binds):
	 * rel_paths are root-relative, NULL-terminated; an entry ending in "//" is a directory to
	 * pin (bound onto itself, still writable, so it cannot be renamed away), one ending in "/"
	 * a directory and one without a file to bind read-only. Each is resolved beneath the
	 * root without following a link; missing entries and links are skipped, never created.
	 * -SBX_ENOSYS (or a NULL function): the backend cannot, and the core relies on
	 * detection alone. */
	int (*protect_now)(void *state, const char *const *rel_paths);
	/* Since library 1.6 (older tables end before these and read as NULL). */
	/* How the workspace block of a system prompt names this kind of workspace, e.g.
	 * "sandboxed (Linux namespaces)". NULL: the backend's name. */
	const char *description;
	/* SBX_BACKEND_CAP_DETACHED backends, called with no workspace open in this process (the
	 * workspace manager lists and stops sandboxes other processes left): whether a detached
	 * sandbox of workdir runs (*running 1 or 0), and stopping it (*stopped 1 when one ran and
	 * was stopped, 0 when none ran). id is the workspace's id, for messages. detached_stop()
	 * is called under the manager's lock of that workspace (never twice at once for one
	 * workdir); detached_running() at any time, also while the sandbox stops. */
	int (*detached_running)(const char *workdir, int *running);
	int (*detached_stop)(const char *workdir, const char *id, int *stopped);
	/* Since library 1.7 (older tables end before it and read as NULL). ISOLATED backends:
	 * the places outside the root that commands may write, as absolute paths inside the
	 * sandbox ("/tmp", a writable bind), NULL-terminated and valid while the workspace is
	 * open; everything else outside the root is read-only for commands (or not there).
	 * sbx_workspace_instructions() tells the model exactly these, so list only what holds.
	 * NULL, or a NULL function: the backend promises nothing, and the model is told nothing
	 * about writing outside the workspace. */
	const char *const *(*writable_paths)(void *state);
} sbx_backend_ops;

/* Whether a backend's table is new enough to have member (a later addition). */
#define SBX_BACKEND_OPS_HAS(ops, member) \
	((ops)->size >= offsetof(sbx_backend_ops, member) + sizeof (ops)->member)

/* Registers a backend in this process (built-ins do this at load time). The table must stay
 * valid until the process ends. Fails with -SBX_EABI for another ABI version, -SBX_EEXIST if
 * the name is taken, -SBX_EINVAL for a malformed table. Thread-safe. */
SBX_API int sbx_backend_register(const sbx_backend_ops *ops);

/* Records the thread's error message (printf-style) and returns -abs(code). For backends: the
 * one error path, `return sbx_error_set(-SBX_EIO, "write %s: %s", p, strerror(errno));`. */
SBX_API int sbx_error_set(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif /* AGENTSBX_BACKEND_H */
