/* See peer.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "peer.h"
#include "util/fdpass.h"

int sbx_pidfd_of_peer(int sock)
{
	struct ucred cred;
	socklen_t len = sizeof cred;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0)
		return -1;
	return (int)syscall(SYS_pidfd_open, cred.pid, 0);
}

int sbx_peer_connect_at(const char *path, int target)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	if (fd != target) {
		if (dup3(fd, target, O_CLOEXEC) < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		close(fd);
	}
	return 0;
}

int sbx_peer_receive_fds_at(int sock, const int *targets, size_t n)
{
	int fds[8];
	int r;

	if (n == 0 || n > 8)
		return -EINVAL;
	if ((r = sbx_recv_fds(sock, fds, n)) < 0)
		return r == -EPIPE ? -EPROTO : r;
	for (size_t i = 0; i < n; i++) {
		if (fds[i] != targets[i] && dup2(fds[i], targets[i]) < 0)
			return -errno;
	}
	for (size_t i = 0; i < n; i++) {
		bool taken = false;

		for (size_t j = 0; j < n; j++)
			taken = taken || fds[i] == targets[j];
		if (!taken)
			close(fds[i]);
	}
	return 0;
}
