/* A minimal out-of-tree backend: runs commands directly on the host in the workspace
 * directory. It exists to prove that plugins load and work through the public interface. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/backend.h>

struct ws {
	char *dir;
};

struct proc {
	pid_t pid;
	int pidfd;
	int done, code, sig;
};

static int tp_probe(char *detail, size_t len)
{
	snprintf(detail, len, "test plugin: runs commands on the host");
	return 0;
}

static int tp_open(const sbx_backend_config *cfg, void **state)
{
	struct ws *w = calloc(1, sizeof *w);

	if (!w || !(w->dir = strdup(cfg->workdir))) {
		free(w);
		return sbx_error_set(-SBX_ENOMEM, "testplug: out of memory");
	}
	*state = w;
	return 0;
}

static int tp_close(void *state)
{
	struct ws *w = state;

	free(w->dir);
	free(w);
	return 0;
}

static int tp_reset(void *state)
{
	(void)state;
	return 0;
}

static const char *tp_root(void *state)
{
	return ((struct ws *)state)->dir;
}

static int tp_spawn(void *state, const sbx_backend_spawn *req, void **out, int *wait_fd)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct proc *p = calloc(1, sizeof *p);
	int r;

	(void)state;
	if (!p)
		return sbx_error_set(-SBX_ENOMEM, "testplug: out of memory");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, req->stdin_fd, 0);
	posix_spawn_file_actions_adddup2(&fa, req->stdout_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, req->stderr_fd, 2);
	posix_spawn_file_actions_addfchdir_np(&fa, req->cwd_fd);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
	r = posix_spawnp(&p->pid, req->argv[0], &fa, &attr, (char *const *)req->argv,
	                 (char *const *)req->envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (r != 0) {
		free(p);
		return sbx_error_set(-SBX_EIO, "testplug: spawn %s: %s", req->argv[0], strerror(r));
	}
	p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (p->pidfd < 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		free(p);
		return sbx_error_set(-SBX_ENOSYS, "testplug: pidfd_open: %s", strerror(errno));
	}
	*out = p;
	*wait_fd = p->pidfd;
	return 0;
}

static int tp_wait(void *proc, int timeout_ms, int *code, int *sig)
{
	struct proc *p = proc;
	struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
	int status;

	if (!p->done) {
		if (poll(&pfd, 1, timeout_ms) == 0)
			return sbx_error_set(-SBX_ETIMEDOUT, "testplug: still running");
		if (waitpid(p->pid, &status, 0) < 0)
			return sbx_error_set(-SBX_EIO, "testplug: waitpid: %s", strerror(errno));
		p->done = 1;
		p->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		p->sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	}
	*code = p->code;
	*sig = p->sig;
	return 0;
}

static int tp_signal(void *proc, int sig)
{
	struct proc *p = proc;

	return p->done || kill(-p->pid, sig) == 0 ? 0 : sbx_error_set(-SBX_EIO, "kill failed");
}

static int tp_kill(void *proc)
{
	return tp_signal(proc, SIGKILL);
}

static void tp_release(void *proc)
{
	struct proc *p = proc;
	int code, sig;

	if (!p->done) {
		tp_kill(p);
		tp_wait(p, -1, &code, &sig);
	}
	close(p->pidfd);
	free(p);
}

static const sbx_backend_ops testplug_ops = {
	.size = sizeof testplug_ops,
	.abi_version = SBX_BACKEND_ABI_VERSION,
	.name = "testplug",
	.caps = SBX_BACKEND_CAP_HOST_FILES | SBX_BACKEND_CAP_NETWORK_HOST,
	.probe = tp_probe,
	.open = tp_open,
	.close = tp_close,
	.reset = tp_reset,
	.root = tp_root,
	.host_dir = tp_root,
	.spawn = tp_spawn,
	.proc_wait = tp_wait,
	.proc_signal = tp_signal,
	.proc_kill = tp_kill,
	.proc_release = tp_release,
};

__attribute__((visibility("default"))) const sbx_backend_ops *sbx_backend_plugin_entry(void);

const sbx_backend_ops *sbx_backend_plugin_entry(void)
{
	return &testplug_ops;
}
