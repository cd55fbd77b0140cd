/* The exec server: PID 1 of the sandbox reads spawn requests from the control channel, hands
 * each to a runner (runner.c: the same code as agentsbx-run, without the extra exec), one kept
 * from an earlier command or one it forks, and reaps whatever ends. When the control channel closes, it returns and the init exits, which makes
 * the kernel kill every process left in the PID namespace. A detached sandbox (listen.c) also
 * serves the connections on its socket and ends on SHUTDOWN, or by itself once it has been
 * idle for its TTL with no host holding it.
 *
 * Idle, for a detached sandbox, is what the workspace manager counts as idle: every exec,
 * spawn and tool call is a use, and a host that holds the workspace open (a client connected
 * here, on the socket or the channel) holds the sandbox, however long it does nothing. Every
 * use comes from a connected client, so the TTL runs from the later of the last spawn and the
 * moment the last client hung up (a release is a use too, as the manager stamps it). A
 * command still running counts neither as a use nor as a holder: when the TTL is up it is
 * stopped with the sandbox, as the manager's sweep would stop it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "proto/init_proto.h"
#include "listen.h"
#include "proto/run_proto.h"
#include "runner.h"
#include "server.h"
#include "util/clock.h"

extern char **environ;

struct spawn_request {
	struct sbx_init_spawn head;
	int fds[SBX_INIT_SPAWN_FDS];  /* stdin, stdout, stderr, runner socket, payload */
	int nfds;
	size_t inline_len;            /* a payload that came in the message itself */
};

/* Where an inline payload lands: one request is read and unpacked at a time. */
static char inline_payload[SBX_INIT_INLINE_MAX];

enum { FD_STDIN, FD_STDOUT, FD_STDERR, FD_RUNNER, FD_PAYLOAD };

static void close_request_fds(struct spawn_request *req)
{
	for (int i = 0; i < req->nfds; i++)
		close(req->fds[i]);
	req->nfds = 0;
}

_Static_assert(SBX_INIT_ACTIVATE_FDS <= SBX_INIT_SPAWN_FDS, "an activation fits a request");

/* How many fds a message of this kind carries; -1 for an unknown kind. */
static int fds_of_kind(uint32_t kind)
{
	switch (kind) {
	case SBX_INIT_SPAWN:
		return SBX_INIT_SPAWN_FDS;
	case SBX_INIT_LISTEN:
	case SBX_INIT_ACTIVATE:
		return 1;
	case SBX_INIT_SHUTDOWN:
		return 0;
	default:
		return -1;
	}
}

/* Receives one message; returns 1 for a request, 0 when the channel closed, -1 for a
 * malformed message (its fds already closed). */
static int receive_request(int ctl, struct spawn_request *req)
{
	char control[CMSG_SPACE(sizeof(int) * SBX_INIT_SPAWN_FDS)];
	struct iovec iov[2] = { { .iov_base = &req->head, .iov_len = sizeof req->head },
	                        { .iov_base = inline_payload, .iov_len = sizeof inline_payload } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = control,
	                      .msg_controllen = sizeof control };
	ssize_t n;
	int want;

	req->nfds = 0;
	req->inline_len = 0;
	do
		n = recvmsg(ctl, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return -1;
	if (n <= 0)
		return 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		req->nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		if (req->nfds > SBX_INIT_SPAWN_FDS)
			req->nfds = SBX_INIT_SPAWN_FDS;
		memcpy(req->fds, CMSG_DATA(c), sizeof(int) * (size_t)req->nfds);
	}
	if (n >= (ssize_t)sizeof req->head)
		req->inline_len = (size_t)n - sizeof req->head;
	want = fds_of_kind(req->head.kind);
	/* A spawn whose payload came inline carries one fd less (no memfd). */
	if (req->head.kind == SBX_INIT_SPAWN && req->inline_len)
		want--;
	else if (req->inline_len)
		want = -1;
	/* An activation brings the state folder's mount and binds' sources too where the spec
	 * says so: sbx_init_await_activation checks the count. */
	else if (req->head.kind == SBX_INIT_ACTIVATE && req->nfds >= 1 &&
	         req->nfds <= SBX_INIT_ACTIVATE_FDS)
		want = req->nfds;
	if (n < (ssize_t)sizeof req->head || req->nfds != want ||
	    (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		close_request_fds(req);
		return -1;
	}
	return 1;
}

/* Maps the payload and splits it into cwd, argv, envp and limits. Returns NULL (and writes
 * nothing) when it does not match the header. The result lives in one allocation. */
static char **unpack_payload(const struct spawn_request *req, char **cwd, char ***envp,
                             char ***limits)
{
	const struct sbx_init_spawn *h = &req->head;
	size_t len = h->payload_len, nstr = 1 + (size_t)h->argc + h->envc + h->nlimits, k = 0;
	struct stat st;
	char **vec, *text, *p, *end;

	if (h->argc == 0 || len == 0 || len > SBX_INIT_PAYLOAD_MAX || h->envc > 65536 ||
	    h->nlimits > 16 || h->argc > 65536)
		return NULL;
	if (req->inline_len ? req->inline_len != len
	                    : fstat(req->fds[FD_PAYLOAD], &st) < 0 || (size_t)st.st_size < len)
		return NULL;
	vec = malloc((nstr + 3) * sizeof *vec + len + 1);
	if (!vec)
		return NULL;
	text = (char *)(vec + nstr + 3);
	if (req->inline_len)
		memcpy(text, inline_payload, len);
	else if (pread(req->fds[FD_PAYLOAD], text, len, 0) != (ssize_t)len)
		len = 0;
	if (len == 0 || text[len - 1] != '\0') {
		free(vec);
		return NULL;
	}
	text[len] = '\0';
	for (p = text, end = text + len; p < end && k < nstr; p += strlen(p) + 1)
		vec[k++] = p;
	if (k != nstr || p != end) {
		free(vec);
		return NULL;
	}
	/* Layout: [cwd][argv... NULL][envp... NULL][limits... NULL] */
	memmove(vec + 1 + h->argc + 1 + h->envc + 1, vec + 1 + h->argc + h->envc,
	        h->nlimits * sizeof *vec);
	memmove(vec + 1 + h->argc + 1, vec + 1 + h->argc, h->envc * sizeof *vec);
	vec[1 + h->argc] = NULL;
	vec[1 + h->argc + 1 + h->envc] = NULL;
	vec[1 + h->argc + 1 + h->envc + 1 + h->nlimits] = NULL;
	*cwd = vec[0];
	*envp = vec + 1 + h->argc + 1;
	*limits = vec + 1 + h->argc + 1 + h->envc + 1;
	return vec;
}

static void apply_limits(char **limits)
{
	for (char **l = limits; *l; l++) {
		char *eq = strchr(*l, '=');
		/* "pty=ROWSxCOLS" rides with the limits: a runner setting of the same shape. */
		if (eq && eq - *l == 3 && strncmp(*l, "pty", 3) == 0)
			sbx_runner_set_pty(eq + 1);
		else if (eq && eq - *l == 7 && strncmp(*l, "channel", 7) == 0)
			sbx_runner_offer_channel();   /* the host takes one (runner.h) */
		else if (eq)
			sbx_runner_set_rlimit(*l, (size_t)(eq - *l), strtoull(eq + 1, NULL, 10));
	}
}

/* Tells the backend the command could not even reach the runner. */
static void refuse(int runner_fd, int stderr_fd, const char *why)
{
	struct sbx_run_report rep = { SBX_RUN_EXITED, 126, 0 };
	char msg[512];
	int n = snprintf(msg, sizeof msg, "agentsbx: cannot run the command: %s\n", why);

	if (n > 0 && write(stderr_fd, msg, (size_t)n) < 0) {
		/* nobody to tell */
	}
	send(runner_fd, &rep, sizeof rep, MSG_NOSIGNAL);
}

/* In a runner: puts the request's fds in place and runs its command. A one-shot runner
 * exits after it; a kept one returns for the next. */
static void run_request(struct spawn_request *req, char **argv, const char *cwd, char **envp,
                        char **limits, bool kept)
{
	if (dup2(req->fds[FD_STDIN], 0) < 0 || dup2(req->fds[FD_STDOUT], 1) < 0 ||
	    dup2(req->fds[FD_STDERR], 2) < 0 || dup2(req->fds[FD_RUNNER], SBX_RUN_CONTROL_FD) < 0)
		_exit(126);
	if (chdir(cwd) < 0) {
		char why[300];
		snprintf(why, sizeof why, "chdir %s: %s", cwd, strerror(errno));
		sbx_runner_drop_direct();   /* before the report: this runner ends */
		refuse(SBX_RUN_CONTROL_FD, 2, why);
		_exit(0);
	}
	apply_limits(limits);
	environ = envp;
	/* The runner closes every fd above its control socket (above its own channel, when
	 * kept), the originals of these and the init's own included. */
	if (!kept)
		_exit(sbx_runner_run(argv) < 0 ? 126 : 0);
	if (sbx_runner_run_kept(argv) < 0)
		_exit(126);
	environ = NULL;
	req->nfds = 0;     /* closed by the runner */
}

/* ---- kept runners ------------------------------------------------------------------------
 * A runner forked for a command stays, once the command and its whole tree have ended, for
 * the next one: a fork of the init and the runner's exit (its address space torn down, with
 * a TLB shootdown across the CPUs) cost about as much as running /bin/true. The init hands
 * the next request to an idle runner on the runner's channel, the same message it received,
 * and the runner says it is idle again with one byte, sent before its report so that the
 * host's next request, which follows the report, finds it idle. Every command still runs
 * under a runner that is its subreaper and kills its whole tree, and a runner is idle only
 * once nothing of its last command is left. At most KEPT_MAX runners stay (as many as the
 * host's threads running commands at once, up to 32: an idle one is a copy-on-write fork of
 * the init, ~30 kB of its own); beyond that, or for a command limited in processes (below),
 * a runner serves one command and exits. */
#define KEPT_MAX 32

static struct {
	int chan;          /* the init's end of the runner's channel; -1: a free slot */
	bool idle;
} kept[KEPT_MAX];

/* Whether runners may stay at all: not under a cgroup pids limit, which would count the idle
 * ones against what the commands may start (sbx_init_serve). */
static bool keep_runners = true;

static void forget_kept(size_t i)
{
	close(kept[i].chan);
	kept[i].chan = -1;
	kept[i].idle = false;
}

/* Sends the request as it came (header, inline payload, fds). False when the runner is
 * gone: the init forks another. */
static bool forward_request(int chan, const struct spawn_request *req)
{
	char control[CMSG_SPACE(sizeof(int) * SBX_INIT_SPAWN_FDS)] = { 0 };
	struct iovec iov[2] = { { .iov_base = (void *)&req->head, .iov_len = sizeof req->head },
	                        { .iov_base = inline_payload, .iov_len = req->inline_len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = control,
	                      .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)req->nfds) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	ssize_t n;

	if (!c)
		return false;
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)req->nfds);
	memcpy(CMSG_DATA(c), req->fds, sizeof(int) * (size_t)req->nfds);
	do
		n = sendmsg(chan, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)(sizeof req->head + req->inline_len);
}

/* A kept runner's byte: idle again; end-of-file: it is gone (reaped as any child). */
static void note_kept_runner(size_t i)
{
	char byte;
	ssize_t n = recv(kept[i].chan, &byte, 1, MSG_DONTWAIT);

	if (n == 1)
		kept[i].idle = true;
	else if (n == 0 || (errno != EAGAIN && errno != EINTR))
		forget_kept(i);
}

/* The init does not poll the kept runners' channels: a runner's idle byte, sent before its
 * report and so before the host's next request, is read here when a request needs a
 * runner, which spares the init a wake-up per command (on two cores it competed with the
 * host's thread for the report). A runner found gone here (end-of-file) frees its slot. */
static bool hand_to_idle_runner(const struct spawn_request *req)
{
	for (size_t i = 0; i < KEPT_MAX; i++) {
		if (kept[i].chan >= 0 && !kept[i].idle)
			note_kept_runner(i);
		if (kept[i].chan < 0 || !kept[i].idle)
			continue;
		if (forward_request(kept[i].chan, req)) {
			kept[i].idle = false;
			return true;
		}
		forget_kept(i);
	}
	return false;
}

/* A kept runner's next command: its host's, on the runner's own channel, while the host
 * holds that (runner.h); once the host closes it the runner is the init's again and says so.
 * False when the init is gone (or speaks nonsense): the runner ends. */
static bool next_request(struct spawn_request *req)
{
	while (sbx_runner_has_direct()) {
		struct pollfd pfd[2] = { { .fd = SBX_RUNNER_DIRECT_FD, .events = POLLIN },
		                         { .fd = SBX_RUNNER_KEPT_FD, .events = POLLIN } };

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		if (pfd[1].revents)   /* the init's end-of-file, or (never sent) a request */
			break;
		if (receive_request(SBX_RUNNER_DIRECT_FD, req) == 1 &&
		    req->head.kind == SBX_INIT_SPAWN)
			return true;
		/* Closed, or not a request: the channel goes, the runner is the init's. */
		close_request_fds(req);
		sbx_runner_drop_direct();
		send(SBX_RUNNER_KEPT_FD, "", 1, MSG_NOSIGNAL);
	}
	return receive_request(SBX_RUNNER_KEPT_FD, req) == 1 && req->head.kind == SBX_INIT_SPAWN;
}

/* A kept runner's life: the command it was forked for, then each one its host or the init
 * hands it, until the init goes (its channel reads end-of-file). */
static _Noreturn void serve_as_kept_runner(int chan, struct spawn_request *req, char **vec,
                                           char *cwd, char **envp, char **limits)
{
	/* The channel takes its fixed fd; a request's fd that had it moves first. */
	for (int i = 0; i < req->nfds; i++)
		if (req->fds[i] == SBX_RUNNER_KEPT_FD &&
		    (req->fds[i] = fcntl(SBX_RUNNER_KEPT_FD, F_DUPFD_CLOEXEC, 0)) < 0)
			_exit(126);
	if (chan != SBX_RUNNER_KEPT_FD && dup3(chan, SBX_RUNNER_KEPT_FD, O_CLOEXEC) < 0)
		_exit(126);
	for (;;) {
		/* The runner says it is idle itself, before its report (runner.h); a refused
		 * request has no command to wait for. */
		if (vec)
			run_request(req, vec + 1, cwd, envp, limits, true);
		else {
			if (!sbx_runner_has_direct())   /* its host's: it stays so */
				send(SBX_RUNNER_KEPT_FD, "", 1, MSG_NOSIGNAL);   /* failed: the read ends us */
			refuse(req->fds[FD_RUNNER], req->fds[FD_STDERR], "malformed spawn request");
		}
		close_request_fds(req);
		free(vec);
		if (!next_request(req))
			_exit(0);
		vec = unpack_payload(req, &cwd, &envp, &limits);
	}
}

/* A free slot for a new kept runner and its channel, or -1 (the runner will not stay). */
static int new_kept_slot(int *runner_end)
{
	int sv[2];

	for (int i = 0; i < KEPT_MAX; i++) {
		if (kept[i].chan >= 0)
			continue;
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
			return -1;
		kept[i].chan = sv[0];
		kept[i].idle = false;
		*runner_end = sv[1];
		return i;
	}
	return -1;
}

/* RLIMIT_NPROC counts every process of the sandbox's user, idle runners too: a command with
 * that limit runs under a runner of its own that leaves with it, so that the processes it may
 * start are as many as before runners were kept. */
static bool limits_count_processes(char **limits)
{
	for (char **l = limits; *l; l++)
		if (strncmp(*l, "nproc=", 6) == 0)
			return true;
	return false;
}

static void handle_spawn(struct spawn_request *req, const sigset_t *saved_mask)
{
	char *cwd = NULL, **envp = NULL, **limits = NULL;
	char **vec = unpack_payload(req, &cwd, &envp, &limits);
	int slot = -1, runner_end = -1;
	pid_t pid;

	if (!vec) {
		refuse(req->fds[FD_RUNNER], req->fds[FD_STDERR], "malformed spawn request");
		close_request_fds(req);
		return;
	}
	if (keep_runners && !limits_count_processes(limits)) {
		if (hand_to_idle_runner(req)) {
			close_request_fds(req);   /* the runner has its own copies now */
			free(vec);
			return;
		}
		slot = new_kept_slot(&runner_end);
	}
	pid = fork();
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, saved_mask, NULL);
		signal(SIGCHLD, SIG_DFL);
		if (slot >= 0)
			serve_as_kept_runner(runner_end, req, vec, cwd, envp, limits);
		run_request(req, vec + 1, cwd, envp, limits, false);
	}
	if (pid < 0) {
		refuse(req->fds[FD_RUNNER], req->fds[FD_STDERR], strerror(errno));
		if (slot >= 0)
			forget_kept((size_t)slot);
	}
	if (runner_end >= 0)
		close(runner_end);
	/* Only the runner may hold these: their closing is how the backend sees the end. */
	close_request_fds(req);
	free(vec);
}

struct idle {
	uint64_t ttl_ms;          /* 0: never by itself */
	int64_t last_use;         /* sbx_boottime_ms() of the last spawn or hang-up */
};

/* poll's timeout: -1 while a client holds the sandbox (or it is not detached, or has no
 * TTL), else what is left of the TTL; 0 when it is up. */
static int idle_timeout(const struct idle *idle, const struct sbx_init_peers *peers)
{
	int64_t left;

	if (!idle->ttl_ms || peers->listener < 0 || peers->ctl >= 0 || peers->n_clients)
		return -1;
	left = idle->last_use + (int64_t)idle->ttl_ms - sbx_boottime_ms();
	return left <= 0 ? 0 : left > 3600000 ? 3600000 : (int)left;
}

/* Reaps ended children; one that was stopped (a runner, by a process of the workspace, which
 * is of the same user) is continued at once: a command whose runner never wakes would
 * never be reported, and a kept runner would take no command again. The loop reaps before
 * it serves requests, so an idle runner stopped is continued before, or at the latest just
 * after, it is handed the next command. */
static void reap_children(void)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0)
		if (WIFSTOPPED(status))
			kill(pid, SIGCONT);
}

/* One message from a client. Returns false when the sandbox must stop (SHUTDOWN). */
static bool serve_message(struct sbx_init_peers *peers, int fd, const sigset_t *saved,
                          struct idle *idle)
{
	struct spawn_request req;
	int r = receive_request(fd, &req);

	if (r == 0) {
		sbx_init_peers_drop(peers, fd);   /* the backend closed the workspace (or died) */
		idle->last_use = sbx_boottime_ms();
		return true;
	}
	if (r < 0)
		return true;
	switch (req.head.kind) {
	case SBX_INIT_SPAWN:
		idle->last_use = sbx_boottime_ms();
		handle_spawn(&req, saved);
		break;
	case SBX_INIT_LISTEN:
		/* Only the host that started the sandbox may make it detached. */
		if (fd == peers->ctl)
			sbx_init_peers_listen(peers, req.fds[0]);
		else
			close_request_fds(&req);
		break;
	case SBX_INIT_SHUTDOWN:
		return false;
	default:
		close_request_fds(&req);   /* ACTIVATE means nothing to a running sandbox */
		break;
	}
	return true;
}

int sbx_init_await_activation(int ctl, int timeout_ms, int nfds, int *fds)
{
	struct pollfd pfd = { .fd = ctl, .events = POLLIN };
	struct spawn_request req;
	int r;

	do {
		r = poll(&pfd, 1, timeout_ms);
		if (r == 0)
			return -ETIMEDOUT;
		r = r < 0 && errno != EINTR ? 0 : receive_request(ctl, &req);
	} while (r < 0);
	if (r == 0)
		return -EPIPE;
	if (req.head.kind != SBX_INIT_ACTIVATE || req.nfds != nfds) {
		close_request_fds(&req);
		return -EPROTO;
	}
	memcpy(fds, req.fds, sizeof *fds * (size_t)nfds);
	return 0;
}

int sbx_init_serve(int ctl, uint64_t idle_ttl_ms, bool may_keep_runners)
{
	struct idle idle = { .ttl_ms = idle_ttl_ms, .last_use = sbx_boottime_ms() };
	struct sbx_init_peers peers;
	sigset_t chld, saved;
	int sigfd;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &saved);
	sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0)
		return -errno;
	sbx_init_peers_init(&peers, ctl);
	for (size_t i = 0; i < KEPT_MAX; i++)
		kept[i].chan = -1;
	keep_runners = may_keep_runners;
	/* Without a listener (the default) the channel is the only client, and its closing
	 * ends the sandbox; a detached sandbox lives until SHUTDOWN or its idle TTL. */
	while (sbx_init_peers_alive(&peers)) {
		/* The signals, then the clients; not the kept runners' channels, which are read
		 * when a request needs a runner (hand_to_idle_runner). */
		struct pollfd fds[1 + SBX_INIT_MAX_CLIENTS + 2];
		size_t n = 1, first_client = n;
		int timeout = idle_timeout(&idle, &peers), ready;

		n += sbx_init_peers_pollfds(&peers, fds + first_client);

		if (timeout == 0)
			return 0;         /* idle past the TTL, nobody holding it: stop */
		fds[0] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
		if ((ready = poll(fds, n, timeout)) < 0 && errno != EINTR)
			return -errno;
		if (ready <= 0)
			continue;
		if (fds[0].revents) {
			struct signalfd_siginfo si;
			while (read(sigfd, &si, sizeof si) > 0)
				;
			reap_children();
		}
		for (size_t i = first_client; i < n; i++) {
			if (!fds[i].revents)
				continue;
			if (fds[i].fd == peers.listener)
				sbx_init_peers_accept(&peers);
			else if (!serve_message(&peers, fds[i].fd, &saved, &idle))
				return 0;
		}
	}
	return 0;
}
