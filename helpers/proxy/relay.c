/* The bytes of a proxy connection, both ways. Each direction reads only while its buffer has
 * room and writes only while it holds data, so a client or server that stops reading holds
 * at most one 64 KiB buffer, and nothing waits for anything but its own socket. A plain
 * request forwards its rewritten head and Content-Length bytes of body, nothing after. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "conn.h"
#include "record.h"
#include "request.h"

/* How much the client may send now: in HEAD up to the head limit; in a plain request only
 * its body. */
static size_t client_read_room(const struct sbx_conn *c)
{
	size_t room = ring_room(&c->up);

	if (c->state == C_HEAD) {
		size_t have = ring_len(&c->up);
		return have >= SBX_HTTP_HEAD_MAX ? 0 : SBX_HTTP_HEAD_MAX - have;
	}
	if (c->proto == P_HTTP && c->body_left < room)
		return (size_t)c->body_left;
	return room;
}

static bool client_wants_read(const struct sbx_conn *c)
{
	if (c->state == C_HEAD || c->state == C_LINGER)
		return true;
	return c->state == C_TUNNEL && !c->client_eof && client_read_room(c) > 0;
}

void sbx_conn_update_watches(struct sbx_conn *c)
{
	uint32_t ce = 0, ue = 0;

	if (client_wants_read(c))
		ce |= EPOLLIN;
	if (ring_len(&c->down))
		ce |= EPOLLOUT;
	sbx_watch_set(c->px, &c->client, ce);
	if (c->upstream.fd < 0)
		return;
	if (c->state == C_CONNECTING || (c->state == C_TUNNEL && ring_len(&c->up) && !c->up_shut))
		ue |= EPOLLOUT;
	if (c->state == C_TUNNEL && !c->upstream_eof && ring_room(&c->down))
		ue |= EPOLLIN;
	sbx_watch_set(c->px, &c->upstream, ue);
}

/* Reads from fd into r (at most max): the bytes read, 0 at the end of the stream, -1 on an
 * error, -2 when there is nothing now (or no room). */
static ssize_t read_into(int fd, struct ring *r, size_t max)
{
	ssize_t n;

	ring_compact(r);
	if (max > ring_room(r))
		max = ring_room(r);
	if (max == 0)
		return -2;
	n = read(fd, r->p + r->end, max);
	if (n > 0)
		r->end += (size_t)n;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return -2;
	return n;
}

/* Writes from r to fd: the bytes written, or -1 on an error. */
static ssize_t write_from(int fd, struct ring *r)
{
	ssize_t n = send(fd, r->p + r->start, ring_len(r), MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n > 0)
		ring_consume(r, (size_t)n);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	return n;
}

/* Half-closes follow the data: once one side has said all it will and its bytes are out,
 * the other side hears the end. The connection is done when the server's side is finished
 * and the client has its last byte, and the client has finished too (a plain request: the
 * answer is all that is wanted) or the server is gone. A plain request's client that has
 * gone once its request is out wants nothing more: a server that keeps the connection open
 * despite "Connection: close" must not hold a slot until the idle timeout. */
static bool tunnel_done(struct sbx_conn *c)
{
	if (c->proto == P_HTTP && c->client_eof && !ring_len(&c->up))
		return true;
	if (c->client_eof && !ring_len(&c->up) && !c->up_shut && c->upstream.fd >= 0 &&
	    c->proto != P_HTTP) {
		shutdown(c->upstream.fd, SHUT_WR);
		c->up_shut = true;
	}
	if (c->upstream_eof && !ring_len(&c->down) && !c->down_shut) {
		shutdown(c->client.fd, SHUT_WR);
		c->down_shut = true;
	}
	return c->down_shut && (c->up_shut || c->client_eof || c->proto == P_HTTP ||
	                        c->upstream.fd < 0);
}

static void count_down(struct sbx_conn *c, size_t n)
{
	size_t reply = n < c->reply_left ? n : c->reply_left;

	c->reply_left -= reply;
	c->bytes_down += n - reply;
}

/* A client that is gone both ways (reset, or closed after we half-closed) ends everything. */
static void client_event(struct sbx_conn *c, uint32_t events)
{
	ssize_t n;

	if (events & EPOLLOUT) {
		if ((n = write_from(c->client.fd, &c->down)) < 0) {
			sbx_conn_finish(c);
			return;
		}
		if (c->state == C_TUNNEL)
			count_down(c, (size_t)n);
	}
	if (events & (EPOLLHUP | EPOLLERR)) {
		if (c->verdict.allowed && c->state != C_TUNNEL)
			snprintf(c->error, sizeof c->error, "the client went away");
		sbx_conn_finish(c);
		return;
	}
	if ((events & EPOLLIN) && c->state == C_LINGER) {
		char sink[4096];

		n = read(c->client.fd, sink, sizeof sink);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			sbx_conn_finish(c);
			return;
		}
	} else if ((events & EPOLLIN) && client_wants_read(c)) {
		n = read_into(c->client.fd, &c->up, client_read_room(c));
		if (n == -1 || (n == 0 && c->state == C_HEAD)) {
			sbx_conn_finish(c);   /* gone before it asked anything: nothing to record */
			return;
		}
		if (n == 0)
			c->client_eof = true;
		if (n > 0 && c->state == C_HEAD)
			sbx_conn_parse_head(c);
		else if (n > 0 && c->proto == P_HTTP)
			c->body_left -= (uint64_t)n;
	}
	if (c->state == C_LINGER && !ring_len(&c->down) && !c->down_shut) {
		shutdown(c->client.fd, SHUT_WR);
		c->down_shut = true;
	}
	if (c->state == C_TUNNEL) {
		c->deadline = sbx_now_ms() + SBX_PROXY_IDLE_TIMEOUT_MS;
		if (tunnel_done(c)) {
			sbx_conn_finish(c);
			return;
		}
	}
	sbx_conn_update_watches(c);
}

static void upstream_event(struct sbx_conn *c, uint32_t events)
{
	ssize_t n;

	if (c->state == C_CONNECTING) {
		sbx_conn_upstream_connected(c);
		return;
	}
	if (c->state != C_TUNNEL)
		return;
	if (events & EPOLLOUT) {
		if ((n = write_from(c->upstream.fd, &c->up)) < 0) {
			snprintf(c->error, sizeof c->error, "the server closed the connection");
			sbx_conn_finish(c);
			return;
		}
		c->bytes_up += (uint64_t)n;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		n = read_into(c->upstream.fd, &c->down, SBX_PROXY_BUF);
		if (n == -1) {
			snprintf(c->error, sizeof c->error, "the server reset the connection");
			sbx_conn_finish(c);
			return;
		}
		if (n == 0)
			c->upstream_eof = true;
		/* Gone both ways: nothing more to get from it, or to give it. */
		if (c->upstream_eof && (events & (EPOLLHUP | EPOLLERR))) {
			sbx_conn_close_upstream(c);
			c->up_shut = true;
		}
	}
	c->deadline = sbx_now_ms() + SBX_PROXY_IDLE_TIMEOUT_MS;
	if (tunnel_done(c)) {
		sbx_conn_finish(c);
		return;
	}
	sbx_conn_update_watches(c);
}

void sbx_conn_event(struct sbx_proxy *px, struct sbx_watch *w, uint32_t events)
{
	struct sbx_conn *c = w->obj;

	(void)px;
	if (c->closed)
		return;
	if (w->kind == W_CLIENT)
		client_event(c, events);
	else
		upstream_event(c, events);
}

