/* What the host side (src/mcp) and the gateway inside the workspace (helpers/gateway) agree
 * on: where the gateway lives, how a connection starts, and the framing of MCP's stdio
 * transport (one JSON-RPC message per line).
 *
 * A connection to the gateway's socket starts with one line from the host, the hello:
 *   {"op":"attach","key":"<agent>/<session>/<name>","server":{"command":...,"args":[...],
 *    "env":{...},"cwd":"..."}}
 *   {"op":"stop","key":"..."}      stops that server (no-op when it does not run)
 *   {"op":"ping"}                  liveness probe
 * The gateway answers one line, {"ok":true,...} or {"ok":false,"error":"..."}. After an
 * accepted attach the connection carries plain MCP JSON-RPC lines to and from that server,
 * so the host side is an ordinary MCP client. The gateway keeps the server alive between
 * connections, answers a repeated "initialize" from its cache, answers the server's own
 * "ping" requests, reports a crash as an error response to every request in flight, and
 * sends its own diagnostics as the notification SBX_MCP_DIAG_METHOD.
 *
 * The stream transport (backends whose state folder the host cannot reach, and the
 * "mcp": {"transport": "stream"} config): the host starts "agentsbx-mcp-gateway --stdio
 * <run-dir>|-" as an ordinary workspace process and speaks over its stdin and stdout. The
 * gateway prints "ready" once, then both directions carry frames, one per line:
 *   "<channel> <line>"   a line of the connection numbered <channel> (decimal, chosen by
 *                        the host; a number not seen before opens a new connection)
 *   "<channel>"          that connection is closed (by either side)
 * A channel behaves exactly like one socket connection above (hello, then MCP lines), so one
 * stream carries any number of servers. The gateway ends, stopping its servers, when its
 * stdin closes: the stream gateway lives as long as the host handle that started it. */
#ifndef SBX_MCP_PROTO_H
#define SBX_MCP_PROTO_H

#include <agentsbx/backend.h>

#define SBX_MCP_GATEWAY_NAME "agentsbx-mcp-gateway"
/* The gateway's folder in the state folder (host side): socket, lock and log. */
#define SBX_MCP_RUN_DIR ".agentsbx/mcp"
#define SBX_MCP_RUN_SUBDIR "mcp"      /* the same, inside the state folder */
#define SBX_MCP_SOCKET_NAME "gateway.sock"
#define SBX_MCP_LOCK_NAME "gateway.lock"
#define SBX_MCP_LOG_NAME "gateway.log"
/* Inside a sandbox with SBX_BACKEND_CAP_HELPER_BINDS (ns, bwrap), bound where backend.h
 * says: the helper directory read-only, and the gateway's folder writable. Below /tmp
 * because Landlock lets the sandbox write there and nowhere else outside /workspace. */
#define SBX_MCP_HELPERS_VIEW SBX_BACKEND_HELPERS_VIEW
#define SBX_MCP_RUN_VIEW SBX_BACKEND_MCP_RUN_VIEW
/* The first argument that selects the stream transport. */
#define SBX_MCP_STDIO_FLAG "--stdio"
/* Where the gateway binary is uploaded on backends without host files (root-relative; a
 * hash of its content is appended). */
#define SBX_MCP_UPLOAD_DIR ".agentsbx"
#define SBX_MCP_UPLOAD_PATH SBX_MCP_UPLOAD_DIR "/mcp-gateway"

/* The longest JSON-RPC line either side accepts; longer lines are dropped and reported. */
#define SBX_MCP_LINE_MAX ((size_t)32 << 20)

/* The longest a request may take however much progress its server reports (the timeout
 * starts again with each progress notification, up to this). */
#define SBX_MCP_CALL_MAX_MS (3600 * 1000)

/* JSON-RPC error code the gateway uses when the server process exited or could not start. */
#define SBX_MCP_ERR_SERVER_GONE (-32099)
/* Gateway diagnostics (the server wrote non-JSON, an over-long line): params {"text"}. */
#define SBX_MCP_DIAG_METHOD "notifications/agentsbx/diagnostic"

#endif
