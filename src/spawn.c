/* Starting one command: arguments checked, environment composed, working directory resolved
 * beneath the root, stdio pipes made. Shared by sbx_exec and the process API, so both apply
 * the same rules on every backend. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/path.h"

#define SBX_ARGV_MAX_ENTRIES 65536
#define SBX_ARGV_MAX_BYTES ((size_t)2 << 20)

static int check_argv(const char *const argv[])
{
	size_t total = 0, n = 0;

	if (!argv || !argv[0])
		return sbx_fail(-SBX_EINVAL, "argv: empty (argv[0] is the command)");
	if (!argv[0][0])
		return sbx_fail(-SBX_EINVAL, "argv[0]: empty command name");
	for (; argv[n]; n++) {
		total += strlen(argv[n]) + 1;
		if (n >= SBX_ARGV_MAX_ENTRIES || total > SBX_ARGV_MAX_BYTES)
			return sbx_fail(-SBX_E2BIG, "argv: more than %d entries or %zu bytes",
			                SBX_ARGV_MAX_ENTRIES, SBX_ARGV_MAX_BYTES);
	}
	return 0;
}

/* The command's cwd as commands see it, and for host-file backends an fd verified beneath
 * the root (the backend starts the command there, so a symlink swapped in later can't
 * redirect it). */
static int resolve_cwd(sbx_workspace *ws, const char *cwd, char **view, int *cwd_fd)
{
	const char *root = ws->ops->root(ws->state);
	_cleanup_free_ char *rel = NULL;
	int r;

	*cwd_fd = -1;
	if ((r = sbx_workspace_relative(ws, cwd ? cwd : "", "cwd", &rel)) < 0)
		return r;
	if (ws->caps & SBX_BACKEND_CAP_HOST_FILES) {
		int fd = sbx_path_open(ws->root_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (fd < 0)
			return fd;
		*cwd_fd = fd;
	} else {
		char *norm = NULL;
		if ((r = sbx_path_normalize(rel, "cwd", &norm)) < 0)
			return r;
		free(rel);
		rel = norm;
	}
	if (asprintf(view, "%s%s%s", root, *rel && root[strlen(root) - 1] != '/' ? "/" : "",
	             rel) < 0) {
		if (*cwd_fd >= 0)
			close(*cwd_fd);
		*cwd_fd = -1;
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	return 0;
}

struct child_ends {
	int in, out, err;
};

static void close_ends(struct child_ends *c)
{
	if (c->in >= 0)
		close(c->in);
	if (c->err >= 0 && c->err != c->out)
		close(c->err);
	if (c->out >= 0)
		close(c->out);
}

static int make_pipe(int *host, int *child, bool host_writes)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return sbx_fail(sbx_errno_code(errno), "pipe: %s", strerror(errno));
	*host = host_writes ? p[1] : p[0];
	*child = host_writes ? p[0] : p[1];
	return 0;
}

static int make_stdio(bool want_stdin, bool merge, sbx_spawned *host, struct child_ends *child)
{
	int r;

	if (want_stdin) {
		if ((r = make_pipe(&host->in_fd, &child->in, true)) < 0)
			return r;
	} else if ((child->in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		return sbx_fail(sbx_errno_code(errno), "open /dev/null: %s", strerror(errno));
	}
	if ((r = make_pipe(&host->out_fd, &child->out, false)) < 0)
		return r;
	if (merge) {
		child->err = child->out;
		return 0;
	}
	return make_pipe(&host->err_fd, &child->err, false);
}

static void close_host_ends(sbx_spawned *s)
{
	if (s->in_fd >= 0)
		close(s->in_fd);
	if (s->out_fd >= 0)
		close(s->out_fd);
	if (s->err_fd >= 0)
		close(s->err_fd);
	s->in_fd = s->out_fd = s->err_fd = -1;
}

/* A terminal's child ends are /dev/null: the runner puts the terminal it makes on fds 0-2. */
static int make_null_stdio(struct child_ends *child)
{
	if ((child->in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 ||
	    (child->out = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0)
		return sbx_fail(sbx_errno_code(errno), "open /dev/null: %s", strerror(errno));
	child->err = child->out;
	return 0;
}

/* The terminal's master, as the host ends: one fd to write stdin, a copy to read output. */
static int take_master(int master, sbx_spawned *out)
{
	if (master < 0)
		return sbx_fail(-SBX_EPROTO, "pty: the backend started the command without a "
		                "terminal");
	out->in_fd = master;
	if ((out->out_fd = fcntl(master, F_DUPFD_CLOEXEC, 3)) < 0)
		return sbx_fail(sbx_errno_code(errno), "pty: dup: %s", strerror(errno));
	return 0;
}

struct pty_request {
	bool on;
	unsigned short rows, cols;
};

static int spawn_with(sbx_workspace *ws, const char *const argv[], const char *cwd,
                      const char *const *env, uint32_t flags, bool want_stdin,
                      const struct pty_request *pty, sbx_spawned *out)
{
	struct child_ends child = { -1, -1, -1 };
	_cleanup_free_ char *cwd_view = NULL;
	_cleanup_close_ int cwd_fd = -1;
	char **envp = NULL;
	int r, master = -1;

	*out = (sbx_spawned){ .wait_fd = -1, .in_fd = -1, .out_fd = -1, .err_fd = -1 };
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "workspace is NULL");
	sbx_workspace_touch(ws);   /* exec, process and the Bash tool all start here */
	if (pty->on && !(ws->caps & SBX_BACKEND_CAP_PTY))
		return sbx_fail(-SBX_ENOSYS, "opts.pty: backend '%s' cannot give a command a "
		                "terminal", ws->ops->name);
	if ((r = check_argv(argv)) < 0 || (r = resolve_cwd(ws, cwd, &cwd_view, &cwd_fd)) < 0 ||
	    (r = sbx_env_compose(ws->base_env, env, flags & SBX_EXEC_CLEAR_ENV, &envp)) < 0)
		goto done;
	r = pty->on ? make_null_stdio(&child)
	            : make_stdio(want_stdin, flags & SBX_EXEC_MERGE_STDERR, out, &child);
	if (r < 0)
		goto done;
	sbx_backend_spawn req = {
		.size = sizeof req,
		.argv = argv,
		.envp = (const char *const *)envp,
		.cwd = cwd_view,
		.cwd_fd = cwd_fd,
		.stdin_fd = child.in,
		.stdout_fd = child.out,
		.stderr_fd = child.err,
		.limits = &ws->cfg->limits,
		.pty = pty->on,
		.rows = pty->rows ? pty->rows : 24,
		.cols = pty->cols ? pty->cols : 80,
		.pty_fd = pty->on ? &master : NULL,
	};
	r = ws->ops->spawn(ws->state, &req, &out->proc, &out->wait_fd);
	if (r >= 0 && pty->on && (r = take_master(master, out)) < 0) {
		ws->ops->proc_kill(out->proc);
		ws->ops->proc_release(out->proc);
		out->proc = NULL;
	}
done:
	close_ends(&child);
	sbx_strv_free(envp);
	if (r < 0)
		close_host_ends(out);
	return r;
}

int sbx_spawn_command(sbx_workspace *ws, const char *const argv[], const char *cwd,
                      const char *const *env, uint32_t flags, bool want_stdin,
                      sbx_spawned *out)
{
	const struct pty_request none = { .on = false };

	return spawn_with(ws, argv, cwd, env, flags, want_stdin, &none, out);
}

int sbx_spawn_command_pty(sbx_workspace *ws, const char *const argv[], const char *cwd,
                          const char *const *env, uint32_t flags, unsigned short rows,
                          unsigned short cols, sbx_spawned *out)
{
	const struct pty_request pty = { .on = true, .rows = rows, .cols = cols };

	return spawn_with(ws, argv, cwd, env, flags, true, &pty, out);
}

ssize_t sbx_pipe_write(int fd, const void *data, size_t len)
{
	sigset_t pipe_only, old, pending;
	bool was_pending;
	ssize_t n;
	int err;

	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	do
		n = write(fd, data, len);
	while (n < 0 && errno == EINTR);
	err = errno;
	if (n < 0 && err == EPIPE && !was_pending) {
		/* Consume the SIGPIPE this write raised before unblocking it. */
		struct timespec zero = { 0, 0 };
		sigtimedwait(&pipe_only, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return n < 0 ? -err : n;
}

