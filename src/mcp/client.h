/* An MCP client (JSON-RPC 2.0 over MCP's stdio framing: one message per line) on a connected
 * stream: here, a connection to the workspace's gateway attached to one server.
 *
 * Requests wait for their response with a timeout; a timed-out request is cancelled
 * (notifications/cancelled) and its late answer ignored. While waiting, messages from the
 * server are handled: its requests are answered (ping; anything else "not supported", as
 * this client declares no capabilities), notifications/tools/list_changed marks the tool
 * cache stale, the gateway's diagnostics are kept for error messages, the rest is ignored. */
#ifndef SBX_MCP_CLIENT_H
#define SBX_MCP_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "mcp/linebuf.h"
#include "util/json.h"

/* The protocol versions this client speaks, newest first; it asks for the first. */
extern const char *const sbx_mcp_protocol_versions[];

typedef struct sbx_mcp_client {
	int fd;
	sbx_linebuf in;
	const char *name;          /* the server's, for messages (not owned) */
	int timeout_ms;            /* per request */
	int64_t next_id;
	bool broken;               /* the connection is gone: reconnect */
	bool tools_changed;        /* the server said its tool list changed */
	char protocol[32];         /* negotiated version */
	char diag[512];            /* the gateway's last diagnostic, or "" */
} sbx_mcp_client;

/* Takes ownership of fd. */
void sbx_mcp_client_init(sbx_mcp_client *c, int fd, const char *name, int timeout_ms);
void sbx_mcp_client_close(sbx_mcp_client *c);

/* One raw line (the gateway's reply to the hello). *line is malloc'ed. */
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
