/* One client connection of the proxy, from its first byte to its audit record.
 *
 *   HEAD        reading the request (HTTP, or SOCKS5 if the first byte is 5) within the head
 *               timeout; then the policy decides on the target as asked
 *   RESOLVING   a name the policy allowed is being resolved (off the loop, resolver.c); each
 *               address is checked again (deny ranges, internal ranges)
 *   CONNECTING  a non-blocking connect to the checked addresses in turn
 *   TUNNEL      bytes both ways through two 64 KiB buffers; a plain HTTP request forwards
 *               its rewritten head and Content-Length bytes of body, nothing after
 *   LINGER      a refusal is being written out before the close
 * Each direction reads only while its buffer has room and writes only while it holds
 * data, so a client or server that stops reading holds at most one buffer, and nothing
 * waits for anything but its own socket. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "proxy.h"
#include "record.h"
#include "request.h"

enum conn_state { C_HEAD, C_RESOLVING, C_CONNECTING, C_TUNNEL, C_LINGER };
/* P_HTTP_HEAD: an HTTP head not parsed yet, so not known to be CONNECT or a plain request. */
enum conn_proto { P_UNKNOWN, P_HTTP_HEAD, P_CONNECT, P_HTTP, P_SOCKS, P_SOCKS4 };

struct ring {
	char *p;
	size_t start, end;            /* data is p[start..end) */
};

struct sbx_conn {
	struct sbx_proxy *px;
	uint32_t slot;
	uint64_t gen;
	struct sbx_watch client, upstream;
	enum conn_state state;
	enum conn_proto proto;
	bool socks_greeted;
	char method[16];
	char *mem;                    /* both rings, one mapping: pages are touched as used */
	struct ring up, down;         /* client -> server, server -> client */
	uint64_t body_left;           /* P_HTTP: body bytes still to forward */
	struct sbx_nettarget target;
	bool have_target;
	struct sbx_netverdict verdict;
	struct sbx_netaddr addrs[SBX_RESOLVE_MAX_ADDRS];
	size_t n_addrs, next_addr;
	bool connected;
	struct sbx_netaddr peer;
	uint64_t bytes_up, bytes_down;
	size_t reply_left;            /* bytes of the proxy's own reply still in down: not the
	                                 server's, not counted */
	int64_t started, deadline;
	bool client_eof, upstream_eof, up_shut, down_shut, recorded;
	bool closed;                  /* waiting in the graveyard */
	struct sbx_conn *next_closed;
	char error[256];
};

static const char *const proto_names[] = { NULL, "http", "connect", "http", "socks5",
                                           "socks4" };

/* ---- buffers --------------------------------------------------------------------------- */

static size_t ring_len(const struct ring *r)
{
	return r->end - r->start;
}

static size_t ring_room(const struct ring *r)
{
	return SBX_PROXY_BUF - r->end;
}

static void ring_consume(struct ring *r, size_t n)
{
	r->start += n;
	if (r->start == r->end)
		r->start = r->end = 0;
}

/* Makes the free space contiguous at the end. */
static void ring_compact(struct ring *r)
{
	if (r->start && r->end == SBX_PROXY_BUF) {
		memmove(r->p, r->p + r->start, ring_len(r));
		r->end -= r->start;
		r->start = 0;
	}
}

static void ring_put(struct ring *r, const void *data, size_t len)
{
	ring_compact(r);
	if (len > ring_room(r))
		len = ring_room(r);
	memcpy(r->p + r->end, data, len);
	r->end += len;
}

/* ---- lifetime -------------------------------------------------------------------------- */

static void describe_target(const struct sbx_conn *c, char *host, size_t len)
{
	if (c->have_target)
		sbx_nettarget_host(&c->target, host, len);
	else
		host[0] = '\0';
}

static void record(struct sbx_conn *c, const char *decision, const char *rule,
                   const char *reason)
{
	char host[SBX_NET_NAME_MAX + 1], addr[64];
	struct sbx_record_info ri = {
		.decision = decision, .rule = rule, .reason = reason,
		.protocol = proto_names[c->proto],
		.method = c->proto == P_HTTP ? c->method : NULL,
		.port = c->have_target ? c->target.port : 0,
		.error = c->error[0] ? c->error : NULL,
		.bytes_up = c->bytes_up, .bytes_down = c->bytes_down,
		.duration_ms = sbx_proxy_now_ms() - c->started,
	};

	if (c->recorded)
		return;
	c->recorded = true;
	describe_target(c, host, sizeof host);
	ri.host = host[0] ? host : NULL;
	if (c->connected) {
		sbx_netaddr_format(&c->peer, addr, sizeof addr);
		ri.address = addr;
	}
	sbx_record(c->px, &ri);
}

static void close_upstream(struct sbx_conn *c)
{
	if (c->upstream.fd < 0)
		return;
	sbx_watch_del(c->px, &c->upstream);
	close(c->upstream.fd);
	c->upstream.fd = -1;
}

/* Closes the connection; a connection that got through the policy is recorded now, with
 * what it moved (refusals were recorded when they were made). */
static void finish(struct sbx_conn *c)
{
	struct sbx_proxy *px = c->px;

	if (c->verdict.allowed)
		record(c, "allow", c->verdict.rule, NULL);
	close_upstream(c);
	sbx_watch_del(px, &c->client);
	close(c->client.fd);
	munmap(c->mem, 2 * SBX_PROXY_BUF);
	px->conns[c->slot] = NULL;
	px->n_conns--;
	c->closed = true;
	c->next_closed = px->graveyard;
	px->graveyard = c;
}

void sbx_conn_reap(struct sbx_proxy *px)
{
	while (px->graveyard) {
		struct sbx_conn *c = px->graveyard;

		px->graveyard = c->next_closed;
		free(c);
	}
}

static void update_watches(struct sbx_conn *c);

/* Writes a refusal (HTTP status page or SOCKS reply) and closes after it. The decision is
 * recorded as "deny" with the rule that made it. */
static void refuse(struct sbx_conn *c, int status, uint8_t socks_code, const char *rule,
                   const char *reason)
{
	static const struct { int status; const char *text; } texts[] = {
		{ 400, "Bad Request" }, { 403, "Forbidden" }, { 405, "Method Not Allowed" },
		{ 408, "Request Timeout" }, { 431, "Request Header Fields Too Large" },
		{ 501, "Not Implemented" }, { 502, "Bad Gateway" }, { 503, "Service Unavailable" },
		{ 504, "Gateway Timeout" },
	};
	const char *text = "Error";
	char page[1600];
	int n;

	c->verdict.allowed = false;
	record(c, "deny", rule, reason);
	close_upstream(c);
	c->down.start = c->down.end = 0;
	if (c->proto == P_SOCKS4) {
		const uint8_t rejected[8] = { 0, 0x5b };   /* request rejected */

		ring_put(&c->down, rejected, sizeof rejected);
	} else if (c->proto == P_SOCKS) {
		/* Before the greeting was accepted the only answer is "no acceptable method". */
		const uint8_t reply[10] = { SBX_SOCKS_VERSION, c->socks_greeted ? socks_code : 0xff,
		                            0, 1 };

		ring_put(&c->down, reply, c->socks_greeted ? sizeof reply : 2);
	} else if (c->proto != P_UNKNOWN) {
		for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
			if (texts[i].status == status)
				text = texts[i].text;
		int body = (int)strlen(reason) + (int)strlen("agentsbx proxy: \n");
		n = snprintf(page, sizeof page, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; "
		             "charset=utf-8\r\nX-Agentsbx-Rule: %s\r\nContent-Length: %d\r\n"
		             "Connection: close\r\n\r\nagentsbx proxy: %s\n", status, text, rule,
		             body, reason);
		ring_put(&c->down, page, n > 0 && (size_t)n < sizeof page ? (size_t)n : 0);
	}
	c->state = C_LINGER;
	c->deadline = sbx_proxy_now_ms() + SBX_PROXY_LINGER_MS;
	update_watches(c);
}

void sbx_conn_accept(struct sbx_proxy *px, int fd)
{
	int type = 0, listening = 1;
	socklen_t len = sizeof type;
	struct sbx_conn *c;
	size_t slot;

	/* Only a connected stream socket is a client; anything else a bridge could send is
	 * closed unread. */
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM ||
	    (len = sizeof listening, getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len)) < 0 ||
	    listening) {
		close(fd);
		return;
	}
	for (slot = 0; slot < px->max_conns && px->conns[slot]; slot++)
		;
	if (px->stopping || slot == px->max_conns) {
		struct sbx_record_info ri = { .decision = "deny", .rule = "connection-limit",
		                              .reason = "the proxy has as many connections open as it "
		                                        "allows; try again later" };

		sbx_record(px, &ri);
		close(fd);
		return;
	}
	c = calloc(1, sizeof *c);
	if (c)
		c->mem = mmap(NULL, 2 * SBX_PROXY_BUF, PROT_READ | PROT_WRITE,
		              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!c || c->mem == MAP_FAILED || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		if (c && c->mem != MAP_FAILED)
			munmap(c->mem, 2 * SBX_PROXY_BUF);
		free(c);
		close(fd);
		return;
	}
	c->px = px;
	c->slot = (uint32_t)slot;
	c->gen = ++px->next_gen;
	c->up.p = c->mem;
	c->down.p = c->mem + SBX_PROXY_BUF;
	c->client = (struct sbx_watch){ .kind = W_CLIENT, .obj = c, .fd = fd };
	c->upstream = (struct sbx_watch){ .kind = W_UPSTREAM, .obj = c, .fd = -1 };
	c->started = sbx_proxy_now_ms();
	c->deadline = c->started + SBX_PROXY_HEAD_TIMEOUT_MS;
	if (sbx_watch_add(px, &c->client, EPOLLIN) < 0) {
		munmap(c->mem, 2 * SBX_PROXY_BUF);
		free(c);
		close(fd);
		return;
	}
	px->conns[slot] = c;
	px->n_conns++;
}

/* ---- connecting ------------------------------------------------------------------------ */

static void fill_sockaddr(const struct sbx_netaddr *a, uint16_t port,
                          struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof *ss);
	if (a->family == 4) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		memcpy(&in->sin_addr, a->b, 4);
		*len = sizeof *in;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		memcpy(&in6->sin6_addr, a->b, 16);
		*len = sizeof *in6;
	}
}

static void established(struct sbx_conn *c)
{
	static const char connect_ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	static const uint8_t socks_ok[10] = { SBX_SOCKS_VERSION, SBX_SOCKS_OK, 0, 1 };

	c->connected = true;
	c->peer = c->addrs[c->next_addr - 1];
	c->state = C_TUNNEL;
	c->deadline = sbx_proxy_now_ms() + SBX_PROXY_IDLE_TIMEOUT_MS;
	if (c->proto == P_CONNECT) {
		ring_put(&c->down, connect_ok, sizeof connect_ok - 1);
		c->reply_left = sizeof connect_ok - 1;
	} else if (c->proto == P_SOCKS) {
		ring_put(&c->down, socks_ok, sizeof socks_ok);
		c->reply_left = sizeof socks_ok;
	}
	update_watches(c);
}

/* Tries the next checked address; a refusal when none is left. */
static void connect_next(struct sbx_conn *c, int last_error)
{
	while (c->next_addr < c->n_addrs) {
		const struct sbx_netaddr *a = &c->addrs[c->next_addr++];
		struct sockaddr_storage ss;
		socklen_t len;
		int fd = socket(a->family == 4 ? AF_INET : AF_INET6,
		                SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (fd < 0) {
			last_error = errno;
			continue;
		}
		fill_sockaddr(a, c->target.port, &ss, &len);
		if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
			last_error = errno;
			close(fd);
			continue;
		}
		c->upstream.fd = fd;
		c->upstream.events = 0;
		if (sbx_watch_add(c->px, &c->upstream, EPOLLOUT) < 0) {
			last_error = errno;
			close(fd);
			c->upstream.fd = -1;
			continue;
		}
		c->state = C_CONNECTING;
		c->deadline = sbx_proxy_now_ms() + SBX_PROXY_CONNECT_TIMEOUT_MS;
		update_watches(c);
		return;
	}
	/* The policy allowed it; the network did not. Recorded as an allowed attempt. */
	snprintf(c->error, sizeof c->error, "connect: %s", strerror(last_error));
	char reason[SBX_NET_NAME_MAX + 320], host[SBX_NET_NAME_MAX + 1];
	describe_target(c, host, sizeof host);
	snprintf(reason, sizeof reason, "cannot connect to %s:%u: %s", host, c->target.port,
	         strerror(last_error));
	record(c, "allow", c->verdict.rule, NULL);
	refuse(c, 502, last_error == ECONNREFUSED ? SBX_SOCKS_REFUSED : SBX_SOCKS_HOST_UNREACHABLE,
	       c->verdict.rule, reason);
}

static void upstream_connected(struct sbx_conn *c)
{
	int err = 0;
	socklen_t len = sizeof err;

	if (getsockopt(c->upstream.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err == 0) {
		established(c);
		return;
	}
	close_upstream(c);
	connect_next(c, err);
}

/* ---- deciding -------------------------------------------------------------------------- */

static void decide(struct sbx_conn *c)
{
	struct sbx_proxy *px = c->px;

	sbx_netpolicy_check(&px->net.policy, &c->target, &c->verdict);
	if (!c->verdict.allowed) {
		refuse(c, 403, SBX_SOCKS_NOT_ALLOWED, c->verdict.rule, c->verdict.reason);
		return;
	}
	if (!c->target.is_name) {
		c->addrs[0] = c->target.addr;
		c->n_addrs = 1;
		connect_next(c, ECONNREFUSED);
		return;
	}
	if (sbx_resolver_submit(px->resolver, c->slot, c->gen, c->target.name) < 0) {
		refuse(c, 503, SBX_SOCKS_GENERAL_FAILURE, "resolver-busy",
		       "too many name lookups are waiting; try again later");
		return;
	}
	c->state = C_RESOLVING;
	c->deadline = sbx_proxy_now_ms() + SBX_PROXY_RESOLVE_TIMEOUT_MS;
	update_watches(c);
}

void sbx_conn_resolved(struct sbx_proxy *px, const struct sbx_resolution *res)
{
	struct sbx_conn *c = res->slot < px->max_conns ? px->conns[res->slot] : NULL;
	struct sbx_netverdict refusal = { 0 };

	if (!c || c->gen != res->gen || c->state != C_RESOLVING)
		return;               /* it gave up waiting; the answer is not wanted */
	if (res->error) {
		char reason[SBX_NET_NAME_MAX + 128];

		snprintf(c->error, sizeof c->error, "resolve: %s", gai_strerror(res->error));
		snprintf(reason, sizeof reason, "cannot resolve %s: %s", c->target.name,
		         gai_strerror(res->error));
		record(c, "allow", c->verdict.rule, NULL);
		refuse(c, 502, SBX_SOCKS_HOST_UNREACHABLE, c->verdict.rule, reason);
		return;
	}
	for (size_t i = 0; i < res->n; i++)
		if (sbx_netpolicy_check_address(&px->net.policy, &res->addrs[i], c->target.port,
		                                c->verdict.exact_name, &refusal))
			c->addrs[c->n_addrs++] = res->addrs[i];
	if (c->n_addrs == 0) {
		char reason[sizeof refusal.reason + SBX_NET_NAME_MAX + 32];

		snprintf(reason, sizeof reason, "%s:%u is refused: %s", c->target.name,
		         c->target.port, refusal.reason);
		refuse(c, 403, SBX_SOCKS_NOT_ALLOWED, refusal.rule, reason);
		return;
	}
	connect_next(c, ECONNREFUSED);
}

/* ---- the request head ------------------------------------------------------------------ */

static bool take_target(struct sbx_conn *c, const char *host, uint16_t port)
{
	if (sbx_nettarget_parse(host, strlen(host), port, &c->target) < 0) {
		char reason[400];

		snprintf(reason, sizeof reason, "'%.64s' is neither a host name nor an IP address",
		         host);
		refuse(c, 400, SBX_SOCKS_ADDRESS_UNSUPPORTED, "bad-request", reason);
		return false;
	}
	c->have_target = true;
	return true;
}

/* A complete HTTP head: CONNECT drops it (what follows is the tunnel's first data); a plain
 * request replaces it with its rewritten form and keeps only its own body. */
static void http_head(struct sbx_conn *c, const struct sbx_http_request *r)
{
	struct ring *up = &c->up;
	const char *head = up->p + up->start;
	size_t rest = ring_len(up) - r->head_len;

	snprintf(c->method, sizeof c->method, "%s", r->method);
	c->proto = r->connect ? P_CONNECT : P_HTTP;
	if (!take_target(c, r->host, r->port))
		return;
	if (r->connect) {
		ring_consume(up, r->head_len);
	} else {
		char rewritten[SBX_HTTP_HEAD_MAX + 512];
		size_t n = sbx_http_rewrite(head, r, rewritten, sizeof rewritten);
		size_t body = rest < r->content_length ? rest : (size_t)r->content_length;

		if (n == 0) {
			refuse(c, 431, 0, "bad-request", "request head too large once rewritten");
			return;
		}
		/* head and rest live in up: move the body first, then put the new head before it. */
		memmove(up->p + n, head + r->head_len, body);
		memcpy(up->p, rewritten, n);
		up->start = 0;
		up->end = n + body;
		c->body_left = r->content_length - body;
	}
	decide(c);
}

static void parse_http(struct sbx_conn *c)
{
	struct sbx_http_request r;
	int rc = sbx_http_parse(c->up.p + c->up.start, ring_len(&c->up), &r);

	if (rc == SBX_PARSE_MORE)
		return;
	if (rc == SBX_PARSE_BAD) {
		snprintf(c->method, sizeof c->method, "%s", r.method);
		if (r.method[0])
			c->proto = r.connect ? P_CONNECT : P_HTTP;
		if (r.host[0] && sbx_nettarget_parse(r.host, strlen(r.host), r.port, &c->target) == 0)
			c->have_target = true;
		refuse(c, r.status, 0, strstr(r.error, "Host header") ? "host-mismatch"
		                                                      : "bad-request", r.error);
		return;
	}
	http_head(c, &r);
}

static void parse_socks(struct sbx_conn *c)
{
	struct sbx_socks_request r;
	const uint8_t *data = (const uint8_t *)c->up.p + c->up.start;
	int rc;

	if (!c->socks_greeted) {
		rc = sbx_socks_parse_greeting(data, ring_len(&c->up), &r);
		if (rc == SBX_PARSE_MORE)
			return;
		if (rc == SBX_PARSE_BAD || !r.no_auth_offered) {
			refuse(c, 0, 0, "bad-request", rc == SBX_PARSE_BAD ? r.error
			       : "the SOCKS5 client offers no method without authentication");
			return;
		}
		const uint8_t ok[2] = { SBX_SOCKS_VERSION, 0 };
		ring_put(&c->down, ok, sizeof ok);
		ring_consume(&c->up, r.used);
		c->socks_greeted = true;
		data = (const uint8_t *)c->up.p + c->up.start;
	}
	rc = sbx_socks_parse_request(data, ring_len(&c->up), &r);
	if (rc == SBX_PARSE_MORE)
		return;
	if (rc == SBX_PARSE_BAD) {
		refuse(c, 0, r.reply, "bad-request", r.error);
		return;
	}
	ring_consume(&c->up, r.used);
	if (take_target(c, r.host, r.port))
		decide(c);
}

/* The first byte tells the protocol: 5 is SOCKS5, 4 is SOCKS4 (refused), else HTTP. */
static void parse_head(struct sbx_conn *c)
{
	if (c->proto == P_UNKNOWN && ring_len(&c->up)) {
		uint8_t first = (uint8_t)c->up.p[c->up.start];

		c->proto = first == SBX_SOCKS_VERSION ? P_SOCKS : first == 4 ? P_SOCKS4 : P_HTTP_HEAD;
		if (c->proto == P_SOCKS4) {
			refuse(c, 0, 0, "bad-request", "SOCKS4 is not supported: use SOCKS5");
			return;
		}
	}
	if (c->proto == P_SOCKS)
		parse_socks(c);
	else
		parse_http(c);
}

/* ---- moving bytes ---------------------------------------------------------------------- */

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

static void update_watches(struct sbx_conn *c)
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
			finish(c);
			return;
		}
		if (c->state == C_TUNNEL)
			count_down(c, (size_t)n);
	}
	if (events & (EPOLLHUP | EPOLLERR)) {
		if (c->verdict.allowed && c->state != C_TUNNEL)
			snprintf(c->error, sizeof c->error, "the client went away");
		finish(c);
		return;
	}
	if ((events & EPOLLIN) && c->state == C_LINGER) {
		char sink[4096];

		n = read(c->client.fd, sink, sizeof sink);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			finish(c);
			return;
		}
	} else if ((events & EPOLLIN) && client_wants_read(c)) {
		n = read_into(c->client.fd, &c->up, client_read_room(c));
		if (n == -1 || (n == 0 && c->state == C_HEAD)) {
			finish(c);   /* gone before it asked anything: nothing to record */
			return;
		}
		if (n == 0)
			c->client_eof = true;
		if (n > 0 && c->state == C_HEAD)
			parse_head(c);
		else if (n > 0 && c->proto == P_HTTP)
			c->body_left -= (uint64_t)n;
	}
	if (c->state == C_LINGER && !ring_len(&c->down) && !c->down_shut) {
		shutdown(c->client.fd, SHUT_WR);
		c->down_shut = true;
	}
	if (c->state == C_TUNNEL) {
		c->deadline = sbx_proxy_now_ms() + SBX_PROXY_IDLE_TIMEOUT_MS;
		if (tunnel_done(c)) {
			finish(c);
			return;
		}
	}
	update_watches(c);
}

static void upstream_event(struct sbx_conn *c, uint32_t events)
{
	ssize_t n;

	if (c->state == C_CONNECTING) {
		upstream_connected(c);
		return;
	}
	if (c->state != C_TUNNEL)
		return;
	if (events & EPOLLOUT) {
		if ((n = write_from(c->upstream.fd, &c->up)) < 0) {
			snprintf(c->error, sizeof c->error, "the server closed the connection");
			finish(c);
			return;
		}
		c->bytes_up += (uint64_t)n;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		n = read_into(c->upstream.fd, &c->down, SBX_PROXY_BUF);
		if (n == -1) {
			snprintf(c->error, sizeof c->error, "the server reset the connection");
			finish(c);
			return;
		}
		if (n == 0)
			c->upstream_eof = true;
		/* Gone both ways: nothing more to get from it, or to give it. */
		if (c->upstream_eof && (events & (EPOLLHUP | EPOLLERR))) {
			close_upstream(c);
			c->up_shut = true;
		}
	}
	c->deadline = sbx_proxy_now_ms() + SBX_PROXY_IDLE_TIMEOUT_MS;
	if (tunnel_done(c)) {
		finish(c);
		return;
	}
	update_watches(c);
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

/* ---- deadlines, policy changes, shutdown ----------------------------------------------- */

static void expire(struct sbx_conn *c)
{
	switch (c->state) {
	case C_HEAD:
		if (c->proto == P_UNKNOWN && !ring_len(&c->up)) {
			finish(c);   /* never said anything */
			return;
		}
		refuse(c, 408, SBX_SOCKS_GENERAL_FAILURE, "head-timeout",
		       "the request was not complete within the time allowed");
		return;
	case C_RESOLVING:
		snprintf(c->error, sizeof c->error, "resolve: timed out");
		record(c, "allow", c->verdict.rule, NULL);
		refuse(c, 504, SBX_SOCKS_HOST_UNREACHABLE, c->verdict.rule,
		       "name resolution timed out");
		return;
	case C_CONNECTING:
		close_upstream(c);
		connect_next(c, ETIMEDOUT);
		return;
	case C_TUNNEL:
		snprintf(c->error, sizeof c->error, "idle timeout");
		finish(c);
		return;
	case C_LINGER:
	default:
		finish(c);
		return;
	}
}

void sbx_conn_sweep(struct sbx_proxy *px, int64_t now)
{
	for (size_t i = 0; i < px->max_conns; i++)
		if (px->conns[i] && px->conns[i]->deadline <= now)
			expire(px->conns[i]);
}

/* Would the current policy still allow c? (Its target, and the address it reached.) */
static bool still_allowed(struct sbx_conn *c, struct sbx_netverdict *v)
{
	sbx_netpolicy_check(&c->px->net.policy, &c->target, v);
	if (!v->allowed)
		return false;
	if (c->target.is_name && c->connected)
		return sbx_netpolicy_check_address(&c->px->net.policy, &c->peer, c->target.port,
		                                   v->exact_name, v);
	return true;
}

void sbx_conn_recheck(struct sbx_proxy *px)
{
	for (size_t i = 0; i < px->max_conns; i++) {
		struct sbx_conn *c = px->conns[i];
		struct sbx_netverdict v;

		if (!c || !c->verdict.allowed || c->state == C_LINGER || still_allowed(c, &v))
			continue;
		snprintf(c->error, sizeof c->error, "closed by a policy change");
		c->verdict.allowed = false;
		if (c->state == C_TUNNEL) {
			record(c, "deny", v.rule, v.reason);
			finish(c);
		} else {
			refuse(c, 403, SBX_SOCKS_NOT_ALLOWED, v.rule, v.reason);
		}
	}
}

void sbx_conn_close_all(struct sbx_proxy *px, const char *why)
{
	for (size_t i = 0; i < px->max_conns; i++) {
		struct sbx_conn *c = px->conns[i];

		if (!c)
			continue;
		if (c->verdict.allowed)
			snprintf(c->error, sizeof c->error, "%s", why);
		finish(c);
	}
}
