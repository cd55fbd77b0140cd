/*
 * libagentsbx — MCP servers, run inside the workspace.
 *
 * Part of the public API; <agentsbx/agentsbx.h> includes every part. The conventions in
 * <agentsbx/common.h> (return codes, sbx_last_error, sbx_free, option structs) hold here.
 */
#ifndef AGENTSBX_MCP_H
#define AGENTSBX_MCP_H

#include <agentsbx/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------
 * MCP servers, run inside the workspace
 *
 * A server is declared with the entry format MCP clients already use:
 *   {"command": "node", "args": ["server.js"], "env": {"K": "v"}, "cwd": "sub/dir"}
 * (stdio; cwd relative to the workspace root, default the root) plus an optional "timeout"
 * in seconds per request (default 60), or a remote server spoken to with MCP's Streamable
 * HTTP transport:
 *   {"type": "http", "url": "https://host/mcp", "headers": {"Authorization": "Bearer ..."}}
 * ("type" may also be "streamable-http", "streamableHttp" or "streamable_http", or left out
 * when "url" is given). The host connects to a remote server only as the workspace's network
 * policy allows (mode "none": -SBX_EPERM; "allowlist": its rules, checked against the
 * resolved address too), and each decision is an audit record. Server names:
 * [A-Za-z0-9_-], 1..64 characters, no "__".
 *
 * Declarations persist in the state folder (.agentsbx/mcp.json), scoped by (agent, session):
 * sbx_mcp_add with agent_id NULL applies to every agent, session_id NULL to every session;
 * the most specific declaration of a name wins. When a server is used (list, tools, call),
 * NULL ids mean the agent "default" and the session "default". Each (agent, session, name)
 * is its own server process, so sessions never share a server's state.
 *
 * The servers run inside the workspace, started lazily by a gateway process there
 * (agentsbx-mcp-gateway) that keeps them alive across calls and host handles and restarts a
 * crashed one on the next request, with backoff. A crash, a timeout, a server that writes
 * garbage each fail that call (-SBX_EIO, -SBX_ETIMEDOUT, -SBX_EPROTO) with a message naming
 * the server; other servers are not affected. MCP calls on one handle run one at a time.
 * The host reaches the gateway through a Unix socket in the state folder on backends with
 * host files, and through the gateway's own stdin and stdout on the others (where the
 * gateway binary is first copied in with the backend's file API); the config's
 * "mcp": {"transport": "socket" | "stream"} overrides the choice.
 *
 * MCP tools also appear in sbx_tools_json as "mcp__<server>__<tool>" (servers of the default
 * agent and session; one that fails to start is left out), and sbx_tool_call_session runs
 * them for the default agent and the given session, through the approval hook (class
 * "exec") and the audit log.
 * ------------------------------------------------------------------------------------- */

/* Declares a server. A declaration of that name already in the same scope: -SBX_EEXIST.
 * A malformed entry: -SBX_EINVAL naming the problem. Nothing starts yet. */
SBX_API int sbx_mcp_add(sbx_workspace *ws, const char *agent_id, const char *session_id,
                        const char *name, const char *config_json);

/* Removes the declaration of exactly that scope (-SBX_ENOENT if there is none) and stops the
 * server processes this handle started from it. */
SBX_API int sbx_mcp_remove(sbx_workspace *ws, const char *agent_id, const char *session_id,
                           const char *name);

/* The servers (agent, session) sees, as a JSON array:
 *   [{"name", "agent": null|"a", "session": null|"s", "config": {...}, "error": "..."}]
 * where "error" is present on an entry that cannot be used (that server only). */
SBX_API int sbx_mcp_list(sbx_workspace *ws, const char *agent_id, const char *session_id,
                         char **json_out);

/* The server's tools (its tools/list, all pages) as a JSON array of MCP Tool objects
 * ({"name", "description", "inputSchema", ...}). Starts the server if needed. */
SBX_API int sbx_mcp_tools(sbx_workspace *ws, const char *agent_id, const char *session_id,
                          const char *name, char **json_out);

/* Calls a tool with args_json (an object; NULL = {}) and returns the MCP CallToolResult
 * ({"content": [...], "isError": bool, ...}). A tool that reports an error is not a failure:
 * the result says "isError": true. */
SBX_API int sbx_mcp_call(sbx_workspace *ws, const char *agent_id, const char *session_id,
                         const char *name, const char *tool, const char *args_json,
                         char **result_json);

#ifdef __cplusplus
}
#endif

#endif /* AGENTSBX_MCP_H */
