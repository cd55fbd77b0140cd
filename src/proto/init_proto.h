/* Wire protocol between a sandbox backend (ns, bwrap) and agentsbx-init, the sandbox's
 * resident init.
 *
 * The backend starts `agentsbx-init --proto 1 --mode direct|inside` with
 *   fd 3: one end of a SOCK_SEQPACKET socketpair, the control channel;
 *   fd 4: a memfd holding the sandbox spec as JSON (see init/spec.c for the keys);
 *   fd 5: (direct mode) an O_PATH fd of the host workspace directory (absent when the spec
 *         says "prestart": it comes with SBX_INIT_ACTIVATE);
 *   fd 6: (direct mode, optional) the seccomp program, built once by the library
 *         (sbx_seccomp_export); without it the init builds the filter itself;
 *   fd 7: (network mode "allowlist") a bridge channel to the workspace's proxy
 *         (proxy_proto.h): the init forks a bridge that listens on the spec's proxy_port on
 *         the sandbox's loopback and hands every connection over through it;
 *   fd 8: (spec key "users") the workspace as a detached, idmapped clone of the directory,
 *         which the init attaches at /workspace as it is (fd 5 stays the directory as the
 *         host sees it: what the tidier tidies through);
 *   fd 9: (spec key "state_mount") a detached mount of the host's state folder, as the
 *         host sees it (no idmap): a capped workspace binds it in (helpers/init/quota.c);
 *   fds from 10: (spec key "users") detached idmapped mounts for binds whose spec entry
 *         names one ("tree_fd"), attached instead of binding their source.
 * With the spec key "users" (the host is root: util/idmap.h) the sandbox's ids 0..count-1
 * are the host range it gives. In "inside" mode fds 8 and up pass through bubblewrap (it
 * closes none it does not know), and the init attaches them in a user and mount namespace
 * of its own (quota.c).
 * In "direct" mode the init creates the namespaces and the root itself. In "inside" mode
 * something else (bubblewrap) already did, and the init only hardens itself and serves.
 *
 * Once the sandbox is ready the init sends one SBX_INIT_READY message, or one SBX_INIT_ERROR
 * with the reason and exits. Then each SBX_INIT_SPAWN message the backend sends starts one
 * command: the message carries five fds (SCM_RIGHTS): the command's stdin, stdout, stderr,
 * the runner's end of a new SOCK_SEQPACKET socketpair (spoken to as run_proto.h says), and a
 * memfd with the payload — or, for a payload of at most SBX_INIT_INLINE_MAX bytes, only the
 * first four, the payload following the header in the message itself. The payload is NUL-terminated strings: cwd, argc arguments, envc
 * environment entries, nlimits "name=value" runner limits (names as in runner.h; since 1.7
 * also "pty=ROWSxCOLS", the runner's terminal of run_proto.h; and "channel=1": the host
 * takes the channel a kept runner may offer with its report, run_proto.h, and may send the
 * next request there instead of here).
 * When the control channel closes, the init exits, and with it every process of the sandbox.
 */
#ifndef SBX_INIT_PROTO_H
#define SBX_INIT_PROTO_H

#include <stdint.h>

#define SBX_INIT_PROTO_VERSION 1
#define SBX_INIT_CONTROL_FD 3
#define SBX_INIT_SPEC_FD 4
#define SBX_INIT_WORKSPACE_FD 5
#define SBX_INIT_SECCOMP_FD 6
#define SBX_INIT_BRIDGE_FD 7
#define SBX_INIT_WORKSPACE_TREE_FD 8
#define SBX_INIT_STATE_FD 9
#define SBX_INIT_FIRST_TREE_FD 10
#define SBX_INIT_MAX_TREES 32

#define SBX_INIT_SPAWN_FDS 5
#define SBX_INIT_PAYLOAD_MAX (8u << 20)
#define SBX_INIT_INLINE_MAX (64u << 10)

enum sbx_init_kind {
	SBX_INIT_READY = 1,
	SBX_INIT_ERROR = 2,
	SBX_INIT_SPAWN = 3,
};

/* Detached sandboxes (helpers/init/listen.c). Both messages are a struct sbx_init_spawn header
 * whose other fields are zero.
 *  SBX_INIT_LISTEN    host → init, on the channel it started the init with, once, right after
 *                     READY; carries one fd: a bound, not yet listening SOCK_SEQPACKET Unix
 *                     socket. The init listens on it, answers with the same header (kind
 *                     SBX_INIT_LISTEN, no fds), and serves every connection as it serves
 *                     the channel (SPAWN and SHUTDOWN; each new connection first receives a
 *                     copy of the READY message); the sandbox then outlives the channel. The
 *                     init itself must be started with "--detached" (first argument), so that
 *                     it neither watches nor dies with the host that started it.
 *  SBX_INIT_SHUTDOWN  any client → init: stop the sandbox now (no fds). */
#define SBX_INIT_LISTEN   0x10
#define SBX_INIT_SHUTDOWN 0x11

/* Pre-started sandboxes (spec key "prestart": true): the init is started without fd 5, builds
 * everything but the workspace and waits.
 *  SBX_INIT_ACTIVATE  host → init, once: a struct sbx_init_spawn header whose other fields are
 *                     zero, carrying these fds, in this order: the O_PATH workspace directory
 *                     (as fd 5 would have; with "users" its idmapped mount, as fd 8); the
 *                     state folder's mount (as fd 9 would have), when the spec says
 *                     "state_mount"; and one for each bind whose spec entry names a
 *                     "state_source" (a path relative to the workspace's state folder: the
 *                     private HOME, MCP's run folder), in the spec's order: the source (O_PATH,
 *                     opened without following a link), or with "users" its detached mount
 *                     (idmapped, as a tree_fd's). So one spare serves workspaces of any
 *                     workdir and state folder. At most SBX_INIT_ACTIVATE_FDS in all. The init
 *                     binds them, finishes, hardens and answers READY or ERROR as an ordinary
 *                     start does. If the channel closes first, the init exits. */
#define SBX_INIT_ACTIVATE 0x12
#define SBX_INIT_ACTIVATE_FDS 5

/* A pre-started sandbox is no child of the host: its first process forks and exits at once
 * (the host reaps it), so an idle spare is not among the host's children, and the second
 * sends, as the very first message on the channel,
 *  SBX_INIT_OUTER     outer → host: a struct sbx_init_spawn header whose other fields are
 *                     zero, carrying one fd: a pidfd of the outer process, by which the host
 *                     waits for the sandbox's end (and kills it if it must).
 * It still dies with the host. A spare that gets no ACTIVATE within SBX_INIT_PRESTART_IDLE_MS
 * ends by itself. */
#define SBX_INIT_OUTER 0x13

/* A workspace of the sandbox's own (spec key "workspace_bytes": a size-capped tmpfs):
 *  SBX_INIT_FILES_ROOT  init → host, right after READY: a struct sbx_init_spawn header whose
 *                       other fields are zero, carrying one fd: a directory fd of the
 *                       workspace's file system (a clone of its mount without the sandbox's
 *                       protections) for the host's file operations (helpers/init/quota.c). */
#define SBX_INIT_FILES_ROOT 0x14
#define SBX_INIT_PRESTART_IDLE_MS 35000

/* SBX_INIT_READY flags: what the sandbox got (what it could not get is not an error). */
#define SBX_INIT_HAS_LANDLOCK (1u << 0)
#define SBX_INIT_HAS_CGROUP   (1u << 1)

struct sbx_init_ready {
	uint32_t kind;                /* SBX_INIT_READY */
	uint32_t flags;
	int32_t init_pid;             /* the init's pid as the host sees it */
	char cgroup_note[244];        /* why there is no cgroup, when there is none */
};

struct sbx_init_error {
	uint32_t kind;                /* SBX_INIT_ERROR */
	char message[508];
};

struct sbx_init_spawn {
	uint32_t kind;                /* SBX_INIT_SPAWN */
	uint32_t argc;
	uint32_t envc;
	uint32_t nlimits;
	uint32_t payload_len;
};

#endif
