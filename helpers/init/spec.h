/* The sandbox spec agentsbx-init reads from its spec fd, as JSON:
 *   id                  string   workspace id (names the cgroup)
 *   hostname            string   the sandbox's hostname
 *   network             "none" | "allowlist" | "host"
 *   proxy_port          integer  mode "allowlist": the loopback port of the proxy bridge
 *   rootfs              string   a root directory to use instead of the host's /usr, ...
 *   binds               array    [{"source": host path, "dest": path inside, "writable": bool}]
 *                                ("workspace_source": a path relative to the workspace
 *                                instead of "source"; with prestart, "state_source": one
 *                                relative to the state folder its activation brings)
 *   protected           array    paths under /workspace kept read-only (default list if absent)
 *   landlock            bool     restrict writes with Landlock where the kernel has it
 *   workspace_readonly  bool
 *   memory_bytes, pids  integer  cgroup limits (0 / absent = none)
 *   workspace_bytes     integer  the workspace is a tmpfs of this size, not the host directory
 *                                (its state folder excepted), handed to the host after READY
 *   tmp_bytes           integer  the size of /tmp and /dev/shm (0 / absent = uncapped)
 *   tmp_required        bool     the config asked for that size (under bubblewrap, fail rather
 *                                than keep bubblewrap's uncapped /tmp)
 *   seccomp_program     bool     fd 6 holds the seccomp program to load
 *   prestart            bool     no workspace yet: build the rest, then wait for ACTIVATE
 *   users               object   {"uid", "gid", "count"}: the host range the sandbox's ids
 *                                0..count-1 map to (the host is root); the workspace is
 *                                then a detached idmapped mount on fd 8 (init_proto.h)
 *   state_mount         bool     fd 9 holds the host's state folder as a detached mount
 *   binds[].tree_fd     integer  the fd (from 10) of a detached mount to attach at dest
 *   host_uid            integer  a uid allowed to connect to a detached sandbox besides ours
 *   idle_ttl_ms         integer  a detached sandbox stops itself once no client has been
 *                                connected for this long (0 / absent = never; server.c)
 *   refuse_setid        bool     the host is root, so what the sandbox creates is root's on
 *                                the host: no set-user-ID or set-group-ID modes
 *                                (sbx_seccomp_refuse_setid)
 * Unknown keys are refused: the backend and the init are built together. */
#ifndef SBX_INIT_SPEC_H
#define SBX_INIT_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sandbox.h"

struct sbx_init_spec {
	char *id;
	char *hostname;
	bool share_network;
	uint16_t proxy_port;          /* 0: no proxy bridge */
	char *rootfs;
	struct sbx_bind *binds;
	size_t n_binds;
	char **protected_paths;       /* NULL-terminated, or NULL for the defaults */
	bool landlock;
	bool workspace_readonly;
	uint64_t memory_bytes;
	uint64_t pids;
	uint64_t workspace_bytes;     /* 0: the host directory is the workspace */
	uint64_t tmp_bytes;           /* 0: /tmp and /dev/shm uncapped */
	bool tmp_required;
	bool seccomp_program;
	bool prestart;
	bool has_host_uid;            /* "host_uid": a uid allowed to connect besides ours */
	uint64_t host_uid;
	bool has_users;               /* "users": a host range, not the caller's own ids */
	struct sbx_id_range users;
	bool state_mount;
	size_t state_binds;           /* binds with "state_source": ACTIVATE brings their sources */
	uint64_t idle_ttl_ms;         /* 0: a detached sandbox runs until SHUTDOWN */
	bool refuse_setid;
	char *workspace_view;         /* "workspace_view": also mounted there, the cwd */
};

/* Parses text; on failure returns -1 with the reason in err. */
int sbx_init_spec_parse(const char *text, size_t len, struct sbx_init_spec *spec, char *err,
                        size_t errlen);
void sbx_init_spec_free(struct sbx_init_spec *spec);

#endif
