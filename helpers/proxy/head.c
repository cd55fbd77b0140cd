/* The request head of a proxy connection: the protocol from the first byte (5 is SOCKS5, 4
 * SOCKS4, anything else HTTP), the parsers of request.c, and what a complete head becomes:
 * a target for the policy, the tunnel's first bytes, or a plain request's rewritten head. */
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "record.h"
#include "request.h"

static bool take_target(struct sbx_conn *c, const char *host, uint16_t port)
{
	if (sbx_nettarget_parse(host, strlen(host), port, &c->target) < 0) {
		char reason[400];

		snprintf(reason, sizeof reason, "'%.64s' is neither a host name nor an IP address",
		         host);
		sbx_conn_refuse(c, 400, SBX_SOCKS_ADDRESS_UNSUPPORTED, "bad-request", reason);
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
			sbx_conn_refuse(c, 431, 0, "bad-request", "request head too large once rewritten");
			return;
		}
		/* head and rest live in up: move the body first, then put the new head before it. */
		memmove(up->p + n, head + r->head_len, body);
		memcpy(up->p, rewritten, n);
		up->start = 0;
		up->end = n + body;
		c->body_left = r->content_length - body;
	}
	sbx_conn_decide(c);
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
		sbx_conn_refuse(c, r.status, 0, strstr(r.error, "Host header") ? "host-mismatch"
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
			sbx_conn_refuse(c, 0, 0, "bad-request", rc == SBX_PARSE_BAD ? r.error
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
		sbx_conn_refuse(c, 0, r.reply, "bad-request", r.error);
		return;
	}
	ring_consume(&c->up, r.used);
	if (take_target(c, r.host, r.port))
		sbx_conn_decide(c);
}

/* The first byte tells the protocol: 5 is SOCKS5, 4 is SOCKS4 (refused), else HTTP. */
void sbx_conn_parse_head(struct sbx_conn *c)
{
	if (c->proto == P_UNKNOWN && ring_len(&c->up)) {
		uint8_t first = (uint8_t)c->up.p[c->up.start];

		c->proto = first == SBX_SOCKS_VERSION ? P_SOCKS : first == 4 ? P_SOCKS4 : P_HTTP_HEAD;
		if (c->proto == P_SOCKS4) {
			sbx_conn_refuse(c, 0, 0, "bad-request", "SOCKS4 is not supported: use SOCKS5");
			return;
		}
	}
	if (c->proto == P_SOCKS)
		parse_socks(c);
	else
		parse_http(c);
}

