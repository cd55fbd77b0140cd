/* See peer.h. */
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "peer.h"

int sbx_pidfd_of_peer(int sock)
{
	struct ucred cred;
	socklen_t len = sizeof cred;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0)
		return -1;
	return (int)syscall(SYS_pidfd_open, cred.pid, 0);
}
