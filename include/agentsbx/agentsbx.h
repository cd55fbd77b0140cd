/*
 * libagentsbx — isolated workspaces for AI-agent harnesses.
 *
 * This is the public API: the only header most users include.
 *
 * Conventions that hold for every function below unless its comment says otherwise:
 *  - Functions return 0 on success or a negative error code (-SBX_E...). The codes that have an
 *    errno twin use the errno's value, so -SBX_ENOENT == -ENOENT.
 *  - After a failure, sbx_last_error() returns a sentence that names what failed and why. The
 *    message is thread-local and stays valid until the next failing call on the same thread.
 *  - No function aborts, exits, or prints to the host's stdout or stderr.
 *  - Memory the library returns is released with sbx_free() (strings and buffers) or the
 *    type's own free function; never with the caller's free().
 *  - Option structs start with `size_t size`: set it to sizeof the struct you compiled against.
 *    The library reads only the fields that size covers, so newer fields can be appended without
 *    breaking old callers. A NULL options pointer means "all defaults".
 *  - Strings are NUL-terminated UTF-8. Paths handed to the file functions are either relative to
 *    the workspace root or absolute paths under sbx_workspace_root(); anything that resolves
 *    outside the root fails with -SBX_EESCAPE.
 *
 * Thread safety: a workspace handle may be used by several threads at once for sbx_exec,
 * sbx_exec_shell, sbx_process_spawn and the file functions. sbx_workspace_reset and
 * sbx_workspace_close must not run concurrently with any other call on the same workspace.
 * A process handle (sbx_process) belongs to one thread at a time.
 */
#ifndef AGENTSBX_H
#define AGENTSBX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SBX_API __attribute__((visibility("default")))
#else
#define SBX_API
#endif

/* The ABI version this header describes; compare with sbx_abi_version() at run time. */
#define SBX_ABI_VERSION 1

/* Error codes. Functions return their negation (-SBX_EINVAL). */
enum sbx_error {
	SBX_OK = 0,
	SBX_EPERM = 1,         /* operation not permitted (by the sandbox or the host) */
	SBX_ENOENT = 2,        /* no such file, backend, workspace or process */
	SBX_EIO = 5,           /* I/O error, or a helper process died unexpectedly */
	SBX_E2BIG = 7,         /* argument list, environment or input too large */
	SBX_EBADF = 9,         /* stream not open (stdin already closed, fd gone) */
	SBX_ENOMEM = 12,       /* out of memory */
	SBX_EACCES = 13,       /* permission denied */
	SBX_EBUSY = 16,        /* resource busy */
	SBX_EEXIST = 17,       /* already exists */
	SBX_ENOTDIR = 20,      /* a path component is not a directory */
	SBX_EISDIR = 21,       /* the path is a directory */
	SBX_EINVAL = 22,       /* invalid argument or configuration (the message names the field) */
	SBX_EFBIG = 27,        /* file too large */
	SBX_ENOSPC = 28,       /* no space left (quota reached) */
	SBX_ENAMETOOLONG = 36, /* path or name too long */
	SBX_ENOSYS = 38,       /* the backend or the host does not support this */
	SBX_ENOTEMPTY = 39,    /* directory not empty */
	SBX_ELOOP = 40,        /* too many symbolic links */
	SBX_ETIMEDOUT = 110,   /* a wait ran out of time */
	/* Library-specific codes, above the errno range. */
	SBX_ECONFIG = 1001,    /* the configuration JSON is malformed or has a bad value */
	SBX_EBACKEND = 1002,   /* the backend is unknown or cannot work on this host */
	SBX_EESCAPE = 1003,    /* a path resolves outside the workspace root */
	SBX_EABI = 1004,       /* a plugin was built for another ABI version */
	SBX_EPROTO = 1005,     /* a helper or remote service broke its protocol */
	SBX_ESTATE = 1006      /* the handle is in the wrong state (closed, already waited) */
};

/* ---------------------------------------------------------------------------------------
 * Library-wide
 * ------------------------------------------------------------------------------------- */

/* The library's version string ("1.0.0"). Static storage. */
SBX_API const char *sbx_version(void);

/* The ABI version of the loaded library (SBX_ABI_VERSION it was built with). */
SBX_API int sbx_abi_version(void);

/* The message of the last failing call on this thread ("" if none). Valid until the next
 * failing call on this thread. */
SBX_API const char *sbx_last_error(void);

/* A generic description of an error code (positive or negative). Static storage. */
SBX_API const char *sbx_strerror(int code);

/* Releases a string or buffer the library returned. NULL is ignored. */
SBX_API void sbx_free(void *ptr);

/* Writes a JSON array describing every backend this library can reach (built-in and plugins
 * found in the plugin directories) and whether it can work on this host:
 *   [{"backend":"local","available":true,"detail":"...","network":["host"]}, ...]
 * where "network" lists the network modes the backend can enforce ("none", "allowlist",
 * "host"; only "host" means its commands always share the host's network). It is absent for
 * a plugin that could not be loaded.
 * *json_out is released with sbx_free(). */
SBX_API int sbx_backends_probe(char **json_out);

/* ---------------------------------------------------------------------------------------
 * Workspaces
 * ------------------------------------------------------------------------------------- */

typedef struct sbx_workspace sbx_workspace;

/* Opens a workspace described by a JSON object (NULL or "" means "{}"):
 *   backend     string  backend name (default "ns", the namespace sandbox)
 *   workdir     string  host directory holding the files; created if missing. Absent: a
 *                       private temporary directory that is removed at close. Since 1.6
 *                       refused (-SBX_ECONFIG) when it is / or, after resolving links, one
 *                       of /usr, /etc, /bin, /sbin, /lib*, /boot, /dev, /proc, /sys, /run,
 *                       /var or anything below /proc, /sys, /dev, /etc, /usr, /boot, /bin,
 *                       /sbin, /lib*: checked before anything is created. Its .agentsbx
 *                       (the state folder) must be a real folder: a link or a file there
 *                       fails the open (-SBX_ELOOP, -SBX_ENOTDIR) naming it
 *   unsafe_allow_system_workdir  boolean  since 1.6: true lets the workdir be / or a
 *                       system tree - its commands then write the host's system files and
 *                       read its secrets (default false)
 *   id          string  [A-Za-z0-9_.-], 1..64 characters, not starting with '.' (default:
 *                       random)
 *   env         object  environment of every command: {"NAME": "value"}
 *   timeout_ms  integer default timeout of each exec in ms (0 = none, the default)
 *   limits      object  max_output (bytes kept per stream, default 16 MiB), cpu_seconds,
 *                       memory_bytes, file_size_bytes, open_files, processes, pids;
 *                       since 1.5 disk_bytes: what a temporary workspace (no workdir) may
 *                       hold, 1 MiB .. 1 TiB (and an inode per 4 KiB, at least 1024): its
 *                       files live in a size-capped file system of the sandbox's own, and a
 *                       write past the cap fails with ENOSPC inside and -SBX_ENOSPC through
 *                       this API (the state folder .agentsbx stays on the host, outside the
 *                       cap). Refused (-SBX_ECONFIG naming the key) with a host workdir (no
 *                       project quota is set), "baseline": "keep", "mode": "read-only",
 *                       detached sandboxes, MCP transport "socket", and by backends that
 *                       cannot enforce it (local, docker); tmp_bytes: the size of the
 *                       sandbox's /tmp and /dev/shm, each (1 MiB .. 1 TiB, default 1 GiB;
 *                       refused where the backend cannot enforce it)
 *   network     object  what commands may reach on the network; a backend refuses a mode it
 *                       cannot enforce (-SBX_ECONFIG naming network.mode):
 *                        {"mode": "none"}  the default: a network of its own with only
 *                           loopback;
 *                        {"mode": "allowlist", "allow": [...], "deny": [...]}  a network of its
 *                           own whose only way out is a proxy run for the workspace, which
 *                           speaks HTTP CONNECT, plain HTTP and SOCKS5 on 127.0.0.1:3128
 *                           inside; HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY (and lower
 *                           case), npm's, pip's and git's proxy settings point there. Entries
 *                           are "example.com" (that name), "*.example.com" (its subdomains),
 *                           IP literals and CIDR ranges ("192.0.2.0/24", "2001:db8::/32"),
 *                           each with an optional ":port" ("[2001:db8::1]:443"); at most 1024
 *                           per list. Deny wins over allow. A name matches only name entries,
 *                           an address asked for by number only address entries. The proxy
 *                           resolves names itself and connects only to addresses outside
 *                           loopback, link-local and private ranges, unless the name matched
 *                           an exact (not wildcard) entry or an allowed range covers them. No
 *                           "allow": everything is refused. Every connection, allowed or
 *                           refused, is recorded in the audit log with the entry that
 *                           decided it;
 *                        {"mode": "host"}  the host's own network, every address and port the
 *                           host reaches (recorded in the audit log at open)
 *   baseline    string  what sbx_workspace_reset restores: "empty", "keep" (the files stay),
 *                       or "snapshot" (the workdir as it was at open: regular files with
 *                       their holes, folders and links, copied into $TMPDIR at open; FIFOs,
 *                       sockets and devices are left out, the state folder is kept as it
 *                       is). A copy left by a killed process is removed by the next open
 *                       with "snapshot". Default: "empty" for a temporary workdir, "keep"
 *                       for a host workdir
 *   mode        string  "read-write" (default) or "read-only": every write through the library
 *                       fails (-SBX_EPERM), and the backend mounts the workspace read-only for
 *                       commands (a backend that cannot, such as "local", refuses to open).
 *                       Since 1.6 a read-only workspace may have a workdir the library cannot
 *                       write (a read-only mount, another user's folder): its state folder
 *                       (audit log, tool sessions, MCP sockets) is then a private temporary
 *                       folder, removed at close (sbx_audit_path() points into it), and it
 *                       cannot be detached. A workdir that is not writable without
 *                       "read-only" fails the open naming "mode"
 *   audit       object  the audit log in the workspace's state folder (.agentsbx/audit.jsonl):
 *                       "enabled" (default true), "max_bytes" before rotation (default 10 MiB),
 *                       "keep" rotated files (default 3), "redact": secrets never written
 *   <backend>   object  options of that backend, under its own name ("docker": {...}). Since
 *                       1.6, a detached sandbox ("ns"/"bwrap": {"detached": true}) or docker
 *                       container ("docker": {"detached": true}) takes "idle_ttl_s" (number
 *                       of seconds, default 3600, 0 = never): it stops by itself once no host
 *                       has held it (had it open) for that long, whoever forgets to sweep; a
 *                       command still running does not keep it (docs/security.md,
 *                       "Lifetimes"). Refused for a sandbox that is not detached, and non-zero
 *                       for a docker container with "exec": "api" (nothing inside could tell).
 *                       Since 1.6 "docker": {"runtime": "runsc"} runs the container on that
 *                       OCI runtime of the engine's (runsc: gVisor's user-space kernel). A
 *                       runtime the engine has not registered fails with -SBX_EBACKEND naming
 *                       docker.runtime and the registered ones; what gVisor cannot keep
 *                       (limits.pids, network modes "allowlist" and "host", detached with the
 *                       exec server) with -SBX_ECONFIG naming the key
 *                       (backends/docker/README.md).
 *                       Since 1.6 the sandbox backends ("ns", "bwrap") also take two keys that
 *                       matter when the caller is root (docs/security.md, "Users"): its
 *                       commands are uid 0 inside but unprivileged host ids, and the workdir
 *                       comes through an idmapped mount, so files stay the caller's.
 *                        "subid_user"   string, default "agentsbx": whose ranges in
 *                           /etc/subuid and /etc/subgid the sandbox's ids map to (at most
 *                           65536 ids); without any, host ids 1879048192..1879113727;
 *                        "root_inside"  "unprivileged" (default) or "allow-host-root":
 *                           where the workdir's file system cannot be idmapped, the open
 *                           fails with -SBX_ENOSYS naming the reason and this key, or runs
 *                           the sandbox as host root with a warning in the audit log.
 *                       Callers that are not root keep their own uid inside; both keys are
 *                       then checked and change nothing.
 * Unknown keys, wrong types and out-of-range values fail with -SBX_ECONFIG and a message that
 * names the key. On success *out is a new handle, released with sbx_workspace_close(). */
SBX_API int sbx_workspace_open(const char *config_json, sbx_workspace **out);

/* Since 1.5: what a slow open is doing, reported while sbx_workspace_open_with runs. A backend
 * reports the phases it has; today the docker backend's image pull ("pull"), one event per
 * progress line of the engine. Strings are never NULL and are valid only during the call. */
typedef struct sbx_open_progress {
	size_t size;          /* sizeof the library's struct: read a field only when size covers
	                         it (fields are only ever appended) */
	const char *phase;    /* "pull": a missing image is being fetched */
	const char *subject;  /* what the phase works on: the image reference for "pull" */
	const char *item;     /* one part of it: a layer id, or "" for the subject as a whole */
	const char *status;   /* the backend's words: "Pulling fs layer", "Downloading",
	                         "Download complete", "Pull complete", "Digest: ...", ... */
	uint64_t current;     /* bytes of item done, and its size; 0 when not known (total 0: */
	uint64_t total;       /* no measure, show status only) */
} sbx_open_progress;

/* Receives the events of one open, on the thread that called sbx_workspace_open_with, before
 * it returns. It cannot stop the open (close the workspace afterwards instead) and must not
 * call into the workspace being opened; other library calls are fine. */
typedef void (*sbx_open_progress_fn)(void *userdata, const sbx_open_progress *event);

/* Options of sbx_workspace_open_with (since 1.5). */
typedef struct sbx_open_opts {
	size_t size;                  /* sizeof(sbx_open_opts) */
	sbx_open_progress_fn progress; /* NULL: no reports */
	void *progress_userdata;
} sbx_open_opts;

/* sbx_workspace_open with options (NULL = sbx_workspace_open): progress reports while the
 * backend gets ready. Reports come only during this call; a later reset that pulls again
 * reports nothing. Since 1.5. */
SBX_API int sbx_workspace_open_with(const char *config_json, const sbx_open_opts *opts,
                                    sbx_workspace **out);

/* Stops everything running in the workspace, releases the backend's resources (a temporary
 * workdir is removed) and frees the handle. The handle is freed even when an error is returned.
 * NULL is ignored (returns 0). */
SBX_API int sbx_workspace_close(sbx_workspace *ws);

/* Kills every process of the workspace, restarts whatever runs them, and returns the files to
 * the configured baseline (see "baseline" above). */
SBX_API int sbx_workspace_reset(sbx_workspace *ws);

/* Changes the network policy of an open workspace. network_json is an object like the
 * config's "network" (its "mode" required). Within mode "allowlist" the allow and deny lists
 * are replaced: new connections follow them at once, and open connections the new lists
 * would refuse are closed. Another mode than the workspace runs with cannot take effect in a
 * running sandbox and is refused (-SBX_ENOSYS); to cut a workspace off, keep "allowlist" with
 * an empty "allow". A bad object fails with -SBX_ECONFIG naming the key, and changes nothing.
 * A backend without network policies answers -SBX_ENOSYS. Each change is recorded in the
 * audit log. Safe to call while commands run; not concurrently with close or reset. */
SBX_API int sbx_workspace_set_network(sbx_workspace *ws, const char *network_json);

/* Since 1.6. What the git guard quarantined on this handle so far, as a JSON object:
 *   {"guarded": true, "kernel_binds": true, "repositories": 3, "bound": 3,
 *    "full_walks": false,
 *    "items": [{"path": "a/.git/hooks/pre-commit", "what": "hook",
 *               "reason": "a hook the host's git would run",
 *               "moved_to": ".agentsbx/quarantine/20261201T120000Z-41-1/a/.git/hooks/pre-commit",
 *               "when": "exec", "time": 1796126400}]}
 * The guard runs on backends whose files are on the host and whose commands are isolated
 * (ns, bwrap, docker with a workdir; "guarded": false elsewhere): after every command
 * (sbx_exec, a spawned process waited for or freed, a Bash tool call), at reset and at close,
 * it moves whatever a command planted in any git repository of the workspace that the host's
 * git would run (hooks, config keys outside an allow-list, pointers leading out of the
 * workspace) into the state folder's quarantine/, and sanitises configs in place; each item is
 * also an audit record of kind "git". "kernel_binds": the backend also makes the git dirs it
 * found read-only inside the sandbox ("bound" of "repositories"); "full_walks": the change
 * feed is unavailable and each check walks the whole workspace. See docs/security.md. Release
 * *json_out with sbx_free(). Thread-safe. */
SBX_API int sbx_workspace_git_quarantine(sbx_workspace *ws, char **json_out);

/* The workspace id. Valid while the handle is open. */
SBX_API const char *sbx_workspace_id(const sbx_workspace *ws);

/* The path of the workspace root as commands inside see it ("/workspace" in a sandbox, the
 * host directory for "local"). Valid while the handle is open. */
SBX_API const char *sbx_workspace_root(const sbx_workspace *ws);

/* The name of the workspace's backend. Valid while the handle is open. */
SBX_API const char *sbx_workspace_backend(const sbx_workspace *ws);

/* ---------------------------------------------------------------------------------------
 * Running commands
 * ------------------------------------------------------------------------------------- */

/* Stream identifiers used by callbacks and the process API. */
enum sbx_stream { SBX_STDIN = 0, SBX_STDOUT = 1, SBX_STDERR = 2 };

/* sbx_exec_opts.flags */
#define SBX_EXEC_CLEAR_ENV     (1u << 0) /* start from an empty environment: only opts.env */
#define SBX_EXEC_MERGE_STDERR  (1u << 1) /* stderr goes to the stdout stream */
#define SBX_EXEC_NO_CAPTURE    (1u << 2) /* deliver output only to on_output, keep none in the
                                            result; max_output then does not apply */

/* Called with output as it arrives, on the thread that called sbx_exec. `data` is valid only
 * during the call. Delivery stops at the output cap, as storage does, unless
 * SBX_EXEC_NO_CAPTURE is set. */
typedef void (*sbx_output_cb)(int stream, const char *data, size_t len, void *userdata);

typedef struct sbx_exec_opts {
	size_t size;                /* sizeof(sbx_exec_opts) */
	const char *cwd;            /* working directory: relative to the root or absolute under it;
	                               NULL = the workspace root */
	const char *const *env;     /* NULL-terminated "NAME=value" entries added to (or replacing)
	                               the workspace environment; a bare "NAME" removes NAME */
	const char *stdin_data;     /* bytes written to the command's stdin, then closed; NULL =
	                               stdin reads end-of-file at once */
	size_t stdin_len;
	int64_t timeout_ms;         /* 0 = the workspace default; -1 = no timeout */
	size_t max_output;          /* bytes kept per stream; 0 = the workspace default. Output
	                               beyond it is read and dropped, and the result is marked
	                               truncated */
	uint32_t flags;             /* SBX_EXEC_* */
	sbx_output_cb on_output;    /* optional streaming callback */
	void *userdata;             /* passed to on_output */
} sbx_exec_opts;

typedef struct sbx_result sbx_result;

/* Runs argv[0] (looked up in the command's PATH) with the arguments argv[1..] (NULL-terminated)
 * in the workspace, waits for it and returns its result in *out (release with
 * sbx_result_free). The command runs in a new session and process group; when its main process
 * ends or its timeout passes, every process it started is killed. A command that cannot be
 * started is not an error: its result has exit code 127 (not found) or 126 (not executable)
 * and the reason on stderr, as a shell reports it. The environment is exactly: PATH (a
 * default) and HOME (the root), then the workspace's "env", then opts->env; with
 * SBX_EXEC_CLEAR_ENV only opts->env. */
SBX_API int sbx_exec(sbx_workspace *ws, const char *const argv[], const sbx_exec_opts *opts,
                     sbx_result **out);

/* sbx_exec of {"/bin/sh", "-c", command}. */
SBX_API int sbx_exec_shell(sbx_workspace *ws, const char *command, const sbx_exec_opts *opts,
                           sbx_result **out);

/* Exit code of the command (0..255), or -1 when it was killed by a signal. */
SBX_API int sbx_result_exit_code(const sbx_result *res);
/* The signal that killed the command, or 0. */
SBX_API int sbx_result_signal(const sbx_result *res);
/* 1 when the timeout killed the command, else 0. */
SBX_API int sbx_result_timed_out(const sbx_result *res);
/* 1 when some output was dropped at the cap, else 0. */
SBX_API int sbx_result_truncated(const sbx_result *res);
/* The captured stdout (stderr): *len receives its length (may be NULL). The buffer is
 * NUL-terminated for convenience and owned by the result. Never NULL for a valid result. */
SBX_API const char *sbx_result_stdout(const sbx_result *res, size_t *len);
SBX_API const char *sbx_result_stderr(const sbx_result *res, size_t *len);
/* Wall-clock time from start to exit, in milliseconds. */
SBX_API int64_t sbx_result_duration_ms(const sbx_result *res);
/* Releases a result. NULL is ignored. */
SBX_API void sbx_result_free(sbx_result *res);

/* ---------------------------------------------------------------------------------------
 * Long-running processes (MCP servers, interactive tools)
 * ------------------------------------------------------------------------------------- */

typedef struct sbx_process sbx_process;

/* sbx_spawn_opts.flags */
#define SBX_SPAWN_CLEAR_ENV    SBX_EXEC_CLEAR_ENV
#define SBX_SPAWN_MERGE_STDERR SBX_EXEC_MERGE_STDERR

typedef struct sbx_spawn_opts {
	size_t size;                /* sizeof(sbx_spawn_opts) */
	const char *cwd;            /* as in sbx_exec_opts */
	const char *const *env;     /* as in sbx_exec_opts */
	uint32_t flags;             /* SBX_SPAWN_* */
} sbx_spawn_opts;

/* Starts argv in the workspace with pipes on stdin, stdout and stderr and returns at once.
 * The same rules as sbx_exec apply (session, environment, exit codes 126/127). Release with
 * sbx_process_free(), which kills the process tree if it still runs. */
SBX_API int sbx_process_spawn(sbx_workspace *ws, const char *const argv[],
                              const sbx_spawn_opts *opts, sbx_process **out);

/* The host-side file descriptor of a stream (SBX_STDIN: the write end; SBX_STDOUT/SBX_STDERR:
 * the read ends), for poll/epoll/event loops, or -SBX_EBADF if it is closed (stderr when
 * merged). The fd stays owned by the process handle; it is close-on-exec and blocking (set
 * O_NONBLOCK yourself if your loop needs it). */
SBX_API int sbx_process_fd(const sbx_process *proc, int stream);

/* Writes all of data to the command's stdin. A command that has closed its stdin gives
 * -SBX_EIO ("broken pipe"); the host never receives SIGPIPE. */
SBX_API int sbx_process_write(sbx_process *proc, const void *data, size_t len);

/* Closes the command's stdin so it reads end-of-file. */
SBX_API int sbx_process_close_stdin(sbx_process *proc);

/* Reads up to cap bytes of stdout or stderr into buf, waiting at most timeout_ms (-1 = no
 * limit, 0 = do not wait). *nread is 0 at end-of-file. No data in time: -SBX_ETIMEDOUT. */
SBX_API int sbx_process_read(sbx_process *proc, int stream, void *buf, size_t cap,
                             int timeout_ms, size_t *nread);

/* Waits up to timeout_ms (-1 = no limit, 0 = poll) for the command to end. On success stores
 * its exit code (-1 if signalled) and signal (0 if exited) where the pointers are not NULL.
 * Still running: -SBX_ETIMEDOUT. May be called again after it succeeded. */
SBX_API int sbx_process_wait(sbx_process *proc, int timeout_ms, int *exit_code, int *term_signal);

/* Sends a signal to the command's process group. */
SBX_API int sbx_process_signal(sbx_process *proc, int sig);

/* Kills the command and every process it started. Does not wait; call sbx_process_wait. */
SBX_API int sbx_process_kill(sbx_process *proc);

/* Kills the process tree if it still runs, reaps it, closes the fds and frees the handle.
 * NULL is ignored. */
SBX_API void sbx_process_free(sbx_process *proc);

/* ---------------------------------------------------------------------------------------
 * Files, confined to the workspace root
 * ------------------------------------------------------------------------------------- */

/* Largest file sbx_file_read returns (bigger files: -SBX_EFBIG). */
#define SBX_FILE_READ_MAX ((size_t)1 << 30)

/* Reads a whole regular file. *data is NUL-terminated (not counted in *len) and released with
 * sbx_free(). */
SBX_API int sbx_file_read(sbx_workspace *ws, const char *path, char **data, size_t *len);

/* sbx_file_write flags */
#define SBX_WRITE_MKDIRS  (1u << 0) /* create missing parent directories */
#define SBX_WRITE_EXCL    (1u << 1) /* fail with -SBX_EEXIST if the file exists */

/* Replaces (or creates) a regular file atomically: readers see the old or the new content,
 * never a mix, and a crash leaves no partial file. mode 0 = keep the existing file's mode, or
 * 0644 for a new file. A symlink at the path is replaced, never followed. */
SBX_API int sbx_file_write(sbx_workspace *ws, const char *path, const void *data, size_t len,
                           unsigned mode, uint32_t flags);

enum sbx_file_type {
	SBX_FILE_OTHER = 0,
	SBX_FILE_REGULAR = 1,
	SBX_FILE_DIRECTORY = 2,
	SBX_FILE_SYMLINK = 3
};

typedef struct sbx_stat {
	size_t size;                /* sizeof(sbx_stat), set by the caller */
	int type;                   /* enum sbx_file_type */
	uint32_t mode;              /* permission bits */
	uint64_t file_size;         /* bytes */
	int64_t mtime_sec;          /* modification time */
	int64_t mtime_nsec;
} sbx_stat;

/* Stats a path without following a final symlink. */
SBX_API int sbx_file_stat(sbx_workspace *ws, const char *path, sbx_stat *st);

/* Lists a directory as a JSON array sorted by name:
 *   [{"name":"a.txt","type":"file","size":12,"mtime":1700000000}, ...]
 * with type one of "file", "dir", "symlink", "other". *json_out is released with sbx_free(). */
SBX_API int sbx_file_list(sbx_workspace *ws, const char *path, char **json_out);

/* Creates a directory and its missing parents (mkdir -p). mode 0 = 0755. */
SBX_API int sbx_file_mkdir(sbx_workspace *ws, const char *path, unsigned mode);

/* sbx_file_remove flags */
#define SBX_REMOVE_RECURSIVE (1u << 0) /* remove a directory with its contents (rm -r) */

/* Removes a file, symlink or empty directory (with SBX_REMOVE_RECURSIVE, any directory).
 * Symlinks are removed, never followed. The root itself cannot be removed. */
SBX_API int sbx_file_remove(sbx_workspace *ws, const char *path, uint32_t flags);

/* ---------------------------------------------------------------------------------------
 * Agent tools: Bash, Read, Write, Edit, Glob, Grep and Skill
 *
 * Three calls give a model a toolbox: sbx_tools_json() for the schemas, hand them to the
 * model, sbx_tool_call() for each call it makes. Tool results are JSON objects
 *   {"ok": true|false, "output": "text for the model", "metadata": {...}}
 * where ok=false is a tool error the model should read (bad arguments, file not found, a
 * denied approval): the call itself still returns 0. Only a library failure (bad handle, out
 * of memory, the backend gone) returns a negative code.
 * Tool state (the Bash working directory, which files were read and in what state) belongs to
 * a session and is kept in the workspace's state folder, so it outlives the handle.
 * ------------------------------------------------------------------------------------- */

/* The tool definitions as a JSON array: [{"name", "description", "input_schema"}, ...].
 * "Skill" is listed only while the workspace has skills. Release with sbx_free(). */
SBX_API int sbx_tools_json(sbx_workspace *ws, char **json_out);

/* Runs one tool call of the default session. args_json is the object the model produced.
 * *result_json (release with sbx_free) is the result object described above. */
SBX_API int sbx_tool_call(sbx_workspace *ws, const char *name, const char *args_json,
                          char **result_json);

/* The same for the session session_id ([A-Za-z0-9_.-], 1..128 characters, not starting with
 * '.'; NULL = the default session). */
SBX_API int sbx_tool_call_session(sbx_workspace *ws, const char *session_id, const char *name,
                                  const char *args_json, char **result_json);

/* The workspace block of a system prompt: where the workspace is, its layout and rules, and
 * the skills it has. Release with sbx_free(). */
SBX_API int sbx_workspace_instructions(sbx_workspace *ws, char **text_out);

/* ---------------------------------------------------------------------------------------
 * Skills: skills/<dir>/SKILL.md in the workspace, with YAML front matter naming it
 * ("name" and "description" are required).
 * ------------------------------------------------------------------------------------- */

/* Copies the skill in the host directory host_path (which holds SKILL.md) into the workspace,
 * as skills/<dir> with <dir> made from the name ([A-Za-z0-9_-] kept, other characters "_",
 * then "_1", "_2"... if taken). Regular files, directories and symlinks that stay inside the
 * folder are copied (symlinks as symlinks, which backends whose files are not on the host
 * refuse with -SBX_ENOSYS); anything else is refused (-SBX_EINVAL naming the file). The same
 * limits as for archives apply. The skill appears whole or not at all. *name_out (may be
 * NULL; release with sbx_free) receives the skill's name. A skill of that name already
 * there: -SBX_EEXIST. A name is 1..64 characters without '/', control characters or white
 * space at either end. */
SBX_API int sbx_skill_add(sbx_workspace *ws, const char *host_path, char **name_out);

/* Adds a skill from a tar, tar.gz, tar.xz, tar.zst or zip archive in memory (format "tar",
 * "tar.gz", "tar.xz", "tar.zst", "zip", or NULL to tell from the content; 7z is refused). The archive holds SKILL.md at its top or inside one
 * top-level folder (a "__MACOSX" folder beside it is ignored). Entries that would land
 * outside the skill's folder, links pointing out of it, device files, and archives expanding
 * beyond 256 MiB, holding a file over 64 MiB or more than 10000 entries are refused
 * (-SBX_EINVAL naming the entry) and nothing is left behind. Otherwise as sbx_skill_add. */
SBX_API int sbx_skill_add_archive(sbx_workspace *ws, const void *data, size_t len,
                                  const char *format, char **name_out);

/* Removes the skill named name, not its dir (-SBX_ENOENT if there is none). */
SBX_API int sbx_skill_remove(sbx_workspace *ws, const char *name);

/* The skills as a JSON array sorted by name:
 *   [{"name", "description", "dir": "skills/<dir>"}, ...]
 * Folders without a valid SKILL.md, and names starting with '.', are skipped. Release with
 * sbx_free(). */
SBX_API int sbx_skills_json(sbx_workspace *ws, char **json_out);

/* ---------------------------------------------------------------------------------------
 * Context offload: what a harness moves out of the model's context stays in the workspace,
 * where the model can read it back.
 *   sessions/<session_id>/context.jsonl           one JSON message per line
 *   sessions/<session_id>/tool_result-<id>.txt    "(1)", "(2)"... appended on a name clash
 *   data/<sha256 of the bytes><ext>               written once, content-addressed
 * Session and tool-call ids: [A-Za-z0-9_.-], 1..128 characters, not starting with '.'.
 * Paths returned are workspace-relative. Release every out string with sbx_free().
 * ------------------------------------------------------------------------------------- */

/* Appends messages_json (one message object, or an array of them) to the session's
 * context.jsonl, one line per message; each top-level data block with a base64 source in a
 * message's "content" is first stored with sbx_offload_data and replaced by its URL. The
 * lines are appended in one piece: concurrent writers never interleave within a line and a
 * crash never leaves half a line. An item that is not an object, or a data block with bad
 * base64 or media type, fails with -SBX_EINVAL naming the item and block; then nothing is
 * appended (data already stored stays, as it is content-addressed). */
SBX_API int sbx_offload_context(sbx_workspace *ws, const char *session_id,
                                const char *messages_json, char **path_out);

/* Stores a tool result as sessions/<session_id>/tool_result-<tool_call_id>.txt, or under the
 * first free name of tool_result-<tool_call_id>(1).txt, (2)...: an existing file is never
 * overwritten, also not by a concurrent writer. */
SBX_API int sbx_offload_tool_result(sbx_workspace *ws, const char *session_id,
                                    const char *tool_call_id, const void *data, size_t len,
                                    char **path_out);

/* Stores bytes as data/<sha256><ext> (ext from a fixed media-type table, ".bin" otherwise)
 * unless already there, and returns "workspace:///data/<sha256><ext>". media_type must look
 * like "type/subtype" (parameters after ';' are ignored; -SBX_EINVAL otherwise). The table
 * (case does not matter):
 *   image/png .png, image/jpeg and image/jpg .jpg, image/gif .gif, image/webp .webp,
 *   image/svg+xml .svg, image/bmp .bmp, image/tiff .tiff, image/x-icon .ico, image/avif .avif,
 *   image/heic .heic, application/pdf .pdf, application/json .json, application/xml .xml,
 *   application/zip .zip, application/gzip .gz, application/x-tar .tar,
 *   application/javascript .js, text/plain .txt, text/markdown .md, text/html .html,
 *   text/csv .csv, text/css .css, text/xml .xml, text/javascript .js, audio/mpeg and
 *   audio/mp3 .mp3, audio/wav and audio/x-wav .wav, audio/ogg .ogg, audio/flac .flac,
 *   audio/aac .aac, audio/mp4 .m4a, audio/webm .weba, video/mp4 .mp4, video/webm .webm,
 *   video/quicktime .mov, video/mpeg .mpeg, video/ogg .ogv. */
SBX_API int sbx_offload_data(sbx_workspace *ws, const char *media_type, const void *data,
                             size_t len, char **url_out);

/* ---------------------------------------------------------------------------------------
 * Approval hook and audit log
 * ------------------------------------------------------------------------------------- */

#define SBX_APPROVE 0
#define SBX_DENY    1

/* Called before every tool call, exec and process spawn with a JSON description:
 *   {"kind": "tool" | "exec", "tool": "Write", "class": "read" | "write" | "exec",
 *    "session_id": "...", "arguments": {...} | "argv": [...]}
 * Return SBX_APPROVE, or SBX_DENY and write a reason for the model into reason (at most
 * reason_len bytes, NUL-terminated). Called on the thread making the call. */
typedef int (*sbx_approval_fn)(void *userdata, const char *request_json, char *reason,
                               size_t reason_len);

/* Installs (or with fn NULL removes) the workspace's approval handler. Without one, everything
 * within the sandbox's rules is allowed. A denied tool call is a tool error carrying the
 * reason; a denied exec or spawn fails with -SBX_EPERM. */
SBX_API int sbx_set_approval_handler(sbx_workspace *ws, sbx_approval_fn fn, void *userdata);

/* The host path of the workspace's audit log (JSON lines: every exec and tool call with its
 * time, arguments with secrets redacted, result, exit code, duration and bytes), or NULL when
 * the log is off or the workspace's files are not on this host. Valid while the handle is
 * open. */
SBX_API const char *sbx_audit_path(const sbx_workspace *ws);

/* ---------------------------------------------------------------------------------------
 * MCP servers, run inside the workspace
 *
 * A server is declared with the entry format MCP clients already use:
 *   {"command": "node", "args": ["server.js"], "env": {"K": "v"}, "cwd": "sub/dir"}
 * (stdio; cwd relative to the workspace root, default the root) plus an optional "timeout"
 * in seconds per request (default 60), or a remote server spoken to with MCP's Streamable
 * HTTP transport:
 *   {"type": "http", "url": "https://host/mcp", "headers": {"Authorization": "Bearer ..."}}
 * ("type" may also be "streamable-http", "streamableHttp" or "streamable_http", or left out
 * when "url" is given). The host connects to a remote server only as the workspace's network
 * policy allows (mode "none": -SBX_EPERM; "allowlist": its rules, checked against the
 * resolved address too), and each decision is an audit record. Server names:
 * [A-Za-z0-9_-], 1..64 characters, no "__".
 *
 * Declarations persist in the state folder (.agentsbx/mcp.json), scoped by (agent, session):
 * sbx_mcp_add with agent_id NULL applies to every agent, session_id NULL to every session;
 * the most specific declaration of a name wins. When a server is used (list, tools, call),
 * NULL ids mean the agent "default" and the session "default". Each (agent, session, name)
 * is its own server process, so sessions never share a server's state.
 *
 * The servers run inside the workspace, started lazily by a gateway process there
 * (agentsbx-mcp-gateway) that keeps them alive across calls and host handles and restarts a
 * crashed one on the next request, with backoff. A crash, a timeout, a server that writes
 * garbage each fail that call (-SBX_EIO, -SBX_ETIMEDOUT, -SBX_EPROTO) with a message naming
 * the server; other servers are not affected. MCP calls on one handle run one at a time.
 * The host reaches the gateway through a Unix socket in the state folder on backends with
 * host files, and through the gateway's own stdin and stdout on the others (where the
 * gateway binary is first copied in with the backend's file API); the config's
 * "mcp": {"transport": "socket" | "stream"} overrides the choice.
 *
 * MCP tools also appear in sbx_tools_json as "mcp__<server>__<tool>" (servers of the default
 * agent and session; one that fails to start is left out), and sbx_tool_call_session runs
 * them for the default agent and the given session, through the approval hook (class
 * "exec") and the audit log.
 * ------------------------------------------------------------------------------------- */

/* Declares a server. A declaration of that name already in the same scope: -SBX_EEXIST.
 * A malformed entry: -SBX_EINVAL naming the problem. Nothing starts yet. */
SBX_API int sbx_mcp_add(sbx_workspace *ws, const char *agent_id, const char *session_id,
                        const char *name, const char *config_json);

/* Removes the declaration of exactly that scope (-SBX_ENOENT if there is none) and stops the
 * server processes this handle started from it. */
SBX_API int sbx_mcp_remove(sbx_workspace *ws, const char *agent_id, const char *session_id,
                           const char *name);

/* The servers (agent, session) sees, as a JSON array:
 *   [{"name", "agent": null|"a", "session": null|"s", "config": {...}, "error": "..."}]
 * where "error" is present on an entry that cannot be used (that server only). */
SBX_API int sbx_mcp_list(sbx_workspace *ws, const char *agent_id, const char *session_id,
                         char **json_out);

/* The server's tools (its tools/list, all pages) as a JSON array of MCP Tool objects
 * ({"name", "description", "inputSchema", ...}). Starts the server if needed. */
SBX_API int sbx_mcp_tools(sbx_workspace *ws, const char *agent_id, const char *session_id,
                          const char *name, char **json_out);

/* Calls a tool with args_json (an object; NULL = {}) and returns the MCP CallToolResult
 * ({"content": [...], "isError": bool, ...}). A tool that reports an error is not a failure:
 * the result says "isError": true. */
SBX_API int sbx_mcp_call(sbx_workspace *ws, const char *agent_id, const char *session_id,
                         const char *name, const char *tool, const char *args_json,
                         char **result_json);

/* ---------------------------------------------------------------------------------------
 * Workspace manager
 *
 * Maps the conversations of a multi-user agent service to workspaces: each (user, agent,
 * session) gets the workspace its isolation policy says, opened once, shared by reference,
 * closed after an idle TTL. Several processes may share one base_dir: they coordinate with
 * file locks, and for sandbox backends the second process attaches to the sandbox the first
 * started instead of building another. All functions are thread-safe.
 * ------------------------------------------------------------------------------------- */

typedef struct sbx_manager sbx_manager;

/* Opens a manager described by a JSON object (NULL or "" means "{}"):
 *   workspace         object  the configuration of every workspace (as sbx_workspace_open
 *                             takes it) without "id" and "workdir", which the manager sets.
 *                             Sandbox backends ("ns", "bwrap") are made detached unless the
 *                             backend's object says "detached": false: the sandbox then
 *                             outlives a host process (a restart reattaches by id) and other
 *                             processes attach to it. Not detached, a workspace is held by one
 *                             process at a time (others get -SBX_EBUSY).
 *   base_dir          string  where the manager keeps its locks and records and where host-file
 *                             backends keep workspace directories:
 *                             <base_dir>/<user key>/<name>, the user key a hash of the user id,
 *                             so two users never share a directory. Created (0700) if missing.
 *                             Default $XDG_STATE_HOME/agentsbx, else ~/.local/state/agentsbx
 *   policy            string  "per_agent" (default): one workspace per (user, agent);
 *                             "per_session": per (user, agent, session); "per_user": per user
 *   ttl_s             number  idle seconds before an unheld workspace is closed (default 3600;
 *                             0 = never). Idle counts from the last get, release, exec, process
 *                             spawn or tool call on it. Since 1.6 a detached sandbox also gets it
 *                             as its own "idle_ttl_s" (unless the backend's object sets one): it
 *                             stops by itself when no process holds it, even if no manager
 *                             sweeps this base_dir again.
 *   sweep_interval_s  number  how often the sweeper looks (default 300; 0 = no sweeper thread,
 *                             only sbx_manager_gc closes)
 *   max_workspaces    integer most workspaces open in this manager at once (default 0 = no
 *                             limit); a get beyond it fails with -SBX_EBUSY
 * Release with sbx_manager_free(). */
SBX_API int sbx_manager_open(const char *config_json, sbx_manager **out);

/* Returns in *out the open workspace for a conversation, opening (or attaching to) it on
 * first use; every successful get must be paired with sbx_manager_release. user_id is always
 * required; agent_id unless the policy is per_user; session_id for per_session. Ids may hold
 * any characters (they are hashed, never used as paths); empty ones are refused
 * (-SBX_EINVAL). An explicit workspace_id (1..47 of [A-Za-z0-9_-], or the full id of one of
 * this user's workspaces) wins over the policy, within the user's own space: two users never
 * reach each other's workspace. The derived names are stable across processes and restarts.
 * sbx_workspace_id() of the result is its full id ("<user key>-<name>"), the id that
 * sbx_manager_close, the list and `agentsbx attach` take. Concurrent gets of one workspace open
 * it once; cold opens of different workspaces run in parallel. Do not close the handle with
 * sbx_workspace_close. */
SBX_API int sbx_manager_get(sbx_manager *mgr, const char *user_id, const char *agent_id,
                            const char *session_id, const char *workspace_id,
                            sbx_workspace **out);

/* Opens (or attaches to) a workspace of base_dir by its full id, with the configuration it was
 * first opened with: an operator's way in (`agentsbx attach`), bypassing the user scoping of
 * sbx_manager_get. Released with sbx_manager_release. -SBX_ENOENT for an unknown id. */
SBX_API int sbx_manager_get_by_id(sbx_manager *mgr, const char *id, sbx_workspace **out);

/* Gives back a workspace a get returned; its idle time starts now. */
SBX_API int sbx_manager_release(sbx_manager *mgr, sbx_workspace *ws);

/* Closes a workspace by full id now, and stops its detached sandbox unless another process
 * holds it. -SBX_EBUSY while a caller of this manager still holds it (release first) or
 * another process does; -SBX_ENOENT for an id base_dir does not know. The files stay. */
SBX_API int sbx_manager_close(sbx_manager *mgr, const char *id);

/* Writes a JSON array describing every workspace base_dir knows:
 *   [{"id", "user_key", "name", "backend", "workdir" (or null), "detached", "refs" (holders
 *     in this manager), "held" (open in some process), "running" (its sandbox is up),
 *     "idle_s" (seconds since last use)}, ...]
 * Released with sbx_free(). */
SBX_API int sbx_manager_list(sbx_manager *mgr, char **json_out);

/* Sweeps now: closes this manager's unheld workspaces idle beyond ttl_s, and stops the
 * detached sandboxes no process holds whose last use is older than ttl_s (left behind by a
 * process that died). *closed (may be NULL) counts both. */
SBX_API int sbx_manager_gc(sbx_manager *mgr, int *closed);

/* Stops the sweeper and closes every workspace this manager opened (detached sandboxes keep
 * running for the next process, and are stopped by a later sweep when idle). Handles still
 * held become invalid. NULL is ignored. */
SBX_API void sbx_manager_free(sbx_manager *mgr);

#ifdef __cplusplus
}
#endif

#endif /* AGENTSBX_H */
