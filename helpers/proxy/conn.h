/* One client connection of the proxy (conn.c: its life, decision and connect; head.c: its
 * request head; relay.c: the bytes both ways). Internal to agentsbx-proxy. */
#ifndef SBX_PROXY_CONN_H
#define SBX_PROXY_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "proxy.h"

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

/* ---- the two buffers (SBX_PROXY_BUF each) ---------------------------------------------- */

static inline size_t ring_len(const struct ring *r)
{
	return r->end - r->start;
}

static inline size_t ring_room(const struct ring *r)
{
	return SBX_PROXY_BUF - r->end;
}

static inline void ring_consume(struct ring *r, size_t n)
{
	r->start += n;
	if (r->start == r->end)
		r->start = r->end = 0;
}

/* Makes the free space contiguous at the end. */
static inline void ring_compact(struct ring *r)
{
	if (r->start && r->end == SBX_PROXY_BUF) {
		memmove(r->p, r->p + r->start, ring_len(r));
		r->end -= r->start;
		r->start = 0;
	}
}

static inline void ring_put(struct ring *r, const void *data, size_t len)
{
	ring_compact(r);
	if (len > ring_room(r))
		len = ring_room(r);
	memcpy(r->p + r->end, data, len);
	r->end += len;
}

/* ---- conn.c ----------------------------------------------------------------------------- */

/* The host as asked, for messages ("" before it is known). */
void sbx_conn_describe_target(const struct sbx_conn *c, char *host, size_t len);
/* The connection's audit record, written once (later calls do nothing). */
void sbx_conn_record(struct sbx_conn *c, const char *decision, const char *rule,
                     const char *reason);
void sbx_conn_close_upstream(struct sbx_conn *c);
/* Closes the connection (recording an allowed one) and puts it in the graveyard. */
void sbx_conn_finish(struct sbx_conn *c);
/* Writes a refusal (an HTTP status page, a SOCKS reply) recorded as "deny" by rule, then
 * closes once it is out. */
void sbx_conn_refuse(struct sbx_conn *c, int status, uint8_t socks_code, const char *rule,
                     const char *reason);
/* The policy's decision on the target, then resolution or connect. */
void sbx_conn_decide(struct sbx_conn *c);
/* The upstream socket became writable while connecting. */
void sbx_conn_upstream_connected(struct sbx_conn *c);

/* head.c: parses what arrived of the request head, deciding once it is complete. */
void sbx_conn_parse_head(struct sbx_conn *c);

/* relay.c: sets the epoll interest of both sockets from the state and the buffers. */
void sbx_conn_update_watches(struct sbx_conn *c);

#endif
