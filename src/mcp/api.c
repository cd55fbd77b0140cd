/* The public MCP functions, the handle's live connections, and the tools layer's hooks.
 *
 * A server is used as (agent, session, name): each such triple is its own server process in
 * the gateway (key "agent/session/name"), so two sessions never share a stateful server even
 * when both use a default declaration. NULL ids mean SBX_MCP_DEFAULT_AGENT/SESSION when a
 * server is used, and "every agent/session" when one is declared (sbx_mcp_add). */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/client.h"
#include "mcp/mcp.h"
#include "tools/session.h"
#include "tools/tool.h"
#include "util/error.h"
#include "util/forksafe.h"

#define DEFAULT_TIMEOUT_MS 60000
#define HELLO_TIMEOUT_MS 20000

struct sbx_mcp_live {
	char *agent, *session, *name;
	char *spec;             /* the "server" object sent to the gateway, or (http) the entry */
	bool http;              /* a remote server, reached directly, not through the gateway */
	sbx_mcp_client client;
	char *tools_json;       /* cached tools/list, until the server says it changed */
	struct sbx_mcp_live *next;
};

SBX_FORK_SAFE_MUTEX(create_lock)

static sbx_mcp_state *state_of(sbx_workspace *ws)
{
	pthread_mutex_lock(&create_lock);
	if (!ws->mcp && (ws->mcp = calloc(1, sizeof *ws->mcp))) {
		pthread_mutex_init(&ws->mcp->lock, NULL);
		ws->mcp->gateway = (sbx_spawned){ .in_fd = -1, .out_fd = -1, .err_fd = -1 };
	}
	pthread_mutex_unlock(&create_lock);
	return ws->mcp;
}

static void live_free(struct sbx_mcp_live *l)
{
	sbx_mcp_client_close(&l->client);
	free(l->agent);
	free(l->session);
	free(l->name);
	free(l->spec);
	free(l->tools_json);
	free(l);
}

static void drop_live(sbx_mcp_state *st, struct sbx_mcp_live *l)
{
	for (struct sbx_mcp_live **at = &st->live; *at; at = &(*at)->next)
		if (*at == l) {
			*at = l->next;
			break;
		}
	live_free(l);
}

void sbx_mcp_shutdown(sbx_workspace *ws)
{
	sbx_mcp_state *st = ws->mcp;

	if (!st)
		return;
	while (st->live)
		drop_live(st, st->live);
	sbx_mcp_gateway_stop(ws, st);
	pthread_mutex_destroy(&st->lock);
	free(st);
	ws->mcp = NULL;
}

/* ---- argument checks ---- */

static int check_ids(const char *fn, const char *agent, const char *session, const char *name)
{
	if (agent && !sbx_tool_session_id_ok(agent))
		return sbx_fail(-SBX_EINVAL, "%s: agent_id '%.64s' is not valid ([A-Za-z0-9_.-], "
		                "1..128 characters, not starting with '.')", fn, agent);
	if (session && !sbx_tool_session_id_ok(session))
		return sbx_fail(-SBX_EINVAL, "%s: session_id '%.64s' is not valid ([A-Za-z0-9_.-], "
		                "1..128 characters, not starting with '.')", fn, session);
	if (name && !sbx_mcp_name_ok(name))
		return sbx_fail(-SBX_EINVAL, "%s: server name '%.64s' is not valid ([A-Za-z0-9_-], "
		                "1..64 characters, no \"__\")", fn, name);
	return 0;
}

static int check_ws(const char *fn, sbx_workspace *ws, const void *out)
{
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "%s: ws must not be NULL", fn);
	if (!out)
		return sbx_fail(-SBX_EINVAL, "%s: the out pointer must not be NULL", fn);
	return 0;
}

/* ---- connecting ---- */

/* What the gateway runs: command, args and env as declared, cwd made absolute (relative to
 * the workspace root as the gateway sees it). */
static int build_spec(sbx_workspace *ws, const sbx_json *config, char **spec)
{
	const sbx_json *v;
	const char *root = sbx_workspace_root(ws);
	sbx_buf b = { 0 };

	sbx_buf_puts(&b, "{\"command\":");
	sbx_json_write(&b, sbx_json_get(config, "command"));
	sbx_buf_puts(&b, ",\"args\":");
	if ((v = sbx_json_get(config, "args")))
		sbx_json_write(&b, v);
	else
		sbx_buf_puts(&b, "[]");
	sbx_buf_puts(&b, ",\"env\":");
	if ((v = sbx_json_get(config, "env")))
		sbx_json_write(&b, v);
	else
		sbx_buf_puts(&b, "{}");
	sbx_buf_puts(&b, ",\"cwd\":");
	v = sbx_json_get(config, "cwd");
	if (v && v->str[0] == '/') {
		sbx_json_write(&b, v);
	} else {
		sbx_buf b2 = { 0 };

		sbx_buf_printf(&b2, "%s%s%s", root, v ? "/" : "", v ? v->str : "");
		sbx_buf_json_string(&b, b2.data ? b2.data : "", b2.len);
		sbx_buf_free(&b2);
	}
	sbx_buf_puts(&b, "}");
	if (b.oom) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*spec = sbx_buf_steal(&b, NULL);
	return 0;
}

static int timeout_ms_of(const sbx_json *config)
{
	const sbx_json *t = sbx_json_get(config, "timeout");

	if (!t)
		return DEFAULT_TIMEOUT_MS;
	return t->type == SBX_JSON_INT ? (int)(t->i * 1000) : (int)(t->d * 1000);
}

static int attach(sbx_workspace *ws, sbx_mcp_state *st, struct sbx_mcp_live *l)
{
	char *reply = NULL, perr[128];
	sbx_buf hello = { 0 };
	sbx_json *doc = NULL;
	const sbx_json *ok, *err;
	int r;

	sbx_buf_puts(&hello, "{\"op\":\"attach\",\"key\":");
	{
		sbx_buf key = { 0 };

		sbx_buf_printf(&key, "%s/%s/%s", l->agent, l->session, l->name);
		sbx_buf_json_string(&hello, key.data ? key.data : "", key.len);
		sbx_buf_free(&key);
	}
	sbx_buf_printf(&hello, ",\"server\":%s}", l->spec);
	r = hello.oom ? sbx_fail(-SBX_ENOMEM, "out of memory")
	              : sbx_mcp_gateway_open(ws, st, hello.data, HELLO_TIMEOUT_MS, l->name,
	                                     l->client.timeout_ms, &l->client, &reply);
	sbx_buf_free(&hello);
	if (r < 0)
		return r;
	if (sbx_json_parse(reply, strlen(reply), &doc, perr, sizeof perr) < 0 ||
	    !(ok = sbx_json_get(doc, "ok")) || ok->type != SBX_JSON_BOOL) {
		r = sbx_fail(-SBX_EPROTO, "mcp: the gateway answered \"%.200s\"", reply);
	} else if (!ok->b) {
		err = sbx_json_get(doc, "error");
		r = sbx_fail(-SBX_EIO, "MCP server '%s': %s", l->name,
		             err && err->type == SBX_JSON_STRING ? err->str : "the gateway refused it");
	}
	sbx_json_free(doc);
	free(reply);
	if (r < 0) {
		sbx_mcp_client_close(&l->client);
		return r;
	}
	return sbx_mcp_client_initialize(&l->client);
}

/* A remote server's spec is its entry as declared. */
static int http_spec(const sbx_json *config, char **spec)
{
	sbx_buf b = { 0 };

	sbx_json_write(&b, config);
	if (b.oom) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*spec = sbx_buf_steal(&b, NULL);
	return 0;
}

/* A remote server: the host is the client, through the network policy. */
static int connect_http(sbx_workspace *ws, struct sbx_mcp_live *l)
{
	char perr[128];
	sbx_json *config = NULL;
	int r;

	if (sbx_json_parse(l->spec, strlen(l->spec), &config, perr, sizeof perr) < 0)
		return sbx_fail(-SBX_EINVAL, "MCP server '%s': %s", l->name, perr);
	r = sbx_mcp_http_open(ws, config, l->name, l->client.timeout_ms, &l->client);
	sbx_json_free(config);
	return r < 0 ? r : sbx_mcp_client_initialize(&l->client);
}

static int resolve(sbx_workspace *ws, const char *agent, const char *session, const char *name,
                   char **spec, bool *http, int *timeout_ms)
{
	sbx_mcp_decl *decls;
	const sbx_mcp_decl *d;
	size_t n;
	int r = sbx_mcp_decls_load(ws, &decls, &n);

	if (r < 0)
		return r;
	if (!(d = sbx_mcp_decl_resolve(decls, n, agent, session, name)))
		r = sbx_fail(-SBX_ENOENT, "no MCP server named '%s' for agent '%s', session '%s'",
		             name, agent, session);
	else if (d->error)
		r = sbx_fail(-SBX_EINVAL, "MCP server '%s' is declared wrongly: %s", name, d->error);
	else if ((*http = sbx_mcp_config_is_http(d->config)))
		r = http_spec(d->config, spec);
	else
		r = build_spec(ws, d->config, spec);
	if (r == 0 && d && !d->error)
		*timeout_ms = timeout_ms_of(d->config);
	sbx_mcp_decls_free(decls, n);
	return r;
}

static struct sbx_mcp_live *find_live(sbx_mcp_state *st, const char *agent, const char *session,
                                      const char *name)
{
	for (struct sbx_mcp_live *l = st->live; l; l = l->next)
		if (!strcmp(l->agent, agent) && !strcmp(l->session, session) && !strcmp(l->name, name))
			return l;
	return NULL;
}

/* The live connection to (agent, session, name), made when missing, broken or declared
 * differently since. Called with st->lock held. */
static int get_live(sbx_workspace *ws, sbx_mcp_state *st, const char *agent, const char *session,
                    const char *name, struct sbx_mcp_live **out)
{
	struct sbx_mcp_live *l;
	char *spec = NULL;
	bool http = false;
	int timeout_ms = DEFAULT_TIMEOUT_MS, r;

	if ((r = resolve(ws, agent, session, name, &spec, &http, &timeout_ms)) < 0)
		return r;
	l = find_live(st, agent, session, name);
	if (l && !l->client.broken && l->http == http && strcmp(l->spec, spec) == 0) {
		free(spec);
		*out = l;
		return 0;
	}
	if (l)
		drop_live(st, l);
	if (!(l = calloc(1, sizeof *l)) || !(l->agent = strdup(agent)) ||
	    !(l->session = strdup(session)) || !(l->name = strdup(name))) {
		if (l)
			live_free(l);
		free(spec);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	l->client.fd = -1;     /* no transport until attached: closing is a no-op */
	l->client.timeout_ms = timeout_ms;
	l->spec = spec;
	l->http = http;
	if ((r = http ? connect_http(ws, l) : attach(ws, st, l)) < 0) {
		live_free(l);
		return r;
	}
	l->next = st->live;
	st->live = l;
	*out = l;
	return 0;
}

static int list_tools_locked(sbx_workspace *ws, sbx_mcp_state *st, const char *agent,
                             const char *session, const char *name, struct sbx_mcp_live **lp)
{
	struct sbx_mcp_live *l;
	int r;

	for (int attempt = 0;; attempt++) {
		if ((r = get_live(ws, st, agent, session, name, &l)) < 0)
			return r;
		if (l->tools_json && !l->client.tools_changed)
			break;
		free(l->tools_json);
		l->tools_json = NULL;
		if ((r = sbx_mcp_client_list_tools(&l->client, &l->tools_json)) == 0)
			break;
		/* The gateway went away (its sandbox ended): reconnect once, to a new one. */
		if (!l->client.broken || attempt)
			return r;
	}
	*lp = l;
	return 0;
}

/* ---- the public API ---- */

static bool same_scope(const sbx_mcp_decl *d, const char *agent, const char *session)
{
	return !!d->agent == !!agent && !!d->session == !!session &&
	       (!agent || !strcmp(d->agent, agent)) && (!session || !strcmp(d->session, session));
}

int sbx_mcp_add(sbx_workspace *ws, const char *agent_id, const char *session_id,
                const char *name, const char *config_json)
{
	char perr[256], err[256];
	sbx_json *config = NULL;
	sbx_mcp_decl *decls = NULL, *grown;
	size_t n = 0;
	int r;

	if (!ws || !name || !config_json)
		return sbx_fail(-SBX_EINVAL, "sbx_mcp_add: ws, name and config_json are required");
	if ((r = check_ids("sbx_mcp_add", agent_id, session_id, name)) < 0)
		return r;
	if (sbx_json_parse(config_json, strlen(config_json), &config, perr, sizeof perr) < 0)
		return sbx_fail(-SBX_EINVAL, "sbx_mcp_add: server '%s': config_json: %s", name, perr);
	if ((r = sbx_mcp_config_check(config, err, sizeof err)) < 0) {
		sbx_json_free(config);
		return sbx_fail(r, "sbx_mcp_add: server '%s': %s", name, err);
	}
	if (!state_of(ws)) {
		sbx_json_free(config);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	pthread_mutex_lock(&ws->mcp->lock);
	if ((r = sbx_mcp_decls_load(ws, &decls, &n)) < 0)
		goto out;
	/* One the file brought from elsewhere is no declaration (the save drops it). */
	for (size_t i = 0; i < n; i++)
		if (!decls[i].foreign && !strcmp(decls[i].name, name) &&
		    same_scope(&decls[i], agent_id, session_id)) {
			r = sbx_fail(-SBX_EEXIST, "sbx_mcp_add: MCP server '%s' already exists for agent "
			             "%s, session %s", name, agent_id ? agent_id : "(all)",
			             session_id ? session_id : "(all)");
			goto out;
		}
	if (!(grown = realloc(decls, (n + 1) * sizeof *grown))) {
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
		goto out;
	}
	decls = grown;
	decls[n] = (sbx_mcp_decl){ .agent = agent_id ? strdup(agent_id) : NULL,
	                           .session = session_id ? strdup(session_id) : NULL,
	                           .name = strdup(name), .config = config };
	config = NULL;
	n++;
	r = decls[n - 1].name ? sbx_mcp_decls_save(ws, decls, n) : sbx_fail(-SBX_ENOMEM, "out of memory");
out:
	pthread_mutex_unlock(&ws->mcp->lock);
	sbx_mcp_decls_free(decls, n);
	sbx_json_free(config);
	return r;
}

/* Asks the gateway to stop one server process; a gateway that is not there has none. */
static void stop_in_gateway(sbx_workspace *ws, sbx_mcp_state *st, const struct sbx_mcp_live *l)
{
	sbx_buf hello = { 0 }, key = { 0 };
	sbx_mcp_client c = { 0 };
	char *reply = NULL;

	sbx_buf_printf(&key, "%s/%s/%s", l->agent, l->session, l->name);
	sbx_buf_puts(&hello, "{\"op\":\"stop\",\"key\":");
	sbx_buf_json_string(&hello, key.data ? key.data : "", key.len);
	sbx_buf_puts(&hello, "}");
	if (!hello.oom && sbx_mcp_gateway_open(ws, st, hello.data, HELLO_TIMEOUT_MS, l->name,
	                                       HELLO_TIMEOUT_MS, &c, &reply) == 0)
		sbx_mcp_client_close(&c);
	free(reply);
	sbx_buf_free(&hello);
	sbx_buf_free(&key);
}

int sbx_mcp_remove(sbx_workspace *ws, const char *agent_id, const char *session_id,
                   const char *name)
{
	sbx_mcp_decl *decls = NULL;
	size_t n = 0, i;
	int r;

	if (!ws || !name)
		return sbx_fail(-SBX_EINVAL, "sbx_mcp_remove: ws and name are required");
	if ((r = check_ids("sbx_mcp_remove", agent_id, session_id, NULL)) < 0)
		return r;
	if (!state_of(ws))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	pthread_mutex_lock(&ws->mcp->lock);
	if ((r = sbx_mcp_decls_load(ws, &decls, &n)) < 0)
		goto out;
	for (i = 0; i < n && !(strcmp(decls[i].name, name) == 0 &&
	                       same_scope(&decls[i], agent_id, session_id)); i++) {
	}
	if (i == n) {
		r = sbx_fail(-SBX_ENOENT, "sbx_mcp_remove: no MCP server '%s' declared for agent %s, "
		             "session %s", name, agent_id ? agent_id : "(all)",
		             session_id ? session_id : "(all)");
		goto out;
	}
	{
		sbx_mcp_decl gone = decls[i];

		decls[i] = decls[n - 1];
		n--;
		r = sbx_mcp_decls_save(ws, decls, n);
		/* Its processes go too (not only its registration: AgentScope's #2773). */
		for (struct sbx_mcp_live *l = ws->mcp->live, *next; r == 0 && l; l = next) {
			next = l->next;
			if (!strcmp(l->name, name) && sbx_mcp_decl_visible(&gone, l->agent, l->session)) {
				if (!l->http)   /* a remote one's session ends when its client closes */
					stop_in_gateway(ws, ws->mcp, l);
				drop_live(ws->mcp, l);
			}
		}
		decls[n] = gone;
		n++;
	}
out:
	pthread_mutex_unlock(&ws->mcp->lock);
	sbx_mcp_decls_free(decls, n);
	return r;
}

static void write_decl(sbx_buf *b, const sbx_mcp_decl *d)
{
	sbx_buf_puts(b, "{\"name\":");
	sbx_buf_json_string(b, d->name, strlen(d->name));
	sbx_buf_puts(b, ",\"agent\":");
	if (d->agent)
		sbx_buf_json_string(b, d->agent, strlen(d->agent));
	else
		sbx_buf_puts(b, "null");
	sbx_buf_puts(b, ",\"session\":");
	if (d->session)
		sbx_buf_json_string(b, d->session, strlen(d->session));
	else
		sbx_buf_puts(b, "null");
	sbx_buf_puts(b, ",\"config\":");
	if (d->config)
		sbx_json_write(b, d->config);
	else
		sbx_buf_puts(b, "null");
	if (d->error) {
		sbx_buf_puts(b, ",\"error\":");
		sbx_buf_json_string(b, d->error, strlen(d->error));
	}
	sbx_buf_puts(b, "}");
}

int sbx_mcp_list(sbx_workspace *ws, const char *agent_id, const char *session_id,
                 char **json_out)
{
	const char *agent = agent_id ? agent_id : SBX_MCP_DEFAULT_AGENT;
	const char *session = session_id ? session_id : SBX_MCP_DEFAULT_SESSION;
	sbx_mcp_decl *decls;
	sbx_buf b = { 0 };
	size_t n, shown = 0;
	int r;

	if ((r = check_ws("sbx_mcp_list", ws, json_out)) < 0 ||
	    (r = check_ids("sbx_mcp_list", agent_id, session_id, NULL)) < 0)
		return r;
	*json_out = NULL;
	if ((r = sbx_mcp_decls_load(ws, &decls, &n)) < 0)
		return r;
	sbx_buf_puts(&b, "[");
	for (size_t i = 0; i < n; i++)
		if (sbx_mcp_decl_visible(&decls[i], agent, session) &&
		    sbx_mcp_decl_resolve(decls, n, agent, session, decls[i].name) == &decls[i]) {
			sbx_buf_puts(&b, shown++ ? "," : "");
			write_decl(&b, &decls[i]);
		}
	sbx_buf_puts(&b, "]");
	sbx_mcp_decls_free(decls, n);
	if (b.oom) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*json_out = sbx_buf_steal(&b, NULL);
	return 0;
}

int sbx_mcp_tools(sbx_workspace *ws, const char *agent_id, const char *session_id,
                  const char *name, char **json_out)
{
	struct sbx_mcp_live *l;
	int r;

	if ((r = check_ws("sbx_mcp_tools", ws, json_out)) < 0)
		return r;
	*json_out = NULL;
	if (!name)
		return sbx_fail(-SBX_EINVAL, "sbx_mcp_tools: name must not be NULL");
	if ((r = check_ids("sbx_mcp_tools", agent_id, session_id, name)) < 0)
		return r;
	if (!state_of(ws))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	pthread_mutex_lock(&ws->mcp->lock);
	r = list_tools_locked(ws, ws->mcp, agent_id ? agent_id : SBX_MCP_DEFAULT_AGENT,
	                      session_id ? session_id : SBX_MCP_DEFAULT_SESSION, name, &l);
	if (r == 0 && !(*json_out = strdup(l->tools_json)))
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
	pthread_mutex_unlock(&ws->mcp->lock);
	return r;
}

static int call_locked(sbx_workspace *ws, const char *agent, const char *session,
                       const char *name, const char *tool, const char *args_json,
                       char **result_json)
{
	struct sbx_mcp_live *l;
	int r;

	for (int attempt = 0;; attempt++) {
		if ((r = get_live(ws, ws->mcp, agent, session, name, &l)) < 0)
			return r;
		r = sbx_mcp_client_call_tool(&l->client, tool, args_json, result_json);
		if (r == 0 || !l->client.broken || attempt)
			return r;
	}
}

int sbx_mcp_call(sbx_workspace *ws, const char *agent_id, const char *session_id,
                 const char *name, const char *tool, const char *args_json, char **result_json)
{
	char perr[256];
	sbx_json *args = NULL;
	int r;

	if ((r = check_ws("sbx_mcp_call", ws, result_json)) < 0)
		return r;
	*result_json = NULL;
	if (!name || !tool)
		return sbx_fail(-SBX_EINVAL, "sbx_mcp_call: name and tool must not be NULL");
	if ((r = check_ids("sbx_mcp_call", agent_id, session_id, name)) < 0)
		return r;
	if (args_json && *args_json) {
		if (sbx_json_parse(args_json, strlen(args_json), &args, perr, sizeof perr) < 0)
			return sbx_fail(-SBX_EINVAL, "sbx_mcp_call: args_json: %s", perr);
		r = args->type == SBX_JSON_OBJECT ? 0
		    : sbx_fail(-SBX_EINVAL, "sbx_mcp_call: args_json must be a JSON object");
		sbx_json_free(args);
		if (r < 0)
			return r;
	}
	if (!state_of(ws))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	pthread_mutex_lock(&ws->mcp->lock);
	r = call_locked(ws, agent_id ? agent_id : SBX_MCP_DEFAULT_AGENT,
	                session_id ? session_id : SBX_MCP_DEFAULT_SESSION, name, tool, args_json,
	                result_json);
	pthread_mutex_unlock(&ws->mcp->lock);
	return r;
}
