/* An MCP client (JSON-RPC 2.0) over a transport: MCP's stdio framing (one message per line)
 * on a connected socket to the workspace's gateway, a channel of the gateway's process stream
 * (stream.c), or Streamable HTTP to a remote server (http.c). The transport only moves
 * messages; everything MCP is here, so the three behave the same.
 *
 * Requests wait for their response with a timeout; a timed-out request is cancelled
 * (notifications/cancelled) and its late answer ignored. While waiting, messages from the
 * server are handled: its requests are answered (ping; anything else "not supported", as
 * this client declares no capabilities), notifications/tools/list_changed marks the tool
 * cache stale, progress on a tools/call (its progressToken is its id) restarts its timeout, the gateway's diagnostics are kept for error messages, the rest is ignored. */
#ifndef SBX_MCP_CLIENT_H
#define SBX_MCP_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "util/linebuf.h"
#include "util/json.h"

/* The protocol versions this client speaks, newest first; it asks for the first. */
extern const char *const sbx_mcp_protocol_versions[];

struct sbx_mcp_client;

/* How messages travel. */
typedef struct sbx_mcp_transport {
	/* Sends one JSON-RPC message (text without a newline). */
	int (*send)(struct sbx_mcp_client *c, const char *msg, size_t len);
	/* The next message from the server before deadline (sbx_now_ms() clock): 0 with *msg
	 * (NUL-terminated, valid until the next call) and *len; -SBX_ETIMEDOUT; or another error,
	 * with c->broken set when the connection is gone for good. */
	int (*recv)(struct sbx_mcp_client *c, int64_t deadline, char **msg, size_t *len);
	void (*close)(struct sbx_mcp_client *c);
} sbx_mcp_transport;

typedef struct sbx_mcp_client {
	const sbx_mcp_transport *tp;
	void *tp_data;             /* the transport's own state */
	int fd;                    /* the socket transport's */
	sbx_linebuf in;
	const char *name;          /* the server's, for messages (not owned) */
	int timeout_ms;            /* per request */
	int64_t next_id;
	bool broken;               /* the connection is gone: reconnect */
	bool tools_changed;        /* the server said its tool list changed */
	unsigned progress_seen;    /* progress notifications received */
	char protocol[32];         /* negotiated version */
	char diag[512];            /* the gateway's last diagnostic, or "" */
} sbx_mcp_client;

/* A client on a connected socket to the gateway; takes ownership of fd. */
void sbx_mcp_client_init(sbx_mcp_client *c, int fd, const char *name, int timeout_ms);
/* A client on another transport; tp->close frees data. */
void sbx_mcp_client_init_transport(sbx_mcp_client *c, const sbx_mcp_transport *tp, void *data,
                                   const char *name, int timeout_ms);
void sbx_mcp_client_close(sbx_mcp_client *c);

/* One raw message (the gateway's reply to the hello). *line is malloc'ed. */
int sbx_mcp_client_read_line(sbx_mcp_client *c, int timeout_ms, char **line);
int sbx_mcp_client_send_line(sbx_mcp_client *c, const char *line, size_t len);

/* initialize with version negotiation, then notifications/initialized. */
int sbx_mcp_client_initialize(sbx_mcp_client *c);
/* A request; params_json is an object's text or NULL. *result is the "result" member. */
int sbx_mcp_client_request(sbx_mcp_client *c, const char *method, const char *params_json,
                           sbx_json **result);
/* tools/list following nextCursor to the end: *tools_json is a JSON array (malloc'ed). */
int sbx_mcp_client_list_tools(sbx_mcp_client *c, char **tools_json);
/* tools/call: *result_json is the CallToolResult object (malloc'ed). args_json may be NULL. */
int sbx_mcp_client_call_tool(sbx_mcp_client *c, const char *tool, const char *args_json,
                             char **result_json);

#endif
