/* Detached sandboxes: the init serves more than the channel it was started with. The host
 * that starts a detached sandbox sends it a Unix socket it bound in the workspace's state
 * folder (so the path lives in the host's view and under the host's checks); later host
 * processes connect there and speak the same protocol. Each spawn request carries its own
 * runner socket, so a command reports to the client that started it.
 *
 * The socket's path is visible inside the sandbox (the state folder is bound read-only, and
 * connect() needs no write access to a socket on a read-only mount), so the init refuses any
 * connection from a process of its own PID namespace: SO_PEERCRED names a peer by its pid in
 * the reader's namespace, and a host process has none there (0). */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "proto/init_proto.h"
#include "listen.h"

static char greeting[512];
static size_t greeting_len;

void sbx_init_set_greeting(const void *msg, size_t len)
{
	if (len > sizeof greeting)
		len = sizeof greeting;
	memcpy(greeting, msg, len);
	greeting_len = len;
}

void sbx_init_peers_init(struct sbx_init_peers *p, int ctl)
{
	memset(p, 0, sizeof *p);
	p->ctl = ctl;
	p->listener = -1;
}

bool sbx_init_peers_alive(const struct sbx_init_peers *p)
{
	return p->ctl >= 0 || p->listener >= 0;
}

size_t sbx_init_peers_pollfds(const struct sbx_init_peers *p, struct pollfd *fds)
{
	size_t n = 0;

	if (p->ctl >= 0)
		fds[n++] = (struct pollfd){ .fd = p->ctl, .events = POLLIN };
	for (size_t i = 0; i < p->n_clients; i++)
		fds[n++] = (struct pollfd){ .fd = p->clients[i], .events = POLLIN };
	/* Last, so that the server handles hang-ups before an accept can reuse their numbers. */
	if (p->listener >= 0)
		fds[n++] = (struct pollfd){ .fd = p->listener, .events = POLLIN };
	return n;
}

void sbx_init_peers_listen(struct sbx_init_peers *p, int fd)
{
	struct sbx_init_spawn ack = { .kind = SBX_INIT_LISTEN };

	if (p->listener >= 0 || listen(fd, 16) < 0) {
		close(fd);
		return;
	}
	p->listener = fd;
	/* Until now a second host would find the socket refusing and take it for a stale one:
	 * the host that sent it holds its lock until this answer. */
	send(p->ctl, &ack, sizeof ack, MSG_NOSIGNAL);
}

static bool other_uid_allowed;
static uid_t other_uid;

void sbx_init_peers_allow_uid(unsigned uid)
{
	other_uid_allowed = true;
	other_uid = (uid_t)uid;
}

/* A host process of our own user (or the one allowed besides): outside our PID namespace. */
static bool peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof cred;

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid == 0 &&
	       (cred.uid == getuid() || (other_uid_allowed && cred.uid == other_uid));
}

void sbx_init_peers_accept(struct sbx_init_peers *p)
{
	int fd = accept4(p->listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	if (p->n_clients == SBX_INIT_MAX_CLIENTS || !peer_allowed(fd) ||
	    send(fd, greeting, greeting_len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)greeting_len) {
		close(fd);
		return;
	}
	p->clients[p->n_clients++] = fd;
}

void sbx_init_peers_drop(struct sbx_init_peers *p, int fd)
{
	if (fd == p->ctl) {
		p->ctl = -1;
	} else {
		for (size_t i = 0; i < p->n_clients; i++)
			if (p->clients[i] == fd) {
				p->clients[i] = p->clients[--p->n_clients];
				break;
			}
	}
	close(fd);
}
