/* Starting the init (directly, through bubblewrap, or by activating a pre-started spare),
 * attaching to a detached one, and stopping it. See sandbox.h and src/proto/init_proto.h. */
#include "backends/sandbox/sandbox_int.h"
#include "backends/sandbox/keeper.h"

/* Reads what bubblewrap said on stderr, for the error message. */
static void read_stderr(int fd, char *out, size_t len)
{
	ssize_t n;

	out[0] = '\0';
	if (fd < 0)
		return;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	n = read(fd, out, len - 1);
	if (n > 0) {
		out[n] = '\0';
		out[strcspn(out, "\n")] = '\0';
	}
}

static void reap(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
}

/* Whether process pid is in this process's mount namespace. */
static bool in_our_mount_ns(pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)pid);
	return stat(path, &a) == 0 && stat("/proc/self/ns/mnt", &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Direct mode: READY names the process the host waits for, the tidier (helpers/init/tidy.c),
 * which stays in the host's namespaces, or the outer process itself when there is no tidier.
 * The outer, in the sandbox's user and mount namespaces, is the tidier's only child. Opened
 * while READY says the sandbox lives, so the pid names it and no later process. */
static int open_outer_pidfd(pid_t ready_pid, pid_t *outer_pid)
{
	pid_t outer = in_our_mount_ns(ready_pid) ? sbx_warden_first_child(ready_pid) : ready_pid;

	*outer_pid = outer;
	if (outer <= 0 || in_our_mount_ns(outer))
		return -1;
	return (int)syscall(SYS_pidfd_open, outer, 0);
}

/* The init is the outer process's only child. Its pid is read, then a pidfd opened and the
 * pid read again: had the init ended in between (and the pid gone to another process), the
 * outer, which only waits for it, would list no child any more. -1 when it cannot be told. */
static int open_init_pidfd(pid_t outer)
{
	pid_t init = outer > 0 ? sbx_warden_first_child(outer) : -1;
	int fd = init > 0 ? (int)syscall(SYS_pidfd_open, init, 0) : -1;

	if (fd >= 0 && sbx_warden_first_child(outer) != init) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Waits for READY (0), ERROR or the init's early death (negative, with the message). */
static int wait_ready(struct sbx_sandbox *sb, int err_fd)
{
	union {
		uint32_t kind;
		struct sbx_init_ready ready;
		struct sbx_init_error error;
	} msg;
	struct pollfd pfd = { .fd = sb->ctl, .events = POLLIN };
	char said[256];
	int status = 0, n;

	n = poll(&pfd, 1, READY_TIMEOUT_MS);
	if (n == 0)
		return sbx_fail(-SBX_ETIMEDOUT, "%s: the sandbox did not start within %d ms", sb->who,
		                READY_TIMEOUT_MS);
	memset(&msg, 0, sizeof msg);
	ssize_t got = recv(sb->ctl, &msg, sizeof msg, 0);
	if (got == (ssize_t)sizeof msg.ready && msg.kind == SBX_INIT_READY) {
		sb->flags = msg.ready.flags;
		if (sb->outer_pidfd >= 0)
			close(SBX_TAKE_FD(sb->outer_pidfd));
		if (sb->init_pidfd >= 0)
			close(SBX_TAKE_FD(sb->init_pidfd));
		if (sb->mode == SBX_SANDBOX_DIRECT && msg.ready.init_pid > 0) {
			pid_t outer = -1;
			sb->outer_pidfd = open_outer_pidfd(msg.ready.init_pid, &outer);
			if (sb->outer_pidfd >= 0)
				sb->init_pidfd = open_init_pidfd(outer);
		}
		memcpy(sb->cgroup_note, msg.ready.cgroup_note, sizeof sb->cgroup_note);
		sb->cgroup_note[sizeof sb->cgroup_note - 1] = '\0';
		return 0;
	}
	if (got == (ssize_t)sizeof msg.error && msg.kind == SBX_INIT_ERROR) {
		msg.error.message[sizeof msg.error.message - 1] = '\0';
		return sbx_fail(-SBX_EBACKEND, "%s: sandbox setup failed: %s", sb->who,
		                msg.error.message);
	}
	read_stderr(err_fd, said, sizeof said);
	if (sb->pid > 0)
		reap(sb->pid, &status);
	sb->pid = -1;
	if (said[0])
		return sbx_fail(-SBX_EBACKEND, "%s: the sandbox did not start: %s", sb->who, said);
	return sbx_fail(-SBX_EBACKEND, "%s: the sandbox init exited (status 0x%x) before it was "
	                "ready", sb->who, (unsigned)status);
}

/* The fds a start hands the init (init_proto.h: 3 control, 4 spec, 5 workspace, 6 seccomp
 * program, 7 proxy bridge, 8 idmapped workspace, 9 state folder; -1 leaves a number closed)
 * and, from fd 10 on, bubblewrap's bind fds or the binds' idmapped mounts. */
struct init_fds {
	int ctl, spec, workspace, bridge, tree, state;
	const struct fd_list *extra;
};

static int spawn_init(enum sbx_sandbox_mode mode, bool detached, const char *init,
                      const char *const *bwrap, const char *tidy, const struct init_fds *f,
                      int err_fd, pid_t *pid)
{
	const char *direct[10];
	size_t k = 0;
	const size_t own = SBX_INIT_FIRST_TREE_FD - SBX_INIT_CONTROL_FD;
	size_t n = own + (f->extra ? f->extra->n : 0);
	int *fds = malloc(n * sizeof *fds), err;

	if (!fds)
		return ENOMEM;
	fds[0] = f->ctl;
	fds[1] = f->spec;
	fds[2] = f->workspace;
	/* fd 6: the seccomp program the spec announced (built before the spec was). */
	fds[3] = mode == SBX_SANDBOX_DIRECT ? sbx_sandbox_seccomp_program() : -1;
	fds[4] = f->bridge;
	fds[5] = f->tree;
	fds[6] = f->state;
	if (n > own)
		memcpy(fds + own, f->extra->v, f->extra->n * sizeof *fds);
	direct[k++] = INIT_NAME;
	if (detached)
		direct[k++] = "--detached";
	else if (f->workspace < 0)
		direct[k++] = "--prestarted";   /* a spare: no workspace yet */
	if (tidy) {
		/* The placeholders' note, for the tidier (helpers/init/tidy.c). */
		direct[k++] = "--tidy";
		direct[k++] = tidy;
	}
	direct[k++] = "--proto";
	direct[k++] = "1";
	direct[k++] = "--mode";
	direct[k++] = "direct";
	direct[k] = NULL;
	err = sbx_spawn_with_fds(init, mode == SBX_SANDBOX_BWRAP ? bwrap : direct, fds, n, err_fd,
	                         pid);
	free(fds);
	return err;
}

/* Why the workdir (or a bind's source) cannot be given as an idmapped mount, as an error. */
static int idmap_failure(const struct sbx_sandbox *sb, int dir_fd, const char *what, int r)
{
	char why[256];

	if (!sbx_idmap_unsupported(r))
		return sbx_fail(sbx_errno_code(-r), "%s: an idmapped mount of %s: %s", sb->who, what,
		                strerror(-r));
	sbx_idmap_why(dir_fd, r, why, sizeof why);
	return sbx_fail(-SBX_ENOSYS, "%s: %s cannot be given to the sandbox through an idmapped "
	                "mount (%s): as root, the sandbox runs as unprivileged host ids (inside 0 -> "
	                "host %u, %s), and only such a mount keeps the files there yours; the key "
	                "'%s.root_inside': \"allow-host-root\" runs it as host root instead, with a "
	                "warning in the audit log", sb->who, what, why, sb->idmap.uid,
	                sb->idmap.source, sb->who);
}

static int dup_root(const struct sbx_sandbox *sb, int *out)
{
	if ((*out = fcntl(sb->root_fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: dup: %s", sb->who, strerror(errno));
	return 0;
}

/* The workspace as the sandbox gets it: the directory, or (as a host range) its idmapped
 * mount, the one made when the users were decided or a new one. */
static int workspace_fd_for(struct sbx_sandbox *sb, int *out)
{
	int r;

	if (!sb->idmap.on)
		return dup_root(sb, out);
	if (sb->ws_tree >= 0) {
		*out = SBX_TAKE_FD(sb->ws_tree);
		return 0;
	}
	r = sbx_idmap_tree(&sb->idmap, sb->root_fd, out);
	return r < 0 ? idmap_failure(sb, sb->root_fd, sb->workdir, r) : 0;
}

/* As a host range, a capped workspace's state folder as the host sees it (init_proto.h,
 * fd 9); else -1. */
static int state_fd_for(const struct sbx_sandbox *sb, int *out)
{
	int r;

	*out = -1;
	if (!sb->idmap.on || !sbx_quota_disk_bytes(&sb->cfg))
		return 0;
	r = sbx_idmap_plain_tree(sb->root_fd, SBX_STATE_DIR, out);
	return r < 0 ? sbx_fail(sbx_errno_code(-r), "%s: a mount of the state folder %s: %s",
	                        sb->who, SBX_STATE_DIR, strerror(-r)) : 0;
}

/* One bind's mount: idmapped, so that the sandbox's root is the owner of what the host's
 * root owns there; or, for a read-only bind on a file system without idmapped mounts, as the
 * host has it (its files are then the sandbox's only as far as any user may read them). */
static int bind_tree(const char *who, const struct sbx_idmap *m, const char *source,
                     bool writable, int *tree)
{
	_cleanup_close_ int src = open(source, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	char why[256];
	int r;

	if (src < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: open the bind source %s: %s", who, source,
		                strerror(errno));
	r = sbx_idmap_tree(m, src, tree);
	if (r < 0 && !writable && sbx_idmap_unsupported(r))
		r = sbx_idmap_plain_tree(src, "", tree);
	if (r == 0)
		return 0;
	if (!sbx_idmap_unsupported(r))
		return sbx_fail(sbx_errno_code(-r), "%s: a mount of the bind source %s: %s", who,
		                source, strerror(-r));
	sbx_idmap_why(src, r, why, sizeof why);
	return sbx_fail(-SBX_ENOSYS, "config: key '%s.binds': the writable bind source %s cannot "
	                "be given to the sandbox through an idmapped mount (%s): as root, the "
	                "sandbox runs as unprivileged host ids; make the bind read-only, or the "
	                "key '%s.root_inside': \"allow-host-root\" runs it as host root", who,
	                source, why, who);
}

/* The mounts of the binds that need one (bind_needs_tree), in the spec's order (which is that
 * of the fds from SBX_INIT_FIRST_TREE_FD). */
static int bind_trees_for(const struct sbx_sandbox *sb, struct fd_list *trees)
{
	const struct sbx_sandbox_options *o = sb->opts;
	int r = 0;

	for (size_t i = 0; i < o->n_binds && r == 0; i++) {
		int tree;

		if (!sbx_sandbox_bind_needs_tree(sb, i))
			continue;
		if (trees->n == SBX_INIT_MAX_TREES)
			r = sbx_fail(-SBX_ECONFIG, "config: key '%s.binds': more than %d binds", sb->who,
			             SBX_INIT_MAX_TREES);
		else if ((r = bind_tree(sb->who, &sb->idmap, o->binds[i].source, o->binds[i].writable,
		                        &tree)) == 0)
			r = sbx_sandbox_fd_list_push(trees, tree);
	}
	return r;
}

/* The same from the spec itself, for a spare's starter, which has the spec and no sandbox:
 * the binds whose entry names a "tree_fd". */
static int spec_bind_trees(const char *who, const char *spec, struct fd_list *trees)
{
	const sbx_json *users, *binds;
	struct sbx_idmap m = { .on = true };
	sbx_json *root = NULL;
	char err[128];
	int r = 0;

	if (sbx_json_parse(spec, strlen(spec), &root, err, sizeof err) < 0)
		return sbx_fail(-SBX_EPROTO, "%s: the sandbox spec: %s", who, err);
	users = sbx_json_get(root, "users");
	binds = sbx_json_get(root, "binds");
	if (users) {
		m.uid = (uint32_t)sbx_json_get(users, "uid")->i;
		m.gid = (uint32_t)sbx_json_get(users, "gid")->i;
		m.count = (uint32_t)sbx_json_get(users, "count")->i;
	}
	for (size_t i = 0; users && binds && i < binds->n && r == 0; i++) {
		const sbx_json *b = binds->items[i], *rw = sbx_json_get(b, "writable");
		int tree;

		if (!sbx_json_get(b, "tree_fd"))
			continue;
		if (trees->n == SBX_INIT_MAX_TREES)
			r = sbx_fail(-SBX_ECONFIG, "config: key '%s.binds': more than %d binds", who,
			             SBX_INIT_MAX_TREES);
		else if ((r = bind_tree(who, &m, sbx_json_get(b, "source")->str, rw && rw->b,
		                        &tree)) == 0)
			r = sbx_sandbox_fd_list_push(trees, tree);
	}
	sbx_json_free(root);
	return r;
}

/* The fds of this start; *f's fds are then the caller's to close (init_fds_close). */
static int init_fds_open(struct sbx_sandbox *sb, struct init_fds *f, struct fd_list *trees)
{
	int r;

	*f = (struct init_fds){ .ctl = -1, .spec = -1, .workspace = -1, .bridge = -1, .tree = -1,
	                        .state = -1, .extra = trees };
	/* fd 5 is the host's view in any case: the tidier's (helpers/init/tidy.c). */
	if ((r = dup_root(sb, &f->workspace)) < 0 ||
	    (sb->idmap.on && (r = workspace_fd_for(sb, &f->tree)) < 0) ||
	    (r = state_fd_for(sb, &f->state)) < 0)
		return r;
	return sb->idmap.on ? bind_trees_for(sb, trees) : 0;
}

static void init_fds_close(struct init_fds *f)
{
	const int fds[] = { f->spec, f->workspace, f->bridge, f->tree, f->state };

	for (size_t i = 0; i < SBX_ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	*f = (struct init_fds){ .ctl = -1, .spec = -1, .workspace = -1, .bridge = -1, .tree = -1,
	                        .state = -1 };
}

/* Starts the init and waits until it is ready. */
static int launch_fresh(struct sbx_sandbox *sb, const char *init)
{
	_cleanup_free_ char *spec = NULL;
	_cleanup_close_ int child_ctl = -1, err_read = -1, err_write = -1;
	_cleanup_free_ const char **argv = NULL;
	struct string_pool pool = { 0 };
	struct fd_list extra = { 0 };
	struct init_fds f;
	int sv[2], p[2], r, err;

	sbx_sandbox_make_placeholders(sb);
	if (!(spec = sbx_sandbox_build_spec(sb, false)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((r = init_fds_open(sb, &f, &extra)) < 0)
		goto out;
	if ((f.spec = sbx_memfd_with("agentsbx-spec", spec, strlen(spec))) < 0) {
		r = f.spec;
		goto out;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		r = sbx_fail(sbx_errno_code(errno), "%s: socketpair: %s", sb->who, strerror(errno));
		goto out;
	}
	sb->ctl = sv[0];
	f.ctl = child_ctl = sv[1];
	/* What the starter says on stderr explains a failure before the protocol runs. */
	if (pipe2(p, O_CLOEXEC) == 0) {
		err_read = p[0];
		err_write = p[1];
	}
	if (sb->mode == SBX_SANDBOX_BWRAP &&
	    (r = sbx_sandbox_bwrap_argv(sb, init, &pool, &extra, &argv)) < 0)
		goto out;
	if (sb->proxy && (r = sbx_netproxy_bridge(sb->proxy, &f.bridge)) < 0)
		goto out;
	err = spawn_init(sb->mode, sb->opts->detached, init, argv, sb->placeholders, &f, err_write,
	                 &sb->pid);
	sbx_sandbox_pool_free(&pool);
	pool = (struct string_pool){ 0 };
	sbx_sandbox_fd_list_close(&extra);
	init_fds_close(&f);
	if (err) {
		sb->pid = -1;
		return sbx_fail(-SBX_EBACKEND, "%s: start %s: %s", sb->who,
		                init, strerror(err));
	}
	/* Only the init may hold the other end: its closing is how we see the sandbox die. */
	close(SBX_TAKE_FD(child_ctl));
	close(SBX_TAKE_FD(err_write));
	if ((r = wait_ready(sb, err_read)) < 0)
		return r;
	/* A pids limit only a cgroup enforces: refuse rather than run without it. */
	if (sb->cfg.limits.pids && !(sb->flags & SBX_INIT_HAS_CGROUP))
		return sbx_fail(-SBX_ECONFIG, "config: key 'limits.pids': this sandbox has no cgroup "
		                "to enforce it (%s)", sb->cgroup_note[0] ? sb->cgroup_note :
		                "none could be made");
	return 0;
out:
	sbx_sandbox_pool_free(&pool);
	sbx_sandbox_fd_list_close(&extra);
	init_fds_close(&f);
	return r;
}

/* Ends the init by closing its channel (it exits, and the kernel empties its PID namespace
 * before the outer process can see it gone), then kills the outer process if it lingers. */
static void stop_init(struct sbx_sandbox *sb)
{
	sbx_runclient_pool_clear(sb->live.pool);
	if (sb->ctl >= 0)
		close(SBX_TAKE_FD(sb->ctl));
	sbx_reap_or_kill(sb->pid, STOP_TIMEOUT_MS);
	sb->pid = -1;
	sbx_pidfd_wait_or_kill(SBX_TAKE_FD(sb->pidfd), STOP_TIMEOUT_MS);
}

/* Closes the init's channel and waits until every process of the sandbox is gone: the init's
 * pidfd reads as ended only after the kernel has reaped the rest of its PID namespace. The
 * outer process is still ending then (its exit releases the sandbox's mount namespace, most
 * of the time a close waits for). False when that cannot be known here (bubblewrap, no
 * pidfd) or in time: the caller waits for the outer process, as before. The pidfd is used
 * once: a later stop (a restart that failed before its READY) must not take the ended init
 * of this start for its own. */
static bool end_init(struct sbx_sandbox *sb)
{
	_cleanup_close_ int init = SBX_TAKE_FD(sb->init_pidfd);
	struct pollfd pfd[2] = { { .fd = init, .events = POLLIN },
	                         { .fd = sb->outer_pidfd, .events = POLLIN } };
	long long deadline = sbx_now_ms() + STOP_TIMEOUT_MS;
	int n;

	if (init < 0 || sb->outer_pidfd < 0)
		return false;
	if (sb->ctl >= 0)
		close(SBX_TAKE_FD(sb->ctl));
	do
		n = poll(pfd, 2, (int)(deadline > sbx_now_ms() ? deadline - sbx_now_ms() : 0));
	while (n < 0 && errno == EINTR);
	return n > 0;
}

/* After the init is gone: the placeholders, and the cgroup the outer process made (under this
 * process's own cgroup, which the outer process shared; it cannot remove it while in it).
 * The placeholders go as soon as nothing of the sandbox runs, while the outer process still
 * tears its mount namespace down (a placeholder that is a mount point there can be removed
 * from here: the kernel detaches the mount); close returns only once that process has
 * ended too, so the workdir is mounted nowhere any more. */
static void stop_and_tidy(struct sbx_sandbox *sb)
{
	bool early = end_init(sb);

	if (early)
		sbx_sandbox_remove_placeholders(sb);
	stop_init(sb);
	if (!early)
		sbx_sandbox_remove_placeholders(sb);
	if (sb->flags & SBX_INIT_HAS_CGROUP)
		sbx_cgroup_cleanup(sb->id);
}

/* ---- pre-started sandboxes (spare.h) ------------------------------------------ */

/* A pre-started init knows neither the workspace id (cgroup limits are per id) nor a proxy
 * (one per workspace), and only direct mode builds its own root. */
static bool can_prestart(const struct sbx_sandbox *sb)
{
	return sb->opts->prestart && sb->mode == SBX_SANDBOX_DIRECT && !sb->opts->detached &&
	       !sb->proxy && !sb->cfg.limits.memory_bytes && !sb->cfg.limits.pids;
}

/* What a spare must match to serve a sandbox: its spec, and the ids the init maps into its
 * user namespace (a process that changes its uid must not get a spare of the old one). */
static char *spare_shape(const struct sbx_sandbox *sb)
{
	_cleanup_free_ char *spec = sbx_sandbox_build_spec(sb, true);
	char *shape = NULL;

	if (!spec || asprintf(&shape, "%u:%u %s", (unsigned)getuid(), (unsigned)getgid(),
	                      spec) < 0)
		return NULL;
	return shape;
}

int sbx_sandbox_prestart(const char *init, char *shape, struct sbx_spare *out)
{
	struct sbx_spare s = { .shape = shape, .pidfd = -1, .ctl = -1, .err_fd = -1 };
	_cleanup_close_ int spec_fd = -1, child_ctl = -1, err_write = -1;
	struct fd_list trees = { 0 };
	int sv[2], p[2], status;
	pid_t first;

	const char *spec = strchr(shape, '{');   /* after the "uid:gid " of spare_shape */

	if (!spec || (spec_fd = sbx_memfd_with("agentsbx-spec", spec, strlen(spec))) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		sbx_spare_discard(&s);
		return -SBX_EBACKEND;
	}
	s.ctl = sv[0];
	child_ctl = sv[1];
	if (pipe2(p, O_CLOEXEC) == 0) {
		s.err_fd = p[0];
		err_write = p[1];
	}
	const struct init_fds fds = { .ctl = child_ctl, .spec = spec_fd, .workspace = -1,
	                              .bridge = -1, .tree = -1, .state = -1, .extra = &trees };

	if (spec_bind_trees("prestart", spec, &trees) < 0 ||
	    spawn_init(SBX_SANDBOX_DIRECT, false, init, NULL, NULL, &fds, err_write, &first) != 0) {
		sbx_sandbox_fd_list_close(&trees);
		close(SBX_TAKE_FD(child_ctl));   /* no spare holds it: the discard need not wait */
		sbx_spare_discard(&s);
		return -SBX_EBACKEND;
	}
	sbx_sandbox_fd_list_close(&trees);
	/* The first process forks the outer one and exits at once; the starter is the one to
	 * wait for that, not the caller. The outer's pidfd is read when the spare is taken. */
	reap(first, &status);
	*out = s;
	return 0;
}

/* Starts an init of this shape and parks it: it builds itself while the caller goes on. A
 * failure costs only the next start its head start. Runs on the spare's starter thread
 * (spare.h). Takes shape. */
static void prestart(char *shape)
{
	_cleanup_free_ char *init = NULL;
	struct sbx_spare s;

	if (sbx_helper_path(INIT_NAME, &init) < 0) {
		free(shape);
		return;
	}
	if (sbx_sandbox_prestart(init, shape, &s) == 0)
		sbx_spare_park(&s);
}

/* The sources of a spare's binds from the state folder, in the spec's order (init_proto.h,
 * SBX_INIT_ACTIVATE): opened without following a link, as a fresh init opens them, or as a
 * host range their mounts, as bind_trees_for makes them. */
static int state_sources_for(const struct sbx_sandbox *sb, struct fd_list *out)
{
	const struct sbx_sandbox_options *o = sb->opts;
	int r = 0;

	for (size_t i = 0; i < o->n_binds && r == 0; i++) {
		int fd;

		if (!sbx_sandbox_bind_in_state(sb, i))
			continue;
		if (sb->idmap.on)
			r = bind_tree(sb->who, &sb->idmap, o->binds[i].source, o->binds[i].writable, &fd);
		else if ((fd = open(o->binds[i].source, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0)
			r = sbx_fail(sbx_errno_code(errno), "%s: open the bind source %s: %s", sb->who,
			             o->binds[i].source, strerror(errno));
		if (r == 0)
			r = sbx_sandbox_fd_list_push(out, fd);
	}
	return r;
}

/* ACTIVATE with the workspace, then (init_proto.h) the state folder's mount where the spec
 * says so, and the sources of the binds from the state folder. */
static int send_activation(struct sbx_sandbox *sb, const struct sbx_init_spawn *activate)
{
	struct fd_list fds = { 0 };
	int fd = -1, r;

	if ((r = workspace_fd_for(sb, &fd)) == 0 && (r = sbx_sandbox_fd_list_push(&fds, fd)) == 0)
		r = state_fd_for(sb, &fd);
	if (r == 0 && fd >= 0)
		r = sbx_sandbox_fd_list_push(&fds, fd);
	if (r == 0 && (r = state_sources_for(sb, &fds)) == 0)
		r = sbx_send_with_fds(sb->ctl, activate, sizeof *activate, fds.v, fds.n);
	sbx_sandbox_fd_list_close(&fds);
	return r;
}

/* A keeper's spare was started without a tidier (helpers/init/tidy.c), as every spare is;
 * a process's own spare dies with the process that would tidy after it, but a keeper serves
 * one-shot processes, often killed: only a sandbox that leaves nothing to tidy is served,
 * a temporary workdir with the default list (no placeholders, no journal; it goes whole). */
static bool keeper_may_serve(const struct sbx_sandbox *sb)
{
	return sb->opts->keeper && sb->cfg.workdir_is_temporary && !sb->opts->protected_paths &&
	       sbx_keeper_allowed();
}

/* Hands the workspace to a parked spare of this shape and waits for it. 0 when it is ready;
 * negative when there is none or it failed (it is stopped then, and an ordinary start,
 * which reports whatever is wrong, follows). */
static int launch_from_spare(struct sbx_sandbox *sb, const char *init, const char *shape)
{
	const struct sbx_init_spawn activate = { .kind = SBX_INIT_ACTIVATE };
	struct sbx_spare s;
	int r;

	/* None parked in this process (a one-shot CLI never has one): this user's keeper's. */
	if (!sbx_spare_take(shape, &s) &&
	    !(keeper_may_serve(sb) && sbx_keeper_take(init, shape, &s)))
		return -SBX_ENOENT;
	if ((r = sbx_spare_receive_outer(&s, READY_TIMEOUT_MS)) < 0) {
		sbx_spare_discard(&s);
		return r;
	}
	sb->pidfd = SBX_TAKE_FD(s.pidfd);
	sb->ctl = SBX_TAKE_FD(s.ctl);
	sbx_sandbox_make_placeholders(sb);
	r = send_activation(sb, &activate);
	if (r == 0)
		r = wait_ready(sb, s.err_fd);
	sbx_spare_discard(&s);
	if (r < 0) {
		stop_init(sb);
		sbx_sandbox_remove_placeholders(sb);
	}
	return r < 0 ? r : 0;
}

/* A capped workspace: the root the init hands over right after READY. */
static int take_files_root(struct sbx_sandbox *sb)
{
	int fd, r;

	if (!sbx_quota_disk_bytes(&sb->cfg))
		return 0;
	if ((r = sbx_quota_receive_files_root(sb->ctl, sb->who, &fd)) < 0)
		return r;
	/* The sandbox's tmpfs belongs to its user namespace, where the host's root has no id: an
	 * idmapped view gives it the sandbox's root's (util/idmap.h). */
	if (sb->idmap.on && (r = sbx_idmap_host_view(fd)) < 0) {
		close(fd);
		return sbx_fail(sbx_errno_code(-r), "%s: the host's view of the capped workspace: "
		                "mount_setattr: %s", sb->who, strerror(-r));
	}
	if (sb->files_root >= 0)
		close(sb->files_root);
	sb->files_root = fd;
	return 0;
}

static int launch(struct sbx_sandbox *sb)
{
	_cleanup_free_ char *init = NULL, *shape = NULL;
	int r;

	if ((r = sbx_helper_path(INIT_NAME, &init)) < 0) {
		char why[512];
		snprintf(why, sizeof why, "%s", sbx_last_error());
		return sbx_fail(-SBX_EBACKEND, "%s: %s", sb->who, why);
	}
	if (can_prestart(sb) && !(shape = spare_shape(sb)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((!shape || launch_from_spare(sb, init, shape) < 0) && (r = launch_fresh(sb, init)) < 0)
		return r;
	if ((r = take_files_root(sb)) < 0)
		return r;
	if (shape && sbx_spare_wanted(shape))
		sbx_spare_schedule(SBX_TAKE_PTR(shape), prestart);
	return 0;
}

static void free_sandbox(struct sbx_sandbox *sb)
{
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	if (sb->outer_pidfd >= 0)
		close(sb->outer_pidfd);
	if (sb->init_pidfd >= 0)
		close(sb->init_pidfd);
	sbx_netproxy_stop(sb->proxy);
	sbx_runclient_set_destroy(&sb->live);
	free(sb->placeholders);
	if (sb->root_fd >= 0)
		close(sb->root_fd);
	if (sb->files_root >= 0)
		close(sb->files_root);
	if (sb->ws_tree >= 0)
		close(sb->ws_tree);
	free(sb->state_dir);
	free(sb->workdir);
	free(sb->id);
	free(sb->network_mode);
	free(sb);
}

/* ---- detached sandboxes (attach.c) -------------------------------------------- */

/* The socket lives in the state folder: a sandbox that could write there could replace it. */
static bool protects_state_dir(const struct sbx_sandbox *sb)
{
	for (const char *const *p = sbx_sandbox_protected_list(sb); *p; p++)
		if (!strcmp(*p, SBX_STATE_DIR "/") || !strcmp(*p, SBX_STATE_DIR))
			return true;
	return false;
}

/* Under the run directory's lock: attach to the sandbox running for this workdir, or launch
 * one (its init started with --detached) and hand it its socket. */
static int attach_or_launch(struct sbx_sandbox *sb)
{
	_cleanup_close_ int run = -1;
	_cleanup_hostlock_ int lock = -1;
	struct sbx_init_ready ready;
	int r, status;

	if (!protects_state_dir(sb))
		return sbx_fail(-SBX_ECONFIG, "config: key '%s.detached': protected_paths must keep "
		                "'%s/' (the detached sandbox's socket lives there)", sb->who,
		                SBX_STATE_DIR);
	if ((r = sbx_attach_open_run_dir(sb->root_fd, true, &run)) < 0 ||
	    (r = sbx_attach_lock(run, &lock)) < 0)
		return r;
	r = sbx_attach_connect(run, sb->who, &ready, NULL, &sb->ctl);
	if (r == 0) {
		sb->flags = ready.flags;
		memcpy(sb->cgroup_note, ready.cgroup_note, sizeof sb->cgroup_note);
		return 0;
	}
	if (r != -SBX_ENOENT)
		return r;
	/* None runs, and none can start while we hold the lock: the placeholders of one that
	 * ended go before ours are made (its tidier may have been killed with it). */
	sbx_journal_sweep(sb->root_fd, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_DETACHED);
	if ((r = launch(sb)) < 0)
		return r;
	/* The first half of the detached init has exited (helpers/init/main.c, leave_host). */
	reap(sb->pid, &status);
	sb->pid = -1;
	return sbx_attach_hand_listener(run, sb->ctl, sb->who);
}

/* reset: stop the running sandbox (whoever started it) and start afresh. */
static int restart_detached(struct sbx_sandbox *sb)
{
	int r;

	sbx_runclient_kill_all(&sb->live, false);
	if (sb->ctl >= 0)
		close(SBX_TAKE_FD(sb->ctl));
	if ((r = sbx_sandbox_destroy_detached(sb->workdir, sb->id, NULL)) < 0)
		return r;
	return attach_or_launch(sb);
}

/* The fallback's warning, one record in the audit log at each open (the way
 * util/auditlog.h has helpers write them). */
static void audit_host_root(const struct sbx_sandbox *sb, const sbx_backend_config *cfg,
                            const char *why)
{
	char now[64];
	sbx_buf b = { 0 };

	if (!SBX_BACKEND_CONFIG_HAS(cfg, audit_keep) || cfg->audit_dir_fd < 0)
		return;
	sbx_auditlog_time(now, sizeof now);
	sbx_buf_printf(&b, "{\"time\":\"%s\",\"workspace\":", now);
	sbx_buf_json_string(&b, sb->id, strlen(sb->id));
	sbx_buf_printf(&b, ",\"kind\":\"users\",\"level\":\"warning\",\"event\":\"host-root\","
	               "\"rule\":\"%s.root_inside allow-host-root\",\"mapping\":\"inside 0 -> host "
	               "0\",\"reason\":", sb->who);
	sbx_buf_json_string(&b, why, strlen(why));
	sbx_buf_puts(&b, ",\"exposure\":\"commands run as the host's root: whatever gets past "
	             "the sandbox's other walls owns every root-owned file\"}\n");
	if (!b.oom)
		sbx_auditlog_append(cfg->audit_dir_fd, b.data, b.len, cfg->audit_max_bytes,
		                    cfg->audit_keep);
	sbx_buf_free(&b);
}

/* As root: the host range the sandbox runs as, and an idmapped mount of its workdir to prove
 * the file system takes one (kept for the first start). Where it does not, the open is
 * refused, or with root_inside "allow-host-root" the sandbox runs as host root, audited. */
static int decide_users(struct sbx_sandbox *sb, const sbx_backend_config *cfg)
{
	char why[320];
	int r;

	if ((r = sbx_idmap_resolve(sb->who, sb->opts->subid_user, &sb->idmap)) < 0 ||
	    !sb->idmap.on)
		return r;
	r = sbx_idmap_tree(&sb->idmap, sb->root_fd, &sb->ws_tree);
	if (r < 0 && !sbx_idmap_unsupported(r))
		return idmap_failure(sb, sb->root_fd, sb->workdir, r);
	if (r < 0)
		sbx_idmap_why(sb->root_fd, r, why, sizeof why);
	else if (sbx_quota_disk_bytes(&sb->cfg) && !sbx_idmap_tmpfs_ok(why, sizeof why))
		r = -EOPNOTSUPP;   /* the host could not write into the capped workspace */
	if (r == 0)
		return 0;
	if (!sb->opts->allow_host_root)
		return r == -EOPNOTSUPP
		       ? sbx_fail(-SBX_ENOSYS, "%s: the capped workspace (limits.disk_bytes) cannot "
		                  "be served to the host as root (%s); the key '%s.root_inside': "
		                  "\"allow-host-root\" runs it as host root instead, with a warning in "
		                  "the audit log", sb->who, why, sb->who)
		       : idmap_failure(sb, sb->root_fd, sb->workdir, r);
	if (sb->ws_tree >= 0)
		close(SBX_TAKE_FD(sb->ws_tree));
	sb->idmap.on = false;
	audit_host_root(sb, cfg, why);
	return 0;
}

/* Mode "allowlist": the workspace's proxy, before the sandbox that will reach it. The config
 * copy keeps no pointer to the policy: the core owns it, and it changes. */
static int start_proxy(struct sbx_sandbox *sb, const sbx_backend_config *cfg)
{
	struct sbx_netproxy_settings s;

	sbx_netproxy_settings_of(&s, sb->id, cfg);
	sb->cfg.network_json = NULL;
	sb->cfg.audit_dir_fd = -1;
	if (strcmp(sb->network_mode, "allowlist") != 0)
		return 0;
	if (!s.network_json)
		return sbx_fail(-SBX_ECONFIG, "%s: network mode 'allowlist' came without its policy",
		                sb->who);
	return sbx_netproxy_start(sb->who, &s, &sb->proxy);
}

/* The backstop for cgroups whose sandbox and tidier were both killed (helpers/init/tidy.c):
 * swept before a sandbox that makes one starts, and once by every process that starts any
 * (only root, or a delegated cgroup v2 tree, can have made them). */
static pthread_once_t cgroup_sweep_once = PTHREAD_ONCE_INIT;

static void sweep_cgroups_once(void)
{
	sbx_cgroup_sweep();
}

static void sweep_dead_cgroups(const sbx_backend_config *cfg)
{
	if (cfg->limits.memory_bytes || cfg->limits.pids)
		sbx_cgroup_sweep();
	else
		pthread_once(&cgroup_sweep_once, sweep_cgroups_once);
}

/* Enough file descriptors to start a sandbox? Short of them, every step failed in its own
 * way, and the probes that followed took that for a host without namespaces. Needed here:
 * the init's channels, the spec and bubblewrap's bind fds; in the init (the limit is
 * inherited): its own, every /etc entry it pins and each protected path's pins. */
int sbx_sandbox_check_fds(const char *who, const struct sbx_sandbox_options *o)
{
	int protected = 0;

	for (const char *const *p = o->protected_paths ? (const char *const *)o->protected_paths
	                                               : sbx_default_protected_paths; *p; p++)
		protected++;
	return sbx_fd_headroom(who, "start the sandbox", 12 + protected,
	                       48 + 2 * protected + (int)o->n_binds);
}

/* The state folder outside the workdir, for spares (spec.c, sbx_sandbox_bind_in_state):
 * the core's string lives only for the open, and a reset starts the sandbox again. */
static int copy_state_dir(struct sbx_sandbox *sb, const sbx_backend_config *cfg)
{
	sb->cfg.state_dir = NULL;
	sb->cfg.state_dir_fd = -1;
	if (!SBX_BACKEND_CONFIG_HAS(cfg, state_dir_fd) || !cfg->state_dir)
		return 0;
	return (sb->state_dir = strdup(cfg->state_dir)) ? 0 : sbx_fail(-SBX_ENOMEM, "out of memory");
}

int sbx_sandbox_start(const char *who, const sbx_backend_config *cfg,
                      const struct sbx_sandbox_options *o, enum sbx_sandbox_mode mode,
                      struct sbx_sandbox **out)
{
	struct sbx_sandbox *sb = calloc(1, sizeof *sb);
	int r;

	*out = NULL;
	if (!sb)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	sbx_runclient_set_init(&sb->live);
	sb->live.pool = sbx_runclient_pool_new();   /* none: every command goes through the init */
	sb->who = who;
	sb->mode = mode;
	sb->opts = o;
	sb->ctl = -1;
	sb->pid = -1;
	sb->pidfd = -1;
	sb->outer_pidfd = -1;
	sb->init_pidfd = -1;
	sb->root_fd = -1;
	sb->files_root = -1;
	sb->ws_tree = -1;
	memcpy(&sb->cfg, cfg, cfg->size < sizeof sb->cfg ? cfg->size : sizeof sb->cfg);
	sb->workdir = cfg->workdir ? strdup(cfg->workdir) : NULL;
	sb->id = strdup(cfg->id);
	sb->network_mode = strdup(cfg->network_mode ? cfg->network_mode : "none");
	if ((r = copy_state_dir(sb, cfg)) < 0) {
		free_sandbox(sb);
		return r;
	}
	if (!sb->workdir || !sb->id || !sb->network_mode) {
		free_sandbox(sb);
		return sbx_fail(cfg->workdir ? -SBX_ENOMEM : -SBX_EINVAL,
		                "%s: %s", who, cfg->workdir ? "out of memory" : "a workdir is required");
	}
	sb->root_fd = open(sb->workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (sb->root_fd < 0) {
		r = sbx_fail(sbx_errno_code(errno), "%s: open %s: %s", who, sb->workdir,
		             strerror(errno));
		free_sandbox(sb);
		return r;
	}
	if (sb->opts->detached && strcmp(sb->network_mode, "allowlist") == 0) {
		free_sandbox(sb);
		return sbx_fail(-SBX_ECONFIG, "config: key '%s.detached': a detached sandbox cannot "
		                "use network mode 'allowlist' (its proxy lives with the host process)",
		                who);
	}
	if ((r = decide_users(sb, cfg)) < 0 || (r = start_proxy(sb, cfg)) < 0) {
		free_sandbox(sb);
		return r;
	}
	sweep_dead_cgroups(&sb->cfg);
	if ((r = sb->opts->detached ? attach_or_launch(sb) : launch(sb)) < 0) {
		char why[1024];
		snprintf(why, sizeof why, "%s", sbx_last_error());
		stop_and_tidy(sb);   /* quietly: the launch's message is the one that matters */
		sbx_fail(r, "%s", why);
		free_sandbox(sb);
		return r;
	}
	*out = sb;
	return 0;
}

int sbx_sandbox_restart(struct sbx_sandbox *sb)
{
	if (sb->opts->detached)
		return restart_detached(sb);
	sbx_runclient_kill_all(&sb->live, false);
	stop_and_tidy(sb);
	return launch(sb);
}

void sbx_sandbox_stop(struct sbx_sandbox *sb)
{
	if (!sb)
		return;
	sbx_runclient_kill_all(&sb->live, true);
	if (sb->opts->detached)
		close(SBX_TAKE_FD(sb->ctl));   /* only detaches: the sandbox runs on */
	else
		stop_and_tidy(sb);
	free_sandbox(sb);
	sbx_spare_nudge();   /* the caller's work is done: a spare may start now */
}
