/* A minimal out-of-tree backend: runs commands directly on the host in the workspace
 * directory. It exists to prove that plugins load and work through the public interface.
 *
 * Built a second time with TESTPLUG_REMOTE as "remoteplug": the same, but it claims no host
 * files, so the core reaches its files only through the file operations below, as it would a
 * remote machine's (the MCP suite uses it for its stream transport and gateway upload). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/backend.h>

struct ws {
	char *dir;
	int made_dir;   /* dir is a temporary one of ours: removed at close when left empty */
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
	char tmp[] = "/tmp/remoteplug-XXXXXX";

	/* Without host files the core may give no workdir: the "remote" side makes its own. */
	if (w && !cfg->workdir && !mkdtemp(tmp)) {
		free(w);
		return sbx_error_set(-SBX_EIO, "testplug: mkdtemp: %s", strerror(errno));
	}
	if (!w || !(w->dir = strdup(cfg->workdir ? cfg->workdir : tmp))) {
		free(w);
		return sbx_error_set(-SBX_ENOMEM, "testplug: out of memory");
	}
	w->made_dir = !cfg->workdir;
	*state = w;
	return 0;
}

static int tp_close(void *state)
{
	struct ws *w = state;

	if (w->made_dir)
		rmdir(w->dir);
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

	if (!p)
		return sbx_error_set(-SBX_ENOMEM, "testplug: out of memory");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, req->stdin_fd, 0);
	posix_spawn_file_actions_adddup2(&fa, req->stdout_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, req->stderr_fd, 2);
	if (req->cwd_fd >= 0)
		posix_spawn_file_actions_addfchdir_np(&fa, req->cwd_fd);
	else
		posix_spawn_file_actions_addchdir_np(&fa, req->cwd ? req->cwd
		                                               : ((struct ws *)state)->dir);
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

#ifdef TESTPLUG_REMOTE
/* ---- file operations on the "remote" directory (the core normalised rel already) ---- */

static int at_dir(void *state)
{
	return open(((struct ws *)state)->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static int errno_fail(const char *what, const char *rel)
{
	int e = errno;

	return sbx_error_set(-e, "remoteplug: %s %s: %s", what, rel, strerror(e));
}

static int tp_file_read(void *state, const char *rel, char **data, size_t *len)
{
	int dir = at_dir(state), fd = openat(dir, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	ssize_t n = 0;

	close(dir);
	if (fd < 0)
		return errno_fail("open", rel);
	if (fstat(fd, &st) < 0 || !(*data = malloc((size_t)st.st_size + 1)) ||
	    (n = read(fd, *data, (size_t)st.st_size)) != st.st_size) {
		close(fd);
		return sbx_error_set(-SBX_EIO, "remoteplug: read %s failed", rel);
	}
	close(fd);
	(*data)[n] = '\0';
	*len = (size_t)n;
	return 0;
}

static int tp_file_write(void *state, const char *rel, const void *data, size_t len,
                         unsigned mode, uint32_t flags)
{
	int dir = at_dir(state);
	int fd = openat(dir, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW |
	                (flags & SBX_WRITE_EXCL ? O_EXCL : 0), mode ? mode : 0644);

	close(dir);
	if (fd < 0)
		return errno_fail("open", rel);
	if ((mode && fchmod(fd, mode) < 0) || write(fd, data, len) != (ssize_t)len) {
		close(fd);
		return errno_fail("write", rel);
	}
	close(fd);
	return 0;
}

static int tp_file_stat(void *state, const char *rel, sbx_stat *out)
{
	int dir = at_dir(state);
	struct stat st;
	int r = fstatat(dir, rel, &st, AT_SYMLINK_NOFOLLOW);

	close(dir);
	if (r < 0)
		return errno_fail("stat", rel);
	out->type = S_ISREG(st.st_mode) ? SBX_FILE_REGULAR : S_ISDIR(st.st_mode) ? SBX_FILE_DIRECTORY
	            : SBX_FILE_OTHER;
	out->mode = st.st_mode & 07777;
	out->file_size = (uint64_t)st.st_size;
	out->mtime_sec = st.st_mtim.tv_sec;
	out->mtime_nsec = st.st_mtim.tv_nsec;
	return 0;
}

static int tp_file_mkdir(void *state, const char *rel, unsigned mode)
{
	int dir = at_dir(state), r = mkdirat(dir, rel, mode);

	close(dir);
	return r < 0 ? errno_fail("mkdir", rel) : 0;
}
#endif

static const sbx_backend_ops testplug_ops = {
	.size = sizeof testplug_ops,
	.abi_version = SBX_BACKEND_ABI_VERSION,
#ifdef TESTPLUG_REMOTE
	.name = "remoteplug",
	.caps = SBX_BACKEND_CAP_NETWORK_HOST,
	.file_read = tp_file_read,
	.file_write = tp_file_write,
	.file_stat = tp_file_stat,
	.file_mkdir = tp_file_mkdir,
#else
	.name = "testplug",
	.caps = SBX_BACKEND_CAP_HOST_FILES | SBX_BACKEND_CAP_NETWORK_HOST,
#endif
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
