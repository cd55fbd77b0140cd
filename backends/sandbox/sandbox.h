/* The host side of a sandbox run by agentsbx-init (src/proto/init_proto.h): parsing the sandbox
 * options of a backend's config object, starting the init directly or through the system
 * bubblewrap, sending it commands and stopping it. The ns and bwrap backends are thin ops
 * tables over this; so will be any backend that reuses the init (the docker fast path). */
#ifndef SBX_UTIL_SANDBOX_H
#define SBX_UTIL_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <agentsbx/backend.h>

#include "init/sandbox.h"
#include "backends/common/runclient.h"

enum sbx_sandbox_mode {
	SBX_SANDBOX_AUTO,         /* direct where it works, else through bubblewrap */
	SBX_SANDBOX_DIRECT,       /* agentsbx-init creates the namespaces itself */
	SBX_SANDBOX_BWRAP,        /* /usr/bin/bwrap creates them and runs agentsbx-init */
};

#define SBX_BWRAP_PATH "/usr/bin/bwrap"
/* A detached sandbox's idle TTL unless its config says otherwise: the manager's default. */
#define SBX_SANDBOX_IDLE_TTL_MS (3600 * 1000LL)

/* Each protected path is a mount in the sandbox: more than this is refused, naming the key
 * (256 start in about 0.1 s directly and 0.4 s through bubblewrap on a 2-vCPU VM). */
#define SBX_PROTECTED_PATHS_MAX 256

/* The backend's config object ("ns": {...} or "bwrap": {...}):
 *   mode             "auto" | "direct" | "bwrap"   (ns only)
 *   rootfs           string   directory used read-only as the root instead of the host's
 *   binds            array    [{"source": host path, "dest": path inside, "writable": false}]
 *   protected_paths  array    paths under /workspace kept read-only (replaces the defaults);
 *                             at most SBX_PROTECTED_PATHS_MAX
 *   landlock         bool     default true
 *   hostname         string   default "agentsbx"
 *   detached         bool     default false: the sandbox outlives the process that opened it;
 *                             a later open of the same workdir (any process of the same uid)
 *                             attaches to it, and closing only detaches (attach.h)
 *   idle_ttl_s       number   a detached sandbox stops itself once no host has held it for
 *                             this many seconds (helpers/init/server.c); default 3600, 0 =
 *                             never (the workspace manager sets its ttl_s)
 *   subid_user       string   default "agentsbx": as root, the sandbox's ids are this user's
 *                             subordinate range (/etc/subuid, /etc/subgid), else a fixed one
 *   root_inside      string   "unprivileged" (default) | "allow-host-root": as root, where the
 *                             workdir cannot be idmapped, refuse, or run as host root with a
 *                             warning in the audit log
 *   workdir_mount    string   "/workspace" (default) | "host": the workdir is also mounted at
 *                             its own host path, which becomes the root commands see (cwd,
 *                             $PWD, sbx_workspace_root), so paths baked into what they build
 *                             hold on the host too */
struct sbx_sandbox_options {
	enum sbx_sandbox_mode mode;
	char *rootfs;
	struct sbx_bind *binds;
	size_t n_binds;
	char **protected_paths;       /* NULL-terminated, or NULL for the defaults */
	bool landlock;
	char *hostname;
	bool detached;
	int64_t idle_ttl_ms;          /* detached: the init's idle TTL (0: none) */
	bool idle_ttl_set;
	bool prestart;                /* direct mode: keep the next sandbox half-built when the
	                                 process opens them one after another (default on) */
	bool keeper;                  /* and ask the per-user keeper for one a process of its own
	                                 has not got (keeper.h; prestart true, the default) */
	char *subid_user;             /* as root: whose /etc/subuid range the sandbox runs as
	                                 (NULL: SBX_IDMAP_DEFAULT_USER; util/idmap.h) */
	bool allow_host_root;         /* root_inside "allow-host-root": where the workdir cannot be
	                                 idmapped, run as host root (audited) instead of refusing */
	bool workdir_at_host;         /* workdir_mount "host" */
};

int sbx_sandbox_parse_options(const char *backend, const char *options_json, bool allow_mode,
                              struct sbx_sandbox_options *o);
void sbx_sandbox_free_options(struct sbx_sandbox_options *o);

/* The ns and bwrap tables (backends/ns, backends/bwrap), built on this archive. */
extern const sbx_backend_ops sbx_backend_ns;
extern const sbx_backend_ops sbx_backend_bwrap;

/* `agentsbx doctor`'s users line for a config whose backend is named backend: 1 when that is
 * not a table of this archive (its sandboxes have no such users); else 0, with line (the
 * mapping a sandbox of this process gets and whether dir can be idmapped) and *ok (false:
 * such a sandbox would be refused), or negative when the options are invalid. */
int sbx_sandbox_describe_users(const char *backend, const char *options_json, const char *dir,
                               char *line, size_t len, bool *ok);

struct sbx_sandbox;

/* Starts the sandbox for a workspace and waits until its init is ready. mode is DIRECT or
 * BWRAP (AUTO is resolved by the caller with sbx_sandbox_pick_mode). who prefixes messages. */
int sbx_sandbox_start(const char *who, const sbx_backend_config *cfg,
                      const struct sbx_sandbox_options *o, enum sbx_sandbox_mode mode,
                      struct sbx_sandbox **out);
/* Starts a command in it; the process handle is a runclient (sbx_runclient_* ops). */
int sbx_sandbox_spawn(struct sbx_sandbox *sb, const sbx_backend_spawn *req, void **proc,
                      int *wait_fd);
/* The same on the control channel of an init a backend started itself (the docker fast
 * path): sends SBX_INIT_SPAWN (init_proto.h) and returns the runclient, tracked in live
 * when live is not NULL. */
int sbx_init_channel_spawn(int ctl, const char *who, const sbx_backend_spawn *req,
                           const sbx_backend_limits *limits, struct sbx_runclient_set *live,
                           void **proc, int *wait_fd);
/* Kills every command, stops the init (and with it everything in the sandbox) and frees sb.
 * When it returns no process of the sandbox is left. */
void sbx_sandbox_stop(struct sbx_sandbox *sb);
/* Stops and starts it again with the same settings (reset). */
int sbx_sandbox_restart(struct sbx_sandbox *sb);
/* A new network policy of the same mode (mode "allowlist": the proxy's lists). */
int sbx_sandbox_set_network(struct sbx_sandbox *sb, const char *network_json);

/* What the sandbox got: SBX_INIT_HAS_* flags, and the note on a missing cgroup. */
uint32_t sbx_sandbox_flags(const struct sbx_sandbox *sb);
const char *sbx_sandbox_cgroup_note(const struct sbx_sandbox *sb);
enum sbx_sandbox_mode sbx_sandbox_mode_of(const struct sbx_sandbox *sb);

/* Can this host run a sandbox in mode? Actually starts and stops one. 0 if yes; detail says
 * how or why not. */
int sbx_sandbox_probe(enum sbx_sandbox_mode mode, char *detail, size_t len);
/* AUTO → DIRECT if it works here, else BWRAP if that works (probed once per process). */
int sbx_sandbox_pick_mode(enum sbx_sandbox_mode wanted, enum sbx_sandbox_mode *mode,
                          char *detail, size_t len);

/* The whole backend side for sandbox backends: ns and bwrap are ops tables over these. The
 * state is a workspace whose commands run in one resident sandbox. `allow_mode` says whether
 * the config object may choose the mode ("ns") or it is always bubblewrap ("bwrap"). */
int sbx_sandbox_backend_open(const char *name, bool allow_mode, const sbx_backend_config *cfg,
                             void **state);
int sbx_sandbox_backend_close(void *state);
int sbx_sandbox_backend_reset(void *state);
const char *sbx_sandbox_backend_root(void *state);
const char *sbx_sandbox_backend_host_dir(void *state);
int sbx_sandbox_backend_spawn(void *state, const sbx_backend_spawn *req, void **proc,
                              int *wait_fd);
int sbx_sandbox_backend_set_network(void *state, const char *network_json);
/* limits.disk_bytes: the capped workspace's root for the core (files_root_fd), else -1. */
int sbx_sandbox_backend_files_root(void *state);
/* The proxy settings of mode "allowlist" (backends/common/netproxy.h), else NULL. */
const char *const *sbx_sandbox_backend_env(void *state);

/* The paths the sandbox keeps read-only for commands (the configured list or the default). */
const char *const *sbx_sandbox_backend_protected(void *state);
/* The places besides /workspace commands may write: the sandbox's private file systems and
 * the config's writable binds (writable_paths of backend.h). */
const char *const *sbx_sandbox_backend_writable(void *state);
/* The git guard's read-only binds in the running sandbox (warden.h). */
int sbx_sandbox_backend_protect_now(void *state, const char *const *rel_paths);

/* SBX_BACKEND_CAP_DETACHED: a detached sandbox of workdir, seen and stopped from any
 * process of the same user (attach.h). */
int sbx_sandbox_backend_detached_running(const char *workdir, int *running);
int sbx_sandbox_backend_detached_stop(const char *workdir, const char *id, int *stopped);

/* What every table built on this archive can do. */
#define SBX_SANDBOX_CAPS                                                                      \
	(SBX_BACKEND_CAP_HOST_FILES | SBX_BACKEND_CAP_ISOLATED | SBX_BACKEND_CAP_NETWORK_NONE |  \
	 SBX_BACKEND_CAP_NETWORK_HOST | SBX_BACKEND_CAP_NETWORK_ALLOWLIST |                      \
	 SBX_BACKEND_CAP_DISK_LIMITS | SBX_BACKEND_CAP_DETACHED | SBX_BACKEND_CAP_HELPER_BINDS |  \
	 SBX_BACKEND_CAP_PTY)
#endif
