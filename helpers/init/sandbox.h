/* The pieces agentsbx-init assembles a sandbox from, in the order it calls them (minijail's
 * order): namespaces → mounts → pivot_root → network → cgroup → capabilities → no_new_privs →
 * Landlock → seccomp → serve. Each piece is one file; each function returns 0 or a negative
 * errno-style code and writes a one-line reason into err (errlen bytes) on failure. None of them
 * prints or exits: main.c decides what a failure means. */
#ifndef SBX_INIT_SANDBOX_H
#define SBX_INIT_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/journal.h"

#define SBX_SANDBOX_ROOT "/workspace"
#define SBX_STATE_DIR ".agentsbx"     /* the library's state folder inside the workspace */

/* warden.c ------------------------------------------------------------------------------ */

/* "agentsbx-init --warden [VIEW]": read-only binds in a running sandbox for the git guard
 * (fds 3 and 4, see warden.c), beneath /workspace and, with workdir_mount "host", the same
 * beneath VIEW. Returns the exit code. */
int sbx_warden_main(const char *view);

/* userns.c ------------------------------------------------------------------------------ */

/* unshare(CLONE_NEWUSER | extra_flags) and map outer_uid/outer_gid to the same ids inside
 * (setgroups denied first, as the kernel requires for an unprivileged gid_map). As real root
 * the map is 0→0. extra_flags: CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWNET|CLONE_NEWIPC|
 * CLONE_NEWUTS|CLONE_NEWCGROUP as wanted. After it, the caller forks: the child is PID 1 of
 * the new PID namespace. */
int sbx_userns_enter(uid_t outer_uid, gid_t outer_gid, int extra_flags, char *err, size_t errlen);

/* The same mapping our uid and gid to 0 inside. Inside bubblewrap (which dropped
 * CAP_SETFCAP, without which no namespace may map its parent's 0), the init starts as the
 * host uid itself and becomes uid 0 here (init_proto.h, "users"). */
int sbx_userns_enter_as_root(int extra_flags, char *err, size_t errlen);

/* A host range the sandbox's ids 0..count-1 map to (the host is root: src/util/idmap.h). */
struct sbx_id_range {
	uint32_t uid, gid;        /* host ids of the sandbox's 0 */
	uint32_t count;
};

/* The same for a process that is root on the host: drops its supplementary groups, unshares,
 * has a child it forked before (still in the host's user namespace, where only it may map
 * other ids) write the range's maps, and becomes uid and gid 0 inside — range->uid and
 * range->gid on the host, whose root it no longer is. */
int sbx_userns_enter_range(const struct sbx_id_range *range, int extra_flags, char *err,
                           size_t errlen);

/* A root process becomes the unprivileged host user uid/gid, without supplementary groups,
 * for good (bubblewrap is then started unprivileged). */
int sbx_drop_to_host_ids(uint32_t uid, uint32_t gid, char *err, size_t errlen);

/* rootfs.c ------------------------------------------------------------------------------ */

struct sbx_bind {
	const char *source;       /* host path, or relative to the workspace (in_workspace) */
	const char *dest;         /* absolute path inside */
	bool writable;
	bool in_workspace;        /* source names something inside the workspace: resolved
	                             beneath it, once the workspace is known */
	bool in_state;            /* source names something in the workspace's state folder,
	                             relative to it: a spare's, whose activation brings the
	                             source itself (init_proto.h, SBX_INIT_ACTIVATE) as tree_fd
	                             or source_fd */
	int tree_fd;              /* > 2: a detached (idmapped) mount of source, attached at dest
	                             instead of a bind of source (init_proto.h); 0: none */
	int source_fd;            /* > 2, in_state: the source as the host opened it, reopened
	                             in our mount namespace like workspace_fd; 0: none */
};

struct sbx_rootfs_spec {
	int workspace_fd;         /* O_PATH fd of the host workspace directory (bound rw at
	                             /workspace through /proc/self/fd, never by path string).
	                             May be opened before the mount namespace was created: the
	                             kernel binds only mounts of our own namespace, so it is then
	                             reopened by the path the kernel reports for it and refused
	                             unless it is the same directory (device and inode). Not
	                             closed by the build. */
	const char *rootfs;       /* a caller-given root directory to bind read-only instead of
	                             the host's /usr, /bin, ..., or NULL */
	const struct sbx_bind *binds;   /* extra binds from the config */
	size_t n_binds;
	const char *const *protected_paths; /* relative to /workspace: kept read-only, and where
	                                       missing (but their parent exists) made impossible
	                                       to create with an empty read-only placeholder in
	                                       the host directory, which the library normally made
	                                       beforehand (a directory when the entry ends in '/',
	                                       else a file); links are never
	                                       followed, but covered; NULL-terminated */
	const char *hostname;     /* set in the new UTS namespace */
	bool workspace_readonly;
	uint64_t workspace_bytes; /* not 0: /workspace is a tmpfs of this size instead of the host
	                             directory (init/quota.h), whose state folder is bound in */
	uint64_t tmp_bytes;       /* not 0: the size of /tmp and /dev/shm */
	int *files_root;          /* with workspace_bytes: receives the host's fd of the workspace
	                             (sbx_quota_make_workspace); the caller closes it */
	bool workspace_tree;      /* workspace_fd is a detached, idmapped clone of the workspace
	                             (init_proto.h, "users"): attached as it is, not reopened */
	int state_fd;             /* > 2, with workspace_bytes: the host's state folder as a
	                             detached mount, bound into the capped workspace instead of
	                             the one below workspace_fd; 0: none */
	const char *workspace_view; /* not NULL: the workspace is bound here too and this is the
	                               cwd (workdir_mount "host"; rootfs_layout.c) */
};

/* Builds the sandbox's root in the current (new) mount namespace and pivots into it: a fresh
 * tmpfs root; read-only /usr, /bin, /sbin, /lib* (or spec->rootfs); an allow-listed /etc (no
 * shadow, gshadow, ssh keys or other host secrets); /workspace read-write; private /tmp; a new
 * /proc (the caller is PID 1 of a new PID namespace); a minimal fresh /dev (null, zero, full,
 * random, urandom, tty, pts with ptmx, shm, fd/stdin/stdout/stderr links); protected paths;
 * pivot_root with the old root detached; cwd "/workspace". All binds nosuid,nodev except
 * /dev's nodes. */
int sbx_rootfs_build(const struct sbx_rootfs_spec *spec, char *err, size_t errlen);

/* The same in two steps, for a sandbox started before its workspace is known: prepare builds
 * everything but the workspace (ignoring spec->workspace_fd) and may run long before finish
 * binds workspace_fd, protects its paths, seals the root and pivots into it. The stage is
 * freed by sbx_rootfs_stage_free after finish, whatever either returned. */
struct sbx_rootfs_stage;
int sbx_rootfs_prepare(const struct sbx_rootfs_spec *spec, struct sbx_rootfs_stage **out,
                       char *err, size_t errlen);
int sbx_rootfs_finish(const struct sbx_rootfs_spec *spec, struct sbx_rootfs_stage *st,
                      int workspace_fd, char *err, size_t errlen);
void sbx_rootfs_stage_free(struct sbx_rootfs_stage *st);

/* policy.c: the host directories a sandbox sees read-only, and the /etc allow-list. */
extern const char *const sbx_system_dirs[];
/* "opt": the host directory whose entries (not itself) are bound read-only (rootfs.c). */
extern const char *const sbx_opt_dir;
extern const char *const sbx_etc_allowlist[];
/* The layout's writable places ("/tmp", "/dev/shm", "/run", "/var/tmp", "/var/cache"),
 * NULL-terminated, at most SBX_LAYOUT_WRITABLE_MAX of them. Landlock leaves exactly these
 * writable besides the workspace and the writable binds (main.c), and the host side tells the
 * model the same list (backends/sandbox/ops.c, writable_paths), so the two cannot drift. */
#define SBX_LAYOUT_WRITABLE_MAX 8
extern const char *const sbx_layout_writable[];

/* The default protected paths (".git/hooks/", ".git/config", ".agentsbx/", shell rc files,
 * ".mcp.json"); policy.c says why each. */
extern const char *const sbx_default_protected_paths[];
/* Whether a missing protected entry the init makes itself gets an empty directory as its
 * placeholder (policy.c). */
bool sbx_placeholder_is_dir(const char *entry);
/* What the library makes on the host for a missing protected entry (policy.c). */
enum sbx_placeholder_kind sbx_placeholder_kind_of(const char *entry);

/* net.c --------------------------------------------------------------------------------- */

/* Brings up "lo" (127.0.0.1/8, ::1) in the current network namespace, with libnl-route-3. */
int sbx_net_loopback_up(char *err, size_t errlen);

/* bridge.c (agentsbx-init only) -------------------------------------------------------- */

/* Listens on 127.0.0.1:port (and [::1]:port where IPv6 is up) in the sandbox's network
 * namespace: the loopback end of the allowlist proxy. fds[1] is -1 without IPv6. */
int sbx_bridge_listen(uint16_t port, int fds[2], char *err, size_t errlen);
/* Forks the bridge process: it accepts on the listeners and hands each connection to the
 * proxy over channel (src/proto/proxy_proto.h). The child first closes close_fds[0..n). Returns
 * the child's pid or a negative errno. */
pid_t sbx_bridge_start(const int listeners[2], int channel, const int *close_fds, size_t n,
                       char *err, size_t errlen);

/* cgroup.c ------------------------------------------------------------------------------ */

struct sbx_cgroup_limits {
	uint64_t memory_bytes;    /* 0 = not set */
	uint64_t pids;            /* 0 = not set */
};

/* Creates the workspace's cgroup (v2 if the host has a delegated v2 hierarchy, else the v1
 * memory and pids controllers) named after id, applies the limits and moves pid into it.
 * Returns 0, -ENOTSUP (no usable hierarchy: *why says why) or another negative errno. */
int sbx_cgroup_setup(const char *id, pid_t pid, const struct sbx_cgroup_limits *lim,
                     char *err, size_t errlen);
/* Removes the cgroup directories made by sbx_cgroup_setup (after every process has left). */
void sbx_cgroup_cleanup(const char *id);
/* The backstop for a sandbox whose tidier was killed too: removes every workspace cgroup
 * below our own "agentsbx" parents that holds no process (and the parents left empty).
 * Returns how many it removed. */
int sbx_cgroup_sweep(void);

/* harden.c, caps.c, landlock.c, seccomp.c ------------------------------------------------ */

struct sbx_harden_spec {
	const char *const *writable_paths;  /* Landlock: where writes are allowed (absolute paths
	                                       inside the sandbox), NULL-terminated */
	bool landlock;                      /* apply Landlock when the kernel has it */
	int seccomp_program_fd;             /* > 2: load this program (sbx_seccomp_export) instead
	                                       of building the filter here */
	bool refuse_setid;                  /* the host is root: no set-id files either
	                                       (sbx_seccomp_refuse_setid) */
};

/* Drops every capability: bounding set, then effective, permitted, inheritable and ambient
 * (libcap), and keeps them dropped across execve (securebits where allowed). */
int sbx_caps_drop_all(char *err, size_t errlen);

/* Restricts writes to spec->writable_paths (plus /dev nodes) with Landlock, probing the
 * kernel's ABI version. No Landlock in the kernel: returns 0 and sets *applied = false. */
int sbx_landlock_apply(const struct sbx_harden_spec *spec, bool *applied, char *err,
                       size_t errlen);

/* Loads the seccomp baseline (seccomp.c, seccomp_table.c): an allow-list at least as strict
 * as Docker's default profile; refused calls fail with EPERM, clone3 and calls newer than the
 * table with ENOSYS, argument rules on socket (unix, inet, inet6, netlink route), personality,
 * clone, mknod(at) and ioctl; the 32-bit tables refused whole. Requires no_new_privs (or
 * CAP_SYS_ADMIN). */
int sbx_seccomp_apply(char *err, size_t errlen);

/* Writes the same filter as a BPF program to fd, so that a process that starts many sandboxes
 * builds it once; sbx_seccomp_load_program loads such a program (no_new_privs first). */
int sbx_seccomp_export(int fd, char *err, size_t errlen);
int sbx_seccomp_load_program(int fd, char *err, size_t errlen);

/* sbx_seccomp_apply with deny_errno in place of EPERM and newer_errno in place of ENOSYS for
 * the calls newer than the table (clone3 keeps ENOSYS). For tests: errnos no kernel check
 * returns prove that the filter answered, not a permission check or a missing call. */
int sbx_seccomp_apply_errno(int deny_errno, int newer_errno, char *err, size_t errlen);

/* Stacks a second filter on the baseline for a sandbox whose files land on the host as
 * root's (the host is root): chmod, fchmod, fchmodat, fchmodat2, creat, open, openat, mknod
 * and mknodat with S_ISUID or S_ISGID in their mode answer EPERM, openat2 ENOSYS
 * (seccomp_setid.c). Requires no_new_privs. */
int sbx_seccomp_refuse_setid(char *err, size_t errlen);

/* The kernel's Landlock ABI version, 0 when it has no Landlock. */
int sbx_landlock_abi(void);

/* The whole sequence after the mounts: caps → no_new_privs → Landlock → seccomp. */
int sbx_harden_apply(const struct sbx_harden_spec *spec, char *err, size_t errlen);

#endif
