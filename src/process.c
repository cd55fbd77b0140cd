/* The process API: a command that keeps running while the caller talks to it (MCP servers,
 * REPLs). The workspace keeps a list of live handles so that closing or resetting it stops
 * them even if the caller forgot, and handles freed later stay safe to use. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "audit.h"
#include "gitguard.h"
#include "internal.h"
#include "opts.h"
#include "util/error.h"


struct sbx_process {
	sbx_workspace *ws;        /* NULL once detached from a closed or reset workspace */
	sbx_spawned sp;
	bool ended;
	bool pty;                 /* sp.in_fd and sp.out_fd are the terminal's master */
	int exit_code;
	int term_signal;
	struct sbx_process *next; /* in ws->procs */
};

static int read_spawn_opts(const sbx_spawn_opts *in, sbx_spawn_opts *o)
{
	int r = SBX_OPTS_READ(in, o, sbx_spawn_opts);

	if (r < 0)
		return r;
	if (o->flags & ~(SBX_SPAWN_CLEAR_ENV | SBX_SPAWN_MERGE_STDERR))
		return sbx_fail(-SBX_EINVAL, "opts.flags: unknown bits 0x%x", o->flags);
	if (o->pty != 0 && o->pty != 1)
		return sbx_fail(-SBX_EINVAL, "opts.pty: %d is neither 0 nor 1", o->pty);
	if (!o->pty && (o->rows || o->cols))
		return sbx_fail(-SBX_EINVAL, "opts.rows, opts.cols: a size needs opts.pty");
	return 0;
}

static void link_process(sbx_workspace *ws, struct sbx_process *p)
{
	pthread_mutex_lock(&ws->procs_lock);
	p->next = ws->procs;
	ws->procs = p;
	pthread_mutex_unlock(&ws->procs_lock);
}

static void unlink_process(sbx_workspace *ws, struct sbx_process *p)
{
	pthread_mutex_lock(&ws->procs_lock);
	for (struct sbx_process **at = &ws->procs; *at; at = &(*at)->next) {
		if (*at == p) {
			*at = p->next;
			break;
		}
	}
	pthread_mutex_unlock(&ws->procs_lock);
}

/* hooked: ask the approval hook and write the audit record (the public call); the Bash
 * tool's background shells asked and logged once already, as a tool call. */
static int spawn_process(sbx_workspace *ws, const char *const argv[], const sbx_spawn_opts *opts,
                         bool hooked, sbx_process **out)
{
	struct sbx_process *p;
	sbx_audit_rec rec = { 0 };
	sbx_spawn_opts o;
	int r;

	if (!out)
		return sbx_fail(-SBX_EINVAL, "out is NULL");
	*out = NULL;
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "workspace is NULL");
	if ((r = read_spawn_opts(opts, &o)) < 0)
		return r;
	if (!argv || !argv[0])
		return sbx_fail(-SBX_EINVAL, "argv: must hold at least the program");
	/* A spawned process is logged when it starts: its end is the caller's to observe. */
	if (hooked && (r = sbx_exec_approve(ws, "spawn", argv, o.cwd, &rec)) < 0)
		return r;
	if (!(p = calloc(1, sizeof *p))) {
		sbx_audit_end(&rec);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	p->pty = o.pty;
	r = o.pty ? sbx_spawn_command_pty(ws, argv, o.cwd, o.env, o.flags, o.rows, o.cols, &p->sp)
	          : sbx_spawn_command(ws, argv, o.cwd, o.env, o.flags, true, &p->sp);
	if (r < 0) {
		sbx_audit_str(&rec, "result", "error");
		sbx_audit_str(&rec, "error", sbx_last_error());
		sbx_audit_end(&rec);
		free(p);
		return r;
	}
	sbx_audit_str(&rec, "result", "started");
	sbx_audit_end(&rec);
	p->ws = ws;
	link_process(ws, p);
	*out = p;
	return 0;
}

int sbx_process_spawn(sbx_workspace *ws, const char *const argv[], const sbx_spawn_opts *opts,
                      sbx_process **out)
{
	return spawn_process(ws, argv, opts, true, out);
}

int sbx_process_spawn_unhooked(sbx_workspace *ws, const char *const argv[],
                               const sbx_spawn_opts *opts, sbx_process **out)
{
	return spawn_process(ws, argv, opts, false, out);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Stops the command and drops the backend's side; the handle keeps its fds until freed. */
static void release_backend_side(struct sbx_process *p)
{
	const sbx_backend_ops *ops = p->ws->ops;

	if (!p->ended) {
		ops->proc_kill(p->sp.proc);
		if (ops->proc_wait(p->sp.proc, -1, &p->exit_code, &p->term_signal) == 0)
			p->ended = true;
	}
	ops->proc_release(p->sp.proc);
	p->sp.proc = NULL;
	p->sp.wait_fd = -1;
	if (!p->ended) {
		p->ended = true;
		p->exit_code = -1;
		p->term_signal = 9;
	}
}

void sbx_process_detach_all(sbx_workspace *ws)
{
	struct sbx_process *p;

	pthread_mutex_lock(&ws->procs_lock);
	/* Every tree gets its kill first, so they die in parallel rather than one by one. */
	for (p = ws->procs; p; p = p->next)
		if (!p->ended)
			ws->ops->proc_kill(p->sp.proc);
	while ((p = ws->procs)) {
		ws->procs = p->next;
		release_backend_side(p);
		p->ws = NULL;
	}
	pthread_mutex_unlock(&ws->procs_lock);
}

int sbx_process_fd(const sbx_process *p, int stream)
{
	int fd;

	if (!p)
		return sbx_fail(-SBX_EINVAL, "process is NULL");
	switch (stream) {
	case SBX_STDIN: fd = p->sp.in_fd; break;
	case SBX_STDOUT: fd = p->sp.out_fd; break;
	case SBX_STDERR: fd = p->sp.err_fd; break;
	default: return sbx_fail(-SBX_EINVAL, "stream %d: use SBX_STDIN, SBX_STDOUT or SBX_STDERR",
	                         stream);
	}
	return fd >= 0 ? fd : sbx_fail(-SBX_EBADF, "stream %d is closed", stream);
}

/* Waits until fd is ready for `events` or timeout_ms passes; -SBX_ETIMEDOUT if not. */
static int wait_ready(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int64_t until = timeout_ms < 0 ? -1 : sbx_now_ms() + timeout_ms;

	for (;;) {
		int left = until < 0 ? -1 : (int)(until > sbx_now_ms() ? until - sbx_now_ms() : 0);
		int n = poll(&pfd, 1, left);
		if (n > 0)
			return 0;
		if (n == 0)
			return sbx_fail(-SBX_ETIMEDOUT, "no data within %d ms", timeout_ms);
		if (errno != EINTR)
			return sbx_fail(sbx_errno_code(errno), "poll: %s", strerror(errno));
	}
}

int sbx_process_write(sbx_process *p, const void *data, size_t len)
{
	const char *at = data;
	int r;

	if (!p || (!data && len))
		return sbx_fail(-SBX_EINVAL, "%s is NULL", p ? "data" : "process");
	if (p->sp.in_fd < 0)
		return sbx_fail(-SBX_EBADF, "stdin is closed");
	while (len) {
		ssize_t n = sbx_pipe_write(p->sp.in_fd, at, len);
		if (n == -EAGAIN) {           /* the caller made the fd non-blocking */
			if ((r = wait_ready(p->sp.in_fd, POLLOUT, -1)) < 0)
				return r;
			continue;
		}
		if (n < 0)
			return sbx_fail(n == -EPIPE ? -SBX_EIO : sbx_errno_code((int)-n),
			                "write to stdin: %s", strerror((int)-n));
		at += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A terminal cannot be half-closed (closing its master hangs it up): end-of-file is the
 * character a user types for it. */
static int type_end_of_file(struct sbx_process *p)
{
	struct termios t;
	char eof = 4; /* ^D, the default */

	if (tcgetattr(p->sp.in_fd, &t) == 0 && t.c_cc[VEOF] != _POSIX_VDISABLE)
		eof = (char)t.c_cc[VEOF];
	return sbx_process_write(p, &eof, 1);
}

int sbx_process_close_stdin(sbx_process *p)
{
	int r;

	if (!p)
		return sbx_fail(-SBX_EINVAL, "process is NULL");
	if (p->sp.in_fd < 0)
		return sbx_fail(-SBX_EBADF, "stdin is already closed");
	if (p->pty && (r = type_end_of_file(p)) < 0)
		return r;
	close_fd(&p->sp.in_fd);
	return 0;
}

int sbx_process_resize(sbx_process *p, unsigned short rows, unsigned short cols)
{
	struct winsize size = { .ws_row = rows, .ws_col = cols };

	if (!p)
		return sbx_fail(-SBX_EINVAL, "process is NULL");
	if (!p->pty)
		return sbx_fail(-SBX_EINVAL, "resize: the process has no terminal (spawn it with "
		                "opts.pty)");
	if (!rows || !cols)
		return sbx_fail(-SBX_EINVAL, "resize: rows and cols must be at least 1 (got %u x %u)",
		                (unsigned)rows, (unsigned)cols);
	/* The read end stays open until the handle is freed, whatever happened to stdin. */
	if (ioctl(p->sp.out_fd, TIOCSWINSZ, &size) < 0)
		return sbx_fail(sbx_errno_code(errno), "resize: %s", strerror(errno));
	return 0;
}

int sbx_process_read(sbx_process *p, int stream, void *buf, size_t cap, int timeout_ms,
                     size_t *nread)
{
	int fd, r;
	ssize_t n;

	if (!p || !buf || !nread)
		return sbx_fail(-SBX_EINVAL, "%s is NULL", !p ? "process" : !buf ? "buf" : "nread");
	*nread = 0;
	if (stream != SBX_STDOUT && stream != SBX_STDERR)
		return sbx_fail(-SBX_EINVAL, "stream %d: read SBX_STDOUT or SBX_STDERR", stream);
	if ((fd = sbx_process_fd(p, stream)) < 0)
		return fd;
	if (timeout_ms < -1)
		return sbx_fail(-SBX_EINVAL, "timeout_ms: %d is negative (use -1 for none)",
		                timeout_ms);
	for (;;) {
		if ((r = wait_ready(fd, POLLIN, timeout_ms)) < 0)
			return r;
		n = read(fd, buf, cap);
		if (n >= 0) {
			*nread = (size_t)n;
			return 0;
		}
		/* A terminal whose every slave fd closed reads EIO: that is its end-of-file. */
		if (errno == EIO && p->pty)
			return 0;
		if (errno != EINTR && errno != EAGAIN)
			return sbx_fail(sbx_errno_code(errno), "read: %s", strerror(errno));
		if (errno == EAGAIN && timeout_ms == 0)
			return sbx_fail(-SBX_ETIMEDOUT, "no data");
	}
}

int sbx_process_wait(sbx_process *p, int timeout_ms, int *exit_code, int *term_signal)
{
	int r;

	if (!p)
		return sbx_fail(-SBX_EINVAL, "process is NULL");
	if (timeout_ms < -1)
		return sbx_fail(-SBX_EINVAL, "timeout_ms: %d is negative (use -1 for none)",
		                timeout_ms);
	if (!p->ended) {
		r = p->ws->ops->proc_wait(p->sp.proc, timeout_ms, &p->exit_code, &p->term_signal);
		if (r < 0)
			return r;
		p->ended = true;
		/* The command is over: before the caller hears it, nothing it planted for git stays. */
		sbx_gitguard_check(p->ws, "spawn");
	}
	if (exit_code)
		*exit_code = p->exit_code;
	if (term_signal)
		*term_signal = p->term_signal;
	return 0;
}

int sbx_process_signal(sbx_process *p, int sig)
{
	if (!p)
		return sbx_fail(-SBX_EINVAL, "process is NULL");
	if (sig <= 0 || sig >= 65)
		return sbx_fail(-SBX_EINVAL, "sig: %d is not a signal number", sig);
	if (p->ended)
		return sbx_fail(-SBX_ESTATE, "the process has ended");
	return p->ws->ops->proc_signal(p->sp.proc, sig);
}

int sbx_process_kill(sbx_process *p)
{
	if (!p)
		return sbx_fail(-SBX_EINVAL, "process is NULL");
	if (p->ended)
		return 0;
	return p->ws->ops->proc_kill(p->sp.proc);
}

void sbx_process_free(sbx_process *p)
{
	if (!p)
		return;
	if (p->ws) {
		bool was_running = !p->ended;
		unlink_process(p->ws, p);
		release_backend_side(p);
		if (was_running)
			sbx_gitguard_check(p->ws, "spawn");
	}
	close_fd(&p->sp.in_fd);
	close_fd(&p->sp.out_fd);
	close_fd(&p->sp.err_fd);
	free(p);
}
