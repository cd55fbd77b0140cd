/* One client connection of the proxy: its life from the accepted socket to its audit
 * record, the policy's decision, resolution and connect, deadlines and policy changes.
 *
 *   HEAD        reading the request (head.c) within the head timeout; then the policy
 *               decides on the target as asked
 *   RESOLVING   a name the policy allowed is being resolved (off the loop, resolver.c); each
 *               address is checked again (deny ranges, internal ranges)
 *   CONNECTING  a non-blocking connect to the checked addresses in turn
 *   TUNNEL      bytes both ways (relay.c)
 *   LINGER      a refusal is being written out before the close */
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

#include "conn.h"
#include "record.h"
#include "request.h"

static const char *const proto_names[] = { NULL, "http", "connect", "http", "socks5",
                                           "socks4" };

/* ---- lifetime -------------------------------------------------------------------------- */

void sbx_conn_describe_target(const struct sbx_conn *c, char *host, size_t len)
{
	if (c->have_target)
		sbx_nettarget_host(&c->target, host, len);
	else
		host[0] = '\0';
}

void sbx_conn_record(struct sbx_conn *c, const char *decision, const char *rule,
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
		.duration_ms = sbx_now_ms() - c->started,
	};

	if (c->recorded)
		return;
	c->recorded = true;
	sbx_conn_describe_target(c, host, sizeof host);
	ri.host = host[0] ? host : NULL;
	if (c->connected) {
		sbx_netaddr_format(&c->peer, addr, sizeof addr);
		ri.address = addr;
	}
	sbx_record(c->px, &ri);
}

void sbx_conn_close_upstream(struct sbx_conn *c)
{
	if (c->upstream.fd < 0)
		return;
	sbx_watch_del(c->px, &c->upstream);
	close(c->upstream.fd);
	c->upstream.fd = -1;
}

/* Closes the connection; a connection that got through the policy is recorded now, with
 * what it moved (refusals were recorded when they were made). */
void sbx_conn_finish(struct sbx_conn *c)
{
	struct sbx_proxy *px = c->px;

	if (c->verdict.allowed)
		sbx_conn_record(c, "allow", c->verdict.rule, NULL);
	sbx_conn_close_upstream(c);
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

/* Writes a refusal (HTTP status page or SOCKS reply) and closes after it. The decision is
 * recorded as "deny" with the rule that made it. */
void sbx_conn_refuse(struct sbx_conn *c, int status, uint8_t socks_code, const char *rule,
                   const char *reason)
{
	static const struct { int status; const char *text; } texts[] = {
		{ 400, "Bad Request" }, { 403, "Forbidden" }, { 405, "Method Not Allowed" },
		{ 408, "Request Timeout" }, { 431, "Request Header Fields Too Large" },
		{ 501, "Not Implemented" }, { 502, "Bad Gateway" }, { 503, "Service Unavailable" },
		{ 504, "Gateway Timeout" },
	};
	const char *text = "Error";
	char page[4096];
	int n;

	c->verdict.allowed = false;
	sbx_conn_record(c, "deny", rule, reason);
	sbx_conn_close_upstream(c);
	/* down holds only the proxy's own words so far (a SOCKS method reply): they go first. */
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
	c->deadline = sbx_now_ms() + SBX_PROXY_LINGER_MS;
	sbx_conn_update_watches(c);
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
	c->started = sbx_now_ms();
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
	c->deadline = sbx_now_ms() + SBX_PROXY_IDLE_TIMEOUT_MS;
	if (c->proto == P_CONNECT) {
		ring_put(&c->down, connect_ok, sizeof connect_ok - 1);
		c->reply_left = sizeof connect_ok - 1;
	} else if (c->proto == P_SOCKS) {
		ring_put(&c->down, socks_ok, sizeof socks_ok);
		c->reply_left = sizeof socks_ok;
	}
	sbx_conn_update_watches(c);
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
		c->deadline = sbx_now_ms() + SBX_PROXY_CONNECT_TIMEOUT_MS;
		sbx_conn_update_watches(c);
		return;
	}
	/* The policy allowed it; the network did not. Recorded as an allowed attempt. */
	snprintf(c->error, sizeof c->error, "connect: %s", strerror(last_error));
	char reason[SBX_NET_NAME_MAX + 320], host[SBX_NET_NAME_MAX + 1];
	sbx_conn_describe_target(c, host, sizeof host);
	snprintf(reason, sizeof reason, "cannot connect to %s:%u: %s", host, c->target.port,
	         strerror(last_error));
	sbx_conn_record(c, "allow", c->verdict.rule, NULL);
	sbx_conn_refuse(c, 502, last_error == ECONNREFUSED ? SBX_SOCKS_REFUSED : SBX_SOCKS_HOST_UNREACHABLE,
	       c->verdict.rule, reason);
}

void sbx_conn_upstream_connected(struct sbx_conn *c)
{
	int err = 0;
	socklen_t len = sizeof err;

	if (getsockopt(c->upstream.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err == 0) {
		established(c);
		return;
	}
	sbx_conn_close_upstream(c);
	connect_next(c, err);
}

/* ---- deciding -------------------------------------------------------------------------- */

void sbx_conn_decide(struct sbx_conn *c)
{
	struct sbx_proxy *px = c->px;

	sbx_netpolicy_check(&px->net.policy, &c->target, &c->verdict);
	if (!c->verdict.allowed) {
		sbx_conn_refuse(c, 403, SBX_SOCKS_NOT_ALLOWED, c->verdict.rule, c->verdict.reason);
		return;
	}
	if (!c->target.is_name) {
		c->addrs[0] = c->target.addr;
		c->n_addrs = 1;
		connect_next(c, ECONNREFUSED);
		return;
	}
	if (sbx_resolver_submit(px->resolver, c->slot, c->gen, c->target.name) < 0) {
		sbx_conn_refuse(c, 503, SBX_SOCKS_GENERAL_FAILURE, "resolver-busy",
		       "too many name lookups are waiting; try again later");
		return;
	}
	c->state = C_RESOLVING;
	c->deadline = sbx_now_ms() + SBX_PROXY_RESOLVE_TIMEOUT_MS;
	sbx_conn_update_watches(c);
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
		sbx_conn_record(c, "allow", c->verdict.rule, NULL);
		sbx_conn_refuse(c, 502, SBX_SOCKS_HOST_UNREACHABLE, c->verdict.rule, reason);
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
		sbx_conn_refuse(c, 403, SBX_SOCKS_NOT_ALLOWED, refusal.rule, reason);
		return;
	}
	connect_next(c, ECONNREFUSED);
}

/* ---- deadlines, policy changes, shutdown ----------------------------------------------- */

static void expire(struct sbx_conn *c)
{
	switch (c->state) {
	case C_HEAD:
		if (c->proto == P_UNKNOWN && !ring_len(&c->up)) {
			sbx_conn_finish(c);   /* never said anything */
			return;
		}
		sbx_conn_refuse(c, 408, SBX_SOCKS_GENERAL_FAILURE, "head-timeout",
		       "the request was not complete within the time allowed");
		return;
	case C_RESOLVING:
		snprintf(c->error, sizeof c->error, "resolve: timed out");
		sbx_conn_record(c, "allow", c->verdict.rule, NULL);
		sbx_conn_refuse(c, 504, SBX_SOCKS_HOST_UNREACHABLE, c->verdict.rule,
		       "name resolution timed out");
		return;
	case C_CONNECTING:
		sbx_conn_close_upstream(c);
		connect_next(c, ETIMEDOUT);
		return;
	case C_TUNNEL:
		snprintf(c->error, sizeof c->error, "idle timeout");
		sbx_conn_finish(c);
		return;
	case C_LINGER:
	default:
		sbx_conn_finish(c);
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
			sbx_conn_record(c, "deny", v.rule, v.reason);
			sbx_conn_finish(c);
		} else {
			sbx_conn_refuse(c, 403, SBX_SOCKS_NOT_ALLOWED, v.rule, v.reason);
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
		sbx_conn_finish(c);
	}
}
