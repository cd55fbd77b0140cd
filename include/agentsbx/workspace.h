/*
 * libagentsbx — workspaces: open, close, reset, network policy, approval hook and audit log.
 *
 * Part of the public API; <agentsbx/agentsbx.h> includes every part. The conventions in
 * <agentsbx/common.h> (return codes, sbx_last_error, sbx_free, option structs) hold here.
 */
#ifndef AGENTSBX_WORKSPACE_H
#define AGENTSBX_WORKSPACE_H

#include <agentsbx/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------
 * Workspaces
 * ------------------------------------------------------------------------------------- */

/* Opens a workspace described by a JSON object (NULL or "" means "{}"); docs/config.md lists
 * every key with its type, default, range and the version it came in:
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

/* An sbx_open_opts with size set and every option at its default (since 1.6). */
#define SBX_OPEN_OPTS_INIT SBX_OPTS_INIT_(sbx_open_opts)

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
 *               "moved_to": "<state folder>/quarantine/20261201T120000Z-41-1/a/.git/hooks/"
 *                           "pre-commit",
 *               "when": "exec", "time": 1796126400}]}
 * ("moved_to": since 1.7 the copy's host path, in the state folder outside the workdir.)
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
 * host directory for "local" and, since 1.7, for a sandbox with "workdir_mount": "host").
 * Since 1.7 the file calls, a command's cwd and the tools also take an absolute path under
 * the host's name of the workdir. Valid while the handle is open. */
SBX_API const char *sbx_workspace_root(const sbx_workspace *ws);

/* The name of the workspace's backend. Valid while the handle is open. */
SBX_API const char *sbx_workspace_backend(const sbx_workspace *ws);

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

#ifdef __cplusplus
}
#endif

#endif /* AGENTSBX_WORKSPACE_H */
