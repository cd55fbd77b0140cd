/* SCM_RIGHTS sending, once for every caller. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "util/fdpass.h"

#define MAX_FDS 8

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
