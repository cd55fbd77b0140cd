/* The proxy's two kinds of channel: the control channel from the library (policy updates,
 * new bridges) and the bridge channels from sandboxes (client sockets, one fd per byte). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "proxy.h"
#include "proto/proxy_proto.h"
#include "util/json.h"

/* Receives one message and at most one fd (extra fds are closed). Returns the bytes of the
 * message, 0 when the channel closed or failed, -1 when nothing is there or it was
 * malformed. */
static ssize_t receive_with_fd(int sock, void *buf, size_t len, int *fd)
{
	char control[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
	                      .msg_controllen = sizeof control };
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); n >= 0 && c; c = CMSG_NXTHDR(&msg, c)) {
		size_t count;
		int fds[4];

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		memcpy(fds, CMSG_DATA(c), count * sizeof(int));
		for (size_t i = 0; i < count; i++) {
			if (*fd < 0)
				*fd = fds[i];
			else
				close(fds[i]);
		}
	}
	if (n > 0 && (msg.msg_flags & MSG_CTRUNC)) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -1;
	}
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : 0;   /* an error ends it */
	return n;
}

static void reply(int kind, const char *message)
{
	struct sbx_proxy_reply r = { .kind = (uint32_t)kind };

	snprintf(r.message, sizeof r.message, "%s", message ? message : "");
	send(SBX_PROXY_CONTROL_FD, &r, sizeof r, MSG_NOSIGNAL);
}

int sbx_proxy_set_policy(struct sbx_proxy *px, const char *json, size_t len, char *err,
                         size_t errlen)
{
	struct sbx_network net;
	sbx_json *v = NULL;

	if (sbx_json_parse(json, len, &v, err, errlen) < 0)
		return -1;
	if (sbx_network_parse(v, &net, err, errlen) < 0) {
		sbx_json_free(v);
		return -1;
	}
	sbx_json_free(v);
	if (net.mode != SBX_NET_ALLOWLIST) {
		sbx_network_free(&net);
		snprintf(err, errlen, "key 'network.mode': the proxy serves only mode \"allowlist\"");
		return -1;
	}
	sbx_network_free(&px->net);
	px->net = net;
	return 0;
}

static void take_policy(struct sbx_proxy *px, int fd)
{
	char err[400], *text = malloc(SBX_PROXY_SETTINGS_MAX);
	struct stat st;
	ssize_t n = -1;

	if (text && fstat(fd, &st) == 0 && st.st_size > 0 &&
	    (size_t)st.st_size < SBX_PROXY_SETTINGS_MAX)
		n = pread(fd, text, (size_t)st.st_size, 0);
	if (n <= 0)
		reply(SBX_PROXY_ERROR, "cannot read the policy");
	else if (sbx_proxy_set_policy(px, text, (size_t)n, err, sizeof err) < 0)
		reply(SBX_PROXY_ERROR, err);
	else {
		sbx_conn_recheck(px);
		reply(SBX_PROXY_OK, NULL);
	}
	free(text);
}

/* A bridge channel, listed so that the end can close what is still open. */
struct sbx_bridge {
	struct sbx_watch w;
	struct sbx_bridge *next, **prev;
};

static void drop_bridge(struct sbx_proxy *px, struct sbx_bridge *b)
{
	sbx_watch_del(px, &b->w);
	close(b->w.fd);
	*b->prev = b->next;
	if (b->next)
		b->next->prev = b->prev;
	free(b);
}

void sbx_control_close_bridges(struct sbx_proxy *px)
{
	while (px->bridges)
		drop_bridge(px, px->bridges);
}

static void take_bridge(struct sbx_proxy *px, int fd)
{
	struct sbx_bridge *b = calloc(1, sizeof *b);
	int type = 0;
	socklen_t len = sizeof type;

	if (!b || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM) {
		free(b);
		close(fd);
		reply(SBX_PROXY_ERROR, "a bridge channel must be a stream socket");
		return;
	}
	b->w = (struct sbx_watch){ .kind = W_BRIDGE, .obj = b, .fd = fd };
	if (sbx_watch_add(px, &b->w, EPOLLIN) < 0) {
		free(b);
		close(fd);
		reply(SBX_PROXY_ERROR, strerror(errno));
		return;
	}
	b->next = px->bridges;
	if (b->next)
		b->next->prev = &b->next;
	b->prev = &px->bridges;
	px->bridges = b;
	reply(SBX_PROXY_OK, NULL);
}

bool sbx_control_event(struct sbx_proxy *px)
{
	struct sbx_proxy_request req = { 0 };
	int fd;
	ssize_t n = receive_with_fd(SBX_PROXY_CONTROL_FD, &req, sizeof req, &fd);

	if (n == 0)
		return false;
	if (n != (ssize_t)sizeof req || fd < 0) {
		if (fd >= 0)
			close(fd);
		if (n > 0)
			reply(SBX_PROXY_ERROR, "malformed request");
		return true;
	}
	if (req.kind == SBX_PROXY_POLICY) {
		take_policy(px, fd);
		close(fd);
	} else if (req.kind == SBX_PROXY_BRIDGE) {
		take_bridge(px, fd);
	} else {
		close(fd);
		reply(SBX_PROXY_ERROR, "unknown request");
	}
	return true;
}

/* Each byte from a bridge comes with one client socket. A burst is taken in one go, up to a
 * bound, so other work is not starved. */
bool sbx_bridge_event(struct sbx_proxy *px, struct sbx_watch *w)
{
	for (int i = 0; i < 64; i++) {
		char byte;
		int fd;
		ssize_t n = receive_with_fd(w->fd, &byte, 1, &fd);

		if (n == 0) {
			drop_bridge(px, w->obj);
			return false;
		}
		if (n < 0)
			return true;
		if (fd >= 0)
			sbx_conn_accept(px, fd);
	}
	return true;
}
