/* agentsbx-mcp-gateway: keeps a workspace's MCP servers alive inside the workspace and lets
 * the host talk to each of them over a Unix socket (see src/proto/mcp_proto.h for the protocol).
 * One process, one poll loop, no threads: main.c owns the socket and the loop, conn.c the host
 * connections, server.c the server processes and the JSON-RPC routing between the two. */
#ifndef SBX_GATEWAY_H
#define SBX_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/linebuf.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/json.h"

/* Output queued for a peer beyond which the gateway stops reading from the other side, so
 * that a flooding server or a slow host costs bounded memory (backpressure). */
#define GW_QUEUE_MAX ((size_t)64 << 20)
#define GW_PENDING_MAX 4096

struct gw_conn;

struct gw_server {
	char *key;                /* agent/session/name */
	char *spec;               /* the attach's "server" object as text: a change restarts */
	pid_t pid;                /* 0 when not running */
	int in_fd, out_fd, err_fd;
	sbx_buf to_child;         /* queued for its stdin */
	size_t to_child_off;
	sbx_linebuf from_child;
	char err_tail[2048];      /* the end of its stderr, for error messages */
	size_t err_len;
	char *init_params;        /* the first initialize's params (text), replayed on restart */
	char *init_result;        /* its result (text), answered to later initializes */
	bool swallow_initialized; /* the host's notifications/initialized after a cached answer */
	char *init_id;            /* id (text) of the host's initialize in flight, to cache its result */
	char **pending;           /* ids (as JSON text) of requests forwarded and not answered */
	size_t n_pending;
	int crashes;              /* in a row; sets the restart backoff */
	int64_t started_ms, restart_after_ms;
	char last_exit[256];      /* why it last ended */
	int64_t last_diag_ms;
	struct gw_conn *conn;     /* the attached host connection, or NULL */
	struct gw_server *next;
};

struct gw_conn {
	int fd;                   /* -1 for a channel of the stream transport */
	bool mux;                 /* a channel: its lines go through mux.c's stdout queue */
	uint32_t ch;              /* the channel's number */
	sbx_linebuf in;
	sbx_buf out;
	size_t out_off;
	bool greeted;             /* the hello was handled */
	bool closing;             /* close once the output is flushed */
	struct gw_server *server; /* attached to */
	struct gw_conn *next;
};

extern struct gw_server *gw_servers;
extern struct gw_conn *gw_conns;

/* Logging to the gateway's log file (stderr once started). */
void gw_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* conn.c */
void gw_conn_send(struct gw_conn *c, const char *line, size_t len);
void gw_conn_sendf(struct gw_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gw_conn_on_input(struct gw_conn *c);
void gw_conn_flush(struct gw_conn *c);
void gw_conn_free(struct gw_conn *c);
/* One line from the host (after framing), for the connection's hello or its server. */
void gw_conn_on_line(struct gw_conn *c, const char *line, size_t len);
/* Bytes queued for the host on c's way out (its socket, or the shared stdout). */
size_t gw_conn_backlog(const struct gw_conn *c);

/* mux.c: the stream transport (src/proto/mcp_proto.h), on the gateway's stdin and stdout. */
void gw_mux_start(int in_fd, int out_fd);
bool gw_mux_active(void);
int gw_mux_in_fd(void);
int gw_mux_out_fd(void);
/* Should stdin be read now? Not while a channel's server has a full queue (backpressure). */
bool gw_mux_want_input(void);
size_t gw_mux_backlog(void);
void gw_mux_on_input(void);
void gw_mux_flush(void);
/* Queues a frame: a line of channel ch, or (line NULL) the channel's close. */
void gw_mux_send(uint32_t ch, const char *line, size_t len);

/* server.c */
struct gw_server *gw_server_get(const char *key, bool create);
/* Sets the server's command; a different one than before stops the running process. */
int gw_server_configure(struct gw_server *s, const char *spec);
/* Starts it unless it runs; err says why not. */
int gw_server_ensure(struct gw_server *s, char *err, size_t errlen);
void gw_server_stop(struct gw_server *s, const char *why);
void gw_server_remove(struct gw_server *s);
void gw_server_from_host(struct gw_server *s, const char *line, size_t len);
void gw_server_on_stdout(struct gw_server *s);
void gw_server_on_stderr(struct gw_server *s);
void gw_server_flush_stdin(struct gw_server *s);
/* Reaps exited servers (called on SIGCHLD). */
void gw_servers_reap(void);
/* The JSON-RPC error response for id (JSON text) with the gateway's message. */
void gw_send_error(struct gw_conn *c, const char *id, int code, const char *msg);

#endif
