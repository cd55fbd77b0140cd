/* agentsbx-proxy: the network proxy of one workspace in mode "allowlist" (proxy_proto.h says
 * how the library talks to it). One thread runs an epoll loop over every socket; nothing in
 * it blocks, so a slow client (one byte a second) or a slow DNS answer stalls only its own
 * connection. Each connection has two bounded buffers; at most max_conns are open at once and
 * more are refused; a request head must be complete within a few seconds.
 *
 *   main.c      start, settings, the loop, shutdown
 *   control.c   the control channel (policy updates) and the bridge channels (new clients)
 *   conn.c      one connection's life: decision, resolution, connect, deadlines, close
 *   head.c      its request head: protocol, parse, what the head becomes
 *   relay.c     its bytes both ways, half-closes
 *   request.c   the HTTP and SOCKS5 parsers
 *   resolver.c  getaddrinfo on worker threads
 *   record.c    the audit record of each connection */
#ifndef SBX_PROXY_PROXY_H
#define SBX_PROXY_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "resolver.h"
#include "util/clock.h"
#include "util/netpolicy.h"

#define SBX_PROXY_BUF (64u << 10)          /* per direction, per connection */
#define SBX_PROXY_MAX_CONNS 1024
#define SBX_PROXY_HEAD_TIMEOUT_MS 10000    /* the request head, whole: slowloris ends here */
#define SBX_PROXY_RESOLVE_TIMEOUT_MS 15000
#define SBX_PROXY_CONNECT_TIMEOUT_MS 10000
#define SBX_PROXY_IDLE_TIMEOUT_MS 600000   /* a tunnel with no byte either way */
#define SBX_PROXY_LINGER_MS 5000           /* writing out a refusal */

/* What an epoll event points at. */
enum sbx_watch_kind { W_CONTROL, W_HOST, W_RESOLVER, W_BRIDGE, W_CLIENT, W_UPSTREAM };

struct sbx_watch {
	enum sbx_watch_kind kind;
	void *obj;
	int fd;
	uint32_t events;              /* the mask epoll has for fd now */
};

struct sbx_conn;
struct sbx_bridge;

struct sbx_proxy {
	int epfd;
	char workspace[80];
	int state_dir_fd;             /* -1: no audit log */
	uint64_t audit_max_bytes;
	int audit_keep;
	struct sbx_network net;       /* the current policy */
	struct sbx_resolver *resolver;
	struct sbx_conn **conns;      /* max_conns slots */
	size_t max_conns, n_conns;
	uint64_t next_gen;
	struct sbx_watch control, host, resolver_watch;
	struct sbx_conn *graveyard;   /* closed in this batch of events, freed after it */
	struct sbx_bridge *bridges;   /* open bridge channels (control.c) */
	bool stopping;
};

/* conn.c */
/* Takes over fd, a client's TCP socket from a bridge (closes it and records the refusal
 * when the proxy is full). */
void sbx_conn_accept(struct sbx_proxy *px, int fd);
void sbx_conn_event(struct sbx_proxy *px, struct sbx_watch *w, uint32_t events);
void sbx_conn_resolved(struct sbx_proxy *px, const struct sbx_resolution *res);
/* Ends connections whose deadline has passed. */
void sbx_conn_sweep(struct sbx_proxy *px, int64_t now);
/* After a policy change: closes the open connections it would refuse. */
void sbx_conn_recheck(struct sbx_proxy *px);
/* Closes (and records) every connection. */
void sbx_conn_close_all(struct sbx_proxy *px, const char *why);
/* Frees the connections closed since the last call: a closed connection may still have an
 * event later in the batch epoll returned, which must find it marked closed, not freed. */
void sbx_conn_reap(struct sbx_proxy *px);

/* control.c */
/* Handles a message on the control channel; false when the channel is gone. */
bool sbx_control_event(struct sbx_proxy *px);
/* Receives client fds from a bridge channel; false when the bridge is gone (w freed). */
bool sbx_bridge_event(struct sbx_proxy *px, struct sbx_watch *w);
/* Closes every bridge channel (the end). */
void sbx_control_close_bridges(struct sbx_proxy *px);
/* Parses a network object into px->net, replacing it. -1 with the reason in err. */
int sbx_proxy_set_policy(struct sbx_proxy *px, const char *json, size_t len, char *err,
                         size_t errlen);

/* main.c: epoll bookkeeping. */
int sbx_watch_add(struct sbx_proxy *px, struct sbx_watch *w, uint32_t events);
void sbx_watch_set(struct sbx_proxy *px, struct sbx_watch *w, uint32_t events);
void sbx_watch_del(struct sbx_proxy *px, struct sbx_watch *w);

#endif
