/* A running command, seen through its runner (run_proto.h): requests go down the control
 * socket, the one report comes back on it, and a runner that is our child is reaped once the
 * outcome is known (so its pid cannot be reused while we may still signal it). Shared by the
 * backends whose commands run under a runner: local (agentsbx-run) and the sandboxes (a runner
 * forked by the sandbox init). Only the functions the core calls through the ops tables record
 * error messages; the internal steps stay quiet so a release never clobbers a message. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "internal.h"
#include "util/error.h"
#include "util/fdpass.h"
#include "proto/run_proto.h"
#include "backends/common/runclient.h"

/* A poll(2) timeout for a deadline from sbx_now_ms() (-1: none). */
static int ms_until(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - sbx_now_ms();
	return left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* Returns 0 or -errno. Never raises SIGPIPE, never blocks. */
static int send_request(struct sbx_runclient *p, uint32_t op, int sig)
{
	struct sbx_run_request req = { op, sig };
	ssize_t n;

	do
		n = send(p->ctrl, &req, sizeof req, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof req)
		return 0;
	return n < 0 ? -errno : -EIO;
}

/* The runner closed its end: it has ended, so there is nothing left to signal. */
static bool runner_gone(int err)
{
	return err == -EPIPE || err == -ECONNRESET || err == -ENOTCONN || err == -ECONNREFUSED;
}

/* The last resort against a runner that does not answer. Safe by pid: the runner is not
 * reaped before the outcome is known. */
static void kill_runner(struct sbx_runclient *p)
{
	if (p->pid <= 0) {
		/* Not our child (it runs inside a sandbox): closing its control socket is the
		 * one order it cannot ignore, as it reads it as the host's death. */
		shutdown(p->ctrl, SHUT_RDWR);
		p->runner_killed = true;
		return;
	}
#ifdef SYS_pidfd_send_signal
	if (p->pidfd >= 0 && syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0) == 0) {
		p->runner_killed = true;
		return;
	}
#endif
	if (kill(p->pid, SIGKILL) == 0)
		p->runner_killed = true;
}

static void reap_runner(struct sbx_runclient *p)
{
	pid_t r;

	if (p->pid <= 0) {
		p->runner_status = 0;
		return;
	}
	do
		r = waitpid(p->pid, &p->runner_status, 0);
	while (r < 0 && errno == EINTR);
	if (r != p->pid)
		p->runner_status = -1; /* someone else reaped it (a host's SIGCHLD handler) */
}

/* The runner ended without a report: say something sane about the command anyway. */
static void judge_silent_runner(struct sbx_runclient *p)
{
	int st = p->runner_status;

	p->exit_code = 126;
	p->term_signal = 0;
	if (p->runner_killed) {
		p->exit_code = -1;
		p->term_signal = SIGKILL;
	} else if (st != -1 && WIFSIGNALED(st)) {
		p->exit_code = -1;
		p->term_signal = WTERMSIG(st);
		p->error = -SBX_EIO;
	} else {
		p->error = -SBX_EIO;
	}
}

/* The report, and the channel a kept runner of a sandbox init may offer with it
 * (run_proto.h): *offered is that fd or -1; any other fd that came along is closed (a
 * runner is inside the sandbox: what it sends must not pile up in the host). recv's return
 * value and errno. */
static ssize_t receive_report(int ctrl, struct sbx_run_report *rep, int *offered)
{
	char control[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov = { .iov_base = rep, .iov_len = sizeof *rep };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
	                      .msg_controllen = sizeof control };
	ssize_t n;

	do
		n = recvmsg(ctrl, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
		size_t nfds = c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS
		              ? (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) : 0;

		for (size_t i = 0; i < nfds; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof fd, sizeof fd);
			if (*offered < 0)
				*offered = fd;
			else
				close(fd);
		}
	}
	return n;
}

/* After a report the runner is idle: its channel (the one the command came on, or one it
 * offers now) serves the next command. Without one it is gone or not to be trusted. */
static void settle_channels(struct sbx_runclient *p, bool reported, int offered)
{
	if (reported && p->pool) {
		if (p->channel >= 0)
			sbx_runclient_pool_give(p->pool, p->channel);
		if (offered >= 0)
			sbx_runclient_pool_give(p->pool, offered);
	} else {
		if (p->channel >= 0)
			close(p->channel);
		if (offered >= 0)
			close(offered);
	}
	p->channel = -1;
}

/* Takes the report, or notices the runner ended without one, then reaps the runner.
 * Returns false when there was nothing to read yet. */
static bool collect(struct sbx_runclient *p)
{
	struct sbx_run_report rep;
	int offered = -1;
	ssize_t n = receive_report(p->ctrl, &rep, &offered);

	if (n < 0 && errno == EAGAIN)
		return false;
	settle_channels(p, n == (ssize_t)sizeof rep && rep.kind == SBX_RUN_EXITED, offered);
	if (n > 0 && (n != (ssize_t)sizeof rep || rep.kind != SBX_RUN_EXITED)) {
		kill_runner(p); /* it speaks nonsense: it cannot be trusted to end by itself */
		reap_runner(p);
		p->exit_code = -1;
		p->term_signal = SIGKILL;
		p->error = -SBX_EPROTO;
	} else {
		reap_runner(p); /* after a report it exits at once; after end-of-file it has */
		if (n == (ssize_t)sizeof rep) {
			p->exit_code = rep.exit_code;
			p->term_signal = rep.term_signal;
		} else {
			judge_silent_runner(p);
		}
	}
	p->ended = true;
	return true;
}

/* Waits up to timeout_ms (-1 = forever) for the outcome. Returns 0 once ended,
 * -ETIMEDOUT, or another -errno from poll. */
static int wait_for_end(struct sbx_runclient *p, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : sbx_now_ms() + timeout_ms;

	while (!p->ended) {
		struct pollfd pfd = { .fd = p->ctrl, .events = POLLIN };
		int r = poll(&pfd, 1, ms_until(deadline));

		if (r < 0 && errno != EINTR)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		if (r > 0)
			collect(p);
	}
	return 0;
}

static int report_outcome(const struct sbx_runclient *p, int *exit_code, int *term_signal)
{
	int st = p->runner_status;

	if (exit_code)
		*exit_code = p->exit_code;
	if (term_signal)
		*term_signal = p->term_signal;
	if (!p->error)
		return 0;
	if (p->error == -SBX_EPROTO)
		return sbx_fail(p->error, "%s: the runner broke its protocol", p->who);
	if (p->pid <= 0)
		return sbx_fail(p->error, "%s: the runner ended without a report", p->who);
	if (st == -1)
		return sbx_fail(p->error, "%s: the runner vanished (reaped by someone else)", p->who);
	if (WIFSIGNALED(st))
		return sbx_fail(p->error, "%s: the runner died: signal %d", p->who, WTERMSIG(st));
	return sbx_fail(p->error, "%s: the runner exited with status %d without a report",
	                p->who, WEXITSTATUS(st));
}

/* The runner's first message, SBX_RUN_PTY: its terminal's master, or why it has none. */
static int receive_pty(struct sbx_runclient *p, int *fd)
{
	struct sbx_run_report rep;
	size_t nfds = 0;
	int r = sbx_recv_with_fds(p->ctrl, &rep, sizeof rep, fd, 1, &nfds);

	if (r == -EPIPE)
		return sbx_fail(-SBX_EIO, "%s: the runner ended before making the terminal", p->who);
	if (r < 0)
		return sbx_fail(-SBX_EPROTO, "%s: receiving the terminal: %s", p->who, strerror(-r));
	if (rep.kind == SBX_RUN_PTY && rep.exit_code == 0 && nfds == 1)
		return 0;
	if (nfds)
		close(*fd);
	*fd = -1;
	if (rep.kind == SBX_RUN_PTY && rep.exit_code == 0)
		return sbx_fail(-SBX_ENOSYS, "%s: pty: the terminal made where the command runs "
		                "cannot be handed to the host (a runtime such as gVisor keeps its "
		                "terminals inside its own kernel)", p->who);
	if (rep.kind == SBX_RUN_PTY && rep.exit_code > 0)
		return sbx_fail(-SBX_ENOSYS, "%s: pty: no terminal could be made where the command "
		                "runs, or handed to the host (a runtime such as gVisor keeps its "
		                "terminals inside its own kernel): %s", p->who,
		                strerror(rep.exit_code));
	/* An EXITED report first: the sandbox refused the command before the terminal (its
	 * refusals end in 126: helpers/init/server.c, a working directory it cannot enter), or a
	 * runner that ignored the request (one older than 1.7). */
	if (rep.kind == SBX_RUN_EXITED && rep.exit_code == 126 && rep.term_signal == 0)
		return sbx_fail(-SBX_EIO, "%s: pty: the sandbox refused to start the command before "
		                "making its terminal (exit status 126; a working directory that does "
		                "not exist there, say)", p->who);
	return sbx_fail(-SBX_ENOSYS, "%s: pty: the command's runner made no terminal (is the "
	                "sandbox's helper older than the library?)", p->who);
}

int sbx_runclient_take_pty(struct sbx_runclient *p, int timeout_ms, int *fd)
{
	struct pollfd pfd = { .fd = p->ctrl, .events = POLLIN };
	int64_t deadline = sbx_now_ms() + timeout_ms;
	int r;

	*fd = -1;
	while ((r = poll(&pfd, 1, ms_until(deadline))) < 0 && errno == EINTR)
		;
	if (r < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: poll: %s", p->who, strerror(errno));
	if (r == 0)
		return sbx_fail(-SBX_ETIMEDOUT, "%s: pty: the runner sent no terminal within %d ms",
		                p->who, timeout_ms);
	return receive_pty(p, fd);
}

int sbx_runclient_wait(void *proc, int timeout_ms, int *exit_code, int *term_signal)
{
	struct sbx_runclient *p = proc;
	int r = wait_for_end(p, timeout_ms);

	if (r == -ETIMEDOUT)
		return sbx_fail(-SBX_ETIMEDOUT, "%s: the command is still running", p->who);
	if (r < 0)
		return sbx_fail(sbx_errno_code(-r), "%s: wait: %s", p->who, strerror(-r));
	return report_outcome(p, exit_code, term_signal);
}

int sbx_runclient_signal(void *proc, int sig)
{
	struct sbx_runclient *p = proc;
	int r;

	if (sig < 0 || sig >= NSIG)
		return sbx_fail(-SBX_EINVAL, "%s: invalid signal %d", p->who, sig);
	if (p->ended)
		return 0;
	r = send_request(p, SBX_RUN_SIGNAL, sig);
	if (r == 0 || runner_gone(r))
		return 0;
	return sbx_fail(-SBX_EIO, "%s: signal: the runner does not answer: %s", p->who,
	                strerror(-r));
}

/* Quiet: called from release and the workspace's reset and close. */
static void kill_quietly(struct sbx_runclient *p)
{
	int r;

	if (p->ended)
		return;
	r = send_request(p, SBX_RUN_KILL, SIGKILL);
	if (r < 0 && !runner_gone(r))
		kill_runner(p);
}

int sbx_runclient_kill(void *proc)
{
	kill_quietly(proc);
	return 0;
}

void sbx_runclient_finish(struct sbx_runclient *p, int timeout_ms)
{
	if (p->ended)
		return;
	kill_quietly(p);
	if (wait_for_end(p, timeout_ms) == -ETIMEDOUT) {
		kill_runner(p);
		wait_for_end(p, -1);
	}
}

void sbx_runclient_release(void *proc)
{
	struct sbx_runclient *p = proc;

	if (!p)
		return;
	sbx_runclient_finish(p, SBX_RUNCLIENT_RELEASE_TIMEOUT_MS);
	sbx_runclient_untrack(p);
	close(p->ctrl);
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (p->channel >= 0)
		close(p->channel);
	sbx_runclient_pool_unref(p->pool);
	free(p);
}

/* Which runner limit carries which configured limit. ("pids" is a cgroup limit.) */
static const struct {
	const char *name;
	size_t offset;
} rlimit_fields[SBX_RUNCLIENT_MAX_RLIMITS] = {
	{ "cpu", offsetof(sbx_backend_limits, cpu_seconds) },
	{ "fsize", offsetof(sbx_backend_limits, file_size_bytes) },
	{ "nofile", offsetof(sbx_backend_limits, open_files) },
	{ "nproc", offsetof(sbx_backend_limits, processes) },
	{ "as", offsetof(sbx_backend_limits, memory_bytes) },
};

void sbx_runclient_pty_text(unsigned short rows, unsigned short cols, sbx_pty_text out)
{
	snprintf(out, sizeof(sbx_pty_text), "%ux%u", (unsigned)rows, (unsigned)cols);
}

size_t sbx_runclient_rlimits(const struct sbx_backend_limits *limits,
                             sbx_rlimit_text text[SBX_RUNCLIENT_MAX_RLIMITS])
{
	size_t n = 0;

	for (size_t i = 0; limits && i < SBX_RUNCLIENT_MAX_RLIMITS; i++) {
		uint64_t value;

		memcpy(&value, (const char *)limits + rlimit_fields[i].offset, sizeof value);
		if (value)
			snprintf(text[n++], sizeof text[0], "%s=%" PRIu64, rlimit_fields[i].name, value);
	}
	return n;
}

struct sbx_runclient *sbx_runclient_new(pid_t pid, int ctrl, const char *who)
{
	struct sbx_runclient *p = calloc(1, sizeof *p);

	if (!p)
		return NULL;
	p->pid = pid;
	p->pidfd = -1;
#ifdef SYS_pidfd_open
	if (pid > 0)
		p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* always close-on-exec */
#endif
	p->ctrl = ctrl;
	p->who = who;
	p->channel = -1;
	return p;
}

void sbx_runclient_set_pool(struct sbx_runclient *p, struct sbx_runclient_pool *pool,
                            int channel)
{
	p->pool = sbx_runclient_pool_ref(pool);
	p->channel = channel;
}

/* ---- the runners' channels ---- */

struct sbx_runclient_pool {
	atomic_int refs;
	pthread_mutex_t lock;
	bool closed;                  /* keeps nothing any more */
	size_t n;
	int fds[SBX_RUNCLIENT_POOL_MAX];
};

struct sbx_runclient_pool *sbx_runclient_pool_new(void)
{
	struct sbx_runclient_pool *pool = calloc(1, sizeof *pool);

	if (!pool)
		return NULL;
	atomic_init(&pool->refs, 1);
	pthread_mutex_init(&pool->lock, NULL);
	return pool;
}

struct sbx_runclient_pool *sbx_runclient_pool_ref(struct sbx_runclient_pool *pool)
{
	if (pool)
		atomic_fetch_add(&pool->refs, 1);
	return pool;
}

void sbx_runclient_pool_unref(struct sbx_runclient_pool *pool)
{
	if (!pool || atomic_fetch_sub(&pool->refs, 1) != 1)
		return;
	sbx_runclient_pool_close(pool);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}

int sbx_runclient_pool_take(struct sbx_runclient_pool *pool)
{
	int fd = -1;

	if (!pool)
		return -1;
	pthread_mutex_lock(&pool->lock);
	if (pool->n)
		fd = pool->fds[--pool->n];
	pthread_mutex_unlock(&pool->lock);
	return fd;
}

void sbx_runclient_pool_give(struct sbx_runclient_pool *pool, int fd)
{
	bool kept = false;

	pthread_mutex_lock(&pool->lock);
	if (!pool->closed && pool->n < SBX_RUNCLIENT_POOL_MAX) {
		pool->fds[pool->n++] = fd;
		kept = true;
	}
	pthread_mutex_unlock(&pool->lock);
	if (!kept)
		close(fd);
}

static void close_channels(struct sbx_runclient_pool *pool, bool for_good)
{
	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->closed = pool->closed || for_good;
	while (pool->n)
		close(pool->fds[--pool->n]);
	pthread_mutex_unlock(&pool->lock);
}

void sbx_runclient_pool_clear(struct sbx_runclient_pool *pool)
{
	close_channels(pool, false);
}

void sbx_runclient_pool_close(struct sbx_runclient_pool *pool)
{
	close_channels(pool, true);
}

void sbx_runclient_set_init(struct sbx_runclient_set *set)
{
	pthread_mutex_init(&set->lock, NULL);
	set->live = NULL;
	set->pool = NULL;
}

void sbx_runclient_set_destroy(struct sbx_runclient_set *set)
{
	/* Commands may outlive the set (and hold the pool): nothing they give back is kept. */
	sbx_runclient_pool_close(set->pool);
	sbx_runclient_pool_unref(set->pool);
	set->pool = NULL;
	pthread_mutex_destroy(&set->lock);
}

void sbx_runclient_track(struct sbx_runclient_set *set, struct sbx_runclient *p)
{
	pthread_mutex_lock(&set->lock);
	p->set = set;
	p->prev = NULL;
	p->next = set->live;
	if (set->live)
		set->live->prev = p;
	set->live = p;
	pthread_mutex_unlock(&set->lock);
}

static void unlink_locked(struct sbx_runclient *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else
		p->set->live = p->next;
	if (p->next)
		p->next->prev = p->prev;
	p->prev = p->next = NULL;
	p->set = NULL;
}

void sbx_runclient_untrack(struct sbx_runclient *p)
{
	struct sbx_runclient_set *set = p->set;

	if (!set)
		return;
	pthread_mutex_lock(&set->lock);
	unlink_locked(p);
	pthread_mutex_unlock(&set->lock);
}

void sbx_runclient_kill_all(struct sbx_runclient_set *set, bool forget)
{
	pthread_mutex_lock(&set->lock);
	/* Ask every runner first so the trees die in parallel, then collect them. */
	for (struct sbx_runclient *p = set->live; p; p = p->next)
		sbx_runclient_kill(p);
	for (struct sbx_runclient *p = set->live; p; p = p->next)
		sbx_runclient_finish(p, SBX_RUNCLIENT_RELEASE_TIMEOUT_MS);
	while (forget && set->live)
		unlink_locked(set->live);
	pthread_mutex_unlock(&set->lock);
}
