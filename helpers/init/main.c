/* agentsbx-init: builds a sandbox and stays in it as PID 1, serving exec requests (see
 * init_proto.h). The setup order follows minijail's: namespaces → mounts → pivot_root →
 * network → capabilities → no_new_privs → Landlock → seccomp → serve.
 *
 * In "direct" mode the program that the backend started first splits off its tidier
 * (tidy.c: it stays outside every namespace and removes the cgroup and the placeholders when
 * the sandbox has ended); the child, the outer process, creates the user namespace and the
 * others, forks the init into them and then only waits: the init dies with it (PDEATHSIG), so
 * killing the outer process tears the whole sandbox down. In "inside" mode bubblewrap made
 * the namespaces and the root, and this process is the init. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "proto/init_proto.h"
#include "listen.h"
#include "quota.h"
#include "peer.h"
#include "sandbox.h"
#include "server.h"
#include "spec.h"
#include "tidy.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fdpass.h"

extern char **environ;

#define SPEC_MAX (1u << 20)

struct init_state {
	struct sbx_init_spec spec;
	bool direct;
	uint32_t flags;               /* SBX_INIT_HAS_* */
	char cgroup_note[244];
	int files_root;               /* a workspace of our own (quota.h): the host's fd of it */
};

static void send_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void send_error(const char *fmt, ...)
{
	struct sbx_init_error msg = { .kind = SBX_INIT_ERROR };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg.message, sizeof msg.message, fmt, ap);
	va_end(ap);
	send(SBX_INIT_CONTROL_FD, &msg, sizeof msg, MSG_NOSIGNAL);
}

static void send_ready(const struct init_state *st, pid_t host_pid)
{
	struct sbx_init_ready msg = { .kind = SBX_INIT_READY, .flags = st->flags,
	                              .init_pid = host_pid };

	snprintf(msg.cgroup_note, sizeof msg.cgroup_note, "%s", st->cgroup_note);
	sbx_init_set_greeting(&msg, sizeof msg);   /* for a detached sandbox's later clients */
	send(SBX_INIT_CONTROL_FD, &msg, sizeof msg, MSG_NOSIGNAL);
}

static int read_spec(struct init_state *st, char *err, size_t errlen)
{
	char *text = malloc(SPEC_MAX);
	ssize_t n;
	int r;

	if (!text) {
		snprintf(err, errlen, "spec: out of memory");
		return -1;
	}
	n = pread(SBX_INIT_SPEC_FD, text, SPEC_MAX, 0);
	if (n <= 0 || n == SPEC_MAX) {
		snprintf(err, errlen, "spec: cannot read fd %d: %s", SBX_INIT_SPEC_FD,
		         n < 0 ? strerror(errno) : "empty or too large");
		free(text);
		return -1;
	}
	r = sbx_init_spec_parse(text, (size_t)n, &st->spec, err, errlen);
	free(text);
	close(SBX_INIT_SPEC_FD);
	return r;
}

/* Puts the sandbox into its cgroup before anything runs in it. Only the lack of a usable
 * hierarchy is tolerated (and reported in READY); a failure to apply a limit is not. */
static int join_cgroup(struct init_state *st, char *err, size_t errlen)
{
	struct sbx_cgroup_limits lim = { st->spec.memory_bytes, st->spec.pids };
	int r;

	if (!lim.memory_bytes && !lim.pids)
		return 0;
	r = sbx_cgroup_setup(st->spec.id, getpid(), &lim, err, errlen);
	if (r == -ENOTSUP) {
		snprintf(st->cgroup_note, sizeof st->cgroup_note, "%s", err);
		err[0] = '\0';
		return 0;
	}
	if (r == 0)
		st->flags |= SBX_INIT_HAS_CGROUP;
	return r;
}

static int namespace_flags(const struct init_state *st)
{
	int flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;

	return st->spec.share_network ? flags : flags | CLONE_NEWNET;
}

/* A spare's binds from the state folder get their sources from the activation, in the
 * spec's order: with "users" the idmapped mounts to attach, else the sources themselves. */
static void adopt_state_sources(struct init_state *st, const int *fds)
{
	size_t k = 0;

	for (size_t i = 0; i < st->spec.n_binds; i++) {
		struct sbx_bind *b = &st->spec.binds[i];

		if (!b->in_state)
			continue;
		if (st->spec.has_users)
			b->tree_fd = fds[k++];
		else
			b->source_fd = fds[k++];
	}
}

/* The workspace: fd 5, or for a pre-started sandbox the fd its activation brings, then the
 * state folder's mount ("state_mount") and the sources of the binds from the state folder
 * (init_proto.h). The library opened them in the host's mount namespace; the root builder
 * reopens them in ours. */
static int receive_workspace(struct init_state *st, int *fd, int *state_fd, char *err,
                             size_t errlen)
{
	int fds[SBX_INIT_ACTIVATE_FDS], n = 1 + st->spec.state_mount + (int)st->spec.state_binds;
	int r;

	if (!st->spec.prestart) {
		*fd = st->spec.has_users ? SBX_INIT_WORKSPACE_TREE_FD : SBX_INIT_WORKSPACE_FD;
		*state_fd = st->spec.state_mount ? SBX_INIT_STATE_FD : -1;
		return 0;
	}
	r = sbx_init_await_activation(SBX_INIT_CONTROL_FD, SBX_INIT_PRESTART_IDLE_MS, n, fds);
	if (r < 0) {
		snprintf(err, errlen, "waiting for the workspace: %s",
		         r == -EPIPE ? "the host closed the channel" :
		         r == -ETIMEDOUT ? "none came" : "unexpected request");
		return r;
	}
	*fd = fds[0];
	if (st->spec.state_mount)
		*state_fd = fds[1];
	adopt_state_sources(st, fds + 1 + st->spec.state_mount);
	return 0;
}

/* The spec's protected paths, or the defaults. */
static const char *const *protected_paths_of(const struct init_state *st)
{
	return st->spec.protected_paths ? (const char *const *)st->spec.protected_paths
	                                : sbx_default_protected_paths;
}

/* The detached mounts and sources the host gave for binds (init_proto.h): attached or not,
 * no process of the sandbox may inherit them. */
static void close_trees(const struct sbx_init_spec *spec)
{
	for (size_t i = 0; i < spec->n_binds; i++) {
		if (spec->binds[i].tree_fd > 2)
			close(spec->binds[i].tree_fd);
		if (spec->binds[i].source_fd > 2)
			close(spec->binds[i].source_fd);
	}
}

/* The init's own setup inside the new namespaces (direct mode). Everything that does not
 * depend on the workspace comes first, so a pre-started sandbox has done it before it waits. */
static int build_sandbox(struct init_state *st, char *err, size_t errlen)
{
	struct sbx_rootfs_spec rs = {
		.workspace_fd = -1,
		.rootfs = st->spec.rootfs,
		.binds = st->spec.binds,
		.n_binds = st->spec.n_binds,
		.protected_paths = protected_paths_of(st),
		.hostname = st->spec.hostname,
		.workspace_readonly = st->spec.workspace_readonly,
		.workspace_bytes = st->spec.workspace_bytes,
		.tmp_bytes = st->spec.tmp_bytes,
		.files_root = &st->files_root,
		.workspace_tree = st->spec.has_users,
		.workspace_view = st->spec.workspace_view,
	};
	struct sbx_rootfs_stage *stage = NULL;
	int workspace_fd = -1, state_fd = -1, r;

	/* With "users" the workspace comes idmapped on fd 8; fd 5, the host's view of it, is the
	 * tidier's (init_proto.h) and no fd of the init's. */
	if (st->spec.has_users && !st->spec.prestart)
		close(SBX_INIT_WORKSPACE_FD);
	r = sbx_rootfs_prepare(&rs, &stage, err, errlen);

	if (r == 0 && !st->spec.share_network)
		r = sbx_net_loopback_up(err, errlen);
	if (r == 0)
		r = receive_workspace(st, &workspace_fd, &state_fd, err, errlen);
	rs.state_fd = state_fd > 2 ? state_fd : 0;
	if (r == 0)
		r = sbx_rootfs_finish(&rs, stage, workspace_fd, err, errlen);
	sbx_rootfs_stage_free(stage);
	if (workspace_fd >= 0)
		close(workspace_fd);
	if (state_fd >= 0)
		close(state_fd);
	close_trees(&st->spec);
	return r;
}

/* Where Landlock lets commands write: the places the layout makes writable (sandbox.h),
 * the workspace unless it is read-only, and every bind the config made writable. A writable
 * bind outside these would otherwise be a read-write mount Landlock still refuses (EACCES
 * on `touch`), so the rule follows the mount. The entries point into the spec and into
 * static storage; the array is the caller's to free. */
static const char **writable_paths_of(const struct init_state *st)
{
	const char **v = calloc(SBX_LAYOUT_WRITABLE_MAX + st->spec.n_binds + 2, sizeof *v);
	size_t n = 0;

	if (!v)
		return NULL;
	if (!st->spec.workspace_readonly)
		v[n++] = SBX_SANDBOX_ROOT;
	/* A place a caller's rootfs has no mount point for was left out (rootfs_layout.c). */
	for (size_t i = 0; sbx_layout_writable[i]; i++)
		if (access(sbx_layout_writable[i], F_OK) == 0)
			v[n++] = sbx_layout_writable[i];
	for (size_t i = 0; i < st->spec.n_binds; i++)
		if (st->spec.binds[i].writable)
			v[n++] = st->spec.binds[i].dest;
	return v;
}

static int harden(struct init_state *st, char *err, size_t errlen)
{
	_cleanup_free_ const char **writable = writable_paths_of(st);
	struct sbx_harden_spec hs = {
		.writable_paths = writable,
		.landlock = st->spec.landlock,
		.seccomp_program_fd = st->direct && st->spec.seccomp_program ? SBX_INIT_SECCOMP_FD : -1,
		.refuse_setid = st->spec.refuse_setid,
	};
	bool landlocked = false;
	int r;

	if (!writable)
		return sbx_fail_buf(err, errlen, -ENOMEM, "landlock: out of memory");
	if (st->spec.landlock) {
		/* Landlock first needs no_new_privs; harden_apply sets it too, harmlessly. */
		r = sbx_caps_drop_all(err, errlen);
		if (r == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			r = -errno;
		if (r == 0)
			r = sbx_landlock_apply(&hs, &landlocked, err, errlen);
		if (r < 0)
			return r;
		if (landlocked)
			st->flags |= SBX_INIT_HAS_LANDLOCK;
		hs.landlock = false;
	}
	r = sbx_harden_apply(&hs, err, errlen);
	if (hs.seccomp_program_fd > 2)
		close(hs.seccomp_program_fd);
	return r;
}

/* Mode "allowlist": the bridge process (bridge.c), forked once the init is hardened and
 * undumpable, so it is both; the init keeps none of its sockets. */
static int start_bridge(const int listeners[2], int files_root, char *err, size_t errlen)
{
	/* Nor the capped workspace's unprotected root, which it still holds until after READY. */
	const int init_fds[] = { SBX_INIT_CONTROL_FD, files_root };
	pid_t pid = sbx_bridge_start(listeners, SBX_INIT_BRIDGE_FD, init_fds, files_root >= 0 ? 2 : 1,
	                             err, errlen);

	close(listeners[0]);
	if (listeners[1] >= 0)
		close(listeners[1]);
	close(SBX_INIT_BRIDGE_FD);
	return pid < 0 ? (int)pid : 0;
}

/* Inside mode: the capped file systems bubblewrap could not make (quota.c). */
static int enter_own_mounts(struct init_state *st, char *err, size_t errlen)
{
	const struct sbx_quota_inside q = {
		.workspace_bytes = st->spec.workspace_bytes,
		.tmp_bytes = st->spec.tmp_bytes,
		.tmp_required = st->spec.tmp_required,
		.binds = st->spec.binds,
		.n_binds = st->spec.n_binds,
		.protected_paths = protected_paths_of(st),
		.workspace_tree = st->spec.has_users ? SBX_INIT_WORKSPACE_TREE_FD : 0,
		.workspace_readonly = st->spec.workspace_readonly,
		.state_fd = st->spec.state_mount ? SBX_INIT_STATE_FD : 0,
		.workspace_view = st->spec.workspace_view,
	};
	int r = sbx_quota_enter_inside(&q, &st->files_root, err, errlen);

	if (st->spec.has_users)
		close(SBX_INIT_WORKSPACE_TREE_FD);
	if (st->spec.state_mount)
		close(SBX_INIT_STATE_FD);
	close_trees(&st->spec);
	return r;
}

/* After READY: the workspace of our own, for the host's file operations (init_proto.h). */
static void send_files_root(struct init_state *st)
{
	const struct sbx_init_spawn msg = { .kind = SBX_INIT_FILES_ROOT };

	if (st->files_root < 0)
		return;
	sbx_send_with_fds(SBX_INIT_CONTROL_FD, &msg, sizeof msg, &st->files_root, 1);
	close(st->files_root);
	st->files_root = -1;
}

static int run_init(struct init_state *st, pid_t host_pid)
{
	int listeners[2] = { -1, -1 };
	char err[400] = "";

	if ((st->direct ? build_sandbox(st, err, sizeof err)
	                : enter_own_mounts(st, err, sizeof err)) < 0) {
		send_error("%s", err);
		return 1;
	}
	/* Bound before the hardening: nothing in it should have to allow binding ports. */
	if (st->spec.proxy_port &&
	    sbx_bridge_listen(st->spec.proxy_port, listeners, err, sizeof err) < 0) {
		send_error("%s", err);
		return 1;
	}
	if (harden(st, err, sizeof err) < 0) {
		send_error("%s", err[0] ? err : "hardening failed");
		return 1;
	}
	/* The commands run as our uid. Dumpable, the init would be open to every one of them
	 * through /proc/1 (fds, environment, and mem for writing where Landlock is off), and it
	 * holds the channel to the host and every command's stdio. Not dumpable, that takes
	 * CAP_SYS_PTRACE, which nothing inside has. The runners it forks inherit this; exec
	 * resets it for the commands themselves. */
	if (prctl(PR_SET_DUMPABLE, 0L, 0L, 0L, 0L) < 0) {
		send_error("prctl(PR_SET_DUMPABLE): %s", strerror(errno));
		return 1;
	}
	if (st->spec.proxy_port && start_bridge(listeners, st->files_root, err, sizeof err) < 0) {
		send_error("%s", err);
		return 1;
	}
	if (st->spec.has_host_uid)
		sbx_init_peers_allow_uid((unsigned)st->spec.host_uid);
	send_ready(st, host_pid);
	send_files_root(st);
	/* The cgroup's pids limit would count idle runners against the commands' processes. */
	return sbx_init_serve(SBX_INIT_CONTROL_FD, st->spec.idle_ttl_ms, st->spec.pids == 0) < 0
	               ? 1 : 0;
}

/* A pidfd of the host (see peer.h), or -1. */
static int watch_host(void)
{
	return sbx_pidfd_of_peer(SBX_INIT_CONTROL_FD);
}

/* Direct mode, outer process: waits for the init and mirrors its end; if the host dies
 * first, kills the init (and with it the sandbox). */
static int wait_for_init(pid_t init, int host)
{
	struct pollfd pfd[2] = { { .fd = (int)syscall(SYS_pidfd_open, init, 0), .events = POLLIN },
	                         { .fd = host, .events = POLLIN } };
	int status;

	close(SBX_INIT_CONTROL_FD);
	close(SBX_INIT_WORKSPACE_FD);
	/* Without pidfds (kernels before 5.3) only the init's end is waited for. */
	while (pfd[0].fd >= 0 && pfd[1].fd >= 0) {
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents) {
			kill(init, SIGKILL);
			break;
		}
		if (pfd[0].revents)
			break;
	}
	while (waitpid(init, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* True when the outer process has already gone: the write end of the lifeline it holds
 * closed. (Across the PID namespace boundary getppid() says 0 either way.) */
static bool outer_gone(int lifeline)
{
	struct pollfd pfd = { .fd = lifeline, .events = POLLIN };

	return poll(&pfd, 1, 0) != 0;
}

/* "--detached": the sandbox outlives the host that started it (listen.c). */
static bool detached;
/* "--prestarted": a spare (init_proto.h, SBX_INIT_OUTER); its spec says "prestart" too. */
static bool prestarted;
/* "--tidy NOTE": the journal note of the placeholders the library made for this sandbox
 * (util/journal.h), which the tidier removes when the sandbox ends. */
static const char *tidy_note;

/* The caller's own ids, or (the host is root) the host range the spec gives. */
static int enter_user_namespace(const struct init_state *st, char *err, size_t errlen)
{
	if (st->spec.has_users)
		return sbx_userns_enter_range(&st->spec.users, namespace_flags(st), err, errlen);
	return sbx_userns_enter(getuid(), getgid(), namespace_flags(st), err, errlen);
}

static int start_direct(struct init_state *st)
{
	struct sbx_tidy tidy = { .report = -1 };
	char err[400] = "";
	pid_t init;
	int lifeline[2], host, r;

	/* First of all, while this process is in nothing of the sandbox's: from here on the
	 * parent is the tidier, and this is its child. A sandbox that leaves nothing to tidy (a
	 * spare: no workspace yet, no cgroup) goes without: no process more to start and end. */
	if (!tidy_note && !st->spec.memory_bytes && !st->spec.pids)
		tidy.tidier = getpid();
	else if ((r = sbx_tidy_split(tidy_note, st->spec.id, &tidy)) < 0) {
		send_error("fork the tidier: %s", strerror(-r));
		return 1;
	}
	host = detached ? -1 : watch_host();
	if (join_cgroup(st, err, sizeof err) < 0) {
		send_error("%s", err);
		return 1;
	}
	if (st->flags & SBX_INIT_HAS_CGROUP)
		sbx_tidy_report_cgroup(&tidy);
	sbx_tidy_done_reporting(&tidy);
	if (enter_user_namespace(st, err, sizeof err) < 0) {
		send_error("%s", err);
		return 1;
	}
	if (pipe2(lifeline, O_CLOEXEC) < 0) {
		send_error("pipe: %s", strerror(errno));
		return 1;
	}
	init = fork();
	if (init < 0) {
		send_error("fork the init: %s", strerror(errno));
		return 1;
	}
	if (init > 0) {
		close(lifeline[0]);
		/* Only the init holds the bridge channel: the proxy sees it close when the init ends.
		 * (Closed here, before wait_for_init opens fds that could take its number.) */
		if (st->spec.proxy_port)
			close(SBX_INIT_BRIDGE_FD);
		if (st->spec.has_users)
			close(SBX_INIT_WORKSPACE_TREE_FD);
		if (st->spec.state_mount)
			close(SBX_INIT_STATE_FD);
		close_trees(&st->spec);
		return wait_for_init(init, host);   /* holds lifeline[1] until it exits */
	}
	close(lifeline[1]);
	if (host >= 0)
		close(host);
	/* The init must not outlive the outer process, whatever kills it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || outer_gone(lifeline[0]))
		_exit(1);
	close(lifeline[0]);
	/* The host waits for the tidier: once it has gone, so has everything of the sandbox. */
	_exit(run_init(st, tidy.tidier));
}

/* Whatever else the host left open without close-on-exec (bubblewrap passes such fds on as
 * well) must not stay open in the sandbox's init: any command could open it again through
 * /proc/1/fd — a host file, or a host directory to walk out of the sandbox by. Only the
 * protocol's fds stay: 3 and 4, 5 and 6 in direct mode, and 7 when a proxy bridge is due. */
static void close_from(unsigned first, unsigned last)
{
	struct rlimit lim;

	/* fds are ints; gVisor refuses a last fd beyond INT_MAX (EINVAL). */
	if (first > last || close_range(first, last > INT_MAX ? INT_MAX : last, 0) == 0)
		return;
	/* Kernels before 5.9: close what the fd limit allows. */
	if (getrlimit(RLIMIT_NOFILE, &lim) < 0 || lim.rlim_cur == RLIM_INFINITY ||
	    lim.rlim_cur > (1u << 20))
		lim.rlim_cur = 1u << 20;
	for (unsigned fd = first; fd < lim.rlim_cur && fd <= last; fd++)
		close((int)fd);
}

/* Closes every fd above 2 that is not in keep (ascending). */
static void close_all_but(const int *keep, size_t n)
{
	unsigned next = 3;

	for (size_t i = 0; i < n; i++) {
		if ((unsigned)keep[i] > next)
			close_from(next, (unsigned)keep[i] - 1);
		next = (unsigned)keep[i] + 1;
	}
	close_from(next, ~0U);
}

static int compare_fds(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* The protocol's fds this init has by its spec (spec NULL: only 3 and 4, and in direct mode
 * 5 and 6). */
static void close_inherited_fds(bool direct, const struct sbx_init_spec *spec)
{
	int keep[8 + SBX_INIT_MAX_TREES];
	size_t n = 0;

	keep[n++] = SBX_INIT_CONTROL_FD;
	keep[n++] = SBX_INIT_SPEC_FD;
	if (direct)
		keep[n++] = SBX_INIT_WORKSPACE_FD;
	if (direct)
		keep[n++] = SBX_INIT_SECCOMP_FD;
	if (spec && spec->proxy_port)
		keep[n++] = SBX_INIT_BRIDGE_FD;
	if (spec && spec->has_users)
		keep[n++] = SBX_INIT_WORKSPACE_TREE_FD;
	if (spec && spec->state_mount)
		keep[n++] = SBX_INIT_STATE_FD;
	for (size_t i = 0; spec && i < spec->n_binds && n < sizeof keep / sizeof *keep; i++)
		if (spec->binds[i].tree_fd > 2)
			keep[n++] = spec->binds[i].tree_fd;
	qsort(keep, n, sizeof *keep, compare_fds);
	close_all_but(keep, n);
}

/* "bwrap" mode: the outer process of a sandbox bubblewrap builds. It starts bwrap (the
 * arguments after "--") with our fds and then only waits, as direct mode's outer process does:
 * bwrap's --die-with-parent is sound with this single-threaded parent (it would fire when the
 * host's *thread* ended), and the host is watched through a pidfd. */
/* "--users UID:GID" (bwrap mode, the host is root): bubblewrap runs as that unprivileged host
 * user and maps it to 0 inside (--uid 0 --gid 0); the init attaches the idmapped workspace
 * itself (quota.c). 0 when not given. */
static struct sbx_id_range bwrap_users;

/* As root's bubblewrap sandbox (--users) this process gives up root before it starts
 * bubblewrap, and a tidier that stays root is split off first, as in direct mode: the
 * placeholders and the journal are root's. */
static int drop_to_users(char *err, size_t errlen)
{
	struct sbx_tidy tidy = { .report = -1 };
	int r;

	if (tidy_note && (r = sbx_tidy_split(tidy_note, "", &tidy)) < 0)
		return snprintf(err, errlen, "fork the tidier: %s", strerror(-r)), -1;
	sbx_tidy_done_reporting(&tidy);
	tidy_note = NULL;      /* the tidier's now */
	return sbx_drop_to_host_ids(bwrap_users.uid, bwrap_users.gid, err, errlen);
}

static int start_bwrap(char **bwrap_argv)
{
	int host = detached ? -1 : watch_host(), status;
	char err_text[300];
	pid_t pid;
	int err, root;

	if (bwrap_users.uid && drop_to_users(err_text, sizeof err_text) < 0) {
		send_error("%s", err_text);
		return 1;
	}
	/* Otherwise this process is outside bubblewrap's namespaces: it is its own tidier
	 * (tidy.c). */
	root = fcntl(SBX_INIT_WORKSPACE_FD, F_DUPFD_CLOEXEC, 16);
	err = posix_spawn(&pid, bwrap_argv[0], NULL, NULL, bwrap_argv, environ);

	if (err) {
		send_error("start %s: %s", bwrap_argv[0], strerror(err));
		sbx_tidy_remove(root, tidy_note);
		return 1;
	}
	status = wait_for_init(pid, host);
	sbx_tidy_remove(root, tidy_note);
	return status;
}

/* A detached sandbox leaves the host's process tree: the host reaps this first half at once,
 * and the second, reparented, is nobody's zombie when it ends long after. */
static void leave_host(void)
{
	pid_t pid = fork();

	if (pid < 0) {
		send_error("fork: %s", strerror(errno));
		_exit(1);
	}
	if (pid > 0)
		_exit(0);
}

/* A pre-started sandbox leaves the host's process tree too, yet stays tied to the host; the
 * host learns the outer process by a pidfd (init_proto.h, SBX_INIT_OUTER). */
static int leave_host_keeping_watch(void)
{
	struct sbx_init_spawn outer = { .kind = SBX_INIT_OUTER };
	int pidfd, r;

	leave_host();
	pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (pidfd < 0) {
		send_error("pidfd_open: %s", strerror(errno));
		return -1;
	}
	r = sbx_send_with_fds(SBX_INIT_CONTROL_FD, &outer, sizeof outer, &pidfd, 1);
	close(pidfd);
	return r;
}

static int parse_users(const char *text, struct sbx_id_range *out)
{
	unsigned long uid, gid;
	char *end;

	errno = 0;
	uid = strtoul(text, &end, 10);
	if (errno || end == text || *end != ':' || !uid || uid > UINT32_MAX - 1)
		return -1;
	text = end + 1;
	gid = strtoul(text, &end, 10);
	if (errno || end == text || *end || !gid || gid > UINT32_MAX - 1)
		return -1;
	*out = (struct sbx_id_range){ (uint32_t)uid, (uint32_t)gid, 1 };
	return 0;
}

/* "p-" and hex digits: a note of the journal, never a path. */
static bool note_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n < 3 || n > 40 || strncmp(name, "p-", 2) != 0)
		return false;
	return strspn(name + 2, "0123456789abcdef") == n - 2;
}

static int usage(const char *why)
{
	fprintf(stderr, "agentsbx-init: %s\nusage: agentsbx-init [--detached|--prestarted] "
	        "[--tidy NOTE] --proto %d --mode direct|inside\n"
	        "       agentsbx-init [--detached] [--tidy NOTE] [--users UID:GID] --proto %d "
	        "--mode bwrap -- "
	        "BWRAP_ARGV...\n"
	        "(started by libagentsbx; see src/proto/init_proto.h)\n", why, SBX_INIT_PROTO_VERSION,
	        SBX_INIT_PROTO_VERSION);
	return 2;
}

/* "--control-socket PATH" (first): where the host cannot start us with fds 3 and 4 (the
 * docker backend's fast path runs the init as a container's main process), connect to the
 * host's socket, make it the control channel, and take the spec memfd from its first
 * message (and, when the spec has a proxy_port, the bridge channel from its second:
 * receive_bridge). Then the usual "--proto 1 --mode inside" follows. */
static bool started_by_socket;

static int connect_to_host(int *argc, char ***argv)
{
	static const int spec_fd[1] = { SBX_INIT_SPEC_FD };
	int r;

	if (*argc < 3 || strcmp((*argv)[1], "--control-socket") != 0)
		return 0;
	if ((r = sbx_peer_connect_at((*argv)[2], SBX_INIT_CONTROL_FD)) < 0) {
		fprintf(stderr, "agentsbx-init: --control-socket %s: %s\n", (*argv)[2], strerror(-r));
		return -1;
	}
	if ((r = sbx_peer_receive_fds_at(SBX_INIT_CONTROL_FD, spec_fd, 1)) < 0) {
		send_error("--control-socket: no spec from the host: %s", strerror(-r));
		return -1;
	}
	*argv += 2;
	*argc -= 2;
	started_by_socket = true;
	return 0;
}

static int receive_bridge(void)
{
	static const int bridge_fd[1] = { SBX_INIT_BRIDGE_FD };
	int r = sbx_peer_receive_fds_at(SBX_INIT_CONTROL_FD, bridge_fd, 1);

	if (r < 0)
		send_error("--control-socket: no proxy bridge from the host: %s", strerror(-r));
	return r;
}

int main(int argc, char **argv)
{
	struct init_state st = { .files_root = -1 };
	char err[400] = "";
	struct stat sb;

	/* The git guard's binds in a running sandbox (warden.c): no sandbox of our own. It ends
	 * with _exit: in the sandbox's mount namespace /proc is not ours, and at-exit handlers
	 * that read it (a sanitizer's leak check) would fail the run. */
	if ((argc == 2 || argc == 3) && !strcmp(argv[1], "--warden"))
		_exit(sbx_warden_main(argc == 3 ? argv[2] : NULL));
	if (connect_to_host(&argc, &argv) < 0)
		return 1;

	if (argc > 1 && !strcmp(argv[1], "--detached")) {
		detached = true;
		argv++;
		argc--;
	} else if (argc > 1 && !strcmp(argv[1], "--prestarted")) {
		prestarted = true;
		argv++;
		argc--;
	}
	if (argc > 2 && !strcmp(argv[1], "--tidy")) {
		tidy_note = argv[2];
		argv += 2;
		argc -= 2;
		if (!note_name_ok(tidy_note))
			return usage("--tidy: not a journal note's name");
	}
	if (argc > 2 && !strcmp(argv[1], "--users")) {
		if (parse_users(argv[2], &bwrap_users) < 0)
			return usage("--users: expected UID:GID, neither 0");
		argv += 2;
		argc -= 2;
	}
	bool bwrap = argc > 6 && !strcmp(argv[4], "bwrap") && !strcmp(argv[5], "--");

	if (bwrap_users.uid && !bwrap)
		return usage("--users is for --mode bwrap");

	if ((argc != 5 && !bwrap) || strcmp(argv[1], "--proto") || strcmp(argv[2], "1") ||
	    strcmp(argv[3], "--mode") ||
	    (strcmp(argv[4], "direct") && strcmp(argv[4], "inside") && !bwrap))
		return usage("bad arguments");
	if (fstat(SBX_INIT_CONTROL_FD, &sb) < 0 || !S_ISSOCK(sb.st_mode))
		return usage("fd 3 is not the control socket");
	/* A container's main process must stay: it is not in the host's process tree anyway. */
	if (detached && !started_by_socket)
		leave_host();
	/* First of all, so that the host waits only for this hand-over before it goes on. */
	if (prestarted && leave_host_keeping_watch() < 0)
		return 1;
	if (bwrap)
		return start_bwrap(argv + 6);   /* every fd we have is one bubblewrap needs */
	st.direct = !strcmp(argv[4], "direct");
	signal(SIGPIPE, SIG_IGN);
	/* The spec says whether fd 7 is a bridge channel to keep. */
	if (read_spec(&st, err, sizeof err) < 0) {
		close_inherited_fds(st.direct, NULL);
		send_error("%s", err);
		return 1;
	}
	/* Started by socket, the bridge channel is the host's second message. */
	if (started_by_socket && st.spec.proxy_port && receive_bridge() < 0)
		return 1;
	close_inherited_fds(st.direct, &st.spec);
	if (st.spec.proxy_port && fstat(SBX_INIT_BRIDGE_FD, &sb) < 0) {
		send_error("mode \"allowlist\" without a bridge channel on fd %d", SBX_INIT_BRIDGE_FD);
		return 1;
	}
	if (prestarted != (st.direct && st.spec.prestart)) {
		send_error("--prestarted and the spec's \"prestart\" disagree");
		return 1;
	}
	if (st.direct)
		return start_direct(&st);
	/* Inside bubblewrap the host's cgroup tree is out of reach. */
	if (st.spec.memory_bytes || st.spec.pids)
		snprintf(st.cgroup_note, sizeof st.cgroup_note,
		         "no per-workspace cgroup when started through bubblewrap");
	return run_init(&st, getpid());
}
