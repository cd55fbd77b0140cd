/* A running command, seen through its runner: requests go down the control socket, the one
 * report comes back on it, and the runner is reaped once the outcome is known (so its pid
 * cannot be reused while we may still signal it). Only the ops called by the core record
 * error messages; the internal steps stay quiet so a release never clobbers a message. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "internal.h"
#include "util/error.h"
#include "run_proto.h"
#include "local.h"

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
static int send_request(struct local_proc *p, uint32_t op, int sig)
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
static void kill_runner(struct local_proc *p)
{
#ifdef SYS_pidfd_send_signal
	if (p->pidfd >= 0 && syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0) == 0) {
		p->runner_killed = true;
		return;
	}
#endif
	if (kill(p->pid, SIGKILL) == 0)
		p->runner_killed = true;
}

static void reap_runner(struct local_proc *p)
{
	pid_t r;

	do
		r = waitpid(p->pid, &p->runner_status, 0);
	while (r < 0 && errno == EINTR);
	if (r != p->pid)
		p->runner_status = -1; /* someone else reaped it (a host's SIGCHLD handler) */
}

/* The runner ended without a report: say something sane about the command anyway. */
static void judge_silent_runner(struct local_proc *p)
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

/* Takes the report, or notices the runner ended without one, then reaps the runner.
 * Returns false when there was nothing to read yet. */
static bool collect(struct local_proc *p)
{
	struct sbx_run_report rep;
	ssize_t n;

	do
		n = recv(p->ctrl, &rep, sizeof rep, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return false;
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
static int wait_for_end(struct local_proc *p, int timeout_ms)
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

static int report_outcome(const struct local_proc *p, int *exit_code, int *term_signal)
{
	int st = p->runner_status;

	if (exit_code)
		*exit_code = p->exit_code;
	if (term_signal)
		*term_signal = p->term_signal;
	if (!p->error)
		return 0;
	if (p->error == -SBX_EPROTO)
		return sbx_fail(p->error, "local: agentsbx-run broke its protocol");
	if (st == -1)
		return sbx_fail(p->error, "local: agentsbx-run vanished (reaped by someone else)");
	if (WIFSIGNALED(st))
		return sbx_fail(p->error, "local: agentsbx-run died: signal %d", WTERMSIG(st));
	return sbx_fail(p->error, "local: agentsbx-run exited with status %d without a report",
	                WEXITSTATUS(st));
}

int local_proc_wait(void *proc, int timeout_ms, int *exit_code, int *term_signal)
{
	struct local_proc *p = proc;
	int r = wait_for_end(p, timeout_ms);

	if (r == -ETIMEDOUT)
		return sbx_fail(-SBX_ETIMEDOUT, "local: the command is still running");
	if (r < 0)
		return sbx_fail(sbx_errno_code(-r), "local: wait: %s", strerror(-r));
	return report_outcome(p, exit_code, term_signal);
}

int local_proc_signal(void *proc, int sig)
{
	struct local_proc *p = proc;
	int r;

	if (sig < 0 || sig >= NSIG)
		return sbx_fail(-SBX_EINVAL, "local: invalid signal %d", sig);
	if (p->ended)
		return 0;
	r = send_request(p, SBX_RUN_SIGNAL, sig);
	if (r == 0 || runner_gone(r))
		return 0;
	return sbx_fail(-SBX_EIO, "local: signal: agentsbx-run does not answer: %s", strerror(-r));
}

/* Quiet: called from release and the workspace's reset and close. */
static void kill_quietly(struct local_proc *p)
{
	int r;

	if (p->ended)
		return;
	r = send_request(p, SBX_RUN_KILL, SIGKILL);
	if (r < 0 && !runner_gone(r))
		kill_runner(p);
}

int local_proc_kill(void *proc)
{
	kill_quietly(proc);
	return 0;
}

void local_proc_finish(struct local_proc *p, int timeout_ms)
{
	if (p->ended)
		return;
	kill_quietly(p);
	if (wait_for_end(p, timeout_ms) == -ETIMEDOUT) {
		kill_runner(p);
		wait_for_end(p, -1);
	}
}

void local_proc_release(void *proc)
{
	struct local_proc *p = proc;

	if (!p)
		return;
	local_proc_finish(p, LOCAL_RELEASE_TIMEOUT_MS);
	local_untrack(p);
	close(p->ctrl);
	if (p->pidfd >= 0)
		close(p->pidfd);
	free(p);
}
