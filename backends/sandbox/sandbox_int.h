/* What the files of the sandbox backend share (backends/sandbox): the state of one running
 * sandbox and the steps one file makes for another. Not for the rest of the library, which
 * sees sandbox.h. */
#ifndef SBX_BACKENDS_SANDBOX_INT_H
#define SBX_BACKENDS_SANDBOX_INT_H

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "proto/init_proto.h"
#include "proto/proxy_proto.h"
#include "internal.h"
#include "util/auditlog.h"
#include "util/fdlimit.h"
#include "util/fdpass.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/forksafe.h"
#include "util/fs.h"
#include "util/idmap.h"
#include "util/journal.h"
#include "util/json.h"
#include "backends/common/launch.h"
#include "backends/common/netproxy.h"
#include "util/path.h"
#include "backends/sandbox/quota.h"
#include "backends/sandbox/sandbox.h"
#include "backends/sandbox/attach.h"
#include "backends/sandbox/spare.h"
#include "backends/sandbox/warden.h"

#define INIT_NAME "agentsbx-init"
#define READY_TIMEOUT_MS 15000
#define STOP_TIMEOUT_MS 5000
#define BWRAP_INIT_PATH "/run/agentsbx/init"

struct sbx_sandbox {
	const char *who;
	enum sbx_sandbox_mode mode;
	sbx_backend_config cfg;       /* copied strings below keep it valid */
	char *workdir;
	char *id;
	char *network_mode;
	struct sbx_netproxy *proxy;   /* mode "allowlist": the workspace's proxy, kept across
	                                 restarts (a reset changes the sandbox, not the policy) */
	int root_fd;                  /* O_PATH fd of workdir, for paths beneath it */
	char *placeholders;           /* the journal note of the placeholders made (see below) */
	const struct sbx_sandbox_options *opts; /* owned by the backend, outlives sb */
	int ctl;
	pid_t pid;                    /* the outer init process (direct) or bwrap, our child */
	int pidfd;                    /* instead, for a sandbox that was a spare: a pidfd of its
	                                 outer process, which is no child of ours */
	int outer_pidfd;              /* direct mode: a pidfd of the outer process, from READY's
	                                 init_pid, opened while READY says it lives: the warden
	                                 joins the sandbox's namespaces through it (a pid alone
	                                 could be reused once the tidier reaps the outer) */
	int init_pidfd;               /* direct mode: a pidfd of the init (the outer's child), from
	                                 READY too: it reads as ended only once the kernel has
	                                 reaped every process of the sandbox's PID namespace */
	uint32_t flags;
	char cgroup_note[244];
	struct sbx_runclient_set live;
	int files_root;               /* limits.disk_bytes: the init's fd of the capped workspace
	                                 (quota.h), replaced at every start; else -1 */
	struct sbx_idmap idmap;       /* the caller is root: the host range the sandbox runs as
	                                 (util/idmap.h); off for anyone else, or after the
	                                 root_inside fallback */
	int ws_tree;                  /* the idmapped workspace made when the users were decided,
	                                 for the first start; -1 once taken */
	char *state_dir;              /* the state folder outside the workdir (cfg's, copied), or
	                                 NULL: binds from it are relative to it for a spare */
};

struct argv_builder {
	const char **v;
	size_t n, cap;
	bool oom;
};

/* Paths built for bubblewrap's arguments, freed together. */
struct string_pool {
	char **v;
	size_t n;
};

struct fd_list {
	int *v;
	size_t n;
};


/* bwrap_argv.c: bubblewrap's command line and the placeholders it needs */
void sbx_sandbox_pool_free(struct string_pool *p);
const char *const *sbx_sandbox_protected_list(const struct sbx_sandbox *sb);
void sbx_sandbox_make_placeholders(struct sbx_sandbox *sb);
void sbx_sandbox_remove_placeholders(struct sbx_sandbox *sb);
int sbx_sandbox_fd_list_push(struct fd_list *l, int fd);
void sbx_sandbox_fd_list_close(struct fd_list *l);
int sbx_sandbox_bwrap_argv(const struct sbx_sandbox *sb, const char *init, struct string_pool *pool,
                           struct fd_list *fds, const char ***out);

/* launch.c */
int sbx_sandbox_check_fds(const char *who, const struct sbx_sandbox_options *o);

/* probe.c */
int sbx_sandbox_start_as_probe(const char *name, const sbx_backend_config *cfg,
                               const struct sbx_sandbox_options *o, struct sbx_sandbox **out);

/* spec.c: the seccomp program and the spec the init reads */
int sbx_sandbox_seccomp_program(void);
bool sbx_sandbox_bwrap_caps_tmpfs(const struct sbx_sandbox *sb);
bool sbx_sandbox_bwrap_own_mounts(const struct sbx_sandbox *sb);
const char *sbx_sandbox_view_root(const struct sbx_sandbox_options *o, const char *workdir);
bool sbx_sandbox_bind_needs_tree(const struct sbx_sandbox *sb, size_t i);
const char *sbx_sandbox_bind_in_state(const struct sbx_sandbox *sb, size_t i);
char *sbx_sandbox_build_spec(const struct sbx_sandbox *sb, bool prestart);
/* Starts a spare of shape ("uid:gid spec", spare_shape in launch.c) with the init helper at
 * init, unparked, into *out (which then owns shape); 0, or a negative code with shape freed.
 * Waits only for the first process, which forks the outer one and exits. */
int sbx_sandbox_prestart(const char *init, char *shape, struct sbx_spare *out);

#endif
