/* Starting a command: agentsbx-run with the command's environment and working directory, its
 * stdio on fds 0-2 and the control socket on fd 3 (see src/proto/run_proto.h). The library may
 * live in a multi-threaded host, so the runner is started with posix_spawn, never fork. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "util/cleanup.h"
#include "util/error.h"
#include "proto/run_proto.h"
#include "local.h"

struct rlimit_args {
	sbx_rlimit_text text[SBX_RUNCLIENT_MAX_RLIMITS]; /* storage for the argv strings */
	sbx_pty_text pty;
};

static bool wants_pty(const sbx_backend_spawn *req)
{
	return SBX_BACKEND_SPAWN_HAS(req, pty_fd) && req->pty && req->pty_fd;
}

/* runner --proto 1 [--rlimit NAME=VALUE]... [--pty ROWSxCOLS] -- COMMAND... ; NULL on
 * allocation failure. */
static const char **build_runner_argv(const char *runner, const sbx_backend_spawn *req,
                                      const sbx_backend_limits *limits,
                                      const char *const *cmd, struct rlimit_args *store)
{
	size_t argc = 0, n = 0;
	const char **argv;

	while (cmd[argc])
		argc++;
	argv = calloc(3 + 2 * SBX_RUNCLIENT_MAX_RLIMITS + 2 + 1 + argc + 1, sizeof *argv);
	if (!argv)
		return NULL;
	argv[n++] = runner;
	argv[n++] = "--proto";
	argv[n++] = "1";
	for (size_t i = 0, k = sbx_runclient_rlimits(limits, store->text); i < k; i++) {
		argv[n++] = "--rlimit";
		argv[n++] = store->text[i];
	}
	if (wants_pty(req)) {
		sbx_runclient_pty_text(req->rows, req->cols, store->pty);
		argv[n++] = "--pty";
		argv[n++] = store->pty;
	}
	argv[n++] = "--";
	for (size_t i = 0; i < argc; i++)
		argv[n++] = cmd[i];
	return argv;
}

/* posix_spawn applies its dup2 actions in order, so a source fd that is also one of the
 * targets 0-3 could be overwritten by an earlier action: such an fd is first copied above
 * them. Returns the fd to use (fd itself, a copy kept in *copy, or -1 on failure). */
static int fd_clear_of_targets(int fd, int *copy)
{
	if (fd < 0 || fd > SBX_RUN_CONTROL_FD)
		return fd;
	*copy = fcntl(fd, F_DUPFD_CLOEXEC, SBX_RUN_CONTROL_FD + 1);
	return *copy;
}

static void close_fd_copies(int (*copies)[4])
{
	for (int i = 0; i < 4; i++)
		if ((*copies)[i] >= 0)
			close((*copies)[i]);
}

static int add_stdio_actions(posix_spawn_file_actions_t *fa, const int fds[4])
{
	int err = 0;

	for (int target = 0; target <= SBX_RUN_CONTROL_FD && !err; target++) {
		if (fds[target] >= 0)
			err = posix_spawn_file_actions_adddup2(fa, fds[target], target);
		else
			err = posix_spawn_file_actions_addopen(fa, target, "/dev/null", O_RDWR, 0);
	}
	return err;
}

static int add_cwd_action(posix_spawn_file_actions_t *fa, const struct local_ws *ws,
                          const sbx_backend_spawn *req)
{
	/* The core verified cwd_fd beneath the root; the path is only a fallback. */
	if (req->cwd_fd >= 0)
		return posix_spawn_file_actions_addfchdir_np(fa, req->cwd_fd);
	return posix_spawn_file_actions_addchdir_np(fa, req->cwd ? req->cwd : ws->workdir);
}

/* The host's signal mask and ignored signals (Python ignores SIGPIPE) must not leak into
 * the command. */
static int set_clean_signals(posix_spawnattr_t *attr)
{
	sigset_t none, all;
	int err;

	sigemptyset(&none);
	/* Not sigfillset: it leaves out the C library's internal signals, which posix_spawn then
	 * hands to the child ignored, and ignored signals stay ignored across exec. */
	memset(&all, 0xff, sizeof all);
	err = posix_spawnattr_setsigmask(attr, &none);
	if (!err)
		err = posix_spawnattr_setsigdefault(attr, &all);
	if (!err)
		err = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
		                                     POSIX_SPAWN_SETSID); /* out of the host's session */
	return err;
}

/* Returns 0 or an errno value. */
static int spawn_runner(const struct local_ws *ws, const sbx_backend_spawn *req,
                        const char **argv, const int fds[4], pid_t *pid)
{
	static const char *const no_env[] = { NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	int err;

	err = posix_spawn_file_actions_init(&fa);
	if (err)
		return err;
	err = posix_spawnattr_init(&attr);
	if (err) {
		posix_spawn_file_actions_destroy(&fa);
		return err;
	}
	/* chdir first: cwd_fd may itself be one of the fds the stdio actions replace. */
	err = add_cwd_action(&fa, ws, req);
	if (!err)
		err = add_stdio_actions(&fa, fds);
	if (!err)
		err = set_clean_signals(&attr);
	if (!err)
		err = posix_spawn(pid, ws->runner, &fa, &attr, (char *const *)argv,
		                  (char *const *)(req->envp ? req->envp : no_env));
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return err;
}

static const sbx_backend_limits *spawn_limits(const struct local_ws *ws,
                                              const sbx_backend_spawn *req)
{
	if (req->size >= offsetof(sbx_backend_spawn, limits) + sizeof req->limits && req->limits)
		return req->limits;
	return &ws->limits;
}

int local_spawn(void *state, const sbx_backend_spawn *req, void **proc, int *wait_fd)
{
	struct local_ws *ws = state;
	_cleanup_close_ int host_end = -1, runner_end = -1;
	int copies[4] __attribute__((cleanup(close_fd_copies))) = { -1, -1, -1, -1 };
	_cleanup_free_ const char **argv = NULL;
	struct rlimit_args rlimit_text;
	struct sbx_runclient *p;
	int sv[2], wanted[4], fds[4], err;
	pid_t pid;

	if (req->size < offsetof(sbx_backend_spawn, limits) || !req->argv || !req->argv[0])
		return sbx_fail(-SBX_EINVAL, "local: malformed spawn request");
	wanted[0] = req->stdin_fd;
	wanted[1] = req->stdout_fd;
	wanted[2] = req->stderr_fd;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return sbx_fail(sbx_errno_code(errno), "local: control socket: %s",
		                strerror(errno));
	host_end = sv[0];
	runner_end = sv[1];
	wanted[SBX_RUN_CONTROL_FD] = runner_end;
	for (int i = 0; i < 4; i++) {
		fds[i] = fd_clear_of_targets(wanted[i], &copies[i]);
		if (fds[i] < 0 && wanted[i] >= 0)
			return sbx_fail(sbx_errno_code(errno), "local: dup: %s", strerror(errno));
	}
	argv = build_runner_argv(ws->runner, req, spawn_limits(ws, req), req->argv, &rlimit_text);
	if (!argv)
		return sbx_fail(-SBX_ENOMEM, "local: out of memory");
	err = spawn_runner(ws, req, argv, fds, &pid);
	if (err)
		return sbx_fail(sbx_errno_code(err), "local: spawn %s: %s", ws->runner,
		                strerror(err));
	p = sbx_runclient_new(pid, host_end, "local");
	if (!p) {
		/* The runner sees its control socket close and ends without running much. */
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return sbx_fail(-SBX_ENOMEM, "local: out of memory");
	}
	host_end = -1;
	sbx_runclient_track(&ws->live, p);
	if (wants_pty(req) &&
	    (err = sbx_runclient_take_pty(p, SBX_RUNCLIENT_PTY_TIMEOUT_MS, req->pty_fd)) < 0) {
		sbx_runclient_release(p);
		return err;
	}
	*proc = p;
	*wait_fd = p->ctrl;
	return 0;
}
