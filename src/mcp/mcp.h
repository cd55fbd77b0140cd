/* MCP in the core: what the rest of the library calls. The public functions (sbx_mcp_*) are
 * in api.c; the declarations file in registry.c; the gateway's discovery and start in
 * host.c; the JSON-RPC client in client.c. */
#ifndef SBX_MCP_MCP_H
#define SBX_MCP_MCP_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"
#include "util/buf.h"
#include "util/json.h"

struct sbx_tool_def;

/* The ids NULL stands for when a server is used. */
#define SBX_MCP_DEFAULT_AGENT "default"
#define SBX_MCP_DEFAULT_SESSION "default"

/* Appends the binds a HELPER_BINDS sandbox needs for MCP (binds.c), for
 * sbx_backend_config.binds: the gateway's folder and, with run_folder, the writable run folder on the host (a capped workspace has none: it must not
 * be a way past the cap, and its MCP speaks over a stream), in the state folder cfg names
 * (<workdir>/.agentsbx, or cfg->state_dir), made and checked without following a link. */
int sbx_mcp_helper_binds(const sbx_backend_config *cfg, bool run_folder,
                         sbx_backend_bind **binds, size_t *n);
void sbx_mcp_helper_binds_free(sbx_backend_bind *binds, size_t n);

/* Drops the handle's connections and stops a gateway it started (workspace close, reset). */
void sbx_mcp_shutdown(sbx_workspace *ws);

/* ---- the tools layer's hooks (tools.c) ---- */

/* Is name of the form mcp__<server>__<tool>? */
bool sbx_mcp_is_tool_name(const char *name);
/* Appends ",{name, description, input_schema}" for every tool of every MCP server of the
 * default agent and session; *shown counts the entries in b. Servers that fail are left out. */
void sbx_mcp_tools_append(sbx_workspace *ws, sbx_buf *b, size_t *shown);
/* A tool definition for an MCP tool of (default agent, session_id), for the dispatcher:
 * schema from the server, class "exec". Returns 1 when there is no such tool (with why),
 * 0 with *def (free with sbx_mcp_tool_def_free), or negative. */
int sbx_mcp_tool_def(sbx_workspace *ws, const char *session_id, const char *name,
                     struct sbx_tool_def **def, char *why, size_t why_len);
void sbx_mcp_tool_def_free(struct sbx_tool_def *def);

/* ---- declarations (registry.c) ---- */

typedef struct sbx_mcp_decl {
	char *agent;      /* NULL: every agent */
	char *session;    /* NULL: every session */
	char *name;
	sbx_json *config; /* as the user wrote it */
	char *error;      /* why the entry cannot be used, or NULL */
	bool foreign;     /* in a file this host's library did not sign: never saved again */
} sbx_mcp_decl;

int sbx_mcp_decls_load(sbx_workspace *ws, sbx_mcp_decl **decls, size_t *n);
int sbx_mcp_decls_save(sbx_workspace *ws, const sbx_mcp_decl *decls, size_t n);
void sbx_mcp_decls_free(sbx_mcp_decl *decls, size_t n);
/* The declaration of name that applies to (agent, session): the most specific scope wins. */
const sbx_mcp_decl *sbx_mcp_decl_resolve(const sbx_mcp_decl *decls, size_t n,
                                         const char *agent, const char *session,
                                         const char *name);
bool sbx_mcp_decl_visible(const sbx_mcp_decl *d, const char *agent, const char *session);
/* Checks a server entry; err names the problem. 0, -SBX_EINVAL or -SBX_ENOSYS. */
int sbx_mcp_config_check(const sbx_json *config, char *err, size_t errlen);
bool sbx_mcp_name_ok(const char *name);
/* Is the entry a remote (Streamable HTTP) server's? Only meaningful after the check. */
bool sbx_mcp_config_is_http(const sbx_json *config);

/* Limits of a remote server's declaration. */
#define SBX_MCP_URL_MAX 2048
#define SBX_MCP_HEADERS_MAX 64
#define SBX_MCP_HEADER_NAME_MAX 256
#define SBX_MCP_HEADER_VALUE_MAX 8192

/* ---- the handle's MCP state (api.c), ws->mcp ---- */

struct sbx_mcp_live;
struct sbx_mcp_client;
typedef struct sbx_mcp_mux sbx_mcp_mux;
typedef struct sbx_mcp_state {
	pthread_mutex_t lock;          /* MCP calls on one handle run one at a time */
	struct sbx_mcp_live *live;     /* connected servers */
	bool gateway_started;          /* by this handle: stopped at close */
	sbx_spawned gateway;
	sbx_mcp_mux *mux;              /* the stream transport's gateway, or NULL */
} sbx_mcp_state;

/* ---- the gateway (host.c) ---- */

/* Connects to the workspace's gateway, starting it when none answers, and sends the hello
 * line: c is a client (for server name, with client_timeout_ms per request) on the new
 * connection, *reply the gateway's answer line (malloc'ed). The transport is the socket in
 * the state folder, or the gateway's process stream (sbx_mcp_use_stream). */
int sbx_mcp_gateway_open(sbx_workspace *ws, sbx_mcp_state *st, const char *hello,
                         int timeout_ms, const char *name, int client_timeout_ms,
                         struct sbx_mcp_client *c, char **reply);
/* Stops the gateway this handle started, if any. */
void sbx_mcp_gateway_stop(sbx_workspace *ws, sbx_mcp_state *st);
/* Does this workspace reach its gateway through the process stream? The config's
 * "mcp": {"transport"} decides; by default backends without host files do. */
bool sbx_mcp_use_stream(const sbx_workspace *ws);

/* ---- remote servers (http.c) ---- */

/* A client on the Streamable HTTP transport to the remote server config declares (checked
 * already), allowed by the workspace's network policy (decided and audited here, and again
 * after the policy changes). Not initialized yet. */
int sbx_mcp_http_open(sbx_workspace *ws, const sbx_json *config, const char *name,
                      int timeout_ms, struct sbx_mcp_client *c);

/* ---- the stream transport's gateway (stream.c) ---- */

/* Starts "exe --stdio run_dir" (NULL: no log) in the workspace; one reference. */
int sbx_mcp_mux_start(sbx_workspace *ws, const char *exe, const char *run_dir,
                      sbx_mcp_mux **out);
bool sbx_mcp_mux_alive(const sbx_mcp_mux *m);
/* Drops a reference; the last one ends the gateway and its servers. */
void sbx_mcp_mux_release(sbx_mcp_mux *m);
/* A new channel: sends hello and waits for the answer; c is a client on the channel. */
int sbx_mcp_mux_open(sbx_mcp_mux *m, const char *hello, int timeout_ms, const char *name,
                     int client_timeout_ms, struct sbx_mcp_client *c, char **reply);

#endif
