/* The sandbox's end of the allowlist proxy: a process that listens on 127.0.0.1 (and ::1)
 * at the proxy port inside the sandbox's own network namespace, accepts each connection and
 * hands the accepted socket to agentsbx-proxy over the bridge channel (an SCM_RIGHTS fd per
 * byte; proxy_proto.h). It never reads or writes a byte of any connection and never connects
 * anywhere, so it cannot become a relay: what a client may reach is decided by the proxy,
 * on the host, for the socket itself.
 *
 * It is a process of its own, forked by the init after the hardening (so it is as confined
 * as any command) and before the exec server starts: accepting never sits in the path of an
 * exec request, and a stalled proxy stalls only the bridge. When the proxy is slow to take
 * sockets, the bridge waits up to HANDOVER_TIMEOUT for room in the channel and otherwise
 * closes the connection (the client sees it refused) rather than queueing without bound.
 *
 * Like the init it is not dumpable (no command can open its fds through /proc), but it runs
 * as the commands' uid, so a command can kill it: that takes away only its own sandbox's way
 * out, which fails closed. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "util/error.h"
#include "init/sandbox.h"

#define HANDOVER_TIMEOUT_S 2
#define BACKLOG 4096

static int listen_on(int family, const void *addr, uint16_t port)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	int one = 1, fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int r;

	if (fd < 0)
		return -errno;
	if (family == AF_INET) {
		memcpy(&in.sin_addr, addr, 4);
		r = bind(fd, (struct sockaddr *)&in, sizeof in);
	} else {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
		memcpy(&in6.sin6_addr, addr, 16);
		r = bind(fd, (struct sockaddr *)&in6, sizeof in6);
	}
	if (r < 0 || listen(fd, BACKLOG) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int sbx_bridge_listen(uint16_t port, int fds[2], char *err, size_t errlen)
{
	const uint32_t loopback4 = htonl(INADDR_LOOPBACK);

	fds[0] = listen_on(AF_INET, &loopback4, port);
	if (fds[0] < 0)
		return sbx_fail_buf(err, errlen, fds[0], "proxy bridge: listen on 127.0.0.1:%u: %s",
		                    port, strerror(-fds[0]));
	/* ::1 only where the sandbox has IPv6; clients are pointed at 127.0.0.1 anyway. */
	fds[1] = listen_on(AF_INET6, &in6addr_loopback, port);
	if (fds[1] < 0)
		fds[1] = -1;
	return 0;
}

/* One accepted socket to the proxy; closed here either way. */
static void hand_over(int channel, int fd)
{
	char byte = 0, control[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
	                      .msg_controllen = sizeof control };
	struct cmsghdr *c;

	memset(control, 0, sizeof control);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	while (sendmsg(channel, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
	close(fd);
}

static void accept_all(int listener, int channel)
{
	int fd;

	while ((fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		hand_over(channel, fd);
}

static _Noreturn void serve(const int listeners[2], int channel)
{
	struct timeval tv = { .tv_sec = HANDOVER_TIMEOUT_S };
	struct pollfd p[3] = { { .fd = channel, .events = 0 },
	                       { .fd = listeners[0], .events = POLLIN },
	                       { .fd = listeners[1], .events = POLLIN } };

	struct rlimit lim;

	/* Sockets in flight to the proxy count against this limit until it takes them. */
	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
		lim.rlim_cur = lim.rlim_max;
		setrlimit(RLIMIT_NOFILE, &lim);
	}
	setsockopt(channel, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	prctl(PR_SET_NAME, "agentsbx-bridge", 0, 0, 0);
	for (;;) {
		if (poll(p, listeners[1] >= 0 ? 3 : 2, -1) < 0 && errno != EINTR)
			_exit(1);
		if (p[0].revents & (POLLHUP | POLLERR))
			_exit(0);     /* the proxy is gone: nothing to hand sockets to */
		for (int i = 1; i < 3; i++)
			if (p[i].revents & POLLIN)
				accept_all(p[i].fd, channel);
	}
}

pid_t sbx_bridge_start(const int listeners[2], int channel, const int *close_fds, size_t n,
                       char *err, size_t errlen)
{
	pid_t pid = fork();

	if (pid < 0)
		return sbx_fail_buf(err, errlen, errno, "proxy bridge: fork: %s", strerror(errno));
	if (pid > 0)
		return pid;
	/* The init's own channels are not the bridge's business. */
	for (size_t i = 0; i < n; i++)
		close(close_fds[i]);
	signal(SIGPIPE, SIG_IGN);
	serve(listeners, channel);
}
