/* agentsbx-mcp-gateway <run-dir>
 * agentsbx-mcp-gateway --stdio <run-dir>|-
 *
 * Runs inside the workspace (started by the library through the backend, like any command)
 * and serves <run-dir>/gateway.sock until it is killed; the sandbox's end ends it. One gateway
 * per run directory: <run-dir>/gateway.lock is held for the gateway's life, so a second one
 * (two host handles racing to start it) sees it taken, says "busy" and leaves, and a socket
 * left by a dead gateway (stale: nobody holds the lock) is replaced.
 *
 * stdout gets one line once the socket listens — "ready" or "busy" — then stdout and stderr
 * go to <run-dir>/gateway.log, because the host stops reading the pipes.
 *
 * With --stdio (the stream transport, src/proto/mcp_proto.h) there is no socket and no lock: the
 * host that started this process speaks to it over stdin and stdout (mux.c), and it ends when
 * stdin closes. Its stderr goes to <run-dir>/gateway.log, or nowhere with "-". */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gateway.h"
#include "proto/mcp_proto.h"

#define LOG_MAX_BYTES (1 << 20)

struct gw_conn *gw_conns;

void gw_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "agentsbx-mcp-gateway: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Exits 0 with "busy" when another gateway holds the lock: it serves this folder already. */
static void take_lock(int dirfd)
{
	int fd = openat(dirfd, SBX_MCP_LOCK_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0) {
		printf("error: open %s: %s\n", SBX_MCP_LOCK_NAME, strerror(errno));
		exit(1);
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		printf(errno == EWOULDBLOCK ? "busy\n" : "error: flock: %s\n", strerror(errno));
		exit(errno == EWOULDBLOCK ? 0 : 1);
	}
	/* fd stays open (and locked) until the gateway exits */
}

/* Binds the socket by a relative name from inside the folder: the folder's own path may be
 * longer than sun_path holds. */
static int listen_in(int dirfd)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int cwd = open(".", O_PATH | O_CLOEXEC), fd, r;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || cwd < 0 || fchdir(dirfd) < 0)
		return -1;
	snprintf(addr.sun_path, sizeof addr.sun_path, "%s", SBX_MCP_SOCKET_NAME);
	unlink(SBX_MCP_SOCKET_NAME);   /* stale: we hold the lock, so no gateway owns it */
	umask(077);
	r = bind(fd, (struct sockaddr *)&addr, sizeof addr);
	if (fchdir(cwd) < 0 || r < 0 || listen(fd, 64) < 0) {
		close(cwd);
		return -1;
	}
	close(cwd);
	return fd;
}

/* The log in the run folder (dirfd), or /dev/null when dirfd < 0. */
static int open_log(int dirfd)
{
	struct stat st;
	int fd = dirfd < 0 ? open("/dev/null", O_WRONLY | O_CLOEXEC)
	         : openat(dirfd, SBX_MCP_LOG_NAME, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
	                  O_NOFOLLOW, 0600);

	/* A log from earlier gateways is cut when big; failing that, it grows. */
	if (fd >= 0 && dirfd >= 0 && fstat(fd, &st) == 0 && st.st_size > LOG_MAX_BYTES &&
	    ftruncate(fd, 0) < 0)
		gw_log("cannot shorten the log: %s", strerror(errno));
	return fd;
}

static void redirect_output(int dirfd)
{
	int fd = open_log(dirfd);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	fflush(stdout);
	if (null >= 0)
		dup2(null, 0);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	if (null >= 0)
		close(null);
	setvbuf(stderr, NULL, _IOLBF, 0);
}

static void accept_conns(int lfd)
{
	int fd;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		struct gw_conn *c = calloc(1, sizeof *c);

		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->in.max = SBX_MCP_LINE_MAX;
		c->next = gw_conns;
		gw_conns = c;
	}
}

static void drop_closed_conns(void)
{
	for (struct gw_conn **at = &gw_conns; *at;) {
		struct gw_conn *c = *at;

		if (c->closing && (c->mux || c->out.len == c->out_off)) {
			*at = c->next;
			gw_conn_free(c);
		} else {
			at = &c->next;
		}
	}
}

/* ---- the loop ---- */

enum { SLOT_LISTEN, SLOT_SIGNAL, SLOT_MUX_IN, SLOT_MUX_OUT, SLOT_FIRST };

struct slot {
	struct gw_conn *conn;
	struct gw_server *server;
	int which;   /* 0 conn, 1 server stdin, 2 stdout, 3 stderr */
};

static size_t queued(const sbx_buf *b, size_t off)
{
	return b->len - off;
}

static void add(struct pollfd *pfd, struct slot *slots, size_t *n, int fd, short events,
                struct slot s)
{
	pfd[*n] = (struct pollfd){ .fd = fd, .events = events };
	slots[*n] = s;
	(*n)++;
}

static size_t count_fds(void)
{
	size_t n = SLOT_FIRST;

	for (struct gw_conn *c = gw_conns; c; c = c->next)
		n++;
	for (struct gw_server *s = gw_servers; s; s = s->next)
		n += 3;
	return n;
}

static size_t build_poll(struct pollfd *pfd, struct slot *slots)
{
	size_t n = SLOT_FIRST;

	for (struct gw_conn *c = gw_conns; c; c = c->next) {
		bool full = c->server && queued(&c->server->to_child, c->server->to_child_off) > GW_QUEUE_MAX;
		short ev;

		if (c->mux)
			continue;   /* fed from stdin */
		ev = (c->closing || full ? 0 : POLLIN) | (queued(&c->out, c->out_off) ? POLLOUT : 0);

		add(pfd, slots, &n, c->fd, ev, (struct slot){ .conn = c });
	}
	for (struct gw_server *s = gw_servers; s; s = s->next) {
		bool full = s->conn && gw_conn_backlog(s->conn) > GW_QUEUE_MAX;

		if (s->in_fd >= 0 && queued(&s->to_child, s->to_child_off))
			add(pfd, slots, &n, s->in_fd, POLLOUT, (struct slot){ .server = s, .which = 1 });
		if (s->out_fd >= 0 && !full)
			add(pfd, slots, &n, s->out_fd, POLLIN, (struct slot){ .server = s, .which = 2 });
		if (s->err_fd >= 0)
			add(pfd, slots, &n, s->err_fd, POLLIN, (struct slot){ .server = s, .which = 3 });
	}
	return n;
}

static void dispatch(const struct pollfd *p, const struct slot *s)
{
	if (!p->revents)
		return;
	if (s->conn) {
		if (p->revents & (POLLIN | POLLHUP | POLLERR))
			gw_conn_on_input(s->conn);
		if (p->revents & POLLOUT)
			gw_conn_flush(s->conn);
	} else if (s->which == 1 && s->server->in_fd >= 0) {
		gw_server_flush_stdin(s->server);
	} else if (s->which == 2 && s->server->out_fd >= 0) {
		gw_server_on_stdout(s->server);
	} else if (s->which == 3 && s->server->err_fd >= 0) {
		gw_server_on_stderr(s->server);
	}
}

/* After the handlers: push what they queued without waiting for the next poll. */
static void flush_all(void)
{
	for (struct gw_server *s = gw_servers; s; s = s->next)
		if (s->in_fd >= 0 && queued(&s->to_child, s->to_child_off))
			gw_server_flush_stdin(s);
	for (struct gw_conn *c = gw_conns; c; c = c->next)
		if (!c->mux && queued(&c->out, c->out_off))
			gw_conn_flush(c);
	if (gw_mux_active() && gw_mux_backlog())
		gw_mux_flush();
}

static void serve(int lfd, int sfd)
{
	for (;;) {
		size_t cap = count_fds(), n;
		struct pollfd *pfd = calloc(cap, sizeof *pfd);
		struct slot *slots = calloc(cap, sizeof *slots);

		if (!pfd || !slots) {
			free(pfd);
			free(slots);
			sleep(1);
			continue;
		}
		pfd[SLOT_LISTEN] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		pfd[SLOT_SIGNAL] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		/* fd -1 (no stream, or nothing to do on it) makes poll skip the entry */
		pfd[SLOT_MUX_IN] = (struct pollfd){ .events = POLLIN,
			.fd = gw_mux_active() && gw_mux_want_input() ? gw_mux_in_fd() : -1 };
		pfd[SLOT_MUX_OUT] = (struct pollfd){ .events = POLLOUT,
			.fd = gw_mux_active() && gw_mux_backlog() ? gw_mux_out_fd() : -1 };
		n = build_poll(pfd, slots);
		if (poll(pfd, n, -1) > 0) {
			if (pfd[SLOT_SIGNAL].revents) {
				struct signalfd_siginfo si;

				while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
				}
			}
			if (pfd[SLOT_MUX_IN].revents)
				gw_mux_on_input();
			if (pfd[SLOT_MUX_OUT].revents)
				gw_mux_flush();
			for (size_t i = SLOT_FIRST; i < n; i++)
				dispatch(&pfd[i], &slots[i]);
			gw_servers_reap();
			if (lfd >= 0 && pfd[SLOT_LISTEN].revents)
				accept_conns(lfd);
			flush_all();
			drop_closed_conns();
		}
		free(pfd);
		free(slots);
	}
}

static int signal_fd(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* The stream transport: stdin and stdout are the host's, so they are moved off 0 and 1
 * (servers are started with pipes of their own, and nothing else may write to the host's
 * stream), and stderr goes to the log. */
static int serve_stdio(const char *run_dir)
{
	int dirfd = -1, in, out, sfd = signal_fd();

	if (strcmp(run_dir, "-") != 0 &&
	    (dirfd = open(run_dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC)) < 0) {
		printf("error: open %s: %s\n", run_dir, strerror(errno));
		return 1;
	}
	in = fcntl(0, F_DUPFD_CLOEXEC, 3);
	out = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (sfd < 0 || in < 0 || out < 0) {
		printf("error: %s\n", strerror(errno));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	redirect_output(dirfd);   /* 0 from /dev/null, 1 and 2 to the log */
	if (dirfd >= 0)
		close(dirfd);
	gw_mux_start(in, out);
	gw_log("serving the stream of its parent (pid %d)", (int)getpid());
	serve(-1, sfd);
	return 0;
}

int main(int argc, char **argv)
{
	int dirfd, lfd, sfd;

	signal(SIGPIPE, SIG_IGN);
	/* Servers' own children that outlive them are re-parented here, and reaped. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (argc == 3 && strcmp(argv[1], SBX_MCP_STDIO_FLAG) == 0)
		return serve_stdio(argv[2]);
	if (argc != 2) {
		fprintf(stderr, "usage: %s <run-dir> | %s <run-dir>|-\n", argv[0],
		        SBX_MCP_STDIO_FLAG);
		return 2;
	}
	dirfd = open(argv[1], O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dirfd < 0) {
		printf("error: open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	take_lock(dirfd);
	sfd = signal_fd();
	if (sfd < 0 || (lfd = listen_in(dirfd)) < 0) {
		printf("error: listen on %s/%s: %s\n", argv[1], SBX_MCP_SOCKET_NAME, strerror(errno));
		return 1;
	}
	printf("ready\n");
	redirect_output(dirfd);
	gw_log("serving %s/%s (pid %d)", argv[1], SBX_MCP_SOCKET_NAME, (int)getpid());
	serve(lfd, sfd);
	return 0;
}
