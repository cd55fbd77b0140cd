/* Declared MCP servers, persisted in the state folder as .agentsbx/mcp.json:
 *   {"version": 1, "servers": [{"agent": null|"a", "session": null|"s", "name": "fs",
 *                               "config": {"command": ..., "args": [...], "env": {...}}}]}
 * agent/session null means "every": a declaration made without ids applies to all agents and
 * sessions, one with only an agent to all sessions of that agent. An entry that does not check
 * out is kept and reported (with "error") for that server only: the others still work.
 * Backends without host files keep the file inside the workspace (their file API).
 *
 * No command can write the file, but the workdir can bring one before the first open (a
 * cloned repository, an unpacked archive): its servers would start, unasked, as soon as the
 * tools are listed - on local, its commands on the host - and their tools' descriptions would
 * reach the model. So the file carries "mac": an HMAC-SHA-256 of its servers array, as
 * sbx_json_write prints it, under a key of the host user's (util/hostkey.h). Where the state
 * folder is on this host, a file whose MAC does not hold declares nothing usable: each entry
 * is reported with an error saying to declare it again, and the next save drops them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <strings.h>

#include "mcp/mcp.h"
#include "util/cleanup.h"
#include "util/digest.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hostkey.h"
#include "util/statedir.h"
#include "util/http.h"
#include "util/netpolicy.h"

#define FILE_NAME "mcp.json"
#define STATE_DIR ".agentsbx"
#define FILE_MAX ((size_t)4 << 20)
#define MAC_CONTEXT "agentsbx mcp v1"
#define KEY_PURPOSE "mcp"
#define FOREIGN "not declared through this host's library (the file came with the workdir, " \
	"or is from before declarations were signed): declare it again with sbx_mcp_add"

bool sbx_mcp_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64 || strstr(name, "__"))
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

static bool strings_only(const sbx_json *v, bool object)
{
	if (v->type != (object ? SBX_JSON_OBJECT : SBX_JSON_ARRAY))
		return false;
	for (size_t i = 0; i < v->n; i++)
		if (v->items[i]->type != SBX_JSON_STRING || strlen(v->items[i]->str) != v->items[i]->len ||
		    (object && (!v->keys[i][0] || strchr(v->keys[i], '='))))
			return false;
	return true;
}

static int check_stdio(const sbx_json *config, char *err, size_t errlen)
{
	const sbx_json *command = sbx_json_get(config, "command"), *v;

	if (!command || command->type != SBX_JSON_STRING || !command->len ||
	    strlen(command->str) != command->len)
		return snprintf(err, errlen, "\"command\" must be a non-empty string"), -SBX_EINVAL;
	if ((v = sbx_json_get(config, "args")) && !strings_only(v, false))
		return snprintf(err, errlen, "\"args\" must be an array of strings"), -SBX_EINVAL;
	if ((v = sbx_json_get(config, "env")) && !strings_only(v, true))
		return snprintf(err, errlen, "\"env\" must be an object of strings"), -SBX_EINVAL;
	if ((v = sbx_json_get(config, "cwd")) && (v->type != SBX_JSON_STRING || !v->len))
		return snprintf(err, errlen, "\"cwd\" must be a non-empty string"), -SBX_EINVAL;
	return 0;
}

/* A header name as RFC 9110 has it (a token), not one the client sets itself. */
static const char *header_name_problem(const char *name, size_t len)
{
	static const char *const reserved[] = { "content-type", "content-length", "accept",
	                                        "host", "mcp-session-id", "mcp-protocol-version",
	                                        "transfer-encoding", "connection", "expect", NULL };
	static const char token[] = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
	                            "ABCDEFGHIJKLMNOPQRSTUVWXYZ";

	if (!len || len > SBX_MCP_HEADER_NAME_MAX || strlen(name) != len ||
	    strspn(name, token) != len)
		return "is not a valid header name (letters, digits and !#$%&'*+-.^_`|~, at most 256)";
	for (size_t i = 0; reserved[i]; i++)
		if (!strcasecmp(name, reserved[i]))
			return "is set by the MCP client itself and cannot be given";
	return NULL;
}

static const char *header_value_problem(const sbx_json *v)
{
	if (v->type != SBX_JSON_STRING)
		return "must be a string";
	if (strlen(v->str) != v->len)
		return "holds a NUL byte";
	if (strpbrk(v->str, "\r\n"))
		return "holds a line break (CR or LF), which would start another header";
	if (v->len > SBX_MCP_HEADER_VALUE_MAX)
		return "is longer than 8192 bytes";
	return NULL;
}

static int check_headers(const sbx_json *h, char *err, size_t errlen)
{
	if (h->type != SBX_JSON_OBJECT)
		return snprintf(err, errlen, "\"headers\" must be an object of strings"), -SBX_EINVAL;
	if (h->n > SBX_MCP_HEADERS_MAX)
		return snprintf(err, errlen, "\"headers\" has more than %d entries",
		                SBX_MCP_HEADERS_MAX), -SBX_EINVAL;
	for (size_t i = 0; i < h->n; i++) {
		const char *why = header_name_problem(h->keys[i], h->key_lens[i]);

		if (why || (why = header_value_problem(h->items[i])))
			return snprintf(err, errlen, "\"headers\": \"%.64s\" %s", h->keys[i], why),
			       -SBX_EINVAL;
	}
	return 0;
}

static int check_http(const sbx_json *config, char *err, size_t errlen)
{
	static const char *const stdio_only[] = { "command", "args", "env", "cwd", NULL };
	const sbx_json *url = sbx_json_get(config, "url"), *v;
	char scheme[16], host[SBX_NET_NAME_MAX + 3], why[128];
	unsigned port;

	for (size_t i = 0; stdio_only[i]; i++)
		if (sbx_json_get(config, stdio_only[i]))
			return snprintf(err, errlen, "\"%s\" belongs to stdio servers, not to remote "
			                "(\"url\") ones", stdio_only[i]), -SBX_EINVAL;
	if (!url || url->type != SBX_JSON_STRING || !url->len)
		return snprintf(err, errlen, "\"url\" must be a non-empty string"), -SBX_EINVAL;
	if (strlen(url->str) != url->len)
		return snprintf(err, errlen, "\"url\" holds a NUL byte"), -SBX_EINVAL;
	if (url->len > SBX_MCP_URL_MAX)
		return snprintf(err, errlen, "\"url\" is longer than %d bytes", SBX_MCP_URL_MAX),
		       -SBX_EINVAL;
	if (strpbrk(url->str, " \t\r\n"))
		return snprintf(err, errlen, "\"url\" holds white space or a line break"), -SBX_EINVAL;
	if (sbx_http_url_split(url->str, scheme, sizeof scheme, host, sizeof host, &port, why,
	                       sizeof why) < 0)
		return snprintf(err, errlen, "\"url\" %s", why), -SBX_EINVAL;
	if ((v = sbx_json_get(config, "headers")))
		return check_headers(v, err, errlen);
	return 0;
}

/* The "type" spellings MCP clients write for Streamable HTTP (Claude Code and VS Code
 * "http", Cline "streamableHttp", the Python SDK's "streamable-http"/"streamable_http"). */
static bool is_http_type(const char *t)
{
	return !strcmp(t, "http") || !strcmp(t, "streamable-http") ||
	       !strcmp(t, "streamableHttp") || !strcmp(t, "streamable_http");
}

bool sbx_mcp_config_is_http(const sbx_json *config)
{
	const sbx_json *type = sbx_json_get(config, "type");

	return type ? type->type == SBX_JSON_STRING && is_http_type(type->str)
	            : sbx_json_get(config, "url") != NULL;
}

int sbx_mcp_config_check(const sbx_json *config, char *err, size_t errlen)
{
	static const char *const known[] = { "type", "command", "args", "env", "cwd", "url",
	                                     "headers", "timeout", NULL };
	const sbx_json *type, *timeout;

	if (!config || config->type != SBX_JSON_OBJECT)
		return snprintf(err, errlen, "the server entry must be a JSON object"), -SBX_EINVAL;
	for (size_t i = 0; i < config->n; i++) {
		size_t k = 0;

		while (known[k] && strcmp(known[k], config->keys[i]))
			k++;
		if (!known[k])
			return snprintf(err, errlen, "unknown key \"%.64s\" (type, command, args, env, "
			                "cwd, url, headers, timeout)", config->keys[i]), -SBX_EINVAL;
	}
	timeout = sbx_json_get(config, "timeout");
	if (timeout && !((timeout->type == SBX_JSON_INT && timeout->i > 0 && timeout->i <= 3600) ||
	                 (timeout->type == SBX_JSON_NUMBER && timeout->d > 0 && timeout->d <= 3600)))
		return snprintf(err, errlen, "\"timeout\" must be seconds, above 0 and at most 3600"),
		       -SBX_EINVAL;
	type = sbx_json_get(config, "type");
	if (type && type->type != SBX_JSON_STRING)
		return snprintf(err, errlen, "\"type\" must be a string"), -SBX_EINVAL;
	if (!type ? !sbx_json_get(config, "url") : !strcmp(type->str, "stdio"))
		return check_stdio(config, err, errlen);
	if (sbx_mcp_config_is_http(config))
		return check_http(config, err, errlen);
	if (!strcmp(type->str, "sse"))
		return snprintf(err, errlen, "\"type\" \"sse\" is MCP's older HTTP+SSE transport, "
		                "which this client does not speak: give the server's Streamable HTTP "
		                "endpoint with \"type\": \"http\""), -SBX_EINVAL;
	return snprintf(err, errlen, "\"type\" must be \"stdio\" or \"http\" (or "
	                "\"streamable-http\", \"streamableHttp\")"), -SBX_EINVAL;
}

static int open_state_dir(sbx_workspace *ws)
{
	char msg[512];
	int fd, r = sbx_state_dir(ws, NULL, 0755, &fd);

	if (r < 0) {
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "mcp: %s", msg);
	}
	return fd;
}

/* A backend without host files keeps the state folder inside the workspace, reached with its
 * file API like any other file there. */
static int remote_read(sbx_workspace *ws, char **text, size_t *len)
{
	int r;

	if (!ws->ops->file_read)
		return sbx_fail(-SBX_ENOSYS, "mcp: backend '%s' has no file API to keep the MCP "
		                "declarations with", ws->ops->name);
	r = ws->ops->file_read(ws->state, STATE_DIR "/" FILE_NAME, text, len);
	if (r == -SBX_ENOENT) {
		sbx_error_clear();
		*text = NULL;
		return 0;
	}
	if (r == 0 && *len > FILE_MAX) {
		free(*text);
		return sbx_fail(-SBX_EFBIG, "mcp: %s/%s is larger than %zu bytes", STATE_DIR,
		                FILE_NAME, FILE_MAX);
	}
	return r;
}

static int remote_write(sbx_workspace *ws, const char *text, size_t len)
{
	int r;

	if (!ws->ops->file_write || !ws->ops->file_mkdir)
		return sbx_fail(-SBX_ENOSYS, "mcp: backend '%s' has no file API to keep the MCP "
		                "declarations with", ws->ops->name);
	if ((r = ws->ops->file_mkdir(ws->state, STATE_DIR, 0755)) < 0 && r != -SBX_EEXIST)
		return r;
	return ws->ops->file_write(ws->state, STATE_DIR "/" FILE_NAME, text, len, 0600, 0);
}

/* The declarations file's text, or *text NULL when there is none yet. */
static int read_decls_file(sbx_workspace *ws, char **text, size_t *len)
{
	int dirfd, r;

	*text = NULL;
	if (ws->state_fd < 0)
		return remote_read(ws, text, len);
	if ((dirfd = open_state_dir(ws)) < 0)
		return dirfd;
	r = sbx_statedir_read(dirfd, FILE_NAME, FILE_MAX, text, len);
	close(dirfd);
	if (r == -SBX_ENOENT)
		return 0;
	if (r < 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "mcp: %s/%s: %s", STATE_DIR, FILE_NAME, msg);
	}
	return 0;
}

static int write_decls_file(sbx_workspace *ws, const char *text, size_t len)
{
	int dirfd, r;

	if (ws->state_fd < 0)
		return remote_write(ws, text, len);
	if ((dirfd = open_state_dir(ws)) < 0)
		return dirfd;
	r = sbx_workspace_write_atomic(ws, dirfd, FILE_NAME, text, len, 0600, 0);
	close(dirfd);
	return r;
}

static char *dup_id(const sbx_json *v)
{
	return v && v->type == SBX_JSON_STRING ? strdup(v->str) : NULL;
}

static void load_entry(const sbx_json *e, sbx_mcp_decl *d)
{
	const sbx_json *name = sbx_json_get(e, "name"), *agent = sbx_json_get(e, "agent"),
	               *session = sbx_json_get(e, "session"), *config = sbx_json_get(e, "config");
	char err[256], perr[64];
	sbx_buf b = { 0 };

	d->name = name && name->type == SBX_JSON_STRING ? strdup(name->str) : strdup("?");
	d->agent = dup_id(agent);
	d->session = dup_id(session);
	if (config) {
		sbx_json_write(&b, config);
		if (!b.oom)
			sbx_json_parse(b.data, b.len, &d->config, perr, sizeof perr);
		sbx_buf_free(&b);
	}
	if (!name || name->type != SBX_JSON_STRING || !sbx_mcp_name_ok(name->str))
		d->error = strdup("the entry has no valid \"name\" ([A-Za-z0-9_-], 1..64, no \"__\")");
	else if (sbx_mcp_config_check(config, err, sizeof err) < 0)
		d->error = strdup(err);
}

/* The MAC of a servers array under this user's key, of its text as sbx_json_write prints it. */
static int servers_mac(const sbx_json *servers, char mac[65])
{
	unsigned char key[SBX_HOSTKEY_LEN];
	sbx_buf b = { 0 };
	int r;

	if ((r = sbx_hostkey_get(KEY_PURPOSE, key)) < 0)
		return r;
	sbx_buf_append(&b, MAC_CONTEXT, sizeof MAC_CONTEXT);
	sbx_json_write(&b, servers);
	r = b.oom ? sbx_fail(-SBX_ENOMEM, "out of memory")
	          : sbx_hmac_sha256_hex(key, sizeof key, b.data, b.len, mac);
	sbx_buf_free(&b);
	return r;
}

/* Did this host's library write the servers of doc? Always, where the state folder is the
 * sandbox's own (any replica of a service may serve it; its commands may write it). */
static bool declared_here(const sbx_workspace *ws, const sbx_json *doc, const sbx_json *servers)
{
	const sbx_json *mac = sbx_json_get(doc, "mac");
	unsigned char diff = 0;
	char want[65];

	if (ws->state_fd < 0)
		return true;
	if (!mac || mac->type != SBX_JSON_STRING || mac->len != 64 || servers_mac(servers, want) < 0) {
		sbx_error_clear();
		return false;
	}
	for (size_t i = 0; i < 64; i++)
		diff |= (unsigned char)(want[i] ^ mac->str[i]);
	return diff == 0;
}

int sbx_mcp_decls_load(sbx_workspace *ws, sbx_mcp_decl **decls, size_t *n)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_json_ sbx_json *doc = NULL;
	char perr[256];
	size_t len;
	const sbx_json *servers;
	int r;

	*decls = NULL;
	*n = 0;
	if ((r = read_decls_file(ws, &text, &len)) < 0 || !text)
		return r;
	if (sbx_json_parse(text, len, &doc, perr, sizeof perr) < 0)
		return sbx_fail(-SBX_ECONFIG, "mcp: %s/%s: %s", STATE_DIR, FILE_NAME, perr);
	servers = sbx_json_get(doc, "servers");
	if (!servers || servers->type != SBX_JSON_ARRAY)
		return sbx_fail(-SBX_ECONFIG, "mcp: %s/%s: no \"servers\" array", STATE_DIR, FILE_NAME);
	if (servers->n && !(*decls = calloc(servers->n, sizeof **decls)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	bool foreign = !declared_here(ws, doc, servers);
	for (size_t i = 0; i < servers->n; i++) {
		sbx_mcp_decl *d = &(*decls)[i];
		load_entry(servers->items[i], d);
		if ((d->foreign = foreign) && !d->error)
			d->error = strdup(FOREIGN);
	}
	*n = servers->n;
	return 0;
}

static void write_id(sbx_buf *b, const char *id)
{
	if (id)
		sbx_buf_json_string(b, id, strlen(id));
	else
		sbx_buf_puts(b, "null");
}

/* The servers array as saved: every entry but the ones declared elsewhere (saving them
 * would sign what nobody here declared). */
static void servers_text(sbx_buf *b, const sbx_mcp_decl *decls, size_t n)
{
	bool first = true;

	sbx_buf_puts(b, "[");
	for (size_t i = 0; i < n; i++) {
		if (decls[i].foreign)
			continue;
		sbx_buf_puts(b, first ? "\n{\"agent\":" : ",\n{\"agent\":");
		first = false;
		write_id(b, decls[i].agent);
		sbx_buf_puts(b, ",\"session\":");
		write_id(b, decls[i].session);
		sbx_buf_puts(b, ",\"name\":");
		sbx_buf_json_string(b, decls[i].name, strlen(decls[i].name));
		sbx_buf_puts(b, ",\"config\":");
		if (decls[i].config)
			sbx_json_write(b, decls[i].config);
		else
			sbx_buf_puts(b, "null");
		sbx_buf_puts(b, "}");
	}
	sbx_buf_puts(b, "\n]");
}

int sbx_mcp_decls_save(sbx_workspace *ws, const sbx_mcp_decl *decls, size_t n)
{
	_cleanup_buf_ sbx_buf servers = { 0 }, b = { 0 };
	_cleanup_json_ sbx_json *parsed = NULL;
	char mac[65], perr[64];
	int r;

	servers_text(&servers, decls, n);
	if (servers.oom)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	/* The MAC is of the array as it will be read back: parsed, then printed. */
	if (sbx_json_parse(servers.data, servers.len, &parsed, perr, sizeof perr) < 0)
		return sbx_fail(-SBX_EIO, "mcp: the declarations do not print as JSON: %s", perr);
	if ((r = servers_mac(parsed, mac)) < 0)
		return r;
	sbx_buf_puts(&b, "{\"version\":1,\"servers\":");
	sbx_buf_append(&b, servers.data, servers.len);
	sbx_buf_printf(&b, ",\"mac\":\"%s\"}\n", mac);
	return b.oom ? sbx_fail(-SBX_ENOMEM, "out of memory") : write_decls_file(ws, b.data, b.len);
}

void sbx_mcp_decls_free(sbx_mcp_decl *decls, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(decls[i].agent);
		free(decls[i].session);
		free(decls[i].name);
		free(decls[i].error);
		sbx_json_free(decls[i].config);
	}
	free(decls);
}

bool sbx_mcp_decl_visible(const sbx_mcp_decl *d, const char *agent, const char *session)
{
	return (!d->agent || strcmp(d->agent, agent) == 0) &&
	       (!d->session || strcmp(d->session, session) == 0);
}

const sbx_mcp_decl *sbx_mcp_decl_resolve(const sbx_mcp_decl *decls, size_t n,
                                         const char *agent, const char *session,
                                         const char *name)
{
	const sbx_mcp_decl *best = NULL;
	int best_rank = -1;

	for (size_t i = 0; i < n; i++) {
		const sbx_mcp_decl *d = &decls[i];
		/* session-specific beats agent-specific beats the defaults */
		int rank = (d->session ? 2 : 0) + (d->agent ? 1 : 0);

		if (strcmp(d->name, name) == 0 && sbx_mcp_decl_visible(d, agent, session) &&
		    rank > best_rank) {
			best = d;
			best_rank = rank;
		}
	}
	return best;
}
