/* SCM_RIGHTS sending and receiving, once for every caller. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fdpass.h"

#define MAX_FDS 8

static void close_all(int *fds, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		close(fds[i]);
	*n = 0;
}

int sbx_send_with_fds(int sock, const void *data, size_t len, const int *fds, size_t nfds)
{
	char control[CMSG_SPACE(sizeof(int) * MAX_FDS)];
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
	                      .msg_controllen = CMSG_SPACE(sizeof(int) * nfds) };
	struct cmsghdr *c;
	ssize_t n;

	if (nfds == 0 || nfds > MAX_FDS)
		return -EINVAL;
	memset(control, 0, sizeof control);
	c = CMSG_FIRSTHDR(&msg);
	if (!c)
		return -EINVAL;
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* One recvmsg: up to len bytes of data and up to maxfds fds (more are closed). Returns the
 * byte count (0 when the peer closed) or -errno; MSG_TRUNC and MSG_CTRUNC count as -EPROTO,
 * with the fds closed. */
static ssize_t recv_message(int sock, void *data, size_t len, int *fds, size_t maxfds,
                            size_t *nfds)
{
	char control[CMSG_SPACE(sizeof(int) * MAX_FDS)];
	struct iovec iov = { .iov_base = data, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
	                      .msg_controllen = sizeof control };
	ssize_t n;

	*nfds = 0;
	if (maxfds > MAX_FDS)
		return -EINVAL;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		size_t got;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < got; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			if (*nfds < maxfds)
				fds[(*nfds)++] = fd;
			else
				close(fd);       /* more than asked for: not ours to keep */
		}
	}
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		close_all(fds, nfds);
		return -EPROTO;
	}
	return n;
}

int sbx_recv_with_fds(int sock, void *data, size_t len, int *fds, size_t maxfds, size_t *nfds)
{
	ssize_t n = recv_message(sock, data, len, fds, maxfds, nfds);

	if (n >= 0 && (size_t)n != len) {
		close_all(fds, nfds);
		return n == 0 ? -EPIPE : -EPROTO;
	}
	return n < 0 ? (int)n : 0;
}

int sbx_recv_fds(int sock, int *fds, size_t n)
{
	char data[64];
	size_t got = 0;
	ssize_t r = recv_message(sock, data, sizeof data, fds, n, &got);

	if (r > 0 && got == n)
		return 0;
	close_all(fds, &got);
	return r < 0 ? (int)r : r == 0 ? -EPIPE : -EPROTO;
}
